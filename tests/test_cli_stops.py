"""How ``rmtk`` stops (rmtk/cli/stopping.py), in this process with a short grace: the first
signal asks for a stop and the partial answer is printed, flagged; a second, or a step that
does not give way within the grace, ends the command at once with one line; a signal is never
raised inside python-sat's code or a ``__del__``; ``--time-limit`` has a safety net; the
handlers are restored and the stop forgotten afterwards."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from rmtk.cli import stopping
from rmtk.cli.main import main
from rmtk.learner.pipeline import Learner
from rmtk.limits import NEVER, clear_stop, stop_requested
from rmtk.sat.solver import open_solver

PATROL = str(Path(__file__).resolve().parents[1] / "models" / "patrol.rm")
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


@pytest.fixture(autouse=True)
def short_grace(monkeypatch):
    monkeypatch.setattr(stopping, "GRACE_SECONDS", 0.4)


STARTED = threading.Event()
REAL_FIT = Learner.fit


def _send(sig, *after: float):
    """Send ``sig`` to this process ``after`` seconds (each) after the learner started."""

    def send():
        assert STARTED.wait(60)
        t0 = time.monotonic()
        for t in after:
            time.sleep(max(0.0, t - (time.monotonic() - t0)))
            os.kill(os.getpid(), sig)

    threading.Thread(target=send, daemon=True).start()


def _waiting_fit(monkeypatch, *, gives_way: bool):
    """Learner.fit that first waits (up to 20 s): for a stop request and then learns what it can
    (as a phase that checks the deadline), or ignoring it (as one that does not)."""
    STARTED.clear()

    def fit(self, target):
        STARTED.set()
        t0 = time.monotonic()
        while time.monotonic() - t0 < 20:
            if gives_way and NEVER.expired():
                break
            time.sleep(0.01)
        return REAL_FIT(self, target)

    monkeypatch.setattr(Learner, "fit", fit)


@pytest.mark.parametrize(
    ("sig", "status", "word"), [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")]
)
def test_the_first_signal_prints_the_partial_answer_flagged(monkeypatch, capsys, tmp_path, sig, status, word):
    _waiting_fit(monkeypatch, gives_way=True)
    monkeypatch.setattr(stopping, "GRACE_SECONDS", 20.0)  # the learner's own steps after the stop take their time
    before = signal.getsignal(sig)
    _send(sig, 0.3)
    dot = tmp_path / "m.dot"
    assert main(["learn", PATROL, "-q", "--dot", str(dot)]) == status
    out, err = capsys.readouterr()
    assert out.startswith(f"# stopped: {word} (")
    assert "# learned from task patrol" in out and f"stopped ({word})" in out  # the learner stopped, and says so
    assert err.splitlines()[-1] == f"rmtk: {word}" and "Traceback" not in err
    assert f"{dot} not written" in err and list(tmp_path.iterdir()) == []  # no file of a stopped run
    assert signal.getsignal(sig) is before and stop_requested() is None


def test_a_step_that_does_not_give_way_is_ended_after_the_grace(monkeypatch, capsys):
    _waiting_fit(monkeypatch, gives_way=False)
    _send(signal.SIGINT, 0.3)
    t0 = time.monotonic()
    assert main(["learn", PATROL, "-q"]) == 130
    took = time.monotonic() - t0
    assert 0.7 <= took < 4  # the signal 0.3 s after the start, the grace of 0.4 s
    out, err = capsys.readouterr()
    assert out == "" and err == "rmtk: interrupted\n"


def test_a_second_signal_ends_at_once(monkeypatch, capsys):
    _waiting_fit(monkeypatch, gives_way=False)
    monkeypatch.setattr(stopping, "GRACE_SECONDS", 30.0)
    _send(signal.SIGINT, 0.3, 0.32)  # pressed twice, 20 ms apart
    t0 = time.monotonic()
    assert main(["learn", PATROL, "-q"]) == 130
    assert time.monotonic() - t0 < 3
    assert capsys.readouterr().err == "rmtk: interrupted\n"


def test_the_time_limit_has_a_safety_net(monkeypatch, capsys):
    """A step that ignores the time limit: the command asks for a stop a grace after it, and
    ends the run a grace later (here: 0.5 + 0.4 + 0.4 s)."""
    _waiting_fit(monkeypatch, gives_way=False)
    t0 = time.monotonic()
    assert main(["learn", PATROL, "-q", "--time-limit", "0.5"]) == 1
    assert 1.3 <= time.monotonic() - t0 < 5
    out, err = capsys.readouterr()
    assert out == "" and "past its time limit" in err and err.count("\n") == 1
    _waiting_fit(monkeypatch, gives_way=True)  # a step that gives way to the stop: the answer, flagged
    monkeypatch.setattr(stopping, "GRACE_SECONDS", 2.0)
    assert main(["learn", PATROL, "-q", "--time-limit", "0.5"]) == 1  # no machine was found in time
    out = capsys.readouterr().out
    assert out.startswith("# stopped: time limit (--time-limit)") and "# no solution" in out


def test_no_exception_is_raised_inside_python_sat_or_a_destructor():
    """python-sat clears a solver's C pointer after the C call that frees it returns: an
    exception between the two left a dangling pointer, freed again at exit (a segmentation
    fault). The handler sees where the main thread is and tries again a moment later."""
    frames = []

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_name == "delete" and not frames:
            frames.append(frame)

    solver = open_solver(clauses=[[1, 2], [-1]])
    sys.setprofile(profile)
    try:
        solver.delete()
    finally:
        sys.setprofile(None)
    assert frames and stopping.uncuttable(frames[0])
    assert not stopping.uncuttable(sys._getframe())

    class Owner:
        def __del__(self):
            frames.append(sys._getframe())

    Owner()
    assert stopping.uncuttable(frames[-1])

    stops = stopping.Stops()
    assert stops.end("interrupted", frames[0], signal.SIGINT) is None  # inside: the signal comes again later
    assert not stops.ending
    with pytest.raises(KeyboardInterrupt):  # outside: raised
        stops.end("interrupted", sys._getframe(), signal.SIGINT)
    assert stops.ending


def test_signals_are_ignored_once_the_command_is_ending():
    stops = stopping.Stops()
    stops.soft = True
    stops.on_signal(signal.SIGTERM, sys._getframe())  # the first: a stop request
    assert stop_requested() == "terminated"
    stops.close()
    stops.on_signal(signal.SIGTERM, sys._getframe())  # no exception from the clean-up
    clear_stop()


def test_a_signal_outside_the_work_ends_at_once():
    """Outside a run that can print a partial answer (checking the flags, writing files), the
    first signal ends the command, as before."""
    stops = stopping.Stops()
    with pytest.raises(stopping.Terminated):
        stops.on_signal(signal.SIGTERM, sys._getframe())
    assert stop_requested() is None
