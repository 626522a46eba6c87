"""Least absolute deviations ``min_φ Σ_e |r_e + (Bφ)_e|``: the small L1 problem of
:func:`rmtk.rewards.recovery.sparsest` (the potential φ on a machine's nodes that makes the shaped
rewards sparsest).

When ``B`` has full column rank the objective is a convex piecewise-linear function that
grows without bound, so its minimum is attained at a vertex: a point where ``k = rank B``
linearly independent equations ``r_e + (Bφ)_e = 0`` hold. :func:`vertex_l1` enumerates
those k-subsets of the equations (one batched solve), which is exact and needs no LP solver;
among optimal vertices it keeps the one with the most zero terms (the sparsest rewards),
then the first in lexicographic order of the subsets. Problems with too many subsets, or
rank-deficient ``B``, go to an LP (scipy's HiGHS, imported then): :func:`lp_l1`.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from .. import ties

#: Largest number of k-subsets of the equations :func:`l1_fit` enumerates before it solves
#: the LP instead (5 000 subsets take about 5 ms; importing the LP solver takes longer).
MAX_SUBSETS = 5_000

#: Threshold on ``|det|`` relative to Hadamard's bound below which a k-subset of equations is
#: dependent.
SINGULAR_TOL = 1e-10


def l1_fit(B: np.ndarray, r: np.ndarray, *, tol: float = 1e-9) -> np.ndarray | None:
    """``φ`` minimising ``Σ_e |r_e + (Bφ)_e|`` (``None`` if the LP fallback fails); columns of
    ``B`` that are 0 get ``φ = 0``. ``tol``: terms within ``tol`` of 0 count as zero when
    optimal vertices are compared."""
    phi = vertex_l1(B, r, tol=tol)
    return lp_l1(B, r) if phi is None else phi


def vertex_l1(B: np.ndarray, r: np.ndarray, *, tol: float = 1e-9, max_subsets: int = MAX_SUBSETS):
    """The exact minimiser by vertex enumeration, or ``None`` when ``B`` (without its zero
    columns) is rank deficient or there are more than ``max_subsets`` vertices to try."""
    B, r = np.asarray(B, dtype=float), np.asarray(r, dtype=float)
    E, n = B.shape
    phi = np.zeros(n)
    cols = np.flatnonzero(np.any(B != 0, axis=0))
    k = len(cols)
    if k == 0:
        return phi
    Bc = B[:, cols]
    count = math.comb(E, k)
    if count > max_subsets or E < k or np.linalg.matrix_rank(Bc) < k:
        return None
    subsets = np.fromiter(
        itertools.chain.from_iterable(itertools.combinations(range(E), k)), dtype=np.int64, count=count * k
    ).reshape(count, k)
    Bs = Bc[subsets]  # (C, k, k)
    # |det| over the product of the row norms (Hadamard's bound): 1 for orthogonal rows, 0
    # for dependent ones, whatever the scale of the rows
    independent = np.abs(np.linalg.det(Bs)) > SINGULAR_TOL * np.prod(np.linalg.norm(Bs, axis=2), axis=1)
    subsets, Bs = subsets[independent], Bs[independent]
    x = np.linalg.solve(Bs, -r[subsets][..., None])[..., 0]  # (C, k): every vertex
    terms = np.abs(r + x @ Bc.T)  # (C, E)
    cost = terms.sum(axis=1)
    optimal = np.flatnonzero(ties.best(cost, lowest=True, tol=tol))  # within tol·max(1, cost) of the least
    zeros = (terms[optimal] < tol).sum(axis=1)
    phi[cols] = x[optimal[np.argmax(zeros)]]  # argmax: the first of the sparsest
    return phi


def lp_l1(B: np.ndarray, r: np.ndarray) -> np.ndarray | None:
    """The minimiser as a linear program (scipy's HiGHS): variables ``[φ (free), t (≥ 0)]``,
    minimise ``Σ t`` subject to ``|r + Bφ| ≤ t``; ``None`` if the solver fails."""
    from scipy.optimize import linprog

    B, r = np.asarray(B, dtype=float), np.asarray(r, dtype=float)
    E, n = B.shape
    c = np.r_[np.zeros(n), np.ones(E)]
    A_ub = np.block([[B, -np.eye(E)], [-B, -np.eye(E)]])
    b_ub = np.r_[-r, r]
    bounds = [(None, None)] * n + [(0, None)] * E
    lp = linprog(c, A_ub=A_ub, b_ub=b_ub, bounds=bounds, method="highs")
    return lp.x[:n] if lp.success else None  # always feasible and bounded
