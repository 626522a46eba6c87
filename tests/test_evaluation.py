"""Evaluation metrics (rmtk.learner.evaluation): log-likelihood against a slow per-step reference,
rollouts and returns scored by a second machine, seeding."""

from __future__ import annotations

import numpy as np
import pytest

from rmtk import LabeledMDP, ModelError, RewardMachine, dsl
from rmtk.data import Demonstrations
from rmtk.learner.evaluation import (
    average_log_likelihood,
    average_return,
    log_likelihood,
    node_sequence,
    rollout,
    rollout_returns,
    sample_demonstrations,
)
from rmtk.product.planning import task_policy
from rmtk.product.simulate import rollout_nodes, simulate
from rmtk.rewards.baselines import uniform_policy

NEXT, BACK = 0, 1


def ring(slip: float = 0.0) -> LabeledMDP:
    """Four states in a ring labeled A B C D; ``next`` goes to s+1, ``back`` to s−1 (mod 4),
    each slipping to the other direction with ``slip``; start in A."""
    P = np.zeros((2, 4, 4))
    for s in range(4):
        P[NEXT, s, (s + 1) % 4] += 1 - slip
        P[NEXT, s, (s - 1) % 4] += slip
        P[BACK, s, (s - 1) % 4] += 1 - slip
        P[BACK, s, (s + 1) % 4] += slip
    return LabeledMDP.from_dense(P, list("ABCD"), list("ABCD"), [1, 0, 0, 0], actions=["next", "back"])


def patrol_machine(reward: float = 1.0) -> RewardMachine:
    return RewardMachine.from_transitions(
        {("u0", "A"): "u1", ("u1", "B"): "u2", ("u2", "C"): "u3", ("u3", "D"): ("u0", reward)},
        list("ABCD"),
        nodes=["u0", "u1", "u2", "u3"],
        name="patrol",
    )


def seen_c_machine() -> RewardMachine:
    """w0 --C--> w1 (absorbing); the alphabet in another order than the MDP's."""
    return RewardMachine.from_transitions({("w0", "C"): "w1"}, list("DCBA"), nodes=["w0", "w1"])


@pytest.fixture(scope="module")
def patrol(models_dir):
    return dsl.load(models_dir / "patrol.rm").tasks["patrol"]


def _ragged(demos: Demonstrations, seed: int) -> Demonstrations:
    rng = np.random.default_rng(seed)
    N, T = demos.states.shape
    lengths = rng.integers(1, T + 1, N)
    keep = np.arange(T)[None, :] < lengths[:, None]
    return Demonstrations(np.where(keep, demos.states, -1), np.where(keep, demos.actions, -1), lengths)


def _slow_ll(demos, mdp, pi, machine=None):
    out = []
    for i in range(demos.n_trajectories):
        total, u = 0.0, None if machine is None else machine.initial
        for t in range(int(demos.lengths[i])):
            s, a = int(demos.states[i, t]), int(demos.actions[i, t])
            if machine is not None:
                u = machine.step(u, mdp.label(s))
                p = pi[s, u, a]
            else:
                p = pi[s, a] if pi.ndim == 2 else pi[t, s, a]
            total += np.log(p)
        out.append(total)
    return np.array(out)


# ---------------------------------------------------------------- log-likelihood
def test_log_likelihood_matches_slow_reference(patrol):
    mdp = patrol.mdp
    pol = task_policy(patrol)
    demos = _ragged(simulate(patrol, 200, 12, seed=1), 0)
    rng = np.random.default_rng(2)
    # product policy tracking the machine (letter map by name)
    ll = log_likelihood(demos, mdp, pol, machine=patrol.machine)
    assert ll.shape == (200,) and np.allclose(ll, _slow_ll(demos, mdp, pol.pi, patrol.machine), rtol=0, atol=1e-10)
    # same through an explicit letter map and a machine with a permuted alphabet
    perm = patrol.machine.with_alphabet_order(list("DCBA"))
    ll2 = log_likelihood(demos, mdp, pol.pi, machine=perm, letter=[3, 2, 1, 0])
    assert np.allclose(ll2, ll, rtol=0, atol=1e-12)
    # Markovian and time-dependent policies
    M = rng.dirichlet(np.ones(4), size=16)
    assert np.allclose(log_likelihood(demos, mdp, M), _slow_ll(demos, mdp, M), rtol=0, atol=1e-10)
    Tm = rng.dirichlet(np.ones(4), size=(15, 16))
    assert np.allclose(log_likelihood(demos, mdp, Tm), _slow_ll(demos, mdp, Tm), rtol=0, atol=1e-10)
    assert average_log_likelihood(demos, mdp, M) == pytest.approx(_slow_ll(demos, mdp, M).mean())


