"""rmtk.gym.RewardMachineEnv: nodes and rewards as RewardMachine.run gives them, terminal
nodes, observation encodings, CRM experiences against a hand-computed case, Gymnasium's own
checker, and tabular Q-learning with CRM on the Office World."""

import warnings
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from rmtk import DataError, ModelError, RewardMachine, dsl
from rmtk.gym import (
    OFFICE_ID,
    MdpVectorEnv,
    QLearning,
    RewardMachineEnv,
    StateLabels,
    counterfactual_experiences,
    greedy_episode,
    office_env,
    terminal_nodes,
)

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def office():
    return dsl.load(ROOT / "models" / "office.rm")


def patrol_machine():
    """Patrol a → b with a reward on b, an absorbing failure on n, and a rewarding loop on c."""
    return RewardMachine.from_transitions(
        {
            ("u0", "a"): "u1",
            ("u1", "b"): ("u0", 2.0),
            ("u0", "n"): "dead",
            ("u1", "n"): ("dead", -1.0),
            ("u1", "c"): ("u1", 0.5),
        },
        list("abcdefgin"),
        nodes=["u0", "u1", "dead"],
    )


@pytest.mark.parametrize("observation", ["dict", "flat"])
def test_nodes_and_rewards_follow_the_machine(office, observation):
    machine = office.machines["coffee_mail"]
    env = RewardMachineEnv(
        office_env(max_steps=60, start=None),
        machine,
        StateLabels.of(office.mdps["office"]),
        observation=observation,
        terminal=[],
    )
    rng = np.random.default_rng(0)
    for episode in range(20):
        obs, info = env.reset(seed=episode)
        labels, nodes, rewards = [info["rm_label"]], [env.decode(obs)[1]], []
        done = False
        while not done:
            obs, r, terminated, truncated, info = env.step(int(rng.integers(4)))
            labels.append(info["rm_label"])
            nodes.append(env.decode(obs)[1])
            rewards.append(r)
            assert info["rm_node"] == nodes[-1] and info["rm_reward"] == r
            done = terminated or truncated
        run = machine.run(labels)  # run[0] = u_I; the reset label moves it (prefix convention)
        assert nodes == run[1:]
        assert rewards == [machine.reward(u, lab) for u, lab in zip(run[1:], labels[1:])]


def test_episodes_end_at_terminal_nodes(office):
    machine = office.machines["coffee"]
    labels = StateLabels.of(office.mdps["office"])
    assert terminal_nodes(machine).tolist() == [False, False, True]
    assert terminal_nodes(patrol_machine()).tolist() == [False, False, True]
    assert terminal_nodes(patrol_machine(), "loops").tolist() == [False, False, True]
    assert terminal_nodes(patrol_machine(), ["u1"]).tolist() == [False, True, False]
    env = RewardMachineEnv(office_env(max_steps=500), machine, labels)
    rng = np.random.default_rng(1)
    ends = 0
    for episode in range(10):
        env.reset(seed=episode)
        terminated = truncated = False
        while not (terminated or truncated):
            _, _, terminated, truncated, info = env.step(int(rng.integers(4)))
        if terminated:
            ends += 1
            assert info["rm_node"] == machine.node_index("terminal") and not info["env_terminated"]
    assert ends == 10  # a random walk soon steps on a decoration
    with pytest.raises(ModelError, match="unknown node"):
        terminal_nodes(machine, ["nowhere"])


def test_crm_experiences_by_hand():
    m = patrol_machine()
    exp = counterfactual_experiences(m, "n")
    assert exp.node.tolist() == [0, 1] and exp.next_node.tolist() == [2, 2]
    assert exp.reward.tolist() == [0.0, -1.0] and exp.terminated.tolist() == [True, True]
    exp = counterfactual_experiences(m, "b", env_reward=0.25)
    assert exp.next_node.tolist() == [0, 0] and exp.reward.tolist() == [0.25, 2.25]
    assert exp.terminated.tolist() == [False, False]
    exp = counterfactual_experiences(m, "c", terminal=[], env_terminated=True)
    assert exp.node.tolist() == [0, 1, 2] and exp.reward.tolist() == [0.0, 0.5, 0.0] and exp.terminated.all()
    # through the wrapper, on flat observations s·n + u
    mdp = office_env().mdp
    env = RewardMachineEnv(office_env(), m, StateLabels.of(mdp), observation="flat")
    s, s2 = mdp.state_index("r2c1"), mdp.state_index("r1c1")  # moving up onto b
    info = {"rm_label": "b", "env_reward": 0.0, "env_terminated": False}
    got = env.counterfactual_experiences(s * 3 + 1, 0, s2 * 3 + 1, info)
    assert got == [(s * 3 + 0, 0, 0.0, s2 * 3 + 0, False), (s * 3 + 1, 0, 2.0, s2 * 3 + 0, False)]


