"""Comparing two sampled action distributions (docs/design/14-sampled-experts.md): the test, what it
could resolve, and how many more samples a finer answer needs.

An expert that is run shows, after each of two histories at a common state, counts of the
actions it drew. Whether it acts differently there is a question about the total variation
``TV(p, q) = ½‖p − q‖₁`` of two categorical distributions known only through samples. Every
such comparison in rmtk goes through this module, vectorised over arrays of pairs (the
reacher compares millions).

**Radii.** A :class:`Radius` bounds the L1 deviation of one empirical distribution from the
truth: ``P(‖p̂ₙ − p‖₁ ≥ r(n, level)) ≤ level``. Both radii here take the union over the
subsets B of actions (``‖p̂ − p‖₁ = 2·max_B (p̂(B) − p(B))``, 2^|A| − 2 subsets) of a
Hoeffding-type bound on each subset's frequency:

* :class:`Weissman` holds at one sample size fixed in advance (``(2^|A| − 2)·exp(−n r²/2)``,
  the bound of the paper's eq. 18-19): for data recorded before looking at them;
* :class:`Mixture` holds at every sample size at once (an anytime-valid confidence sequence):
  for each complementary pair of subsets, the frequency's centred sum ``S_n`` (increments in
  [−1, 1]/2, sub-Gaussian with variance factor 1/4) makes
  ``exp(λS_n − λ²n/8)`` a supermartingale for every λ; averaging over λ ~ N(0, 1/ρ) gives
  ``sqrt(ρ/(V+ρ))·exp(S_n²/(2(V+ρ)))`` with ``V = n/4``, and Ville's inequality bounds the chance
  that it ever exceeds 1/level. So ``|S_n| < sqrt((V+ρ)·log((V+ρ)/(ρ·level²)))`` at every n
  simultaneously, which is what lets a learner look at the counts after every draw and stop
  when it likes. The price is a ``log n`` term: 10 to 30 % wider than :class:`Weissman` from
  10 to 10⁵ draws (ρ = 1, four actions).

**The test** at level α: with radii r₁, r₂ at α/2 each, ``TV(p, q)`` lies in
``[tv̂ − w, tv̂ + w]``, ``w = (r₁ + r₂)/2``, with probability at least 1 − α (at every n
for :class:`Mixture`). The two distributions are *separated* when the empirical total
variation reaches the bound's threshold (``w`` for :class:`Mixture`; for :class:`Weissman` the
paper's rule ``δ₁ + δ₂ ≤ α`` with ``δⱼ = (2^|A| − 2)·exp(−nⱼ tv̂²/2)``, what
:class:`~rmtk.negatives.miners.ConfidenceMiner` decides). When the two are equal, a separation is
declared with probability at most α (with :class:`Mixture` also when the counts are looked at
after every draw); a comparison that is not separated is *consistent with zero*.

**Resolution.** The resolution of a comparison is ``threshold + w``: had the true total
variation been at least that large, the test would have separated the two with probability at
least 1 − α at these counts (on the event that both radii hold, ``tv̂ ≥ TV − w ≥ threshold``).
Conversely a comparison that is not separated has ``TV ≤ tv̂ + w ≤ resolution`` with
confidence 1 − α. "No difference ≥ ε found" is therefore a statement with a level, never a
proof that the expert acts alike; only an exact expert's answers prove that.

The level α is per comparison, as in the paper's eq. 18-19: among many comparisons of equal
distributions about α of them may still be declared separated.
"""

from __future__ import annotations

import math
from typing import Protocol, runtime_checkable

import attrs
import numpy as np

from .. import ties
from ..errors import ModelError
from .miners import log_weissman_constant

__all__ = [
    "Radius",
    "Weissman",
    "Mixture",
    "Comparison",
    "compare",
    "compare_counts",
    "total_variation",
    "resolution",
    "evidence",
    "draws_to_resolve",
    "growth_to_resolve",
    "CountBound",
    "Sequential",
    "Plan",
    "MergeResolution",
    "merge_checks",
    "merge_resolution",
]


