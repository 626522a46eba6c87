"""The same seed, the same run (docs/design/determinism.md): no decision that changes what a
run asks or returns reads the clock. The solver's slices are sized by its own work
(rmtk/sat/solver.py), so a clock that jumps wildly leaves the models, the questions and the
printed log as they are; only the printed timings change."""

from __future__ import annotations

import re
import sys
import time
import types
from pathlib import Path

import numpy as np
import pytest

from rmtk.cli.main import main
from rmtk.limits import NEVER
from rmtk.sat.solver import FIRST_SLICE, MAX_SLICE, SLICE_PROPAGATIONS, next_slice, open_solver, solve

MODELS = Path(__file__).resolve().parents[1] / "models"


class WildClock:
    """A clock that jumps forward by up to an hour at each reading (seeded)."""

    def __init__(self, seed: int):
        self.rng, self.now = np.random.default_rng(seed), 1000.0

    def __call__(self) -> float:
        self.now += float(self.rng.exponential(600.0))
        return self.now


def _wild(monkeypatch, seed: int) -> None:
    """Every clock rmtk's own modules read jumps wildly. Only theirs: the ``time`` module itself
    stays real, because other threads of the test session read it too (the event loops of the
    session's Dask cluster would schedule their timers hours ahead and never wake again)."""
    clock = WildClock(seed)
    wild = types.SimpleNamespace(**{name: getattr(time, name) for name in dir(time) if not name.startswith("_")})
    for name in ("monotonic", "perf_counter", "time", "process_time"):
        setattr(wild, name, clock)
    for name, module in list(sys.modules.items()):
        if (name == "rmtk" or name.startswith("rmtk.")) and getattr(module, "time", None) is time:
            monkeypatch.setattr(module, "time", wild)


def _random_3sat(n: int = 160, ratio: float = 4.2, seed: int = 12) -> list[list[int]]:
    """A satisfiable random 3-SAT formula that takes CaDiCaL some thousands of conflicts."""
    rng = np.random.default_rng(seed)
    m = int(n * ratio)
    variables = np.array([rng.choice(n, 3, replace=False) + 1 for _ in range(m)])
    return (variables * rng.choice([-1, 1], size=(m, 3))).tolist()


def _solved(clauses):
    with open_solver(clauses=clauses) as solver:
        ok = solve(solver, NEVER)
        return ok, solver.get_model(), solver.accum_stats()["conflicts"]


def test_a_solver_call_ends_the_same_whatever_the_clock(monkeypatch):
    clauses = _random_3sat()
    calm = _solved(clauses)
    assert calm[0] is True and calm[2] > 3 * FIRST_SLICE  # several slices: where they end matters
    for seed in (1, 2):
        with monkeypatch.context() as m:
            _wild(m, seed)
            assert _solved(clauses) == calm  # the same model after the same number of conflicts


def test_slices_follow_the_solver_work_only():
    assert next_slice(1000, 0) == 2000  # light: doubled
    assert next_slice(MAX_SLICE, 0) == MAX_SLICE
    assert next_slice(8000, 3 * SLICE_PROPAGATIONS) == 4000  # heavy: halved, not under the first slice
    assert next_slice(FIRST_SLICE, 3 * SLICE_PROPAGATIONS) == FIRST_SLICE
    assert next_slice(100, 3 * SLICE_PROPAGATIONS, first=100) == 100
    assert next_slice(8000, SLICE_PROPAGATIONS) == 8000


TIMING = [
    (re.compile(r", [0-9.]+ s$"), ""),  # a round's seconds
    (re.compile(r"\([0-9.]+ s\)"), "(s)"),
    (re.compile(r" in [0-9.]+ s"), " in s"),
    (re.compile(r"\([0-9,.]+/s\)"), ""),  # a progress rate
]


def _log(text: str) -> list[str]:
    """The lines of a run's output without the seconds they print."""
    out = []
    for line in text.splitlines():
        if line.startswith("# timings (s)"):
            continue
        for pattern, by in TIMING:
            line = pattern.sub(by, line)
        out.append(line)
    return out


@pytest.mark.parametrize(
    "args",
    [
        ["patrol.rm", "--active"],
        ["patrol.rm", "--active", "--expert", "simulated", "--seed", "3", "--budget-queries", "300"],
    ],
)
def test_the_same_command_prints_the_same_log_whatever_the_clock(monkeypatch, capsys, args):
    argv = ["learn", str(MODELS / args[0]), *args[1:]]
    assert main(argv) == 0
    calm = capsys.readouterr()
    with monkeypatch.context() as m:
        _wild(m, 7)
        assert main(argv) == 0
        wild = capsys.readouterr()
    assert "round 1:" in calm.out and _log(wild.out) == _log(calm.out)
    assert _log(wild.err) == _log(calm.err)
