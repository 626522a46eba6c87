"""Shards, the fixed reduce tree, canonical count tables and the local engine: the pieces that
make every engine return the same result."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rmtk import EmpiricalPTP, dsl
from rmtk.data import save
from rmtk.engines.dask import DaskEngine
from rmtk.engines.local import LocalEngine, as_engine
from rmtk.engines.shards import TreeReducer, plan_shards
from rmtk.errors import RmtkError
from rmtk.product.simulate import simulate, simulate_dataset, simulate_sharded
from rmtk.progress import Progress
from rmtk.ptp.empirical import canonical_counts, count_chunk, merge_counts, to_policy

MODELS = Path(__file__).resolve().parents[1] / "models"


@pytest.fixture(scope="module")
def stack():
    return dsl.load(MODELS / "stack.rm").tasks["stack"]


def level_by_level(items):
    """The reference tree: merge neighbours, level after level (an odd last one moves up)."""
    while len(items) > 1:
        items = [f"({items[i]} {items[i + 1]})" if i + 1 < len(items) else items[i] for i in range(0, len(items), 2)]
    return items[0]


def test_tree_reducer_is_the_level_by_level_tree():
    for n in range(1, 40):
        r = TreeReducer(lambda a, b: f"({a} {b})")
        for i in range(n):
            r.add(str(i))
        assert r.result() == level_by_level([str(i) for i in range(n)])
    r = TreeReducer(lambda a, b: f"({a} {b})")
    for i in range(7):
        r.add(str(i))
    assert r.result() == "(((0 1) (2 3)) ((4 5) 6))"
    with pytest.raises(RmtkError, match="nothing to reduce"):
        TreeReducer(max).result()


def test_shards_cover_the_episodes_with_their_streams():
    shards = plan_shards(10, 4, seed=3)
    assert [(s.index, s.count, s.start, s.size) for s in shards] == [(0, 3, 0, 4), (1, 3, 4, 4), (2, 3, 8, 2)]
    assert str(shards[2]) == "shard 2 of 3 (episodes 8..9)"
    whole = np.random.default_rng(3).random(10 * 6)
    jumped = np.concatenate([s.jumped_rng(6).random(s.size * 6) for s in shards])
    assert np.array_equal(jumped, whole)  # the shards concatenate to the one stream
    children = np.random.SeedSequence(3).spawn(3)
    for s, child in zip(shards, children):
        assert np.array_equal(s.spawned_rng().random(5), np.random.default_rng(child).random(5))
        assert np.array_equal(s.spawned_seed().generate_state(4), child.generate_state(4))
    a, b = plan_shards(10, 4, seed=None), plan_shards(10, 4, seed=None)
    assert a[0].seed.entropy == a[2].seed.entropy != b[0].seed.entropy  # fresh entropy, drawn once per run
    for bad, msg in (
        ((0, 4, 1), "the number of episodes must be"),
        ((5, 0, 1), "the shard size must be"),
        ((5, 2, -1), "a seed is a non-negative integer"),
    ):
        with pytest.raises(RmtkError, match=msg):
            plan_shards(*bad)


def test_sharded_simulation_is_the_same_data(stack, tmp_path):
    whole = simulate(stack, 5000, 12, seed=11)
    for size in (1, 333, 5000, 9000):
        n = 40 if size == 1 else 5000
        assert simulate_sharded(stack, n, 12, seed=11, shard_size=size) == whole[:n]
    written = simulate_dataset(stack, 5000, 12, tmp_path / "d", seed=11, partition_size=1200)
    assert (written.trajectories, written.steps, written.files) == (5000, 60000, 5)
    assert EmpiricalPTP(tmp_path / "d").counts(stack.mdp) == EmpiricalPTP(whole).counts(stack.mdp)


def test_canonical_table_is_the_same_for_any_chunking_and_order(stack):
    demos = simulate(stack, 3000, 15, seed=2)
    reference = EmpiricalPTP(demos).counts(stack.mdp)
    for chunk in (1_000_000, 999, 64):
        assert EmpiricalPTP(demos, chunk=chunk).counts(stack.mdp) == reference
    parts = [count_chunk(stack.mdp, d) for d in demos.chunks(500)]
    backwards = parts[-1]
    for t in parts[-2::-1]:
        backwards = merge_counts(backwards, t)
    assert not np.array_equal(backwards.trie.letter, reference.trie.letter)  # raw ids do differ ...
    assert canonical_counts(backwards) == reference  # ... canonical ones do not
    # breadth-first: lengths never decrease, siblings by letter
    trie = reference.trie
    assert np.all(np.diff(trie.length) >= 0)
    assert np.array_equal(to_policy(reference).counts.sum(), demos.n_steps)


class Calls(Progress):
    def __init__(self):
        self.calls = []

    def count(self, done, total, what="trajectories"):
        self.calls.append((done, total, what))


def test_local_engine_reduces_in_order_and_reports():
    seen = Calls()
    out = LocalEngine().map_reduce(
        lambda x: str(x),
        range(5),
        reduce=lambda a, b: f"({a} {b})",
        sizes=lambda x: 10,
        total=50,
        what="things",
        progress=seen,
    )
    assert out == "(((0 1) (2 3)) 4)"
    assert seen.calls == [(0, 50, "things")] + [(10 * k, 50, "things") for k in range(1, 6)]
    assert LocalEngine().map_reduce(lambda x: x * x, range(4)) == [0, 1, 4, 9]


def test_engine_choices_and_their_errors():
    assert isinstance(as_engine("local"), LocalEngine) and isinstance(as_engine(None), LocalEngine)
    assert as_engine("dask", workers=2) == DaskEngine(workers=2)
    assert EmpiricalPTP(None, engine="dask").engine == DaskEngine()
    for kwargs, msg in (
        (dict(engine="spark"), "unknown engine 'spark'; the engines are local, dask"),
        (dict(engine="local", workers=2), "workers configure the Dask engine; choose engine='dask'"),
        (dict(engine=object()), "an engine is 'local', 'dask' or an object with a map_reduce method"),
        (dict(engine="dask", client=object(), scheduler="tcp://x:1"), "a client or a scheduler address, not both"),
        (dict(engine="dask", scheduler="tcp://x:1", workers=2), "workers sets the size of a local cluster"),
        (dict(engine="dask", workers=0), "workers must be a whole number of at least 1, got 0"),
    ):
        with pytest.raises(RmtkError, match=msg):
            as_engine(**kwargs)
    with pytest.raises(RmtkError, match="retries must be a whole number of at least 0"):
        DaskEngine(retries=-1)


def test_empirical_ptp_reads_any_path(stack, tmp_path):
    demos = simulate(stack, 400, 10, seed=5)
    save(demos, tmp_path / "d.npz", stack.mdp)
    save(demos, tmp_path / "d.parquet", stack.mdp, partition_size=150)
    table = EmpiricalPTP(demos).counts(stack.mdp)
    assert EmpiricalPTP(str(tmp_path / "d.npz")).counts(stack.mdp) == table
    assert EmpiricalPTP(tmp_path / "d.parquet", depth=4).counts(stack.mdp) == EmpiricalPTP(demos, depth=4).counts(
        stack.mdp
    )
    seen = Calls()
    assert EmpiricalPTP(tmp_path / "d.parquet").counts(stack.mdp, seen) == table
    assert seen.calls == [(k, 3, "partitions counted") for k in range(4)]
