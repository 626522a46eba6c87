"""The reacher's scripted expert as an :class:`~rmtk.expert.Expert` that active learning can
ask (docs/design.md, section 12; the arm: ``rmtk/envs/reacher.py``).

A history (compressed label word, cell) is realised by *restoring* the arm: ``m`` arms of a
``rmtk.gym.reacher.ReacherVectorEnv`` are put (MuJoCo's state, as ``set_state`` does)
at points drawn uniformly inside the cell's bins whose fingertip lies in the word's last
label, and the expert's node is driven along the word, never reset at its end. The restored
observations are discretised and labeled again and compared with the history: a point that
does not land in the cell or carry the label is a :class:`~rmtk.expert.QueryError`.

Why a point inside the cell realises the history: the expert is a function of (cell, node)
(it sees only the cell's centre, as the paper samples its PPO policy at cell centres), so
its answer does not depend on where in the cell the arm is, only on the cell and the word.
The learner asks only at (word, cell) pairs some recorded episode reached
(:class:`~rmtk.recorded_active.RecordedActiveLearner`), so every history asked is one the
arm can produce. Each action drawn is one environment step: the arms take it.
"""

from __future__ import annotations

import functools

import attrs
import numpy as np

from ..envs.reacher import HORIZON, PROPOSITIONS, label
from ..errors import RmtkError
from ..expert import Observations, QueryError, _rng, compress
from ..space import Space
from .discretize import Bins
from .policies import NodePolicy
from .reacher import INTEGRATORS, ReacherLabels, ReacherVectorEnv, reacher_bins, reacher_expert


def _integrator(instance, attribute, value):
    if value not in INTEGRATORS:
        raise RmtkError(f"integrator: one of {', '.join(INTEGRATORS)}, not {value!r}")


