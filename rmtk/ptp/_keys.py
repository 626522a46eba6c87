"""Sorted distinct integer keys with counts, the form of the count tables (rmtk/ptp/empirical.py):
a few more keys merged in by bisection, with one copy of the sorted ones and no sort of them."""

from __future__ import annotations

import numpy as np


def merge_sorted(a_keys, a_counts, b_keys, b_counts) -> tuple[np.ndarray, np.ndarray] | None:
    """``a``'s keys (sorted and distinct) and ``b``'s (any order, repeats summed), sorted and
    distinct, with their counts summed: ``b``'s found in ``a``'s by bisection and inserted where
    missing. ``None`` when ``a``'s keys are not sorted and distinct (the caller then sorts)."""
    if len(a_keys) < 2 or not (a_keys[1:] > a_keys[:-1]).all():
        return None
    bk, inv = np.unique(b_keys, return_inverse=True)
    bc = np.bincount(inv.reshape(-1), weights=b_counts, minlength=len(bk)).astype(np.int64)
    at = np.searchsorted(a_keys, bk)
    hit = at < len(a_keys)
    hit[hit] = a_keys[at[hit]] == bk[hit]
    counts = a_counts.astype(np.int64)  # a copy
    counts[at[hit]] += bc[hit]
    return np.insert(a_keys, at[~hit], bk[~hit]), np.insert(counts, at[~hit], bc[~hit])
