"""Learning from exact prefix tree policies: the paper's four tabular tasks, the verified
negative-example counts, and the encoding's pieces checked against brute force."""

import itertools
from pathlib import Path

import numpy as np
import pytest
from pysat.solvers import Solver

from rmtk import RewardMachine, dsl, isomorphic
from rmtk.cli.main import main
from rmtk.learner.pipeline import DistinctPerNode, ExactPTP, Learner, NodePolicyTable, SoftOptimal
from rmtk.machine.equivalence import consistency
from rmtk.negatives.miners import policy_classes
from rmtk.ptp.tree import build_prefix_tree
from rmtk.sat.encoders import MaxSatEncoder, SatEncoder
from rmtk.sat.encoding import (
    Problem,
    VarPool,
    decode_transitions,
    determinism,
    full_specification,
    symmetry_breaking_bfs,
)
from rmtk.sat.search import count_completions

MODELS = Path(__file__).resolve().parents[1] / "models"


def task(name):
    return dsl.load(MODELS / f"{name}.rm").tasks[name]


@pytest.fixture(scope="module")
def patrol():
    return task("patrol")


# ------------------------------------------------------------------ prefix tree and counts
@pytest.mark.parametrize("depth,per_state,distinct", [(4, 67, 42), (5, 320, 208), (6, 1386, 891)])
def test_patrol_negative_example_counts(patrol, depth, per_state, distinct):
    """Verified counts of docs/benchmarks/02-conventions.md, section 2.5 (one distinct policy per
    node, compressed words)."""
    tree = build_prefix_tree(patrol.mdp, depth)
    classes = policy_classes(DistinctPerNode().prefix_tree_policy(patrol, tree))
    assert classes.per_state_pairs() == per_state
    assert len(classes.distinct_pairs()) == distinct


def test_patrol_uncompressed_count_matches_paper(patrol):
    tree = build_prefix_tree(patrol.mdp, 6, compress=False)
    classes = policy_classes(DistinctPerNode().prefix_tree_policy(patrol, tree))
    assert classes.per_state_pairs() == 30573  # the paper's |E-| without non-stuttering


def test_soft_optimal_policy_separates_patrol_nodes_like_the_paper(patrol):
    """At depth 6 the real MaxEnt policy gives exactly the classes of 'one policy per node'."""
    tree = build_prefix_tree(patrol.mdp, 6)
    soft = policy_classes(SoftOptimal().prefix_tree_policy(patrol, tree))
    distinct = policy_classes(DistinctPerNode().prefix_tree_policy(patrol, tree))
    joint = set(zip(soft.pair_class.tolist(), distinct.pair_class.tolist()))
    assert len(joint) == soft.n_classes == distinct.n_classes  # the same partition


def test_prefix_tree_against_brute_force(patrol):
    """Every (compressed word, state) pair from explicit enumeration of state sequences."""
    mdp, depth = patrol.mdp, 4
    succ = mdp.successor_matrix().toarray()
    found = set()
    seqs = [[s] for s in mdp.start_states]
    for _ in range(depth):
        for seq in seqs:
            word = [mdp.labels[s] for s in seq]
            comp = tuple(w for i, w in enumerate(word) if i == 0 or w != word[i - 1])
            found.add((comp, seq[-1]))
        seqs = [seq + [t] for seq in seqs for t in np.flatnonzero(succ[seq[-1]])]
    tree = build_prefix_tree(mdp, depth)
    got = {(tuple(tree.trie.word(p)), s) for p, s in zip(tree.pair_node, tree.pair_state)}
    assert got == found


def test_trie_run_matches_machine_run(patrol):
    tree = build_prefix_tree(patrol.mdp, 5)
    nodes = tree.trie.run(patrol.machine.delta_u, 0, patrol.letter_of_proposition)
    for p in range(1, tree.trie.n_nodes, 7):
        word = [patrol.mdp.propositions[k] for k in tree.trie.word(p)]
        assert nodes[p] == patrol.machine.final(word)


# ------------------------------------------------------------------ the four tabular tasks
def test_patrol_depth6_learns_the_true_machine(patrol):
    for compress in (True, False):
        r = Learner(ExactPTP(6, compress=compress), encoder=SatEncoder(non_stuttering=compress), max_nodes=4).fit(
            patrol
        )
        assert r.n_nodes == 4 and r.raw_count == 6 and r.distinct_count == 1
        assert r.isomorphic_to_truth() == (True,)
        assert r.verdicts[0].consistent
        assert r.unconstrained(0) == []
        assert [n for n, sat in r.search.tried] == [3, 4] and r.search.tried[0][1] is False


