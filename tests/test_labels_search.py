"""The pair search: on random tiny instances its smallest (n, k) and its pairs equal a brute
force over every labeling run through the label-given learner; every pair is policy-equivalent
at every depth; symmetry breaking keeps one pair of every renaming class; fixed to the truth it
is the label-given learner; the label-free check decides n as a brute force does; what a limit
leaves is reported, flagged."""

from __future__ import annotations

import numpy as np
import pytest
from label_instances import LabelWordOracle, brute_force, expert, labelings, learn, pair_key, random_task

from rmtk import ExactPTP, Learner, SatEncoder, dsl
from rmtk.labels import LabelLearner, SmallestPairs
from rmtk.labels.histories import StateHistoryPTP, state_machine, state_mdp, state_task
from rmtk.labels.pairs import LabelKnowledge, mdp_reachable
from rmtk.limits import SearchLimits
from rmtk.machine.equivalence import consistency
from rmtk.ptp.exact import NodePolicyTable
from rmtk.ptp.tree import Trie
from rmtk.sat.encoding import Problem


class Opaque:
    """An oracle's checks only (no product to encode, no quotient): the search is lazy."""

    depth = None

    def __init__(self, oracle):
        self.inner = oracle

    def check(self, du):
        return self.inner.check(du)

    def exercised(self, du):
        return self.inner.exercised(du)

    def lower_bound(self):
        return self.inner.lower_bound()


def search(task, table, how=None, lazy=False, **limits):
    """The pair search alone on ``task``'s exact expert at every depth (``lazy``: through an
    oracle that hides its kind)."""
    how = how or SmallestPairs()
    oracle = expert(task, table).oracle(state_task(task))
    oracle = Opaque(oracle) if lazy else oracle
    S = task.mdp.n_states
    lim = SearchLimits(max_nodes=3, min_nodes=oracle.lower_bound(), **limits)
    return how.search(Problem(Trie.root(True), S, oracle=oracle), S, mdp_reachable(task.mdp), LabelKnowledge(), lim)


@pytest.mark.parametrize("seed", range(8))
def test_smallest_pairs_equal_a_brute_force_over_every_labeling(seed):
    task, table = random_task(seed)
    res = learn(task, table, max_props=3)
    best, pairs = brute_force(task, table)
    reach = mdp_reachable(task.mdp)
    assert (res.n_nodes, res.n_props) == (best if best else (None, None))
    assert {pair_key(s.labels, s.delta_u, s.used, reach) for s in res.solutions} == pairs
    assert len(res.solutions) == len(pairs)  # one pair per renaming class
    assert all(v.consistent for v in res.verdicts)
    true_D = state_machine(task).delta_u
    classes = expert(task, table).expert_classes(state_task(task))
    for s in res.solutions:  # every pair reproduces the expert at every depth (independent check)
        assert consistency(
            state_mdp(task.mdp), true_D, classes, s.state_machine(), true_initial=task.machine.initial
        ).consistent
    for small_k in (1, 2, 4):  # the labeled formula asked first up to small_k propositions: the same pairs
        other = search(task, table, SmallestPairs(small_k=small_k))
        assert (other.n_nodes, other.n_props) == (res.n_nodes, res.n_props)
        assert {pair_key(s.labels, s.delta_u, s.used, reach) for s in other.solutions} == pairs
    smaller = res.truth_size > (res.n_nodes, res.n_props)
    assert smaller == (not any(v.equal for v in res.verdicts)) or not smaller


@pytest.mark.parametrize("seed", range(4))
def test_symmetry_breaking_keeps_one_pair_of_every_renaming_class(seed):
    task, table = random_task(seed + 20)
    reach = mdp_reachable(task.mdp)
    on, off = (search(task, table, SmallestPairs(symmetry_breaking=sb)) for sb in (True, False))
    assert (on.n_nodes, on.n_props) == (off.n_nodes, off.n_props)

    def key(r):
        return {pair_key(s.labels, s.delta_u, s.used, reach) for s in r.solutions}

    assert key(on) == key(off)
    assert all(s.models == 1 for s in on.solutions)
    assert sum(s.models for s in off.solutions) >= sum(s.models for s in on.solutions)


def _truth_known(task):
    reach = mdp_reachable(task.mdp)
    return {task.mdp.states[s]: task.mdp.propositions[task.mdp.labels[s]] for s in reach}


@pytest.mark.parametrize("name", ["patrol", "stack_avoid"])
def test_labels_fixed_to_the_truth_give_the_label_given_learner(name):
    task = dsl.load_model(name).tasks[name]
    given = Learner(ExactPTP(None), irl=None).fit(task)
    fixed = LabelLearner(known=_truth_known(task)).fit(task)
    assert fixed.n_nodes == given.n_nodes and len(fixed.solutions) == given.distinct_count
    reach = mdp_reachable(task.mdp)
    letter = [task.mdp.propositions.index(p) for p in fixed.propositions]
    labels = np.full(task.mdp.n_states, -1)
    labels[reach] = [fixed.propositions.index(task.mdp.propositions[task.mdp.labels[s]]) for s in reach]
    want = {pair_key(labels, s.delta_u[:, letter], s.used[:, letter], reach) for s in given.solutions}
    assert {pair_key(s.labels, s.delta_u, s.used, reach) for s in fixed.solutions} == want


