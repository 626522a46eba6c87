"""Anytime-valid comparisons that adapt to the counts, and negative examples mined with them
(docs/design/14-sampled-experts.md).

The bounds of :mod:`rmtk.negatives.statistics` are Hoeffding-type: their radius depends on the counts
only, as if every action frequency had the largest variance. An expert that is nearly
deterministic (a sharp one) then pays for variance it does not have: two histories after which
it takes the same action 97 % of the time are resolved to a total variation of 0.1 only after
about 10,000 draws a side with :class:`~rmtk.negatives.statistics.Mixture`. The bound here adapts:

* :class:`Binomial`: for each action a, Robbins' beta-binomial mixture of likelihood ratios
  (a Jeffreys prior, Beta(½, ½)) is a nonnegative martingale under the true frequency p_a, so by
  Ville's inequality the set ``{p : B(½ + S, ½ + n − S)/B(½, ½) < level·p^S (1 − p)^(n−S)}``
  (S draws of a among n) contains p_a at every n at once with probability at least 1 − level.
  Its width follows the frequency's own variance: about ``log(1/level)/n`` for a frequency near
  0 or 1, about ``√(2p(1 − p)·log(1/level)/n)`` otherwise.
* :class:`Adaptive` (the loop's bound): the intersection of :class:`Binomial` (one interval per
  action, a union over the actions) and :class:`~rmtk.negatives.statistics.Mixture` (a union over the
  action subsets, better for spread distributions over many actions), each at α/2, each side of
  a comparison at half of that. On the event that every interval holds, the total variation
  ``TV(p, q) = Σ_a (p_a − q_a)⁺ = Σ_a max(p_a, q_a) − 1 = 1 − Σ_a min(p_a, q_a)`` lies in
  ``[lower, upper]``, each of these forms read at the ends of the intervals that make it
  smallest (lower: e.g. ``Σ_a (l_a − u'_a)⁺``, ``Σ_a max(l_a, l'_a) − 1``) or largest (upper:
  e.g. ``Σ_a max(u_a, u'_a) − 1``, ``1 − Σ_a min(l_a, l'_a)``), and within ``tv̂ ± w`` of the
  mixture, at every sample size at once with probability at least 1 − α.

A comparison (:class:`Interval`) is *separated* when ``lower`` is positive (its ``margin``, the
widest gap between two intervals of one action or ``tv̂ − w``, is positive): two equal
distributions are separated with probability at most α, however long they are sampled and
looked at. One that is not separated has ``TV ≤ upper`` with confidence 1 − α: its
*resolution* is ``upper``, "no difference ≥ upper found". :class:`AnytimeMiner` mines negative
examples with it, as :class:`~rmtk.negatives.miners.ConfidenceMiner` does with the paper's
fixed-sample bound, which is invalid for counts gathered while looking at them.
"""

from __future__ import annotations

import functools
import math

import attrs
import numpy as np

from .. import ties
from ..errors import ModelError
from ..ptp.tree import PrefixTree, PrefixTreePolicy
from .miners import ConfidenceMiner, NegativePairs
from .statistics import Mixture, compare, draws_to_resolve, total_variation

__all__ = ["Binomial", "Adaptive", "Interval", "Rows", "AnytimeMiner", "FamilyWise", "FirmRows", "row_weights"]

_TINY = 1e-300
_ROUNDS = 64  # bisection steps: intervals to 2⁻⁶⁴ of the unit interval


def _arr(x) -> np.ndarray:
    return np.asarray(x, dtype=float)


