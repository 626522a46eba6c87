"""Exploration until the machine shows itself (docs/guide/14-online.md).

While the hypothesis pays nothing, an agent has nothing to learn from, and a walk that the agent's
own ε-greedy exploration makes seldom completes a task of several stages (on CliffWalking, a
uniform walk completes a → b → c in about 0.15 % of 100-step episodes). The Exploration strategy
decides who acts:

* :class:`AgentExploration`: the algorithm's own exploration (DQN's ε-greedy schedule, PPO's
  stochastic policy) in every episode;
* :class:`SubgoalExploration`: in a share of the episodes (every episode while the hypothesis
  pays nothing, fewer once it has no unexercised pair) a *subgoal walker* acts instead of the
  agent. It walks to subgoals, each time one of these kinds drawn with equal probability among
  those that apply: a proposition of the labeler's alphabet drawn uniformly (not the one it
  stands on, not the unmarked cells', not one the hypothesis says ends the episode unpaid; as rmtk's
  :class:`~rmtk.traces.explorers.RandomSubgoals` draws its targets for traces); an unexercised
  (node, letter) pair of the hypothesis, reached by the hypothesis' shortest word to the node
  followed by the letter; a transition the hypothesis pays, reached the same way (what the
  hypothesis claims, tried out: a wrong claim is a counterexample at once). The walker knows
  no model: it records the transitions it sees (the last successor of each (state, action), the
  label of each state) and walks by the shortest known path to a state with the subgoal's label,
  around the states whose letter the hypothesis says ends the episode unpaid (and, on a word's
  way, those whose letter would move the node elsewhere) while such a path is known; where none
  is, to the nearest state with an untried action, which it tries. ``epsilon`` of its actions
  are uniform. The states are the observations of a ``Discrete`` space, or a
  discretiser's (``discretize``, e.g. :class:`rmtk.gym.Bins`).

The walker replaces the agent's actions in the episodes it leads; an off-policy algorithm
learns from them as from any behaviour (the replay buffer stores the action taken), an on-policy
one cannot (:class:`ExplorationCapabilities`). Every draw comes from the generator the loop's seed
makes.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Protocol, runtime_checkable

import attrs
import numpy as np
from gymnasium import spaces

from ...errors import ModelError
from ...learner.capabilities import Capabilities
from .hypothesis import Hypothesis


class ExplorationCapabilities(Capabilities):
    """What an exploration strategy needs beyond its protocol, with the defaults of one that does
    not say."""

    __slots__ = ()

    #: Whether it acts in place of the agent in the episodes it leads; then the algorithm must
    #: learn off-policy (DQN, SAC) and the actions must be ``Discrete``. Default ``False``.
    replaces_actions: bool = False


@runtime_checkable
class Walker(Protocol):
    """What acts in the episodes an exploration strategy leads (see the module docstring)."""

    def begin(self, obs: Any, letter: int, node: int, hypothesis: Hypothesis, exercised: np.ndarray) -> bool:
        """An episode starts at ``obs`` (labelled ``letter``, the hypothesis at ``node``);
        returns whether the walker leads it."""

    def act(self, obs: Any, letter: int, node: int) -> int:
        """The action at ``obs`` in an episode it leads."""

    def observe(self, obs: Any, action: int, next_obs: Any, letter: int, node: int) -> None:
        """A step was taken (in any episode): ``action`` led from ``obs`` to ``next_obs``, labelled ``letter``."""

    def state(self) -> dict:
        """What it learned, as arrays (saved with the run)."""

    def restore(self, saved: dict) -> None:
        """Take back what :meth:`state` returned."""


@runtime_checkable
class Exploration(Protocol):
    """The Exploration strategy (module docstring): the walker of one run, or ``None`` when the
    agent explores by itself."""

    def walker(self, observation_space, action_space, n_letters: int, seed: int) -> Walker | None:
        """A walker for an environment with these spaces and ``n_letters`` propositions."""


@attrs.frozen
class AgentExploration(ExplorationCapabilities):
    """The algorithm's own exploration: no walker."""

    def walker(self, observation_space, action_space, n_letters: int, seed: int) -> Walker | None:
        return None


def _share(instance, attribute, value) -> None:
    if not 0.0 <= float(value) <= 1.0:
        raise ModelError(f"SubgoalExploration.{attribute.name} must lie in [0, 1], got {value!r}")


