"""A stop inside one CaDiCaL call (docs/design/08-progress-and-limits.md).

python-sat's CaDiCaL backends hold the interpreter's lock for the whole of a call and take no
``interrupt()``: no other thread runs and no Python signal handler runs until the call
returns, so a call sliced by conflicts (:func:`rmtk.sat.solver.solve`) still ends a stop only
at the end of a slice, seconds later on a formula of a million clauses. CaDiCaL itself asks a
*terminator* object, every few decisions, whether to stop; python-sat builds CaDiCaL with that
entry point exported but connects none. :func:`terminating` connects one, through ctypes, whose
answer is the run's deadline (:class:`~rmtk.limits.Deadline`): the check is Python code run on
the calling thread, so a pending SIGINT/SIGTERM handler runs there too (it requests the stop the
next check sees), and other threads (a test's timer) get their turn.

The terminator answers "go on" until the deadline has expired, and CaDiCaL's course does not
depend on it (the same conflicts, decisions and propagations with or without it): a stop only
stops. When python-sat's extension lacks the entry points (another build), nothing is
connected and a stop waits for the slice, as before. The connection leans on python-sat's
internal C++ symbols and layout (the Itanium C++ ABI): the environment variable
``RMTK_CADICAL_TERMINATOR=off`` leaves it out (a stop then waits for the slice).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import select
import threading
import time
from typing import TYPE_CHECKING

from ..limits import Deadline, signal_fd

if TYPE_CHECKING:
    import pysat.solvers

#: ``bool Terminator::terminate()`` (a virtual method: ``this`` is its only argument).
_TERMINATE = ctypes.CFUNCTYPE(ctypes.c_bool, ctypes.c_void_p)
#: The terminator's virtual destructors: CaDiCaL never deletes a terminator it is given.
_DESTROY = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


@functools.cache
def _entry_points(version: str):
    """CaDiCaL ``version``'s ``Solver::connect_terminator`` and ``disconnect_terminator`` in
    python-sat's extension, or ``None`` where they are not exported."""
    try:
        import pysolvers

        lib = ctypes.CDLL(pysolvers.__file__)
        space = f"CaDiCaL{version}"
        prefix = f"_ZN{len(space)}{space}6Solver"
        connect = getattr(lib, f"{prefix}18connect_terminatorEPNS_10TerminatorE")
        disconnect = getattr(lib, f"{prefix}21disconnect_terminatorEv")
    except (ImportError, OSError, AttributeError):
        return None
    connect.argtypes, connect.restype = [ctypes.c_void_p, ctypes.c_void_p], None
    disconnect.argtypes, disconnect.restype = [ctypes.c_void_p], None
    return connect, disconnect


def _capsule_pointer():
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.argtypes, get.restype = [ctypes.py_object, ctypes.c_char_p], ctypes.c_void_p
    return get


_get_pointer = _capsule_pointer()


#: The environment variable that, set to ``off``, leaves the terminator out.
SWITCH = "RMTK_CADICAL_TERMINATOR"


def _cadical(solver: pysat.solvers.Solver):
    """(the C++ solver's address, its CaDiCaL version) of a CaDiCaL backend, else ``None``."""
    backend = getattr(solver, "solver", None)
    name = type(backend).__name__
    capsule = getattr(backend, "cadical", None)
    if not name.startswith("Cadical") or capsule is None:
        return None
    return _get_pointer(capsule, None), name[len("Cadical") :]


class _Terminator:
    """A C++ ``CaDiCaL::Terminator`` made of ctypes parts: its first word points to a table of
    three functions (two destructors, ``terminate``), as the Itanium C++ ABI lays out a class
    with one virtual destructor and one virtual method. ``fired``: it answered "stop"."""

    def __init__(self, expiring):
        self.fired = False

        def terminate(this) -> bool:
            try:
                if expiring.expired():
                    self.fired = True
            except Exception:  # a check that fails never stops the solver, nor escapes into C++
                return False
            return self.fired

        self._terminate = _TERMINATE(terminate)
        self._destroy = _DESTROY(lambda this: None)
        slots = [ctypes.cast(f, ctypes.c_void_p).value for f in (self._destroy, self._destroy, self._terminate)]
        self._table = (ctypes.c_void_p * 3)(*slots)
        self._object = (ctypes.c_void_p * 1)(ctypes.addressof(self._table))

    @property
    def address(self) -> int:
        return ctypes.addressof(self._object)


def can_terminate(solver: pysat.solvers.Solver) -> bool:
    """Whether :func:`terminating` reaches inside ``solver``'s calls."""
    found = _cadical(solver)
    return found is not None and _switched_on() and _entry_points(found[1]) is not None


def _switched_on() -> bool:
    return os.environ.get(SWITCH, "on").strip().lower() != "off"


