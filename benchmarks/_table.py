"""Table output shared by the benchmark scripts: aligned text or Markdown."""

from __future__ import annotations


def render(rows: list[dict], markdown: bool, left: frozenset[str] = frozenset()) -> str:
    """``rows`` (dicts with the same keys, in column order) as a table; columns in ``left``
    are left-aligned in the text form, the others right-aligned."""
    cols = list(rows[0])
    cells = [cols] + [[str(r[c]) for c in cols] for r in rows]
    if markdown:
        lines = ["| " + " | ".join(r) + " |" for r in cells]
        lines.insert(1, "|" + "|".join("---" for _ in cols) + "|")
        return "\n".join(lines)
    width = [max(len(r[i]) for r in cells) for i in range(len(cols))]
    return "\n".join(
        "  ".join(v.ljust(w) if c in left else v.rjust(w) for v, w, c in zip(r, width, cols)).rstrip() for r in cells
    )