@attrs.frozen
class SubgoalExploration(ExplorationCapabilities):
    """Subgoal exploration (module docstring): the walker leads a ``share`` of the episodes while
    the hypothesis has unexercised (node, letter) pairs, all of them while it pays nothing, and a
    ``settled`` share once every pair is exercised (default 0.1; ``None``: ``share``); ``epsilon`` of its actions
    uniform (never into a state known to end the episode unpaid); ``discretize``: ``obs -> state
    index`` with ``size(space)`` (default: the observations of a ``Discrete`` space)."""

    share: float = attrs.field(default=0.5, validator=_share)
    epsilon: float = attrs.field(default=0.1, validator=_share)
    settled: float | None = attrs.field(default=0.1, validator=attrs.validators.optional(_share))  # type: ignore[arg-type]
    discretize: Any = None
    replaces_actions: bool = attrs.field(default=True, init=False)

    def walker(self, observation_space, action_space, n_letters: int, seed: int) -> Walker | None:
        if not isinstance(action_space, spaces.Discrete):
            raise ModelError(
                f"SubgoalExploration walks with Discrete actions; the environment's action space is {action_space} "
                "(use AgentExploration, the algorithm's own exploration)"
            )
        if self.discretize is None:
            if not isinstance(observation_space, spaces.Discrete):
                raise ModelError(
                    f"SubgoalExploration needs states: the observation space is {observation_space}, not Discrete; "
                    "give discretize= (e.g. rmtk.gym.Bins(low, high, n)) or use AgentExploration"
                )
            start = int(observation_space.start)
            n_states = int(observation_space.n)

            def index(obs) -> int:
                return int(obs) - start
        else:
            n_states = int(self.discretize.size(observation_space))
            index = self.discretize
        return SubgoalWalker(
            n_states,
            int(action_space.n),
            n_letters,
            index,
            float(self.share),
            float(self.epsilon),
            seed,
            float(self.share if self.settled is None else self.settled),
        )


#: A distance no known path reaches.
FAR = np.iinfo(np.int64).max // 4


def distances(succ: np.ndarray, goal: np.ndarray, blocked: np.ndarray | None = None) -> np.ndarray:
    """``(S,)``: the fewest known steps from each state to a ``goal`` state (:data:`FAR` where
    no known path leads), ``succ[s, a]`` the known successor (−1 unknown); no path goes through
    a ``blocked`` state that is not a goal."""
    known = succ >= 0
    nxt = np.where(known, succ, 0)
    d = np.where(goal, 0, FAR)
    barrier = np.zeros(len(d), bool) if blocked is None else blocked & ~goal
    while True:
        via = np.where(known, d[nxt], FAR).min(axis=1) + 1
        new = np.where(barrier, FAR, np.minimum(d, via))
        if np.array_equal(new, d):
            return d
        d = new


