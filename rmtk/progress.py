"""Progress of long work, reported through hooks.

The algorithms never print: every long stage calls the hooks of a :class:`Progress` object,
whose methods do nothing by default (like an instrumentation object). :class:`StderrProgress`
is the implementation the command line uses: one line per finished stage and per decided
size, a bar (redrawn in place on a terminal, periodic lines otherwise) for counted work, and
free-form notes. A user can pass any object with these methods, e.g. to log to a file.

Stage names are short keys (``tree``, ``policy``, ``count``, ``mine``, ``encode``, ``solve``,
``enumerate``, ``verdict``, ``rewards``, …); :data:`STAGE_NAMES` gives the words printed.
"""

from __future__ import annotations

import sys
import time

from .words import plural

#: Printed names of the pipeline's stages (unknown keys are printed as they are).
STAGE_NAMES = {
    "tree": "prefix tree",
    "policy": "prefix tree policy",
    "count": "counting demonstrations",
    "mine": "negative examples",
    "encode": "SAT encoding",
    "solve": "SAT solving",
    "enumerate": "enumeration",
    "verdict": "equivalence verdicts",
    "rewards": "reward recovery",
}


class Progress:
    """Hooks called by long stages; every method does nothing (the algorithm never prints)."""

    def stage(self, name: str, seconds: float, **info) -> None:
        """Stage ``name`` finished in ``seconds``; ``info`` holds sizes worth reporting."""

    def size(self, n: int, satisfiable: bool | None, seconds: float) -> None:
        """The SAT question at ``n`` nodes was decided (``None``: interrupted)."""

    def solution(self, count: int, distinct: int) -> None:
        """``count`` solutions enumerated so far, ``distinct`` of them up to renaming."""

    def count(self, done: int, total: int | None, what: str = "trajectories") -> None:
        """``done`` of ``total`` items (``None``: unknown total) processed."""

    def note(self, message: str) -> None:
        """A free-form line (experiments describe what they are doing)."""


#: A rate is printed once its clock has run this long (a count first seen mid-way would
#: otherwise divide by almost nothing).
MIN_RATE_SECONDS = 0.05


class StderrProgress(Progress):
    """Lines on a stream (default stderr), at most one count/solution line per ``every``
    seconds; on a terminal the count is a bar redrawn in place."""

    def __init__(self, stream=None, every: float = 1.0, prefix: str = "rmtk"):
        self.stream = stream if stream is not None else sys.stderr
        self.every, self.prefix = every, prefix
        self._last = 0.0
        self._start: float | None = None
        self._open_bar = False

    def _print(self, text: str) -> None:
        self._close_bar()
        print(f"{self.prefix}: {text}", file=self.stream, flush=True)

    def _close_bar(self) -> None:
        if self._open_bar:
            print(file=self.stream, flush=True)
            self._open_bar = False

    def _due(self, final: bool) -> bool:
        now = time.monotonic()
        if final or now - self._last >= self.every:
            self._last = now
            return True
        return False

    def stage(self, name, seconds, **info):
        extra = "".join(f", {k.replace('_', ' ')} {v}" for k, v in info.items())
        self._print(f"{STAGE_NAMES.get(name, name)} done in {seconds:.3f} s{extra}")

    def size(self, n, satisfiable, seconds):
        verdict = {True: "satisfiable", False: "unsatisfiable", None: "interrupted"}[satisfiable]
        self._print(f"{n} node{'s' if n != 1 else ''}: {verdict} ({seconds:.3f} s)")

    def solution(self, count, distinct):
        if self._due(False):
            self._print(f"{plural(count, 'solution')} enumerated, {distinct:,} distinct up to renaming")

    def count(self, done, total, what="trajectories"):
        now = time.monotonic()
        if self._start is None or done == 0:  # count(0, ...) starts the clock of the rate
            self._start = now
            if done == 0:
                return
        final = total is not None and done >= total
        tty = getattr(self.stream, "isatty", lambda: False)()
        if not final and now - self._last < (0.2 if tty else self.every):
            return
        self._last = now
        elapsed = now - self._start
        per_second = done / elapsed if elapsed >= MIN_RATE_SECONDS else None
        rate = "" if per_second is None else f" ({per_second:,.{1 if per_second < 10 else 0}f}/s)"
        if final:
            self._start = None
        if total is None:
            self._print(f"{what}: {done:,}{rate}")
            return
        fill = int(30 * min(done, total) / max(total, 1))
        text = f"{self.prefix}: {what} [{'#' * fill}{'.' * (30 - fill)}] {done:,}/{total:,}{rate}"
        if tty and not final:
            print(f"\r{text}", end="", file=self.stream, flush=True)
            self._open_bar = True
            return
        print(("\r" if self._open_bar else "") + text, file=self.stream, flush=True)
        self._open_bar = False

    def note(self, message):
        self._print(message)


class Recorder(Progress):
    """Forwards every hook to ``inner`` and keeps the seconds of each finished stage
    (the :class:`~rmtk.learner.pipeline.Learner` builds its ``timings`` this way)."""

    def __init__(self, inner: Progress | None = None):
        self.inner = inner if inner is not None else Progress()
        self.timings: dict[str, float] = {}

    def stage(self, name, seconds, **info):
        self.timings[name] = self.timings.get(name, 0.0) + seconds
        self.inner.stage(name, seconds, **info)

    def size(self, n, satisfiable, seconds):
        self.inner.size(n, satisfiable, seconds)

    def solution(self, count, distinct):
        self.inner.solution(count, distinct)

    def count(self, done, total, what="trajectories"):
        self.inner.count(done, total, what)

    def note(self, message):
        self.inner.note(message)


def as_progress(progress) -> Progress:
    """``None`` → the silent :class:`Progress`; a :class:`Progress` (or any object with its
    methods) as it is."""
    if progress is None:
        return Progress()
    missing = [m for m in ("stage", "size", "solution", "count", "note") if not callable(getattr(progress, m, None))]
    if missing:
        raise TypeError(
            f"progress must be a rmtk.progress.Progress (an object with the methods stage, size, "
            f"solution, count, note); {type(progress).__name__} has no {', '.join(missing)}"
        )
    return progress