def _level(value: float, name: str = "alpha") -> float:
    value = float(value)
    if not 0.0 < value < 1.0:
        raise ModelError(f"{name} must lie in (0, 1), got {value}")
    return value


def _arr(x) -> np.ndarray:
    return np.asarray(x, dtype=float)


@runtime_checkable
class Radius(Protocol):
    """An L1 confidence radius of one empirical categorical distribution (see the module
    docstring). ``anytime``: the radius holds at every sample size at once."""

    @property
    def anytime(self) -> bool: ...

    def radius(self, n, n_actions: int, level: float) -> np.ndarray:
        """``r`` with ``P(‖p̂ₙ − p‖₁ ≥ r) ≤ level`` after ``n`` draws (elementwise; ``inf`` at 0)."""

    def threshold(self, n1, n2, n_actions: int, alpha: float) -> np.ndarray:
        """The smallest empirical total variation the test at level ``alpha`` separates."""


@runtime_checkable
class CountBound(Protocol):
    """A bound that reads the counts themselves, not only their number (its width follows
    each frequency's variance: :class:`rmtk.negatives.anytime.Adaptive`). ``compare`` gives, per pair of
    count rows, whether they are ``separated``, a ``margin``, a confidence interval
    ``[lower, upper]`` of the total variation and the ``resolution``; ``to_resolve`` the
    further draws a side after which the resolution would reach a target."""

    @property
    def anytime(self) -> bool: ...

    def compare(self, counts1, counts2, *, alpha: float): ...

    def to_resolve(self, counts1, counts2, target, *, alpha: float) -> tuple[np.ndarray, np.ndarray]: ...


def _safe_n(n) -> tuple[np.ndarray, np.ndarray]:
    n = _arr(n)
    return np.where(n > 0, n, 1.0), n > 0


@attrs.frozen
class Weissman:
    """The fixed-sample-size bound of the paper's eq. 18-19:
    ``P(‖p̂ₙ − p‖₁ ≥ r) ≤ (2^|A| − 2)·exp(−n r²/2)``. Valid for counts whose number was not
    chosen by looking at them (recorded demonstrations); its test is the paper's rule."""

    anytime: bool = attrs.field(default=False, init=False)

    def radius(self, n, n_actions: int, level: float) -> np.ndarray:
        m, seen = _safe_n(n)
        r = np.sqrt(2.0 * (log_weissman_constant(n_actions) - math.log(level)) / m)
        return np.where(seen, r, np.inf)

    def threshold(self, n1, n2, n_actions: int, alpha: float) -> np.ndarray:
        """The paper's rule: the smallest t with ``δ(n₁, t) + δ(n₂, t) ≤ α``,
        ``δ(n, t) = (2^|A| − 2)·exp(−n t²/2)`` (Newton's method on ``x = t²/2``: the log of the
        sum is convex and decreasing in x, so the iterates rise monotonically to the root)."""
        a, b = np.broadcast_arrays(_arr(n1), _arr(n2))
        c = log_weissman_constant(n_actions) - math.log(alpha)
        seen = (a > 0) & (b > 0)
        a, b = np.where(seen, a, 1.0), np.where(seen, b, 1.0)
        x = c / np.maximum(a, b)  # the larger count alone meets α here: left of the root
        for _ in range(60):
            ea, eb = np.exp(-a * x), np.exp(-b * x)
            f = np.log(ea + eb) + c
            step = f * (ea + eb) / (a * ea + b * eb)
            x = x + step
            if np.all(step <= 1e-12 * x):
                break
        return np.where(seen, np.sqrt(2.0 * x), np.inf)


