"""Tabular Q-learning, with counterfactual experiences (CRM) when the environment is a
:class:`~rmtk.gym.RewardMachineEnv`: every step updates the Q-values of every node of the
machine, not only the one the agent is in (Toro Icarte et al.). Observations and actions
must be ``Discrete`` (use ``RewardMachineEnv(..., observation="flat")``)."""

from __future__ import annotations

from collections.abc import Callable

import attrs
import gymnasium
import numpy as np

from .. import ties
from ..errors import ModelError
from ..progress import Progress, as_progress
from .wrapper import RewardMachineEnv


def _unit(instance, attribute, value):
    if not 0.0 <= value <= 1.0:
        raise ModelError(f"{attribute.name}={value} must lie in [0, 1]")


@attrs.frozen
class Training:
    """What :meth:`QLearning.train` returns: the Q-table ``(observations, actions)`` and the
    evaluations ``(steps, value)`` made along the way."""

    q: np.ndarray = attrs.field(eq=False, repr=False)
    curve: tuple[tuple[int, float], ...]
    episodes: int


@attrs.frozen
class Episode:
    """A greedy episode: the labels read (reset label first), the rewards, whether it ended
    in a terminal state."""

    labels: tuple[str, ...]
    rewards: tuple[float, ...]
    terminated: bool


@attrs.frozen
class QLearning:
    """ε-greedy tabular Q-learning (ties broken at random, seeded: the actions within
    :data:`rmtk.ties.TOL` of the best Q-value are tied, docs/design/02-conventions.md).

    Args:
        alpha: learning rate (1 suits deterministic environments).
        gamma: discount.
        epsilon: exploration rate.
        q_init: initial Q-value (above the rewards: optimistic exploration).
        crm: learn from the counterfactual experiences of every machine node.
    """

    alpha: float = attrs.field(default=1.0, validator=_unit)
    gamma: float = attrs.field(default=0.9, validator=_unit)
    epsilon: float = attrs.field(default=0.1, validator=_unit)
    q_init: float = 0.0
    crm: bool = True

    def train(
        self,
        env: gymnasium.Env,
        steps: int,
        seed: int,
        *,
        evaluate: Callable[[np.ndarray], float] | None = None,
        every: int = 1000,
        progress: Progress | None = None,
    ) -> Training:
        """Train for ``steps`` environment steps; ``evaluate(q)`` every ``every`` steps
        (and at step 0) gives the curve."""
        progress = as_progress(progress)
        obs_space, act_space = env.observation_space, env.action_space
        if not (isinstance(obs_space, gymnasium.spaces.Discrete) and isinstance(act_space, gymnasium.spaces.Discrete)):
            raise ModelError(
                f"tabular Q-learning needs Discrete observations and actions, not {obs_space} and "
                f"{act_space} (RewardMachineEnv(..., observation='flat') flattens the product)"
            )
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise ModelError(f"steps must be a whole number of at least 1, got {steps!r}")
        crm = self.crm and isinstance(env, RewardMachineEnv)
        q = np.full((obs_space.n, act_space.n), float(self.q_init))
        rng = np.random.default_rng(seed)
        curve = [(0, float(evaluate(q)))] if evaluate is not None else []
        obs, _ = env.reset(seed=int(rng.integers(2**31)))
        episodes = 1
        for t in range(1, steps + 1):
            action = self.act(q, obs, rng)
            nxt, reward, terminated, truncated, info = env.step(action)
            batch = (
                env.counterfactual_experiences(obs, action, nxt, info)
                if crm
                else [(obs, action, reward, nxt, terminated)]
            )
            for o, a, r, o2, done in batch:
                target = r if done else r + self.gamma * q[o2].max()
                q[o, a] += self.alpha * (target - q[o, a])
            obs = nxt
            if terminated or truncated:
                obs, _ = env.reset()
                episodes += 1
            if evaluate is not None and t % every == 0:
                curve.append((t, float(evaluate(q))))
                progress.count(t, steps, "training steps")
        return Training(q, tuple(curve), episodes)

    def act(self, q: np.ndarray, obs: int, rng: np.random.Generator, greedy: bool = False) -> int:
        if not greedy and rng.random() < self.epsilon:
            return int(rng.integers(q.shape[1]))
        best = np.flatnonzero(ties.best(q[obs]))
        return int(best[0] if len(best) == 1 else rng.choice(best))


def greedy_episode(env: gymnasium.Env, q: np.ndarray, *, seed: int, max_steps: int = 1000) -> Episode:
    """One episode of the greedy policy of ``q`` (ties broken at random, seeded) in a
    :class:`~rmtk.gym.RewardMachineEnv`, with the labels it read."""
    rng = np.random.default_rng(seed)
    agent = QLearning(epsilon=0.0)
    obs, info = env.reset(seed=seed)
    labels, rewards = [info["rm_label"]], []
    for _ in range(max_steps):
        obs, reward, terminated, truncated, info = env.step(agent.act(q, obs, rng, greedy=True))
        labels.append(info["rm_label"])
        rewards.append(float(reward))
        if terminated or truncated:
            return Episode(tuple(labels), tuple(rewards), bool(terminated))
    return Episode(tuple(labels), tuple(rewards), False)
