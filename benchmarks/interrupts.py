"""Stress test of stopped runs: ``rmtk learn`` learning the labels of the Office World's
patrol by asking (``--learn-labels --active``) and of the Craft World's t10
(``--learn-labels``), on ``stack_avoid`` with ``--demos`` (300,000 trajectories,
up to 100,000 machines of 6 nodes listed), and on the Office World's coffee from 2,000 uniform
walks of 100 steps with noisy rewards (``--from rewards --noisy``: weighted MaxSAT, whose
single oracle calls last minutes), each stopped ``--repeat`` times by SIGINT and by SIGTERM at
a random moment (seeded) once it is in its work (a progress line shows it), under an optional
load of busy processes, once or with a second signal ``--double`` seconds later (Ctrl-C
pressed twice).

Every run must end with exit status 130 (SIGINT) or 143 (SIGTERM) — never a signal's own exit
(a segmentation fault is -11) — within ``--bound`` seconds of the last signal, with ``rmtk:
interrupted`` / ``rmtk: terminated`` as the last line on stderr and no traceback (nor an
"Exception ignored" report) there, and its ``--dot`` file absent with no temporary file left
beside it. A run stopped by a single signal must print its partial answer on stdout, flagged
(``# stopped: ...``); a run that has no answer yet when the stop comes is counted apart.

    PYTHONPATH=. python benchmarks/interrupts.py                     # 10 runs per (case, signal)
    PYTHONPATH=. python benchmarks/interrupts.py --load 2 --double 0.02
    PYTHONPATH=. python benchmarks/interrupts.py --cases labels --repeat 30 --markdown

    PYTHONPATH=. python benchmarks/interrupts.py --checkout ../main   # another checkout's rmtk

Exit status 1 if a run fails a check (its stderr is printed).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import resource
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _table import render  # the script's folder is on sys.path

ROOT = Path(__file__).resolve().parent.parent
CHECKOUT = ROOT  # the rmtk run (--checkout: another one, e.g. the main branch, as a reference)
# as in a terminal: SIGINT raises KeyboardInterrupt until rmtk installs its own handler
RUN = (
    "import runpy, signal, sys\n"
    "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
    "sys.argv = ['rmtk'] + sys.argv[1:]\n"
    "import rmtk.limits as L\n"
    "_after = L.Deadline.after.__func__\n"
    "def _announced(cls, seconds):\n"  # the instant of each time limit, for --time-limit runs
    "    d = _after(cls, seconds)\n"
    "    if d.at is not None:\n"
    "        sys.stderr.write(f'rmtk-bench-deadline {d.at!r}\\n'); sys.stderr.flush()\n"
    "    return d\n"
    "L.Deadline.after = classmethod(_announced)\n"
    "runpy.run_module('rmtk', run_name='__main__')\n"
)
#: The runs, and a progress line (stderr) that shows each is in its work: the signal comes a
#: random time after it.
CASES = {
    "active": (["learn", "models/office.rm", "patrol", "--learn-labels", "--active"], "round 1:"),
    "labels": (["learn", "models/craft.rm", "t10", "--learn-labels"], "any labeling"),
    "demos": (
        ["learn", "models/stack_avoid.rm", "--demos", "{demos}", "--nodes", "6", "--max-solutions", "100000"]
        + ["--no-rewards"],
        "solutions enumerated",
    ),
    # a weighted MaxSAT search whose single oracle calls last minutes (docs/benchmarks/rewards.md)
    "noisy": (["learn", "models/office.rm", "coffee", "--demos", "{noisy}", "--from", "rewards", "--noisy"], "words"),
    # the same at 10^6 steps: a second of encoding, a second of RC2's set-up, slices of seconds
    "noisy6": (["learn", "models/office.rm", "coffee", "--demos", "{noisy6}", "--from", "rewards", "--noisy"], "words"),
    # the exact search (SAT) listing every machine of 6 nodes of the stack task: minutes
    "exact": (["learn", "models/stack.rm", "--nodes", "6", "--no-rewards"], "nodes: satisfiable"),
}
#: The data of the cases: file name, and the ``rmtk simulate`` arguments that write it.
DATA = {
    "demos": ("stack_avoid.npz", ["models/stack_avoid.rm", "-n", "300000", "-T", "20", "--seed", "1"]),
    "noisy": (
        "coffee_noisy.npz",
        ["models/office.rm", "coffee", "-n", "2000", "-T", "100", "--seed", "0", "--policy", "uniform", "--rewards"]
        + ["--reward-noise", "replace:0.05"],
    ),
    "noisy6": (
        "coffee_noisy6.npz",
        ["models/office.rm", "coffee", "-n", "10000", "-T", "100", "--seed", "0", "--policy", "uniform", "--rewards"]
        + ["--reward-noise", "replace:0.05"],
    ),
}
SIGNALS = {"SIGINT": (signal.SIGINT, 130, "interrupted"), "SIGTERM": (signal.SIGTERM, 143, "terminated")}


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(CHECKOUT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env["PYTHONFAULTHANDLER"] = "1"  # a crash prints the Python stacks
    return env


def burners(n: int) -> list[subprocess.Popen]:
    """``n`` busy processes (the load)."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def _start(args: list[str]) -> subprocess.Popen:
    """The learner run with ``args``, its output piped."""
    return subprocess.Popen(
        [sys.executable, "-c", RUN, *args], cwd=CHECKOUT, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def _read_until(proc: subprocess.Popen, marker: str) -> bytes:
    """``proc``'s stderr up to the first chunk holding ``marker`` (or its exit)."""
    seen = b""
    sel = selectors.DefaultSelector()
    sel.register(proc.stderr, selectors.EVENT_READ)
    while marker.encode() not in seen and proc.poll() is None:
        if sel.select(timeout=1):
            seen += os.read(proc.stderr.fileno(), 65536)
    sel.close()
    return seen


def limited_run(argv: list[str], limit: float, out: Path, dot: bool = True) -> dict:
    """One run with ``--time-limit limit``: what it printed, the seconds from its time limit
    (the instant the learner's deadline fell, which the run announces) to its exit, and the
    CPU seconds it spent in that time (its CPU read from /proc at the limit, and its total when
    reaped). ``dot``: with ``--dot`` (a run stopped by its limit writes one file per machine
    found, whole)."""
    files = ["--dot", str(out / "m.dot"), "--force"] if dot else []
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = _start([*argv, *files, "--time-limit", f"{limit:g}"])
    seen = _read_until(proc, "rmtk-bench-deadline ")
    at = [float(line.split()[1]) for line in seen.decode().splitlines() if line.startswith("rmtk-bench-deadline ")]
    cpu_at = None
    if at:
        time.sleep(max(0.0, min(at) - time.monotonic()))
        cpu_at = _cpu(proc.pid)
    stdout, rest = proc.communicate()
    ended = time.monotonic()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    stderr = (seen + rest).decode()
    ats = [float(line.split()[1]) for line in stderr.splitlines() if line.startswith("rmtk-bench-deadline ")]
    left = sorted(p.name for p in out.iterdir() if p.name.startswith("."))  # machines found are written whole
    for p in out.iterdir():
        p.unlink()
    totals = re.findall(r"^# timings \(s\):.* total ([0-9.]+)", stdout.decode(), re.M)
    return dict(
        status=proc.returncode,
        seconds=ended - min(ats) if ats else float("nan"),
        learner=float(totals[-1]) - limit if totals else float("nan"),  # its own total past the limit
        cpu=total - cpu_at if cpu_at is not None else float("nan"),
        stdout=stdout.decode(),
        stderr=stderr,
        left=left,
        early="# stopped" not in stdout.decode(),
    )


def _cpu(pid: int) -> float | None:
    """CPU seconds process ``pid`` has spent so far (user + system, from /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def check_limited(run: dict) -> list[str]:
    """What is wrong with a run stopped by its time limit (nothing: an empty list)."""
    wrong = [
        f"{bad!r} on stderr" for bad in ("Traceback", "Exception ignored", "Fatal Python error") if bad in run["stderr"]
    ]
    if run["status"] not in (0, 1):
        wrong.append(f"exit status {run['status']}")
    if "time limit" not in run["stdout"] and not run["early"]:
        wrong.append("stopped, but not by the learner's time limit")
    if run["left"]:
        wrong.append(f"files left: {run['left']}")
    return wrong


def reference(repeat: int = 3) -> str:
    """The same run's reference: ``python -c "import numpy"``, wall and CPU seconds (median)."""
    walls, cpus = [], []
    for _ in range(repeat):
        t0, c0 = time.monotonic(), os.times()
        subprocess.run([sys.executable, "-c", "import numpy"], check=True)
        c1 = os.times()
        walls.append(time.monotonic() - t0)
        cpus.append(c1.children_user + c1.children_system - c0.children_user - c0.children_system)
    return f"python -c 'import numpy': {sorted(walls)[repeat // 2]:.3f} s wall, {sorted(cpus)[repeat // 2]:.3f} s CPU"


def one_run(argv: list[str], marker: str, sig: int, delay: float, double: float | None, out: Path) -> dict:
    """One run stopped ``delay`` s after ``marker`` appeared on its stderr: what it printed and
    how it ended."""
    dot = out / "m.dot"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = _start([*argv, "--dot", str(dot), "--force"])
    seen = _read_until(proc, marker)
    time.sleep(delay)
    finished_before = proc.poll() is not None
    cpu_at = _cpu(proc.pid)
    proc.send_signal(sig)
    if double is not None:
        time.sleep(double)
        if proc.poll() is None:
            proc.send_signal(sig)
    t0 = time.monotonic()
    try:
        stdout, rest = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, rest = proc.communicate()
        status = "hang"
    else:
        status = proc.returncode
    stdout, stderr = stdout.decode(), (seen + rest).decode()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    cpu = total - cpu_at if cpu_at is not None and status != "hang" else float("nan")
    if status == "hang":
        return dict(status=status, seconds=120.0, stdout=stdout, stderr=stderr, left=[], early=finished_before)
    left = sorted(p.name for p in out.iterdir())
    for p in out.iterdir():
        p.unlink()
    return dict(
        status=status,
        seconds=time.monotonic() - t0,
        cpu=cpu,
        stdout=stdout,
        stderr=stderr,
        left=left,
        early=finished_before,
    )


def check(run: dict, status: int, message: str, double: bool) -> list[str]:
    """What is wrong with a run (nothing: an empty list)."""
    wrong = []
    if run["early"]:
        return ["ended before the signal (choose a shorter --delay)"]
    if run["status"] != status:
        wrong.append(f"exit status {run['status']}, not {status}")
    lines = run["stderr"].strip().splitlines()
    if not lines or lines[-1] != f"rmtk: {message}":
        wrong.append(f"last line on stderr {lines[-1:]!r}")
    for bad in ("Traceback", "Exception ignored", "Fatal Python error"):
        if bad in run["stderr"]:
            wrong.append(f"{bad!r} on stderr")
    if run["left"]:
        wrong.append(f"files left: {run['left']}")
    return wrong


def _row(case: str, stop: str, runs: list) -> dict:
    seconds = sorted(r["seconds"] for r, _ in runs)
    row = {
        "case": case,
        "signal": stop,
        "runs": len(runs),
        "clean": sum(not w for _, w in runs),
        "partial answer printed": sum("# stopped" in r["stdout"] for r, _ in runs),
        "max s after signal": f"{seconds[-1]:.2f}",
        "median s": f"{seconds[len(seconds) // 2]:.2f}",
    }
    learner = sorted(r["learner"] for r, _ in runs if "learner" in r)
    if learner:
        row["learner's max s past the limit"] = f"{learner[-1]:.2f}"
    cpu = sorted(r["cpu"] for r, _ in runs if "cpu" in r)
    if cpu:
        row.update({"max CPU s": f"{cpu[-1]:.2f}", "median CPU s": f"{cpu[len(cpu) // 2]:.2f}"})
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", nargs="+", choices=sorted(CASES), default=list(CASES))
    ap.add_argument("--signals", nargs="+", choices=sorted(SIGNALS), default=list(SIGNALS))
    ap.add_argument("--repeat", type=int, default=10, help="runs per (case, signal)")
    ap.add_argument(
        "--delay",
        type=float,
        nargs=2,
        default=(0.0, 3.0),
        metavar=("LO", "HI"),
        help="seconds from the progress line to the signal (uniform)",
    )
    ap.add_argument("--double", type=float, help="send the signal again this many seconds later")
    ap.add_argument(
        "--time-limit",
        type=float,
        nargs=2,
        metavar=("LO", "HI"),
        help="no signal: each run has --time-limit drawn between LO and HI s (uniform); the time is "
        "from the learner's limit to the exit",
    )
    ap.add_argument("--no-dot", action="store_true", help="--time-limit runs without --dot (no file per machine)")
    ap.add_argument("--load", type=int, default=0, help="busy processes running meanwhile")
    ap.add_argument("--bound", type=float, default=8.0, help="seconds a run may take after its (last) signal")
    ap.add_argument("--seed", type=int, default=0, help="seed of the signal times")
    ap.add_argument("--checkout", type=Path, help="run the rmtk of this checkout instead (a reference)")
    ap.add_argument("--markdown", action="store_true")
    opts = ap.parse_args(argv)
    global CHECKOUT
    CHECKOUT = (opts.checkout or ROOT).resolve()
    rng = random.Random(opts.seed)
    rows, failures = [], 0
    with tempfile.TemporaryDirectory(prefix="rmtk-interrupts-") as tmp:
        files = {key: Path(tmp) / name for key, (name, _) in DATA.items()}
        for key, (_, words) in DATA.items():
            if key in opts.cases:
                subprocess.run(
                    [sys.executable, "-m", "rmtk", "simulate", *words, "-o", str(files[key]), "-q"],
                    cwd=CHECKOUT,
                    env=_env(),
                    check=True,
                )
        out = Path(tmp) / "out"
        out.mkdir()
        load = burners(opts.load)
        try:
            for case in opts.cases:
                words, marker = CASES[case]
                argv_case = [w.format(**files) for w in words]
                if opts.time_limit:
                    runs = []
                    for _ in range(opts.repeat):
                        run = limited_run(argv_case, rng.uniform(*opts.time_limit), out, not opts.no_dot)
                        wrong = check_limited(run)
                        if run["seconds"] > opts.bound:
                            wrong.append(f"{run['seconds']:.1f} s after the limit")
                        if wrong:
                            failures += 1
                            print(
                                f"FAILED {case} time limit: {'; '.join(wrong)}\n{run['stderr'][-3000:]}",
                                file=sys.stderr,
                            )
                        runs.append((run, wrong))
                    rows.append(_row(case, f"--time-limit {opts.time_limit[0]:g}-{opts.time_limit[1]:g}", runs))
                    continue
                for name in opts.signals:
                    sig, status, message = SIGNALS[name]
                    runs = []
                    for _ in range(opts.repeat):
                        run = one_run(argv_case, marker, sig, rng.uniform(*opts.delay), opts.double, out)
                        wrong = check(run, status, message, opts.double is not None)
                        if run["seconds"] > opts.bound:
                            wrong.append(f"{run['seconds']:.1f} s after the signal")
                        if wrong:
                            failures += 1
                            print(f"FAILED {case} {name}: {'; '.join(wrong)}\n{run['stderr'][-3000:]}", file=sys.stderr)
                        runs.append((run, wrong))
                    rows.append(
                        _row(case, name + (f" ×2 ({opts.double:g} s)" if opts.double is not None else ""), runs)
                    )
        finally:
            for p in load:
                p.kill()
                p.wait()
    print(render(rows, opts.markdown, frozenset({"case", "signal"})))
    print(f"reference, the same run: {reference()}")
    print(f"load: {opts.load} busy processes; cpus: {os.cpu_count()}; rmtk of {CHECKOUT}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