@attrs.frozen
class Mixture:
    """The anytime-valid radius (a confidence sequence): Robbins' normal mixture of the
    sub-Gaussian frequencies of every complementary pair of action subsets (see the module
    docstring). ``rho`` sets where it is tightest (near ``n = 4ρ·e`` draws); 1 keeps it within
    10 to 30 % of :class:`Weissman` from 10 to 10⁵ draws."""

    rho: float = attrs.field(default=1.0)
    anytime: bool = attrs.field(default=True, init=False)

    @rho.validator
    def _check_rho(self, attribute, value):
        if not (value > 0 and math.isfinite(value)):
            raise ModelError(f"Mixture(rho={value}): rho must be a positive number")

    def radius(self, n, n_actions: int, level: float) -> np.ndarray:
        m, seen = _safe_n(n)
        # a level per complementary pair of subsets: (2^|A| − 2)/2 pairs share `level`
        log_pair = np.log(2.0 * _arr(level)) - log_weissman_constant(n_actions)
        v = m / 4.0 + self.rho
        boundary = np.sqrt(v * (np.log(v / self.rho) - 2.0 * log_pair))
        return np.where(seen, 2.0 * boundary / m, np.inf)

    def threshold(self, n1, n2, n_actions: int, alpha: float) -> np.ndarray:
        return (self.radius(n1, n_actions, alpha / 2) + self.radius(n2, n_actions, alpha / 2)) / 2


#: The bound of recorded data (the paper's) and the bound of data sampled while looking.
FIXED = Weissman()
ANYTIME = Mixture()


def total_variation(counts1, counts2) -> np.ndarray:
    """``½‖p̂₁ − p̂₂‖₁`` of rows of action counts (0 where a row has no count)."""
    a, b = _arr(counts1), _arr(counts2)
    na, nb = a.sum(axis=-1, keepdims=True), b.sum(axis=-1, keepdims=True)
    pa = np.divide(a, na, out=np.zeros_like(a), where=na > 0)
    pb = np.divide(b, nb, out=np.zeros_like(b), where=nb > 0)
    tv = 0.5 * np.abs(pa - pb).sum(axis=-1)
    return np.where((na[..., 0] > 0) & (nb[..., 0] > 0), tv, 0.0)


@attrs.frozen
class Comparison:
    """Many comparisons of two sampled distributions at once (arrays of one length): the
    counts ``n1``, ``n2``, the empirical total variation ``tv``, the test's ``threshold`` and the
    half-width ``width`` of the confidence interval of the true total variation, at level
    ``alpha`` with a bound that is ``anytime``-valid or not (module docstring)."""

    n1: np.ndarray
    n2: np.ndarray
    tv: np.ndarray
    threshold: np.ndarray
    width: np.ndarray
    alpha: float
    anytime: bool

    def __len__(self) -> int:
        return len(self.tv)

    @property
    def separated(self) -> np.ndarray:
        """The two distributions differ, at confidence 1 − α (a total variation within
        :data:`rmtk.ties.TOL` of the threshold reaches it: docs/design/02-conventions.md)."""
        return ties.at_most(self.threshold, self.tv)

    @property
    def consistent_with_zero(self) -> np.ndarray:
        """The data are consistent with equal distributions (no difference detected)."""
        return ~self.separated

    @property
    def margin(self) -> np.ndarray:
        """``tv − threshold``, signed: positive when separated; how far from it otherwise."""
        return self.tv - self.threshold

    @property
    def lower(self) -> np.ndarray:
        """Lower confidence bound of the true total variation (0 when consistent with zero)."""
        return np.clip(self.tv - self.width, 0.0, 1.0)

    @property
    def upper(self) -> np.ndarray:
        """Upper confidence bound of the true total variation."""
        return np.clip(self.tv + self.width, 0.0, 1.0)

    @property
    def resolution(self) -> np.ndarray:
        """The smallest true total variation the test detects with probability ≥ 1 − α at
        these counts (above 1: none)."""
        return self.threshold + self.width


def compare_counts(n1, n2, tv, n_actions: int, *, alpha: float, bound: Radius = ANYTIME) -> Comparison:
    """:class:`Comparison` of pairs given by their visit counts and empirical total variation."""
    alpha = _level(alpha)
    n1, n2, tv = np.broadcast_arrays(_arr(n1), _arr(n2), _arr(tv))
    width = (bound.radius(n1, n_actions, alpha / 2) + bound.radius(n2, n_actions, alpha / 2)) / 2
    return Comparison(
        n1, n2, tv, np.asarray(bound.threshold(n1, n2, n_actions, alpha)), width, alpha, bool(bound.anytime)
    )


