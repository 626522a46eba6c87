"""Using a machine through a detector that errs: where the machine is, from what was detected
(docs/design/15-label-noise.md).

Each step the detector gives a probability for each letter (``q_t``, over the machine's
alphabet); the machine's node follows the true letters, which the agent does not see. Two
:class:`NodeTracker` strategies say where the machine is, as a distribution over its nodes:

* :class:`BayesFilter`: the belief ``b_t(v) = Σ_u b_{t−1}(u) Σ_ℓ q_t(ℓ)·[δ(u, ℓ) = v]``, the
  exact filter when the steps' detections are independent given the true letters and ``q_t`` is
  the probability of the step's letter given its detection (a calibrated detector);
* :class:`MostLikelyLabel`: the naive use, the node reached by reading each step's most likely
  letter as if it were true (a one-hot "belief");
* :class:`PooledStateLetters` around either: each step's letter read as the posterior of its
  *state's* letter given every detection at that state so far (the label model: a letter is a
  function of the state, each visit an independent draw of the detector), instead of the step's
  own detection alone. It declares the capability (:class:`TrackerCapabilities`) the wrapper reads
  to hand it each step's observation.

:class:`NoisyDetector` simulates a detector: it records each true letter through a
:class:`~rmtk.label_noise.model.LabelNoise` (seeded) and reports the calibrated probabilities
of the recorded letter, ``C[:, k]`` normalised.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import attrs
import numpy as np

from ..errors import ModelError
from ..learner.capabilities import Capabilities
from ..machine.model import RewardMachine
from .model import LabelNoise
from .online import FLOOR


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


class TrackerCapabilities(Capabilities):
    """What a :class:`NodeTracker` does beyond its protocol (read with
    :meth:`~rmtk.learner.capabilities.Capabilities.of`; a purely structural tracker has these
    defaults)."""

    __slots__ = ()

    def pool(self, obs, q) -> np.ndarray:
        """The letter probabilities the tracker reads at a step whose observation is ``obs`` and
        detection ``q``, handed to ``start``, ``step`` and ``letters``: by default the detection
        itself (the tracker does not read the state)."""
        return q


@attrs.frozen
class BayesFilter(TrackerCapabilities):
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
class MostLikelyLabel(TrackerCapabilities):
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


@attrs.define(eq=False)
class PooledStateLetters(TrackerCapabilities):
    """A tracker reading each step's letter as its *state's*: the posterior of the letter of the
    step's state given every detection there so far, ``p(ℓ) ∝ Π_i q_i(ℓ)`` over the detections
    ``q_i`` of that state (calibrated, the letters alike a priori, the draws independent: the label
    model, in which a letter is a function of the state), passed on to ``tracker``.

    ``PooledStateLetters(BayesFilter(m), n)`` is the belief over the nodes predicted through the
    pooled letter posterior; ``PooledStateLetters(MostLikelyLabel(m), n)`` reads the most likely
    pooled letter as true. The node belief is a filter: a step's letter is read with the detections
    of its state up to that step and not revised later, and the letters of two steps are weighed as
    independent (a state visited twice in an episode has one letter; exact only when its posterior
    is sure). The evidence is kept across episodes: share one tracker between the environments of
    one world (training and evaluation) so that what it learned of the states carries. A
    detection's probabilities are floored at :data:`~rmtk.label_noise.online.FLOOR` (as
    :class:`~rmtk.label_noise.online.StateBeliefLabels` does), so that one sure but wrong
    detection does not outweigh every other visit.

    Args:
        tracker: the tracker the pooled probabilities are handed to.
        n_states: the states, ``Discrete(n_states)`` observations numbered from ``first``.
        first: the first observation (a ``Discrete`` space's ``start``).
    """

    tracker: NodeTracker
    n_states: int = attrs.field(converter=int)
    first: int = attrs.field(default=0, converter=int)
    #: ``(n_states, letters)``: the summed log-probabilities of each letter at each state
    evidence: np.ndarray = attrs.field(init=False, repr=False)
    #: ``(n_states,)``: the detections pooled at each state
    visits: np.ndarray = attrs.field(init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.tracker, NodeTracker):
            raise ModelError(f"PooledStateLetters needs a NodeTracker to hand on to, not {type(self.tracker).__name__}")
        if self.n_states < 1:
            raise ModelError(f"n_states must be at least 1, got {self.n_states}")
        self.evidence = np.zeros((self.n_states, 0))
        self.visits = np.zeros(self.n_states, dtype=np.int64)

    def pool(self, obs, q) -> np.ndarray:
        """Add the detection ``q`` to the evidence of ``obs``'s state; the posterior of its letter."""
        q = np.asarray(q, dtype=np.float64)
        if q.ndim != 1 or not np.all(np.isfinite(q)) or q.min() < 0 or q.sum() <= 0:
            raise ModelError(f"a detection is non-negative probabilities, not all 0; got {q.tolist()}")
        if self.evidence.shape[1] != len(q):
            if self.visits.any():
                raise ModelError(f"a detection of {len(q)} letters after ones of {self.evidence.shape[1]}")
            self.evidence = np.zeros((self.n_states, len(q)))
        s = int(np.asarray(obs).reshape(-1)[0]) if np.ndim(obs) else int(obs)
        if not self.first <= s < self.first + self.n_states:
            raise ModelError(
                f"PooledStateLetters reads Discrete({self.n_states}, start={self.first}) observations; got {obs!r}"
            )
        row = self.evidence[s - self.first]
        row += np.log(np.maximum(q / q.sum(), FLOOR))
        self.visits[s - self.first] += 1
        p = np.exp(row - row.max())
        return p / p.sum()

    def start(self, q) -> np.ndarray:
        return self.tracker.start(q)

    def step(self, belief: np.ndarray, q) -> np.ndarray:
        return self.tracker.step(belief, q)

    def letters(self, q) -> np.ndarray:
        return self.tracker.letters(q)


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
