"""The product with Gymnasium's own environments: RewardMachineEnv over ``gymnasium.make``
toy-text grids passes check_env and is rebuilt from its spec; its CRM rows equal the machine's
transitions; RewardMachineVectorEnv steps like N single products (autoreset included) and its
batched CRM equals the single-env CRM copy by copy; CRM through make_vec's ``wrappers=``;
clear errors for bad arguments and labels."""

import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from rmtk import DataError, ModelError, RewardMachine
from rmtk.gym import (
    CrmTables,
    MdpEnv,
    MdpVectorEnv,
    RewardMachineEnv,
    RewardMachineVectorEnv,
    StateLabels,
    counterfactual_experiences,
    office_env,
    terminal_nodes,
)

LETTERS = list("fghpe")


def grid_machine():
    """p pays 0.5 and then e pays 1 and ends (the environment goes on); g pays 1 and ends;
    h ends (paying -1 after p)."""
    return RewardMachine.from_transitions(
        {
            ("u0", "p"): ("u1", 0.5),
            ("u1", "e"): ("done", 1.0),
            ("u0", "g"): ("done", 1.0),
            ("u1", "g"): ("done", 1.0),
            ("u0", "h"): "done",
            ("u1", "h"): ("done", -1.0),
        },
        LETTERS,
        nodes=["u0", "u1", "done"],
        name="grid",
    )


def frozen_labeler(obs, info=None):
    """FrozenLake 4x4: holes h, goal g, cell 2 p, cell 1 e, the rest f."""
    return {2: "p", 1: "e", 5: "h", 7: "h", 11: "h", 12: "h", 15: "g"}.get(int(obs), "f")


def cliff_labeler(obs, info=None):
    """CliffWalking: the cliff h (the environment sends the agent back, without ending), goal g."""
    return "g" if obs == 47 else "h" if 37 <= obs <= 46 else "p" if obs == 24 else "f"


