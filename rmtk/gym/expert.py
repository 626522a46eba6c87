"""An expert that acts in a Gymnasium environment, asked by active learning
(:mod:`rmtk.active`, docs/design.md section 12).

:class:`GymExpert` takes a single (not vector) environment whose observations are the state
indices of a labeled MDP describing it, and a :class:`~rmtk.gym.NodePolicy`: a policy whose
memory is a reward machine's node. A history (label word, state) is realised in one of two
ways, and the policy's node is driven along the word, never reset at its end:

* ``"restore"``: the environment is put in the state directly (toy-text environments:
  ``unwrapped.s``; any other through a ``restore(env, state)`` function), after a seeded reset;
* ``"replay"``: a path producing the word is planned on the MDP (fewest steps, from a start
  state the seeded reset gives), and its actions are played; every state reached is compared
  with the plan, and an environment that strays (a stochastic transition, a replay that does
  not reproduce its states) is a :class:`~rmtk.expert.QueryError` naming the step.

Each question draws fresh seeded randomness (the environment's resets, the policy's draws).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from ..errors import RmtkError
from ..expert import Observations, QueryError, _check_word, _rng, compress
from ..mdp import LabeledMDP
from .policies import NodePolicy


def _toy_text(env, state: int) -> None:
    inner = env.unwrapped
    if not hasattr(inner, "s"):
        raise QueryError(
            f"cannot restore a state of {type(inner).__name__}: it has no 's' (toy-text) attribute; "
            "pass restore=... or mode='replay'"
        )
    inner.s = int(state)


def _mode(instance, attribute, value):
    if value not in ("restore", "replay"):
        raise RmtkError(f"mode must be 'restore' or 'replay', not {value!r}")


@attrs.define
class GymExpert:
    """See the module docstring. ``mdp``: the environment as a labeled MDP (its states are
    the observations, its labels those of the states); ``policy``: the expert;
    ``max_resets``: seeded resets tried to start where a replayed path starts."""

    env: Any
    mdp: LabeledMDP
    policy: NodePolicy
    mode: str = attrs.field(default="restore", validator=_mode)
    restore: Callable | None = None
    seed: int = 0
    max_resets: int = 50
    compressed: bool = True
    recorded: object = None
    exact: bool = attrs.field(default=False, init=False)
    answers_queries: bool = attrs.field(default=True, init=False)
    _calls: list = attrs.field(init=False, factory=lambda: [0], repr=False)
    _letters: np.ndarray = attrs.field(init=False, repr=False)

    def __attrs_post_init__(self):
        import gymnasium

        if isinstance(self.env, gymnasium.vector.VectorEnv) or not isinstance(self.env, gymnasium.Env):
            raise RmtkError("GymExpert asks one Gymnasium environment (not a vector one) at a time")
        n = getattr(self.env.action_space, "n", None)
        if n != self.mdp.n_actions:
            raise RmtkError(
                f"the environment has action space {self.env.action_space}, the mdp {self.mdp.name!r} "
                f"{self.mdp.n_actions} actions"
            )
        self._letters = self.policy.letters(tuple(self.mdp.propositions))

    # -- realising a history --------------------------------------------------------------------
    def _node(self, word) -> int:
        return self.policy.node_after(word, tuple(self.mdp.propositions))

    def _plan(self, word, state: int, start: int) -> list[int] | None:
        """Actions of a fewest-steps path from ``start`` producing ``word`` and ending in ``state``."""
        lab, T, A = self.mdp.labels, self.mdp.kernel, self.mdp.n_actions
        if lab[start] != word[0]:
            return None
        first = (start, 1)
        back: dict[tuple[int, int], Any] = {first: None}
        queue = deque([first])
        while queue:
            s, i = queue.popleft()
            if i == len(word) and s == state:
                path, node = [], (s, i)
                while back[node] is not None:
                    node, a = back[node]
                    path.append(a)
                return path[::-1]
            for a in range(A):
                for s2 in T.indices[T.indptr[s * A + a] : T.indptr[s * A + a + 1]].tolist():
                    if self.compressed and lab[s2] == word[i - 1]:
                        nxt = (s2, i)
                    elif i < len(word) and lab[s2] == word[i]:
                        nxt = (s2, i + 1)
                    else:
                        continue
                    if nxt not in back:
                        back[nxt] = ((s, i), a)
                        queue.append(nxt)
        return None

    def _at(self, rng, word, state: int) -> None:
        """Put the environment at the end of the history (see the module docstring)."""
        if self.mode == "restore":
            self.env.reset(seed=int(rng.integers(2**31)))
            (self.restore or _toy_text)(self.env, state)
            return
        for _ in range(self.max_resets):
            start, _ = self.env.reset(seed=int(rng.integers(2**31)))
            plan = self._plan(word, state, int(start))
            if plan is not None:
                break
        else:
            raise QueryError(
                f"no reset of the environment in {self.max_resets} seeded tries started where a path "
                f"producing the history reaches state {self.mdp.states[state]!r}"
            )
        expect = int(start)
        for t, a in enumerate(plan):
            obs = self._step(a)[0]
            nxt = self._expected(expect, a)
            if int(obs) not in nxt:
                raise QueryError(
                    f"replaying the history: at step {t + 1} the environment reached state "
                    f"{self.mdp.states[int(obs)]!r} where the mdp allows "
                    f"{', '.join(repr(self.mdp.states[s]) for s in nxt)}"
                )
            if len(nxt) > 1:
                raise QueryError(
                    f"replaying the history: step {t + 1} is stochastic in the mdp; a replay cannot "
                    "reproduce the planned states (use mode='restore')"
                )
            expect = int(obs)
        if expect != state:
            raise QueryError(
                f"replaying the history ended in state {self.mdp.states[expect]!r}, not {self.mdp.states[state]!r}"
            )

    def _expected(self, s: int, a: int) -> list[int]:
        T, A = self.mdp.kernel, self.mdp.n_actions
        return T.indices[T.indptr[s * A + a] : T.indptr[s * A + a + 1]].tolist()

    def _step(self, action: int):
        obs, _, terminated, truncated, _ = self.env.step(int(action))
        if not (isinstance(obs, (int, np.integer)) or np.ndim(obs) == 0) or not 0 <= int(obs) < self.mdp.n_states:
            raise QueryError(
                f"the environment returned observation {obs!r}, not a state index of mdp {self.mdp.name!r}"
            )
        return obs, terminated or truncated

    def _choose(self, rng, state: int, node: int) -> int:
        return int(np.asarray(self.policy.choose(np.array([state]), np.array([node]), rng))[0])

    # -- the Expert protocol --------------------------------------------------------------------
    def act(self, word, state, m: int = 100) -> Observations:
        word = _check_word(self.mdp, word, state, self.compressed)
        rng = _rng(self.seed, self._calls)
        node = self._node(word)
        self._at(rng, word, int(state))
        counts = np.bincount(
            [self._choose(rng, int(state), node) for _ in range(int(m))], minlength=self.mdp.n_actions
        ).astype(float)
        return Observations((word,), np.array([int(state)]), counts[None, :], False, steps=int(m))

    def extend(self, word, state, k: int, m: int, explore: float = 0.0) -> Observations:
        if word is not None:
            word = _check_word(self.mdp, word, state, self.compressed)
        rng = _rng(self.seed, self._calls)
        lab, A = self.mdp.labels, self.mdp.n_actions
        found: dict = {}
        steps = 0
        for _ in range(int(m)):
            w: tuple[int, ...]
            if word is None:
                obs, _ = self.env.reset(seed=int(rng.integers(2**31)))
                s = int(obs)
                w = (int(lab[s]),)
            else:
                self._at(rng, word, int(state))
                s, w = int(state), tuple(word)
            node = self._node(w)
            for t in range(int(k)):
                a = self._choose(rng, s, node)
                found.setdefault((w, s), np.zeros(A))[a] += 1
                steps += 1
                if t + 1 == k:
                    break
                move = int(rng.integers(A)) if explore and rng.random() < explore else a
                obs, done = self._step(move)
                s = int(obs)
                w = compress(w + (int(lab[s]),)) if self.compressed else w + (int(lab[s]),)
                node = int(self.policy.machine.delta_u[node, self._letters[lab[s]]])
                if done:
                    break
        keys = list(found)
        values = np.array([found[key] for key in keys]).reshape(len(keys), A)
        return Observations(
            tuple(key[0] for key in keys), np.array([key[1] for key in keys], np.int64), values, False, steps=steps
        )
