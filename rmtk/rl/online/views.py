"""What the agent of the online loop sees of the hypothesis' node (docs/guide/15-noisy-labels.md):
the NodeView strategy of :class:`~rmtk.rl.online.env.OnlineEnv`.

* :class:`HardNode` (the default): the node reached along the letters the labeler returned,
  one-hot in the node slot (or in the ``Discrete`` product index), as
  :class:`~rmtk.gym.RewardMachineEnv` encodes it;
* :class:`FilteredBelief`: the labels come through a detector that errs
  (:class:`~rmtk.label_noise.online.StateBeliefLabels`), and the slot holds the belief over the
  hypothesis' nodes that the Bayes filter (:class:`~rmtk.label_noise.filter.BayesFilter`) keeps
  from each step's detection, as ``RewardMachineEnv(observation="belief")`` does for a given
  machine; the nodes past the hypothesis' size hold 0. The observation is a ``Box``: the
  environment's ``Box`` observation, or the one-hot of a ``Discrete`` one, then the slot of
  ``max_nodes``. The agent acts on the belief; the replay buffer
  (:mod:`rmtk.rl.online.buffer`) still trains it on each node of the current hypothesis, one-hot
  (the belief's corners), with the step's letter, so a swap relabels every stored step; and the
  current episode's belief is filtered again over the new hypothesis' nodes from its detections.

A view keeps its per-episode state in a value the environment holds (``state``), so the strategy
itself stays immutable.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import attrs
import numpy as np
from gymnasium import spaces

from ...errors import ModelError
from ...label_noise.filter import BayesFilter
from ...label_noise.online import StateBeliefLabels
from ..encoding import ProductEncoding
from .hypothesis import Hypothesis


@runtime_checkable
class NodeView(Protocol):
    """The NodeView strategy (module docstring): the observation space, and the slot of each step."""

    def reads(self, labeler) -> None:
        """A clear error unless the view can follow the run's ``labeler``."""

    def space(self, inner: spaces.Space, max_nodes: int, observation: str) -> spaces.Space:
        """The agent's observation space for the environment's ``inner``."""

    def encoding(self, space: spaces.Space, max_nodes: int, inner: spaces.Space) -> ProductEncoding:
        """How the replay buffer reads and writes ``space``'s observations at a node."""

    def start(self, hypothesis: Hypothesis, letter: int) -> Any:
        """The episode's state after its reset observation (labelled ``letter``)."""

    def step(self, hypothesis: Hypothesis, state: Any, letter: int) -> Any:
        """The state after one more step (labelled ``letter``)."""

    def swapped(self, hypothesis: Hypothesis, state: Any) -> Any:
        """The episode's state over a new ``hypothesis``."""

    def encode(self, encoding: ProductEncoding, obs, node: int, state: Any) -> Any:
        """The product observation of ``obs`` with the hypothesis at ``node`` (the labels' one)."""


@attrs.frozen
class HardNode:
    """The node along the letters the labeler returned (module docstring)."""

    def reads(self, labeler) -> None:
        return None

    def space(self, inner: spaces.Space, max_nodes: int, observation: str) -> spaces.Space:
        from ...gym.wrapper import product_space

        return product_space(inner, max_nodes, observation)

    def encoding(self, space: spaces.Space, max_nodes: int, inner: spaces.Space) -> ProductEncoding:
        return ProductEncoding.of(space, max_nodes, inner)

    def start(self, hypothesis: Hypothesis, letter: int) -> None:
        return None

    def step(self, hypothesis: Hypothesis, state: None, letter: int) -> None:
        return None

    def swapped(self, hypothesis: Hypothesis, state: None) -> None:
        return None

    def encode(self, encoding: ProductEncoding, obs, node: int, state: None) -> Any:
        if encoding.mode == "dict":
            return {"obs": obs, "node": int(node)}
        out = encoding.encode(np.asarray(obs)[None, ...], [node])
        return int(out[0]) if np.ndim(out) == 1 else out[0]