def taxi_labeler(obs, info=None):
    """Taxi: p while the passenger is in the taxi (location index 4)."""
    return "p" if (int(obs) // 4) % 5 == 4 else "f"


TOY = {"FrozenLake-v1": frozen_labeler, "CliffWalking-v1": cliff_labeler, "Taxi-v4": taxi_labeler}


@pytest.mark.parametrize("env_id", sorted(TOY))
@pytest.mark.parametrize("observation", ["dict", "flat"])
def test_check_env_and_spec_over_gym_make(env_id, observation):
    wrapped = RewardMachineEnv(gymnasium.make(env_id), grid_machine(), TOY[env_id], observation=observation)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Gymnasium's note that the environment is wrapped
        check_env(wrapped, skip_render_check=True)  # rendering needs pygame, as for the bare environment
        again = gymnasium.make(wrapped.spec)
        check_env(again, skip_render_check=True)
    assert isinstance(again, RewardMachineEnv) and again.observation_space == wrapped.observation_space
    assert again.spec.additional_wrappers[-1].kwargs["observation"] == observation
    # the rebuilt product plays exactly as the original
    rng = np.random.default_rng(0)
    actions = rng.integers(wrapped.action_space.n, size=60).tolist()
    runs = []
    for env in (wrapped, again):
        obs, info = env.reset(seed=3)
        trace = [(repr(obs), info["rm_node"])]
        for a in actions:
            obs, r, term, trunc, info = env.step(a)
            trace.append((repr(obs), r, term, trunc, info["rm_node"]))
            if term or trunc:
                obs, info = env.reset()
                trace.append((repr(obs), info["rm_node"]))
        runs.append(trace)
    assert runs[0] == runs[1]


def test_crm_tables_are_the_machine():
    m = grid_machine()
    for terminal in ("absorbing", [], ["u1"]):
        mask = terminal_nodes(m, terminal)
        tables = CrmTables.of(m, mask)
        for k, letter in enumerate(m.alphabet):
            exp = counterfactual_experiences(m, letter, terminal=mask)
            assert tables.node.tolist() == exp.node.tolist()
            assert tables.next_node[k].tolist() == exp.next_node.tolist()
            assert tables.reward[k].tolist() == exp.reward.tolist()
            assert tables.ends[k].tolist() == exp.terminated.tolist()
            assert list(tables.rows[k]) == list(
                zip(exp.node.tolist(), exp.next_node.tolist(), exp.reward.tolist(), exp.terminated.tolist())
            )


@pytest.mark.parametrize("observation", ["dict", "flat"])
@pytest.mark.parametrize("env_reward", [False, True])
def test_wrapper_crm_is_every_node_of_the_step(observation, env_reward):
    m = grid_machine()
    env = RewardMachineEnv(
        gymnasium.make("FrozenLake-v1", is_slippery=False),
        m,
        frozen_labeler,
        observation=observation,
        env_reward=env_reward,
    )
    obs, _ = env.reset(seed=0)
    for a in [2, 2, 1, 1, 1, 2]:  # onto p, then down to the goal (env reward 1, terminated)
        nxt, _, term, _, info = env.step(a)
        got = env.counterfactual_experiences(obs, a, nxt, info)
        assert env.last_experiences() == got
        s, s2 = env.decode(obs)[0], env.decode(nxt)[0]
        exp = counterfactual_experiences(
            m,
            frozen_labeler(s2),
            env_reward=info["env_reward"] if env_reward else 0.0,
            env_terminated=info["env_terminated"],
        )
        want = [
            (env.encode(s, u), a, r, env.encode(s2, v), t)
            for u, v, r, t in zip(
                exp.node.tolist(), exp.next_node.tolist(), exp.reward.tolist(), exp.terminated.tolist()
            )
        ]
        assert got == want and len(got) == 2
        obs = nxt
        if term:
            break
    assert term and int(env.decode(nxt)[0]) == 15
    assert got[0][2] == 1.0 + float(env_reward) and got[0][4]
    env.reset()
    assert env.last_experiences() == []


def _rows(batch, i, observation):
    """Copy ``i``'s rows of a batch, as the single-env CRM gives them."""
    out = []
    for j in np.flatnonzero(batch.copy == i).tolist():
        if observation == "dict":
            o = {"obs": batch.obs["obs"][j].item(), "node": int(batch.obs["node"][j])}
            o2 = {"obs": batch.next_obs["obs"][j].item(), "node": int(batch.next_obs["node"][j])}
        else:
            o, o2 = int(batch.obs[j]), int(batch.next_obs[j])
        out.append((o, int(batch.action[j]), float(batch.reward[j]), o2, bool(batch.terminated[j])))
    return out


def _one(obs, i, observation):
    return {"obs": obs["obs"][i].item(), "node": int(obs["node"][i])} if observation == "dict" else int(obs[i])


def _plain(obs):
    return {"obs": int(obs["obs"]), "node": obs["node"]} if isinstance(obs, dict) else int(obs)


def _frozen_pair(observation, n):
    m = grid_machine()
    vec = gymnasium.make_vec(
        "FrozenLake-v1", num_envs=n, vectorization_mode="sync", is_slippery=False, max_episode_steps=8
    )
    singles = [
        RewardMachineEnv(
            gymnasium.make("FrozenLake-v1", is_slippery=False, max_episode_steps=8),
            m,
            frozen_labeler,
            observation=observation,
            env_reward=True,
        )
        for _ in range(n)
    ]
    return RewardMachineVectorEnv(vec, m, frozen_labeler, observation=observation, env_reward=True), singles


def _office_pair(observation, n):
    office = office_env(max_steps=12)
    m = RewardMachine.from_transitions(
        {("u0", "f"): ("u1", 0.5), ("u1", "g"): ("t", 1.0), ("u0", "n"): "t", ("u1", "n"): ("t", -1.0)},
        office.mdp.propositions,
        nodes=["u0", "u1", "t"],
    )
    labels = StateLabels.of(office.mdp)
    vec = RewardMachineVectorEnv(MdpVectorEnv(office.mdp, n, max_steps=12), m, labels, observation=observation)
    return vec, [RewardMachineEnv(MdpEnv(office.mdp, 12), m, labels, observation=observation) for _ in range(n)]


@pytest.mark.parametrize("observation", ["dict", "flat"])
@pytest.mark.parametrize("pair", [_frozen_pair, _office_pair])
def test_vector_product_and_batched_crm_copy_by_copy(observation, pair):
    n = 5
    vec, singles = pair(observation, n)
    obs, info = vec.reset(seed=0)
    single_obs = [env.reset(seed=i)[0] for i, env in enumerate(singles)]
    assert [_one(obs, i, observation) for i in range(n)] == [_plain(o) for o in single_obs]
    rng = np.random.default_rng(1)
    done = np.zeros(n, bool)
    seen = {"machine_end": 0, "env_end": 0, "rows": 0}
    for _ in range(150):
        actions = rng.integers(4, size=n)
        nxt, reward, term, trunc, info = vec.step(actions)
        batch = vec.counterfactual_experiences(obs, actions, nxt, info)
        assert info["rm_reset"].tolist() == done.tolist()
        for i, env in enumerate(singles):
            if done[i]:  # the vector copy's reset step; the single copy resets now
                o, single_info = env.reset()
                assert (_one(nxt, i, observation), reward[i], term[i], trunc[i]) == (_plain(o), 0.0, False, False)
                assert _rows(batch, i, observation) == []
            else:
                o, r, t, tr, single_info = env.step(int(actions[i]))
                assert (_one(nxt, i, observation), reward[i], term[i], trunc[i]) == (_plain(o), r, t, tr)
                want = env.counterfactual_experiences(single_obs[i], int(actions[i]), o, single_info)
                assert _rows(batch, i, observation) == [(_plain(a), b, c, _plain(d), e) for a, b, c, d, e in want]
                seen["rows"] += len(want)
                if t and not single_info["env_terminated"]:
                    seen["machine_end"] += 1
                elif t or tr:
                    seen["env_end"] += 1
            assert info["rm_node"][i] == single_info["rm_node"]
            single_obs[i] = o
        done = term | trunc
        obs = nxt
    assert seen["machine_end"] >= 3 and seen["env_end"] >= 3 and seen["rows"] >= 300


def test_crm_through_make_vec_wrappers():
    m = grid_machine()
    n = 4

    def product(env):
        return RewardMachineEnv(env, m, frozen_labeler, observation="flat")

    envs = gymnasium.make_vec(
        "FrozenLake-v1",
        num_envs=n,
        vectorization_mode="sync",
        wrappers=[product],
        is_slippery=False,
        max_episode_steps=8,
    )
    ref, _ = _frozen_pair("flat", n)
    ref = RewardMachineVectorEnv(ref.env, m, frozen_labeler, observation="flat")
    obs, _ = envs.reset(seed=0)
    robs, _ = ref.reset(seed=0)
    rng = np.random.default_rng(2)
    rows = 0
    for _ in range(60):
        actions = rng.integers(4, size=n)
        obs = envs.step(actions)[0]
        nxt, _, _, _, info = ref.step(actions)
        assert obs.tolist() == nxt.tolist()
        batch = ref.counterfactual_experiences(robs, actions, nxt, info)
        for i, got in enumerate(envs.call("last_experiences")):
            assert [(int(a), b, c, int(d), e) for a, b, c, d, e in got] == _rows(batch, i, "flat")
            rows += len(got)
        robs = nxt
    assert rows >= 200


def test_vector_errors():
    m = grid_machine()
    vec = gymnasium.make_vec("FrozenLake-v1", num_envs=2, vectorization_mode="sync")
    with pytest.raises(ModelError, match="for a vector environment use RewardMachineVectorEnv"):
        RewardMachineEnv(vec, m, frozen_labeler)
    with pytest.raises(ModelError, match="use RewardMachineEnv for one environment"):
        RewardMachineVectorEnv(gymnasium.make("FrozenLake-v1"), m, frozen_labeler)
    same = gymnasium.make_vec(
        "FrozenLake-v1",
        num_envs=2,
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": gymnasium.vector.AutoresetMode.SAME_STEP},
    )
    with pytest.raises(ModelError, match="next-step or disabled autoreset mode"):
        RewardMachineVectorEnv(same, m, frozen_labeler)
    vec = gymnasium.make_vec("FrozenLake-v1", num_envs=2, vectorization_mode="sync", is_slippery=False)
    bad = RewardMachineVectorEnv(vec, m, lambda obs, info: "x" if obs == 1 else frozen_labeler(obs))
    bad.reset(seed=0)
    with pytest.raises(
        DataError,
        match=r"copy 1, episode 0, step 1: the labeler returned 'x', which is not a letter "
        r"of machine 'grid' \('f', 'g', 'h', 'p', 'e'\)",
    ):
        bad.step(np.array([0, 2]))
    with pytest.raises(ModelError, match="call reset"):
        RewardMachineVectorEnv(vec, m, frozen_labeler).step(np.array([0, 0]))


def test_clear_errors_for_bad_arguments():
    env = gymnasium.make("FrozenLake-v1", is_slippery=False)
    with pytest.raises(ModelError, match=r"machine must be a RewardMachine, not 'patrol' \(str\).*load the machine"):
        RewardMachineEnv(env, "patrol", frozen_labeler)
    with pytest.raises(
        ModelError,
        match=r"terminal must be 'absorbing' or 'loops', or a list of node names or "
        r"indices, not 'sometimes'",
    ):
        RewardMachineEnv(env, grid_machine(), frozen_labeler, terminal="sometimes")
    with pytest.raises(ModelError, match="terminal must be"):
        terminal_nodes(grid_machine(), 3)
    with pytest.raises(ModelError, match="labeler must be a function"):
        RewardMachineEnv(env, grid_machine(), "labels")


def test_bad_label_names_the_episode_and_step():
    calls = []

    def labeler(obs, info):
        calls.append(obs)
        return "x" if len(calls) == 6 else frozen_labeler(obs)

    env = RewardMachineEnv(gymnasium.make("FrozenLake-v1", is_slippery=False), grid_machine(), labeler)
    env.reset(seed=0)
    env.step(2)
    env.step(2)
    env.reset()
    env.step(1)
    with pytest.raises(DataError, match=r"^episode 1, step 2: the labeler returned 'x', which is not a letter"):
        env.step(1)
    first = RewardMachineEnv(gymnasium.make("FrozenLake-v1"), grid_machine(), lambda obs, info: None)
    with pytest.raises(DataError, match=r"^episode 0, reset: the labeler returned None"):
        first.reset(seed=0)


def test_vector_product_of_boxes_flat():
    """CartPole copies: the one-hot node appended to each observation, and batched CRM equal
    to the single-env CRM copy by copy, machine-ended episodes included."""
    m = grid_machine()

    def cart(obs, info=None):
        return "e" if obs[2] > 0.04 else "p" if obs[0] > 0.01 else "f"

    n = 3
    vec = RewardMachineVectorEnv(
        gymnasium.make_vec("CartPole-v1", num_envs=n, vectorization_mode="sync"), m, cart, observation="flat"
    )
    singles = [RewardMachineEnv(gymnasium.make("CartPole-v1"), m, cart, observation="flat") for _ in range(n)]
    assert vec.single_observation_space == singles[0].observation_space
    obs, _ = vec.reset(seed=0)
    prev = [env.reset(seed=i)[0] for i, env in enumerate(singles)]
    assert np.array_equal(obs, np.stack(prev))
    rng = np.random.default_rng(0)
    done, ends = np.zeros(n, bool), 0
    for _ in range(120):
        actions = rng.integers(2, size=n)
        nxt, reward, term, trunc, info = vec.step(actions)
        batch = vec.counterfactual_experiences(obs, actions, nxt, info)
        for i, env in enumerate(singles):
            if done[i]:
                o, _ = env.reset()
                assert not (batch.copy == i).any()
            else:
                o, r, t, _, single_info = env.step(int(actions[i]))
                assert (reward[i], term[i]) == (r, t)
                ends += bool(t)
                want = env.counterfactual_experiences(prev[i], int(actions[i]), o, single_info)
                rows = np.flatnonzero(batch.copy == i)
                assert len(rows) == len(want) == 2
                for j, (a, _, r2, b, t2) in zip(rows, want):
                    assert np.array_equal(batch.obs[j], a) and np.array_equal(batch.next_obs[j], b)
                    assert (batch.reward[j], batch.terminated[j]) == (r2, t2)
            assert np.array_equal(nxt[i], o)
            prev[i] = o
        done, obs = term | trunc, nxt
    assert ends >= 3


def test_vector_product_with_autoreset_disabled():
    m = grid_machine()
    disabled = gymnasium.vector.AutoresetMode.DISABLED
    envs = gymnasium.make_vec(
        "FrozenLake-v1",
        num_envs=3,
        vectorization_mode="sync",
        is_slippery=False,
        vector_kwargs={"autoreset_mode": disabled},
    )
    vec = RewardMachineVectorEnv(envs, m, frozen_labeler)
    vec.reset(seed=0)
    obs, reward, term, _, info = vec.step(np.array([2, 1, 0]))  # copy 0 onto e (nothing yet), 1 down, 2 stays
    assert obs["obs"].tolist() == [1, 4, 0] and obs["node"].tolist() == [0, 0, 0]
    obs, reward, term, _, info = vec.step(np.array([2, 1, 0]))  # copy 0 onto p: u1, paying 0.5
    assert obs["obs"].tolist() == [2, 8, 0] and obs["node"].tolist() == [1, 0, 0] and reward.tolist() == [0.5, 0, 0]
    assert not term.any()
    obs, reward, term, _, info = vec.step(np.array([0, 2, 0]))  # copy 0 back onto e: the machine ends its episode
    assert obs["obs"].tolist() == [1, 9, 0] and obs["node"].tolist() == [2, 0, 0]
    assert term.tolist() == [True, False, False] and reward.tolist() == [1.0, 0.0, 0.0]
    assert not info["rm_reset"].any()
    obs, info = vec.reset(options={"reset_mask": np.array([True, False, False])})
    assert obs["obs"][0] == 0 and obs["node"].tolist() == [0, 0, 0] and vec.episodes.tolist() == [1, 0, 0]