def test_patrol_hallway_depth9():
    r = Learner(ExactPTP(9), max_nodes=4).fit(task("patrol_hallway"))
    assert (r.n_nodes, r.raw_count, r.distinct_count) == (4, 6, 1)
    assert r.isomorphic_to_truth() == (True,) and r.verdicts[0].consistent


def test_stack_depth10():
    r = Learner(ExactPTP(10), max_nodes=3).fit(task("stack"))
    assert (r.n_nodes, r.raw_count, r.distinct_count) == (3, 2, 1)
    assert r.isomorphic_to_truth() == (True,) and r.verdicts[0].consistent


def test_stack_avoid_depth8_minimal_three_node_machine():
    t = task("stack_avoid")
    r = Learner(ExactPTP(8), max_nodes=3).fit(t)
    assert (r.n_nodes, r.raw_count, r.distinct_count) == (3, 2, 1)
    expected = RewardMachine.from_transitions(
        {("u0", "A"): "u1", ("u0", "D"): "u2", ("u1", "B"): "u2", ("u1", "D"): "u2"},
        ["A", "B", "D", "I"],
        nodes=["u0", "u1", "u2"],
    )
    assert isomorphic(r.machines[0], expected, rewards=False)
    assert r.isomorphic_to_truth() == (False,)  # smaller than the truth ...
    assert r.verdicts[0].consistent  # ... yet policy-equivalent at every depth


def test_stack_avoid_four_nodes_many_solutions_with_unconstrained_transitions():
    t = task("stack_avoid")
    r = Learner(ExactPTP(8), max_nodes=4, nodes=4).fit(t)
    assert r.n_nodes == 4 and r.distinct_count == 65
    assert r.raw_count == 1344 > 1000  # the paper: "more than 1000 solutions"
    assert all(v.consistent for v in r.verdicts)  # depth 8 leaves them all policy-equivalent
    assert any(r.unconstrained(i) for i in range(r.distinct_count))
    # the raw count equals a brute-force enumeration of full assignments (no symmetry breaking)
    tree = build_prefix_tree(t.mdp, 8)
    classes = policy_classes(SoftOptimal().prefix_tree_policy(t, tree))
    formula = SatEncoder(symmetry_breaking=False).encode(Problem(tree.trie, 4, classes), 4)
    pool, clauses = formula.pool, formula.hard
    grid = pool.t_grid().ravel()
    count = 0
    with Solver(name="cadical153", bootstrap_with=clauses) as s:
        while s.solve():
            model = np.array(s.get_model())
            s.add_clause([-int(v) for v in grid[model[grid - 1] > 0]])
            count += 1
    assert count == r.raw_count


def test_symmetry_breaking_does_not_change_the_answer():
    t = task("stack_avoid")
    a = Learner(ExactPTP(8), nodes=4, max_nodes=4).fit(t)
    b = Learner(ExactPTP(8), nodes=4, max_nodes=4, encoder=SatEncoder(symmetry_breaking=False)).fit(t)
    assert (a.distinct_count, a.raw_count) == (b.distinct_count, b.raw_count)
    key = lambda r: sorted(m.delta_u.tobytes() for m in r.machines)  # noqa: E731
    assert key(a) == key(b)  # both in canonical numbering


def test_pairwise_negatives_agree_with_classes(patrol):
    a = Learner(ExactPTP(5), max_nodes=4).fit(patrol)
    b = Learner(ExactPTP(5), max_nodes=4, encoder=SatEncoder(negatives="pairs")).fit(patrol)
    assert (a.n_nodes, a.raw_count, a.distinct_count) == (b.n_nodes, b.raw_count, b.distinct_count)
    assert np.array_equal(a.machines[0].delta_u, b.machines[0].delta_u)


def test_shallow_depth_gives_several_machines_some_inconsistent(patrol):
    r = Learner(ExactPTP(3), max_nodes=4).fit(patrol)
    assert r.distinct_count > 1
    assert not all(v.consistent for v in r.verdicts)
    bad = next(v for v in r.verdicts if not v.consistent)
    w1, w2, state = bad.witness
    assert w1 and w2 and state in patrol.mdp.states


