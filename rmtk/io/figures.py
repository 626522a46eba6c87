"""Figures with matplotlib's object-oriented API only: a new figure on an Agg canvas (``pyplot``'s
global state is never touched, so drawing is safe in scripts, tests and servers without a
display), the picture format of a file name, and figures written whole or not at all
(:mod:`rmtk.output`). Shared by the machine pictures (:mod:`rmtk.io.machine_picture`), the maps
(:mod:`rmtk.io.draw`) and the experiments' figures."""

from __future__ import annotations

import os
from pathlib import Path

from .. import output
from ..errors import RmtkError

__all__ = ["new_figure", "picture_format", "save_figure", "save_picture", "text_width"]


def new_figure(figsize: tuple[float, float]):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize)
    FigureCanvasAgg(fig)
    return fig


def picture_format(path: str | os.PathLike, fig=None) -> str:
    """The picture format of ``path``'s extension (``png``, ``svg``, or another that matplotlib
    writes); a clear error for any other name, before anything is drawn."""
    suffix = Path(path).suffix.lower().lstrip(".")
    if fig is None:
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        supported = FigureCanvasAgg.get_supported_filetypes()
    else:
        supported = fig.canvas.get_supported_filetypes()
    if suffix not in supported:
        raise RmtkError(
            f"cannot save a picture as {os.fspath(path)!r}: the file name must end in .png or .svg "
            f"(matplotlib also writes {', '.join('.' + s for s in sorted(supported) if s not in ('png', 'svg'))})"
        )
    return suffix


def save_figure(fig, path: str | os.PathLike, *, dpi: float = 150, overwrite: bool = True, **savefig) -> None:
    """Write ``fig`` to ``path`` in the format of its extension, whole or not at all
    (:func:`rmtk.output.replacing`); an existing file is replaced only with ``overwrite``."""
    suffix = picture_format(path, fig)
    with output.replacing(path, overwrite=overwrite) as f:
        fig.savefig(f, dpi=dpi, format=suffix, **savefig)


def save_picture(fig, path: str | os.PathLike, *, dpi: float = 150, overwrite: bool = True) -> None:
    """Write a drawing of this module to ``path``, trimmed to what is drawn (:func:`save_figure`)."""
    save_figure(fig, path, dpi=dpi, overwrite=overwrite, bbox_inches="tight", pad_inches=0.08)


def text_width(text: str, fontsize: float) -> float:
    """Rough width in points of one line of ``text`` (sans-serif)."""
    return 0.62 * fontsize * max((len(line) for line in text.split("\n")), default=0)
