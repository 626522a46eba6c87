"""Learning from reward traces (docs/design/rewards-evidence.md): rewards alone, noisy
rewards, the clause family and the evidence comparison."""

import numpy as np
import pytest

from rmtk import Learner, dsl
from rmtk.data import Demonstrations
from rmtk.errors import RmtkError
from rmtk.mdp.model import LabeledMDP
from rmtk.sat.encoders import SimplestEncoder, SimplestNoisyRewardEncoder
from rmtk.traces.evidence import TraceRewards, noise_interval
from rmtk.traces.explorers import explore
from rmtk.traces.rewards import reward_traces


@pytest.fixture(scope="module")
def coffee(models_dir):
    return dsl.load(models_dir / "office.rm").get("coffee", "task")


def exercised_agreement(result, i, truth):
    """The node map learned -> truth read off the runs of the observed words, checked to be a
    bijection on the reached nodes, with equal rewards on every observed (node, letter)."""
    trie = result.rewards.trie
    learned = trie.run(result.solutions[i].delta_u, 0)
    true = trie.run(truth.delta_u, truth.initial)
    pairs = set(zip(learned.tolist(), true.tolist()))
    assert len({a for a, _ in pairs}) == len(pairs) == len({b for _, b in pairs}), pairs
    h = dict(pairs)
    d = result.decoded[i]
    for u, k in np.argwhere(d.observed):
        assert d.delta_r[u, k] == truth.delta_r[h[int(u)], k]
    return h


def test_rewards_alone_recover_the_coffee_machine(coffee):
    demos = explore(coffee, 300, 100, seed=1, epsilon=1.0)  # a random walk, episodes end at the end node
    r = Learner(ptp=None, rewards=TraceRewards(demos), encoder=SimplestEncoder()).fit(coffee)
    assert r.n_nodes == 2 and len(r.machines) == 1 and r.search.complete
    truth = coffee.machine
    h = exercised_agreement(r, 0, truth)
    assert h == {0: truth.nodes.index("u0"), 1: truth.nodes.index("u1")}
    m = r.machines[0]
    assert m.step("u0", "f") == 1 and m.reward("u1", "g") == 1.0
    free = set(r.unconstrained(0))
    # every transition into the end node is free: no trace goes on after it
    assert {("u0", "n"), ("u1", "g"), ("u1", "n")} <= free
    assert r.noise.disagreements == 0 and r.noise.low == 0.0
    # plain SAT lists more machines: the random walk leaves rare transitions undecided
    plain = Learner(ptp=None, rewards=TraceRewards(demos), max_solutions=3).fit(coffee)
    assert plain.n_nodes == 2 and len(plain.machines) == 3 and not plain.search.complete


@pytest.mark.parametrize(("noise", "episodes"), [(0.01, 300), (0.05, 1000), (0.1, 300)])
def test_noisy_rewards_give_the_truth_and_the_noise_level(coffee, noise, episodes):
    demos = explore(coffee, episodes, 100, seed=1, epsilon=0.3, noise=noise)
    r = Learner(ptp=None, rewards=TraceRewards(demos), encoder=SimplestNoisyRewardEncoder(), nodes=2).fit(coffee)
    assert len(r.machines) == 1 and r.search.complete
    exercised_agreement_noisy = r.decoded[0]
    assert exercised_agreement_noisy.disagreements == r.search.cost
    assert r.noise.low <= noise <= r.noise.high
    # the exact machine under the noise: its runs agree with the truth's on the observed words
    trie = r.rewards.trie
    learned, true = trie.run(r.solutions[0].delta_u, 0), trie.run(coffee.machine.delta_u, 0)
    assert len(set(zip(learned.tolist(), true.tolist()))) == 2
    # the exact encoder finds no machine that pays every noisy reward within 2 nodes
    exact = Learner(ptp=None, rewards=TraceRewards(demos), max_nodes=2).fit(coffee)
    assert exact.n_nodes is None


