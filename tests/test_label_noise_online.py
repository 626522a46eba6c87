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


PROPS = ["a", "b", "o"]


class Reads:
    """A detector of confidence 0.9 over ``PROPS`` that reads each state's visits as scripted."""

    def __init__(self, script):
        self.script = {s: list(v) for s, v in script.items()}

    def __call__(self, obs, info):
        q = np.full(3, 0.05)
        q[PROPS.index(self.script[int(obs)].pop(0))] = 0.9
        return q


def _loop(inference_of, reads):
    """``b`` pays 1 after ``a``; episode 0 visits states o, b (unpaid), episode 1 o, a, b (paid),
    the a state's first visit read ``o`` (the reading the labeler believes then)."""
    pytest.importorskip("gymnasium", reason="rmtk.rl needs gymnasium (pip install '.[gym]')")
    from rmtk.rl.online import LoopSettings, OnlineLoop, Trace

    labels = StateBeliefLabels(Reads(reads), PROPS, 3)
    loop = OnlineLoop(PROPS, LoopSettings(max_nodes=3, inference=inference_of(labels)))
    for episode, (states, rewards) in enumerate([([0, 2], [0]), ([0, 1, 2], [0, 1])]):
        letters = [PROPS.index(labels(s, {})) for s in states]
        loop.finished(Trace(letters, rewards, episode, 10 * episode, states=states))
    return loop, labels


def test_label_noise_online_believed_labels_pay_for_a_wrong_reading():
    from rmtk.rl.online import ExactRewards, NodeBoundError
    from rmtk.rl.online.labels import BelievedLabels

    reads = {0: "oooo", 1: "oaaa", 2: "bbbb"}
    with pytest.raises(NodeBoundError, match="contradict each other"):  # kept as read: o b unpaid, o o b paid
        _loop(lambda labels: ExactRewards(), reads)
    loop, labels = _loop(BelievedLabels, reads)
    # the a state read once as o is in doubt (o 18 times as likely as a): the machine reads it a,
    # at log 18 nats, rather than no machine at all
    assert [t.letters.tolist() for t in loop.kept] == [[2, 1], [2, 0, 1]]
    assert labels.letters().tolist() == [2, 2, 1]  # the labeler itself still believes o there
    assert loop.machine.n_nodes == 2 and all(t.disagreement(loop.hypothesis) is None for t in loop.kept)
    assert loop.hypothesis.reward[loop.machine.final(["o", "a"]), 1] == 1  # b after a pays 1
    assert loop.swaps == 1 and loop.history[-1].paid == 1.0


def test_label_noise_online_believed_labels_reread_kept_traces():
    from rmtk.rl.online import Swap, Trace
    from rmtk.rl.online.labels import BelievedLabels

    loop, labels = _loop(BelievedLabels, {0: "oooo", 1: "o" + "a" * 8, 2: "bbbb"})
    inference = loop.settings.inference
    first = Trace([2, 2, 1], [0, 1], states=[0, 1, 2])  # as read at the time
    assert inference.reread(first).letters.tolist() == [2, 2, 1]  # one detection: o is the likelier
    assert not inference.stale([first])  # the a state is in doubt: its letter is the machine's to choose
    labels(1, {}), labels(1, {})  # two more visits read a
    assert inference.reread(first).letters.tolist() == [2, 0, 1]
    assert labels.beliefs().doubtful[1] and not inference.stale([first])  # a 18² times as likely as o: doubtful
    for _ in range(5):
        labels(1, {})  # seven visits read a: a rival within 10⁻⁶ no longer
    assert not labels.beliefs().doubtful[1] and inference.stale([first])  # decided a, the trace holds o
    assert not inference.stale(loop.kept)  # the kept trace holds the a chosen at the inference
    line = Swap(loop.machine, 50, 4, cpu=0.1, traces=2, reread=True).line(PROPS)
    assert line == (
        "step 50 (episode 4): the labels now decide a letter the kept traces were read with otherwise; "
        "read anew -> 2 nodes from 2 traces, 0.10 s CPU"
    )
    with pytest.raises(ModelError, match="has no states"):
        inference.reread(Trace([0, 1], [0]))
    with pytest.raises(ModelError, match="must be the run's StateBeliefLabels"):
        BelievedLabels(object())
    with pytest.raises(ModelError, match="2 states for 3 letters"):
        Trace([0, 1, 2], [0, 0], states=[0, 1])


