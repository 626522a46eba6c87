"""A rate seen ``k`` times in ``n``, with its two-sided Clopper-Pearson interval: the intervals
of the label noise (rmtk/label_noise/estimate.py, rmtk/label_noise/models.py)."""

from __future__ import annotations

import attrs

#: The confidence of the intervals.
CONFIDENCE = 0.95


def clopper_pearson(k: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The two-sided Clopper-Pearson interval of a rate seen ``k`` times in ``n`` (beta
    quantiles by ``scipy.special.betaincinv``)."""
    from scipy.special import betaincinv  # type: ignore[import-untyped]

    a = 1 - confidence
    if n <= 0:
        return 0.0, 1.0
    low = 0.0 if k <= 0 else float(betaincinv(k, n - k + 1, a / 2))
    high = 1.0 if k >= n else float(betaincinv(k + 1, n - k, 1 - a / 2))
    return low, high


@attrs.frozen
class Rate:
    """A rate seen ``k`` times in ``n``, with its interval at ``confidence``."""

    k: int
    n: int
    low: float
    high: float
    confidence: float = CONFIDENCE

    @classmethod
    def of(cls, k: int, n: int, confidence: float = CONFIDENCE) -> Rate:
        low, high = clopper_pearson(int(k), int(n), confidence)
        return cls(int(k), int(n), low, high, confidence)

    @property
    def value(self) -> float:
        return self.k / self.n if self.n else 0.0

    def covers(self, p: float) -> bool:
        """Whether ``p`` lies in the interval."""
        return self.low <= p <= self.high

    def __str__(self) -> str:
        return f"{self.value:.4f} ({round(100 * self.confidence)}% interval {self.low:.4f} to {self.high:.4f})"
