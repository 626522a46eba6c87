"""Baselines of the paper's experiments (section 6.4, appendix D): tabular Maximum Causal
Entropy IRL (Ziebart, Bagnell and Dey 2010) with a *static* reward on MDP states.

* **D-IRL** (:func:`d_irl`): dense features, one indicator per state, so every state has its
  own reward.
* **F-IRL** (:func:`f_irl`): the one-hot encoding of the state's label (proposition), so
  every proposition has its own reward.
* **Uniform** (:func:`uniform_policy`): ``π(a|s) = 1/|A|``.

Conventions
-----------
**Reward.** ``r(s, a, s') = θ·φ(s')``: the reward is received on *entering* ``s'``, as the
machine's ``δ_r(u, L(s'))`` is (docs/design/02-conventions.md, "The prefix convention"). The start state earns nothing.

**Model.** With entropy weight ``λ``, the soft Bellman equations on the MDP's states are::

    Q(s,a) = Σ_s' P(s'|s,a) [r(s') + γ V'(s')],   V(s) = λ log Σ_a exp(Q(s,a)/λ),
    π(a|s) = exp((Q(s,a) − V(s))/λ)

in one of two forms:

* **finite horizon** (default; the textbook MaxCausalEnt of Ziebart 2010, undiscounted,
  ``γ = 1``): a backward recursion of length ``T`` from ``V_T = 0``, ``V' = V_{t+1}``, giving
  a *time-dependent* policy ``π_t``, ``t = 0..T−1`` (``policy`` of shape ``(T, S, A)``). ``T``
  is the demonstrations' horizon unless ``horizon=`` says otherwise. Step ``t`` of every
  trajectory is scored with ``π_t`` (trajectories all start at ``t = 0``; shorter ones are
  prefixes).
* **stationary, discounted** (``stationary=True``; ``γ`` defaults to ``mdp.gamma``): the
  infinite-horizon fixed point ``V' = V``, a *stationary* policy ``(S, A)``. This is the
  one to use when the baseline must act for longer than the demonstrations (appendix D's
  rollouts of length 100 from demonstrations of length 10).

Which the experiments use: the held-out log-likelihood of the mice (section 6.4; every
trajectory has 22 steps and starts at step 0) uses the default finite-horizon model with
``T`` = the training horizon; the return of rollouts longer than the demonstrations
(appendix D) needs a policy for every step and uses ``stationary=True`` with the MDP's
``γ``.

**Fitting.** Maximum likelihood of the demonstrated actions,
``LL(θ) = Σ_i Σ_t log π_t(a_t | s_t)`` (the Lagrangian dual of the causal-entropy problem),
maximised with L-BFGS (``scipy.optimize``) or plain gradient ascent. The gradient is exact
for the observed trajectories: it is computed by one forward (adjoint) sweep along time
(finite horizon) or one linear solve (stationary), and equals "empirical minus expected
feature counts" (divided by λ), the expected counts being propagated under the current policy
from the states the demonstrations actually visit; averaged over the dynamics it is the
textbook ``E_emp[Σ φ] − E_π[Σ φ]`` from the empirical start distribution.

The reward is identified only up to a constant (adding ``c`` to every state's reward leaves
every policy unchanged), and with D-IRL a reachable state the demonstrations never enter has
its reward pushed down without bound (``l2 > 0`` keeps it finite).

Everything is vectorised over states and actions: the only Python loops are over time steps
(finite horizon) and optimiser iterations.
"""

from __future__ import annotations

import time

import attrs
import numpy as np

from .._arrays import frozen_array
from ..data import Demonstrations
from ..errors import DataError, ModelError, RmtkError
from ..mdp.model import LabeledMDP
from ..product.planning import Grid, backward, iterate

__all__ = [
    "IRLFit",
    "IRLError",
    "maxcausalent_irl",
    "d_irl",
    "f_irl",
    "uniform_policy",
    "dense_features",
    "label_features",
    "MaxCausalEntObjective",
    "soft_policy",
]


class IRLError(RmtkError):
    """MaxCausalEnt IRL could not be set up or its inner soft Bellman solve failed."""


