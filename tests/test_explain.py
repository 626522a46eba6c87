"""What separates the surviving machines: witnesses (checked by running the machines on their
words), the greedy cover, the rare (word, state) pairs and the visits the bound asks for."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import attrs
import numpy as np
import pytest

from rmtk import EmpiricalPTP, ExactPTP, Learner, MaxSatEncoder, SoftOptimal, dsl
from rmtk.cli.main import main
from rmtk.errors import RmtkError
from rmtk.learner.explain import growth_factors
from rmtk.negatives.miners import ConfidenceMiner
from rmtk.product.simulate import simulate
from rmtk.ptp.tree import PrefixTree, PrefixTreePolicy, TrieBuilder

MODELS = Path(__file__).resolve().parents[1] / "models"


@pytest.fixture(scope="module")
def stack_avoid():
    return dsl.load_model("stack_avoid").tasks["stack_avoid"]


@pytest.fixture(scope="module")
def four_nodes(stack_avoid):
    return Learner(ExactPTP(8), nodes=4, max_nodes=4, irl=None).fit(stack_avoid)


def test_cover_witnesses_are_right_and_separate_every_separable_pair(four_nodes, stack_avoid):
    r = four_nodes
    explanation = r.explain()
    cover = explanation.cover
    assert cover.machines == 65 and 0 < len(cover.witnesses) <= 20
    separated = set()
    for cw in cover.witnesses:
        w = cw.witness
        assert stack_avoid.mdp.label(w.state) == w.word1[-1] == w.word2[-1]
        for i, m in enumerate(r.machines):  # merging / splitting recomputed by running each machine
            merges = m.final(w.word1) == m.final(w.word2)
            assert (i in cw.merging) == merges and (i in cw.splitting) == (not merges)
        separated |= {(a, b) for a in cw.merging for b in cw.splitting}
        separated |= {(b, a) for a in cw.merging for b in cw.splitting}
        assert cw.expert == "alike"  # all 65 are consistent at every depth: the expert cannot refute any
    alike = set(cover.alike)
    for i, j in itertools.combinations(range(65), 2):
        assert (i, j) in separated or (i, j) in alike
    for i, j in list(alike)[:5]:  # alike pairs really have no witness
        assert r.distinguish(i, j) is None


def _augment(ptp: PrefixTreePolicy, task, cover) -> PrefixTreePolicy:
    """The prefix tree policy plus the expert's entries at every witness (both words, its state)."""
    grow = TrieBuilder.from_trie(ptp.trie, task.mdp.n_propositions)
    pi = SoftOptimal().policy(task)
    index = {p: k for k, p in enumerate(task.mdp.propositions)}
    nodes, states, rows = list(ptp.tree.pair_node), list(ptp.tree.pair_state), list(ptp.policy)
    for cw in cover.witnesses:
        s = task.mdp.states.index(cw.witness.state)
        for word in (cw.witness.word1, cw.witness.word2):
            p = 0
            for x in word:
                p = int(grow.children(np.array([p]), np.array([index[x]]))[0])
            nodes.append(p)
            states.append(s)
            rows.append(pi[s, task.machine.final(word)])
    order = np.lexsort((states, nodes))
    _, first = np.unique(np.array(nodes)[order] * 10**6 + np.array(states)[order], return_index=True)
    keep = order[first]
    tree = PrefixTree(grow.trie(True), np.array(nodes)[keep], np.array(states)[keep], ptp.tree.depth)
    return PrefixTreePolicy(tree, np.array(rows)[keep])


@attrs.frozen
class Given:
    """A PTP strategy of a ready prefix tree policy (a user's own data)."""

    policy: PrefixTreePolicy

    def build(self, target, progress):
        return self.policy


def test_witness_data_leaves_the_every_depth_machines(four_nodes, stack_avoid):
    every = Learner(ExactPTP(None), nodes=4, max_nodes=4, irl=None).fit(stack_avoid)
    augmented = _augment(four_nodes.ptp, stack_avoid, four_nodes.explain().cover)
    assert augmented.n_pairs > four_nodes.ptp.n_pairs
    with pytest.warns(UserWarning, match="no verdicts"):  # Given does not say which expert it follows
        again = Learner(Given(augmented), nodes=4, max_nodes=4, irl=None).fit(stack_avoid)
    key = lambda r: sorted((s.delta_u.tobytes(), s.used.tobytes()) for s in r.solutions)  # noqa: E731
    assert key(again) == key(every) and again.raw_count == every.raw_count == 1344


