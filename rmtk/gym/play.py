"""Playing one shard of episodes of a Gymnasium environment and counting them: the work
behind :func:`~rmtk.gym.collect` and :func:`~rmtk.gym.collect_shard`, shared with the worker
processes of :mod:`rmtk.gym.pool`. The user's labeler, discretiser and policy are checked
here, with errors naming the episode and step."""
from __future__ import annotations

from typing import Callable

import attrs
import numpy as np

from ..data import Demonstrations
from ..empirical import count_chunk
from ..errors import DataError, RmtkError
from ..space import Space
from .labels import Alphabet
from .policies import Context
from .recording import Recording, of_table


# ---------------------------------------------------------------------- environments
def make_env(env):
    """``(environment, made here)`` from an environment, a Gymnasium id or a factory."""
    import gymnasium

    if isinstance(env, (gymnasium.Env, gymnasium.vector.VectorEnv)):
        return env, False
    if isinstance(env, str):
        return gymnasium.make(env), True
    if callable(env):
        made = env()
        if not isinstance(made, (gymnasium.Env, gymnasium.vector.VectorEnv)):
            raise RmtkError(f"the environment factory returned {type(made).__name__}, not a Gymnasium environment")
        return made, True
    raise RmtkError(f"env must be a Gymnasium environment, a vector environment, an environment id or a function "
                    f"making one, not {type(env).__name__}")


def _env_name(env) -> str:
    spec = getattr(env, "spec", None)
    return getattr(spec, "id", None) or type(getattr(env, "unwrapped", env)).__name__


@attrs.frozen
class Setup:
    """What one environment needs from the user's objects, checked once."""

    vector: bool
    copies: int
    n_states: int
    n_actions: int
    action_start: int
    alphabet: Alphabet
    discretizer: Callable
    labeler: Callable
    name: str

    @classmethod
    def of(cls, env, labeler, discretizer, propositions, n_states, name) -> "Setup":
        import gymnasium

        vector = isinstance(env, gymnasium.vector.VectorEnv)
        obs_space = env.single_observation_space if vector else env.observation_space
        act_space = env.single_action_space if vector else env.action_space
        if not isinstance(act_space, gymnasium.spaces.Discrete):
            raise RmtkError(f"collect counts discrete actions; the action space is {act_space} (wrap the environment "
                            "so that its actions are Discrete)")
        if n_states is None:
            size = getattr(discretizer, "size", None)
            if size is None:
                raise RmtkError("collect needs the number of states of a plain discretiser function: pass n_states=N")
            n_states = size(obs_space)
        if not 1 <= int(n_states) < 2**31:
            raise RmtkError(f"collect counts at most 2^31 - 1 states (32-bit state indices), not {n_states}")
        if labeler is None:  # state histories: each state its own proposition (to learn the labels)
            if propositions is not None:
                raise RmtkError("collect without a labeler records state histories: the propositions are the states, "
                                "pass no propositions")
            propositions = [f"s{i}" for i in range(int(n_states))]
        props = propositions if propositions is not None else getattr(labeler, "propositions", None)
        if props is None:
            raise RmtkError("collect needs the propositions the labeler can return: pass propositions=[...]")
        return cls(vector, int(env.num_envs) if vector else 1, int(n_states), int(act_space.n), int(act_space.start),
                   Alphabet(props), discretizer, labeler, name or _env_name(env))

    def space(self) -> Space:
        return Space(self.n_states, self.n_actions, self.alphabet.propositions, self.name)

    def states(self, obs, alive, where) -> tuple[np.ndarray, int]:
        """State indices of the live copies (−1 elsewhere) and how many were clipped."""
        d = self.discretizer
        out = np.full(self.copies, -1, dtype=np.int64)
        live = np.flatnonzero(alive)
        batch = getattr(d, "batch", None)
        if batch is not None:
            rows = obs if self.vector else np.asarray(obs)[None]
            index, outside = batch(rows)
            index, outside = np.asarray(index)[live], np.asarray(outside)[live]
            if outside.any():
                i = int(live[np.argmax(outside)])
                row = np.asarray(rows[i])
                if np.isnan(np.asarray(row, dtype=float)).any():
                    raise DataError(f"{where(i)}: the observation holds NaN: {row!r}")
                if not getattr(d, "clip", True):
                    raise DataError(f"{where(i)}: the observation is outside the bins ({d.describe_outside(row)}); "
                                    "pass Bins(..., clip=True) to clip it into the edge bins and count it")
            clipped = int(outside.sum())
        else:
            index = np.array([_as_state(d(obs[i] if self.vector else obs), where(i)) for i in live], dtype=np.int64)
            clipped = 0
        bad = np.flatnonzero((index < 0) | (index >= self.n_states))
        if bad.size:
            raise DataError(f"{where(int(live[bad[0]]))}: the discretiser returned state {index[bad[0]]}, outside "
                            f"0..{self.n_states - 1}")
        out[live] = index
        return out, clipped

    def labels(self, obs, info, alive, where) -> np.ndarray:
        """Proposition indices of the live copies (−1 elsewhere)."""
        out = np.full(self.copies, -1, dtype=np.int64)
        live = np.flatnonzero(alive)
        batch = getattr(self.labeler, "batch", None)
        if self.vector and batch is not None:
            out[live] = self.alphabet.check(np.asarray(batch(obs, info))[live], lambda j: where(int(live[j])))
        elif self.vector:
            for i in live:
                out[i] = self.alphabet.index(self.labeler(obs[i], _one_info(info, i)), where(int(i)))
        else:
            out[0] = self.alphabet.index(self.labeler(obs, info), where(0))
        return out

    def actions(self, action, alive, where) -> np.ndarray:
        """Action indices of the live copies, checked against the action space."""
        a = np.asarray(action)
        shape = (self.copies,) if self.vector else ()
        if a.shape != shape:
            raise DataError(f"{where(0)}: the policy returned {action!r} (shape {a.shape}); it must return "
                            + (f"one action per copy of the vector environment, shape {shape}" if self.vector
                               else "one action"))
        a = a.reshape(self.copies)
        if a.dtype == bool or not np.issubdtype(a.dtype, np.integer):
            raise DataError(f"{where(0)}: the policy returned {action!r} ({a.dtype}); actions of "
                            f"Discrete({self.n_actions}) are integers")
        idx = a.astype(np.int64) - self.action_start
        bad = np.flatnonzero(alive & ((idx < 0) | (idx >= self.n_actions)))
        if bad.size:
            i = int(bad[0])
            raise DataError(f"{where(i)}: the policy returned action {a[i]}, which is not in the action space "
                            f"Discrete({self.n_actions}" + (f", start={self.action_start})" if self.action_start else ")"))
        return idx