def test_label_noise_online_dqn_believed_labels_end_with_the_true_machine():
    pytest.importorskip("stable_baselines3", reason="stable-baselines3 is not installed (pip install '.[rl]')")
    from rmtk.gym import SimulatedDetector
    from rmtk.label_noise import LabelNoise
    from rmtk.rl.online import OnlineLearner, against_truth
    from rmtk.rl.online.labels import BelievedLabels
    from rmtk.rl.online.tasks import cliff_patrol

    env, truth_labels, truth = cliff_patrol()
    tiny = dict(policy_kwargs={"net_arch": [8]}, batch_size=32, learning_starts=100, buffer_size=5_000)

    def run(believed: bool):
        detector = SimulatedDetector(truth_labels, truth, LabelNoise.uniform(truth.alphabet, 0.1), seed=0)
        labels = StateBeliefLabels(detector, truth.alphabet, env.observation_space.n)
        inference = BelievedLabels(labels) if believed else None
        return OnlineLearner(env, labels, seed=0, max_nodes=4, inference=inference, **tiny).learn(2_000)

    kept = run(False)  # the traces kept as read: a b read at a plain cell forces a second node
    assert not against_truth(kept.machine, truth, kept.traces).same
    believed = run(True)
    assert str(against_truth(believed.machine, truth, believed.traces)) == "isomorphic to the true machine"
    assert all(t.states is not None and len(t.states) == len(t.letters) for t in believed.traces)


def test_label_noise_online_a_false_alarm_at_reset_does_not_end_the_start():
    """A detector's false alarm at a reset (a letter that elsewhere ended an episode) whose episode
    went on: the start is not sent to the end node, and the loop goes on (it raised before: the
    inferred machine ended the episode at its reset)."""
    pytest.importorskip("gymnasium", reason="rmtk.rl needs gymnasium (pip install '.[gym]')")
    from rmtk.rl.online import ExactRewards, LoopSettings, OnlineLoop, Trace
    from rmtk.rl.online.hypothesis import ending, trivial

    ended = Trace([2, 2, 1], [0, 0], episode=0, step=2, terminated=True)  # o o b: b ended it
    went_on = Trace([1, 2, 2], [0, 0], episode=1, step=4)  # b read at the reset, then on
    assert ending(trivial(PROPS), [ended])[0, 1]
    assert not ending(trivial(PROPS), [ended, went_on])[0, 1]
    loop = OnlineLoop(PROPS, LoopSettings(max_nodes=3, inference=ExactRewards()))
    loop.finished(ended)
    assert loop.hypothesis.terminal[loop.hypothesis.next[0, 1]]  # b ends episodes (JIRP's inference)
    loop.finished(went_on)
    assert not loop.hypothesis.terminal[loop.hypothesis.start(1)]
    assert all(t.disagreement(loop.hypothesis) is None for t in loop.kept)


class Recorded:
    """A detector that keeps every detection it reports (the independent record of the test)."""

    def __init__(self, detector):
        self.detector, self.seen = detector, []

    def __call__(self, obs, info):
        q = np.asarray(self.detector(obs, info), dtype=np.float64)
        self.seen.append(q / q.sum())
        return q