# ====================================================================== features
def dense_features(mdp: LabeledMDP) -> np.ndarray:
    """``(S, S)`` identity: one reward per state (D-IRL)."""
    return np.eye(mdp.n_states)


def label_features(mdp: LabeledMDP) -> np.ndarray:
    """``(S, K)`` one-hot of each state's label: one reward per proposition (F-IRL)."""
    return np.eye(mdp.n_propositions)[mdp.labels]


def uniform_policy(mdp: LabeledMDP) -> np.ndarray:
    """``(S, A)`` uniform Markovian policy ``π(a|s) = 1/|A|``."""
    return np.full((mdp.n_states, mdp.n_actions), 1.0 / mdp.n_actions)


# ====================================================================== result
@attrs.frozen
class IRLFit:
    """The result of :func:`maxcausalent_irl`.

    Attributes:
        theta: ``(d,)`` feature weights.
        reward: ``(S,)`` reward of entering each state, ``features @ theta``.
        policy: ``(S, A)`` stationary policy, or ``(T, S, A)`` time-dependent policy
            (finite horizon; ``policy[t]`` acts at step ``t``).
        log_likelihood: ``Σ_i Σ_t log π(a_t|s_t)`` over the training demonstrations.
        n_trajectories: number of training trajectories.
        iterations: optimiser iterations.
        evaluations: objective (soft Bellman + gradient) evaluations.
        converged: whether the optimiser met its tolerance.
        message: the optimiser's message.
        gamma: discount used (1.0 by default for the finite horizon).
        lam: entropy weight λ.
        horizon: ``T`` of the finite-horizon model, ``None`` when stationary.
        seconds: wall time of the fit.
    """

    theta: np.ndarray = attrs.field(converter=frozen_array(float), eq=False, repr=False)
    reward: np.ndarray = attrs.field(converter=frozen_array(float), eq=False, repr=False)
    policy: np.ndarray = attrs.field(converter=frozen_array(float), eq=False, repr=False)
    log_likelihood: float
    n_trajectories: int
    iterations: int
    evaluations: int
    converged: bool
    message: str
    gamma: float
    lam: float
    horizon: int | None
    seconds: float = 0.0

    @property
    def stationary(self) -> bool:
        return self.horizon is None

    @property
    def average_log_likelihood(self) -> float:
        """Mean per-trajectory log-likelihood on the training demonstrations."""
        return self.log_likelihood / max(self.n_trajectories, 1)

    def summary(self) -> str:
        kind = "stationary" if self.stationary else f"finite horizon {self.horizon}"
        return (
            f"MaxCausalEnt IRL ({kind}, gamma {self.gamma:g}, lambda {self.lam:g}): "
            f"{self.theta.size} features, train LL {self.log_likelihood:.4f} "
            f"({self.average_log_likelihood:.4f}/trajectory), {self.iterations} iterations, "
            f"{'converged' if self.converged else 'NOT converged'}, {self.seconds:.3f}s"
        )


# ====================================================================== soft Bellman on states
# A reward on MDP states is the one-node case of the product planner (rmtk.product.planning): entry
# reward r(s'), next node 0. The grid of the MDP is built once and serves every θ.
def _grid(mdp: LabeledMDP) -> Grid:
    return Grid(mdp.kernel, mdp.n_actions, np.zeros((mdp.n_states, 1), dtype=np.int64))


def _finite(grid: Grid, r: np.ndarray, gamma: float, lam: float, T: int):
    """Backward recursion: ``(V (T+1, S), log π (T, S, A))`` with ``V_T = 0``."""
    V, logpi = backward(grid, r[:, None], gamma, lam, T)
    return V[..., 0], logpi[:, :, 0, :]


