"""The Craft World (Toro Icarte et al.; models/craft.rm: map_0, 1,521 free cells, ten tasks of
3 to 8 nodes, the soft-optimal expert of λ 0.01, γ 0.99): every capability of rmtk on each
task, as a user runs it, beside the exact label-given learner as the same-run reference.

* ``exact``: :class:`~rmtk.learner.pipeline.Learner` with :class:`~rmtk.ptp.exact.ExactPTP` at every depth
  (the reference; ``rmtk learn models/craft.rm TASK``);
* ``active``: :class:`~rmtk.active.loop.ActiveLearner` asking the exact expert
  (:class:`~rmtk.active.experts.TaskExpert`; ``--active``);
* ``labels``: the labels learned with the machine, nothing known
  (:class:`~rmtk.labels.learner.LabelLearner`; ``--learn-labels``);
* ``demos``: :class:`~rmtk.ptp.empirical.EmpiricalPTP` on simulated demonstrations (``--demos``),
  no rewards (they would be fitted per machine listed).

Every run is bounded: a time limit (the learners' ``time_limit``, the active loop's
``Budget(seconds=...)``) and ``max_solutions`` machines listed. What a limit stopped is
flagged, and so is a run that went on past its limit (the limits are checked between phases,
not inside each). ``--quick`` learns on a walled crop of the map (rows 24–33, columns 18–37:
200 cells with a, b and c; runs start in any cell, the agent's is outside it) so that CI runs
every capability in seconds; the whole map is the benchmark's (docs/benchmarks/18-craft-world.md).
"""

from __future__ import annotations

import resource
import time

import attrs

from ..errors import RmtkError
from ._report import COUNT, LEVEL, POSITIVE, Domain, Options, Report, Setting

TASKS = tuple(f"t{i}" for i in range(1, 11))
CAPABILITIES = ("exact", "active", "labels", "demos")
SETTINGS = {
    "tasks": Setting(",".join(TASKS), "tasks of models/craft.rm, comma separated", quick="t1,t2"),
    "capabilities": Setting(",".join(CAPABILITIES), f"capabilities to run, among {', '.join(CAPABILITIES)}"),
    "crop": Setting(
        "",
        "learn on rows r0:r1 and columns c0:c1 of the map, walled (e.g. 24:34,18:38); empty: the whole map",
        quick="24:34,18:38",
    ),
    "time_limit": Setting(120.0, "seconds each run may take (then flagged)", quick=20.0, domain=POSITIVE),
    "max_solutions": Setting(50, "machines (or pairs) listed at most per run", quick=20, domain=COUNT),
    "episodes": Setting(10_000, "simulated demonstrations per task (demos)", quick=1000, domain=COUNT),
    "horizon": Setting(150, "steps per demonstration", quick=50, domain=COUNT),
    "alpha": Setting(0.05, "confidence level of the negative examples mined from demonstrations", domain=LEVEL),
    "max_nodes": Setting(0, "bound on the nodes (0: the task's)", domain=Domain(low=0, high=64)),
}


@attrs.frozen
class Run:
    """One (task, capability) run: what it found (``right``: the truth for exact and active, a
    policy-equivalent pair for labels, a machine consistent with the expert for demos) and what
    it cost (``flag``: what stopped or limited it, empty when it finished by itself)."""

    task: str
    capability: str
    nodes: int | None
    found: str
    truth: str
    right: bool
    cpu: float
    wall: float
    flag: str
    detail: str = ""


