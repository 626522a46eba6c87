"""The Gymnasium expert of active learning: histories realised by restoring a toy-text state or
by replaying a planned path (checked state by state), the policy's memory driven along the
history, and active learning through it equal to every-depth learning."""

from __future__ import annotations

import itertools

import gymnasium
import numpy as np
import pytest

from rmtk import ExactPTP, LabeledMDP, Learner, RewardMachine, RmtkError, Task
from rmtk.active.checks import ExpertWalks
from rmtk.active.experts import QueryError, realisable
from rmtk.active.loop import ActiveLearner
from rmtk.gym import MdpEnv, NodePolicy
from rmtk.gym.experts import GymExpert
from rmtk.product.planning import task_policy

PROPS = ["i", "a", "h", "g"]


def lake(slippery: bool):
    """FrozenLake 4x4 and its labeled MDP: holes h, goal g, the cell right of the start a."""
    env = gymnasium.make("FrozenLake-v1", is_slippery=slippery)
    inner = env.unwrapped
    S, A = inner.observation_space.n, inner.action_space.n
    P = np.zeros((A, S, S))
    for s in range(S):
        for a in range(A):
            for p, s2, _, _ in inner.P[s][a]:
                P[a, s, s2] += p
    desc = inner.desc.ravel()
    labels = ["a" if s == 2 else {b"H": "h", b"G": "g"}.get(desc[s], "i") for s in range(S)]
    start = np.eye(S)[0]
    return env, LabeledMDP.from_dense(P, labels, PROPS, start, gamma=0.9, name="lake")


def a_then_g(mdp):
    """The expert fetches a, then reaches g (soft-optimal, sharp)."""
    m = RewardMachine(
        ["u0", "u1", "u2"],
        PROPS,
        np.array([[0, 1, 0, 0], [1, 1, 1, 2], [2, 2, 2, 2]]),
        np.array([[0, 0, 0, 0], [0, 0, 0, 1.0], [0, 0, 0, 0]]),
        name="a_then_g",
    )
    task = Task(mdp, m, lam=0.1, max_nodes=4)
    pi = task_policy(task).pi
    return task, pi, NodePolicy.from_table(m, pi.transpose(1, 0, 2))


@pytest.mark.parametrize("mode", ["restore", "replay"])
def test_the_expert_acts_from_the_node_its_history_reaches(mode):
    env, mdp = lake(False)
    _, pi, policy = a_then_g(mdp)
    expert = GymExpert(env, mdp, policy, mode=mode, seed=3)
    word = (0, 1, 0)  # i a i: after fetching a the expert heads for g
    state = 6
    assert realisable(mdp, word)[state]
    obs = expert.act(word, state, 4000)
    # costs as they are: 4000 policy draws at the history; a reset and the restore, or a reset and
    # the replayed path (right, right, down: i a i)
    assert obs.draws == obs.values.sum() == 4000 and obs.steps == (1 if mode == "restore" else 1 + 3)
    assert expert.act_steps(word, state, 4000) >= obs.steps
    assert np.abs(obs.values[0] / 4000 - pi[state, 1]).max() < 0.03
    assert np.abs(pi[state, 1] - pi[state, 0]).max() > 0.2  # node u1, not a reset u0
    again = GymExpert(env, mdp, policy, mode=mode, seed=3).act(word, state, 4000)
    np.testing.assert_array_equal(obs.values, again.values)
    ext = expert.extend(word, state, 5, 4)
    assert all(w[:3] == word for w in ext.words)
    assert ext.draws <= 20 and 4 * obs.steps <= ext.steps <= expert.extend_steps(word, state, 5, 4)


@pytest.mark.parametrize("mode", ["restore", "replay"])
def test_active_learning_through_gymnasium_equals_every_depth(mode):
    env, mdp = lake(False)
    task, _, policy = a_then_g(mdp)
    every = Learner(ExactPTP(None), irl=None).fit(task)
    run = ActiveLearner(check=ExpertWalks(30, 30)).fit(task, GymExpert(env, mdp, policy, mode=mode, seed=1))
    r = run.result
    assert (r.n_nodes, r.raw_count) == (every.n_nodes, every.raw_count)
    # the same machines: those listed, with their transitions the data leave free filled in
    # every valid way (no question is asked at the absorbing holes and goal, docs/design/14-sampled-experts.md,
    # section 14.1), are the every-depth machines
    assert _completions(r) == _completions(every) and len(_completions(every)) == every.raw_count
    assert all(v.consistent for v in r.verdicts) and not run.flagged
    assert not any(c.state in (5, 7, 11, 12, 15) for c in run.compared)  # holes and goal: indifferent