def _chain_task():
    """Three states in a row (labels a, b, c): each state is reached by one word only."""
    from rmtk import LabeledMDP, RewardMachine, Task

    P = np.zeros((2, 3, 3))
    P[:, 0, 1] = P[:, 1, 2] = P[:, 2, 2] = 1
    mdp = LabeledMDP.from_dense(P, ["a", "b", "c"], initial=[1, 0, 0], name="chain")
    m = RewardMachine(
        nodes=["u0", "u1"],
        alphabet=["a", "b", "c"],
        delta_u=np.array([[0, 1, 1], [1, 1, 1]]),
        delta_r=np.zeros((2, 3)),
        initial=0,
        name="m",
    )
    return Task(mdp, m, lam=1.0, depth=4, name="chain")


def test_every_inseparable_pair_is_listed_when_no_witness_exists():
    r = Learner(ExactPTP(4), nodes=2, irl=None).fit(_chain_task())
    k = r.distinct_count
    assert k == 8
    cover = r.explain().cover
    assert cover.witnesses == ()
    assert set(cover.alike) == set(itertools.combinations(range(k), 2))  # all 28, not a chain of 7
    assert all(r.distinguish(i, j) is None for i, j in cover.alike)
    assert str(cover).startswith("no witness from the MDP separates any two of the 8 machines")
    assert "#1~#3" in str(cover)


def test_known_expert_says_which_witness_refutes():
    patrol = dsl.load_model("patrol").tasks["patrol"]
    r = Learner(ExactPTP(3), max_nodes=4, irl=None).fit(patrol)
    (cw,) = r.explain().cover.witnesses
    assert cw.expert == "differently"
    (merging,) = cw.merging
    assert not r.verdicts[merging].consistent
    assert "the merging machines are refuted" in str(cw)


def test_growth_factor_meets_the_bound_exactly():
    rng = np.random.default_rng(3)
    for _ in range(50):
        A = int(rng.integers(2, 10))
        n1, n2 = rng.integers(5, 400, size=2)
        p1, p2 = rng.dirichlet(np.ones(A), size=2)
        tv = 0.5 * np.abs(p1 - p2).sum()
        f = float(growth_factors(np.array([n1]), np.array([n2]), np.array([tv]), A, 0.05)[0])
        assert f >= 1

        def delta(m, A=A, tv=tv):
            return (2.0**A - 2) * math.exp(-m * tv * tv / 2)

        assert delta(f * n1) + delta(f * n2) <= 0.05 * (1 + 1e-9)
        if f > 1:
            assert delta(f * 0.999 * n1) + delta(f * 0.999 * n2) > 0.05
    assert math.isinf(growth_factors(np.array([5]), np.array([5]), np.array([0.0]), 4, 0.05)[0])


def test_rare_pairs_from_demonstrations(stack_avoid):
    demos = simulate(stack_avoid, 1000, 20, seed=0)
    r = Learner(EmpiricalPTP(demos), encoder=MaxSatEncoder(), nodes=3, irl=None).fit(stack_avoid)
    assert r.distinct_count > 1
    e = r.explain(limit=5)
    assert len(e.cover.witnesses) >= 1 and len(e.rare) == 5
    mined = {tuple(sorted(p)) for p in r.negatives.pairs.tolist()}
    trie = r.ptp.trie
    word_of = {tuple(stack_avoid.mdp.propositions[k] for k in trie.word(p)): p for p in range(1, trie.n_nodes)}
    for rare in e.rare:
        p, q = word_of[rare.word1], word_of[rare.word2]
        assert tuple(sorted((p, q))) not in mined  # not a negative example yet ...
        assert rare.separates > 0 and rare.trajectories > 0 and rare.extra[0] >= 0
        # ... but with the counts grown by the factor, the confidence miner finds it
        s = stack_avoid.mdp.states.index(rare.state)
        rows = [i for i in range(r.ptp.n_pairs) if r.ptp.tree.pair_state[i] == s and r.ptp.tree.pair_node[i] in (p, q)]
        counts = np.asarray(r.ptp.counts)[rows].astype(float) * rare.factor
        tree = PrefixTree(trie, r.ptp.tree.pair_node[rows], r.ptp.tree.pair_state[rows], 20)
        grown = PrefixTreePolicy(tree, counts / counts.sum(axis=1, keepdims=True), counts=np.ceil(counts))
        assert len(ConfidenceMiner(alpha=0.05).mine(grown)) == 1


