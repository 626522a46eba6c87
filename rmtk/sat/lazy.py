"""Counterexample-guided learning: negative examples added only when a candidate machine
violates them (lazy negatives), and learning at every depth (docs/design/09-beyond-the-paper.md).

A lazy search keeps one SAT solver per size n holding the structural clauses only
(determinism, full specification, non-stuttering, symmetry breaking). Each candidate machine
goes to an *oracle* that checks it against the whole prefix tree policy and returns
counterexamples: two words reaching a state with different policy classes that the candidate
sends to the same node. Their runs (prefix-run clauses along their trie path) and class
constraints join the same solver, which solves again, until a candidate passes. Enumeration
re-checks every model the same way. The relaxed formula has every model of the full one, and
every accepted machine passes the full check, so the machines and counts are those of the
full encoding.

Oracles:

* :class:`TrieOracle`: a built prefix tree with its negatives (policy classes or word pairs);
  a candidate is run over the whole trie in one vectorised pass.
* :class:`ProductOracle`: the expert given as a task; a candidate is checked on the
  synchronised product with the true machine, bounded at depth l or unbounded (every depth),
  so no prefix tree is built at all.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Protocol

import attrs
import numpy as np
from pysat.solvers import Solver

from ..errors import RmtkError
from ..learner.capabilities import Capabilities
from ..limits import Expired, SearchLimits, checking
from ..machine.equivalence import clash_pairs, clashes, compressed, exercised, sync_product
from ..mdp.model import LabeledMDP
from ..negatives.miners import NegativePairs, PolicyClasses
from ..ptp.tree import Trie
from .encoding import Formula, Problem, VarPool, clique_pins, decode_transitions
from .search import SearchResult, Solution, _stopped, no_machine, record, stopped_while, used_transitions
from .solver import DEFAULT_SOLVER, open_solver, solve


@attrs.frozen
class Counterexample:
    """Two words (letter indices, compressed when the tree is) that reach ``state`` and must
    end in different nodes: of policy classes ``class1`` ≠ ``class2`` (global ids), or, for a
    negative word pair from data, classes −1. ``labels``: labels of the longer word's
    shortest state sequence (its depth in the prefix tree policy)."""

    word1: tuple[int, ...]
    word2: tuple[int, ...]
    state: int
    class1: int
    class2: int
    labels: int


@attrs.frozen
class Member:
    """A word (letter indices, compressed when the tree is) reaching ``state`` in policy
    class ``cls`` (global id)."""

    word: tuple[int, ...]
    state: int
    cls: int


class Oracle(Protocol):
    """Checks candidate machines against a whole prefix tree policy.

    An oracle a PTP strategy gives for tree-free learning (its ``oracle`` capability,
    :class:`rmtk.ptp.tree.PTPCapabilities`) also gives the product policy of a learned machine for
    its rewards (``product_policy(delta_u) -> ((S, n, A) policy, (S, n) observed mask)``, as
    :meth:`ProductOracle.product_policy`)."""

    #: The depth (labels) its check is bounded at; ``None``: every depth.
    depth: int | None

    def check(self, delta_u: np.ndarray) -> list[Counterexample]:
        """Counterexamples the candidate violates (empty: it is consistent)."""

    def exercised(self, delta_u: np.ndarray) -> np.ndarray:
        """``(n, K)`` transitions some word of the prefix tree policy uses."""

    def lower_bound(self) -> int:
        """Nodes any consistent machine needs (the most policy classes at one state)."""


class OracleCapabilities(Capabilities):
    """What an :class:`Oracle` can give beyond the protocol, with the defaults of one that does
    not say (:mod:`rmtk.learner.capabilities`): rmtk's oracles inherit it; a user's oracle may."""

    __slots__ = ()

    def clique(self) -> tuple[Member, ...]:
        """Witnesses of the lower bound: one word per policy class at a state with the most
        classes (so many words that must end in pairwise different nodes), shortest first;
        lazy search pins them to nodes (:func:`lazy_search`). Default: none."""
        return ()


@attrs.define
class TrieOracle(OracleCapabilities):
    """A built prefix tree and its negatives: policy classes (exact) or word pairs (data)."""

    trie: Trie
    negatives: PolicyClasses | NegativePairs
    limit: int = 1000
    depth: int | None = None

    def _word(self, p: int) -> tuple[int, ...]:
        return tuple(self.trie.word(int(p)))

    def check(self, delta_u):
        nodes = self.trie.run(delta_u, 0)
        neg, out = self.negatives, []
        if isinstance(neg, PolicyClasses):
            p = np.asarray(neg.pair_node)
            states = neg.class_state[neg.pair_class]
            group = states * delta_u.shape[0] + nodes[p]
            for i, j in clash_pairs(group, np.asarray(neg.pair_class), self.trie.length[p], self.limit):
                out.append(
                    Counterexample(
                        self._word(p[i]),
                        self._word(p[j]),
                        int(states[i]),
                        int(neg.pair_class[i]),
                        int(neg.pair_class[j]),
                        int(max(self.trie.length[p[i]], self.trie.length[p[j]])),
                    )
                )
        else:
            pairs = np.asarray(neg.pairs)
            bad = np.flatnonzero(nodes[pairs[:, 0]] == nodes[pairs[:, 1]])
            lengths = self.trie.length[pairs[bad]].max(axis=1) if len(bad) else np.empty(0, np.int64)
            for k in bad[np.argsort(lengths, kind="stable")][: self.limit]:
                p, q = pairs[k]
                out.append(
                    Counterexample(
                        self._word(p),
                        self._word(q),
                        int(neg.state[k]),
                        -1,
                        -1,
                        int(max(self.trie.length[p], self.trie.length[q])),
                    )
                )
        return out

    def exercised(self, delta_u):
        return used_transitions(self.trie, delta_u)[0]

    def lower_bound(self) -> int:
        return self.negatives.lower_bound() if isinstance(self.negatives, PolicyClasses) else 1

    def clique(self) -> tuple[Member, ...]:
        neg = self.negatives
        if not isinstance(neg, PolicyClasses) or not neg.n_classes:
            return ()
        state = int(np.argmax(np.bincount(neg.class_state)))  # the first state with the most classes
        p = np.asarray(neg.pair_node)
        at = np.flatnonzero(neg.class_state[neg.pair_class] == state)
        at = at[np.lexsort((p[at], self.trie.length[p[at]], neg.pair_class[at]))]
        first = at[np.r_[True, neg.pair_class[at][1:] != neg.pair_class[at][:-1]]]  # shortest word per class
        return _shortest_first(Member(self._word(p[i]), state, int(neg.pair_class[i])) for i in first)


def _shortest_first(members) -> tuple[Member, ...]:
    return tuple(sorted(members, key=lambda m: (len(m.word), m.word, m.cls)))


@attrs.define
class ProductOracle(OracleCapabilities):
    """The expert as a task: candidates are checked on the synchronised product MDP × truth ×
    candidate up to ``depth`` labels (``None``: every depth); no prefix tree is built.

    ``table[s, u]`` is the policy class of (state, true node); global class ids are
    ``s·n_t + table[s, u]``. ``policy`` (``(S, n_t, A)``) gives learned machines their product
    policy (:meth:`product_policy`)."""

    mdp: LabeledMDP
    true_delta: np.ndarray
    table: np.ndarray
    policy: np.ndarray | None = None
    depth: int | None = None
    compress: bool = True
    true_initial: int = 0
    limit: int = 1000
    _last: tuple = attrs.field(default=(None, None), init=False, repr=False)
    _clique: tuple[Member, ...] | None = attrs.field(default=None, init=False, repr=False)

    def product(self, delta_u: np.ndarray):
        """The synchronised product with the candidate (the last one is kept)."""
        key = (np.shape(delta_u), np.asarray(delta_u).tobytes())
        if self._last[0] != key:
            self._last = (
                key,
                sync_product(self.mdp, self.true_delta, delta_u, init_a=self.true_initial, max_depth=self.depth),
            )
        return self._last[1]

    def _word(self, prod, i: int) -> tuple[int, ...]:
        word = prod.word(i, self.mdp.labels)
        return tuple(compressed(word) if self.compress else word)

    def check(self, delta_u):
        prod = self.product(delta_u)
        s, a, nt = prod.states, prod.a, self.true_delta.shape[0]
        cls = s * nt + self.table[s, a]
        return [
            Counterexample(
                self._word(prod, i),
                self._word(prod, j),
                int(s[i]),
                int(cls[i]),
                int(cls[j]),
                int(max(prod.depth[i], prod.depth[j])),
            )
            for i, j in clashes(prod, self.table, self.limit)
        ]

    def exercised(self, delta_u):
        return exercised(self.product(delta_u), self.mdp, delta_u, max_depth=self.depth, compress=self.compress)

    def lower_bound(self) -> int:
        return len(self.clique())

    def clique(self) -> tuple[Member, ...]:
        if self._clique is None:
            nt = self.true_delta.shape[0]
            prod = sync_product(
                self.mdp,
                self.true_delta,
                np.zeros((1, self.true_delta.shape[1]), np.int64),
                init_a=self.true_initial,
                max_depth=self.depth,
            )
            s, cls = prod.states, prod.states * nt + self.table[prod.states, prod.a]
            state = int(np.argmax(np.bincount(np.unique(cls) // nt)))  # the first state with the most classes
            at = np.flatnonzero(s == state)
            at = at[np.lexsort((at, prod.depth[at], cls[at]))]  # breadth-first: the shallowest triple first
            first = at[np.r_[True, cls[at][1:] != cls[at][:-1]]]
            self._clique = _shortest_first(Member(self._word(prod, int(i)), state, int(cls[i])) for i in first)
        return self._clique

    def product_policy(self, delta_u) -> tuple[np.ndarray, np.ndarray]:
        """``(S, n, A)`` product policy of a machine consistent with the expert (the expert's
        distribution at every reached (state, node); uniform elsewhere) and the ``(S, n)``
        mask of the reached ones — Algorithm 3 on the prefix tree policy of this depth."""
        if self.policy is None:
            raise RmtkError("this oracle has no expert policy to give product policies")
        prod = self.product(delta_u)
        S, A, n = self.mdp.n_states, self.policy.shape[2], np.shape(delta_u)[0]
        out = np.full((S, n, A), 1.0 / A)
        seen = np.zeros((S, n), dtype=bool)
        out[prod.states, prod.b] = self.policy[prod.states, prod.a]
        seen[prod.states, prod.b] = True
        return out, seen


@attrs.frozen
class LazyStats:
    """What a counterexample-guided search used: ``counterexamples`` added over ``rounds``
    candidate checks, the ``longest`` (labels) of their words, and the words in play as a
    partial prefix tree (``trie``, with the (word, state, class) entries the constraints use)."""

    counterexamples: int
    rounds: int
    longest: int
    trie: Trie
    pair_node: np.ndarray
    pair_state: np.ndarray
    pair_class: np.ndarray


class LazyFormula:
    """The growing part of a lazy formula at n nodes: a partial trie of the words in play,
    their prefix runs and their class (or pair) constraints, added to a live solver."""

    def __init__(self, pool: VarPool, solver: Solver):
        self.pool, self.solver, self.n = pool, solver, pool.n
        self.child: dict[tuple[int, int], int] = {}
        self.parent, self.letter, self.length = [-1], [-1], [0]
        self.x = [np.asarray(pool.x(0, np.arange(self.n)), dtype=np.int64)]
        self.y: dict[int, np.ndarray] = {}
        self.classes_at: dict[int, list[int]] = defaultdict(list)
        self.members: set[tuple[int, int]] = set()
        self.entries: list[tuple[int, int, int]] = []
        self.apart: set[tuple[int, int]] = set()
        self.added = 0
        self.longest = 0

    def _add(self, clauses: np.ndarray) -> None:
        for c in clauses.tolist():
            self.solver.add_clause(c)

    def word(self, letters) -> int:
        """The trie node of ``letters``, adding the missing nodes and their prefix runs
        x[p,i] ∧ t[i,k,j] → x[pk,j]."""
        p, n = 0, self.n
        for k in letters:
            q = self.child.get((p, int(k)))
            if q is None:
                i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
                q = len(self.parent)
                self.child[(p, int(k))] = q
                self.parent.append(p)
                self.letter.append(int(k))
                self.length.append(self.length[p] + 1)
                self.x.append(np.array([self.pool.new(("x", q, u)) for u in range(n)], dtype=np.int64))
                t = self.pool.t(i.ravel(), int(k), j.ravel())
                self._add(np.stack([-self.x[p][i.ravel()], -t, self.x[q][j.ravel()]], axis=1))
            p = q
        return p

    def member(self, q: int, c: int, state: int) -> None:
        """Word ``q`` is in policy class ``c`` at ``state``: x[q,i] → y[c,i]; classes of a state
        exclude each other node by node."""
        if c not in self.y:
            self.y[c] = np.array([self.pool.new(("y", c, u)) for u in range(self.n)], dtype=np.int64)
            for other in self.classes_at[state]:
                self._add(np.stack([-self.y[c], -self.y[other]], axis=1))
            self.classes_at[state].append(c)
        if (q, c) not in self.members:
            self.members.add((q, c))
            self.entries.append((q, state, c))
            self._add(np.stack([-self.x[q], self.y[c]], axis=1))

    def pin(self, clique: Sequence[Member]) -> None:
        """The clique's words in their classes, each pinned to its own node
        (:func:`~rmtk.sat.encoding.clique_pins`); the clique must have one word per node and
        the formula no other symmetry breaking."""
        qs = [self.word(m.word) for m in clique]
        for q, m in zip(qs, clique):
            self.member(q, m.cls, m.state)
        for c in clique_pins(np.array([self.x[q] for q in qs])):
            self.solver.add_clause(c)

    def add(self, cex: Counterexample) -> None:
        p, q = self.word(cex.word1), self.word(cex.word2)
        self.added += 1
        self.longest = max(self.longest, cex.labels)
        if cex.class1 < 0:
            key = (min(p, q), max(p, q))
            if key not in self.apart:
                self.apart.add(key)
                self._add(np.stack([-self.x[p], -self.x[q]], axis=1))
            return
        self.member(p, cex.class1, cex.state)
        self.member(q, cex.class2, cex.state)

    def stats(self, rounds: int) -> LazyStats:
        trie = Trie(np.array(self.parent), np.array(self.letter), np.array(self.length))
        e = np.array(self.entries, dtype=np.int64).reshape(-1, 3)
        return LazyStats(self.added, rounds, self.longest, trie, e[:, 0], e[:, 1], e[:, 2])


def lazy_search(
    structure: Callable[[Problem, int], Formula],
    problem: Problem,
    limits: SearchLimits,
    *,
    solver: str = DEFAULT_SOLVER,
    non_stuttering: bool = True,
    pinned_structure: Callable[[Problem, int], Formula] | None = None,
) -> SearchResult:
    """Smallest n of ``limits.sizes`` with a machine that ``problem.oracle`` accepts, and all
    such machines at that n (see the module docstring). ``structure(problem, n)`` gives the
    clauses that involve no negative example; the problem's trie must be the root alone (the
    words come from counterexamples).

    ``pinned_structure``: the same clauses without symmetry breaking; at a size n that the
    oracle's clique fills (n words that must end in different nodes,
    :meth:`OracleCapabilities.clique`) it is used with the clique's words pinned to the nodes
    instead (:func:`~rmtk.sat.encoding.clique_pins`), which decides most runs by propagation.
    The counterexamples found at one size are added at the next from the start: they hold at
    every size."""
    progress, deadline = limits.progress, limits.deadline
    oracle = problem.oracle
    tried: list[tuple[int, bool | None]] = []
    t_enc = t_solve = t_enum = 0.0
    rounds = 0
    lazy = None
    clique = OracleCapabilities.of(oracle).clique() if pinned_structure is not None else ()
    known: list[Counterexample] = []  # from the sizes before, replayed at the next
    for n in limits.sizes:
        t0 = time.perf_counter()
        pinned = len(clique) == n > 1
        try:  # a large encoding, and the solver's set-up, look at the deadline as they go
            with checking(deadline):
                formula = (pinned_structure if pinned and pinned_structure is not None else structure)(problem, n)
            opened = open_solver(solver, formula.hard, deadline)
        except Expired:
            tried.append((n, None))
            t_enc += time.perf_counter() - t0
            why = stopped_while(deadline, f"deciding {n} nodes")
            stats = lazy.stats(rounds) if lazy is not None else None
            return SearchResult(None, (), False, tuple(tried), 0, 0, t_enc, t_solve, t_enum, why, lazy=stats)
        t_enc += time.perf_counter() - t0
        with opened as sat_solver:
            lazy = LazyFormula(formula.pool, sat_solver)
            t0 = time.perf_counter()
            if pinned:
                lazy.pin(clique)
            for cex in known:
                lazy.add(cex)
            t_enc += time.perf_counter() - t0
            found: dict[tuple, Solution] = {}
            t_start = t_first = time.perf_counter()
            complete, satisfiable = True, None
            while True:
                sat = solve(sat_solver, deadline)
                rounds += 1
                if sat is None:
                    complete = False
                    break
                if not sat:
                    satisfiable = bool(found)
                    break
                du = decode_transitions(sat_solver.get_model(), formula.pool)
                counter = oracle.check(du)
                if counter:
                    t1 = time.perf_counter()
                    for cex in counter:
                        lazy.add(cex)
                    known += counter
                    t_enc += time.perf_counter() - t1
                    progress.count(lazy.added, None, "counterexamples")
                    continue
                if not found:
                    t_first = time.perf_counter()
                sat_solver.add_clause(record(found, du, oracle.exercised(du), formula.pool, non_stuttering))
                progress.solution(len(found), len(found))
                if limits.max_solutions is not None and len(found) >= limits.max_solutions:
                    complete, satisfiable = False, True
                    break
            t_end = time.perf_counter()
            elapsed = t_end - t_start
            if found:
                t_solve += t_first - t_start
                t_enum += t_end - t_first
            else:
                t_solve += elapsed
            tried.append((n, satisfiable if complete or found else None))
            progress.size(n, tried[-1][1], elapsed)
            stats = lazy.stats(rounds)
            if found:
                return SearchResult(
                    n,
                    tuple(found.values()),
                    complete,
                    tuple(tried),
                    len(formula.hard) + lazy.added,
                    formula.pool.top,
                    t_enc,
                    t_solve,
                    t_enum,
                    _stopped(complete, limits),
                    lazy=stats,
                )
            if not complete:
                return SearchResult(
                    None,
                    (),
                    False,
                    tuple(tried),
                    len(formula.hard),
                    formula.pool.top,
                    t_enc,
                    t_solve,
                    t_enum,
                    stopped_while(deadline, f"deciding {n} nodes"),
                    lazy=stats,
                )
    return SearchResult(
        None,
        (),
        True,
        tuple(tried),
        0,
        0,
        t_enc,
        t_solve,
        t_enum,
        no_machine(limits),
        lazy=lazy.stats(rounds) if lazy is not None else None,
    )
