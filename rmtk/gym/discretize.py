"""Discretisers: observations → state indices, the states of the empirical prefix tree
policy (paper section 5) when the environment's own observations are not a small finite set.

A discretiser is any callable ``d(obs) -> int``; rmtk's own (:class:`Identity`, :class:`Bins`)
are frozen value classes that also map a whole batch at once (:meth:`Bins.batch`, for vector
environments) and know their number of states (``size(space)``). A plain callable needs the
number of states from the caller (``collect(..., n_states=N)``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import attrs
import numpy as np

from ..errors import ModelError


@attrs.frozen
class Identity:
    """The observation is already a state index: ``Discrete(n)`` spaces (e.g. a labeled MDP's
    states). ``n``: the number of states (default: the observation space's)."""

    n: int | None = None

    def __attrs_post_init__(self):
        if self.n is not None and (isinstance(self.n, bool) or not isinstance(self.n, int) or self.n < 1):
            raise ModelError(f"Identity: n must be a whole number of at least 1, got {self.n!r}")

    def size(self, space) -> int:
        if self.n is not None:
            return self.n
        n = getattr(space, "n", None)
        if n is None or getattr(space, "start", 0) != 0:
            raise ModelError(
                f"Identity needs a Discrete observation space starting at 0, not {space}; "
                "give its number of states (Identity(n)) or use Bins for a Box"
            )
        return int(n)

    def __call__(self, obs) -> int:
        return int(obs)

    def batch(self, obs) -> tuple[np.ndarray, np.ndarray]:
        """``(indices, outside)``: the observations as integers, nothing clipped."""
        obs = np.asarray(obs)
        return obs.astype(np.int64).reshape(len(obs)), np.zeros(len(obs), dtype=bool)


def _vector(value, what: str) -> tuple[float, ...]:
    out = np.atleast_1d(np.asarray(value, dtype=float))
    if out.ndim != 1 or not out.size:
        raise ModelError(f"Bins: {what} must be a number or a flat sequence of numbers, got {value!r}")
    return tuple(float(x) for x in out)


@attrs.frozen
class Bins:
    """A regular grid over a box: dimension ``k`` of ``features(obs)`` (default: the
    observation itself, flattened) is cut into ``n[k]`` equal bins over ``[low[k], high[k]]``;
    the state is the bins' mixed-radix index, first dimension most significant.

    ``clip``: values outside the box fall into the edge bins and are counted
    (in ``clipped`` of the :class:`~rmtk.gym.Recording`); ``False`` makes them an error naming the episode
    and step. ``low``, ``high`` and ``n`` are broadcast to one another (a scalar serves every
    dimension). ``features`` maps a batch ``(N, …)`` of observations to ``(N, d)`` values, e.g.
    joint angles from their cosines and sines; it must be picklable for worker processes.
    """

    low: tuple[float, ...] = attrs.field(converter=lambda v: _vector(v, "low"))
    high: tuple[float, ...] = attrs.field(converter=lambda v: _vector(v, "high"))
    n: tuple[int, ...] = attrs.field(converter=lambda v: tuple(int(x) for x in np.atleast_1d(v)))
    clip: bool = True
    features: Callable | None = attrs.field(default=None, eq=False)

    def __attrs_post_init__(self):
        try:
            low, high, n = np.broadcast_arrays(np.array(self.low), np.array(self.high), np.array(self.n))
        except ValueError:
            raise ModelError(
                f"Bins: low, high and n have {len(self.low)}, {len(self.high)} and {len(self.n)} "
                "entries; give one per dimension (or one for all)"
            ) from None
        object.__setattr__(self, "low", tuple(low.tolist()))
        object.__setattr__(self, "high", tuple(high.tolist()))
        object.__setattr__(self, "n", tuple(int(x) for x in n))
        for k, (lo, hi, m) in enumerate(zip(self.low, self.high, self.n)):
            if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
                raise ModelError(f"Bins: dimension {k} has low {lo} and high {hi}; need finite low < high")
            if m < 1:
                raise ModelError(f"Bins: dimension {k} has {m} bins; need at least 1")
        if math.prod(self.n) > 2**62 // 4096:
            raise ModelError(f"Bins: {math.prod(self.n)} states is too many to count (keys are 64-bit integers)")

    @property
    def dims(self) -> int:
        return len(self.n)

    @property
    def n_states(self) -> int:
        return math.prod(self.n)

    def size(self, space=None) -> int:
        return self.n_states

    def values(self, obs) -> np.ndarray:
        """``(N, d)`` values of a batch of observations (``features`` applied)."""
        x = np.asarray(self.features(obs) if self.features is not None else obs, dtype=float)
        x = x.reshape(len(x), -1)
        if x.shape[1] != self.dims:
            raise ModelError(
                f"Bins has {self.dims} dimensions, the observation{' features' if self.features else ''} "
                f"have {x.shape[1]}"
            )
        return x

    def batch(self, obs) -> tuple[np.ndarray, np.ndarray]:
        """``(indices, outside)`` of a batch: ``outside[i]`` when observation ``i`` left the box
        (it is then clipped into the edge bins; NaN is always outside)."""
        x = self.values(obs)
        low, high, n = np.array(self.low), np.array(self.high), np.array(self.n)
        outside = ~((x >= low) & (x <= high)).all(axis=1)
        b = np.floor((np.clip(np.nan_to_num(x, nan=low[0]), low, high) - low) / ((high - low) / n)).astype(np.int64)
        np.clip(b, 0, n - 1, out=b)  # x == high falls in the last bin
        return np.ravel_multi_index(b.T, self.n), outside

    def __call__(self, obs) -> int:
        index, _ = self.batch(np.asarray(obs)[None])
        return int(index[0])

    def bins(self, index) -> np.ndarray:
        """``(N, d)`` bin numbers of state indices."""
        return np.stack(np.unravel_index(np.asarray(index, dtype=np.int64), self.n), axis=-1)

    def centres(self, index) -> np.ndarray:
        """``(N, d)`` feature values at the centres of the bins of state indices."""
        low, high, n = np.array(self.low), np.array(self.high), np.array(self.n)
        return low + (self.bins(index) + 0.5) * (high - low) / n

    def describe_outside(self, obs) -> str:
        """Which dimension of one observation left the box, for error messages."""
        x = self.values(np.asarray(obs)[None])[0]
        for k, (v, lo, hi) in enumerate(zip(x, self.low, self.high)):
            if not lo <= v <= hi:
                return f"dimension {k} is {v:g}, outside [{lo:g}, {hi:g}]"
        return "inside the bins"
