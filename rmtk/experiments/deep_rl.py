"""Deep RL with a learned reward machine, on the Office World (the extra '.[rl]':
Stable-Baselines3 and torch, imported when the experiment runs): a DQN agent trained with
counterfactual experiences (CRM) on the true machine (the first run of that curve) → its
machine learned back, passively
from its recorded episodes and actively from its exact ε-greedy distribution
(:class:`rmtk.rl.AgentExpert`) → fresh agents trained with the learned machine (rewards put
on it as the truth pays, :func:`rmtk.experiments._dqn.reward_like`) → learning curves of
the true machine, the learned machine (each with and without CRM) and no machine (the
world pays the true machine's reward; the agent sees the cell, not the node), in one figure.

Training, the network and its evaluation (success rate of the greedy policy from every start
cell): :mod:`rmtk.experiments._dqn`. Figures of the full run: docs/benchmarks/deep-rl.md.

``--quick`` is the same experiment at its smallest telling size: one run of 6,000 steps per
curve with the full run's network and settings (an agent trained with CRM reaches about 90 %
there, plain DQN does not start to succeed), 2,000 recorded episodes; about 40 CPU seconds.
The quick size of earlier versions (400 steps, 8 hidden units) trained no agent: its machine
learned back had 1 node, and every curve stayed at 0 (docs/benchmarks/deep-rl.md).
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from ..errors import RmtkError
from ..words import plural
from ._report import COUNT, LEVEL, PROBABILITY, Domain, Options, Report, Setting

TASKS = ("coffee", "patrol")
FIGURE = "deep_rl.png"
SETTINGS = {
    "task": Setting("coffee", "task of models/office.rm", domain=Domain(choices=TASKS)),
    "steps": Setting(15_000, "environment steps per training run", quick=6_000, domain=COUNT),
    "every": Setting(1_000, "steps between two evaluations of the greedy policy", quick=500, domain=COUNT),
    "runs": Setting(3, "training runs (seeds) per curve", quick=1, domain=COUNT),
    "hidden": Setting(64, "units of the Q-network's hidden layer", domain=COUNT),
    "episodes": Setting(10_000, "episodes of the trained agent recorded (40 steps each)", quick=2_000, domain=COUNT),
    "epsilon": Setting(0.1, "the trained agent's exploration when recorded and asked", domain=PROBABILITY),
    "alpha": Setting(0.05, "confidence level of the negative examples mined from the episodes", domain=LEVEL),
}
#: The curves: (label, machine, CRM, node observed).
ARMS = (
    ("true, CRM", "true", True, True),
    ("true, no CRM", "true", False, True),
    ("learned, CRM", "learned", True, True),
    ("learned, no CRM", "learned", False, True),
    ("no machine", "true", False, False),
)


def _config(opts: Options):
    """The network and settings of every curve (``--quick`` too: a smaller network or schedule
    trains no agent within its budget)."""
    from ._dqn import DQNConfig

    return DQNConfig(hidden=(opts.get("hidden"),))


def learn_back(
    task, model, *, episodes: int, epsilon: float, alpha: float, seed: int, mdp=None, length: int = 40
) -> tuple[dict, object, list[str]]:
    """The machine of ``model`` (ε-greedy with ``epsilon``) learned from ``episodes`` recorded
    episodes of ``length`` steps drawn from ``mdp``'s starts (default the task's; confidence
    level ``alpha``) and actively (the task's own questions); returns the table row, the
    active run's first machine and notes (a greedy agent's episodes show one action a history:
    :func:`rmtk.learner.summary.single_action_note`). Where the episodes leave several machines, the row
    names what separates the first one that is not the truth from the truth
    (:func:`rmtk.machine.equivalence.distinguish`)."""
    from .. import ConfidenceMiner, EmpiricalPTP, Learner, isomorphic
    from ..active.loop import ActiveLearner
    from ..gym import Identity, StateLabels, collect
    from ..gym.mdp_env import MdpVectorEnv
    from ..learner.summary import single_action, single_action_note
    from ..machine.equivalence import distinguish
    from ..rl import AgentExpert, agent_policy, sb3_agent
    from ..sat.encoders import SimplestEncoder

    mdp, truth = mdp or task.mdp, task.machine
    agent = sb3_agent(model, epsilon=epsilon)
    labels = StateLabels.of(mdp)
    envs = MdpVectorEnv(mdp, min(100, episodes), max_steps=length)
    t0 = time.perf_counter()
    rec = collect(envs, agent_policy(agent, truth, labels, env=envs), labels, Identity(), episodes, seed=seed)
    passive = Learner(
        EmpiricalPTP(rec),
        miner=ConfidenceMiner(alpha),
        encoder=SimplestEncoder(),
        max_nodes=task.max_nodes,
        irl=None,
    ).fit(rec.space)
    t1 = time.perf_counter()
    run = ActiveLearner().fit(task, AgentExpert(agent, task.mdp, truth, seed=seed))  # the task's questions
    t2 = time.perf_counter()
    ordered = truth.with_alphabet_order(mdp.propositions)
    truth_at = [isomorphic(m, ordered, rewards=False) for m in passive.machines]
    other = next((m for m, same in zip(passive.machines, truth_at) if not same), None)
    witness = (
        None
        if other is None
        else distinguish(
            mdp,
            ordered.delta_u,
            other.with_alphabet_order(mdp.propositions).delta_u,
            init_1=ordered.initial,
            init_2=other.initial,
            names=("the truth", "a survivor"),
        )
    )
    negatives = 0 if passive.negatives is None else len(passive.negatives)
    notes = [f"passive: {single_action_note(negatives)}"] if single_action(passive.ptp) else []
    row = {
        "passive machines": len(passive.machines),
        "passive nodes": passive.n_nodes,
        "negatives": negatives,
        "truth among them": "yes" if any(truth_at) else "no",
        "separated by": "-" if witness is None else str(witness),
        "passive s": t1 - t0,
        "active machines": len(run.result.machines),
        "active = truth": "yes" if all(run.result.isomorphic_to_truth() or [False]) else "no",
        "draws": run.draws,
        "evaluations": run.evaluations,
        "active s": t2 - t1,
    }
    return row, run.result.machines[0], notes


def median_steps(curves) -> int | None:
    """The median over runs of the steps to 90 % success (``None``: the median run did not get there)."""
    reached = [c.reached() for c in curves]
    finite = sorted(r if r is not None else float("inf") for r in reached)
    med = statistics.median(finite)
    return None if med == float("inf") else int(med)


def run(opts: Options) -> Report:
    """``rmtk reproduce deep-rl``: the settings above; ``--quick``: one run of 6,000 steps per curve."""
    try:
        import stable_baselines3  # noqa: F401
        import torch  # noqa: F401
    except ImportError:
        raise RmtkError(
            "the deep-rl experiment needs Stable-Baselines3 and torch: pip install '.[rl]' in rmtk's checkout "
            "(from a checkout: pip install '.[rl]')"
        ) from None
    from .. import dsl
    from ..gym import StateLabels
    from ._dqn import reward_like, train_dqn

    name = opts.get("task")
    task = dsl.load_model("office").tasks[name]
    truth, labeler = task.machine, StateLabels.of(task.mdp)
    steps, every, config = opts.get("steps"), opts.get("every"), _config(opts)
    t0 = time.perf_counter()
    machines: dict = {"true": truth}
    curves: dict[str, list] = {}
    expert = None
    for label, which, use_crm, node in ARMS:
        if which == "learned" and which not in machines:  # the agent to learn from: the first true, CRM run
            opts.say(f"deep-rl {name}: learning the machine of the first agent trained with the true machine and CRM")
            row, learned, learned_notes = learn_back(
                task,
                expert,
                episodes=opts.get("episodes"),
                epsilon=opts.get("epsilon"),
                alpha=opts.get("alpha"),
                seed=opts.seed,
            )
            machines["learned"] = learned = reward_like(learned, truth)
        curves[label] = []
        for r in range(opts.get("runs")):
            curve, model = train_dqn(
                machines[which],
                truth,
                labeler,
                use_crm=use_crm,
                node=node,
                seed=opts.seed * 1000 + r,
                steps=steps,
                every=every,
                config=config,
            )
            curves[label].append(curve)
            if (label, r) == (ARMS[0][0], 0):
                expert = model
            opts.say(f"deep-rl {name}: {label}, run {r + 1}/{opts.get('runs')}: {curve.success[-1]:.2f} at the end")
    expert_curve = curves[ARMS[0][0]][0]
    rep = Report(f"deep-rl: DQN on the Office World's {name}, with the true, a learned and no machine")
    rep.tables.append(
        (
            f"the machine of the agent (the first run with the true machine and CRM: {plural(steps, 'step')}, "
            f"success {expert_curve.success[-1]:.2f}; ε = {opts.get('epsilon')}): passive from "
            f"{plural(opts.get('episodes'), 'episode')}, active with exact probabilities",
            list(row),
            [tuple(row.values())],
        )
    )
    rows = []
    for label, *_ in ARMS:
        cs = curves[label]
        rows.append(
            (
                label,
                median_steps(cs),
                " ".join(str(c.reached() or "-") for c in cs),
                float(np.mean([max(c.success, default=0.0) for c in cs])),
                float(np.mean([c.success[-1] for c in cs])),
                float(np.median([c.seconds for c in cs])),
            )
        )
    rep.tables.append(
        (
            f"DQN ({plural(opts.get('runs'), 'run')}, greedy evaluation every {plural(every, 'step')} from "
            f"{len(_starts())} start cells): median steps to 90% success ('-': not within {steps}), per run, best "
            "and final success, seconds",
            ["agent", "steps to 90%", "per run", "best", "final", "s (median)"],
            rows,
        )
    )
    rep.notes += [
        _finding(curves, row, steps),
        *learned_notes,
        f"network: {config.hidden} hidden units, lr {config.learning_rate}, batch {config.batch_size}, "
        f"train every {plural(config.train_freq, 'step')}, target update every "
        f"{plural(config.target_update_interval, 'step')}, ε 1 → {config.final_eps} over "
        f"{plural(config.explore, 'step')}, γ {config.gamma}, learning starts {config.learning_starts}; "
        "the same for every curve.",
        "learned machine: the active run's first machine, paying what the truth pays after the same shortest word: "
        + ", ".join(
            f"{learned.nodes[u]} -{learned.alphabet[k]}-> {learned.nodes[learned.delta_u[u, k]]} "
            f"({learned.delta_r[u, k]:g})"
            for u, k in zip(*np.nonzero(learned.delta_r))
        )
        + ".",
        "no machine: the true machine pays the reward, the agent observes the cell only.",
    ]
    opts.figure(rep, FIGURE, lambda fig: _draw(fig, curves, name, opts), size=(7, 4.2))
    rep.seconds = time.perf_counter() - t0
    return rep


def _finding(curves, row: dict, steps: int) -> str:
    """What the run shows, in one sentence: the truth learned back or not, and CRM's curve
    against plain DQN's (the true machine's runs)."""
    crm, plain = (curves[label] for label in ("true, CRM", "true, no CRM"))
    reach = [median_steps(cs) for cs in (crm, plain)]
    said = [f"90% after {r:,} steps" if r is not None else f"not 90% within {steps:,} steps" for r in reach]
    best = [max(max(c.success, default=0.0) for c in cs) for cs in (crm, plain)]
    ahead = (reach[0] is not None and (reach[1] is None or reach[0] < reach[1])) or best[0] > best[1]
    back = "the truth" if row["active = truth"] == "yes" else "not the truth"
    return (
        f"finding: the machine learned back actively is {back}; with the true machine, DQN with CRM "
        f"{'leads' if ahead else 'does not lead'} plain DQN ({said[0]}, best {best[0]:.2f}; plain: {said[1]}, "
        f"best {best[1]:.2f})."
    )


def _starts():
    from ._dqn import STARTS

    return STARTS


def _draw(fig, curves, name, opts):
    ax = fig.subplots()
    styles = {"true": "-", "learned": "--"}
    for label, which, use_crm, node in ARMS:
        cs = curves[label]
        steps = np.array(cs[0].steps)
        rate = np.mean([c.success for c in cs], axis=0)
        style = ":" if not node else styles[which]
        marker = "x" if which == "learned" and node else None  # visible where it lies on the true curve
        ax.plot(steps, rate, style, marker=marker, color="C0" if use_crm else ("C1" if node else "C2"), label=label)
    ax.axhline(0.9, color="grey", lw=0.5)
    ax.set_xlabel("environment steps")
    ax.set_ylabel("success rate of the greedy policy")
    ax.set_ylim(-0.02, 1.02)
    ax.legend(loc="best")
    runs = opts.get("runs")
    ax.set_title(f"Office World {name}: DQN" + (f", mean of {runs} runs" if runs != 1 else ", one run"))


__all__ = ["ARMS", "FIGURE", "SETTINGS", "TASKS", "learn_back", "median_steps", "run"]
