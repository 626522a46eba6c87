"""The machines that survive what is known of the expert (docs/design/12-active-learning.md; what is
known: :class:`~rmtk.active.knowledge.Knowledge`, in rmtk/active/knowledge.py, which this module
still offers under its former name ``rmtk.active.survivors.Knowledge``).

:class:`Survivors` keeps one incremental SAT solver per number of nodes across rounds. What
is known only grows, so a counterexample once added stays valid, and a size once
unsatisfiable stays so: each round adds the new counterexamples to the live solver and
enumerates again. The blocking clauses of a round carry a selector literal that is switched
off afterwards, so the next round enumerates afresh on the same solver. Counted knowledge can
lose a negative example when more counts arrive (the confidence bound is not monotone); the
solvers are then rebuilt, and the round says so.
"""

from __future__ import annotations

import time

import attrs
import numpy as np

from ..limits import NEVER, Deadline
from ..negatives.miners import NegativePairs
from ..ptp.tree import Trie
from ..sat.encoders import SatEncoder
from ..sat.encoding import Problem, decode_transitions
from ..sat.lazy import LazyFormula
from ..sat.search import SearchResult, canonical_partial, record, stopped_while
from ..sat.solver import open_solver, solve
from .knowledge import Knowledge

__all__ = ["Knowledge", "Survivors", "Found", "determined"]


@attrs.frozen
class Found:
    """The machines of one search: the search outcome (``search.solutions``, or, for a
    round's hypotheses, ``machines`` and their ``used`` transitions without counts), whether the
    solvers were rebuilt, and whether a judge refuted a machine (the enumeration then stopped)."""

    search: SearchResult
    rebuilt: bool
    machines: tuple = ()
    used: tuple = ()
    refuted: bool = False


def determined(du: np.ndarray, used: np.ndarray, non_stuttering: bool) -> np.ndarray:
    """The transitions of ``du`` the data determine: the ``used`` ones and those with a single
    valid filling (as :func:`~rmtk.sat.search.count_completions` finds, without listing the
    fillings). For a non-stuttering machine a letter's column is idempotent: δ(j, k) = j
    wherever a used transition reads k into j, and a free δ(i, k) may be any node that can be
    a fixed point (a free one, i itself included, or such a j), so it is determined only when i
    is the one candidate. Without non-stuttering every filling is valid: only the used ones are
    determined (the convention of ``count_completions``)."""
    n, K = du.shape
    out = np.asarray(used, bool).copy()
    if not non_stuttering:
        return out
    for k in range(K):
        fixed = np.unique(du[out[:, k], k])
        out[fixed, k] = True
        free = np.flatnonzero(~out[:, k])
        if len(free) == 1 and not len(fixed):
            out[free, k] = True
    return out


def _light(found: dict, du: np.ndarray, used: np.ndarray, pool, non_stuttering: bool) -> list[int]:
    """File ``du`` under its renaming-invariant key without counting its completions (with
    its determined transitions); the blocking clause of its used transitions (as
    :func:`~rmtk.sat.search.record`)."""
    key = canonical_partial(du, used)[0]
    found.setdefault(key, (du, determined(du, used, non_stuttering)))
    return [-int(pool.t(i, k, du[i, k])) for i, k in np.argwhere(used)]


