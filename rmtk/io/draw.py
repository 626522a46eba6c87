"""Pictures with matplotlib: the maps (grid worlds with their propositions, the labyrinth), and
the face of rmtk's drawing: the machine pictures (:mod:`rmtk.io.machine_picture`) and the
figure helpers (:mod:`rmtk.io.figures`) are importable from here too. Every function draws on
a figure with an Agg canvas, never through ``pyplot``; matplotlib is imported when drawing, not
by ``import rmtk.io.draw``, which stays cheap.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ModelError
from .dot import format_reward
from .figures import new_figure, save_picture
from .figures import picture_format as picture_format  # re-exported: the face of rmtk's drawing
from .figures import save_figure as save_figure
from .machine_picture import draw_machine as draw_machine

if TYPE_CHECKING:  # annotations only: the models draw themselves through rmtk.io.display, which uses this module
    from ..mdp.model import LabeledMDP

__all__ = ["draw_grid", "draw_labyrinth", "grid_cells", "proposition_colours"]


# ---------------------------------------------------------------------------- draw_grid
def _lighten(hex_colour: str, amount: float) -> str:
    rgb = [int(hex_colour[i : i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{round(c + (255 - c) * amount):02x}" for c in rgb)


#: Light, well separated cell colours: matplotlib's tab10 hues (without grey and cyan) lightened,
#: then a few more for maps with many propositions.
_PALETTE = [
    _lighten(c, 0.45) for c in ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22")
] + ["#9edae5", "#ffed6f", "#ccebc5", "#fccde5", "#d9d9d9", "#bebada", "#ffffb3"]
_N_PRIMARY = 8
_BLOCKED = "#3d3d3d"


def proposition_colours(propositions: Iterable[str]) -> dict[str, str]:
    """A stable colour per proposition: its preferred colour is chosen by a hash of its name
    (the same in every picture); clashes within one picture move to the next free colour."""
    out: dict[str, str] = {}
    used: set[int] = set()
    primary = _N_PRIMARY
    for p in sorted(set(propositions)):
        if len(used) < primary:
            i = zlib.crc32(p.encode("utf-8")) % primary
            while i in used:
                i = (i + 1) % primary
        else:
            i = primary + (len(used) - primary) % (len(_PALETTE) - primary)
        used.add(i)
        out[p] = _PALETTE[i]
    return out


def _grid_params(mdp: LabeledMDP) -> tuple[list[list[str | None]], Any]:
    src = mdp.source
    if src is None or src.generator != "gridworld":
        kind = "an explicit MDP" if src is None else f"made by the {src.generator!r} generator"
        raise ModelError(f"mdp {mdp.name!r} is {kind}, not a grid world: draw_grid needs an MDP made by 'gridworld'")
    kw = src.kwargs()
    rows: Any = kw.get("rows")
    rectangular = bool(rows) and all(isinstance(r, (tuple, list)) for r in rows) and len({len(r) for r in rows}) == 1
    if not rectangular or not rows[0]:
        raise ModelError(f"grid world {mdp.name!r}: its 'rows' parameter is not a non-empty rectangular map")
    return [list(r) for r in rows], kw.get("start")


def grid_cells(mdp: LabeledMDP) -> list[tuple[int, int]]:
    """The ``(row, column)`` cell of each state of a grid world: the free cells in
    column-major order (column by column, top to bottom)."""
    rows, _ = _grid_params(mdp)
    return [(r, c) for c in range(len(rows[0])) for r in range(len(rows)) if rows[r][c] is not None]


def draw_grid(
    mdp: LabeledMDP,
    path: str | os.PathLike | None = None,
    *,
    ax=None,
    rewards: Mapping[str, float] | Sequence[float] | np.ndarray | None = None,
    title: str | None = None,
):
    """A picture of a grid world's map; returns the Figure.

    One square per cell, coloured by its proposition (:func:`proposition_colours`) with the
    proposition written in it; blocked cells are dark grey; start cells have a bold border
    and a small triangle in their upper-left corner (from the generator's ``start`` cells,
    else from the MDP's initial distribution; when every free cell is a start cell the
    title says so instead). ``rewards`` optionally adds a number under the label (3
    significant digits): either a mapping proposition → value, or one value per state (states
    are the free cells in column-major order), e.g. a reward or a value function. Raises :class:`ModelError` when
    the MDP was not made by the ``gridworld`` generator.
    """
    from matplotlib.patches import Polygon, Rectangle

    rows, start = _grid_params(mdp)
    H, W = len(rows), len(rows[0])
    cells = [(r, c) for c in range(W) for r in range(H) if rows[r][c] is not None]
    props = sorted({p for row in rows for p in row if p is not None})
    colours = proposition_colours(props)

    # start cells
    if start is not None:
        starts = {(int(r), int(c)) for r, c in start}
    elif len(cells) == mdp.n_states:
        starts = {cells[s] for s in mdp.start_states}
    else:
        starts = set()
    everywhere = bool(starts) and starts >= set(cells)
    if everywhere:
        starts = set()

    # per-cell numbers
    numbers: dict[tuple[int, int], float] = {}
    if rewards is not None:
        if isinstance(rewards, Mapping):
            unknown = [p for p in rewards if p not in props]
            if unknown:
                raise ModelError(
                    f"grid world {mdp.name!r}: no cell is labelled {unknown[0]!r} (labels: {' '.join(props)})"
                )
            numbers = {(r, c): float(rewards[p]) for r, c in cells if (p := rows[r][c]) is not None and p in rewards}
        else:
            vals = np.asarray(rewards, dtype=float).ravel()
            if vals.size != len(cells):
                raise ModelError(
                    f"grid world {mdp.name!r}: {vals.size} reward values for {len(cells)} free cells "
                    "(give one per state, free cells in column-major order)"
                )
            numbers = dict(zip(cells, vals.tolist()))

    cell_in = 0.62
    if ax is None:
        fig = new_figure((W * cell_in + 0.4, H * cell_in + 0.75))
        ax = fig.add_axes(
            (
                0.2 / (W * cell_in + 0.4),
                0.15 / (H * cell_in + 0.75),
                W * cell_in / (W * cell_in + 0.4),
                H * cell_in / (H * cell_in + 0.75),
            )
        )
    else:
        fig = ax.figure
    fs = 11 if max(len(p) for p in props) <= 3 else 8
    for r in range(H):
        for c in range(W):
            p = rows[r][c]
            x, y = c, H - 1 - r
            face = _BLOCKED if p is None else colours[p]
            ax.add_patch(Rectangle((x, y), 1, 1, facecolor=face, edgecolor="white", lw=1.5, zorder=1))
            if p is None:
                continue
            dy = 0.12 if (r, c) in numbers else 0.0
            ax.text(x + 0.5, y + 0.5 + dy, p, ha="center", va="center", fontsize=fs, color="#1b1b1b", zorder=3)
            if (r, c) in numbers:
                ax.text(
                    x + 0.5,
                    y + 0.28,
                    format_reward(numbers[(r, c)], 3),
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="#1b1b1b",
                    zorder=3,
                )
    for r, c in sorted(starts):
        if not (0 <= r < H and 0 <= c < W) or rows[r][c] is None:
            continue
        x, y = c, H - 1 - r
        ax.add_patch(Rectangle((x + 0.05, y + 0.05), 0.9, 0.9, fill=False, edgecolor="#111111", lw=2.2, zorder=2))
        ax.add_patch(
            Polygon(
                [(x + 0.1, y + 0.9), (x + 0.3, y + 0.9), (x + 0.1, y + 0.7)],
                closed=True,
                facecolor="#111111",
                edgecolor="none",
                zorder=2,
            )
        )
    ax.set_xlim(0, W)
    ax.set_ylim(0, H)
    ax.set_aspect("equal")
    ax.set_xticks([c + 0.5 for c in range(W)], [str(c) for c in range(W)])
    ax.set_yticks([H - 1 - r + 0.5 for r in range(H)], [str(r) for r in range(H)])
    ax.tick_params(length=0, labelsize=7, colors="#666666")
    for spine in ax.spines.values():
        spine.set_visible(False)
    heading = title if title is not None else mdp.name
    if everywhere:
        heading += " (start: any free cell)"
    ax.set_title(heading, fontsize=10)
    if path is not None:
        save_picture(fig, path)
    return fig


# ---------------------------------------------------------------------------- draw_labyrinth
def draw_labyrinth(
    mdp: LabeledMDP,
    values=None,
    path=None,
    *,
    ax=None,
    title=None,
    sizes=None,
    cmap: str = "coolwarm",
    label: str = "value",
    limit: float | None = None,
    colorbar: bool = True,
):
    """The binary-tree maze of a ``labyrinth`` MDP as a layered tree (root on top), each node
    coloured by ``values[s]`` (e.g. the reward for entering it) and sized by ``sizes[s]``
    (e.g. visit counts); labelled nodes other than the default are annotated."""
    src = mdp.source
    if src is None or src.generator != "labyrinth":
        raise ModelError(f"mdp {mdp.name!r} is not a labyrinth: draw_labyrinth needs an MDP made by 'labyrinth'")
    S = mdp.n_states
    s = np.arange(S)
    depth = np.floor(np.log2(s + 1)).astype(int)
    x = (s - (2**depth - 1) + 0.5) / 2.0**depth
    y = -depth.astype(float)
    fig = None
    if ax is None:
        fig = new_figure((9, 4.5))
        ax = fig.add_subplot()
    parents = (s[1:] - 1) // 2
    for child, par in zip(s[1:], parents):
        ax.plot([x[par], x[child]], [y[par], y[child]], color="0.75", lw=0.8, zorder=1)
    vals = np.zeros(S) if values is None else np.asarray(values, dtype=float)
    size = np.full(S, 30.0) if sizes is None else 15 + 285 * np.asarray(sizes, float) / max(np.max(sizes), 1)
    lim = limit if limit is not None else max(np.abs(vals).max(), 1e-12)
    sc = ax.scatter(x, y, c=vals, s=size, cmap=cmap, vmin=-lim, vmax=lim, edgecolors="0.3", linewidths=0.5, zorder=2)
    counts = np.bincount(mdp.labels, minlength=mdp.n_propositions)
    default = int(np.argmax(counts))
    for st in np.flatnonzero(mdp.labels != default):
        ax.annotate(
            f"{mdp.propositions[mdp.labels[st]]} ({mdp.states[st]})",
            (x[st], y[st]),
            xytext=(0, 9),
            textcoords="offset points",
            ha="center",
            fontsize=8,
            fontweight="bold",
        )
    ax.set_axis_off()
    if values is not None and colorbar:
        (fig or ax.figure).colorbar(sc, ax=ax, shrink=0.7, label=label)
    if title:
        ax.set_title(title)
    if path is not None and fig is not None:
        save_picture(fig, path)
    return fig or ax.figure
