"""The gallery's picture scraper: what a tutorial draws, shown under the cell that drew it.

rmtk draws on matplotlib ``Figure`` objects without pyplot (rmtk/io/figures.py), so
sphinx-gallery's own matplotlib scraper, which reads pyplot's figure list, sees none of them.
After each cell this scraper saves
- every ``Figure`` the tutorial holds in a top-level variable (or in a list, tuple or dict
  there) that it has not shown yet, and
- every PNG or SVG file the tutorial wrote in its output directory (its global ``OUT``) since
  the previous cell.
A Figure the tutorial saved into that directory is shown once, as its file: the scraper
notes which figures ``Figure.savefig`` wrote there (:func:`reset` installs the note).
Both come from running the tutorial at build time; nothing is read from the repository.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

_shown: dict[str, Any] = {"figures": [], "files": set(), "saved": []}


def _note_saves() -> None:
    """Make ``Figure.savefig`` note each figure it writes to a file path (once per process)."""
    from matplotlib.figure import Figure

    if getattr(Figure.savefig, "_notes_saves", False):
        return
    savefig = Figure.savefig

    def noting(self, fname, *args, **kwargs):
        if isinstance(fname, (str, Path)):
            _shown["saved"].append((self, Path(fname).resolve()))
        return savefig(self, fname, *args, **kwargs)

    noting._notes_saves = True  # type: ignore[attr-defined]
    Figure.savefig = noting  # type: ignore[method-assign]


def reset(gallery_conf: dict, fname: str) -> None:
    """Forget what the previous tutorial showed (called before each tutorial)."""
    _note_saves()
    _shown["figures"] = []
    _shown["files"] = set()
    _shown["saved"] = []


def _saved_into(fig, out: Any) -> bool:
    """Whether the tutorial saved ``fig`` into its output directory (then its file shows it)."""
    if not isinstance(out, Path):
        return False
    folder = out.resolve()
    return any(f is fig and folder in path.parents for f, path in _shown["saved"])


def _figures(namespace: dict) -> list:
    from matplotlib.figure import Figure

    found = []
    for value in list(namespace.values()):
        items = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else [value]
        for item in items:
            if isinstance(item, Figure) and not any(item is f for f in _shown["figures"] + found):
                found.append(item)
    return found


def _files(namespace: dict) -> list[Path]:
    out = namespace.get("OUT")
    if not isinstance(out, Path) or not out.is_dir():
        return []
    new = [p for p in sorted(out.iterdir()) if p.suffix in (".png", ".svg") and p not in _shown["files"]]
    _shown["files"].update(new)
    return new


def rmtk_figures(block, block_vars: dict, gallery_conf: dict, **kwargs) -> str:
    """sphinx-gallery image scraper: save the cell's new figures and files, return their rST."""
    from sphinx_gallery.scrapers import figure_rst

    namespace = block_vars["example_globals"]
    paths = block_vars["image_path_iterator"]
    saved = []
    for fig in _figures(namespace):
        if _saved_into(fig, namespace.get("OUT")):
            _shown["figures"].append(fig)  # shown by its file
            continue
        path = Path(next(paths))
        fig.savefig(path, dpi=100)
        _shown["figures"].append(fig)
        saved.append(str(path))
    for file in _files(namespace):
        path = Path(next(paths)).with_suffix(file.suffix)
        shutil.copyfile(file, path)
        saved.append(str(path))
    return figure_rst(saved, gallery_conf["src_dir"])


def with_note(rst: str, note: str) -> str:
    """A generated gallery page with ``note`` as a note right under its title."""
    lines = rst.split("\n")
    for i in range(1, len(lines)):
        title, underline = lines[i - 1].strip(), lines[i]
        if title and underline and set(underline) == {"="} and len(underline) >= len(title):
            body = ["", ".. note::", "", *(f"   {ln}" for ln in note.splitlines()), ""]
            return "\n".join(lines[: i + 1] + body + lines[i + 1 :])
    raise ValueError("a gallery page without a title")
