"""The gallery's picture scraper: what a tutorial draws, shown under the cell that drew it.

rmtk draws on matplotlib ``Figure`` objects without pyplot (rmtk/io/figures.py), so
sphinx-gallery's own matplotlib scraper, which reads pyplot's figure list, sees none of them.
After each cell this scraper saves
- every ``Figure`` the tutorial holds in a top-level variable (or in a list, tuple or dict
  there) that it has not shown yet, and
- every PNG or SVG file the tutorial wrote in its output directory (its global ``OUT``) since
  the previous cell.
Both come from running the tutorial at build time; nothing is read from the repository.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

_shown: dict[str, Any] = {"figures": [], "files": set()}


def reset(gallery_conf: dict, fname: str) -> None:
    """Forget what the previous tutorial showed (called before each tutorial)."""
    _shown["figures"] = []
    _shown["files"] = set()


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
        path = Path(next(paths))
        fig.savefig(path, dpi=100)
        _shown["figures"].append(fig)
        saved.append(str(path))
    for file in _files(namespace):
        path = Path(next(paths)).with_suffix(file.suffix)
        shutil.copyfile(file, path)
        saved.append(str(path))
    return figure_rst(saved, gallery_conf["src_dir"])