@contextlib.contextmanager
def terminating(solver: pysat.solvers.Solver, expiring):
    """Within the block, ``solver``'s limited calls (``solve_limited``) end, returning ``None``,
    within a few decisions of ``expiring.expired()`` turning true (a CaDiCaL backend whose entry
    points python-sat exports; others are left as they are). Yields the terminator (``fired``
    says whether it stopped a call), or ``None``. A plain ``solve()`` must not run inside: a
    stopped one would read as satisfiable."""
    found = _cadical(solver)
    points = None if found is None or not _switched_on() else _entry_points(found[1])
    if found is None or points is None or not found[0]:
        yield None
        return
    pointer, _ = found
    connect, disconnect = points
    terminator = _Terminator(expiring)
    connect(pointer, terminator.address)
    try:
        yield terminator
    finally:
        disconnect(pointer)


#: Seconds between two looks at the deadlines of the interruptible calls under way.
POLL_SECONDS = 0.05


class _Call:
    """One call watched by :data:`_WATCHER`."""

    def __init__(self, solver: pysat.solvers.Solver, expiring):
        self.solver = solver
        self.expiring = expiring
        self.fired = False


class _Watcher:
    """One daemon thread that interrupts the interruptible calls under way (python-sat's
    backends other than CaDiCaL, which release the interpreter's lock inside a call made with
    ``expect_interrupt``) when their deadline expires or a signal arrives."""

    def __init__(self):
        self.lock = threading.Lock()
        self.calls: dict[int, _Call] = {}
        self.busy = threading.Event()
        self.thread: threading.Thread | None = None

    def add(self, call: _Call) -> None:
        with self.lock:
            self.calls[id(call)] = call
            self.busy.set()
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self.run, name="rmtk-solver-watch", daemon=True)
                self.thread.start()

    def remove(self, call: _Call) -> None:
        with self.lock:
            del self.calls[id(call)]
            if not self.calls:
                self.busy.clear()
            call.solver.clear_interrupt()  # an interrupt that came as the call ended touches no later call

    def run(self) -> None:
        while True:
            self.busy.wait()
            signalled = _wait_signal(POLL_SECONDS)
            with self.lock:
                for call in self.calls.values():
                    if not call.fired and (signalled or _expired(call.expiring)):
                        call.fired = True
                        call.solver.interrupt()


def _expired(expiring) -> bool:
    try:
        return bool(expiring.expired())
    except Exception:
        return False


def _wait_signal(seconds: float) -> bool:
    """Whether a signal arrived within ``seconds`` (on the pipe of :func:`rmtk.limits.set_signal_fd`)."""
    fd = signal_fd()
    if fd is None:
        time.sleep(seconds)
        return False
    try:
        ready, _, _ = select.select([fd], [], [], seconds)
        return bool(ready) and bool(os.read(fd, 512))
    except (OSError, ValueError):  # the pipe was closed as the command ended
        time.sleep(seconds)
        return False


_WATCHER = _Watcher()


def interruptible(solver: pysat.solvers.Solver) -> bool:
    """Whether ``solver``'s backend takes ``interrupt()`` from another thread (python-sat's
    backends but CaDiCaL's)."""
    return _cadical(solver) is None


@contextlib.contextmanager
def interrupting(solver: pysat.solvers.Solver, expiring):
    """Within the block, ``solver``'s calls made with ``expect_interrupt=True`` are interrupted
    (returning ``None``) within :data:`POLL_SECONDS` of ``expiring.expired()`` turning true or at
    once on a signal (:func:`rmtk.limits.set_signal_fd`). Yields the watched call (``fired``: it was
    interrupted). A backend that takes no interrupt is left as it is (yields ``None``)."""
    if not interruptible(solver):
        yield None
        return
    call = _Call(solver, expiring)
    _WATCHER.add(call)
    try:
        yield call
    finally:
        _WATCHER.remove(call)


class _StopOnly:
    """A deadline asked only whether its time limit passed or a stop was requested."""

    def __init__(self, deadline: Deadline):
        self.deadline = deadline

    def expired(self) -> bool:
        return Deadline.expired(self.deadline)


def stop_only(expiring):
    """What a look inside a call asks: of a :class:`~rmtk.limits.Deadline`, only whether its
    time limit passed or a stop was requested (``Deadline.expired`` as the base class defines
    it), never a budget of work a subclass counts at the looks between calls
    (rmtk.sat.search.WorkBudget), whose count the many looks inside a call would change;
    anything else is asked as it is."""
    return _StopOnly(expiring) if isinstance(expiring, Deadline) else expiring


@contextlib.contextmanager
def stoppable_calls(solver: pysat.solvers.Solver, expiring):
    """Within the block, a limited call of ``solver`` (made with ``expect_interrupt=True``) ends
    soon after ``expiring`` expires, on every backend: :func:`terminating` for CaDiCaL,
    :func:`interrupting` for the others. Yields an object whose ``fired`` says whether a call was
    stopped (``None`` where neither applies)."""
    if can_terminate(solver):
        with terminating(solver, expiring) as stopper:
            yield stopper
    else:
        with interrupting(solver, expiring) as call:
            yield call