def test_no_solution_is_reported(patrol):
    r = Learner(ExactPTP(6), max_nodes=2).fit(patrol)
    assert r.n_nodes is None and r.machines == ()
    assert "no machine with 2 to 2 nodes" in r.search.message or "at most 2" in r.search.message


def test_max_solutions_and_time_limit():
    t = task("stack_avoid")
    r = Learner(ExactPTP(8), nodes=4, max_nodes=4, max_solutions=3).fit(t)
    assert r.distinct_count == 3 and not r.search.complete
    r = Learner(ExactPTP(8), nodes=4, max_nodes=4, time_limit=1e-9).fit(t)
    assert not r.search.complete


def test_node_policy_table_suboptimal_policy():
    """Any per-node stochastic policy identifies the machine (paper appendix B)."""
    t = task("stack")
    rng = np.random.default_rng(0)
    table = rng.dirichlet(np.ones(t.mdp.n_actions), size=(t.machine.n_nodes, t.mdp.n_states))
    r = Learner(ExactPTP(10, source=NodePolicyTable(table)), max_nodes=3).fit(t)
    assert r.isomorphic_to_truth() == (True,) and r.verdicts[0].consistent


# ------------------------------------------------------------------ encoding pieces
def test_var_pool_is_a_bijection():
    pool = VarPool(3, 2, 5, 4)
    ids = []
    for i, k, j in itertools.product(range(3), range(2), range(3)):
        v = int(pool.t(i, k, j))
        assert pool.decode(v) == ("t", i, k, j)
        ids.append(v)
    for p, i in itertools.product(range(5), range(3)):
        v = int(pool.x(p, i))
        assert pool.decode(v) == ("x", p, i)
        ids.append(v)
    for c, i in itertools.product(range(4), range(3)):
        v = int(pool.y(c, i))
        assert pool.decode(v) == ("y", c, i)
        ids.append(v)
    assert sorted(ids) == list(range(1, pool.packed_top + 1))
    assert pool.new("aux") == pool.packed_top + 1 and pool.decode(pool.packed_top + 1) == "aux"


def _machines_up_to_renaming(n, K, all_reachable):
    classes = set()
    for flat in itertools.product(range(n), repeat=n * K):
        du = np.array(flat).reshape(n, K)
        m = RewardMachine(nodes=range(n), alphabet=range(K), delta_u=du, delta_r=np.zeros((n, K)))
        if all_reachable and len(m.reachable()) < n:
            continue
        classes.add(
            min(
                tuple(np.array([0] + list(perm))[du[np.argsort([0] + list(perm))]].ravel())
                for perm in itertools.permutations(range(1, n))
            )
        )
    return len(classes)


@pytest.mark.parametrize("n,K", [(2, 2), (3, 2), (3, 1)])
def test_symmetry_breaking_counts_machines_up_to_renaming(n, K):
    pool = VarPool(n, K, 1, 0)
    clauses = determinism(pool) + full_specification(pool) + symmetry_breaking_bfs(pool)
    clauses.append([pool.new(("r", n - 1))])  # all nodes reached: one numbering per machine
    count = 0
    with Solver(name="cadical153", bootstrap_with=clauses) as s:
        while s.solve():
            du = decode_transitions(s.get_model(), pool)
            s.add_clause([-int(pool.t(i, k, du[i, k])) for i in range(n) for k in range(K)])
            count += 1
    assert count == _machines_up_to_renaming(n, K, all_reachable=True)


def test_count_completions_brute_force():
    rng = np.random.default_rng(1)
    for _ in range(20):
        n, K = 3, 2
        du = rng.integers(0, n, size=(n, K))
        used = rng.random((n, K)) < 0.4
        # make the used part itself idempotent where it can be
        total, determined = count_completions(du, used, non_stuttering=True)
        brute = 0
        free = np.argwhere(~used)
        values = []
        for fill in itertools.product(range(n), repeat=len(free)):
            f = du.copy()
            for (i, k), v in zip(free, fill):
                f[i, k] = v
            if all(f[f[i, k], k] == f[i, k] for i in range(n) for k in range(K)):
                brute += 1
                values.append(f.copy())
        assert total == brute
        if values:
            same = np.all(np.stack(values) == values[0], axis=0)
            assert np.array_equal(determined, used | same)
        assert count_completions(du, used, non_stuttering=False)[0] == n ** int((~used).sum())


