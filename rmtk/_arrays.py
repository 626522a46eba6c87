"""Helpers for numpy fields of frozen attrs classes, and :class:`Csr`, the sparse matrix of
the core (transition kernels, successor relations) as plain numpy arrays.

``import rmtk`` does not import scipy: ``Csr`` does what the core needs with numpy, and
:meth:`Csr.to_scipy` gives the ``scipy.sparse`` form (importing scipy then) to callers
that want it.
"""

from __future__ import annotations

import attrs
import numpy as np


def frozen_array(dtype):
    """attrs converter: a read-only C-contiguous copy of the input as ``dtype``."""

    def convert(value):
        arr = np.array(value, dtype=dtype, copy=True)
        arr.setflags(write=False)
        return arr

    return convert


def bool_array(value) -> np.ndarray:
    """attrs converter: a read-only bool copy (a named function, so that type checkers see the field's type)."""
    return frozen_array(bool)(value)


def int_array(value) -> np.ndarray:
    """attrs converter: a read-only int64 copy (a named function, so that type checkers see the field's type)."""
    return frozen_array(np.int64)(value)


def float_array(value) -> np.ndarray:
    """attrs converter: a read-only float copy."""
    return frozen_array(float)(value)


def _readonly(value) -> np.ndarray:
    """A read-only copy of ``value``, keeping its dtype."""
    arr = np.array(value, copy=True)
    arr.setflags(write=False)
    return arr