def _stationary(grid: Grid, r: np.ndarray, gamma: float, lam: float, V0=None, *, tol=1e-10, max_iter=200):
    """Soft policy iteration (Newton on the soft Bellman equation), warm-started at ``V0``,
    until the residual is at most ``tol·max(1, max|V|)``. Returns ``(V, log π, iterations)``."""
    if not gamma < 1.0:
        raise IRLError(f"the stationary model needs a discount gamma < 1, got {gamma}")
    V = np.zeros((grid.S, 1)) if V0 is None else np.array(V0, dtype=float).reshape(grid.S, 1)
    run = iterate(
        grid,
        r[:, None],
        gamma,
        lam,
        V,
        exact=True,
        max_iter=max_iter,
        stop=lambda change, res, V: res <= tol * max(1.0, float(np.abs(V).max())),
    )
    if run.status == "diverged":
        raise IRLError("soft policy iteration diverged (non-finite values)")
    if run.status != "converged":
        raise IRLError(f"soft policy iteration did not converge in {max_iter} iterations (residual {run.residual:.3g})")
    return run.V[:, 0], run.logpi[:, 0, :], run.iterations


def _pull(grid: Grid, q: np.ndarray) -> np.ndarray:
    """``f[s'] = Σ_{s,a} q[s, a] P(s'|s,a)`` (the adjoint of the backup) for ``q`` of shape ``(S, A)``."""
    return grid.pull(q[:, None, :])[:, 0]


def soft_policy(
    mdp: LabeledMDP,
    reward: np.ndarray,
    *,
    gamma: float | None = None,
    lam: float = 1.0,
    horizon: int | None = None,
) -> np.ndarray:
    """The MaxEnt policy of the state reward ``reward`` (received on entering a state).

    ``horizon=None``: stationary, discounted (``γ`` defaults to ``mdp.gamma``), shape
    ``(S, A)``. ``horizon=T``: finite horizon (``γ`` defaults to 1), shape ``(T, S, A)``.
    """
    r = np.asarray(reward, dtype=float)
    if r.shape != (mdp.n_states,):
        raise ModelError(f"reward must have one entry per state ({mdp.n_states}), got shape {r.shape}")
    grid = _grid(mdp)
    if horizon is None:
        g = mdp.gamma if gamma is None else float(gamma)
        return np.exp(_stationary(grid, r, g, float(lam))[1])
    g = 1.0 if gamma is None else float(gamma)
    return np.exp(_finite(grid, r, g, float(lam), int(horizon))[1])