def test_cli_learn_every_depth_lazy_and_explain(capsys):
    assert main(["learn", str(MODELS / "patrol.rm"), "--depth", "inf", "-q"]) == 0
    out = capsys.readouterr().out
    assert "at every depth" in out and "Theorem 1 depth |S|·n² = 256" in out and "6 raw assignments" in out
    assert main(["learn", str(MODELS / "stack.rm"), "--depth", "18", "--negatives", "lazy", "-q", "--no-rewards"]) == 0
    out = capsys.readouterr().out
    assert "of depth 18" in out and "no prefix tree built" in out and "2 raw assignments" in out
    assert main(["learn", str(MODELS / "stack_avoid.rm"), "--nodes", "4", "-q", "--no-rewards", "--explain"]) == 0
    out = capsys.readouterr().out
    assert "witness(es) from the MDP separate the 65 machines" in out
    assert dsl.loads(out).machines  # still loadable .rm text
    with pytest.raises(SystemExit):
        main(["learn", str(MODELS / "patrol.rm"), "--depth", "deep"])


def test_tables_experiment_explains_its_survivors_at_1000_demonstrations():
    from rmtk.experiments import Options, run

    report = run("tables", Options(quick=True, overrides={"explain": "true"}))
    (note,) = [n for n in report.notes if "what would separate" in n]
    assert note.startswith("stack_avoid, 1000 demonstrations") and "witness(es) from the MDP" in note
    assert "more trajectories" in note


def test_without_a_model_witnesses_come_from_the_data(stack_avoid):
    """An environment known only through its data (a Space): the cover's witnesses are
    (word, word, state) triples of the demonstrations, each checked on the machines."""
    from rmtk.mdp.space import Space

    demos = simulate(stack_avoid, 1000, 20, seed=0)
    mdp = stack_avoid.mdp
    space = Space(mdp.n_states, mdp.n_actions, mdp.propositions, "blocks without a model")
    labels = np.where(demos.states >= 0, mdp.labels[demos.states.clip(0)], -1)  # labels come with the data
    ptp = EmpiricalPTP(demos, labels=labels)
    r = Learner(ptp, encoder=MaxSatEncoder(), nodes=3, irl=None).fit(space)
    assert r.distinct_count > 1 and r.verdicts is None
    e = r.explain(limit=3)
    assert e.cover.source == "data" and e.cover.witnesses and len(e.rare) == 3
    for cw in e.cover.witnesses:
        w = cw.witness
        for i, m in enumerate(r.machines):
            assert (i in cw.merging) == (m.final(w.word1) == m.final(w.word2))
    assert "witness(es) from the demonstrations" in str(e)
    with pytest.raises(RmtkError, match="no transition model.*explain"):  # not a traceback from the product
        r.distinguish(0, 1)


def _threshold(n1, n2, c, alpha):
    """The paper's rule, by bisection: the smallest t with δ(n1, t) + δ(n2, t) ≤ α."""
    lo, hi = np.zeros_like(n1), np.full_like(n1, 50.0)
    for _ in range(100):
        mid = (lo + hi) / 2
        ok = np.logaddexp(c - n1 * mid**2 / 2, c - n2 * mid**2 / 2) <= math.log(alpha)
        hi, lo = np.where(ok, mid, hi), np.where(ok, lo, mid)
    return hi


