"""The reacher experiment (paper section 6.3, table "2D-continuous reacher arm"): record the
scripted expert (:mod:`rmtk.envs.reacher`) in the reacher's Gymnasium vector environment
with :func:`rmtk.gym.collect` (a labeler, the angle / velocity :class:`~rmtk.gym.Bins`, the
expert as a policy: ``rmtk/gym/reacher.py``) into an empirical prefix tree policy, mine
confidence-bound negative examples for several α, and solve weighted MaxSAT at n = 4 nodes
(the paper's u_max) with unit weights.

Needs ``gymnasium[mujoco]`` (``pip install '.[reacher]'`` in rmtk's checkout).

Only (word, cell) pairs seen at least ``2·(log(2^25 − 2) − log α)`` times at a cell where at
least two such pairs exist can ever yield a negative example (:class:`ConfidenceMiner`
prunes the others first); the counts are cut to those pairs before the policy is built, so
the ≈16M-cell state space never becomes a dense ``(pairs, 25)`` array. The trie (every
label word of the data) is kept whole: the SAT encoding runs every word on the machine.
"""

from __future__ import annotations

import functools
import sys
import time
import tracemalloc
from collections.abc import Callable

import attrs
import numpy as np

from ..errors import RmtkError, UsageError
from ..limits import Deadline, SearchLimits
from ..machine.model import RewardMachine, isomorphic
from ..negatives.miners import ConfidenceMiner
from ..progress import Progress
from ..ptp.empirical import prune_counts, to_policy
from ..sat.encoders import MaxSatEncoder
from ..sat.encoding import Problem
from ._report import COUNT, Domain, MemoryEstimate, Options, Report, Setting
from .reacher_report import PAPER as PAPER
from .reacher_report import report

try:
    import resource
except ImportError:  # pragma: no cover - not on Windows
    resource = None

ALPHAS = (1e-3, 1e-4, 1e-5)
NODES = 4
SETTINGS = {
    "trajectories": Setting(100_000, "expert episodes of 160 steps (also --trajectories N)", quick=2_000, domain=COUNT),
    "workers": Setting(
        2,
        "processes recording the episodes: a local Dask cluster when above 1 "
        "(pip install '.[dask]' in rmtk's checkout), this process alone when 1",
        domain=COUNT,
    ),
    "integrator": Setting(
        "rk4",
        "rk4 (Reacher-v5's physics) or euler (about 2.5x faster, a cruder physics)",
        domain=Domain(choices=("rk4", "euler")),
    ),
    "expert": Setting(
        "scripted",
        "scripted (the control law of rmtk/envs/reacher.py) or agent (the PPO agent trained on the product with "
        "the true machine by benchmarks/train_reacher_agent.py, shipped with rmtk; "
        "pip install '.[rl,reacher]' in rmtk's checkout)",
        domain=Domain(choices=("scripted", "agent")),
    ),
    "agent": Setting("", "with expert=agent: the agent's Stable-Baselines3 PPO file (default: the shipped one)"),
    "active": Setting(
        False,
        "then ask the expert (rmtk.active.recorded, rmtk/gym/reacher.py) at recorded (word, word, cell) "
        "triples the surviving machines disagree on, until one survives or every such triple is settled",
    ),
    "exact": Setting(
        False,
        "with expert=agent: then read the agent's exact softmax at every recorded (word, cell) pair of a cell "
        "two words reached, mine its policy classes and enumerate the smallest machines (SAT)",
    ),
    "max_solutions": Setting(
        1000,
        "optimal machines enumerated (MaxSAT, the active loop's survivors)",
        domain=COUNT,
    ),
    "samples": Setting(
        100, "with active=true: visits of each word of a triple after which it is settled", domain=COUNT
    ),
    "explain": Setting(
        False,
        "say what would separate the machines left at the largest alpha, and how many more "
        "trajectories the confidence bound asks for",
    ),
}


