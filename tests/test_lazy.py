"""Counterexample-guided learning: lazy negatives give exactly the machines and counts of the
full encoding; every-depth learning gives machines consistent at every depth; the exact check
of "some filling is consistent" agrees with brute force."""

from __future__ import annotations

import attrs
import numpy as np
import pytest
from test_theorem import FAMILIES, completions, random_instance

from rmtk import EmpiricalPTP, ExactPTP, Learner, MaxSatEncoder, SatEncoder, dsl
from rmtk.encoders import SatEncoder as Enc
from rmtk.equivalence import Fillings, consistency, distinguish, sync_product
from rmtk.errors import RmtkError
from rmtk.simulate import simulate

SHIPPED = [
    ("patrol", 6, 4, None),
    ("patrol_hallway", 9, 4, None),
    ("stack", 10, 3, None),
    ("stack_avoid", 8, 3, None),
    ("stack_avoid", 8, 4, 4),
]


def key(r):
    return sorted((s.delta_u.tobytes(), s.used.tobytes(), s.raw_count, s.completions) for s in r.solutions)


@pytest.mark.parametrize("name,depth,u,nodes", SHIPPED)
def test_lazy_equals_full_on_shipped_tasks(name, depth, u, nodes):
    t = dsl.load_model(name).tasks[name]
    full = Learner(ExactPTP(depth), max_nodes=u, nodes=nodes, irl=None).fit(t)
    lazy = Learner(ExactPTP(depth), encoder=SatEncoder(negatives="lazy"), max_nodes=u, nodes=nodes, irl=None).fit(t)
    assert (lazy.n_nodes, lazy.raw_count, lazy.distinct_count) == (full.n_nodes, full.raw_count, full.distinct_count)
    assert key(lazy) == key(full)
    assert [s.dropped for s in lazy.solutions] == [() for _ in lazy.solutions]
    assert 0 < lazy.search.lazy.counterexamples and lazy.search.lazy.longest <= depth
    assert lazy.tree.trie.n_nodes < full.tree.trie.n_nodes  # only the words in play


@pytest.mark.parametrize("name,depth,u,nodes", SHIPPED)
def test_every_depth_gives_the_machines_of_the_finite_depth_runs(name, depth, u, nodes):
    t = dsl.load_model(name).tasks[name]
    finite = Learner(ExactPTP(depth), max_nodes=u, nodes=nodes, irl=None).fit(t)
    every = Learner(ExactPTP(None), max_nodes=u, nodes=nodes).fit(t)
    assert (every.n_nodes, every.distinct_count) == (finite.n_nodes, finite.distinct_count)
    assert all(v.consistent for v in every.verdicts)
    assert every.reward_fits[0].residual < 1e-8  # rewards from the product policy of the oracle
    bound = t.mdp.n_states * u**2  # Theorem 1's depth
    assert every.search.lazy.longest <= bound


def test_lazy_on_random_instances_agrees_with_the_full_encoding():
    checked = 0
    for seed in range(60):
        for mode, kind in FAMILIES:
            inst = random_instance(seed, mode, kind)
            for depth in (1, 2, 4):
                full = inst.learner(depth).fit(inst.task)
                lazy = attrs.evolve(
                    inst.learner(depth), encoder=attrs.evolve(inst.learner(depth).encoder, negatives="lazy")
                ).fit(inst.task)
                assert (lazy.n_nodes, lazy.raw_count, lazy.distinct_count) == (
                    full.n_nodes,
                    full.raw_count,
                    full.distinct_count,
                ), (seed, mode, kind, depth)
                assert key(lazy) == key(full)
                checked += 1
    assert checked == 60 * len(FAMILIES) * 3


def test_lazy_pairs_from_demonstrations_equal_the_full_encoding():
    t = attrs.evolve(dsl.load_model("stack_avoid").tasks["stack_avoid"])
    demos = simulate(t, 1000, 20, seed=0)
    every = 1000  # every machine listed (from demonstrations the default lists DEMOS_MAX_SOLUTIONS)
    full = Learner(EmpiricalPTP(demos), irl=None, max_solutions=every).fit(t)
    lazy = Learner(EmpiricalPTP(demos), encoder=SatEncoder(negatives="lazy"), irl=None, max_solutions=every).fit(t)
    assert (lazy.raw_count, lazy.distinct_count) == (full.raw_count, full.distinct_count) == (40, 19)
    assert key(lazy) == key(full)


