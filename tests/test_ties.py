"""Ties are decided the same way on every machine (rmtk/ties.py, docs/design/02-conventions.md):
values within the tolerance are equal and the documented order decides, so perturbing the
values by ±1e-12 (what another CPU, BLAS kernel or thread count does to the last bits of a
sum) changes no answer: not the helpers', not a greedy expert's, not a shortest-path
expert's, not the policy classes, not what is learned."""

from __future__ import annotations

import attrs
import numpy as np
import pytest

from rmtk import Learner, dsl, ties
from rmtk.active.recorded import MostEvidence, Triples
from rmtk.envs import reacher as R
from rmtk.io.dot import edge_groups
from rmtk.machine.equivalence import policy_class_table
from rmtk.machine.model import RewardMachine
from rmtk.negatives.miners import POLICY_TOL, ExactMiner
from rmtk.product.planning import task_policy
from rmtk.progress import Progress
from rmtk.ptp.exact import ExactPTP, NodePolicyTable, greedy_table, shortest_path_table

SEEDS = range(5)
NOISE = 1e-12


def jitter(x, seed: int) -> np.ndarray:
    """``x`` plus seeded noise uniform in ±1e-12."""
    return np.asarray(x, float) + np.random.default_rng(seed).uniform(-NOISE, NOISE, np.shape(x))


def jitter_rows(x, seed: int) -> np.ndarray:
    """Action distributions (last axis) moved by ±1e-12, kept non-negative and summing to 1."""
    y = np.clip(jitter(x, seed), 0.0, None)
    return y / y.sum(axis=-1, keepdims=True)


def tied_values(seed: int, shape=(200, 6)) -> np.ndarray:
    """Values drawn from a few levels, so that most rows hold exact ties."""
    return np.random.default_rng(100 + seed).integers(0, 4, shape) / 3.0


# ------------------------------------------------------------------ the rule itself
def test_the_lowest_index_among_values_within_the_tolerance_wins():
    v = np.array([[0.2, 0.7, 0.7 + 1e-12, 0.1], [0.5, 0.5, 0.5, 0.5], [0.3, 0.3 - 5e-10, 0.9, 0.9 - 2e-9]])
    assert ties.argbest(v).tolist() == [1, 0, 2]
    assert ties.best(v).tolist() == [[False, True, True, False], [True] * 4, [False, False, True, False]]
    assert ties.argbest(v, lowest=True).tolist() == [3, 0, 0]  # 0.3 − 5e-10 ties with 0.3: index 0
    # relative above magnitude 1: 1000 and 1000 + 5e-7 are tied, 1 and 1 + 5e-7 are not
    assert ties.argbest([1000.0, 1000.0 + 5e-7]) == 0 and ties.argbest([1.0, 1.0 + 5e-7]) == 1
    # NaN is never best; infinities compare as themselves
    assert ties.argbest([np.nan, 1.0, 2.0]) == 2 and ties.argbest([1.0, np.inf, np.inf]) == 1
    assert ties.argbest([-np.inf, -np.inf]) == 0 and ties.argbest([5.0, -np.inf], lowest=True) == 1
    assert ties.argbest(np.ones((3, 0, 2)), axis=0).shape == (0, 2)


def test_ranks_cluster_near_equal_values_and_sorts_fall_through_to_the_next_key():
    v = np.array([0.5, 0.2, 0.5 + 1e-12, np.inf, 0.2 - 1e-13, np.nan, 0.3, np.inf])
    assert ties.ranks(v).tolist() == [2, 0, 2, 3, 0, 4, 1, 3]
    # a chain of neighbours within the tolerance is one cluster
    assert ties.ranks([0.0, 0.8e-9, 1.6e-9, 1.0]).tolist() == [0, 0, 0, 1]
    evidence = np.array([0.4, 0.4 + 1e-13, 0.4 - 1e-13, 0.9])
    cost = np.array([3, 1, 2, 5])
    assert ties.lexsort((cost, -evidence)).tolist() == [3, 1, 2, 0]  # evidence first, then cost
    assert ties.argsort(evidence).tolist() == [0, 1, 2, 3]  # tied: index order
    ints = np.random.default_rng(0).integers(0, 3, (3, 50))
    assert np.array_equal(ties.lexsort(ints), np.lexsort(ints))  # integer keys are np.lexsort's


