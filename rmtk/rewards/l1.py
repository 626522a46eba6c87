"""Least absolute deviations ``min_φ Σ_e |r_e + (Bφ)_e|`` and the sparsest vertex: the small
problems of :func:`rmtk.rewards.recovery.sparsest` (the potential φ on a machine's nodes that
makes the shaped rewards sparsest).

:func:`sparse_l1` orders the candidates by the fewest non-zero terms first, then the smallest
sum: the lexicographic optimum is attained at a vertex too (on the affine set where its zero
terms vanish, the sum is minimised where enough further terms vanish to fix φ), so the same
enumeration finds it exactly; equal rows with equal values (a node's self-loops paying the
same) are one equation there, so the machines of a few nodes and letters stay small.

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


def _columns(B, r) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(B, r)`` as float arrays, ``φ = 0`` and the columns of ``B`` that are not 0 (a node in
    no constrained entry keeps φ = 0)."""
    B, r = np.asarray(B, dtype=float), np.asarray(r, dtype=float)
    return B, r, np.zeros(B.shape[1]), np.flatnonzero(np.any(B != 0, axis=0))


def vertex_l1(B: np.ndarray, r: np.ndarray, *, tol: float = 1e-9, max_subsets: int = MAX_SUBSETS):
    """The exact minimiser by vertex enumeration, or ``None`` when ``B`` (without its zero
    columns) is rank deficient or there are more than ``max_subsets`` vertices to try."""
    B, r, phi, cols = _columns(B, r)
    E, k = B.shape[0], len(cols)
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


#: Largest number of candidate vertices :func:`sparse_l1` enumerates (100 000 vertices of 8
#: unknowns take about a second).
MAX_VERTICES = 200_000
#: Vertices solved per batch.
CHUNK = 20_000


def sparse_l1(B: np.ndarray, r: np.ndarray, *, tol: float = 1e-9, max_vertices: int = MAX_VERTICES):
    """The ``φ`` with the fewest non-zero terms ``r_e + (Bφ)_e``, then the smallest
    ``Σ_e |r_e + (Bφ)_e|``, then the first vertex in the order of the equations (rows sorted,
    then values): exact, by vertex enumeration. ``None`` when ``B`` (without its zero columns,
    whose φ is 0) is rank deficient or has more than ``max_vertices`` vertices to try. A term
    counts as zero within ``tol · max(1, max|r|)``; costs equal within ``tol`` tie."""
    B, r, phi, cols = _columns(B, r)
    k = len(cols)
    if k == 0:
        return phi
    Bc = B[:, cols]
    if np.linalg.matrix_rank(Bc) < k:
        return None
    zero = tol * max(1.0, float(np.abs(r).max(initial=0.0)))
    # candidate equations: distinct rows, and per row its values up to the tolerance
    rows, inverse = np.unique(Bc, axis=0, return_inverse=True)
    inverse = np.asarray(inverse).ravel()
    eq_rows, eq_vals = [], []
    for g in range(len(rows)):
        vals = np.sort(r[inverse == g])
        keep = np.r_[True, np.diff(vals) > zero]
        eq_rows += [g] * int(keep.sum())
        eq_vals += vals[keep].tolist()
    m = len(eq_rows)
    count = math.comb(m, k)
    if m < k or count > max_vertices:
        return None
    eq_B, eq_r = rows[np.array(eq_rows)], np.array(eq_vals)
    combos = itertools.combinations(range(m), k)
    best: tuple[int, float, np.ndarray] | None = None
    while True:
        chunk = np.fromiter(itertools.chain.from_iterable(itertools.islice(combos, CHUNK)), dtype=np.int64)
        if not chunk.size:
            break
        subsets = chunk.reshape(-1, k)
        Bs = eq_B[subsets]
        independent = np.abs(np.linalg.det(Bs)) > SINGULAR_TOL * np.prod(np.linalg.norm(Bs, axis=2), axis=1)
        if not independent.any():
            continue
        x = np.linalg.solve(Bs[independent], -eq_r[subsets[independent]][..., None])[..., 0]
        terms = np.abs(r + x @ Bc.T)  # (C, E): every term at every vertex
        zeros = (terms <= zero).sum(axis=1)
        cost = np.where(terms <= zero, 0.0, terms).sum(axis=1)
        top = zeros.max()
        at = np.flatnonzero(zeros == top)
        i = at[ties.argbest(cost[at], lowest=True, tol=tol)]  # the first of the cheapest
        if best is None or top > best[0] or (top == best[0] and not ties.at_most(best[1], cost[i], tol)):
            best = (int(top), float(cost[i]), x[i])  # an earlier chunk keeps its tie
    if best is None:  # pragma: no cover - full column rank leaves some independent subset
        return None
    phi[cols] = best[2]
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