@attrs.define
class ReacherExpert:
    """See the module docstring. ``policy``: the expert (default the scripted one following
    the true machine); ``bins``: the discretiser of the cells; ``seed``: every answer draws
    fresh numbers from it; ``tries``: rounds of rejection sampling for points carrying the
    label; ``recorded``: data recorded before learning (a count table), or ``None``."""

    bins: Bins = attrs.field(factory=reacher_bins)
    policy: NodePolicy = attrs.field(default=None)
    seed: int = 0
    integrator: str = attrs.field(default="rk4", validator=_integrator)
    tries: int = 50
    recorded: object = None
    compressed: bool = attrs.field(default=True, init=False)
    exact: bool = attrs.field(default=False, init=False)
    answers_queries: bool = attrs.field(default=True, init=False)
    _calls: list = attrs.field(init=False, factory=lambda: [0], repr=False)
    _envs: dict = attrs.field(init=False, factory=dict, repr=False)
    _letters: np.ndarray = attrs.field(init=False, repr=False)

    def __attrs_post_init__(self):
        if self.policy is None:
            self.policy = reacher_expert(bins=self.bins)
        self._letters = self.policy.letters(PROPOSITIONS)

    @property
    def mdp(self) -> Space:
        """The arm as learning sees it (cells, actions and propositions; no transition model)."""
        return Space(self.bins.n_states, 25, PROPOSITIONS, name="reacher")

    @functools.cached_property
    def _labels(self) -> ReacherLabels:
        return ReacherLabels()

    def _env(self, m: int) -> ReacherVectorEnv:
        """An environment of ``m`` arms (made once per size: making one loads the MuJoCo model)."""
        if m not in self._envs:
            self._envs[m] = ReacherVectorEnv(m, horizon=HORIZON, integrator=self.integrator)
        return self._envs[m]

    # -- realising a history --------------------------------------------------------------------
    def _check(self, word, state) -> tuple[int, ...]:
        word = tuple(int(k) for k in word)
        S, K = self.bins.n_states, len(PROPOSITIONS)
        if not 0 <= int(state) < S:
            raise QueryError(f"cell {state} is not a cell of the reacher (0..{S - 1})")
        if not word or any(not 0 <= k < K for k in word):
            raise QueryError(f"history {word}: a non-empty word of proposition indices 0..{K - 1} is expected")
        if compress(word) != word:
            raise QueryError(f"history {word}: words are compressed (no letter repeated in a row)")
        return word

    def _node(self, word) -> int:
        return self.policy.node_after(word, PROPOSITIONS)

    def _points(self, rng, state: int, letter: int, m: int) -> np.ndarray:
        """``(m, 4)`` joint states drawn uniformly in the cell whose fingertip carries ``letter``."""
        low, high, n = (np.array(x, dtype=float) for x in (self.bins.low, self.bins.high, self.bins.n))
        width = (high - low) / n
        corner = low + self.bins.bins([state])[0] * width
        out = np.empty((0, 4))
        for _ in range(self.tries):
            x = corner + rng.random((max(4 * m, 64), 4)) * width
            x = x[label(_tips(x[:, :2])) == letter]
            out = np.concatenate([out, x])[:m]
            if len(out) == m:
                return out
        name = PROPOSITIONS[letter]
        raise QueryError(
            f"no point of cell {state} found with label {name!r} in {self.tries} rounds of sampling: "
            "the history cannot be realised there"
        )

    def _at(self, rng, word, state: int, m: int):
        """``m`` arms restored at the history; their environment and observations."""
        env = self._env(m)
        obs = env.restore(self._points(rng, state, word[-1], m))
        cells, _ = self.bins.batch(obs)
        labels = self._labels.batch(obs)
        bad = np.flatnonzero((cells != state) | (labels != word[-1]))
        if len(bad):
            i = int(bad[0])
            raise QueryError(
                f"restoring the arm in cell {state} with label {PROPOSITIONS[word[-1]]!r}: arm {i} was observed in "
                f"cell {int(cells[i])} with label {PROPOSITIONS[int(labels[i])]!r}; the restore does not reproduce "
                "the history"
            )
        return env, cells

    # -- the Expert protocol --------------------------------------------------------------------
    def act(self, word, state, m: int = 100) -> Observations:
        """``m`` actions of the expert after ``word`` in cell ``state``: ``m`` arms restored there
        each take one step."""
        word = self._check(word, state)
        rng = _rng(self.seed, self._calls)
        env, cells = self._at(rng, word, int(state), int(m))
        actions = np.asarray(self.policy.choose(cells, np.full(int(m), self._node(word)), rng))
        env.step(actions)
        counts = np.bincount(actions, minlength=25).astype(float)
        return Observations((word,), np.array([int(state)]), counts[None, :], False, steps=int(m))

    def extend(self, word, state, k: int, m: int, explore: float = 0.0) -> Observations:
        """``m`` arms restored at the history (or reset, ``word=None``) run ``k`` steps each;
        per (word, cell) reached, the actions the expert drew."""
        rng = _rng(self.seed, self._calls)
        if word is None:
            env = self._env(int(m))
            obs, _ = env.reset(seed=int(rng.integers(2**31)))
            cells, _ = self.bins.batch(obs)
            labels = self._labels.batch(obs)
            words = [(int(x),) for x in labels]
        else:
            word = self._check(word, state)
            env, cells = self._at(rng, word, int(state), int(m))
            words = [word] * int(m)
        delta, letters = self.policy.machine.delta_u, self._letters
        nodes = np.array([self._node(w) for w in words])
        found: dict = {}
        for t in range(int(k)):
            actions = np.asarray(self.policy.choose(cells, nodes, rng))
            for w, c, a in zip(words, cells.tolist(), actions.tolist()):
                found.setdefault((w, c), np.zeros(25))[a] += 1
            if t + 1 == k:
                break
            moves = actions
            if explore:
                wild = rng.random(len(actions)) < explore
                moves = np.where(wild, rng.integers(0, 25, len(actions)), actions)
            obs = env.step(moves)[0]
            cells, _ = self.bins.batch(obs)
            labels = self._labels.batch(obs)
            words = [w if w[-1] == x else w + (int(x),) for w, x in zip(words, labels.tolist())]
            nodes = delta[nodes, letters[labels]]
        keys = list(found)
        values = np.array([found[key] for key in keys]).reshape(len(keys), 25)
        return Observations(
            tuple(key[0] for key in keys),
            np.array([key[1] for key in keys], np.int64),
            values,
            False,
            steps=int(m) * int(k),
        )


def _tips(angles) -> np.ndarray:
    from ..envs.reacher import fingertip

    return fingertip(angles)
