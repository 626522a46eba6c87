"""Rewards in demonstrations: the convention, the checks of a ``reward`` column, and
:class:`RewardCounts`, the observed rewards per (label word, next letter) that the counts
(:mod:`rmtk.ptp.empirical`) carry beside the action counts.

The convention is that of RL logs of ``(s, a, r, s')``: the reward of row ``t`` of a
trajectory is what its action earned, paid by the reward machine on the label of the next
row's state. With the prefix convention (docs/design/02-conventions.md, "The prefix convention"), the
machine is in ``u_t = δ_u*(u_I, L(s_0) … L(s_t))`` at row ``t`` and

    r_t = δ_r(u_t, L(s_{t+1})),

so row ``t``'s reward is evidence on the pair (label word ``L(s_0) … L(s_t)``, next letter
``L(s_{t+1})``). The last row of a trajectory has no next row: its reward is kept in the
files but is evidence only where the next state is known (:func:`rmtk.gym.collect` knows the
observation that ended an episode). NaN means "unknown" anywhere and is never evidence;
±∞ is refused. The machine's transition on the first label, ``δ_u(u_I, L(s_0))``, is taken
before any action, so no row's reward observes its ``δ_r``.

Equal rewards: values are rounded to :data:`REWARD_DECIMALS` decimal places
(:func:`round_rewards`), and rounded values are compared exactly, so ``0.1 + 0.2`` and
``0.3`` are one value. Rounding (not a tolerance between neighbours) keeps the merge of
partial counts associative: the same rewards give the same buckets whatever the chunks,
partitions, engine or order. Two values within ``10⁻⁹`` of each other that straddle a
rounding boundary stay two values, as at any threshold.
"""

from __future__ import annotations

import attrs
import numpy as np

from .._arrays import array_eq, float_array, int_array
from ..errors import DataError

#: Rewards are rounded to this many decimal places before they are compared.
REWARD_DECIMALS = 9


def round_rewards(values) -> np.ndarray:
    """``values`` as float64 rounded to :data:`REWARD_DECIMALS` places (−0 becomes 0; NaN stays)."""
    return np.round(np.asarray(values, dtype=np.float64), REWARD_DECIMALS) + 0.0


def nan_array_eq(a, b) -> bool:
    """Equality of optional float arrays, NaN equal to NaN."""
    if a is None or b is None:
        return a is None and b is None
    return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=True))


def first_infinite(values: np.ndarray) -> int | None:
    """The index of the first ±∞ in a float array (None when there is none)."""
    bad = np.isinf(values)
    return int(np.argmax(bad)) if bad.any() else None


def some_known(rewards: np.ndarray, where: str) -> None:
    """Refuse a reward column that exists but records nothing: every value unknown (empty,
    null or NaN). Kept, it would read as "with rewards" and teach a machine from none;
    ``where`` names the file and the column."""
    if not (~np.isnan(rewards)).any():
        raise DataError(
            f"{where} holds no reward: every value is unknown (empty, null or nan); record the rewards, or drop "
            "the column to learn from the policy alone"
        )


def parse_rewards(values, src: str, lines: np.ndarray) -> np.ndarray:
    """A text column of rewards as float64: decimal numbers (``1``, ``-0.5``, ``1e-3``),
    ``nan`` or an empty field for "unknown". A value that is not a number, or is infinite,
    raises :class:`DataError` naming ``src`` and the line (``lines[j]`` for value ``j``)."""
    # each distinct text is parsed once (a reward column has few distinct values, as a rule)
    table: dict[str, float] = {}
    for v in dict.fromkeys(values):
        text = v.strip()
        try:
            table[v] = float(text) if text else np.nan
        except ValueError:
            raise DataError(f"{src}:{lines[list(values).index(v)]}: reward {v!r} is not a number") from None
    out = np.fromiter(map(table.__getitem__, values), dtype=np.float64, count=len(values))
    inf = first_infinite(out)
    if inf is not None:
        raise DataError(f"{src}:{lines[inf]}: reward {values[inf]!r} is infinite; a reward is a finite number or nan")
    return out


def format_rewards(values: np.ndarray) -> list[str]:
    """Rewards as CSV text: ``repr`` of each float (exact round trip), empty for NaN."""
    return ["" if v != v else repr(v) for v in values.tolist()]


