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
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterable, Sequence

from pysat.solvers import Solver, SolverNames

from ..errors import RmtkError
from ..limits import NEVER, Deadline

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


def open_solver(name: str = DEFAULT_SOLVER, clauses: Iterable[Sequence[int]] = ()) -> Solver:
    """A new solver ``name`` holding ``clauses``; use it as a context manager, or ``delete()`` it."""
    return Solver(name=check_solver(name), bootstrap_with=clauses)


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


def solve(
    solver: Solver,
    deadline: Deadline = NEVER,
    assumptions: Sequence[int] = (),
    conflicts: int | None = None,
    first: int = FIRST_SLICE,
) -> bool | None:
    """``solver.solve(assumptions)`` in slices of conflicts: ``True``/``False`` when decided,
    ``None`` when ``deadline`` expired first (its time limit passed or a stop was requested)
    or, with ``conflicts``, when that many conflicts did not decide it. ``first``: the
    conflicts of the first slice, and the smallest a slow slice shrinks to (a formula of
    millions of clauses spends milliseconds on one conflict: a smaller first slice keeps its
    deadline to about a second)."""
    assume = list(assumptions)
    budget = first if conflicts is None else min(first, conflicts)
    spent = 0
    with pysat_sigint_off():
        try:
            while True:
                if deadline.expired():
                    return None
                solver.conf_budget(budget)
                before = propagations(solver)
                result = solver.solve_limited(assumptions=assume)
                if result is not None:
                    return result
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


#: Backends whose calls cannot be interrupted from another thread (``interrupt``): MaxSAT's
#: RC2 runs whole calls, so under a time limit it runs on :data:`INTERRUPTIBLE` instead.
NOT_INTERRUPTIBLE = frozenset({"cadical103", "cadical153", "cadical195", "cadical300"})
#: The backend RC2 runs on under a time limit when the one asked for cannot be interrupted.
INTERRUPTIBLE = "glucose4"


def maxsat_backend(name: str, deadline: Deadline) -> tuple[str, str]:
    """The backend RC2 runs on, and a note when it is not ``name``: a call that cannot be
    interrupted is replaced by :data:`INTERRUPTIBLE` under a time limit."""
    check_solver(name)
    if deadline.at is not None and name in NOT_INTERRUPTIBLE:
        return INTERRUPTIBLE, (
            f"solver {INTERRUPTIBLE} used instead of {name}, which cannot be interrupted, to honour the time limit"
        )
    return name, ""


class _Stopped(Exception):
    """Raised inside an interrupted RC2 at a step between oracle calls."""


@functools.cache  # one class per kind, not one per search
def rc2_class(stratified: bool):
    """pysat's ``RC2`` or ``RC2Stratified``, made to end a ``compute`` once interrupted or once
    its ``deadline`` expired.

    An interrupt stops only the oracle call under way, and RC2 clears it for the next one;
    between calls RC2 runs long pure-Python steps (a stratified level's hardening over every
    clause, once per distinct weight: with weights from evidence counts, hundreds of levels).
    These subclasses check the interrupt and the deadline (a time limit, or a stop requested
    by SIGINT or SIGTERM) at each level and before each core is processed, so a time limit
    holds and a stopped run ends after the oracle call under way, even on a backend that
    cannot be interrupted (:func:`maxsat_compute`). The checks read a flag and the clock: a
    run that is not stopped makes the same calls."""
    from pysat.examples.rc2 import RC2, RC2Stratified

    base = RC2Stratified if stratified else RC2

    class Stoppable(base):  # type: ignore[valid-type, misc]
        stopped = False
        deadline = NEVER

        def check(self):
            if self.stopped or self.deadline.expired():
                raise _Stopped

        def interrupt(self):
            self.stopped = True
            super().interrupt()

        def clear_interrupt(self):
            self.stopped = False
            super().clear_interrupt()

        def compute_(self):
            self.check()
            return super().compute_()

        def get_core(self):
            self.check()
            return super().get_core()

        if stratified:

            def finish_level(self):
                self.check()
                return super().finish_level()

    Stoppable.__name__ = Stoppable.__qualname__ = f"Stoppable{base.__name__}"
    return Stoppable


def maxsat_compute(rc2, deadline: Deadline = NEVER):
    """One ``rc2.compute()`` (a MaxSAT optimum, ``None`` if the hard clauses are
    unsatisfiable), interrupted when ``deadline`` expires where the backend allows it.
    Returns ``(model, decided)``: ``decided`` is false when the deadline stopped the call."""
    import threading

    if deadline.expired():
        return None, False
    if isinstance(rc2, (rc2_class(True), rc2_class(False))):
        rc2.deadline = deadline  # checked between oracle calls
    interruptible = rc2.solver not in NOT_INTERRUPTIBLE
    if not interruptible:  # stopped between oracle calls only
        try:
            with pysat_sigint_off():
                return rc2.compute(), True
        except _Stopped:
            return None, False
    done = threading.Event()
    fired: list[bool] = []

    def watch():  # RC2 calls its oracle many times per compute, and each call clears the
        # interrupt: once expired, interrupt again until compute returns
        while not done.wait(0.05 if fired else 0.1):
            if fired or deadline.expired():
                fired.append(True)
                rc2.interrupt()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    stopped = False
    try:
        with pysat_sigint_off():
            model = rc2.compute(expect_interrupt=True)
    except _Stopped:  # a rc2_class instance, stopped between oracle calls
        model, stopped = None, True
    finally:
        done.set()
        watcher.join()
        rc2.clear_interrupt()
    if stopped or (fired and model is None):
        return None, False
    return model, True


def __getattr__(name: str):
    """Names of the previous version that went (rmtk/_deprecated.py): a clear error."""
    from .. import _deprecated

    return _deprecated.moved(__name__, name)
