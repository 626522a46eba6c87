"""What a reward column costs: reading, counting and the reward traces of 10⁶ rows, with and
without rewards, in the same run.

The data: ``simulate`` of the patrol task (models/patrol.rm), ε = 0.3 exploration, N
trajectories of T steps (default 50,000 × 20 = 10⁶ rows), saved as CSV, NPZ and a Parquet
dataset (4 partitions) with and without the reward column. Per format: the file size, the
best of ``--repeat`` wall times of :func:`rmtk.data.load` (read + validate) with and without
rewards, and their ratio. Then, on the in-memory demonstrations: the count of the empirical
prefix tree policy (:class:`rmtk.ptp.empirical.EmpiricalPTP`) with and without rewards, and
:func:`rmtk.traces.rewards.reward_traces` (which counts too).

    PYTHONPATH=. python benchmarks/rewards_data.py
    PYTHONPATH=. python benchmarks/rewards_data.py --trajectories 5000 --repeat 2   # quick
"""

from __future__ import annotations

import argparse
import functools
import os
import tempfile
import time
from pathlib import Path

from rmtk import dsl
from rmtk.data import load, save
from rmtk.product.simulate import simulate
from rmtk.ptp.empirical import EmpiricalPTP
from rmtk.traces.rewards import reward_traces

ROOT = Path(__file__).resolve().parents[1]


def best_pair(plain, rewarded, repeat: int) -> tuple[float, float]:
    """The best of ``repeat`` wall times of the calls ``plain()`` and ``rewarded()``, run in
    turns (so that a busy moment of the machine weighs on both alike)."""
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeat):
        for fn, out in ((plain, times[0]), (rewarded, times[1])):
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
    return min(times[0]), min(times[1])


def size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*")) if path.is_dir() else path.stat().st_size


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trajectories", type=int, default=50_000)
    ap.add_argument("--horizon", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--formats", nargs="+", default=["csv", "npz", "parquet"])
    args = ap.parse_args()
    task = dsl.load(ROOT / "models" / "patrol.rm").tasks["patrol"]
    n, T = args.trajectories, args.horizon
    t0 = time.perf_counter()
    demos = simulate(task, n, T, seed=0, rewards=True, epsilon=0.3)
    plain = demos.with_rewards(None)
    print(f"patrol, {n:,} trajectories x {T} steps = {n * T:,} rows (simulated in {time.perf_counter() - t0:.2f} s)")
    print(f"{'format':8} {'MB plain':>9} {'MB rewards':>10} {'read plain s':>13} {'read rewards s':>15} {'ratio':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        for fmt in args.formats:
            ext = ".parquet" if fmt == "parquet" else f".{fmt}"
            paths = {}
            for name, d in (("plain", plain), ("rewards", demos)):
                paths[name] = Path(tmp) / f"{name}{ext}"
                kw = {"partition_size": -(-n // 4)} if fmt == "parquet" else {}
                save(d, paths[name], task.mdp, **kw)
            assert load(paths["rewards"], task.mdp) == demos
            t_plain, t_rew = best_pair(
                functools.partial(load, paths["plain"], task.mdp),
                functools.partial(load, paths["rewards"], task.mdp),
                args.repeat,
            )
            print(
                f"{fmt:8} {size(paths['plain']) / 1e6:9.1f} {size(paths['rewards']) / 1e6:10.1f} "
                f"{t_plain:13.3f} {t_rew:15.3f} {t_rew / t_plain:6.2f}"
            )
    c_plain, c_rew = best_pair(
        lambda: EmpiricalPTP(plain).counts(task.mdp), lambda: EmpiricalPTP(demos).counts(task.mdp), args.repeat
    )
    _, c_traces = best_pair(lambda: None, lambda: reward_traces(demos, task), args.repeat)
    traces = reward_traces(demos, task)
    print(
        f"count (EmpiricalPTP): {c_plain:.3f} s plain, {c_rew:.3f} s with rewards ({c_rew / c_plain:.2f}x); "
        f"reward_traces: {c_traces:.3f} s"
    )
    print(traces.summary())
    print(f"cpus: {os.cpu_count()}")


if __name__ == "__main__":
    main()
