"""Using a machine through a detector that errs (rmtk/label_noise/filter.py, rmtk/gym/belief.py,
``RewardMachineEnv(observation="belief")``): the Bayes filter against a hand computation, the
naive most likely label, the detector's draws, and CRM from a detection."""

from __future__ import annotations

import numpy as np
import pytest

from rmtk.errors import ModelError
from rmtk.label_noise import LabelNoise
from rmtk.label_noise.filter import BayesFilter, MostLikelyLabel, NoisyDetector, PooledStateLetters
from rmtk.machine.model import RewardMachine

gymnasium = pytest.importorskip("gymnasium")

from rmtk.envs import gridworld  # noqa: E402
from rmtk.gym import BeliefQLearning, MdpEnv, RewardMachineEnv, SimulatedDetector, StateLabels  # noqa: E402


def coffee_like() -> RewardMachine:
    """u0 -f-> u1 -g/1-> end, n ends the task from u0 and u1; letters f g i n."""
    return RewardMachine.from_transitions(
        {("u0", "f"): "u1", ("u0", "n"): "end", ("u1", "g"): ("end", 1.0), ("u1", "n"): "end"},
        ["f", "g", "i", "n"],
        nodes=["u0", "u1", "end"],
    )


def test_label_noise_bayes_filter_is_the_hand_computed_belief():
    m = coffee_like()
    f = BayesFilter(m)
    b = f.start([0.0, 0.0, 1.0, 0.0])  # a sure plain label: u0 stays
    assert np.allclose(b, [1, 0, 0])
    b = f.step(b, [0.7, 0.1, 0.1, 0.1])  # f likely: u1 0.7; n: end 0.1; g, i: u0 stays 0.2
    assert np.allclose(b, [0.2, 0.7, 0.1])
    b = f.step(b, [0.1, 0.6, 0.2, 0.1])
    # u0: stays on g, i (0.8) -> 0.16, to u1 on f 0.02, to end on n 0.02
    # u1: stays on f, i (0.3) -> 0.21, to end on g, n (0.7) -> 0.49; end stays 0.1
    assert np.allclose(b, [0.16, 0.02 + 0.21, 0.02 + 0.49 + 0.1])
    naive = MostLikelyLabel(m)
    nb = naive.start([0.0, 0.0, 1.0, 0.0])
    nb = naive.step(nb, [0.7, 0.1, 0.1, 0.1])
    assert np.array_equal(nb, [0, 1, 0]) and np.array_equal(naive.letters([0.3, 0.3, 0.2, 0.2]), [1, 0, 0, 0])
    with pytest.raises(ModelError, match="a detection is 4 non-negative probabilities"):
        f.step(b, [0.5, 0.5])


def test_label_noise_detector_draws_are_seeded_and_calibrated():
    noise = LabelNoise.uniform(["f", "g", "i", "n"], 0.2)
    one, two = NoisyDetector(noise, 7), NoisyDetector(noise, 7)
    draws = [one(2)[0] for _ in range(4000)]
    assert draws == [two(2)[0] for _ in range(4000)]
    assert abs(np.mean(np.array(draws) != 2) - 0.2) < 0.02
    k, q = one(2)
    assert np.allclose(q, noise.posterior(k)) and np.isclose(q.sum(), 1.0)


@pytest.fixture()
def corridor():
    """A 1 x 4 corridor f i i g, start at the i next to f; the machine of coffee_like."""
    mdp = gridworld(["f i i g"], slip=0.0, start=[(0, 1)], propositions=["f", "g", "i", "n"])
    return mdp, coffee_like()


def belief_env(mdp, machine, noise, seed=0, tracker=None):
    labeler = StateLabels.of(mdp)
    detector = SimulatedDetector(labeler, machine, noise, seed=seed)
    return RewardMachineEnv(MdpEnv(mdp, 20), machine, labeler, observation="belief", detector=detector, tracker=tracker)