def test_observation_encodings(office):
    m = office.machines["patrol"]
    labels = StateLabels.of(office.mdps["office"])
    flat = RewardMachineEnv(office_env(), m, labels, observation="flat")
    assert flat.observation_space == gymnasium.spaces.Discrete(108 * 5)
    assert flat.decode(flat.encode(17, 3)) == (17, 3)
    box = RewardMachineEnv(gymnasium.make("CartPole-v1"), m, lambda obs, info: "i", observation="flat")
    assert box.observation_space.shape == (4 + 5,)
    obs, _ = box.reset(seed=0)
    assert obs[4:].tolist() == [1, 0, 0, 0, 0] and box.observation_space.contains(obs)
    with pytest.raises(ModelError, match="observation must be one of"):
        RewardMachineEnv(office_env(), m, labels, observation="tuple")


def test_gymnasium_checks_pass(office):
    m = office.machines["coffee"]
    labels = StateLabels.of(office.mdps["office"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Gymnasium's notes on wrappers and specs, not failures
        check_env(office_env())
        check_env(RewardMachineEnv(office_env(), m, labels))
        check_env(RewardMachineEnv(office_env(), m, labels, observation="flat"))
        check_env(gymnasium.make(OFFICE_ID).unwrapped)
    vec = gymnasium.make_vec(OFFICE_ID, num_envs=3, vectorization_mode="vector_entry_point")
    assert isinstance(vec, MdpVectorEnv) and vec.reset(seed=0)[0].tolist() == [25, 25, 25]


def test_vector_environment_resets_on_the_next_step(office):
    env = MdpVectorEnv(office.mdps["office"], 4, max_steps=2)
    env.reset(seed=0)
    _, _, _, trunc1, _ = env.step(np.zeros(4, int))
    _, _, _, trunc2, _ = env.step(np.zeros(4, int))
    obs, rewards, term, trunc3, _ = env.step(np.zeros(4, int))
    assert not trunc1.any() and trunc2.all() and not trunc3.any() and not term.any()
    assert env._t.tolist() == [0, 0, 0, 0]  # this step was the reset


def test_bad_labels_in_the_wrapper(office):
    m = office.machines["coffee"]
    env = RewardMachineEnv(office_env(), m, lambda obs, info: "x" if obs != 25 else "i")
    env.reset(seed=0)
    with pytest.raises(DataError, match=r"step 1: the labeler returned 'x', which is not a letter of machine 'coffee'"):
        env.step(1)
    with pytest.raises(ModelError, match="call reset"):
        RewardMachineEnv(office_env(), m, lambda o, i: "i").step(0)


def test_q_learning_with_crm_solves_coffee(office):
    m = office.machines["coffee"]
    labels = StateLabels.of(office.mdps["office"])
    env = RewardMachineEnv(office_env(max_steps=100), m, labels, observation="flat")
    check = RewardMachineEnv(office_env(max_steps=100), m, labels, observation="flat")
    trained = QLearning(q_init=2.0).train(
        env, 12_000, seed=0, evaluate=lambda q: sum(greedy_episode(check, q, seed=0, max_steps=100).rewards), every=2000
    )
    assert trained.curve[0] == (0, 0.0) and trained.curve[-1] == (12_000, 1.0)
    ep = greedy_episode(check, trained.q, seed=0, max_steps=100)
    assert ep.terminated and ep.labels.count("f") >= 1 and ep.labels[-1] == "g" and len(ep.labels) == 16  # 15 steps
    with pytest.raises(ModelError, match="Discrete observations"):
        QLearning().train(RewardMachineEnv(office_env(), m, labels), 10, seed=0)
