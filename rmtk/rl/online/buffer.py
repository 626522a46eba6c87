"""The replay buffer of the online loop (docs/guide/14-online.md): counterfactual experiences
(CRM, :mod:`rmtk.rl.crm`) of whatever the hypothesis is *when a batch is drawn*, so that a swap
relabels every stored step at once.

It stores each environment step once: the observation (in the agent's product encoding; the
node it carries is ignored), the next one, the action taken (``info["rm_action"]``: the
exploration walker's where it led), the step's letter and whether the environment ended the
episode. A batch draws steps uniformly (each with the letter the loop's ``replay`` strategy gives
it, :mod:`rmtk.rl.online.replay`: by default the letter read), and for each a node uniformly among the hypothesis'
live nodes (:class:`~rmtk.rl.online.hypothesis.Hypothesis`): the experience of that node, with the
hypothesis' reward and next node, ending where the environment ended the episode or the next
node is an end of the hypothesis (an episode cut by a time limit is bootstrapped). In
expectation this is the batch of :func:`rmtk.rl.crm`'s buffer, which stores every live node's
experience of each step; here one stored step serves every node of every hypothesis.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import ModelError, RmtkError
from ..sb3 import _require


def _online_buffer():
    base: Any = _require().common.buffers.ReplayBuffer

    class OnlineReplayBuffer(base):
        """A replay buffer whose experiences are those of the current hypothesis of ``online``
        (an :class:`~rmtk.rl.online.env.OnlineEnv`); see :mod:`rmtk.rl.online.buffer`."""

        def __init__(self, *args, online, **kwargs):
            super().__init__(*args, **kwargs)
            from .env import OnlineEnv

            if not isinstance(online, OnlineEnv):
                raise RmtkError(
                    f"the online replay buffer reads an OnlineEnv's hypothesis, not {type(online).__name__} "
                    "(use rmtk.rl.online.online_replay(env))"
                )
            if self.optimize_memory_usage:
                raise ModelError(
                    "the online replay buffer stores each next observation: use optimize_memory_usage=False"
                )
            if self.n_envs != 1:
                raise ModelError("the online loop trains on one environment (n_envs=1)")
            self.online = online
            #: the letter each stored step read, and whether the environment ended its episode there
            self.letters = np.zeros(self.buffer_size, np.int64)
            self.ended = np.zeros(self.buffer_size, bool)

        def add(self, obs, next_obs, action, reward, done, infos: list[dict[str, Any]]) -> None:
            info = infos[0]
            try:
                self.letters[self.pos] = int(info["rm_letter"])
            except KeyError:
                raise RmtkError("a step's info has no 'rm_letter': the environment is not an OnlineEnv") from None
            self.ended[self.pos] = bool(info.get("env_terminated", False))
            if "rm_action" in info:
                action = np.asarray(info["rm_action"]).reshape(np.shape(action))
            super().add(obs, next_obs, action, reward, done, infos)

        def experiences(self, rows: np.ndarray, nodes: np.ndarray) -> tuple[np.ndarray, ...]:
            """``(obs, next_obs, reward, done)`` of stored steps ``rows`` from ``nodes`` under
            the current hypothesis (product observations in the agent's encoding)."""
            h, enc, online = self.online.hypothesis, self.online.encoding, self.online
            reached = enc.environment(self.next_observations[rows, 0])
            k = online.loop.settings.replay.letters(self.letters[rows], reached, online.alphabet.propositions)
            after = h.next[nodes, k]
            obs = enc.encode(enc.environment(self.observations[rows, 0]), nodes)
            nxt = enc.encode(reached, after)
            done = self.ended[rows] | h.ends[after]
            return obs, nxt, h.reward[nodes, k], done

        def _get_samples(self, batch_inds, env=None):
            from stable_baselines3.common.type_aliases import ReplayBufferSamples

            rows = np.asarray(batch_inds)
            live = self.online.hypothesis.live
            nodes = live[np.random.randint(0, len(live), size=len(rows))]
            obs, nxt, reward, done = self.experiences(rows, nodes)
            if self.online.encoding.mode == "flat" and obs.ndim == 1:
                obs, nxt = obs[:, None], nxt[:, None]
            data = (
                self._normalize_obs(obs, env),
                self.actions[rows, 0, :],
                self._normalize_obs(nxt, env),
                done.astype(np.float32).reshape(-1, 1),
                self._normalize_reward(reward.astype(np.float32).reshape(-1, 1), env),
            )
            return ReplayBufferSamples(*tuple(map(self.to_torch, data)))

        def arrays(self) -> dict[str, np.ndarray]:
            """The stored steps (saved with the run)."""
            n = self.buffer_size if self.full else self.pos
            return {
                "observations": self.observations[:n],
                "next_observations": self.next_observations[:n],
                "actions": self.actions[:n],
                "letters": self.letters[:n],
                "ended": self.ended[:n],
                "pos": np.array([self.pos, int(self.full)]),
            }

        def restore(self, saved: dict) -> None:
            """Take back what :meth:`arrays` returned (the buffer as large as then, or larger)."""
            n = len(saved["letters"])
            if n > self.buffer_size:
                raise RmtkError(f"the saved replay buffer holds {n} steps, more than buffer_size={self.buffer_size}")
            self.observations[:n] = saved["observations"]
            self.next_observations[:n] = saved["next_observations"]
            self.actions[:n] = saved["actions"]
            self.letters[:n], self.ended[:n] = saved["letters"], saved["ended"]
            pos, full = (int(x) for x in saved["pos"])
            self.pos, self.full = (pos % n, bool(full)) if n == self.buffer_size else (n, False)

    OnlineReplayBuffer.__module__ = __name__
    return OnlineReplayBuffer


_BUFFER: list = []


def online_replay_buffer() -> type:
    """The ``OnlineReplayBuffer`` class (a subclass of Stable-Baselines3's ``ReplayBuffer``, made
    when first asked so that importing this module needs no SB3)."""
    if not _BUFFER:
        _BUFFER.append(_online_buffer())
    return _BUFFER[0]


def online_replay(env) -> dict:
    """The keyword arguments that make a Stable-Baselines3 off-policy algorithm (DQN, SAC, TD3)
    learn from the counterfactual experiences of ``env``'s current hypothesis:
    ``DQN("MlpPolicy", env, **online_replay(env))`` (``env`` an
    :class:`~rmtk.rl.online.env.OnlineEnv`)."""
    return {"replay_buffer_class": online_replay_buffer(), "replay_buffer_kwargs": {"online": env}}


def __getattr__(name: str):
    if name == "OnlineReplayBuffer":
        return online_replay_buffer()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["online_replay", "online_replay_buffer"]
