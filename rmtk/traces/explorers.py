"""Reward traces of an explorer on a task (docs/design/rewards-evidence.md): what an agent
that does not know the machine records, for learning from rewards (rmtk/traces/evidence.py), the
benchmark benchmarks/rewards.py and the loop of rmtk/experiments/jirp.py.

Two explorers (the :class:`Explorer` strategy), each mixed with ``epsilon`` of uniformly random
actions:

* :class:`ExpertMix` (the default, ``explore(..., epsilon=ε)``): the task's scripted
  shortest-path expert (:func:`rmtk.ptp.exact.shortest_path_table`); ``epsilon=1`` is a random walk.
  It knows the machine, so it visits the objects in the machine's order and seldom in others.
* :class:`RandomSubgoals`: "random subgoal" exploration, common in the reward-machine
  literature (options or counterfactual goals of Toro Icarte et al.): it draws a target
  proposition uniformly, walks to the nearest state labelled with it by the MDP's shortest
  paths, and draws another target (not the one reached) on arrival. It knows the MDP (its
  kernel and labels) but not the machine, so it visits the propositions in every order.

Trajectories are drawn from ``seed`` (:func:`rmtk.product.simulate.simulate` for the expert) and the
rewards are the task's machine's, paid on the label of the next state (docs/design/02-conventions.md,
"The prefix convention").
Episodes end, as in the Office and Craft Worlds of the literature, when the machine enters an
absorbing node that pays nothing (its end node): the step that enters it is recorded with its
reward, nothing after it. With ``noise`` each recorded reward is replaced, with that
probability, by another of the machine's reward values drawn uniformly.
"""

from __future__ import annotations

from typing import Protocol

import attrs
import numpy as np

from ..data import Demonstrations
from ..errors import ModelError
from ..machine.model import RewardMachine
from ..product.simulate import RowSampler, rollout_nodes, simulate
from ..task import Task
from .noise import replace_values


def end_nodes(task: Task) -> np.ndarray:
    """The machine's nodes that every letter keeps in place with reward 0."""
    m = task.require_machine("its end nodes")
    stay = np.all(m.delta_u == np.arange(m.n_nodes)[:, None], axis=1)
    return np.flatnonzero(stay & np.all(m.delta_r == 0, axis=1))


def _epsilon(instance, attribute, value) -> None:
    if not 0 <= value <= 1:
        raise ModelError(f"epsilon must lie in [0, 1], got {value}")


class Explorer(Protocol):
    """The Explorer strategy: consumes a task, a number of trajectories, a horizon and a seed;
    produces :class:`~rmtk.data.Demonstrations` of ``horizon`` steps each (states and actions;
    :func:`explore` adds the machine's rewards and ends the episodes)."""

    def trajectories(self, task: Task, n: int, horizon: int, seed: int) -> Demonstrations:
        """``n`` trajectories of ``horizon`` steps, decided by ``seed``."""


@attrs.frozen
class ExpertMix:
    """The task's scripted shortest-path expert mixed with ``epsilon`` of random actions."""

    epsilon: float = attrs.field(default=1.0, converter=float, validator=_epsilon)

    def trajectories(self, task: Task, n: int, horizon: int, seed: int) -> Demonstrations:
        from ..ptp.exact import shortest_path_table

        policy = np.ascontiguousarray(shortest_path_table(task, self.epsilon).transpose(1, 0, 2))
        return simulate(task, n, horizon, seed=seed, policy=policy)