def test_node_sequence_matches_simulate(patrol):
    demos = _ragged(simulate(patrol, 100, 9, seed=4), 1)
    assert np.array_equal(node_sequence(demos, patrol.mdp, patrol.machine), rollout_nodes(patrol, demos))


def test_uniform_log_likelihood(patrol):
    demos = _ragged(simulate(patrol, 50, 10, seed=0), 3)
    ll = log_likelihood(demos, patrol.mdp, uniform_policy(patrol.mdp))
    assert np.allclose(ll, -demos.lengths * np.log(4), rtol=0, atol=1e-12)
    full = simulate(patrol, 50, 10, seed=0)
    assert average_log_likelihood(full, patrol.mdp, uniform_policy(patrol.mdp)) == pytest.approx(-10 * np.log(4))


def test_zero_probability_and_clip():
    mdp = ring()
    demos = Demonstrations.from_lists([[(0, NEXT), (1, BACK)], [(0, NEXT)]])
    pi = np.tile([1.0, 0.0], (4, 1))
    ll = log_likelihood(demos, mdp, pi)
    assert ll[0] == -np.inf and ll[1] == 0.0
    # clip 0.05: max(π, 0.05) renormalised → (1/1.05, 0.05/1.05)
    llc = log_likelihood(demos, mdp, pi, clip=0.05)
    assert np.allclose(llc, [np.log(1 / 1.05) + np.log(0.05 / 1.05), np.log(1 / 1.05)])
    with pytest.raises(ModelError, match="clip"):
        log_likelihood(demos, mdp, pi, clip=0.6)


def test_policy_shape_errors():
    mdp = ring()
    demos = Demonstrations.from_lists([[(0, NEXT), (1, NEXT), (2, NEXT)]])
    with pytest.raises(ModelError, match="covers 2 steps"):
        log_likelihood(demos, mdp, np.full((2, 4, 2), 0.5))
    with pytest.raises(ModelError, match="product policy"):
        log_likelihood(demos, mdp, np.full((4, 2), 0.5), machine=patrol_machine())
    with pytest.raises(ModelError, match="sum to"):
        log_likelihood(demos, mdp, np.full((4, 2), 0.3))


# ---------------------------------------------------------------- rollouts and returns
def test_average_return_deterministic_markovian():
    """Always ``next`` from A: the patrol completes on entering D at steps 2, 6, 10."""
    mdp, m = ring(), patrol_machine(10.0)
    pi = np.tile([1.0, 0.0], (4, 1))
    assert average_return(mdp, pi, None, m, n=7, horizon=12, seed=0) == 30.0
    assert average_return(mdp, pi, None, m, n=7, horizon=10, seed=0) == 20.0
    assert average_return(mdp, pi, None, m, n=7, horizon=2, seed=0) == 0.0
    assert average_return(mdp, pi, None, m, n=7, horizon=3, seed=0) == 10.0


def test_average_return_deterministic_product_policy():
    """``next`` until C is seen, then ``back``: states 0 1 2 1 0 3 2 1 0 3 2 1 0; the patrol
    machine reads A B C B A D → one completion (step 4), then C B A D C B A: none."""
    mdp, m = ring(), patrol_machine(10.0)
    w = seen_c_machine()
    pi = np.zeros((4, 2, 2))
    pi[:, 0, NEXT] = 1.0  # w0
    pi[:, 1, BACK] = 1.0  # w1
    states, actions = rollout(mdp, pi, machine=w, n=3, horizon=12, seed=0)
    assert states.tolist() == [[0, 1, 2, 1, 0, 3, 2, 1, 0, 3, 2, 1, 0]] * 3
    assert actions[0].tolist() == [NEXT, NEXT] + [BACK] * 10
    assert average_return(mdp, pi, w, m, n=3, horizon=12, seed=0) == 10.0
    assert average_return(mdp, pi, w, m, n=3, horizon=4, seed=0) == 0.0
    assert average_return(mdp, pi, w, m, n=3, horizon=5, seed=0) == 10.0


