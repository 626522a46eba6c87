"""Rewards within a tolerance (docs/design/rewards-evidence.md, "Continuous noise"): reward
traces whose values scatter continuously around the machine's outputs, as in the stochastic
reward machines of Corazza, Gavran and Neider (AAAI 2022), whose Mining task pays e.g. 1 ± 0.1
or 1.5 ± 0.1 drawn uniformly.

A machine explains such traces when every observed reward lies within ``±δ`` of the machine's
output on that (word, letter). :class:`TolerantRewards` reduces this to the exact evidence of
:class:`~rmtk.traces.evidence.TraceRewards`, so the same clause family
(:func:`rmtk.sat.encoding.reward_outputs`), SAT core, symmetry breaking and listing apply:

1. the distinct observed values, sorted, fall into *groups*: neighbours at most ``2δ`` apart
   are one group (single linkage);
2. the reduction is exact when every group spans at most ``2δ`` (then consecutive groups are more
   than ``2δ`` apart): one output within ``±δ`` of two values of different groups is impossible,
   and any values of one group are within ``±δ`` of its *center* (the midrange, halfway between
   its smallest and largest value). So "some δ-output per (word, letter)" is "one group per
   (word, letter)", and each observation's value is replaced by its group's center;
3. a (word, letter) observed with values more than ``2δ`` apart has no δ-output at all: a
   :class:`~rmtk.errors.DataError` names it. Groups that span more than ``2δ`` (a chain of close
   values) are outside this reduction: a :class:`~rmtk.errors.DataError` says so and names the
   smallest larger δ that separates them.

``δ`` is given, or estimated (``delta=None``): the smallest δ at least half the widest spread of
one (word, letter)'s values that separates the values into groups (step 2). The estimate needs a
(word, letter) observed with two different values; data without one show no noise to estimate.

The noise level (:class:`NoiseWidth`, the result's ``noise``) is what the data say about the
spread around each output: the largest ``|r − center|``, and an interval for the noise
half-width under uniform noise (the paper's model): for ``n`` uniform draws on
``[μ − w, μ + w]`` the range ``R`` divided by ``2w`` is Beta(n − 1, 2), so ``w`` lies between
``R / (2 q_high)`` and ``R / (2 q_low)``, the Beta quantiles at the confidence (Bonferroni over
the outputs, so that the largest half-width's interval holds at the stated confidence); and
``|center − μ| ≤ w − R/2`` always, which bounds each mean.
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from .._arrays import array_eq, float_array, int_array
from ..data.rewards import REWARD_DECIMALS, RewardCounts
from ..errors import DataError, ModelError
from ..ptp.tree import Trie
from .evidence import TraceRewards, graft
from .rewards import RewardTraces

__all__ = ["NoiseWidth", "TolerantRewards", "fit_tolerance"]

#: Values are rounded to REWARD_DECIMALS places, so spreads and gaps are compared with this slack.
SLACK = 10.0**-REWARD_DECIMALS


def _check(delta, confidence) -> None:
    ok = isinstance(delta, (int, float)) and not isinstance(delta, bool) and math.isfinite(delta) and delta >= 0
    if delta is not None and not ok:
        raise ModelError(f"delta must be a finite number ≥ 0 (the noise half-width) or None, got {delta!r}")
    if not (isinstance(confidence, float) and 0 < confidence < 1):
        raise ModelError(f"confidence must be a number in (0, 1), got {confidence!r}")


@attrs.frozen
class NoiseWidth:
    """The spread of reward traces around the outputs of a tolerance fit.

    Attributes:
        delta: the tolerance used: every observed reward is within ``±delta`` of its output.
        estimated: whether ``delta`` was estimated (else given).
        centers: ``(J,)`` the outputs, ascending: each group's midrange.
        lows: ``(J,)`` the smallest observed value of each output's group.
        highs: ``(J,)`` the largest observed value of each output's group.
        counts: ``(J,)`` observed steps per output.
        width_low: ``(J,)`` the lower end of each output's noise half-width interval (uniform noise).
        width_high: ``(J,)`` its upper end (``inf`` for an output observed once).
        separating: ``(a, b)``: every δ in ``[a, b)`` gives the same outputs (``b`` may be ``inf``).
        confidence: of the intervals (jointly, by Bonferroni over the outputs).
    """

    delta: float
    estimated: bool
    centers: np.ndarray = attrs.field(converter=float_array, eq=array_eq)
    lows: np.ndarray = attrs.field(converter=float_array, eq=array_eq)
    highs: np.ndarray = attrs.field(converter=float_array, eq=array_eq)
    counts: np.ndarray = attrs.field(converter=int_array, eq=array_eq)
    width_low: np.ndarray = attrs.field(converter=float_array, eq=array_eq)
    width_high: np.ndarray = attrs.field(converter=float_array, eq=array_eq)
    separating: tuple[float, float]
    confidence: float = 0.95

    @property
    def max_deviation(self) -> float:
        """The largest ``|r − output|`` observed (half the widest group)."""
        return float(np.max(self.highs - self.lows) / 2) if len(self.centers) else 0.0

    @property
    def half_width(self) -> tuple[float, float]:
        """The interval for the largest noise half-width over the outputs."""
        if not len(self.centers):
            return 0.0, math.inf
        return float(self.width_low.max()), float(self.width_high.max())

    def mean_interval(self, j: int) -> tuple[float, float]:
        """An interval for output ``j``'s true mean: ``|center − μ| ≤ w − R/2`` with ``w`` below
        its interval's upper end."""
        slack = self.width_high[j] - (self.highs[j] - self.lows[j]) / 2
        return float(self.centers[j] - slack), float(self.centers[j] + slack)

    def __str__(self) -> str:
        pct = round(100 * self.confidence)
        lo, hi = self.half_width
        how = "estimated" if self.estimated else "given"
        outs = ", ".join(
            f"{c:.4g} ({n} steps, ±{(h - l) / 2:.4g})"
            for c, l, h, n in zip(self.centers.tolist(), self.lows.tolist(), self.highs.tolist(), self.counts.tolist())
        )
        return (
            f"rewards within ±{self.delta:.4g} ({how}; any δ in [{self.separating[0]:.4g}, "
            f"{self.separating[1]:.4g}) gives the same outputs); outputs {outs}; largest deviation "
            f"{self.max_deviation:.4g}; noise half-width (uniform) {pct}% interval {lo:.4g} to {hi:.4g}"
        )