def test_one_machine_from_a_soft_expert_says_why_and_what_would_refute_it(tmp_path, capsys):
    """Patrol's expert at its own λ = 1 is soft: 10⁴ episodes give no negative example and a
    1-node machine. explain says why and lists the triples that would refute it: those whose
    difference is beyond sampling noise at the planning confidence first, with the growth after
    which the test detects a difference as large as their lower bound; checked against a brute
    force over every (word, word, state) triple with the bounds computed independently."""
    patrol = dsl.load_model("patrol").tasks["patrol"]
    demos = simulate(patrol, 10_000, 20, seed=0)
    r = Learner(EmpiricalPTP(demos), irl=None).fit(patrol)
    assert len(r.negatives) == 0 and r.n_nodes == 1 and r.distinct_count == 1
    e = r.explain(limit=5)
    text = str(e)
    assert text.startswith(
        "one machine fits, and nothing forces two words into different nodes: no (word, word, "
        "state) triple of the demonstrations differs significantly at confidence level 0.95"
    )
    assert len(e.rare) == 5 and "not a proof" in text and "differ beyond sampling noise at confidence 0.8" in text
    # brute force: every two words at a common state (the 1-node machine merges them all)
    counts = np.asarray(r.ptp.counts, dtype=float)
    n = counts.sum(axis=1)
    state, node = np.asarray(r.ptp.tree.pair_state), np.asarray(r.ptp.tree.pair_node)
    pairs = [np.flatnonzero(state == s) for s in np.unique(state)]
    i = np.concatenate([at[np.triu_indices(len(at), 1)[0]] for at in pairs])
    j = np.concatenate([at[np.triu_indices(len(at), 1)[1]] for at in pairs])
    tv = 0.5 * np.abs(counts[i] / n[i, None] - counts[j] / n[j, None]).sum(axis=1)
    i, j, tv = i[tv > 0], j[tv > 0], tv[tv > 0]
    c = 4 * math.log(2) + math.log1p(-(2.0**-3))  # log(2^|A| − 2)

    def radius(m, level):
        return np.sqrt(2 * (c - math.log(level)) / m)

    def res(a, b):  # the test's threshold plus the half-width of the interval, at alpha 0.05
        return _threshold(a, b, c, 0.05) + (radius(a, 0.025) + radius(b, 0.025)) / 2

    lower = np.maximum(0, tv - (radius(n[i], 0.1) + radius(n[j], 0.1)) / 2)  # confidence 0.8
    assert e.examined == len(i) and e.beyond_noise == int((lower > 0).sum()) >= 5
    trie, names = r.ptp.trie, patrol.mdp.propositions

    words = [tuple(names[k] for k in trie.word(p)) for p in range(trie.n_nodes)]

    def word(p):
        return words[int(p)]

    node_of = {w: p for p, w in enumerate(words)}

    def triple(x):  # the one brute-force triple of a listed one: its state and its two words, either way round
        s, a, b = patrol.mdp.states.index(x.state), node_of[x.word1], node_of[x.word2]
        ends = ((node[i] == a) & (node[j] == b)) | ((node[i] == b) & (node[j] == a))
        (k,) = np.flatnonzero((state[i] == s) & ends)
        return k

    listed = [triple(x) for x in e.rare]
    assert all(x.lower > 0 and not x.consistent_with_zero for x in e.rare)
    np.testing.assert_allclose([x.lower for x in e.rare], lower[listed], rtol=1e-9)
    # the factors: growing both counts by f brings the resolution down to the lower bound, no sooner
    f = np.array([x.factor for x in e.rare])
    np.testing.assert_allclose(res(f * n[i[listed]], f * n[j[listed]]), lower[listed], rtol=1e-6)
    assert (res(0.999 * f * n[i[listed]], 0.999 * f * n[j[listed]]) > lower[listed]).all()
    assert list(f) == sorted(f)
    # no triple beyond noise is cheaper than the last one listed
    beyond = np.flatnonzero(lower > 0)
    cheapest = np.sort((res(n[i[beyond]], n[j[beyond]]) / lower[beyond]) ** 2)
    np.testing.assert_allclose(f, np.maximum(1, cheapest[:5]), rtol=1e-6)
    for rare in e.rare:
        assert rare.refutes == 1 and rare.separates == 0 and rare.trajectories > 0 and 1 < rare.factor < np.inf
        # the targeted visits reach the same resolution: the rarer word raised first
        a, b = rare.visits[0] + rare.extra[0], rare.visits[1] + rare.extra[1]
        assert res(np.array([a]), np.array([b]))[0] <= rare.lower * (1 + 1e-9)
        # with the counts grown by the factor, the empirical difference (at least the lower bound) is a negative example
        p = [
            k
            for k in range(r.ptp.n_pairs)
            if word(node[k]) in (rare.word1, rare.word2) and patrol.mdp.states[state[k]] == rare.state
        ]
        tree = PrefixTree(trie, node[p], state[p], 20)
        grown = counts[p] * rare.factor
        ptp = PrefixTreePolicy(tree, grown / grown.sum(axis=1, keepdims=True), counts=grown)
        assert len(ConfidenceMiner(alpha=0.05).mine(ptp)) == 1
    # the command line prints the same explanation
    from rmtk.data import save

    path = tmp_path / "soft.npz"
    save(demos, path, patrol.mdp)
    assert main(["learn", str(MODELS / "patrol.rm"), "--demos", str(path), "--explain", "-q", "--no-rewards"]) == 0
    out = capsys.readouterr().out
    assert "# one machine fits, and nothing forces two words into different nodes" in out
    assert f"# {e.rare[0]}" in out.replace("#   ", "# ")


