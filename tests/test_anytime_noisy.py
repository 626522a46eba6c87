"""The least noisy machine found by local search (rmtk/sat/anytime.py): its noise counted as the
decoded rewards count it, the optimum of the exact MaxSAT on a small noisy case, the same answer
for the same seed, its budget kept, and the flag "not proven" in the result and the report."""

import io

import numpy as np
import pytest

from rmtk import Learner, dsl
from rmtk.learner.report import report
from rmtk.limits import SearchLimits
from rmtk.sat.anytime import (
    AnytimeNoisyRewardEncoder,
    NoiseLandscape,
    local_search,
    log10_ratio,
    neighbours,
    random_machine,
)
from rmtk.sat.encoders import NoisyRewardEncoder
from rmtk.sat.encoding import Problem
from rmtk.traces.evidence import TraceRewards, decode_rewards
from rmtk.traces.explorers import explore


@pytest.fixture(scope="module")
def case(models_dir):
    task = dsl.load(models_dir / "office.rm").get("coffee", "task")
    demos = explore(task, 300, 60, seed=5, epsilon=1.0, noise=0.05)
    traces = TraceRewards(demos).observe(task.mdp, None, compress=True)
    return task, demos, traces


def test_noise_is_the_decoded_disagreements(case):
    task, _, traces = case
    K = len(traces.propositions)
    land = NoiseLandscape.of(traces, K)
    rng = np.random.default_rng(0)
    machines = np.stack([random_machine(3, K, rng, True) for _ in range(12)])
    noise, _ = land.score(machines)
    for m, got in zip(machines, noise):
        assert got == decode_rewards(m, traces).disagreements
    assert land.one_node() == decode_rewards(np.zeros((1, K), np.int64), traces).disagreements
    assert land.floor() <= noise.min()


def test_neighbours_keep_non_stuttering():
    rng = np.random.default_rng(1)
    for _ in range(20):
        m = random_machine(4, 3, rng, True)
        nb = neighbours(m, True)
        assert len(nb)
        for e in nb:
            assert (np.take_along_axis(e, e, axis=0) == e).all()  # each column idempotent
            assert (e != m).any()


def test_local_search_finds_the_exact_optimum_and_the_truth(case):
    task, _, traces = case
    problem = Problem(traces.trie, len(traces.propositions), rewards=traces)
    # episodes end at the end node: two nodes pay as the truth on every observed step
    exact = NoisyRewardEncoder().search(problem, SearchLimits(max_nodes=2, nodes=2))
    run = local_search(NoiseLandscape.of(traces, problem.n_letters), 2, moves=1000, trie=traces.trie)
    best = run.found[0]
    assert best.noise == exact.cost
    truth_du = task.machine.delta_u[:, np.asarray(task.letter_of_proposition)]
    assert decode_rewards(truth_du, traces).disagreements == exact.cost  # the truth is least noisy here

    def paid(du):
        return decode_rewards(du, traces).delta_r[traces.trie.run(du, 0)[traces.node], traces.letter]

    assert (paid(best.delta_u) == paid(truth_du)).all()  # it pays what the truth pays on every observed step


def test_same_seed_same_answer_and_budget_kept(case):
    _, _, traces = case
    land = NoiseLandscape.of(traces, len(traces.propositions))
    a = local_search(land, 3, seed=7, moves=700, trie=traces.trie)
    b = local_search(land, 3, seed=7, moves=700, trie=traces.trie)
    assert [(f.noise, f.key) for f in a.found] == [(f.noise, f.key) for f in b.found]
    assert (a.evaluated, a.starts) == (b.evaluated, b.starts)
    widest = 3 * len(traces.propositions) * 2  # one neighbourhood at most: n·K·(n − 1)
    assert 700 <= a.evaluated <= 700 + widest + 2
    assert a.stopped is None


def test_a_finished_climb_keeps_its_neighbours_noise(case):
    """The report's rivals reuse the last look of the climb (no second scoring after a stop):
    it must be the neighbours' noise, in :func:`neighbours`' order."""
    _, _, traces = case
    land = NoiseLandscape.of(traces, len(traces.propositions))
    run = local_search(land, 3, seed=2, moves=3000, trie=traces.trie)
    kept = [f for f in run.found if f.around is not None]
    assert kept and run.found[0].around is not None
    for f in kept:
        assert np.array_equal(f.around, land.score(neighbours(f.delta_u, True))[0])


def test_flag_in_result_and_report(case):
    task, demos, _ = case
    encoder = AnytimeNoisyRewardEncoder(proof_work=0, moves=2000)  # no proof: the local search answers
    r = Learner(ptp=None, rewards=TraceRewards(demos), encoder=encoder, nodes=2, irl=None).fit(task)
    un = r.search.unproven
    assert un is not None and not r.search.complete
    assert un.noise == r.search.cost == r.noise.disagreements
    assert un.gap == un.noise - un.lower_bound >= 0
    out = io.StringIO()
    report(task, r, out=out)
    text = out.getvalue()
    assert "NOT PROVEN least noisy" in text and "not proven" in text
    assert "likelihood ratio" in text
    assert ("one transition away" in text) == bool(un.unresolved)
    assert ("the nearest other machine" in text) == (not un.unresolved and un.rival is not None)


def test_exact_answer_kept_when_proven(case):
    task, demos, _ = case
    exact = Learner(ptp=None, rewards=TraceRewards(demos), encoder=NoisyRewardEncoder(), nodes=2, irl=None).fit(task)
    anytime = Learner(
        ptp=None, rewards=TraceRewards(demos), encoder=AnytimeNoisyRewardEncoder(), nodes=2, irl=None
    ).fit(task)
    assert anytime.search.unproven is None and anytime.search.cost == exact.search.cost
    assert [s.delta_u.tolist() for s in anytime.solutions] == [s.delta_u.tolist() for s in exact.solutions]


def test_likelihood_ratio():
    assert log10_ratio(0, 10, 100, 2) == 0.0
    assert log10_ratio(2, 5, 100, 2) == pytest.approx(2 * np.log10(0.95 / 0.05))
