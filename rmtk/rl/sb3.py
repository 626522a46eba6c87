"""Stable-Baselines3 models as :class:`~rmtk.rl.agents.Agent`\\ s: :func:`sb3_agent`.

* DQN (discrete actions): a :class:`~rmtk.rl.agents.QValueAgent` of its Q-network, greedy
  with ``epsilon`` exploration and the tie rule of :mod:`rmtk.rl.agents` (exact);
* an actor-critic policy (PPO, A2C) with discrete actions: a
  :class:`~rmtk.rl.agents.ProbabilityAgent` of ``model.policy.get_distribution(obs)``, the
  network's softmax (exact);
* continuous actions (``Box``: SAC, TD3, PPO, A2C): a :class:`~rmtk.rl.agents.PredictAgent`
  of ``model.predict`` (``deterministic`` as given), torch's random numbers seeded from the
  generator it is given (in a forked, restored random state), so the same seed draws the same
  actions.

A forward pass takes the whole batch (one call for a vector environment's copies). torch and
stable_baselines3 are imported when a model is adapted, never by ``import rmtk.rl``.

:func:`no_log_folder` gives a model the logger Stable-Baselines3 would make, without the empty
``SB3-<date>`` folder it otherwise leaves in the temporary directory at every ``learn``.
"""

from __future__ import annotations

import contextlib
from typing import Any

import attrs
import numpy as np
from gymnasium import spaces

from ..errors import ModelError, RmtkError
from .agents import Agent, PredictAgent, ProbabilityAgent, QValueAgent

MISSING = "Stable-Baselines3 is not installed: pip install '.[rl]' in rmtk's checkout (stable-baselines3, with torch)"


def _require():
    try:
        import stable_baselines3
    except ImportError:
        raise RmtkError(MISSING) from None
    return stable_baselines3


@contextlib.contextmanager
def one_thread():
    """torch on one thread for the duration (the caller's setting restored after): a forward
    pass of a small network on a batch of thousands gains nothing from a second thread, and on
    a busy machine torch's threads wait for a free core (a 2 ms pass of the reacher's agent
    took 90 ms with two threads on a loaded 2-core machine); as rmtk/_threads.py does for BLAS."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _tensor(model, obs):
    obs_tensor, _ = model.policy.obs_to_tensor(obs)
    return obs_tensor


@attrs.frozen
class SB3QValues:
    """``q_values(obs)`` of a DQN: its Q-network on the batch, as float64."""

    model: Any = attrs.field(repr=False)

    def __call__(self, obs) -> np.ndarray:
        import torch

        self.model.policy.set_training_mode(False)
        with torch.no_grad(), one_thread():
            return self.model.q_net(_tensor(self.model, obs)).cpu().numpy().astype(float)


@attrs.frozen
class SB3Probabilities:
    """``probabilities(obs)`` of an actor-critic policy with discrete actions: the softmax of
    ``model.policy.get_distribution(obs)``, as float64."""

    model: Any = attrs.field(repr=False)

    def __call__(self, obs) -> np.ndarray:
        import torch

        self.model.policy.set_training_mode(False)
        with torch.no_grad(), one_thread():
            dist = self.model.policy.get_distribution(_tensor(self.model, obs))
            return dist.distribution.probs.cpu().numpy().astype(float)


@attrs.frozen
class SB3Predict:
    """``sample(obs, rng)`` through ``model.predict``, torch seeded from ``rng`` (see the
    module docstring)."""

    model: Any = attrs.field(repr=False)
    deterministic: bool = False

    def __call__(self, obs, rng: np.random.Generator) -> np.ndarray:
        import torch

        seed = int(rng.integers(2**63))
        with torch.random.fork_rng(devices=[]), one_thread():
            torch.manual_seed(seed)
            actions, _ = self.model.predict(obs, deterministic=self.deterministic)
        return np.asarray(actions)


def quiet_logger():
    """A logger that writes nowhere (no ``SB3-<date>`` folder in the temporary directory)."""
    from stable_baselines3.common.logger import Logger

    return Logger(folder=None, output_formats=[])


def no_log_folder(model):
    """``model`` (a Stable-Baselines3 model), its logger set: to standard output when it is
    verbose, nowhere else. Without a logger set, Stable-Baselines3 makes one at every ``learn``
    in a new folder ``SB3-<date>`` of the temporary directory, even when it writes nothing
    there; a model logging to TensorBoard (``tensorboard_log``) keeps its own."""
    sb3 = _require()
    if not isinstance(model, sb3.common.base_class.BaseAlgorithm):
        raise RmtkError(f"no_log_folder takes a Stable-Baselines3 model, not {type(model).__name__}")
    if model.tensorboard_log is None:
        import sys

        from stable_baselines3.common.logger import HumanOutputFormat, Logger

        model.set_logger(Logger(None, [HumanOutputFormat(sys.stdout)] if model.verbose >= 1 else []))
    return model


def sb3_agent(model, *, epsilon: float = 0.0, deterministic: bool = False) -> Agent:
    """The :class:`~rmtk.rl.agents.Agent` of a Stable-Baselines3 model (see the module
    docstring). ``epsilon``: a DQN's exploration rate (0: greedy); ``deterministic``: a
    continuous-action policy's mean action instead of a draw."""
    sb3 = _require()
    if not isinstance(model, sb3.common.base_class.BaseAlgorithm):
        raise RmtkError(
            f"sb3_agent takes a Stable-Baselines3 model (PPO, A2C, DQN, SAC, …), not {type(model).__name__}"
        )
    obs_space, act_space = model.observation_space, model.action_space
    if isinstance(model, sb3.DQN):
        return QValueAgent(SB3QValues(model), obs_space, act_space, epsilon)
    if isinstance(act_space, spaces.Discrete):
        if not hasattr(model.policy, "get_distribution"):
            raise ModelError(
                f"the {type(model).__name__} policy gives no action distribution (get_distribution); "
                "rmtk reads DQN's Q-values and actor-critic policies (PPO, A2C)"
            )
        return ProbabilityAgent(SB3Probabilities(model), obs_space, act_space)
    if isinstance(act_space, spaces.Box):
        return PredictAgent(SB3Predict(model, bool(deterministic)), obs_space, act_space)
    raise ModelError(
        f"the {type(model).__name__} model's action space is {act_space}: an agent's actions are read when "
        "they are Discrete (exact distributions) or a Box (sampled, then binned by an ActionBins)"
    )


def as_agent(agent, **kwargs) -> Agent:
    """``agent`` itself when it is an :class:`~rmtk.rl.agents.Agent`, the agent of a
    Stable-Baselines3 model (:func:`sb3_agent`), else a clear error."""
    if isinstance(agent, Agent):
        return agent
    if type(agent).__module__.split(".")[0] == "stable_baselines3":
        return sb3_agent(agent, **kwargs)
    raise RmtkError(
        f"{type(agent).__name__} is not an rmtk.rl.Agent (observation_space, action_space and sample(obs, rng)) "
        "nor a Stable-Baselines3 model"
    )


__all__ = ["MISSING", "SB3Predict", "SB3Probabilities", "SB3QValues", "as_agent", "no_log_folder", "sb3_agent"]