class Survivors:
    """The smallest machines consistent with the knowledge, searched lazily on solvers kept
    between rounds (see the module docstring); and *alternatives*, machines of one node more
    consistent with it, whose disagreements with the survivors are where to test them."""

    def __init__(self, encoder: SatEncoder, n_letters: int, *, max_nodes: int, compressed: bool = True):
        self.encoder, self.K, self.max_nodes, self.compressed = encoder, n_letters, max_nodes, compressed
        self.n = 1
        self._live: dict[int, dict] = {}
        self._added: set = set()
        self._rounds = 0

    def close(self, below: int | None = None) -> None:
        """Delete the solvers (of fewer than ``below`` nodes only)."""
        for n in [n for n in self._live if below is None or n < below]:
            self._live.pop(n)["solver"].delete()

    def _get(self, n: int, oracle) -> dict:
        if n not in self._live:
            problem = Problem(Trie.root(self.compressed), self.K, oracle=oracle)
            formula = self.encoder.structure(problem, n)
            solver = open_solver(self.encoder.solver, formula.hard)
            self._live[n] = {
                "solver": solver,
                "pool": formula.pool,
                "lazy": LazyFormula(formula.pool, solver),
                "clauses": len(formula.hard),
                "alt": formula.pool.new(("alternatives",)),
                "seen": 0,
            }
        return self._live[n]

    def _enumerate(
        self,
        n: int,
        oracle,
        limit: int | None,
        *,
        alternatives: bool = False,
        deadline: Deadline = NEVER,
        judge=None,
        count: bool = True,
    ) -> tuple[dict, bool, float, bool]:
        """Machines at ``n`` nodes that ``oracle`` accepts, at most ``limit``; with
        ``alternatives`` those never returned as alternatives before (their blocking clauses
        are kept for later calls of that kind only). ``judge(delta_u)``: a machine it refuses
        ends the enumeration (refuted). ``count``: file solutions with their raw counts (else
        the machines and their used transitions only). Returns (found, complete, seconds spent
        adding counterexamples, refuted)."""
        live = self._get(n, oracle)
        solver, pool, lazy = live["solver"], live["pool"], live["lazy"]
        self._rounds += 1
        selector = pool.new(("round", self._rounds))
        assume = [selector, live["alt"]] if alternatives else [selector]
        found: dict = {}  # survivors by their renaming-invariant key; alternatives by their number
        complete, refuted, t_enc = True, False, 0.0
        while True:
            sat = solve(solver, deadline, assume)
            if sat is None:  # the deadline: what was found so far
                complete = False
                break
            if not sat:
                break
            du = decode_transitions(solver.get_model(), pool)
            counter = oracle.check(du)
            if counter:
                t1 = time.perf_counter()
                for cex in counter:
                    lazy.add(cex)
                    if cex.class1 < 0:
                        self._added.add(frozenset((cex.word1, cex.word2)))
                t_enc += time.perf_counter() - t1
                continue
            if alternatives:  # every transition of the model: an alternative is a whole machine
                found[len(found)] = du
                solver.add_clause([-live["alt"]] + [-int(pool.t(i, k, du[i, k])) for i, k in np.ndindex(du.shape)])
            else:
                if judge is not None and not judge(du):
                    complete, refuted = False, True
                    break
                used = oracle.exercised(du)
                if count:
                    block = record(found, du, used, pool, self.encoder.non_stuttering)
                else:
                    block = _light(found, du, used, pool, self.encoder.non_stuttering)
                solver.add_clause([-selector] + block)
            if limit is not None and len(found) >= limit:
                complete = False
                break
        solver.add_clause([-selector])  # this round's blocking clauses are done with
        return found, complete, t_enc, refuted

    def _maybe_rebuild(self, oracle) -> bool:
        neg = oracle.negatives
        if isinstance(neg, NegativePairs) and self._added:  # counted pairs may have gone: rebuild if so
            t = oracle.trie
            child = dict(zip(zip(t.parent.tolist(), t.letter.tolist()), range(t.n_nodes)))

            def node(word):
                p = 0
                for k in word:
                    p = child.get((p, k), -1)
                return p

            pairs = set(map(tuple, np.sort(np.asarray(neg.pairs), axis=1).tolist()))
            added = (tuple(sorted(node(w) for w in pair)) for pair in self._added)
            if not all(len(a) == 2 and a in pairs for a in added):
                self.close()
                self._added, self.n = set(), 1
                return True
        return False

    def search(
        self,
        oracle,
        *,
        max_solutions: int | None = None,
        lower_bound: int = 1,
        deadline: Deadline = NEVER,
        judge=None,
        count: bool = True,
    ) -> Found:
        """The survivors under ``oracle`` (the knowledge as it is now): the smallest size with a
        machine, and at most ``max_solutions`` machines of it (see :meth:`_enumerate` for
        ``judge`` and ``count``). A deadline that passes returns what was found, flagged."""
        t0 = time.perf_counter()
        rebuilt = self._maybe_rebuild(oracle)
        self.n = max(self.n, min(lower_bound, self.max_nodes))
        tried: list[tuple[int, bool | None]] = []
        t_enc = 0.0
        while self.n <= self.max_nodes:
            self.close(below=self.n)
            found, complete, t, refuted = self._enumerate(
                self.n, oracle, max_solutions, deadline=deadline, judge=judge, count=count
            )
            t_enc += t
            stopped = not complete and not found and not refuted
            tried.append((self.n, True if found else (None if stopped or refuted else False)))
            if found or stopped or refuted:
                live = self._live[self.n]
                if stopped:
                    message = stopped_while(deadline, f"searching machines of {self.n} nodes")
                elif complete:
                    message = ""
                elif refuted:
                    message = "a machine was refuted: the enumeration stopped"
                elif deadline.expired():
                    message = (
                        stopped_while(deadline, f"listing machines of {self.n} nodes") + "; those found are listed"
                    )
                else:
                    message = f"listing stopped at the limit: at least {len(found)} machines survive, those are listed"
                values = list(found.values())
                res = SearchResult(
                    self.n if found else None,
                    tuple(values) if count else (),
                    complete,
                    tuple(tried),
                    live["clauses"] + live["lazy"].added,
                    live["pool"].top,
                    t_enc,
                    time.perf_counter() - t0 - t_enc,
                    0.0,
                    message,
                    lazy=live["lazy"].stats(self._rounds),
                )
                if count:
                    return Found(res, rebuilt, refuted=refuted)
                return Found(res, rebuilt, tuple(v[0] for v in values), tuple(v[1] for v in values), refuted)
            self.n += 1
        self.close()
        res = SearchResult(
            None,
            (),
            True,
            tuple(tried),
            0,
            0,
            t_enc,
            time.perf_counter() - t0,
            0.0,
            f"no machine with at most {self.max_nodes} nodes is consistent with the expert's answers",
        )
        return Found(res, rebuilt)

    def alternatives(self, oracle, count: int, deadline: Deadline = NEVER) -> list[np.ndarray]:
        """Up to ``count`` machines of one node more than the survivors, consistent with the
        knowledge and never returned here before (``[]`` at the node bound)."""
        if self.n + 1 > self.max_nodes or count < 1:
            return []
        found, _, _, _ = self._enumerate(self.n + 1, oracle, count, alternatives=True, deadline=deadline)
        return list(found.values())
