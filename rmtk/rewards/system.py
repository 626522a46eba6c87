"""Solving the soft Bellman system ``A x = b`` of :func:`rmtk.rewards.recovery.recover_rewards`
and analysing its null space (which reward entries the policy identifies), at two sizes.

The unknowns are the few constrained rewards ``r`` (at most nodes × letters) and the many
values ``V`` (one per product state): ``A = [A_r | A_V]``.

* :func:`solve_dense` (up to :data:`~rmtk.rewards.recovery.DENSE_LIMIT` unknowns): the spectral
  decomposition of the whole Gram matrix ``AᵀA`` gives the least-squares solution and the null
  space at once.
* :func:`solve_eliminated` (larger systems, e.g. the Craft World's 1,521 states × 8 nodes): the
  values are eliminated. When ``A_V`` has full column rank (every value unknown has an
  equation of its own: with γ < 1, ``V = γ P V`` forces ``V = 0``), ``M = A_VᵀA_V`` is sparse
  and positive definite; one sparse LU of it gives the Schur complement
  ``S = A_rᵀA_r − A_rᵀA_V M⁻¹ A_VᵀA_r``, a small ``(r, r)`` matrix whose null space is exactly
  the reward parts ``W`` of the null space of ``A`` (a reward vector ``w`` belongs to a null
  vector iff ``A_r w`` lies in the range of ``A_V``), and the null space of ``A`` has the same
  dimension. The minimum-norm rewards solve ``S r = A_rᵀ(b − A_V M⁻¹ A_Vᵀ b)``, then
  ``V = M⁻¹ A_Vᵀ(b − A_r r)``; a few refinement steps on the sparse residual repair the
  squared conditioning. The result is the dense path's, without a dense ``U × U`` matrix.

Both return the same :class:`Solved`; :func:`identified_entries` reads the identification from
``W`` and the shaping directions the same way for both.
"""

from __future__ import annotations

import attrs
import numpy as np

from .._arrays import Csr

#: Refinement steps of the normal-equation solves.
REFINE_STEPS = 3

#: Absolute threshold on the components of (orthonormal) extra null vectors for an entry
#: to count as touched by them.
IDENT_TOL = 1e-6


@attrs.frozen
class Solved:
    """A least-squares solution ``x`` of the system, the orthonormal reward parts ``W`` of its
    null space (``None``: not analysed), the null space's dimension, the method and notes."""

    x: np.ndarray
    W: np.ndarray | None
    null_dim: int | None
    method: str
    note: str = ""


def orth(M: np.ndarray, tol: float) -> np.ndarray:
    """Orthonormal basis of the range of ``M`` (columns), singular values above ``tol``."""
    if M.size == 0:
        return np.zeros((M.shape[0], 0))
    U, s, _ = np.linalg.svd(M, full_matrices=False)
    return U[:, s > tol]


def solve_dense(A: Csr, b: np.ndarray, nr: int, rank_tol: float) -> Solved:
    """Spectral decomposition of the ``(U, U)`` Gram matrix ``AᵀA``, formed sparsely: its null
    space is that of ``A``, and the tall ``E × U`` matrix never goes through dense LAPACK. The
    squared conditioning is repaired by iterative refinement on the sparse residual. The
    representative has the minimum norm in the reward coordinates."""
    U = A.shape[1]
    w, Z = np.linalg.eigh(A.gram())
    keep = w > rank_tol**2 * max(float(w[-1]), 0.0)  # σ > rank_tol·σ_max
    Zr, wr = Z[:, keep], w[keep]
    x = np.zeros(U)
    for _ in range(REFINE_STEPS):
        x = x + Zr @ ((Zr.T @ A.rmatmul(b - A @ x)) / wr)
    N = Z[:, ~keep]  # (U, d) orthonormal null basis
    if N.shape[1]:
        x = x - N @ np.linalg.lstsq(N[:nr], x[:nr], rcond=None)[0]
    return Solved(x, orth(N[:nr], 1e-8), N.shape[1], "dense")


