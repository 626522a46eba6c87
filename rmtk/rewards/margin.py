"""The :class:`MarginIRL` strategy: rewards for learned machines under which the expert's
*most likely* actions are optimal, for near-deterministic experts.

MaxEnt IRL (:class:`~rmtk.rewards.maxent.MaxEntIRL`, paper section 3.2) assumes a soft-optimal
expert. A scripted expert that takes shortest paths with ε-random actions is not one: its
log-probabilities do not shrink with the distance to the goal as soft-optimal ones do, and
the rewards MaxEnt IRL fits to it re-plan to a different policy. This strategy instead
solves the margin linear program of Ng and Russell (2000) on the learned product:

* the expert's greedy set at each product state (s, u) seen at least ``min_visits`` times
  is the set of actions more likely than uniform;
* ``Q`` of the expert's greedy policy is linear in the rewards δ_r; the program maximises
  the sum over those states of the smallest gap between a greedy and a non-greedy action,
  minus ``l1`` times the L1 norm of δ_r;
* only transitions that change the node carry a reward (in [−1, 1]): a letter that loops
  pays nothing, as in the machines of the RM literature; nodes that only loop end the
  episode (value 0), as :class:`~rmtk.gym.RewardMachineEnv` ends it there.

The rewards are what an RL agent (e.g. Q-learning with the learned machine) needs; they are
not the expert's "true" rewards, which no finite behaviour identifies.
"""

from __future__ import annotations

import time

import attrs
import numpy as np

from ..errors import RmtkError
from ..limits import NEVER, Deadline
from ..machine.model import RewardMachine
from ..mdp.model import LabeledMDP
from ..progress import Progress
from ..sat.lazy import ProductOracle
from .maxent import IRLCapabilities, fits_until
from .recovery import _accumulate


@attrs.frozen
class MarginFit:
    """Rewards of one machine: ``machine`` carries them; ``margin`` is the program's summed
    margin, ``states`` the number of product states that constrained it."""

    machine: RewardMachine
    margin: float
    states: int
    message: str = ""

    def summary(self) -> str:
        """One line for reports: the summed margin and how many product states set it."""
        why = f" ({self.message})" if self.message else ""
        return f"rewards (margin IRL): summed margin {self.margin:.6g} over {self.states} product states{why}"