def test_classes_are_led_by_their_first_row_in_index_order():
    rows = np.array([[0.5, 0.5], [1.0, 0.0], [0.5 + 1e-12, 0.5 - 1e-12], [1.0, 0.0], [0.2, 0.8]])
    assert ties.classes(rows).tolist() == [0, 1, 0, 1, 4]
    number, count = ties.numbered_classes(rows)
    assert number.tolist() == [0, 1, 0, 1, 2] and count == 3
    assert ties.classes([[np.nan, 1.0], [np.nan, 1.0]]).tolist() == [0, 1]  # NaN is alike nothing
    assert ties.classes(np.stack([rows, rows[::-1]])).tolist() == [[0, 1, 0, 1, 4], [0, 1, 2, 1, 2]]
    # not transitive: a row alike the leader joins it; one alike only a member does not
    chain = np.array([[0.0], [0.8e-9], [1.6e-9]])
    assert ties.classes(chain).tolist() == [0, 0, 2]
    assert ties.alike(rows[0], rows[2]) and not ties.alike(rows[0], rows[4])
    assert ties.at_most(1.0 + 1e-12, 1.0) and not ties.at_most(1.0 + 1e-6, 1.0)
    assert POLICY_TOL == ties.TOL


@pytest.mark.parametrize("seed", SEEDS)
def test_the_helpers_answer_the_same_under_noise(seed):
    v = tied_values(seed)
    assert (ties.best(v).sum(axis=1) > 1).sum() > 50  # many exact ties to decide
    noisy = jitter(v, seed)
    assert not np.array_equal(np.argmax(noisy, axis=1), np.argmax(v, axis=1))  # what the noise does to argmax
    first_max = np.array([row.tolist().index(max(row.tolist())) for row in v])  # computed on exact values
    assert np.array_equal(ties.argbest(noisy, axis=1), first_max)
    assert np.array_equal(ties.best(noisy), ties.best(v))
    assert np.array_equal(ties.argbest(noisy, axis=0, lowest=True), ties.argbest(v, axis=0, lowest=True))
    assert np.array_equal(ties.ranks(noisy), ties.ranks(v))
    second = np.random.default_rng(seed).integers(0, 3, v.shape[0])
    assert np.array_equal(ties.lexsort((second, noisy[:, 0])), np.lexsort((second, v[:, 0])))
    assert np.array_equal(ties.classes(noisy[:, :3]), ties.classes(v[:, :3]))
    groups = v[:, :3].reshape(4, 50, 3)  # several groups at once: each as on its own
    assert np.array_equal(ties.classes(groups), np.stack([ties.classes(g) for g in groups]))


# ------------------------------------------------------------------ end to end
@pytest.fixture(scope="module")
def stack_avoid():
    task = dsl.load_model("stack_avoid").tasks["stack_avoid"]
    return task, task_policy(task)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_greedy_expert_is_the_same_under_noise(stack_avoid, seed):
    task, pol = stack_avoid
    noisy = attrs.evolve(pol, pi=jitter(pol.pi, seed))
    assert (ties.best(pol.pi, axis=2).sum(axis=2) > 1).sum() == 122  # (state, node) pairs with two best actions
    assert (np.argmax(noisy.pi, axis=2) != np.argmax(pol.pi, axis=2)).sum() > 50  # argmax follows the noise
    assert np.array_equal(noisy.greedy(), pol.greedy())
    table = greedy_table(pol)
    assert np.array_equal(greedy_table(noisy), table)
    assert np.array_equal(greedy_table(noisy.pi), table)  # the array alone: the same rule


def test_what_is_learned_from_the_greedy_expert_is_the_same_under_noise(stack_avoid):
    task, pol = stack_avoid
    learned = [
        Learner(ptp=ExactPTP(depth=4, source=NodePolicyTable(greedy_table(p)))).fit(task)
        for p in (pol, *(attrs.evolve(pol, pi=jitter(pol.pi, seed)) for seed in (0, 1)))
    ]
    assert learned[0].n_nodes == 3 and len(learned[0].machines) == 2
    for other in learned[1:]:
        assert other.machines == learned[0].machines


@pytest.mark.parametrize("seed", SEEDS)
def test_policy_classes_are_the_same_under_noise(stack_avoid, seed):
    task, pol = stack_avoid
    ptp = ExactPTP(depth=4).build(task, Progress())
    classes = ExactMiner().mine(ptp)
    noisy = ExactMiner().mine(attrs.evolve(ptp, policy=jitter_rows(ptp.policy, seed)))
    assert classes.n_classes < ptp.n_pairs  # words share distributions: a partition to keep
    assert np.array_equal(noisy.pair_class, classes.pair_class)
    assert np.array_equal(noisy.class_state, classes.class_state)
    table = policy_class_table(pol.pi)
    assert (table != np.arange(table.shape[1])).any()  # u2 and u3 act alike
    assert np.array_equal(policy_class_table(jitter_rows(pol.pi, seed)), table)
    source = NodePolicyTable(pol.pi.transpose(1, 0, 2))
    assert np.array_equal(NodePolicyTable(jitter_rows(source.table, seed)).class_table(task), source.class_table(task))


