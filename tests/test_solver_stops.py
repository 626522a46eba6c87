"""A stop inside one solver call (rmtk/sat/terminator.py): a limited call of a million-clause
formula can take seconds between two slices' checks, and python-sat's CaDiCaL holds the
interpreter's lock throughout, so neither a Python signal handler nor another thread ran until
it returned. The deadlines here expire after a number of looks, not a time, so each test asks
the same of the solver on any machine under any load."""

import os
import signal
import threading

import pytest
from test_maxsat_stops import pigeonhole

from rmtk.limits import NEVER, clear_stop, request_stop
from rmtk.sat.solver import open_solver, solve
from rmtk.sat.terminator import can_terminate, interruptible

#: The conflicts of the one slice each call is given: about a second of search on pigeonhole(9).
BUDGET = 30_000


class _Looks:
    """A deadline that expires at its ``n``-th look, and says when it was first looked at
    from inside a call (``inside``: its second look, the first being the slice's own)."""

    def __init__(self, n: int):
        self.left = n
        self.looks = 0
        self.inside = threading.Event()
        self.at = None

    def expired(self) -> bool:
        self.looks += 1
        if self.looks >= 2:
            self.inside.set()
        self.left -= 1
        return self.left < 0


@pytest.mark.parametrize("backend", ["cadical153", "cadical195", "glucose4", "minisat22"])
def test_a_deadline_that_expires_inside_one_slice_ends_it(backend):
    """One slice of BUDGET conflicts, far from enough to decide: a deadline that expires after
    it started (at its second look: CaDiCaL's terminator, or the watching thread of the other
    backends) ends it within the slice. Before, a deadline was looked at only between slices,
    and all BUDGET conflicts were spent."""
    with open_solver(backend, pigeonhole(9)) as solver:
        assert solve(solver, _Looks(1), conflicts=BUDGET, first=BUDGET) is None
        spent = solver.accum_stats()["conflicts"]
    assert spent < BUDGET / 2, spent


def test_the_solver_course_does_not_depend_on_the_stopper():
    """A stopper that never fires leaves CaDiCaL's course as it was: the same conflicts,
    decisions and propagations as a bare call (a stop only stops)."""
    stats = []
    for sliced in (False, True):
        with open_solver("cadical153", pigeonhole(8)) as solver:
            solver.conf_budget(5_000)
            if sliced:
                assert solve(solver, NEVER, conflicts=5_000, first=5_000) is None
            else:
                assert solver.solve_limited() is None
            stats.append(solver.accum_stats())
    assert stats[0] == stats[1]


def test_sigint_inside_one_cadical_call_is_handled_within_it():
    """SIGINT sent while CaDiCaL runs one long slice: its handler runs at the solver's next
    look (it requests the stop, as the command's does), and the call returns then, not when its
    BUDGET conflicts are spent (before, the handler ran only once the call returned)."""
    solver_looks = _Looks(10**9)

    def handler(signum, frame):
        request_stop("interrupted")

    def send():
        solver_looks.inside.wait(60)
        os.kill(os.getpid(), signal.SIGINT)

    clear_stop()
    previous = signal.signal(signal.SIGINT, handler)
    sender = threading.Thread(target=send)
    try:
        with open_solver("cadical153", pigeonhole(9)) as solver:
            assert can_terminate(solver) and not interruptible(solver)
            sender.start()
            result = solve(solver, _Either(solver_looks), conflicts=BUDGET, first=BUDGET)
            spent = solver.accum_stats()["conflicts"]
    finally:
        sender.join()
        signal.signal(signal.SIGINT, previous)
        clear_stop()
    assert result is None and spent < BUDGET / 2, spent


class _Either:
    """``looks``, or a stop requested."""

    def __init__(self, looks):
        self.looks = looks
        self.at = None

    def expired(self) -> bool:
        from rmtk.limits import stop_requested

        return self.looks.expired() or stop_requested() is not None