@attrs.frozen
class Filtered:
    """An episode's state under :class:`FilteredBelief`: its detections and the belief over the
    hypothesis' nodes after them."""

    detections: tuple[np.ndarray, ...] = attrs.field(eq=False)
    belief: np.ndarray = attrs.field(eq=False)


def _labels(instance, attribute, value) -> None:
    if not isinstance(value, StateBeliefLabels):
        raise ModelError(
            f"FilteredBelief.labels must be the run's StateBeliefLabels (the labeler), not {type(value).__name__}"
        )


@attrs.frozen
class FilteredBelief:
    """The Bayes filter's belief over the hypothesis' nodes in the node slot (module docstring).

    Args:
        labels: the run's labeler, a :class:`~rmtk.label_noise.online.StateBeliefLabels` (the
            same object given to the learner): each step's detection is the one it just read.
    """

    labels: StateBeliefLabels = attrs.field(validator=_labels)

    def reads(self, labeler) -> None:
        if labeler is not self.labels:
            raise ModelError(
                "FilteredBelief filters the detections of its StateBeliefLabels: give the same object as the "
                f"run's labeler, not {type(labeler).__name__}"
            )

    def space(self, inner: spaces.Space, max_nodes: int, observation: str) -> spaces.Space:
        from ...gym.wrapper import product_space

        if observation != "flat":
            raise ModelError(
                f"FilteredBelief puts the belief in a flat Box observation: use observation='flat', not {observation!r}"
            )
        if isinstance(inner, spaces.Discrete):
            return spaces.Box(0.0, 1.0, (int(inner.n) + int(max_nodes),), dtype=np.float32)
        if isinstance(inner, spaces.Box) and len(inner.shape) == 1:
            return product_space(inner, max_nodes, "flat")
        raise ModelError(f"FilteredBelief needs a Discrete or one-dimensional Box observation space, not {inner}")

    def encoding(self, space: spaces.Space, max_nodes: int, inner: spaces.Space) -> ProductEncoding:
        return ProductEncoding.of(space, max_nodes, None if isinstance(inner, spaces.Discrete) else inner)

    def _detection(self) -> np.ndarray:
        q = self.labels.last
        if q is None:
            raise ModelError("FilteredBelief reads the detection of the labeler it was given: pass that labeler")
        return q

    def _filter(self, hypothesis: Hypothesis, detections) -> np.ndarray:
        f = BayesFilter(hypothesis.machine)
        b = f.start(detections[0])
        for q in detections[1:]:
            b = f.step(b, q)
        return b

    def start(self, hypothesis: Hypothesis, letter: int) -> Filtered:
        q = self._detection()
        return Filtered((q,), BayesFilter(hypothesis.machine).start(q))

    def step(self, hypothesis: Hypothesis, state: Filtered, letter: int) -> Filtered:
        q = self._detection()
        return Filtered((*state.detections, q), BayesFilter(hypothesis.machine).step(state.belief, q))

    def swapped(self, hypothesis: Hypothesis, state: Filtered) -> Filtered:
        return Filtered(state.detections, self._filter(hypothesis, state.detections))

    def encode(self, encoding: ProductEncoding, obs, node: int, state: Filtered) -> Any:
        n = encoding.n_nodes
        if np.ndim(obs) == 0:  # a Discrete observation, one-hot
            flat = np.zeros(encoding.inner.shape[0], dtype=encoding.space.dtype)
            flat[int(np.asarray(obs).reshape(-1)[0])] = 1
        else:
            flat = np.asarray(obs, dtype=encoding.space.dtype).reshape(-1)
        slot = np.zeros(n, dtype=encoding.space.dtype)
        slot[: len(state.belief)] = state.belief
        return np.concatenate([flat, slot])


__all__ = ["Filtered", "FilteredBelief", "HardNode", "NodeView"]