def _log_ratio(prior: float, s: np.ndarray, n: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Log of the beta-binomial mixture over the likelihood at frequency ``p``: the martingale
    whose level sets are the confidence sequence (elementwise)."""
    return _LogRatio.of(prior, s, n)(p)


@attrs.frozen
class _LogRatio:
    """:func:`_log_ratio` of fixed counts, as a function of ``p``: the mixture's part, which
    does not depend on ``p``, computed once for the bisections that call it 64 times (the same
    operations in the same order, so the same values)."""

    s: np.ndarray
    rest: np.ndarray  # n − s
    mixture: np.ndarray  # betaln(prior + s, prior + n − s) − betaln(prior, prior)

    @classmethod
    def of(cls, prior: float, s: np.ndarray, n: np.ndarray) -> _LogRatio:
        from scipy.special import betaln  # here: scipy.special takes 0.1 s to import, most runs ask no sampled expert

        return cls(s, n - s, betaln(prior + s, prior + n - s) - betaln(prior, prior))

    def __call__(self, p: np.ndarray) -> np.ndarray:
        p = np.minimum(np.maximum(p, _TINY), 1.0 - 1e-16)  # np.clip's values, without its wrapper
        return self.mixture - self.s * np.log(p) - self.rest * np.log1p(-p)


@attrs.frozen
class Binomial:
    """Per-action anytime-valid confidence intervals (module docstring): ``intervals(counts,
    level)`` holds for every action of a row at every sample size with probability at least
    1 − ``level`` (each action at ``level/A``). ``prior``: the Beta(prior, prior) mixture
    (½: Jeffreys, tightest near frequencies 0 and 1)."""

    prior: float = attrs.field(default=0.5)
    anytime: bool = attrs.field(default=True, init=False)

    @prior.validator
    def _check_prior(self, attribute, value):
        if not (value > 0 and math.isfinite(value)):
            raise ModelError(f"Binomial(prior={value}): prior must be a positive number")

    def intervals(self, counts, level) -> tuple[np.ndarray, np.ndarray]:
        """``(lower, upper)`` of every action's frequency, rows of action counts ``(..., A)``
        (a row with no draw: ``[0, 1]``); ``level``: one for all rows, or one per row (shape
        ``(...)``). Computed once per distinct (draws, row total, level)."""
        counts = _arr(counts)
        A = counts.shape[-1]
        n = np.broadcast_to(counts.sum(axis=-1, keepdims=True), counts.shape)
        bar = np.broadcast_to(np.log(A / _arr(level))[..., None], counts.shape)
        s, n, bar = counts.ravel(), n.ravel(), bar.ravel()
        # the distinct (draws, total, level) triples: a lexsort (numpy.unique along an axis
        # sorts byte strings, several times slower on the reacher's hundreds of thousands)
        order = np.lexsort((s, n, bar))
        s_, n_, b_ = s[order], n[order], bar[order]
        first = np.r_[True, (s_[1:] != s_[:-1]) | (n_[1:] != n_[:-1]) | (b_[1:] != b_[:-1])]
        inv = np.empty(len(order), np.int64)
        inv[order] = np.cumsum(first) - 1
        lo, hi = self._solve(s_[first], n_[first], b_[first])
        return lo[inv].reshape(counts.shape), hi[inv].reshape(counts.shape)

    def _solve(self, s: np.ndarray, n: np.ndarray, bar: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The frequencies whose mixture stays below ``exp(bar)``, by bisection on each side of
        the empirical frequency (the log ratio is convex in p and ≤ 0 there)."""
        seen = n > 0
        p_hat = np.where(seen, s / np.where(seen, n, 1.0), 0.5)
        m = len(p_hat)
        # both ends bisected at once: the lower end lies in (out, inn] = (0, p̂], the upper end in
        # [inn, out) = [p̂, 1); each step moves ``inn`` (a frequency inside the set) or ``out``
        inn = np.concatenate([p_hat, p_hat])
        out = np.concatenate([np.zeros_like(p_hat), np.ones_like(p_hat)])
        ratio = _LogRatio.of(self.prior, np.concatenate([s, s]), np.concatenate([n, n]))
        bar2 = np.concatenate([bar, bar])
        for _ in range(_ROUNDS):
            mid = (out + inn) / 2
            inside = ratio(mid) < bar2
            inn, out = np.where(inside, mid, inn), np.where(inside, out, mid)
        lower = np.where(seen & (s > 0), out[:m], 0.0)  # outside the set, a hair below its end
        upper = np.where(seen & (s < n), out[m:], 1.0)
        return lower, upper

    def separation(self, s1, n1, s2, n2) -> np.ndarray:
        """``min_p max(log ratio₁(p), log ratio₂(p))`` of each action: the two intervals are
        disjoint exactly at the levels below ``exp(−·)`` (elementwise; bisection between the two
        empirical frequencies, where the two log ratios cross)."""
        s1, n1, s2, n2 = np.broadcast_arrays(_arr(s1), _arr(n1), _arr(s2), _arr(n2))
        p1 = np.where(n1 > 0, s1 / np.where(n1 > 0, n1, 1.0), 0.5)
        p2 = np.where(n2 > 0, s2 / np.where(n2 > 0, n2, 1.0), 0.5)
        lo, hi = np.minimum(p1, p2), np.maximum(p1, p2)
        rising = p1 <= p2  # on [lo, hi] ratio₁ rises and ratio₂ falls when p1 is below p2
        ratio1, ratio2 = _LogRatio.of(self.prior, s1, n1), _LogRatio.of(self.prior, s2, n2)
        for _ in range(_ROUNDS):
            mid = (lo + hi) / 2
            diff = ratio1(mid) - ratio2(mid)
            right = np.where(rising, diff < 0, diff > 0)  # the crossing lies right of mid
            lo, hi = np.where(right, mid, lo), np.where(right, hi, mid)
        p = (lo + hi) / 2
        return np.maximum(ratio1(p), ratio2(p))


@attrs.frozen
class Interval:
    """Many comparisons from a bound that adapts to the counts (arrays of one length): the
    counts ``n1``, ``n2``, the empirical total variation ``tv``, a confidence interval
    ``[lower, upper]`` of the true one at level ``alpha`` valid at every sample size, and the
    ``margin`` (signed; positive when separated: how far the intervals are apart, or, negative,
    how far they overlap)."""

    n1: np.ndarray
    n2: np.ndarray
    tv: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    margin: np.ndarray
    alpha: float
    anytime: bool = True

    def __len__(self) -> int:
        return len(self.tv)

    @property
    def separated(self) -> np.ndarray:
        """The two distributions differ, at confidence 1 − α (a margin within
        :data:`rmtk.ties.TOL` of 0 reaches it: docs/design/02-conventions.md)."""
        return ties.at_most(0.0, self.margin)

    @property
    def consistent_with_zero(self) -> np.ndarray:
        return ~self.separated

    @property
    def resolution(self) -> np.ndarray:
        """What a comparison that is not separated resolved, ``TV ≤ upper`` at confidence
        1 − α ("no difference ≥ upper found"; 1 when nothing was resolved)."""
        return self.upper


@attrs.frozen
class Rows:
    """Rows of action counts prepared for many comparisons among them (per-row intervals and
    radii computed once): ``compare`` of row pairs ``i``, ``j``."""

    bound: Adaptive
    counts: np.ndarray
    n: np.ndarray
    low: np.ndarray
    high: np.ndarray
    alpha: float

    def compare(self, i, j) -> Interval:
        i, j = np.asarray(i, np.int64), np.asarray(j, np.int64)
        a, b = self.counts[i], self.counts[j]
        l1, u1, l2, u2 = self.low[i], self.high[i], self.low[j], self.high[j]
        m = compare(a, b, alpha=self.alpha / 2, bound=self.bound.mixture)
        gap = np.maximum((l1 - u2).max(axis=-1), (l2 - u1).max(axis=-1))
        # TV = Σ_a (p_a − q_a)⁺ = Σ_a max(p_a, q_a) − 1 = 1 − Σ_a min(p_a, q_a), each read at the
        # ends of the intervals that make it smallest (lower) or largest (upper)
        lower = np.maximum.reduce(
            [
                (l1 - u2).clip(0).sum(axis=-1),
                (l2 - u1).clip(0).sum(axis=-1),
                np.maximum(l1, l2).sum(axis=-1) - 1.0,
                1.0 - np.minimum(u1, u2).sum(axis=-1),
                m.lower,
            ]
        )
        upper = np.minimum.reduce(
            [
                (u1 - l2).clip(0).sum(axis=-1),
                (u2 - l1).clip(0).sum(axis=-1),
                np.maximum(u1, u2).sum(axis=-1) - 1.0,
                1.0 - np.minimum(l1, l2).sum(axis=-1),
                m.upper,
            ]
        )
        return Interval(
            self.n[i],
            self.n[j],
            m.tv,
            np.clip(lower, 0, 1),
            np.clip(upper, 0, 1),
            np.maximum(gap, m.margin),
            self.alpha,
        )

    def log_level(self, i, j) -> np.ndarray:
        """Log of the smallest level α' at which each pair is separated (like the paper's
        ``log(δ₁ + δ₂)``; smaller is stronger): the lower of the two parts', each at α'/2."""
        i, j = np.asarray(i, np.int64), np.asarray(j, np.int64)
        A = self.counts.shape[-1]
        a, b = self.counts[i], self.counts[j]
        na, nb = self.n[i][:, None], self.n[j][:, None]
        m = self.bound.binomial.separation(a, na, b, nb).max(axis=-1)
        log_b = math.log(4 * A) - m  # each action at α'/(4A): α'/2 for the part, α'/4 a side
        tv = total_variation(a, b)
        lo, hi = np.full(len(i), -745.0), np.zeros(len(i))
        for _ in range(_ROUNDS):  # the mixture part: its threshold at α'/2 falls as α' grows
            mid = (lo + hi) / 2
            thr = self.bound.mixture.threshold(self.n[i], self.n[j], A, np.exp(mid) / 2)
            ok = ties.at_most(thr, tv)
            hi, lo = np.where(ok, mid, hi), np.where(ok, lo, mid)
        return np.minimum(log_b, hi)


@attrs.frozen
class Adaptive:
    """The bound of counts gathered while looking (module docstring): :class:`Binomial` and
    :class:`~rmtk.negatives.statistics.Mixture` intersected, each at α/2; anytime-valid."""

    binomial: Binomial = attrs.field(factory=Binomial)
    mixture: Mixture = attrs.field(factory=Mixture)
    anytime: bool = attrs.field(default=True, init=False)

    def prepare(self, counts, alpha: float) -> Rows:
        """Rows of counts ``(m, A)`` ready for comparisons at level ``alpha``."""
        counts = np.atleast_2d(_arr(counts))
        low, high = self.binomial.intervals(counts, alpha / 4)  # α/2 for the part, half a side
        return Rows(self, counts, counts.sum(axis=-1), low, high, float(alpha))

    def compare(self, counts1, counts2, *, alpha: float) -> Interval:
        """:class:`Interval` of rows of counts ``(..., A)``, one comparison per row."""
        a, b = np.atleast_2d(_arr(counts1)), np.atleast_2d(_arr(counts2))
        rows = self.prepare(np.vstack([a, b]), alpha)
        k = len(a)
        return rows.compare(np.arange(k), k + np.arange(len(b)))

    def to_resolve(self, counts1, counts2, target, *, alpha: float) -> tuple[np.ndarray, np.ndarray]:
        """Further draws ``(m1, m2)`` on each side after which the resolution would be at most
        ``target`` if the frequencies stayed what they are (both sides raised to one count),
        never more than the :class:`~rmtk.negatives.statistics.Mixture` part needs whatever the
        frequencies (its resolution depends on the counts only). ``inf`` where nothing can
        reach ``target``."""
        a, b = np.atleast_2d(_arr(counts1)), np.atleast_2d(_arr(counts2))
        n1, n2 = a.sum(axis=-1), b.sum(axis=-1)
        target = np.broadcast_to(_arr(target), n1.shape)
        A = a.shape[-1]
        w1, w2 = draws_to_resolve(n1, n2, target, A, alpha=alpha / 2, bound=self.mixture)
        cap = np.maximum(n1 + w1, n2 + w2)  # the common count the mixture part needs at most
        seen = (n1 > 0) & (n2 > 0)
        fa = a / np.where(n1 > 0, n1, 1.0)[:, None]
        fb = b / np.where(n2 > 0, n2, 1.0)[:, None]

        def ok(level):
            lv = np.maximum(level, np.maximum(n1, n2))[:, None]
            return seen & ties.at_most(self.compare(fa * lv, fb * lv, alpha=alpha).upper, target)

        hi = np.where(np.isfinite(cap), cap, 0.0)
        good = ok(hi)
        lo = np.maximum(n1, n2)
        level = hi.copy()
        live = good & ~ok(lo)
        for _ in range(60):  # bisection on the common count, where the plug-in gets there
            if not np.any(live & (level - lo > 1)):
                break
            mid = np.floor((lo + level) / 2)
            fine = ok(mid)
            level, lo = np.where(live & fine, mid, level), np.where(live & ~fine, mid, lo)
        level = np.where(live, level, np.where(good, np.maximum(n1, n2), cap))
        return np.maximum(0.0, level - n1), np.maximum(0.0, level - n2)


_TAIL = 10**6  # the spending sum is added up to here; beyond, by its integral


@functools.cache
def _spending_total() -> float:
    """``Σ_{m ≥ 2} 1/(m·ln² m)``, from above: the sum to :data:`_TAIL` plus the integral of the
    rest (``1/ln(_TAIL)``; the terms fall, so the integral bounds the tail)."""
    m = np.arange(2, _TAIL + 1, dtype=float)
    return float((1.0 / (m * np.log(m) ** 2)).sum() + 1.0 / math.log(_TAIL))


def row_weights(index) -> np.ndarray:
    """The share of a run's level spent on the row asked ``index``-th (0 first): proportional to
    ``1/((r + 2)·ln²(r + 2))``, summing to at most 1 over every row a run could ever ask, so the
    level a late row pays grows only like ``log r + 2 log log r`` (docs/design/14-sampled-experts.md, section 14.1)."""
    m = np.asarray(index, dtype=float) + 2.0
    return 1.0 / (_spending_total() * m * np.log(m) ** 2)


@attrs.frozen
class FamilyWise:
    """Separation that holds for a whole run at once (docs/design/14-sampled-experts.md, section 14.1). Each
    comparison of :class:`Adaptive` holds at level α on its own; a run compares thousands of
    pairs, so a few of its negative examples may be false. Here the level is spent per *row*
    (a history at a state) instead of per pair: the row asked ``r``-th gets its intervals at
    ``alpha·w_r`` (:func:`row_weights`, ``Σ w_r ≤ 1``; half to its per-action intervals, half
    to its :class:`~rmtk.negatives.statistics.Mixture` radius), read on its answers alone (the caller's
    counts; recorded counts were seen before the row was ranked). The order is the order of
    first asking, fixed before the row's first answer, and every interval is anytime-valid, so with probability
    at least 1 − ``alpha`` every row's intervals hold at every moment of the run, and no pair
    that :meth:`firm` separates is alike: all such negative examples hold at once."""

    alpha: float = 0.05
    bound: Adaptive = attrs.field(factory=Adaptive)

    def __attrs_post_init__(self):
        if not 0 < self.alpha < 1:
            raise ModelError(f"FamilyWise(alpha={self.alpha}): alpha must lie in (0, 1)")

    def levels(self, index) -> np.ndarray:
        """The level of each row asked ``index``-th."""
        return self.alpha * row_weights(index)

    def firm(self, counts1, counts2, index1, index2) -> np.ndarray:
        """Which pairs of rows of action counts ``(m, A)``, asked ``index1``-th and
        ``index2``-th, are separated with every row's interval at its level: an action whose
        intervals are disjoint, or an empirical total variation beyond the two mixture radii
        (as :attr:`Interval.separated`, a margin within :data:`rmtk.ties.TOL` of 0 reaching it)."""
        a, b = np.atleast_2d(_arr(counts1)), np.atleast_2d(_arr(counts2))
        rows = self.prepare(np.vstack([a, b]), np.concatenate([np.ravel(index1), np.ravel(index2)]))
        return rows.firm(np.arange(len(a)), len(a) + np.arange(len(b)))

    def prepare(self, counts, index) -> FirmRows:
        """Rows of counts ``(m, A)``, asked ``index``-th, ready for many comparisons."""
        counts = np.atleast_2d(_arr(counts))
        level = self.levels(index)
        low, high = self.bound.binomial.intervals(counts, level / 2)
        radius = self.bound.mixture.radius(counts.sum(axis=-1), counts.shape[-1], level / 2)
        return FirmRows(counts, low, high, radius)


@attrs.frozen
class FirmRows:
    """Rows of counts with their family-wise intervals and radii (:meth:`FamilyWise.prepare`)."""

    counts: np.ndarray
    low: np.ndarray
    high: np.ndarray
    radius: np.ndarray

    def firm(self, i, j) -> np.ndarray:
        """Which row pairs ``i``, ``j`` :class:`FamilyWise` separates."""
        i, j = np.asarray(i, np.int64), np.asarray(j, np.int64)
        l1, u1, l2, u2 = self.low[i], self.high[i], self.low[j], self.high[j]
        gap = np.maximum((l1 - u2).max(axis=-1), (l2 - u1).max(axis=-1))
        tv = total_variation(self.counts[i], self.counts[j])
        return ties.at_most(0.0, np.maximum(gap, tv - (self.radius[i] + self.radius[j]) / 2))


def _asked_pairs(state: np.ndarray, keep: np.ndarray, asked: np.ndarray):
    """Every pair of rows of ``keep`` at one state with at least one ``asked`` row: ``(i, j)``
    row indices, each pair once."""
    order = keep[np.argsort(state[keep], kind="stable")]
    st = state[order]
    if not len(st):
        return np.empty(0, np.int64), np.empty(0, np.int64)
    starts = np.flatnonzero(np.r_[True, st[1:] != st[:-1]])
    ends = np.r_[starts[1:], len(st)]
    block = np.cumsum(np.r_[True, st[1:] != st[:-1]]) - 1  # the state block of each sorted row
    rows = np.flatnonzero(asked[order])
    lo, hi = starts[block[rows]], ends[block[rows]]
    cnt = hi - lo
    i = np.repeat(rows, cnt)
    j = np.repeat(lo, cnt) + (np.arange(cnt.sum()) - np.repeat(np.cumsum(cnt) - cnt, cnt))
    ok = (i != j) & (~asked[order][j] | (i < j))  # an asked pair once, a pair with itself never
    return order[i[ok]], order[j[ok]]


@attrs.frozen
class AnytimeMiner:
    """Negative examples from counts an active learner gathered while looking at them: the
    pairs of (word, state) rows at one state that ``bound`` (:class:`Adaptive`) separates at
    level ``alpha``, each word pair once, at the state where the evidence is strongest
    (``log_delta``: the log of the smallest level at which it is separated, :meth:`Rows.log_level`).
    Valid at every sample size, so the learner may ask until it likes; two equal distributions
    give a negative example with probability at most ``alpha``. Rows ``fixed`` (recorded and
    never asked: their counts were not chosen by looking at them) are compared among themselves
    with the paper's rule (:class:`~rmtk.negatives.miners.ConfidenceMiner`, which passive learning
    uses); a pair with an asked row, always with ``bound``."""

    alpha: float = 0.05
    bound: Adaptive = attrs.field(factory=Adaptive)
    batch: int = 4_000_000

    def __attrs_post_init__(self):
        if not 0 < self.alpha < 1:
            raise ModelError(f"alpha must lie in (0, 1), got {self.alpha}")

    def min_count(self, n_actions: int) -> float:
        """A pair seen once can be separated from one seen often (an action the other never
        takes): nothing is pruned but unvisited rows."""
        return 1.0

    def mine(self, ptp, fixed: np.ndarray | None = None) -> NegativePairs:
        counts = ptp.counts
        if counts is None:
            raise ModelError(
                "AnytimeMiner needs an empirical prefix tree policy (action counts); for an exact one use ExactMiner"
            )
        counts = np.asarray(counts, dtype=float)
        n_rows = len(counts)
        fixed = np.zeros(n_rows, bool) if fixed is None else np.asarray(fixed, bool)
        node, state = np.asarray(ptp.tree.pair_node), np.asarray(ptp.tree.pair_state)
        parts = []
        if fixed.sum() >= 2:  # recorded rows among themselves: the paper's rule
            sub = PrefixTreePolicy(
                PrefixTree(ptp.trie, node[fixed], state[fixed], ptp.tree.depth),
                np.zeros((int(fixed.sum()), counts.shape[1])),
                counts=counts[fixed].astype(np.int64),
            )
            neg = ConfidenceMiner(self.alpha, self.batch).mine(sub)
            parts.append((neg.pairs[:, 0], neg.pairs[:, 1], neg.state, neg.log_delta))
        keep = np.flatnonzero(counts.sum(axis=1) > 0)
        i, j = _asked_pairs(state, keep, ~fixed)
        if len(i):
            rows = self.bound.prepare(counts, self.alpha)
            hit_i, hit_j = [], []
            step = max(1, self.batch // counts.shape[1])  # about `batch` numbers a slice
            for lo in range(0, len(i), step):
                a, b = i[lo : lo + step], j[lo : lo + step]
                ok = rows.compare(a, b).separated
                hit_i.append(a[ok])
                hit_j.append(b[ok])
            i, j = np.concatenate(hit_i), np.concatenate(hit_j)
            if len(i):
                parts.append((node[i], node[j], state[i], np.minimum(rows.log_level(i, j), 0.0)))
        return _negatives(parts, self.alpha)


def _negatives(parts, alpha: float) -> NegativePairs:
    """Detections ``(node, node, state, log_delta)`` as :class:`NegativePairs`: each word pair
    once, at its strongest detection (equal: the lowest state)."""
    if not parts or not sum(len(x[0]) for x in parts):
        empty = np.empty((0, 2), dtype=np.int64)
        return NegativePairs(empty, np.empty(0, np.int64), np.empty(0), empty, alpha)
    u, v, s, ld = (np.concatenate([np.asarray(x[k]) for x in parts]) for k in range(4))
    p, q = np.minimum(u, v).astype(np.int64), np.maximum(u, v).astype(np.int64)
    s = s.astype(np.int64)
    key = p * (int(q.max()) + 1) + q
    srt = ties.lexsort((s, ld, key))  # strongest detection first within each pair
    key, p, q, s, ld = key[srt], p[srt], q[srt], s[srt], ld[srt]
    first = np.r_[True, key[1:] != key[:-1]]
    pair_index = np.cumsum(first) - 1
    return NegativePairs(
        np.stack([p[first], q[first]], axis=1), s[first], ld[first], np.stack([pair_index, s], axis=1), alpha
    )
