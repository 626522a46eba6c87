"""The episodes the online loop records (docs/guide/14-online.md): each a *trace*, its label
word and the rewards the environment paid, and the policy that bounds which are kept.

A trace follows the prefix convention of docs/design/rewards-evidence.md: ``letters[0]`` is the
label of the reset observation, ``rewards[t]`` what step ``t`` earned, paid on ``letters[t + 1]``.
A trace *disagrees* with a hypothesis when, on some step, the hypothesis pays otherwise than the
environment did (after rounding to :data:`~rmtk.data.rewards.REWARD_DECIMALS` places, or beyond
a tolerance): that episode is a counterexample (JIRP, Xu et al., ICAPS 2020).

Kept traces are the evidence of every inference, so their number bounds an inference's size:
:class:`KeepCounterexamples` keeps every counterexample and a uniform sample (reservoir
sampling, seeded) of at most ``sampled`` of the other episodes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import attrs
import numpy as np

from ..._arrays import array_eq
from ...data.rewards import round_rewards
from ...errors import ModelError
from .hypothesis import Hypothesis


def _letters(value) -> np.ndarray:
    out = np.asarray(value, dtype=np.int64).reshape(-1)
    out.flags.writeable = False
    return out


def _rewards(value) -> np.ndarray:
    out = np.asarray(value, dtype=np.float64).reshape(-1)
    out.flags.writeable = False
    return out


@attrs.frozen
class Trace:
    """One episode: ``letters`` (``T + 1`` proposition indices, the reset observation's first),
    ``rewards`` (``T``: what each step earned), the ``episode`` number, the environment ``step``
    it ended at, whether it was a ``counterexample`` to the hypothesis of its time, whether
    the explorer led it (``explored``) and whether the environment ended it (``terminated``; not
    a time limit)."""

    letters: np.ndarray = attrs.field(converter=_letters, eq=array_eq)
    rewards: np.ndarray = attrs.field(converter=_rewards, eq=array_eq)
    episode: int = 0
    step: int = 0
    counterexample: bool = False
    explored: bool = False
    terminated: bool = False

    def __attrs_post_init__(self):
        if len(self.letters) != len(self.rewards) + 1:
            raise ModelError(
                f"trace of episode {self.episode}: {len(self.letters)} letters for {len(self.rewards)} rewards "
                "(a trace has one letter more than rewards: the reset observation's)"
            )

    @property
    def paid(self) -> float:
        """The environment's return (undiscounted)."""
        return float(self.rewards.sum())

    def expected(self, hypothesis: Hypothesis) -> np.ndarray:
        """What ``hypothesis`` pays on each step."""
        if not len(self.rewards):
            return np.zeros(0)
        return hypothesis.reward[hypothesis.runs(self.letters), self.letters[1:]]

    def wrong(self, hypothesis: Hypothesis, tolerance: float = 0.0) -> np.ndarray:
        """Per step: whether ``hypothesis`` pays otherwise (beyond ``tolerance``) or had ended the
        episode before it."""
        if not len(self.rewards):
            return np.zeros(0, bool)
        gap = np.abs(round_rewards(self.expected(hypothesis)) - round_rewards(self.rewards))
        return (gap > tolerance + 1e-9 * tolerance) | hypothesis.terminal[hypothesis.runs(self.letters)]

    def disagreement(self, hypothesis: Hypothesis, tolerance: float = 0.0) -> int | None:
        """The first step whose reward ``hypothesis`` pays otherwise (beyond ``tolerance``), or
        that the episode took after the hypothesis ended it (its terminal node), or ``None``."""
        at = np.flatnonzero(self.wrong(hypothesis, tolerance))
        return int(at[0]) if len(at) else None


@runtime_checkable
class TraceKeeping(Protocol):
    """The TraceKeeping strategy: which recorded episodes the loop keeps as evidence. Consumes the
    kept traces, a finished one and the loop's generator; produces the new kept traces (the
    counterexample that triggers an inference must be among them)."""

    def keep(self, kept: tuple[Trace, ...], trace: Trace, seen: int, rng: np.random.Generator) -> tuple[Trace, ...]:
        """The traces kept after ``trace``, the ``seen``-th episode that was not a counterexample
        when it is not one (reservoir sampling counts them)."""


def _positive(instance, attribute, value) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ModelError(f"{type(instance).__name__}.{attribute.name} must be a whole number ≥ 0, got {value!r}")


@attrs.frozen
class KeepCounterexamples:
    """Every counterexample, and a uniform sample of at most ``sampled`` of the other episodes
    (reservoir sampling: the ``seen``-th replaces a kept one with probability ``sampled / seen``),
    so that a new hypothesis also pays what ordinary episodes were paid. ``sampled=0`` keeps the
    counterexamples alone, as JIRP does."""

    sampled: int = attrs.field(default=100, validator=_positive)

    def keep(self, kept: tuple[Trace, ...], trace: Trace, seen: int, rng: np.random.Generator) -> tuple[Trace, ...]:
        if trace.counterexample:
            return (*kept, trace)
        others = [i for i, t in enumerate(kept) if not t.counterexample]
        if len(others) < self.sampled:
            return (*kept, trace)
        if not self.sampled:
            return kept
        j = int(rng.integers(seen))  # one draw per ordinary episode beyond the sample: the same draws per seed
        if j >= self.sampled:
            return kept
        out = list(kept)
        out[others[j]] = trace
        return tuple(out)


def padded(traces: Sequence[Trace]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(letters, rewards, lengths)`` of ``traces`` as padded arrays (letters −1 and rewards NaN
    past each end; the last letter's reward NaN: nothing follows it)."""
    T = max((len(t.letters) for t in traces), default=1)
    letters = np.full((len(traces), T), -1, np.int64)
    rewards = np.full((len(traces), T), np.nan)
    for i, t in enumerate(traces):
        letters[i, : len(t.letters)] = t.letters
        rewards[i, : len(t.rewards)] = t.rewards
    return letters, rewards, np.array([len(t.letters) for t in traces], np.int64)


def reward_traces_of(traces: Sequence[Trace], propositions: Sequence[str]):
    """The :class:`~rmtk.traces.rewards.RewardTraces` of ``traces``: the rewards per (compressed
    label word, next letter), counted as :func:`rmtk.ptp.empirical.count_chunk` counts a recording
    whose labels are given step by step (no states: the words are all that matter)."""
    from ...data import Demonstrations
    from ...mdp.space import Space
    from ...ptp.empirical import count_chunk
    from ...traces.rewards import RewardTraces

    letters, rewards, lengths = padded(traces)
    inside = letters >= 0
    states = np.where(inside, 0, -1)
    demos = Demonstrations(states, states, lengths, rewards=rewards)
    space = Space(1, 1, tuple(propositions), name="labels")
    table = count_chunk(space, demos, compress=True, labels=np.where(inside, letters, -1))  # type: ignore[arg-type]
    return RewardTraces.of(table, tuple(propositions))


__all__ = ["KeepCounterexamples", "Trace", "TraceKeeping", "padded", "reward_traces_of"]
