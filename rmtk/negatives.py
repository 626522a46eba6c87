"""Negative examples (paper eq. 6, Lemma 1): two words that reach the same MDP state with
different action distributions must end in different machine nodes.

In the exact setting rmtk does not list the pairs: at each state the words reaching it are
grouped into *policy classes* (rows equal within a tolerance), and "different class at a
common state" is exactly the set of negative examples. The encoder turns classes into
clauses linear in the number of (word, state) pairs (design.md). Pair counts are still
available for reporting and comparison with the paper.
"""
from __future__ import annotations

import attrs
import numpy as np

from ._arrays import array_eq, frozen_array
from .ptp import PrefixTreePolicy

#: Default tolerance when comparing two action distributions (max absolute difference).
POLICY_TOL = 1e-9


@attrs.frozen
class PolicyClasses:
    """A partition, per MDP state, of the (word, state) pairs by action distribution.

    Attributes:
        pair_class: ``(n_pairs,)`` global class id of each pair of the prefix tree.
        class_state: ``(n_classes,)`` the MDP state of each class.
        pair_node: ``(n_pairs,)`` trie node of each pair (a copy of the tree's).
    """

    pair_class: np.ndarray = attrs.field(converter=frozen_array(np.int64), eq=array_eq)
    class_state: np.ndarray = attrs.field(converter=frozen_array(np.int64), eq=array_eq)
    pair_node: np.ndarray = attrs.field(converter=frozen_array(np.int64), eq=array_eq)

    @property
    def n_classes(self) -> int:
        return len(self.class_state)

    def classes_per_state(self, n_states: int) -> np.ndarray:
        return np.bincount(self.class_state, minlength=n_states)

    def lower_bound(self) -> int:
        """Distinct classes at one state all need distinct nodes: max over states."""
        return int(np.bincount(self.class_state).max()) if self.n_classes else 1

    def per_state_pairs(self) -> int:
        """Σ over states of the unordered word pairs in different classes (the paper's
        |E⁻| convention, without the authors' double-counting artefact)."""
        m_s = np.bincount(self.class_state, weights=np.bincount(self.pair_class, minlength=self.n_classes))
        m_c = np.bincount(self.pair_class, minlength=self.n_classes).astype(np.int64)
        same = np.bincount(self.class_state, weights=m_c * (m_c - 1) // 2)
        return int((m_s * (m_s - 1) // 2 - same).sum())

    def distinct_pairs(self) -> np.ndarray:
        """Distinct unordered word pairs ``(p, q)``, ``p < q``, that are negative examples
        at some state, as a ``(k, 2)`` array of trie nodes (can be large: for reporting)."""
        order = np.lexsort((self.pair_node, self.pair_class))
        cls, node = self.pair_class[order], self.pair_node[order]
        bounds = np.flatnonzero(np.diff(cls)) + 1
        members = np.split(node, bounds)
        cls_ids = cls[np.concatenate([[0], bounds])] if len(cls) else np.empty(0, np.int64)
        by_state: dict[int, list[np.ndarray]] = {}
        for c, mem in zip(cls_ids, members):
            by_state.setdefault(int(self.class_state[c]), []).append(mem)
        keys = []
        for groups in by_state.values():
            for a in range(len(groups)):
                for b in range(a + 1, len(groups)):
                    p, q = np.meshgrid(groups[a], groups[b], indexing="ij")
                    lo, hi = np.minimum(p, q).ravel(), np.maximum(p, q).ravel()
                    keys.append(lo * (1 << 32) + hi)
        if not keys:
            return np.empty((0, 2), dtype=np.int64)
        k = np.unique(np.concatenate(keys))
        return np.stack([k >> 32, k & ((1 << 32) - 1)], axis=1)


def policy_classes(ptp: PrefixTreePolicy, *, tol: float = POLICY_TOL) -> PolicyClasses:
    """Group the pairs of ``ptp`` by state and action distribution (max-abs difference ≤ tol).

    When ``ptp.classes`` is set (the "one distinct policy per node" mode) those ids decide.
    """
    state = ptp.tree.pair_state
    order = np.argsort(state, kind="stable")
    bounds = np.flatnonzero(np.diff(state[order])) + 1
    pair_class = np.empty(ptp.n_pairs, dtype=np.int64)
    class_state: list[int] = []
    for idx in np.split(order, bounds) if len(order) else []:
        s = int(state[idx[0]])
        if ptp.classes is not None:
            uniq, inv = np.unique(np.asarray(ptp.classes)[idx], return_inverse=True)
            pair_class[idx] = len(class_state) + inv
            class_state.extend([s] * len(uniq))
            continue
        rows = ptp.policy[idx]
        todo = np.ones(len(idx), dtype=bool)
        while todo.any():
            first = int(np.argmax(todo))
            close = todo & (np.abs(rows - rows[first]).max(axis=1) <= tol)
            pair_class[idx[close]] = len(class_state)
            class_state.append(s)
            todo &= ~close
    return PolicyClasses(pair_class, np.array(class_state, dtype=np.int64), ptp.tree.pair_node)
