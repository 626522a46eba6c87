"""MaxEnt reward extraction (rmtk.rewards.recovery): Algorithm 3 and the linear soft-Bellman fit, checked
against independent computations (re-planning, explicit shaping directions, naive loops)."""

import numpy as np
import pytest

from rmtk import LabeledMDP, ModelError, RewardMachine, dsl
from rmtk.learner.pipeline import ExactPTP, Learner, SoftOptimal
from rmtk.product.model import product, task_product
from rmtk.product.planning import soft_bellman, task_policy
from rmtk.ptp.tree import PrefixTree, PrefixTreePolicy, Trie, build_prefix_tree
from rmtk.rewards.recovery import check, coverage, describe, learned_product_policy, recover_rewards, reward_fit

TASKS = [("patrol.rm", "patrol"), ("stack.rm", "stack")]


@pytest.fixture(scope="module", params=TASKS, ids=[t for _, t in TASKS])
def case(request, models_dir):
    f, name = request.param
    task = dsl.load(models_dir / f).tasks[name]
    pi = task_policy(task).pi
    fit = recover_rewards(
        task.mdp, task.machine, pi, gamma=task.discount, lam=task.lam, letter=task.letter_of_proposition
    )
    return task, pi, fit


def reachable_mask(mdp, machine, letter=None):
    pairs = product(mdp, machine, letter).pairs
    mask = np.zeros((mdp.n_states, machine.n_nodes), dtype=bool)
    mask[pairs[:, 0], pairs[:, 1]] = True
    return mask


def shaping_basis(machine: RewardMachine, gamma: float, nodes) -> np.ndarray:
    """(n·K, |nodes|): reward change γ φ(δ_u(u,ℓ)) − φ(u) of the potential φ = e_w, per node w."""
    n, K = machine.delta_u.shape
    u = np.repeat(np.arange(n), K)
    v = machine.delta_u.ravel()
    return np.stack([gamma * (v == w) - (u == w) for w in nodes], axis=1).astype(float)


def replan(task, rewards):
    return soft_bellman(
        task.mdp,
        task.machine.with_rewards(rewards),
        gamma=task.discount,
        lam=task.lam,
        letter=task.letter_of_proposition,
    ).pi


# ------------------------------------------------------------------ (a) true policy reproduced
def test_true_policy_is_reproduced(case):
    task, pi, fit = case
    prod = task_product(task)
    # independent re-planning with the recovered rewards, compared on the reachable product
    err = np.abs(prod.restrict(replan(task, fit.delta_r)) - prod.restrict(pi)).max()
    assert err < 1e-6  # acceptance criterion
    assert fit.replan_error < 1e-6
    assert fit.residual < 1e-9 and fit.residual_rms <= fit.residual
    assert fit.mask.sum() == prod.n_pairs
    assert fit.n_equations == prod.n_pairs * task.mdp.n_actions  # soft-optimal: every π > 0
    assert not fit.unconstrained.any()
    # the only non-identifiability is potential shaping on the (all reachable) nodes
    assert fit.shaping_dim == len(prod.reachable_nodes()) == task.machine.n_nodes
    assert fit.null_dim == fit.shaping_dim and fit.identified_up_to_shaping
    assert fit.identified.all()
    assert np.array_equal(fit.machine.delta_r, fit.delta_r)
    assert np.array_equal(fit.machine.delta_u, task.machine.delta_u)


# ------------------------------------------------------------------ (b) shaping
def test_recovered_differs_from_truth_only_by_shaping(case):
    task, pi, fit = case
    g = task.discount
    Gr = shaping_basis(task.machine, g, range(task.machine.n_nodes))
    truth = task.machine.delta_r.ravel()
    diff = truth - fit.delta_r.ravel()
    phi, *_ = np.linalg.lstsq(Gr, diff, rcond=None)
    assert np.abs(Gr @ phi - diff).max() < 1e-8  # difference = γφ(δ_u(u,ℓ)) − φ(u) for some φ
    # canonical representative: orthogonal to every shaping direction, i.e. the truth with the
    # shaping component projected out (provably determined by the policy)
    assert np.abs(Gr.T @ fit.delta_r.ravel()).max() < 1e-8
    Q, _ = np.linalg.qr(Gr)
    assert np.allclose(fit.delta_r.ravel(), truth - Q @ (Q.T @ truth), atol=1e-8)
    # re-planning with the truth and with the recovered rewards gives the same policy
    prod = task_product(task)
    same = prod.restrict(replan(task, fit.delta_r)) - prod.restrict(replan(task, task.machine.delta_r))
    assert np.abs(same).max() < 1e-6
    # the truth itself is no canonical representative (the recovered rewards are not the truth) ...
    assert np.abs(fit.delta_r.ravel() - truth).max() > 0.1
    # ... and the whole class of shaped truths is invisible: a random potential gives the
    # same policy and the same canonical rewards
    rng = np.random.default_rng(0)
    shaped = (truth + Gr @ rng.normal(size=Gr.shape[1]) * 3).reshape(task.machine.delta_r.shape)
    pi2 = replan(task, shaped)
    assert np.abs(prod.restrict(pi2) - prod.restrict(pi)).max() < 1e-9
    fit2 = recover_rewards(
        task.mdp, task.machine, pi2, gamma=g, lam=task.lam, letter=task.letter_of_proposition, replan=False
    )
    assert np.abs(fit2.delta_r - fit.delta_r).max() < 1e-8
    assert fit2.replan_error is None