class SubgoalWalker:
    """The walker of :class:`SubgoalExploration` (its module docstring)."""

    def __init__(
        self,
        n_states: int,
        n_actions: int,
        n_letters: int,
        index,
        share: float,
        epsilon: float,
        seed: int,
        settled: float,
    ):
        self.S, self.A, self.K = n_states, n_actions, n_letters
        self.index, self.share, self.epsilon, self.settled = index, share, epsilon, settled
        self.rng = np.random.default_rng([int(seed), 11])
        self.succ = np.full((n_states, n_actions), -1, np.int64)
        self.label = np.full(n_states, -1, np.int64)
        self.version = 0
        self._cache: dict[tuple[str, int], np.ndarray] = {}
        self.plan: list[int] = []
        self.stay = False  # the plan walks a word of the hypothesis: its steps avoid moving the node elsewhere
        self.expect: list[int] = []  # the node after each letter of such a plan
        self.hypothesis: Hypothesis | None = None
        self.exercised: np.ndarray | None = None

    # ------------------------------------------------------------------ what it learns
    def _state(self, obs) -> int:
        s = int(self.index(obs))
        if not 0 <= s < self.S:
            raise ModelError(f"the discretiser gave state {s} for an observation; expected 0..{self.S - 1}")
        return s

    def observe(self, obs, action: int, next_obs, letter: int, node: int) -> None:
        s, s2 = self._state(obs), self._state(next_obs)
        if self.succ[s, action] != s2:
            self.succ[s, action] = s2
            self.version += 1
        if self.label[s2] != letter:
            self.label[s2] = letter
            self.version += 1

    def state(self) -> dict:
        return {"succ": self.succ.copy(), "label": self.label.copy()}

    def restore(self, saved: dict) -> None:
        self.succ, self.label = np.asarray(saved["succ"], np.int64), np.asarray(saved["label"], np.int64)
        self.version += 1

    # ------------------------------------------------------------------ episodes
    def begin(self, obs, letter: int, node: int, hypothesis: Hypothesis, exercised: np.ndarray) -> bool:
        s = self._state(obs)
        if self.label[s] != letter:
            self.label[s] = letter
            self.version += 1
        if hypothesis is not self.hypothesis:
            self.version += 1  # the paths that avoid moving a node depend on the hypothesis
        self.hypothesis, self.exercised, self.plan, self.stay = hypothesis, exercised, [], False
        self.expect = []
        if not hypothesis.pays:
            share = 1.0
        elif (~exercised[hypothesis.machine.reachable()]).any():
            share = self.share
        else:
            share = self.settled
        return bool(self.rng.random() < share)

    def _word_to(self, node: int) -> dict[int, list[int]]:
        """The hypothesis' shortest words (letters in index order) from ``node`` to each node."""
        h = self.hypothesis
        assert h is not None, "begin() sets the hypothesis"
        word: dict[int, list[int]] = {node: []}
        queue = deque([node])
        while queue:
            u = queue.popleft()
            for k in range(self.K):
                v = int(h.next[u, k])
                if v not in word:
                    word[v] = [*word[u], k]
                    queue.append(v)
        return word

    def _new_plan(self, letter: int, node: int) -> list[int]:
        """The next subgoals: a word of the hypothesis to an unexercised pair or to a paying
        transition (what the hypothesis claims, tried out), or one random proposition; each kind
        that applies drawn with equal probability."""
        h, ex = self.hypothesis, self.exercised
        self.stay = False
        kinds = []
        if h is not None and ex is not None:
            words = self._word_to(node)
            reach = sorted(words)
            for wanted in (~ex, h.reward != 0):
                pairs = [(u, k) for u in reach for k in range(self.K) if wanted[u, k]]
                plans = [[*words[u], k] for u, k in pairs if [*words[u], k][0] != letter]
                if plans:
                    kinds.append(plans)
        pick = int(self.rng.integers(len(kinds) + 1))
        if pick < len(kinds):
            plans = kinds[pick]
            plan = plans[int(self.rng.integers(len(plans)))]
            assert h is not None, "kinds come from the hypothesis"
            self.stay, self.expect, at = True, [], node
            for x in plan:
                at = int(h.next[at, x])
                self.expect.append(at)
            return plan
        # a random subgoal: not the letter here, not the commonest label (the unmarked cells'), not
        # one the hypothesis says ends the episode unpaid from here (unexercised pairs test those)
        h = self.hypothesis
        seen = np.bincount(self.label[self.label >= 0], minlength=self.K)
        common = int(np.argmax(seen)) if seen.any() else -1
        ends = h.terminal[h.next[node]] & (h.reward[node] == 0) if h is not None else np.zeros(self.K, bool)
        others = [k for k in range(self.K) if k not in (letter, common) and not ends[k]]
        if not others:
            others = [k for k in range(self.K) if k != letter] or [letter]
        return [others[int(self.rng.integers(len(others)))]]

    def _toward(self, key: str, goal: np.ndarray, blocked: np.ndarray | None = None) -> np.ndarray:
        d = self._cache.get((key, self.version))
        if d is None:
            if len(self._cache) > 64:
                self._cache.clear()
            d = distances(self.succ, goal, blocked)
            self._cache[(key, self.version)] = d
        return d

    def _traps(self, node: int) -> np.ndarray:
        """The letters the hypothesis says end the episode unpaid from ``node``."""
        h = self.hypothesis
        if h is None:
            return np.zeros(self.K, bool)
        return h.terminal[h.next[node]] & (h.reward[node] == 0)

    def act(self, obs, letter: int, node: int) -> int:
        s = self._state(obs)
        u = self.rng.random()
        if u < self.epsilon:  # uniform, but not into a state known to end the episode unpaid
            succ = self.succ[s]
            lab = np.where(succ >= 0, self.label[np.maximum(succ, 0)], -1)
            safe = np.flatnonzero(~((lab >= 0) & self._traps(node)[np.maximum(lab, 0)]))
            return int(safe[int(self.rng.integers(len(safe)))]) if len(safe) else int(self.rng.integers(self.A))
        while self.plan and self.plan[0] == letter:
            self.plan.pop(0)
            if self.stay and self.expect.pop(0) != node:  # the walk left the word: give it up
                self.plan = []
        if not self.plan:
            self.plan = self._new_plan(letter, node)
        target = self.plan[0]
        goal = self.label == target
        blocked, key = None, f"{target}"
        h = self.hypothesis
        if h is not None:  # on the way, no letter that ends the episode unpaid (nor, in a word, moves the node)
            avoid = self._traps(node)
            if self.stay:
                avoid |= h.next[node] != node
            avoid[target] = False
            if avoid.any():
                blocked, key = np.isin(self.label, np.flatnonzero(avoid)), f"{target}-{node}-{int(self.stay)}"
        d = self._toward(f"letter{key}", goal, blocked)
        if d[s] >= FAR:  # no known way: an untried action here, else the nearest state with one
            untried = np.flatnonzero(self.succ[s] < 0)
            if len(untried):
                return int(untried[int(self.rng.integers(len(untried)))])
            frontier = (self.label >= 0) & (self.succ < 0).any(axis=1)
            d = self._toward(f"frontier{key}", frontier, blocked)
            if d[s] >= FAR and blocked is not None:  # nothing left that avoids them: any known way
                d = self._toward(f"letter{target}", goal)
            if d[s] >= FAR:
                return int(self.rng.integers(self.A))
        after = np.where(self.succ[s] >= 0, d[np.maximum(self.succ[s], 0)], FAR)
        best = np.flatnonzero(after == after.min())
        return int(best[int(self.rng.integers(len(best)))])


__all__ = [
    "AgentExploration",
    "Exploration",
    "ExplorationCapabilities",
    "SubgoalExploration",
    "SubgoalWalker",
    "Walker",
    "distances",
]
