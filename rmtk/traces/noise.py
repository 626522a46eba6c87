"""Noise on recorded rewards: the two models the noisy-reward learners of rmtk read.

- *Replacement* (:func:`replaced_rewards`): each recorded reward is, with probability ``ε``,
  another of the machine's values (so ``ε`` is the true share of wrong rewards); learned with
  :class:`~rmtk.sat.encoders.NoisyRewardEncoder`, which estimates ``ε``.
- *Uniform* (:func:`uniform_noise`): a uniform draw from ``[−w, w]`` added to each paid reward,
  as in the stochastic-reward-machine paper's Mining task; learned with
  :class:`~rmtk.traces.tolerance.TolerantRewards`, which estimates ``w``.

Both take a seed and leave NaN (a reward not recorded) as it is. ``rmtk simulate --rewards
--reward-noise replace:E|uniform:W`` writes such traces (its noise seed is ``--seed`` + 1, as
:func:`rmtk.traces.explorers.explore`'s).
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from ..data import Demonstrations
from ..errors import DataError, ModelError

__all__ = ["replace_values", "replaced_rewards", "uniform_noise"]


def _rewards_of(demos: Demonstrations) -> np.ndarray:
    if demos.rewards is None:
        raise DataError("the demonstrations have no rewards to add noise to")
    return np.asarray(demos.rewards, dtype=np.float64)


def replace_values(rewards: np.ndarray, values: np.ndarray, epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """``rewards`` with each entry, with probability ``epsilon``, moved to another of ``values``
    (sorted distinct rewards; one draw decides whether, a second which other: uniform among the
    rest). Draws cover the whole array, NaN entries included, so the result does not depend on
    where rewards are recorded."""
    values = np.unique(np.asarray(values, dtype=np.float64))
    hit = rng.random(rewards.shape) < epsilon
    shift = rng.integers(1, max(len(values), 2), size=rewards.shape)
    rank = np.searchsorted(values, np.nan_to_num(rewards))
    other = values[(rank + shift) % len(values)] if len(values) > 1 else rewards
    return np.where(hit & ~np.isnan(rewards), other, rewards)


def replaced_rewards(demos: Demonstrations, values, epsilon: float, *, seed: int) -> Demonstrations:
    """``demos`` with each recorded reward replaced, with probability ``epsilon``, by another of
    ``values`` (the machine's distinct rewards, e.g. ``numpy.unique(machine.delta_r)``),
    decided by ``seed``."""
    if not (isinstance(epsilon, (int, float)) and 0 <= epsilon <= 1):
        raise ModelError(f"epsilon must lie in [0, 1], got {epsilon!r}")
    values = np.unique(np.asarray(values, dtype=np.float64))
    if len(values) < 2:
        raise ModelError("replacement noise needs at least two reward values to replace one by another")
    rewards = _rewards_of(demos)
    return attrs.evolve(demos, rewards=replace_values(rewards, values, epsilon, np.random.default_rng(seed)))


def uniform_noise(demos: Demonstrations, half_width: float, *, seed: int, paid_only: bool = True) -> Demonstrations:
    """``demos`` with a uniform draw from ``[−half_width, half_width]`` added to each recorded
    reward (``paid_only``: to the non-zero ones, as in the Mining task, whose zero rewards are
    exact), decided by ``seed``; NaN (not recorded) stays NaN."""
    if not (isinstance(half_width, (int, float)) and math.isfinite(half_width) and half_width >= 0):
        raise ModelError(f"half_width must be a finite number ≥ 0, got {half_width!r}")
    rewards = _rewards_of(demos)
    draw = np.random.default_rng(seed).uniform(-half_width, half_width, size=rewards.shape)
    hit = ~np.isnan(rewards) & ((rewards != 0) if paid_only else True)
    return attrs.evolve(demos, rewards=np.where(hit, rewards + draw, rewards))
