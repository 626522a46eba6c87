"""Confidence-bound negative examples and weighted MaxSAT (paper section 5)."""

import itertools
from pathlib import Path

import numpy as np
import pytest

from rmtk import dsl, isomorphic
from rmtk.learner.pipeline import DistinctPerNode, Learner
from rmtk.limits import SearchLimits
from rmtk.negatives.miners import ConfidenceMiner, NegativePairs, log_weissman_constant, policy_classes
from rmtk.ptp.tree import PrefixTree, PrefixTreePolicy, Trie, build_prefix_tree
from rmtk.sat.encoders import MaxSatEncoder, SatEncoder
from rmtk.sat.encoding import Problem

MODELS = Path(__file__).resolve().parents[1] / "models"


def hand_policy(counts, nodes, states):
    """A one-level trie (root + 4 words) with the given per-(word, state) action counts."""
    counts, nodes, states = map(np.asarray, (counts, nodes, states))
    order = np.lexsort((states, nodes))
    trie = Trie(np.array([-1, 0, 0, 0, 0]), np.array([-1, 0, 1, 2, 3]), np.array([0, 1, 1, 1, 1]))
    tree = PrefixTree(trie, nodes[order], states[order], 1)
    c = counts[order]
    return PrefixTreePolicy(tree, c / c.sum(axis=1, keepdims=True), counts=c)


def brute_force(counts, nodes, states, alpha):
    c = log_weissman_constant(counts.shape[1])
    out = set()
    for a, b in itertools.combinations(range(len(counts)), 2):
        if states[a] != states[b]:
            continue
        pa, pb = counts[a] / counts[a].sum(), counts[b] / counts[b].sum()
        eps = 0.5 * np.abs(pa - pb).sum()
        delta = np.exp(c - counts[a].sum() * eps**2 / 2) + np.exp(c - counts[b].sum() * eps**2 / 2)
        if delta <= alpha:
            out.add((min(nodes[a], nodes[b]), max(nodes[a], nodes[b])))
    return out


def test_miner_hand_computed():
    counts = np.array([[100, 0], [0, 100], [50, 50], [3, 0], [60, 40], [40, 60]])
    nodes, states = np.array([1, 2, 3, 4, 1, 2]), np.array([0, 0, 0, 0, 1, 1])
    neg = ConfidenceMiner(alpha=0.05).mine(hand_policy(counts, nodes, states))
    # {1,2}: eps = 1, delta = 2·2·e^-50 ≈ 0; {1,3}, {2,3}: eps = 0.5, delta = 2·2·e^-12.5 = 1.5e-5;
    # {1,4}: word 4 was seen 3 times < 2(log 2 − log 0.05) = 7.4: pruned; at state 1: eps 0.2, not enough
    assert {tuple(p) for p in neg.pairs} == {(1, 2), (1, 3), (2, 3)}
    assert np.isclose(np.exp(neg.log_delta[1]), 4 * np.exp(-12.5))
    assert {tuple(p) for p in neg.pairs} == brute_force(counts, nodes, states, 0.05)
    assert ConfidenceMiner(alpha=0.05).min_count(2) == pytest.approx(2 * (np.log(2) - np.log(0.05)))


def test_miner_random_against_brute_force():
    rng = np.random.default_rng(0)
    for A in (2, 3, 9):
        counts = rng.integers(0, 40, size=(12, A)) * (rng.random((12, A)) < 0.7)
        counts[:, 0] += 1
        nodes = np.repeat(np.arange(1, 5), 3)
        states = np.tile(np.arange(3), 4)
        for alpha in (0.5, 0.05, 1e-3):
            neg = ConfidenceMiner(alpha=alpha, batch=50).mine(hand_policy(counts, nodes, states))
            assert {tuple(p) for p in neg.pairs} == brute_force(counts, nodes, states, alpha)


def test_miner_log_space_large_action_set():
    """|A| = 25 as in the reacher: 2^25 − 2 handled in log space, no overflow."""
    assert log_weissman_constant(25) == pytest.approx(np.log(2**25 - 2))
    counts = np.zeros((4, 25), dtype=np.int64)
    counts[0, 0] = counts[1, 1] = 5000
    counts[2, 0] = counts[3, 0] = 5000
    neg = ConfidenceMiner(alpha=1e-5).mine(hand_policy(counts, [1, 2, 3, 4], [0, 0, 0, 0]))
    assert {tuple(p) for p in neg.pairs} == {(1, 2), (2, 3), (2, 4)}
    assert np.all(np.isfinite(neg.log_delta))


