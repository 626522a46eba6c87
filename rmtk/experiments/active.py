"""Active learning against passive learning (docs/design/12-active-learning.md): the paper's four
tabular tasks learned from the exact expert with no initial data, beside the full prefix tree
at the paper's depths; and stack-avoid from 1,000 recorded demonstrations plus questions to
an expert that is run. The experiment only: the active loop itself is :mod:`rmtk.active.loop`."""

from __future__ import annotations

import time
import tracemalloc

from .. import dsl
from ..errors import RmtkError
from ._report import COUNT, Options, Report, Setting

TASKS = ["patrol", "patrol_hallway", "stack", "stack_avoid"]
SETTINGS = {
    "tasks": Setting(",".join(TASKS), "tasks learned from the exact expert (comma-separated)", quick="patrol"),
    "walks": Setting(5, "expert walks of the equivalence check of an expert that is run", domain=COUNT),
    "samples": Setting(200, "actions drawn per question to an expert that is run", domain=COUNT),
    "demos": Setting(1000, "stack-avoid demonstrations recorded before asking (length 20)", quick=300, domain=COUNT),
    "soft": Setting(True, "patrol's soft expert (lambda 1): passive episodes against questions", quick=False),
    "soft_samples": Setting(5000, "actions drawn per question to patrol's soft expert", domain=COUNT),
}


def _measured(fn):
    """``(value, seconds, peak MiB)`` of ``fn()`` (peak of Python allocations, tracemalloc)."""
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        value = fn()
        return value, time.perf_counter() - t0, tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def run(opts: Options) -> Report:
    from ..active.checks import ExpertWalks
    from ..active.experts import SimulatedExpert, TaskExpert
    from ..active.loop import ActiveLearner
    from ..active.questions import SplitMostPairs
    from ..learner.pipeline import ExactPTP, Learner
    from ..ptp.empirical import EmpiricalPTP

    report = Report("active learning: questions to the expert against the full prefix tree")
    t0 = time.perf_counter()
    rows, curves = [], {}
    walks = ExpertWalks(walks=opts.get("walks"))
    names = [x.strip() for x in opts.get("tasks").split(",") if x.strip()]
    unknown = [x for x in names if x not in TASKS]
    if unknown:
        raise RmtkError(f"setting tasks: unknown task(s) {', '.join(unknown)}; choose among {', '.join(TASKS)}")
    for name in names:
        task = dsl.load_model(name).tasks[name]
        opts.say(f"{name}: full prefix tree at depth {task.depth}, then active")
        full, t_full, m_full = _measured(lambda task=task: Learner(ExactPTP(), irl=None).fit(task))
        act, t_act, m_act = _measured(lambda task=task: ActiveLearner().fit(task, TaskExpert(task, seed=opts.seed)))
        r = act.result
        rows.append(
            (
                name,
                task.depth,
                full.tree.n_pairs,
                full.distinct_count,
                f"{t_full:.3f}",
                f"{m_full:.1f}",
                act.known,
                r.distinct_count,
                "yes" if r.isomorphic_to_truth() == (True,) else "no",
                "yes" if all(v.consistent for v in r.verdicts) else "no",
                len(act.rounds),
                act.queries,
                f"{t_act:.3f}",
                f"{m_act:.1f}",
                f"{full.tree.n_pairs / act.known:.1f}x",
            )
        )
        by_depth = []
        for depth in range(1, int(task.depth or 1) + 1):
            res = Learner(ExactPTP(depth), irl=None, max_solutions=1000).fit(task)
            by_depth.append((res.tree.n_pairs, res.n_nodes))
        curves[name] = ([(max(x.known, 1), x.nodes) for x in act.rounds], by_depth, full.n_nodes)
    report.tables.append(
        (
            (
                f"exact expert, no initial data (seed {opts.seed}); evaluations = (history, state) pairs whose action "
                "distribution was asked"
            ),
            [
                "task",
                "depth",
                "tree evaluations",
                "tree machines",
                "tree s",
                "tree MiB",
                "active evaluations",
                "active machines",
                "truth",
                "consistent",
                "rounds",
                "queries",
                "active s",
                "active MiB",
                "fewer",
            ],
            rows,
        )
    )

    name = "stack_avoid"
    task = dsl.load_model(name).tasks[name]
    n = opts.get("demos")
    from ..product.simulate import simulate

    opts.say(f"{name}: {n} demonstrations, passive then active")
    demos = simulate(task, n, 20, seed=opts.seed)
    passive = Learner(EmpiricalPTP(demos), irl=None, max_nodes=3, max_solutions=10_000).fit(task)
    expert = SimulatedExpert(task, seed=opts.seed, recorded=demos)
    act, t_act, _ = _measured(
        lambda: ActiveLearner(strategy=SplitMostPairs(samples=opts.get("samples")), check=walks, max_nodes=3).fit(
            task, expert
        )
    )
    r = act.result
    report.tables.append(
        (
            (
                f"{name} from {n} recorded demonstrations of 20 steps (seed {opts.seed}), then questions to the same "
                "expert run on the MDP"
            ),
            ["", "nodes", "machines", "truth-equivalent", "expert steps", "queries", "s"],
            [
                (
                    "passive (SAT, u_max 3)",
                    passive.n_nodes,
                    passive.distinct_count,
                    sum(v.consistent for v in passive.verdicts or ()),
                    n * 20,
                    0,
                    f"{passive.timings['total']:.2f}",
                ),
                (
                    "+ active",
                    r.n_nodes,
                    r.distinct_count,
                    sum(v.consistent for v in r.verdicts or ()),
                    n * 20 + act.steps,
                    act.queries,
                    f"{t_act:.2f}",
                ),
            ],
        )
    )
    if opts.get("soft"):
        _soft(report, opts, walks)
    report.notes += [
        (
            "tree = the paper's pipeline on the full prefix tree policy at the task's depth: one policy evaluation per "
            "(word, state) pair; active = rmtk.active.ActiveLearner with rmtk.active.TaskExpert, questions chosen by "
            "SplitMostPairs, stopped by the exact equivalence check (ProductCheck: the synchronised product with the "
            "expert's policy, one query each, plus one evaluation per history of a counterexample) finding none."
        ),
        "MiB = peak of Python allocations during the run (tracemalloc), which also slows both runs alike.",
        (
            "truth = isomorphic to the task's machine; consistent = policy-equivalent to it at every depth (exact "
            "check "
            "after learning: the loop never reads the true machine)."
        ),
    ]
    opts.figure(report, "active.png", lambda fig: _draw(fig, curves), size=(10, 3.2))
    report.seconds = time.perf_counter() - t0
    return report


