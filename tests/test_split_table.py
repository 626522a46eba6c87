"""Which machines split each recorded triple (rmtk.ptp.tree.disagreements, read by the recorded active
loop, rmtk/active/recorded.py): kept once per distinct split, never as a machines × triples
table. The answer is the dense table's, entry for entry; the memory stays below that table."""

from __future__ import annotations

import tracemalloc

import numpy as np

from rmtk.active.recorded import candidate_triples, separation
from rmtk.negatives.anytime import Adaptive
from rmtk.negatives.statistics import Sequential
from rmtk.ptp.empirical import CountTable
from rmtk.ptp.tree import Trie, disagreements


def random_trie(rng, n_nodes: int, n_letters: int) -> Trie:
    """A random trie of compressed words (no letter twice in a row)."""
    parent, letter, length, child = [-1], [-1], [0], set()
    while len(parent) < n_nodes:
        p, k = int(rng.integers(len(parent))), int(rng.integers(n_letters))
        if (p, k) in child or letter[p] == k:
            continue
        child.add((p, k))
        parent.append(p)
        letter.append(k)
        length.append(length[p] + 1)
    return Trie(np.array(parent), np.array(letter), np.array(length))


def family(n: int = 4, n_letters: int = 4) -> list[np.ndarray]:
    """Every machine of a chain u0 → u1 → … (letter 1 moves on) whose last node's row is free:
    n^K machines, like an enumeration of machines that only the data's last node leaves open."""
    base = (np.arange(n)[:, None] + (np.arange(n_letters)[None, :] == 1)) % n
    out = []
    for r in range(n**n_letters):
        d = base.copy()
        d[n - 1] = (r // n ** np.arange(n_letters)) % n
        out.append(d)
    return out


def case(seed: int = 0, n_pairs: int = 8000):
    rng = np.random.default_rng(seed)
    trie, S = random_trie(rng, 600, 4), 100
    keys = np.unique(rng.integers(1, trie.n_nodes, n_pairs) * S + rng.integers(0, S, n_pairs))
    return trie, keys // S, keys % S, rng.integers(0, 50, len(keys)), family()


def dense(trie, node, state, rank, deltas):
    """The reference: the machines × trie nodes matrix of final nodes and the machines ×
    triples table of splits, as the rule of rmtk.ptp.tree.disagreements states it."""
    finals = np.stack([trie.run(d, 0) for d in deltas])
    _, sig = np.unique(finals.T, axis=0, return_inverse=True)
    sig = sig.reshape(-1)[node]
    order = np.lexsort((np.arange(len(node)), rank, sig, state))
    keep = np.r_[True, (state[order][1:] != state[order][:-1]) | (sig[order][1:] != sig[order][:-1])]
    rows = order[keep]
    triples = {}
    for s in np.unique(state[rows]):
        at = rows[state[rows] == s]
        for x in range(len(at)):
            for y in range(x + 1, len(at)):
                split = finals[:, node[at[x]]] != finals[:, node[at[y]]]
                if 0 < split.sum() < len(deltas):
                    triples[(int(at[x]), int(at[y]))] = split
    return triples


def test_the_splits_are_the_dense_tables():
    trie, node, state, rank, deltas = case(n_pairs=2000)
    d = disagreements(trie, node, state, rank, deltas)
    ref = dense(trie, node, state, rank, deltas)
    assert sorted(zip(d.i.tolist(), d.j.tolist())) == sorted(ref)
    assert len(ref) > 1000  # a real case: many triples
    split = d.split
    for t, (i, j) in enumerate(zip(d.i.tolist(), d.j.tolist())):
        assert np.array_equal(split[:, t], ref[(i, j)])
    distinct = {v.tobytes() for v in ref.values()}
    assert d.splits.shape == (len(deltas), len(distinct)) and len(distinct) < len(ref) / 3


def test_no_machines_by_triples_table():
    """256 machines and 23,269 triples: the splits take 256 × 2,993 booleans, and the whole
    computation's peak (3.7 MiB) stays below the dense machines × triples table of booleans
    (5.7 MiB); the table made as two int64 arrays peaked at 101 MiB."""
    trie, node, state, rank, deltas = case()
    tracemalloc.start()
    try:
        d = disagreements(trie, node, state, rank, deltas)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    k, triples = len(deltas), len(d.i)
    assert triples > 20_000
    assert peak < k * triples  # bytes of the dense boolean table alone
    assert d.splits.shape[0] == k and d.splits.shape[1] < triples / 5


def test_candidates_and_separation_read_the_distinct_splits():
    """The recorded loop's candidates (one per distinct split) and separation on a count table
    over the same pairs: each candidate's split column is the dense table's at its triple."""
    trie, node, state, rank, deltas = case(n_pairs=2000)
    S, A = 100, 3
    rng = np.random.default_rng(1)
    keys = np.unique(((node * S + state) * A)[:, None] + np.arange(A)[None, :])
    table = CountTable(trie, keys, rng.integers(1, 30, len(keys)), S, A, 4)
    test = Sequential(alpha=1e-3, bound=Adaptive())
    tr = candidate_triples(table, deltas, 100, 3, test)
    pair = keys[::A] // A
    visits = table.counts.reshape(-1, A).sum(axis=1)
    ref = dense(trie, pair // S, pair % S, -visits, deltas)
    assert 0 < len(tr) <= len({v.tobytes() for v in ref.values()})  # one per split still open
    assert len({tr.split[:, t].tobytes() for t in range(len(tr))}) == len(tr)
    at = {(int(pair[i] // S), int(pair[j] // S), int(pair[i] % S)): v for (i, j), v in ref.items()}
    for t in range(len(tr)):
        assert np.array_equal(tr.split[:, t], at[(int(tr.p[t]), int(tr.q[t]), int(tr.state[t]))])
    sep = separation(table, deltas, 100, test)
    rows = np.stack(list(ref.values()), axis=1)  # (machines, triples)
    told = sum(int((rows[a] != rows[b]).any()) for a in range(len(deltas)) for b in range(a + 1, len(deltas)))
    assert sep.triples == len(ref) and sep.pairs_split == told


def test_ranks_from_sorted_values_alone(monkeypatch):
    """rmtk.ties.ranks (the pick's evidence ranks) from the sorted values and their cluster
    starts, a block at a time: the ranks of sorting with the positions, chains and infinities
    included."""
    from rmtk import ties

    def reference(v, tol):
        order = np.argsort(v, kind="stable")
        srt = v[order]
        out = np.zeros(len(v), np.int64)
        out[order] = np.concatenate([[0], np.cumsum(~ties.at_most(srt[1:], srt[:-1], tol))])
        return out

    monkeypatch.setattr(ties, "_BLOCK", 5)
    rng = np.random.default_rng(3)
    values = [0.0, -0.0, 1.0, 1 + 1e-12, 1 - 1e-12, 2.0, np.inf, -np.inf, 1e300, 3.5]
    for t in range(500):
        v = rng.choice(values, int(rng.integers(2, 40))) + (t % 2) * rng.normal(0, 1e-9, 1)
        for tol in (ties.TOL, 1e-3, 0.6):
            assert np.array_equal(ties.ranks(v, tol), reference(v, tol))
