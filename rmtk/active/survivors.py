"""What is known of the expert, and the machines that survive it (docs/design.md, section 12).

:class:`Knowledge` holds every answer the expert gave (and the recorded data): for an exact
expert the action distribution of each (word, state) asked, grouped into policy classes
whose ids never change; for an expert that can only be run, action counts on a trie (the
recorded counts with the answers merged in, :func:`rmtk.empirical.merge_counts`). Either way
it is a partial prefix tree policy, and a :class:`~rmtk.sat.lazy.TrieOracle` over it checks
candidate machines.

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

from .. import ties
from ..empirical import CountTable, EmpiricalPTP, merge_counts, to_policy
from ..encoders import SatEncoder
from ..errors import RmtkError
from ..limits import NEVER
from ..negatives import POLICY_TOL, ConfidenceMiner, NegativePairs, PolicyClasses
from ..ptp import PrefixTree, PrefixTreePolicy, Trie, TrieBuilder
from ..sat.encoding import Problem, decode_transitions
from ..sat.lazy import LazyFormula, TrieOracle
from ..sat.search import SearchResult, record
from ..sat.solver import open_solver, solve
from .experts import Observations


class Knowledge:
    """Answers of the expert as a partial prefix tree policy (see the module docstring).

    ``exact``: answers are distributions (classes compared with ``tol``), else counts (negative
    examples by the confidence bound at level ``alpha``)."""

    def __init__(
        self, mdp, *, exact: bool, compressed: bool = True, alpha: float = 0.05, tol: float = POLICY_TOL, recorded=None
    ):
        self.mdp, self.exact, self.compressed, self.alpha, self.tol = mdp, exact, compressed, alpha, tol
        S, A, K = mdp.n_states, mdp.n_actions, mdp.n_propositions
        self._grow = TrieBuilder(K)
        self._node_of: dict[tuple[int, ...], int] = {(): 0}
        self._entry: dict[tuple[int, int], int] = {}  # (trie node, state) -> entry
        self._nodes: list[int] = []
        self._states: list[int] = []
        self._class: list[int] = []  # exact: stable class id per entry
        self._class_state: list[int] = []
        self._reps: dict[int, list[tuple[int, np.ndarray]]] = {}
        self.table = CountTable(Trie.root(compressed), np.empty(0, np.int64), np.empty(0, np.int64), S, A, K)
        if recorded is not None:
            if exact:
                raise RmtkError(
                    "recorded data are counts: learn from them with an expert that is run "
                    "(SimulatedExpert or RecordedExpert), not with an exact one"
                )
            self.table = EmpiricalPTP(recorded, compress=compressed).counts(mdp)
        self._lookup: tuple | None = None
        self._pairs: int | None = None

    # -- counting -------------------------------------------------------------------------------
    def __len__(self) -> int:
        """Distinct (word, state) pairs known."""
        if self.exact:
            return len(self._entry)
        if self._pairs is None:
            self._pairs = len(np.unique(self.table.keys // self.mdp.n_actions))
        return self._pairs

    def _node(self, word) -> int:
        p = self._node_of.get(word)
        if p is None:
            p = self._node(word[:-1])
            p = int(self._grow.children(np.array([p]), np.array([word[-1]]))[0])
            self._node_of[word] = p
        return p

    def visits(self, word, state: int) -> float:
        """How much is known at (word, state): 1 for an exact answer, the action count from data
        (``inf``-free), 0 if nothing."""
        if self.exact:
            return 1.0 if (self._node_of.get(tuple(word), -1), int(state)) in self._entry else 0.0
        if self._lookup is None:
            t = self.table.trie
            child = {(int(p), int(k)): i for i, (p, k) in enumerate(zip(t.parent, t.letter)) if i}
            S, A = self.mdp.n_states, self.mdp.n_actions
            pair = self.table.keys // A
            uniq, inv = np.unique(pair, return_inverse=True)
            total = np.bincount(inv, weights=self.table.counts)
            self._lookup = (child, dict(zip(uniq.tolist(), total.tolist())), S)
        child, total, S = self._lookup
        p = 0
        for k in word:
            p = child.get((p, int(k)))
            if p is None:
                return 0.0
        return float(total.get(p * S + int(state), 0.0))

    # -- folding answers ------------------------------------------------------------------------
    def add(self, *answers: Observations) -> int:
        """Fold answers in (one merge for all of them); returns the number of (word, state)
        pairs new to the knowledge."""
        before = len(self)
        for obs in answers:
            if len(obs) and obs.exact != self.exact:
                raise RmtkError(
                    "the expert's answers are "
                    + ("exact" if obs.exact else "counts")
                    + " but the knowledge holds "
                    + ("exact answers" if self.exact else "counts")
                )
        if self.exact:
            for word, s, dist in (
                (w, s, d) for obs in answers for w, s, d in zip(obs.words, obs.states.tolist(), obs.values)
            ):
                key = (self._node(tuple(word)), s)
                if key in self._entry:
                    continue
                self._entry[key] = len(self._nodes)
                self._nodes.append(key[0])
                self._states.append(s)
                self._class.append(self._classify(s, dist))
            return len(self) - before
        S, A = self.mdp.n_states, self.mdp.n_actions
        grow = TrieBuilder(self.mdp.n_propositions)
        keys, counts = [], []
        for word, s, row in (
            (w, s, r) for obs in answers for w, s, r in zip(obs.words, obs.states.tolist(), obs.values)
        ):
            p = 0
            for k in word:
                p = int(grow.children(np.array([p]), np.array([k]))[0])
            for a in np.flatnonzero(row):
                keys.append((p * S + s) * A + int(a))
                counts.append(int(row[a]))
        if keys:
            keys_, counts_ = np.array(keys, np.int64), np.array(counts, np.int64)
            order = np.argsort(keys_, kind="stable")
            uniq, inv = np.unique(keys_[order], return_inverse=True)
            summed = np.bincount(inv, weights=counts_[order]).astype(np.int64)
            small = CountTable(grow.trie(self.compressed), uniq, summed, S, A, self.mdp.n_propositions)
            self.table = merge_counts(self.table, small)
            self._lookup = self._pairs = None
        return len(self) - before

    def _classify(self, s: int, dist: np.ndarray) -> int:
        reps = self._reps.setdefault(s, [])
        for c, rep in reps:
            if ties.alike(rep, dist, self.tol):
                return c
        c = len(self._class_state)
        self._class_state.append(s)
        reps.append((c, np.asarray(dist, float).copy()))
        return c

    # -- the partial prefix tree policy ---------------------------------------------------------
    def ptp(self) -> PrefixTreePolicy | None:
        """The prefix tree policy of what is known (``None`` when nothing is)."""
        if not self.exact:
            return to_policy(self.table) if len(self.table.keys) else None
        if not self._entry:
            return None
        trie = self._grow.trie(self.compressed)
        node, state = np.array(self._nodes), np.array(self._states)
        order = np.lexsort((state, node))
        policy = np.zeros((len(order), self.mdp.n_actions))  # classes carry the comparison
        return PrefixTreePolicy(
            PrefixTree(trie, node[order], state[order], int(trie.length.max())),
            policy,
            classes=np.array(self._class)[order],
        )

    def negatives(self, ptp: PrefixTreePolicy) -> PolicyClasses | NegativePairs:
        if self.exact:
            return PolicyClasses(ptp.classes, np.array(self._class_state, np.int64), ptp.tree.pair_node)
        return ConfidenceMiner(alpha=self.alpha).mine(ptp)

    def oracle(self):
        """``(ptp, negatives, oracle)`` of what is known; the oracle accepts everything when
        nothing is known."""
        ptp = self.ptp()
        if ptp is None:
            return None, None, TrieOracle(Trie.root(self.compressed), PolicyClasses([], [], []))
        neg = self.negatives(ptp)
        return ptp, neg, TrieOracle(ptp.trie, neg)


@attrs.frozen
class Found:
    """The survivors of one round: the search outcome and whether the solvers were rebuilt."""

    search: SearchResult
    rebuilt: bool


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

    def _enumerate(self, n: int, oracle, limit: int | None, alternatives: bool) -> tuple[dict, bool, float]:
        """Machines at ``n`` nodes that ``oracle`` accepts, at most ``limit``; with
        ``alternatives`` those never returned as alternatives before (their blocking clauses
        are kept for later calls of that kind only)."""
        live = self._get(n, oracle)
        solver, pool, lazy = live["solver"], live["pool"], live["lazy"]
        self._rounds += 1
        selector = pool.new(("round", self._rounds))
        assume = [selector, live["alt"]] if alternatives else [selector]
        found: dict = {}  # survivors by their renaming-invariant key; alternatives by their number
        complete, t_enc = True, 0.0
        while solve(solver, NEVER, assume):
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
                solver.add_clause(
                    [-selector] + record(found, du, oracle.exercised(du), pool, self.encoder.non_stuttering)
                )
            if limit is not None and len(found) >= limit:
                complete = False
                break
        solver.add_clause([-selector])  # this round's blocking clauses are done with
        return found, complete, t_enc

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

    def search(self, oracle, *, max_solutions: int | None = None, lower_bound: int = 1) -> Found:
        """This round's survivors under ``oracle`` (the knowledge as it is now)."""
        t0 = time.perf_counter()
        rebuilt = self._maybe_rebuild(oracle)
        self.n = max(self.n, min(lower_bound, self.max_nodes))
        tried, t_enc = [], 0.0
        while self.n <= self.max_nodes:
            self.close(below=self.n)
            found, complete, t = self._enumerate(self.n, oracle, max_solutions, alternatives=False)
            t_enc += t
            tried.append((self.n, bool(found)))
            if found:
                live = self._live[self.n]
                res = SearchResult(
                    self.n,
                    tuple(found.values()),
                    complete,
                    tuple(tried),
                    live["clauses"] + live["lazy"].added,
                    live["pool"].top,
                    t_enc,
                    time.perf_counter() - t0 - t_enc,
                    0.0,
                    "" if complete else "enumeration stopped early (limit reached)",
                    lazy=live["lazy"].stats(self._rounds),
                )
                return Found(res, rebuilt)
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

    def alternatives(self, oracle, count: int) -> list[np.ndarray]:
        """Up to ``count`` machines of one node more than the survivors, consistent with the
        knowledge and never returned here before (``[]`` at the node bound)."""
        if self.n + 1 > self.max_nodes or count < 1:
            return []
        found, _, _ = self._enumerate(self.n + 1, oracle, count, alternatives=True)
        return list(found.values())
