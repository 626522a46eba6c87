"""(Labeling, machine) pairs and their canonical form (docs/design/13-learning-labels.md).

A pair is a labeling ``L`` of the states that matter (−1 elsewhere) and a machine ``δ`` over
its k propositions. It is read over states as ``D(u, s) = δ(u, L(s))``
(:func:`state_delta`). Two pairs are the same up to renaming of nodes and of propositions when
their canonical forms agree: propositions numbered by first occurrence along the states in
index order, nodes in breadth-first order of the *determined* transitions — those some history
exercises, and those non-stuttering then forces (:func:`determined`). Found pairs and the truth
are both keyed this way (:class:`PairStore`, :mod:`rmtk.labels.verdicts`), so that "equal to the
truth" means one thing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import attrs
import numpy as np

from ..sat.search import canonical_partial, count_completions


@attrs.frozen
class LabelSolution:
    """One learned (labeling, machine) pair, in canonical form (propositions numbered by first
    occurrence over the states in index order, nodes in BFS order).

    Attributes:
        labels: ``(S,)`` learned proposition of each state; −1 for states no history reaches.
        delta_u: ``(n, k)`` transitions over the learned propositions; free ones are self-loops.
        used: ``(n, k)`` transitions determined by the histories (exercised, or forced by
            non-stuttering).
        free: ``((state, (p, …)), …)``: states whose label alone could change to one of the
            listed propositions, the machine as it is, without breaking consistency; ``None``
            when not computed (``freedom=False``, or a time limit stopped that step).
        models: satisfying assignments seen for this pair (renamings included when symmetry
            breaking is off).
    """

    labels: np.ndarray = attrs.field(eq=False)
    delta_u: np.ndarray = attrs.field(eq=False)
    used: np.ndarray = attrs.field(eq=False)
    free: tuple | None = ()
    models: int = 1

    @property
    def n_nodes(self) -> int:
        return int(self.delta_u.shape[0])

    @property
    def n_props(self) -> int:
        return int(self.delta_u.shape[1])

    def state_machine(self) -> np.ndarray:
        """``(n, S)``: the machine read over states, ``δ(u, L(s))`` (unreached states loop)."""
        return state_delta(self.delta_u, self.labels)


def state_delta(delta_u: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """``(n, S)`` machine over states; states with label −1 (unreached) loop."""
    lab = np.asarray(labels)
    out = np.asarray(delta_u)[:, np.where(lab >= 0, lab, 0)]
    out[:, lab < 0] = np.arange(out.shape[0])[:, None]
    return out


def used_by_label(used_s: np.ndarray, labels: np.ndarray, n_props: int) -> np.ndarray:
    """``(n, k)`` transitions over propositions exercised, from the ``(n, S)`` transitions over
    states exercised (a state with label −1 exercises nothing)."""
    used = np.zeros((used_s.shape[0], n_props), bool)
    ii, ss = np.nonzero(used_s)
    keep = np.asarray(labels)[ss] >= 0
    used[ii[keep], np.asarray(labels)[ss[keep]]] = True
    return used


def determined(delta_u: np.ndarray, used: np.ndarray, non_stuttering: bool) -> np.ndarray:
    """The transitions the histories determine: the exercised ones (``used``) and, under
    non-stuttering, those every idempotent completion of a column agrees on."""
    if not non_stuttering:
        return np.asarray(used, bool).copy()
    return count_completions(np.asarray(delta_u), np.asarray(used, bool), True)[1]


def first_occurrence(labels: np.ndarray, order: Sequence[int], first_free: int = 0) -> np.ndarray:
    """``perm[p]``: the canonical name of proposition p — propositions below ``first_free`` keep
    theirs, the others are numbered by first occurrence along ``order``."""
    k_max = int(np.max(labels)) + 1 if len(labels) else 0
    perm = np.full(max(k_max, first_free), -1, np.int64)
    perm[:first_free] = np.arange(first_free)
    nxt = first_free
    for s in order:
        p = int(labels[s])
        if p >= 0 and perm[p] < 0:
            perm[p] = nxt
            nxt += 1
    free = np.flatnonzero(perm < 0)
    perm[free] = nxt + np.arange(len(free))
    return perm


def canonical_pair(
    labels: np.ndarray, delta_u: np.ndarray, used: np.ndarray, order: Sequence[int], first_free: int = 0
) -> tuple[tuple, np.ndarray, np.ndarray, np.ndarray]:
    """A key invariant under renaming of nodes and propositions, and the canonical
    ``(labels, delta_u, used)`` (transitions outside ``used`` become self-loops)."""
    perm = first_occurrence(labels, order, first_free)
    k = delta_u.shape[1]
    inv = np.argsort(perm[:k])
    lab = np.where(labels >= 0, perm[np.maximum(labels, 0)], -1)
    du, us = delta_u[:, inv], used[:, inv]
    key, bfs = canonical_partial(du, us)
    n = du.shape[0]
    nodes = bfs + [u for u in range(n) if u not in set(bfs)]
    pos = np.empty(n, np.int64)
    pos[nodes] = np.arange(n)
    du2 = pos[du[nodes]]
    us2 = us[nodes]
    du2[~us2] = np.broadcast_to(np.arange(n)[:, None], du2.shape)[~us2]
    return (tuple(lab[list(order)].tolist()), key), lab, du2, us2


class PairStore:
    """The pairs found, each filed once under its key invariant under both renamings (a pair
    found again, e.g. renamed when symmetry breaking is off, counts one more model)."""

    def __init__(self, reach: np.ndarray, first_free: int, non_stuttering: bool):
        self.reach, self.first_free, self.non_stuttering = np.asarray(reach, np.int64), first_free, non_stuttering
        self.found: dict[tuple, LabelSolution] = {}

    def __len__(self) -> int:
        return len(self.found)

    def add(self, labels: np.ndarray, delta_u: np.ndarray, used_s: np.ndarray) -> np.ndarray:
        """File the pair (labels of the states of ``reach``, machine, ``(n, S)`` exercised
        transitions over states); returns its determined transitions ``(n, k)``."""
        lab = np.full(len(labels), -1, np.int64)
        lab[self.reach] = np.asarray(labels)[self.reach]
        used = determined(delta_u, used_by_label(used_s, lab, delta_u.shape[1]), self.non_stuttering)
        key, clab, cdu, cused = canonical_pair(lab, np.asarray(delta_u), used, self.reach, self.first_free)
        old = self.found.get(key)
        self.found[key] = LabelSolution(clab, cdu, cused) if old is None else attrs.evolve(old, models=old.models + 1)
        return used

    def solutions(self) -> tuple[LabelSolution, ...]:
        return tuple(self.found.values())


def machine_pair(D: np.ndarray, reach: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A machine over states ``(n, S)`` as a pair: the states of ``reach`` grouped by their column
    (``(S,)`` labels, 0 off ``reach``) and the machine over the groups ``(n, k)``."""
    cols, inv = np.unique(np.asarray(D)[:, reach].T, axis=0, return_inverse=True)
    labels = np.zeros(D.shape[1], np.int64)
    labels[reach] = np.ravel(inv)
    return labels, cols.T.copy()