@attrs.frozen
class RewardCounts:
    """Observed rewards per (trie node, next letter): ``keys`` are ``node·K + letter``
    (``K`` propositions), ``values`` the rounded rewards (:func:`round_rewards`), ``counts``
    how often each (key, value) was observed; rows sorted by key, then value, each
    (key, value) once. A key with two values is a noisy (or contradictory) observation: both
    are kept with their counts."""

    keys: np.ndarray = attrs.field(converter=int_array, eq=array_eq)
    values: np.ndarray = attrs.field(converter=float_array, eq=array_eq)
    counts: np.ndarray = attrs.field(converter=int_array, eq=array_eq)

    def __attrs_post_init__(self):
        if not len(self.keys) == len(self.values) == len(self.counts):
            raise DataError(
                f"reward counts: {len(self.keys)} keys, {len(self.values)} values and {len(self.counts)} counts"
            )

    @classmethod
    def empty(cls) -> RewardCounts:
        return cls(np.zeros(0, np.int64), np.zeros(0), np.zeros(0, np.int64))

    @classmethod
    def of(cls, keys, values, counts=None) -> RewardCounts:
        """The distinct (key, rounded value) pairs of observations and their summed counts
        (one each when ``counts`` is None); NaN values are dropped."""
        keys = np.asarray(keys, dtype=np.int64)
        values = round_rewards(values)
        ones = counts is None
        counts = np.ones(len(keys), np.int64) if counts is None else np.asarray(counts, dtype=np.int64)
        known = ~np.isnan(values)
        if not known.all():
            keys, values, counts = keys[known], values[known], counts[known]
        if not len(keys):
            return cls.empty()
        # one integer code per (key, value): key·m + the value's rank among the m distinct values
        distinct = np.unique(values)
        m = len(distinct)
        top = int(keys.max()) + 1
        if top > (1 << 62) // m:  # codes would overflow: sort the pairs instead
            order = np.lexsort((values, keys))
            keys, values, counts = keys[order], values[order], counts[order]
            new = np.ones(len(keys), dtype=bool)
            new[1:] = (keys[1:] != keys[:-1]) | (values[1:] != values[:-1])
            starts = np.flatnonzero(new)
            return cls(keys[starts], values[starts], np.add.reduceat(counts, starts))
        code = keys * m + (np.searchsorted(distinct, values) if m > 1 else 0)
        if top * m <= max(4 * len(code), 1 << 16):  # a histogram: linear time
            hist = np.bincount(code, None if ones else counts, minlength=top * m).astype(np.int64)
            uniq = np.flatnonzero(hist)
            summed = hist[uniq]
        else:
            order = np.argsort(code, kind="stable")
            code, counts = code[order], counts[order]
            starts = np.flatnonzero(np.concatenate(([True], code[1:] != code[:-1])))
            uniq, summed = code[starts], np.add.reduceat(counts, starts)
        return cls(uniq // m, distinct[uniq % m], summed)

    @property
    def n_observations(self) -> int:
        return int(self.counts.sum())

    def merge(self, other: RewardCounts) -> RewardCounts:
        """Both tables' observations (associative and commutative)."""
        return RewardCounts.of(
            np.concatenate([self.keys, other.keys]),
            np.concatenate([self.values, other.values]),
            np.concatenate([self.counts, other.counts]),
        )

    def renumbered(self, node_map: np.ndarray, n_letters: int) -> RewardCounts:
        """The same observations with trie node ``p`` renamed ``node_map[p]``."""
        keys = node_map[self.keys // n_letters] * n_letters + self.keys % n_letters
        return RewardCounts.of(keys, self.values, self.counts)


def final_rewards(node, final_labels, lengths, rewards, T: int, n_letters: int) -> tuple[np.ndarray, np.ndarray]:
    """``(node·K + final label, reward)`` of the last steps of the trajectories whose last
    step is counted (``lengths ≤ T``) and whose next label ``final_labels[i]`` is known
    (≥ 0); ``node[i]``: the trie node of trajectory ``i``'s whole word."""
    final_labels = np.asarray(final_labels, dtype=np.int64)
    if final_labels.shape != lengths.shape:
        raise DataError(f"final_labels has shape {final_labels.shape}, expected {lengths.shape}, one per trajectory")
    if final_labels.size and final_labels.max() >= n_letters:
        raise DataError(f"final label {int(final_labels.max())} is not a proposition index 0..{n_letters - 1}")
    ok = np.flatnonzero((final_labels >= 0) & (lengths <= T))
    return node[ok] * n_letters + final_labels[ok], rewards[ok, lengths[ok] - 1]


def merge_rewards(a: RewardCounts | None, b: RewardCounts | None) -> RewardCounts | None:
    """The reduce of optional reward tables: None only when both are; data with rewards and
    data without are refused (a count would silently mix them)."""
    if a is None and b is None:
        return None
    if a is None or b is None:
        raise DataError("cannot merge counts of data with rewards and counts of data without rewards")
    return a.merge(b)