def compare(counts1, counts2, *, alpha: float, bound: Radius = ANYTIME) -> Comparison:
    """:class:`Comparison` of rows of action counts ``(..., A)`` (one comparison per row)."""
    a, b = np.atleast_2d(_arr(counts1)), np.atleast_2d(_arr(counts2))
    return compare_counts(a.sum(axis=-1), b.sum(axis=-1), total_variation(a, b), a.shape[-1], alpha=alpha, bound=bound)


def evidence(n1, n2, tv, n_actions: int, *, alpha: float, bound: Radius = ANYTIME) -> np.ndarray:
    """How far each empirical total variation is beyond what the test at ``alpha`` calls a
    difference (:attr:`Comparison.margin`, signed: positive when separated), elementwise: the
    principled form of "the difference minus its noise" that ranks candidate comparisons, the
    noise being the test's own threshold at these counts rather than a bare ``1/√n``."""
    return compare_counts(n1, n2, tv, n_actions, alpha=alpha, bound=bound).margin


def resolution(n1, n2, n_actions: int, *, alpha: float, bound: Radius = ANYTIME) -> np.ndarray:
    """The resolution (module docstring) at counts ``n1``, ``n2``, elementwise."""
    return compare_counts(n1, n2, 0.0, n_actions, alpha=alpha, bound=bound).resolution


def _bisect_up(ok, lo: np.ndarray, hi: np.ndarray, rounds: int = 64) -> np.ndarray:
    """Smallest value in ``(lo, hi]`` where the monotone predicate ``ok`` holds (``ok(hi)``
    holds; ``ok(lo)`` does not), elementwise, as an integer when the bounds are integers."""
    for _ in range(rounds):
        if not np.any(hi - lo > 1):
            break
        mid = np.floor((lo + hi) / 2)
        good = ok(mid)
        hi, lo = np.where(good, mid, hi), np.where(good, lo, mid)
    return hi


def draws_to_resolve(
    n1, n2, target, n_actions: int, *, alpha: float, bound: Radius = ANYTIME
) -> tuple[np.ndarray, np.ndarray]:
    """The fewest further draws ``(m1, m2)`` on each side after which the resolution is at
    most ``target`` (elementwise; ``inf`` where ``target ≤ 0``): the less visited side is raised
    first, then both together, which is optimal because the resolution is a sum of one
    decreasing convex term per side."""
    n1, n2, target = np.broadcast_arrays(_arr(n1), _arr(n2), _arr(target))

    def ok(level):
        return ties.at_most(
            resolution(np.maximum(n1, level), np.maximum(n2, level), n_actions, alpha=alpha, bound=bound), target
        )

    live = target > 0
    done = live & ok(np.zeros_like(n1))
    hi = np.maximum(np.maximum(n1, n2), 1.0)
    for _ in range(80):  # double the common level until it suffices
        short = live & ~done & ~ok(hi)
        if not short.any():
            break
        hi = np.where(short, hi * 2, hi)
    level = _bisect_up(ok, np.zeros_like(hi), hi)
    m1, m2 = np.maximum(0.0, level - n1), np.maximum(0.0, level - n2)
    m1 = np.where(done, 0.0, np.where(live, m1, np.inf))
    m2 = np.where(done, 0.0, np.where(live, m2, np.inf))
    return m1, m2


def growth_to_resolve(n1, n2, target, n_actions: int, *, alpha: float, bound: Radius = FIXED) -> np.ndarray:
    """The smallest factor f ≥ 1 by which both counts must grow (more data of the same kind)
    for the resolution to be at most ``target``, elementwise (``inf`` where ``target ≤ 0`` or a
    count is 0); by bisection on log f."""
    n1, n2, target = np.broadcast_arrays(_arr(n1), _arr(n2), _arr(target))
    live = (target > 0) & (n1 > 0) & (n2 > 0)
    if isinstance(bound, Weissman):  # its radii and threshold scale exactly as 1/√n: f in closed form
        now = resolution(n1, n2, n_actions, alpha=alpha, bound=bound)
        with np.errstate(divide="ignore", invalid="ignore"):
            f = np.maximum(1.0, (now / np.where(live, target, 1.0)) ** 2)
        return np.where(live, f, np.inf)

    def ok(log_f):
        f = np.exp(log_f)
        return ties.at_most(resolution(f * n1, f * n2, n_actions, alpha=alpha, bound=bound), target)

    out = np.full(n1.shape, np.inf)
    done = live & ok(np.zeros(n1.shape))
    out[done] = 1.0
    lo, hi = np.zeros(n1.shape), np.full(n1.shape, 60.0)
    for _ in range(60):
        mid = (lo + hi) / 2
        good = ok(mid)
        hi, lo = np.where(good, mid, hi), np.where(good, lo, mid)
    rest = live & ~done & ok(hi)
    out[rest] = np.exp(hi[rest])
    return out


