"""Peak memory of the shipped experiments' default runs: each ``rmtk reproduce NAME --no-figures``
(plus any ``--set``) as a process of its own, its peak resident memory read as ``/usr/bin/time
-v`` reads it (the largest of the process and the processes it waited for: ``os.wait4``), beside
``python -c "import numpy"`` measured the same way in the same run (the reference). A watchdog
polls the resident memory of the whole process tree and kills the run above ``--kill-above`` GB
(the machine is shared: a run that would take more is stopped, and the row says when and at how
much). Target (exit status 1 if one fails): every run below ``--target`` GB (default 2).

    PYTHONPATH=. python benchmarks/memory.py                        # every experiment that runs here
    PYTHONPATH=. python benchmarks/memory.py reacher --set expert=agent --set active=true --markdown
    PYTHONPATH=. python benchmarks/memory.py tables active --quick --kill-above 6

``mice`` needs its data (``--mice-data PATH``); experiments whose optional extra is missing
(MuJoCo for ``reacher``) are listed as skipped, with the reason.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from _table import render  # the script's folder is on sys.path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

NEEDS = {"reacher": ("mujoco", "gymnasium"), "office": ("gymnasium",), "deep-rl": ("stable_baselines3", "torch")}


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def _tree_rss(pid: int) -> float:
    """Resident GB of ``pid`` and its descendants (0 when it is gone)."""
    import psutil

    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0.0
    total = 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total / 2**30


def measure(cmd: list[str], kill_above: float, log=None) -> dict:
    """Run ``cmd``; its peak resident memory (GB, the largest process), wall seconds, exit
    status, and when and at how much the watchdog killed it (if it did)."""
    t0 = time.perf_counter()
    out = open(log, "w") if log else subprocess.DEVNULL
    proc = subprocess.Popen(cmd, cwd=ROOT, env=_env(), stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    killed, tree_peak = None, 0.0
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        tree = _tree_rss(proc.pid)
        tree_peak = max(tree_peak, tree)
        if tree > kill_above and killed is None:
            killed = (time.perf_counter() - t0, tree)
            os.killpg(proc.pid, signal.SIGKILL)
        time.sleep(0.25)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return {
        "peak_gb": usage.ru_maxrss / 2**20,  # KiB on Linux
        "tree_gb": tree_peak,
        "seconds": time.perf_counter() - t0,
        "status": proc.returncode,
        "killed": killed,
    }


def main(argv=None) -> int:
    from rmtk.experiments import EXPERIMENTS

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help="experiments (default: all)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="passed to every run")
    ap.add_argument("--quick", action="store_true", help="the --quick runs")
    ap.add_argument("--mice-data", metavar="PATH", help="the mice experiment's data (else it is skipped)")
    ap.add_argument("--target", type=float, default=2.0, help="GB every run must stay below")
    ap.add_argument("--kill-above", type=float, default=6.0, help="GB of the process tree at which a run is killed")
    ap.add_argument("--max-memory", type=float, help="passed as --max-memory (a run above the estimate's limit)")
    ap.add_argument("--logs", metavar="DIR", help="keep each run's output in DIR/NAME.log")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args(argv)
    names = args.names or list(EXPERIMENTS)
    rows, failed = [], False
    ref = measure([sys.executable, "-c", "import numpy"], args.kill_above)
    for name in names:
        missing = [m for m in NEEDS.get(name, ()) if importlib.util.find_spec(m) is None]
        if name == "mice" and not args.mice_data:
            missing = ["--mice-data PATH"]
        settings = " ".join(f"--set {s}" for s in args.set)
        row = {"experiment": name, "settings": settings or "defaults"}
        if missing:
            rows.append({**row, "peak RSS GB": "skipped", "wall s": "", "status": f"needs {', '.join(missing)}"})
            continue
        cmd = [sys.executable, "-m", "rmtk", "reproduce", name, "--no-figures"]
        cmd += ["--quick"] * args.quick + [x for s in args.set for x in ("--set", s)]
        cmd += ["--data", args.mice_data] if name == "mice" else []
        cmd += ["--max-memory", str(args.max_memory)] if args.max_memory else []
        print(f"memory: {' '.join(cmd[1:])}", file=sys.stderr, flush=True)
        m = measure(cmd, args.kill_above, Path(args.logs) / f"{name}.log" if args.logs else None)
        if m["killed"]:
            status = f"killed at {m['killed'][0]:.0f} s: tree {m['killed'][1]:.2f} GB > {args.kill_above:g} GB"
        else:
            status = "ok" if m["status"] == 0 else f"exit {m['status']}"
        over = m["peak_gb"] >= args.target or m["killed"] or m["status"] != 0
        failed |= bool(over)
        rows.append(
            {
                **row,
                "peak RSS GB": f"{m['peak_gb']:.2f}",
                "wall s": f"{m['seconds']:.0f}",
                "status": status + (f"; above {args.target:g} GB" if m["peak_gb"] >= args.target else ""),
            }
        )
    rows.append(
        {
            "experiment": "reference: python -c 'import numpy'",
            "settings": "",
            "peak RSS GB": f"{ref['peak_gb']:.3f}",
            "wall s": f"{ref['seconds']:.1f}",
            "status": "same run",
        }
    )
    print(render(rows, args.markdown, left=frozenset({"experiment", "settings", "status"})))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
