"""MaxEnt (soft) optimal policies on the product of a labeled MDP and a reward machine
(paper section 2.2, objective (1); appendix "Soft Bellman Iteration").

With entropy weight λ and discount γ the soft-optimal values satisfy, for every ``(s, u)``::

    Q(s,u,a) = Σ_s' P(s'|s,a) [δ_r(u, L(s')) + γ V(s', δ_u(u, L(s')))]
    V(s,u)   = λ log Σ_a exp(Q(s,u,a) / λ)
    π(a|s,u) = exp((Q(s,u,a) − V(s,u)) / λ)

Everything is computed on the full grid ``S × n`` (unreachable pairs never influence
reachable ones, and the grid keeps the code vectorised): with
``W[s', u] = δ_r(u, L(s')) + γ V(s', δ_u(u, L(s')))``, one sparse product
``mdp.kernel @ W`` gives ``Q`` for every ``(s, a, u)``.

Two solvers:

* ``method="policy_iteration"`` (default): soft policy iteration. The current policy is
  evaluated exactly by solving ``(I − γ P_π) V = r_π + λ H(π)`` (dense LU when the grid is
  small, sparse LU otherwise), then improved by ``π ∝ exp(Q/λ)``. It is Newton's method on
  the soft Bellman equation and converges in a handful of iterations even at γ = 0.99.
* ``method="value_iteration"``: the appendix's soft Bellman iteration ``V ← λ lse(Q(V)/λ)``,
  kept for cross-checking (it needs about ``log(tol)/log(γ)`` iterations).

Both stop when the largest change of ``V`` between iterations is at most ``tol`` and raise
:class:`PlanningError` if that does not happen within ``max_iter`` iterations.

This module is the one soft Bellman implementation of the package: :class:`Grid` (backup,
its adjoint, exact policy evaluation), :func:`soft`, :func:`iterate` (soft policy or value
iteration) and :func:`backward` (finite horizon) also serve the state-reward baselines
(:mod:`rmtk.rewards.baselines`, the one-node grid) and the re-planning check of :mod:`rmtk.rewards.recovery`.
Only numpy is imported; scipy's sparse LU is imported when a grid exceeds
:data:`DENSE_LIMIT` pairs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import attrs
import numpy as np

from .. import ties
from .._arrays import Csr, array_eq, frozen_array
from ..errors import ModelError, RmtkError
from ..machine.model import RewardMachine
from ..mdp.model import LabeledMDP
from ..task import Task
from .model import Product, letter_map

#: Grids with at most this many ``(s, u)`` pairs are evaluated with a dense solve (numpy's
#: LAPACK); larger ones with a sparse LU (SuperLU, scipy imported then), which is faster and
#: avoids BLAS thread start-up jitter.
DENSE_LIMIT = 128

#: Default iteration caps per method.
MAX_ITER = {"policy_iteration": 200, "value_iteration": 1_000_000}

METHODS = ("policy_iteration", "value_iteration")


class PlanningError(RmtkError):
    """Soft Bellman iteration did not converge (or was asked something impossible)."""


@attrs.frozen
class SoftPolicy:
    """The soft-optimal (MaxEnt) product policy on the full grid ``S × n``.

    Attributes:
        V: ``(S, n)`` soft state values.
        Q: ``(S, n, |A|)`` soft action values (one Bellman backup of ``V``).
        pi: ``(S, n, |A|)`` action distributions ``π(a|s,u)`` (rows sum to 1).
        gamma: the discount used.
        lam: the entropy weight λ used.
        method: ``"policy_iteration"`` or ``"value_iteration"``.
        iterations: number of iterations run.
        residual: final Bellman residual ``max |λ lse(Q/λ) − V|``.
    """

    V: np.ndarray = attrs.field(converter=frozen_array(float), eq=array_eq, hash=False, repr=False)
    Q: np.ndarray = attrs.field(converter=frozen_array(float), eq=array_eq, hash=False, repr=False)
    pi: np.ndarray = attrs.field(converter=frozen_array(float), eq=array_eq, hash=False, repr=False)
    gamma: float = attrs.field(converter=float)
    lam: float = attrs.field(converter=float)
    method: str = "policy_iteration"
    iterations: int = 0
    residual: float = 0.0

    def log_pi(self) -> np.ndarray:
        """``log π(a|s,u)`` computed stably from ``Q`` (finite even where ``π`` underflows)."""
        return soft(self.Q, self.lam)[1]

    def on(self, prod: Product) -> np.ndarray:
        """``(m, |A|)`` action distributions of the reachable product states, in ``prod`` order."""
        return prod.restrict(self.pi)

    def action_probabilities(self, states, nodes) -> np.ndarray:
        """``π(·|s, u)`` for arrays of states and nodes (broadcast), shape ``(..., |A|)``."""
        return self.pi[np.asarray(states), np.asarray(nodes)]

    def greedy(self) -> np.ndarray:
        """``(S, n)`` the most probable action of every ``(s, u)``; actions whose
        probabilities lie within :data:`rmtk.ties.TOL` of the largest are tied, and the lowest
        action index wins (:func:`rmtk.ties.argbest`), so the choice is the same on every
        machine however the last bits of the sums fall."""
        return ties.argbest(self.pi, axis=2)


# ---------------------------------------------------------------------- the soft Bellman core
def lse(x: np.ndarray) -> np.ndarray:
    """log Σ exp over the last axis, shifted by the max."""
    mx = x.max(axis=-1, keepdims=True)
    return (mx + np.log(np.exp(x - mx).sum(axis=-1, keepdims=True)))[..., 0]


def soft(Q: np.ndarray, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """``(V, log π)`` of the soft-max policy of ``Q`` (last axis: actions):
    ``V = λ lse(Q/λ)``, ``log π = Q/λ − lse(Q/λ)``."""
    z = Q / lam
    v = lse(z)
    return lam * v, z - v[..., None]


class Grid:
    """The grid of (MDP state, node) pairs ``(S, n)`` on which the soft Bellman equations are
    solved: from ``(s, u)`` action ``a`` moves to ``s' ~ P(·|s, a)`` and node
    ``next_node[s', u]``. The reward machine product has ``next_node[s', u] = δ_u(u, L(s'))``;
    a reward on MDP states (:mod:`rmtk.rewards.baselines`) is the one-node grid (``next_node = 0``).
    Rewards, discount and λ are arguments of the functions below, so one grid (and its
    cached evaluation pattern) serves every reward.
    """

    def __init__(self, kernel: Csr, n_actions: int, next_node: np.ndarray):
        self.T = kernel
        self.next_node = np.asarray(next_node, dtype=np.int64)
        self.S, self.n = self.next_node.shape
        self.A = int(n_actions)
        self.N = self.S * self.n
        self.rows = np.arange(self.S)[:, None]
        self._eval = None

    @classmethod
    def product(cls, mdp: LabeledMDP, machine: RewardMachine, letter=None) -> tuple[Grid, np.ndarray]:
        """The full product grid ``S × n`` and its entry rewards ``δ_r(u, L(s'))`` as ``(S, n)``."""
        lp = letter_map(mdp, machine, letter)[mdp.labels]
        grid = cls(mdp.kernel, mdp.n_actions, machine.delta_u[:, lp].T)
        return grid, machine.delta_r[:, lp].T.copy()

    def follow(self, V: np.ndarray) -> np.ndarray:
        """``V[s', next_node[s', u]]`` as ``(S, n)``: the value after entering ``s'`` from ``u``."""
        return V if self.n == 1 else V[self.rows, self.next_node]

    def backup(self, W: np.ndarray) -> np.ndarray:
        """``Q[s, u, a] = Σ_s' P(s'|s,a) W[s', u]`` as ``(S, n, A)``."""
        return (self.T @ W).reshape(self.S, self.A, self.n).transpose(0, 2, 1)

    def pull(self, q: np.ndarray) -> np.ndarray:
        """The adjoint of :meth:`backup`: ``f[s', u] = Σ_{s,a} q[s, u, a] P(s'|s,a)``."""
        return self.T.rmatmul(q.transpose(0, 2, 1).reshape(self.S * self.A, self.n))

    # ------------------------------------------------------------ exact policy evaluation
    def _prepare_eval(self):
        A, n, N, T = self.A, self.n, self.N, self.T
        rowsA = T.row_ids()  # MDP row s*A+a of each entry
        s, a = rowsA // A, rowsA % A
        s2, p = T.indices, T.data
        u = np.arange(n)
        prow = (s[:, None] * n + u).ravel()  # product row (s,u)
        pcol = (s2[:, None] * n + self.next_node[s2]).ravel()  # product col (s', next_node[s', u])
        pidx = prow * A + np.repeat(a, n)  # index of π(a|s,u) in pi.ravel()
        prob = np.repeat(p, n)
        diag = np.arange(N)
        if N <= DENSE_LIMIT:
            self._eval = ("dense", prow * N + pcol, pidx, prob, diag * N + diag)
        else:
            # CSC pattern (column-major codes) including the diagonal; data filled per policy
            codes = np.concatenate([pcol * N + prow, diag * N + diag])
            uniq, inv = np.unique(codes, return_inverse=True)
            indptr = np.searchsorted(uniq // N, np.arange(N + 1))
            self._eval = ("sparse", inv[: len(pcol)], pidx, prob, inv[len(pcol) :], uniq % N, indptr, len(uniq))

    def solve(self, pi: np.ndarray, rhs: np.ndarray, gamma: float, *, transpose: bool = False) -> np.ndarray:
        """``x`` solving ``(I − γ P_π) x = rhs`` (or ``(I − γ P_π)ᵀ x = rhs``) on the grid, with
        ``P_π[(s,u), (s',u')] = Σ_a π(a|s,u) P(s'|s,a) [u' = next_node[s', u]]``; ``pi`` is
        ``(S, n, A)``, ``rhs`` and ``x`` are ``(S, n)``. A dense LU up to :data:`DENSE_LIMIT`
        pairs, a sparse LU (scipy, imported then) above."""
        if self._eval is None:
            self._prepare_eval()
        N = self.N
        b = rhs.ravel()
        if self._eval[0] == "dense":
            _, flat, pidx, prob, diag = self._eval
            M = np.bincount(flat, weights=pi.ravel()[pidx] * prob, minlength=N * N)
            M *= -gamma
            M[diag] += 1.0
            M = M.reshape(N, N)
            try:
                x = np.linalg.solve(M.T if transpose else M, b)
            except np.linalg.LinAlgError:  # cannot happen for γ < 1 (I − γP_π is diagonally dominant)
                raise PlanningError("policy evaluation: singular system") from None
        else:
            import scipy.sparse as sp
            import scipy.sparse.linalg as spla

            _, inv, pidx, prob, dpos, indices, indptr, nu = self._eval
            data = np.bincount(inv, weights=pi.ravel()[pidx] * prob, minlength=nu)
            data *= -gamma
            data[dpos] += 1.0
            M = sp.csc_array((data, indices, indptr), shape=(N, N))
            # I − γP_π is strictly diagonally dominant by rows (γ < 1), so elimination on the
            # diagonal is stable (growth ≤ 2) and needs no row pivoting: a symmetric
            # minimum-degree order of M + Mᵀ then has a third less fill than spsolve's COLAMD
            # order with partial pivoting (Craft's 39 × 39 grid × 3 nodes: 118,499 against
            # 186,021 entries in L + U), and one factorisation serves M and Mᵀ
            lu = spla.splu(M, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0, options={"SymmetricMode": True})
            x = lu.solve(b, trans="T" if transpose else "N")
        return x.reshape(self.S, self.n)


def q_values(grid: Grid, entry: np.ndarray, V: np.ndarray, gamma: float) -> np.ndarray:
    """One Bellman backup: ``Q[s,u,a] = Σ_s' P(s'|s,a) [entry[s', u] + γ V(s', next_node[s', u])]``."""
    return grid.backup(entry + gamma * grid.follow(V))


class Iteration(NamedTuple):
    """The state of :func:`iterate` when it stopped.

    ``V`` is the last iterate, ``Q`` its backup and ``(Vs, logpi) = soft(Q)``; ``change`` is
    ``max |V_k − V_{k−1}|`` of the last step and ``residual`` is ``max |Vs − V|``. ``status``
    is ``"converged"``, ``"diverged"`` (non-finite values) or ``"max_iter"``.
    """

    V: np.ndarray
    Q: np.ndarray
    Vs: np.ndarray
    logpi: np.ndarray
    iterations: int
    change: float
    residual: float
    status: str


def iterate(
    grid: Grid,
    entry: np.ndarray,
    gamma: float,
    lam: float,
    V: np.ndarray,
    *,
    exact: bool,
    stop: Callable[[float, float, np.ndarray], bool],
    max_iter: int,
) -> Iteration:
    """Soft policy iteration (``exact=True``) or soft value iteration from ``V`` (``(S, n)``),
    until ``stop(change, residual, V)`` holds.

    Policy iteration evaluates ``π = softmax(Q/λ)`` exactly, written as a Newton step: since
    ``Σ_a π (Q − λ log π) = λ lse(Q/λ) = Vs``, the policy's own Bellman operator maps ``V`` to
    ``Vs``, so ``V_π = V + (I − γ P_π)^{-1} (Vs − V)``. Solving for the correction keeps the
    rounding error relative to the (small) residual instead of to ``|V|``. Value iteration
    is ``V ← Vs``.
    """
    Q = q_values(grid, entry, V, gamma)
    Vs, logpi = soft(Q, lam)
    change = residual = float("inf")
    it = 0
    status = "max_iter"
    while it < max_iter:
        it += 1
        V_new = V + grid.solve(np.exp(logpi), Vs - V, gamma) if exact else Vs
        change = float(np.abs(V_new - V).max())
        V = V_new
        Q = q_values(grid, entry, V, gamma)
        Vs, logpi = soft(Q, lam)
        residual = float(np.abs(Vs - V).max())
        if not (np.isfinite(change) and np.isfinite(residual)):
            status = "diverged"
            break
        if stop(change, residual, V):
            status = "converged"
            break
    return Iteration(V, Q, Vs, logpi, it, change, residual, status)


def backward(grid: Grid, entry: np.ndarray, gamma: float, lam: float, horizon: int):
    """Finite-horizon soft Bellman recursion from ``V_T = 0``: ``(V (T+1, S, n), log π (T, S, n, A))``."""
    V = np.zeros((horizon + 1, grid.S, grid.n))
    logpi = np.empty((horizon, grid.S, grid.n, grid.A))
    for t in range(horizon - 1, -1, -1):
        V[t], logpi[t] = soft(q_values(grid, entry, V[t + 1], gamma), lam)
    return V, logpi


def _check_params(gamma: float, lam: float, method: str, tol: float) -> None:
    if not (0.0 <= gamma < 1.0):
        raise ModelError(f"discount gamma={gamma} must lie in [0, 1)")
    if not (lam > 0 and np.isfinite(lam)):
        raise ModelError(f"entropy weight lambda={lam} must be a positive number")
    if method not in METHODS:
        raise ModelError(f"unknown planning method {method!r}; expected one of {', '.join(METHODS)}")
    if not tol > 0:
        raise ModelError(f"tolerance must be positive, got {tol}")


def soft_bellman(
    mdp: LabeledMDP,
    machine: RewardMachine,
    *,
    gamma: float | None = None,
    lam: float = 1.0,
    letter=None,
    method: str = "policy_iteration",
    tol: float = 1e-12,
    max_iter: int | None = None,
) -> SoftPolicy:
    """The soft-optimal product policy of ``machine`` on ``mdp``.

    Args:
        gamma: discount (default: ``mdp.gamma``).
        lam: entropy weight λ > 0.
        letter: ``letter[k]`` machine letter of MDP proposition ``k`` (default: by name).
        method: ``"policy_iteration"`` (default, exact evaluation + soft improvement) or
            ``"value_iteration"`` (plain soft Bellman iteration, for cross-checking).
        tol: stop when ``max |V_{k+1} − V_k| ≤ tol``. Floating point cannot resolve changes
            below the rounding level of ``V``, so the threshold used is at least
            ``4·eps·max|V|/(1−γ)`` for policy iteration (about 1e-11 for values of order 100
            at γ = 0.99) and ``4·eps·max|V|`` for value iteration.
        max_iter: iteration cap (default 200 for policy iteration, 10^6 for value iteration).

    Raises:
        PlanningError: not converged within ``max_iter`` iterations.
    """
    gamma = mdp.gamma if gamma is None else float(gamma)
    lam = float(lam)
    _check_params(gamma, lam, method, tol)
    cap = MAX_ITER[method] if max_iter is None else int(max_iter)
    grid, entry = Grid.product(mdp, machine, letter)
    # rounding floor of the stopping test: an exact policy evaluation is accurate to about
    # eps·|V|/(1−γ) (the conditioning of I − γP_π), a value-iteration step to about eps·|V|
    eps_scale = 4 * np.finfo(float).eps / ((1.0 - gamma) if method == "policy_iteration" else 1.0)

    def stop(change: float, residual: float, V: np.ndarray) -> bool:
        return change <= max(tol, eps_scale * float(np.abs(V).max()))

    run = iterate(
        grid, entry, gamma, lam, np.zeros((grid.S, grid.n)), exact=method == "policy_iteration", stop=stop, max_iter=cap
    )
    name = method.replace("_", " ")
    if run.status == "diverged":
        raise PlanningError(f"soft {name} diverged (non-finite values) at iteration {run.iterations}")
    if run.status != "converged":
        raise PlanningError(
            f"soft {name} did not converge in {cap} iterations "
            f"(last change of V {run.change:.3g} > tol {tol:g}); raise max_iter or tol"
        )
    return SoftPolicy(
        V=run.V,
        Q=run.Q,
        pi=np.exp(run.logpi),
        gamma=gamma,
        lam=lam,
        method=method,
        iterations=run.iterations,
        residual=run.residual,
    )


def task_policy(task: Task, **kw) -> SoftPolicy:
    """:func:`soft_bellman` with the task's discount, λ and letter map (overridable by ``kw``)."""
    kw.setdefault("gamma", task.discount)
    kw.setdefault("lam", task.lam)
    kw.setdefault("letter", task.letter_of_proposition)
    return soft_bellman(task.mdp, task.require_machine("the expert's soft-optimal policy"), **kw)
