"""The numpy CSR matrix of the core (rmtk._arrays.Csr) against scipy.sparse: the same canonical
form and bitwise the same products, and the scipy view of LabeledMDP / Product kernels."""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp

from rmtk import LabeledMDP, dsl
from rmtk._arrays import Csr, as_csr, unique
from rmtk.product.model import task_product


def scipy_canonical(mat) -> sp.csr_array:
    """What the models stored before Csr: a canonical float scipy CSR array."""
    out = sp.csr_array(mat, dtype=float, copy=True)
    out.eliminate_zeros()
    out.sum_duplicates()
    out.sort_indices()
    return out


def same(a: Csr, b) -> bool:
    return (
        a.shape == b.shape
        and np.array_equal(a.indptr, b.indptr)
        and np.array_equal(a.indices, b.indices)
        and np.array_equal(a.data, b.data)
    )


@pytest.mark.parametrize("seed", range(20))
def test_from_coo_matches_scipy(seed):
    """Duplicates summed in input order (as scipy does for rows of at most 16 entries), zeros
    dropped, columns sorted."""
    rng = np.random.default_rng(seed)
    R, C = rng.integers(1, 40), rng.integers(1, 8)
    rows = np.repeat(np.arange(R), rng.integers(0, 17, R))
    cols = rng.integers(0, C, len(rows))
    vals = np.round(rng.normal(size=len(rows)), 1 if seed % 2 else 12) * (rng.random(len(rows)) < 0.9)
    perm = rng.permutation(len(rows))
    rows, cols, vals = rows[perm], cols[perm], vals[perm]
    mine = Csr.from_coo(vals, rows, cols, (R, C))
    assert same(mine, scipy_canonical(sp.csr_array((vals, (rows, cols)), shape=(R, C))))
    assert mine.is_canonical() and not mine.data.flags.writeable
    dense = mine.toarray()
    assert same(Csr.from_dense(dense), scipy_canonical(dense))
    assert same(as_csr(dense), mine) and as_csr(mine) is mine
    assert same(as_csr(sp.coo_array((vals, (rows, cols)), shape=(R, C))), mine)


@pytest.mark.parametrize("seed", range(10))
def test_products_are_bitwise_scipy(seed):
    rng = np.random.default_rng(seed)
    R, C = rng.integers(2, 300), rng.integers(2, 200)
    ref = sp.random_array((R, C), density=rng.uniform(0.01, 0.5), rng=rng, format="csr")
    ref.sort_indices()
    M = Csr(ref.indptr, ref.indices, ref.data, ref.shape)
    for k in (None, 1, 4):
        x = rng.normal(size=C if k is None else (C, k))
        y = rng.normal(size=R if k is None else (R, k))
        assert np.array_equal(M @ x, ref @ x)
        assert np.array_equal(M.rmatmul(y), ref.T @ y)
    assert np.array_equal(M.row_sums(), np.asarray(ref.sum(axis=1)).ravel())
    assert np.array_equal(M.toarray(), ref.toarray())


def test_non_canonical_csr_is_canonicalised():
    M = Csr([0, 3, 3], [2, 0, 2], [1.0, 0.0, 2.0], (2, 3))
    assert not M.is_canonical()
    C = as_csr(M)
    assert C.is_canonical() and C.toarray().tolist() == [[0.0, 0.0, 3.0], [0.0, 0.0, 0.0]]


def test_models_keep_a_scipy_view(models_dir):
    task = dsl.load(models_dir / "patrol.rm").tasks["patrol"]
    mdp = task.mdp
    T = mdp.transitions
    assert isinstance(T, sp.csr_array) and T is mdp.transitions  # built once
    assert not T.data.flags.writeable and not T.indices.flags.writeable
    assert same(mdp.kernel, T)
    # any form of the same matrix gives an equal model
    for form in (T, mdp.kernel, T.toarray(), sp.coo_array(T)):
        other = LabeledMDP(
            mdp.states, mdp.actions, form, mdp.labels, mdp.propositions, mdp.initial, gamma=mdp.gamma, name=mdp.name
        )
        assert other == mdp and hash(other) == hash(mdp)
    # pickles (for worker processes) without the cached scipy view
    back = pickle.loads(pickle.dumps(mdp))
    assert back == mdp and "scipy" not in back.kernel._cache
    prod = task_product(task)
    assert isinstance(prod.transitions, sp.csr_array) and same(prod.kernel, prod.transitions)
    succ = mdp.successor_matrix()
    assert succ.data.dtype == bool
    assert np.array_equal(succ.toarray(), (T.toarray().reshape(16, 4, 16).sum(1) > 0))


@pytest.mark.parametrize("seed", range(5))
def test_unique_is_numpys(seed):
    """rmtk's unique (which spares numpy.ma's import) gives np.unique's values and dtype."""
    rng = np.random.default_rng(seed)
    for a in (
        rng.integers(-5, 5, 40),
        rng.integers(0, 3, (4, 6)).astype(np.int32),
        rng.integers(0, 2, 9).astype(bool),
        np.array([], np.int64),
        np.array([1.0, np.nan, 1.0, np.nan]),
    ):
        got, want = unique(a), np.unique(a)
        assert got.dtype == want.dtype and np.array_equal(got, want, equal_nan=True)
