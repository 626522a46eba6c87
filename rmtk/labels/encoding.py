"""SAT encoding of "a labeling with k propositions and a machine with n nodes consistent with
the expert's behaviour over state histories" (docs/design.md, "Learning the labels").

The problem is the one of :mod:`rmtk.sat.encoding` over the *state view* of the MDP
(:mod:`rmtk.labels.histories`): the trie's letters are states, and the negative examples are
(state history, state history) pairs ending in a common state where the expert acts
differently. The labeling is a set of variables beside the transitions: a run reads the label
of each state it enters.

Variables (:class:`LabelPool`, a :class:`~rmtk.sat.encoding.VarPool` with one more packed family):

* ``t[i,p,j]`` — δ(u_i, p) = u_j over the k learned propositions;
* ``l[s,p]``  — L(s) = p;
* ``x[h,i]``, ``y[c,i]`` — as in :mod:`rmtk.sat.encoding`, for trie nodes of state histories.

Constraint families, one generator each:

* :func:`one_label_per_state`: exactly one l[s,·] for every state that matters; the others are
  pinned to proposition 0 (nothing observes them).
* :func:`state_runs`: x[root,0], and x[h,i] ∧ l[s,p] ∧ t[i,p,j] → x[hs,j] along every trie edge.
* :func:`label_symmetry_breaking`: propositions numbered by first occurrence over the states
  in a fixed order (a restricted growth string): each labeling has exactly one name for each
  of its k! renamings. Propositions the user named are left out of it.
* :func:`all_propositions_used`: exactly k propositions (the last one occurs).
* :func:`known_labels`, :func:`shared_labels`: partial knowledge as unit clauses and
  equalities.

Determinism, full specification, non-stuttering, BFS node symmetry breaking and the negative
example families are those of :mod:`rmtk.sat.encoding`, on this pool.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

import numpy as np
from pysat.formula import IDPool

from ..sat.encoding import Clauses, VarPool, _rows
from ..sat.lazy import LazyFormula


class LabelPool(VarPool):
    """A :class:`~rmtk.sat.encoding.VarPool` over k propositions with the labeling variables
    ``l[s,p]`` packed after ``t``, ``x`` and ``y``."""

    def __init__(self, n: int, n_props: int, n_states: int, n_trie: int = 0, n_classes: int = 0):
        super().__init__(n, n_props, n_trie, n_classes)
        self.S = n_states
        self.l0 = self.packed_top + 1
        self.packed_top = self.l0 + n_states * n_props - 1
        self.aux = IDPool(start_from=self.packed_top + 1)

    def l(self, s, p):
        """L(s) = p (elementwise on arrays)."""
        return self.l0 + np.asarray(s) * self.K + p

    def l_grid(self) -> np.ndarray:
        """``(S, k)`` array of the l variable ids."""
        return self.l(np.arange(self.S)[:, None], np.arange(self.K)[None, :])

    def decode(self, var: int):
        var = abs(int(var))
        if self.l0 <= var <= self.packed_top:
            return ("l",) + divmod(var - self.l0, self.K)
        return super().decode(var)


# ---------------------------------------------------------------------- constraint families
def one_label_per_state(pool: LabelPool, states: np.ndarray) -> Clauses:
    """Exactly one proposition per state of ``states``; every other state is pinned to
    proposition 0 (no history reaches it, so its label is not learned)."""
    grid = pool.l_grid()
    active = np.zeros(pool.S, bool)
    active[np.asarray(states, np.int64)] = True
    out = _rows(grid[active])
    a, b = np.triu_indices(pool.K, 1)
    g = grid[active]
    out += _rows(-np.stack([g[:, a], g[:, b]], axis=-1).reshape(-1, 2))
    out += [[int(v)] for v in grid[~active, 0]]
    return out


def state_runs(pool: LabelPool, parent: np.ndarray, state: np.ndarray, child: np.ndarray) -> Clauses:
    """x[root,0] (when ``parent`` holds the root) and x[h,i] ∧ l[s,p] ∧ t[i,p,j] → x[hs,j] for
    every trie edge ``parent —state→ child`` (state histories: the letter is the state)."""
    n, K = pool.n, pool.K
    i, p, j = (a.ravel() for a in np.meshgrid(np.arange(n), np.arange(K), np.arange(n), indexing="ij"))
    par, st, kid = (np.asarray(a, np.int64)[:, None] for a in (parent, state, child))
    cols = np.broadcast_arrays(-pool.x(par, i), -pool.l(st, p), -pool.t(i, p, j)[None, :], pool.x(kid, j))
    cl = np.stack(cols, axis=-1).reshape(-1, 4)
    return _rows(cl)


def label_symmetry_breaking(pool: LabelPool, order: Sequence[int], first_free: int = 0) -> Clauses:
    """Propositions ``first_free …`` numbered by first occurrence along ``order`` (a restricted
    growth string): proposition p > first_free may label a state only if p − 1 labels an
    earlier one. e[r,p]: some state among the first r + 1 of ``order`` carries p."""
    order = [int(s) for s in order]
    K = pool.K
    out: Clauses = []
    if first_free >= K - 1 or not order:
        return out
    e = {}
    for r, s in enumerate(order):
        for p in range(first_free, K - 1):  # e is only read for p < K − 1
            e[r, p] = pool.new(("first", r, p))
            lit = int(pool.l(s, p))
            if r == 0:
                out += [[-lit, e[r, p]], [-e[r, p], lit]]
            else:
                out += [[-lit, e[r, p]], [-e[r - 1, p], e[r, p]], [-e[r, p], lit, e[r - 1, p]]]
        for p in range(first_free + 1, K):
            lit = int(pool.l(s, p))
            out.append([-lit] if r == 0 else [-lit, e[r - 1, p - 1]])
    return out


def all_propositions_used(pool: LabelPool, states: np.ndarray) -> Clauses:
    """The last proposition labels some state (with :func:`label_symmetry_breaking`, every
    proposition then does: exactly k are used)."""
    return [[int(v) for v in pool.l(np.asarray(states, np.int64), pool.K - 1)]]


def known_labels(pool: LabelPool, fixed: Mapping[int, int]) -> Clauses:
    """L(s) = p for every known ``{s: p}``."""
    return [[int(pool.l(s, p))] for s, p in fixed.items()]


def shared_labels(pool: LabelPool, groups: Sequence[Sequence[int]]) -> Clauses:
    """The states of each group carry one proposition: l[s,p] ↔ l[s',p] along the group."""
    out: Clauses = []
    for group in groups:
        g = [int(s) for s in group]
        for a, b in itertools.pairwise(g):
            for p in range(pool.K):
                out += [[-int(pool.l(a, p)), int(pool.l(b, p))], [int(pool.l(a, p)), -int(pool.l(b, p))]]
    return out


def decode_labels(model, pool: LabelPool) -> np.ndarray:
    """``(S,)`` proposition of each state in a model."""
    model = np.asarray(model, dtype=np.int64)
    truth = np.zeros(pool.top + 1, dtype=bool)
    pos = model[model > 0]
    truth[pos[pos <= pool.top]] = True
    return truth[pool.l_grid()].argmax(axis=1)


class LabelLazyFormula(LazyFormula):
    """The growing part of a lazy formula with learned labels: the state histories of the
    counterexamples, their runs through the labels (:func:`state_runs`) and their classes."""

    def word(self, letters) -> int:
        p = 0
        for s in letters:
            q = self.child.get((p, int(s)))
            if q is None:
                q = len(self.parent)
                self.child[(p, int(s))] = q
                self.parent.append(p)
                self.letter.append(int(s))
                self.length.append(self.length[p] + 1)
                self.x.append(np.array([self.pool.new(("x", q, u)) for u in range(self.n)], dtype=np.int64))
                n, K = self.n, self.pool.K
                i, k, j = (a.ravel() for a in np.meshgrid(np.arange(n), np.arange(K), np.arange(n), indexing="ij"))
                self._add(
                    np.stack([-self.x[p][i], -self.pool.l(int(s), k), -self.pool.t(i, k, j), self.x[q][j]], axis=1)
                )
            p = q
        return p