def _partial_example():
    """One-node machine over a, b, c: b and c are only ever entered from s0 by one action that
    goes to s1 (b) or s2 (c) with probability 1/2 each, so only r(b) + r(c) is observable;
    a second node v is unreachable."""
    P = np.zeros((2, 4, 4))
    P[0, 0, [1, 2]] = 0.5
    P[1, 0, 3] = 1.0
    for s in (1, 2, 3):
        P[0, s, 0] = 1.0
        P[1, s, 3] = 1.0
    mdp = LabeledMDP.from_dense(P, ["a", "b", "c", "a"], ["a", "b", "c"], gamma=0.9)
    m = RewardMachine.from_transitions(
        {("u", "a"): ("u", 0.0), ("u", "b"): ("u", 1.0), ("u", "c"): ("u", 3.0), ("v", "a"): ("v", 5.0)},
        ["a", "b", "c"],
        nodes=["u", "v"],
    )
    return mdp, m


def test_partial_identification():
    mdp, m = _partial_example()
    pi = soft_bellman(mdp, m, gamma=0.9).pi
    fit = recover_rewards(mdp, m, pi, gamma=0.9)
    assert fit.replan_error < 1e-9 and fit.residual < 1e-9
    assert fit.shaping_dim == 1 and fit.null_dim == 2 and fit.extra_null_dim == 1
    assert not fit.identified_up_to_shaping
    assert fit.identified.tolist() == [[True, False, False], [False, False, False]]
    assert fit.unconstrained.tolist() == [[False, False, False], [True, True, True]]
    assert (fit.delta_r[1] == 0).all()
    # independently: r + t·(0, 1, −1) gives the same policy, so r(b), r(c) cannot be identified ...
    for t in (-2.0, 5.0):
        other = m.delta_r.copy()
        other[0] += t * np.array([0.0, 1.0, -1.0])
        pi_t = soft_bellman(mdp, m.with_rewards(other), gamma=0.9).pi
        assert np.abs(pi_t[:, 0] - pi[:, 0]).max() < 1e-9
        # ... while the identified entry keeps its canonical value (truth minus its mean)
        fit_t = recover_rewards(mdp, m, pi_t, gamma=0.9)
        assert fit_t.delta_r[0, 0] == pytest.approx(fit.delta_r[0, 0], abs=1e-9)
    truth = m.delta_r[0]
    assert fit.delta_r[0, 0] == pytest.approx(truth[0] - truth.mean(), abs=1e-9)
    assert fit.delta_r[0, 1] == pytest.approx(fit.delta_r[0, 2], abs=1e-9)
    text = describe(fit)
    assert "1 null direction(s) beyond shaping" in text
    assert "not identified" in text and "unconstrained" in text


@pytest.mark.parametrize("model,name", [("stack", "stack"), ("patrol", "patrol"), ("office", "coffee_mail")])
def test_large_system_path_matches_dense(models_dir, model, name):
    """Past the dense limit the values are eliminated (rmtk.rewards.system): the same rewards,
    null space and identification as the dense path (before, lsqr gave the rewards only)."""
    task = dsl.load(models_dir / f"{model}.rm").tasks[name]
    dense = reward_fit(task, dense_limit=10**6)
    big = reward_fit(task, dense_limit=0)
    assert big.method == "eliminated" and dense.method == "dense"
    assert (big.null_dim, big.shaping_dim) == (dense.null_dim, dense.shaping_dim)
    assert np.array_equal(big.identified, dense.identified) and big.identified_up_to_shaping
    assert np.abs(big.delta_r - dense.delta_r).max() < 1e-8
    assert np.nanmax(np.abs(big.V - dense.V)) < 1e-7
    assert big.replan_error < 1e-6 and big.residual < 1e-8
    assert "eliminated" in big.note and "?" not in describe(big)


