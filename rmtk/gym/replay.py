"""Histories realised by replaying recorded episodes (docs/design.md, section 12).

An :class:`Episode` keeps what replaying it needs and what the replay must reproduce: the
reset seed, the actions, and the discretised state and label after the reset and after every
step. :func:`record` runs a :class:`~rmtk.gym.NodePolicy` in a Gymnasium environment (a
single one, or a vector one of one copy, such as a one-arm
``rmtk.gym.reacher.ReacherVectorEnv``), one seeded episode at a time; :func:`replay`
resets with the seed, plays the actions of a prefix and compares every state and label with
the record, bit for bit: an environment that does not reproduce its episodes is a
:class:`~rmtk.expert.QueryError` naming the episode and the step.

:class:`ReplayExpert` answers the expert's queries at the histories its episodes reach: the
history (compressed label word, state) is realised by replaying the first recorded prefix
that produces it, the policy's node is driven along the word (never reset at its end), and
the policy then acts there (``act``) or goes on for ``k`` steps (``extend``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from ..expert import Observations, QueryError, _rng, compress
from .policies import NodePolicy


@attrs.frozen
class Episode:
    """One recorded episode: ``seed`` of its reset, ``actions`` ``(T,)``, and the discretised
    ``states`` and proposition ``labels`` ``(T + 1,)`` after the reset and after each step."""

    seed: int
    actions: np.ndarray
    states: np.ndarray
    labels: np.ndarray

    def __attrs_post_init__(self):
        if not len(self.states) == len(self.labels) == len(self.actions) + 1:
            raise QueryError(
                f"an episode of {len(self.actions)} actions has {len(self.actions) + 1} states and labels, "
                f"not {len(self.states)} and {len(self.labels)}"
            )


def _vector(env) -> bool:
    import gymnasium

    if isinstance(env, gymnasium.vector.VectorEnv):
        if env.num_envs != 1:
            raise QueryError(f"a replay steps one environment: this vector environment has {env.num_envs} copies")
        return True
    return False


def _first(obs, vector: bool):
    return np.asarray(obs)[0] if vector else obs


def _step(env, action: int, vector: bool):
    obs, _, terminated, truncated, _ = env.step(np.array([action]) if vector else int(action))
    done = bool(np.asarray(terminated).any() or np.asarray(truncated).any())
    return _first(obs, vector), done


def record(
    env, policy: NodePolicy, cell: Callable, label: Callable, propositions, n: int, horizon: int, seed: int = 0
) -> list[Episode]:
    """``n`` episodes of at most ``horizon`` steps, each reset with its own seed (drawn from
    ``seed``); ``cell(obs)``: the discretised state, ``label(obs)``: the proposition index."""
    vector = _vector(env)
    letters = policy.letters(tuple(propositions))
    root = np.random.SeedSequence(seed)
    out = []
    for child in root.spawn(int(n)):
        rng = np.random.default_rng(child)
        ep_seed = int(rng.integers(2**31))
        obs = _first(env.reset(seed=ep_seed)[0], vector)
        states, labels, actions = [cell(obs)], [label(obs)], []
        node = int(policy.machine.delta_u[policy.machine.initial, letters[labels[0]]])
        for _ in range(int(horizon)):
            a = int(np.asarray(policy.choose(np.array([states[-1]]), np.array([node]), rng))[0])
            obs, done = _step(env, a, vector)
            actions.append(a)
            states.append(cell(obs))
            labels.append(label(obs))
            node = int(policy.machine.delta_u[node, letters[labels[-1]]])
            if done:
                break
        out.append(Episode(ep_seed, np.array(actions, np.int64), np.array(states, np.int64), np.array(labels)))
    return out


def replay(env, episode: Episode, upto: int, cell: Callable, label: Callable, where: str = "the episode"):
    """The observation after replaying the first ``upto`` actions of ``episode``; every state
    and label reached is compared with the record (a :class:`QueryError` names the first
    difference)."""
    vector = _vector(env)
    obs = _first(env.reset(seed=episode.seed)[0], vector)
    for t in range(int(upto) + 1):
        if t:
            obs, _ = _step(env, int(episode.actions[t - 1]), vector)
        got = (cell(obs), label(obs))
        want = (int(episode.states[t]), int(episode.labels[t]))
        if got != want:
            raise QueryError(
                f"replaying {where} (reset seed {episode.seed}): "
                + (f"after step {t}" if t else "after the reset")
                + f" the environment reached state {got[0]} with label {got[1]} where the recording has state "
                f"{want[0]} with label {want[1]}: this environment does not reproduce its episodes from a seed "
                "and actions"
            )
    return obs


@attrs.define
class ReplayExpert:
    """An expert asked at the histories of recorded ``episodes`` (see the module docstring).
    ``cell`` and ``label`` read an observation (discretised state, proposition index);
    ``mdp``: the environment as a labeled MDP when there is one (the active loop needs it)."""

    env: Any
    policy: NodePolicy
    episodes: list
    cell: Callable
    label: Callable
    propositions: tuple
    mdp: Any = None
    seed: int = 0
    recorded: object = None
    exact: bool = attrs.field(default=False, init=False)
    answers_queries: bool = attrs.field(default=True, init=False)
    compressed: bool = attrs.field(default=True, init=False)
    _where: dict = attrs.field(init=False, factory=dict, repr=False)
    _calls: list = attrs.field(init=False, factory=lambda: [0], repr=False)

    def __attrs_post_init__(self):
        for e, ep in enumerate(self.episodes):
            word: tuple[int, ...] = ()
            for t, (s, k) in enumerate(zip(ep.states.tolist(), ep.labels.tolist())):
                word = compress(word + (int(k),))
                self._where.setdefault((word, int(s)), (e, t))

    @property
    def histories(self) -> list:
        """The (word, state) histories the episodes reach, in the order first reached."""
        return list(self._where)

    def _node(self, word) -> int:
        m, letters = self.policy.machine, self.policy.letters(tuple(self.propositions))
        u = m.initial
        for k in word:
            u = int(m.delta_u[u, letters[k]])
        return u

    def _at(self, word, state: int):
        key = (tuple(int(k) for k in word), int(state))
        if key not in self._where:
            names = " ".join(self.propositions[k] for k in key[0])
            raise QueryError(
                f"no recorded episode reaches state {state} after the labels {names!r}: a replay expert "
                f"realises only the histories of its {len(self.episodes)} episodes"
            )
        e, t = self._where[key]
        return replay(self.env, self.episodes[e], t, self.cell, self.label, f"episode {e}"), t

    def act(self, word, state, m: int = 100) -> Observations:
        _, t = self._at(word, state)
        rng = _rng(self.seed, self._calls)
        node = self._node(word)
        drawn = np.asarray(self.policy.choose(np.full(int(m), int(state)), np.full(int(m), node), rng))
        counts = np.bincount(drawn, minlength=self._actions()).astype(float)
        return Observations((tuple(word),), np.array([int(state)]), counts[None, :], False, steps=t + int(m))

    def extend(self, word, state, k: int, m: int, explore: float = 0.0) -> Observations:
        """``m`` continuations of ``k`` steps from the history (``None``: from a fresh seeded
        reset), the history replayed and checked each time; per visited (word, state) the
        actions drawn."""
        rng = _rng(self.seed, self._calls)
        vector = _vector(self.env)
        m_, letters = self.policy.machine, self.policy.letters(tuple(self.propositions))
        found: dict = {}
        steps = 0
        for _ in range(int(m)):
            if word is None:
                obs = _first(self.env.reset(seed=int(rng.integers(2**31)))[0], vector)
                s, w = self.cell(obs), (self.label(obs),)
            else:
                obs, t = self._at(word, state)
                s, w = int(state), tuple(word)
                steps += t
            node = self._node(w)
            for i in range(int(k)):
                a = int(np.asarray(self.policy.choose(np.array([s]), np.array([node]), rng))[0])
                found.setdefault((w, s), {}).setdefault(a, 0)
                found[(w, s)][a] += 1
                steps += 1
                if i + 1 == k:
                    break
                move = int(rng.integers(self._actions())) if explore and rng.random() < explore else a
                obs, done = _step(self.env, move, vector)
                s, lab = self.cell(obs), self.label(obs)
                w = compress(w + (lab,))
                node = int(m_.delta_u[node, letters[lab]])
                if done:
                    break
        A = max([a for c in found.values() for a in c] + [0]) + 1
        A = max(A, self._actions())
        keys = list(found)
        values = np.zeros((len(keys), A))
        for r, key in enumerate(keys):
            for a, c in found[key].items():
                values[r, a] = c
        return Observations(tuple(x[0] for x in keys), np.array([x[1] for x in keys], np.int64), values, False, steps)

    def _actions(self) -> int:
        space = getattr(self.env, "single_action_space", None) or self.env.action_space
        return int(space.n)
