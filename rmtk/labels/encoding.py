"""SAT encoding of "a labeling with k propositions and a machine with n nodes consistent with the
expert's behaviour over state histories" (docs/design/13-learning-labels.md): one incremental solver
per number of nodes, :class:`PairFormula`.

The problem is the one of :mod:`rmtk.sat.encoding` over the *state view* of the MDP
(:mod:`rmtk.labels.histories`): the trie's letters are states, and the negative examples are
pairs of state histories ending in a common state where the expert acts differently.

Variables:

* ``T[i,s,j]`` — the machine read over states, D(u_i, s) = u_j: the ``t`` of a
  :class:`~rmtk.sat.encoding.VarPool` whose letters are the states. Histories run on it
  (x[h,i] ∧ T[i,s,j] → x[hs,j], n² clauses per trie edge whatever k), with determinism, full
  specification, non-stuttering and node numbering: breadth-first (:func:`bfs_numbering`, linear
  in the number of letters), or, when n histories must end in n different nodes (a state with
  n policy classes, the oracle's ``clique``), those histories pinned to the nodes
  (:func:`rmtk.sat.encoding.clique_pins`), which decides most of the product by propagation.
  States no history reaches are pinned to the identity.
* ``a[s]`` — the identity selector of state s: a[s] → T[i,s,i] for every i. Every query is
  asked assuming all selectors that have not failed; those in a failed core are dropped
  (:func:`shrink_core`). They only steer: a candidate is kept only when the oracle accepts it,
  and "none" is said only when the solver fails with no selector in its core.
* the *label layer* of K propositions (:meth:`PairFormula.layer`), all its clauses guarded by
  one activation literal: ``l[s,p]`` (L(s) = p, exactly one per state that matters),
  ``d[i,p,j]`` (δ(u_i, p) = u_j), linked by l[s,p] ∧ d[i,p,j] → T[i,s,j]; ``u[p]`` (p labels
  some state), so that "at most k" and "exactly k" propositions are assumptions; propositions
  numbered by first occurrence over the states (:func:`label_symmetry_breaking`, a restricted
  growth string) except those the user named; known labels as units and shared labels as
  equalities.

Without the layer the formula is the *label-free check* (:mod:`rmtk.labels.label_free`): a
non-stuttering machine over states is a pair (group the states by their column), so a
satisfiable answer is one for some labeling, and an unsatisfiable one rules n out for every
labeling. With it, the same solver answers for each k by assumptions, keeping every
counterexample, learned clause and dropped selector between the two.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import attrs
import numpy as np
from pysat.card import CardEnc, EncType
from pysat.formula import IDPool
from pysat.solvers import Solver

from ..limits import NEVER, Deadline
from ..machine.equivalence import sync_product
from ..negatives.miners import PolicyClasses
from ..sat.encoding import (
    Clauses,
    Problem,
    VarPool,
    _rows,
    bfs_edges,
    bfs_parents_first,
    decode_transitions,
    determinism,
    full_specification,
    negative_classes,
    negative_pairs,
    prefix_runs,
)
from ..sat.encoding import non_stuttering as stutter_free
from ..sat.lazy import LazyFormula, ProductOracle
from ..sat.search import used_transitions
from ..sat.solver import DEFAULT_SOLVER, open_solver, propagations, solve, takes_phases
from .pairs import LabelKnowledge, first_occurrence

#: The most clauses a pair formula is built with; a size a user types beyond it (nodes,
#: propositions) is refused before any work. The solver holds about 100 bytes per clause, and
#: each family is built as a Python list (about 150 bytes per clause) before it is added: 6
#: million clauses keep a run under a gigabyte.
MAX_CLAUSES = 6_000_000


def estimated_clauses(n: int, n_states: int, n_reach: int, n_pairs: int, n_steps: int, k: int = 0) -> int:
    """About how many clauses a :class:`PairFormula` at n nodes holds before any history: the
    machine over ``n_states`` letters, the product encoding (``n_pairs`` pairs, ``n_steps``
    steps) and a label layer of ``k`` propositions over ``n_reach`` states."""
    base = n_states * (n * n * (n - 1) // 2 + n + n * n + 8 * n * n) + n_reach * n
    product = n_steps * n + n_pairs * n * n + n_pairs * n
    layer = n_reach * (k * n * n + k * (k - 1) // 2 + 3 * k) + n * k * n * n if k else 0
    return base + product + layer


#: Conflicts allowed to each call that shrinks a core (an unfinished call keeps the selectors).
CORE_BUDGET = 1000
#: Every call of :func:`rmtk.sat.solver.solve` here starts with a slice of this many conflicts.
#: On the Craft World's formulas of millions of clauses a conflict takes milliseconds, so slices
#: start small to keep the deadline within about a second, and grow when they are fast.
FIRST_CONFLICTS = 100
#: The solver's propagations one core is shrunk with at most; what is left of it is then dropped
#: whole. A measure of work, not seconds, so that which selectors are dropped (and so which
#: candidates come next) is the same under any load (docs/design/determinism.md); about two
#: seconds of search on this machine.
SHRINK_PROPAGATIONS = 4_000_000
#: Up to this many propositions "one label per state" is pairwise; beyond, a sequential counter.
PAIRWISE_AMO = 8


def bfs_numbering(pool: VarPool) -> Clauses:
    """Breadth-first numbering of the nodes from u_I = 0, the predicate of
    :func:`rmtk.sat.encoding.symmetry_breaking_bfs` (Ulyantsev, Zakirzyanov, Shalyto 2015) with
    clauses linear in the letters: f[i,j,k] "some letter ≤ k leads i → j" replaces the pairwise
    comparison of letters, which over one letter per state (1,521 on the Craft World) is
    millions of clauses."""
    n, K = pool.n, pool.K
    ks = np.arange(K)
    e, par, out = bfs_edges(pool)
    out += bfs_parents_first(pool, par)
    f: dict[tuple[int, int], np.ndarray] = {}
    m: dict[tuple[int, int], np.ndarray] = {}
    for i in range(n):
        for j in range(i + 1, n):
            fv = np.array([pool.new(("f", i, j, k)) for k in range(K)], np.int64)
            mv = np.array([pool.new(("m", i, j, k)) for k in range(K)], np.int64)
            tv = pool.t(i, ks, j)
            f[i, j], m[i, j] = fv, mv
            out += _rows(np.stack([-tv, fv], axis=1))  # t → f
            out += _rows(np.stack([-mv, tv], axis=1))  # m → t
            out += [[-int(fv[0]), int(tv[0])], [int(mv[0]), -int(tv[0])]]
            if K > 1:
                a, b, c = fv[:-1], fv[1:], tv[1:]
                out += _rows(np.stack([-a, b], axis=1))  # f[k−1] → f[k]
                out += _rows(np.stack([-b, a, c], axis=1))  # f[k] → f[k−1] ∨ t[k]
                out += _rows(np.stack([-mv[1:], -a], axis=1))  # m[k] → ¬f[k−1]
                out += _rows(np.stack([mv[1:], -c, a], axis=1))  # t[k] ∧ ¬f[k−1] → m[k]
    for j in range(1, n - 1):  # siblings ordered by their smallest letter
        for i in range(j):
            mv, fv = m[i, j + 1], f[i, j]
            out.append([-par[j, i], -par[j + 1, i], -int(mv[0])])
            if K > 1:
                head = np.broadcast_to(np.array([-par[j, i], -par[j + 1, i]]), (K - 1, 2))
                out += _rows(np.concatenate([head, -mv[1:, None], fv[:-1, None]], axis=1))
    return out


def equal_columns(pool: VarPool, groups: Sequence[Sequence[int]]) -> Clauses:
    """States of a group move the machine alike: t[i,s,j] ↔ t[i,s′,j] along each group."""
    out: Clauses = []
    i, j = (a.ravel() for a in np.meshgrid(np.arange(pool.n), np.arange(pool.n), indexing="ij"))
    for g in groups:
        for a, b in zip(g[:-1], g[1:]):
            ta, tb = pool.t(i, int(a), j), pool.t(i, int(b), j)
            out += np.stack([-ta, tb], axis=1).tolist() + np.stack([ta, -tb], axis=1).tolist()
    return out


def label_symmetry_breaking(l: np.ndarray, pool: VarPool, first_free: int = 0, tag: object = None) -> Clauses:
    """Propositions ``first_free …`` numbered by first occurrence along the rows of ``l``
    (``(R, K)`` label variables of the states in index order), a restricted growth string:
    proposition p > first_free may label a state only if p − 1 labels an earlier one.
    e[r,p]: some state among the first r + 1 carries p (auxiliary variables named with ``tag``)."""
    R, K = l.shape
    out: Clauses = []
    if first_free >= K - 1 or not R:
        return out
    prev: dict[int, int] = {}
    for r in range(R):
        cur: dict[int, int] = {}
        for p in range(first_free, K - 1):  # e is only read for p < K − 1
            cur[p] = pool.new(("first", tag, r, p))
            lit = int(l[r, p])
            if r == 0:
                out += [[-lit, cur[p]], [-cur[p], lit]]
            else:
                out += [[-lit, cur[p]], [-prev[p], cur[p]], [-cur[p], lit, prev[p]]]
        for p in range(first_free + 1, K):
            lit = int(l[r, p])
            out.append([-lit] if r == 0 else [-lit, prev[p - 1]])
        prev = cur
    return out


def shrink_core(
    sat: Solver, core: list[int], keep: Sequence[int] = (), deadline: Deadline = NEVER, budget: int = CORE_BUDGET
) -> list[int]:
    """Shrinking of a failed assumption set ``core`` (asked beside the fixed assumptions
    ``keep``): first the whole core at once (often the formula fails without any of it: an
    enumeration that has listed every pair), then runs of halving length, then single literals,
    each dropped when the solver still fails without it (within ``budget`` conflicts and the
    deadline; an undecided call keeps the run), for :data:`SHRINK_PROPAGATIONS` at most."""
    if solve(sat, deadline, keep, conflicts=budget, first=FIRST_CONFLICTS) is False:
        return []
    core = list(core)
    run = max(1, len(core) // 2)
    start = propagations(sat)

    def more() -> bool:
        return not deadline.expired() and propagations(sat) - start < SHRINK_PROPAGATIONS

    while more():
        i = 0
        while i < len(core) and more():
            trial = core[:i] + core[i + run :]
            if solve(sat, deadline, [*keep, *trial], conflicts=budget, first=FIRST_CONFLICTS) is False:
                kept = set(sat.get_core() or [])
                core = [v for v in trial if v in kept]
            else:
                i += run
        if run == 1:
            break
        run //= 2
    return core


class StatePool(VarPool):
    """A :class:`~rmtk.sat.encoding.VarPool` whose letters are the states, with two packed
    families more for the product encoding: ``r[q,b]`` (product pair q = (state, true node) is
    reachable with the candidate in node b) and ``e[q,b]`` (it is entered from node b, before
    the state's column is read)."""

    def __init__(self, n: int, n_states: int, n_trie: int, n_classes: int, n_pairs: int = 0):
        super().__init__(n, n_states, n_trie, n_classes)
        self.r0 = self.packed_top + 1
        self.e0 = self.r0 + n_pairs * n
        self.packed_top = self.e0 + n_pairs * n - 1
        self.aux = IDPool(start_from=self.packed_top + 1)

    def r(self, q, b):
        return self.r0 + np.asarray(q) * self.n + b

    def e(self, q, b):
        return self.e0 + np.asarray(q) * self.n + b


@attrs.frozen
class TrueProduct:
    """The product of the MDP's state view with the true machine, what the product encoding
    ranges over: ``pairs`` ``(m, 2)`` reachable (state, true node) pairs, ``edges`` ``(E, 2)``
    pair → pair steps, ``starts`` the pairs a history starts in, ``cls`` the policy class of
    each pair."""

    pairs: np.ndarray
    edges: np.ndarray
    starts: np.ndarray
    cls: np.ndarray

    @classmethod
    def of(cls, oracle: ProductOracle) -> TrueProduct:
        mdp, true = oracle.mdp, np.asarray(oracle.true_delta, np.int64)
        n_t, S = true.shape[0], mdp.n_states
        lab = mdp.labels
        prod = sync_product(mdp, true, np.zeros((1, true.shape[1]), np.int64), init_a=oracle.true_initial)
        codes = np.sort(prod.states * n_t + prod.a)
        succ = mdp.successor_matrix()
        indptr, indices = np.asarray(succ.indptr), np.asarray(succ.indices)
        s, a = codes // n_t, codes % n_t
        counts = indptr[s + 1] - indptr[s]
        src = np.repeat(np.arange(len(codes)), counts)
        s2 = indices[indptr[s][src] + (np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts))]
        dst = np.searchsorted(codes, s2 * n_t + true[a[src], lab[s2]])
        starts = np.unique(mdp.start_states)
        first = np.searchsorted(codes, starts * n_t + true[oracle.true_initial, lab[starts]])
        del S
        return cls(np.stack([s, a], axis=1), np.unique(np.stack([src, dst], axis=1), axis=0), first, oracle.table[s, a])


