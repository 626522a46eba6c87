"""Learning the reward machine while a deep RL agent trains (docs/guide/14-online.md; the extra
rl, ``pip install '.[rl]'``): on a task whose environment pays a non-Markovian reward, a DQN agent trained by
:class:`rmtk.rl.online.OnlineLearner` (JIRP's loop: counterexample episodes, the machine inferred
from the rewards, swapped in without starting over), with subgoal exploration and with the
agent's own ε-greedy exploration, beside DQN given the true machine (with CRM) and DQN given
none. Reported: the steps to a 90 % greedy success rate (exact, from every start state), the
swaps, the inference's share of the CPU, and the final machine against the truth; the figure
plots the success rates against the steps with the swaps marked.

The tasks, the agents and the measure: :mod:`rmtk.experiments._online`. Full runs and the
targets: benchmarks/online.py, docs/benchmarks/online.md.
"""

from __future__ import annotations

import time

import numpy as np

from ..errors import RmtkError
from ..limits import stop_requested
from ._online import ARM_NAMES, ARMS, TASKS
from ._report import COUNT, Domain, Options, Report, Setting
from .deep_rl import median_steps

FIGURE = "online.png"
SETTINGS = {
    "task": Setting("cliff", "the task (cliff: CliffWalking's patrol a, b, c)", domain=Domain(choices=TASKS)),
    "steps": Setting(15_000, "environment steps per training run", quick=4_000, domain=COUNT),
    "every": Setting(250, "steps between two evaluations of the greedy policy", domain=COUNT),
    "runs": Setting(3, "training runs (seeds) per agent", quick=1, domain=COUNT),
    "arms": Setting(",".join(ARMS), "the agents (comma-separated: " + ", ".join(ARMS) + ")"),
}


def _arms(opts: Options) -> list[str]:
    arms = [a.strip() for a in str(opts.get("arms")).split(",") if a.strip()]
    bad = [a for a in arms if a not in ARMS]
    if bad or not arms:
        raise RmtkError(f"setting arms: expected agents among {', '.join(ARMS)}, got {opts.get('arms')!r}")
    return arms


def run(opts: Options) -> Report:
    """``rmtk reproduce online``: the settings above; ``--quick``: one run of 4,000 steps per agent."""
    from .. import dsl
    from ..rl.sb3 import _require

    _require()  # the rl extra: Stable-Baselines3 and torch, or a clear error
    from ._online import task, train

    arms = _arms(opts)
    t = task(opts.get("task"))
    steps, every, n = opts.get("steps"), opts.get("every"), opts.get("runs")
    t0 = time.perf_counter()
    runs: dict[str, list] = {}
    stopped = None
    for arm in arms:
        if stopped:
            break
        runs[arm] = []
        for r in range(n):
            seed = opts.seed * 1000 + r
            one = train(t, arm, seed=seed, steps=steps, every=every)
            runs[arm].append(one)
            reached = one.reached()
            opts.say(
                f"online {t.name}: {ARM_NAMES[arm]}, run {r + 1}/{n}: "
                + (f"90% at {reached} steps" if reached else f"not 90% within {steps} steps")
                + (f", {len(one.swaps)} swap(s)" if arm.startswith("online") else "")
            )
            stopped = stop_requested()
            if stopped:
                break
    rep = Report(
        f"online: the reward machine learned while DQN trains, {t.name} ({t.truth.name}, {t.truth.n_nodes} nodes)"
    )
    if stopped:
        rep.notes.append(
            f"stopped ({stopped}) after {sum(len(v) for v in runs.values())} run(s): the agents and runs after it "
            "did not train; the table holds the runs made, the last one cut short"
        )
    rows = []
    for arm in [a for a in arms if runs.get(a)]:
        rs = runs[arm]
        med = median_steps(rs)
        rows.append(
            (
                ARM_NAMES[arm],
                med if med is not None else f">{steps}",
                " ".join(str(r.reached() or "-") for r in rs),
                float(np.mean([r.success[-1] for r in rs])),
                " ".join(str(len(r.swaps)) for r in rs) if arm.startswith("online") else "-",
                f"{100 * sum(r.inference_cpu for r in rs) / max(sum(r.cpu for r in rs), 1e-9):.1f}%"
                if arm.startswith("online")
                else "-",
                float(np.median([r.cpu for r in rs])),
            )
        )
    rep.tables.append(
        (
            f"DQN, {n} run(s) per agent, the greedy policy evaluated every {every} steps from the task's "
            f"{len(np.flatnonzero(np.asarray(t.mdp.initial) > 0))} start state(s): median steps to 90% success "
            f"('>{steps}': not within the budget), per run, final success (mean), swaps per run, inference CPU "
            "share, CPU s (median)",
            ["agent", "steps to 90%", "per run", "final", "swaps", "inference", "CPU s"],
            rows,
        )
    )
    c = t.settings
    rep.notes.append(
        f"network: {c.hidden or 'linear'} hidden, lr {c.learning_rate}"
        + (f" -> {c.final_learning_rate}" if c.final_learning_rate else "")
        + f", buffer {c.buffer_size}, batch {c.batch_size}, ε 1 -> {c.final_eps} over {c.explore} steps, "
        f"γ {c.gamma}, target update every {c.target_update_interval}: the same for every agent "
        "(docs/benchmarks/deep-rl.md)."
    )
    if t.name == "cliff":
        from ..rl.online.tasks import uniform_completion

        rep.notes.append(
            f"a uniform walk of {t.horizon} steps completes the patrol in {100 * uniform_completion():.2f}% "
            "of the episodes (400,000 walks): what the agent's own exploration starts from."
        )
    verdicts = []
    for arm in [a for a in arms if a.startswith("online") and runs.get(a)]:
        first = runs[arm][0]
        learner = first.learner
        rep.notes.append(
            f"{ARM_NAMES[arm]}, run 1: " + "; ".join(h.line(learner.env.loop.propositions) for h in learner.hypotheses)
        )
        rep.notes.append(
            f"{ARM_NAMES[arm]}, run 1, final machine ({learner.final}):\n" + dsl.dumps(learner.machine).rstrip()
        )
        verdicts.append(f"final machine of {ARM_NAMES[arm]}, run 1 (seed {first.seed}): {first.verdict}")
    opts.figure(rep, FIGURE, lambda fig: _draw(fig, runs, t, n), size=(7, 4.2))
    rep.notes += verdicts
    rep.seconds = time.perf_counter() - t0
    return rep


def _draw(fig, runs, t, n: int) -> None:
    ax = fig.subplots()
    colors = {"online": "C0", "online-eps": "C3", "true": "C2", "none": "C7"}
    for arm, rs in runs.items():
        steps = np.array(rs[0].steps)
        width = min(len(r.success) for r in rs)
        rate = np.mean([r.success[:width] for r in rs], axis=0)
        style = "-" if arm.startswith("online") else "--"
        ax.plot(steps[:width], rate, style, color=colors[arm], label=ARM_NAMES[arm])
        for r in rs if arm.startswith("online") else ():
            for s in r.swaps:
                ax.plot([s, s], [-0.02, 0.04], color=colors[arm], lw=1)
    ax.axhline(0.9, color="grey", lw=0.5)
    ax.set_xlabel("environment steps (ticks at the bottom: hypothesis swaps)")
    ax.set_ylabel("success rate of the greedy policy")
    ax.set_ylim(-0.03, 1.03)
    ax.legend(loc="center right")
    ax.set_title(f"{t.name}: DQN learning its machine online, mean of {n} run(s)")


__all__ = ["FIGURE", "SETTINGS", "run"]