def test_label_noise_belief_observation_and_its_counterfactual_experiences(corridor):
    mdp, m = corridor
    noise = LabelNoise.uniform(m.alphabet, 0.3)
    env = belief_env(mdp, m, noise)
    obs, info = env.reset(seed=3)
    assert set(obs) == {"obs", "belief"} and np.isclose(obs["belief"].sum(), 1.0)
    assert env.observation_space.contains(obs)
    q = info["rm_detection"]
    assert np.allclose(obs["belief"], BayesFilter(m).start(q))
    obs, reward, term, trunc, info = env.step(mdp.action_index("left"))  # onto f: the world's machine to u1
    assert info["rm_node"] == 1 and reward == 0.0 and not term
    rows = env.belief_experiences(info)
    w = info["rm_detection"]
    for u in (0, 1):  # the live nodes: one row per letter, weighed by the detection
        mine = rows.node == u
        assert np.isclose(rows.weight[mine].sum(), 1.0)
        assert np.array_equal(rows.next_node[mine], m.delta_u[u]) and np.allclose(rows.weight[mine], w)
        assert np.array_equal(rows.reward[mine], m.delta_r[u])
    with pytest.raises(ModelError, match="belief_experiences"):
        env.counterfactual_experiences(None, 0, None, info)
    naive = belief_env(mdp, m, noise, tracker=MostLikelyLabel(m))
    _, info = naive.reset(seed=3)
    rows = naive.belief_experiences(info)
    assert np.array_equal(rows.weight, [1.0, 1.0]) and set(rows.node.tolist()) == {0, 1}
    with pytest.raises(ModelError, match="needs a detector"):
        RewardMachineEnv(MdpEnv(mdp, 20), m, StateLabels.of(mdp), observation="belief")
    with pytest.raises(ModelError, match="apply with observation='belief'"):
        RewardMachineEnv(MdpEnv(mdp, 20), m, StateLabels.of(mdp), detector=naive.detector)


def test_label_noise_an_episode_the_world_ends_ends_every_experience(corridor):
    mdp, m = corridor
    env = belief_env(mdp, m, LabelNoise.uniform(m.alphabet, 0.3))
    env.reset(seed=1)
    env.step(mdp.action_index("left"))  # f
    for _ in range(3):
        _, reward, term, _, info = env.step(mdp.action_index("right"))
    assert term and reward == 1.0 and info["rm_ended"]  # the world's machine paid and ended
    assert env.belief_experiences(info).terminated.all()


def test_label_noise_belief_acts_on_the_likely_nodes():
    """After a false n (the end, by the naive reading), the belief keeps the chance that the task
    goes on, and the Q-weighted action is still the one towards the goal."""
    m = coffee_like()
    agent = BeliefQLearning(epsilon=0.0)
    q = np.zeros((1, 3, 2))
    q[0, 0] = [0.0, 0.5]  # in u0, action 1 leads on; the end node's values are flat
    detection = [0.05, 0.05, 0.0, 0.9]
    belief = BayesFilter(m).step(np.array([1.0, 0, 0]), detection)
    naive = MostLikelyLabel(m).step(np.array([1.0, 0, 0]), detection)
    rng = np.random.default_rng(0)
    assert np.argmax(naive) == 2 and belief[0] > 0
    assert agent.act(q, 0, belief, rng, greedy=True) == 1
    assert {agent.act(q, 0, naive, np.random.default_rng(s), greedy=True) for s in range(20)} == {0, 1}


def test_label_noise_belief_q_learning_learns_the_corridor(corridor):
    """Without noise the expected update is plain CRM: the greedy agent fetches f, then walks to g."""
    mdp, m = corridor
    env = belief_env(mdp, m, LabelNoise.exact(m.alphabet))
    agent = BeliefQLearning(alpha=0.5, q_init=1.0)
    q, curve = agent.train(env, 2000, seed=0)
    assert agent.episode(belief_env(mdp, m, LabelNoise.exact(m.alphabet), seed=9), q, seed=4) == 1.0


