"""The LabelLearner on the shipped tasks, with partial knowledge, from demonstrations and
recordings, from an active loop's questions, and through the command line."""

from __future__ import annotations

import numpy as np
import pytest
from label_instances import random_task

from rmtk import ExactPTP, dsl
from rmtk.errors import RmtkError
from rmtk.labels import LabelLearner, StateHistoryPTP, state_task
from rmtk.labels.histories import state_machine
from rmtk.labels.pairs import mdp_reachable
from rmtk.labels.verdicts import truth_pair
from rmtk.negatives.miners import ConfidenceMiner
from rmtk.progress import Progress
from rmtk.sat.lazy import TrieOracle


@pytest.mark.parametrize("name,nodes,props,truth", [("patrol", 4, 4, (4, 4)), ("stack_avoid", 3, 4, (4, 4))])
def test_shipped_tasks_learn_their_truth_from_raw_states(name, nodes, props, truth):
    """stack-avoid's truth has 4 nodes, but u2 and u3 share the uniform policy: the smallest
    pair merges them, and is not equal to the truth (it is policy-equivalent)."""
    task = dsl.load_model(name).tasks[name]
    res = LabelLearner().fit(task)
    assert (res.n_nodes, res.n_props) == (nodes, props) and res.truth_size == truth
    assert [(v.consistent, v.equal, v.merges_truth) for v in res.verdicts] == [(True, truth == (nodes, props), True)]
    assert res.truth_is_smaller_or_equal == (truth == (nodes, props))
    assert (nodes - 1, props) in res.search.ruled_out or res.search.lower_bound == nodes
    assert (nodes, props - 1) in res.search.ruled_out
    assert res.free(0) == []  # every cell's label is pinned by the expert
    assert res.complete and res.unfinished == ()
    labels, _, _ = truth_pair(task, mdp_reachable(task.mdp))
    assert len(set(zip(labels.tolist(), res.solutions[0].labels.tolist()))) == props  # same partition


def test_partial_knowledge_and_given_k():
    task = dsl.load_model("patrol").tasks["patrol"]
    known = {"r0c0": "D", "r2c0": "A"}
    res = LabelLearner(known=known, shared=[("r0c2", "r1c3")]).fit(task)
    assert res.propositions[:2] == ("D", "A") and res.labeling(0)["r0c0"] == "D"
    assert res.labeling(0)["r3c3"] == res.labeling(0)["r2c2"] and res.verdicts[0].equal
    bigger = LabelLearner(props=5).fit(task)
    assert bigger.n_props == 5 and bigger.search.tried[-1] == (4, 5, True)
    assert all(v.consistent and not v.equal for v in bigger.verdicts)
    wrong = LabelLearner(known={"r0c0": "D", "r2c0": "D"}).fit(task)
    assert wrong.n_nodes is None or (wrong.n_nodes, wrong.n_props) > (4, 4)


def test_free_states_are_the_relabellings_that_keep_the_expert():
    """A state is free in a pair exactly when relabelling it alone keeps the pair consistent at
    every depth (checked one relabelling at a time against the product, independently)."""
    from rmtk.machine.equivalence import consistency

    hits = 0
    for seed in range(12):
        task, table = random_task(seed)
        res = LabelLearner(ExactPTP(None, source=_table(table)), max_nodes=3).fit(task)
        oracle = StateHistoryPTP(ExactPTP(None, source=_table(table))).state_oracle(task)
        for s in res.solutions:
            want = []
            for st in np.flatnonzero(s.labels >= 0):
                ps = []
                for p in range(s.n_props):
                    if p != s.labels[st]:
                        lab = s.labels.copy()
                        lab[st] = p
                        D = s.delta_u[:, lab]
                        v = consistency(
                            oracle.mdp, oracle.true_delta, oracle.table, D, true_initial=oracle.true_initial
                        )
                        if v.consistent:
                            ps.append(p)
                if ps:
                    want.append((int(st), tuple(ps)))
            assert s.free == tuple(want)
            hits += len(want)
    assert hits > 0  # some instance has a free state


