"""Benchmark of every capability on the Craft World (models/craft.rm, map_0, 1,521 states).

One row per (task, capability), each in a fresh interpreter: ``cpu s`` is the child's CPU time
of the run alone (the machine's load does not inflate it), ``wall s`` its wall time, ``peak MB``
the child's maximum resident set (imports included, ``resource.getrusage``). The capabilities
are those of ``rmtk reproduce craft`` (rmtk/experiments/craft.py), run by the same code:
``exact`` (every depth, the label-given reference of the same run), ``active`` (the exact
expert), ``labels`` (nothing known), ``demos`` (10⁴ simulated episodes of 150 steps). Every run
has the experiment's time limit and ``max_solutions``; a child still running at twice its limit
plus 60 s is killed and reported so, and so is one that exceeds ``--memory-mb`` of address
space (a guard for a shared machine; its row says the child failed). The first row is
``python -c "import numpy"`` in a child, a reference for the machine's speed.

Targets (PASS/FAIL; exit status 1 if one fails): exact ≤ 15 CPU s and the truth; active ≤ 60
CPU s, ≤ 1 GB and the truth; labels on t1–t4 ≤ 120 CPU s, ≤ 1 GB, complete and
policy-equivalent; demos ≤ 120 CPU s and ≤ 1 GB with at most ``max_solutions`` machines listed
(``truth`` says how many are consistent with the expert: what the samples resolve).

    PYTHONPATH=. python benchmarks/craft.py [--tasks t1 t10] [--capabilities exact active]
        [--time-limit 120] [--memory-mb 4096] [--markdown]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

from _child import run_child  # the script's folder is on sys.path
from _table import render

MARK = "@@craft "
TASKS = [f"t{i}" for i in range(1, 11)]
CAPABILITIES = ["exact", "active", "labels", "demos"]
#: capability: (CPU seconds, MB) targets; labels only on the tasks listed.
TARGETS = {"exact": (15.0, None), "active": (60.0, 1024), "labels": (120.0, 1024), "demos": (120.0, 1024)}
LABEL_TARGET_TASKS = ("t1", "t2", "t3", "t4")


def one(task_name: str, capability: str, time_limit: str, memory_mb: str = "0") -> dict:
    if int(memory_mb):  # a bound on the child's address space: a run that would exceed it fails, reported
        resource.setrlimit(resource.RLIMIT_AS, (int(memory_mb) << 20, int(memory_mb) << 20))
    if capability == "numpy":
        c0, t0 = time.process_time(), time.perf_counter()
        import numpy  # noqa: F401

        return dict(cpu=time.process_time() - c0, wall=time.perf_counter() - t0, peak=_peak())
    from rmtk import dsl
    from rmtk.experiments._report import Options
    from rmtk.experiments.craft import SETTINGS, measure

    task = dsl.load_model("craft").tasks[task_name]
    opts = Options(settings=SETTINGS, overrides={"time_limit": float(time_limit)})
    c0, t0 = time.process_time(), time.perf_counter()
    try:
        r = measure(task_name, capability, task, opts)
    except MemoryError:  # past --memory-mb: say so, with what it cost until then
        flag = f"MemoryError past the {memory_mb} MB address-space bound"
        out = dict(nodes=None, found="", truth="", right=False, flag=flag, detail="")
        return dict(out, cpu=time.process_time() - c0, wall=time.perf_counter() - t0, peak=_peak())
    out = dict(nodes=r.nodes, found=r.found, truth=r.truth, right=r.right, flag=r.flag, detail=r.detail)
    return dict(out, cpu=r.cpu, wall=r.wall, peak=_peak())


def _peak() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def verdict(task: str, capability: str, r: dict) -> str:
    """PASS/FAIL against the targets, or '' where none applies."""
    if capability == "labels" and task not in LABEL_TARGET_TASKS:
        return ""
    sec, mb = TARGETS[capability]
    ok = r["cpu"] <= sec and (mb is None or r["peak"] <= mb)  # NaN (a killed child) fails
    if capability != "demos":  # from demonstrations: bounded and summarised, whatever they resolve
        ok = ok and r.get("right", False)
    if capability == "labels":
        ok = ok and not r["flag"]  # complete
    return f"{'PASS' if ok else 'FAIL'} (<= {sec:g} CPU s{'' if mb is None else f', {mb} MB'})"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", nargs="+", choices=TASKS, default=TASKS)
    ap.add_argument("--capabilities", nargs="+", choices=CAPABILITIES, default=CAPABILITIES)
    ap.add_argument("--time-limit", type=float, default=120.0, help="seconds per run (the experiment's limit)")
    ap.add_argument("--memory-mb", type=int, default=4096, help="address-space bound of each child (0: none)")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--one", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        print(MARK + json.dumps(one(*args.one)))
        return 0
    ref = run_child(__file__, ["-", "numpy", "0", "0"], MARK, "numpy import")
    rows = [_row("-", "import numpy", dict(ref, nodes="", found="", truth="", flag="", detail=""), "")]
    failed = False
    for task in args.tasks:
        for cap in args.capabilities:
            print(f"{task} {cap} ...", file=sys.stderr)
            kill = 2 * args.time_limit + 60
            try:
                child = [task, cap, str(args.time_limit), str(args.memory_mb)]
                r = run_child(__file__, child, MARK, f"{task} {cap}", kill)
            except subprocess.TimeoutExpired:
                r = dict(nodes="", found="", truth="", flag=f"killed at {kill:g} s", detail="")
                r.update(cpu=float("nan"), wall=kill, peak=float("nan"))
            except RuntimeError as err:  # the child failed (e.g. out of memory): say so in the row
                last = str(err).strip().splitlines()[-1] if str(err).strip() else "failed"
                r = dict(nodes="", found="", truth="", flag=f"killed: {last[:60]}", detail="")
                r.update(cpu=float("nan"), wall=float("nan"), peak=float("nan"))
            target = verdict(task, cap, r)
            failed |= target.startswith("FAIL")
            rows.append(_row(task, cap, r, target))
    print(render(rows, args.markdown, left=frozenset({"task", "capability", "truth", "flag", "detail", "target"})))
    return 1 if failed else 0


def _row(task: str, capability: str, r: dict, target: str) -> dict:
    return {
        "task": task,
        "capability": capability,
        "nodes": r["nodes"] if r["nodes"] is not None else "-",
        "found": r["found"],
        "truth": r["truth"],
        "cpu s": f"{r['cpu']:.2f}",
        "wall s": f"{r['wall']:.2f}",
        "peak MB": f"{r['peak']:.0f}",
        "flag": r["flag"] or "-",
        "detail": r["detail"],
        "target": target,
    }


if __name__ == "__main__":
    sys.exit(main())
