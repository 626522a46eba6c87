"""Which letter a stored step is replayed with, in the online loop's replay buffer
(:mod:`rmtk.rl.online.buffer`; docs/guide/15-noisy-labels.md): the ``ReplayLetters`` strategy.

The buffer stores each step's letter as the labeler read it then, and replays it under whatever
hypothesis is current (a swap relabels the nodes, not the letters). With a detector that errs,
:class:`~rmtk.label_noise.online.StateBeliefLabels` reads a state's first visits as their
detections say, and a letter read wrong stays in the buffer with the step (a phantom payment, a
decoration that was not there) long after the detections there have settled the state's letter:

* :class:`AsRead` (the default): the letter as read when the step was stored;
* :class:`AsBelieved`: the letter its state is believed to carry *when the batch is drawn* (the
  labeler's most likely letter from every detection there so far; a state never detected keeps
  the letter read), so every stored step follows the detections as they pile up, as
  :class:`~rmtk.rl.online.labels.BelievedLabels` rereads the kept traces.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import attrs
import numpy as np

from ...errors import ModelError
from ...label_noise.online import StateBeliefLabels


@runtime_checkable
class ReplayLetters(Protocol):
    """The ReplayLetters strategy: the letters a batch of stored steps is replayed with."""

    def letters(self, recorded: np.ndarray, states, propositions: Sequence[str]) -> np.ndarray:
        """The letter index (in ``propositions``) of each stored step, from the letters
        ``recorded`` when it was stored and ``states``, the environment observations it led to."""


@attrs.frozen
class AsRead:
    """Each stored step replayed with the letter read when it was stored (module docstring)."""

    def letters(self, recorded: np.ndarray, states, propositions: Sequence[str]) -> np.ndarray:
        return recorded


def _labels(instance, attribute, value) -> None:
    if not isinstance(value, StateBeliefLabels):
        raise ModelError(f"AsBelieved.labels must be the run's StateBeliefLabels (the labeler), not {value!r}")


@attrs.frozen
class AsBelieved:
    """Each stored step replayed with its state's letter as the detections believe it when the
    batch is drawn (module docstring). ``labels``: the run's labeler."""

    labels: StateBeliefLabels = attrs.field(validator=_labels)

    def letters(self, recorded: np.ndarray, states, propositions: Sequence[str]) -> np.ndarray:
        s = np.asarray(states)
        if s.ndim != 1 or not np.issubdtype(s.dtype, np.integer):
            s = s.reshape(len(recorded), -1)
            if s.shape[1] != 1 or not np.all(s == np.round(s)):
                raise ModelError("AsBelieved reads the states of a Discrete observation space (StateBeliefLabels')")
            s = s[:, 0].astype(np.int64)
        believed = self.labels.letters()
        if s.size and (s.min() < 0 or s.max() >= len(believed)):
            raise ModelError(f"AsBelieved: a stored state outside the labeler's {len(believed)}")
        to = np.array([list(propositions).index(p) for p in self.labels.propositions], dtype=np.int64)
        now = believed[s]
        return np.where(now >= 0, to[np.maximum(now, 0)], recorded)


__all__ = ["AsBelieved", "AsRead", "ReplayLetters"]
