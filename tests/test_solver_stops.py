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


def test_a_deadline_that_expires_during_rc2s_set_up_stops_it():
    """RC2's set-up gives the oracle every hard clause, in Python (a second at 10^6 noisy
    steps, without a look at the deadline before): one that expires at its third look, during
    the set-up of 20,000 clauses, leaves no RC2; never expiring, the same set-up is whole."""
    from pysat.formula import WCNF

    from rmtk.sat.solver import CHECK_EVERY, open_rc2

    wcnf = WCNF()
    wcnf.extend([[i, i + 1] for i in range(1, 20_001)])
    wcnf.append([-1], weight=1)
    looks = _Looks(2)
    assert open_rc2(wcnf, looks, stratified=False) is None
    assert looks.looks == 3 < 20_000 / CHECK_EVERY
    rc2 = open_rc2(wcnf, NEVER, stratified=False)
    with rc2:
        assert rc2.compute() is not None and rc2.cost == 0


def test_a_large_encoding_looks_at_the_deadline_as_it_goes():
    """Clauses are made into lists a chunk at a time, each after a look at the deadline of the
    ``checking`` block (a million observed steps took a second without one): the same clauses
    without a deadline, Expired at the first look past it."""
    import numpy as np

    from rmtk.limits import Expired, checking
    from rmtk.sat.encoding import ROWS_PER_CHECK, _rows

    arr = np.arange(6 * ROWS_PER_CHECK).reshape(-1, 2)
    assert _rows(arr) == arr.tolist()
    looks = _Looks(1)
    with pytest.raises(Expired), checking(looks):
        _rows(arr)
    assert looks.looks == 2  # the second chunk was never made


def test_the_exact_search_stopped_in_its_encoding_says_so(monkeypatch):
    """A deadline that has expired by the encoding's first look: the exact search returns from
    the encoding, no solver opened, the size undecided and the stop named, as when a solver
    call is stopped; never expiring, the same search decides the size."""
    import time

    import rmtk.sat.search as search_module
    from rmtk.limits import Deadline, SearchLimits
    from rmtk.ptp.tree import Trie
    from rmtk.sat.encoders import SatEncoder
    from rmtk.sat.encoding import Problem

    problem = Problem(Trie.root(True), 3)
    decided = search_module.search(SatEncoder().encode, problem, SearchLimits(max_nodes=2))
    assert decided.n_nodes == 1 and decided.complete  # no evidence: one node
    opened = []
    monkeypatch.setattr(search_module, "open_solver", lambda *a, **k: opened.append(a))
    passed = SearchLimits(max_nodes=2, deadline=Deadline(time.monotonic() - 1.0))
    stopped = search_module.search(SatEncoder().encode, problem, passed)
    assert stopped.n_nodes is None and not stopped.complete and stopped.tried == ((1, None),)
    assert "time limit" in stopped.message and "deciding 1 nodes" in stopped.message
    assert opened == []


def test_the_cadical_terminator_can_be_switched_off(monkeypatch):
    """``RMTK_CADICAL_TERMINATOR=off`` leaves python-sat's CaDiCaL as it is (nothing connected
    through ctypes): a stop then waits for the slice, and the answers are the same."""
    from rmtk.sat.terminator import SWITCH, terminating

    with open_solver("cadical153", pigeonhole(5)) as solver:
        assert can_terminate(solver)
        monkeypatch.setenv(SWITCH, "off")
        assert not can_terminate(solver)
        with terminating(solver, NEVER) as terminator:
            assert terminator is None
        assert solve(solver, NEVER) is False  # 6 pigeons, 5 holes
