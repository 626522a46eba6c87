"""The L1 fit behind irl.sparsest (rmtk.rewards.l1): vertex enumeration against the LP on random
instances and on the shipped tasks, its tie-break, its fallbacks; and the learn path's
imports (no scipy for a small model)."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rmtk import dsl
from rmtk.product.planning import task_policy
from rmtk.rewards import l1
from rmtk.rewards.l1 import l1_fit, lp_l1, sparse_l1, vertex_l1
from rmtk.rewards.recovery import check, reward_fit, sparsest

ROOT = Path(__file__).resolve().parents[1]


def machine_rows(rng, n: int, K: int, gamma: float) -> np.ndarray:
    """The shaping matrix of a random machine: row (u, k) is γ e_{δ_u(u,k)} − e_u."""
    du = rng.integers(0, n, (n, K))
    B = np.zeros((n * K, n))
    B[np.arange(n * K), du.ravel()] += gamma
    B[np.arange(n * K), np.repeat(np.arange(n), K)] -= 1.0
    return B


def cost(B, r, phi) -> float:
    return float(np.abs(r + B @ phi).sum())


@pytest.mark.parametrize("seed", range(30))
def test_vertex_enumeration_matches_the_lp(seed):
    rng = np.random.default_rng(seed)
    # a generic problem has one optimum: both find it
    B, r = rng.normal(size=(10, 3)), rng.normal(size=10)
    np.testing.assert_allclose(vertex_l1(B, r), lp_l1(B, r), rtol=0, atol=1e-8)
    # machine rows repeat (self-loops), so optima are often a whole face: same cost, and the
    # enumeration's vertex is at least as sparse as the LP's
    n, K = rng.integers(2, 5), rng.integers(2, 5)
    B, r = machine_rows(rng, n, K, rng.uniform(0.5, 0.99)), rng.normal(size=n * K)
    pv, pl = vertex_l1(B, r), lp_l1(B, r)
    assert pv is not None
    assert cost(B, r, pv) <= cost(B, r, pl) + 1e-9
    zeros = lambda phi: int((np.abs(r + B @ phi) < 1e-9).sum())  # noqa: E731
    assert zeros(pv) >= zeros(pl) >= np.linalg.matrix_rank(B)


def test_tie_break_prefers_the_sparsest_then_the_first():
    B = np.ones((4, 1))
    # Σ|r + t| is flat on [-1, 0]: t = -1 zeroes one term, t = 0 two
    assert vertex_l1(B, np.array([1.0, 3.0, 0.0, 0.0]))[0] == 0.0
    # flat on [-2, -1], one zero at either end: the first equation's vertex
    assert vertex_l1(np.ones((2, 1)), np.array([1.0, 2.0]))[0] == -1.0


def test_fallbacks_to_the_lp():
    rng = np.random.default_rng(0)
    B, r = rng.normal(size=(12, 4)), rng.normal(size=12)
    assert vertex_l1(B, r, max_subsets=10) is None  # C(12, 4) = 495 subsets
    deficient = np.c_[B[:, :2], B[:, :2].sum(axis=1)]  # rank 2, three columns
    assert vertex_l1(deficient, r) is None
    assert cost(deficient, r, l1_fit(deficient, r)) <= cost(deficient, r, lp_l1(deficient, r)) + 1e-9
    # zero columns (nodes in no constrained entry) get φ = 0
    padded = np.c_[B[:, :3], np.zeros(12)]
    phi = vertex_l1(padded, r)
    assert phi[3] == 0.0 and np.allclose(phi[:3], vertex_l1(B[:, :3], r))


@pytest.mark.parametrize("model", ["patrol", "patrol_hallway", "stack", "stack_avoid", "labyrinth"])
def test_sparsest_agrees_with_the_lp_on_shipped_tasks(models_dir, model, monkeypatch):
    task = next(iter(dsl.load(models_dir / f"{model}.rm").tasks.values()))
    fit = reward_fit(task)
    exact = sparsest(fit)
    monkeypatch.setattr(l1, "MAX_SUBSETS", 0)  # every problem goes to the LP
    lp = sparsest(fit)
    np.testing.assert_allclose(exact.delta_r, lp.delta_r, rtol=0, atol=1e-8)
    np.testing.assert_allclose(exact.V, lp.V, rtol=0, atol=1e-8)
    # shaping kept the policy: the sparsest rewards re-plan to the task's policy
    policy = task_policy(task).pi
    assert (
        check(task.mdp, exact.machine, policy, gamma=task.discount, lam=task.lam, letter=task.letter_of_proposition)
        < 1e-6
    )


def test_import_rmtk_imports_no_scipy():
    probe = "import rmtk, sys; print('scipy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_learning_a_small_model_imports_no_scipy():
    """Load, learn, recover rewards: the whole `rmtk learn` path of a small model is numpy only."""
    probe = (
        "import sys; from rmtk import dsl; from rmtk.learner import Learner; "
        "task = dsl.load('models/patrol.rm').tasks['patrol']; r = Learner().fit(task); "
        "assert r.reward_fits and r.verdicts; print(sorted(m for m in sys.modules if m.startswith('scipy')))"
    )
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ------------------------------------------------------------------ the representative a person expects
def _brute_sparsest(B, r, tol=1e-9):
    """Every vertex of every k-subset of the rows (no grouping of equal rows), the most zero
    terms first, then the smallest sum: the (zeros, cost) of the optimum."""
    import itertools

    k = np.linalg.matrix_rank(B)
    best = None
    for S in itertools.combinations(range(len(r)), k):
        Bs = B[list(S)]
        if np.linalg.matrix_rank(Bs) < k:
            continue
        phi = np.linalg.solve(Bs, -r[list(S)])
        terms = np.abs(r + B @ phi)
        z, c = int((terms <= tol * max(1, np.abs(r).max())).sum()), float(terms[terms > 1e-9].sum())
        if best is None or z > best[0] or (z == best[0] and c < best[1] - 1e-9):
            best = (z, c)
    return best


@pytest.mark.parametrize("seed", range(20))
def test_sparse_l1_is_the_fewest_non_zero_then_the_smallest_sum(seed):
    rng = np.random.default_rng(seed)
    n, K, gamma = int(rng.integers(2, 4)), int(rng.integers(2, 4)), float(rng.uniform(0.5, 0.99))
    B = machine_rows(rng, n, K, gamma)
    keep = np.flatnonzero(np.any(B != 0, axis=1))
    B = B[keep]
    # rewards from a few values, shaped by a random potential: many exact zeros are possible
    r = rng.choice([0.0, 0.0, 1.0, -2.0], size=len(B)) + B @ rng.normal(size=n)
    if np.linalg.matrix_rank(B) < n:
        pytest.skip("rank deficient draw")
    phi = sparse_l1(B, r)
    terms = np.abs(r + B @ phi)
    zeros, cost_ = int((terms <= 1e-9 * max(1, np.abs(r).max())).sum()), float(terms[terms > 1e-9].sum())
    want = _brute_sparsest(B, r)
    assert zeros == want[0] and cost_ == pytest.approx(want[1], abs=1e-8)
    # never fewer zeros than the smallest L1's vertex
    assert zeros >= int((np.abs(r + B @ vertex_l1(B, r)) <= 1e-9 * max(1, np.abs(r).max())).sum())


def _absorbing_end_task(loop_reward: float, lam: float = 0.1):
    """A corridor of 5 cells ``o a o b g``, start on the left; the machine u0 -g-> u1 pays 1,
    u1 absorbing (its loops pay ``loop_reward``)."""
    from rmtk.envs import gridworld
    from rmtk.machine.model import RewardMachine
    from rmtk.task import Task

    mdp = gridworld(["o a o b g"], slip=0.0, start=[(0, 0)], gamma=0.9)
    trans = {("u0", "g"): ("u1", 1.0)} | {("u1", x): ("u1", loop_reward) for x in "abgo"}
    return Task(mdp, RewardMachine.from_transitions(trans, "abgo"), lam=lam)


def _shaping(task):
    """``(B, r)``: the shaping rows of the constrained (here: every) entry and the true rewards."""
    m, g = task.machine, task.discount
    u, k = np.nonzero(np.ones(m.delta_u.shape, dtype=bool))
    B = np.zeros((len(u), m.n_nodes))
    B[np.arange(len(u)), m.delta_u[u, k]] += g
    B[np.arange(len(u)), u] -= 1.0
    return B, np.array(m.delta_r)[u, k]


def test_an_absorbing_end_node_pays_nothing_on_its_loops():
    """The truth (1 on the last transition) against the smallest L1 of its shaping class (e.g.
    (1 − γ)/γ on each of the end node's four loops, 0.44 < 1; or −(1 − γ) on each of the
    three letters before the goal, 0.3): the representative is the truth, it re-plans to the
    expert's policy, and the pure L1 optimum pays on several letters."""
    task = _absorbing_end_task(0.0)
    fit = reward_fit(task)
    assert not fit.unconstrained.any()
    rep = sparsest(fit)
    want = np.array(task.machine.delta_r)
    np.testing.assert_allclose(rep.delta_r, want, rtol=0, atol=1e-9)
    policy = task_policy(task).pi
    args = dict(gamma=task.discount, lam=task.lam, letter=task.letter_of_proposition)
    assert check(task.mdp, rep.machine, policy, **args) < 1e-6
    # independently: the smallest L1 of the class (an LP over the potentials)
    B, r = _shaping(task)
    shaped = (r + B @ lp_l1(B, r)).reshape(want.shape)
    assert np.abs(shaped).sum() < np.abs(want).sum()  # smaller in L1 ...
    assert np.count_nonzero(np.abs(shaped) > 1e-9) > 1  # ... but paying after the task
    assert check(task.mdp, task.machine.with_rewards(shaped), policy, **args) < 1e-6  # same class
    assert "absorbing loops 0" in rep.note


def test_an_absorbing_end_node_that_pays_forever_is_paid_on_entry():
    """Loops paying c forever are the same class as γ c / (1 − γ) more on entering the node."""
    c = 0.5
    task = _absorbing_end_task(c)
    rep = sparsest(reward_fit(task))
    g = task.discount
    want = np.zeros((2, 4))
    want[0, task.machine.alphabet.index("g")] = 1.0 + g * c / (1 - g)
    np.testing.assert_allclose(rep.delta_r, want, rtol=0, atol=1e-8)
    args = dict(gamma=g, lam=task.lam, letter=task.letter_of_proposition)
    assert check(task.mdp, rep.machine, task_policy(task).pi, **args) < 1e-6