@pytest.mark.parametrize("seed", range(4))
def test_labels_fixed_to_the_truth_on_random_instances(seed):
    task, table = random_task(seed + 40)
    given = Learner(expert(task, table), max_nodes=3, irl=None).fit(task)
    fixed = learn(task, table, known=_truth_known(task))
    assert fixed.n_nodes == given.n_nodes
    assert len(fixed.solutions) == given.distinct_count


def test_state_history_tree_full_and_lazy_agree():
    """A finite exact state-history tree encoded whole gives the pairs of the lazy search on it."""
    task, table = random_task(3)
    ptp = ExactPTP(4) if table is None else ExactPTP(4, source=NodePolicyTable(table))
    full = LabelLearner(ptp, search=SmallestPairs(negatives="classes"), max_nodes=3).fit(task)
    lazy = LabelLearner(ptp, max_nodes=3).fit(task)
    reach = mdp_reachable(task.mdp)

    def key(r):
        return {pair_key(s.labels, s.delta_u, s.used, reach) for s in r.solutions}

    assert (full.n_nodes, full.n_props) == (lazy.n_nodes, lazy.n_props) and key(full) == key(lazy)


@pytest.mark.parametrize("seed", range(6))
def test_every_depth_product_encoding_agrees_with_the_lazy_search(seed):
    """The exact expert at every depth is encoded on the product (no counterexamples); the same
    pairs come out of the counterexample-guided search against the same expert, read through
    an oracle that hides its kind."""
    task, table = random_task(seed + 60)
    oracle = expert(task, table).oracle(state_task(task))
    S, reach = task.mdp.n_states, mdp_reachable(task.mdp)
    lim = SearchLimits(max_nodes=3, min_nodes=oracle.lower_bound())
    out = [
        SmallestPairs().search(Problem(Trie.root(True), S, oracle=o), S, reach, LabelKnowledge(), lim)
        for o in (oracle, Opaque(oracle))
    ]
    assert out[0].counterexamples == 0
    assert (out[0].n_nodes, out[0].n_props) == (out[1].n_nodes, out[1].n_props)
    keys = [{pair_key(s.labels, s.delta_u, s.used, reach) for s in r.solutions} for r in out]
    assert keys[0] == keys[1]


@pytest.mark.parametrize("seed", range(10))
def test_label_free_check_decides_n_as_a_brute_force_over_every_labeling(seed):
    """The label-free check (identity assumed first, failed assumptions dropped) says that n
    nodes fit exactly when some labeling, with any number of propositions, has a machine of
    at most n nodes (the label-given learner run on every labeling); likewise with two states
    known to share a label, against the labelings that give them one."""
    from rmtk.labels.label_free import label_free_check

    task, table = random_task(seed + 40)
    reach = mdp_reachable(task.mdp)
    oracle = expert(task, table).oracle(state_task(task))
    S = task.mdp.n_states
    smallest = {}  # (shared?) -> fewest nodes over the labelings
    for k in range(1, len(reach) + 1):
        for combo in labelings(reach, k):
            labels = np.zeros(S, np.int64)
            labels[reach] = combo
            res = SatEncoder().search(
                Problem(Trie.root(True), k, oracle=LabelWordOracle(oracle, labels)), SearchLimits(max_nodes=3)
            )
            if res.n_nodes is not None:
                for shared in (False, True):
                    if not shared or combo[0] == combo[1]:
                        smallest[shared] = min(smallest.get(shared, 9), res.n_nodes)
    for shared in (False, True):
        groups = [tuple(reach[:2])] if shared else []
        for n in (1, 2, 3):
            out = label_free_check(oracle, n, S, reach, groups)
            assert out.decided == (smallest.get(shared, 9) <= n), (shared, n)
            if out.decided:
                assert not oracle.check(out.machine)
                assert not shared or (out.machine[:, reach[0]] == out.machine[:, reach[1]]).all()


def test_label_free_check_keeps_shared_labels_together():
    """States known to share a label get equal columns in the label-free check (what lets it
    decide the Office World patrol with "every plain cell is one proposition"); without the
    equalities, the solver is free to split them."""
    from pysat.solvers import Solver

    from rmtk.labels.encoding import equal_columns
    from rmtk.sat.encoding import VarPool, decode_transitions, determinism, full_specification

    pool = VarPool(3, 4, 1, 0)
    group = (0, 2, 3)
    base = determinism(pool) + full_specification(pool)
    split = [[int(pool.t(0, 0, 0))], [int(pool.t(0, 2, 1))]]  # 0 and 2 move node 0 differently
    with Solver(bootstrap_with=base + split) as sat:
        assert sat.solve()
    with Solver(bootstrap_with=base + split + equal_columns(pool, [group])) as sat:
        assert not sat.solve()
    with Solver(bootstrap_with=base + [[int(pool.t(1, 3, 2))]] + equal_columns(pool, [group])) as sat:
        assert sat.solve()
        D = decode_transitions(sat.get_model(), pool)
    assert (D[:, [0]] == D[:, list(group)]).all()  # one column for the whole group