def _pair_spreads(traces: RewardTraces) -> tuple[np.ndarray, np.ndarray]:
    """Per (word, letter) pair: its spread (largest minus smallest value) and its first row."""
    _, _, indptr = traces.pairs()
    if not traces.n_rows:
        return np.zeros(0), np.zeros(0, np.int64)
    first, last = indptr[:-1], indptr[1:] - 1  # rows of a pair are sorted by value
    return traces.value[last] - traces.value[first], first


def _groups(values: np.ndarray, tau: float) -> np.ndarray:
    """The group of each sorted distinct value: neighbours at most ``tau`` apart are one group."""
    return np.concatenate(([0], np.cumsum(np.diff(values) > tau + SLACK))).astype(np.int64)


def _spread(values: np.ndarray, group: np.ndarray) -> float:
    starts = np.flatnonzero(np.diff(group, prepend=-1))
    ends = np.append(starts[1:], len(values)) - 1
    return float(np.max(values[ends] - values[starts]))


def _separating(values: np.ndarray, tau: float) -> float:
    """The smallest ``τ' ≥ tau`` whose groups span at most ``τ'`` each: iterate τ ← the widest
    group's span (non-decreasing, and never past any such τ', so it stops at the smallest)."""
    while True:
        wide = _spread(values, _groups(values, tau))
        if wide <= tau + SLACK:
            return tau
        tau = wide


def _describe(traces: RewardTraces, row: int) -> str:
    word = " ".join(traces.word(row)) or "(the empty word)"
    return f"the word '{word}' followed by '{traces.propositions[int(traces.letter[row])]}'"


