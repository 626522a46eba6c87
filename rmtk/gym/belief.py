"""Acting with a reward machine whose labels come through a detector that errs
(docs/design/15-label-noise.md): the detector of ``RewardMachineEnv(observation="belief")`` and
tabular Q-learning on the belief.

* :class:`~rmtk.label_noise.filter.Detector` (also ``rmtk.gym.Detector``): what the wrapper asks
  each step, ``detector(obs, info)`` → the probability of each letter of the machine's alphabet,
  and ``reset(seed)``; :class:`SimulatedDetector` reads
  the world's label with a labeler and records it through a
  :class:`~rmtk.label_noise.model.LabelNoise` (seeded), reporting the calibrated probabilities.
* :class:`BeliefQLearning`: Q-values per (state, node, action) as with CRM, acting on the belief
  ``b``: the action of the largest ``Σ_u b(u)·Q(s, u, a)`` (the Q-values of the nodes weighed by
  how likely each is; ε-greedy, ties at random, seeded), and updating every non-terminal node of
  every step with the expected target under the step's letter weights
  (:meth:`~rmtk.gym.wrapper.RewardMachineEnv.belief_experiences`).

With the naive tracker (:class:`~rmtk.label_noise.filter.MostLikelyLabel`) the belief is one
node and the letters weighed are the most likely one: the same learner is then plain CRM on the
labels read as true, the baseline the belief is measured against.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
import gymnasium
import numpy as np

from .. import ties
from ..errors import ModelError
from ..label_noise.filter import NoisyDetector
from ..label_noise.model import LabelNoise
from ..machine.model import RewardMachine
from .qlearning import QLearning
from .wrapper import RewardMachineEnv


class SimulatedDetector:
    """A detector of the world's labels (``labeler(obs, info)`` → a letter of ``machine``'s
    alphabet) that records each through ``noise`` (over the machine's alphabet) and reports the
    probabilities of the true letters given the recorded one. Its draws come from ``seed`` and,
    at a reset with a seed, from that seed (so an evaluation episode replays the same draws)."""

    def __init__(self, labeler: Callable, machine: RewardMachine, noise: LabelNoise, seed: int):
        if noise.propositions != machine.alphabet:
            raise ModelError(
                f"the detector's noise is stated over {list(noise.propositions)}; the machine reads "
                f"{list(machine.alphabet)}"
            )
        self.labeler, self.machine, self.seed = labeler, machine, int(seed)
        self._noisy = NoisyDetector(noise, seed)
        self._letters = {p: k for k, p in enumerate(machine.alphabet)}

    def reset(self, seed: int | None) -> None:
        if seed is not None:
            self._noisy.reseed(int(seed) * 7919 + self.seed)

    def __call__(self, obs, info) -> np.ndarray:
        return self._noisy(self._letters[self.labeler(obs, info)])[1]


def _states(env) -> tuple[RewardMachineEnv, int, int]:
    """``env`` checked to be a belief product over ``Discrete`` observations, its number of
    observations and the first one."""
    if not isinstance(env, RewardMachineEnv) or env.tracker is None:
        raise ModelError("BeliefQLearning needs RewardMachineEnv(..., observation='belief', detector=...)")
    inner = env.env.observation_space
    if not isinstance(inner, gymnasium.spaces.Discrete):
        raise ModelError(f"BeliefQLearning is tabular: the environment's observations must be Discrete, not {inner}")
    return env, int(inner.n), int(inner.start)


@attrs.frozen
class BeliefQLearning:
    """ε-greedy tabular Q-learning on a belief (module docstring), the settings of
    :class:`~rmtk.gym.QLearning`. The learning rate defaults to 0.1, not 1: under a detector's
    noise the target of a step depends on what was detected, and a rate of 1 keeps only the
    last draw."""

    alpha: float = 0.1
    gamma: float = 0.9
    epsilon: float = 0.1
    q_init: float = 0.0

    def __attrs_post_init__(self) -> None:
        QLearning(self.alpha, self.gamma, self.epsilon, self.q_init)  # the same checks

    def act(self, q: np.ndarray, s: int, belief: np.ndarray, rng: np.random.Generator, greedy: bool = False) -> int:
        if not greedy and rng.random() < self.epsilon:
            return int(rng.integers(q.shape[2]))
        best = np.flatnonzero(ties.best(np.asarray(belief) @ q[s]))
        return int(best[0] if len(best) == 1 else rng.choice(best))

    def train(
        self,
        env: RewardMachineEnv,
        steps: int,
        seed: int,
        *,
        evaluate: Callable[[np.ndarray], float] | None = None,
        every: int = 1000,
    ) -> tuple[np.ndarray, tuple[tuple[int, float], ...]]:
        """Train for ``steps`` environment steps: the Q-table ``(S, n, A)`` and the evaluations
        ``(steps, evaluate(q))`` every ``every`` steps (and at step 0)."""
        env, S, start = _states(env)
        n, A = env.machine.n_nodes, int(env.action_space.n)  # type: ignore[attr-defined]
        q = np.full((S, n, A), float(self.q_init))
        rng = np.random.default_rng(seed)
        curve = [(0, float(evaluate(q)))] if evaluate is not None else []
        obs, _ = env.reset(seed=int(rng.integers(2**31)))
        for t in range(1, steps + 1):
            s = int(obs["obs"]) - start
            action = self.act(q, s, obs["belief"], rng)
            nxt, _, terminated, truncated, info = env.step(action)
            s2 = int(nxt["obs"]) - start
            rows = env.belief_experiences(info)
            future = np.where(rows.terminated, 0.0, q[s2, rows.next_node].max(axis=1))
            target = np.zeros(n)
            np.add.at(target, rows.node, rows.weight * (rows.reward + self.gamma * future))
            live = np.unique(rows.node)
            q[s, live, action] += self.alpha * (target[live] - q[s, live, action])
            obs = nxt
            if terminated or truncated:
                obs, _ = env.reset(seed=int(rng.integers(2**31)))
            if evaluate is not None and t % every == 0:
                curve.append((t, float(evaluate(q))))
        return q, tuple(curve)

    def episode(self, env: RewardMachineEnv, q: np.ndarray, *, seed: int, max_steps: int = 1000) -> float:
        """The world's return of one greedy episode (ties at random, seeded; the detector's draws
        from ``seed``)."""
        env, _, start = _states(env)
        rng = np.random.default_rng(seed)
        obs, _ = env.reset(seed=seed)
        total = 0.0
        for _ in range(max_steps):
            obs, reward, terminated, truncated, _ = env.step(
                self.act(q, int(obs["obs"]) - start, obs["belief"], rng, greedy=True)
            )
            total += float(reward)
            if terminated or truncated:
                break
        return total
