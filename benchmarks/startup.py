"""Start-up benchmark of the command line: the process time of
``python -m rmtk learn models/patrol.rm -q`` (what the ``rmtk`` command runs: one import of
:mod:`rmtk.cli.main`, then ``main``; ``-m rmtk.cli.main`` would run that module twice) beside
that of ``python -c "import numpy"`` (what any numpy program pays before doing anything), the
median of ``--repeat`` runs each, measured alternately in the same run so that both see the
same machine load, in wall seconds and in CPU seconds (the child's user and system time: on a
shared machine the figure that does not count the waiting); the ratio of the CPU medians; and
a check that ``import rmtk`` imports no scipy (the learn path of a small model needs none).

    PYTHONPATH=. python benchmarks/startup.py [--repeat 5] [--target 0.35] [--ratio 2] [--markdown]

The checkout this script belongs to is the one imported (it runs from the repository root
with the root on PYTHONPATH). Exit status 1 if ``import rmtk`` imports scipy, the learn
median exceeds ``--target`` wall seconds, or the CPU ratio exceeds ``--ratio``.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _table import render  # the script's folder is on sys.path

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = {
    "rmtk learn models/patrol.rm -q": [sys.executable, "-m", "rmtk", "learn", "models/patrol.rm", "-q"],
    "python -c 'import numpy'": [sys.executable, "-c", "import numpy"],
}
SCIPY_PROBE = "import rmtk, sys; print('scipy' in sys.modules)"


def _env() -> dict:
    # as a user's shell has it: bytecode cached (a PYTHONDONTWRITEBYTECODE=1 environment would
    # recompile every module of every run, some 0.1 s here, and time the compiler, not rmtk)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def children_cpu() -> float:
    """CPU seconds of this process's waited-for children."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_seconds(cmd: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one process (output discarded; a failure is an error)."""
    t, c = time.perf_counter(), children_cpu()
    subprocess.run(cmd, cwd=ROOT, env=_env(), stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t, children_cpu() - c


def imports_scipy() -> bool:
    out = subprocess.run(
        [sys.executable, "-c", SCIPY_PROBE], cwd=ROOT, env=_env(), capture_output=True, text=True, check=True
    )
    return out.stdout.strip() == "True"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5, help="runs of each command (the median is kept)")
    ap.add_argument("--target", type=float, default=0.35, help="seconds allowed for the learn command")
    ap.add_argument("--ratio", type=float, default=2.0, help="CPU allowed for the learn command, in numpy imports")
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = ap.parse_args(argv)
    for cmd in COMMANDS.values():  # warm the file cache
        run_seconds(cmd)
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    cpus: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(args.repeat):
        for name, cmd in COMMANDS.items():
            wall, cpu = run_seconds(cmd)
            times[name].append(wall)
            cpus[name].append(cpu)
    rows = []
    for name, ts in times.items():
        learn = name.startswith("rmtk")
        med = statistics.median(ts)
        rows.append(
            {
                "command": name,
                "median_s": f"{med:.3f}",
                "min_s": f"{min(ts):.3f}",
                "max_s": f"{max(ts):.3f}",
                "median_cpu_s": f"{statistics.median(cpus[name]):.3f}",
                "cpu_range_s": f"{min(cpus[name]):.3f}–{max(cpus[name]):.3f}",
                "target": (f"<={args.target:g}s {'PASS' if med <= args.target else 'FAIL'}" if learn else "-"),
            }
        )
    scipy = imports_scipy()
    learn, numpy = (statistics.median(cpus[name]) for name in COMMANDS)
    print(f"# start-up, median of {args.repeat} process runs each (alternating); python {sys.version.split()[0]}")
    print(render(rows, args.markdown, frozenset({"command", "target"})))
    print(f"# learn / numpy import, CPU medians: {learn / numpy:.2f} (target <= {args.ratio:g})")
    print(f"# import rmtk imports scipy: {'yes (FAIL)' if scipy else 'no'}")
    learn_median = statistics.median(times[next(iter(COMMANDS))])
    return 1 if scipy or learn_median > args.target or learn / numpy > args.ratio else 0


if __name__ == "__main__":
    sys.exit(main())