def fit_tolerance(traces: RewardTraces, delta: float | None = None, confidence: float = 0.95) -> NoiseWidth:
    """The outputs and noise level of ``traces`` within ``±delta`` (``None``: estimated), as the
    module docstring describes; :class:`~rmtk.errors.DataError` when no δ-output exists for some
    (word, letter), or the values are not separated into groups at this δ."""
    from scipy.special import betaincinv  # type: ignore[import-untyped]

    _check(delta, confidence)
    values = np.unique(traces.value)
    spreads, first = _pair_spreads(traces)
    widest = int(np.argmax(spreads)) if len(spreads) else -1
    if delta is None:
        if widest < 0 or spreads[widest] == 0:
            raise DataError(
                "cannot estimate the tolerance: no (word, letter) was observed with two different rewards, "
                "so the data show no noise to estimate; give delta (0 for exact rewards)"
            )
        tau = _separating(values, float(spreads[widest]))
    else:
        tau = 2 * float(delta)
        if widest >= 0 and spreads[widest] > tau + SLACK:
            row = int(first[widest])
            low, high = traces.value[row], traces.value[row] + spreads[widest]
            raise DataError(
                f"reward traces: {_describe(traces, row)} was paid from {low:.6g} to {high:.6g}, "
                f"{spreads[widest]:.6g} apart, more than 2δ = {tau:.6g}: no output lies within ±{delta:g} "
                f"of both; the smallest δ that covers every (word, letter) is {float(spreads.max()) / 2:.6g}"
            )
        wide = _spread(values, _groups(values, tau)) if len(values) else 0.0
        if wide > tau + SLACK:
            better = _separating(values, tau) / 2
            group = _groups(values, tau)
            starts = np.flatnonzero(np.diff(group, prepend=-1))
            ends = np.append(starts[1:], len(values)) - 1
            j = int(np.argmax(values[ends] - values[starts]))
            raise DataError(
                f"reward traces: δ = {delta:g} does not separate the rewards: the values from "
                f"{values[starts[j]]:.6g} to {values[ends[j]]:.6g} follow each other at most 2δ apart yet "
                f"span {values[ends[j]] - values[starts[j]]:.6g} > 2δ, so they are neither one output nor "
                f"several separated ones (rmtk's tolerance evidence needs separated groups); the smallest "
                f"larger δ that separates them is {better:.6g}"
            )
    group = _groups(values, tau) if len(values) else np.zeros(0, np.int64)
    J = int(group[-1]) + 1 if len(values) else 0
    lows = np.full(J, np.inf)
    highs = np.full(J, -np.inf)
    np.minimum.at(lows, group, values)
    np.maximum.at(highs, group, values)
    centers = (lows + highs) / 2
    row_group = group[np.searchsorted(values, traces.value)]
    counts = np.bincount(row_group, traces.count, minlength=J).astype(np.int64)
    ranges = highs - lows
    gaps = lows[1:] - highs[:-1]
    separating = (float(ranges.max()) / 2 if J else 0.0, float(gaps.min()) / 2 if J > 1 else math.inf)
    # per output, the range of n uniform draws over 2w is Beta(n - 1, 2)
    alpha = (1 - confidence) / max(int((counts >= 2).sum()), 1)
    width_low, width_high = np.zeros(J), np.full(J, np.inf)
    for j in np.flatnonzero(counts >= 2).tolist():
        n = float(counts[j])
        width_low[j] = ranges[j] / (2 * betaincinv(n - 1, 2, 1 - alpha / 2))
        width_high[j] = ranges[j] / (2 * betaincinv(n - 1, 2, alpha / 2))
    return NoiseWidth(
        tau / 2, delta is None, centers, lows, highs, counts, width_low, width_high, separating, confidence
    )


def within(traces: RewardTraces, fit: NoiseWidth) -> RewardTraces:
    """``traces`` with each value replaced by its output (the center of its group), one row per
    (word, letter, output), and ``fit`` attached as their ``tolerance``."""
    row_group = np.searchsorted(fit.lows, traces.value, side="right") - 1
    K = len(traces.propositions)
    r = RewardCounts.of(traces.node * K + traces.letter, fit.centers[row_group], traces.count)
    return attrs.evolve(traces, node=r.keys // K, letter=r.keys % K, value=r.values, count=r.counts, tolerance=fit)


@attrs.frozen
class TolerantRewards:
    """Reward traces from ``data`` (as :class:`~rmtk.traces.evidence.TraceRewards` reads them)
    where a machine explains an observed reward within ``±delta`` of its output: the
    RewardEvidence strategy for continuous noise (module docstring). ``delta=None``: estimated.
    The result's ``noise`` is the :class:`NoiseWidth`; the machine's rewards are the outputs."""

    data: object
    delta: float | None = None
    confidence: float = 0.95

    def __attrs_post_init__(self):
        _check(self.delta, self.confidence)

    def compressed(self) -> bool | None:
        return TraceRewards(self.data).compressed()

    def observe(self, target, trie: Trie | None, *, compress: bool = True) -> RewardTraces:
        traces = TraceRewards(self.data).observe(target, None, compress=compress)
        traces = within(traces, fit_tolerance(traces, self.delta, self.confidence))
        return traces if trie is None else graft(traces, trie)
