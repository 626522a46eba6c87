"""SAT encoding of "a machine with n nodes consistent with the prefix tree policy"
(paper section 3.1), in a form linear in the prefix tree (docs/design/03-sat-encoding.md).

Variables (packed ids, see :class:`VarPool`):

* ``t[i,k,j]`` — δ(u_i, k) = u_j (the paper's b_ikj); node 0 is u_I.
* ``x[p,i]``  — the word of trie node p ends in node i (x[root, 0] holds).
* ``y[c,i]``  — some word of policy class c ends in node i.

Constraint families, one generator each (grep for the name):

* :func:`determinism` (eq. 2) and :func:`full_specification` (eq. 3): exactly one t[i,k,·].
* :func:`prefix_runs`: x[root,0], and x[p,i] ∧ t[i,k,j] → x[pk,j] along every trie edge.
* :func:`negative_classes` (eq. 6, grouped): x[p,i] → y[c,i] for p in class c, and classes
  at a common state exclude each other node by node. Equivalent to every pairwise negative
  example, with clauses linear in the (word, state) pairs.
* :func:`negative_pairs`: the plain pairwise form ¬x[p,i] ∨ ¬x[q,i] (to measure against,
  and for confidence-bound negatives, which are not transitive).
* :func:`soft_negative_pairs` (section 5.2): the pairwise form with a relaxation variable,
  for weighted MaxSAT.
* :func:`reward_outputs` (reward traces, docs/design/rewards-evidence.md): x[p,i] → o[i,k,v]
  for every observation "the word of p, then letter k, paid value v", and at most one value
  per (node, letter); :func:`soft_reward_outputs`: the same with a relaxation variable per
  observation, weighted by its count (noisy rewards, MaxSAT).
* :func:`non_stuttering` (eq. 7): t[i,k,j] → t[j,k,j].
* :func:`symmetry_breaking_bfs` (Ulyantsev et al. 2015): nodes numbered in breadth-first
  order from u_I, children of a node ordered by their smallest letter.
* :func:`one_node_each` and :func:`edge_transitions` (a tree of words): each word in exactly
  one node, and the nodes of an edge's two words fix its transition.
* :func:`clique_pins`: the other way to number the nodes when n words must all end in
  different nodes (a state with n policy classes): each word pinned to its own node.

Clauses are built as numpy arrays (fixed width per family) and handed over as lists; the
formula is never built by expanding matrix products. :class:`Problem` is what is encoded,
:class:`Formula` what an encoder produces for n nodes (:mod:`rmtk.sat.encoders` composes them).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import attrs
import numpy as np
from pysat.card import CardEnc, EncType
from pysat.formula import IDPool

from .._arrays import unique
from ..limits import checkpoint
from ..negatives.miners import NegativePairs, PolicyClasses
from ..ptp.tree import Trie

if TYPE_CHECKING:
    from ..traces.rewards import RewardTraces
    from .folded import Folded

#: Clauses, each a list of DIMACS literals (variable numbers, negative when negated).
Clauses = list[list[int]]


@attrs.frozen
class Problem:
    """What is encoded: the trie of label words (the prefix tree), the number of letters
    (the MDP's propositions) and the negative examples — policy classes (exact setting) or
    word pairs (confidence bound). Negatives given as classes can also be read as pairs
    (:meth:`negative_pairs`, computed once)."""

    trie: Trie
    n_letters: int
    negatives: PolicyClasses | NegativePairs | None = None
    oracle: object = None  # a rmtk.sat.lazy.Oracle: negatives found by checking candidates (lazy search)
    rewards: RewardTraces | None = None  # what the world paid, on the trie
    _pairs: dict = attrs.field(factory=dict, init=False, eq=False, repr=False)

    def negative_pairs(self) -> np.ndarray:
        """``(k, 2)`` trie-node pairs that must end in different nodes."""
        if "pairs" not in self._pairs:
            neg = self.negatives
            if neg is None:
                pairs = np.empty((0, 2), dtype=np.int64)
            elif isinstance(neg, NegativePairs):
                pairs = np.asarray(neg.pairs)
            else:
                pairs = neg.distinct_pairs()
            self._pairs["pairs"] = pairs
        return self._pairs["pairs"]

    def folded(self) -> Folded:
        """The reward traces' words folded where the machines stay the same
        (:func:`rmtk.sat.folded.fold`), their runs of a letter contracted over raw words
        (:func:`rmtk.sat.folded.contract_runs`), computed once."""
        if "folded" not in self._pairs:
            from .folded import contract_runs, fold

            assert self.rewards is not None, "folding reward traces"
            words = fold(self.rewards)
            self._pairs["folded"] = words if self.rewards.trie.compressed else contract_runs(words)
        return self._pairs["folded"]

    def tree(self) -> Folded:
        """The reward traces' words cut to those that observe something deciding, unfolded
        (:func:`rmtk.sat.folded.cut`: each node one word), computed once."""
        if "tree" not in self._pairs:
            from .folded import cut

            assert self.rewards is not None, "cutting reward traces"
            self._pairs["tree"] = cut(self.rewards)
        return self._pairs["tree"]

    def lower_bound(self) -> int:
        """Nodes needed at least: the largest number of policy classes at one state (1 for pairs)."""
        if self.oracle is not None:
            return self.oracle.lower_bound()
        return self.negatives.lower_bound() if isinstance(self.negatives, PolicyClasses) else 1


@attrs.define
class Formula:
    """Clauses for a fixed number of nodes: ``hard`` clauses over ``pool``'s variables and,
    for MaxSAT, one relaxation variable per soft negative example (``relax[k]`` true: example
    ``k`` is dropped) with its ``weights[k]``; the soft clauses are the units ``¬relax[k]``."""

    pool: VarPool
    hard: Clauses
    relax: np.ndarray | None = None
    weights: np.ndarray | None = None
    #: Some soft units are mutually exclusive by hard clauses ``relax[a] ∨ relax[b]`` (at most
    #: one of a group kept: :func:`soft_reward_outputs`); MaxSAT then looks for such groups
    #: first and exhausts each core (RC2's ``adapt`` and ``exhaust``) instead of finding
    #: thousands of two-literal cores one by one. The optima are the same.
    exclusive_softs: bool = False

    @property
    def n_clauses(self) -> int:
        return len(self.hard) + (0 if self.relax is None else len(self.relax))

    def extend(self, clauses: Iterable[Iterable[int]]) -> Formula:
        """Add hard clauses (e.g. a user's extra constraints); returns ``self``."""
        self.hard.extend([int(v) for v in c] for c in clauses)
        return self


class VarPool:
    """Hands out variable ids: packed ranges for t, x, y; a :class:`pysat.formula.IDPool`
    on top for auxiliary variables (symmetry breaking, cardinality encodings)."""

    def __init__(self, n: int, n_letters: int, n_trie: int, n_classes: int):
        self.n, self.K, self.n_trie, self.n_classes = n, n_letters, n_trie, n_classes
        self.t0 = 1
        self.x0 = self.t0 + n * n_letters * n
        self.y0 = self.x0 + n_trie * n
        self.packed_top = self.y0 + n_classes * n - 1
        self.aux = IDPool(start_from=self.packed_top + 1)
        self._t_grid: np.ndarray | None = None

    def t(self, i, k, j):
        """δ(u_i, k) = u_j — the paper's b_ikj (works elementwise on arrays)."""
        return self.t0 + (np.asarray(i) * self.K + k) * self.n + j

    def x(self, p, i):
        """The word of trie node p ends in node i."""
        return self.x0 + np.asarray(p) * self.n + i

    def y(self, c, i):
        """Some word of policy class c ends in node i."""
        return self.y0 + np.asarray(c) * self.n + i

    def new(self, key) -> int:
        """An auxiliary variable named by a hashable ``key``."""
        return self.aux.id(key)

    @property
    def top(self) -> int:
        return max(self.packed_top, self.aux.top)

    def decode(self, var: int):
        """``("t", i, k, j)``, ``("x", p, i)``, ``("y", c, i)`` or the auxiliary key."""
        var = abs(int(var))
        if self.t0 <= var < self.x0:
            ik, j = divmod(var - self.t0, self.n)
            i, k = divmod(ik, self.K)
            return ("t", i, k, j)
        if self.x0 <= var < self.y0:
            return ("x",) + divmod(var - self.x0, self.n)
        if self.y0 <= var <= self.packed_top:
            return ("y",) + divmod(var - self.y0, self.n)
        return self.aux.obj(var)

    def t_grid(self) -> np.ndarray:
        """``(n, K, n)`` array of the t variable ids (made once; read-only)."""
        if self._t_grid is None:
            i, k, j = np.meshgrid(np.arange(self.n), np.arange(self.K), np.arange(self.n), indexing="ij")
            grid = self.t(i, k, j)
            grid.setflags(write=False)
            self._t_grid = grid
        return self._t_grid


#: Clauses made into lists between two looks at the deadline (:func:`rmtk.limits.checkpoint`).
ROWS_PER_CHECK = 65_536


def _rows(arr: np.ndarray) -> Clauses:
    """The rows of ``arr`` as clauses (lists of ints), a chunk at a time with a look at the
    deadline before each (:func:`rmtk.limits.checkpoint`: a million observed steps make
    millions of clauses, a second of conversion)."""
    if not len(arr):
        return []
    arr = np.asarray(arr, dtype=np.int64).reshape(len(arr), -1)
    out: Clauses = []
    for start in range(0, len(arr), ROWS_PER_CHECK):
        checkpoint()
        out += arr[start : start + ROWS_PER_CHECK].tolist()
    return out


# ---------------------------------------------------------------------- constraint families
def determinism(pool: VarPool) -> Clauses:
    """Paper eq. (2): at most one target per (node, letter): ¬t[i,k,j] ∨ ¬t[i,k,j']."""
    t = pool.t_grid()
    a, b = np.triu_indices(pool.n, 1)
    return _rows(-np.stack([t[:, :, a], t[:, :, b]], axis=-1).reshape(-1, 2))


def full_specification(pool: VarPool) -> Clauses:
    """Paper eq. (3): at least one target per (node, letter): ∨_j t[i,k,j]."""
    return _rows(pool.t_grid().reshape(-1, pool.n))


def prefix_runs(pool: VarPool, trie: Trie) -> Clauses:
    """x[root, 0], and x[p,i] ∧ t[i,k,j] → x[c,j] for every trie edge p —k→ c."""
    par, kid = trie.children()
    return edge_runs(pool, par, trie.letter[kid], kid)


def edge_runs(
    pool: VarPool, par: np.ndarray, k: np.ndarray, kid: np.ndarray, power: np.ndarray | None = None
) -> Clauses:
    """x[0, 0], and x[p,i] ∧ t[i,k,j] → x[c,j] for every edge p —k→ c of a trie, or of a
    graph of words (:class:`rmtk.sat.folded.Folded`) whose node 0 is the empty word. An edge
    of ``power`` s > 0 stands for 2^s steps on letter k: x[p,i] ∧ P_s[k,i,j] → x[c,j], the
    s-th power of k's transitions (:func:`letter_powers`)."""
    n = pool.n
    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    i, j = i.ravel(), j.ravel()
    out: Clauses = [[int(pool.x(0, 0))]]
    if power is not None and len(power) and power.max() > 0:
        step, out2 = letter_powers(pool, k, power)
        out += out2
        moves = step[k, power][:, i, j]  # (edges, n * n)
    else:
        moves = pool.t(i[None, :], k[:, None], j[None, :])
    cl = np.stack([-pool.x(par[:, None], i[None, :]), -moves, pool.x(kid[:, None], j[None, :])], axis=-1)
    return out + _rows(cl.reshape(-1, 3))


def one_node_each(pool: VarPool, n_words: int) -> Clauses:
    """Each of ``n_words`` words (a tree of words: :func:`rmtk.sat.folded.cut`) ends in exactly
    one node: ∨_i x[p,i], and ¬x[p,i] ∨ ¬x[p,j]. Implied where the runs decide every word, but
    stated: a word known in one node is known in no other, which the runs' clauses alone never
    propagate."""
    x = pool.x(np.arange(n_words)[:, None], np.arange(pool.n)[None, :])
    a, b = np.triu_indices(pool.n, 1)
    return _rows(x) + _rows(-np.stack([x[:, a], x[:, b]], axis=-1).reshape(-1, 2))


def edge_transitions(pool: VarPool, par: np.ndarray, k: np.ndarray, kid: np.ndarray) -> Clauses:
    """x[p,i] ∧ x[c,j] → t[i,k,j] for every edge p —k→ c of a tree of words: the nodes of a
    word and of its child fix the transition between them (implied, with :func:`one_node_each`,
    by the runs and determinism; stated, so that it propagates: Heule and Verwer's DFA
    identification states it too)."""
    n = pool.n
    i, j = (a.ravel() for a in np.meshgrid(np.arange(n), np.arange(n), indexing="ij"))
    xp, xc = pool.x(par[:, None], i[None, :]), pool.x(kid[:, None], j[None, :])
    cl = np.stack([-xp, -xc, pool.t(i[None, :], k[:, None], j[None, :])], axis=-1)
    return _rows(cl.reshape(-1, 3))


def letter_powers(pool: VarPool, k: np.ndarray, power: np.ndarray) -> tuple[np.ndarray, Clauses]:
    """P_s[k,i,j]: 2^s steps on letter k lead node i to node j, for each letter and every s up
    to the largest ``power`` it is used with (P_0 is t[·,k,·]), as a ``(K, S + 1, n, n)`` array
    of ids (0 where not defined), with their clauses: P_{s−1}[k,i,l] ∧ P_{s−1}[k,l,j] →
    P_s[k,i,j], and exactly one j per (k, s, i), so that P_s is the function δ_k^(2^s)."""
    n, K = pool.n, pool.K
    top = np.zeros(K, np.int64)
    np.maximum.at(top, k, power)
    step = np.zeros((K, int(top.max()) + 1, n, n), np.int64)
    step[:, 0] = pool.t_grid().transpose(1, 0, 2)
    i, l, j = (a.ravel() for a in np.meshgrid(np.arange(n), np.arange(n), np.arange(n), indexing="ij"))
    a, b = np.triu_indices(n, 1)
    out: Clauses = []
    for letter in np.flatnonzero(top).tolist():
        for s in range(1, int(top[letter]) + 1):
            ids = np.array([pool.new(("power", letter, s, u)) for u in range(n * n)], np.int64).reshape(n, n)
            step[letter, s] = ids
            prev = step[letter, s - 1]
            out += _rows(np.stack([-prev[i, l], -prev[l, j], ids[i, j]], axis=-1))
            out += _rows(-np.stack([ids[:, a], ids[:, b]], axis=-1).reshape(-1, 2))
            out += _rows(ids)
    return step, out


def negative_classes(pool: VarPool, classes: PolicyClasses, *, amo_pairwise_max: int = 6) -> Clauses:
    """Paper eq. (6), grouped by policy class: x[p,i] → y[c,i] for every pair (p, s) of
    class c, and at most one class per (state, node) among the classes of each state."""
    n = pool.n
    per_state = np.bincount(classes.class_state)
    relevant = per_state[classes.class_state] >= 2  # classes sharing their state with another
    keep = relevant[classes.pair_class]
    p, c = classes.pair_node[keep], classes.pair_class[keep]
    pc = unique(p * max(classes.n_classes, 1) + c)
    p, c = pc // max(classes.n_classes, 1), pc % max(classes.n_classes, 1)
    i = np.arange(n)
    out = _rows(np.stack([-pool.x(p[:, None], i[None, :]), pool.y(c[:, None], i[None, :])], axis=-1).reshape(-1, 2))
    order = np.argsort(classes.class_state, kind="stable")
    states = classes.class_state[order]
    for group in np.split(order, np.flatnonzero(np.diff(states)) + 1) if len(order) else []:
        if len(group) < 2:
            continue
        if len(group) <= amo_pairwise_max:
            a, b = np.triu_indices(len(group), 1)
            ys = pool.y(group[:, None], i[None, :])  # (m, n)
            out += _rows(-np.stack([ys[a], ys[b]], axis=-1).transpose(1, 0, 2).reshape(-1, 2))
        else:
            for node in range(n):
                lits = [int(v) for v in pool.y(group, node)]
                enc = CardEnc.atmost(lits, bound=1, vpool=pool.aux, encoding=EncType.seqcounter)
                out += enc.clauses
    return out


def negative_pairs(pool: VarPool, pairs: np.ndarray) -> Clauses:
    """Paper eq. (6), pairwise: for each negative example {p, q}: ¬x[p,i] ∨ ¬x[q,i]."""
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    i = np.arange(pool.n)
    return _rows(np.stack([-pool.x(pairs[:, :1], i), -pool.x(pairs[:, 1:], i)], axis=-1).reshape(-1, 2))


def _reward_vars(pool: VarPool, obs: RewardTraces | Folded) -> tuple[np.ndarray, np.ndarray, Clauses]:
    """o[i,k,v] (node i pays value v on letter k) as an ``(n, K, R)`` array of ids (0 where no
    observation has letter k and value v), each row's value index, and at most one value per
    (node, letter)."""
    values, value = np.unique(obs.value, return_inverse=True)
    n, K, R = pool.n, pool.K, max(len(values), 1)
    o = np.zeros((n, K, R), np.int64)
    kv = np.unique(obs.letter * R + value)
    out: Clauses = []
    for k in np.unique(kv // R).tolist():
        vs = (kv[kv // R == k] % R).tolist()
        for i in range(n):
            ids = [pool.new(("o", i, k, v)) for v in vs]
            o[i, k, vs] = ids
            out += [[-a, -b] for j, a in enumerate(ids) for b in ids[j + 1 :]]
    return o, value.astype(np.int64), out


def reward_outputs(pool: VarPool, obs: RewardTraces | Folded) -> Clauses:
    """Reward traces, exactly: for every observation (trie node p, letter k, value v) and node
    i, ¬x[p,i] ∨ o[i,k,v]; and each (node, letter) pays at most one value."""
    o, value, out = _reward_vars(pool, obs)
    i = np.arange(pool.n)
    cl = np.stack([-pool.x(obs.node[:, None], i[None, :]), o[i[None, :], obs.letter[:, None], value[:, None]]], -1)
    return out + _rows(cl.reshape(-1, 2))


def soft_reward_outputs(pool: VarPool, obs: RewardTraces) -> tuple[Clauses, np.ndarray, np.ndarray]:
    """Reward traces under noise: each observation's clauses ¬x[p,i] ∨ o[i,k,v] ∨ b_j with a
    relaxation variable b_j of weight ``obs.count[j]`` (dropping it calls those steps noisy),
    one per distinct (word, letter, value). Rows of one (word, letter) with different values
    keep at most one: b_a ∨ b_b, implied by the others (a word ends in one node, which pays
    one value) but stated, so that MaxSAT sees the groups (``Formula.exclusive_softs``).
    Returns the clauses, the b ids and the weights."""
    o, value, out = _reward_vars(pool, obs)
    relax = np.array([pool.new(("noisy", j)) for j in range(obs.n_rows)], dtype=np.int64)
    out += _kept_values(obs, relax)
    i = np.arange(pool.n)
    cl = np.stack(
        [
            -pool.x(obs.node[:, None], i[None, :]),
            o[i[None, :], obs.letter[:, None], value[:, None]],
            np.broadcast_to(relax[:, None], (obs.n_rows, pool.n)),
        ],
        axis=-1,
    )
    return out + _rows(cl.reshape(-1, 3)), relax, np.asarray(obs.count, np.int64)


def _kept_values(obs: RewardTraces, relax: np.ndarray) -> Clauses:
    """b_a ∨ b_b for every two rows of one (trie node, letter): at most one value kept there."""
    key = obs.node * max(int(obs.letter.max(initial=0)) + 1, 1) + obs.letter
    order = np.argsort(key, kind="stable")
    start = np.flatnonzero(np.r_[True, np.diff(key[order]) != 0])
    size = np.diff(np.r_[start, len(order)])
    out: Clauses = []
    for s, m in zip(start[size > 1].tolist(), size[size > 1].tolist()):
        b = relax[order[s : s + m]].tolist()
        out += [[a, c] for j, a in enumerate(b) for c in b[j + 1 :]]
    return out


def non_stuttering(pool: VarPool) -> Clauses:
    """Paper eq. (7): t[i,k,j] → t[j,k,j] for i ≠ j."""
    n = pool.n
    i, k, j = np.meshgrid(np.arange(n), np.arange(pool.K), np.arange(n), indexing="ij")
    m = i != j
    return _rows(np.stack([-pool.t(i[m], k[m], j[m]), pool.t(j[m], k[m], j[m])], axis=-1))


def bfs_edges(pool: VarPool) -> tuple[dict, dict, Clauses]:
    """The first half of the breadth-first numbering: e[i,j] (some letter leads i → j, i < j),
    p[j,i] (i is the smallest node with an edge into j, j's BFS parent) and their definitions."""
    n, K = pool.n, pool.K
    e = {(i, j): pool.new(("e", i, j)) for i in range(n) for j in range(n) if i < j}
    par = {(j, i): pool.new(("p", j, i)) for j in range(1, n) for i in range(j)}
    out: Clauses = []
    for (i, j), v in e.items():  # e[i,j] ⇔ ∨_k t[i,k,j]
        tk = pool.t(i, np.arange(K), j)
        out += _rows(np.stack([-tk, np.full(K, v)], axis=1))
        out.append([-v] + tk.tolist())
    for (j, i), v in par.items():  # p[j,i] ⇔ e[i,j] ∧ ∧_{i'<i} ¬e[i',j]
        out.append([-v, e[i, j]])
        out += [[-v, -e[i2, j]] for i2 in range(i)]
        out.append([v, -e[i, j]] + [e[i2, j] for i2 in range(i)])
    return e, par, out


def bfs_parents_first(pool: VarPool, par: dict) -> Clauses:
    """Nodes with a BFS parent come first (spare, unreached nodes last, so that machines whose
    extra nodes no word reaches keep a representative), and parents are non-decreasing."""
    n = pool.n
    out: Clauses = []
    reached = {j: pool.new(("r", j)) for j in range(1, n)}
    for j in range(1, n):
        out.append([-reached[j]] + [par[j, i] for i in range(j)])
        out += [[reached[j], -par[j, i]] for i in range(j)]
        if j + 1 < n:
            out.append([-reached[j + 1], reached[j]])
    for j in range(1, n - 1):
        for i in range(j):
            out += [[-par[j, i], -par[j + 1, i2]] for i2 in range(i)]
    return out


def symmetry_breaking_bfs(pool: VarPool) -> Clauses:
    """Breadth-first numbering from u_I = 0 (Ulyantsev, Zakirzyanov, Shalyto 2015):
    e[i,j]: some letter leads i → j; p[j,i]: i is the smallest node with an edge into j
    (j's BFS parent); m[i,j,k]: k is the smallest letter of the edge i → j. Then nodes with
    a parent come first, parents are non-decreasing in j, and siblings are ordered by their
    smallest letter. Each machine whose nodes are all reachable gets exactly one numbering;
    spare nodes that nothing reaches are numbered last. (Over many letters, the labels'
    :func:`rmtk.labels.encoding.bfs_numbering` states m linearly.)"""
    n, K = pool.n, pool.K
    e, par, out = bfs_edges(pool)
    mm = {(i, j, k): pool.new(("m", i, j, k)) for i in range(n) for j in range(i + 1, n) for k in range(K)}
    grid = pool.t_grid().tolist()  # t[i,k,j] as Python ints, looked up without numpy per clause
    t = lambda i, k, j: grid[i][k][j]  # noqa: E731
    out += bfs_parents_first(pool, par)
    for (i, j, k), v in mm.items():  # m[i,j,k] ⇔ t[i,k,j] ∧ ∧_{k'<k} ¬t[i,k',j]
        out.append([-v, t(i, k, j)])
        out += [[-v, -t(i, k2, j)] for k2 in range(k)]
        out.append([v, -t(i, k, j)] + [t(i, k2, j) for k2 in range(k)])
    for j in range(1, n - 1):  # siblings ordered by their smallest letter
        for i in range(j):
            for k in range(K):
                out += [[-par[j, i], -par[j + 1, i], -mm[i, j, k], -mm[i, j + 1, k2]] for k2 in range(k)]
    return out


def clique_pins(x: np.ndarray) -> Clauses:
    """Symmetry breaking by a clique (Heule and Verwer 2010, adapted to a fixed initial node):
    ``x`` is the ``(n, n)`` array of x[w_c, i] for n words w_0 … w_{n−1} that the other
    clauses keep in pairwise different nodes (n policy classes at one state), so that their
    nodes are all n nodes. The one in u_I = 0 is free; the others, in order, take nodes 1, 2,
    …: w_c ends in node c + 1 if a later word is in node 0, in node c if an earlier one is.
    Each machine then has exactly one numbering, as with :func:`symmetry_breaking_bfs`, and
    the pinned words decide most of the runs by propagation alone."""
    x = np.asarray(x, dtype=np.int64)
    n = x.shape[0]
    if x.shape != (n, n):
        raise ValueError(f"clique_pins needs one word per node, got x of shape {x.shape}")
    out: Clauses = [x[:, 0].tolist()]  # one of them is in u_I (implied; helps propagation)
    for c0 in range(n):
        for c in range(n):
            if c != c0:
                out.append([int(-x[c0, 0]), int(x[c, c + 1 if c < c0 else c])])
    for c in range(n):  # where w_c can be at all
        out.append([int(v) for v in x[c, sorted({0, c, min(c + 1, n - 1)})]])
    return out


def soft_negative_pairs(pool: VarPool, pairs: np.ndarray) -> tuple[Clauses, np.ndarray]:
    """Paper section 5.2: each negative example {p, q} made soft with a relaxation variable
    b_pq: ¬x[p,i] ∨ ¬x[q,i] ∨ b_pq for every node i. Returns the clauses and the b ids."""
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    relax = np.array([pool.new(("drop", k)) for k in range(len(pairs))], dtype=np.int64)
    i = np.arange(pool.n)
    cl = np.stack(
        [-pool.x(pairs[:, :1], i), -pool.x(pairs[:, 1:], i), np.broadcast_to(relax[:, None], (len(pairs), pool.n))],
        axis=-1,
    ).reshape(-1, 3)
    return _rows(cl), relax


def decode_transitions(model: Iterable[int], pool: VarPool) -> np.ndarray:
    """``delta_u`` (n, K) from a model: the j with t[i,k,j] true (asserts functionality). A
    model listed in variable order (python-sat's: ``model[v − 1] = ±v``) is read on its t
    variables alone, not converted whole (it holds every word's x variables too)."""
    t = pool.t_grid()
    first, last = pool.t0, pool.x0 - 1  # the t ids, packed first
    part = np.asarray(model[first - 1 : last], dtype=np.int64) if isinstance(model, list) else None
    if part is not None and len(part) == last - first + 1 and np.array_equal(np.abs(part), np.arange(first, last + 1)):
        grid = (part > 0)[t - first]  # (n, K, n)
    else:
        model = np.asarray(model, dtype=np.int64)
        truth = np.zeros(pool.top + 1, dtype=bool)
        pos = model[model > 0]
        truth[pos[pos <= pool.top]] = True
        grid = truth[t]  # (n, K, n)
    if not np.all(grid.sum(axis=2) == 1):
        raise AssertionError("model is not a function: some (node, letter) has no or several targets")
    return grid.argmax(axis=2)
