"""Simulation of demonstrations (rmtk.product.simulate): reproducibility, feasibility, the first-label
convention and the sampled frequencies against the policy and the MDP kernel."""

from __future__ import annotations

import numpy as np
import pytest

from rmtk import LabeledMDP, RewardMachine, Task, dsl
from rmtk.data import Demonstrations
from rmtk.errors import DataError, ModelError
from rmtk.product.planning import task_policy
from rmtk.product.simulate import RowSampler, node_table, rollout_nodes, sample_categorical, simulate
from rmtk.progress import Progress


# ---------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def stack_task(models_dir):
    return dsl.load(models_dir / "stack.rm").tasks["stack"]


def _machine3() -> RewardMachine:
    # u0 -a-> u1 -b-> u2 -c-> u0 (other letters: self-loops)
    return RewardMachine.from_transitions(
        {("u0", "a"): "u1", ("u1", "b"): "u2", ("u2", "c"): ("u0", 1.0)}, alphabet=["a", "b", "c"]
    )


@pytest.fixture(scope="module")
def small_task() -> Task:
    """A stochastic 5-state MDP (some impossible moves) with a 3-node machine."""
    rng = np.random.default_rng(7)
    S, A = 5, 3
    P = rng.random((A, S, S)) * (rng.random((A, S, S)) < 0.6)
    P[:, np.arange(S), (np.arange(S) + 1) % S] += 0.2  # every row non-empty
    P /= P.sum(axis=2, keepdims=True)
    mdp = LabeledMDP.from_dense(P, ["a", "b", "c", "c", "b"], ["a", "b", "c"], [0.3, 0.0, 0.7, 0.0, 0.0])
    return Task(mdp, _machine3(), lam=1.0, gamma=0.9)


@pytest.fixture(scope="module")
def small_policy(small_task) -> np.ndarray:
    """A per-node stochastic policy that differs strongly between nodes."""
    S, n, A = small_task.mdp.n_states, small_task.machine.n_nodes, small_task.mdp.n_actions
    rng = np.random.default_rng(11)
    pi = rng.dirichlet(np.full(A, 0.7), size=(S, n))
    pi[1, 2] = [0.0, 1.0, 0.0]  # a row with zero-probability actions
    return pi


# ---------------------------------------------------------------------------- basics
def test_shapes_and_dtypes(stack_task):
    d = simulate(stack_task, 1000, 20, seed=0)
    assert isinstance(d, Demonstrations)
    assert d.states.shape == d.actions.shape == (1000, 20)
    assert d.states.dtype == np.int32 and d.actions.dtype == np.int32
    assert np.all(d.lengths == 20)
    assert d.states.min() >= 0 and d.states.max() < stack_task.mdp.n_states
    assert d.actions.min() >= 0 and d.actions.max() < stack_task.mdp.n_actions


def test_seed_determinism_independent_of_chunk(small_task, small_policy):
    a = simulate(small_task, 5000, 12, seed=3, policy=small_policy)
    b = simulate(small_task, 5000, 12, seed=3, policy=small_policy)
    c = simulate(small_task, 5000, 12, seed=3, policy=small_policy, chunk=777)
    d = simulate(small_task, 5000, 12, seed=3, policy=small_policy, chunk=1)
    assert a == b == c == d
    # the first m trajectories do not depend on how many are drawn
    e = simulate(small_task, 1234, 12, seed=3, policy=small_policy, chunk=100)
    assert np.array_equal(e.states, a.states[:1234]) and np.array_equal(e.actions, a.actions[:1234])
    other = simulate(small_task, 5000, 12, seed=4, policy=small_policy)
    assert not np.array_equal(other.states, a.states)


def test_default_policy_is_soft_optimal(small_task):
    pi = task_policy(small_task)
    a = simulate(small_task, 2000, 8, seed=1)
    assert a == simulate(small_task, 2000, 8, seed=1, policy=pi.pi)
    assert a == simulate(small_task, 2000, 8, seed=1, policy=pi)  # a SoftPolicy is accepted


class Counts(Progress):
    def __init__(self):
        self.calls = []

    def count(self, done, total, what="trajectories"):
        self.calls.append((done, total))


def test_progress_called_per_chunk(small_task):
    seen = Counts()
    simulate(small_task, 250, 3, seed=0, chunk=100, progress=seen)
    assert seen.calls == [(100, 250), (200, 250), (250, 250)]
    with pytest.raises(TypeError, match="progress must be a rmtk.progress.Progress"):
        simulate(small_task, 5, 3, seed=0, progress=print)