def _table(table):
    from rmtk.ptp.exact import NodePolicyTable

    return NodePolicyTable(table)


def test_demonstrations_without_labels():
    """From demonstrations, histories are state sequences: the learned pairs reproduce the
    empirical negatives (checked against the data's own oracle), and the result says what the
    samples could resolve."""
    from rmtk.product.simulate import simulate
    from rmtk.ptp.empirical import EmpiricalPTP

    task, table = random_task(7)
    table = np.where(table > 0.5, 0.95, 0.05)  # a decisive expert: one preferred action per (node, state)
    demos = simulate(task, 3000, 6, seed=3, policy=table.transpose(1, 0, 2))
    res = LabelLearner(EmpiricalPTP(demos), max_nodes=3).fit(task)
    built = StateHistoryPTP(EmpiricalPTP(demos)).state_tree(task, Progress())
    negatives = ConfidenceMiner().mine(built)
    assert len(negatives) > 0  # the data do separate some state histories
    oracle = TrieOracle(built.trie, negatives)
    assert res.n_nodes is not None and res.solutions
    assert all(oracle.check(s.state_machine()) == [] for s in res.solutions)
    assert res.search.counterexamples > 0
    ev = res.evidence
    assert ev is not None and ev.negatives == len(negatives) and ev.alpha == 0.05
    assert 0 < ev.compared <= ev.entries == built.n_pairs
    assert ev.merges.negatives == len(negatives) and ev.merges == res.resolution(0)


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
    with pytest.raises(RmtkError, match="unknown task 'nosuch'"):
        run("raw-labels", Options(quick=True, figure_dir=tmp_path, overrides={"tasks": "nosuch", "grids": "0"}))


def test_collect_without_a_labeler_records_state_histories():
    """rmtk.gym.collect(..., labeler=None): each state its own proposition; the label learner
    learns from the recording (a Space, no transition model), and its pairs keep apart every
    two state histories the recording separates."""
    import attrs

    pytest.importorskip("gymnasium")
    from rmtk.gym import Identity, MdpVectorEnv, NodePolicy, collect
    from rmtk.ptp.empirical import EmpiricalPTP

    task, table = random_task(7)
    expert_policy = NodePolicy.from_table(task.machine, np.where(table > 0.5, 0.95, 0.05))

    def policy(obs, ctx):  # the expert reads the true labels (the recording does not)
        true = task.mdp.labels[np.asarray(ctx.state)]
        return expert_policy(obs, ctx._replace(label=true, propositions=task.mdp.propositions))

    rec = collect(MdpVectorEnv(task.mdp, 500, max_steps=6), policy, None, Identity(), 3000, seed=2)
    space = rec.space
    assert space.propositions == tuple(f"s{i}" for i in range(task.mdp.n_states))
    res = LabelLearner(EmpiricalPTP(rec), max_nodes=3).fit(space)
    built = StateHistoryPTP(EmpiricalPTP(rec)).state_tree(space, Progress())
    negatives = ConfidenceMiner().mine(built)
    assert len(negatives) > 0 and res.n_nodes >= 2 and res.verdicts is None
    oracle = TrieOracle(built.trie, negatives)
    assert all(oracle.check(s.state_machine()) == [] for s in res.solutions)
    assert set(res.labeling(0)) == set(space.propositions)
    with pytest.raises(RmtkError, match="without a transition model"):  # a clear error, not attrs' TypeError
        res.relabeled_mdp(0)
    with pytest.raises(RmtkError, match="record state histories"):
        LabelLearner(EmpiricalPTP(rec)).fit(attrs.evolve(space, propositions=["a", "b"]))


