"""Counts in words, the same in every report: ``1 node``, ``2 nodes``, ``12,400 draws``."""

from __future__ import annotations


def plural(n: int, one: str, many: str | None = None) -> str:
    """``n`` (with thousands separators) and the noun, singular for one (``1 query``,
    ``2 queries``, ``12,400 draws``); ``many`` when the plural is not ``one + 's'``."""
    return f"{n:,} {one if n == 1 else (many or one + 's')}"
