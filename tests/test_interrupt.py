"""A long SAT search gives way to Ctrl-C and SIGTERM within about a second (rmtk/sat/search.py:
a solve runs in slices of conflicts, with pysat's SIGINT handler off): the command ends
with its one-line message and exit status, not after the search, and never deadlocks (pysat's
own SIGINT handler, put around solver calls on the main thread, can jump out of CaDiCaL's
memory allocator and leave the process stuck)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# learning the Craft World t10's labels with nothing known runs for minutes (the Office World
# patrol's, which did, now takes seconds)
LONG = ["learn", str(ROOT / "models" / "craft.rm"), "t10", "--learn-labels"]
RUN = (
    "import runpy, signal, sys\n"
    "signal.signal(signal.SIGINT, signal.default_int_handler)\n"  # as in a terminal
    "sys.argv = ['rmtk'] + sys.argv[1:]\n"
    "runpy.run_module('rmtk', run_name='__main__')\n"
)


@pytest.mark.parametrize(
    ("sig", "status", "message"), [(signal.SIGTERM, 143, "terminated"), (signal.SIGINT, 130, "interrupted")]
)
def test_a_long_search_ends_soon_after_a_signal(sig, status, message):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(
        [sys.executable, "-c", RUN, *LONG], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    time.sleep(8)  # well into the search
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(sig)
    t0 = time.monotonic()
    try:
        _, err = proc.communicate(timeout=6)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError(f"still running 6 s after {sig.name}") from None
    assert time.monotonic() - t0 < 6
    assert proc.returncode == status, err[-2000:]
    assert err.strip().splitlines()[-1] == f"rmtk: {message}"
