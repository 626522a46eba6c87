"""The one place rmtk opens and drives a SAT solver (docs/design/08-progress-and-limits.md).

Every search asks the same of a backend: clauses added between calls (incremental), calls
under assumptions, and calls bounded by a number of conflicts (``solve_limited`` with
``conf_budget``), which is how a call gives way to a deadline or to Ctrl-C. :data:`SOLVERS`
lists the python-sat backends that can; :data:`REFUSED` says why the others cannot, and
:func:`check_solver` refuses them by name before any work.

:func:`solve` runs one call in slices of conflicts with pysat's own SIGINT handler off
(:func:`pysat_sigint_off`): between two slices Python handles signals and the run's
:class:`~rmtk.limits.Deadline` is checked, so a call ends soon after a time limit or a stop
request, and returns ``None`` ("not decided"). The slices are sized by the solver's own work
(conflicts, and the propagations the last slice took), never by the clock: where a call
pauses changes the solver's course, so the same formula and the same calls give the same
models on any machine under any load (docs/design/determinism.md); a time limit only stops.
Within a slice, the deadline is looked at too (:mod:`rmtk.sat.terminator`: CaDiCaL's own
terminator, or ``interrupt()`` from a watching thread), so a stop does not wait for a slice
that lasts seconds on a formula of a million clauses; a look that finds the deadline unexpired
changes nothing.
"""

from __future__ import annotations

import contextlib
import copy
import functools
from collections.abc import Iterable, Sequence
from typing import Protocol

from pysat.solvers import Solver, SolverNames

from ..errors import RmtkError
from ..limits import NEVER, Deadline, Expired
from .terminator import stop_only, stoppable_calls

#: The backend used unless one is asked for (``--solver``).
DEFAULT_SOLVER = "cadical153"

#: Backends python-sat names that cannot do what rmtk asks of every solver, and why.
REFUSED = {
    "kissat404": "it solves no incremental problems and takes no assumptions (adding a clause after a call aborts "
    "the process)",
    "lingeling": "it has no limited solve, so no time limit or Ctrl-C can stop a call",
    "cryptosat": "python-sat is built without it",
    "minisatgh": "python-sat is built without it",
}

#: The backends rmtk can use (incremental, with assumptions and with limited solves).
SOLVERS = tuple(sorted(k for k in vars(SolverNames) if not k.startswith("_") and k not in REFUSED))


#: Backends that take no preferred phases (``set_phases`` raises): a search that would hint
#: its first guesses (:meth:`rmtk.labels.encoding.PairFormula.prefer`) does without the hint.
NO_PHASES = frozenset({"cadical103"})


def takes_phases(name: str) -> bool:
    """Whether backend ``name`` takes preferred phases (a hint a search may give its solver)."""
    return check_solver(name) not in NO_PHASES


def check_solver(name) -> str:
    """``name`` if rmtk can use that backend, else an error saying why not."""
    if name in REFUSED:
        raise RmtkError(f"SAT solver {name!r} cannot be used: {REFUSED[name]}; available: {', '.join(SOLVERS)}")
    if name not in SOLVERS:
        raise RmtkError(f"unknown SAT solver {name!r}; available: {', '.join(SOLVERS)}")
    return name


def check_solver_field(instance, attribute, value) -> None:
    """attrs validator of a solver name (see :func:`check_solver`)."""
    check_solver(value)


def open_solver(name: str = DEFAULT_SOLVER, clauses: Iterable[Sequence[int]] = (), deadline=None) -> Solver:
    """A new solver ``name`` holding ``clauses``; use it as a context manager, or ``delete()`` it.
    With ``deadline``, the clauses are given a chunk at a time with a look at it before each
    (:class:`~rmtk.limits.Expired` once it has expired: a million clauses take a second)."""
    if deadline is not None:
        clauses = _CheckedClauses(clauses, functools.partial(_raise_if_expired, deadline))
    return Solver(name=check_solver(name), bootstrap_with=clauses)


def _raise_if_expired(deadline) -> None:
    if deadline.expired():
        raise Expired


