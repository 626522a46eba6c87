"""The reacher experiment (paper section 6.3, table "2D-continuous reacher arm"): simulate the
discretised 2-link arm with a scripted expert (:mod:`rmtk.envs.reacher`), count the
demonstrations into an empirical prefix tree policy, mine confidence-bound negative examples
for several α, and solve weighted MaxSAT at n = 4 nodes (the paper's u_max) with unit weights.

Needs ``gymnasium[mujoco]`` (``pip install rmtk[reacher]``).

Only (word, cell) pairs seen at least ``2·(log(2^25 − 2) − log α)`` times at a cell where at
least two such pairs exist can ever yield a negative example (:class:`ConfidenceMiner`
prunes the others first); the counts are cut to those pairs before the policy is built, so
the ≈16M-cell state space never becomes a dense ``(pairs, 25)`` array. The trie (every
label word of the data) is kept whole: the SAT encoding runs every word on the machine.
"""
from __future__ import annotations

import resource
import sys
import time
import tracemalloc
from typing import Callable

import attrs
import numpy as np

from .empirical import CountTable, to_policy
from .machine import RewardMachine, isomorphic
from .negatives import ConfidenceMiner
from .solve import EncodingOptions, Encoder, maxsat_search

#: The paper's table (1M trajectories): α → (|E⁻|, FPR %, MaxSAT solutions, machines up to renaming).
PAPER = {1e-3: (1472, 1.90, 4, 2), 1e-4: (1193, 1.67, 4, 2), 1e-5: (882, 1.36, 4, 2)}
ALPHAS = (1e-3, 1e-4, 1e-5)
NODES = 4


def prune_counts(table: CountTable, min_count: float) -> CountTable:
    """Keep the (word, cell) pairs seen at least ``min_count`` times, at cells where two or
    more such pairs remain (no other pair can yield a negative example); the trie is kept."""
    A, S = table.n_actions, table.n_states
    pair = table.keys // A
    uniq, inv = np.unique(pair, return_inverse=True)
    total = np.bincount(inv, weights=table.counts, minlength=len(uniq))
    keep_pair = total >= min_count
    state = uniq % S
    kept_states, per_state = np.unique(state[keep_pair], return_counts=True)
    multi = kept_states[per_state >= 2]
    keep_pair &= np.isin(state, multi)
    keep = keep_pair[inv]
    return CountTable(table.trie, table.keys[keep], table.counts[keep], S, A, table.n_letters)


def solution_machine(delta_u: np.ndarray, alphabet) -> RewardMachine:
    n = delta_u.shape[0]
    return RewardMachine(nodes=[f"u{i}" for i in range(n)], alphabet=alphabet, delta_u=delta_u,
                         delta_r=np.zeros(delta_u.shape))


@attrs.define
class AlphaResult:
    alpha: float
    negatives: int
    false_positives: int
    cost: int | None
    machines: int
    raw: int
    truth_found: bool
    truth_cost: int
    complete: bool
    seconds: float
    solutions: list = attrs.field(factory=list, repr=False)

    @property
    def fpr(self) -> float:
        return self.false_positives / self.negatives if self.negatives else 0.0


@attrs.define
class ReacherResult:
    trajectories: int
    seed: int
    completion_rate: float
    mean_completion_step: float
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


def _maxrss_mb(who) -> float:
    r = resource.getrusage(who).ru_maxrss
    return r / 2**20 if sys.platform == "darwin" else r / 1024  # bytes on macOS, KiB on Linux


def run(
    n_trajectories: int,
    *,
    alphas=ALPHAS,
    seed: int = 0,
    workers: int = 2,
    chunk: int = 2000,
    nodes: int = NODES,
    max_solutions: int = 1000,
    time_limit: float | None = None,
    progress: Callable[[str], None] | None = None,
) -> ReacherResult:
    """Generate, count, mine and solve; see the module docstring."""
    from .envs.reacher import PROPOSITIONS, generate_counts, true_machine

    say = progress or (lambda msg: None)
    t_start = time.perf_counter()
    tracing = not tracemalloc.is_tracing()
    if tracing:
        tracemalloc.start()
    try:
        last = [0.0]

        def tick(done, total):
            now = time.perf_counter()
            if now - last[0] >= 10 or done >= total:
                last[0] = now
                say(f"reacher: {done}/{total} trajectories simulated and counted ({now - t_start:.0f} s)")

        table, stats = generate_counts(n_trajectories, seed=seed, workers=workers, chunk=chunk, progress=tick)
        say(f"reacher: {stats.trajectories} trajectories in {stats.seconds:.1f} s "
            f"({stats.trajectories / stats.seconds:.0f}/s), {len(table.keys)} distinct (word, cell, action), "
            f"trie of {table.trie.n_nodes} words")
        alphas = sorted(alphas, reverse=True)
        min_count = min(ConfidenceMiner(a).min_count(table.n_actions) for a in alphas)
        n_keys, trie = len(table.keys), table.trie
        ptp = to_policy(prune_counts(table, min_count))
        del table
        truth = true_machine()
        true_node = trie.run(truth.delta_u, truth.initial)
        rows = []
        for alpha in alphas:
            t0 = time.perf_counter()
            neg = ConfidenceMiner(alpha).mine(ptp)
            fp = int((true_node[neg.pairs[:, 0]] == true_node[neg.pairs[:, 1]]).sum()) if len(neg) else 0
            say(f"reacher: alpha {alpha:g}: {len(neg)} negative examples, {fp} false positives; MaxSAT at {nodes} nodes")
            enc = Encoder(trie, len(PROPOSITIONS), None, None, EncodingOptions(negatives="pairs"))
            res = maxsat_search(enc, neg.pairs, neg.weights("unit"), nodes=nodes, max_solutions=max_solutions,
                                time_limit=time_limit)
            machines = [solution_machine(s.delta_u, PROPOSITIONS) for s in res.solutions]
            found = any(isomorphic(m, truth, rewards=False) for m in machines)
            rows.append(AlphaResult(alpha, len(neg), fp, res.cost, len(res.solutions), res.raw_count, found, fp,
                                    res.complete, time.perf_counter() - t0, machines))
            say(f"reacher: alpha {alpha:g}: cost {res.cost}, {len(res.solutions)} machines "
                f"({res.raw_count} raw), truth {'found' if found else 'not found'}")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        if tracing:
            tracemalloc.stop()
    return ReacherResult(
        trajectories=stats.trajectories,
        seed=seed,
        completion_rate=stats.completion_rate,
        mean_completion_step=stats.done_steps / max(1, stats.completed),
        generate_seconds=stats.seconds,
        trajectories_per_second=stats.trajectories / stats.seconds,
        count_keys=n_keys,
        trie_nodes=trie.n_nodes,
        policy_pairs=ptp.n_pairs,
        rows=rows,
        seconds=time.perf_counter() - t_start,
        peak_traced_mb=peak / 2**20,
        maxrss_mb=_maxrss_mb(resource.RUSAGE_SELF),
        maxrss_children_mb=_maxrss_mb(resource.RUSAGE_CHILDREN),
    )