def test_label_noise_online_dqn_filtered_belief_is_the_filters_and_a_swap_relabels_it():
    """FilteredBelief (rmtk/rl/online/views.py): the agent's node slot is the Bayes filter's
    belief over the hypothesis' nodes (rmtk/label_noise/filter.py, computed here from the
    detector's own record), after the one-hot state; a swap filters the episode again over the new
    hypothesis, and the replay buffer serves each stored step from the new hypothesis' nodes."""
    sb3 = pytest.importorskip("stable_baselines3", reason="stable-baselines3 is not installed (pip install '.[rl]')")
    from rmtk.gym import SimulatedDetector
    from rmtk.gym.wrapper import counterfactual_experiences
    from rmtk.label_noise import LabelNoise
    from rmtk.label_noise.filter import BayesFilter
    from rmtk.rl.online import FilteredBelief, OnlineEnv, SubgoalExploration, online_replay
    from rmtk.rl.online.hypothesis import trivial
    from rmtk.rl.online.tasks import cliff_patrol

    env, truth_labels, truth = cliff_patrol()
    S, N = env.observation_space.n, 4
    record = Recorded(SimulatedDetector(truth_labels, truth, LabelNoise.uniform(truth.alphabet, 0.2), seed=0))
    labels = StateBeliefLabels(record, truth.alphabet, S)
    online = OnlineEnv(env, labels, max_nodes=N, view=FilteredBelief(labels), exploration=SubgoalExploration())
    assert online.observation_space.shape == (S + N,)
    other = StateBeliefLabels(record, truth.alphabet, S)
    with pytest.raises(ModelError, match="give the same object as the run's labeler"):
        OnlineEnv(env, other, max_nodes=N, view=FilteredBelief(labels))
    with pytest.raises(ModelError, match="use observation='flat'"):
        OnlineEnv(env, labels, max_nodes=N, view=FilteredBelief(labels), observation="dict")
    with pytest.raises(ModelError, match="must be the run's StateBeliefLabels"):
        FilteredBelief(truth_labels)

    def check_episode(machine, steps: int, seed: int):
        """Acts at random; every observation is the state one-hot, then the filter's belief."""
        rng = np.random.default_rng(seed)
        record.seen.clear()
        obs, _ = online.reset(seed=seed)
        f = BayesFilter(machine)
        belief = f.start(record.seen[0])
        for t in range(steps):
            state = online.env.unwrapped.s
            assert obs.shape == (S + N,) and obs[:S].sum() == 1 and obs[state] == 1
            want = np.zeros(N)
            want[: machine.n_nodes] = belief
            np.testing.assert_allclose(obs[S:], want, rtol=1e-6, atol=1e-7)
            obs, _, term, trunc, _ = online.step(int(rng.integers(4)))
            belief = f.step(belief, record.seen[-1])
            assert len(record.seen) == t + 2  # one detection a step, read once (the labeler's)
            if term or trunc:
                break

    def filtered(machine, detections) -> np.ndarray:
        f = BayesFilter(machine)
        b = f.start(detections[0])
        for q in detections[1:]:
            b = f.step(b, q)
        return b

    online.loop.assume(truth)  # four nodes: a belief that spreads
    check_episode(truth, 60, seed=1)
    assert 0 < np.sort(online.seen.belief)[-2] < 1  # somewhere the detections left the node in doubt

    # a DQN on the belief; its replay buffer serves the stored steps from the current hypothesis
    online.loop.assume(trivial(truth.alphabet))
    model = sb3.DQN(
        "MlpPolicy", online, seed=0, device="cpu", learning_starts=10_000, policy_kwargs={"net_arch": [8]},
        **online_replay(online),
    )  # fmt: skip
    model.learn(300)
    buf = model.replay_buffer
    rows = np.arange(buf.pos)
    before = online.machine
    detections = list(online.seen.detections)  # the episode under way
    np.testing.assert_allclose(online.seen.belief, filtered(before, detections))
    assert before.n_nodes < truth.n_nodes
    for machine in (before, truth):  # before and after a swap
        if machine is truth:
            online.loop.assume(truth)
        samples = buf._get_samples(rows)
        obs, nxt = samples.observations.numpy(), samples.next_observations.numpy()
        assert np.array_equal(obs[:, :S], buf.observations[rows, 0, :S])  # the stored steps' states
        assert np.all(obs[:, S:].sum(axis=1) == 1) and np.all(nxt[:, S:].sum(axis=1) == 1)  # a node, one-hot
        u, v = obs[:, S:].argmax(axis=1), nxt[:, S:].argmax(axis=1)
        assert u.max() < machine.n_nodes
        for i in range(len(rows)):  # rmtk.gym.wrapper's CRM, computed apart from the buffer
            letter = machine.alphabet[buf.letters[i]]
            cf = counterfactual_experiences(machine, letter, env_terminated=bool(buf.ended[i]))
            j = list(cf.node).index(u[i])
            assert (v[i], samples.rewards[i, 0]) == (cf.next_node[j], cf.reward[j])
    # the swap filters the episode under way again, over the new hypothesis' nodes
    swapped = online.view.swapped(online.hypothesis, online.seen)
    np.testing.assert_allclose(swapped.belief, filtered(truth, detections))
    assert swapped.belief.shape == (truth.n_nodes,) != online.seen.belief.shape


