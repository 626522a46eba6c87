"""How the ``rmtk`` command stops: SIGINT (Ctrl-C), SIGTERM and ``--time-limit``
(docs/design/08-progress-and-limits.md and docs/design/11-faults.md).

While a command can print what it has (:func:`stoppable`: the work of ``rmtk learn``), the
first SIGINT or SIGTERM asks every phase to stop (:func:`rmtk.limits.request_stop`): each
phase that checks the run's :class:`~rmtk.limits.Deadline` returns its partial answer, which
is printed, flagged, and the command exits with 130 (SIGINT) or 143 (SIGTERM). A second
signal, a first one outside such a run, or :data:`GRACE_SECONDS` after the first, ends the
command at once with one line (``rmtk: interrupted``, ``rmtk: terminated``): the exceptions
raised (``KeyboardInterrupt``, :class:`Terminated`) remove any file being written
(:mod:`rmtk.output`). Once the command is ending, further signals are ignored, so nothing
raises from the clean-up.

``--time-limit S`` is given to the learners, which stop at S seconds and flag what they did
not finish. As a safety net for a step that does not look at its deadline, the command itself
asks for a stop :data:`GRACE_SECONDS` after S, and ends the run one more grace later: a run is
never longer than S + 2·:data:`GRACE_SECONDS`. The timers are ``SIGALRM`` (``setitimer``),
whose handler runs on the main thread and interrupts a blocking call there.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import signal
import threading

from ..limits import clear_stop, request_stop, set_signal_fd, stop_requested

#: Seconds a stopped run has to print what it has before it is ended at once.
GRACE_SECONDS = 5.0

#: Exit statuses of runs ended by a signal (128 + the signal's number).
STATUS = {"interrupted": 128 + signal.SIGINT, "terminated": 128 + signal.SIGTERM}
#: How messages name the signal behind a stop.
SIGNAL = {"interrupted": "SIGINT, Ctrl-C", "terminated": "SIGTERM", "time limit": "--time-limit"}
_REASON = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated"}


class Terminated(BaseException):
    """SIGTERM, raised like Ctrl-C so that files being written are cleaned up (rmtk/output.py)."""


class TimeUp(BaseException):
    """A run still going :data:`GRACE_SECONDS` after the stop its time limit asked for."""


class Stops:
    """The signal handlers of one command (see the module docstring)."""

    def __init__(self, time_limit: float | None = None):
        self.time_limit = time_limit
        self.soft = False
        self.ending = False

    def on_signal(self, signum, frame) -> None:
        if self.ending:
            return
        if self.soft and stop_requested() is None:
            request_stop(_REASON[signum])
            signal.setitimer(signal.ITIMER_REAL, GRACE_SECONDS)
            return
        self.end(_REASON[signum], frame, signum)

    def on_alarm(self, signum, frame) -> None:
        if self.ending:
            return
        if self.soft and stop_requested() is None:  # the time limit passed, and a grace more
            request_stop("time limit")
            signal.setitimer(signal.ITIMER_REAL, GRACE_SECONDS)
            return
        self.end(stop_requested() or "time limit", frame, signum)

    def end(self, reason: str, frame, signum: int) -> None:
        """End the command at once: raise where the main thread is, unless that is inside code
        an exception must not cut (:func:`uncuttable`); then the signal comes again
        :data:`RETRY_SECONDS` later."""
        if uncuttable(frame):
            if signum == signal.SIGALRM:
                signal.setitimer(signal.ITIMER_REAL, RETRY_SECONDS)
            else:
                again = threading.Timer(RETRY_SECONDS, _resend, args=(self, signum))
                again.daemon = True
                again.start()
            return
        self.ending = True
        raise {"interrupted": KeyboardInterrupt, "terminated": Terminated}.get(reason, TimeUp)

    def close(self) -> None:
        """From here on, signals change nothing and no timer fires."""
        self.ending = True
        signal.setitimer(signal.ITIMER_REAL, 0)


_current: Stops | None = None

#: Seconds before a signal that arrived inside uncuttable code comes again.
RETRY_SECONDS = 0.01


def _resend(stops: Stops, signum: int) -> None:
    """The signal again, to the main thread, if the command that deferred it still runs."""
    if stops is _current and not stops.ending:
        signal.pthread_kill(threading.main_thread().ident, signum)


@functools.lru_cache(maxsize=1)
def _pysat_directory() -> str:
    spec = importlib.util.find_spec("pysat")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    return os.path.join(locations[0], "") if locations else "\0"


def uncuttable(frame) -> bool:
    """Whether the main thread, at ``frame``, is where an exception must not be raised: inside
    python-sat's Python code, whose objects hold C pointers they clear only after the C call
    that frees them returns (an exception between the two left a dangling pointer, freed again
    at exit: the segmentation fault seen after ``rmtk: terminated``), or inside a ``__del__``
    (Python prints the exception as "ignored" and the object may be left half deleted)."""
    pysat = _pysat_directory()
    while frame is not None:
        code = frame.f_code
        if code.co_name == "__del__" or code.co_filename.startswith(pysat):
            return True
        frame = frame.f_back
    return False


@contextlib.contextmanager
def installed(time_limit: float | None = None, *, program: bool):
    """The handlers of one command, on the main thread (elsewhere Python cannot install any:
    signals then keep their effect). With ``program`` (the command is the process) they are
    left ignoring signals afterwards, so that one arriving as the interpreter exits changes
    nothing; otherwise the former handlers are restored. A stop request is cleared before and
    after."""
    global _current
    clear_stop()
    if threading.current_thread() is not threading.main_thread():
        try:
            yield None
        finally:
            clear_stop()
        return
    stops = Stops(time_limit)
    previous = {
        sig: signal.signal(sig, handler)
        for sig, handler in (
            (signal.SIGINT, stops.on_signal),
            (signal.SIGTERM, stops.on_signal),
            (signal.SIGALRM, stops.on_alarm),
        )
    }
    _current = stops
    wakeup = _signal_pipe()
    try:
        yield stops
    finally:
        stops.close()
        _close_signal_pipe(*wakeup)
        clear_stop()
        _current = None
        for sig, handler in previous.items():
            signal.signal(sig, signal.SIG_IGN if program and sig != signal.SIGALRM else handler)


def _signal_pipe() -> tuple[int, int, int] | tuple[()]:
    """A pipe each signal is written to (``signal.set_wakeup_fd``), read by the thread that
    interrupts solver calls holding no interpreter lock (:func:`rmtk.limits.set_signal_fd`):
    their handler runs only once the call returns. (read end, write end, the former wakeup fd)."""
    try:
        read, write = os.pipe()
        os.set_blocking(read, False)
        os.set_blocking(write, False)
        former = signal.set_wakeup_fd(write, warn_on_full_buffer=False)
    except (OSError, ValueError):
        return ()
    set_signal_fd(read)
    return read, write, former


def _close_signal_pipe(*pipe: int) -> None:
    if not pipe:
        return
    read, write, former = pipe
    set_signal_fd(None)
    signal.set_wakeup_fd(former)
    os.close(write)
    os.close(read)


@contextlib.contextmanager
def stoppable():
    """Work whose partial answer is printed when a first signal (or the time limit's safety
    net) asks it to stop."""
    stops = _current
    if stops is None:
        yield
        return
    stops.soft = True
    if stops.time_limit is not None:
        signal.setitimer(signal.ITIMER_REAL, stops.time_limit + GRACE_SECONDS)
    try:
        yield
    finally:
        stops.soft = False
        signal.setitimer(signal.ITIMER_REAL, 0)  # the work is over: what remains is short


def stopped_line() -> str | None:
    """The ``#`` line that flags a report as partial once a stop was requested (else ``None``)."""
    why = stop_requested()
    if not why:
        return None
    return (
        f"# stopped: {why} ({SIGNAL.get(why, why)}); what follows is what was found before the stop, flagged "
        "where a step did not finish"
    )
