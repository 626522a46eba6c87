"""The reacher experiment (paper section 6.3, table "2D-continuous reacher arm"): record the
scripted expert (:mod:`rmtk.envs.reacher`) in the reacher's Gymnasium vector environment
with :func:`rmtk.gym.collect` (a labeler, the angle / velocity :class:`~rmtk.gym.Bins`, the
expert as a policy: ``rmtk/gym/reacher.py``) into an empirical prefix tree policy, mine
confidence-bound negative examples for several α, and solve weighted MaxSAT at n = 4 nodes
(the paper's u_max) with unit weights.

Needs ``gymnasium[mujoco]`` (``pip install 'rmtk[reacher]'``).

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

from ..empirical import prune_counts, to_policy
from ..encoders import MaxSatEncoder
from ..errors import RmtkError
from ..limits import Deadline, SearchLimits
from ..machine import RewardMachine, isomorphic
from ..negatives import ConfidenceMiner
from ..progress import Progress
from ..sat.encoding import Problem
from ._report import COUNT, Domain, Options, Report, Setting

try:
    import resource
except ImportError:  # pragma: no cover - not on Windows
    resource = None

#: The paper's table (1M trajectories): α → (|E⁻|, FPR %, MaxSAT solutions, machines up to renaming).
PAPER = {1e-3: (1472, 1.90, 4, 2), 1e-4: (1193, 1.67, 4, 2), 1e-5: (882, 1.36, 4, 2)}
ALPHAS = (1e-3, 1e-4, 1e-5)
NODES = 4
SETTINGS = {
    "trajectories": Setting(100_000, "expert episodes of 160 steps (also --trajectories N)", quick=2_000, domain=COUNT),
    "workers": Setting(
        2,
        "processes recording the episodes: a local Dask cluster when above 1 "
        "(pip install 'rmtk[dask]'), this process alone when 1",
        domain=COUNT,
    ),
    "integrator": Setting(
        "rk4",
        "rk4 (Reacher-v5's physics) or euler (about 2.5x faster, a cruder physics)",
        domain=Domain(choices=("rk4", "euler")),
    ),
    "active": Setting(
        False,
        "then ask the expert (rmtk.active.recorded, rmtk/gym/reacher.py) at recorded (word, word, cell) "
        "triples the surviving machines disagree on, until one survives or every such triple is settled",
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
    progress: Callable[[str], None] | None = None,
) -> ReacherResult:
    """Record ``n_trajectories`` expert episodes with :func:`rmtk.gym.collect` (shards of
    ``chunk`` episodes, each one wave of a :class:`ReacherVectorEnv`; on a local Dask cluster
    of ``workers`` processes when above 1, or on the Dask ``client`` given; the data depend
    on the seed alone), and for each α mine negative examples and solve MaxSAT at ``nodes``
    nodes with unit weights, enumerating up to ``max_solutions`` optimal machines. With
    ``explain``, what would separate the machines left at the largest α
    (:mod:`rmtk.explain`: witnesses from the data, rare pairs and the trajectories they need).

    ``time_limit``: seconds per MaxSAT enumeration (rmtk.sat.search then runs Glucose 4, since
    pysat cannot interrupt CaDiCaL). With ``active``, the recording then goes to
    :class:`~rmtk.active.loop.ActiveLearner` asking at recorded triples
    (:class:`~rmtk.active.recorded.AtRecordedTriples`) at the largest α, which asks the
    scripted expert (:class:`~rmtk.gym.reacher.ReacherExpert`, seeded ``seed + 1``) at
    recorded triples the survivors disagree on, ``samples`` visits per word. ``progress``
    receives one-line messages.
    Wall time covers everything; memory is the main process's traced peak (tracemalloc) and
    the max RSS of the main process and of the worker processes.
    """
    from ..envs.reacher import PROPOSITIONS, true_machine
    from ..gym import collect
    from ..gym.reacher import INTEGRATORS, ReacherVectorEnv, reacher_bins, reacher_expert, reacher_labels

    if integrator not in INTEGRATORS:  # here, not on a worker: a plain error before any work
        raise RmtkError(f"integrator: one of {', '.join(INTEGRATORS)}, not {integrator!r}")
    say = progress or (lambda msg: None)
    t_start = time.perf_counter()
    tracing = not tracemalloc.is_tracing()
    if tracing:
        tracemalloc.start()
    try:
        bins = reacher_bins()
        rec = collect(
            functools.partial(ReacherVectorEnv, chunk, integrator=integrator),
            reacher_expert(bins=bins),
            reacher_labels(),
            bins,
            n_trajectories,
            seed,
            shard=chunk,
            engine=_engine(client, workers),
            name="reacher",
            progress=_Ticks(say, t_start),
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
        active_run = _active(rec, alphas[0], samples, seed, integrator, nodes, max_solutions, say) if active else None
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
                from ..explain import Explanation, cover, rare_triples

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
    )


def _active(rec, alpha, samples, seed, integrator, nodes, max_solutions, say) -> ActiveRun:
    """The recording and the scripted expert through the recorded active loop; the truth is
    compared afterwards, never read by the loop."""
    from ..active.loop import ActiveLearner
    from ..active.recorded import AtRecordedTriples
    from ..envs.reacher import PROPOSITIONS, true_machine
    from ..explain import Explanation, cover, rare_triples
    from ..gym.reacher import ReacherExpert

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
    res = learner.fit(rec.space, ReacherExpert(seed=seed + 1, integrator=integrator), data=rec)
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


# ---------------------------------------------------------------------- report
def _projection(res: ReacherResult, n: int) -> float:
    """Seconds for ``n`` trajectories: generation at the measured rate, the rest as measured."""
    return n / res.trajectories_per_second + (res.seconds - res.generate_seconds)


def report(res: ReacherResult, title: str | None = None):
    """A :class:`~rmtk.experiments.Report` of :func:`simulate_and_learn`'s result beside the paper's table."""
    rep = Report(title or "reacher (paper section 6.3): discretised 2-link arm, scripted expert, MaxSAT at 4 nodes")
    rows = []
    for r in res.rows:
        paper = PAPER.get(r.alpha)
        machines = f"{r.machines}" if r.complete else f">={r.machines}"
        raw = f"{r.raw}" if r.complete else f">={r.raw}"
        rows.append(
            (
                f"{r.alpha:g}",
                r.negatives,
                f"{100 * r.fpr:.2f}%",
                r.cost,
                machines,
                raw,
                "yes" if r.truth_optimal else "no",
                "yes" if r.truth_listed else "no",
                paper[0] if paper else None,
                f"{paper[1]:.2f}%" if paper else None,
                f"{paper[2]} ({paper[3]})" if paper else None,
            )
        )
    rep.tables.append(
        (
            f"{res.trajectories} trajectories of {160} steps (seed {res.seed}); the paper: 10^6 trajectories, PPO "
            "expert",
            [
                "alpha",
                "|E-|",
                "FPR",
                "MaxSAT cost",
                "machines",
                "raw",
                "truth optimal",
                "truth listed",
                "paper |E-|",
                "paper FPR",
                "paper solutions (machines)",
            ],
            rows,
        )
    )
    rep.tables.append(
        (
            "cost: wall time and memory of the whole run",
            [
                "trajectories",
                "steps in u0/u1/u2/u3",
                "clipped observations",
                "trajectories/s",
                "(word, cell, action) keys",
                "trie words",
                "pairs kept",
                "wall s",
                "peak traced MB",
                "max RSS MB (main)",
                "max RSS MB (workers)",
                "projected s for 10^6",
            ],
            [
                (
                    res.trajectories,
                    "/".join(f"{100 * x:.0f}%" for x in res.node_steps),
                    res.clipped,
                    f"{res.trajectories_per_second:.0f}",
                    res.count_keys,
                    res.trie_nodes,
                    res.policy_pairs,
                    f"{res.seconds:.1f}",
                    f"{res.peak_traced_mb:.0f}",
                    f"{res.maxrss_mb:.0f}",
                    f"{res.maxrss_children_mb:.0f}",
                    f"{_projection(res, 1_000_000):.0f}",
                )
            ],
        )
    )
    rep.notes += [
        "expert: scripted (inverse kinematics + velocity-command control at the cell centre, torques rounded to the "
        "5 levels, epsilon-greedy 0.1), a function of (cell, true node) as the paper's PPO policy sampled at cell "
        "centres; after r it returns to b and holds there. See rmtk/envs/reacher.py for every choice; recorded "
        "with rmtk.gym.collect from the reacher's Gymnasium vector environment (rmtk/gym/reacher.py).",
        "labels: the disc (b, y, r; radius 0.02) the fingertip is in, from the continuous angles, else i; words are "
        "compressed (non-stuttering). States: 36 x 36 angle bins (10 deg) x 112 x 112 velocity bins (0.25 rad/s, "
        "clipped to +-14) = 16,257,024 cells (the paper: ~17.4M).",
        "|E-| = distinct word pairs mined (ConfidenceMiner, unit weights); a false positive is a pair whose two words "
        "end in the same node of the true machine u0 -b-> u1 -y-> u2 -r-> u3; FPR = false positives / |E-|.",
        "machines = optimal MaxSAT machines at 4 nodes up to renaming (unexercised transitions left free), raw = the "
        "paper's count (node 0 fixed); '>=' when the enumeration stopped at its limit. truth optimal = the true "
        "machine "
        "violates exactly the optimum's number of examples (so it is an optimal solution, listed or not); truth listed "
        "= isomorphic (transitions only) to an enumerated machine.",
        "the expert's nodes meet mostly near the targets (handing over from one goal to the next) and where u3 holds "
        "at b, so the negatives separate u1 from u3 and successive nodes; they do not pin the machine down at this "
        "data size: many 4-node machines are optimal, the true one among them.",
    ]
    if res.integrator != "rk4":
        rep.notes.append(
            f"physics: the {res.integrator} integrator, not Reacher-v5's RK4 (--set integrator={res.integrator}):"
            " faster, and a different physics; figures are not Reacher-v5's."
        )
    if res.explanation is not None:
        rep.notes.append(f"what would separate the machines at alpha {res.rows[0].alpha:g}:\n{res.explanation}")
    if res.active is not None:
        _active_report(rep, res)
    rep.seconds = res.seconds
    return rep


def _active_report(rep: Report, res: ReacherResult) -> None:
    from ..envs.reacher import HORIZON

    act = res.active
    r = act.result
    passive = res.rows[0]
    full = 1_000_000 * HORIZON
    total = act.recorded_steps + r.steps
    rep.tables.append(
        (
            f"active (--set active=true): the {res.trajectories} recorded trajectories, then the expert asked at "
            f"recorded triples the survivors disagree on (alpha {passive.alpha:g}); beside it the passive figures of "
            "the same run, and the passive 10^6 run (1.6e8 steps; its wall time projected from this run's rate)",
            [
                "",
                "machines",
                "truth listed",
                "negatives",
                "expert steps",
                "% of 10^6 passive steps",
                "queries",
                "rounds",
                "wall s",
            ],
            [
                (
                    "passive",
                    passive.machines,
                    "yes" if passive.truth_listed else "no",
                    passive.negatives,
                    act.recorded_steps,
                    f"{100 * act.recorded_steps / full:.1f}%",
                    0,
                    "",
                    f"{res.seconds - act.seconds:.1f}",
                ),
                (
                    "active",
                    len(act.machines),
                    "yes" if act.truth_listed else "no",
                    len(r.negatives),
                    total,
                    f"{100 * total / full:.1f}%",
                    r.queries,
                    len(r.rounds),
                    f"{res.seconds:.1f}",
                ),
                ("passive 10^6 (projected)", "", "", "", full, "100%", 0, "", f"{_projection(res, 1_000_000):.0f}"),
            ],
        )
    )
    rep.notes.append("active rounds:\n" + "\n".join(f"  {x}" for x in r.log().splitlines()))
    if act.explanation is not None:
        rep.notes.append(
            "rmtk.explain on the machines the active run leaves (its rare triples are planned with a lower "
            "confidence bound of their difference, docs/design.md section 14; see the separation note above for "
            f"what the settled triples show):\n{act.explanation}"
        )


def run(opts: Options) -> Report:
    """``rmtk reproduce reacher``: settings ``trajectories`` (default 100,000; quick 2,000),
    ``workers``, ``integrator`` and ``explain``; the seed; progress notes."""
    try:
        import gymnasium  # noqa: F401
        import mujoco  # noqa: F401
    except ImportError:  # only these two: an import error of rmtk itself must show
        raise RmtkError(
            "the reacher experiment needs gymnasium with MuJoCo: pip install 'rmtk[reacher]' "
            "(from a checkout: pip install '.[reacher]')"
        ) from None
    res = simulate_and_learn(
        opts.get("trajectories"),
        seed=opts.seed,
        workers=opts.get("workers"),
        integrator=opts.get("integrator"),
        explain=opts.get("explain"),
        active=opts.get("active"),
        samples=opts.get("samples"),
        progress=opts.say,
    )
    return report(res)