# ---------------------------------------------------------------------- sequential sampling
@attrs.frozen
class Plan:
    """What :meth:`Sequential.plan` decided for each pair: ``status`` (``"separated"``: the
    two differ; ``"resolved"``: no difference as large as the target resolution, at level α;
    ``"open"``: draw more), the draws to make next on each side (0 unless open) and the
    :class:`Comparison` it read."""

    status: np.ndarray
    draw1: np.ndarray
    draw2: np.ndarray
    comparison: object  # a Comparison, or what a CountBound gives


@attrs.frozen
class Sequential:
    """Sampling two distributions until they are separated or resolved (module docstring).

    The comparison uses an anytime-valid bound (:class:`Mixture` by default; the active loop
    uses :class:`rmtk.negatives.anytime.Adaptive`, which adapts to each frequency's variance), so it may
    be looked at after every draw: a pair of equal distributions is declared separated with
    probability at most ``alpha`` however long it is sampled, and a pair whose true total
    variation exceeds ``epsilon`` is declared resolved ("alike to ε") with probability at most
    ``alpha``. Draws come in batches that raise the less visited side by ``growth`` (at least
    to ``first`` draws), the other side following once the two are level: a clear difference
    stops after a few dozen draws, a faint one keeps the sampling going until the resolution
    reaches ``epsilon``.
    """

    alpha: float = attrs.field(default=0.05)
    epsilon: float = attrs.field(default=0.1)
    bound: Radius | CountBound = attrs.field(factory=Mixture)
    first: int = attrs.field(default=16)
    growth: float = attrs.field(default=1.5)

    def __attrs_post_init__(self):
        _level(self.alpha)
        if not 0.0 < self.epsilon <= 1.0:
            raise ModelError(f"Sequential(epsilon={self.epsilon}): the target resolution must lie in (0, 1]")
        if not isinstance(self.bound, (Radius, CountBound)) or not self.bound.anytime:
            raise ModelError(
                "Sequential sampling looks at the counts as they come: its bound must be anytime-valid "
                f"(rmtk.negatives.statistics.Mixture, rmtk.negatives.anytime.Adaptive), not {type(self.bound).__name__}"
            )
        if int(self.first) < 1 or not self.growth > 1.0:
            raise ModelError(f"Sequential(first={self.first}, growth={self.growth}): first ≥ 1 and growth > 1 expected")

    def compare(self, counts1, counts2):
        """The comparison of rows of action counts ``(pairs, A)`` at ``alpha`` with the bound
        (a :class:`Comparison`, or what a :class:`CountBound` gives)."""
        counts1, counts2 = np.atleast_2d(_arr(counts1)), np.atleast_2d(_arr(counts2))
        if isinstance(self.bound, Radius):
            return compare(counts1, counts2, alpha=self.alpha, bound=self.bound)
        return self.bound.compare(counts1, counts2, alpha=self.alpha)

    def evidence(self, counts1, counts2) -> np.ndarray:
        """The signed margin of each comparison (positive when separated): how far the
        difference is beyond what the test calls one (:func:`evidence` for a radius)."""
        return np.asarray(self.compare(counts1, counts2).margin, dtype=float)

    def to_resolve(self, counts1, counts2, target=None) -> tuple[np.ndarray, np.ndarray]:
        """Further draws a side after which the resolution would be at most ``target``
        (default ``epsilon``): :func:`draws_to_resolve` for a radius, the bound's own estimate
        otherwise."""
        counts1, counts2 = np.atleast_2d(_arr(counts1)), np.atleast_2d(_arr(counts2))
        target = self.epsilon if target is None else target
        if isinstance(self.bound, Radius):
            return draws_to_resolve(
                counts1.sum(-1), counts2.sum(-1), target, counts1.shape[-1], alpha=self.alpha, bound=self.bound
            )
        return self.bound.to_resolve(counts1, counts2, target, alpha=self.alpha)

    def plan(self, counts1, counts2) -> Plan:
        """Status and next draws for rows of action counts ``(pairs, A)``."""
        counts1, counts2 = np.atleast_2d(_arr(counts1)), np.atleast_2d(_arr(counts2))
        c = self.compare(counts1, counts2)
        resolved = ties.at_most(c.resolution, self.epsilon)
        status = np.where(c.separated, "separated", np.where(resolved, "resolved", "open"))
        open_ = status == "open"
        n1, n2 = counts1.sum(-1), counts2.sum(-1)
        # the less visited side grows by `growth` (at least to `first`), the other follows once
        # the two are level: a clear difference shows after a small batch on the side that lacks
        level = np.maximum(np.minimum(n1, n2) * self.growth, float(self.first))
        level = np.ceil(np.maximum(level, np.minimum(n1, n2) + 1))
        # never past the count that reaches epsilon: the last batch stops there
        cap = np.full(len(n1), np.inf)
        if open_.any():
            m1, m2 = self.to_resolve(counts1[open_], counts2[open_])
            cap[open_] = np.maximum(n1[open_] + m1, n2[open_] + m2)
        level = np.minimum(level, cap)
        d1 = np.where(open_, np.maximum(0.0, level - n1), 0.0).astype(np.int64)
        d2 = np.where(open_, np.maximum(0.0, level - n2), 0.0).astype(np.int64)
        stuck = open_ & (d1 + d2 == 0)  # one more on the lagging side keeps it moving
        d1 = np.where(stuck & (n1 <= n2), 1, d1)
        d2 = np.where(stuck & (n1 > n2), 1, d2)
        return Plan(status, d1, d2, c)

    def run(self, draw1, draw2, n_actions: int, *, budget: int | None = None, counts1=None, counts2=None):
        """Sample one pair: ``draw1(m)``, ``draw2(m)`` return the counts of ``m`` new draws
        (``(A,)`` arrays). Stops when the pair is separated or resolved, or before a batch would
        exceed ``budget`` draws in all (``status`` ``"budget"``). Returns ``(status, counts1,
        counts2, draws)``."""
        a = np.zeros(n_actions) if counts1 is None else _arr(counts1).copy()
        b = np.zeros(n_actions) if counts2 is None else _arr(counts2).copy()
        spent = 0
        while True:
            p = self.plan(a[None, :], b[None, :])
            status = str(p.status[0])
            if status != "open":
                return status, a, b, spent
            m1, m2 = int(p.draw1[0]), int(p.draw2[0])
            if budget is not None and spent + m1 + m2 > budget:
                left = budget - spent
                if left <= 0:
                    return "budget", a, b, spent
                m1, m2 = min(m1, left), min(m2, max(0, left - min(m1, left)))
            if m1:
                a = a + draw1(m1)
            if m2:
                b = b + draw2(m2)
            spent += m1 + m2