def product_clauses(pool: StatePool, tp: TrueProduct, chunk: int = 20_000) -> Iterator[Clauses]:
    """Consistency at every depth without histories, in parts of at most about ``chunk`` pairs:
    the reachable triples (state, true node, candidate node) are closed under the MDP's steps
    (r at the start; r[q,b] → e[q′,b] along each step q → q′; e[q,b] ∧ t[b,s′,b′] → r[q′,b′]), and
    no two triples of one state and candidate node have different policy classes. A model's
    machine is consistent (the reachable set is the least closed one), and every consistent
    machine has a model."""
    n = pool.n
    b = np.arange(n)
    s = tp.pairs[:, 0]

    def pairs(x, y):
        return _rows(np.stack(np.broadcast_arrays(x, y), axis=-1).reshape(-1, 2))

    st = s[tp.starts]  # start: t[0,s0,b] → r[q0,b]
    yield pairs(-pool.t(0, st[:, None], b[None, :]), pool.r(tp.starts[:, None], b[None, :]))
    for lo in range(0, len(tp.edges), chunk):
        src, dst = tp.edges[lo : lo + chunk, 0], tp.edges[lo : lo + chunk, 1]
        yield pairs(-pool.r(src[:, None], b[None, :]), pool.e(dst[:, None], b[None, :]))
    i, j = (x.ravel() for x in np.meshgrid(b, b, indexing="ij"))
    for lo in range(0, len(s), chunk):
        q = np.arange(lo, min(lo + chunk, len(s)))
        cols = np.broadcast_arrays(
            -pool.e(q[:, None], i[None, :]),
            -pool.t(i[None, :], s[q][:, None], j[None, :]),
            pool.r(q[:, None], j[None, :]),
        )
        yield _rows(np.stack(cols, axis=-1).reshape(-1, 3))
    q = np.arange(len(s))
    order = np.lexsort((tp.cls, s))  # two pairs of one state with different classes never share a candidate node
    ss, cc, qq = s[order], tp.cls[order], q[order]
    out: Clauses = []
    for lo, hi in zip(*_runs(ss)):
        if len(np.unique(cc[lo:hi])) < 2:
            continue
        x, y = np.triu_indices(hi - lo, 1)
        keep = cc[lo:hi][x] != cc[lo:hi][y]
        q1, q2 = qq[lo:hi][x[keep]], qq[lo:hi][y[keep]]
        out += pairs(-pool.r(q1[:, None], b[None, :]), -pool.r(q2[:, None], b[None, :]))
    yield out


