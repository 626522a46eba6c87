"""Use a reward machine in RL: :class:`RewardMachineEnv`, the product of a Gymnasium
environment with a machine, and the counterfactual experiences of CRM (Toro Icarte et al.,
reward machines for RL: every transition of the environment is also a transition of the
product from *every* node of the machine).

The machine follows section 2's prefix convention: the label of the reset observation already
moves it (without reward), and a step into an observation labelled ℓ moves node u to
δ_u(u, ℓ) and pays δ_r(u, ℓ). An episode terminates at a *terminal* node: by default the
absorbing nodes whose every transition is a 0-reward self-loop (nothing can happen there any
more), such as the ``terminal`` node of the RM literature's files.
"""
from __future__ import annotations

from typing import Callable, Iterable

import attrs
import gymnasium
import numpy as np
from gymnasium import spaces

from ..errors import DataError, ModelError
from ..machine import RewardMachine

OBSERVATIONS = ("dict", "flat")


def terminal_nodes(machine: RewardMachine, terminal="absorbing") -> np.ndarray:
    """``(n,)`` mask of the terminal nodes: ``"absorbing"`` (every transition a 0-reward
    self-loop), or an iterable of node names or indices (empty: none)."""
    loops = (machine.delta_u == np.arange(machine.n_nodes)[:, None]).all(axis=1)
    if isinstance(terminal, str) and terminal == "absorbing":
        return loops & (machine.delta_r == 0).all(axis=1)
    if isinstance(terminal, str) and terminal == "loops":
        return loops
    mask = np.zeros(machine.n_nodes, dtype=bool)
    for node in terminal:
        mask[machine.node_index(node)] = True
    return mask


@attrs.frozen
class Experiences:
    """The product transitions of one environment transition, one per non-terminal node
    ``node[i]``: it moves to ``next_node[i]``, earns ``reward[i]``, and ends the episode
    when ``terminated[i]``."""

    node: np.ndarray
    next_node: np.ndarray
    reward: np.ndarray
    terminated: np.ndarray


def counterfactual_experiences(machine: RewardMachine, label: str, *, terminal="absorbing",
                               env_reward: float = 0.0, env_terminated: bool = False) -> Experiences:
    """CRM: what reading ``label`` does from every non-terminal node of ``machine``
    (``env_reward`` is added to every reward, ``env_terminated`` ends every experience);
    ``terminal`` as for :func:`terminal_nodes`, or its mask."""
    k = machine.letter_index(label)
    end = terminal if isinstance(terminal, np.ndarray) else terminal_nodes(machine, terminal)
    nodes = np.flatnonzero(~end)
    nxt = machine.delta_u[nodes, k]
    return Experiences(nodes, nxt, machine.delta_r[nodes, k] + env_reward, end[nxt] | bool(env_terminated))