def test_exact_state_history_policy_is_the_product_policy():
    """Every state path of at most 3 states (runs of one state collapsed) is a word of the state
    tree, with the expert's distribution at (its last state, the true node after its labels)."""
    from rmtk.product.planning import task_policy

    task, _ = random_task(11)
    ptp = StateHistoryPTP(ExactPTP(3)).state_tree(task, Progress())
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

    from rmtk.product.simulate import simulate
    from rmtk.ptp.empirical import EmpiricalPTP

    task = dsl.load_model("patrol").tasks["patrol"]
    task = attrs.evolve(task, machine=task.machine.with_rewards(task.machine.delta_r * 10.0))
    for n, size, survives in ((10_000, (4, 4), True), (1_000, (2, 2), False)):
        demos = simulate(task, n, 10, seed=0)
        res = LabelLearner(EmpiricalPTP(demos), max_solutions=1).fit(task)
        assert (res.n_nodes, res.n_props) == size and res.truth_size == (4, 4)
        assert res.truth_survives is survives
        built = StateHistoryPTP(EmpiricalPTP(demos)).state_tree(task, Progress())
        oracle = TrieOracle(built.trie, ConfidenceMiner().mine(built))
        assert oracle.check(state_machine(task).delta_u) == []  # no false positive against the truth
        assert oracle.check(res.solutions[0].state_machine()) == []
        assert n < 10_000 or (3, 4) in res.search.ruled_out


def test_survivors_of_patrol_demonstrations_are_summarised():
    """The survivors of 10⁴ patrol demonstrations are too many to list: capped at 200, the
    summary says "≥200", names the cells that move the machine alike in every listed pair (a
    longer listing can only unfix cells: the first 200 are among the 1,000), and the truth
    survives. A complete enumeration is counted exactly, with every state fixed when one pair
    remains."""
    import attrs

    from rmtk.product.simulate import simulate
    from rmtk.ptp.empirical import EmpiricalPTP

    task = dsl.load_model("patrol").tasks["patrol"]
    task = attrs.evolve(task, machine=task.machine.with_rewards(task.machine.delta_r * 10.0))
    demos = simulate(task, 10_000, 10, seed=0)
    fixed = []
    for cap in (200, 1_000):
        res = LabelLearner(EmpiricalPTP(demos), freedom=False, max_solutions=cap).fit(task)
        sm = res.summary()
        assert (sm.found, sm.capped, sm.cap, sm.count) == (cap, True, cap, f"≥{cap}")
        assert len(sm.fixed) + len(sm.varies) == 16 and sm.truth_survives is True
        assert f"survivors: ≥{cap} (enumeration capped at {cap} pairs)" in sm.lines()
        fixed.append(sm.fixed)
    assert 0 < len(fixed[1]) and set(fixed[1]) <= set(fixed[0]) and len(fixed[0]) < 16
    exact = LabelLearner(freedom=False).fit(task).summary()
    assert (exact.count, exact.capped, len(exact.fixed), exact.varies) == ("1", False, 16, ())


def test_ruled_out_sizes_stop_at_the_label_classes_the_knowledge_allows():
    """With cells known to share a label, the sizes ruled out list no more propositions than
    the classes the knowledge leaves (patrol, 16 cells: one room of 4 shared leaves 13, two
    rooms 10), nor than a given bound; the answer is the one found without knowledge."""
    from rmtk.labels.pairs import label_classes

    task = dsl.load_model("patrol").tasks["patrol"]
    rooms = [[s for s, lab in zip(task.mdp.states, task.mdp.labels) if lab == p] for p in (0, 1)]
    for shared, classes in (([rooms[0]], 13), (rooms, 10)):
        res = LabelLearner(shared=shared).fit(task)
        idx = [[task.mdp.states.index(s) for s in g] for g in shared]
        assert label_classes(np.arange(16), idx) == classes
        assert (res.n_nodes, res.n_props) == (4, 4)
        assert sorted(k for n, k in res.search.ruled_out if n == 3) == list(range(1, classes + 1))
    bounded = LabelLearner(shared=[rooms[0]], max_props=3).fit(task)
    assert bounded.n_nodes is None and max(k for _, k, _ in bounded.search.tried) == 3


