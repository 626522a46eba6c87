"""MaxCausalEnt IRL baselines (rmtk.rewards.baselines): the soft Bellman solvers against the planner,
the exact gradient against finite differences, and known-answer recovery on a chain."""

from __future__ import annotations

import numpy as np
import pytest

from rmtk import LabeledMDP, ModelError, RewardMachine, Task, dsl
from rmtk.data import Demonstrations
from rmtk.learner.evaluation import log_likelihood, sample_demonstrations
from rmtk.product.planning import soft_bellman, task_policy
from rmtk.product.simulate import simulate
from rmtk.rewards.baselines import (
    IRLFit,
    MaxCausalEntObjective,
    d_irl,
    dense_features,
    f_irl,
    label_features,
    maxcausalent_irl,
    soft_policy,
    uniform_policy,
)

GOAL_REWARD = 2.0


def chain(S: int = 5, slip: float = 0.1, gamma: float = 0.9) -> LabeledMDP:
    """A chain: action 0 moves left, 1 right (each slips the other way with ``slip``); the
    last state alone is labeled ``g``."""
    P = np.zeros((2, S, S))
    for s in range(S):
        for a, d in ((0, -1), (1, 1)):
            P[a, s, min(max(s + d, 0), S - 1)] += 1 - slip
            P[a, s, min(max(s - d, 0), S - 1)] += slip
    return LabeledMDP.from_dense(P, ["o"] * (S - 1) + ["g"], ["o", "g"], gamma=gamma, name="chain")


def goal_machine() -> RewardMachine:
    return RewardMachine.from_transitions({("u", "g"): ("u", GOAL_REWARD)}, ["o", "g"], name="goal")


def random_mdp(seed: int, S: int = 6, A: int = 3, K: int = 3) -> LabeledMDP:
    rng = np.random.default_rng(seed)
    P = rng.random((A, S, S)) * (rng.random((A, S, S)) < 0.5)
    P[:, np.arange(S), rng.integers(0, S, S)] += 0.1
    P /= P.sum(axis=2, keepdims=True)
    labels = rng.integers(0, K, S)
    labels[:K] = np.arange(K)
    return LabeledMDP.from_dense(P, labels.tolist(), [f"p{k}" for k in range(K)], gamma=0.95)


@pytest.fixture(scope="module")
def patrol(models_dir):
    return dsl.load(models_dir / "patrol.rm").tasks["patrol"]


# ---------------------------------------------------------------- features and policies
def test_features_and_uniform(patrol):
    mdp = patrol.mdp
    assert np.array_equal(dense_features(mdp), np.eye(16))
    F = label_features(mdp)
    assert F.shape == (16, 4) and np.array_equal(F.argmax(1), mdp.labels) and np.all(F.sum(1) == 1)
    U = uniform_policy(mdp)
    assert U.shape == (16, 4) and np.allclose(U, 0.25)


def test_stationary_soft_policy_matches_planner():
    """A state reward that depends on the label only is a 1-node machine: both solvers agree."""
    mdp = random_mdp(3)
    rK = np.array([0.5, -1.0, 2.0])
    machine = RewardMachine(nodes=["u"], alphabet=mdp.propositions, delta_u=[[0, 0, 0]], delta_r=[rK])
    ref = soft_bellman(mdp, machine, gamma=0.95, lam=0.7).pi[:, 0, :]
    pi = soft_policy(mdp, rK[mdp.labels], gamma=0.95, lam=0.7)
    assert pi.shape == (6, 3) and np.abs(pi - ref).max() < 1e-9


@pytest.mark.parametrize("model", ["patrol", "stack", "labyrinth"])
def test_stationary_baseline_is_the_one_node_planner(models_dir, model):
    """The baselines solve a state reward with the planner's soft Bellman core (one node, entry
    reward r(s')): with the per-label reward of a one-node machine, the fitted model's stationary
    policy is the machine's soft-optimal policy up to rounding."""
    mdp = next(iter(dsl.load(models_dir / f"{model}.rm").tasks.values())).mdp
    K = mdp.n_propositions
    rK = np.linspace(-1.0, 2.0, K)
    machine = RewardMachine(nodes=["u"], alphabet=mdp.propositions, delta_u=[[0] * K], delta_r=[rK])
    demos = sample_demonstrations(mdp, uniform_policy(mdp), n=3, horizon=2, seed=0)
    for lam in (0.5, 1.0):
        ref = soft_bellman(mdp, machine, lam=lam).pi[:, 0, :]
        obj = MaxCausalEntObjective(mdp, demos, label_features(mdp), lam=lam, stationary=True, bellman_tol=1e-14)
        assert np.abs(np.exp(obj.policy_log(rK)) - ref).max() < 1e-12
        assert np.abs(soft_policy(mdp, rK[mdp.labels], lam=lam) - ref).max() < 1e-8  # default tolerance


