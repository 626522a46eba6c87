"""Benchmark of the Gymnasium bridge: the Office World's learning times and the reacher
recorded through ``rmtk.gym.collect``, each beside a reference measured in the same run.

``--office`` (default): for each task of models/office.rm, the every-depth learning from the
scripted expert's exact policy (ExactPTP(None), rewards by MarginIRL), best of ``--repeat``
after a warm-up, and the recording of 10^4 episodes with ``collect`` plus learning from them
(SimplestEncoder, MarginIRL), best of ``--repeat``. Reference: ``rmtk learn
models/patrol.rm``'s pipeline (the paper's patrol at depth 6) timed the same way, in the same
process. Targets: each exact ≤ 1 s; the four recordings and learnings ≤ 30 s in all.

``--reacher N``: ``rmtk reproduce reacher --set trajectories=N`` as a process (wall time, the
maximum resident set size of the run and of its workers, and its table: |E⁻|, FPR, machines,
raw), and with ``--reference REV`` the same command on the checkout of the git revision REV
(a temporary worktree), the two taken alternately ``--repeat`` times so that both see the
same machine load. Targets at N = 10^5: ≤ 180 s and ≤ 1 GB (main process + workers); at
N = 10^6: ≤ 15 minutes.

``--profile-reacher N``: where one process's time goes while it records N reacher episodes
(one worker's share of a run): physics, the rest of the environment step, the expert, the
labeler, the discretiser, the counting.

    PYTHONPATH=. python benchmarks/gym.py                                   # office
    PYTHONPATH=. python benchmarks/gym.py --reacher 100000 --reference 373d949 --no-office
    PYTHONPATH=. python benchmarks/gym.py --markdown --repeat 5
    PYTHONPATH=. python benchmarks/gym.py --no-office --profile-reacher 20000

Exit status 1 if a target fails.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _table import render  # the script's folder is on sys.path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's rmtk, whatever is installed
TASKS = ("coffee", "mail", "coffee_mail", "patrol")


def best(fn, repeat: int) -> tuple[float, object]:
    """The shortest of ``repeat`` timed calls, and the last result."""
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def office(repeat: int) -> tuple[list[dict], bool]:
    from rmtk import ConfidenceMiner, EmpiricalPTP, ExactPTP, Learner, NodePolicyTable, dsl
    from rmtk.gym import Identity, MdpVectorEnv, NodePolicy, StateLabels, collect
    from rmtk.ptp.exact import shortest_path_table
    from rmtk.rewards.margin import MarginIRL
    from rmtk.sat.encoders import SimplestEncoder

    doc = dsl.load_model("office")
    patrol = dsl.load_model("patrol").tasks["patrol"]
    Learner().fit(patrol)  # warm-up: imports, the SAT solver, the planner
    ref, _ = best(lambda: Learner().fit(patrol), repeat)
    rows, ok, data_total = [], True, 0.0
    for name in TASKS:
        task = doc.tasks[name]
        table = shortest_path_table(task, 0.1)

        def exact(task=task, table=table):
            return Learner(
                ExactPTP(None, source=NodePolicyTable(table)), irl=MarginIRL(), max_nodes=task.max_nodes
            ).fit(task)

        def data(task=task, table=table):
            rec = collect(
                MdpVectorEnv(task.mdp, 1000, max_steps=40),
                NodePolicy.from_table(task.machine, table),
                StateLabels.of(task.mdp),
                Identity(),
                10_000,
                0,
            )
            return Learner(
                EmpiricalPTP(rec),
                miner=ConfidenceMiner(0.05),
                encoder=SimplestEncoder(),
                irl=MarginIRL(),
                max_nodes=task.max_nodes,
            ).fit(task)

        exact()
        t_exact, res = best(exact, repeat)
        t_data, res_data = best(data, repeat)
        data_total += t_data
        ok &= t_exact <= 1.0
        rows.append(
            {
                "task": name,
                "exact_s": f"{t_exact:.3f}",
                "exact_target": "PASS" if t_exact <= 1.0 else "FAIL",
                "exact_nodes": res.n_nodes,
                "episodes_1e4_s": f"{t_data:.2f}",
                "episodes_nodes": res_data.n_nodes,
                "patrol_d6_reference_s": f"{ref:.3f}",
            }
        )
    ok &= data_total <= 30.0
    rows.append(
        {
            "task": "all",
            "exact_s": "-",
            "exact_target": "-",
            "exact_nodes": "-",
            "episodes_1e4_s": f"{data_total:.2f} ({'PASS' if data_total <= 30 else 'FAIL'} <= 30)",
            "episodes_nodes": "-",
            "patrol_d6_reference_s": f"{ref:.3f}",
        }
    )
    return rows, ok


def reacher_run(checkout: Path, n: int, integrator: str = "rk4") -> dict:
    """One ``rmtk reproduce reacher`` process on ``checkout``: wall time and its table."""
    env = dict(os.environ, PYTHONPATH=str(checkout))
    t0 = time.perf_counter()
    extra = ["--set", f"integrator={integrator}"] if integrator != "rk4" else []  # older revisions lack it
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "rmtk.cli.main",
            "reproduce",
            "reacher",
            "--no-figures",
            "-q",
            "--set",
            f"trajectories={n}",
            *extra,
        ],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"reacher run on {checkout} failed:\n{proc.stderr[-2000:]}")
    text = proc.stdout
    alpha_rows = re.findall(r"^\s*(0\.001|0\.0001|1e-05)\s+(\d+)\s+([\d.]+%)\s+\S+\s+(>?=?\d+)\s+(>?=?\d+)", text, re.M)
    lines = text.splitlines()
    cost = lines[next(i for i, line in enumerate(lines) if "max RSS MB (main)" in line) + 2].split()
    return {"wall_s": wall, "rows": alpha_rows, "main_mb": float(cost[-3]), "workers_mb": float(cost[-2])}


def reacher(n: int, reference: str | None, repeat: int, integrator: str = "rk4") -> tuple[list[dict], bool]:
    checkouts = {"this checkout": ROOT}
    tmp = None
    if reference:
        tmp = Path(tempfile.mkdtemp(prefix="rmtk-reference-"))
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(tmp / "ref"), reference],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        checkouts[f"reference {reference}"] = tmp / "ref"
    rows, ok = [], True
    try:
        for k in range(repeat):
            for label, checkout in checkouts.items():
                r = reacher_run(checkout, n, integrator)
                memory = r["main_mb"] + r["workers_mb"]
                mine = label == "this checkout"
                limit = 900 if n >= 1_000_000 else 180 if n >= 100_000 else None
                good = limit is not None and r["wall_s"] <= limit and (n >= 1_000_000 or memory <= 1024)
                if mine and limit is not None:
                    ok &= good
                rows.append(
                    {
                        "code": label,
                        "run": k + 1,
                        "trajectories": n,
                        "wall_s": f"{r['wall_s']:.1f}",
                        "rss_main+workers_mb": f"{memory:.0f}",
                        "E-": "/".join(x[1] for x in r["rows"]),
                        "FPR": "/".join(x[2] for x in r["rows"]),
                        "machines (raw)": "/".join(f"{x[3]} ({x[4]})" for x in r["rows"]),
                        "target": ("PASS" if good else "FAIL") if mine and limit is not None else "-",
                    }
                )
    finally:
        if tmp is not None:
            subprocess.run(["git", "worktree", "remove", "--force", str(tmp / "ref")], cwd=ROOT, capture_output=True)
    return rows, ok


class _Clock:
    """Seconds spent in each named stage (wrapped calls)."""

    def __init__(self):
        self.spent = {}

    def wrap(self, name: str, fn):
        def timed(*args, **kwargs):
            t = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.spent[name] = self.spent.get(name, 0.0) + time.perf_counter() - t

        return timed


class _TimedBatch:
    """A labeler or discretiser whose ``batch`` is timed; everything else as the original."""

    def __init__(self, inner, clock: _Clock, name: str):
        self._inner, self.batch = inner, clock.wrap(name, inner.batch)

    def __getattr__(self, key):
        return getattr(self._inner, key)


def reacher_profile(n: int, integrator: str) -> list[dict]:
    """Where one process's time goes when it records ``n`` reacher episodes with ``collect_shard``
    (one worker's share of a run): MuJoCo's batched rollout (physics), the rest of the
    environment's step (state copies, resets, observations), the expert (node tracking and its
    control law at the cell centres), the labeler, the discretiser and the counting."""
    import types

    import rmtk.gym.play as play
    from rmtk.gym import collect_shard
    from rmtk.gym.reacher import ReacherVectorEnv, reacher_bins, reacher_expert, reacher_labels

    clock = _Clock()
    env = ReacherVectorEnv(2000, integrator=integrator)
    env._rollout = types.SimpleNamespace(rollout=clock.wrap("physics (MuJoCo rollout)", env._rollout.rollout))
    env.step = clock.wrap("environment step", env.step)
    bins = reacher_bins()
    policy = reacher_expert(bins=bins)
    expert = clock.wrap("expert", policy)
    counting = play.count_chunk
    play.count_chunk = clock.wrap("counting", counting)
    try:
        t0 = time.perf_counter()
        rec = collect_shard(
            env,
            expert,
            _TimedBatch(reacher_labels(), clock, "labeler"),
            _TimedBatch(bins, clock, "discretiser"),
            n,
            0,
            max_steps=1000,
        )
        total = time.perf_counter() - t0
    finally:
        play.count_chunk = counting
        env.close()
    spent = dict(clock.spent)
    spent["environment step"] -= spent["physics (MuJoCo rollout)"]
    spent["collect's own work (checks, arrays)"] = total - sum(spent.values())
    steps = rec.n_steps
    rows = [
        {"stage": k, "s": f"{v:.2f}", "share": f"{100 * v / total:.1f}%", "us_per_step": f"{1e6 * v / steps:.2f}"}
        for k, v in spent.items()
    ]
    rows.append({"stage": "total", "s": f"{total:.2f}", "share": "100%", "us_per_step": f"{1e6 * total / steps:.2f}"})
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--no-office", action="store_true", help="skip the Office World timings")
    p.add_argument("--reacher", type=int, metavar="N", help="time the reacher experiment with N trajectories")
    p.add_argument("--reference", metavar="REV", help="also run the reacher on this git revision, alternately")
    p.add_argument(
        "--profile-reacher",
        type=int,
        metavar="N",
        help="where the time goes when one process records N reacher episodes",
    )
    p.add_argument("--integrator", choices=("rk4", "euler"), default="rk4", help="the reacher's integrator")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--markdown", action="store_true")
    args = p.parse_args(argv)
    ok = True
    if not args.no_office:
        rows, good = office(args.repeat)
        ok &= good
        print(
            f"# Office World learning, best of {args.repeat}; reference: the patrol task of models/patrol.rm, "
            "depth 6, in the same process"
        )
        print(render(rows, args.markdown, frozenset({"task", "exact_target"})))
    if args.reacher:
        rows, good = reacher(
            args.reacher, args.reference, max(1, args.repeat if args.reference else 1), args.integrator
        )
        ok &= good
        print(f"# reacher: rmtk reproduce reacher --set trajectories={args.reacher} (alpha 1e-3/1e-4/1e-5)")
        print(render(rows, args.markdown, frozenset({"code", "target"})))
    if args.profile_reacher:
        rows = reacher_profile(args.profile_reacher, args.integrator)
        print(
            f"# reacher: where one process's time goes recording {args.profile_reacher} episodes of 160 steps "
            f"({args.integrator}; 2 substeps of MuJoCo per step)"
        )
        print(render(rows, args.markdown, frozenset({"stage"})))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