def test_label_noise_pooled_state_letters_is_the_hand_computed_belief():
    """Each step's letter read as its state's, from every detection there so far: the second
    detection at state 1 is pooled with the first, ∝ [0.7·0.1, 0.1·0.6, 0.1·0.2, 0.1·0.1]."""
    m = coffee_like()
    pooled = PooledStateLetters(BayesFilter(m), n_states=3)
    q0, q1, flat, q2 = [0.1, 0.1, 0.7, 0.1], [0.7, 0.1, 0.1, 0.1], [0.25] * 4, [0.1, 0.6, 0.2, 0.1]
    b = pooled.start(pooled.pool(0, q0))
    assert np.allclose(b, [0.8, 0.1, 0.1])
    b = pooled.step(b, pooled.pool(1, q1))  # state 1's first detection: the Bayes filter's step
    # u0 (0.8): f -> u1 0.56, n -> end 0.08, g i stay 0.16; u1 (0.1): f i stay 0.08, g n -> end 0.02
    assert np.allclose(b, [0.16, 0.64, 0.2])
    b = pooled.step(b, pooled.pool(2, flat))
    # u0 (0.16): f -> u1 0.04, n -> end 0.04, g i stay 0.08; u1 (0.64): f i stay 0.32, g n -> end 0.32
    assert np.allclose(b, [0.08, 0.36, 0.56])
    read = pooled.pool(1, q2)
    assert np.allclose(read, [0.4375, 0.375, 0.125, 0.0625]) and pooled.visits.tolist() == [1, 2, 1]
    b = pooled.step(b, read)
    # u0 (0.08): f -> u1 0.035, n -> end 0.005, g i stay 0.04;
    # u1 (0.36): f i stay 0.36·0.5625, g n -> end 0.36·0.4375; end 0.56
    assert np.allclose(b, [0.04, 0.035 + 0.2025, 0.005 + 0.1575 + 0.56])
    assert not np.allclose(b, BayesFilter(m).step([0.08, 0.36, 0.56], q2))  # the per-step filter forgets
    naive = PooledStateLetters(MostLikelyLabel(m), n_states=3)
    naive.pool(1, q1)
    assert np.array_equal(naive.letters(naive.pool(1, q2)), [1, 0, 0, 0])  # f pooled; g alone
    assert np.array_equal(MostLikelyLabel(m).letters(q2), [0, 1, 0, 0])
    with pytest.raises(ModelError, match=r"reads Discrete\(3, start=0\) observations"):
        pooled.pool(3, flat)
    with pytest.raises(ModelError, match="needs a NodeTracker"):
        PooledStateLetters(m, n_states=3)


def test_label_noise_pooled_letters_are_the_posterior_of_the_confusion():
    """Against Bayes' rule on the detector's confusion matrix itself: the recorded letters of
    one state's visits, a uniform prior, ``p(ℓ) ∝ Π_i C[ℓ, k_i]``."""
    noise = LabelNoise.uniform(["f", "g", "i", "n"], 0.35)
    detector = NoisyDetector(noise, 5)
    pooled = PooledStateLetters(BayesFilter(coffee_like()), n_states=2, first=10)
    recorded = []
    for _ in range(12):
        k, q = detector(0)  # the true letter f at observation 11
        recorded.append(k)
        expected = np.prod(noise.confusion[:, recorded], axis=1)
        assert np.allclose(pooled.pool(11, q), expected / expected.sum())
    assert pooled.visits.tolist() == [0, 12]


def test_label_noise_pooled_tracker_in_the_belief_product(corridor):
    """The wrapper hands the pooled tracker each step's observation; the experiences weigh the
    pooled letters; the default trackers read the detection itself."""
    mdp, m = corridor
    noise = LabelNoise.uniform(m.alphabet, 0.3)
    plain = belief_env(mdp, m, noise)
    _, info = plain.reset(seed=3)
    assert np.array_equal(info["rm_letters"], info["rm_detection"])
    tracker = PooledStateLetters(BayesFilter(m), n_states=mdp.n_states)
    env = belief_env(mdp, m, noise, tracker=tracker)
    check = PooledStateLetters(BayesFilter(m), n_states=mdp.n_states)
    obs, info = env.reset(seed=3)
    b = check.start(check.pool(obs["obs"], info["rm_detection"]))
    for action in ["right", "left", "left", "right", "left"]:
        obs, _, term, _, info = env.step(mdp.action_index(action))
        read = check.pool(obs["obs"], info["rm_detection"])
        b = check.step(b, read)
        assert np.allclose(info["rm_letters"], read) and np.allclose(obs["belief"], b)
    rows = env.belief_experiences(info)
    assert np.allclose(rows.weight[rows.node == 0], info["rm_letters"])
    assert np.array_equal(tracker.visits, check.visits) and tracker.visits.sum() == 6