def crop_task(task, crop: str):
    """``task`` on a walled crop ``r0:r1,c0:c1`` of its Craft World map (start anywhere)."""
    from ..envs.craft import craftworld

    try:
        (r0, r1), (c0, c1) = (tuple(int(x) for x in part.split(":")) for part in crop.split(","))
    except ValueError:
        raise RmtkError(f"setting crop: expected r0:r1,c0:c1 (e.g. 24:34,18:38), got {crop!r}") from None
    rows = task.mdp.source.kwargs()["rows"]
    if not (0 <= r0 < r1 <= len(rows) and 0 <= c0 < c1 <= len(rows[0])):
        raise RmtkError(f"setting crop: {crop!r} is not inside the {len(rows)} x {len(rows[0])} map")
    inner = [row[c0:c1].replace("A", " ") for row in rows[r0:r1]]
    wall = "X" * (c1 - c0 + 2)
    mdp = craftworld(
        [wall] + ["X" + row + "X" for row in inner] + [wall],
        start=None,
        propositions=task.mdp.propositions,
        gamma=task.mdp.gamma,
        name=f"{task.mdp.name}_crop",
    )
    return attrs.evolve(task, mdp=mdp)


def _flag(limit: float, wall: float, stopped: str) -> str:
    over = f"ran {wall - limit:.0f} s past its {limit:g} s limit" if wall > 1.1 * limit + 1.0 else ""
    return "; ".join(x for x in (stopped, over) if x)


def _listed(n: int, complete: bool) -> str:
    return f"{n}" if complete else f">= {n}"


def _stopped(complete: bool, found: int, message: str, opts: Options) -> str:
    """Why a search did not finish: the bound on what is listed, or its message (a limit)."""
    if complete:
        return ""
    return f"max_solutions {found} reached" if found >= opts.get("max_solutions") else (message or "stopped by a limit")


def run_exact(task, opts: Options):
    from ..learner.pipeline import ExactPTP, Learner

    limit = opts.get("time_limit")
    r = Learner(ExactPTP(None), irl=None, time_limit=limit, max_nodes=_max_nodes(task, opts)).fit(task)
    iso = r.isomorphic_to_truth() if r.machines else ()
    truth = "yes" if iso and all(iso) else "no"
    stopped = _stopped(r.search.complete, len(r.machines), r.search.message, opts)
    lazy = r.search.lazy
    detail = f"{lazy.counterexamples} counterexamples, words of up to {lazy.longest} labels" if lazy else ""
    return r.n_nodes, _listed(len(r.machines), r.search.complete), truth, truth == "yes", stopped, detail


def run_active(task, opts: Options):
    from ..active.experts import TaskExpert
    from ..active.loop import ActiveLearner

    a = ActiveLearner(
        time_limit=opts.get("time_limit"), max_solutions=opts.get("max_solutions"), max_nodes=_max_nodes(task, opts)
    ).fit(task, TaskExpert(task))
    r = a.result
    iso = r.isomorphic_to_truth() if r.machines else ()
    truth = "yes" if iso and all(iso) else "no"
    stopped = f"stopped early ({a.exhausted})" if a.flagged else ""
    detail = f"{a.evaluations} expert evaluations, {a.queries} queries, {len(a.rounds)} rounds"
    return r.n_nodes, str(len(r.machines)), truth, truth == "yes", stopped, detail


def run_labels(task, opts: Options):
    from ..labels.learner import LabelLearner

    r = LabelLearner(
        time_limit=opts.get("time_limit"),
        max_solutions=opts.get("max_solutions"),
        max_nodes=_max_nodes(task, opts),
    ).fit(task)
    s = r.search
    equivalent = sum(v.consistent for v in r.verdicts or () if v is not None)
    truth = f"{equivalent} policy-equivalent" + ("; the truth survives" if r.truth_survives else "")
    stopped = _stopped(r.complete, len(r.solutions), "; ".join([s.message, *r.unfinished]).strip("; "), opts)
    size = f"{r.n_nodes} nodes, {r.n_props} propositions" if r.n_nodes is not None else "no size decided"
    return r.n_nodes, _listed(len(r.solutions), s.complete), truth, equivalent > 0, stopped, size


