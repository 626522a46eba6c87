"""The Dask engine on a LocalCluster of 2 worker processes (one per module): the same count
table, negatives and machines as the local engine; the same simulated data; failures that
are retried, rescheduled or stop the run naming the partition."""

from __future__ import annotations

import os
from pathlib import Path

import attrs
import numpy as np
import pytest

from rmtk import ConfidenceMiner, EmpiricalPTP, Learner, MaxSatEncoder, dsl
from rmtk.cli.main import main
from rmtk.data import load, save
from rmtk.data.parquet_dataset import ParquetDataset
from rmtk.engines.dask import DaskEngine, WorkError
from rmtk.engines.local import LocalEngine
from rmtk.errors import DataError
from rmtk.product.simulate import simulate, simulate_dataset, simulate_sharded
from rmtk.progress import Progress
from rmtk.ptp.empirical import CountJob, canonical_counts, merge_partial

MODELS = Path(__file__).resolve().parents[1] / "models"


@pytest.fixture(scope="module")
def client(dask_client):
    return dask_client


@pytest.fixture(scope="module")
def task():
    return dsl.load(MODELS / "stack_avoid.rm").tasks["stack_avoid"]


@pytest.fixture(scope="module")
def dataset(task, tmp_path_factory):
    demos = simulate(task, 20_000, 20, seed=7)
    path = tmp_path_factory.mktemp("data") / "d.parquet"
    save(demos, path, task.mdp, partition_size=3_000)  # 7 partitions
    return demos, path


class Calls(Progress):
    def __init__(self):
        self.calls = []

    def count(self, done, total, what="trajectories"):
        self.calls.append((done, total, what))


def test_dask_counts_learns_like_local(client, task, dataset):
    demos, path = dataset
    local, dask = EmpiricalPTP(path), EmpiricalPTP(path, engine=DaskEngine(client=client))
    seen = Calls()
    table = dask.counts(task.mdp, seen)
    assert table == local.counts(task.mdp) == EmpiricalPTP(demos).counts(task.mdp)  # ids included
    assert seen.calls == [(k, 7, "partitions counted") for k in range(8)]
    results = [
        Learner(ptp, miner=ConfidenceMiner(0.05), encoder=MaxSatEncoder(), nodes=3, irl=None).fit(task)
        for ptp in (local, dask)
    ]
    neg = [r.negatives for r in results]
    assert len(neg[0]) > 100 and np.array_equal(neg[0].pairs, neg[1].pairs)
    assert [m.delta_u.tolist() for m in results[0].machines] == [m.delta_u.tolist() for m in results[1].machines]
    assert results[0].raw_count == results[1].raw_count > 0


def test_in_memory_chunks_on_dask(client, task, dataset):
    demos, _ = dataset
    assert EmpiricalPTP(demos, chunk=6_000, engine=DaskEngine(client=client)).counts(task.mdp) == EmpiricalPTP(
        demos
    ).counts(task.mdp)


def test_simulation_on_dask_is_the_same_data(client, task, tmp_path):
    engine = DaskEngine(client=client)
    whole = simulate(task, 10_000, 20, seed=4)
    assert simulate_sharded(task, 10_000, 20, seed=4, shard_size=3_000, engine=engine) == whole
    w = simulate_dataset(task, 10_000, 20, tmp_path / "sim", seed=4, partition_size=2_500, engine=engine)
    assert (w.trajectories, w.files) == (10_000, 4) and load(tmp_path / "sim", task.mdp) == whole


# ---------------------------------------------------------------------- failures
@attrs.frozen
class Flaky:
    """Counts like ``inner``, but partition ``victim`` fails the first ``times`` times it is
    run (a marker file per attempt: attempts may run on different workers), by raising or by
    killing its worker process."""

    inner: object
    marker: str
    victim: int
    times: int = 1
    kill: bool = False

    def __call__(self, item):
        if item.index == self.victim:
            attempt = len(os.listdir(self.marker))
            if attempt < self.times:
                Path(self.marker, f"attempt-{attempt}").touch()
                if self.kill:
                    os._exit(1)
                raise OSError(f"flaky disk at attempt {attempt}")
        return self.inner(item)


def _run(engine, task, path, marker, **flaky):
    ds = ParquetDataset.open(path, task.mdp)
    job = Flaky(CountJob(task.mdp, dataset=ds), str(marker), **flaky)
    out = engine.map_reduce(job, ds.partitions, reduce=merge_partial)
    return canonical_counts(out.table)


def test_a_partition_that_fails_once_is_recomputed(client, task, dataset, tmp_path):
    _, path = dataset
    expected = EmpiricalPTP(path).counts(task.mdp)
    assert _run(DaskEngine(client=client), task, path, tmp_path, victim=3) == expected
    assert os.listdir(tmp_path) == ["attempt-0"]  # it did fail once


