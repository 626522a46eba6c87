"""Counterfactual experiences (CRM) in the replay buffer of a Stable-Baselines3 off-policy
algorithm (DQN, SAC, TD3, DDPG): ``CounterfactualReplayBuffer``.

Every environment step of :class:`~rmtk.gym.RewardMachineEnv` is also a step of the product
from *every* non-terminal node of the machine (Toro Icarte et al., reward machines for RL):
the buffer stores, in place of the agent's one transition, the experience of each node, with
the machine's reward and ending from that node. The tables are the wrapper's own
(:class:`~rmtk.gym.CrmTables`), so a step costs a few numpy lookups for the whole batch of a
vector environment's copies. In a few lines::

    env = RewardMachineEnv(office_env(), machine, StateLabels.of(mdp), observation="flat")
    model = DQN("MlpPolicy", env, **crm(env))   # replay_buffer_class and its kwargs
    model.learn(20_000)

``crm`` reads the machine, its terminal nodes, the encoding and ``env_reward`` off the
environment (a :class:`~rmtk.gym.RewardMachineEnv`, possibly wrapped, or a Stable-Baselines3
vector environment of them). The buffer holds ``buffer_size`` batches of experiences, one
batch per live node and step: it covers ``buffer_size / nodes`` steps. An episode cut by a
time limit stays cut in every experience (bootstrapped, not ended); an experience ends where
its node's machine reaches a terminal node or the environment terminates.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ..errors import ModelError, RmtkError
from ..gym.wrapper import CrmTables
from ..machine.model import RewardMachine
from .belief_crm import belief_crm, belief_space
from .encoding import ProductEncoding, product_attributes
from .sb3 import _require


@attrs.frozen
class Counterfactuals:
    """What the buffer needs of the product: the machine's CRM tables, the product encoding and
    whether the environment's own reward is added (``env_reward``)."""

    machine: RewardMachine
    tables: CrmTables = attrs.field(eq=False, repr=False)
    encoding: ProductEncoding
    env_reward: bool = False

    @classmethod
    def of(cls, env) -> Counterfactuals:
        """From a :class:`~rmtk.gym.RewardMachineEnv` (possibly wrapped, e.g. in a ``Monitor``) or
        a Stable-Baselines3 vector environment of them."""
        machine, terminal, mode, extra = product_attributes(env, ("machine", "terminal", "mode", "add_env_reward"))
        encoding = ProductEncoding.of(env.observation_space, machine.n_nodes, what="the environment")
        if mode != "flat" or encoding.mode != "flat":
            raise ModelError(
                "CRM in a Stable-Baselines3 replay buffer needs RewardMachineEnv(..., observation='flat') "
                "(a Discrete or Box product observation), or observation='belief' through rmtk.rl.crm(env)"
            )
        return cls(machine, CrmTables.of(machine, np.asarray(terminal, dtype=bool)), encoding, bool(extra))

    def experiences(self, obs, next_obs, infos) -> tuple[np.ndarray, ...]:
        """``(obs, next_obs, reward, ends)`` of every live node (first axis) for a batch of
        steps (second axis: the copies), from the copies' product observations and ``info``\\ s
        (``rm_label``, ``env_reward``, ``env_terminated``)."""
        enc, tab = self.encoding, self.tables
        k = self.letters(infos)
        extra = np.array([info.get("env_reward", 0.0) if self.env_reward else 0.0 for info in infos])
        ended = np.array([bool(info.get("env_terminated", False)) for info in infos])
        before, after = enc.environment(obs), enc.environment(next_obs)
        L, N = len(tab.node), len(infos)
        nodes = np.repeat(tab.node[:, None], N, axis=1)  # (L, N)
        nxt, reward, ends = tab.next_node[k].T, tab.reward[k].T + extra, tab.ends[k].T | ended  # (L, N)
        o = np.stack([enc.encode(before, nodes[j]) for j in range(L)])
        o2 = np.stack([enc.encode(after, nxt[j]) for j in range(L)])
        return o, o2, reward, ends

    def letters(self, infos) -> np.ndarray:
        """The letter index each copy's step read (its ``info["rm_label"]``)."""
        m = self.machine
        try:
            return np.array([m.letter_index(info["rm_label"]) for info in infos], dtype=np.int64)
        except KeyError:
            raise RmtkError("a step's info has no 'rm_label': the environment is not a RewardMachineEnv") from None

    def following(self, infos) -> np.ndarray:
        """``(L, N)``: for each live node (first axis, in the order of the experiences) and copy,
        the position among the live nodes of the node its experience goes to (0 where it ends)."""
        tab = self.tables
        where = np.zeros(self.machine.n_nodes, dtype=np.int64)
        where[tab.node] = np.arange(len(tab.node))
        return where[tab.next_node[self.letters(infos)].T]


