"""The reacher's shipped PPO agent (rmtk/rl/reacher.py, trained by
benchmarks/train_reacher_agent.py): the file loads and its record matches it, the agent
completes b → y → r in seeded episodes played here, its exact expert answers with the softmax
at the cell centre, and a quick ``rmtk reproduce reacher --set expert=agent`` records it and
learns. Needs stable-baselines3 (the rl extra) and MuJoCo (the reacher extra); skips without them."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

sb3 = pytest.importorskip("stable_baselines3", reason="stable-baselines3 is not installed (pip install '.[rl]')")
torch = pytest.importorskip("torch", reason="torch is not installed (pip install '.[rl]')")
pytest.importorskip("mujoco", reason="MuJoCo is not installed (pip install '.[reacher]')")

from rmtk.cli.main import main  # noqa: E402
from rmtk.envs.reacher import advance, true_machine  # noqa: E402
from rmtk.errors import ModelError, RmtkError  # noqa: E402
from rmtk.gym.reacher import ReacherLabels, ReacherVectorEnv, cell_observations, reacher_bins  # noqa: E402
from rmtk.rl.reacher import (  # noqa: E402
    agent_record,
    check_reacher_agent,
    load_agent,
    reacher_agent_expert,
    reacher_agent_policy,
    shipped_agent,
)
from rmtk.rl.sb3 import one_thread  # noqa: E402


@pytest.fixture(scope="module")
def model():
    return load_agent()


def softmax(model, states, nodes) -> np.ndarray:
    """The policy network's action probabilities at cell centres, computed from the network's
    own layers (not through rmtk.rl's adapter)."""
    obs = np.concatenate([cell_observations(states), np.eye(4)[nodes]], axis=1)
    with torch.no_grad(), one_thread():
        x = torch.as_tensor(obs, dtype=torch.float32)
        latent = model.policy.mlp_extractor.forward_actor(
            model.policy.extract_features(x, model.policy.pi_features_extractor)
        )
        return torch.softmax(model.policy.action_net(latent), dim=1).numpy().astype(float)


def test_sb3_shipped_reacher_agent_is_small_and_its_record_matches(model):
    path = shipped_agent()
    assert path.stat().st_size < 1_000_000
    record = agent_record()
    assert record["seed"] == model.seed
    assert record["steps"] == model.num_timesteps
    assert record["algorithm"] == "PPO" and type(model).__name__ == "PPO"
    assert record["success_greedy"] >= 0.9 and record["success_sampled"] >= 0.9
    assert record["cpu_minutes_training"] <= 60
    assert record["versions"]["stable_baselines3"] and record["versions"]["torch"]
    assert "benchmarks/train_reacher_agent.py" in record["command"]


def test_sb3_shipped_reacher_agent_completes_the_task(model):
    """100 seeded episodes, greedy, at cell centres: the node of the true machine reaches u3."""
    bins, labels, n = reacher_bins(), ReacherLabels(), 100
    env = ReacherVectorEnv(n)
    obs, _ = env.reset(seed=123)
    node = advance(np.zeros(n, dtype=np.int64), labels.batch(obs))
    for _ in range(env.horizon - 1):
        action = softmax(model, bins.batch(obs)[0], node).argmax(axis=1)
        obs = env.step(action)[0]
        node = advance(node, labels.batch(obs))
    assert (node == 3).mean() >= 0.9


def test_sb3_reacher_agent_expert_answers_with_the_softmax_at_the_cell_centre(model):
    expert = reacher_agent_expert()
    assert expert.exact
    cell = 123_456
    for word, node in (((0,), 0), ((1,), 1), ((1, 0, 2), 2), ((1, 2, 3), 3), ((2, 1), 1)):
        answer = expert.act(word, cell)
        assert answer.exact and answer.steps == 0
        np.testing.assert_allclose(answer.values[0], softmax(model, [cell], [node])[0], rtol=1e-5, atol=1e-7)
    drawn = reacher_agent_expert(seed=3, exact=False).act((1,), cell, m=50)
    assert not drawn.exact and drawn.values.sum() == 50


def test_sb3_reacher_agent_policy_pickles_as_its_path():
    policy = reacher_agent_policy()
    states, nodes = np.array([5, 100_000, 2_000_000]), np.array([0, 1, 2])
    again = pickle.loads(pickle.dumps(policy))
    assert "agent" not in again.choose.__dict__  # loaded on first use
    a = policy.choose(states, nodes, np.random.default_rng(0))
    b = again.choose(states, nodes, np.random.default_rng(0))
    np.testing.assert_array_equal(a, b)


def test_sb3_reacher_agent_file_errors(tmp_path, model):
    with pytest.raises(RmtkError, match="no such agent file"):
        load_agent(tmp_path / "missing.zip")
    bad = tmp_path / "bad.zip"
    bad.write_bytes(b"not a zip")
    with pytest.raises(RmtkError, match="not a Stable-Baselines3 PPO file"):
        load_agent(bad)
    with pytest.raises(RmtkError, match="no record beside"):
        agent_record(bad)
    office = sb3.PPO("MlpPolicy", "CartPole-v1", n_steps=8, batch_size=8, device="cpu")
    with pytest.raises(ModelError, match="observation space"):
        check_reacher_agent(office)
    assert true_machine().n_nodes == 4


def test_sb3_reproduce_reacher_with_the_agent_quick():
    """A few hundred of the agent's trajectories: the nodes it visits, the negatives mined and
    the truth among the optimal machines."""
    from rmtk.experiments.reacher import report, simulate_and_learn

    res = simulate_and_learn(300, alphas=(1e-3,), workers=1, expert="agent", chunk=300, max_solutions=20, exact=True)
    assert res.expert == "agent" and res.trajectories == 300
    u0, u1, u2, u3 = res.node_steps
    assert u3 > 0.5 and min(u0, u1, u2) > 0  # it completes the task early and then stays in u3
    row = res.rows[0]
    assert row.false_positives == 0 or row.truth_cost == row.false_positives
    assert row.truth_optimal
    x = res.exact  # the softmax at the pairs of shared cells: at least one class per cell, at most one per pair
    assert 0 < x.classes <= x.pairs and x.size is not None and x.size <= 4
    assert not x.truth_listed or x.size == 4
    text = report(res).text()
    assert "the PPO agent" in text and "PPO agent, MaxSAT" in text and "exact (--set exact=true)" in text


def test_sb3_reproduce_reacher_agent_flag_misuse(capsys, tmp_path):
    assert main(["reproduce", "reacher", "--quick", "--no-figures", "--set", "agent=x.zip"]) == 2
    assert "applies with --set expert=agent" in capsys.readouterr().err
    args = ["reproduce", "reacher", "--quick", "--no-figures", "--set", "expert=agent"]
    assert main([*args, "--set", f"agent={tmp_path / 'none.zip'}"]) == 1
    assert "no such agent file" in capsys.readouterr().err
    assert main(["reproduce", "reacher", "--quick", "--no-figures", "--set", "expert=ppo"]) != 0
    assert "expert" in capsys.readouterr().err
    assert main(["reproduce", "reacher", "--quick", "--no-figures", "--set", "exact=true"]) == 2
    assert "applies with --set expert=agent" in capsys.readouterr().err
