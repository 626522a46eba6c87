"""Learning the labels with the machine: fixed to the truth it is the label-given learner; on
random tiny instances its smallest (n, k) and its pairs equal a brute force over every
labeling run through the label-given learner; every pair is policy-equivalent at every depth;
symmetry breaking keeps one pair of every renaming class; bad input gets clear errors."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from rmtk import ExactPTP, Learner, RewardMachine, SatEncoder, Task, dsl
from rmtk.equivalence import consistency
from rmtk.errors import RmtkError
from rmtk.exact import NodePolicyTable
from rmtk.labels.histories import state_machine, state_mdp, state_task
from rmtk.labels.learner import LabelingEncoder, truth_pair
from rmtk.labels.search import label_search, mdp_reachable
from rmtk.limits import SearchLimits
from rmtk.mdp import LabeledMDP
from rmtk.ptp import Trie
from rmtk.sat.encoding import Problem
from rmtk.sat.lazy import Counterexample
from rmtk.sat.search import canonical_partial


def pair_key(labels, delta_u, used, reach):
    """Independent key of a (labeling, machine) pair up to renaming of propositions (every
    permutation tried) and of nodes (breadth-first numbering of the used part)."""
    k = delta_u.shape[1]
    best = None
    for perm in itertools.permutations(range(k)):
        perm = np.array(perm)
        inv = np.argsort(perm)
        lab = tuple(int(perm[labels[s]]) for s in reach)
        cand = (lab, canonical_partial(delta_u[:, inv], used[:, inv])[0])
        best = cand if best is None or cand < best else best
    return best


def random_task(seed: int, policy: str = "table") -> Task:
    rng = np.random.default_rng(seed)
    S, A = int(rng.integers(3, 6)), 2
    K, n = int(rng.integers(2, 4)), int(rng.integers(2, 4))
    P = rng.random((A, S, S)) * (rng.random((A, S, S)) < 0.5)
    P[:, np.arange(S), rng.integers(S, size=S)] += 1.0
    P /= P.sum(axis=2, keepdims=True)
    initial = np.zeros(S)
    initial[rng.choice(S, size=2, replace=False)] = 0.5
    props = [f"p{i}" for i in range(K)]
    labels = np.r_[np.arange(K), rng.integers(K, size=S - K)] if S >= K else rng.integers(K, size=S)
    mdp = LabeledMDP.from_dense(P, rng.permutation(labels), props, initial, gamma=0.9)
    while True:
        m = RewardMachine([f"q{i}" for i in range(n)], props, rng.integers(n, size=(n, K)), rng.normal(size=(n, K)))
        if m.is_non_stuttering():
            break
    return Task(mdp, m, lam=1.0, max_nodes=3), rng.dirichlet(np.ones(A), size=(n, S)) if policy == "table" else None


def expert(task, table):
    return ExactPTP(None) if table is None else ExactPTP(None, source=NodePolicyTable(table))


class LabelWordOracle:
    """The expert's state-history oracle seen through a fixed labeling: candidates are machines
    over the labels; counterexamples are turned into compressed label words. This lets the
    label-given learner (SatEncoder's lazy search) run on any labeling."""

    def __init__(self, state_oracle, labels):
        self.inner, self.labels = state_oracle, np.asarray(labels)

    def _word(self, states):
        word = [int(self.labels[s]) for s in states]
        return tuple(k for i, k in enumerate(word) if i == 0 or k != word[i - 1])

    def check(self, du):
        return [
            Counterexample(self._word(c.word1), self._word(c.word2), c.state, c.class1, c.class2, c.labels)
            for c in self.inner.check(du[:, self.labels])
        ]

    def exercised(self, du):
        used_s = self.inner.exercised(du[:, self.labels])
        used = np.zeros(du.shape, bool)
        ii, ss = np.nonzero(used_s)
        used[ii, self.labels[ss]] = True
        return used

    def lower_bound(self):
        return self.inner.lower_bound()


def labelings(reach, k):
    """Every labeling of ``reach`` onto exactly k propositions, one per renaming class
    (restricted growth strings)."""
    for combo in itertools.product(range(k), repeat=len(reach)):
        seen = -1
        ok = True
        for p in combo:
            if p > seen + 1:
                ok = False
                break
            seen = max(seen, p)
        if ok and seen == k - 1:
            yield combo


def brute_force(task, table, max_nodes=3, max_props=3):
    """Smallest (n, k) and the pairs there, over every labeling (label-given learner each)."""
    S = task.mdp.n_states
    reach = mdp_reachable(task.mdp)
    state_oracle = expert(task, table).oracle(state_task(task))
    per_size: dict = {}
    for k in range(1, min(max_props, len(reach)) + 1):
        for combo in labelings(reach, k):
            labels = np.zeros(S, np.int64)
            labels[reach] = combo
            oracle = LabelWordOracle(state_oracle, labels)
            res = SatEncoder().search(Problem(Trie.root(True), k, oracle=oracle), SearchLimits(max_nodes=max_nodes))
            if res.n_nodes is None:
                continue
            keys = {pair_key(labels, s.delta_u, s.used, reach) for s in res.solutions}
            per_size.setdefault((res.n_nodes, k), set()).update(keys)
    if not per_size:
        return None, set()
    best = min(per_size)
    return best, per_size[best]


def learn(task, table, **enc):
    return Learner(expert(task, table), encoder=LabelingEncoder(**enc), max_nodes=3, irl=None).fit(task)


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
    st = state_task(task)
    oracle = expert(task, table).oracle(st)
    for small_k in (1, 2, 4):  # the labeled encoding asked first up to small_k propositions: the same pairs
        other = label_search(
            Problem(Trie.root(True), task.mdp.n_states, oracle=oracle),
            n_states=task.mdp.n_states,
            reach=reach,
            max_nodes=3,
            min_nodes=oracle.lower_bound(),
            max_props=3,
            small_k=small_k,
            freedom=False,
        )
        assert (other.n_nodes, other.n_props) == (res.n_nodes, res.n_props)
        assert {pair_key(s.labels, s.delta_u, s.used, reach) for s in other.solutions} == pairs
    smaller = res.truth_size > (res.n_nodes, res.n_props)
    assert smaller == (not any(v.equal for v in res.verdicts)) or not smaller


@pytest.mark.parametrize("seed", range(4))
def test_symmetry_breaking_keeps_one_pair_of_every_renaming_class(seed):
    task, table = random_task(seed + 20)
    st = state_task(task)
    oracle = expert(task, table).oracle(st)
    reach = mdp_reachable(task.mdp)
    runs = {}
    for sb in (True, False):
        r = label_search(
            Problem(Trie.root(True), task.mdp.n_states, oracle=oracle),
            n_states=task.mdp.n_states,
            reach=reach,
            max_nodes=3,
            min_nodes=oracle.lower_bound(),
            max_props=3,
            symmetry_breaking=sb,
            freedom=False,
        )
        runs[sb] = r
    on, off = runs[True], runs[False]
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
    fixed = Learner(ExactPTP(None), encoder=LabelingEncoder(known=_truth_known(task)), irl=None).fit(task)
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


@pytest.mark.parametrize("name,nodes,props,truth", [("patrol", 4, 4, (4, 4)), ("stack_avoid", 3, 4, (4, 4))])
def test_shipped_tasks_learn_their_truth_from_raw_states(name, nodes, props, truth):
    """stack-avoid's truth has 4 nodes, but u2 and u3 share the uniform policy: the smallest
    pair merges them, and is not equal to the truth (it is policy-equivalent)."""
    task = dsl.load_model(name).tasks[name]
    res = Learner(ExactPTP(None), encoder=LabelingEncoder(), irl=None).fit(task)
    assert (res.n_nodes, res.n_props) == (nodes, props) and res.truth_size == truth
    assert [(v.consistent, v.equal, v.merges_truth) for v in res.verdicts] == [(True, truth == (nodes, props), True)]
    assert res.truth_is_smaller_or_equal == (truth == (nodes, props))
    assert (nodes - 1, props) in res.search.ruled_out or res.search.lower_bound == nodes
    assert (nodes, props - 1) in res.search.ruled_out
    assert res.free(0) == []  # every cell's label is pinned by the expert
    labels, _, _ = truth_pair(task, mdp_reachable(task.mdp))
    assert len(set(zip(labels.tolist(), res.solutions[0].labels.tolist()))) == props  # same partition


def test_partial_knowledge_and_given_k():
    task = dsl.load_model("patrol").tasks["patrol"]
    known = {"r0c0": "D", "r2c0": "A"}
    res = Learner(ExactPTP(None), encoder=LabelingEncoder(known=known, shared=[("r0c2", "r1c3")]), irl=None).fit(task)
    assert res.propositions[:2] == ("D", "A") and res.labeling(0)["r0c0"] == "D"
    assert res.labeling(0)["r3c3"] == res.labeling(0)["r2c2"] and res.verdicts[0].equal
    bigger = Learner(ExactPTP(None), encoder=LabelingEncoder(props=5), irl=None).fit(task)
    assert bigger.n_props == 5 and bigger.search.tried[-1] == (4, 5, True)
    assert all(v.consistent and not v.equal for v in bigger.verdicts)
    wrong = Learner(ExactPTP(None), encoder=LabelingEncoder(known={"r0c0": "D", "r2c0": "D"}), irl=None).fit(task)
    assert wrong.n_nodes is None or (wrong.n_nodes, wrong.n_props) > (4, 4)


def test_bad_input_is_a_clear_error():
    task = dsl.load_model("patrol").tasks["patrol"]
    with pytest.raises(RmtkError, match="at least 1"):
        LabelingEncoder(props=0)
    with pytest.raises(RmtkError, match="contradicting partial labels"):
        Learner(
            ExactPTP(None),
            encoder=LabelingEncoder(known={"r0c0": "A", "r0c1": "B"}, shared=[("r0c0", "r0c1")]),
            irl=None,
        ).fit(task)
    with pytest.raises(RmtkError, match="not a state"):
        Learner(ExactPTP(None), encoder=LabelingEncoder(known={"nowhere": "A"}), irl=None).fit(task)
    with pytest.raises(RmtkError, match="more than props"):
        Learner(ExactPTP(None), encoder=LabelingEncoder(props=1, known={"r0c0": "A", "r2c0": "B"}), irl=None).fit(task)


def test_bad_data_and_mismatched_strategies():
    from rmtk.data.demonstrations import Demonstrations
    from rmtk.empirical import EmpiricalPTP
    from rmtk.errors import DataError
    from rmtk.labels.histories import StateHistoryPTP

    task = dsl.load_model("patrol").tasks["patrol"]
    demos = Demonstrations.from_lists([[(0, 0), (3, 1)], [(2, 0), (20, 1)]])
    with pytest.raises(DataError, match="trajectory 1, step 1: state index 20 .* 16 states"):
        Learner(EmpiricalPTP(demos), encoder=LabelingEncoder(), irl=None).fit(task)
    with pytest.raises(RmtkError, match="state histories, not label words"):
        Learner(StateHistoryPTP(ExactPTP(None)))

    class LabelWords:  # a PTP that ignores the state view: label words
        def build(self, target, progress):
            return ExactPTP(3).build(task, progress)

    with pytest.raises(RmtkError, match="keyed by label words"):
        Learner(LabelWords(), encoder=LabelingEncoder(), irl=None).fit(task)


def test_state_history_tree_full_and_lazy_agree():
    """A finite exact state-history tree encoded whole gives the pairs of the lazy search on it."""
    task, table = random_task(3)
    ptp = ExactPTP(4) if table is None else ExactPTP(4, source=NodePolicyTable(table))
    full = Learner(ptp, encoder=LabelingEncoder(negatives="classes"), max_nodes=3, irl=None).fit(task)
    lazy = Learner(ptp, encoder=LabelingEncoder(), max_nodes=3, irl=None).fit(task)
    reach = mdp_reachable(task.mdp)

    def key(r):
        return {pair_key(s.labels, s.delta_u, s.used, reach) for s in r.solutions}

    assert (full.n_nodes, full.n_props) == (lazy.n_nodes, lazy.n_props) and key(full) == key(lazy)


def test_demonstrations_without_labels():
    """From demonstrations, histories are state sequences: the learned pairs reproduce the
    empirical negatives (checked against the data's own oracle) and the report counts them."""
    from rmtk.empirical import EmpiricalPTP
    from rmtk.simulate import simulate

    task, table = random_task(7)
    table = np.where(table > 0.5, 0.95, 0.05)  # a decisive expert: one preferred action per (node, state)
    demos = simulate(task, 3000, 6, seed=3, policy=table.transpose(1, 0, 2))
    res = Learner(EmpiricalPTP(demos), encoder=LabelingEncoder(), max_nodes=3, irl=None).fit(task)
    from rmtk.labels.histories import StateHistoryPTP
    from rmtk.negatives import ConfidenceMiner
    from rmtk.progress import Progress
    from rmtk.sat.lazy import TrieOracle

    built = StateHistoryPTP(EmpiricalPTP(demos)).build(task, Progress())
    negatives = ConfidenceMiner().mine(built)
    assert len(negatives) > 0  # the data do separate some state histories
    oracle = TrieOracle(built.trie, negatives)
    assert res.n_nodes is not None and res.solutions
    assert all(oracle.check(s.state_machine()) == [] for s in res.solutions)
    assert res.search.counterexamples > 0


def test_cli_learn_labels_writes_loadable_pairs(tmp_path, capsys):
    from rmtk.cli.main import main

    png = tmp_path / "labels.png"
    assert main(["learn", "models/patrol.rm", "--learn-labels", "--explain", "-q", "--png", str(png)]) == 0
    out = capsys.readouterr().out
    assert "1 equal to the truth up to both renamings" in out and png.exists()
    assert "# survivors: 1\n" in out and "# truth survives: yes" in out
    assert "# states with the same label in every listed pair: 16; varying: 0" in out
    doc = dsl.loads(out)
    learned = doc.tasks["learned_1"]
    task = dsl.load_model("patrol").tasks["patrol"]
    truth_key = len(set(zip(task.mdp.labels.tolist(), learned.mdp.labels.tolist())))
    assert truth_key == 4 and learned.mdp.source.generator == "gridworld"
    with pytest.raises(SystemExit):
        main(["learn", "models/patrol.rm", "--learn-labels", "0"])
    assert "at least 1" in capsys.readouterr().err


def test_reproduce_raw_labels_on_a_marked_grid(tmp_path):
    from rmtk.experiments import Options, run

    rep = run(
        "raw-labels", Options(quick=True, figure_dir=tmp_path, overrides={"tasks": "", "grids": "1", "grid_size": "3"})
    )
    ((_, header, rows),) = rep.tables
    row = dict(zip(header, rows[0]))
    assert (row["k"], row["n"], row["pairs"], row["consistent"]) == (4, 4, 1, 1)
    assert row["equal"] == 1 and row["truth n, k"] == "4, 4" and row["truth survives"] == "yes"
    assert len(rep.figures) == 1


def test_collect_without_a_labeler_records_state_histories():
    """rmtk.gym.collect(..., labeler=None): each state its own proposition; the label learner
    learns from the recording (a Space, no transition model), and its pairs keep apart every
    two state histories the recording separates."""
    import attrs

    pytest.importorskip("gymnasium")
    from rmtk.empirical import EmpiricalPTP
    from rmtk.gym import Identity, MdpVectorEnv, NodePolicy, collect
    from rmtk.labels.histories import StateHistoryPTP
    from rmtk.negatives import ConfidenceMiner
    from rmtk.progress import Progress
    from rmtk.sat.lazy import TrieOracle

    task, table = random_task(7)
    expert_policy = NodePolicy.from_table(task.machine, np.where(table > 0.5, 0.95, 0.05))

    def policy(obs, ctx):  # the expert reads the true labels (the recording does not)
        true = task.mdp.labels[np.asarray(ctx.state)]
        return expert_policy(obs, ctx._replace(label=true, propositions=task.mdp.propositions))

    rec = collect(MdpVectorEnv(task.mdp, 500, max_steps=6), policy, None, Identity(), 3000, seed=2)
    space = rec.space
    assert space.propositions == tuple(f"s{i}" for i in range(task.mdp.n_states))
    res = Learner(EmpiricalPTP(rec), encoder=LabelingEncoder(), max_nodes=3, irl=None).fit(space)
    built = StateHistoryPTP(EmpiricalPTP(rec)).build(space, Progress())
    negatives = ConfidenceMiner().mine(built)
    assert len(negatives) > 0 and res.n_nodes >= 2 and res.verdicts is None
    oracle = TrieOracle(built.trie, negatives)
    assert all(oracle.check(s.state_machine()) == [] for s in res.solutions)
    assert set(res.labeling(0)) == set(space.propositions)
    with pytest.raises(RmtkError, match="without a transition model"):  # a clear error, not attrs' TypeError
        res.relabeled_mdp(0)
    with pytest.raises(RmtkError, match="record state histories"):
        Learner(EmpiricalPTP(rec), encoder=LabelingEncoder(), irl=None).fit(
            attrs.evolve(space, propositions=["a", "b"])
        )


def test_exact_state_history_policy_is_the_product_policy():
    """Every state path of at most 3 states (runs of one state collapsed) is a word of the state
    tree, with the expert's distribution at (its last state, the true node after its labels)."""
    from rmtk.labels.histories import StateHistoryPTP
    from rmtk.planning import task_policy
    from rmtk.progress import Progress

    task, _ = random_task(11)
    ptp = StateHistoryPTP(ExactPTP(3)).build(task, Progress())
    trie, pi = ptp.trie, task_policy(task).pi
    words = {tuple(trie.word(int(p))): i for i, p in enumerate(ptp.tree.pair_node)}
    mdp, m = task.mdp, task.machine
    letter = task.letter_of_proposition
    paths = [[int(s)] for s in mdp.start_states]
    seen = 0
    while paths:
        path = paths.pop()
        word = tuple(s for i, s in enumerate(path) if i == 0 or s != path[i - 1])
        u = m.initial
        for s in word:
            u = m.delta_u[u, letter[mdp.labels[s]]]
        row = words[word]
        assert ptp.tree.pair_state[row] == path[-1]
        np.testing.assert_allclose(ptp.policy[row], pi[path[-1], u], atol=1e-12)
        seen += 1
        if len(path) < 3:
            paths += [path + [int(j)] for a in range(mdp.n_actions) for j, _ in mdp.successors(path[-1], a)]
    assert seen > len(words) / 2 and len(words) == ptp.n_pairs


def test_patrol_demonstrations_keep_the_truth_among_the_survivors():
    """10⁴ demonstrations of length 10 of the patrol expert of the paper's tables (reward 10):
    the mined negatives rule out 3 nodes for every labeling, and the truth (4 nodes, 4
    propositions) passes every one of them at the smallest size; 10³ demonstrations leave
    too few negatives (a 2-node pair suffices), and the truth is then no survivor."""
    import attrs

    from rmtk.empirical import EmpiricalPTP
    from rmtk.labels.histories import StateHistoryPTP
    from rmtk.negatives import ConfidenceMiner
    from rmtk.progress import Progress
    from rmtk.sat.lazy import TrieOracle
    from rmtk.simulate import simulate

    task = dsl.load_model("patrol").tasks["patrol"]
    task = attrs.evolve(task, machine=task.machine.with_rewards(task.machine.delta_r * 10.0))
    for n, size, survives in ((10_000, (4, 4), True), (1_000, (2, 2), False)):
        demos = simulate(task, n, 10, seed=0)
        res = Learner(EmpiricalPTP(demos), encoder=LabelingEncoder(), irl=None, max_solutions=1).fit(task)
        assert (res.n_nodes, res.n_props) == size and res.truth_size == (4, 4)
        assert res.truth_survives is survives
        built = StateHistoryPTP(EmpiricalPTP(demos)).build(task, Progress())
        oracle = TrieOracle(built.trie, ConfidenceMiner().mine(built))
        assert oracle.check(state_machine(task).delta_u) == []  # no false positive against the truth
        assert oracle.check(res.solutions[0].state_machine()) == []
        assert n < 10_000 or (3, 4) in res.search.ruled_out


def test_survivors_of_patrol_demonstrations_are_summarised():
    """The survivors of 10⁴ patrol demonstrations are too many to list: capped at 200, the
    summary says "≥200", names the cells that move the machine alike in every listed pair (a
    longer listing can only unfix cells: the first 200 are among the 1,000), and the truth
    survives. A complete enumeration is counted
    exactly, with every state fixed when one pair remains."""
    import attrs

    from rmtk.empirical import EmpiricalPTP
    from rmtk.simulate import simulate

    task = dsl.load_model("patrol").tasks["patrol"]
    task = attrs.evolve(task, machine=task.machine.with_rewards(task.machine.delta_r * 10.0))
    demos = simulate(task, 10_000, 10, seed=0)
    fixed = []
    for cap in (200, 1_000):
        res = Learner(EmpiricalPTP(demos), encoder=LabelingEncoder(freedom=False), irl=None, max_solutions=cap).fit(
            task
        )
        sm = res.summary()
        assert (sm.found, sm.capped, sm.cap, sm.count) == (cap, True, cap, f"≥{cap}")
        assert len(sm.fixed) + len(sm.varies) == 16 and sm.truth_survives is True
        assert f"survivors: ≥{cap} (enumeration capped at {cap} pairs)" in sm.lines()
        fixed.append(sm.fixed)
    assert 0 < len(fixed[1]) and set(fixed[1]) <= set(fixed[0]) and len(fixed[0]) < 16
    exact = Learner(ExactPTP(None), encoder=LabelingEncoder(freedom=False), irl=None).fit(task).summary()
    assert (exact.count, exact.capped, len(exact.fixed), exact.varies) == ("1", False, 16, ())


def test_ruled_out_sizes_stop_at_the_label_classes_the_knowledge_allows():
    """With cells known to share a label, the sizes ruled out list no more propositions than
    the classes the knowledge leaves (patrol, 16 cells: one room of 4 shared leaves 13, two
    rooms 10), nor than a given bound; the answer is the one found without knowledge."""
    from rmtk.labels.search import label_classes

    task = dsl.load_model("patrol").tasks["patrol"]
    rooms = [[s for s, lab in zip(task.mdp.states, task.mdp.labels) if lab == p] for p in (0, 1)]
    for shared, classes in (([rooms[0]], 13), (rooms, 10)):
        res = Learner(ExactPTP(None), encoder=LabelingEncoder(shared=shared), irl=None).fit(task)
        idx = [[task.mdp.states.index(s) for s in g] for g in shared]
        assert label_classes(np.arange(16), idx) == classes
        assert (res.n_nodes, res.n_props) == (4, 4)
        assert sorted(k for n, k in res.search.ruled_out if n == 3) == list(range(1, classes + 1))
    bounded = Learner(ExactPTP(None), encoder=LabelingEncoder(shared=[rooms[0]], max_props=3), irl=None).fit(task)
    assert bounded.n_nodes is None and max(k for _, k, _ in bounded.search.tried) == 3


def test_a_time_limit_in_the_enumeration_reports_the_bisection_pair(monkeypatch):
    """When the time runs out in the final enumeration (simulated), the pair reported is the
    smallest the bisection found (here 2 propositions, below the label-free check's 3), one of
    the pairs of the complete search, flagged."""
    import sys

    import rmtk.labels.search as ls

    task, table = random_task(53)
    reach = mdp_reachable(task.mdp)
    oracle = expert(task, table).oracle(state_task(task))
    problem = Problem(Trie.root(True), task.mdp.n_states, oracle=oracle)
    kw = dict(n_states=task.mdp.n_states, reach=reach, max_nodes=3, min_nodes=oracle.lower_bound(), freedom=False)
    full = label_search(problem, **kw)
    assert (full.n_nodes, full.n_props, full.complete) == (3, 2, True) and (3, 3, True) in full.tried
    real = ls.solve

    def no_time_to_enumerate(sat, deadline, assumptions=()):
        return None if sys._getframe(1).f_locals.get("enumerate_all") else real(sat, deadline, assumptions)

    monkeypatch.setattr(ls, "solve", no_time_to_enumerate)
    cut = label_search(problem, **kw)
    assert (cut.n_nodes, cut.n_props, cut.complete, len(cut.solutions)) == (3, 2, False, 1)
    assert "one of those of the fewest sizes" in cut.message
    key = lambda x: pair_key(x.labels, x.delta_u, x.used, reach)  # noqa: E731
    assert key(cut.solutions[0]) in {key(x) for x in full.solutions}


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

    from rmtk.labels.label_free import equal_columns
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


def test_a_time_limit_after_the_label_free_check_reports_its_pair_flagged(monkeypatch):
    """When every labeled call runs out of time (simulated), the search still ends with the
    number of nodes the label-free check decided and the pair of the machine it found, flagged
    incomplete with what was not decided; that pair reproduces the expert, and its size is no
    smaller than the true smallest one (patrol: 4 nodes, 4 propositions)."""
    import rmtk.labels.search as ls
    from rmtk.labels.histories import StateHistoryPTP

    task = dsl.load("models/patrol.rm").tasks["patrol"]
    oracle = StateHistoryPTP(ExactPTP(None)).oracle(task)
    reach = mdp_reachable(task.mdp)
    problem = Problem(Trie.root(True), task.mdp.n_states, oracle=oracle)
    kw = dict(n_states=task.mdp.n_states, reach=reach, max_nodes=4, min_nodes=oracle.lower_bound(), freedom=False)
    full = label_search(problem, **kw)
    assert (full.n_nodes, full.n_props, full.complete) == (4, 4, True)
    monkeypatch.setattr(ls, "solve", lambda sat, deadline, assumptions=(): None)  # labeled calls only
    cut = label_search(problem, **kw)
    assert not cut.complete and cut.n_nodes == 4 and len(cut.solutions) == 1
    assert cut.n_props >= 4 and "4 nodes is the fewest" in cut.message
    assert not oracle.check(cut.solutions[0].state_machine())
    assert {(n, k) for n, k in cut.ruled_out} == {(n, k) for n, k in full.ruled_out if n < 4}


def test_labels_from_an_expert_asked_actively():
    """The active loop run on the state view asks the patrol expert about state histories; the
    labels learned from its questions and answers alone give the truth up to both renamings
    (the loop's many survivors over 16 state letters collapse to one pair); the same loop over
    label words is refused."""
    from rmtk.active.experts import TaskExpert
    from rmtk.active.loop import ActiveLearner
    from rmtk.labels.learner import labels_from_active

    task = dsl.load_model("patrol").tasks["patrol"]
    st = state_task(task)
    active = ActiveLearner(irl=None, max_solutions=50).fit(st, TaskExpert(st))
    assert len(active.result.machines) > 1  # over state letters, the loop alone leaves many
    res = labels_from_active(active, task)
    assert (res.n_nodes, res.n_props) == (4, 4) and len(res.solutions) == 1
    assert [(v.consistent, v.equal) for v in res.verdicts] == [(True, True)] and res.truth_survives
    assert (3, 4) in res.search.ruled_out or res.search.lower_bound == 4
    plain = ActiveLearner(irl=None, max_solutions=5).fit(task, TaskExpert(task))
    with pytest.raises(RmtkError, match="state view"):
        labels_from_active(plain, task)