def _counterfactual_buffer():
    base: Any = _require().common.buffers.ReplayBuffer

    class CounterfactualReplayBuffer(base):
        """A replay buffer that stores the counterfactual experiences of every machine node
        (see :mod:`rmtk.rl.crm`); ``counterfactuals`` from :meth:`Counterfactuals.of`."""

        def __init__(
            self, *args, counterfactuals: Counterfactuals, n_steps: int = 1, gamma: float | None = None, **kwargs
        ):
            super().__init__(*args, **kwargs)
            if self.optimize_memory_usage:
                raise ModelError(
                    "CRM stores several experiences per step, each with its own next observation: "
                    "use optimize_memory_usage=False"
                )
            if not isinstance(counterfactuals, Counterfactuals):
                raise RmtkError("counterfactuals must be a rmtk.rl.crm.Counterfactuals (use rmtk.rl.crm(env))")
            if int(n_steps) < 1 or (n_steps > 1 and gamma is None):
                raise RmtkError(f"n_steps must be ≥ 1 (got {n_steps}), and n_steps > 1 needs the discount gamma")
            samples = _require().common.type_aliases.ReplayBufferSamples
            if n_steps > 1 and "discounts" not in samples._fields:
                raise RmtkError("n-step returns with CRM need stable-baselines3 ≥ 2.7 (its samples carry discounts)")
            self.counterfactuals = counterfactuals
            self.n_steps, self.gamma = int(n_steps), gamma
            live = len(counterfactuals.tables.node)
            if self.buffer_size < live:
                raise RmtkError(f"buffer_size must hold at least one step's {live} experiences")
            self.buffer_size -= self.buffer_size % live  # whole steps: a step's rows never wrap apart
            #: the row of the experience that follows each one (its next node's, one step later)
            self.follow = np.zeros((self.buffer_size, self.n_envs), dtype=np.int64)
            #: experiences stored (each step adds one per live node and copy)
            self.experiences = 0

        def add(self, obs, next_obs, action, reward, done, infos: list[dict[str, Any]]) -> None:
            cf = self.counterfactuals
            o, o2, r, ends = cf.experiences(obs, next_obs, infos)
            following = cf.following(infos)
            cut = np.array([bool(info.get("TimeLimit.truncated", False)) for info in infos])
            for j in range(len(o)):
                timeout = cut & ~ends[j]
                marks = [{"TimeLimit.truncated": bool(x)} for x in timeout]
                self.follow[self.pos] = following[j]
                super().add(o[j], o2[j], action, r[j].astype(np.float32), ends[j] | cut, marks)
            self.experiences += o.shape[0] * o.shape[1]

        def _get_samples(self, batch_inds, env=None):
            if self.n_steps == 1:
                return super()._get_samples(batch_inds, env)
            return _n_step_samples(self, batch_inds, env)

    return CounterfactualReplayBuffer


def _n_step_samples(buf, batch_inds: np.ndarray, env):
    """The ``n_steps``-step returns of the sampled experiences: each follows its own node's
    counterfactual run (the experience of the node it went to, one step later, in the same
    copy) until the run ends, the episode is cut or the newest step is reached, and bootstraps
    from the next observation of the last experience followed, discounted by ``gamma`` to the
    power of the rewards summed (the discounts Stable-Baselines3's DQN and SAC read)."""
    from stable_baselines3.common.type_aliases import ReplayBufferSamples

    size, live, gamma = buf.buffer_size, len(buf.counterfactuals.tables.node), float(buf.gamma)
    e = np.random.randint(0, buf.n_envs, size=len(batch_inds))
    row = np.asarray(batch_inds)
    newest = (buf.pos - 1) % size
    ahead = ((newest - newest % live) - (row - row % live)) % size // live  # whole steps stored after
    ret = buf.rewards[row, e].astype(np.float64)
    discount = np.full(len(row), gamma)
    going = buf.dones[row, e] == 0
    for k in range(1, buf.n_steps):
        going &= ahead >= k
        row = np.where(going, (row - row % live + live) % size + buf.follow[row, e], row)
        ret += np.where(going, gamma**k * buf.rewards[row, e], 0.0)
        discount = np.where(going, gamma ** (k + 1), discount)
        going &= buf.dones[row, e] == 0
    done = buf.dones[row, e] * (1 - buf.timeouts[row, e])
    data = (
        buf._normalize_obs(buf.observations[batch_inds, e, :], env),
        buf.actions[batch_inds, e, :],
        buf._normalize_obs(buf.next_observations[row, e, :], env),
        done.reshape(-1, 1),
        buf._normalize_reward(ret.astype(np.float32).reshape(-1, 1), env),
        discount.astype(np.float32).reshape(-1, 1),
    )
    return ReplayBufferSamples(*tuple(map(buf.to_torch, data)))


_BUFFER: list = []


def counterfactual_replay_buffer() -> type:
    """The ``CounterfactualReplayBuffer`` class (a subclass of Stable-Baselines3's
    ``ReplayBuffer``, made when first asked so that importing this module needs no SB3)."""
    if not _BUFFER:
        _BUFFER.append(_counterfactual_buffer())
    return _BUFFER[0]


def crm(env, *, n_steps: int = 1, gamma: float | None = None, seed: int = 0) -> dict:
    """The keyword arguments that make a Stable-Baselines3 off-policy algorithm learn from the
    counterfactual experiences of ``env``'s machine: ``DQN("MlpPolicy", env, **crm(env))``.
    ``n_steps`` > 1: ``n_steps``-step returns along each node's counterfactual run (pass the
    algorithm's own discount as ``gamma``; the algorithm's ``n_steps`` is not read when a
    buffer class is given). A belief product (``observation="belief"``) gets the experiences of
    a detection instead (:mod:`rmtk.rl.belief_crm`, ``seed`` its letters' draws; one-step
    returns; ``DQN("MultiInputPolicy", env, **crm(env))``)."""
    if belief_space(getattr(env, "observation_space", None)):
        if n_steps != 1:
            raise RmtkError("n-step returns with CRM from a belief are not offered: each step's letter is drawn")
        return belief_crm(env, seed=seed)
    kwargs: dict = {"counterfactuals": Counterfactuals.of(env)}
    if n_steps != 1:
        kwargs.update(n_steps=n_steps, gamma=gamma)
    return {"replay_buffer_class": counterfactual_replay_buffer(), "replay_buffer_kwargs": kwargs}


def __getattr__(name: str):
    if name == "CounterfactualReplayBuffer":
        return counterfactual_replay_buffer()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Counterfactuals", "counterfactual_replay_buffer", "crm"]