def test_evidence_weights_and_false_positives():
    counts = np.array([[100, 0], [0, 100], [50, 50], [90, 10]])
    neg = ConfidenceMiner(alpha=0.05).mine(hand_policy(counts, [1, 2, 3, 4], [0, 0, 0, 0]))
    w = neg.weights("evidence")
    assert np.all(w >= 1) and w[0] > w[-1] and np.all(neg.weights("unit") == 1)
    # truth: words 1 and 4 share a node, as do 2 and 3
    trie_nodes = np.array([0, 0, 1, 1, 0])
    classes = np.array([[0, 1]])
    fp = neg.false_positives(trie_nodes, classes)
    wrong = {tuple(p) for p, f in zip(neg.pairs, fp) if f}
    assert wrong == {p for p in [(1, 4), (2, 3)] if p in {tuple(q) for q in neg.pairs}}


# ------------------------------------------------------------------ MaxSAT robustness
def exact_pairs(task, depth):
    tree = build_prefix_tree(task.mdp, depth)
    ptp = DistinctPerNode().prefix_tree_policy(task, tree)
    return tree, ptp, policy_classes(ptp).distinct_pairs()


def test_maxsat_drops_injected_false_positives():
    task = dsl.load(MODELS / "patrol.rm").tasks["patrol"]
    tree, ptp, pairs = exact_pairs(task, 6)
    nodes = tree.trie.run(task.machine.delta_u, 0, task.letter_of_proposition)
    rng = np.random.default_rng(7)
    same = [(p, q) for p, q in itertools.combinations(range(1, tree.trie.n_nodes), 2) if nodes[p] == nodes[q]]
    fake = np.array([same[i] for i in rng.choice(len(same), 15, replace=False)])
    allpairs = np.concatenate([pairs, fake])
    problem = Problem(tree.trie, 4, NegativePairs.of(allpairs))
    res = MaxSatEncoder().search(problem, SearchLimits(max_nodes=4))
    assert res.cost <= len(fake)
    truth = task.machine.with_rewards(np.zeros((4, 4)))
    machines = [dsl.loads(dsl.dumps(truth)).machines["patrol"]]
    from rmtk.machine.model import RewardMachine

    learned = [
        RewardMachine(nodes=range(4), alphabet="ABCD", delta_u=s.delta_u, delta_r=np.zeros((4, 4)))
        for s in res.solutions
    ]
    assert any(isomorphic(m, machines[0], rewards=False) for m in learned)
    fake_idx = set(range(len(pairs), len(allpairs)))
    for s in res.solutions:  # only injected examples are ever dropped
        assert set(s.dropped) <= fake_idx
    # hard SAT cannot satisfy them all with 4 nodes
    hard = SatEncoder().search(problem, SearchLimits(max_nodes=4))
    assert hard.n_nodes is None


def test_learner_on_demonstrations_with_truth():
    import attrs

    from rmtk.product.simulate import simulate

    task = attrs.evolve(dsl.load(MODELS / "stack.rm").tasks["stack"], lam=0.05)
    demos = simulate(task, 3000, 20, seed=1)
    for maxsat in (False, True):
        encoder = MaxSatEncoder() if maxsat else SatEncoder()
        r = Learner(max_nodes=3, nodes=3, encoder=encoder).fit_demonstrations(task, demos)
        assert len(r.negatives) > 50 and r.false_positive_rate == 0.0
        assert any(r.isomorphic_to_truth())
        truth = r.isomorphic_to_truth().index(True)
        assert r.verdicts[truth].consistent
        if maxsat:
            assert r.search.cost == 0 and r.dropped(0) == []


def test_dropped_policy_classes_are_the_pairs_the_machine_merges():
    """MaxSAT on exact policy classes drops word pairs (the classes read as pairs): ``dropped``
    names them, and at the optimum they are exactly the negative examples the machine violates."""
    from rmtk.learner.pipeline import ExactPTP

    task = dsl.load(MODELS / "stack.rm").tasks["stack"]
    r = Learner(ExactPTP(depth=6), nodes=2, max_nodes=2, encoder=MaxSatEncoder(), irl=None, max_solutions=1).fit(task)
    assert r.negatives is None and r.classes is not None
    trie, props, m = r.tree.trie, r.mdp.propositions, r.machines[0]
    word = lambda p: tuple(props[k] for k in trie.word(int(p)))  # noqa: E731
    pairs = [(word(p), word(q)) for p, q in r.classes.distinct_pairs()]
    merged = {(a, b) for a, b in pairs if m.final(a) == m.final(b)}
    dropped = r.dropped(0)
    assert 0 < len(dropped) == r.search.cost < len(pairs)
    assert set(dropped) == merged


def test_unsat_message_suggests_maxsat():
    from rmtk.product.simulate import simulate

    task = dsl.load(MODELS / "stack_avoid.rm").tasks["stack_avoid"]
    demos = simulate(task, 500, 20, seed=0)
    r = Learner(max_nodes=1).fit_demonstrations(task, demos)
    assert len(r.negatives) > 0 and r.n_nodes is None
    assert "no machine with at most 1 node " in r.search.message and "--maxsat" in r.search.message