def test_finite_soft_policy_by_hand():
    """Backward recursion checked against a slow loop over states and actions."""
    mdp = random_mdp(4)
    P = mdp.P
    r = np.random.default_rng(0).normal(size=mdp.n_states)
    T, lam, g = 4, 0.5, 0.9
    pi = soft_policy(mdp, r, horizon=T, gamma=g, lam=lam)
    V = np.zeros(mdp.n_states)
    for t in range(T - 1, -1, -1):
        Q = np.array(
            [
                [sum(P[a, s, s2] * (r[s2] + g * V[s2]) for s2 in range(mdp.n_states)) for a in range(mdp.n_actions)]
                for s in range(mdp.n_states)
            ]
        )
        ref = np.exp(Q / lam) / np.exp(Q / lam).sum(1, keepdims=True)
        assert np.abs(pi[t] - ref).max() < 1e-12
        V = lam * np.log(np.exp(Q / lam).sum(1))
    # undiscounted finite horizon by default; its policy depends on the step
    assert soft_policy(mdp, r, horizon=3).shape == (3, 6, 3)


# ---------------------------------------------------------------- objective and gradient
def _fd(obj, theta, eps):
    E = np.eye(theta.size)
    return np.array([(obj(theta + eps * e)[0] - obj(theta - eps * e)[0]) / (2 * eps) for e in E])


@pytest.mark.parametrize("stationary", [False, True])
@pytest.mark.parametrize("kind", ["dense", "label", "random"])
def test_gradient_matches_finite_differences(stationary, kind):
    mdp = random_mdp(5)
    rng = np.random.default_rng(1)
    pi = np.full((mdp.n_states, mdp.n_actions), 1.0 / mdp.n_actions)
    demos = sample_demonstrations(mdp, pi, n=40, horizon=6, seed=2)
    # ragged lengths: cut some trajectories short
    lengths = rng.integers(1, 7, 40)
    keep = np.arange(6)[None, :] < lengths[:, None]
    demos = Demonstrations(np.where(keep, demos.states, -1), np.where(keep, demos.actions, -1), lengths)
    phi = {"dense": dense_features(mdp), "label": label_features(mdp), "random": rng.normal(size=(6, 4))}[kind]
    kw = dict(stationary=True, bellman_tol=1e-14) if stationary else dict(horizon=8, gamma=0.8)
    obj = MaxCausalEntObjective(mdp, demos, phi, lam=0.7, **kw)
    theta = rng.normal(size=phi.shape[1])
    ll, g = obj(theta)
    # the value is the log-likelihood of the demonstrated actions under the model's policy
    assert ll == pytest.approx(log_likelihood(demos, mdp, np.exp(obj.policy_log(theta))).sum(), rel=1e-12)
    fd = _fd(obj, theta, 1e-5)
    assert np.abs(fd - g).max() <= 1e-6 * max(1.0, np.abs(g).max())


def test_gradient_is_invariant_to_constant_reward():
    """Every policy is unchanged by a constant added to the reward: the dense gradient sums to 0."""
    mdp = random_mdp(6)
    demos = sample_demonstrations(mdp, uniform_policy(mdp), n=30, horizon=5, seed=0)
    for kw in (dict(), dict(stationary=True)):
        obj = MaxCausalEntObjective(mdp, demos, dense_features(mdp), **kw)
        _, g = obj(np.random.default_rng(0).normal(size=6))
        assert abs(g.sum()) < 1e-8 * np.abs(g).max()


# ---------------------------------------------------------------- known answers
@pytest.fixture(scope="module")
def chain_stationary_data():
    mdp = chain()
    task = Task(mdp, goal_machine(), lam=1.0)
    true = soft_bellman(mdp, task.machine, gamma=0.9).pi[:, 0, :]
    demos = simulate(task, 20_000, 10, seed=0)
    return mdp, true, demos


def _centered(x):
    return x - x.mean()


def test_d_irl_recovers_stationary_policy(chain_stationary_data):
    mdp, true, demos = chain_stationary_data
    fit = d_irl(mdp, demos, stationary=True, gamma=0.9)
    assert isinstance(fit, IRLFit) and fit.converged and fit.stationary and fit.horizon is None
    assert fit.policy.shape == (5, 2) and np.abs(fit.policy - true).max() < 0.02
    # reward: the truth up to a constant
    r_true = np.array([0, 0, 0, 0, GOAL_REWARD])
    assert np.abs(_centered(fit.reward) - _centered(r_true)).max() < 0.1
    # maximum likelihood: at least the truth's likelihood, and not much more (about χ²_4 / 2)
    gap = fit.log_likelihood - log_likelihood(demos, mdp, true).sum()
    assert -1e-6 <= gap < 15
    assert fit.log_likelihood == pytest.approx(log_likelihood(demos, mdp, fit.policy).sum(), rel=1e-12)
    assert fit.average_log_likelihood == pytest.approx(fit.log_likelihood / 20_000)


