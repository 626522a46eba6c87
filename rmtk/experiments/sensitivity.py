"""Appendix D: sensitivity of the learned machines to the bound u_max (patrol, MaxSAT),
scored by the return of their product policies against MaxCausalEnt IRL baselines."""

from __future__ import annotations

import time

from ._patrol import SETTINGS as PATROL
from ._patrol import learn_bounds, patrol_expert, true_ptp
from ._report import COUNT, Options, Report, Setting

#: The figure the experiment draws (checked before the run: :func:`rmtk.experiments.run`).
FIGURE = "sensitivity.png"
SETTINGS = {**PATROL, "rollouts": Setting(10_000, "rollouts of 100 steps scored per model", quick=1000, domain=COUNT)}

#: Appendix D, Table "varying bound": u_max -> (used negative examples, average return); total 1112.
PAPER_SENSITIVITY = {
    4: (1112, 176.62),
    3: (902, 148.74),
    2: (589, 94.25),
    "D-IRL": (None, 17.12),
    "F-IRL": (None, 14.49),
}


def run(opts: Options) -> Report:
    """Appendix D: sensitivity to u_max. 2,500 patrol trajectories of length 10; MaxSAT with
    u_max ∈ {4, 3, 2}; the learned product policy (Algorithm 3) acts for 10K rollouts of 100
    steps, scored by the true machine (reward 10 per patrol); against D-IRL and F-IRL."""
    from ..learner.evaluation import average_return
    from ..product.planning import task_policy
    from ..rewards.baselines import d_irl, f_irl, uniform_policy
    from ..rewards.recovery import learned_product_policy

    t0 = time.perf_counter()
    report = Report("sensitivity to u_max (paper appendix D)")
    task, demos, reward = patrol_expert(opts)
    rollouts = opts.get("rollouts")
    score = dict(policy_machine=None, score_machine=task.machine, n=rollouts, horizon=100, seed=opts.seed + 1)
    learned = learn_bounds(task, demos, opts)
    ptp = true_ptp(task, opts)
    rows, returns = [], {}
    for u, r in learned.items():
        m = r.machines[0]
        pi = learned_product_policy(m, ptp, n_states=task.mdp.n_states)
        ret = average_return(task.mdp, pi, **{**score, "policy_machine": m})
        returns[f"u_max={u}"] = ret
        used = len(r.negatives) - r.search.cost
        rows.append((f"u_max = {u}", len(r.negatives), used, r.distinct_count, ret, *PAPER_SENSITIVITY[u]))
    opts.say("baselines")
    for name, fit in (("D-IRL", d_irl), ("F-IRL", f_irl)):
        policy = fit(task.mdp, demos, stationary=True, l2=1e-2).policy
        returns[name] = average_return(task.mdp, policy, **score)
        rows.append((name, None, None, None, returns[name], None, PAPER_SENSITIVITY[name][1]))
    returns["uniform"] = average_return(task.mdp, uniform_policy(task.mdp), **score)
    rows.append(("uniform", None, None, None, returns["uniform"], None, None))
    returns["expert"] = average_return(task.mdp, task_policy(task).pi, **{**score, "policy_machine": task.machine})
    rows.append(("expert (true)", None, None, None, returns["expert"], None, None))
    report.tables.append(
        (
            f"{demos.n_trajectories} trajectories of length 10, {rollouts} rollouts of 100 steps, reward {reward:g} "
            "per patrol",
            ["model", "negatives", "used", "machines", "avg return", "paper used", "paper return"],
            rows,
        )
    )

    def draw(fig):
        ax = fig.add_subplot()
        names = list(returns)
        ax.bar(names, [returns[k] for k in names], color=["#4477aa"] * 3 + ["#cc6677", "#ddcc77", "#999999", "#228833"])
        for k, name in enumerate(names):
            paper = {"u_max=4": 176.62, "u_max=3": 148.74, "u_max=2": 94.25, "D-IRL": 17.12, "F-IRL": 14.49}.get(name)
            if paper is not None:
                ax.plot([k - 0.4, k + 0.4], [paper, paper], color="black", lw=1.5)
        ax.set_ylabel("average return per rollout")
        ax.set_title("patrol, sensitivity to u_max (black: the paper's values)")

    opts.figure(report, FIGURE, draw)
    report.notes += [
        "used = negative examples MaxSAT keeps (total minus the optimum cost); machines = optimal machines up to "
        "renaming (the first is evaluated).",
        "each learned machine acts with the product policy of Algorithm 3 built from the expert's prefix tree "
        "policy (depth 6), as in the paper; rows no word reaches are uniform.",
        "the expert earns 10 per completed patrol (the paper's footnote); with the shipped reward 1 the soft-optimal "
        "expert is nearly uniform and the data carry almost no negative examples.",
        "the paper reports 1112 negative examples; it counts pairs per state with the double counting described in "
        "docs/benchmarks/02-conventions.md, section 2.5; rmtk counts distinct word pairs.",
        "D-IRL and F-IRL are stationary discounted MaxCausalEnt IRL on state one-hot / label one-hot features "
        "(l2 1e-2); their returns depend on how sharp the expert is (docs/benchmarks/07-sensitivity.md).",
    ]
    report.seconds = time.perf_counter() - t0
    return report