def _completions(result) -> set:
    """Every machine of ``result`` with its unconstrained transitions filled in every
    non-stuttering way (each letter's column idempotent), as renaming-invariant keys."""
    from rmtk.sat.search import canonical_partial

    out = set()
    for i, m in enumerate(result.machines):
        free = {(m.nodes.index(u), m.alphabet.index(a)) for u, a in result.unconstrained(i)}
        base = np.asarray(m.delta_u)
        cells = sorted(free)
        for fill in itertools.product(range(m.n_nodes), repeat=len(cells)):
            d = base.copy()
            for (u, k), v in zip(cells, fill):
                d[u, k] = v
            if all(d[d[u, k], k] == d[u, k] for u in range(m.n_nodes) for k in range(d.shape[1])):
                out.add(canonical_partial(d, np.ones_like(d, bool))[0])
    return out


def test_a_replay_that_does_not_reproduce_its_states_is_a_clear_error():
    env, slippery = lake(True)
    _, plain = lake(False)
    _, _, policy = a_then_g(plain)
    word, state = (0, 1, 0), 10
    with pytest.raises(QueryError, match="stochastic"):  # the model says the path cannot be replayed
        GymExpert(env, slippery, policy, mode="replay").act(word, state, 5)
    with pytest.raises(QueryError, match="reached state"):  # a wrong model: the environment strays
        GymExpert(env, plain, policy, mode="replay", seed=0).act(word, state, 5)


def test_bad_environments_are_clear_errors():
    env, mdp = lake(False)
    _, _, policy = a_then_g(mdp)
    with pytest.raises(QueryError, match="no 's'"):
        GymExpert(MdpEnv(mdp), mdp, policy).act((0, 1, 0), 6, 5)
    with pytest.raises(RmtkError, match="not a vector"):
        GymExpert(gymnasium.vector.SyncVectorEnv([lambda: lake(False)[0]]), mdp, policy)
    with pytest.raises(RmtkError, match="mode"):
        GymExpert(env, mdp, policy, mode="teleport")
    with pytest.raises(QueryError, match="cannot realise"):
        GymExpert(env, mdp, policy).act((1,), 6, 5)


def test_office_histories_are_replayed_state_by_state():
    from rmtk import dsl
    from rmtk.ptp.exact import shortest_path_table

    task = dsl.load_model("office").tasks["patrol"]
    mdp = task.mdp
    table = shortest_path_table(task, 0.1)
    expert = GymExpert(MdpEnv(mdp), mdp, NodePolicy.from_table(task.machine, table), mode="replay", seed=2)
    i, a = mdp.propositions.index("i"), mdp.propositions.index("a")
    word = (i, a, i)
    state = int(np.flatnonzero(realisable(mdp, word) & (mdp.labels == i))[0])
    obs = expert.act(word, state, 2000)
    assert obs.draws == 2000 and 2 <= obs.steps <= expert.act_steps(word, state, 2000)  # a reset, the replayed path
    node = int(
        task.machine.delta_u[task.machine.delta_u[0, task.letter_of_proposition[a]], task.letter_of_proposition[i]]
    )
    assert np.abs(obs.values[0] / 2000 - table[node, state]).max() < 0.05
    ext = expert.extend(word, state, 10, 3)
    # per run: its resets and replayed path, then 9 moves (seeded resets land on random starts)
    assert ext.draws == 30 and 3 * (2 + 9) <= ext.steps <= expert.extend_steps(word, state, 10, 3)
    assert all(w[:3] == word for w in ext.words)


def test_indifferent_states_match_a_dense_check():
    """LabeledMDP.indifferent: every action has the same next-state distribution; the holes
    and the goal of FrozenLake (absorbing), and random MDPs checked against the dense tensor."""
    _, mdp = lake(False)
    assert np.flatnonzero(mdp.indifferent()).tolist() == [5, 7, 11, 12, 15]
    rng = np.random.default_rng(0)
    for _ in range(30):
        S, A = int(rng.integers(2, 9)), int(rng.integers(1, 4))
        P = rng.dirichlet(np.ones(S) * 0.3, size=(A, S))
        P[rng.random((A, S)) < 0.5] = 0.0
        P[..., 0] += 1.0 - P.sum(axis=-1)  # rows sum to one again
        same = rng.random(S) < 0.4
        P[:, same] = P[0, same]  # some states with one distribution for all actions
        m = LabeledMDP.from_dense(P, ["i"] * S, PROPS, np.eye(S)[0], gamma=0.9, name="random")
        dense = np.all(np.abs(m.P - m.P[:1]).max(axis=-1) <= 1e-9, axis=0)
        assert (m.indifferent() == dense).all() and dense[same].all()
