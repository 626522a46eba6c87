"""Noisy reward traces: the groups of exclusive soft clauses (rmtk/sat/encoding.py,
``soft_reward_outputs``) change the speed of the MaxSAT search, not its answer."""

from math import comb

import attrs
import numpy as np
import pytest

from rmtk import Learner, dsl
from rmtk.sat.encoders import SimplestNoisyRewardEncoder
from rmtk.sat.encoding import Formula, Problem
from rmtk.traces.evidence import TraceRewards
from rmtk.traces.explorers import explore


@attrs.frozen
class UngroupedEncoder(SimplestNoisyRewardEncoder):
    """The encoding without the stated groups: one soft clause per (word, letter, value) and
    nothing telling MaxSAT which of them exclude each other (rmtk before the groups)."""

    def encode(self, problem: Problem, n: int) -> Formula:
        formula = super().encode(problem, n)
        relax = set(formula.relax.tolist())
        formula.hard = [c for c in formula.hard if not (len(c) == 2 and c[0] in relax and c[1] in relax)]
        formula.exclusive_softs = False
        return formula


@pytest.fixture(scope="module")
def noisy(models_dir):
    coffee = dsl.load(models_dir / "office.rm").get("coffee", "task")
    return coffee, explore(coffee, 150, 100, seed=3, epsilon=0.3, noise=0.1)


def test_groups_are_the_rows_of_one_word_and_letter(noisy):
    task, demos = noisy
    r = Learner(ptp=None, rewards=TraceRewards(demos), encoder=SimplestNoisyRewardEncoder(), nodes=2).fit(task)
    traces = r.rewards
    problem = Problem(traces.trie, len(task.mdp.propositions), rewards=traces)
    grouped = SimplestNoisyRewardEncoder().encode(problem, 2)
    plain = UngroupedEncoder().encode(problem, 2)
    _, sizes = np.unique(np.stack([traces.node, traces.letter]), axis=1, return_counts=True)
    assert (sizes > 1).any(), "the noise should put two values on some (word, letter)"
    assert len(grouped.hard) - len(plain.hard) == sum(comb(int(m), 2) for m in sizes)
    assert grouped.exclusive_softs and not plain.exclusive_softs


def test_grouped_encoding_gives_the_same_machines_and_noise(noisy):
    task, demos = noisy
    fits = [
        Learner(ptp=None, rewards=TraceRewards(demos), encoder=enc, nodes=2).fit(task)
        for enc in (SimplestNoisyRewardEncoder(), UngroupedEncoder())
    ]
    grouped, plain = fits
    assert grouped.search.complete and plain.search.complete
    assert len(grouped.machines) == len(plain.machines) == 1
    assert np.array_equal(grouped.solutions[0].delta_u, plain.solutions[0].delta_u)
    assert np.array_equal(grouped.machines[0].delta_r, plain.machines[0].delta_r)
    assert grouped.search.cost == plain.search.cost == grouped.decoded[0].disagreements > 0
    assert grouped.noise == plain.noise
    # the truth, read on the observed words: its runs correspond to the learned machine's
    trie = grouped.rewards.trie
    learned, true = trie.run(grouped.solutions[0].delta_u, 0), trie.run(task.machine.delta_u, 0)
    assert len(set(zip(learned.tolist(), true.tolist()))) == 2