#: A call runs in slices of conflicts, from ``FIRST_SLICE`` up to ``MAX_SLICE``: signals and
#: the deadline are honoured between slices. A slice whose propagations pass twice
#: ``SLICE_PROPAGATIONS`` halves the next (down to the call's first slice), one under half of it
#: doubles the next: on this machine's backends that is about half a second of search, measured
#: in the solver's work, so the slices are the same whatever the load (docs/design/determinism.md).
SLICE_PROPAGATIONS = 1_000_000
#: The most conflicts of one slice (a slice light in propagations doubles the next up to it).
MAX_SLICE = 200_000
#: Conflicts of a call's first slice (most calls end within it).
FIRST_SLICE = 1_000


def propagations(solver: Solver) -> int:
    """The propagations ``solver`` has made so far: the measure of its work that sizes what a
    call may spend, in place of seconds (0 for a backend that does not count them, maplecm and
    maplesat: its slices are then sized by conflicts alone)."""
    return int((solver.accum_stats() or {}).get("propagations", 0))


@contextlib.contextmanager
def pysat_sigint_off():
    """pysat puts its own SIGINT handler around a solver call made on the main thread; it
    jumps out of the solver wherever it is, and out of CaDiCaL's memory allocator that leaves
    the process deadlocked (seen with gdb: the solver's destructor waits on malloc's lock).
    Within this block pysat installs none (it asks ``MainThread.check`` whether to), so a
    signal is handled by Python when the call returns, as any other."""
    import pysat.solvers as ps

    saved = ps.MainThread.check
    ps.MainThread.check = staticmethod(lambda: False)  # type: ignore[method-assign]
    try:
        yield
    finally:
        ps.MainThread.check = saved  # type: ignore[method-assign]


class Expiring(Protocol):
    """What a sliced call asks between slices: a :class:`~rmtk.limits.Deadline`, or anything
    else that says whether the call must stop."""

    def expired(self) -> bool: ...


def solve(
    solver: Solver,
    deadline: Expiring = NEVER,
    assumptions: Sequence[int] = (),
    conflicts: int | None = None,
    first: int = FIRST_SLICE,
    inside: Expiring | None = None,
) -> bool | None:
    """``solver.solve(assumptions)`` in slices of conflicts: ``True``/``False`` when decided,
    ``None`` when ``deadline`` expired first (its time limit passed or a stop was requested)
    or, with ``conflicts``, when that many conflicts did not decide it. ``first``: the
    conflicts of the first slice, and the smallest a slow slice shrinks to (a formula of
    millions of clauses spends milliseconds on one conflict: a smaller first slice keeps its
    deadline to about a second). ``inside``: what the looks within a slice ask (default
    :func:`~rmtk.sat.terminator.stop_only` of ``deadline``: its time limit and stop requests)."""
    assume = list(assumptions)
    budget = first if conflicts is None else min(first, conflicts)
    spent = 0
    inside = stop_only(deadline) if inside is None else inside
    with pysat_sigint_off(), stoppable_calls(solver, inside) as stopper:
        try:
            while True:
                if deadline.expired():
                    return None
                solver.conf_budget(budget)
                before = propagations(solver)
                result = solver.solve_limited(assumptions=assume, expect_interrupt=True)
                if result is not None:
                    return result
                if stopper is not None and stopper.fired:  # stopped inside the slice
                    return None
                spent += budget
                if conflicts is not None and spent >= conflicts:
                    return None
                budget = next_slice(budget, propagations(solver) - before, first)
                if conflicts is not None:
                    budget = min(budget, conflicts - spent)
        finally:
            solver.conf_budget(-1)


