"""attrs validators of the settings users type, shared by every class that takes them.

Each names the setting, what it expects and the class (``max_nodes must be a whole number of
at least 1, got 0 (ActiveLearner)``), with rmtk's :class:`~rmtk.errors.RmtkError`.
"""

from __future__ import annotations

import math
from numbers import Integral, Real

from .errors import RmtkError

#: The most nodes rmtk searches for. The encoding at n nodes and K letters has n²·K transition
#: variables, n³·K/2 determinism clauses and n² clauses per word of the prefix tree: at 64 nodes
#: and 4 letters already half a million clauses before the first word, beyond what a SAT search
#: enumerates in useful time; far larger counts would not even fit in memory.
MAX_NODES = 64

#: Why :data:`MAX_NODES` bounds the nodes, for messages.
BOUND_WHY = (
    f"the SAT encoding at n nodes has n²·|letters| transition variables, n³·|letters|/2 determinism "
    f"clauses and n² clauses per word (at {MAX_NODES} nodes and 4 letters already "
    f"{4 * MAX_NODES**2 * (MAX_NODES - 1) // 2:,} clauses before any word)"
)


def _says(instance, attribute, prefix: str | None, text: str) -> str:
    """``max_nodes must be ... (ActiveLearner)``, or with a ``prefix`` naming the owner as the
    user knows it, ``budget steps must be ...``."""
    if prefix:
        return f"{prefix} {attribute.name} {text}"
    return f"{attribute.name} {text} ({type(instance).__name__})"


def is_whole(value) -> bool:
    """A whole number (``int`` or numpy integer), not a bool."""
    return isinstance(value, Integral) and not isinstance(value, bool)


def is_number(value) -> bool:
    """A finite real number, not a bool."""
    return isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(float(value))


def whole(minimum: int = 1, *, optional: bool = False, prefix: str | None = None):
    """A validator: a whole number of at least ``minimum`` (or ``None`` when ``optional``)."""

    def check(instance, attribute, value):
        if optional and value is None:
            return
        if not is_whole(value) or value < minimum:
            raise RmtkError(
                _says(instance, attribute, prefix, f"must be a whole number of at least {minimum}, got {value!r}")
            )

    return check


#: A whole number of at least 1; the same or ``None``.
positive_int = whole(1)
optional_positive_int = whole(1, optional=True)


def node_count(instance, attribute, value) -> None:
    """A number of nodes: ``None``, or a whole number from 1 to :data:`MAX_NODES`."""
    optional_positive_int(instance, attribute, value)
    if value is not None and value > MAX_NODES:
        raise RmtkError(
            f"{attribute.name}={value} is above rmtk's bound of {MAX_NODES} nodes: {BOUND_WHY} "
            f"({type(instance).__name__})"
        )


def positive(*, optional: bool = False, unit: str = "number", prefix: str | None = None):
    """A validator: a finite number above 0 (or ``None`` when ``optional``); ``unit`` names
    what it counts in messages (``"number of seconds"``)."""

    def check(instance, attribute, value):
        if optional and value is None:
            return
        if not is_number(value) or not value > 0:
            raise RmtkError(_says(instance, attribute, prefix, f"must be a positive {unit}, got {value!r}"))

    return check


#: Positive seconds, or ``None`` (no limit).
optional_seconds = positive(optional=True, unit="number of seconds")


def unit_interval(*, open_low: bool = False, open_high: bool = False):
    """A validator: a number in [0, 1] (ends excluded where asked)."""

    def check(instance, attribute, value):
        ok = is_number(value) and (0 < value if open_low else 0 <= value) and (value < 1 if open_high else value <= 1)
        if not ok:
            lo, hi = "(" if open_low else "[", ")" if open_high else "]"
            raise RmtkError(_says(instance, attribute, None, f"must lie in {lo}0, 1{hi}, got {value!r}"))

    return check


def one_of(*allowed):
    """A validator: one of ``allowed``."""

    def check(instance, attribute, value):
        if value not in allowed:
            raise RmtkError(
                _says(instance, attribute, None, f"must be one of {', '.join(map(repr, allowed))}, not {value!r}")
            )

    return check


def implements(what: str, *methods: str, optional: bool = False, example: str = ""):
    """A validator of a learner's strategy slot: an object with the protocol's ``methods``
    (``None`` too when ``optional``). Checked once, at construction, so that a wrong object is
    named there rather than failing inside ``fit``; the learner then only calls those methods."""

    def check(instance, attribute, value):
        if value is None and optional:
            return
        missing = [m for m in methods if not callable(getattr(value, m, None))]
        if missing:
            hint = f", e.g. {example}" if example else ""
            raise RmtkError(
                f"{attribute.name}={value!r} is not {what}: it has no {' or '.join(missing)} method{hint} "
                "(docs/design/05-strategies.md)"
            )

    return check
