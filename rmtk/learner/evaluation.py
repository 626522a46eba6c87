"""Metrics of the paper's evaluations: held-out log-likelihood of demonstrations (section 6.4,
appendix E) and the average return of rollouts scored by the true machine (appendix D).

Policies come in three forms, all arrays of action distributions over the last axis:

* ``(S, A)``: Markovian, ``π(a | s)`` (the uniform and the stationary IRL baselines);
* ``(T, S, A)``: time-dependent, ``π_t(a | s)`` for steps ``t < T`` (finite-horizon
  MaxCausalEnt IRL);
* ``(S, n, A)`` together with a reward machine (``machine=`` / ``policy_machine``): a product
  policy ``π(a | s, u)`` whose node ``u`` tracks that machine along the labels (the
  design's prefix convention: ``u_0 = δ_u(u_I, L(s_0))``, ``u_{t+1} = δ_u(u_t, L(s_{t+1}))``).
  Objects with a ``.pi`` attribute (a :class:`~rmtk.product.planning.SoftPolicy`) are accepted too.

MDP propositions are read by a machine through ``letter`` (``letter[k]`` = index in the
machine's alphabet of proposition ``k``); the default matches names
(:func:`rmtk.product.model.letter_map`).

Everything is vectorised over trajectories; the only Python loops are over time steps and
chunks of rollouts. Rollouts are seeded: one ``numpy.random.default_rng(seed)`` stream is read
trajectory by trajectory (``1 + 2·horizon`` uniforms each: the start state, then an action
and a successor per step), so rollout ``i`` depends only on ``(seed, horizon, i)`` and not on
``chunk``.
"""

from __future__ import annotations

import numpy as np

from ..data import PAD, Demonstrations
from ..errors import DataError, ModelError
from ..machine.model import RewardMachine
from ..mdp.model import LabeledMDP
from ..product.model import letter_map
from ..product.simulate import RowSampler, check_sizes

__all__ = [
    "log_likelihood",
    "average_log_likelihood",
    "node_sequence",
    "rollout",
    "sample_demonstrations",
    "rollout_returns",
    "average_return",
]

#: Tolerance on the rows of a policy summing to 1.
POLICY_TOL = 1e-6


# ====================================================================== helpers
def _next_node(mdp: LabeledMDP, machine: RewardMachine, letter) -> np.ndarray:
    """``(S, n)``: ``δ_u(u, L(s))``."""
    lp = letter_map(mdp, machine, letter)[mdp.labels]
    return np.ascontiguousarray(machine.delta_u[:, lp].T).astype(np.intp)


def _entry_reward(mdp: LabeledMDP, machine: RewardMachine, letter) -> np.ndarray:
    """``(S, n)``: ``δ_r(u, L(s))``, the reward of entering ``s`` from node ``u``."""
    lp = letter_map(mdp, machine, letter)[mdp.labels]
    return np.ascontiguousarray(machine.delta_r[:, lp].T)


def _policy_table(mdp: LabeledMDP, policy, machine: RewardMachine | None, *, need_T: int | None) -> np.ndarray:
    """Validated float copy of ``policy``: ``(S, n, A)`` with a machine, else ``(S, A)`` or
    ``(T, S, A)`` (``T ≥ need_T``)."""
    S, A = mdp.n_states, mdp.n_actions
    pi = np.array(getattr(policy, "pi", policy), dtype=float)
    if machine is not None:
        n = machine.n_nodes
        if pi.shape != (S, n, A):
            raise ModelError(
                f"a product policy must have shape (states, nodes, actions) = ({S}, {n}, {A}), got {pi.shape}"
            )
    elif pi.ndim == 2:
        if pi.shape != (S, A):
            raise ModelError(f"a Markovian policy must have shape (states, actions) = ({S}, {A}), got {pi.shape}")
    elif pi.ndim == 3:
        if pi.shape[1:] != (S, A):
            raise ModelError(f"a time-dependent policy must have shape (T, {S}, {A}), got {pi.shape}")
        if need_T is not None and pi.shape[0] < need_T:
            raise ModelError(f"the time-dependent policy covers {pi.shape[0]} steps; {need_T} are needed")
    else:
        raise ModelError(f"policy must have shape (S, A) or (T, S, A) without a machine, got {pi.shape}")
    if not np.all(np.isfinite(pi)) or (pi.size and pi.min() < 0):
        raise ModelError("policy has a negative or non-finite probability")
    sums = pi.sum(axis=-1)
    bad = np.argwhere(np.abs(sums - 1.0) > POLICY_TOL)
    if bad.size:
        raise ModelError(
            f"policy probabilities at index {tuple(int(x) for x in bad[0])} sum to "
            f"{sums[tuple(bad[0])]:.12g}, expected 1 (±{POLICY_TOL:g})"
        )
    return pi


