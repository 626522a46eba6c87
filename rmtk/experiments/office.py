"""The loop closed on the Office World (Toro Icarte et al.'s reward machines for RL): for each
of its four classic tasks (models/office.rm), a scripted expert (shortest paths with
ε-random actions, :func:`rmtk.ptp.exact.shortest_path_table`) → the machine learned at every
depth from its exact policy, and from episodes recorded with :func:`rmtk.gym.collect` →
the verdict against the true machine → rewards for the learned machine
(:class:`~rmtk.rewards.margin.MarginIRL`) → tabular Q-learning with counterfactual experiences
through :class:`~rmtk.gym.RewardMachineEnv`, with (a) the machine learned from the episodes,
(b) the true machine, (c) no machine: the labels alone as reward (a one-node machine paying,
for each label, the most the true machine pays for it).

Demonstrations start in every cell (the MDP of models/office.rm), so that the expert shows
each node's behaviour across the map; training and its evaluation start from the
literature's start cell. Success: a greedy episode of the agent (ties broken at random,
seeded) earns the true machine's reward within the horizon; the success rate is over the
training runs.

The Office World at its other layers: the map and its dynamics in ``rmtk/envs/office.py``, the
Gymnasium environment in ``rmtk/gym/mdp_env.py``.
"""

from __future__ import annotations

import time

import attrs
import numpy as np

from ..errors import RmtkError
from ._report import COUNT, LEVEL, PROBABILITY, Options, Report, Setting

TASKS = ("coffee", "mail", "coffee_mail", "patrol")
#: The figure the experiment draws (checked before the run: :func:`rmtk.experiments.run`).
FIGURE = "office.png"
SETTINGS = {
    "tasks": Setting(",".join(TASKS), "tasks of models/office.rm, comma separated", quick="coffee,mail"),
    "episodes": Setting(10_000, "expert episodes recorded per task", domain=COUNT),
    "horizon": Setting(40, "steps per recorded episode", domain=COUNT),
    "epsilon": Setting(0.1, "the expert's probability of a uniformly random action", domain=PROBABILITY),
    "alpha": Setting(0.05, "confidence level of the negative examples mined from the episodes", domain=LEVEL),
    "steps": Setting(40_000, "Q-learning steps per training run", quick=15_000, domain=COUNT),
    "runs": Setting(10, "training runs per agent (seeds)", quick=2, domain=COUNT),
    "every": Setting(500, "training steps between two evaluations", domain=COUNT),
    "active": Setting(
        False,
        "after the recorded episodes, ask the expert for what separates the survivors "
        "(rmtk.active.loop); the agents then train with the machine found",
    ),
    "active_tests": Setting(
        1,
        "with active: transition tests per transition of a lone survivor (the scripted "
        "expert is sharp: one says enough; the default for a run expert is 2)",
        domain=COUNT,
    ),
}
#: Q-learning: learning rate, discount, exploration, optimistic initial value; episode length.
Q_SETTINGS = dict(alpha=1.0, gamma=0.9, epsilon=0.1, q_init=2.0)
RL_HORIZON = 100
AGENTS = ("learned", "true", "no machine")


@attrs.frozen
class Learned:
    """One learning run: the source (``exact`` or ``N episodes``), its result and seconds."""

    source: str
    result: object
    seconds: float


@attrs.frozen
class TaskResult:
    name: str
    exact: Learned
    data: Learned
    collect_seconds: float
    curves: dict  # agent -> (steps, mean success per evaluation)
    active: Learned | None = None
    recorded_steps: int = 0
    asked_steps: int = 0


def label_machine(truth):
    """No machine: one node, each label paying the most the true machine pays for it."""
    from ..machine.model import RewardMachine

    K = len(truth.alphabet)
    return RewardMachine(
        ["u0"], truth.alphabet, np.zeros((1, K), dtype=np.int64), truth.delta_r.max(axis=0)[None], name="labels"
    )


def succeeded(truth, labels) -> bool:
    """Whether reading ``labels`` (the reset label first) earns the true machine's reward."""
    u = truth.step(truth.initial, labels[0])
    for letter in labels[1:]:
        if truth.reward(u, letter) > 0:
            return True
        u = truth.step(u, letter)
    return False


