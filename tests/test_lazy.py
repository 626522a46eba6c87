"""Counterexample-guided learning: lazy negatives give exactly the machines and counts of the
full encoding; every-depth learning gives machines consistent at every depth; the exact check
of "some filling is consistent" agrees with brute force."""

from __future__ import annotations

import itertools

import attrs
import numpy as np
import pytest
from test_theorem import FAMILIES, completions, random_instance

from rmtk import EmpiricalPTP, ExactPTP, LabeledMDP, Learner, MaxSatEncoder, RewardMachine, SatEncoder, Task, dsl
from rmtk.errors import RmtkError
from rmtk.machine.equivalence import Fillings, consistency, distinguish, sync_product
from rmtk.product.simulate import simulate
from rmtk.ptp.exact import NodePolicyTable
from rmtk.sat.encoders import SatEncoder as Enc

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
    from rmtk.machine.equivalence import consistency_many

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


# ---------------------------------------------------------------------- clique pins
def test_clique_pins_keep_one_numbering_per_renaming_class():
    """n words in pairwise different nodes are a permutation of the nodes; the pins keep
    exactly one permutation per class of renamings of the nodes other than u_I (the word in
    u_I decides it): n of the n! permutations, one per choice of the word in u_I."""
    from pysat.solvers import Solver

    from rmtk.sat.encoding import clique_pins

    for n in (2, 3, 4, 5):
        x = np.arange(1, n * n + 1).reshape(n, n)  # x[c, i]: word c ends in node i
        kept = []
        with Solver(bootstrap_with=clique_pins(x)) as solver:
            for perm in itertools.permutations(range(n)):
                lits = [int(x[c, perm[c]]) for c in range(n)]
                lits += [-int(x[c, i]) for c in range(n) for i in range(n) if i != perm[c]]
                if solver.solve(assumptions=lits):
                    kept.append(perm)
        assert len(kept) == n
        # classes of renamings fixing node 0: the word in node 0 and nothing else
        assert sorted(p.index(0) for p in kept) == list(range(n))


def _random_task(seed: int):
    """A seeded random task: 6 states, 2 actions, 3 letters, a non-stuttering machine of 3 or
    4 nodes, a random stochastic policy per node (so that most states hold several classes)."""
    rng = np.random.default_rng([seed, 77])
    S, A, K = 6, 2, 3
    P = np.zeros((A, S, S))
    for a in range(A):
        for s in range(S):
            succ = rng.choice(S, size=2, replace=False)
            P[a, s, succ] = rng.dirichlet(np.ones(2))
    labels = np.r_[np.arange(K), rng.integers(K, size=S - K)]
    mdp = LabeledMDP.from_dense(P, labels, [f"p{k}" for k in range(K)], np.full(S, 1 / S), gamma=0.9)
    n = int(rng.choice([3, 4]))
    while True:
        m = RewardMachine([f"q{i}" for i in range(n)], mdp.propositions, rng.integers(n, size=(n, K)), np.zeros((n, K)))
        if m.is_non_stuttering():
            break
    return Task(mdp, m, lam=1.0, max_nodes=n), NodePolicyTable(rng.dirichlet(np.ones(A), size=(n, S)))


def test_pinned_lazy_search_gives_the_machines_of_bfs_symmetry_breaking():
    """At a size the oracle's clique fills, the lazy search numbers the nodes by pinning the
    clique instead of breadth-first: the same machines, raw counts and completions."""
    import functools

    from rmtk.limits import SearchLimits
    from rmtk.ptp.tree import Trie
    from rmtk.sat.encoding import Problem
    from rmtk.sat.lazy import lazy_search

    pinned_runs = 0
    for seed in range(40):
        task, source = _random_task(seed)
        oracle = ExactPTP(None, source=source).oracle(task)
        problem = Problem(Trie.root(True), task.mdp.n_propositions, oracle=oracle)
        enc = Enc()
        limits = SearchLimits(max_nodes=task.max_nodes, min_nodes=oracle.lower_bound())
        bfs = lazy_search(enc.structure, problem, limits)
        pinned = lazy_search(
            enc.structure, problem, limits, pinned_structure=functools.partial(enc.structure, symmetry_breaking=False)
        )
        assert (pinned.n_nodes, pinned.complete, pinned.tried) == (bfs.n_nodes, bfs.complete, bfs.tried), seed
        assert key(pinned) == key(bfs), seed
        pinned_runs += len(oracle.clique()) == bfs.n_nodes
    assert pinned_runs >= 10  # the pins were used, not only the breadth-first numbering