def test_bad_arguments(small_task, small_policy):
    with pytest.raises(DataError):
        simulate(small_task, 0, 5, seed=0)
    with pytest.raises(DataError):
        simulate(small_task, 5, 0, seed=0)
    with pytest.raises(DataError):
        simulate(small_task, 5, 5, seed=0, chunk=0)
    with pytest.raises(ModelError, match="shape"):
        simulate(small_task, 5, 5, seed=0, policy=small_policy.transpose(1, 0, 2))
    bad = small_policy.copy()
    bad[2, 1] *= 0.5
    with pytest.raises(ModelError, match="sum to"):
        simulate(small_task, 5, 5, seed=0, policy=bad)
    bad = small_policy.copy()
    bad[0, 0, 0] = -0.1
    with pytest.raises(ModelError):
        simulate(small_task, 5, 5, seed=0, policy=bad)


# ---------------------------------------------------------------------------- feasibility
@pytest.mark.parametrize("which", ["stack", "small"])
def test_every_step_is_feasible(which, stack_task, small_task, small_policy):
    task, policy = (stack_task, None) if which == "stack" else (small_task, small_policy)
    d = simulate(task, 20_000, 15, seed=5, policy=policy)
    mdp = task.mdp
    P = mdp.transitions.toarray()
    assert np.all(mdp.initial[d.states[:, 0]] > 0)
    rows = d.states[:, :-1] * mdp.n_actions + d.actions[:, :-1]
    assert np.all(P[rows, d.states[:, 1:]] > 0)
    # actions only where the policy puts mass
    pi = task_policy(task).pi if policy is None else policy
    nodes = rollout_nodes(task, d)
    assert np.all(pi[d.states, nodes, d.actions] > 0)
    if which == "small":
        s1u2 = (d.states == 1) & (nodes == 2)
        assert s1u2.any() and np.all(d.actions[s1u2] == 1)


# ---------------------------------------------------------------------------- frequencies
def _within(count: np.ndarray, total: np.ndarray, p: np.ndarray, z: float = 5.0) -> np.ndarray:
    """Binomial check |count/total − p| ≤ z·se (+ a floor for p near 0 or 1)."""
    freq = count / np.maximum(total, 1)
    se = np.sqrt(p * (1 - p) / np.maximum(total, 1))
    return np.abs(freq - p) <= z * se + 1e-12 + 1.0 / np.maximum(total, 1) * (p * (1 - p) == 0)


def test_action_frequencies_match_policy(small_task, small_policy):
    d = simulate(small_task, 100_000, 10, seed=9, policy=small_policy)
    S, n, A = small_policy.shape
    nodes = rollout_nodes(small_task, d)
    flat = (d.states * n + nodes).ravel()
    counts = np.bincount(flat * A + d.actions.ravel(), minlength=S * n * A).reshape(S, n, A)
    totals = counts.sum(axis=2, keepdims=True)
    seen = totals[..., 0] >= 200
    assert seen.sum() >= 8  # most (state, node) pairs are visited often
    ok = _within(counts, totals, small_policy)
    assert np.all(ok[seen]), np.argwhere(~ok & seen[..., None])
    # never an action of probability 0
    assert np.all(counts[small_policy == 0] == 0)


def test_next_state_frequencies_match_kernel(small_task, small_policy):
    d = simulate(small_task, 100_000, 10, seed=10, policy=small_policy)
    mdp = small_task.mdp
    S, A = mdp.n_states, mdp.n_actions
    rows = (d.states[:, :-1] * A + d.actions[:, :-1]).ravel()
    counts = np.bincount(rows * S + d.states[:, 1:].ravel(), minlength=S * A * S).reshape(S * A, S)
    totals = counts.sum(axis=1, keepdims=True)
    P = mdp.transitions.toarray()
    seen = totals[:, 0] >= 200
    assert seen.sum() >= 10
    ok = _within(counts, totals, P)
    assert np.all(ok[seen])
    assert np.all(counts[P == 0] == 0)
    # start states follow μ0
    start = np.bincount(d.states[:, 0], minlength=S)
    assert np.all(_within(start, np.full(S, d.n_trajectories), mdp.initial))


# ---------------------------------------------------------------------------- exact behaviour
def _cycle_task(start: int) -> Task:
    """Deterministic 4-state MDP: action 0 stays, action 1 moves s → s+1 (mod 4)."""
    S = 4
    P = np.zeros((2, S, S))
    P[0, np.arange(S), np.arange(S)] = 1
    P[1, np.arange(S), (np.arange(S) + 1) % S] = 1
    init = np.zeros(S)
    init[start] = 1
    mdp = LabeledMDP.from_dense(P, ["a", "b", "c", "b"], ["a", "b", "c"], init)
    return Task(mdp, _machine3())


