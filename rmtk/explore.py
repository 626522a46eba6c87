"""Reward traces of an explorer on a task (docs/design/rewards-evidence.md): what an agent
that does not know the machine records, for learning from rewards (rmtk/reward_evidence.py), the
benchmark benchmarks/rewards.py and the loop of rmtk/experiments/jirp.py.

The explorer is the task's scripted shortest-path expert (:func:`rmtk.exact.shortest_path_table`)
mixed with ``epsilon`` of uniformly random actions (``epsilon=1``: a random walk). Its
trajectories (:class:`~rmtk.data.Demonstrations` with rewards) are drawn by
:func:`rmtk.simulate.simulate` and the rewards are the task's machine's, paid on the label of
the next state (docs/design.md, "The prefix convention").
Episodes end, as in the Office and Craft Worlds of the literature, when the machine enters an
absorbing node that pays nothing (its end node): the step that enters it is recorded with its
reward, nothing after it. With ``noise`` each recorded reward is replaced, with that
probability, by another of the machine's reward values drawn uniformly.
"""

from __future__ import annotations

import numpy as np

from .data import Demonstrations
from .errors import ModelError
from .simulate import rollout_nodes, simulate
from .task import Task


def end_nodes(task: Task) -> np.ndarray:
    """The machine's nodes that every letter keeps in place with reward 0."""
    m = task.machine
    stay = np.all(m.delta_u == np.arange(m.n_nodes)[:, None], axis=1)
    return np.flatnonzero(stay & np.all(m.delta_r == 0, axis=1))


def explore(
    task: Task,
    n: int,
    horizon: int,
    *,
    seed: int,
    epsilon: float = 1.0,
    noise: float = 0.0,
    episodic: bool = True,
) -> Demonstrations:
    """``n`` trajectories with rewards of at most ``horizon`` steps of the ε-greedy explorer on ``task``
    (``seed`` decides the trajectories; ``seed + 1`` the noise). ``episodic``: a trace ends
    on entering an end node (:func:`end_nodes`)."""
    if not 0 <= epsilon <= 1 or not 0 <= noise <= 1:
        raise ModelError(f"epsilon and noise must lie in [0, 1], got {epsilon} and {noise}")
    from .exact import shortest_path_table

    mdp, m = task.mdp, task.machine
    policy = np.ascontiguousarray(shortest_path_table(task, epsilon).transpose(1, 0, 2))
    demos = simulate(task, n, horizon, seed=seed, policy=policy)
    u = rollout_nodes(task, demos).astype(np.int64)
    letters = mdp.labels[demos.states].astype(np.int64)
    machine_letter = task.letter_of_proposition[letters]
    lengths = np.full(n, horizon, np.int64)
    if episodic:
        ended = np.isin(u, end_nodes(task))
        first = np.where(ended.any(axis=1), ended.argmax(axis=1), horizon - 1)
        lengths = first + 1
    rewards = np.full(letters.shape, np.nan)
    rewards[:, :-1] = m.delta_r[u[:, :-1], machine_letter[:, 1:]]
    if noise:
        rng = np.random.default_rng(seed + 1)
        values = np.unique(m.delta_r)
        hit = rng.random(rewards.shape) < noise
        shift = rng.integers(1, max(len(values), 2), size=rewards.shape)
        rank = np.searchsorted(values, np.nan_to_num(rewards))
        other = values[(rank + shift) % len(values)] if len(values) > 1 else rewards
        rewards = np.where(hit, other, rewards)
    steps = np.arange(horizon)[None, :]
    after = steps >= lengths[:, None]
    rewards[after | (steps == lengths[:, None] - 1)] = np.nan
    states = np.where(after, -1, demos.states)
    actions = np.where(after, -1, demos.actions)
    return Demonstrations(states, actions, lengths, rewards=rewards)