def test_linear_bfs_numbering_keeps_the_machines_of_the_quadratic_one():
    """The breadth-first numbering with clauses linear in the letters admits exactly the
    numberings of :func:`rmtk.sat.encoding.symmetry_breaking_bfs` (every machine of 3 nodes over 3
    letters, enumerated under each)."""
    from pysat.solvers import Solver

    from rmtk.labels.encoding import bfs_numbering
    from rmtk.sat.encoding import VarPool, decode_transitions, determinism, full_specification, symmetry_breaking_bfs

    found = []
    for numbering in (symmetry_breaking_bfs, bfs_numbering):
        pool = VarPool(3, 3, 1, 0)
        machines = set()
        with Solver(bootstrap_with=determinism(pool) + full_specification(pool) + numbering(pool)) as sat:
            while sat.solve():
                du = decode_transitions(sat.get_model(), pool)
                machines.add(du.tobytes())
                sat.add_clause([-int(pool.t(i, k, du[i, k])) for i in range(3) for k in range(3)])
        found.append(machines)
    assert found[0] == found[1] and len(found[0]) > 100


def test_a_time_limit_in_the_enumeration_reports_the_bisection_pair(monkeypatch):
    """When the time runs out in the final enumeration (simulated), the pair reported is the
    smallest the bisection found (here 2 propositions, below the label-free check's 3; the
    expert through an opaque oracle, so that the check is the SAT one), one of the pairs of the
    complete search, flagged."""
    import rmtk.labels.search as ls

    task, table = random_task(53)
    reach = mdp_reachable(task.mdp)
    full = search(task, table, lazy=True)
    assert (full.n_nodes, full.n_props, full.complete) == (3, 2, True) and (3, 3, True) in full.tried
    real = ls._SizeSearch.pairs

    def no_time_to_enumerate(self, f, n, k, exactly, every):
        if every:
            return None, self._store(), False
        return real(self, f, n, k, exactly, every)

    monkeypatch.setattr(ls._SizeSearch, "pairs", no_time_to_enumerate)
    cut = search(task, table, lazy=True)
    assert (cut.n_nodes, cut.n_props, cut.complete, len(cut.solutions)) == (3, 2, False, 1)
    assert "one of those of the fewest sizes" in cut.message
    key = lambda x: pair_key(x.labels, x.delta_u, x.used, reach)  # noqa: E731
    assert key(cut.solutions[0]) in {key(x) for x in full.solutions}


def test_a_time_limit_after_the_label_free_check_reports_its_pair_flagged(monkeypatch):
    """When every labeled call runs out of time (simulated), the search still ends with the
    number of nodes the label-free check decided and the pair of the machine it found, flagged
    incomplete with what was not decided; that pair reproduces the expert, and its size is no
    smaller than the true smallest one (patrol: 4 nodes, 4 propositions)."""
    import rmtk.labels.search as ls

    task = dsl.load("models/patrol.rm").tasks["patrol"]
    oracle = StateHistoryPTP(ExactPTP(None)).state_oracle(task)
    reach = mdp_reachable(task.mdp)
    S = task.mdp.n_states
    problem = Problem(Trie.root(True), S, oracle=oracle)
    lim = SearchLimits(max_nodes=4, min_nodes=oracle.lower_bound())
    full = SmallestPairs().search(problem, S, reach, LabelKnowledge(), lim)
    assert (full.n_nodes, full.n_props, full.complete) == (4, 4, True)
    monkeypatch.setattr(ls._SizeSearch, "pairs", lambda self, *a: (None, self._store(), False))  # labeled calls
    cut = SmallestPairs().search(problem, S, reach, LabelKnowledge(), lim)
    assert not cut.complete and cut.n_nodes == 4 and len(cut.solutions) == 1
    assert cut.n_props >= 4 and "4 nodes is the fewest" in cut.message
    assert not oracle.check(cut.solutions[0].state_machine())
    assert {(n, k) for n, k in cut.ruled_out} == {(n, k) for n, k in full.ruled_out if n < 4}


@pytest.mark.parametrize("seed", range(12))
def test_the_expert_s_quotient_machine_is_a_consistent_machine_over_states(seed):
    """The expert's own machine with behaviourally equal nodes merged passes the every-depth
    oracle, has no more nodes than the truth nor fewer than the lower bound, and starts in node
    0; the search at its size then lists the same pairs as through an opaque oracle."""
    from rmtk.labels.label_free import quotient_machine

    task, table = random_task(seed + 80)
    oracle = expert(task, table).oracle(state_task(task))
    q = quotient_machine(oracle)
    assert oracle.lower_bound() <= q.shape[0] <= task.machine.n_nodes
    assert q.shape[1] == task.mdp.n_states and not oracle.check(q)
    assert quotient_machine(Opaque(oracle)) is None
    reach = mdp_reachable(task.mdp)
    keys = [
        {pair_key(s.labels, s.delta_u, s.used, reach) for s in search(task, table, lazy=lz).solutions} for lz in (0, 1)
    ]
    assert keys[0] == keys[1]
