"""Counterfactual experiences (CRM) from a detection, in the replay buffer of a
Stable-Baselines3 off-policy algorithm (docs/design/15-label-noise.md): ``BeliefReplayBuffer``.

With ``RewardMachineEnv(..., observation="belief")`` the agent observes ``{"obs": …, "belief":
b}``, the belief over the machine's nodes a :class:`~rmtk.label_noise.filter.NodeTracker` keeps
from a detector, and a step's letter is not known: only the tracker's weight of each letter
(:meth:`~rmtk.label_noise.filter.NodeTracker.letters`: the detection for the Bayes filter, the
most likely letter for the naive use). The tabular learner makes the expected CRM update under
those weights (:meth:`~rmtk.gym.RewardMachineEnv.belief_experiences`). A replay buffer samples its
rows uniformly and keeps one next observation per row, so it cannot weigh rows; instead, each step
one letter is *drawn* from the weights (a seeded generator), and the buffer stores, for every
non-terminal node ``u``, the experience of the product from ``u`` on that letter: observation
``{"obs": s, "belief": e_u}`` (the node known), the machine's reward from ``u``, next observation
``{"obs": s', "belief": e_δ(u, ℓ)}``, ended where ``δ(u, ℓ)`` is terminal or the world's episode
ends. In expectation over the draw these are the weighted rows of ``belief_experiences``; with
the naive tracker the weights are one letter and nothing is drawn. The agent acts on its belief
(``MultiInputPolicy``: the network reads ``b``), exact at a sure node and interpolated between.
In a few lines::

    env = RewardMachineEnv(office_env(), machine, labeler, observation="belief", detector=detector)
    model = DQN("MultiInputPolicy", env, **crm(env))   # rmtk.rl.crm dispatches here
    model.learn(20_000)

n-step returns are not offered here (a node's counterfactual run would follow the letters drawn at
each step, which the buffer does not keep).
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
from gymnasium import spaces

from ..errors import ModelError, RmtkError
from ..gym.wrapper import CrmTables, read_letters
from ..machine.model import RewardMachine
from .encoding import product_attributes
from .sb3 import _require


def belief_space(space) -> bool:
    """Whether ``space`` is the observation space of ``RewardMachineEnv(observation="belief")``."""
    return isinstance(space, spaces.Dict) and set(space.spaces) == {"obs", "belief"}


@attrs.frozen
class BeliefCounterfactuals:
    """What the buffer needs of a belief product: the machine's CRM tables, its tracker (the
    letters' weights of a detection) and whether the environment's reward is added."""

    machine: RewardMachine
    tables: CrmTables = attrs.field(eq=False, repr=False)
    tracker: Any = attrs.field(eq=False)
    env_reward: bool = False

    @classmethod
    def of(cls, env) -> BeliefCounterfactuals:
        """From a ``RewardMachineEnv(observation="belief")`` (possibly wrapped) or a
        Stable-Baselines3 vector environment of them."""
        names = ("machine", "terminal", "tracker", "add_env_reward")
        machine, terminal, tracker, extra = product_attributes(env, names)
        if tracker is None or not belief_space(env.observation_space):
            raise ModelError("a belief replay buffer needs RewardMachineEnv(..., observation='belief', detector=...)")
        return cls(machine, CrmTables.of(machine, np.asarray(terminal, dtype=bool)), tracker, bool(extra))

    def letters(self, infos, rng: np.random.Generator) -> np.ndarray:
        """One letter per copy, drawn from the tracker's weights of its detection
        (``info["rm_letters"]``, else ``info["rm_detection"]``); a weight of one is taken without a draw."""
        out = np.empty(len(infos), dtype=np.int64)
        for i, info in enumerate(infos):
            try:
                w = np.asarray(self.tracker.letters(read_letters(info)), dtype=np.float64)
            except KeyError:
                raise RmtkError(
                    "a step's info has no 'rm_detection': the environment is not a belief product"
                ) from None
            sure = np.flatnonzero(w >= 1.0)
            out[i] = int(sure[0]) if len(sure) else int(rng.choice(len(w), p=w / w.sum()))
        return out

    def experiences(self, obs, next_obs, infos, rng: np.random.Generator) -> tuple:
        """``(obs, next_obs, reward, ends)`` of every live node (first axis) for a batch of steps
        (second axis: the copies): dict observations whose belief is the node, one-hot."""
        tab = self.tables
        k = self.letters(infos, rng)
        extra = np.array([info.get("env_reward", 0.0) if self.env_reward else 0.0 for info in infos])
        ended = np.array([bool(info.get("env_terminated", False) or info.get("rm_ended", False)) for info in infos])
        n, N = self.machine.n_nodes, len(infos)
        onehot = np.eye(n, dtype=np.float64)
        o = [{"obs": np.asarray(obs["obs"]), "belief": np.repeat(onehot[[u]], N, axis=0)} for u in tab.node]
        nxt = tab.next_node[k].T  # (L, N)
        o2 = [{"obs": np.asarray(next_obs["obs"]), "belief": onehot[nxt[j]]} for j in range(len(tab.node))]
        return o, o2, tab.reward[k].T + extra, tab.ends[k].T | ended


def _belief_buffer():
    base: Any = _require().common.buffers.DictReplayBuffer

    class BeliefReplayBuffer(base):
        """A dict replay buffer that stores, each step, the experience of every machine node on a
        letter drawn from the detection (see :mod:`rmtk.rl.belief_crm`)."""

        def __init__(self, *args, counterfactuals: BeliefCounterfactuals, seed: int = 0, **kwargs):
            super().__init__(*args, **kwargs)  # a dict buffer: no optimize_memory_usage
            if not isinstance(counterfactuals, BeliefCounterfactuals):
                raise RmtkError(
                    "counterfactuals must be a rmtk.rl.belief_crm.BeliefCounterfactuals (use rmtk.rl.crm(env))"
                )
            self.counterfactuals = counterfactuals
            self.rng = np.random.default_rng(seed)
            live = len(counterfactuals.tables.node)
            if self.buffer_size < live:
                raise RmtkError(f"buffer_size must hold at least one step's {live} experiences")
            self.buffer_size -= self.buffer_size % live  # whole steps
            #: experiences stored (each step adds one per live node and copy)
            self.experiences = 0

        def add(self, obs, next_obs, action, reward, done, infos: list[dict[str, Any]]) -> None:
            o, o2, r, ends = self.counterfactuals.experiences(obs, next_obs, infos, self.rng)
            cut = np.array([bool(info.get("TimeLimit.truncated", False)) for info in infos])
            for j in range(len(o)):
                marks = [{"TimeLimit.truncated": bool(x)} for x in cut & ~ends[j]]
                super().add(o[j], o2[j], action, r[j].astype(np.float32), ends[j] | cut, marks)
            self.experiences += len(o) * len(infos)

    return BeliefReplayBuffer


_BUFFER: list = []


def belief_replay_buffer() -> type:
    """The ``BeliefReplayBuffer`` class (a subclass of Stable-Baselines3's ``DictReplayBuffer``,
    made when first asked so that importing this module needs no SB3)."""
    if not _BUFFER:
        _BUFFER.append(_belief_buffer())
    return _BUFFER[0]


def belief_crm(env, *, seed: int = 0) -> dict:
    """The keyword arguments that make a Stable-Baselines3 off-policy algorithm learn from the
    counterfactual experiences of a belief product: ``DQN("MultiInputPolicy", env, **crm(env))``
    (``seed``: the letters' draws)."""
    kwargs = {"counterfactuals": BeliefCounterfactuals.of(env), "seed": int(seed)}
    return {"replay_buffer_class": belief_replay_buffer(), "replay_buffer_kwargs": kwargs}


__all__ = ["BeliefCounterfactuals", "belief_crm", "belief_replay_buffer", "belief_space"]