# ---------------------------------------------------------------------- passive results
@attrs.frozen
class MergeResolution:
    """What counted data resolved behind the merges of a learned machine. The machine sends
    several words to one node at ``groups`` (state, node) pairs; at each, the two most visited
    words are its firmest check. ``decided``: the groups whose firmest check resolves a
    difference below 1 (their ``histories`` (word, state) pairs, two each); ``worst``,
    ``median``, ``best``: the resolution of those checks (``worst`` is the weakest merge the
    answer rests on: a difference that large between the two best-seen words of some merge
    would have been detected with probability 1 − α); ``undecided``: groups seen too rarely to
    detect any difference; ``others``: the merged words beyond the two compared at each group
    (seen less, so smaller differences there could go unnoticed); ``negatives``: the negative
    examples the answer rests on; at level ``alpha``, with the anytime-valid bound or not."""

    groups: int
    decided: int
    histories: int
    worst: float
    median: float
    best: float
    undecided: int
    others: int
    negatives: int
    alpha: float
    anytime: bool = False

    def __str__(self) -> str:
        neg = (
            "no negative example: nothing in the data forces two words into different nodes"
            if self.negatives == 0
            else f"{self.negatives:,} negative example{'s' if self.negatives != 1 else ''}"
        )
        head = f"resolution (total variation, alpha {self.alpha:g}): "
        if not self.groups:
            return f"{head}the machine merges no two words at a common state; {neg}"
        if not self.decided:
            return (
                f"{head}the machine merges words at {self.groups} (state, node) pairs, none seen often enough to "
                f"detect any difference; {neg}"
            )
        text = (
            f"{head}no difference ≥ {self.worst:.2f} found at the {self.histories:,} histories that decide the merges "
            f"(the two most visited words at each of {self.decided:,} (state, node) pairs; median {self.median:.2f}, "
            f"firmest {self.best:.2f})"
        )
        if self.undecided:
            text += f"; {self.undecided:,} more pairs were seen too rarely to detect any difference"
        if self.others:
            text += (
                f"; {self.others:,} other merged words were seen less, and smaller differences there could go unnoticed"
            )
        return f"{text}; {neg}"