def test_a_lost_worker_does_not_lose_its_partition(client, task, dataset, tmp_path):
    _, path = dataset
    expected = EmpiricalPTP(path).counts(task.mdp)
    assert _run(DaskEngine(client=client), task, path, tmp_path, victim=5, kill=True) == expected
    assert os.listdir(tmp_path) == ["attempt-0"]  # its worker died once
    client.wait_for_workers(2, timeout=30)


def test_a_partition_that_keeps_failing_stops_the_run(client, task, dataset, tmp_path):
    _, path = dataset
    with pytest.raises(
        WorkError,
        match=r"partition 2 of 7 \(.*part-00002\.parquet\) failed 2 times \(retries=1\); "
        r"the run stopped and returned nothing. Last error: OSError: flaky disk at "
        r"attempt 1",
    ):
        _run(DaskEngine(client=client, retries=1), task, path, tmp_path, victim=2, times=5)
    with pytest.raises(OSError, match="flaky disk at attempt 2"):  # the local engine: the error itself
        _run(LocalEngine(), task, path, tmp_path, victim=2, times=5)


def test_a_corrupt_partition_is_named_from_the_workers(client, task, dataset, tmp_path):
    demos, _ = dataset
    path = tmp_path / "c.parquet"
    save(demos[:9_000], path, task.mdp, partition_size=3_000)
    victim = path / "part-00001.parquet"
    data = bytearray(victim.read_bytes())
    data[len(data) // 3 : len(data) // 3 + 64] = b"\xff" * 64  # the footer is intact, a data page is not
    victim.write_bytes(bytes(data))
    with pytest.raises(DataError, match=f"{victim}: not a readable Parquet file"):
        EmpiricalPTP(path, engine=DaskEngine(client=client, retries=0)).counts(task.mdp)


# ---------------------------------------------------------------------- command line
def test_cli_simulate_and_learn_on_a_scheduler(client, task, tmp_path, capsys):
    address = client.scheduler.address
    model = str(MODELS / "stack_avoid.rm")
    out = tmp_path / "demos"
    assert (
        main(
            [
                "simulate",
                model,
                "-n",
                "6000",
                "-T",
                "20",
                "--seed",
                "3",
                "-o",
                str(out),
                "--format",
                "parquet",
                "--partition-size",
                "2000",
                "--engine",
                "dask",
                "--scheduler",
                address,
                "-q",
            ]
        )
        == 0
    )
    assert "in 3 Parquet files" in capsys.readouterr().err
    assert load(out, task.mdp) == simulate(task, 6000, 20, seed=3)
    reports = []
    for extra in ([], ["--engine", "dask", "--scheduler", address]):
        assert (
            main(["learn", model, "--demos", str(out), "--maxsat", "--nodes", "3", "--no-rewards", "-q"] + extra) == 0
        )
        reports.append([ln for ln in capsys.readouterr().out.splitlines() if not ln.startswith("# timings")])
    assert reports[0] == reports[1] and "# MaxSAT: optimum drops 0 negative example(s)" in reports[0]
    assert main(["learn", model, "--demos", str(out), "--workers", "2"]) == 2
    assert (
        "--workers needs --engine dask: it starts a local Dask cluster of that many workers" in capsys.readouterr().err
    )
    assert main(["simulate", model, "-n", "10", "-T", "5", "--seed", "0", "-o", str(out), "-q"]) == 1
    assert "the directory holds data (3 entries); pass --force" in capsys.readouterr().err


# ---------------------------------------------------------------------- the facility as an environment uses it
@attrs.frozen
class RandomEpisodes:
    """A shard job like an environment's: a variable number of draws per episode (so the
    shard's own stream, Shard.spawned_rng), counted into a table, with a statistic beside it."""

    mdp: object

    def __call__(self, shard):
        rng = shard.spawned_rng()
        lengths = rng.integers(1, 9, size=shard.size)
        T = int(lengths.max())
        inside = np.arange(T) < lengths[:, None]
        states = np.where(inside, rng.integers(0, self.mdp.n_states, size=(shard.size, T)), -1)
        actions = np.where(inside, rng.integers(0, self.mdp.n_actions, size=(shard.size, T)), -1)
        from rmtk.data import Demonstrations
        from rmtk.ptp.empirical import count_chunk

        return count_chunk(self.mdp, Demonstrations(states, actions, lengths)), int(lengths.sum())


def merge_episodes(a, b):
    from rmtk.ptp.empirical import merge_counts

    return merge_counts(a[0], b[0]), a[1] + b[1]


def test_shards_with_their_own_streams_give_the_same_counts_anywhere(client, task):
    from rmtk.engines.shards import plan_shards

    shards = plan_shards(5_000, 700, seed=12)
    results = [
        engine.map_reduce(
            RandomEpisodes(task.mdp),
            shards,
            reduce=merge_episodes,
            sizes=lambda s: s.size,
            total=5_000,
            what="episodes",
        )
        for engine in (LocalEngine(), DaskEngine(client=client))
    ]
    assert results[0][1] == results[1][1] > 5_000
    assert results[0][0] == results[1][0]  # the same tree of merges: identical tables, ids included
