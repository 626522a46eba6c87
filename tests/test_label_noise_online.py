"""The online learner's labels through a detector that errs (rmtk/label_noise/online.py): each
state's letter believed from every detection there, checked by hand; with a DQN on the
CliffWalking patrol, every visited state read right. The second test needs the rl extra."""

from __future__ import annotations

import numpy as np
import pytest

from rmtk.errors import ModelError
from rmtk.label_noise.online import FLOOR, StateBeliefLabels


class Scripted:
    """A detector that reports the detections it is given, in turn."""

    def __init__(self, detections):
        self.detections = list(detections)

    def __call__(self, obs, info):
        return self.detections.pop(0)


def test_label_noise_online_labels_believe_each_states_letter_from_every_visit():
    seen = Scripted([[0.1, 0.8, 0.1], [0.7, 0.2, 0.1], [0.7, 0.2, 0.1], [0.5, 0.5, 0.0], [0.0, 0.0, 1.0]])
    labels = StateBeliefLabels(seen, ["a", "b", "o"], n_states=3)
    assert labels(0, {}) == "b"  # one visit: its detection alone
    assert labels(0, {}) == "b"  # b: 0.8·0.2 = 0.16 against a: 0.1·0.7 = 0.07
    assert labels(0, {}) == "a"  # a: 0.1·0.7·0.7 = 0.049 against b: 0.8·0.2·0.2 = 0.032
    np.testing.assert_allclose(labels.evidence[0], np.log([0.1 * 0.7 * 0.7, 0.8 * 0.2 * 0.2, 0.1**3]))
    assert labels(np.array([1]), {}) == "a"  # a tie between a and b: the first of equals
    assert labels(2, {}) == "o" and np.isclose(labels.evidence[2, 0], np.log(FLOOR))  # a 0 is floored
    assert labels.letters().tolist() == [0, 0, 2] and labels.visits.tolist() == [3, 1, 1]
    fresh = StateBeliefLabels(Scripted([]), ["a", "b"], n_states=2)
    assert fresh.letters().tolist() == [-1, -1]  # never visited
    with pytest.raises(ModelError, match=r"Discrete\(2\) observations"):
        fresh(5, {})
    with pytest.raises(ModelError, match="a detection is 2 non-negative probabilities"):
        StateBeliefLabels(Scripted([[0.5, 0.3, 0.2]]), ["a", "b"], n_states=2)(0, {})


def test_label_noise_online_dqn_reads_every_visited_cliff_state_right():
    pytest.importorskip("stable_baselines3", reason="stable-baselines3 is not installed (pip install '.[rl]')")
    from rmtk.gym import SimulatedDetector
    from rmtk.label_noise import LabelNoise
    from rmtk.rl.online import OnlineLearner
    from rmtk.rl.online.tasks import cliff_patrol

    env, truth_labels, truth = cliff_patrol()
    detector = SimulatedDetector(truth_labels, truth, LabelNoise.uniform(truth.alphabet, 0.1), seed=0)
    labels = StateBeliefLabels(detector, truth.alphabet, env.observation_space.n)
    tiny = dict(policy_kwargs={"net_arch": [8]}, batch_size=32, learning_starts=100, buffer_size=5_000)
    run = OnlineLearner(env, labels, seed=0, max_nodes=4, **tiny)
    run.learn(2_000)
    true = np.array([truth.letter_index(truth_labels(s, {})) for s in range(env.observation_space.n)])
    got = labels.letters()
    visited = got >= 0
    assert visited.sum() >= 30 and np.array_equal(got[visited], true[visited])
    assert labels.visits.sum() == 2_000 + run.env.episode + 1  # one detection a step and a reset
    assert len(run.hypotheses) >= 2 and run.machine.n_nodes >= 2  # counterexamples found, machines inferred