def test_consistency_verdict_witness(patrol):
    table = np.tile(np.arange(4), (patrol.mdp.n_states, 1))
    assert consistency(patrol.mdp, patrol.machine.delta_u, table, patrol.machine.delta_u).consistent
    wrong = patrol.machine.delta_u.copy()
    wrong[2, 0] = 0  # u2 -A-> u0
    v = consistency(patrol.mdp, patrol.machine.delta_u, table, wrong)
    assert not v.consistent
    w1, w2, s = v.witness
    m = patrol.machine
    assert m.final(w1) != m.final(w2)  # different true nodes ...
    learned = RewardMachine(nodes=range(4), alphabet="ABCD", delta_u=wrong, delta_r=np.zeros((4, 4)))
    assert learned.final(w1) == learned.final(w2)  # ... merged by the wrong machine
    assert patrol.mdp.label(s) == w1[-1] == w2[-1]


# ------------------------------------------------------------------ command line
def test_cli_learn_prints_loadable_rm_text(capsys):
    assert main(["learn", str(MODELS / "patrol.rm"), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "# solutions: 1 machine up to renaming, 6 raw assignments" in out
    assert "consistent at every depth" in out and "isomorphic to the true machine 'patrol'" in out
    learned = dsl.loads(out).machines["learned"]
    assert isomorphic(learned, task("patrol").machine, rewards=False)


def test_cli_learn_unsat_exit_code(capsys):
    assert main(["learn", str(MODELS / "patrol.rm"), "--max-nodes", "2", "-q"]) == 1
    assert "no solution" in capsys.readouterr().out


def test_cli_learn_writes_pictures(tmp_path, capsys):
    png = tmp_path / "m.png"
    assert main(["learn", str(MODELS / "stack.rm"), "-q", "--png", str(png), "--dot", str(tmp_path / "m.dot")]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and "digraph" in (tmp_path / "m.dot").read_text()
    assert main(["learn", str(MODELS / "stack.rm"), "-q", "--png", str(png)]) == 1
    assert "already exists" in capsys.readouterr().err


def test_cli_learn_rejects_bad_options(capsys):
    assert main(["learn", str(MODELS / "patrol.rm"), "--stuttering", "-q"]) == 2
    assert "non-stuttering" in capsys.readouterr().err


@pytest.mark.parametrize("name,depth,u", [("patrol", 6, 4), ("stack", 10, 3)])
def test_learned_machine_carries_the_true_rewards(name, depth, u):
    """Sparsest shaping representative of the recovered rewards = the (sparse) true rewards."""
    t = task(name)
    r = Learner(ExactPTP(depth), max_nodes=u).fit(t)
    fit = r.reward_fits[0]
    assert fit.residual < 1e-9 and fit.replan_error < 1e-6 and fit.identified_up_to_shaping
    assert isomorphic(r.machines[0], t.machine.with_alphabet_order(r.machines[0].alphabet), rewards=True)


def test_time_limit_with_cadical_and_maxsat():
    """A time limit keeps CaDiCaL (its calls run in slices of conflicts, the deadline checked
    between them), MaxSAT's RC2 too: its oracle calls run in slices as well (it used to switch to
    Glucose 4, whose whole calls pysat can interrupt, and say so)."""
    from rmtk.product.simulate import simulate

    t = task("stack_avoid")
    r = Learner(ExactPTP(8), nodes=4, max_nodes=4, time_limit=30.0).fit(t)
    assert r.search.complete and r.distinct_count == 65
    assert "instead of" not in r.search.message
    r = Learner(ExactPTP(8), nodes=4, max_nodes=4, time_limit=30.0, encoder=SatEncoder(solver="minisat22")).fit(t)
    assert r.distinct_count == 65 and "instead of" not in r.search.message
    demos = simulate(t, 1000, 20, seed=0)
    limited = Learner(nodes=3, max_nodes=3, encoder=MaxSatEncoder(), time_limit=30.0).fit_demonstrations(t, demos)
    plain = Learner(nodes=3, max_nodes=3, encoder=MaxSatEncoder()).fit_demonstrations(t, demos)
    assert "instead of" not in limited.search.message
    assert (limited.distinct_count, limited.raw_count) == (plain.distinct_count, plain.raw_count)