def _clip(pi: np.ndarray, clip: float | None) -> np.ndarray:
    """``max(π, clip)`` renormalised over actions (the paper clips the mice policy at 0.05)."""
    if clip is None:
        return pi
    clip = float(clip)
    if not 0.0 <= clip <= 1.0 / pi.shape[-1]:
        raise ModelError(f"clip={clip} must lie in [0, 1/|A|]")
    out = np.maximum(pi, clip)
    return out / out.sum(axis=-1, keepdims=True)


def _check_demos(demos: Demonstrations, mdp: LabeledMDP) -> None:
    mask = demos.mask()
    if mask.any():
        if demos.states[mask].max() >= mdp.n_states or demos.actions[mask].max() >= mdp.n_actions:
            raise DataError(
                f"demonstrations index states/actions outside the MDP {mdp.name!r} "
                f"({mdp.n_states} states, {mdp.n_actions} actions)"
            )


def node_sequence(demos: Demonstrations, mdp: LabeledMDP, machine: RewardMachine, *, letter=None) -> np.ndarray:
    """``(N, T)`` int64: the node ``u_t = δ_u*(u_I, L(s_0)…L(s_t))`` at every step, −1 in padding."""
    _check_demos(demos, mdp)
    nxt = _next_node(mdp, machine, letter)
    N, T = demos.states.shape
    out = np.full((N, T), PAD, dtype=np.int64)
    u = np.full(N, machine.initial, dtype=np.intp)
    for t in range(T):
        live = demos.lengths > t
        s = np.where(live, demos.states[:, t], 0).astype(np.intp)
        u = np.where(live, nxt[s, u], u)
        out[live, t] = u[live]
    return out


# ====================================================================== log-likelihood
def log_likelihood(
    demos: Demonstrations,
    mdp: LabeledMDP,
    policy,
    *,
    machine: RewardMachine | None = None,
    letter=None,
    clip: float | None = None,
) -> np.ndarray:
    """Per-trajectory log-likelihood ``Σ_t log π(a_t | s_t[, u_t])`` of the actions, ``(N,)``.

    Args:
        policy: ``(S, n, A)`` with ``machine`` (the node tracks ``machine`` along the labels,
            first label included), else ``(S, A)`` or ``(T, S, A)`` (``policy[t]`` scores step
            ``t``; ``T`` must cover the longest trajectory).
        letter: machine letter of each MDP proposition (default: by name).
        clip: if given, the policy is replaced by ``max(π, clip)`` renormalised over the
            actions before scoring (the paper's preprocessing of the sparse mice policy).

    An action of probability 0 gives ``-inf`` (unless ``clip > 0``). Only the actions are
    scored: the start state and the transitions are the same for every model.
    """
    _check_demos(demos, mdp)
    pi = _clip(_policy_table(mdp, policy, machine, need_T=int(demos.lengths.max())), clip)
    mask = demos.mask()
    s = np.where(mask, demos.states, 0).astype(np.intp)
    a = np.where(mask, demos.actions, 0).astype(np.intp)
    with np.errstate(divide="ignore"):
        logpi = np.log(pi)
    if machine is not None:
        u = np.where(mask, node_sequence(demos, mdp, machine, letter=letter), 0)
        lp = logpi[s, u, a]
    elif pi.ndim == 2:
        lp = logpi[s, a]
    else:
        t = np.broadcast_to(np.arange(demos.horizon), s.shape)
        lp = logpi[t, s, a]
    return np.where(mask, lp, 0.0).sum(axis=1)


def average_log_likelihood(demos: Demonstrations, mdp: LabeledMDP, policy, **kw) -> float:
    """Mean over trajectories of :func:`log_likelihood` (the paper's table 3 metric)."""
    return float(np.mean(log_likelihood(demos, mdp, policy, **kw)))