def run_demos(task, opts: Options):
    from ..learner.pipeline import Learner
    from ..negatives.miners import ConfidenceMiner
    from ..product.simulate import simulate
    from ..ptp.empirical import EmpiricalPTP

    demos = simulate(task, opts.get("episodes"), opts.get("horizon"), seed=opts.seed)
    r = Learner(
        EmpiricalPTP(demos),
        miner=ConfidenceMiner(opts.get("alpha")),
        irl=None,
        time_limit=opts.get("time_limit"),
        max_solutions=opts.get("max_solutions"),
        max_nodes=_max_nodes(task, opts),
    ).fit(task)
    consistent = sum(v.consistent for v in r.verdicts or ())
    iso = sum(r.isomorphic_to_truth()) if r.machines else 0
    truth = f"{consistent} consistent, {iso} = truth"
    stopped = _stopped(r.search.complete, len(r.machines), r.search.message, opts)
    steps = f"{demos.n_steps:,} steps"
    return r.n_nodes, _listed(len(r.machines), r.search.complete), truth, consistent > 0, stopped, steps


RUNNERS = {"exact": run_exact, "active": run_active, "labels": run_labels, "demos": run_demos}


def _max_nodes(task, opts: Options) -> int:
    return int(opts.get("max_nodes")) or task.max_nodes


def measure(name: str, capability: str, task, opts: Options) -> Run:
    """Run one capability on one task, with its CPU and wall seconds."""
    c0, t0 = time.process_time(), time.perf_counter()
    nodes, found, truth, right, stopped, detail = RUNNERS[capability](task, opts)
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    flag = _flag(opts.get("time_limit"), wall, stopped)
    return Run(name, capability, nodes, found, truth, right, cpu, wall, flag, detail)


def _names(opts: Options, key: str, known: tuple[str, ...], what: str) -> list[str]:
    names = [t.strip() for t in str(opts.get(key)).split(",") if t.strip()]
    unknown = [t for t in names if t not in known]
    if unknown or not names:
        listed = ", ".join(unknown) or "(none given)"
        raise RmtkError(f"setting {key}: unknown {what} {listed}; known: {', '.join(known)}")
    return names


def run(opts: Options) -> Report:
    """``rmtk reproduce craft``: the settings above; ``--quick``: t1 and t2 on a crop of the map."""
    from .. import dsl

    doc = dsl.load_model("craft")
    names = _names(opts, "tasks", tuple(doc.tasks), "task")
    capabilities = _names(opts, "capabilities", CAPABILITIES, "capability")
    crop = str(opts.get("crop"))
    where = f"a {crop} crop of map_0" if crop else "map_0"
    rep = Report(f"craft: the Craft World's tasks on {where}, every capability")
    runs: list[Run] = []
    t0 = time.perf_counter()
    for name in names:
        task = doc.tasks[name]
        if crop:
            task = crop_task(task, crop)
        for cap in capabilities:
            opts.say(f"craft {name}: {cap}")
            runs.append(measure(name, cap, task, opts))
    rep.tables.append(
        (
            f"per task and capability ({task.mdp.n_states} states): nodes found, machines (pairs for labels) "
            f"listed (>= N: stopped at max_solutions {opts.get('max_solutions')} or by the limit), against the "
            "truth, CPU and wall seconds, what stopped it; exact is the same-run reference",
            ["task", "capability", "nodes", "found", "truth", "cpu s", "wall s", "flag", "detail"],
            [(r.task, r.capability, r.nodes, r.found, r.truth, r.cpu, r.wall, r.flag or "-", r.detail) for r in runs],
        )
    )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rep.notes += [
        f"time limit {opts.get('time_limit'):g} s per run, at most {opts.get('max_solutions')} machines listed; "
        f"demonstrations: {opts.get('episodes')} of {opts.get('horizon')} steps (seed {opts.seed}), "
        f"confidence level {opts.get('alpha')}.",
        f"peak resident memory of the whole run: {peak:.0f} MB (one process for every run; "
        "benchmarks/craft.py measures each run in its own process).",
        "the labels' truth has one proposition per object letter; a policy-equivalent pair with fewer "
        "propositions is smaller, so the truth itself need not survive.",
    ]
    rep.seconds = time.perf_counter() - t0
    return rep