# ====================================================================== objective
class MaxCausalEntObjective:
    """The demonstrations' log-likelihood ``LL(θ)`` and its exact gradient.

    ``counts[t, s, a]`` is the number of demonstrations taking ``a`` in ``s`` at step ``t``;
    everything else is computed from these counts, so one evaluation costs
    ``O(T · nnz(P))`` (finite horizon) or one ``S × S`` solve per policy-iteration step
    (stationary), independently of the number of trajectories. ``bellman_tol`` is the
    relative residual at which stationary soft policy iteration stops.
    """

    def __init__(
        self,
        mdp: LabeledMDP,
        demos: Demonstrations,
        features: np.ndarray,
        *,
        gamma: float | None = None,
        lam: float = 1.0,
        horizon: int | None = None,
        stationary: bool = False,
        bellman_tol: float = 1e-10,
    ):
        S, A = mdp.n_states, mdp.n_actions
        phi = np.asarray(features, dtype=float)
        if phi.ndim != 2 or phi.shape[0] != S:
            raise ModelError(f"features must have shape (states, d) = ({S}, d), got {phi.shape}")
        if not np.all(np.isfinite(phi)):
            raise ModelError("features must be finite")
        lam = float(lam)
        if not (lam > 0 and np.isfinite(lam)):
            raise ModelError(f"entropy weight lambda={lam} must be a positive number")
        mask = demos.mask()
        st, ac = demos.states[mask].astype(np.int64), demos.actions[mask].astype(np.int64)
        if st.size and (st.max() >= S or ac.max() >= A):
            raise DataError(f"demonstrations index states/actions outside the MDP ({S} states, {A} actions)")
        tt = np.nonzero(mask)[1].astype(np.int64)
        Td = demos.horizon
        if stationary:
            if horizon is not None:
                raise ModelError("a stationary model has no horizon; pass horizon=None")
            self.T = None
            self.gamma = mdp.gamma if gamma is None else float(gamma)
            if not 0.0 <= self.gamma < 1.0:
                raise ModelError(f"the stationary model needs 0 <= gamma < 1, got {self.gamma}")
        else:
            self.T = Td if horizon is None else int(horizon)
            if self.T < Td:
                raise ModelError(f"horizon {self.T} is shorter than the demonstrations ({Td} steps)")
            self.gamma = 1.0 if gamma is None else float(gamma)
            if not 0.0 <= self.gamma <= 1.0:
                raise ModelError(f"discount gamma={self.gamma} must lie in [0, 1]")
        self.lam = lam
        self.bellman_tol = float(bellman_tol)
        self.phi = phi
        self.grid = _grid(mdp)
        self.n_trajectories = demos.n_trajectories
        counts = np.bincount((tt * S + st) * A + ac, minlength=Td * S * A).reshape(Td, S, A).astype(float)
        if stationary:
            self.counts = counts.sum(axis=0)  # (S, A)
        else:
            self.counts = counts  # (Td, S, A); zero beyond the demos' horizon
        self.visits = self.counts.sum(axis=-1)  # (…, S)
        self._V = None  # warm start of the stationary solver
        self.evaluations = 0

    @property
    def d(self) -> int:
        return self.phi.shape[1]

    def reward(self, theta: np.ndarray) -> np.ndarray:
        return self.phi @ np.asarray(theta, dtype=float)

    def policy_log(self, theta: np.ndarray) -> np.ndarray:
        """``log π``: ``(S, A)`` stationary or ``(T, S, A)`` finite horizon."""
        r = self.reward(theta)
        if self.T is None:
            V, logpi, _ = _stationary(self.grid, r, self.gamma, self.lam, self._V, tol=self.bellman_tol)
            self._V = V
            return logpi
        return _finite(self.grid, r, self.gamma, self.lam, self.T)[1]

    def __call__(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        """``(LL(θ), ∇_θ LL(θ))`` summed over the demonstrations."""
        self.evaluations += 1
        r = self.reward(theta)
        lam, g, grid, c = self.lam, self.gamma, self.grid, self.counts
        if self.T is None:
            V, logpi, _ = _stationary(grid, r, g, lam, self._V, tol=self.bellman_tol)
            self._V = V
            pi = np.exp(logpi)
            ll = float(np.sum(c * logpi))
            # dLL = Σ q dQ with q = (c − n π)/λ; dQ = P(dr + γ dV), dV = (I − γP_π)^{-1} P_π dr,
            # so ∇_r LL = h + γ P_πᵀ (I − γP_πᵀ)^{-1} h = (I − γP_πᵀ)^{-1} h with h = Pᵀ q
            h = _pull(grid, (c - self.visits[:, None] * pi) / lam)
            grad_r = grid.solve(pi[:, None, :], h[:, None], g, transpose=True)[:, 0]
        else:
            _, logpi = _finite(grid, r, g, lam, self.T)
            Td = c.shape[0]
            ll = float(np.sum(c * logpi[:Td]))
            # forward adjoint sweep: w_t = ∂LL/∂V_t, q_t = ∂LL/∂Q_t (total derivatives)
            grad_r = np.zeros(grid.S)
            carry = np.zeros(grid.S)
            for t in range(self.T):
                pi = np.exp(logpi[t])
                if t < Td:
                    q = c[t] / lam + (carry - self.visits[t] / lam)[:, None] * pi
                else:
                    q = carry[:, None] * pi
                f = _pull(grid, q)
                grad_r += f
                carry = g * f
        return ll, self.phi.T @ grad_r


# ====================================================================== fitting
def maxcausalent_irl(
    mdp: LabeledMDP,
    demos: Demonstrations,
    features: np.ndarray,
    *,
    gamma: float | None = None,
    lam: float = 1.0,
    stationary: bool = False,
    horizon: int | None = None,
    method: str = "L-BFGS-B",
    lr: float = 1.0,
    iterations: int = 1000,
    tol: float = 1e-6,
    l2: float = 0.0,
    seed=None,
    theta0: np.ndarray | None = None,
    bellman_tol: float = 1e-10,
) -> IRLFit:
    """Tabular Maximum Causal Entropy IRL with the state reward ``r(s') = θ·φ(s')``.

    Args:
        features: ``(S, d)`` feature matrix ``φ``.
        gamma: discount; default 1 (finite horizon) or ``mdp.gamma`` (stationary).
        lam: entropy weight λ of the soft Bellman equations.
        stationary: fit the infinite-horizon discounted model (stationary ``(S, A)`` policy)
            instead of the finite-horizon one (time-dependent ``(T, S, A)`` policy).
        horizon: ``T`` of the finite-horizon model (default: ``demos.horizon``).
        method: ``"L-BFGS-B"`` (scipy) or ``"gradient"`` (plain gradient ascent, step ``lr``).
        lr: step size of ``method="gradient"`` (on the per-trajectory mean log-likelihood).
        iterations: iteration cap of the optimiser.
        tol: stop when the largest gradient component of the per-trajectory mean objective
            is at most ``tol``.
        l2: ridge penalty ``l2/2·|θ|²`` on the per-trajectory mean objective.
        seed: if given, start from ``θ0 ~ N(0, 0.01²)`` drawn with this seed (default: ``θ0 = 0``).
        theta0: explicit starting point (overrides ``seed``).
        bellman_tol: relative residual at which the stationary soft policy iteration stops.

    The optimiser minimises ``−LL(θ)/N + l2/2·|θ|²`` with ``N`` the number of trajectories.
    """
    t0 = time.perf_counter()
    obj = MaxCausalEntObjective(
        mdp, demos, features, gamma=gamma, lam=lam, horizon=horizon, stationary=stationary, bellman_tol=bellman_tol
    )
    N = max(obj.n_trajectories, 1)
    l2 = float(l2)
    if l2 < 0:
        raise ModelError(f"l2={l2} must be non-negative")
    if theta0 is not None:
        x0 = np.asarray(theta0, dtype=float).copy()
        if x0.shape != (obj.d,):
            raise ModelError(f"theta0 must have shape ({obj.d},), got {x0.shape}")
    elif seed is not None:
        x0 = np.random.default_rng(seed).normal(scale=0.01, size=obj.d)
    else:
        x0 = np.zeros(obj.d)

    def fun(x):
        ll, g = obj(x)
        return -ll / N + 0.5 * l2 * float(x @ x), -g / N + l2 * x

    if method == "L-BFGS-B":
        import scipy.optimize

        res = scipy.optimize.minimize(
            fun,
            x0,
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": int(iterations), "gtol": float(tol), "ftol": 1e-15, "maxfun": 20 * int(iterations)},
        )
        theta, nit, msg = res.x, int(res.nit), str(res.message)
        gnorm = float(np.abs(fun(theta)[1]).max())
        converged = bool(res.success) or gnorm <= tol
    elif method == "gradient":
        theta, nit, converged, msg = x0, 0, False, "iteration cap reached"
        for nit in range(1, int(iterations) + 1):  # noqa: B007 (nit is the count reported after the loop)
            _, g = fun(theta)
            if float(np.abs(g).max()) <= tol:
                converged, msg = True, "gradient below tolerance"
                break
            theta = theta - float(lr) * g
    else:
        raise ModelError(f"unknown optimisation method {method!r}; expected 'L-BFGS-B' or 'gradient'")
    ll, _ = obj(theta)
    logpi = obj.policy_log(theta)
    return IRLFit(
        theta=theta,
        reward=obj.reward(theta),
        policy=np.exp(logpi),
        log_likelihood=ll,
        n_trajectories=obj.n_trajectories,
        iterations=nit,
        evaluations=obj.evaluations,
        converged=converged,
        message=msg,
        gamma=obj.gamma,
        lam=obj.lam,
        horizon=obj.T,
        seconds=time.perf_counter() - t0,
    )


def d_irl(mdp: LabeledMDP, demos: Demonstrations, **kw) -> IRLFit:
    """D-IRL: MaxCausalEnt IRL with one reward per state (identity features)."""
    return maxcausalent_irl(mdp, demos, dense_features(mdp), **kw)


def f_irl(mdp: LabeledMDP, demos: Demonstrations, **kw) -> IRLFit:
    """F-IRL: MaxCausalEnt IRL with one reward per proposition (label one-hot features)."""
    return maxcausalent_irl(mdp, demos, label_features(mdp), **kw)