def test_d_irl_recovers_finite_horizon_policy():
    mdp = chain()
    r_true = np.array([0, 0, 0, 0, GOAL_REWARD])
    true = soft_policy(mdp, r_true, horizon=10)
    assert np.abs(true[0] - true[-1]).max() > 0.1  # really time-dependent
    demos = sample_demonstrations(mdp, true, n=20_000, horizon=10, seed=1)
    fit = d_irl(mdp, demos)
    assert fit.converged and fit.horizon == 10 and fit.gamma == 1.0
    assert fit.policy.shape == (10, 5, 2) and np.abs(fit.policy - true).max() < 0.05
    assert np.abs(_centered(fit.reward) - _centered(r_true)).max() < 0.1
    gap = fit.log_likelihood - log_likelihood(demos, mdp, true).sum()
    assert -1e-6 <= gap < 15


def test_f_irl_recovers_label_reward(chain_stationary_data):
    mdp, true, demos = chain_stationary_data
    fit = f_irl(mdp, demos, stationary=True, gamma=0.9)
    assert fit.theta.shape == (2,) and fit.converged
    assert fit.theta[1] - fit.theta[0] == pytest.approx(GOAL_REWARD, abs=0.05)
    assert np.abs(fit.policy - true).max() < 0.02


def test_gradient_ascent_agrees_with_lbfgs(chain_stationary_data):
    mdp, _, demos = chain_stationary_data
    a = f_irl(mdp, demos[:2000], stationary=True, gamma=0.9)
    b = f_irl(mdp, demos[:2000], stationary=True, gamma=0.9, method="gradient", lr=0.5, iterations=5000, tol=1e-7)
    assert b.converged
    assert np.abs(a.policy - b.policy).max() < 1e-4


def test_fit_is_deterministic(chain_stationary_data):
    mdp, _, demos = chain_stationary_data
    a = d_irl(mdp, demos[:500], seed=3)
    b = d_irl(mdp, demos[:500], seed=3)
    assert np.array_equal(a.theta, b.theta) and np.array_equal(a.policy, b.policy)


def test_l2_keeps_unvisited_rewards_finite():
    """Demonstrations that never go right: D-IRL pushes the unvisited states' rewards down;
    a ridge penalty keeps them bounded."""
    mdp = chain()
    demos = Demonstrations.full(np.zeros((50, 4), dtype=int), np.zeros((50, 4), dtype=int))
    free = d_irl(mdp, demos, stationary=True, gamma=0.9, iterations=200)
    ridge = d_irl(mdp, demos, stationary=True, gamma=0.9, l2=1.0)
    assert ridge.converged and np.abs(ridge.theta).max() < 5
    assert free.policy[0, 0] > ridge.policy[0, 0] > 0.5


def test_patrol_baselines_run(patrol):
    """The appendix D setting: 2500 trajectories of 10 steps on the 16-state patrol MDP."""
    demos = simulate(patrol, 2500, 10, seed=0)
    mdp = patrol.mdp
    true_ll = log_likelihood(demos, mdp, task_policy(patrol), machine=patrol.machine).sum()
    for fit in (d_irl(mdp, demos), d_irl(mdp, demos, stationary=True), f_irl(mdp, demos, stationary=True)):
        assert fit.converged
        assert fit.log_likelihood >= log_likelihood(demos, mdp, uniform_policy(mdp)).sum()
        assert fit.log_likelihood <= true_ll + 50  # a static reward cannot beat the machine by much
        assert fit.seconds < 5


def test_errors():
    mdp = chain()
    demos = Demonstrations.full(np.zeros((2, 4), dtype=int), np.zeros((2, 4), dtype=int))
    with pytest.raises(ModelError, match="features"):
        maxcausalent_irl(mdp, demos, np.eye(3))
    with pytest.raises(ModelError, match="shorter"):
        d_irl(mdp, demos, horizon=2)
    with pytest.raises(ModelError, match="stationary"):
        d_irl(mdp, demos, stationary=True, horizon=5)
    with pytest.raises(ModelError, match="gamma"):
        d_irl(mdp, demos, stationary=True, gamma=1.0)
    with pytest.raises(ModelError, match="method"):
        d_irl(mdp, demos, method="newton")
    with pytest.raises(ModelError, match="lambda"):
        d_irl(mdp, demos, lam=0)