def test_contradicting_rewards_leave_no_machine():
    mdp = LabeledMDP.from_dense(
        np.array([[[0.5, 0.5], [0.5, 0.5]]]), labels=["a", "b"], propositions=["a", "b"], initial=[1.0, 0.0]
    )
    demos = Demonstrations.from_lists([[(0, 0, 1.0), (1, 0, np.nan)], [(0, 0, 0.0), (1, 0, np.nan)]])
    traces = reward_traces(demos, mdp)
    assert traces.n_rows == 2 and traces.noisy().tolist() == [True]
    r = Learner(ptp=None, rewards=TraceRewards(traces), max_nodes=3).fit(mdp)
    assert r.n_nodes is None and r.search.complete
    word = " ".join(traces.word(0))
    assert f"which contradict each other: after the word '{word}', the letter '{mdp.propositions[mdp.labels[1]]}'" in (
        r.search.message
    )
    assert "was paid 0 (1 step) and 1 (1 step)" in r.search.message  # the traces alone: no step to name
    r = Learner(ptp=None, rewards=TraceRewards(demos), max_nodes=3).fit(mdp)
    assert "was paid 0 (1 step, at trajectory 1, step 0) and 1 (1 step, at trajectory 0, step 0)" in r.search.message
    assert "NoisyRewardEncoder (--noisy" in r.search.message and "TolerantRewards (--tolerance" in r.search.message


def test_noise_interval_is_clopper_pearson():
    e = noise_interval(5, 100)
    assert e.rate == 0.05 and 0.016 < e.low < 0.017 and 0.112 < e.high < 0.113
    assert noise_interval(0, 10).low == 0.0 and noise_interval(10, 10).high == 1.0


def test_a_tiny_noise_interval_prints_digits_that_show_it():
    """390,000 steps without a disagreement bound the noise below 1 − 0.025^(1/390000) ≈ 9.5e-06:
    printed as such, not "0.0000 to 0.0000"; shares from 0.001 up keep four decimals."""
    e = noise_interval(0, 390_000)
    assert abs(e.high - (1 - 0.025 ** (1 / 390_000))) < 1e-12
    assert str(e) == "noise 0.0000 (0 of 390000 observed steps disagree; 95% interval 0.0000 to 9.5e-06)"
    assert "interval 6.2e-07 to 8.8e-06" in str(noise_interval(3, 1_000_000))
    assert str(noise_interval(5, 100)).startswith("noise 0.0500 (5 of 100 observed steps disagree; 95% interval 0.01")


def test_a_learner_needs_some_evidence():
    with pytest.raises(RmtkError, match="nothing to learn from"):
        Learner(ptp=None)


def test_plain_sat_encoder_keeps_policy_answers(models_dir):
    task = dsl.load(models_dir / "patrol.rm").tasks["patrol"] if (models_dir / "patrol.rm").exists() else None
    if task is None:
        pytest.skip("no patrol model")
    r = Learner(irl=None).fit(task)
    assert r.raw_count == 6 and r.rewards is None and r.decoded is None


def test_reward_verdicts_compare_what_each_machine_pays(models_dir):
    """rmtk.traces.verdicts: the truth against itself, a reward off by 0.05 (within a tolerance of
    0.1, not exactly), and the shortest word that shows it, the reward flagged when no trace saw it."""
    from rmtk.traces.verdicts import reward_consistency

    task = dsl.load(models_dir / "patrol.rm").tasks["patrol"]
    m, letter = task.machine, task.letter_of_proposition
    du, dr = m.delta_u[:, letter], m.delta_r[:, letter]
    off = dr.copy()
    d = task.mdp.propositions.index("D")
    off[3, d] = 1.05
    same, near = reward_consistency(task.mdp, du, dr, [(du, dr), (du, off)], tolerance=0.1)
    assert same.consistent and near.consistent and same.triples == near.triples == 48
    (exact,) = reward_consistency(task.mdp, du, dr, [(du, off)])
    word, k, paid, true_paid, state = exact.witness
    assert (k, paid, true_paid) == ("D", 1.05, 1.0) and not exact.unobserved
    assert word == ("A", "B", "C")  # the shortest: from a start cell of A beside B, then C, then into D
    seen = np.ones(du.shape, bool)
    seen[3, d] = False
    (free,) = reward_consistency(task.mdp, du, dr, [(du, off)], used=[np.ones(du.shape, bool)], observed=[seen])
    assert free.unobserved and str(free).endswith("the data leave that part of the learned machine free")