def solve_eliminated(A: Csr, b: np.ndarray, nr: int, rank_tol: float) -> Solved | None:
    """The values eliminated through a sparse LU of ``A_VᵀA_V`` (module docstring); ``None``
    when ``A_V`` is rank deficient (a value unknown without an equation of its own) and the
    elimination does not apply."""
    import scipy.sparse as sp
    import scipy.sparse.linalg as spla

    mat = A.to_scipy()
    Ar, Av = mat[:, :nr].toarray(), sp.csc_array(mat[:, nr:])
    own = np.zeros(Av.shape[1], dtype=bool)
    own[np.asarray(Av.tocsr().indices)[np.asarray(Av.tocsr().data) < 0]] = True  # −V(s, u) of its own rows
    if not own.all():
        return None
    M = sp.csc_array(Av.T @ Av)
    try:
        lu = spla.splu(M)
    except RuntimeError:  # exactly singular
        return None
    AvT_Ar = Av.T @ Ar  # (nv, nr)
    Y = lu.solve(AvT_Ar) if nr else np.zeros((Av.shape[1], 0))
    S = Ar.T @ Ar - AvT_Ar.T @ Y
    S = (S + S.T) / 2
    big = _largest_gram_eigenvalue(mat)
    w, Z = np.linalg.eigh(S) if nr else (np.zeros(0), np.zeros((0, 0)))
    keep = w > rank_tol**2 * big  # the dense path's σ > rank_tol·σ_max, on the eliminated system
    Zr, wr = Z[:, keep], w[keep]

    def solve(rhs_b: np.ndarray) -> np.ndarray:
        """Least squares of ``A x = rhs_b``: minimum-norm rewards, then the values."""
        v0 = lu.solve(Av.T @ rhs_b)
        r = Zr @ ((Zr.T @ (Ar.T @ (rhs_b - Av @ v0))) / wr) if nr else np.zeros(0)
        return np.r_[r, v0 - Y @ r]

    x = np.zeros(A.shape[1])
    for _ in range(REFINE_STEPS):
        x = x + solve(b - A @ x)
    null_r = Z[:, ~keep]
    x[:nr] -= null_r @ (null_r.T @ x[:nr])  # stay orthogonal to W (the refinements drift by ~1e-16)
    note = (
        f"{A.shape[1]} unknowns: values eliminated (sparse LU of the {Av.shape[1]} value unknowns' normal "
        f"matrix), null space from the {nr} × {nr} reward Schur complement"
    )
    return Solved(x, null_r, null_r.shape[1], "eliminated", note)


def _largest_gram_eigenvalue(mat) -> float:
    """``σ_max(A)²``: a few Lanczos steps on ``AᵀA`` (the Frobenius norm if they fail)."""
    import scipy.sparse.linalg as spla

    op = spla.LinearOperator((mat.shape[1],) * 2, matvec=lambda v: mat.T @ (mat @ v), dtype=float)
    try:
        return float(spla.eigsh(op, k=1, which="LA", tol=1e-3, return_eigenvectors=False, v0=np.ones(mat.shape[1]))[0])
    except spla.ArpackError:  # pragma: no cover - an upper bound is as good for a threshold
        return float((mat.data**2).sum())


def identified_entries(W: np.ndarray, G_r: np.ndarray) -> np.ndarray:
    """``(r,)``: reward entries that no extra null direction touches. Extra directions, in the
    canonical gauge (rewards orthogonal to the shaping directions), span ``W ∩ G⊥ =
    P_{G⊥} W`` (``W``: reward parts of the null space, ``G_r``: those of the shaping)."""
    if not W.shape[0]:
        return np.zeros(0, bool)
    Qg = orth(G_r, 1e-8)
    Ew = orth(W - Qg @ (Qg.T @ W), 1e-6)
    return np.abs(Ew).max(axis=1, initial=0.0) <= IDENT_TOL