def _perturbed(task, seed: int, slip: float = 0.0):
    """``task`` with its transition probabilities moved by ±1e-12 (rows renormalised); with
    ``slip``, each deterministic move also stays put with probability ``slip``."""
    K = task.mdp.kernel.toarray()
    P = np.where(K > 0, jitter(K, seed), 0.0)
    if slip:
        S, A = task.mdp.n_states, task.mdp.n_actions
        P = (1 - slip) * P
        P[np.arange(S * A), np.repeat(np.arange(S), A)] += slip
    P /= P.sum(axis=1, keepdims=True)
    return attrs.evolve(task, mdp=attrs.evolve(task.mdp, transitions=P))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(("model", "name", "slip"), [("patrol", "patrol", 0.0), ("office", "coffee_mail", 1e-12)])
def test_shortest_path_experts_are_the_same_under_noise(model, name, slip, seed):
    task = dsl.load_model(model).tasks[name]
    table = shortest_path_table(task, 0.1)
    shares = table.max(axis=2)
    assert (shares < shares.max()).sum() > 5  # several (node, state) with tied shortest actions
    noisy = _perturbed(task, seed, slip)
    assert not np.array_equal(noisy.mdp.kernel.toarray(), task.mdp.kernel.toarray())
    assert np.array_equal(shortest_path_table(noisy, 0.1), table)


@pytest.mark.parametrize("seed", SEEDS)
def test_triples_with_equal_evidence_are_asked_in_the_same_order_under_noise(seed):
    rng = np.random.default_rng(seed)
    n = 40
    ids = np.arange(n)
    evidence = rng.integers(0, 3, n) / 7.0
    tri = Triples(
        ids,
        ids,
        ids,
        rng.integers(1, 90, n),
        rng.integers(1, 90, n),
        evidence,
        evidence,
        np.ones((2, n), bool),
        ids * 0,
    )
    order = MostEvidence(most=n).choose(tri, 100)
    noisy = attrs.evolve(tri, evidence=jitter(evidence, seed))
    assert MostEvidence(most=n).choose(noisy, 100) == order
    assert [evidence[i] for i in order] == sorted(evidence, reverse=True)  # most evidence first


def test_rewards_equal_up_to_noise_share_an_edge():
    m = RewardMachine.from_transitions({("u0", "a"): "u1"}, ("a", "b", "c"), nodes=["u0", "u1"])
    noisy = attrs.evolve(m, delta_r=np.array([[0.5, 0.5 + 1e-13, 0.5 - 1e-13], [0.0, 0.0, 0.2]]))
    groups = edge_groups(noisy)
    assert [(u, v, ls) for u, v, _, ls in groups] == [
        (0, 0, ("b", "c")),
        (0, 1, ("a",)),
        (1, 1, ("a", "b")),
        (1, 1, ("c",)),
    ]
    assert groups[0][2] == 0.5 + 1e-13  # the group's first letter's reward


@pytest.mark.parametrize("seed", SEEDS)
def test_the_reacher_expert_takes_the_lower_torque_half_way_between_two(seed):
    ex = R.Expert()
    node = np.zeros(8, np.int64)
    angles = np.repeat(ex.goal_angles(np.zeros((1, 2)), node[:1]), 8, axis=0)  # at the goal: ω* = 0
    half = np.array([-1.5, -0.5, 0.5, 1.5, 2.5, -2.5, 0.2, 0.9])  # wanted change in torque levels
    velocities = np.stack([-half * ex.gain / 2, np.zeros(8)], axis=1)
    levels = ex.greedy_from(angles, velocities, node) // 5 - 2
    assert levels.tolist() == [-2, -1, 0, 1, 2, -2, 0, 1]  # half-way: the lower level (np.rint: to even)
    assert np.array_equal(ex.greedy_from(angles, jitter(velocities, seed), node) // 5 - 2, levels)


@pytest.mark.parametrize("seed", SEEDS)
def test_q_learning_breaks_near_ties_at_random_among_the_same_actions(seed):
    gym = pytest.importorskip("rmtk.gym")
    q = np.array([[0.9**3, 0.5, 0.9**3, 0.9**3 - 1e-3]])
    agent = gym.QLearning(epsilon=0.0)
    picks = [agent.act(q, 0, np.random.default_rng(k), greedy=True) for k in range(40)]
    noisy = [agent.act(jitter(q, seed), 0, np.random.default_rng(k), greedy=True) for k in range(40)]
    assert picks == noisy and set(picks) == {0, 2}
