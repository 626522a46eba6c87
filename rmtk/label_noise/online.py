"""Labels for the online learner (:mod:`rmtk.rl.online`) when they come through a detector that
errs (docs/design/15-label-noise.md): :class:`StateBeliefLabels`.

The online loop reads one letter per step and infers machines from the letters of the traces it
keeps; a letter a detector got wrong makes a trace that no machine of the task explains. As
offline (:mod:`rmtk.label_noise.evidence`), the true letter is a function of the state, and every
visit records it anew with its own error, so the labeler keeps, per state of a ``Discrete``
observation space, the sum over its visits of the log-probability of each letter (the detector's
probabilities, calibrated, the letters alike a priori) and returns the state's most likely letter
(:func:`rmtk.ties.argbest`: the first of equals). A state's first visits may be read wrong; the
more it is visited, the surer its letter, and the loop's later traces read the truth. A trace
kept with a letter read wrong is read again at each inference by
:class:`~rmtk.rl.online.labels.BelievedLabels` (from its states, through the detections piled
up since), which also lets the machine choose the letter of a state the detections still leave
in doubt, at the cost of its log-likelihood.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .. import ties
from ..errors import ModelError
from .evidence import DOUBT, LabelBeliefs, StateEvidence

#: The smallest probability a detection gives a letter, in the log-evidence (a sure detector's 0
#: would make one wrong visit outweigh every other).
FLOOR = 1e-6


class StateBeliefLabels:
    """``labeler(obs, info) -> proposition``: the most likely letter of the observation's state
    from every detection there so far (module docstring).

    Args:
        detector: ``detector(obs, info)`` → the probability of each proposition (in the order of
            ``propositions``), e.g. :class:`~rmtk.gym.belief.SimulatedDetector`.
        propositions: the alphabet.
        n_states: the number of observations (a ``Discrete(n_states)`` observation space).
    """

    def __init__(self, detector: Callable, propositions: Sequence[str], n_states: int):
        if not callable(detector):
            raise ModelError(f"detector must be callable, detector(obs, info) -> probabilities, not {detector!r}")
        self.detector = detector
        self.propositions = tuple(propositions)
        if int(n_states) < 1:
            raise ModelError(f"n_states must be at least 1, got {n_states!r}")
        #: ``(n_states, letters)``: the summed log-probabilities of each letter at each state
        self.evidence = np.zeros((int(n_states), len(self.propositions)))
        #: ``(n_states, letters)``: how often each letter was a detection's most likely one at each state
        self.counts = np.zeros((int(n_states), len(self.propositions)), dtype=np.int64)
        #: the last detection, normalised (``None`` before the first): what a step showed of its
        #: letter, for a Bayes filter over a machine's nodes (:class:`~rmtk.rl.online.views.FilteredBelief`)
        self.last: np.ndarray | None = None

    def _state(self, obs) -> int:
        s = int(np.asarray(obs).reshape(-1)[0]) if np.ndim(obs) else int(obs)
        if not 0 <= s < len(self.visits):
            raise ModelError(f"StateBeliefLabels reads Discrete({len(self.visits)}) observations; got {obs!r}")
        return s

    def __call__(self, obs, info) -> str:
        s = self._state(obs)
        q = np.asarray(self.detector(obs, info), dtype=np.float64)
        if q.shape != (len(self.propositions),) or not np.all(np.isfinite(q)) or q.min() < 0 or q.sum() <= 0:
            raise ModelError(f"a detection is {len(self.propositions)} non-negative probabilities; got {q.tolist()}")
        self.last = q / q.sum()
        self.evidence[s] += np.log(np.maximum(self.last, FLOOR))
        self.counts[s, int(np.argmax(q))] += 1  # integers of one detection: no tie by noise
        return self.propositions[int(ties.argbest(self.evidence[s]))]

    @property
    def visits(self) -> np.ndarray:
        """``(n_states,)``: the detections recorded at each state."""
        return self.counts.sum(axis=1)

    def beliefs(self, doubt: float = DOUBT) -> LabelBeliefs:
        """Every state's letter as the detections so far say it, with the states they leave in
        ``doubt`` (:class:`~rmtk.label_noise.evidence.LabelBeliefs`: a rival letter more than
        ``doubt`` times as likely as the most likely one)."""
        return LabelBeliefs.of(StateEvidence(self.counts, self.evidence.copy()), None, doubt=doubt)

    def letters(self) -> np.ndarray:
        """Each state's believed letter index (``-1``: never visited)."""
        out = ties.argbest(self.evidence, axis=1).astype(np.int64)
        out[self.visits == 0] = -1
        return out


__all__ = ["FLOOR", "StateBeliefLabels"]