def test_large_system_path_with_extra_null_directions():
    mdp, m = _partial_example()
    pi = soft_bellman(mdp, m, gamma=0.9).pi
    dense = recover_rewards(mdp, m, pi, gamma=0.9)
    big = recover_rewards(mdp, m, pi, gamma=0.9, dense_limit=0)
    assert big.method == "eliminated" and (big.null_dim, big.extra_null_dim) == (2, 1)
    assert np.array_equal(big.identified, dense.identified)
    assert np.abs(big.delta_r - dense.delta_r).max() < 1e-9


def test_values_without_an_equation_of_their_own_join_the_schur_complement(models_dir):
    """A mask that leaves out a successor: its value has no equation of its own; it joins the
    rewards in the small Schur complement, and the fit is the dense path's, null space and
    identification included (before, lsqr solved without the null space)."""
    task = dsl.load(models_dir / "stack.rm").tasks["stack"]
    full = reward_fit(task)
    mask = np.array(full.mask)
    s, u = np.argwhere(mask)[-1]
    mask[s, u] = False
    dense = reward_fit(task, dense_limit=10**6, reachable=mask)
    big = reward_fit(task, dense_limit=0, reachable=mask)
    assert big.method == "eliminated" and "values without an equation of their own" in big.note
    assert (big.null_dim, big.shaping_dim) == (dense.null_dim, dense.shaping_dim)
    assert np.array_equal(big.identified, dense.identified)
    assert np.abs(big.delta_r - dense.delta_r).max() < 1e-8
    assert np.nanmax(np.abs(big.V - dense.V)) < 1e-7
    assert big.residual < 1e-8 and "?" not in describe(big)


def test_lsqr_path_where_the_values_cannot_be_eliminated(models_dir, monkeypatch):
    """When the values' normal matrix cannot be factorised, lsqr solves without the null space."""
    import scipy.sparse.linalg as spla

    real = spla.splu

    def singular(matrix, **options):
        if options:  # the planner's policy evaluations (rmtk/product/planning.py) name their ordering
            return real(matrix, **options)
        raise RuntimeError("Factor is exactly singular")

    monkeypatch.setattr(spla, "splu", singular)
    task = dsl.load(models_dir / "stack.rm").tasks["stack"]
    big = reward_fit(task, dense_limit=0)
    assert big.method == "lsqr" and big.null_dim is None and big.identified is None and "lsqr" in big.note
    assert big.residual < 1e-8
    assert "?" in describe(big)


def test_zero_probabilities_and_clipping():
    mdp, m = _partial_example()
    pi = np.array(soft_bellman(mdp, m, gamma=0.9).pi)
    pi[0, 0] = [1.0, 0.0]  # a deterministic row: one equation dropped unless clipped
    full = recover_rewards(mdp, m, pi, gamma=0.9, replan=False)
    clipped = recover_rewards(mdp, m, pi, gamma=0.9, clip=0.05, replan=False)
    assert full.n_equations == 7 and clipped.n_equations == 8
    assert "clipped" in clipped.note
    with pytest.raises(ModelError):
        recover_rewards(mdp, m, pi, gamma=0.9, clip=0.7)
    with pytest.raises(ModelError):
        recover_rewards(mdp, m, pi[:, :1], gamma=0.9)


# ------------------------------------------------------------------ (c) learned product policy
def naive_product_policy(machine, ptp, n_states, letter, use_counts):
    """Algorithm 3 written as loops over pairs (independent of the vectorised version)."""
    A = ptp.policy.shape[1]
    acc = np.zeros((n_states, machine.n_nodes, A))
    for i in range(ptp.n_pairs):
        u = machine.initial
        for k in ptp.trie.word(int(ptp.tree.pair_node[i])):
            u = int(machine.delta_u[u, letter[k]])
        acc[ptp.tree.pair_state[i], u] += ptp.counts[i] if use_counts else ptp.policy[i]
    tot = acc.sum(axis=2, keepdims=True)
    return np.where(tot > 0, acc / np.where(tot > 0, tot, 1), 1 / A)