def train(machine, truth, labeler, terminal, opts: Options, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Success rate of the greedy policy against training steps, over ``runs`` seeds."""
    from ..gym import QLearning, RewardMachineEnv, greedy_episode, office_env

    agent = QLearning(**Q_SETTINGS)
    rates = []
    for run in range(opts.get("runs")):

        def env():
            return RewardMachineEnv(
                office_env(max_steps=RL_HORIZON), machine, labeler, observation="flat", terminal=terminal
            )

        check = env()

        def evaluate(q, check=check):
            return float(succeeded(truth, greedy_episode(check, q, seed=opts.seed, max_steps=RL_HORIZON).labels))

        trained = agent.train(
            env(), opts.get("steps"), seed=opts.seed * 1000 + run, evaluate=evaluate, every=opts.get("every")
        )
        rates.append([v for _, v in trained.curve])
        opts.say(f"office {name}: run {run + 1}/{opts.get('runs')} done")
    return np.array([s for s, _ in trained.curve]), np.mean(rates, axis=0)


def steps_to(curve, level: float = 0.9):
    steps, rate = curve
    hit = np.flatnonzero(rate >= level)
    return int(steps[hit[0]]) if len(hit) else None


def run_task(task, opts: Options) -> TaskResult:
    from .. import ConfidenceMiner, EmpiricalPTP, ExactPTP, Learner, NodePolicyTable
    from ..gym import Identity, MdpVectorEnv, NodePolicy, StateLabels, collect
    from ..ptp.exact import shortest_path_table
    from ..rewards.margin import MarginIRL
    from ..sat.encoders import SimplestEncoder

    truth, mdp = task.machine, task.mdp
    table = shortest_path_table(task, opts.get("epsilon"))
    t0 = time.perf_counter()
    exact = Learner(ExactPTP(None, source=NodePolicyTable(table)), irl=MarginIRL(), max_nodes=task.max_nodes).fit(task)
    t1 = time.perf_counter()
    episodes = opts.get("episodes")
    rec = collect(
        MdpVectorEnv(mdp, min(1000, episodes), max_steps=opts.get("horizon")),
        NodePolicy.from_table(truth, table),
        StateLabels.of(mdp),
        Identity(),
        episodes,
        opts.seed,
        name=task.name,
    )
    t2 = time.perf_counter()
    data = Learner(
        EmpiricalPTP(rec, expert=NodePolicyTable(table)),
        miner=ConfidenceMiner(opts.get("alpha")),
        encoder=SimplestEncoder(),
        irl=MarginIRL(),
        max_nodes=task.max_nodes,
    ).fit(task)
    t3 = time.perf_counter()
    opts.say(
        f"office {task.name}: exact {t1 - t0:.2f} s, {episodes} episodes recorded in {t2 - t1:.2f} s and "
        f"learned in {t3 - t2:.2f} s"
    )
    active, asked, machine = None, 0, data.machines[0]
    if opts.get("active"):
        from ..active.checks import ExpertWalks
        from ..active.experts import SimulatedExpert
        from ..active.loop import ActiveLearner
        from ..active.questions import SplitMostPairs

        expert = SimulatedExpert(task, source=NodePolicyTable(table), seed=opts.seed, recorded=rec)
        run = ActiveLearner(
            strategy=SplitMostPairs(per_transition=opts.get("active_tests")),
            check=ExpertWalks(10, opts.get("horizon")),
            max_solutions=50,
            irl=MarginIRL(),
            progress=opts.progress,
        ).fit(task, expert)
        t4 = time.perf_counter()
        active, asked, machine = (
            Learned(f"{episodes} episodes + active", run.result, t4 - t3 + t2 - t1),
            run.steps,
            run.result.machines[0],
        )
        opts.say(f"office {task.name}: active {t4 - t3:.2f} s, {asked} expert steps asked ({run.stopped})")
    opts.say(f"office {task.name}: training")
    labeler = StateLabels.of(mdp)
    curves = {
        "learned": train(machine, truth, labeler, "loops", opts, f"{task.name} learned"),
        "true": train(truth, truth, labeler, "absorbing", opts, f"{task.name} true"),
        "no machine": train(label_machine(truth), truth, labeler, (), opts, f"{task.name} no machine"),
    }
    return TaskResult(
        task.name,
        Learned("exact", exact, t1 - t0),
        Learned(f"{episodes} episodes", data, t3 - t1),
        t2 - t1,
        curves,
        active,
        rec.n_steps,
        asked,
    )


def _paying(m) -> str:
    return ", ".join(
        f"{m.nodes[u]} -{m.alphabet[k]}-> {m.nodes[m.delta_u[u, k]]} ({m.delta_r[u, k]:.3g})"
        for u, k in zip(*np.nonzero(m.delta_r))
    )


def report(results: list[TaskResult], opts: Options) -> Report:
    rep = Report("office: the Office World's four tasks, learned from a scripted expert and used for Q-learning")
    rows = []
    for r in results:
        for learned in (r.exact, r.data) + ((r.active,) if r.active is not None else ()):
            res = learned.result
            iso = res.isomorphic_to_truth()
            rows.append(
                (
                    r.name,
                    learned.source,
                    res.n_nodes,
                    len(res.machines),
                    res.tree.trie.n_nodes - 1,
                    "yes" if all(v.consistent for v in res.verdicts) else "no",
                    "yes" if iso and all(iso) else "no",
                    f"{learned.seconds:.2f}",
                )
            )
    rep.tables.append(
        (
            "learning: nodes found (the truth: coffee, mail 3; coffee_mail, patrol 5), machines, words used, "
            "verdict at every depth, equal to the truth up to renaming, seconds (episodes: recording "
            "included)",
            ["task", "from", "nodes", "machines", "words", "consistent", "= truth", "s"],
            rows,
        )
    )
    rows = []
    for r in results:
        hit = {a: steps_to(r.curves[a]) for a in AGENTS}
        ratio = f"{hit['learned'] / hit['true']:.2f}" if hit["learned"] and hit["true"] else None
        rows.append((r.name, *(hit[a] for a in AGENTS), ratio, *(f"{r.curves[a][1][-1]:.2f}" for a in AGENTS)))
    rep.tables.append(
        (
            f"Q-learning with CRM ({opts.get('runs')} runs, greedy evaluation every {opts.get('every')} "
            f"steps): steps to 90% success ('-': not within {opts.get('steps')}), final success rate",
            ["task", *(f"steps {a}" for a in AGENTS), "learned/true", *(f"final {a}" for a in AGENTS)],
            rows,
        )
    )
    exact_s = [r.exact.seconds for r in results]
    rep.notes += [
        f"exact: every depth (ExactPTP(None), counterexample-guided), {max(exact_s):.2f} s at most per task; "
        f"episodes: {sum(r.data.seconds for r in results):.1f} s for all tasks (recording "
        f"{sum(r.collect_seconds for r in results):.1f} s), SimplestEncoder, confidence level {opts.get('alpha')}.",
        "expert: shortest paths to the true machine's next reward, ties split evenly, epsilon "
        f"{opts.get('epsilon')} of uniformly random actions; uniform once the task is over (rmtk/ptp/exact.py). "
        f"Recorded: {opts.get('episodes')} episodes of {opts.get('horizon')} steps from every cell.",
        "rewards of the learned machines: MarginIRL (rmtk/rewards/margin.py), progress transitions paying "
        + "; ".join(f"{r.name}: {_paying(r.data.result.machines[0])}" for r in results)
        + ".",
    ]
    for r in results:
        if r.active is not None:
            rep.notes.append(
                f"{r.name}, active: {r.asked_steps} expert steps asked after {r.recorded_steps} recorded "
                f"({100 * r.asked_steps / r.recorded_steps:.1f} % more); the learned agent trains with "
                "the machine found this way."
            )
        if not all(v.consistent for v in r.data.result.verdicts):
            rep.notes.append(
                f"{r.name} from episodes: {r.data.result.n_nodes} nodes, consistent with what the episodes "
                f"show but not with the expert at every depth ({r.data.result.verdicts[0]}); see "
                "docs/benchmarks/12-office-world.md."
            )
    rep.notes.append(
        "no machine: one node paying for each label the most the true machine pays for it; it cannot "
        "tell the order of the marks, nor that a decoration ends the task."
    )
    size = (9, 3.6) if len(results) <= 2 else (9, 6.5)
    opts.figure(rep, FIGURE, lambda fig: _draw(fig, results, opts), size=size)
    return rep


def _draw(fig, results, opts):
    rows = 1 if len(results) <= 2 else 2
    axes = np.atleast_1d(fig.subplots(rows, -(-len(results) // rows), sharey=True)).ravel()
    for ax, r in zip(axes, results):
        for agent, style in zip(AGENTS, ("-", "--", ":")):
            steps, rate = r.curves[agent]
            ax.plot(steps, rate, style, label=agent)
        ax.axhline(0.9, color="grey", lw=0.5)
        ax.set_title(r.name)
        ax.set_xlabel("training steps")
        ax.set_ylabel("success rate")
    for ax in axes[len(results) :]:
        ax.set_visible(False)
    axes[0].legend(loc="lower right")
    fig.suptitle(f"Office World: Q-learning with CRM, success of the greedy policy over {opts.get('runs')} runs")


def run(opts: Options) -> Report:
    """``rmtk reproduce office``: the settings above; ``--quick``: coffee and mail, small sizes."""
    try:
        import gymnasium  # noqa: F401
    except ImportError:  # only gymnasium: an import error of rmtk itself must show
        raise RmtkError("the office experiment needs gymnasium: pip install '.[gym]' in rmtk's checkout") from None
    from .. import dsl

    doc = dsl.load_model("office")
    names = [t.strip() for t in opts.get("tasks").split(",") if t.strip()]
    unknown = [t for t in names if t not in doc.tasks]
    if unknown or not names:
        raise RmtkError(
            f"unknown office task(s) {', '.join(unknown) or '(none given)'}; "
            f"models/office.rm has {', '.join(doc.tasks)}"
        )
    t0 = time.perf_counter()
    results = [run_task(doc.tasks[t], opts) for t in names]
    rep = report(results, opts)
    rep.seconds = time.perf_counter() - t0
    return rep
