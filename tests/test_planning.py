"""Product MDP (reachable part) and soft (MaxEnt) planning on it."""

from collections import deque

import numpy as np
import pytest
import scipy.sparse as sp

import rmtk.product.planning as planning
from rmtk import LabeledMDP, ModelError, RewardMachine, Task
from rmtk.product.model import Product, letter_map, product, task_product
from rmtk.product.planning import PlanningError, SoftPolicy, soft_bellman, task_policy

DOWN, RIGHT, UP, LEFT = range(4)


# ---------------------------------------------------------------- models built by hand
def patrol_mdp(gamma: float = 0.99) -> LabeledMDP:
    """4x4 rooms: state i at row i%4, column i//4; actions row+1, col+1, row-1, col-1; the
    intended in-grid neighbour gets 0.925, each other direction 0.025, off-grid mass stays."""
    rooms = ["DDCC", "DDCC", "AABB", "AABB"]
    moves = [(1, 0), (0, 1), (-1, 0), (0, -1)]
    P = np.zeros((4, 16, 16))
    for s in range(16):
        r, c = s % 4, s // 4
        for a in range(4):
            for d, (dr, dc) in enumerate(moves):
                r2, c2 = r + dr, c + dc
                t = c2 * 4 + r2 if 0 <= r2 < 4 and 0 <= c2 < 4 else s
                P[a, s, t] += 0.925 if d == a else 0.025
    labels = [rooms[s % 4][s // 4] for s in range(16)]
    mu0 = np.zeros(16)
    mu0[[0, 2, 3, 6, 8]] = 0.2
    return LabeledMDP.from_dense(
        P, labels, ["A", "B", "C", "D"], mu0, actions=["down", "right", "up", "left"], gamma=gamma, name="rooms"
    )


def patrol_machine(alphabet="ABCD") -> RewardMachine:
    return RewardMachine.from_transitions(
        {("u0", "A"): "u1", ("u1", "B"): "u2", ("u2", "C"): "u3", ("u3", "D"): ("u0", 1.0)},
        list(alphabet),
        nodes=["u0", "u1", "u2", "u3"],
        name="patrol",
    )


def random_model(seed: int, S=7, A=3, K=3, n=3, density=0.5):
    """A random labeled MDP (sparse, stochastic) and a random machine whose alphabet lists the
    propositions in reverse order (so the letter map is not the identity)."""
    rng = np.random.default_rng(seed)
    P = rng.random((A, S, S)) * (rng.random((A, S, S)) < density)
    P[:, np.arange(S), rng.integers(0, S, S)] += 0.1  # every row non-empty
    P /= P.sum(axis=2, keepdims=True)
    props = [f"p{k}" for k in range(K)]
    labels = rng.integers(0, K, S)
    labels[:K] = np.arange(K)  # every proposition occurs
    mu0 = rng.random(S) * (rng.random(S) < 0.6)
    mu0[0] += 0.5
    mdp = LabeledMDP.from_dense(P, labels.tolist(), props, mu0 / mu0.sum(), gamma=0.9)
    machine = RewardMachine(
        nodes=[f"u{i}" for i in range(n)],
        alphabet=props[::-1],
        delta_u=rng.integers(0, n, (n, K)),
        delta_r=rng.normal(size=(n, K)),
        initial=0,
    )
    return mdp, machine


def naive_soft_value_iteration(mdp, machine, gamma, lam, iters):
    """Straightforward loops over (s, u, a, s'), no vectorisation (independent reference)."""
    P = mdp.P
    S, A, n = mdp.n_states, mdp.n_actions, machine.n_nodes
    letter = [machine.alphabet.index(mdp.propositions[mdp.labels[s]]) for s in range(S)]
    V = [[0.0] * n for _ in range(S)]
    for _ in range(iters):
        Q = [[[0.0] * A for _ in range(n)] for _ in range(S)]
        for s in range(S):
            for u in range(n):
                for a in range(A):
                    q = 0.0
                    for t in range(S):
                        if P[a, s, t] > 0:
                            k = letter[t]
                            q += P[a, s, t] * (machine.delta_r[u, k] + gamma * V[t][machine.delta_u[u, k]])
                    Q[s][u][a] = q
        V = [[lam * np.log(sum(np.exp(q / lam) for q in Q[s][u])) for u in range(n)] for s in range(S)]
    return np.array(V)


def bfs_pairs(mdp, machine):
    """Reachable product pairs by a plain queue BFS (successors in ascending state order)."""
    S, A = mdp.n_states, mdp.n_actions
    P = mdp.P

    def step(u, s):
        return machine.step(u, mdp.propositions[mdp.labels[s]])

    order = [(int(s), step(machine.initial, s)) for s in range(S) if mdp.initial[s] > 0]
    seen = set(order)
    queue = deque(order)
    while queue:
        s, u = queue.popleft()
        for t in range(S):
            if any(P[a, s, t] > 0 for a in range(A)):
                pair = (t, step(u, t))
                if pair not in seen:
                    seen.add(pair)
                    order.append(pair)
                    queue.append(pair)
    return order


def bellman_residual(mdp, machine, pol, gamma, lam):
    """max |V − λ log Σ exp(Q/λ)| and max |π − exp((Q − V)/λ)| with Q recomputed by loops."""
    P = mdp.P
    S, A, n = mdp.n_states, mdp.n_actions, machine.n_nodes
    letter = letter_map(mdp, machine)
    Q = np.zeros((S, n, A))
    for s in range(S):
        for u in range(n):
            for a in range(A):
                for t in range(S):
                    k = letter[mdp.labels[t]]
                    Q[s, u, a] += P[a, s, t] * (machine.delta_r[u, k] + gamma * pol.V[t, machine.delta_u[u, k]])
    V = lam * np.log(np.exp(Q / lam).sum(axis=2))
    return np.abs(V - pol.V).max(), np.abs(np.exp((Q - pol.V[..., None]) / lam) - pol.pi).max(), Q


# ---------------------------------------------------------------- (a) PI vs VI
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("gamma,lam", [(0.9, 1.0), (0.99, 0.3)])
def test_policy_iteration_agrees_with_value_iteration(seed, gamma, lam):
    mdp, machine = random_model(seed)
    pi = soft_bellman(mdp, machine, gamma=gamma, lam=lam)
    vi = soft_bellman(mdp, machine, gamma=gamma, lam=lam, method="value_iteration")
    assert pi.method == "policy_iteration" and vi.method == "value_iteration"
    assert pi.iterations < 30 < vi.iterations
    np.testing.assert_allclose(pi.V, vi.V, rtol=0, atol=1e-8)
    np.testing.assert_allclose(pi.Q, vi.Q, rtol=0, atol=1e-8)
    np.testing.assert_allclose(pi.pi, vi.pi, rtol=0, atol=1e-8)


def test_sparse_and_dense_policy_evaluation_agree(monkeypatch):
    mdp, machine = random_model(5, S=12, A=4, K=3, n=4)
    dense = soft_bellman(mdp, machine)
    monkeypatch.setattr(planning, "DENSE_LIMIT", 0)
    sparse = soft_bellman(mdp, machine)
    np.testing.assert_allclose(dense.V, sparse.V, rtol=0, atol=1e-10)
    np.testing.assert_allclose(dense.pi, sparse.pi, rtol=0, atol=1e-12)


@pytest.mark.parametrize("transpose", [False, True])
def test_sparse_evaluation_solves_the_system_and_its_transpose(monkeypatch, transpose):
    """The sparse LU (diagonal pivots, one factorisation for M and Mᵀ) against the dense solve."""
    mdp, machine = random_model(7, S=15, A=3, K=3, n=3)
    rng = np.random.default_rng(0)
    pi = rng.dirichlet(np.ones(3), size=(15, 3))
    rhs = rng.standard_normal((15, 3))
    grid, _ = planning.Grid.product(mdp, machine)
    dense = grid.solve(pi, rhs, 0.99, transpose=transpose)
    monkeypatch.setattr(planning, "DENSE_LIMIT", 0)
    grid, _ = planning.Grid.product(mdp, machine)
    sparse = grid.solve(pi, rhs, 0.99, transpose=transpose)
    np.testing.assert_allclose(sparse, dense, rtol=0, atol=1e-10 * np.abs(dense).max())


# ---------------------------------------------------------------- (b) Bellman equations
@pytest.mark.parametrize("method", ["policy_iteration", "value_iteration"])
def test_bellman_equations_hold(method):
    mdp, machine = random_model(3, S=6, A=3, n=3)
    gamma, lam = 0.95, 0.5
    pol = soft_bellman(mdp, machine, gamma=gamma, lam=lam, method=method)
    res_v, res_pi, Q = bellman_residual(mdp, machine, pol, gamma, lam)
    assert res_v < 1e-9 and res_pi < 1e-9
    np.testing.assert_allclose(pol.Q, Q, rtol=0, atol=1e-9)
    np.testing.assert_allclose(pol.pi.sum(axis=2), 1.0, rtol=0, atol=1e-12)
    assert pol.residual < 1e-9
    np.testing.assert_allclose(np.exp(pol.log_pi()), pol.pi, rtol=1e-12, atol=0)
    assert pol.V.shape == (6, 3) and pol.Q.shape == pol.pi.shape == (6, 3, 3)
    with pytest.raises(ValueError):
        pol.pi[0, 0, 0] = 1.0


# ---------------------------------------------------------------- (c) brute force / closed form
@pytest.mark.parametrize("gamma,lam", [(0.9, 1.0), (0.5, 0.25), (0.0, 2.0)])
def test_two_state_closed_form(gamma, lam):
    """States a (label A) and b (label B), actions stay / switch (deterministic), one node,
    reward 1 for every step that enters b. From either state the choice is "go to a for 0"
    or "go to b for 1", so V(a) = V(b) = V = γV + λ log(1 + e^{1/λ}), and the probability of
    heading to b is the logistic function of 1/λ."""
    P = np.array([[[1, 0], [0, 1]], [[0, 1], [1, 0]]], dtype=float)  # stay, switch
    mdp = LabeledMDP.from_dense(P, ["A", "B"], ["A", "B"], [1.0, 0.0], actions=["stay", "switch"])
    machine = RewardMachine.from_transitions({("u", "B"): ("u", 1.0)}, ["A", "B"], nodes=["u"])
    pol = soft_bellman(mdp, machine, gamma=gamma, lam=lam)
    V = lam * np.log1p(np.exp(1 / lam)) / (1 - gamma)
    p_b = 1 / (1 + np.exp(-1 / lam))
    np.testing.assert_allclose(pol.V, [[V], [V]], rtol=1e-12)
    np.testing.assert_allclose(pol.pi[:, 0], [[1 - p_b, p_b], [p_b, 1 - p_b]], rtol=1e-12)
    np.testing.assert_allclose(pol.Q[0, 0], [gamma * V, 1 + gamma * V], rtol=1e-12)


def test_matches_naive_loop_implementation():
    """A 2-node machine on a stochastic 3-state MDP, against a loop-only value iteration."""
    P = np.array(
        [
            [[0.8, 0.2, 0.0], [0.0, 0.5, 0.5], [0.3, 0.0, 0.7]],
            [[0.1, 0.0, 0.9], [1.0, 0.0, 0.0], [0.0, 0.6, 0.4]],
        ]
    )
    mdp = LabeledMDP.from_dense(P, ["x", "y", "z"], ["x", "y", "z"], [0.5, 0.5, 0.0])
    machine = RewardMachine.from_transitions(
        {("m0", "y"): ("m1", 0.5), ("m1", "z"): ("m0", 2.0), ("m1", "x"): ("m1", -0.3)},
        ["z", "x", "y"],
        nodes=["m0", "m1"],
    )
    gamma, lam = 0.8, 0.7
    ref = naive_soft_value_iteration(mdp, machine, gamma, lam, iters=200)  # 0.8^200 ≈ 4e-20
    pol = soft_bellman(mdp, machine, gamma=gamma, lam=lam)
    np.testing.assert_allclose(pol.V, ref, rtol=0, atol=1e-10)


# ---------------------------------------------------------------- (d) patrol product
def test_patrol_product_reachability():
    mdp, machine = patrol_mdp(), patrol_machine()
    prod = product(mdp, machine)
    expected = bfs_pairs(mdp, machine)
    assert isinstance(prod, Product)
    assert prod.n_pairs == len(expected)
    assert [tuple(p) for p in prod.pairs.tolist()] == expected  # same BFS discovery order
    # (s, u) never reachable: e.g. an A room cell at u0 (entering A moves u0 to u1) ...
    for s in (2, 3, 6, 7):
        assert prod.index[s, 0] == -1
    # ... and index is the inverse of pairs
    assert (prod.index >= 0).sum() == prod.n_pairs
    np.testing.assert_array_equal(prod.index[prod.pairs[:, 0], prod.pairs[:, 1]], np.arange(prod.n_pairs))
    # initial pairs: the first label already moves the machine
    init = {tuple(prod.pairs[i]): prod.initial[i] for i in np.flatnonzero(prod.initial)}
    assert init == {(0, 0): 0.2, (2, 1): 0.2, (3, 1): 0.2, (6, 1): 0.2, (8, 0): 0.2}
    # transitions: stochastic rows, consistent with P and δ_u; rewards only on u3 -D-> u0
    T = prod.transitions
    assert T.shape == (prod.n_pairs * 4, prod.n_pairs)
    np.testing.assert_allclose(T.sum(axis=1), 1.0)
    i = prod.index[9, 3]  # C cell (row 1, col 2) at u3; "left" goes to the D cell 5
    row = T[[i * 4 + LEFT]].toarray().ravel()
    assert row[prod.index[5, 0]] == pytest.approx(0.925)
    # expected reward = probability of entering a D cell: only the intended move reaches 5;
    # the slips go to 8 (up, C), 13 (right, C) and 10 (down, B)
    assert prod.rewards[i, LEFT] == pytest.approx(0.925)
    D = [s for s in range(16) if mdp.label(s) == "D"]
    Pd = mdp.P
    for a in range(4):
        assert prod.rewards[i, a] == pytest.approx(Pd[a, 9, D].sum())
    assert np.all(prod.rewards[prod.nodes != 3] == 0)
    # read-only
    with pytest.raises(ValueError):
        prod.pairs[0, 0] = 5


@pytest.mark.parametrize("seed", range(6))
def test_random_product_matches_plain_bfs(seed):
    mdp, machine = random_model(seed, S=9, A=2, K=3, n=4, density=0.3)
    prod = product(mdp, machine)
    expected = bfs_pairs(mdp, machine)
    assert [tuple(p) for p in prod.pairs.tolist()] == expected
    np.testing.assert_allclose(prod.initial.sum(), 1.0)
    np.testing.assert_allclose(prod.transitions.sum(axis=1), 1.0)
    # every product transition agrees with P and δ_u, and expected rewards with δ_r
    P, letter = mdp.P, letter_map(mdp, machine)
    dense = prod.transitions.toarray().reshape(prod.n_pairs, 2, prod.n_pairs)
    for i, (s, u) in enumerate(expected):
        for a in range(2):
            ref = np.zeros(prod.n_pairs)
            r = 0.0
            for t in range(mdp.n_states):
                if P[a, s, t] > 0:
                    k = letter[mdp.labels[t]]
                    ref[prod.index[t, machine.delta_u[u, k]]] += P[a, s, t]
                    r += P[a, s, t] * machine.delta_r[u, k]
            np.testing.assert_allclose(dense[i, a], ref, atol=1e-15)
            assert prod.rewards[i, a] == pytest.approx(r, abs=1e-14)


def test_letter_map_by_name_and_errors():
    mdp = patrol_mdp()
    machine = patrol_machine("DCBA")  # same machine, letters listed in another order
    np.testing.assert_array_equal(letter_map(mdp, machine), [3, 2, 1, 0])
    a = product(mdp, patrol_machine())
    b = product(mdp, machine)
    np.testing.assert_array_equal(a.pairs, b.pairs)
    assert a.transitions.nnz == b.transitions.nnz
    np.testing.assert_allclose(a.rewards, b.rewards)
    pa, pb = soft_bellman(mdp, patrol_machine()), soft_bellman(mdp, machine)
    np.testing.assert_allclose(pa.pi, pb.pi, atol=1e-12)
    small = RewardMachine.from_transitions({("u0", "A"): "u1"}, ["A", "B", "C"], nodes=["u0", "u1"])
    with pytest.raises(ModelError, match="'D'"):
        product(mdp, small)
    with pytest.raises(ModelError, match="'D'"):
        soft_bellman(mdp, small)
    with pytest.raises(ModelError):
        product(mdp, machine, letter=[0, 1, 2])
    with pytest.raises(ModelError):
        product(mdp, machine, letter=[0, 1, 2, 4])


def test_product_policy_evaluation_matches_grid():
    """Evaluating the grid's soft-optimal policy on the reduced product (its own transitions
    and expected rewards) reproduces the grid values: the product is built consistently."""
    mdp, machine = patrol_mdp(), patrol_machine()
    gamma, lam = 0.99, 1.0
    prod = product(mdp, machine)
    pol = soft_bellman(mdp, machine, gamma=gamma, lam=lam)
    pi = pol.on(prod)  # (m, A)
    m, A = pi.shape
    assert m == prod.n_pairs and A == 4
    P_pi = sp.diags_array(pi.ravel()) @ prod.transitions  # rows i*A+a weighted by π(a|i)
    P_pi = sp.csr_array(sp.kron(sp.eye_array(m), np.ones((1, A))) @ P_pi)
    entropy = -(pi * np.log(pi)).sum(axis=1)
    b = (pi * prod.rewards).sum(axis=1) + lam * entropy
    V = np.linalg.solve(np.eye(m) - gamma * P_pi.toarray(), b)
    np.testing.assert_allclose(V, prod.restrict(pol.V), rtol=0, atol=1e-9)


@pytest.mark.parametrize("lam", [1.0, 0.1])
def test_patrol_soft_optimal_policy_heads_to_the_next_room(lam):
    mdp, machine = patrol_mdp(), patrol_machine()
    task = Task(mdp, machine, gamma=0.99, lam=lam)
    pol = task_policy(task)
    prod = task_product(task)
    assert pol.gamma == 0.99 and pol.lam == lam and pol.residual < 1e-9
    # (state, node, best action): the next room of the patrol is one step away
    facts = [
        (1, 0, DOWN),  # D cell row 1 col 0 at u0: A (state 2) is below
        (5, 0, DOWN),  # D cell row 1 col 1 at u0: A (state 6) is below
        (6, 1, RIGHT),  # A cell row 2 col 1 at u1: B (state 10) is to the right
        (10, 2, UP),  # B cell row 2 col 2 at u2: C (state 9) is above
        (9, 3, LEFT),  # C cell row 1 col 2 at u3: D (state 5) is to the left
    ]
    for s, u, a in facts:
        assert prod.index[s, u] >= 0, (s, u)
        assert pol.greedy()[s, u] == a, (s, u, pol.pi[s, u])
        others = np.delete(pol.pi[s, u], a)
        # λ = 1: one reward per patrol cycle is small against the entropy bonus, so the
        # preference is mild (≈ 0.27–0.31 vs ≤ 0.25) but clear
        assert pol.pi[s, u, a] > others.max() + 0.02
    if lam == 0.1:
        # nearly deterministic; from cell 1 at u0, "right" (via 5 and 6) is almost as good
        # as "down" (via 2): both reach B in three steps
        for s, u, a in facts[1:]:
            assert pol.pi[s, u, a] > 0.9
        assert pol.pi[1, 0, RIGHT] > 0.3
    # the same cell behaves differently at different nodes: from D cell 5 the agent goes down
    # to A at u0, while at u1 (reached from A by moving up) it must reach B, two steps away
    # via 6 or 9, so "left" (away from B) is unlikely.
    assert not np.allclose(pol.pi[5, 0], pol.pi[5, 1], atol=1e-3)
    assert pol.pi[5, 1, LEFT] < pol.pi[5, 1, RIGHT]
    # in the patrol machine reward comes only on u3 -D-> u0, so values are highest at u3 near D
    assert pol.V[9, 3] > pol.V[9, 0]


# ---------------------------------------------------------------- API details and errors
def test_task_policy_uses_task_settings():
    mdp, machine = patrol_mdp(gamma=0.9), patrol_machine()
    a = task_policy(Task(mdp, machine, lam=0.5))
    b = soft_bellman(mdp, machine, gamma=0.9, lam=0.5)
    assert a.gamma == 0.9 and a.lam == 0.5
    np.testing.assert_allclose(a.V, b.V, atol=1e-12)
    c = task_policy(Task(mdp, machine, gamma=0.95, lam=0.5))
    assert c.gamma == 0.95 and not np.allclose(c.V, a.V)
    assert isinstance(c, SoftPolicy)


def test_parameter_errors_and_non_convergence():
    mdp, machine = patrol_mdp(), patrol_machine()
    with pytest.raises(ModelError, match="gamma"):
        soft_bellman(mdp, machine, gamma=1.0)
    with pytest.raises(ModelError, match="lambda"):
        soft_bellman(mdp, machine, lam=0.0)
    with pytest.raises(ModelError, match="method"):
        soft_bellman(mdp, machine, method="q_learning")
    with pytest.raises(PlanningError, match="did not converge in 10 iterations"):
        soft_bellman(mdp, machine, method="value_iteration", max_iter=10)
    with pytest.raises(PlanningError, match="policy iteration did not converge in 2"):
        soft_bellman(mdp, machine, max_iter=2)