def _soft(report: Report, opts: Options, walks) -> None:
    """patrol as shipped (lambda 1): nearly uniform expert, 10^4 episodes show no negative example."""
    from ..active.checks import ExpertWalks
    from ..active.experts import SimulatedExpert
    from ..active.loop import ActiveLearner
    from ..active.questions import SplitMostPairs
    from ..learner.pipeline import Learner
    from ..product.simulate import simulate
    from ..ptp.empirical import EmpiricalPTP

    task = dsl.load_model("patrol").tasks["patrol"]
    rows = []
    for n in (10_000, 100_000):
        opts.say(f"patrol, soft expert: {n} episodes")
        t = time.perf_counter()
        res = Learner(EmpiricalPTP(simulate(task, n, 20, seed=opts.seed)), irl=None, max_solutions=100).fit(task)
        rows.append(
            (
                f"passive, {n} episodes of 20 steps",
                res.n_nodes,
                res.distinct_count,
                len(res.negatives or ()),
                "yes" if res.isomorphic_to_truth() == (True,) else "no",
                n * 20,
                0,
                f"{time.perf_counter() - t:.2f}",
            )
        )
    opts.say("patrol, soft expert: active")
    samples = opts.get("soft_samples")
    t = time.perf_counter()
    act = ActiveLearner(strategy=SplitMostPairs(samples=samples), check=ExpertWalks(50, 30)).fit(
        task, SimulatedExpert(task, seed=opts.seed)
    )
    r = act.result
    rows.append(
        (
            f"active, {samples} actions per question",
            r.n_nodes,
            r.distinct_count,
            len(r.negatives or ()),
            "yes" if r.isomorphic_to_truth() == (True,) else "no",
            act.steps,
            act.queries,
            f"{time.perf_counter() - t:.2f}",
        )
    )
    report.tables.append(
        (
            f"patrol as shipped (lambda 1, a soft expert), active from no data (seed {opts.seed})",
            ["", "nodes", "machines", "negatives", "truth", "expert steps", "queries", "s"],
            rows,
        )
    )


def _draw(fig, curves):
    axes = fig.subplots(1, len(curves), squeeze=False)[0]
    for ax, (name, (active, passive, nodes)) in zip(axes, curves.items()):
        ax.axhline(nodes, color="0.8", lw=3, label="the answer")
        ax.step(*zip(*active), where="post", label="active (one point per round)", marker="o", ms=3)
        ax.plot(*zip(*passive), label="full tree, depth 1..l", marker="s", ms=3)
        ax.set_xscale("log")
        ax.set_title(name.replace("_", "-"), fontsize=9)
        ax.set_xlabel("policy evaluations")
    axes[0].set_ylabel("nodes of the smallest consistent machines")
    axes[0].legend(fontsize=7)
