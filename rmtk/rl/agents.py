"""Agents nobody here wrote, behind one small protocol: :class:`Agent`.

An agent acts on *product observations* (an environment observation with a reward machine's
node, as :class:`~rmtk.gym.RewardMachineEnv` gives it: :mod:`rmtk.rl.encoding`), a batch at a
time. Every agent samples (:meth:`Agent.sample`, a ``predict``-like call whose every draw comes
from the generator it is given); an agent that knows its action distribution declares it
(``exact``, :class:`AgentCapabilities`) and gives it exactly (:meth:`AgentCapabilities.probabilities`,
one forward pass for a batch, no draw). rmtk's adapters:

* :class:`ProbabilityAgent`: any ``probabilities(obs) -> (N, A)`` (a policy network's softmax);
* :class:`QValueAgent`: any ``q_values(obs) -> (N, A)``, acting greedily with ``epsilon``
  exploration. Tie rule: the actions whose value lies within :data:`rmtk.ties.TOL` (relative
  above magnitude 1) of the largest share the greedy mass equally (:func:`rmtk.ties.best`), so
  two actions a network values the same are told apart by nothing but their values; where
  values differ by more, this is the ``argmax`` of the network;
* :class:`PredictAgent`: any ``sample(obs, rng) -> actions`` (continuous actions), sampled only.

Stable-Baselines3 models become agents through :func:`rmtk.rl.sb3.sb3_agent`; nothing here
imports torch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import attrs
import numpy as np
from gymnasium import spaces

from .. import ties
from ..errors import ModelError, RmtkError
from ..gym.policies import draw
from ..learner.capabilities import Capabilities


@runtime_checkable
class Agent(Protocol):
    """A policy on product observations (see the module docstring): its spaces and a batch of
    sampled actions."""

    observation_space: Any
    action_space: Any

    def sample(self, obs, rng: np.random.Generator) -> np.ndarray:
        """One action per product observation of the batch ``obs``, every draw from ``rng``."""


class AgentCapabilities(Capabilities):
    """What an agent can do beyond :class:`Agent`'s methods, with the defaults of one that
    does not say: it only samples."""

    __slots__ = ()

    #: It gives its exact action distribution (:meth:`probabilities`). Default: ``False``.
    exact: bool = False

    def probabilities(self, obs) -> np.ndarray:
        """``(N, A)`` action distributions at a batch of product observations (exact agents)."""
        raise RmtkError(f"{type(self).__name__} gives no action distribution (it declares exact=False)")


def _discrete(instance, attribute, value) -> None:
    if not isinstance(value, spaces.Discrete):
        raise ModelError(
            f"{type(instance).__name__} reads a Discrete action space, not {value}: an agent with continuous "
            "actions is read through its samples (PredictAgent, with an ActionBins for the expert)"
        )


def _unit(instance, attribute, value) -> None:
    if not 0.0 <= float(value) <= 1.0:
        raise ModelError(f"{attribute.name} must lie in [0, 1], got {value!r} ({type(instance).__name__})")


def _rows(values, n: int, a: int, what: str) -> np.ndarray:
    out = np.asarray(values, dtype=float)
    if out.shape != (n, a):
        raise RmtkError(f"{what} returned shape {out.shape} for {n} observations and {a} actions; expected ({n}, {a})")
    return out


@attrs.define
class ProbabilityAgent(AgentCapabilities):
    """An agent that gives its action distribution: ``probabilities(obs) -> (N, A)``; it
    samples from it with the generator it is given."""

    probabilities_of: Callable = attrs.field(repr=False)
    observation_space: Any
    action_space: spaces.Discrete = attrs.field(validator=_discrete)
    exact: bool = attrs.field(default=True, init=False)

    def probabilities(self, obs) -> np.ndarray:
        n = _batch(obs)
        return _rows(self.probabilities_of(obs), n, int(self.action_space.n), "the agent's probabilities")

    def sample(self, obs, rng: np.random.Generator) -> np.ndarray:
        return draw(np.cumsum(self.probabilities(obs), axis=1), rng) + int(self.action_space.start)


def greedy(q: np.ndarray, epsilon: float) -> np.ndarray:
    """``(N, A)`` ε-greedy distributions of Q-values ``q`` with the tie rule of the module
    docstring: ``(1 − ε)`` shared by the actions within the tolerance of the best, ``ε / A`` each."""
    best = ties.best(q, axis=1)
    return (1.0 - epsilon) * best / best.sum(axis=1, keepdims=True) + epsilon / q.shape[1]


@attrs.define
class QValueAgent(AgentCapabilities):
    """An agent acting ε-greedily on its Q-values ``q_values(obs) -> (N, A)`` (a DQN), with the
    tie rule of the module docstring; its distribution is exact."""

    q_values: Callable = attrs.field(repr=False)
    observation_space: Any
    action_space: spaces.Discrete = attrs.field(validator=_discrete)
    epsilon: float = attrs.field(default=0.0, validator=_unit)
    exact: bool = attrs.field(default=True, init=False)

    def probabilities(self, obs) -> np.ndarray:
        q = _rows(self.q_values(obs), _batch(obs), int(self.action_space.n), "the agent's Q-values")
        if not np.isfinite(q).all():
            raise RmtkError("the agent's Q-values hold NaN or infinity: it gives no greedy action there")
        return greedy(q, float(self.epsilon))

    def sample(self, obs, rng: np.random.Generator) -> np.ndarray:
        return draw(np.cumsum(self.probabilities(obs), axis=1), rng) + int(self.action_space.start)


@attrs.define
class PredictAgent(AgentCapabilities):
    """An agent that only samples: ``sample_of(obs, rng) -> actions`` (e.g. continuous actions
    drawn from a Gaussian policy); every draw must come from ``rng``."""

    sample_of: Callable = attrs.field(repr=False)
    observation_space: Any
    action_space: Any

    def sample(self, obs, rng: np.random.Generator) -> np.ndarray:
        out = np.asarray(self.sample_of(obs, rng))
        if len(out) != _batch(obs):
            raise RmtkError(f"the agent returned {len(out)} actions for {_batch(obs)} observations")
        return out


def _batch(obs) -> int:
    """The number of observations in a batch (a dict's first entry's)."""
    if isinstance(obs, dict):
        return len(next(iter(obs.values())))
    return len(obs)


def check_agent(agent) -> AgentCapabilities:
    """``agent``'s declared capabilities; a clear error when it is no :class:`Agent`."""
    if not isinstance(agent, Agent):
        raise RmtkError(
            f"{type(agent).__name__} is not an rmtk.rl.Agent (observation_space, action_space and "
            "sample(obs, rng)); a Stable-Baselines3 model becomes one with rmtk.rl.sb3_agent(model)"
        )
    return AgentCapabilities.of(agent)


__all__ = ["Agent", "AgentCapabilities", "PredictAgent", "ProbabilityAgent", "QValueAgent", "check_agent", "greedy"]
