"""Limits every long phase honours (docs/design/08-progress-and-limits.md): one :class:`Deadline` for a
whole run (a time limit, and a stop requested by SIGINT or SIGTERM), and the
:class:`SearchLimits` every search accepts.

A phase that finds its deadline passed stops where it is and returns what it has, flagged;
it never raises. The command line turns SIGINT and SIGTERM into :func:`request_stop`, so a
stopped run ends the way a run whose time limit passed does: with its partial answer printed
and flagged (the deadline's :meth:`~Deadline.reason` says which).
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import threading
import time

import attrs

from .errors import RmtkError
from .progress import Progress

_STOP = threading.Event()
_STOP_REASON: list[str] = []


def request_stop(reason: str = "interrupted") -> None:
    """Ask every running phase to stop at its next check and return what it has (the
    command line's SIGINT and SIGTERM handlers call this)."""
    if not _STOP.is_set():
        _STOP_REASON[:] = [reason]
        _STOP.set()


def stop_requested() -> str | None:
    """Why a stop was requested (``"interrupted"``, ``"terminated"``), or ``None``."""
    return _STOP_REASON[0] if _STOP.is_set() and _STOP_REASON else None


def clear_stop() -> None:
    """Forget a stop request (a new run in the same process starts unstopped)."""
    _STOP.clear()
    _STOP_REASON.clear()


_SIGNAL_FD: list[int] = []


def set_signal_fd(fd: int | None) -> None:
    """The read end of a pipe the command's signals are written to (``signal.set_wakeup_fd``;
    ``None``: none). A solver call that holds no interpreter lock is interrupted as soon as a
    byte arrives there (rmtk/sat/terminator.py), before the signal's Python handler, which runs
    only once the call returns, asks for the stop."""
    _SIGNAL_FD[:] = [] if fd is None else [fd]


def signal_fd() -> int | None:
    """The pipe of :func:`set_signal_fd`, or ``None``."""
    return _SIGNAL_FD[0] if _SIGNAL_FD else None


def _seconds(value, what: str) -> float | None:
    if value is None:
        return None
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not ok or not value > 0 or not math.isfinite(value):
        raise RmtkError(f"{what} must be a positive number of seconds, got {value!r}")
    return float(value)


@attrs.frozen
class Deadline:
    """When a run must stop: ``at`` is a ``time.monotonic()`` instant (``None``: no time
    limit). A stop requested with :func:`request_stop` makes every deadline expire at once."""

    at: float | None = None

    @classmethod
    def after(cls, seconds: float | None) -> Deadline:
        """The deadline ``seconds`` from now (``None``: none)."""
        s = _seconds(seconds, "a time limit")
        return cls(None if s is None else time.monotonic() + s)

    def sooner(self, seconds: float | None) -> Deadline:
        """This deadline or the one ``seconds`` from now, whichever comes first."""
        other = Deadline.after(seconds)
        if other.at is None:
            return self
        return other if self.at is None or other.at < self.at else self

    def remaining(self) -> float | None:
        """Seconds left (0 once expired), ``None`` without a time limit."""
        if stop_requested():
            return 0.0
        return None if self.at is None else max(0.0, self.at - time.monotonic())

    def expired(self) -> bool:
        """The time limit has passed, or a stop was requested."""
        return _STOP.is_set() or (self.at is not None and time.monotonic() >= self.at)

    def reason(self) -> str | None:
        """Why the deadline expired: ``"interrupted"`` / ``"terminated"`` (a stop request),
        ``"time limit"``; ``None`` while it has not."""
        stop = stop_requested()
        if stop:
            return stop
        return "time limit" if self.expired() else None


#: The deadline of a run without a time limit (it expires only on a stop request).
NEVER = Deadline()


class Expired(Exception):
    """Raised by :func:`checkpoint` within :func:`checking` once its deadline has expired: how
    a long pure computation with no result to return half-way (an encoding) is cut short."""


_CHECKED: contextvars.ContextVar = contextvars.ContextVar("rmtk_checked_deadline", default=None)


@contextlib.contextmanager
def checking(deadline):
    """Within the block, :func:`checkpoint` raises :class:`Expired` once ``deadline`` (a
    :class:`Deadline`, or anything with ``expired()``) has expired; the caller catches it and
    reports what the deadline stopped."""
    token = _CHECKED.set(deadline)
    try:
        yield
    finally:
        _CHECKED.reset(token)


def checkpoint() -> None:
    """A look at the deadline of the innermost :func:`checking` block (none: nothing to do),
    made between the pieces of a long computation: :class:`Expired` if it has expired."""
    deadline = _CHECKED.get()
    if deadline is not None and deadline.expired():
        raise Expired


def _optional_count(instance, attribute, value) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise RmtkError(f"{attribute.name} must be a whole number of at least 1 or None, got {value!r}")


def _deadline(instance, attribute, value) -> None:
    if not isinstance(value, Deadline):
        raise RmtkError(f"{attribute.name} must be a rmtk.limits.Deadline, not {type(value).__name__}")


def _progress(instance, attribute, value) -> None:
    if not isinstance(value, Progress):
        raise RmtkError(f"{attribute.name} must be a rmtk.progress.Progress, not {type(value).__name__}")


@attrs.frozen
class SearchLimits:
    """What bounds a search: the sizes tried (exactly ``nodes``, or ``min_nodes`` to
    ``max_nodes``), at most ``max_solutions`` machines listed (``None``: all), the run's
    ``deadline``, and the ``progress`` hooks to report to. ``fewest_floor`` (nodes, count): a
    lower bound, proved on a part of the same problem's evidence, on the fewest moving
    transitions of a machine of that size (:func:`rmtk.sat.fewest.fewest_true` starts there;
    it bounds the search, never changes its answer)."""

    max_nodes: int = attrs.field(default=4, validator=_optional_count)
    min_nodes: int = attrs.field(default=1, validator=_optional_count)
    nodes: int | None = attrs.field(default=None, validator=_optional_count)
    max_solutions: int | None = attrs.field(default=None, validator=_optional_count)
    deadline: Deadline = attrs.field(default=NEVER, validator=_deadline)
    progress: Progress = attrs.field(factory=Progress, validator=_progress)
    fewest_floor: tuple[int, int] | None = None

    def __attrs_post_init__(self):
        if self.nodes is None and self.min_nodes > self.max_nodes:
            raise RmtkError(f"min_nodes={self.min_nodes} is above max_nodes={self.max_nodes}")

    @property
    def sizes(self) -> range:
        """The numbers of nodes to try, smallest first."""
        if self.nodes is not None:
            return range(self.nodes, self.nodes + 1)
        return range(self.min_nodes, self.max_nodes + 1)

    def describe_sizes(self) -> str:
        """``exactly 3``, ``at most 4``, ``2 to 4``: the sizes tried, in words."""
        if self.nodes is not None:
            return f"exactly {self.nodes}"
        return f"at most {self.max_nodes}" if self.min_nodes <= 1 else f"{self.min_nodes} to {self.max_nodes}"

    def evolve(self, **changes) -> SearchLimits:
        """A copy with ``changes`` (``attrs.evolve``)."""
        return attrs.evolve(self, **changes)


#: The bound on the nodes of a learned machine when neither the user nor the task gives one.
DEFAULT_MAX_NODES = 4


def max_nodes_or_default(*choices: int | None) -> int:
    """The first bound on the nodes given among ``choices`` (the user's, then the task's
    suggestion), else :data:`DEFAULT_MAX_NODES`."""
    for choice in choices:
        if choice is not None:
            return choice
    return DEFAULT_MAX_NODES


def node_bound_note(bound: int, given: int | None, task=None) -> str:
    """What a search that proved no machine of at most ``bound`` nodes consistent says of the
    bound (appended to its message): where it came from (``given``: the user's ``max_nodes``;
    else ``task``'s suggestion; else :data:`DEFAULT_MAX_NODES`) and how to raise it, since a
    machine of more nodes may be what the data need."""
    if given is not None:
        whose = "the max_nodes given"
    elif task is not None and task.max_nodes is not None:
        whose = f"the max_nodes of task {task.name!r}"
    else:
        whose = "rmtk's default (no max_nodes given, none suggested by a task)"
    return (
        f"; the bound of {bound} node{'s' if bound != 1 else ''} is {whose}: a machine of more nodes may be "
        "consistent, raise the bound with max_nodes=N (--max-nodes N)"
    )