@attrs.frozen
class RandomSubgoals:
    """Random subgoal exploration: walk to a target proposition drawn uniformly from ``goals``
    by the MDP's shortest paths (``epsilon`` random actions mixed in), draw another target
    on arrival. ``goals``: proposition names; default every proposition that labels a state
    but the commonest (the unmarked cells') and those in ``avoid``, which the walks go around
    where they can (e.g. the Office World's decorations, known to end an episode)."""

    epsilon: float = attrs.field(default=0.1, converter=float, validator=_epsilon)
    goals: tuple[str, ...] | None = attrs.field(default=None, converter=attrs.converters.optional(tuple))
    avoid: tuple[str, ...] = attrs.field(default=(), converter=tuple)

    def targets(self, task: Task) -> np.ndarray:
        """The goals' proposition indices (each labels some state; at least two)."""
        mdp = task.mdp
        used = np.bincount(mdp.labels, minlength=mdp.n_propositions)
        if self.goals is None:
            goals = np.flatnonzero(used > 0)
            bad = [mdp.proposition_index(a) for a in self.avoid]
            goals = goals[(goals != np.argmax(used)) & ~np.isin(goals, bad)]
        else:
            goals = np.array([mdp.proposition_index(g) for g in self.goals], np.int64)
        if len(goals) < 2 or np.any(used[goals] == 0):
            raise ModelError(f"random subgoals need two or more propositions that label states, got {goals.tolist()}")
        return goals

    def policies(self, task: Task, goals: np.ndarray) -> np.ndarray:
        """``(G, S, A)``: for each goal, the shortest-path walk to it (the scripted expert of a
        two-node machine that pays on the goal's letter and stops, unpaid, on ``avoid``), ε-mixed."""
        from ..ptp.exact import shortest_path_table

        mdp = task.mdp
        P = mdp.n_propositions
        out = []
        for g in goals.tolist():
            delta_u = np.zeros((2, P), np.int64)
            delta_u[0, [g, *map(mdp.proposition_index, self.avoid)]], delta_u[1] = 1, 1
            delta_r = np.zeros((2, P))
            delta_r[0, g] = 1.0
            reach = RewardMachine(("go", "there"), mdp.propositions, delta_u, delta_r)
            out.append(shortest_path_table(Task(mdp, reach), self.epsilon)[0])
        return np.stack(out)

    def trajectories(self, task: Task, n: int, horizon: int, seed: int) -> Demonstrations:
        mdp = task.mdp
        S, A = mdp.n_states, mdp.n_actions
        goals = self.targets(task)
        G = len(goals)
        acts = RowSampler(np.arange(0, G * S * A + 1, A), self.policies(task, goals).reshape(-1))
        kernel = mdp.kernel
        moves, succ = RowSampler(kernel.indptr, kernel.data), np.asarray(kernel.indices, np.intp)
        rng = np.random.default_rng(seed)
        s = RowSampler([0, S], mdp.initial).sample(np.zeros(n, np.intp), rng.random(n))
        g = np.minimum((rng.random(n) * G).astype(np.intp), G - 1)
        states = np.empty((n, horizon), np.int32)
        actions = np.empty((n, horizon), np.int32)
        for t in range(horizon):
            U = rng.random((3, n))
            other = np.minimum((U[0] * (G - 1)).astype(np.intp), G - 2)  # a goal other than g
            g = np.where(mdp.labels[s] == goals[g], other + (other >= g), g)
            r = g * S + s
            a = acts.sample(r, U[1]) - r * A
            states[:, t], actions[:, t] = s, a
            s = succ[moves.sample(s * A + a, U[2])]
        return Demonstrations(states, actions, np.full(n, horizon, np.int64))


def explore(
    task: Task,
    n: int,
    horizon: int,
    *,
    seed: int,
    epsilon: float = 1.0,
    noise: float = 0.0,
    episodic: bool = True,
    explorer: Explorer | None = None,
) -> Demonstrations:
    """``n`` trajectories with rewards of at most ``horizon`` steps of ``explorer`` on ``task``
    (default: :class:`ExpertMix` with ``epsilon``; ``seed`` decides the trajectories,
    ``seed + 1`` the noise). ``episodic``: a trace ends on entering an end node
    (:func:`end_nodes`)."""
    if not 0 <= epsilon <= 1 or not 0 <= noise <= 1:
        raise ModelError(f"epsilon and noise must lie in [0, 1], got {epsilon} and {noise}")
    if explorer is not None and epsilon != 1.0:
        raise ModelError("epsilon is the default explorer's: give it to the explorer (RandomSubgoals(epsilon=...))")
    m = task.require_machine("exploring with its rewards (the machine pays them)")
    demos = (explorer or ExpertMix(epsilon)).trajectories(task, n, horizon, seed)
    u = rollout_nodes(task, demos).astype(np.int64)
    letters = task.mdp.labels[demos.states].astype(np.int64)
    machine_letter = task.letter_of_proposition[letters]
    lengths = np.full(n, horizon, np.int64)
    if episodic:
        ended = np.isin(u, end_nodes(task))
        first = np.where(ended.any(axis=1), ended.argmax(axis=1), horizon - 1)
        lengths = first + 1
    rewards = np.full(letters.shape, np.nan)
    rewards[:, :-1] = m.delta_r[u[:, :-1], machine_letter[:, 1:]]
    if noise:
        rewards = replace_values(rewards, m.delta_r, noise, np.random.default_rng(seed + 1))
    steps = np.arange(horizon)[None, :]
    after = steps >= lengths[:, None]
    rewards[after | (steps == lengths[:, None] - 1)] = np.nan
    states = np.where(after, -1, demos.states)
    actions = np.where(after, -1, demos.actions)
    return Demonstrations(states, actions, lengths, rewards=rewards)