def _corner_grid(size: int, lam: float):
    """A size × size grid (deterministic moves), labels a (top right), b (bottom left), g
    (bottom right); the expert visits a, then b, then is paid 3 at g (3 nodes, soft at λ):
    its nodes 0 and 1 act alike but for a small difference, node 2 quite differently."""
    from rmtk import LabeledMDP, RewardMachine, Task

    S = size * size
    P = np.zeros((4, S, S))
    for r, c, (a, (dr, dc)) in itertools.product(
        range(size), range(size), enumerate([(-1, 0), (1, 0), (0, -1), (0, 1)])
    ):
        P[a, r * size + c, min(max(r + dr, 0), size - 1) * size + min(max(c + dc, 0), size - 1)] = 1
    labels = ["i"] * S
    labels[size - 1], labels[(size - 1) * size], labels[S - 1] = "a", "b", "g"
    mdp = LabeledMDP.from_dense(P, labels, ["i", "a", "b", "g"], np.eye(S)[0], gamma=0.9, name="corners")
    m = RewardMachine(
        ["u0", "u1", "u2"],
        ["i", "a", "b", "g"],
        np.array([[0, 1, 0, 0], [1, 1, 2, 1], [2, 2, 2, 0]]),
        np.array([[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 3.0]]),
        name="corners",
    )
    return Task(mdp, m, gamma=0.9, lam=lam, max_nodes=4, name="corners")


def test_explain_points_at_real_differences_first_and_flags_noise():
    """A soft expert (7 × 7 corner grid, λ 0.3) recorded for 3,000 episodes of 60 steps: one
    machine, no negative example. The triples explain gives as beyond sampling noise are, in
    most cases, ones where the true machine separates the two words; the others are flagged as
    consistent with zero and get no visit estimate (reading their empirical difference as the
    true one would promise a refutation that noise cannot deliver)."""
    task = _corner_grid(7, 0.3)
    real = listed = 0
    for seed in range(3):
        r = Learner(EmpiricalPTP(simulate(task, 3000, 60, seed=seed)), irl=None).fit(task)
        assert r.n_nodes == 1 and len(r.negatives) == 0
        e = r.explain(limit=10)
        assert len(e.rare) == 10 and e.beyond_noise >= 3 and e.examined > 10_000
        flags = [x.consistent_with_zero for x in e.rare]
        assert flags == sorted(flags)  # beyond noise first
        for x in e.rare:
            if x.consistent_with_zero:
                assert math.isinf(x.factor) and x.extra == (-1, -1) and "consistent with zero" in str(x)
                continue
            listed += 1
            real += task.machine.final(x.word1) != task.machine.final(x.word2)
            assert 0 < x.lower <= x.tv and "at least" in str(x)
        assert "differ beyond sampling noise at confidence 0.8" in str(e)
    assert listed >= 10 and real >= 0.8 * listed