#: GB at the peak of each process of a reacher run, measured (docs/benchmarks/10-reacher.md,
#: benchmarks/memory.py): what every run holds (the interpreter, MuJoCo, for the agent torch and
#: Stable-Baselines3) and what 10^5 trajectories add, by expert and phase. The recording grows
#: with the distinct (word, cell, action) keys, the active loop with the recorded triples; the
#: machines enumerated add little (one bit per machine and distinct split, rmtk.ptp).
MEMORY = {
    "scripted": {"base": 0.3, "record": 0.13, "passive": 0.06, "active": 0.4, "exact": 0.0},
    "agent": {"base": 0.6, "record": 0.4, "passive": 0.25, "active": 1.0, "exact": 16.0},
}


def memory(opts: Options) -> MemoryEstimate:
    """The largest process's peak (:data:`MEMORY`): the main process (which records too with
    one worker), or the worker that merges the recording's last two halves."""
    per = MEMORY[opts.get("expert")]
    n = opts.get("trajectories") / 1e5
    phase = "active" if opts.get("active") else "exact" if opts.get("exact") else "passive"
    main = per["base"] + n * (per["passive"] + (per[phase] if phase != "passive" else 0.0))
    worker = per["base"] + n * per["record"] if opts.get("workers") > 1 else 0.0
    if not worker:  # the main process records too
        main = max(main, per["base"] + n * per["record"])
    where = f"main process {main:.1f} GB" + (f", a recording worker {worker:.1f} GB" if worker else "")
    return MemoryEstimate(
        max(main, worker),
        f"{where}; {opts.get('trajectories'):,} trajectories of the {opts.get('expert')} expert, {phase}; "
        "it grows with the trajectories",
    )


def solution_machine(delta_u: np.ndarray, alphabet) -> RewardMachine:
    n = delta_u.shape[0]
    return RewardMachine(
        nodes=[f"u{i}" for i in range(n)], alphabet=alphabet, delta_u=delta_u, delta_r=np.zeros(delta_u.shape)
    )


@attrs.define
class AlphaResult:
    alpha: float
    negatives: int
    false_positives: int
    cost: int | None
    machines: int
    raw: int
    truth_listed: bool
    truth_cost: int
    complete: bool
    seconds: float
    solutions: list = attrs.field(factory=list, repr=False)

    @property
    def truth_optimal(self) -> bool:
        """The true machine violates exactly as many examples (its false positives) as the
        optimum: it is one of the optimal machines, listed or not."""
        return self.cost is not None and self.truth_cost == self.cost

    @property
    def truth_found(self) -> bool:
        return self.truth_listed or self.truth_optimal

    @property
    def fpr(self) -> float:
        return self.false_positives / self.negatives if self.negatives else 0.0


@attrs.define
class ReacherResult:
    trajectories: int
    seed: int
    node_steps: tuple
    clipped: int
    generate_seconds: float
    trajectories_per_second: float
    count_keys: int
    trie_nodes: int
    policy_pairs: int
    rows: list
    seconds: float
    peak_traced_mb: float
    maxrss_mb: float
    maxrss_children_mb: float
    integrator: str = "rk4"
    explanation: object = None
    active: object = None  # ActiveRun
    expert: str = "scripted"
    exact: object = None  # ExactRun


@attrs.define
class ActiveRun:
    """``--set active=true``: the loop's result, whether the truth is among its machines, its
    own seconds, and what the survivors that remain say (an explanation, when several)."""

    result: object
    machines: list
    truth_listed: bool
    seconds: float
    recorded_steps: int
    explanation: object = None


def _maxrss_mb(who: str) -> float:
    if resource is None:  # pragma: no cover
        return float("nan")
    r = resource.getrusage(getattr(resource, who)).ru_maxrss
    return r / 2**20 if sys.platform == "darwin" else r / 1024  # bytes on macOS, KiB on Linux