def test_learned_product_policy_and_rewards(models_dir):
    task = dsl.load(models_dir / "patrol.rm").tasks["patrol"]
    learned = Learner(ExactPTP(6), max_nodes=4).fit(task).machines[0]
    ptp = SoftOptimal().prefix_tree_policy(task, build_prefix_tree(task.mdp, 6))
    S = task.mdp.n_states
    pp = learned_product_policy(learned, ptp, n_states=S)
    assert np.allclose(pp.sum(axis=2), 1.0)
    ident = np.arange(task.mdp.n_propositions)
    assert np.allclose(pp, naive_product_policy(learned, ptp, S, ident, use_counts=False), atol=1e-12)

    # node renaming learned -> true from running both machines on the trie words
    lnode = ptp.trie.run(learned.delta_u, learned.initial)
    tnode = ptp.trie.run(task.machine.delta_u, task.machine.initial, task.letter_of_proposition)
    ren = {}
    for a, b in zip(lnode.tolist(), tnode.tolist()):
        assert ren.setdefault(a, b) == b
    assert len(set(ren.values())) == len(ren)  # a bijection on the nodes the trie reaches

    true_pi = task_policy(task).pi
    cov = coverage(learned, ptp, n_states=S)
    s, u = np.nonzero(cov)
    assert cov.sum() == len(set(zip(ptp.tree.pair_state.tolist(), lnode[ptp.tree.pair_node].tolist())))
    mapped = np.array([ren[x] for x in u])
    assert np.abs(pp[s, u] - true_pi[s, mapped]).max() < 1e-12
    assert np.allclose(pp[~cov], 1.0 / task.mdp.n_actions)

    reach = reachable_mask(task.mdp, learned)
    observed = cov & reach
    assert observed.sum() >= reach.sum() - 1  # depth 6 covers 47 of the 48 reachable pairs
    fit = recover_rewards(task.mdp, learned, pp, gamma=task.discount, lam=task.lam, reachable=observed)
    assert fit.residual < 1e-9
    replanned = soft_bellman(task.mdp, fit.machine, gamma=task.discount, lam=task.lam).pi
    err = np.abs(replanned[observed] - pp[observed]).max()
    assert err < 1e-6
    assert fit.replan_error < 1e-6
    assert check(task.mdp, fit.machine, pp, gamma=task.discount, lam=task.lam, mask=observed) == pytest.approx(err)
    # the same through the convenience front end
    conv = reward_fit(task, learned, ptp)
    assert np.array_equal(conv.mask, observed) and np.abs(conv.delta_r - fit.delta_r).max() < 1e-10
    if observed.sum() < reach.sum():
        # the uniform fill-in of an unobserved reachable pair is not soft-optimal: fitting it
        # too leaves a residual
        everything = recover_rewards(task.mdp, learned, pp, gamma=task.discount, lam=task.lam)
        assert everything.residual > 1e-3


# ------------------------------------------------------------------ (d) counts
def test_counts_weight_words_by_evidence():
    # states: s0 labelled a, s1 labelled b; machine u0 --b--> u1 (u1 absorbing)
    m = RewardMachine.from_transitions({("u0", "b"): "u1"}, ["a", "b"], nodes=["u0", "u1"])
    # trie: 1 = a, 2 = ab, 3 = b, 4 = aba (compressed words)
    trie = Trie(parent=[-1, 0, 1, 0, 2], letter=[-1, 0, 1, 1, 0], length=[0, 1, 2, 1, 3])
    tree = PrefixTree(trie, pair_node=[1, 2, 3, 4], pair_state=[0, 1, 1, 0], depth=3)
    counts = np.array([[3, 1], [9, 1], [0, 2], [0, 0]])
    with np.errstate(invalid="ignore"):
        policy = np.nan_to_num(counts / counts.sum(axis=1, keepdims=True), nan=0.5)
    emp = PrefixTreePolicy(tree, policy, counts=counts)
    pp = learned_product_policy(m, emp, n_states=2)
    assert np.allclose(pp[0, 0], [0.75, 0.25])  # word a
    assert np.allclose(pp[1, 1], [9 / 12, 3 / 12])  # words ab and b: counts added, then normalised
    assert np.allclose(pp[0, 1], [0.5, 0.5])  # word aba: zero counts -> uniform
    assert np.allclose(pp[1, 0], [0.5, 0.5])  # never reached
    assert np.allclose(pp, naive_product_policy(m, emp, 2, [0, 1], use_counts=True))
    assert coverage(m, emp, n_states=2).tolist() == [[True, False], [False, True]]
    # without counts, the words' distributions are averaged (every word weighs the same)
    plain = learned_product_policy(m, PrefixTreePolicy(tree, policy), n_states=2)
    assert np.allclose(plain[1, 1], [(0.9 + 0.0) / 2, (0.1 + 1.0) / 2])
    assert np.allclose(plain[0, 1], [0.5, 0.5])  # the uniform row of the zero-count word
    # a stuttering machine cannot be run on compressed words
    stutter = RewardMachine.from_transitions({("u0", "a"): "u1", ("u1", "a"): "u0"}, ["a", "b"])
    with pytest.raises(ModelError):
        learned_product_policy(stutter, emp, n_states=2)
