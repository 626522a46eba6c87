"""Ties: how rmtk turns computed numbers into a choice, the same way on every machine.

Two numbers equal on paper (two actions with the same soft-optimal probability, two triples
with the same evidence) come out of floating-point sums equal only up to their last bits, and
those bits differ between CPUs, BLAS kernels and thread counts. A choice made by comparing
them exactly (``np.argmax``, a sort by a float key) then depends on the machine. Every place
in rmtk that turns computed floats into a choice decides through this module instead
(docs/design/02-conventions.md): values within a tolerance of each other are equal, and equal
values are decided by a documented order, never by the noise.

* :func:`best` and :func:`argbest`: the values within the tolerance of the largest (or the
  smallest); :func:`argbest` takes the lowest index among them.
* :func:`ranks`: dense ranks of clusters of near-equal values; :func:`lexsort` and
  :func:`argsort` sort by them, so near-equal keys fall through to the next key, then to the
  index order (the sorts are stable).
* :func:`classes` and :func:`numbered_classes`: rows (action distributions) grouped by a
  maximum absolute difference within the tolerance of the class's first row, rows taken in
  index order.
* :func:`at_most` and :func:`alike`: the tolerant comparisons behind them, for code that
  compares two values or two rows directly.

The tolerance :data:`TOL` is the policy tolerance (``rmtk.negatives.miners.POLICY_TOL`` is this
value): absolute for numbers of magnitude at most 1 (probabilities), relative to the larger
magnitude above that (values, distances), i.e. ``|a − b| ≤ TOL·max(1, |a|, |b|)``; for
:func:`classes` and :func:`alike`, which compare probability rows, it is absolute. The
answer is only unaffected by noise well below the tolerance: values whose difference lies
within the noise of the tolerance itself (about ±1e-12 around 1e-9 apart) can still go
either way, as at any threshold.
"""

from __future__ import annotations

import numpy as np

#: The default tolerance. Values this close (relative above magnitude 1) are equal.
TOL = 1e-9


def _scale(a: np.ndarray, b: np.ndarray, tol: float) -> np.ndarray:
    """``tol·max(1, |a|, |b|)`` where both are finite, 0 elsewhere (∞ only equals ∞)."""
    with np.errstate(invalid="ignore"):
        mag = np.maximum(1.0, np.maximum(np.abs(a), np.abs(b)))
    return np.where(np.isfinite(mag), tol * mag, 0.0)