def _engine(client, workers: int | None):
    """Where the recording runs: on the client's cluster, on a local cluster of ``workers``
    processes, or in this process."""
    from ..engines.local import as_engine

    if client is not None:
        return as_engine("dask", client=client)
    return as_engine("dask", workers=workers) if workers is not None and workers > 1 else "local"


def simulate_and_learn(
    n_trajectories: int,
    *,
    alphas=ALPHAS,
    seed: int = 0,
    workers: int = 2,
    client=None,
    integrator: str = "rk4",
    explain: bool = False,
    chunk: int = 2000,
    nodes: int = NODES,
    max_solutions: int = 1000,
    time_limit: float | None = None,
    active: bool = False,
    samples: int = 100,
    expert: str = "scripted",
    agent=None,
    exact: bool = False,
    progress: Callable[[str], None] | None = None,
) -> ReacherResult:
    """Record ``n_trajectories`` expert episodes with :func:`rmtk.gym.collect` (shards of
    ``chunk`` episodes, each one wave of a :class:`ReacherVectorEnv`; on a local Dask cluster
    of ``workers`` processes when above 1, or on the Dask ``client`` given; the data depend
    on the seed alone), and for each α mine negative examples and solve MaxSAT at ``nodes``
    nodes with unit weights, enumerating up to ``max_solutions`` optimal machines. With
    ``explain``, what would separate the machines left at the largest α
    (:mod:`rmtk.learner.explain`: witnesses from the data, rare pairs and the trajectories they need).

    ``time_limit``: seconds per MaxSAT enumeration (rmtk.sat.search then runs Glucose 4, since
    pysat cannot interrupt CaDiCaL). With ``active``, the recording then goes to
    :class:`~rmtk.active.loop.ActiveLearner` asking at recorded triples
    (:class:`~rmtk.active.recorded.AtRecordedTriples`) at the largest α, which asks the
    scripted expert (:class:`~rmtk.gym.reacher.ReacherExpert`, seeded ``seed + 1``) at
    recorded triples the survivors disagree on, ``samples`` visits per word. ``expert="agent"``
    records and asks the trained agent in the file ``agent`` instead (default: the shipped one,
    :mod:`rmtk.rl.reacher`; asked with draws from its softmax). With ``exact`` (the agent only)
    the agent's exact softmax is read at every recorded (word, cell) pair of a cell two words
    reached (:func:`_exact`). ``progress``
    receives one-line messages.
    Wall time covers everything; memory is the main process's traced peak (tracemalloc) and
    the max RSS of the main process and of the worker processes.
    """
    from ..envs.reacher import PROPOSITIONS, true_machine
    from ..gym import collect
    from ..gym.reacher import INTEGRATORS, ReacherVectorEnv, reacher_bins, reacher_expert, reacher_labels

    if integrator not in INTEGRATORS:  # here, not on a worker: a plain error before any work
        raise RmtkError(f"integrator: one of {', '.join(INTEGRATORS)}, not {integrator!r}")
    if expert not in ("scripted", "agent"):
        raise RmtkError(f"expert: 'scripted' or 'agent', not {expert!r}")
    if exact and expert != "agent":
        raise RmtkError("exact answers come from the agent's softmax: exact=True needs expert='agent'")
    say = progress or (lambda msg: None)
    t_start = time.perf_counter()
    tracing = not tracemalloc.is_tracing()
    if tracing:
        tracemalloc.start()
    try:
        bins = reacher_bins()
        if expert == "agent":
            from ..rl.reacher import reacher_agent_policy

            policy = reacher_agent_policy(agent, bins)
        else:
            policy = reacher_expert(bins=bins)
        rec = collect(
            functools.partial(ReacherVectorEnv, chunk, integrator=integrator),
            policy,
            reacher_labels(),
            bins,
            n_trajectories,
            seed,
            shard=chunk,
            engine=_engine(client, workers),
            name="reacher",
            progress=_Ticks(say, t_start),
            moves=False,  # they feed a transition model (rmtk.gym.tabular), which nothing here estimates
        )
        generated = time.perf_counter() - t_start
        say(
            f"reacher: {rec.episodes} trajectories in {generated:.1f} s ({rec.episodes / generated:.0f}/s), "
            f"{len(rec.keys)} distinct (word, cell, action), trie of {rec.trie.n_nodes} words, "
            f"{rec.clipped} observations clipped into the edge velocity bins"
        )
        alphas = sorted(alphas, reverse=True)
        min_count = min(ConfidenceMiner(a).min_count(rec.n_actions) for a in alphas)
        n_keys, trie = len(rec.keys), rec.trie
        truth = true_machine()
        true_node = trie.run(truth.delta_u, truth.initial)
        steps = np.bincount(true_node[rec.keys // (rec.n_states * rec.n_actions)], weights=rec.counts, minlength=4)
        ptp = to_policy(prune_counts(rec, min_count))
        clipped, space = rec.clipped, rec.space
        asked = _asked(expert, agent, seed, integrator, bins) if active else None
        active_run = _active(rec, alphas[0], samples, asked, nodes, max_solutions, say) if active else None
        exact_run = _exact(rec, true_node, agent, bins, nodes, max_solutions, time_limit, say) if exact else None
        del rec
        rows, explanation = [], None
        for alpha in alphas:
            t0 = time.perf_counter()
            neg = ConfidenceMiner(alpha).mine(ptp)
            # a false positive: both words end in the same node of the true machine (the
            # truth must violate it, so the truth's MaxSAT cost is the number of them)
            fp = int((true_node[neg.pairs[:, 0]] == true_node[neg.pairs[:, 1]]).sum()) if len(neg) else 0
            say(
                f"reacher: alpha {alpha:g}: {len(neg)} negative examples, {fp} false positives; MaxSAT at {nodes} nodes"
            )
            res = MaxSatEncoder().search(
                Problem(trie, len(PROPOSITIONS), neg),
                SearchLimits(max_nodes=nodes, max_solutions=max_solutions, deadline=Deadline.after(time_limit)),
            )
            machines = [solution_machine(s.delta_u, PROPOSITIONS) for s in res.solutions]
            listed = any(isomorphic(m, truth, rewards=False) for m in machines)
            row = AlphaResult(
                alpha,
                len(neg),
                fp,
                res.cost,
                len(res.solutions),
                res.raw_count,
                listed,
                fp,
                res.complete,
                time.perf_counter() - t0,
                machines,
            )
            rows.append(row)
            if explain and alpha == alphas[0] and len(res.solutions) > 1:
                from ..learner.explain import Explanation, cover, rare_triples

                deltas = [sol.delta_u for sol in res.solutions]
                say(f"reacher: alpha {alpha:g}: what would separate the {len(deltas)} machines")
                rare = rare_triples(space, ptp, deltas, alpha=alpha, n_trajectories=n_trajectories, limit=5)
                explanation = Explanation(
                    cover(space, deltas, ptp=ptp), rare.pairs, None, alpha, rare.examined, rare.beyond_noise
                )
            more = "" if res.complete else f" (enumeration stopped at {max_solutions})"
            say(
                f"reacher: alpha {alpha:g}: cost {res.cost}, {len(res.solutions)} machines{more} "
                f"({res.raw_count} raw), truth {'optimal' if row.truth_optimal else 'not optimal'}"
                f"{', listed' if listed else ''}"
            )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        if tracing:
            tracemalloc.stop()
    return ReacherResult(
        trajectories=n_trajectories,
        seed=seed,
        node_steps=tuple(float(x) for x in steps / steps.sum()),
        clipped=clipped,
        generate_seconds=generated,
        trajectories_per_second=n_trajectories / generated,
        count_keys=n_keys,
        trie_nodes=trie.n_nodes,
        policy_pairs=ptp.n_pairs,
        rows=rows,
        seconds=time.perf_counter() - t_start,
        peak_traced_mb=peak / 2**20,
        maxrss_mb=_maxrss_mb("RUSAGE_SELF"),
        maxrss_children_mb=_maxrss_mb("RUSAGE_CHILDREN"),
        integrator=integrator,
        explanation=explanation,
        active=active_run,
        expert=expert,
        exact=exact_run,
    )


def _asked(expert: str, agent, seed: int, integrator: str, bins):
    """The expert the active loop asks (seeded ``seed + 1``): the scripted one restoring arms
    in the cell, or the agent, drawing from its softmax at the cell's centre (the loop mixes
    its answers with the recorded counts, so they are counts too)."""
    if expert == "agent":
        from ..rl.reacher import reacher_agent_expert

        return reacher_agent_expert(agent, bins, seed=seed + 1, exact=False)
    from ..gym.reacher import ReacherExpert

    return ReacherExpert(bins=bins, seed=seed + 1, integrator=integrator)


def _active(rec, alpha, samples, asked, nodes, max_solutions, say) -> ActiveRun:
    """The recording and the expert ``asked`` through the recorded active loop; the truth is
    compared afterwards, never read by the loop."""
    from ..active.loop import ActiveLearner
    from ..active.recorded import AtRecordedTriples
    from ..envs.reacher import PROPOSITIONS, true_machine
    from ..learner.explain import Explanation, cover, rare_triples

    t0 = time.perf_counter()
    say(f"reacher: active: asking the expert at recorded triples the survivors disagree on (alpha {alpha:g})")
    learner = ActiveLearner(
        strategy=AtRecordedTriples(samples=samples),
        max_nodes=nodes,
        alpha=alpha,
        max_solutions=max_solutions,
        max_rounds=50,
        progress=_Notes(lambda msg: say(f"reacher: active: {msg}")),
    )
    res = learner.fit(rec.space, asked, data=rec)
    machines = [solution_machine(s.delta_u, PROPOSITIONS) for s in res.solutions]
    listed = any(isomorphic(m, true_machine(), rewards=False) for m in machines)
    explanation = None
    if len(machines) > 1:
        ptp = res.result.ptp  # the last round's, cut to the pairs that can yield a negative
        deltas = [s.delta_u for s in res.solutions]
        rare = rare_triples(rec.space, ptp, deltas, alpha=alpha, n_trajectories=rec.episodes, limit=5)
        explanation = Explanation(
            cover(rec.space, deltas, ptp=ptp), rare.pairs, None, alpha, rare.examined, rare.beyond_noise
        )
    return ActiveRun(res, machines, listed, time.perf_counter() - t0, rec.n_steps, explanation)


@attrs.define
class ExactRun:
    """``--set exact=true``: the agent's softmax at the recorded (word, cell) pairs of cells
    two words reached, its policy classes and the machines SAT finds with them."""

    pairs: int
    classes: int
    negatives: int
    size: int | None
    machines: list
    complete: bool
    truth_listed: bool
    seconds: float


def _exact(rec, true_node, agent, bins, nodes, max_solutions, time_limit, say) -> ExactRun:
    """Ask the agent exactly at every recorded (word, cell) pair whose cell another word also
    reached (only those can part two words), mine the policy classes (exact setting, paper
    section 3: distributions compared within :data:`rmtk.ties.TOL`) and enumerate the smallest
    machines, up to ``nodes`` nodes. The true machine drives the agent's node (as
    :class:`~rmtk.rl.AgentExpert` does) and is compared with the result afterwards."""
    from ..envs.reacher import PROPOSITIONS, true_machine
    from ..negatives.miners import ExactMiner
    from ..ptp.tree import PrefixTree, PrefixTreePolicy
    from ..rl.reacher import reacher_agent_softmax
    from ..sat.encoders import SatEncoder

    t0 = time.perf_counter()
    pair = np.unique(rec.keys // rec.n_actions)
    word, state = pair // rec.n_states, pair % rec.n_states
    _, inv, count = np.unique(state, return_inverse=True, return_counts=True)
    word, state = word[count[inv] >= 2], state[count[inv] >= 2]
    say(f"reacher: exact: the agent's softmax at {len(word)} recorded (word, cell) pairs of shared cells")
    ptp = PrefixTreePolicy(
        PrefixTree(rec.trie, word, state, int(rec.trie.length.max())),
        reacher_agent_softmax(state, true_node[word], agent, bins),
    )
    classes = ExactMiner().mine(ptp)
    problem = Problem(rec.trie, len(PROPOSITIONS), classes)
    say(f"reacher: exact: {classes.n_classes} policy classes; SAT up to {nodes} nodes")
    res = SatEncoder().search(
        problem, SearchLimits(max_nodes=nodes, max_solutions=max_solutions, deadline=Deadline.after(time_limit))
    )
    machines = [solution_machine(sol.delta_u, PROPOSITIONS) for sol in res.solutions]
    listed = any(isomorphic(m, true_machine(), rewards=False) for m in machines)
    size = machines[0].n_nodes if machines else None
    say(f"reacher: exact: {len(machines)} machines of {size} nodes, truth {'listed' if listed else 'not listed'}")
    return ExactRun(
        len(word),
        classes.n_classes,
        len(problem.negative_pairs()),
        size,
        machines,
        res.complete,
        listed,
        time.perf_counter() - t0,
    )


class _Notes(Progress):
    """Progress notes (one per round of the active loop) passed to ``say``."""

    def __init__(self, say):
        self.say = say

    def note(self, message):
        self.say(message)


class _Ticks(Progress):
    """Progress notes of the collection, at most one every 10 s."""

    def __init__(self, say, t0):
        self.say, self.t0, self.last = say, t0, 0.0

    def count(self, done, total, what="trajectories"):
        now = time.perf_counter()
        if now - self.last >= 10 or done >= total:
            self.last = now
            self.say(f"reacher: {done}/{total} trajectories simulated and counted ({now - self.t0:.0f} s)")


def run(opts: Options) -> Report:
    """``rmtk reproduce reacher``: settings ``trajectories`` (default 100,000; quick 2,000),
    ``workers``, ``integrator``, ``explain``, ``active``, ``samples``, ``expert`` (``agent``:
    the shipped PPO agent, or the file ``agent``), ``exact`` and ``max_solutions``; the seed;
    progress notes. ``agent`` or ``exact`` without ``expert=agent`` is a
    :class:`~rmtk.errors.UsageError`."""
    try:
        import gymnasium  # noqa: F401
        import mujoco  # noqa: F401
    except ImportError:  # only these two: an import error of rmtk itself must show
        raise RmtkError(
            "the reacher experiment needs gymnasium with MuJoCo: pip install '.[reacher]' in rmtk's checkout "
            "(from a checkout: pip install '.[reacher]')"
        ) from None
    expert, agent = opts.get("expert"), opts.get("agent") or None
    if agent is not None and expert != "agent":
        raise UsageError(f"--set agent={agent} applies with --set expert=agent: the scripted expert reads no file")
    if opts.get("exact") and expert != "agent":
        raise UsageError("--set exact=true applies with --set expert=agent: exact answers are the agent's softmax")
    if expert == "agent":
        from ..rl.sb3 import _require

        _require()  # the rl extra's install hint, before any work
    res = simulate_and_learn(
        opts.get("trajectories"),
        seed=opts.seed,
        workers=opts.get("workers"),
        integrator=opts.get("integrator"),
        explain=opts.get("explain"),
        active=opts.get("active"),
        samples=opts.get("samples"),
        expert=expert,
        agent=agent,
        exact=opts.get("exact"),
        max_solutions=opts.get("max_solutions"),
        progress=opts.say,
    )
    return report(res)