def test_label_noise_online_replay_as_believed_reads_each_stored_step_anew():
    """AsBelieved (rmtk/rl/online/replay.py): a stored step's letter is its state's believed one
    when the batch is drawn, in the buffer's alphabet order; a state never detected keeps the
    letter read; AsRead keeps every letter read."""
    pytest.importorskip("gymnasium", reason="rmtk.rl needs gymnasium (pip install '.[gym]')")
    from rmtk.rl.online import AsBelieved, AsRead

    labels = StateBeliefLabels(Reads({0: "baa", 1: "o"}), PROPS, 3)
    order = ("o", "a", "b")  # the buffer's alphabet, another order than the labeler's
    read = [order.index(labels(0, {})), order.index(labels(1, {}))]  # b (the first visit), o
    recorded = np.array([read[0], read[1], order.index("a")])
    states = np.array([0, 1, 2])  # state 2 never detected
    assert AsBelieved(labels).letters(recorded, states, order).tolist() == [2, 0, 1]  # b: 0 read once
    labels(0, {}), labels(0, {})  # two more visits read a: a is believed now
    assert AsBelieved(labels).letters(recorded, states, order).tolist() == [1, 0, 1]
    assert AsBelieved(labels).letters(recorded, states[:, None].astype(float), order).tolist() == [1, 0, 1]
    assert AsRead().letters(recorded, states, order) is recorded
    with pytest.raises(ModelError, match="a stored state outside the labeler's 3"):
        AsBelieved(labels).letters(recorded, np.array([0, 1, 3]), order)
    with pytest.raises(ModelError, match="must be the run's StateBeliefLabels"):
        AsBelieved(lambda obs, info: "a")


def test_label_noise_online_dqn_replay_as_believed_relabels_the_buffer():
    """With AsBelieved the online buffer's experiences follow each stored step's state letter as
    believed when drawn, not the letter read then, more of which were wrong (CliffWalking patrol
    at detector confidence 0.8)."""
    pytest.importorskip("stable_baselines3", reason="stable-baselines3 is not installed (pip install '.[rl]')")
    from rmtk.gym import SimulatedDetector
    from rmtk.label_noise import LabelNoise
    from rmtk.rl.online import AsBelieved, OnlineLearner
    from rmtk.rl.online.tasks import cliff_patrol

    env, truth_labels, truth = cliff_patrol()
    detector = SimulatedDetector(truth_labels, truth, LabelNoise.uniform(truth.alphabet, 0.2), seed=0)
    labels = StateBeliefLabels(detector, truth.alphabet, env.observation_space.n)
    tiny = dict(policy_kwargs={"net_arch": [8]}, batch_size=32, learning_starts=100, buffer_size=5_000)
    run = OnlineLearner(env, labels, seed=0, max_nodes=4, replay=AsBelieved(labels), **tiny).learn(1_500)
    buf, h, enc = run.model.replay_buffer, run.env.hypothesis, run.env.encoding
    rows = np.arange(buf.pos)
    reached = enc.environment(buf.next_observations[rows, 0]).astype(int)
    believed = labels.letters()[reached]
    true = np.array([truth.letter_index(truth_labels(s, {})) for s in reached])
    stored = buf.letters[rows]
    assert (stored != believed).sum() >= 5  # read otherwise when stored than believed now
    assert (believed != true).sum() < (stored != true).sum()  # believed now: fewer wrong
    for node in h.live:
        nodes = np.full(len(rows), node)
        _, nxt, reward, _ = buf.experiences(rows, nodes)
        np.testing.assert_array_equal(reward, h.reward[nodes, believed])
        np.testing.assert_array_equal(nxt, enc.encode(reached, h.next[nodes, believed]))
