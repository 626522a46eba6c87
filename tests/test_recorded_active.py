"""Active learning over a recording (rmtk/active/recorded.py, the AtRecordedTriples strategy of
the one loop): from the recorded counts of an
ε-greedy expert, asking it at recorded triples the survivors disagree on leaves the machine
every-depth learning finds, far fewer than passive learning on the same recording; budgets
stop cleanly; bad input is a clear error. The reacher's expert is tested in test_reacher.py."""

from __future__ import annotations

import numpy as np
import pytest

from rmtk import dsl
from rmtk.active.asking import Budget
from rmtk.active.experts import RecordedExpert, SimulatedExpert, TaskExpert
from rmtk.active.loop import ActiveLearner
from rmtk.active.recorded import AtRecordedTriples, MostEvidence, Triples, candidate_triples
from rmtk.errors import RmtkError
from rmtk.limits import SearchLimits
from rmtk.negatives.miners import ConfidenceMiner
from rmtk.product.planning import task_policy
from rmtk.product.simulate import simulate
from rmtk.ptp.empirical import CountTable, count_chunk, prune_counts, to_policy
from rmtk.ptp.exact import NodePolicyTable, greedy_table
from rmtk.sat.encoders import MaxSatEncoder
from rmtk.sat.encoding import Problem

ALPHA = 1e-3


def greedy_task(name: str, epsilon: float = 0.1):
    """A shipped task and its ε-greedy expert: the soft-optimal policy's most probable action
    per node, ties (many in these grids) to the lowest action index by rmtk's tie rule
    (rmtk/ties.py), so the expert, and every outcome below, is the same on every machine."""
    task = dsl.load_model(name).tasks[name]
    return task, NodePolicyTable(greedy_table(task_policy(task), epsilon))


def recording(task, source, n=300, horizon=30) -> CountTable:
    return count_chunk(task.mdp, simulate(task, n, horizon, seed=0, policy=source))


def at_triples(**kw) -> ActiveLearner:
    """The loop asking at recorded triples (the learner the reacher's experiment uses)."""
    strategy = AtRecordedTriples(**{k: kw.pop(k) for k in ("samples", "tries", "pick") if k in kw})
    return ActiveLearner(strategy=strategy, **{"alpha": ALPHA, "max_nodes": 4, **kw})


def passive(table: CountTable, nodes: int):
    ptp = to_policy(prune_counts(table, ConfidenceMiner(ALPHA).min_count(table.n_actions)))
    neg = ConfidenceMiner(ALPHA).mine(ptp)
    return MaxSatEncoder().search(
        Problem(table.trie, table.n_letters, neg), SearchLimits(max_nodes=nodes, max_solutions=1000)
    )


@pytest.mark.parametrize("name", ["patrol_hallway", "stack"])
def test_asking_at_recorded_triples_leaves_the_machine_every_depth_learning_finds(name):
    task, source = greedy_task(name)
    table = recording(task, source)
    before = passive(table, task.machine.n_nodes)
    res = at_triples(max_nodes=task.machine.n_nodes).fit(
        task.mdp, SimulatedExpert(task, source=source, seed=1), data=table
    )
    assert not res.flagged and res.stopped.startswith("one machine survives; resolution (total variation, alpha")
    (sol,) = res.solutions
    # consistent with the expert's policy at every depth: no counterexample on the product
    assert TaskExpert(task, source=source).product_oracle().check(sol.delta_u) == []
    assert len(before.solutions) > 1  # the recording alone leaves several
    assert 0 < res.draws < table.n_steps * 2
    assert res.table.n_steps == table.n_steps + res.draws  # every answer is in the counts
    miner = ConfidenceMiner(ALPHA)
    assert len(res.negatives) > len(miner.mine(to_policy(prune_counts(table, miner.min_count(table.n_actions)))))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_survivors_that_no_recorded_triple_separates_are_reported_as_such(seed):
    # episodes of 6 steps never reach the longer words that tell the two survivors apart
    task, source = greedy_task("stack")
    table = count_chunk(task.mdp, simulate(task, 100, 6, seed=seed, policy=source))
    res = at_triples(max_nodes=task.machine.n_nodes).fit(
        task.mdp, SimulatedExpert(task, source=source, seed=1), data=table
    )
    sep = res.separation
    assert sep.machines == len(res.solutions) >= 2
    assert sep.triples == 0 and sep.pairs_split == 0  # they differ only where nothing was recorded
    assert "on none" in str(sep) and "no recorded triple they disagree on is left to ask; resolution" in res.stopped
    # the LearnResult of the last round explains what would separate them: a witness the
    # labeled MDP has but the recording never reached
    assert len(res.result.machines) == sep.machines
    assert "witness(es) from the MDP separate the 2 machines" in str(res.result.explain())


def test_candidates_are_one_per_split_and_settled_triples_drop_out():
    task, source = greedy_task("patrol_hallway")
    table = recording(task, source)
    deltas = [s.delta_u for s in passive(table, 4).solutions]
    tri = candidate_triples(table, deltas, samples=100)
    assert len(tri) > 0 and tri.split.shape == (len(deltas), len(tri))
    cols = {tri.split[:, c].tobytes() for c in range(len(tri))}
    assert len(cols) == len(tri)  # one triple per split
    n = tri.split.sum(axis=0)
    assert ((n > 0) & (n < len(deltas))).all()  # some machines merge, some split
    assert (np.minimum(tri.n_p, tri.n_q) < 100).all()
    # with a settling threshold of one visit every triple is settled: nothing left to ask
    assert len(candidate_triples(table, deltas, samples=1)) == 0
    order = MostEvidence(most=3).choose(tri, 100)
    assert len(order) == min(3, len(tri)) and tri.evidence[order[0]] == tri.evidence.max()


@pytest.mark.slow  # about ten CPU seconds: CI runs it apart (setup.cfg)
def test_a_budget_that_runs_out_returns_the_survivors_so_far_flagged():
    task, source = greedy_task("patrol_hallway")
    table = recording(task, source)
    for budget, spent in ((Budget(steps=2), "steps"), (Budget(draws=30), "draws")):
        res = at_triples(budget=budget).fit(task.mdp, SimulatedExpert(task, source=source, seed=1), data=table)
        assert res.flagged and res.exhausted == spent and res.steps <= 2 + (spent == "draws") and res.draws <= 30
        assert res.queries > 0  # something was asked before the budget ran out
        assert len(res.solutions) == len(passive(table, 4).solutions)
        assert "budget is spent" in res.stopped


def test_bad_input_is_a_clear_error():
    task, source = greedy_task("stack")
    table = recording(task, source, n=20)
    with pytest.raises(RmtkError, match="count table"):
        at_triples().fit(task.mdp, SimulatedExpert(task, source=source))  # no recording to ask at
    passive_only = at_triples().fit(task.mdp, RecordedExpert(task.mdp, table))
    assert "answers no queries" in passive_only.stopped and passive_only.queries == 0
    with pytest.raises(RmtkError, match="samples must be a whole number"):
        AtRecordedTriples(samples=0)
    with pytest.raises(RmtkError, match="alpha"):
        ActiveLearner(alpha=2)
    with pytest.raises(RmtkError, match="budget steps must be a positive number"):
        Budget(steps=0)
    with pytest.raises(RmtkError, match="has no choose method"):
        AtRecordedTriples(pick=object())
    assert len(Triples.empty(3)) == 0
