"""A run stopped by SIGINT (Ctrl-C) or SIGTERM prints what it has, flagged, and exits with 130 /
143 within a few seconds (rmtk/cli/stopping.py; a long SAT search gives way within about a
second: rmtk/sat/solver.py), with no traceback; Ctrl-C pressed twice ends it at once, cleanly.
Real runs of the command (the Craft World's t10, the Office World's patrol); benchmarks/interrupts.py repeats them
at random moments under load."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"
# runs of minutes: learning the Craft World t10's labels with nothing known, and learning the
# Office World patrol's labels by asking its expert (the active loop on state histories)
RUNS = {
    "labels": (
        ["learn", str(MODELS / "craft.rm"), "t10", "--learn-labels"],
        "any labeling",
        "# labels learned from task t10",
    ),
    "active": (
        ["learn", str(MODELS / "office.rm"), "patrol", "--learn-labels", "--active"],
        "round 4:",
        "# active learning on state histories",
    ),
}
RUN = (
    "import runpy, signal, sys\n"
    "signal.signal(signal.SIGINT, signal.default_int_handler)\n"  # as in a terminal
    "sys.argv = ['rmtk'] + sys.argv[1:]\n"
    "runpy.run_module('rmtk', run_name='__main__')\n"
)


def _started(argv: list[str], marker: str) -> tuple[subprocess.Popen, str]:
    """A run of the command, once ``marker`` appeared among its progress lines (stderr)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONFAULTHANDLER="1")
    proc = subprocess.Popen([sys.executable, "-c", RUN, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    seen = b""
    sel = selectors.DefaultSelector()
    sel.register(proc.stderr, selectors.EVENT_READ)
    deadline = time.monotonic() + 90
    while marker.encode() not in seen:
        assert time.monotonic() < deadline and proc.poll() is None, seen.decode()[-2000:]
        if sel.select(timeout=1):
            seen += os.read(proc.stderr.fileno(), 65536)
    sel.close()
    return proc, seen.decode()


def _finish(proc: subprocess.Popen, bound: float) -> tuple[str, str, float]:
    t0 = time.monotonic()
    try:
        out, err = proc.communicate(timeout=bound)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError(f"still running {bound} s after the signal") from None
    return out.decode(), err.decode(), time.monotonic() - t0


@pytest.mark.parametrize("run", sorted(RUNS))
@pytest.mark.parametrize(
    ("sig", "status", "message"), [(signal.SIGTERM, 143, "terminated"), (signal.SIGINT, 130, "interrupted")]
)
def test_a_stopped_run_prints_what_it_has(run, sig, status, message):
    argv, marker, header = RUNS[run]
    proc, seen = _started(argv, marker)
    proc.send_signal(sig)
    out, err, took = _finish(proc, 6)
    assert proc.returncode == status, err[-2000:]
    assert took < 6
    lines = out.splitlines()
    assert lines[0].startswith(f"# stopped: {message} (") and any(line.startswith(header) for line in lines), out
    assert err.strip().splitlines()[-1] == f"rmtk: {message}"
    assert "Traceback" not in seen + err and "Exception ignored" not in err


def test_ctrl_c_pressed_twice_ends_at_once_and_cleanly():
    argv, marker, _ = RUNS["labels"]
    proc, seen = _started(argv, marker)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    out, err, took = _finish(proc, 6)
    assert proc.returncode == 130 and took < 6, err[-2000:]
    assert err.strip().splitlines()[-1] == "rmtk: interrupted"
    for bad in ("Traceback", "Exception ignored", "Fatal Python error"):
        assert bad not in seen + err
