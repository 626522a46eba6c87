"""The rewards :func:`~rmtk.gym.collect` records with ``rewards=``: the environment's own
(``True``) or a reward function's, checked step by step (a number, finite; NaN is
"unknown"), with errors naming the episode and step. The convention of the recorded rewards
is that of :mod:`rmtk.data.rewards`: a step's reward is what its action earned, paid on the
label of the observation the step led to."""

from __future__ import annotations

import numpy as np

from ..errors import DataError, RmtkError


def _who(rewards) -> str:
    return "the environment" if rewards is True else "the reward function"


def _call(rewards, obs, action, paid, next_obs, info, where: str):
    if rewards is True:
        return paid
    if not callable(rewards):
        raise RmtkError(f"rewards is True (the environment's) or a function, not {rewards!r}")
    try:
        return rewards(obs, action, paid, next_obs, info)
    except RmtkError:
        raise
    except Exception as exc:
        raise DataError(f"{where}: the reward function raised {type(exc).__name__}: {exc}") from exc


def step_reward(rewards, obs, action, paid, next_obs, info, where: str) -> float:
    """The reward of a single environment's step: ``paid`` (the environment's) when
    ``rewards`` is True, else ``rewards(obs, action, paid, next_obs, info)``."""
    value = _call(rewards, obs, action, paid, next_obs, info, where)
    try:
        out = float(value)
    except (TypeError, ValueError):
        out = None
    if out is None or isinstance(value, (bool, np.bool_)) or np.isinf(out):
        raise DataError(f"{where}: {_who(rewards)} returned the reward {value!r}; a reward is a finite number")
    return out


def batch_rewards(rewards, obs, action, paid, next_obs, info, alive, where) -> np.ndarray:
    """The rewards of a vector environment's step, one per copy (NaN for the copies whose
    episode already ended); ``where(i)`` names copy ``i``'s episode and step."""
    value = _call(rewards, obs, action, paid, next_obs, info, where(0))
    try:
        values = np.asarray(value, dtype=np.float64).reshape(len(alive))
    except (TypeError, ValueError):
        raise DataError(
            f"{where(0)}: {_who(rewards)} returned {value!r}; a vector environment's rewards are one number per copy"
        ) from None
    bad = np.flatnonzero(alive & np.isinf(values))
    if bad.size:
        raise DataError(f"{where(int(bad[0]))}: the reward {values[bad[0]]} is infinite; a reward is a finite number")
    return np.where(alive, values, np.nan)
