"""The expert's policy and the world's rewards together identify what neither does alone
(docs/design/rewards-evidence.md, "What each of the three ways can and cannot identify").

tests/both_evidence.rm holds three small random tasks (found by a search over the random
instances of tests/label_instances.py with sparse 0/1 rewards). On each, the exact expert's
prefix tree policy of depth 3 alone and the rewards of 400 uniform walks of 4 steps alone each
leave several machines (every consistent machine up to renaming, plain SAT enumeration, the
search complete), and the two together leave one: the truth (isomorphic, rewards included;
a transition no word exercises, written as a self-loop, is one in the truth too)."""

from pathlib import Path

import pytest

from rmtk import ExactPTP, Learner, SatEncoder, dsl
from rmtk.machine.model import isomorphic
from rmtk.product.simulate import simulate
from rmtk.traces.evidence import TraceRewards

FILE = Path(__file__).resolve().parent / "both_evidence.rm"

#: task: (walk seed, machines from the policy alone, machines from the rewards alone)
CASES = {"both47": (47, 5, 5), "both220": (220, 2, 2), "both566": (566, 2, 4)}


@pytest.mark.parametrize("name", CASES)
def test_both_give_the_truth_alone_where_neither_does(name):
    task = dsl.load(FILE).tasks[name]
    seed, policy_count, rewards_count = CASES[name]
    walks = simulate(task, 400, 4, seed=seed, policy="uniform", rewards=True)
    every = dict(encoder=SatEncoder(), irl=None, max_solutions=1000)  # every consistent machine
    policy = Learner(ptp=ExactPTP(depth=3), **every).fit(task)
    rewards = Learner(ptp=None, rewards=TraceRewards(walks), **every).fit(task)
    both = Learner(ptp=ExactPTP(depth=3), rewards=TraceRewards(walks), **every).fit(task)
    for r in (policy, rewards, both):
        assert r.search.complete and r.n_nodes == task.machine.n_nodes
    assert (len(policy.machines), len(rewards.machines), len(both.machines)) == (policy_count, rewards_count, 1)
    assert both.isomorphic_to_truth() == (True,) and both.verdicts[0].consistent
    (m,) = both.machines
    assert isomorphic(m, task.machine, rewards=True)  # the observed rewards are the truth's
    # each evidence alone keeps the truth among its survivors
    assert any(policy.isomorphic_to_truth()) and any(rewards.isomorphic_to_truth())