@attrs.frozen
class MarginIRL(IRLCapabilities):
    """Ng and Russell's margin IRL on the learned product (see the module docstring).

    Args:
        l1: weight of the rewards' L1 norm against the summed margin (sparser rewards).
        min_visits: product states seen fewer times in the data constrain nothing.
        limit: fit at most this many machines (the first ones).
        max_states: largest product (states × nodes) solved (a sparse linear system with
            one right-hand side per reward; the Q matrix is dense).
    """

    l1: float = 1.0
    min_visits: int = 10
    limit: int = 10
    max_states: int = 20_000

    def fit(
        self, mdp: LabeledMDP, machines, ptp, *, gamma: float, lam: float = 1.0, progress: Progress | None = None
    ) -> tuple[MarginFit, ...]:
        """One :class:`MarginFit` per machine (the first ``limit``); ``ptp`` as for
        :meth:`~rmtk.rewards.maxent.MaxEntIRL.fit` (a prefix tree policy or a tree-free oracle)."""
        return self.fit_within(
            mdp, machines, ptp, gamma=gamma, lam=lam, progress=progress or Progress(), deadline=NEVER
        )[0]

    def fit_within(
        self, mdp, machines, ptp, *, gamma: float, lam: float, progress: Progress, deadline: Deadline
    ) -> tuple[tuple[MarginFit, ...], str | None]:
        """:meth:`fit`, one machine after another until ``deadline`` passes."""
        t0 = time.perf_counter()
        fits, unfinished = fits_until(
            lambda m: self._one(mdp, m, ptp, gamma), machines[: self.limit], deadline, progress
        )
        if fits:
            progress.stage("rewards", time.perf_counter() - t0, machines=len(fits))
        return tuple(fits), unfinished

    def _one(self, mdp: LabeledMDP, m: RewardMachine, ptp, gamma: float) -> MarginFit:
        from scipy import sparse
        from scipy.optimize import linprog
        from scipy.sparse.linalg import spsolve

        S, A, n, K = mdp.n_states, mdp.n_actions, m.n_nodes, len(m.alphabet)
        N = S * n
        if N > self.max_states:
            raise RmtkError(f"margin IRL solves a system of {N} product states; the limit is {self.max_states}")
        if isinstance(ptp, ProductOracle):  # the exact expert at every depth: its policy on the product
            policy, seen = ptp.product_policy(m.delta_u)
            visits = np.where(seen, np.inf, 0.0)
        else:
            acc = _accumulate(m, ptp, S, None)
            total = acc.sum(axis=2, keepdims=True)
            policy = np.where(total > 0, acc / np.where(total > 0, total, 1.0), 1.0 / A)
            visits = total[..., 0] if ptp.counts is not None else np.where(total[..., 0] > 0, np.inf, 0.0)
        ends = (m.delta_u == np.arange(n)[:, None]).all(axis=1)
        greedy = policy > 1.0 / A + 1e-9
        expert = np.where(
            greedy.any(axis=2, keepdims=True), greedy / np.maximum(greedy.sum(2, keepdims=True), 1), 1 / A
        )
        expert[:, ends] = 0.0  # the episode is over: no value after an end node
        # (s, u, a) → expected reward indicators E (rows × n·K) and successor product states T
        kernel = mdp.kernel
        src, dst, p = kernel.row_ids(), kernel.indices, kernel.data  # row s·A + a
        s, a = src // A, src % A
        u = np.repeat(np.arange(n), len(p))
        s, a, dst, p = (np.tile(x, n) for x in (s, a, dst, p))
        v = m.delta_u[u, mdp.labels[dst]]
        rows = (s * n + u) * A + a
        keep = ~ends[v]
        E = sparse.csr_array((p, (rows, u * K + mdp.labels[dst])), shape=(N * A, n * K))
        T = sparse.csr_array((p[keep], (rows[keep], dst[keep] * n + v[keep])), shape=(N * A, N))
        Pi = sparse.csr_array((expert.reshape(-1), (np.repeat(np.arange(N), A), np.arange(N * A))), shape=(N, N * A))
        V = spsolve(sparse.eye(N, format="csc") - gamma * (Pi @ T).tocsc(), (Pi @ E).toarray())  # V = V·x
        Q = E.toarray() + gamma * (T @ V.reshape(N, n * K))  # Q = Q·x, rows (s, u, a)
        pairs = []
        for su in np.flatnonzero((visits.reshape(-1) >= self.min_visits) & ~np.repeat(ends[None], S, 0).reshape(-1)):
            g = greedy.reshape(N, A)[su]
            if 0 < g.sum() < A:
                pairs.append([(su * A + i, su * A + j) for i in np.flatnonzero(g) for j in np.flatnonzero(~g)])
        nK, nt = n * K, len(pairs)
        if not nt:
            return MarginFit(m.with_rewards(np.zeros((n, K))), 0.0, 0, "no product state shows a preferred action")
        moving = (m.delta_u != np.arange(n)[:, None]).reshape(-1)
        gaps = [(k, Q[i] - Q[j]) for k, ps in enumerate(pairs) for i, j in ps]
        A_ub = np.zeros((len(gaps), 2 * nK + nt))
        for r, (k, d) in enumerate(gaps):  # t_k ≤ (Q_greedy − Q_other)·(p − q)
            A_ub[r, :nK], A_ub[r, nK : 2 * nK], A_ub[r, 2 * nK + k] = -d, d, 1.0
        cost = np.concatenate([np.full(2 * nK, self.l1), -np.ones(nt)])
        box = [(0.0, 1.0) if mv else (0.0, 0.0) for mv in moving]
        res = linprog(cost, A_ub=A_ub, b_ub=np.zeros(len(gaps)), bounds=box + box + [(0.0, None)] * nt, method="highs")
        if res.status == 2:  # no rewards make every greedy set optimal (noisy data): allow negative margins
            res = linprog(
                cost, A_ub=A_ub, b_ub=np.zeros(len(gaps)), bounds=box + box + [(None, None)] * nt, method="highs"
            )
        if res.status != 0:
            return MarginFit(m.with_rewards(np.zeros((n, K))), 0.0, nt, f"the linear program failed: {res.message}")
        x = res.x[:nK] - res.x[nK : 2 * nK]
        x = np.where(np.abs(x) < 1e-9, 0.0, np.round(x, 9))
        return MarginFit(m.with_rewards(x.reshape(n, K)), float(res.x[2 * nK :].sum()), nt)
