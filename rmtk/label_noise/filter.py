"""Using a machine through a detector that errs: where the machine is, from what was detected
(docs/design/15-label-noise.md).

Each step the detector gives a probability for each letter (``q_t``, over the machine's
alphabet); the machine's node follows the true letters, which the agent does not see. Two
:class:`NodeTracker` strategies say where the machine is, as a distribution over its nodes:

* :class:`BayesFilter`: the belief ``b_t(v) = Σ_u b_{t−1}(u) Σ_ℓ q_t(ℓ)·[δ(u, ℓ) = v]``, the
  exact filter when the steps' detections are independent given the true letters and ``q_t`` is
  the probability of the step's letter given its detection (a calibrated detector);
* :class:`MostLikelyLabel`: the naive use, the node reached by reading each step's most likely
  letter as if it were true (a one-hot "belief").

:class:`NoisyDetector` simulates a detector: it records each true letter through a
:class:`~rmtk.label_noise.model.LabelNoise` (seeded) and reports the calibrated probabilities
of the recorded letter, ``C[:, k]`` normalised.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import attrs
import numpy as np

from ..errors import ModelError
from ..machine.model import RewardMachine
from .model import LabelNoise


def _letter_probabilities(q, n_letters: int) -> np.ndarray:
    q = np.asarray(q, dtype=np.float64)
    if q.shape != (n_letters,) or not np.all(np.isfinite(q)) or q.min() < 0 or q.sum() <= 0:
        raise ModelError(f"a detection is {n_letters} non-negative probabilities, not all 0; got {q.tolist()}")
    return q / q.sum()


def _at_initial(machine: RewardMachine) -> np.ndarray:
    b = np.zeros(machine.n_nodes)
    b[machine.initial] = 1.0
    return b


@runtime_checkable
class Detector(Protocol):
    """The Detector strategy of ``RewardMachineEnv(observation="belief")``: what the agent sees
    of each step's label."""

    def __call__(self, obs, info) -> np.ndarray:
        """The probability of each letter of the machine's alphabet at this observation."""

    def reset(self, seed: int | None) -> None:
        """A new episode (``seed``: the environment's reset seed, ``None`` when not given)."""


@runtime_checkable
class NodeTracker(Protocol):
    """The NodeTracker strategy: where a machine is, as a distribution over its nodes, from the
    detections of each step (``q``: a probability per letter of the machine's alphabet)."""

    def start(self, q) -> np.ndarray:
        """The distribution after the first detection (the reset observation's label already
        moves the machine: docs/design/02-conventions.md)."""

    def step(self, belief: np.ndarray, q) -> np.ndarray:
        """The distribution after one more detection."""

    def letters(self, q) -> np.ndarray:
        """How much each letter weighs in a step's counterfactual experiences (sums to 1)."""


@attrs.frozen
class BayesFilter:
    """The belief over the nodes (module docstring): a mixture of the transitions on every
    letter, weighted by the detection."""

    machine: RewardMachine

    def start(self, q) -> np.ndarray:
        return self.step(_at_initial(self.machine), q)

    def step(self, belief: np.ndarray, q) -> np.ndarray:
        m = self.machine
        q = _letter_probabilities(q, len(m.alphabet))
        out = np.zeros(m.n_nodes)
        # every (node, letter) pair moves mass b(u)·q(ℓ) to δ(u, ℓ)
        np.add.at(out, m.delta_u.ravel(), (np.asarray(belief, np.float64)[:, None] * q[None, :]).ravel())
        return out / out.sum()

    def letters(self, q) -> np.ndarray:
        """The detection itself: each letter as likely as the detector says."""
        return _letter_probabilities(q, len(self.machine.alphabet))


@attrs.frozen
class MostLikelyLabel:
    """The naive tracker: each step's most likely letter (the first of equals) read as true."""

    machine: RewardMachine

    def start(self, q) -> np.ndarray:
        return self.step(_at_initial(self.machine), q)

    def step(self, belief: np.ndarray, q) -> np.ndarray:
        m = self.machine
        out = np.zeros(m.n_nodes)
        out[m.delta_u[int(np.argmax(belief)), int(np.argmax(self.letters(q)))]] = 1.0
        return out

    def letters(self, q) -> np.ndarray:
        """The most likely letter alone."""
        from .. import ties

        out = np.zeros(len(self.machine.alphabet))
        out[int(ties.argbest(_letter_probabilities(q, len(self.machine.alphabet))))] = 1.0
        return out


class NoisyDetector:
    """A simulated detector: ``detector(true_letter) -> (recorded letter, probabilities)``, the
    recorded letter drawn from ``noise``'s row of the true letter (its own generator, seeded by
    ``seed`` and by :meth:`reseed`), the probabilities those of the true letters given the
    recorded one (``noise.posterior``: calibrated, the letters alike a priori)."""

    def __init__(self, noise: LabelNoise, seed: int):
        if not isinstance(noise, LabelNoise):
            raise ModelError(f"a NoisyDetector needs a LabelNoise, not {type(noise).__name__}")
        self.noise = noise
        self._cdf = np.cumsum(noise.confusion, axis=1)
        self._cdf[:, -1] = 1.0
        self._post = noise.posterior(np.arange(noise.n_letters))  # row k: given recorded k
        self.rng = np.random.default_rng(seed)

    def reseed(self, seed: int) -> None:
        """Start the detector's draws afresh from ``seed`` (an environment's reset seed)."""
        self.rng = np.random.default_rng(seed)

    def __call__(self, letter: int) -> tuple[int, np.ndarray]:
        drawn = int(np.searchsorted(self._cdf[int(letter)], self.rng.random(), side="right"))
        k = min(drawn, self.noise.n_letters - 1)
        return k, self._post[k]