def digest(*arrays) -> str:
    """A stable hash of some arrays (for caching and ``__hash__``)."""
    import hashlib  # here: its OpenSSL module costs start-up time, and few runs digest arrays

    h = hashlib.blake2b(digest_size=16)
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(str(a.dtype).encode() + str(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()


array_eq = attrs.cmp_using(eq=np.array_equal)


def unique(a) -> np.ndarray:
    """``np.unique(a)``: the sorted distinct values of the flattened array. Integers and
    booleans are sorted and compared here: numpy 2.3's ``np.unique`` imports ``numpy.ma`` on
    its first call (some 8 ms of every command's start-up, ``docs/benchmarks/25-start-up.md``);
    other kinds (floats and their NaNs) go to ``np.unique``."""
    a = np.asarray(a)
    if a.dtype.kind not in "biu":
        return np.unique(a)
    a = np.sort(a, axis=None)
    keep = np.empty(a.shape, dtype=bool)
    keep[:1] = True
    np.not_equal(a[1:], a[:-1], out=keep[1:])
    return a[keep]


def whole_number(what: str, minimum: int = 1, *, optional: bool = False, error=ValueError):
    """attrs validator (also callable as ``check(value)``): an integer ≥ ``minimum`` (or None
    when ``optional``), else ``error("<what> must be a whole number of at least …")``."""

    def check(*args):
        value = args[-1]
        if optional and value is None:
            return
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
            raise error(f"{what} must be a whole number of at least {minimum}, got {value!r}")

    return check


#: :meth:`Csr.gram` forms ``AᵀA`` with numpy up to this many pairs of entries sharing a row
#: (about 40 bytes of temporaries each), with scipy's sparse product above.
GRAM_PAIRS = 2_000_000


@attrs.frozen
class Csr:
    """A read-only sparse matrix in canonical CSR form: in every row the column indices are
    strictly increasing (no duplicates) and no stored value is 0.

    Products with dense arrays accumulate every output entry over the stored entries in
    storage order, as scipy's CSR kernels do, so they give bitwise the same results as
    ``scipy.sparse``.

    Attributes:
        indptr: ``(rows + 1,)`` row ``i`` is stored at ``indptr[i]:indptr[i+1]``.
        indices: column of each stored entry.
        data: value of each stored entry (float for kernels, bool for relations).
        shape: ``(rows, columns)``.
    """

    indptr: np.ndarray = attrs.field(converter=frozen_array(np.int64), eq=array_eq, hash=False, repr=False)
    indices: np.ndarray = attrs.field(converter=frozen_array(np.int64), eq=array_eq, hash=False, repr=False)
    data: np.ndarray = attrs.field(converter=_readonly, eq=array_eq, hash=False, repr=False)
    shape: tuple[int, int] = attrs.field(converter=lambda s: (int(s[0]), int(s[1])))
    _cache: dict = attrs.field(factory=dict, init=False, eq=False, hash=False, repr=False)

    def __reduce__(self):
        """Pickle the arrays only, not the cache (which may hold a scipy matrix)."""
        return (type(self), (self.indptr, self.indices, self.data, self.shape))

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_coo(cls, data, rows, cols, shape, *, dtype=float) -> Csr:
        """From coordinates: duplicates are summed (in input order), zeros dropped."""
        data = np.asarray(data, dtype=dtype).ravel()
        rows = np.asarray(rows, dtype=np.int64).ravel()
        cols = np.asarray(cols, dtype=np.int64).ravel()
        order = np.lexsort((cols, rows))  # stable: duplicates keep their input order
        rows, cols, data = rows[order], cols[order], data[order]
        first = np.ones(len(rows), dtype=bool)
        first[1:] = (rows[1:] != rows[:-1]) | (cols[1:] != cols[:-1])
        if not first.all():
            data = np.bincount(np.cumsum(first) - 1, weights=data).astype(dtype)
            rows, cols = rows[first], cols[first]
        keep = data != 0
        return cls._from_sorted(data[keep], rows[keep], cols[keep], shape)

    @classmethod
    def _from_sorted(cls, data, rows, cols, shape) -> Csr:
        indptr = np.zeros(int(shape[0]) + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=int(shape[0])), out=indptr[1:])
        return cls(indptr, cols, data, shape)

    @classmethod
    def from_dense(cls, a) -> Csr:
        """The nonzero entries of a 2-d array, row by row."""
        a = np.asarray(a)
        rows, cols = np.nonzero(a)
        return cls._from_sorted(a[rows, cols], rows, cols, a.shape)

    def is_canonical(self) -> bool:
        """Columns strictly increasing within every row and in range, no stored 0."""
        rows = self.row_ids()
        same = rows[1:] == rows[:-1]
        return bool(
            np.all(np.diff(self.indices)[same] > 0)
            and (self.nnz == 0 or (self.indices.min() >= 0 and self.indices.max() < self.shape[1]))
            and np.all(self.data != 0)
        )

    # ------------------------------------------------------------------ queries
    @property
    def nnz(self) -> int:
        return len(self.indices)

    def row_ids(self) -> np.ndarray:
        """Row of each stored entry (cached)."""
        ids = self._cache.get("rows")
        if ids is None:
            ids = np.repeat(np.arange(self.shape[0], dtype=np.int64), np.diff(self.indptr))
            ids.setflags(write=False)
            self._cache["rows"] = ids
        return ids

    def _spread(self, by: str, k: int) -> np.ndarray:
        """Bincount bins ``i·k + j`` of the stored entries for ``k`` dense columns, ``i`` the
        entry's row (``by="rows"``) or column (``by="cols"``); cached per ``(by, k)``."""
        key = (by, k)
        out = self._cache.get(key)
        if out is None:
            index = self.row_ids() if by == "rows" else self.indices
            out = (index[:, None] * k + np.arange(k)).ravel()
            out.setflags(write=False)
            self._cache[key] = out
        return out

    def __matmul__(self, x) -> np.ndarray:
        """``self @ x`` for a dense ``x`` of shape ``(columns,)`` or ``(columns, k)``."""
        x = np.asarray(x)
        rows, R = self.row_ids(), self.shape[0]
        if x.ndim == 1:
            return np.bincount(rows, weights=self.data * x[self.indices], minlength=R)
        if x.shape[1] == 1:
            return (self @ x[:, 0])[:, None]
        k = x.shape[1]
        w = (self.data[:, None] * x[self.indices]).ravel()
        return np.bincount(self._spread("rows", k), weights=w, minlength=R * k).reshape(R, k)

    def rmatmul(self, y) -> np.ndarray:
        """``selfᵀ @ y`` for a dense ``y`` of shape ``(rows,)`` or ``(rows, k)``."""
        y = np.asarray(y)
        rows, C = self.row_ids(), self.shape[1]
        if y.ndim == 1:
            return np.bincount(self.indices, weights=self.data * y[rows], minlength=C)
        if y.shape[1] == 1:
            return self.rmatmul(y[:, 0])[:, None]
        k = y.shape[1]
        w = (self.data[:, None] * y[rows]).ravel()
        return np.bincount(self._spread("cols", k), weights=w, minlength=C * k).reshape(C, k)

    def gram(self) -> np.ndarray:
        """The dense Gram matrix ``selfᵀ self``: every pair of entries of a row adds
        ``a_ei·a_ej`` to ``[i, j]``, rows in order, as scipy's sparse product sums them (so
        the result is bitwise scipy's). With more than :data:`GRAM_PAIRS` such pairs the
        product is left to scipy (imported then), which needs no per-pair temporaries."""
        C = self.shape[1]
        counts = np.diff(self.indptr)
        per_entry = counts[self.row_ids()]  # length of the row of each entry
        if int(per_entry.sum()) > GRAM_PAIRS:
            mat = self.to_scipy()
            return (mat.T @ mat).toarray()
        first = np.repeat(np.arange(self.nnz), per_entry)  # entry p, once per entry of its row
        starts = np.repeat(self.indptr[:-1][self.row_ids()], per_entry)
        second = starts + np.arange(len(first)) - np.repeat(np.cumsum(per_entry) - per_entry, per_entry)
        bins = self.indices[first] * C + self.indices[second]
        return np.bincount(bins, weights=self.data[first] * self.data[second], minlength=C * C).reshape(C, C)

    def row_sums(self) -> np.ndarray:
        """Sum of every row (0 for an empty row)."""
        out = np.zeros(self.shape[0])
        full = np.flatnonzero(np.diff(self.indptr))
        if len(full):
            out[full] = np.add.reduceat(self.data, self.indptr[full])
        return out

    def toarray(self) -> np.ndarray:
        out = np.zeros(self.shape, dtype=self.data.dtype)
        out[self.row_ids(), self.indices] = self.data
        return out

    def to_scipy(self):
        """The same matrix as a read-only ``scipy.sparse.csr_array`` (cached)."""
        mat = self._cache.get("scipy")
        if mat is None:
            import scipy.sparse as sp

            mat = sp.csr_array((self.data, self.indices, self.indptr), shape=self.shape, copy=True)
            mat.has_sorted_indices = True
            mat.has_canonical_format = True
            for part in (mat.data, mat.indices, mat.indptr):
                part.setflags(write=False)
            self._cache["scipy"] = mat
        return mat


def as_csr(value) -> Csr:
    """attrs converter: a canonical float :class:`Csr` of a ``Csr``, a dense 2-d array or a
    ``scipy.sparse`` matrix (for the latter, and any other input ``scipy.sparse.csr_array``
    accepts, scipy does the conversion)."""
    if isinstance(value, Csr):
        if value.data.dtype == np.float64 and value.is_canonical():
            return value
        return Csr.from_coo(value.data, value.row_ids(), value.indices, value.shape)
    if isinstance(value, (np.ndarray, list)) and np.ndim(value) == 2:
        return Csr.from_dense(np.asarray(value, dtype=float))
    import scipy.sparse as sp

    mat = sp.csr_array(value, dtype=float, copy=True)
    mat.eliminate_zeros()
    mat.sum_duplicates()
    mat.sort_indices()
    return Csr(mat.indptr, mat.indices, mat.data, mat.shape)