def _as_state(value, where: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise DataError(f"{where}: the discretiser returned {value!r} ({type(value).__name__}); it must return a "
                        "state index (an integer)")
    return int(value)


def _one_info(info: dict, i: int) -> dict:
    """Copy ``i``'s entries of a vector environment's info (``_key`` masks say which are set)."""
    return {k: v[i] for k, v in info.items() if not k.startswith("_") and info.get("_" + k, np.ones(i + 1, bool))[i]}


# ---------------------------------------------------------------------- one shard
def play_shard(setup: Setup, env, policy, episodes: int, seed, first: int, max_steps: int,
               compress: bool) -> Recording:
    """Play and count ``episodes`` episodes; the environment's resets and the policy's
    generator come from two children of ``seed`` (the same seed, the same data)."""
    seq = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    env_seq, policy_seq = (np.random.SeedSequence(seq.entropy, spawn_key=tuple(seq.spawn_key) + (k,))
                           for k in (0, 1))
    rng = np.random.default_rng(policy_seq)
    waves = [min(setup.copies, episodes - w) for w in range(0, episodes, setup.copies)]
    resets = env_seq.generate_state(len(waves), dtype=np.uint32)
    parts, tallies = [], dict(clipped=0, terminated=0, truncated=0, cut=0)
    done = 0
    for w, size in enumerate(waves):
        parts.append(_wave(setup, env, policy, size, int(resets[w]), first + done, max_steps, rng, tallies))
        done += size
    T = max(p[0].shape[1] for p in parts)
    pad = lambda a: np.pad(a, ((0, 0), (0, T - a.shape[1])), constant_values=-1)  # noqa: E731
    states, actions, labels, lengths = (np.concatenate([pad(p[k]) if k < 3 else p[k] for p in parts]) for k in range(4))
    demos = Demonstrations(states, actions, lengths)
    table = count_chunk(setup.space(), demos, compress=compress, labels=labels)
    return of_table(table, setup.alphabet.propositions, name=setup.name, episodes=episodes, **tallies)


def _wave(setup: Setup, env, policy, size: int, reset_seed: int, first: int, max_steps: int,
          rng: np.random.Generator, tallies: dict):
    """``size`` episodes, one per copy of the environment, played together."""
    obs, info = env.reset(seed=reset_seed)
    alive = np.arange(setup.copies) < size
    lengths = np.zeros(setup.copies, dtype=np.int64)
    cols: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    for t in range(max_steps):
        def where(i, t=t):
            return f"episode {first + i}, step {t}"

        s, clipped = setup.states(obs, alive, where)
        lab = s if setup.labeler is None else setup.labels(obs, info, alive, where)
        ctx = Context(t, s if setup.vector else int(s[0]), lab if setup.vector else int(lab[0]),
                      setup.alphabet.propositions, rng)
        action = policy(obs, ctx)
        a = setup.actions(action, alive, where)
        tallies["clipped"] += clipped
        cols.append((np.where(alive, s, -1), np.where(alive, a, -1), np.where(alive, lab, -1)))
        obs, _, term, trunc, info = env.step(action)
        term, trunc = np.atleast_1d(term).astype(bool), np.atleast_1d(trunc).astype(bool)
        ended = alive & (term | trunc)
        lengths[ended] = t + 1
        tallies["terminated"] += int((ended & term).sum())
        tallies["truncated"] += int((ended & trunc & ~term).sum())
        alive &= ~ended
        if not alive.any():
            break
    lengths[alive] = len(cols)
    tallies["cut"] += int(alive.sum())
    states, actions, labels = (np.stack([c[k] for c in cols], axis=1)[:size] for k in range(3))
    return states.astype(np.int32), actions.astype(np.int32), labels, lengths[:size]