def test_deep_trees_are_never_built():
    t = dsl.load_model("patrol").tasks["patrol"]
    r = Learner(ExactPTP(20), encoder=SatEncoder(negatives="lazy"), irl=None).fit(t)
    assert (r.raw_count, r.distinct_count) == (6, 1) and r.isomorphic_to_truth() == (True,)
    assert r.tree.trie.n_nodes < 200  # counterexample words only (the full tree has millions)


def test_lazy_and_every_depth_errors():
    t = dsl.load_model("patrol").tasks["patrol"]
    with pytest.raises(RmtkError, match="MaxSAT weighs a finite set"):
        Learner(ExactPTP(None), encoder=MaxSatEncoder()).fit(t)
    with pytest.raises(RmtkError, match="needs the expert as a task"):
        Learner(ExactPTP(None)).fit(t.mdp)
    with pytest.raises(RmtkError, match="cannot be built"):
        ExactPTP(None).build(t, None)

    @attrs.frozen
    class Ignores:
        def encode(self, problem, n):
            return Enc().encode(problem, n)

        def search(self, problem, limits):
            from rmtk.sat.search import search

            return search(self.encode, problem, limits)

    with pytest.raises(RmtkError, match="does not search lazily"):
        Learner(ExactPTP(None), encoder=Ignores()).fit(t)


def test_fillings_agree_with_brute_force():
    """Some filling of the free transitions is consistent: one SAT query == every filling tried."""
    agree = interesting = 0
    for seed in range(80):
        for mode, kind in FAMILIES:
            inst = random_instance(seed, mode, kind)
            t = inst.task
            true_du = t.machine.delta_u[:, t.letter_of_proposition]
            table = inst.source.class_table(t)
            ns = mode == "non-stuttering"
            fill = Fillings(t.mdp, true_du, table, true_initial=t.machine.initial, non_stuttering=ns)
            for depth in (1, 2):
                r = inst.learner(depth).fit(t)
                for sol in r.solutions:
                    brute = any(
                        consistency(t.mdp, true_du, table, du, true_initial=t.machine.initial).consistent
                        for du in completions(sol.delta_u, sol.used, ns)
                    )
                    assert fill(sol.delta_u, sol.used) == brute, (seed, mode, kind, depth)
                    loops = consistency(t.mdp, true_du, table, sol.delta_u, true_initial=t.machine.initial)
                    interesting += brute and not loops.consistent
                    agree += 1
            fill.close()
    assert agree > 500 and interesting > 0  # cases where the self-loop filling is not the consistent one


def test_bounded_product_and_witness_words():
    t = dsl.load_model("patrol").tasks["patrol"]
    m = t.machine.delta_u[:, t.letter_of_proposition]
    full = sync_product(t.mdp, m, m)
    cut = sync_product(t.mdp, m, m, max_depth=2)
    assert full.complete and not cut.complete and cut.depth.max() == 2 and cut.size < full.size
    wrong = m.copy()
    wrong[2, 0] = 0  # u2 -A-> u0
    w = distinguish(t.mdp, m, wrong)
    assert (w.merged_by, w.split_by) == ("machine 2", "machine 1")
    machine = t.machine
    assert machine.final(w.word1) != machine.final(w.word2)
    assert t.mdp.label(w.state) == w.word1[-1] == w.word2[-1]
    assert distinguish(t.mdp, m, m) is None
    assert np.array_equal(sync_product(t.mdp, m, wrong).codes[:3], full.codes[:3])


def test_stacked_verdicts_equal_one_search_per_machine():
    from rmtk.equivalence import consistency_many

    compared = 0
    for seed in range(40):
        for mode, kind in FAMILIES:
            inst = random_instance(seed, mode, kind)
            t = inst.task
            r = inst.learner(1).fit(t)
            true_du = t.machine.delta_u[:, t.letter_of_proposition]
            table = inst.source.class_table(t)
            deltas = [m.delta_u for m in r.machines]
            one = [consistency(t.mdp, true_du, table, d, true_initial=t.machine.initial) for d in deltas]
            assert consistency_many(t.mdp, true_du, table, deltas, true_initial=t.machine.initial) == one
            compared += len(deltas)
    assert compared > 100
