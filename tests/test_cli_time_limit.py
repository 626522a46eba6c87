"""``--time-limit`` bounds every way of learning (rmtk/cli/args.py gives it to each learner):
runs that take minutes without it return soon after the limit, with what they found flagged,
by the learner's own deadline (the command's safety net, 5 s later, is not what stops them)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from rmtk.cli.main import main

MODELS = Path(__file__).resolve().parents[1] / "models"
OFFICE = str(MODELS / "office.rm")
LIMIT = 1.5
#: CPU seconds a learner may take past its limit: the steps after it (verdicts of what was
#: found, the report). CPU time, not wall time, so that a loaded machine (which stretches the
#: wall time of the same work) cannot fail the test; a run that ignored its limit would spend
#: minutes of CPU. The command's safety net would ask for a stop 5 s past the limit, which the
#: report would show ("# stopped:").
AFTER = 5.0

LONG = {  # each runs for minutes (or a long while) without a limit
    "exact": [str(MODELS / "stack.rm"), "--nodes", "6", "--no-rewards"],
    "labels": [str(MODELS / "craft.rm"), "t10", "--learn-labels"],
    "active": [OFFICE, "patrol", "--active"],
    "labels-active": [OFFICE, "patrol", "--learn-labels", "--active"],
    "demos": [
        str(MODELS / "stack_avoid.rm"),
        "--demos",
        "{demos}",
        "--nodes",
        "6",
        "--max-solutions",
        "100000",
        "--no-rewards",
    ],
}


@pytest.fixture(scope="module")
def demos(tmp_path_factory):
    path = tmp_path_factory.mktemp("limit") / "d.npz"
    argv = ["simulate", str(MODELS / "stack_avoid.rm"), "-n", "100000", "-T", "20", "--seed", "1", "-o", str(path)]
    assert main([*argv, "-q"]) == 0
    return path


@pytest.mark.parametrize("mode", sorted(LONG))
def test_the_time_limit_bounds_every_mode(mode, demos, capsys):
    argv = [w.format(demos=demos) for w in LONG[mode]]
    t0 = time.process_time()
    status = main(["learn", *argv, "--time-limit", str(LIMIT), "-q"])
    took = time.process_time() - t0
    out, err = capsys.readouterr()
    assert took < LIMIT + AFTER, f"{mode}: {took:.1f} CPU s"
    assert "# stopped:" not in out  # the learner stopped itself, not the command's safety net
    assert "time limit" in out, out[-3000:]  # what was not finished is flagged
    assert status in (0, 1) and "Traceback" not in err


class _Clock:
    """rmtk.limits' clock, moved on by ``jump`` seconds when asked: a time limit that passes at
    a chosen step of the work, on any machine."""

    def __init__(self):
        self.offset = 0.0

    def monotonic(self) -> float:
        return time.monotonic() + self.offset


def test_the_time_limit_passing_in_rc2s_atmost1_pass_stops_the_run(tmp_path, monkeypatch, capsys):
    """``--noisy`` from reward traces: RC2's ``adapt`` pass propagates every selector of a
    level before its first oracle call (rmtk/sat/solver.py ``_Checked``); at 10^6 noisy steps
    that pass ran seconds past a limit, and the command's safety net ended the run. Here the
    limit passes at the pass's first propagation: the run stops there, by the learner's own
    deadline, flagged (it used to propagate every other selector first)."""
    import pysat.solvers

    data = tmp_path / "noisy.npz"
    argv = ["simulate", OFFICE, "coffee", "-n", "200", "-T", "30", "--seed", "0", "--policy", "uniform", "--rewards"]
    assert main([*argv, "--reward-noise", "replace:0.05", "-o", str(data), "-q"]) == 0
    clock = _Clock()
    monkeypatch.setattr("rmtk.limits.time", clock)
    after: list[int] = []
    propagate = pysat.solvers.Solver.propagate

    def passing(self, *args, **kwargs):
        if clock.offset:
            after.append(1)  # a propagation once the limit has passed
        clock.offset = 3600.0  # the limit passes during the first one
        return propagate(self, *args, **kwargs)

    monkeypatch.setattr(pysat.solvers.Solver, "propagate", passing)
    learn = ["learn", OFFICE, "coffee", "--demos", str(data), "--from", "rewards", "--noisy", "--time-limit", "600"]
    status = main([*learn, "-q"])
    out, err = capsys.readouterr()
    assert clock.offset, "the search reached RC2's adapt pass"
    assert "# stopped:" not in out  # the learner stopped itself, not the command's safety net
    assert "time limit reached while optimising at 3 nodes" in out, out[-3000:]
    assert status in (0, 1) and "Traceback" not in err
    assert not after, f"{len(after)} propagations after the time limit passed"