def test_labels_from_an_expert_asked_actively():
    """The active loop run on the state view asks the patrol expert about state histories; the
    labels learned from its questions and answers alone give the truth up to both renamings
    (the loop's many survivors over 16 state letters collapse to one pair); the same loop over
    label words is refused, and so is a loop run on another task."""
    from rmtk.active.experts import TaskExpert
    from rmtk.active.loop import ActiveLearner

    task = dsl.load_model("patrol").tasks["patrol"]
    st = state_task(task)
    active = ActiveLearner(irl=None, max_solutions=50).fit(st, TaskExpert(st))
    assert len(active.result.machines) > 1  # over state letters, the loop alone leaves many
    res = LabelLearner().fit_questions(active, task)
    assert (res.n_nodes, res.n_props) == (4, 4) and len(res.solutions) == 1
    assert [(v.consistent, v.equal) for v in res.verdicts] == [(True, True)] and res.truth_survives
    assert (3, 4) in res.search.ruled_out or res.search.lower_bound == 4
    plain = ActiveLearner(irl=None, max_solutions=5).fit(task, TaskExpert(task))
    with pytest.raises(RmtkError, match="state view"):
        LabelLearner().fit_questions(plain, task)
    other = dsl.load_model("stack_avoid").tasks["stack_avoid"]
    with pytest.raises(RmtkError, match="not about the state view of"):
        LabelLearner().fit_questions(active, other)


def test_a_soft_expert_s_demonstrations_say_what_they_could_resolve(tmp_path, capsys):
    """State-only demonstrations of a soft expert (patrol, λ 5): one node and one proposition
    explain them, and the result says that the data held no negative example, what the merges
    the pair rests on resolved (rmtk.negatives.statistics), and which merged histories came closest to
    being told apart (each below the test's threshold), never a bare answer."""
    import attrs

    from rmtk.cli.main import main
    from rmtk.data import save
    from rmtk.labels.evidence import closest_merges
    from rmtk.product.simulate import simulate
    from rmtk.ptp.empirical import EmpiricalPTP

    task = attrs.evolve(dsl.load_model("patrol").tasks["patrol"], lam=5.0)
    demos = simulate(task, 10_000, 10, seed=0)
    res = LabelLearner(EmpiricalPTP(demos), max_solutions=5).fit(task)
    assert (res.n_nodes, res.n_props) == (1, 1)
    ev = res.evidence
    assert ev.negatives == 0 and ev.compared < ev.entries
    assert ev.merges == res.resolution(0) and ev.merges.negatives == 0 and 0 < ev.merges.worst < 1
    lines = res.explain()
    assert "the data held no negative example" in lines[0] and "no difference ≥" in lines[1]
    close = closest_merges(res.ptp, res.solutions[0].state_machine(), ev.alpha)
    assert close and all(c.difference < c.threshold for c in close)
    assert all(min(c.needed) > 0 for c in close)
    margins = [c.difference - c.threshold for c in close]
    assert margins == sorted(margins, reverse=True)  # the closest to being told apart first
    path = tmp_path / "soft.npz"
    save(demos, path, task.mdp)
    model = tmp_path / "soft.rm"
    model.write_text(dsl.dumps(dsl.RmFile.of(task)))
    assert main(["learn", str(model), "--learn-labels", "--demos", str(path), "--max-solutions", "5", "-q"]) == 0
    out = capsys.readouterr().out
    assert "# from sampled data: 0 negative examples at level 0.05" in out
    assert "the data held no negative example" in out and "# pair 1: resolution (total variation" in out


def test_an_exact_expert_s_answer_carries_no_sampling_statement():
    task = dsl.load_model("patrol").tasks["patrol"]
    res = LabelLearner().fit(task)
    assert res.evidence is None and res.resolution(0) is None and res.ptp is None