def reached_states(trie_letters: np.ndarray) -> np.ndarray:
    """States some history of a state trie passes through."""
    return np.unique(np.asarray(trie_letters)[1:])


def mdp_reachable(mdp) -> np.ndarray:
    """States reachable from the start states."""
    succ = mdp.successor_matrix()
    seen = np.zeros(mdp.n_states, bool)
    frontier = np.unique(mdp.start_states)
    seen[frontier] = True
    while len(frontier):
        nxt = np.concatenate([succ.indices[succ.indptr[s] : succ.indptr[s + 1]] for s in frontier])
        nxt = np.unique(nxt[~seen[nxt]]) if len(nxt) else nxt
        seen[nxt] = True
        frontier = nxt
    return np.flatnonzero(seen)


@attrs.frozen
class LabelKnowledge:
    """What the user says about the labels, as state indices: ``fixed`` ``{state: proposition}``
    (propositions ``0 … m−1`` are the named ones, ``first_free = m``), ``shared`` groups of states
    with one label, exactly ``props`` propositions or at most ``max_props`` (``None``: the
    fewest that work, bounded by the states that matter)."""

    fixed: Mapping[int, int] = attrs.field(factory=dict)
    shared: tuple[tuple[int, ...], ...] = ()
    first_free: int = 0
    props: int | None = None
    max_props: int | None = None

    @property
    def empty(self) -> bool:
        """Nothing is known of the labels themselves (the number of propositions aside)."""
        return not self.fixed and not self.shared

    def groups(self) -> list[tuple[int, ...]]:
        """The states known to carry one label: the shared groups and the states of each named
        proposition."""
        named: dict[int, list[int]] = {}
        for s, p in self.fixed.items():
            named.setdefault(p, []).append(s)
        return [tuple(g) for g in (*self.shared, *(tuple(v) for v in named.values())) if len(g) > 1]


def label_classes(reach: np.ndarray, groups: Sequence[Sequence[int]]) -> int:
    """How many states of ``reach`` can carry different labels when each group shares one: the
    classes of the states of ``reach`` joined along the groups."""
    root = {int(s): int(s) for s in reach}

    def find(a: int) -> int:
        while root[a] != a:
            root[a] = root[root[a]]
            a = root[a]
        return a

    for g in groups:
        inside = [int(s) for s in g if int(s) in root]
        for a, b in zip(inside[:-1], inside[1:]):
            root[find(a)] = find(b)
    return len({find(s) for s in root})


def distinct_columns(n: int, non_stuttering: bool = True) -> int:
    """How many different columns δ(·, p) a machine with n nodes can have (n^n, or the
    idempotent maps under non-stuttering): two propositions with the same column can merge, so
    no smallest labeling needs more propositions."""
    if not non_stuttering:
        return n**n
    return sum(math.comb(n, j) * j ** (n - j) for j in range(1, n + 1))


def renamings(n: int, k: int) -> int:
    """How many (node, proposition) renamings one pair has at most: (n−1)!·k!."""
    return math.factorial(n - 1) * math.factorial(k)
