"""Solving the soft Bellman system ``A x = b`` of :func:`rmtk.rewards.recovery.recover_rewards`
and analysing its null space (which reward entries the policy identifies), at two sizes.

The unknowns are the few constrained rewards ``r`` (at most nodes × letters) and the many
values ``V`` (one per product state): ``A = [A_r | A_V]``.

* :func:`solve_dense` (up to :data:`~rmtk.rewards.recovery.DENSE_LIMIT` unknowns): the spectral
  decomposition of the whole Gram matrix ``AᵀA`` gives the least-squares solution and the null
  space at once.
* :func:`solve_eliminated` (larger systems, e.g. the Craft World's 1,521 states × 8 nodes): the
  values are eliminated. The values with an equation of their own (every fitted product
  state) have a full-column-rank block ``A_V`` (with γ < 1, ``V = γ P V`` forces ``V = 0``), so
  ``M = A_VᵀA_V`` is sparse and positive definite; the rewards and the few values without an
  equation of their own (successors outside the fitted states, as with a policy counted from
  demonstrations) form the small block ``A_y``. One sparse LU of ``M`` gives the Schur complement
  ``S = A_yᵀA_y − A_yᵀA_V M⁻¹ A_VᵀA_y``, a small matrix whose null space is exactly the small
  parts of the null space of ``A`` (``y`` belongs to a null vector iff ``A_y y`` lies in the
  range of ``A_V``; its values are then ``−M⁻¹A_VᵀA_y y``), of the same dimension. The small
  block solves ``S y = A_yᵀ(b − A_V M⁻¹ A_Vᵀ b)`` (minimum norm), then ``V = M⁻¹ A_Vᵀ(b − A_y y)``;
  a few refinement steps on the sparse residual repair the squared conditioning, and a null
  vector makes the rewards orthogonal to the null space's reward parts. The result is the
  dense path's, without a dense ``U × U`` matrix.

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
    """The values that have an equation of their own eliminated through a sparse LU of their
    normal matrix (module docstring); the rewards and the few values without one (successors
    outside the fitted product states) form the small Schur complement. ``None`` when that LU
    is exactly singular (the caller then falls back on ``lsqr``)."""
    import scipy.sparse as sp
    import scipy.sparse.linalg as spla

    mat = A.to_scipy().tocsc()
    values = mat[:, nr:].tocsr()
    own = np.zeros(values.shape[1], dtype=bool)
    own[np.asarray(values.indices)[np.asarray(values.data) < 0]] = True  # −V(s, u) of its own rows
    small = np.r_[np.arange(nr), nr + np.flatnonzero(~own)]  # rewards, then the values without a row of their own
    rest = nr + np.flatnonzero(own)
    ns = len(small)
    As, Av = mat[:, small].toarray(), sp.csc_array(mat[:, rest])
    M = sp.csc_array(Av.T @ Av)
    try:
        lu = spla.splu(M)
    except RuntimeError:  # exactly singular
        return None
    AvT_As = Av.T @ As  # (nv, ns)
    Y = lu.solve(AvT_As) if ns else np.zeros((Av.shape[1], 0))
    S = As.T @ As - AvT_As.T @ Y
    S = (S + S.T) / 2
    big = _largest_gram_eigenvalue(mat)
    w, Z = np.linalg.eigh(S) if ns else (np.zeros(0), np.zeros((0, 0)))
    keep = w > rank_tol**2 * big  # the dense path's σ > rank_tol·σ_max, on the eliminated system
    Zr, wr = Z[:, keep], w[keep]

    def solve(rhs_b: np.ndarray) -> np.ndarray:
        """Least squares of ``A x = rhs_b``: the minimum-norm small block, then the values."""
        v0 = lu.solve(Av.T @ rhs_b)
        y = Zr @ ((Zr.T @ (As.T @ (rhs_b - Av @ v0))) / wr) if ns else np.zeros(0)
        x = np.zeros(A.shape[1])
        x[small], x[rest] = y, v0 - Y @ y
        return x

    x = np.zeros(A.shape[1])
    for _ in range(REFINE_STEPS):
        x = x + solve(b - A @ x)
    null = Z[:, ~keep]  # the null space of A, in the small block's coordinates (its values follow: −Y·z)
    if null.shape[1]:  # the rewards' representative: orthogonal to the reward parts of the null space
        c = np.linalg.lstsq(null[:nr], x[:nr], rcond=None)[0]
        x[small] -= null @ c
        x[rest] += Y @ (null @ c)
    note = (
        f"{A.shape[1]} unknowns: values eliminated (sparse LU of the {len(rest)} value unknowns' normal "
        f"matrix), null space from the {ns} × {ns} Schur complement of the {nr} rewards"
        + (f" and the {ns - nr} values without an equation of their own" if ns > nr else "")
    )
    return Solved(x, orth(null[:nr], 1e-8), null.shape[1], "eliminated", note)


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
