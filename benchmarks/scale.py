"""Benchmark of demonstrations beyond memory: Parquet datasets simulated and counted on the local
engine and on Dask (docs/design/10-parquet-and-engines.md).

For each N (default 10^6 and 10^7 trajectories of T = 20 steps on the block world, task
``stack`` of ``models/stack.rm`` with the expert sharpened to λ = 0.05 as in
``benchmarks/demos.py``):

* ``write`` rows — :func:`rmtk.product.simulate.simulate_dataset` straight to Parquet partitions of
  ``--partition-size`` trajectories, once on the local engine and once on a local Dask cluster
  of 2 workers; ``same`` says whether the two datasets are byte-identical (the seed fixes the
  data whatever the engine);
* ``count`` rows — ``EmpiricalPTP(DIR, engine=...).counts(mdp)``: every partition read,
  validated against the MDP and counted, the tables tree-reduced and put in canonical order;
  on the local engine, and on Dask with 1 and 2 worker processes. ``same`` says whether the
  count table is identical (trie ids included) to the local engine's.

Columns: ``wall_s`` the wall time of the stage (a Dask cluster is started before the clock
and its start-up is shown apart as ``start_s``); ``steps/s`` the throughput N·T / wall;
``peak_MiB`` the peak resident memory of each process that did the work — the run's own
process for the local engine, each worker process for Dask (``ru_maxrss`` read in the
workers after the run; workers are fresh for every row); ``cores`` the CPU the run's
processes used per second of wall time (client and workers) / the CPU the whole machine
used meanwhile (``/proc/stat``), so that the load of other programs is seen beside every
figure. Each row runs in a fresh interpreter (this script with ``--one``) so that one row's
memory cannot inflate another's. Clusters are started as ``rmtk ... --engine dask --workers
N`` starts them (``rmtk.engines.dask.local_cluster``).

Target (exit status 1 if it fails): 10^7 trajectories counted on 2 Dask workers in ≤ 90 s
with ≤ 1.5 GiB per worker, and every count table identical to the local engine's.

``--reacher N`` adds ``rmtk reproduce reacher --set trajectories=N`` end to end on a local Dask
cluster of 2 workers, as a fresh process (``--integrator euler`` for the faster, cruder physics;
docs/benchmarks/10-reacher.md, says where its time goes).

Scaling from 1 to 2 workers is reported as measured; on a 2-core machine it stays below 2×:
the client, the scheduler and the operating system share the two cores with the workers,
pyarrow decodes with threads of its own, and the runs meet whatever else the machine does
(the ``cores`` column shows how much of the machine the run actually got).

    PYTHONPATH=. python benchmarks/scale.py                      # N = 1e6 1e7 (about 4 minutes)
    PYTHONPATH=. python benchmarks/scale.py --sizes 1e5 --quick  # a smoke test
    PYTHONPATH=. python benchmarks/scale.py --dir /data/scale --keep --markdown
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

from _child import run_child as child  # the script's folder is on sys.path
from _child import size
from _table import render

ROOT = Path(__file__).resolve().parent.parent
HORIZON = 20
LAMBDA = 0.05
SEED = 0
MARK = "@@scale-bench@@ "
TARGET_N = 10**7
TARGET_S = 90.0
TARGET_MIB = 1.5 * 1024
MiB = 2**20


def load_task():
    import attrs

    from rmtk import dsl

    return attrs.evolve(dsl.load(ROOT / "models" / "stack.rm").tasks["stack"], lam=LAMBDA)


def _maxrss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def machine_jiffies() -> tuple[int, int]:
    """(busy, total) CPU time of the whole machine so far, from /proc/stat (Linux)."""
    try:
        with open("/proc/stat") as f:
            values = [int(v) for v in f.readline().split()[1:9]]
    except OSError:
        return 0, 0
    return sum(values) - values[3] - values[4], sum(values)


def engine_session(workers: int):
    """``(engine, client, cluster, start seconds)``: the local engine, or a fresh Dask cluster."""
    from rmtk.engines.local import LocalEngine

    if workers == 0:
        return LocalEngine(), None, None, 0.0
    from rmtk.engines.dask import DaskEngine, local_cluster

    t0 = time.perf_counter()
    cluster, client = local_cluster(workers)  # the cluster `--engine dask --workers N` starts
    return DaskEngine(client=client), client, cluster, time.perf_counter() - t0


def one(stage: str, workers: int, n: int, path: str, partition_size: int) -> dict:
    """One row in this (fresh) process: ``stage`` is ``write`` or ``count``; ``workers`` 0 is
    the local engine."""
    import numpy as np

    from rmtk import EmpiricalPTP
    from rmtk.product.simulate import simulate_dataset

    task = load_task()
    engine, client, cluster, start = engine_session(workers)
    try:
        cpu0 = _cpu_seconds() + (sum(client.run(_cpu_seconds).values()) if client else 0.0)
        busy0, total0 = machine_jiffies()
        t0 = time.perf_counter()
        if stage == "write":
            simulate_dataset(task, n, HORIZON, path, seed=SEED, partition_size=partition_size, engine=engine)
            digest = hashlib.blake2b(digest_size=16)
            for f in sorted(Path(path).iterdir()):
                digest.update(f.read_bytes())
        else:
            table = EmpiricalPTP(path, engine=engine).counts(task.mdp)
            digest = hashlib.blake2b(digest_size=16)
            for a in (table.trie.parent, table.trie.letter, table.trie.length, table.keys, table.counts):
                digest.update(np.ascontiguousarray(a, dtype=np.int64).tobytes())
        wall = time.perf_counter() - t0
        busy1, total1 = machine_jiffies()
        cpu = _cpu_seconds() + (sum(client.run(_cpu_seconds).values()) if client else 0.0) - cpu0
        machine = (busy1 - busy0) / max(total1 - total0, 1) * (os.cpu_count() or 1)
        peaks = [_maxrss_mib()] if client is None else sorted(client.run(_maxrss_mib).values(), reverse=True)
    finally:
        if client is not None:
            client.close()
            cluster.close()
    return {
        "stage": stage,
        "workers": workers,
        "N": n,
        "wall": wall,
        "start": start,
        "peaks": peaks,
        "cores_ours": cpu / wall,
        "cores_machine": machine,
        "digest": digest.hexdigest(),
        "bytes": sum(f.stat().st_size for f in Path(path).iterdir()),
    }


def run_child(stage: str, workers: int, n: int, path: Path, args) -> dict:
    return child(
        __file__,
        [stage, str(workers), str(n), str(path), "--partition-size", str(args.partition_size)],
        MARK,
        f"{stage} workers={workers} N={n}",
    )


def engine_name(workers: int) -> str:
    return "local" if workers == 0 else f"dask x{workers}"


def row(rec: dict, same: bool) -> dict:
    steps = rec["N"] * HORIZON
    return {
        "stage": rec["stage"],
        "N": f"{rec['N']:.0e}".replace("+0", ""),
        "engine": engine_name(rec["workers"]),
        "wall_s": f"{rec['wall']:.1f}",
        "start_s": f"{rec['start']:.1f}" if rec["workers"] else "-",
        "steps/s": f"{steps / rec['wall'] / 1e6:.2f}M",
        "peak_MiB": "/".join(f"{p:.0f}" for p in rec["peaks"]),
        "cores": f"{rec['cores_ours']:.2f}/{rec['cores_machine']:.2f}",
        "data_MiB": f"{rec['bytes'] / MiB:.0f}",
        "same": "yes" if same else "NO",
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", nargs="+", type=size, default=[10**6, 10**7], metavar="N")
    ap.add_argument("--workers", nargs="+", type=int, default=[1, 2], help="Dask cluster sizes to count with")
    ap.add_argument("--partition-size", type=size, default=500_000, help="trajectories per Parquet file")
    ap.add_argument("--dir", help="where the datasets go (default: a temporary directory)")
    ap.add_argument("--keep", action="store_true", help="keep the datasets")
    ap.add_argument("--quick", action="store_true", help="count on the local engine and 2 workers only")
    ap.add_argument(
        "--reacher",
        type=size,
        metavar="N",
        help="also record and learn N reacher trajectories on 2 Dask workers (10^6: about 21 minutes)",
    )
    ap.add_argument("--integrator", choices=("rk4", "euler"), default="rk4", help="the reacher's integrator")
    ap.add_argument("--no-blocks", action="store_true", help="skip the block-world rows")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--one", nargs=4, metavar=("STAGE", "WORKERS", "N", "PATH"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.one:
        stage, workers, n, path = args.one
        print(MARK + json.dumps(one(stage, int(workers), int(n), path, args.partition_size)), flush=True)
        return 0

    base = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="rmtk-scale-"))
    base.mkdir(parents=True, exist_ok=True)
    rows, failures = [], []
    try:
        for n in [] if args.no_blocks else args.sizes:
            local_dir, dask_dir = base / f"blocks-{n}-local", base / f"blocks-{n}-dask"
            for d in (local_dir, dask_dir):
                shutil.rmtree(d, ignore_errors=True)
            writes = [run_child("write", w, n, d, args) for w, d in ((0, local_dir), (2, dask_dir))]
            same = writes[0]["digest"] == writes[1]["digest"]
            rows += [row(r, same) for r in writes]
            if not same:
                failures.append(f"N={n}: the Dask-written dataset differs from the local one")
            shutil.rmtree(dask_dir)
            counts = [run_child("count", w, n, local_dir, args) for w in [0] + ([2] if args.quick else args.workers)]
            for r in counts:
                ok = r["digest"] == counts[0]["digest"]
                rows.append(row(r, ok))
                if not ok:
                    failures.append(f"N={n}: the count table on {engine_name(r['workers'])} differs from the local one")
                if n == TARGET_N and r["workers"] == 2:
                    if r["wall"] > TARGET_S:
                        failures.append(f"N=1e7 on 2 workers: {r['wall']:.1f} s > {TARGET_S:g} s")
                    if max(r["peaks"]) > TARGET_MIB:
                        failures.append(f"N=1e7 on 2 workers: {max(r['peaks']):.0f} MiB per worker > {TARGET_MIB:.0f}")
            by = {r["workers"]: r["wall"] for r in counts}
            if 1 in by and 2 in by:
                print(
                    f"# N={n:.0e}: 1 -> 2 workers: {by[1] / by[2]:.2f}x faster; local/2 workers: {by[0] / by[2]:.2f}x",
                    file=sys.stderr,
                    flush=True,
                )
            if not args.keep:
                shutil.rmtree(local_dir)
            print(f"# done N={n}", file=sys.stderr, flush=True)
    finally:
        if not args.keep and not args.dir:
            shutil.rmtree(base, ignore_errors=True)
    if rows:
        print(
            f"# block world (stack, lambda {LAMBDA}), T={HORIZON}, seed {SEED}, {args.partition_size} trajectories "
            f"per Parquet file; {os.cpu_count()} CPUs; peak_MiB: per process that did the work (Dask: per worker)"
        )
        print(render(rows, args.markdown, frozenset({"stage", "engine", "same"})))
    if args.reacher:
        from gym import reacher_run  # benchmarks/gym.py: one `rmtk reproduce reacher` process

        r = reacher_run(ROOT, args.reacher, args.integrator)
        print(
            f"# reacher ({args.integrator}): rmtk reproduce reacher --set trajectories={args.reacher} on a local Dask "
            "cluster of 2 workers, end to end (recording, counting, mining, MaxSAT at 3 alphas)"
        )
        print(
            render(
                [
                    {
                        "N": f"{args.reacher:.0e}",
                        "wall_s": f"{r['wall_s']:.1f}",
                        "steps/s": f"{args.reacher * 160 / r['wall_s'] / 1e6:.2f}M",
                        "peak_MiB_main": f"{r['main_mb']:.0f}",
                        "peak_MiB_worker": f"{r['workers_mb']:.0f}",
                        "E-": "/".join(x[1] for x in r["rows"]),
                        "machines (raw)": "/".join(f"{x[3]} ({x[4]})" for x in r["rows"]),
                    }
                ],
                args.markdown,
                frozenset(),
            )
        )
    if any(n == TARGET_N for n in args.sizes) and not args.no_blocks:
        print(
            "# target (1e7 on 2 workers <= 90 s, <= 1.5 GiB per worker, identical tables): "
            + ("PASS" if not failures else "FAIL: " + "; ".join(failures))
        )
    elif failures:
        print("# FAIL: " + "; ".join(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