def test_one_hot_policy_on_deterministic_mdp_is_predictable():
    task = _cycle_task(0)
    S, n, A = 4, 3, 2
    pi = np.zeros((S, n, A))
    pi[..., 1] = 1  # move by default ...
    pi[3, 0] = [1, 0]  # ... but stay in state 3 when in node u0
    d = simulate(task, 50, 7, seed=123, policy=pi, chunk=16)
    # s0=0 'a' → u1; move → s1 'b' → u2; move → s2 'c' → u0; move → s3 'b' → u0; stay ...
    assert np.all(d.states == [0, 1, 2, 3, 3, 3, 3])
    assert np.all(d.actions == [1, 1, 1, 0, 0, 0, 0])
    assert np.all(rollout_nodes(task, d) == [1, 2, 0, 0, 0, 0, 0])
    # from s0 = 1 ('b' leaves u_I unchanged): move, move, then stay in s3 (node u0)
    task2 = _cycle_task(1)
    d2 = simulate(task2, 5, 5, seed=0, policy=pi)
    assert np.all(d2.states == [1, 2, 3, 3, 3]) and np.all(d2.actions == [1, 1, 0, 0, 0])
    pi2 = pi.copy()
    pi2[1, 0] = [1, 0]  # at state 1 in node u0: stay
    d3 = simulate(task2, 5, 4, seed=0, policy=pi2)
    assert np.all(d3.states == [1, 1, 1, 1]) and np.all(d3.actions == 0)


def test_first_label_moves_the_machine():
    """s_0 = 0 has label 'a', so u_0 = δ(u_I, a) = u1 and a_0 ~ π(·|s_0, u1), not π(·|s_0, u0)."""
    task = _cycle_task(0)
    pi = np.full((4, 3, 2), 0.5)
    pi[0, 0] = [1, 0]  # would stay if the machine were still in u_I
    pi[0, 1] = [0, 1]  # moves in u1 = δ(u_I, L(s_0))
    d = simulate(task, 1000, 3, seed=1, policy=pi)
    assert np.all(d.actions[:, 0] == 1)
    assert np.all(d.states[:, 1] == 1)
    assert np.all(rollout_nodes(task, d)[:, 0] == 1)
    assert node_table(task)[0, task.machine.initial] == 1


def test_rollout_nodes_with_padding():
    task = _cycle_task(0)
    d = Demonstrations.from_lists([[(0, 1), (1, 1), (2, 0)], [(2, 0)], [(3, 1), (0, 0)]])
    nodes = rollout_nodes(task, d)
    assert nodes.dtype == np.int32
    assert nodes.tolist() == [[1, 2, 0], [0, -1, -1], [0, 1, -1]]


# ---------------------------------------------------------------------------- samplers
def test_sample_categorical_edges():
    cdf = np.cumsum([[0.0, 0.25, 0.0, 0.75, 0.0], [0.5, 0.5, 0.0, 0.0, 0.0]], axis=1)
    u = np.array([0.0, 0.2499999, 0.25, np.nextafter(1.0, 0.0)])
    got0 = sample_categorical(np.repeat(cdf[:1], 4, axis=0), u)
    assert got0.tolist() == [1, 1, 3, 3]
    got1 = sample_categorical(np.repeat(cdf[1:], 4, axis=0), u)
    assert got1.tolist() == [0, 0, 0, 1]


def test_row_sampler_large_row_index_stays_in_row():
    # r + u rounds to r + 1 for u within an ulp of 1 (r ≥ 1): the draw must stay in row r
    R = 1000
    indptr = np.arange(0, 3 * R + 1, 3)
    data = np.tile([0.25, 0.75, 0.0], R)  # the last entry of each row has probability 0
    sampler = RowSampler(indptr, data)
    assert not sampler.deterministic
    rows = np.array([0, 5, R - 1, R - 2])
    u = np.full(4, np.nextafter(1.0, 0.0))
    assert np.all(rows[1:] + u[1:] == rows[1:] + 1.0)  # the rounding really happens (r ≥ 1)
    pos = sampler.sample(rows, u)
    assert np.all(pos == indptr[rows] + 1)
    pos0 = sampler.sample(rows, np.zeros(4))
    assert np.all(pos0 == indptr[rows])


def test_row_sampler_frequencies():
    rng = np.random.default_rng(0)
    p = np.array([0.1, 0.0, 0.6, 0.3])
    sampler = RowSampler([0, 4], p)
    m = 200_000
    draws = sampler.sample(np.zeros(m, dtype=np.intp), rng.random(m))
    counts = np.bincount(draws, minlength=4)
    assert np.all(_within(counts, np.full(4, m), p))


def test_rewards_of_one_step_trajectories_are_refused_before_any_draw():
    """A step's reward is paid on the next state's label: one-step trajectories record no known
    reward, which loading refuses; simulating them with rewards says so at once."""
    import pytest

    from rmtk import dsl
    from rmtk.errors import DataError
    from rmtk.product.simulate import simulate

    task = dsl.load_model("patrol").tasks["patrol"]
    with pytest.raises(DataError, match="horizon of at least 2"):
        simulate(task, 5, 1, seed=0, rewards=True)
    one = simulate(task, 1, 1, seed=0)
    assert one.summary() == "1 trajectory of 1 step (1 step)"
    assert simulate(task, 3, 2, seed=0, rewards=True).summary() == "3 trajectories of 2 steps (6 steps, with rewards)"
