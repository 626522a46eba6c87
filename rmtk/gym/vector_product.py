"""The product of a *vector* environment with a reward machine, and batched counterfactual
experiences: :class:`RewardMachineVectorEnv` keeps one machine node per copy, and its CRM
gives the experiences of every non-terminal node of every copy in one numpy call.

Autoreset (Gymnasium's next-step mode, the default): the step after a copy's episode ended is
that copy's reset, with reward 0. An episode the *machine* ends (a terminal node) while the
environment goes on is ended the same way: that copy's environment is reset on the next step
through ``reset(options={"reset_mask": …})`` (what :class:`~gymnasium.vector.SyncVectorEnv`,
:class:`~gymnasium.vector.AsyncVectorEnv` and :class:`~rmtk.gym.MdpVectorEnv` do), its step
result discarded.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
import numpy as np
from gymnasium import spaces
from gymnasium.vector import (
    AsyncVectorEnv,
    AutoresetMode,
    SyncVectorEnv,
    VectorEnv,
    VectorWrapper,
)
from gymnasium.vector.utils import batch_space

from ..errors import DataError, ModelError
from ..machine.model import RewardMachine
from .labels import check_labeler, one_name_hint, quoted
from .mdp_env import MdpVectorEnv
from .wrapper import CrmTables, check_machine, product_space, terminal_nodes

#: vector environments whose copies can be reset one by one (``options={"reset_mask": …}``)
PARTIAL_RESET = (SyncVectorEnv, AsyncVectorEnv, MdpVectorEnv)


@attrs.frozen
class Transitions:
    """A batch of product transitions: copy ``copy[i]`` went from ``obs[i]`` by
    ``action[i]`` to ``next_obs[i]``, earning ``reward[i]``, ending its episode when
    ``terminated[i]``; observations in the product's encoding (a dict of arrays for
    ``observation="dict"``)."""

    copy: np.ndarray
    obs: object
    action: np.ndarray
    reward: np.ndarray
    next_obs: object
    terminated: np.ndarray

    def __len__(self) -> int:
        return len(self.copy)


class RewardMachineVectorEnv(VectorWrapper):
    """The product of a vector environment with ``machine``, one node per copy: what
    :class:`~rmtk.gym.RewardMachineEnv` is for one environment (same arguments, same
    encodings, same ``info`` entries as arrays, plus ``rm_letter`` (letter indices) and
    ``rm_reset`` (this step was the copy's reset)).

    A labeler with ``propositions`` and ``batch(obs, infos)`` (such as
    :class:`~rmtk.gym.StateLabels`) labels all copies in one call; any other is called once
    per copy with that copy's observation and info.
    """

    def __init__(
        self,
        env: VectorEnv,
        machine: RewardMachine,
        labeler: Callable,
        *,
        observation: str = "dict",
        env_reward: bool = False,
        terminal="absorbing",
    ):
        if not isinstance(env, VectorEnv):
            raise ModelError(
                f"RewardMachineVectorEnv wraps a vector environment, not {type(env).__name__}; "
                "use RewardMachineEnv for one environment"
            )
        super().__init__(env)
        self.machine, self.labeler, self.mode = check_machine(machine), labeler, observation
        check_labeler(labeler)
        n = machine.n_nodes
        self.single_observation_space = product_space(env.single_observation_space, n, observation)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.add_env_reward = bool(env_reward)
        self.terminal = terminal_nodes(machine, terminal)
        self.tables = CrmTables.of(machine, self.terminal)
        self.autoreset = AutoresetMode(env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP))
        if self.autoreset == AutoresetMode.SAME_STEP:
            raise ModelError(
                "RewardMachineVectorEnv needs the next-step or disabled autoreset mode, not same-step: "
                "make the vector environment with autoreset_mode=AutoresetMode.NEXT_STEP"
            )
        if (
            self.terminal.any()
            and self.autoreset == AutoresetMode.NEXT_STEP
            and not isinstance(env.unwrapped, PARTIAL_RESET)
        ):
            raise ModelError(
                f"{type(env.unwrapped).__name__} cannot reset one copy (options['reset_mask']), which "
                f"the machine's terminal nodes need; pass terminal=[] (episodes then end when the "
                f"environment ends them) or use a SyncVectorEnv or AsyncVectorEnv"
            )
        self._letters = {p: i for i, p in enumerate(machine.alphabet)}
        self._names = np.array(machine.alphabet, dtype=object)
        self._props: tuple[str, ...] = tuple(getattr(labeler, "propositions", None) or ())
        self._batch = getattr(labeler, "batch", None) if self._props else None
        # proposition index of the batch labeler -> letter index (-1: not a letter, also for index -1)
        self._lut = np.array([self._letters.get(p, -1) for p in self._props] + [-1], dtype=np.int64)
        N = self.num_envs
        self.nodes = np.zeros(N, dtype=np.int64)
        self.episodes = np.full(N, -1, dtype=np.int64)
        self._steps = np.zeros(N, dtype=np.int64)
        self._done = np.zeros(N, dtype=bool)
        self._machine_end = np.zeros(N, dtype=bool)
        self._started = False

    # ------------------------------------------------------------------ encoding
    def encode(self, obs, nodes: np.ndarray):
        """The product observations of a batch of environment observations and nodes."""
        inner, n = self.env.single_observation_space, self.machine.n_nodes
        nodes = np.asarray(nodes, dtype=np.int64)
        if self.mode == "dict":
            return {"obs": obs, "node": nodes}
        if isinstance(inner, spaces.Discrete):
            return (np.asarray(obs, dtype=np.int64) - int(inner.start)) * n + nodes
        flat = np.asarray(obs, dtype=inner.dtype).reshape(len(nodes), -1)
        return np.concatenate([flat, np.eye(n, dtype=inner.dtype)[nodes]], axis=1)

    def decode(self, obs) -> tuple[object, np.ndarray]:
        """``(environment observations, nodes)`` of a batch of product observations."""
        inner, n = self.env.single_observation_space, self.machine.n_nodes
        if self.mode == "dict":
            return obs["obs"], np.asarray(obs["node"], dtype=np.int64)
        if isinstance(inner, spaces.Discrete):
            s, u = np.divmod(np.asarray(obs, dtype=np.int64), n)
            return s + int(inner.start), u
        obs, shape = np.asarray(obs), tuple(inner.shape or ())
        size = int(np.prod(shape))
        return obs[:, :size].reshape((len(obs), *shape)), np.argmax(obs[:, size:], axis=1)

    # ------------------------------------------------------------------ labels
    def _where(self, i: int) -> str:
        step = f"step {self._steps[i]}" if self._steps[i] else "reset"
        return f"copy {i}, episode {self.episodes[i]}, {step}"

    def _label(self, obs, info, which: np.ndarray) -> np.ndarray:
        """Letter indices of the copies in ``which`` (a mask; -1 elsewhere)."""
        out = np.full(self.num_envs, -1, dtype=np.int64)
        if self._batch is not None:
            idx = np.asarray(self._batch(obs, info))
            if not np.issubdtype(idx.dtype, np.integer) or idx.shape != (self.num_envs,):
                raise DataError(
                    f"the labeler's batch returned {idx.dtype} values of shape {idx.shape}; it must "
                    f"return {self.num_envs} proposition indices"
                )
            ok = (idx >= 0) & (idx < len(self._props))
            out[which] = self._lut[np.where(ok, idx, -1)][which]
            bad = np.flatnonzero(which & (out < 0))
            if bad.size:
                i = int(bad[0])
                got = repr(self._props[idx[i]]) if ok[i] else f"index {idx[i]}"
                hint = one_name_hint(self.machine.alphabet, self._props[idx[i]]) if ok[i] else ""
                raise DataError(
                    f"{self._where(i)}: the labeler returned {got}, which is not a letter of machine "
                    f"{self.machine.name!r} ({quoted(self.machine.alphabet)}){hint}"
                )
            return out
        entries = [(key, v, info.get("_" + key)) for key, v in info.items() if not key.startswith("_")]
        for i in np.flatnonzero(which).tolist():
            one = {k: v[i] for k, v in obs.items()} if isinstance(obs, dict) else obs[i]
            label = self.labeler(one, {key: v[i] for key, v, set_ in entries if set_ is None or set_[i]})
            k = self._letters.get(label) if isinstance(label, str) else None
            if k is None:
                hint = one_name_hint(self.machine.alphabet, label)
                raise DataError(
                    f"{self._where(i)}: the labeler returned {label!r}, which is not a letter of machine "
                    f"{self.machine.name!r} ({quoted(self.machine.alphabet)}){hint}"
                )
            out[i] = k
        return out

    # ------------------------------------------------------------------ gymnasium
    def reset(self, *, seed=None, options: dict | None = None):
        mask = None if options is None else options.get("reset_mask")
        which = np.ones(self.num_envs, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
        obs, info = self.env.reset(seed=seed, options=options)
        self.episodes[which] += 1
        self._steps[which] = 0
        k = self._label(obs, info, which)
        self.nodes[which] = self.machine.delta_u[self.machine.initial, k[which]]
        self._done[which] = self._machine_end[which] = False
        self._started = True
        info = dict(info, rm_node=self.nodes.copy(), rm_letter=k, rm_label=np.where(which, self._names[k], None))
        return self.encode(obs, self.nodes), info

    def step(self, actions):
        if not self._started:
            raise ModelError("call reset() before step()")
        obs, env_r, env_term, env_trunc, info = self.env.step(actions)
        env_r = np.asarray(env_r, dtype=float)
        env_term, env_trunc = np.asarray(env_term, dtype=bool), np.asarray(env_trunc, dtype=bool)
        fresh = self._done.copy() if self.autoreset == AutoresetMode.NEXT_STEP else np.zeros(self.num_envs, bool)
        redo = fresh & self._machine_end
        if redo.any():  # ended by the machine alone: this copy's step is its reset
            obs, info, env_r = self._reset_copies(redo, obs, info, env_r)
            env_term, env_trunc = env_term & ~redo, env_trunc & ~redo
        moving = ~fresh
        self.episodes[fresh] += 1
        self._steps = np.where(fresh, 0, self._steps + 1)
        k = self._label(obs, info, np.ones(self.num_envs, dtype=bool))
        u = self.nodes
        self.nodes = np.where(fresh, self.machine.delta_u[self.machine.initial, k], self.machine.delta_u[u, k])
        rm_r = np.where(moving, self.machine.delta_r[u, k], 0.0)
        reward = rm_r + env_r if self.add_env_reward else rm_r
        terminated = env_term | (moving & self.terminal[self.nodes])
        truncated = env_trunc & moving
        self._done = terminated | truncated
        self._machine_end = self._done & ~(env_term | env_trunc)
        info = dict(
            info,
            rm_node=self.nodes.copy(),
            rm_letter=k,
            rm_label=self._names[k],
            rm_reward=rm_r,
            env_reward=env_r,
            env_terminated=env_term,
            rm_reset=fresh,
        )
        return self.encode(obs, self.nodes), reward, terminated, truncated, info

    def _reset_copies(self, redo: np.ndarray, obs, info: dict, env_r: np.ndarray):
        robs, rinfo = self.env.reset(options={"reset_mask": redo})
        if isinstance(obs, dict):
            obs = {key: np.where(redo.reshape((-1,) + (1,) * (np.ndim(v) - 1)), robs[key], v) for key, v in obs.items()}
        else:
            obs = np.where(redo.reshape((-1,) + (1,) * (np.ndim(obs) - 1)), robs, obs)
        info = dict(info)
        for key in [key for key in set(info) | set(rinfo) if not key.startswith("_")]:
            new = rinfo.get(key)
            old = info.get(key)
            if isinstance(new, dict) or isinstance(old, dict):
                continue
            if new is None:  # the step's entry of a reset copy is stale
                info["_" + key] = info.get("_" + key, np.ones(self.num_envs, bool)) & ~redo
                continue
            mask = redo & np.asarray(rinfo.get("_" + key, np.ones(self.num_envs, bool)))
            if old is None:
                old = np.zeros_like(np.asarray(new))
                info["_" + key] = np.zeros(self.num_envs, bool)
            merged = np.array(old, dtype=np.result_type(np.asarray(old), np.asarray(new)))
            merged[mask] = np.asarray(new)[mask]
            info[key] = merged
            if "_" + key in info:
                info["_" + key] = (info["_" + key] & ~redo) | mask
        return obs, info, np.where(redo, 0.0, env_r)

    # ------------------------------------------------------------------ CRM
    def counterfactual_experiences(self, obs, actions, next_obs, info) -> Transitions:
        """Batched CRM: the experiences of every non-terminal node of every copy that made a
        transition in one ``step`` (not its reset), copy by copy, nodes in index order.
        ``obs`` and ``next_obs`` are product observations (their nodes are ignored), ``info``
        is what ``step`` returned."""
        moved = np.flatnonzero(~np.asarray(info["rm_reset"], dtype=bool))
        tables, m = self.tables, len(self.tables.node)
        k = np.asarray(info["rm_letter"])[moved]
        copy = np.repeat(moved, m)
        nodes = np.tile(tables.node, len(moved))
        nxt = tables.next_node[k].ravel()
        reward = tables.reward[k]
        if self.add_env_reward:
            reward = reward + np.asarray(info["env_reward"], dtype=float)[moved, None]
        ends = tables.ends[k] | np.asarray(info["env_terminated"], dtype=bool)[moved, None]
        before, after = self._take(self.decode(obs)[0], copy), self._take(self.decode(next_obs)[0], copy)
        return Transitions(
            copy,
            self.encode(before, nodes),
            np.asarray(actions)[copy],
            reward.ravel(),
            self.encode(after, nxt),
            ends.ravel(),
        )

    @staticmethod
    def _take(obs, copy: np.ndarray):
        return {key: np.asarray(v)[copy] for key, v in obs.items()} if isinstance(obs, dict) else np.asarray(obs)[copy]


__all__ = ["PARTIAL_RESET", "RewardMachineVectorEnv", "Transitions"]