def at_most(a, b, tol: float = TOL) -> np.ndarray:
    """Elementwise ``a ≤ b`` up to the tolerance: ``a ≤ b + tol·max(1, |a|, |b|)``."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    with np.errstate(invalid="ignore"):
        return (a <= b) | (a - b <= _scale(a, b, tol))


def best(values, axis: int = -1, *, lowest: bool = False, tol: float = TOL) -> np.ndarray:
    """Boolean mask of the values within the tolerance of the largest along ``axis`` (of the
    smallest with ``lowest=True``). NaN is never among the best."""
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return np.zeros(v.shape, dtype=bool)
    with np.errstate(invalid="ignore"):
        top = np.fmin.reduce(v, axis=axis, keepdims=True) if lowest else np.fmax.reduce(v, axis=axis, keepdims=True)
    return at_most(v, top, tol) if lowest else at_most(top, v, tol)


def argbest(values, axis: int = -1, *, lowest: bool = False, tol: float = TOL) -> np.ndarray:
    """Index of the best value along ``axis`` (the largest, the smallest with ``lowest=True``):
    the lowest index among the values within the tolerance of it. A slice of NaN gives 0."""
    return np.argmax(best(values, axis, lowest=lowest, tol=tol), axis=axis)


#: Values compared at a time by :func:`ranks`.
_BLOCK = 1 << 20


def ranks(values, tol: float = TOL) -> np.ndarray:
    """Dense ranks (0 for the smallest) of ``values``, near-equal values sharing one: sorted,
    neighbours within the tolerance fall in one cluster (a chain of them too), so a rank is
    not moved by noise well below the tolerance. NaNs share the last rank. Same shape."""
    v = np.asarray(values, dtype=float)
    flat = v.ravel()
    out = np.zeros(flat.size, dtype=np.int64)
    if flat.size > 1 and (flat == flat[0]).all():  # one value (a machine before its rewards): one rank
        pass
    elif flat.size > 1 and np.isnan(flat).any():
        order = np.argsort(flat, kind="stable")
        srt = flat[order]
        a, b = srt[:-1], srt[1:]
        same = at_most(b, a, tol) | (np.isnan(a) & np.isnan(b))
        out[order] = np.concatenate([[0], np.cumsum(~same)])
    elif flat.size > 1:  # a value's rank: how many clusters start at or below it (sorted values only)
        srt = np.sort(flat)
        first = np.ones(len(srt), dtype=bool)
        for lo in range(1, len(srt), _BLOCK):  # a block at a time: at_most's temporaries stay small
            hi = min(lo + _BLOCK, len(srt))
            first[lo:hi] = ~at_most(srt[lo:hi], srt[lo - 1 : hi - 1], tol)
        starts = srt[first]
        del first
        out = srt.view(np.int64)  # the sorted copy's memory holds the ranks, a block at a time
        for lo in range(0, len(flat), _BLOCK):
            out[lo : lo + _BLOCK] = np.searchsorted(starts, flat[lo : lo + _BLOCK], side="right") - 1
    return out.reshape(v.shape)


def _key(k, tol: float) -> np.ndarray:
    k = np.asarray(k)
    return ranks(k, tol) if np.issubdtype(k.dtype, np.floating) else k


def lexsort(keys, tol: float = TOL) -> np.ndarray:
    """``np.lexsort(keys)`` (the last key is the primary one) with every float key replaced by
    its :func:`ranks`: near-equal values are decided by the next key, then by index order."""
    return np.lexsort(tuple(_key(k, tol) for k in keys))


def argsort(values, tol: float = TOL) -> np.ndarray:
    """Stable ascending order of ``values`` with near-equal values in index order."""
    return np.argsort(ranks(values, tol), kind="stable")


def alike(a, b, tol: float = TOL) -> np.ndarray:
    """Whether rows ``a`` and ``b`` (last axis) differ by at most ``tol`` everywhere (maximum
    absolute difference, the comparison of action distributions)."""
    d = np.abs(np.asarray(a, dtype=float) - np.asarray(b, dtype=float))
    return d.max(axis=-1, initial=0.0) <= tol


def classes(rows, tol: float = TOL) -> np.ndarray:
    """Group rows (last axis) into classes, independently over any leading axes: ``rows`` is
    ``(..., m, A)``, the answer ``(..., m)`` the index (along ``m``) of each row's class
    leader. In index order, the first row without a class leads a new one, which takes every
    row without a class that is :func:`alike` it; so the leader is the class's first member
    and a class's id is its lowest index. The order of the rows alone decides, and noise
    well below ``tol`` changes nothing (only rows nearly ``tol`` apart could go either way)."""
    x = np.asarray(rows, dtype=float)
    *lead, m, A = x.shape
    if not lead:  # one group (the policy classes of one state): no batch bookkeeping
        return _classes(x, tol)[0]
    x = x.reshape(-1, m, A)
    out = np.zeros((x.shape[0], m), dtype=np.int64)
    todo = np.ones((x.shape[0], m), dtype=bool)
    live = np.flatnonzero(todo.any(axis=1))
    while len(live):
        first = np.argmax(todo[live], axis=1)
        member = todo[live] & alike(x[live], x[live, first][:, None, :], tol)
        member[np.arange(len(live)), first] = True  # a row always joins its own class (even NaN)
        out[live] = np.where(member, first[:, None], out[live])
        todo[live] &= ~member
        live = live[todo[live].any(axis=1)]
    return out.reshape(*lead, m)


def numbered_classes(rows, tol: float = TOL) -> tuple[np.ndarray, int]:
    """:func:`classes` of one ``(m, A)`` group of rows, numbered ``0, 1, …`` in the order of
    their first members, and how many there are."""
    return _classes(np.asarray(rows, dtype=float), tol)[1:]


def _classes(x: np.ndarray, tol: float) -> tuple[np.ndarray, np.ndarray, int]:
    """Leader index and class number of every row of one ``(m, A)`` group; the count."""
    leader, number = np.zeros(len(x), dtype=np.int64), np.zeros(len(x), dtype=np.int64)
    if x.shape[1] == 0:  # no actions: every row alike
        return leader, number, min(len(x), 1)
    todo = np.ones(len(x), dtype=bool)
    k = 0
    while todo.any():
        first = int(np.argmax(todo))
        member = todo & (np.abs(x - x[first]).max(axis=1) <= tol)
        member[first] = True  # a row always joins its own class (even NaN)
        leader[member], number[member] = first, k
        todo &= ~member
        k += 1
    return leader, number, k
