"""Helpers for numpy / scipy.sparse fields of frozen attrs classes."""
from __future__ import annotations

import hashlib

import attrs
import numpy as np
import scipy.sparse as sp


def frozen_array(dtype):
    """attrs converter: a read-only C-contiguous copy of the input as ``dtype``."""

    def convert(value):
        arr = np.array(value, dtype=dtype, copy=True)
        arr.setflags(write=False)
        return arr

    return convert


def frozen_csr(value) -> sp.csr_array:
    """attrs converter: a canonical (sorted, zero-free) read-only float CSR array."""
    mat = sp.csr_array(value, dtype=float, copy=True)
    mat.eliminate_zeros()
    mat.sum_duplicates()
    mat.sort_indices()
    for part in (mat.data, mat.indices, mat.indptr):
        part.setflags(write=False)
    return mat


def csr_equal(a: sp.csr_array, b: sp.csr_array) -> bool:
    """Exact structural equality of two canonical CSR arrays."""
    return (
        a.shape == b.shape
        and np.array_equal(a.indptr, b.indptr)
        and np.array_equal(a.indices, b.indices)
        and np.array_equal(a.data, b.data)
    )


def digest(*arrays) -> str:
    """A stable hash of some arrays (for caching and ``__hash__``)."""
    h = hashlib.blake2b(digest_size=16)
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(str(a.dtype).encode() + str(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()


array_eq = attrs.cmp_using(eq=np.array_equal)
csr_eq = attrs.cmp_using(eq=csr_equal)
