"""Environments that pay a non-Markovian reward, for trying the online loop and measuring it
(docs/guide/14-online.md, docs/benchmarks/online.md).

* :class:`MachinePays`: any Gymnasium environment paying what a reward machine pays along the
  labels (the environment's own reward replaced), the episode ended where the machine reaches an
  end node; the agent sees the environment's observation only, the machine stays hidden, as in
  the reward-machine literature's "hidden" tasks.
* The CliffWalking patrol (:func:`cliff_patrol`): Gymnasium's ``CliffWalking-v1`` (its cliff sends
  the walker back to the start, its goal cell ends the episode), three cells marked ``a``
  (row 0, column 1), ``b`` (row 0, column 10) and ``c`` (row 2, column 5) and the goal ``g``
  (row 3, column 11), every other cell ``o``; the environment pays 1 on reaching ``c`` after ``b``
  after ``a`` and ends the episode there. A uniform walk of 100 steps completes it in about
  0.15 % of the episodes (400,000 walks).
"""

from __future__ import annotations

from collections.abc import Callable

import gymnasium
import numpy as np

from ...gym.labels import StateLabels, check_labeler
from ...gym.wrapper import check_machine, terminal_nodes
from ...machine.model import RewardMachine


class ReplacedNoise(gymnasium.Wrapper):
    """``env`` whose reward is, with probability ``epsilon`` per step, replaced by another of
    ``values`` drawn uniformly (the replacement noise of :func:`rmtk.traces.noise.replaced_rewards`),
    from a generator seeded by ``seed``."""

    def __init__(self, env: gymnasium.Env, values, epsilon: float, seed: int = 0):
        super().__init__(env)
        self.values = np.unique(np.asarray(values, dtype=np.float64))
        self.epsilon, self.rng = float(epsilon), np.random.default_rng([int(seed), 5])

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        if len(self.values) > 1 and self.rng.random() < self.epsilon:
            others = self.values[self.values != reward]
            reward = float(others[int(self.rng.integers(len(others)))]) if len(others) else reward
        return obs, reward, terminated, truncated, info


class UniformNoise(gymnasium.Wrapper):
    """``env`` whose non-zero rewards get a uniform draw from ``[−half_width, half_width]`` added
    (the Mining task's noise, :func:`rmtk.traces.noise.uniform_noise`), seeded by ``seed``."""

    def __init__(self, env: gymnasium.Env, half_width: float, seed: int = 0):
        super().__init__(env)
        self.half_width, self.rng = float(half_width), np.random.default_rng([int(seed), 6])

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        if reward != 0:
            reward = float(reward) + float(self.rng.uniform(-self.half_width, self.half_width))
        return obs, reward, terminated, truncated, info


class MachinePays(gymnasium.Wrapper):
    """``env`` paying ``machine``'s reward along ``labeler``'s labels (module docstring); ``info``
    is the environment's own."""

    def __init__(self, env: gymnasium.Env, machine: RewardMachine, labeler: Callable):
        super().__init__(env)
        self.machine, self.labeler = check_machine(machine), check_labeler(labeler)
        self._ends = terminal_nodes(machine).tolist()
        self._letters = {p: i for i, p in enumerate(machine.alphabet)}
        self._next, self._reward = machine.delta_u.tolist(), machine.delta_r.astype(float).tolist()
        self.node = machine.initial

    def _k(self, obs, info) -> int:
        return self._letters[self.labeler(obs, info)]

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        self.node = self._next[self.machine.initial][self._k(obs, info)]
        return obs, info

    def step(self, action):
        obs, _, terminated, truncated, info = self.env.step(action)
        k = self._k(obs, info)
        reward = self._reward[self.node][k]
        self.node = self._next[self.node][k]
        return obs, reward, bool(terminated) or self._ends[self.node], truncated, info


#: The marked cells of the CliffWalking patrol, by state index (row · 12 + column).
CLIFF_CELLS = {1: "a", 10: "b", 29: "c", 47: "g"}
#: Its alphabet.
CLIFF_PROPOSITIONS = ("a", "b", "c", "g", "o")


def cliff_labels() -> StateLabels:
    """The CliffWalking patrol's labeler: ``a``, ``b``, ``c``, ``g`` on the marked cells, ``o`` elsewhere."""
    labels = [CLIFF_PROPOSITIONS.index(CLIFF_CELLS.get(s, "o")) for s in range(48)]
    return StateLabels(CLIFF_PROPOSITIONS, labels)


def cliff_machine() -> RewardMachine:
    """The CliffWalking patrol's machine: a, then b, then c pays 1 and ends; the goal ``g`` ends
    the episode unpaid (CliffWalking ends it there)."""
    t: dict = {("u0", "a"): "u1", ("u1", "b"): "u2", ("u2", "c"): ("end", 1.0)}
    for u in ("u0", "u1", "u2"):
        t[(u, "g")] = "end"
    return RewardMachine.from_transitions(
        t, CLIFF_PROPOSITIONS, nodes=["u0", "u1", "u2", "end"], initial="u0", name="cliff_patrol"
    )


def cliff_patrol(max_steps: int = 100) -> tuple[gymnasium.Env, StateLabels, RewardMachine]:
    """``(env, labeler, machine)``: CliffWalking-v1 with episodes of ``max_steps`` steps paying the
    patrol (module docstring), its labeler, and the machine that pays (for measuring only)."""
    base = gymnasium.make("CliffWalking-v1", max_episode_steps=int(max_steps))
    labels, machine = cliff_labels(), cliff_machine()
    return MachinePays(base, machine, labels), labels, machine


def uniform_completion(episodes: int = 400_000, steps: int = 100, seed: int = 0) -> float:
    """The share of uniform walks of ``steps`` steps from CliffWalking's start that complete the
    patrol (module docstring), on the environment's own transition table."""
    base = gymnasium.make("CliffWalking-v1").unwrapped
    P = base.P  # type: ignore[attr-defined]
    succ = np.array([[P[s][a][0][1] for a in range(4)] for s in range(48)])
    ends = np.array([[P[s][a][0][3] for a in range(4)] for s in range(48)])
    m, labels = cliff_machine(), np.asarray(cliff_labels().labels)
    rng = np.random.default_rng(seed)
    s = np.full(episodes, 36)
    u = np.full(episodes, m.delta_u[m.initial, labels[36]])
    alive, won = np.ones(episodes, bool), np.zeros(episodes, bool)
    stop = terminal_nodes(m)
    for _ in range(steps):
        a = rng.integers(4, size=episodes)
        done = ends[s, a]
        s = np.where(alive, succ[s, a], s)
        k = labels[s]
        won |= alive & (m.delta_r[u, k] > 0)
        u = np.where(alive, m.delta_u[u, k], u)
        alive &= ~done & ~stop[u]
    return float(won.mean())


__all__ = [
    "CLIFF_CELLS",
    "CLIFF_PROPOSITIONS",
    "MachinePays",
    "ReplacedNoise",
    "UniformNoise",
    "cliff_labels",
    "cliff_machine",
    "cliff_patrol",
    "uniform_completion",
]