def merge_checks(ptp, delta: np.ndarray, *, alpha: float, bound: Radius | CountBound = FIXED):
    """The firmest check of each merge of the machine ``delta`` (``(n, K)``) on the counted
    prefix tree policy ``ptp``: at each (state, node) pair where the machine sends several
    counted words, its two most visited words. Returns ``(a, b, resolution, groups, others)``:
    the ptp pair indices of the two words, the resolution of their comparison at level
    ``alpha`` with ``bound`` (what "no difference ≥ r found" says there), the number of such
    groups and the merged words beyond the two compared."""
    counts = np.asarray(ptp.counts, dtype=float)
    node, state = np.asarray(ptp.tree.pair_node), np.asarray(ptp.tree.pair_state)
    final = np.asarray(ptp.trie.run(np.asarray(delta), 0))[node]
    n = counts.sum(axis=1)
    group = state * (int(final.max()) + 1 if len(final) else 1) + final
    order = np.lexsort((np.arange(len(n)), -n, group))  # per group, the most visited first
    g = group[order]
    start = np.flatnonzero(np.r_[True, g[1:] != g[:-1]]) if len(g) else np.zeros(0, np.int64)
    size = np.diff(np.r_[start, len(g)])
    merged = start[size >= 2]
    others = int((size[size >= 2] - 2).sum())
    a, b = order[merged], order[merged + 1]
    if not len(merged):
        return a, b, np.zeros(0), 0, others
    if isinstance(bound, Radius):
        c = compare_counts(n[a], n[b], total_variation(counts[a], counts[b]), counts.shape[1], alpha=alpha, bound=bound)
    else:
        c = bound.compare(counts[a], counts[b], alpha=alpha)
    return a, b, np.asarray(c.resolution, dtype=float), len(merged), others


def merge_resolution(ptp, delta: np.ndarray, *, alpha: float, negatives: int, bound: Radius | CountBound = FIXED):
    """:class:`MergeResolution` of the machine ``delta`` (``(n, K)``) on the counted prefix
    tree policy ``ptp`` (see :func:`merge_checks`)."""
    _, _, res, groups, others = merge_checks(ptp, delta, alpha=alpha, bound=bound)
    if not groups:
        return MergeResolution(0, 0, 0, math.inf, math.inf, math.inf, 0, 0, negatives, alpha, bound.anytime)
    decided = ~ties.at_most(1.0, res)  # a resolution of 1 or more detects no difference at all
    done = res[decided]
    return MergeResolution(
        groups,
        int(decided.sum()),
        2 * int(decided.sum()),
        float(done.max()) if len(done) else math.inf,
        float(np.median(done)) if len(done) else math.inf,
        float(done.min()) if len(done) else math.inf,
        int((~decided).sum()),
        others,
        negatives,
        float(alpha),
        bool(bound.anytime),
    )
