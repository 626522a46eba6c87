"""The PPO agents of the online benchmark (rmtk/experiments/_online.py, benchmarks/online.py): a
PPO agent's greedy action is read from its action log-probabilities at every observation, the
action ``predict(deterministic=True)`` takes, and both the online agent and the agent given the
true machine train and are measured. Tiny networks, one rollout: seconds."""

import numpy as np
import pytest

sb3 = pytest.importorskip("stable_baselines3", reason="stable-baselines3 is not installed (pip install '.[rl]')")
pytest.importorskip("torch", reason="torch is not installed (pip install '.[rl]')")

from rmtk.errors import RmtkError  # noqa: E402
from rmtk.experiments._dqn import DQNConfig  # noqa: E402
from rmtk.experiments._online import scores, task, train  # noqa: E402
from rmtk.rl.online import AgentExploration  # noqa: E402

TINY = DQNConfig(hidden=(8,))


def test_online_ppo_scores_give_predicts_action():
    run = train(task("cliff", horizon=20), "true", seed=0, steps=64, every=1_000, settings=TINY, algorithm="PPO")
    model = run.learner
    n = int(model.observation_space.n)
    assert scores(model, "PPO").shape == (n, 4)
    greedy, _ = model.predict(np.arange(n), deterministic=True)
    assert np.array_equal(scores(model, "PPO").argmax(axis=1), greedy)


def test_online_ppo_agents_train_and_are_measured():
    t = task("cliff", horizon=20)
    # PPO collects whole rollouts (2,048 steps, Stable-Baselines3's default) before it checks its budget
    true = train(t, "true", seed=0, steps=100, every=512, settings=TINY, algorithm="PPO")
    assert true.trained == 2_048 and true.steps == (512, 1_024, 1_536, 2_048)
    assert isinstance(true.learner, sb3.PPO) and all(0.0 <= s <= 1.0 for s in true.success)
    online = train(t, "online", seed=0, steps=100, every=1_024, settings=TINY, algorithm="PPO")
    assert isinstance(online.learner.model, sb3.PPO) and isinstance(online.learner.env.exploration, AgentExploration)
    assert online.trained == 2_048 and online.steps == (1_024, 2_048)
    with pytest.raises(RmtkError, match="unknown algorithm 'A2C'; the algorithms are DQN, PPO"):
        train(t, "true", seed=0, steps=100, every=100, algorithm="A2C")