def next_slice(budget: int, propagations: int, first: int = FIRST_SLICE) -> int:
    """The conflicts of the slice after one of ``budget`` conflicts that made ``propagations``
    propagations: half of it (not under ``first``) after a heavy slice, twice (up to
    :data:`MAX_SLICE`) after a light one. A function of counts only, never of time."""
    if propagations > 2 * SLICE_PROPAGATIONS:
        return max(first, budget // 2)
    if propagations < SLICE_PROPAGATIONS // 2:
        return min(MAX_SLICE, budget * 2)
    return budget


#: Backends whose calls cannot be interrupted from another thread (``interrupt``). RC2 no longer
#: needs it (its oracle calls run in slices, :func:`rc2_class`); kept for code that asks.
NOT_INTERRUPTIBLE = frozenset({"cadical103", "cadical153", "cadical195", "cadical300"})
#: Formerly the backend RC2 ran on under a time limit in place of one in
#: :data:`NOT_INTERRUPTIBLE`; every backend is stopped in slices now, and none is replaced.
INTERRUPTIBLE = "glucose4"


class _Stopped(Exception):
    """Raised inside a stopped RC2: its deadline expired during or between oracle calls."""


@functools.cache  # one class per kind, not one per search
def rc2_class(stratified: bool):
    """pysat's ``RC2`` or ``RC2Stratified``, made to end a ``compute`` within about a second of
    its ``deadline`` expiring (a time limit, or a stop requested by SIGINT or SIGTERM), on
    every backend.

    Its oracle calls run as :func:`solve` runs a call, in slices of conflicts with the deadline
    checked between them, so that a stop does not wait for one long call to end (a noisy-reward
    search's single call took two minutes: docs/benchmarks/rewards.md); the calls of its core
    minimisation, bounded by RC2's own conflict budget, run whole. Between calls RC2 runs
    pure-Python steps (a stratified level's hardening over every clause, once per distinct
    weight: with weights from evidence counts, hundreds of levels; and, with ``adapt``, each
    level's search for AtMost1 groups, one propagation per selector: one pass took 6 s at
    2x10^5 noisy steps, docs/benchmarks/21-stopped-runs.md), so the deadline is also checked
    at each level, before each core is processed, and before each propagation and clause of
    those passes (``_Checked``), and ``interrupt()`` (another thread's stop) is honoured
    at the next of these checks. The slices are sized by the
    solver's work, never by the clock, so a run that is not stopped makes the same calls
    with the same results whatever the load."""
    from pysat.examples.rc2 import RC2, RC2Stratified

    base = RC2Stratified if stratified else RC2

    class Stoppable(base):  # type: ignore[valid-type, misc]
        stopped = False
        deadline = NEVER
        bounded = False  # inside RC2's core minimisation, whose calls have RC2's own budget

        def __init__(self, formula, *args, deadline: Deadline = NEVER, **kwargs):
            self.deadline = deadline
            super().__init__(formula, *args, **kwargs)

        def init(self, formula, incr=False):
            # RC2's set-up feeds the oracle every hard clause, in Python (a second at 10^6
            # noisy steps): a copy of the formula whose clause lists look at the deadline
            checked = copy.copy(formula)
            checked.hard = _CheckedClauses(formula.hard, self.check)
            checked.soft = _CheckedClauses(formula.soft, self.check)
            return super().init(checked, incr=incr)

        def check(self):
            if self.stopped or self.deadline.expired():
                raise _Stopped

        def interrupt(self):
            self.stopped = True

        def clear_interrupt(self):
            self.stopped = False

        def _call_oracle(self, assumptions=(), expect_interrupt=False):
            self.check()
            if self.bounded:  # a stop ends the call (None: RC2 keeps the core as it is), then raises
                with stoppable_calls(self.oracle, _Either(self, stop_only=True)):
                    return super()._call_oracle(list(assumptions), True)
            result = solve(self.oracle, _Either(self), assumptions, inside=_Either(self, stop_only=True))
            if result is None:
                raise _Stopped
            return result

        def minimize_core(self):
            self.bounded = True
            try:
                return super().minimize_core()
            finally:
                self.bounded = False

        def compute_(self):
            self.check()
            return super().compute_()

        def adapt_am1(self):
            with _checked_oracle(self):
                return super().adapt_am1()

        def get_core(self):
            self.check()
            return super().get_core()

        if stratified:

            def finish_level(self):
                self.check()
                with _checked_oracle(self):
                    return super().finish_level()

    Stoppable.__name__ = Stoppable.__qualname__ = f"Stoppable{base.__name__}"
    return Stoppable


#: Clauses fed to a solver between two looks at the deadline (:class:`_CheckedClauses`).
CHECK_EVERY = 4096


class _CheckedClauses(list):
    """Clauses that call ``check`` every :data:`CHECK_EVERY` clauses as they are iterated (a
    stop raises between two clauses given to the solver, never inside a call)."""

    def __init__(self, clauses, check):
        super().__init__(clauses)
        self.check = check

    def __iter__(self):
        for start in range(0, len(self), CHECK_EVERY):
            self.check()
            yield from self[start : start + CHECK_EVERY]


def open_rc2(wcnf, deadline: Deadline = NEVER, *, stratified: bool, solver: str = DEFAULT_SOLVER, **options):
    """An :func:`rc2_class` instance holding ``wcnf`` (with ``options``), or ``None`` when
    ``deadline`` expired during its set-up (which adds every clause to the oracle and looks at
    the deadline every :data:`CHECK_EVERY` clauses)."""
    cls = rc2_class(stratified)
    try:
        with pysat_sigint_off():
            return cls(wcnf, solver=solver, deadline=deadline, **options)
    except _Stopped:
        return None


class _Checked:
    """An RC2's oracle that checks the RC2's deadline (:meth:`check`) before each propagation
    and each clause added: what RC2's passes over every soft clause call once per clause
    (``adapt_am1``, run by each stratified level, propagates every selector and processes each
    AtMost1 group found, in seconds to minutes at a million observed steps; ``finish_level``
    hardens clause by clause). Work, not time, spaces the checks; nothing changes unless the
    deadline expired."""

    def __init__(self, oracle, rc2):
        self.oracle = oracle
        self.rc2 = rc2

    def __getattr__(self, name):
        return getattr(self.oracle, name)

    def propagate(self, *args, **kwargs):
        self.rc2.check()
        return self.oracle.propagate(*args, **kwargs)

    def add_clause(self, *args, **kwargs):
        self.rc2.check()
        return self.oracle.add_clause(*args, **kwargs)


@contextlib.contextmanager
def _checked_oracle(rc2):
    """``rc2.oracle`` checks the deadline within the block (``_Checked``). A stop raises
    between two of the oracle's calls, never inside one, and leaves the RC2 half-way: a stopped
    compute's RC2 is not used again (:func:`maxsat_compute`'s callers drop it)."""
    oracle = rc2.oracle
    rc2.oracle = _Checked(oracle, rc2)
    try:
        yield
    finally:
        rc2.oracle = oracle


class _Either:
    """The deadline of a sliced oracle call: an RC2's deadline, or its :meth:`interrupt`;
    with ``stop_only``, of its deadline only the time limit and stop requests (the looks
    inside a call: :func:`~rmtk.sat.terminator.stop_only`)."""

    def __init__(self, rc2, stop_only: bool = False):
        self.rc2 = rc2
        self.stop_only = stop_only

    def expired(self) -> bool:
        deadline = stop_only(self.rc2.deadline) if self.stop_only else self.rc2.deadline
        return self.rc2.stopped or deadline.expired()


def maxsat_compute(rc2, deadline: Deadline = NEVER):
    """One ``rc2.compute()`` (a MaxSAT optimum, ``None`` if the hard clauses are
    unsatisfiable) of an :func:`rc2_class` instance, stopped when ``deadline`` expires.
    Returns ``(model, decided)``: ``decided`` is false when the deadline stopped the call."""
    if deadline.expired():
        return None, False
    rc2.deadline = deadline
    try:
        with pysat_sigint_off():
            return rc2.compute(), True
    except _Stopped:
        return None, False
    finally:
        rc2.clear_interrupt()


def __getattr__(name: str):
    """Names of the previous version that went (rmtk/_deprecated.py): a clear error."""
    from .. import _deprecated

    return _deprecated.moved(__name__, name)