def _exact_expected_return(mdp, pi, pm, sm, horizon):
    """Forward distribution over (s, u_policy, v_score), slow reference."""
    S, A = mdp.n_states, mdp.n_actions
    P = mdp.P
    dist = {}
    for s in range(S):
        if mdp.initial[s] > 0:
            key = (s, pm.step(pm.initial, mdp.label(s)), sm.step(sm.initial, mdp.label(s)))
            dist[key] = dist.get(key, 0.0) + mdp.initial[s]
    total = 0.0
    for _ in range(horizon):
        new = {}
        for (s, u, v), p in dist.items():
            for a in range(A):
                for s2 in range(S):
                    q = p * pi[s, u, a] * P[a, s, s2]
                    if q == 0:
                        continue
                    lab = mdp.label(s2)
                    total += q * sm.reward(v, lab)
                    key = (s2, pm.step(u, lab), sm.step(v, lab))
                    new[key] = new.get(key, 0.0) + q
        dist = new
    return total


def test_average_return_stochastic_matches_exact():
    mdp, m = ring(slip=0.2), patrol_machine(1.0)
    w = seen_c_machine()
    pi = np.random.default_rng(0).dirichlet(np.ones(2), size=(4, 2))
    exact = _exact_expected_return(mdp, pi, w, m, 15)
    R = rollout_returns(mdp, pi, w, m, n=200_000, horizon=15, seed=1)
    assert R.shape == (200_000,)
    assert abs(R.mean() - exact) < 4 * R.std() / np.sqrt(R.size)


def test_average_return_patrol_true_policy(patrol):
    """The expert's policy on patrol scores far above the uniform one."""
    mdp, m = patrol.mdp, patrol.machine
    good = average_return(mdp, task_policy(patrol), m, m, n=2000, horizon=50, seed=0)
    unif = average_return(mdp, uniform_policy(mdp), None, m, n=2000, horizon=50, seed=0)
    assert good > unif > 0


def test_rollouts_are_seeded():
    mdp, m = ring(slip=0.3), patrol_machine()
    pi = np.random.default_rng(0).dirichlet(np.ones(2), size=4)
    a = rollout(mdp, pi, n=500, horizon=20, seed=7)
    b = rollout(mdp, pi, n=500, horizon=20, seed=7, chunk=64)
    c = rollout(mdp, pi, n=500, horizon=20, seed=8)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    assert not np.array_equal(a[0], c[0])
    # prefix property: the first m rollouts of a larger run
    d = rollout(mdp, pi, n=100, horizon=20, seed=7)
    assert np.array_equal(d[0], a[0][:100])
    r1 = average_return(mdp, pi, None, m, n=500, horizon=20, seed=3)
    r2 = average_return(mdp, pi, None, m, n=500, horizon=20, seed=3, chunk=77)
    assert r1 == r2


def test_rollout_frequencies_and_time_dependent_policy():
    mdp = ring(slip=0.25)
    # step 0 always next, step 1 always back, step 2 uniform
    pi = np.zeros((3, 4, 2))
    pi[0, :, NEXT] = 1.0
    pi[1, :, BACK] = 1.0
    pi[2] = 0.5
    states, actions = rollout(mdp, pi, n=40_000, horizon=3, seed=5)
    assert np.all(actions[:, 0] == NEXT) and np.all(actions[:, 1] == BACK)
    assert abs(actions[:, 2].mean() - 0.5) < 0.01
    assert np.all(states[:, 0] == 0)
    assert abs(np.mean(states[:, 1] == 1) - 0.75) < 0.01  # next from A: B with 0.75
    demos = sample_demonstrations(mdp, pi, n=10, horizon=3, seed=5)
    assert demos.states.shape == (10, 3) and np.array_equal(demos.states, states[:10, :3])
    with pytest.raises(ModelError, match="covers 3 steps"):
        rollout(mdp, pi, n=1, horizon=4, seed=0)


def test_rollout_product_policy_matches_simulate_distribution(patrol):
    """Rollouts of the expert's product policy visit (state, node) pairs like simulate()."""
    pol = task_policy(patrol)
    d1 = sample_demonstrations(patrol.mdp, pol, machine=patrol.machine, n=20_000, horizon=6, seed=0)
    d2 = simulate(patrol, 20_000, 6, seed=1)
    for t in (0, 5):
        f1 = np.bincount(d1.states[:, t], minlength=16) / 20_000
        f2 = np.bincount(d2.states[:, t], minlength=16) / 20_000
        assert np.abs(f1 - f2).max() < 0.02
