"""rmtk's error hierarchy.

Every error a user can provoke with bad input is an :class:`RmtkError`; the CLI prints its
message (never a traceback) and exits with a non-zero code.
"""

from __future__ import annotations

import attrs


class RmtkError(Exception):
    """Base class of every error rmtk raises on bad input."""


class UsageError(RmtkError):
    """A command line that asks for what does not apply: a flag given where it does not apply
    or without the flag it works with, or a kind of evidence the data cannot provide (``rmtk
    learn --from rewards`` on data without rewards). The ``rmtk`` command exits with status 2,
    as for any usage error."""


class ModelError(RmtkError, ValueError):
    """A model object (MDP, machine, task) was constructed with inconsistent data."""


@attrs.frozen
class Location:
    """A place in a source text: file name, 1-based line and column."""

    file: str = "<string>"
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        parts = [self.file]
        if self.line is not None:
            parts.append(str(self.line))
            if self.column is not None:
                parts.append(str(self.column))
        return ":".join(parts)


#: Characters of a long source line shown on each side of the error's column.
SHOWN = 60


def show_line(text: str | None, line: int | None, column: int | None) -> str:
    """The source line ``line`` of ``text`` with a caret under ``column`` (or ''); a line longer
    than the terminal is cut to a window around the column, marked with '...'."""
    if text is None or line is None:
        return ""
    lines = text.splitlines()
    if not 1 <= line <= len(lines):
        return ""
    src = lines[line - 1].expandtabs(1)
    col = column
    if len(src) > 2 * SHOWN + 20:
        at = (column or 1) - 1
        lo, hi = max(0, at - SHOWN), min(len(src), at + SHOWN)
        src = ("..." if lo else "") + src[lo:hi] + ("..." if hi < len(src) else "")
        col = None if column is None else at - lo + (4 if lo else 1)
    gutter = f"{line:>5} | "
    out = gutter + src
    if col is not None:
        out += "\n" + " " * (len(gutter) - 2) + "| " + " " * (col - 1) + "^"
    return out


class DslError(RmtkError):
    """An error in a `.rm` text, with its location and the offending line."""

    kind = "error"

    def __init__(self, message: str, location: Location | None = None, text: str | None = None):
        self.message = message
        self.location = location or Location()
        self.text = text
        super().__init__(self._render())

    def _render(self) -> str:
        head = f"{self.location}: {self.kind}: {self.message}"
        ctx = show_line(self.text, self.location.line, self.location.column)
        return head + ("\n" + ctx if ctx else "")

    def with_source(self, file: str, text: str) -> DslError:
        """The same error, located in ``file`` whose content is ``text``."""
        loc = attrs.evolve(self.location, file=file)
        return type(self)(self.message, loc, text)


class DslSyntaxError(DslError):
    """The text does not follow the `.rm` grammar."""

    kind = "syntax error"


class DslMeaningError(DslError):
    """The text parses but means something invalid (undefined name, bad probability...)."""


class DataError(RmtkError, ValueError):
    """A data file (demonstrations, transition lists) holds an invalid record."""