def _runs(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and end indices of the runs of equal values of a sorted array."""
    if not len(values):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    cut = np.flatnonzero(values[1:] != values[:-1]) + 1
    return np.r_[0, cut], np.r_[cut, len(values)]


class Expired(Exception):
    """The deadline passed while a formula was being built (the search reports it, flagged)."""


class Layer:
    """The label layer of K propositions of a :class:`PairFormula` (see the module docstring):
    ``act`` switches it on; ``l`` ``(R, K)`` for the states of ``reach``, ``d`` ``(n, K, n)``,
    ``u`` ``(K,)``."""

    def __init__(self, act: int, l: np.ndarray, d: np.ndarray, u: np.ndarray):
        self.act, self.l, self.d, self.u = act, l, d, u

    @property
    def K(self) -> int:
        return int(self.l.shape[1])

    def assume(self, k: int, exactly: bool) -> list[int]:
        """Assumptions for "at most k propositions" (and "exactly k")."""
        out = [self.act] + [-int(v) for v in self.u[k:]]
        return out + ([int(self.u[k - 1])] if exactly and k >= 1 else [])


class PairFormula:
    """One incremental solver at n nodes (see the module docstring): the machine over states with
    its identity selectors and the histories, and label layers added on demand. Use as a
    context manager (the solver is deleted on exit)."""

    def __init__(
        self,
        problem: Problem,
        n: int,
        n_states: int,
        reach: np.ndarray,
        knowledge: LabelKnowledge,
        *,
        symmetry_breaking: bool = True,
        non_stuttering: bool = True,
        solver: str = DEFAULT_SOLVER,
        product: TrueProduct | None = None,
        deadline: Deadline = NEVER,
        clique: Sequence = (),
    ):
        self.problem, self.n, self.S = problem, n, n_states
        self.reach = np.asarray(reach, np.int64)
        self.know = knowledge
        self.symmetry, self.stutter_free = symmetry_breaking, non_stuttering
        classes = problem.negatives if isinstance(problem.negatives, PolicyClasses) else None
        oracle = problem.oracle
        product = product or (
            TrueProduct.of(oracle) if isinstance(oracle, ProductOracle) and oracle.depth is None else None
        )
        lazy = oracle is not None and product is None
        pool = StatePool(
            n,
            n_states,
            1 if oracle is not None else problem.trie.n_nodes,
            0 if classes is None else classes.n_classes,
            0 if product is None else len(product.pairs),
        )
        self.pool, self.product = pool, product
        self.sat = open_solver(solver)
        self.phases = takes_phases(solver)  # else the preferred labels are no hint to this backend
        self.deadline = deadline

        def add(clauses) -> None:  # family by family: no list of the whole formula is ever held
            if deadline.expired():
                self.sat.delete()
                raise Expired
            self.sat.append_formula(clauses)

        add(determinism(pool) + full_specification(pool) + [[int(pool.x(0, 0))]])
        if non_stuttering:
            add(stutter_free(pool))
        pinned = symmetry_breaking and n > 1 and len(clique) == n
        if symmetry_breaking and n > 1 and not pinned:
            add(bfs_numbering(pool))
        inside = np.zeros(n_states, bool)
        inside[self.reach] = True
        add(equal_columns(pool, [[s for s in g if inside[s]] for g in knowledge.groups()]))
        nodes = np.arange(n)
        add([[int(v)] for v in pool.t(nodes[None, :], np.flatnonzero(~inside)[:, None], nodes[None, :]).ravel()])
        self.select: dict[int, int] = {}  # selector -> state
        for s in self.reach.tolist():
            a = pool.new(("identity", s))
            self.select[a] = s
            add([[-a, int(v)] for v in pool.t(nodes, s, nodes)])
        if product is not None:
            for part in product_clauses(pool, product):
                add(part)
        elif oracle is None:
            add(prefix_runs(pool, problem.trie))
            if classes is not None:
                add(negative_classes(pool, classes))
            elif problem.negatives is not None and len(problem.negative_pairs()):
                add(negative_pairs(pool, problem.negative_pairs()))
        self.lazy = LazyFormula(pool, self.sat) if lazy else None
        if pinned:  # the nodes numbered by n histories that must end in n different nodes
            if deadline.expired():
                self.sat.delete()
                raise Expired
            (self.lazy or LazyFormula(pool, self.sat)).pin(clique)
        self.layers: list[Layer] = []
        self.rounds = self.guards = 0
        self.preferred: np.ndarray | None = None

    def __enter__(self) -> PairFormula:
        return self

    def __exit__(self, *exc) -> None:
        self.sat.delete()

    # ------------------------------------------------------------------ the label layer
    def layer(self, K: int) -> Layer:
        """The label layer of at least K propositions (the largest one so far when it has K,
        else a new one); :class:`Expired` when the formula's deadline passes while it is built."""
        if self.layers and self.layers[-1].K >= K:
            return self.layers[-1]
        pool, n, reach = self.pool, self.n, self.reach
        R = len(reach)
        act = pool.new(("layer", len(self.layers)))
        tag = len(self.layers)
        l = np.array([[pool.new(("l", tag, r, p)) for p in range(K)] for r in range(R)], np.int64).reshape(R, K)
        d = np.array(
            [[[pool.new(("d", tag, i, p, j)) for j in range(n)] for p in range(K)] for i in range(n)], np.int64
        ).reshape(n, K, n)
        u = np.array([pool.new(("u", tag, p)) for p in range(K)], np.int64)

        def add(clauses: Clauses) -> None:  # family by family, guarded, the deadline checked between
            if self.deadline.expired():
                raise Expired
            self.sat.append_formula([-act, *c] for c in clauses)

        add(_rows(l))  # at least one label
        if K <= PAIRWISE_AMO:
            a, b = np.triu_indices(K, 1)
            add(_rows(-np.stack([l[:, a], l[:, b]], axis=-1).reshape(-1, 2)))
        else:
            for lo in range(0, R, 200):
                add(
                    [
                        c
                        for r in range(lo, min(R, lo + 200))
                        for c in CardEnc.atmost(l[r].tolist(), bound=1, vpool=pool.aux, encoding=EncType.seqcounter)
                    ]
                )
        add(_rows(d.reshape(-1, n)))  # δ fully specified and deterministic
        a, b = np.triu_indices(n, 1)
        add(_rows(-np.stack([d[:, :, a], d[:, :, b]], axis=-1).reshape(-1, 2)))
        if self.stutter_free:
            i, p, j = np.nonzero(~np.eye(n, dtype=bool)[:, None, :] & np.ones((1, K, 1), bool))
            add(_rows(np.stack([-d[i, p, j], d[j, p, j]], axis=1)))
        i, p, j = (x.ravel() for x in np.meshgrid(np.arange(n), np.arange(K), np.arange(n), indexing="ij"))
        for lo in range(0, R, 200):  # l[s,p] ∧ d[i,p,j] → T[i,s,j], 200 states at a time
            rr = np.arange(lo, min(R, lo + 200))
            cols = np.broadcast_arrays(
                -l[rr][:, p], -d[i, p, j][None, :], pool.t(i[None, :], reach[rr][:, None], j[None, :])
            )
            add(_rows(np.stack(cols, axis=-1).reshape(-1, 3)))
        add(_rows(np.stack([-l.ravel(), np.tile(u, R)], axis=1)))  # l[s,p] → u[p] …
        add([[-int(u[p]), *l[:, p].tolist()] for p in range(K)])  # … and back
        if self.symmetry:
            add(label_symmetry_breaking(l, pool, self.know.first_free, tag))
        row = {int(s): r for r, s in enumerate(reach.tolist())}
        add([[int(l[row[s], q])] for s, q in self.know.fixed.items() if s in row and q < K])
        for g in self.know.shared:
            inside = [row[s] for s in g if s in row]
            for x, y in zip(inside[:-1], inside[1:]):
                add(_rows(np.stack([-l[x], l[y]], axis=1)) + _rows(np.stack([l[x], -l[y]], axis=1)))
        layer = Layer(act, l, d, u)
        self.layers.append(layer)
        self._phases(layer)
        return layer

    # ------------------------------------------------------------------ questions
    def add(self, counterexamples) -> None:
        """Counterexamples (lazy formula): their histories' runs and class constraints (a
        formula of a whole tree or of the product has every negative example already)."""
        if self.lazy is not None:
            for cex in counterexamples:
                self.lazy.add(cex)

    def ask(self, assumptions: Sequence[int], deadline: Deadline, on_counterexamples=None) -> bool | None:
        """Solve under ``assumptions`` and every selector kept, checking candidates against the
        problem's oracle (their counterexamples are added and ``on_counterexamples`` told) until
        one passes (``True``; the model is the solver's), none is left (``False``: a proof, no
        selector in the core) or the deadline passes (``None``)."""
        oracle = self.problem.oracle
        while True:
            ok = solve(self.sat, deadline, [*assumptions, *self.select], first=FIRST_CONFLICTS)
            self.rounds += 1
            if ok is None:
                return None
            if ok is False:
                core = [v for v in self.sat.get_core() or [] if v in self.select]
                if not core:
                    return False
                needed = shrink_core(self.sat, core, assumptions, deadline)
                if deadline.expired():
                    return None
                if not needed:  # it fails without any selector: a proof
                    return False
                for v in needed:
                    del self.select[v]
                continue
            if oracle is None:
                return True
            counter = oracle.check(self.machine())
            if not counter:
                return True
            assert self.product is None, "a machine of the product encoding is consistent by construction"
            self.add(counter)
            if on_counterexamples is not None:
                on_counterexamples(counter)

    def prefer(self, labels: np.ndarray) -> None:
        """Labels (``(S,)``, any numbering) the label layers should try first: the solver's
        phases of l[s,·] set to them, renumbered by first occurrence (a hint only, dropped for a
        backend that takes none: :func:`rmtk.sat.solver.takes_phases`)."""
        self.preferred = first_occurrence(labels, self.reach)[labels]
        for layer in self.layers:
            self._phases(layer)

    def _phases(self, layer: Layer) -> None:
        lab = self.preferred
        if lab is None or not self.phases:
            return
        rows = np.flatnonzero(lab[self.reach] < layer.K)
        self.sat.set_phases(layer.l[rows, lab[self.reach][rows]].tolist())

    def block(self, clause: Sequence[int]) -> None:
        self.sat.add_clause([int(v) for v in clause])

    def guard(self) -> int:
        """A fresh literal to assume while clauses guarded by it (``[-guard, …]``) should hold."""
        self.guards += 1
        return self.pool.new(("guard", self.guards))

    # ------------------------------------------------------------------ reading a model
    def machine(self) -> np.ndarray:
        """``(n, S)``: the machine over states of the last model."""
        return decode_transitions(self.sat.get_model(), self.pool)

    def exercised(self, D: np.ndarray) -> np.ndarray:
        """``(n, S)`` transitions over states some history exercises."""
        if self.problem.oracle is not None:
            return self.problem.oracle.exercised(D)
        return used_transitions(self.problem.trie, D)[0]

    def pair(self, layer: Layer, k: int) -> tuple[np.ndarray, np.ndarray]:
        """``(labels (S,), δ (n, k))`` of the last model (labels −1 off ``reach``)."""
        model = np.asarray(self.sat.get_model(), np.int64)
        truth = np.zeros(int(np.abs(model).max()) + 1, bool)
        truth[model[model > 0]] = True
        labels = np.full(self.S, -1, np.int64)
        labels[self.reach] = truth[layer.l[:, :k]].argmax(axis=1)
        delta = truth[layer.d[:, :k, :]].argmax(axis=2)
        return labels, delta

    def blocking(self, layer: Layer, labels: np.ndarray, delta: np.ndarray, used: np.ndarray) -> list[int]:
        """The clause excluding this pair: its labels of the states that matter and its
        determined transitions."""
        rows = np.arange(len(self.reach))
        lits = -layer.l[rows, labels[self.reach]]
        ii, pp = np.nonzero(used)
        return [-layer.act, *lits.tolist(), *(-layer.d[ii, pp, delta[ii, pp]]).tolist()]

    def moving(self) -> tuple[int, ...]:
        """States whose identity selector was dropped."""
        kept = set(self.select.values())
        return tuple(int(s) for s in self.reach if int(s) not in kept)
