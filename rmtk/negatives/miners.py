"""Negative examples (paper eq. 6, Lemma 1): two words that reach the same MDP state with
different action distributions must end in different machine nodes.

The NegativeExampleMiner strategy turns a prefix tree policy into negative examples:

* :class:`ExactMiner` (exact policies, section 3): rmtk does not list the pairs; at each
  state the words reaching it are grouped into *policy classes* (rows equal within a
  tolerance), and "different class at a common state" is exactly the set of negative
  examples. The encoder turns classes into clauses linear in the number of (word, state)
  pairs (docs/design/03-sat-encoding.md). Pair counts are still available for reporting.
* :class:`ConfidenceMiner` (demonstrations, section 5, eq. 18-19): word pairs whose
  empirical action distributions differ with confidence 1 − α (not transitive, so pairs).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import attrs
import numpy as np

from .. import ties
from .._arrays import array_eq, float_array, int_array, unique
from ..errors import ModelError
from ..ptp.tree import PrefixTreePolicy

#: Default tolerance when comparing two action distributions (max absolute difference), the
#: tolerance of every tie in rmtk (:data:`rmtk.ties.TOL`, docs/design/02-conventions.md).
POLICY_TOL = ties.TOL


@runtime_checkable
class NegativeExampleMiner(Protocol):
    """The NegativeExampleMiner strategy (paper eq. 6; section 3 exact, section 5 from data).

    Consumes a :class:`~rmtk.ptp.tree.PrefixTreePolicy`; produces the negative examples: a
    :class:`PolicyClasses` (a partition per state, exact setting) or a
    :class:`NegativePairs` (word pairs, each with the state where it was detected).
    """

    def mine(self, ptp: PrefixTreePolicy) -> PolicyClasses | NegativePairs:
        """The negative examples of ``ptp``."""


@attrs.frozen
class PolicyClasses:
    """A partition, per MDP state, of the (word, state) pairs by action distribution.

    Attributes:
        pair_class: ``(n_pairs,)`` global class id of each pair of the prefix tree.
        class_state: ``(n_classes,)`` the MDP state of each class.
        pair_node: ``(n_pairs,)`` trie node of each pair (a copy of the tree's).
    """

    pair_class: np.ndarray = attrs.field(converter=int_array, eq=array_eq)
    class_state: np.ndarray = attrs.field(converter=int_array, eq=array_eq)
    pair_node: np.ndarray = attrs.field(converter=int_array, eq=array_eq)

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
        ``|E⁻|`` convention, without the authors' double-counting artefact)."""
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
        k = unique(np.concatenate(keys))
        return np.stack([k >> 32, k & ((1 << 32) - 1)], axis=1)


def policy_classes(ptp: PrefixTreePolicy, *, tol: float = POLICY_TOL) -> PolicyClasses:
    """Group the pairs of ``ptp`` by state and action distribution (max-abs difference ≤ tol):
    at each state, pairs in tree order, the first pair without a class leads a new one with
    every pair alike it (:func:`rmtk.ties.classes`); classes are numbered state by state in the
    order of their first pair.

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
        number, count = ties.numbered_classes(ptp.policy[idx], tol)
        pair_class[idx] = len(class_state) + number
        class_state.extend([s] * count)
    return PolicyClasses(pair_class, np.array(class_state, dtype=np.int64), ptp.tree.pair_node)


@attrs.frozen
class ExactMiner:
    """Policy classes per state, action distributions compared with a tolerance (exact
    setting, paper section 3). Consumes any prefix tree policy; produces :class:`PolicyClasses`."""

    tol: float = attrs.field(default=POLICY_TOL)

    @tol.validator
    def _check_tol(self, attribute, value):
        if not value >= 0:
            raise ModelError(f"tol must be a non-negative number, got {value}")

    def mine(self, ptp: PrefixTreePolicy) -> PolicyClasses:
        return policy_classes(ptp, tol=self.tol)


# ---------------------------------------------------------------------- from demonstrations
@attrs.frozen
class NegativePairs:
    """Negative examples as word pairs (not transitive, so not classes): trie nodes
    ``pairs[k] = (p, q)`` with ``p < q``, the state where the evidence is strongest, and
    ``log_delta[k] = log(δ1 + δ2)`` there (smaller is stronger)."""

    pairs: np.ndarray = attrs.field(converter=int_array, eq=array_eq)
    state: np.ndarray = attrs.field(converter=int_array, eq=array_eq)
    log_delta: np.ndarray = attrs.field(converter=float_array, eq=array_eq)
    detections: np.ndarray = attrs.field(converter=int_array, eq=array_eq, repr=False)
    alpha: float = 0.05

    def __len__(self) -> int:
        return len(self.pairs)

    @classmethod
    def of(cls, pairs, alpha: float = 0.05) -> NegativePairs:
        """Negative examples from bare trie-node pairs (no state or evidence recorded: unit
        weights only; for examples a user states by hand)."""
        pairs = np.sort(np.asarray(pairs, dtype=np.int64).reshape(-1, 2), axis=1)
        k = len(pairs)
        return cls(pairs, np.full(k, -1), np.zeros(k), np.empty((0, 2), np.int64), alpha)

    def weights(self, mode: str = "unit") -> np.ndarray:
        """MaxSAT weights: 1 each ("unit"), or ⌊log(δ1+δ2)/log α⌋ ≥ 1 ("evidence")."""
        if mode == "unit":
            return np.ones(len(self), dtype=np.int64)
        if mode == "evidence":
            return np.maximum(1, np.floor(self.log_delta / np.log(self.alpha) + 1e-9)).astype(np.int64)
        raise ModelError(f"weights must be 'unit' or 'evidence', not {mode!r}")

    def false_positives(self, trie_nodes: np.ndarray, classes: np.ndarray) -> np.ndarray:
        """Which pairs are wrong under the truth: at every state where the pair was detected,
        both words carry the same true policy. ``trie_nodes[p]`` is the true node of trie
        node p; ``classes[s, u]`` the true policy class of (state, node)."""
        d = self.detections  # rows (pair index, state)
        k, s = d[:, 0], d[:, 1]
        p, q = self.pairs[k, 0], self.pairs[k, 1]
        wrong = classes[s, trie_nodes[p]] == classes[s, trie_nodes[q]]
        right = np.bincount(k[~wrong], minlength=len(self)) > 0
        return ~right


def log_weissman_constant(n_actions: int) -> float:
    """``log(2^|A| − 2)`` (Weissman et al. 2003), stable for large ``|A|``."""
    if n_actions < 2:
        return -np.inf
    return n_actions * np.log(2.0) + np.log1p(-(2.0 ** (1 - n_actions)))


@attrs.frozen
class ConfidenceMiner:
    """Negative examples from empirical counts (paper eq. 18-19); consumes an empirical prefix
    tree policy (with counts), produces :class:`NegativePairs`. Words σ1, σ2 differ at
    state s when 1 − δ1 − δ2 ≥ 1 − α, with δj = (2^|A| − 2)·exp(−nj ε²/2) and
    ε = ½‖p̂1 − p̂2‖₁. Computed in log space. A (word, state) pair seen fewer than
    2·(log(2^|A|−2) − log α) times can never pass (ε ≤ 1) and is pruned first; the remaining
    pairs are compared state by state in vectorised batches."""

    alpha: float = 0.05
    batch: int = 4_000_000

    def __attrs_post_init__(self):
        if not 0 < self.alpha < 1:
            raise ModelError(f"alpha must lie in (0, 1), got {self.alpha}")

    def min_count(self, n_actions: int) -> float:
        return 2.0 * (log_weissman_constant(n_actions) - np.log(self.alpha))

    def mine(self, ptp: PrefixTreePolicy) -> NegativePairs:
        counts = ptp.counts
        if counts is None:
            raise ModelError(
                "ConfidenceMiner needs an empirical prefix tree policy (action counts from "
                "demonstrations); for an exact policy use ExactMiner"
            )
        A = counts.shape[1]
        c = log_weissman_constant(A)
        log_alpha = np.log(self.alpha)
        n = counts.sum(axis=1)
        keep = np.flatnonzero(n >= self.min_count(A))
        state = ptp.tree.pair_state[keep]
        order = keep[np.argsort(state, kind="stable")]
        st = ptp.tree.pair_state[order]
        starts = np.flatnonzero(np.r_[True, st[1:] != st[:-1]]) if len(st) else np.empty(0, np.int64)
        sizes = np.diff(np.r_[starts, len(st)])
        multi = sizes >= 2
        starts, sizes = starts[multi], sizes[multi]
        rows = (
            np.concatenate([np.arange(a, a + m) for a, m in zip(starts, sizes)])
            if len(starts)
            else np.empty(0, np.int64)
        )
        phat = counts[order] / n[order, None]
        nn = n[order].astype(float)
        found_i, found_j, found_ld = [], [], []
        # batches of rows so that the pairs of one batch fit in memory
        per_row = np.repeat(starts + sizes, sizes) - rows - 1 if len(rows) else np.empty(0, np.int64)
        cum = np.cumsum(per_row * A)
        cuts = (
            np.searchsorted(cum, np.arange(self.batch, cum[-1], self.batch), side="right")
            if len(cum)
            else np.empty(0, np.int64)
        )
        bounds = np.unique(np.r_[0, cuts, len(rows)]).tolist()
        group_of_row = np.repeat(np.arange(len(starts)), sizes)
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            if hi <= lo:
                continue
            sub = rows[lo:hi]
            g = group_of_row[lo:hi]
            end = (starts + sizes)[g]
            cnt = end - sub - 1
            i = np.repeat(sub, cnt)
            j = i + 1 + (np.arange(cnt.sum()) - np.repeat(np.cumsum(cnt) - cnt, cnt))
            eps = 0.5 * np.abs(phat[i] - phat[j]).sum(axis=1)
            ld = np.logaddexp(c - nn[i] * eps**2 / 2, c - nn[j] * eps**2 / 2)
            ok = ld <= log_alpha
            found_i.append(i[ok])
            found_j.append(j[ok])
            found_ld.append(ld[ok])
        if not found_i or not sum(len(x) for x in found_i):
            empty = np.empty((0, 2), dtype=np.int64)
            return NegativePairs(empty, np.empty(0, np.int64), np.empty(0), np.empty((0, 2), np.int64), self.alpha)
        i, j, ld = np.concatenate(found_i), np.concatenate(found_j), np.concatenate(found_ld)
        node = ptp.tree.pair_node[order]
        p, q = np.minimum(node[i], node[j]), np.maximum(node[i], node[j])
        s = st[i]
        key = p * (int(node.max()) + 1) + q
        srt = ties.lexsort((ld, key))  # strongest detection first within each pair (equal: the first state)
        key, p, q, s, ld = key[srt], p[srt], q[srt], s[srt], ld[srt]
        first = np.r_[True, key[1:] != key[:-1]]
        pair_index = np.cumsum(first) - 1
        return NegativePairs(
            np.stack([p[first], q[first]], axis=1),
            s[first],
            ld[first],
            np.stack([pair_index, s], axis=1),
            self.alpha,
        )