# ====================================================================== rollouts
def rollout(
    mdp: LabeledMDP,
    policy,
    *,
    n: int,
    horizon: int,
    seed,
    machine: RewardMachine | None = None,
    letter=None,
    chunk: int = 100_000,
) -> tuple[np.ndarray, np.ndarray]:
    """Roll out ``n`` trajectories of ``horizon`` actions.

    ``s_0 ~ μ0``; ``a_t ~ π(· | s_t[, u_t])``; ``s_{t+1} ~ P(· | s_t, a_t)``; with a machine
    ``u_0 = δ_u(u_I, L(s_0))`` and ``u_{t+1} = δ_u(u_t, L(s_{t+1}))``.

    Returns:
        ``(states, actions)``: ``(n, horizon + 1)`` and ``(n, horizon)`` int32 arrays (the
        final state ``s_horizon``, reached by the last action, is included).
    """
    n, horizon, chunk = check_sizes(n, horizon, chunk, doing="roll out")
    S, A = mdp.n_states, mdp.n_actions
    pi = _policy_table(mdp, policy, machine, need_T=horizon)
    n_rows = pi.size // A
    acts = RowSampler(np.arange(0, n_rows * A + 1, A), pi.reshape(-1))
    P = mdp.kernel
    moves = RowSampler(P.indptr, P.data)
    succ = np.asarray(P.indices, dtype=np.intp)
    start = RowSampler([0, S], mdp.initial)
    if machine is not None:
        nn = machine.n_nodes
        nxt = _next_node(mdp, machine, letter)
    timed = machine is None and pi.ndim == 3

    states = np.empty((n, horizon + 1), dtype=np.int32)
    actions = np.empty((n, horizon), dtype=np.int32)
    rng = np.random.default_rng(seed)
    W = 1 + 2 * horizon
    for lo in range(0, n, chunk):
        hi = min(n, lo + chunk)
        m = hi - lo
        U = np.ascontiguousarray(rng.random((m, W)).T)  # row k: k-th draw of each trajectory
        s = start.sample(np.zeros(m, dtype=np.intp), U[0]).astype(np.intp)
        if machine is not None:
            u = nxt[s, machine.initial]
        st = np.empty((horizon + 1, m), dtype=np.int32)
        ac = np.empty((horizon, m), dtype=np.int32)
        st[0] = s
        for t in range(horizon):
            if machine is not None:
                row = s * nn + u
            elif timed:
                row = t * S + s
            else:
                row = s
            a = acts.sample(row, U[2 * t + 1]) - row * A
            s = succ[moves.sample(s * A + a, U[2 * t + 2])]
            if machine is not None:
                u = nxt[s, u]
            ac[t] = a
            st[t + 1] = s
        states[lo:hi] = st.T
        actions[lo:hi] = ac.T
    return states, actions


def sample_demonstrations(
    mdp: LabeledMDP, policy, *, n: int, horizon: int, seed, machine=None, letter=None
) -> Demonstrations:
    """:func:`rollout` as :class:`~rmtk.data.Demonstrations` of ``horizon`` steps (for
    Markovian and time-dependent policies, which :func:`rmtk.product.simulate.simulate` does not take)."""
    states, actions = rollout(mdp, policy, n=n, horizon=horizon, seed=seed, machine=machine, letter=letter)
    return Demonstrations(states[:, :horizon], actions, np.full(states.shape[0], horizon, dtype=np.int64))


def rollout_returns(
    mdp: LabeledMDP,
    policy,
    policy_machine: RewardMachine | None,
    score_machine: RewardMachine,
    *,
    n: int,
    horizon: int,
    seed,
    letter=None,
    score_letter=None,
    chunk: int = 100_000,
) -> np.ndarray:
    """``(n,)`` undiscounted returns of rollouts acted by ``policy`` and scored by ``score_machine``.

    The score machine tracks the same label sequence from its own initial node, the first
    label included (``v_0 = δ_u(v_I, L(s_0))``, no reward for it); step ``t`` earns
    ``δ_r(v_t, L(s_{t+1}))`` and moves to ``v_{t+1} = δ_u(v_t, L(s_{t+1}))``, so ``horizon``
    actions earn ``horizon`` rewards.

    Args:
        policy: ``(S, n_p, A)`` acting on the node of ``policy_machine``, or (with
            ``policy_machine=None``) ``(S, A)`` / ``(T, S, A)`` with ``T ≥ horizon``.
        letter, score_letter: letter maps of the two machines (default: by name).
    """
    states, _ = rollout(
        mdp, policy, n=n, horizon=horizon, seed=seed, machine=policy_machine, letter=letter, chunk=chunk
    )
    nxt = _next_node(mdp, score_machine, score_letter)
    rew = _entry_reward(mdp, score_machine, score_letter)
    v = nxt[states[:, 0], score_machine.initial]
    total = np.zeros(states.shape[0])
    for t in range(horizon):
        s1 = states[:, t + 1]
        total += rew[s1, v]
        v = nxt[s1, v]
    return total


def average_return(
    mdp: LabeledMDP,
    policy,
    policy_machine: RewardMachine | None,
    score_machine: RewardMachine,
    *,
    n: int,
    horizon: int,
    seed,
    letter=None,
    score_letter=None,
    chunk: int = 100_000,
) -> float:
    """Mean of :func:`rollout_returns` (appendix D's "average return per rollout")."""
    return float(
        np.mean(
            rollout_returns(
                mdp,
                policy,
                policy_machine,
                score_machine,
                n=n,
                horizon=horizon,
                seed=seed,
                letter=letter,
                score_letter=score_letter,
                chunk=chunk,
            )
        )
    )