class RewardMachineEnv(gymnasium.Wrapper):
    """The product of ``env`` with ``machine``: the observation carries the machine node,
    the reward is the machine's for the transition, episodes end at terminal nodes.

    Args:
        env: a Gymnasium environment.
        machine: the reward machine; its alphabet holds every label ``labeler`` returns.
        labeler: ``labeler(obs, info) -> proposition name``.
        observation: ``"dict"`` (``{"obs": …, "node": Discrete(n)}``) or ``"flat"``
            (``Discrete(S·n)`` index ``obs·n + node`` for a ``Discrete(S)`` environment, the
            observation with a one-hot node appended for a ``Box``).
        env_reward: add the environment's own reward to the machine's.
        terminal: the terminal nodes (see :func:`terminal_nodes`).

    ``info`` gets ``rm_node`` (index), ``rm_label``, ``rm_reward`` (the machine's part) and
    ``env_reward``, ``env_terminated``.
    """

    def __init__(self, env: gymnasium.Env, machine: RewardMachine, labeler: Callable, *, observation: str = "dict",
                 env_reward: bool = False, terminal="absorbing"):
        super().__init__(env)
        if observation not in OBSERVATIONS:
            raise ModelError(f"observation must be one of {', '.join(map(repr, OBSERVATIONS))}, not {observation!r}")
        self.machine, self.labeler, self.mode = machine, labeler, observation
        self.add_env_reward = bool(env_reward)
        self.terminal = terminal_nodes(machine, terminal)
        self._letters = {p: i for i, p in enumerate(machine.alphabet)}
        self.node: int | None = None
        self._steps = 0
        n, inner = machine.n_nodes, env.observation_space
        if observation == "dict":
            self.observation_space = spaces.Dict({"obs": inner, "node": spaces.Discrete(n)})
        elif isinstance(inner, spaces.Discrete):
            self.observation_space = spaces.Discrete(inner.n * n)
        elif isinstance(inner, spaces.Box):
            low = np.concatenate([inner.low.ravel(), np.zeros(n)]).astype(inner.dtype)
            high = np.concatenate([inner.high.ravel(), np.ones(n)]).astype(inner.dtype)
            self.observation_space = spaces.Box(low, high, dtype=inner.dtype)
        else:
            raise ModelError(f"observation='flat' needs a Discrete or Box observation space, not {inner}; "
                             "use observation='dict'")

    # ------------------------------------------------------------------ encoding
    def encode(self, obs, node: int):
        """The product observation of an environment observation and a node."""
        inner = self.env.observation_space
        if self.mode == "dict":
            return {"obs": obs, "node": int(node)}
        if isinstance(inner, spaces.Discrete):
            return int(obs - inner.start) * self.machine.n_nodes + int(node)
        onehot = np.zeros(self.machine.n_nodes, dtype=inner.dtype)
        onehot[node] = 1
        return np.concatenate([np.asarray(obs, dtype=inner.dtype).ravel(), onehot])

    def decode(self, obs):
        """``(environment observation, node)`` of a product observation."""
        inner = self.env.observation_space
        if self.mode == "dict":
            return obs["obs"], int(obs["node"])
        if isinstance(inner, spaces.Discrete):
            s, u = divmod(int(obs), self.machine.n_nodes)
            return s + int(inner.start), u
        size = int(np.prod(inner.shape))
        return np.asarray(obs[:size]).reshape(inner.shape), int(np.argmax(obs[size:]))

    def _letter(self, obs, info, when: str) -> tuple[str, int]:
        label = self.labeler(obs, info)
        k = self._letters.get(label) if isinstance(label, str) else None
        if k is None:
            raise DataError(f"{when}: the labeler returned {label!r}, which is not a letter of machine "
                            f"{self.machine.name!r} ({' '.join(self.machine.alphabet)})")
        return label, k

    # ------------------------------------------------------------------ gymnasium
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        label, k = self._letter(obs, info, "reset")
        self.node, self._steps = int(self.machine.delta_u[self.machine.initial, k]), 0
        return self.encode(obs, self.node), dict(info, rm_node=self.node, rm_label=label)

    def step(self, action):
        if self.node is None:
            raise ModelError("call reset() before step()")
        obs, env_reward, env_terminated, truncated, info = self.env.step(action)
        self._steps += 1
        label, k = self._letter(obs, info, f"step {self._steps}")
        u = self.node
        self.node = int(self.machine.delta_u[u, k])
        rm_reward = float(self.machine.delta_r[u, k])
        reward = rm_reward + (float(env_reward) if self.add_env_reward else 0.0)
        terminated = bool(env_terminated) or bool(self.terminal[self.node])
        info = dict(info, rm_node=self.node, rm_label=label, rm_reward=rm_reward, env_reward=float(env_reward),
                    env_terminated=bool(env_terminated))
        return self.encode(obs, self.node), reward, terminated, truncated, info

    def counterfactual_experiences(self, obs, action, next_obs, info) -> list[tuple]:
        """CRM: ``(obs, action, reward, next_obs, terminated)`` for every non-terminal node,
        from one step: ``obs`` and ``next_obs`` are product observations (their node is
        ignored), ``info`` is what :meth:`step` returned."""
        env_reward = info.get("env_reward", 0.0) if self.add_env_reward else 0.0
        exp = counterfactual_experiences(self.machine, info["rm_label"], terminal=self.terminal,
                                         env_reward=env_reward, env_terminated=info.get("env_terminated", False))
        before, after = self.decode(obs)[0], self.decode(next_obs)[0]
        return [(self.encode(before, u), action, float(r), self.encode(after, v), bool(t))
                for u, v, r, t in zip(exp.node.tolist(), exp.next_node.tolist(), exp.reward.tolist(),
                                      exp.terminated.tolist())]


__all__: Iterable[str] = ["RewardMachineEnv", "Experiences", "counterfactual_experiences", "terminal_nodes"]
