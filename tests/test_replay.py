"""Histories realised by replaying recorded episodes (reset seed + actions): the replay
reproduces every recorded state and label bit for bit on the Office World and on the reacher,
says so when it does not, and the replay expert acts from the node its history reaches."""

from __future__ import annotations

import attrs
import numpy as np
import pytest

from rmtk import dsl
from rmtk.active.experts import QueryError
from rmtk.gym import NodePolicy, office_env
from rmtk.gym.experts import ReplayExpert, record, replay
from rmtk.ptp.exact import shortest_path_table


def office(task_name="coffee"):
    task = dsl.load_model("office").tasks[task_name]
    table = shortest_path_table(task, 0.1)
    policy = NodePolicy.from_table(task.machine, table)
    mdp = task.mdp
    return task, table, policy, (lambda obs: int(obs)), (lambda obs: int(mdp.labels[int(obs)]))


def test_office_world_replay_reproduces_recorded_histories_bitwise():
    task, table, policy, cell, label = office()
    episodes = record(office_env(max_steps=40), policy, cell, label, task.mdp.propositions, 20, 40, seed=3)
    assert len(episodes) == 20 and all(len(e.actions) == 40 for e in episodes)
    fresh = office_env(max_steps=40)  # another instance: only the seed and the actions carry over
    for e, ep in enumerate(episodes):
        assert replay(fresh, ep, len(ep.actions), cell, label, f"episode {e}") == ep.states[-1]
    bad = attrs.evolve(episodes[0], states=np.r_[episodes[0].states[:5], (episodes[0].states[5:] + 1) % 9])
    with pytest.raises(QueryError, match=r"episode 0 .*after step 5 .*does not reproduce"):
        replay(fresh, bad, 10, cell, label, "episode 0")


def test_the_replay_expert_acts_from_the_node_its_history_reaches():
    task, table, policy, cell, label = office()
    episodes = record(office_env(max_steps=40), policy, cell, label, task.mdp.propositions, 20, 40, seed=3)
    expert = ReplayExpert(office_env(max_steps=40), policy, episodes, cell, label, task.mdp.propositions, seed=1)
    letters = policy.letters(tuple(task.mdp.propositions))
    later = [(w, s) for w, s in expert.histories if len(w) >= 3]
    assert later
    for word, state in later[:5]:
        u = task.machine.initial
        for k in word:
            u = int(task.machine.delta_u[u, letters[k]])
        obs = expert.act(word, state, 4000)
        # 4,000 draws at the history's end; environment steps: the reset and the replayed prefix
        assert obs.values.sum() == 4000 and obs.steps == 1 + expert._where[(word, state)][1] < 4000
        assert np.abs(obs.values[0] / 4000 - table[u, state]).max() < 0.03
    word, state = later[0]
    ext = expert.extend(word, state, 5, 3)  # continuations start from the history: their words extend it
    assert ext.values.sum() == 15 and all(w[: len(word)] == word for w in ext.words)
    # per continuation a reset, the replayed prefix and 4 moves: the replays count too
    assert ext.steps == 3 * (1 + expert._where[(word, state)][1] + 4)
    with pytest.raises(QueryError, match="no recorded episode reaches"):
        expert.act((0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1), 0, 5)


def test_reacher_replay_reproduces_recorded_histories_bitwise():
    pytest.importorskip("mujoco")
    from rmtk.envs.reacher import PROPOSITIONS
    from rmtk.gym.reacher import ReacherLabels, ReacherVectorEnv, reacher_bins, reacher_expert

    bins = reacher_bins()
    policy = reacher_expert(bins=bins)

    def label(obs):
        return int(ReacherLabels().batch(np.asarray(obs)[None])[0])

    episodes = record(ReacherVectorEnv(1), policy, bins, label, PROPOSITIONS, 4, 160, seed=0)
    assert all(len(e.actions) == 160 for e in episodes)
    assert any(len(set(e.labels.tolist())) >= 3 for e in episodes)  # the arm visits the targets
    fresh = ReacherVectorEnv(1)
    ends = [replay(fresh, ep, 160, bins, label, f"episode {e}") for e, ep in enumerate(episodes)]
    again = [replay(ReacherVectorEnv(1), ep, 160, bins, label) for ep in episodes]
    for a, b in zip(ends, again):
        assert np.array_equal(a, b)  # the raw observations too, bit for bit
    with pytest.raises(QueryError, match="does not reproduce its episodes"):  # another physics is caught
        replay(ReacherVectorEnv(1, integrator="euler"), episodes[0], 160, bins, label, "episode 0")
