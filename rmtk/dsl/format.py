"""Canonical spelling of names and numbers in `.rm` text."""

from __future__ import annotations

import functools
import math
import re

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
#: Words that would be read as keywords in some position; such names are quoted.
KEYWORDS = frozenset({"mdp", "machine", "task", "on", "reward", "else", "true", "false"})


@functools.lru_cache(maxsize=4096)  # the same few names, thousands of times in a listing
def fmt_ident(name: str) -> str:
    """``name`` bare when it is a plain identifier, else as a quoted string."""
    if _NAME.match(name) and name not in KEYWORDS:
        return name
    escaped = name.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{escaped}"'


def fmt_number(x: float) -> str:
    """Shortest text that reads back as exactly ``x`` (``1`` for 1.0)."""
    x = float(x)
    if not math.isfinite(x):
        raise ValueError(f"cannot write the non-finite number {x} in an .rm file")
    if x.is_integer() and abs(x) < 1e16:
        return str(int(x))
    return repr(x)
