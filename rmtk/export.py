"""Reward machines and grid worlds out of rmtk: DOT text, a networkx graph, matplotlib
pictures, and the text format of the ``reward_machines`` research code (Toro Icarte et al.).

Edge labels
    Transitions are grouped by ``(source, target, reward)``; a group is labelled with its
    letters in alphabet order joined by ``" | "``, followed by ``" / r"`` when the reward ``r``
    is not zero (``"A | B / 1"``). The 0-reward self-loops (the *defaults* of an `.rm`
    machine) form one group per node; they can be left out with ``show_defaults=False``.

Pictures
    :func:`draw_machine` and :func:`draw_grid` use matplotlib's object-oriented API only
    (a :class:`matplotlib.figure.Figure` with an Agg canvas): they never touch ``pyplot``'s
    global state, so they are safe in scripts, tests and servers without a display.

The ``reward_machines`` text format
    Line 1 is the initial node (an integer), line 2 the Python list of terminal nodes, then
    one line per edge ``(u1, u2, 'formula', ConstantRewardFunction(r))``. A formula is a
    propositional formula over ``&``, ``|``, ``!``, ``True``, ``False`` (DNF in practice;
    parentheses are accepted too) and ``#`` starts a comment. In that code edges out of
    terminal nodes are ignored, every terminal node is one absorbing state with reward 0, and
    a ``(u, letter)`` pair that no formula matches leads to that terminal state. rmtk labels
    every MDP state with exactly one proposition, so a formula is evaluated, for each letter
    ``ℓ`` of the alphabet, with ``ℓ`` the only true proposition. :func:`read_rm_text` parses
    the file *without* ``eval``; :func:`write_rm_text` writes a machine back.
"""
from __future__ import annotations

import ast
import math
import os
import re
import zlib
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from .errors import DataError, ModelError, RmtkError
from .machine import RewardMachine
from .mdp import LabeledMDP

__all__ = [
    "to_dot",
    "to_networkx",
    "draw_machine",
    "draw_grid",
    "read_rm_text",
    "write_rm_text",
    "edge_groups",
    "edge_label",
    "grid_cells",
    "proposition_colours",
    "parse_formula",
    "FormulaError",
    "TERMINAL",
]

#: Name of the absorbing node that :func:`read_rm_text` adds for terminal nodes and for the
#: ``(node, letter)`` pairs no formula matches.
TERMINAL = "terminal"


# ---------------------------------------------------------------------------- edge groups
def _fmt_number(x: float) -> str:
    """Shortest text that reads back as exactly ``x`` (``1`` for 1.0)."""
    x = float(x)
    if x.is_integer() and abs(x) < 1e16:
        return str(int(x))
    return repr(x)


def edge_label(letters: Sequence[str], reward: float) -> str:
    """``"A | B"``, with ``" / r"`` appended when the reward ``r`` is not zero."""
    text = " | ".join(letters)
    return text if reward == 0 else f"{text} / {_fmt_number(reward)}"


def edge_groups(machine: RewardMachine, *, show_defaults: bool = True) -> list[tuple[int, int, float, tuple[str, ...]]]:
    """The transitions grouped by ``(source, target, reward)``, as
    ``(source index, target index, reward, letters)`` sorted by source, target and reward;
    letters in alphabet order. 0-reward self-loops are dropped when ``show_defaults`` is false.
    """
    groups: dict[tuple[int, int, float], list[str]] = {}
    for u in range(machine.n_nodes):
        for k, letter in enumerate(machine.alphabet):
            v, r = int(machine.delta_u[u, k]), float(machine.delta_r[u, k])
            if not show_defaults and v == u and r == 0.0:
                continue
            groups.setdefault((u, v, r + 0.0), []).append(letter)  # + 0.0: -0.0 → 0.0
    return [(u, v, r, tuple(ls)) for (u, v, r), ls in sorted(groups.items(), key=lambda kv: kv[0])]


# ---------------------------------------------------------------------------- DOT
def _dot_quote(s: str) -> str:
    """A DOT double-quoted string: backslashes and quotes escaped, newlines as ``\\n``."""
    s = s.replace("\\", "\\\\").replace('"', '\\"').replace("\r", "").replace("\n", "\\n")
    return f'"{s}"'


def to_dot(machine: RewardMachine, *, title: str | None = None, show_defaults: bool = True) -> str:
    """Graphviz DOT text of ``machine``.

    One edge per ``(source, target, reward)`` group (see :func:`edge_groups`); the 0-reward
    self-loops of a node are one grey edge (left out with ``show_defaults=False``); the initial
    node is marked by an arrow from an invisible point node. The output is deterministic:
    nodes in index order, edges sorted by source, target and reward.
    """
    start = "__start"
    while start in machine.nodes:
        start += "_"
    q = _dot_quote
    lines = [f"digraph {q(machine.name)} {{", "  rankdir=LR;"]
    if title is not None:
        lines.append(f"  label={q(title)};")
        lines.append("  labelloc=t;")
    lines.append("  node [shape=circle];")
    lines.append(f"  {q(start)} [shape=point, style=invis];")
    for name in machine.nodes:
        lines.append(f"  {q(name)};")
    lines.append(f"  {q(start)} -> {q(machine.nodes[machine.initial])};")
    for u, v, r, letters in edge_groups(machine, show_defaults=show_defaults):
        attrs_ = [f"label={q(edge_label(letters, r))}"]
        if u == v and r == 0:
            attrs_ += ["color=gray50", "fontcolor=gray50"]
        lines.append(f"  {q(machine.nodes[u])} -> {q(machine.nodes[v])} [{', '.join(attrs_)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------- networkx
def to_networkx(machine: RewardMachine):
    """A :class:`networkx.MultiDiGraph` of ``machine``.

    Nodes are the node names, with attributes ``initial`` (bool) and ``index``; there is one
    edge per ``(node, letter)`` (defaults included), keyed by the letter, with attributes
    ``letter`` and ``reward``. Graph attributes: ``name``, ``alphabet``, ``initial``.
    """
    import networkx as nx

    g = nx.MultiDiGraph(name=machine.name, alphabet=tuple(machine.alphabet), initial=machine.nodes[machine.initial])
    for i, name in enumerate(machine.nodes):
        g.add_node(name, initial=(i == machine.initial), index=i)
    for u, letter, v, r in machine.transitions(include_defaults=True):
        g.add_edge(u, v, key=letter, letter=letter, reward=r)
    return g


# ---------------------------------------------------------------------------- matplotlib helpers
def _new_figure(figsize: tuple[float, float]):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize)
    FigureCanvasAgg(fig)
    return fig


def _save(fig, path: str | os.PathLike, dpi: float = 150) -> None:
    suffix = Path(path).suffix.lower().lstrip(".")
    supported = fig.canvas.get_supported_filetypes()
    if suffix not in supported:
        raise RmtkError(
            f"cannot save a picture as {os.fspath(path)!r}: the file name must end in .png or .svg "
            f"(matplotlib also writes {', '.join('.' + s for s in sorted(supported) if s not in ('png', 'svg'))})"
        )
    try:
        fig.savefig(path, dpi=dpi, format=suffix, bbox_inches="tight", pad_inches=0.08)
    except OSError as e:
        raise RmtkError(f"cannot write the picture {os.fspath(path)!r}: {e.strerror or e}") from None


def _text_width(text: str, fontsize: float) -> float:
    """Rough width in points of one line of ``text`` (sans-serif)."""
    return 0.62 * fontsize * max((len(line) for line in text.split("\n")), default=0)


def _text_height(text: str, fontsize: float) -> float:
    return 1.25 * fontsize * (text.count("\n") + 1)


def _unit(angle: float) -> np.ndarray:
    return np.array([math.cos(angle), math.sin(angle)])


# ---------------------------------------------------------------------------- draw_machine
_NODE_FILL = "#dbe8f6"
_NODE_EDGE = "#1f3b5c"
_EDGE = "#2b2b2b"
_DEFAULT = "#8a8a8a"
_POSITIVE = "#1a7f37"
_NEGATIVE = "#c0392b"


def _reward_colour(r: float, loop: bool) -> str:
    if r > 0:
        return _POSITIVE
    if r < 0:
        return _NEGATIVE
    return _DEFAULT if loop else _EDGE


def _arrow_colour(rewards: Sequence[float], loop: bool) -> str:
    if all(r > 0 for r in rewards):
        return _POSITIVE
    if all(r < 0 for r in rewards):
        return _NEGATIVE
    return _DEFAULT if loop and all(r == 0 for r in rewards) else _EDGE


def _layout_order(machine: RewardMachine) -> list[int]:
    """Initial node first, then breadth-first (letters in alphabet order), then the rest."""
    order = machine.reachable()
    seen = set(order)
    return order + [u for u in range(machine.n_nodes) if u not in seen]


def _overlap(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> float:
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    return w * h if w > 0 and h > 0 else 0.0


def _box(x: float, y: float, w: float, h: float, ha: str, va: str) -> tuple[float, float, float, float]:
    x0 = {"left": x, "center": x - w / 2, "right": x - w}[ha]
    y0 = {"bottom": y, "center": y - h / 2, "top": y - h}[va]
    return (x0, y0, x0 + w, y0 + h)


def draw_machine(
    machine: RewardMachine,
    path: str | os.PathLike | None = None,
    *,
    ax=None,
    show_defaults: bool = True,
    title: str | None = None,
):
    """Draw ``machine`` with matplotlib and return the Figure.

    Nodes sit on a circle, the initial node at the left and the others clockwise in
    breadth-first order; edges are arcs (so ``u→v`` and ``v→u`` never overlap) labelled as
    in :func:`edge_label`, near their midpoint (moved along the arc when that spot is taken),
    one line per reward; self-loops are small loops outside the circle (grey for the
    0-reward defaults, left out with ``show_defaults=False``); rewards are green (positive)
    or red (negative); an arrow marked "start" points at the initial node.
    With ``ax`` the drawing goes into that Axes (its figure is returned); with ``path`` the
    figure is saved there (PNG or SVG, chosen by the file extension, 150 dpi).
    """
    from matplotlib.patches import Circle, FancyArrowPatch
    from matplotlib.path import Path as MPath

    n = machine.n_nodes
    order = _layout_order(machine)
    scale = 1.5  # inches per data unit (when this function makes the figure)
    pt = 1.0 / (72.0 * scale)  # data units per point

    # --- node positions and sizes
    rho = max(1.0, 0.65 / math.sin(math.pi / n)) if n > 1 else 0.0
    pos = np.zeros((n, 2))
    outward = np.zeros(n)  # angle pointing away from the layout centre
    if n == 1:
        outward[order[0]] = math.pi / 2
    else:
        for i, u in enumerate(order):
            a = math.pi - 2 * math.pi * i / n
            pos[u] = rho * _unit(a)
            outward[u] = a
    R = 0.22
    fs_label = 10 if n <= 6 else 8
    fs_node = 12 if n <= 6 else 10
    lh = 1.3 * fs_label * pt  # label line height in data units

    init = machine.initial
    loop_dir = outward.copy()
    if n == 1:
        start_dir = math.pi
    else:
        start_dir = outward[init] + math.radians(40)
        loop_dir[init] = outward[init] - math.radians(45)

    # --- one arrow per (u, v) pair; its label has one line per reward group
    pairs: dict[tuple[int, int], list[tuple[float, tuple[str, ...]]]] = {}
    for u, v, r, letters in edge_groups(machine, show_defaults=show_defaults):
        pairs.setdefault((u, v), []).append((r, letters))

    arrows: list[tuple[str, Any, str]] = []  # ("arc", (pa, pb, rad), colour) | ("loop", verts, colour)
    labels: list[tuple[float, float, str, str, list[tuple[str, str]]]] = []  # x, y, ha, va, [(text, colour)]
    occupied: list[tuple[float, float, float, float]] = [
        (pos[u][0] - R, pos[u][1] - R, pos[u][0] + R, pos[u][1] + R) for u in range(n)
    ]
    extent = list(occupied)

    def label_lines(groups, loop):
        return [(edge_label(letters, r), _reward_colour(r, loop)) for r, letters in groups]

    def size(lines):
        return max(_text_width(t, fs_label) for t, _ in lines) * pt + 0.06, len(lines) * lh + 0.03

    # self-loops first: their labels have fixed places outside the circle
    for (u, v), groups in sorted(pairs.items()):
        if u != v:
            continue
        a, c, L = loop_dir[u], pos[u], 3.0 * R
        verts = [
            c + R * _unit(a + math.radians(30)),
            c + L * _unit(a + math.radians(40)),
            c + L * _unit(a - math.radians(40)),
            c + R * _unit(a - math.radians(30)),
        ]
        tip = 0.125 * verts[0] + 0.375 * verts[1] + 0.375 * verts[2] + 0.125 * verts[3]
        anchor = c + (np.linalg.norm(tip - c) + 0.04) * _unit(a)
        ca, sa = math.cos(a), math.sin(a)
        ha = "left" if ca > 0.35 else "right" if ca < -0.35 else "center"
        va = "bottom" if sa > 0.35 else "top" if sa < -0.35 else "center"
        lines = label_lines(groups, True)
        box = _box(anchor[0], anchor[1], *size(lines), ha, va)
        arrows.append(("loop", verts, _arrow_colour([r for r, _ in groups], True)))
        labels.append((anchor[0], anchor[1], ha, va, lines))
        occupied.append(box)
        extent += [box, tuple(np.min(verts, axis=0)) + tuple(np.max(verts, axis=0))]

    # arcs between distinct nodes, shortest first (their labels have the least room)
    def chord_length(p: tuple[int, int]) -> tuple[float, tuple[int, int]]:
        return round(float(np.linalg.norm(pos[p[0]] - pos[p[1]])), 6), p

    arcs = sorted(((u, v) for u, v in pairs if u != v), key=chord_length)
    for u, v in arcs:
        groups = pairs[(u, v)]
        pu, pv = pos[u], pos[v]
        d = pv - pu
        ctrl = (pu + pv) / 2 + 0.22 * np.array([d[1], -d[0]])
        pa = pu + R * (ctrl - pu) / np.linalg.norm(ctrl - pu)
        pb = pv + R * (ctrl - pv) / np.linalg.norm(ctrl - pv)
        d2 = pb - pa
        rad = float(np.dot(ctrl - (pa + pb) / 2, [d2[1], -d2[0]]) / np.dot(d2, d2))
        lines = label_lines(groups, False)
        w, h = size(lines)
        best = None
        for t in (0.5, 0.42, 0.58, 0.34, 0.66, 0.27, 0.73):
            at = (1 - t) ** 2 * pa + 2 * t * (1 - t) * ctrl + t**2 * pb
            box = _box(at[0], at[1], w, h, "center", "center")
            cost = sum(_overlap(box, o) for o in occupied)
            if best is None or cost < best[0] - 1e-12:
                best = (cost, at, box)
            if cost == 0:
                break
        _, at, box = best
        arrows.append(("arc", (pa, pb, rad), _arrow_colour([r for r, _ in groups], False)))
        labels.append((at[0], at[1], "center", "center", lines))
        occupied.append(box)
        extent.append(box)

    # --- start arrow
    s_end = pos[init] + R * _unit(start_dir)
    s_begin = pos[init] + (R + 0.42) * _unit(start_dir)
    cs, ss = math.cos(start_dir), math.sin(start_dir)
    s_ha = "left" if cs > 0.35 else "right" if cs < -0.35 else "center"
    s_va = "bottom" if ss > 0.35 else "top" if ss < -0.35 else "center"
    s_text = s_begin + 0.03 * _unit(start_dir)
    extent.append(_box(s_text[0], s_text[1], _text_width("start", fs_label) * pt, lh, s_ha, s_va))

    ext = np.array(extent)
    margin = 0.08
    x0, y0 = ext[:, 0].min() - margin, ext[:, 1].min() - margin
    x1, y1 = ext[:, 2].max() + margin, ext[:, 3].max() + margin

    if ax is None:
        head = 0.35 if title is not None else 0.0  # inches above the drawing for the title
        width, height = (x1 - x0) * scale, (y1 - y0) * scale
        fig = _new_figure((width, height + head))
        ax = fig.add_axes((0, 0, 1, height / (height + head)))
        ax.set_aspect("equal", adjustable="box")
    else:
        fig = ax.figure
        ax.set_aspect("equal", adjustable="box")  # the limits below are fixed: shrink the box instead
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    ax.set_axis_off()
    if title is not None:
        ax.set_title(title, fontsize=12)

    for kind, spec, colour in arrows:
        if kind == "arc":
            pa, pb, rad = spec
            patch = FancyArrowPatch(
                posA=tuple(pa), posB=tuple(pb), connectionstyle=f"arc3,rad={rad:.6f}", arrowstyle="-|>",
                mutation_scale=14, shrinkA=0, shrinkB=0, lw=1.4, color=colour, zorder=2,
            )
        else:
            path_ = MPath(spec, [MPath.MOVETO, MPath.CURVE4, MPath.CURVE4, MPath.CURVE4])
            patch = FancyArrowPatch(path=path_, arrowstyle="-|>", mutation_scale=12, lw=1.2, color=colour, zorder=2)
        ax.add_patch(patch)
    bbox = dict(boxstyle="round,pad=0.12", facecolor="white", edgecolor="none", alpha=0.9)
    for x, y, ha, va, lines in labels:
        _, by0, _, by1 = _box(x, y, 0.0, len(lines) * lh, ha, va)
        for i, (text, colour) in enumerate(lines):
            ax.text(x, by1 - (i + 0.5) * lh, text, ha=ha, va="center", fontsize=fs_label, color=colour,
                    bbox=bbox, zorder=4)
    ax.add_patch(
        FancyArrowPatch(posA=tuple(s_begin), posB=tuple(s_end), arrowstyle="-|>", mutation_scale=14,
                        shrinkA=0, shrinkB=0, lw=1.4, color=_NODE_EDGE, zorder=2)
    )
    ax.text(s_text[0], s_text[1], "start", ha=s_ha, va=s_va, fontsize=fs_label, color=_NODE_EDGE, zorder=4)
    for u in range(n):
        initial = u == init
        ax.add_patch(Circle(tuple(pos[u]), R, facecolor=_NODE_FILL, edgecolor=_NODE_EDGE,
                            lw=2.2 if initial else 1.4, zorder=3))
        name = machine.nodes[u]
        fs = max(5.0, min(fs_node, 0.85 * (2 * R / pt) / (0.62 * max(len(name), 1))))
        ax.text(pos[u][0], pos[u][1], name, ha="center", va="center", fontsize=fs, zorder=5,
                color=_NODE_EDGE, fontweight="bold" if initial else "normal")
    if path is not None:
        _save(fig, path)
    return fig


# ---------------------------------------------------------------------------- draw_grid
def _lighten(hex_colour: str, amount: float) -> str:
    rgb = [int(hex_colour[i:i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{round(c + (255 - c) * amount):02x}" for c in rgb)


#: Light, well separated cell colours: matplotlib's tab10 hues (without grey and cyan) lightened,
#: then a few more for maps with many propositions.
_PALETTE = [
    _lighten(c, 0.45)
    for c in ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22")
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
    rows = kw.get("rows")
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
    title says so instead). ``rewards`` optionally adds a number under the label: either a
    mapping proposition → value, or one value per state (states are the free cells in
    column-major order), e.g. a reward or a value function. Raises :class:`ModelError` when
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
            numbers = {(r, c): float(rewards[rows[r][c]]) for r, c in cells if rows[r][c] in rewards}
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
        fig = _new_figure((W * cell_in + 0.4, H * cell_in + 0.75))
        ax = fig.add_axes((0.2 / (W * cell_in + 0.4), 0.15 / (H * cell_in + 0.75),
                           W * cell_in / (W * cell_in + 0.4), H * cell_in / (H * cell_in + 0.75)))
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
                ax.text(x + 0.5, y + 0.28, _fmt_short(numbers[(r, c)]), ha="center", va="center",
                        fontsize=7, color="#1b1b1b", zorder=3)
    for r, c in sorted(starts):
        if not (0 <= r < H and 0 <= c < W) or rows[r][c] is None:
            continue
        x, y = c, H - 1 - r
        ax.add_patch(Rectangle((x + 0.05, y + 0.05), 0.9, 0.9, fill=False, edgecolor="#111111", lw=2.2, zorder=2))
        ax.add_patch(Polygon([(x + 0.1, y + 0.9), (x + 0.3, y + 0.9), (x + 0.1, y + 0.7)], closed=True,
                             facecolor="#111111", edgecolor="none", zorder=2))
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
        _save(fig, path)
    return fig


def _fmt_short(x: float) -> str:
    return f"{x:.3g}" if not float(x).is_integer() else str(int(x))


# ---------------------------------------------------------------------------- reward_machines text format
_TOKEN = re.compile(r"\s*(?:(?P<op>[&|!()])|(?P<name>\w+)|(?P<bad>\S))")
_EDGE_SHAPE = "(u1, u2, 'formula', ConstantRewardFunction(r))"


#: Deepest nesting of parentheses accepted in a formula.
MAX_FORMULA_DEPTH = 50


class FormulaError(DataError):
    """A formula of the reward_machines format does not parse; ``column`` is 1-based."""

    def __init__(self, message: str, column: int):
        super().__init__(message)
        self.column = column


def parse_formula(formula: str):
    """Parse a propositional formula over ``& | ! ( ) True False`` into nested tuples:
    ``("or", [...])``, ``("and", [...])``, ``("not", f)``, ``("const", bool)``, ``("prop", name)``.
    Raises :class:`FormulaError` (message, 1-based column) on bad input."""
    tokens: list[tuple[str, str, int]] = []
    for m in _TOKEN.finditer(formula):
        col = m.start(m.lastgroup) + 1 if m.lastgroup else m.end() + 1
        if m.group("bad") is not None:
            raise FormulaError(f"unexpected character {m.group('bad')!r}", col)
        if m.group("op") is not None:
            tokens.append(("op", m.group("op"), col))
        elif m.group("name") is not None:
            tokens.append(("name", m.group("name"), col))
    end = len(formula) + 1
    i = 0
    depth = 0

    def peek():
        return tokens[i] if i < len(tokens) else ("end", "", end)

    def what(tok) -> str:
        return "the end of the formula" if tok[0] == "end" else repr(tok[1])

    def disjunction():
        nonlocal i
        items = [conjunction()]
        while peek()[:2] == ("op", "|"):
            i += 1
            items.append(conjunction())
        return items[0] if len(items) == 1 else ("or", items)

    def conjunction():
        nonlocal i
        items = [negation()]
        while peek()[:2] == ("op", "&"):
            i += 1
            items.append(negation())
        return items[0] if len(items) == 1 else ("and", items)

    def negation():
        nonlocal i
        count = 0
        while peek()[:2] == ("op", "!"):
            i += 1
            count += 1
        tree = atom()
        for _ in range(count % 2):  # !!a is a
            tree = ("not", tree)
        return tree

    def atom():
        nonlocal i, depth
        tok = peek()
        if tok[0] == "name":
            i += 1
            if tok[1] in ("True", "False"):
                return ("const", tok[1] == "True")
            return ("prop", tok[1])
        if tok[:2] == ("op", "("):
            if depth >= MAX_FORMULA_DEPTH:
                raise FormulaError(f"parentheses nested more than {MAX_FORMULA_DEPTH} deep", tok[2])
            i += 1
            depth += 1
            inner = disjunction()
            depth -= 1
            if peek()[:2] != ("op", ")"):
                raise FormulaError(f"expected ')', got {what(peek())}", peek()[2])
            i += 1
            return inner
        raise FormulaError(f"expected a proposition, 'True', 'False', '!' or '(', got {what(tok)}", tok[2])

    tree = disjunction()
    if i < len(tokens):
        raise FormulaError(f"expected '&', '|' or the end of the formula, got {what(peek())}", peek()[2])
    return tree


def _props(tree) -> set[str]:
    kind = tree[0]
    if kind == "prop":
        return {tree[1]}
    if kind == "not":
        return _props(tree[1])
    if kind in ("and", "or"):
        return set().union(*(_props(t) for t in tree[1]))
    return set()


def _holds(tree, letter: str) -> bool:
    """The formula's value when ``letter`` is the only true proposition."""
    kind = tree[0]
    if kind == "prop":
        return tree[1] == letter
    if kind == "const":
        return tree[1]
    if kind == "not":
        return not _holds(tree[1], letter)
    if kind == "and":
        return all(_holds(t, letter) for t in tree[1])
    return any(_holds(t, letter) for t in tree[1])


def _node_number(node: ast.AST) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int and node.value >= 0:
        return node.value
    return None


def _reward_number(node: ast.AST) -> float | None:
    sign = 1.0
    while isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        if isinstance(node.op, ast.USub):
            sign = -sign
        node = node.operand
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        try:
            value = sign * float(node.value)
        except OverflowError:
            return None
        return value if math.isfinite(value) else None
    return None


def _snippet(line: str) -> str:
    s = line.strip()
    return repr(s if len(s) <= 80 else s[:77] + "...")


def _source_text(text_or_path: str | os.PathLike) -> tuple[str, str, bool]:
    """``(text, file name for messages, whether it was read from a file)``."""
    if isinstance(text_or_path, os.PathLike) or (
        isinstance(text_or_path, str) and "\n" not in text_or_path and os.path.isfile(text_or_path)
    ):
        path = os.fspath(text_or_path)
        try:
            with open(path, encoding="utf-8") as f:
                return f.read(), path, True
        except FileNotFoundError:
            raise DataError(f"{path}: no such file") from None
        except UnicodeDecodeError as e:
            raise DataError(f"{path}: not a UTF-8 text file ({e.reason} at byte {e.start})") from None
        except OSError as e:
            raise DataError(f"{path}: cannot read the file: {e.strerror or e}") from None
    if not isinstance(text_or_path, str):
        raise DataError(f"read_rm_text expects the text of a file or a path, got {type(text_or_path).__name__}")
    return text_or_path, "<string>", False


def read_rm_text(
    text_or_path: str | os.PathLike, *, alphabet: Sequence[str] | None = None, name: str = "machine"
) -> RewardMachine:
    """Read a reward machine in the text format of the ``reward_machines`` research code.

    ``text_or_path`` is a path (a :class:`os.PathLike`, or a one-line string naming an
    existing file) or the text itself. The file is parsed with :func:`ast.parse` and only
    literal integers, lists of integers and edge tuples whose reward is
    ``ConstantRewardFunction(<number>)`` are accepted: nothing in it is ever executed.
    Blank lines and ``#`` comments are skipped (line numbers in messages are the file's).

    The machine has the non-terminal node numbers ``i`` that appear in the file, sorted, named
    ``u{i}``, and (only when needed) one absorbing node :data:`TERMINAL` with 0-reward
    self-loops, which stands for every terminal node and receives every ``(node, letter)``
    pair that no formula matches (with reward 0). Edges out of terminal nodes are ignored,
    as in the research code. ``alphabet`` defaults to the sorted propositions of the formulas.

    Raises :class:`DataError` (``FILE:LINE: ...``) on a malformed line, a bad formula, a
    proposition outside ``alphabet``, two edges between the same pair of nodes (the research
    code silently keeps only the last one), or two edges from one node matching the same
    letter with different targets or rewards.
    """
    text, file, from_file = _source_text(text_or_path)
    if text.startswith("\ufeff"):
        text = text[1:]
    content = [
        (no, line)
        for no, line in enumerate(text.splitlines(), start=1)
        if line.strip() and not line.lstrip().startswith("#")
    ]

    def fail(no: int | None, message: str):
        where = f"{file}:{no}" if no is not None else file
        raise DataError(f"{where}: {message}")

    def parse(no: int, line: str, expected: str, hint: str = "") -> ast.AST:
        try:
            return ast.parse(line.strip(), mode="eval").body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            fail(no, f"expected {expected}, got {_snippet(line)} (not a Python literal){hint}")

    # line 1: initial node
    if not content:
        fail(None, "expected the initial node (an integer) on line 1, got an empty text")
    # a one-line string that is not a number was probably meant as a file name
    hint = "" if from_file or "\n" in text.strip() else "; no file of that name exists either"
    no, line = content[0]
    initial = _node_number(parse(no, line, "the initial node (an integer)", hint))
    if initial is None:
        fail(no, f"expected the initial node (a non-negative integer), got {_snippet(line)}{hint}")

    # line 2: terminal nodes
    if len(content) < 2:
        fail(no + 1, "expected the list of terminal nodes (e.g. [2] or []) after the initial node, "
                     "got the end of the text")
    no, line = content[1]
    expr = parse(no, line, "the list of terminal nodes, e.g. [2] or []")
    terminal: set[int] = set()
    if not isinstance(expr, (ast.List, ast.Tuple, ast.Set)):
        fail(no, f"expected the list of terminal nodes, e.g. [2] or [], got {_snippet(line)}")
    for elt in expr.elts:
        num = _node_number(elt)
        if num is None:
            fail(no, "expected the list of terminal nodes (non-negative integers), e.g. [2] or [], "
                     f"got {_snippet(line)}")
        terminal.add(num)

    # edges
    edges: list[tuple[int, int, int, Any, float, str]] = []  # line, u1, u2, tree, reward, formula
    for no, line in content[2:]:
        expr = parse(no, line, _EDGE_SHAPE)
        if not (isinstance(expr, ast.Tuple) and len(expr.elts) == 4):
            fail(no, f"expected {_EDGE_SHAPE}, got {_snippet(line)}")
        a, b, f, rw = expr.elts
        u1, u2 = _node_number(a), _node_number(b)
        if u1 is None or u2 is None:
            fail(no, f"expected {_EDGE_SHAPE} with non-negative integer nodes u1 and u2, got {_snippet(line)}")
        if not (isinstance(f, ast.Constant) and isinstance(f.value, str)):
            fail(no, f"expected {_EDGE_SHAPE} with the formula as a quoted string, got {_snippet(line)}")
        if not (
            isinstance(rw, ast.Call) and isinstance(rw.func, ast.Name) and rw.func.id == "ConstantRewardFunction"
            and len(rw.args) == 1 and not rw.keywords
        ):
            fail(no, f"expected {_EDGE_SHAPE}: the reward must be ConstantRewardFunction(<number>) "
                     f"(other reward functions are not supported), got {_snippet(line)}")
        reward = _reward_number(rw.args[0])
        if reward is None:
            fail(no, f"expected {_EDGE_SHAPE} with a finite number r, got {_snippet(line)}")
        try:
            tree = parse_formula(f.value)
        except FormulaError as e:
            shown = f.value if len(f.value) <= 60 else f.value[:57] + "..."
            fail(no, f"bad formula {shown!r}: {e} (at character {e.column} of the formula)")
        edges.append((no, u1, u2, tree, reward, f.value))

    # alphabet
    mentioned = sorted(set().union(*(_props(e[3]) for e in edges))) if edges else []
    if alphabet is None:
        letters = mentioned
        if not letters:
            fail(None, "no proposition appears in the formulas; pass alphabet=[...] to read_rm_text")
    else:
        letters = [str(x) for x in alphabet]
        known = set(letters)
        for no, _, _, tree, _, formula in edges:
            unknown = sorted(_props(tree) - known)
            if unknown:
                fail(no, f"the formula {formula!r} uses {unknown[0]!r}, which is not in the alphabet {letters}")

    # nodes and transitions
    def target(v: int) -> str:
        return TERMINAL if v in terminal else f"u{v}"

    used = [e for e in edges if e[1] not in terminal]  # the research code skips edges out of terminal nodes
    numbers = {initial} | {e[1] for e in used} | {e[2] for e in used}
    live = sorted(numbers - terminal)
    nodes = [f"u{i}" for i in live]
    seen_pairs: dict[tuple[int, str], int] = {}
    trans: dict[tuple[str, str], tuple[str, float]] = {}
    origin: dict[tuple[str, str], int] = {}
    for no, u1, u2, tree, reward, formula in used:
        key = (u1, target(u2))
        if key in seen_pairs:
            what = "the terminal state" if u2 in terminal else f"node {u2}"
            fail(no, f"a second edge from node {u1} to {what} (the first is at line {seen_pairs[key]}); the research "
                     "code keeps only the last one: merge the formulas with '|' into one line")
        seen_pairs[key] = no
        for letter in letters:
            if not _holds(tree, letter):
                continue
            k = (f"u{u1}", letter)
            val = (target(u2), reward)
            if k in trans and trans[k] != val:
                fail(no, f"letter {letter!r} from node {u1} matches this edge and the edge at line {origin[k]}, "
                         "which lead to different nodes or rewards")
            trans[k] = val
            origin[k] = no
    need_terminal = initial in terminal or any(v == TERMINAL for v, _ in trans.values())
    for u in nodes:
        for letter in letters:
            if (u, letter) not in trans:
                trans[(u, letter)] = (TERMINAL, 0.0)
                need_terminal = True
    if need_terminal:
        nodes.append(TERMINAL)
    try:
        return RewardMachine.from_transitions(
            trans, letters, nodes=nodes, initial=target(initial), name=name
        )
    except ModelError as e:
        raise DataError(f"{file}: {e}") from None


_LETTER = re.compile(r"\w+\Z")


def write_rm_text(machine: RewardMachine, *, terminal: str | None = None) -> str:
    """``machine`` in the text format of the ``reward_machines`` research code.

    Nodes are numbered by their index and there is one line per pair of nodes ``(u, v)``
    joined by some letter, self-loops included (the format has no default transitions), with
    the letters as a disjunction ``a|b``. The terminal list is ``[]``: an rmtk machine has no
    terminal nodes, an absorbing node is written with its self-loops.

    ``terminal`` optionally names an absorbing node with 0 rewards (such as the
    :data:`TERMINAL` node made by :func:`read_rm_text`) to write as the terminal node
    ``[t]``: its own lines are left out, and when the letters leading into it carry different
    rewards the 0-reward ones are left out too (in the research code a letter no formula
    matches leads to the terminal state with reward 0). A letter may then appear in no
    formula: pass ``alphabet=`` when reading such a file back.

    Raises :class:`ModelError` when the format cannot express the machine: two letters from
    ``u`` to the same ``v`` with different rewards (the format has one reward per pair of
    nodes), or a letter that is not a word (letters, digits, ``_``) or is ``True``/``False``.
    """
    for letter in machine.alphabet:
        if not _LETTER.match(letter) or letter in ("True", "False"):
            raise ModelError(
                f"machine {machine.name!r}: the letter {letter!r} cannot be written in a reward_machines "
                "formula (use letters, digits and '_', not True/False)"
            )
    t = None
    if terminal is not None:
        t = machine.node_index(terminal)
        if not (np.all(machine.delta_u[t] == t) and np.all(machine.delta_r[t] == 0)):
            raise ModelError(
                f"machine {machine.name!r}: node {machine.nodes[t]!r} cannot be the terminal node: "
                "it must loop on every letter with reward 0"
            )
    lines = [f"{machine.initial} # initial state", f"[{'' if t is None else t}] # terminal states"]
    for u in range(machine.n_nodes):
        if u == t:
            continue
        by_target: dict[int, list[int]] = {}
        for k in range(len(machine.alphabet)):
            by_target.setdefault(int(machine.delta_u[u, k]), []).append(k)
        for v in sorted(by_target):
            ks = by_target[v]
            rewards = {float(machine.delta_r[u, k]) + 0.0 for k in ks}
            if v == t and len(rewards) > 1:
                ks = [k for k in ks if machine.delta_r[u, k] != 0]  # 0-reward letters fall into [t] anyway
                rewards.discard(0.0)
            if len(rewards) > 1:
                detail = ", ".join(f"{machine.alphabet[k]} → {_fmt_number(machine.delta_r[u, k])}" for k in ks)
                raise ModelError(
                    f"machine {machine.name!r}: the letters from {machine.nodes[u]!r} to {machine.nodes[v]!r} carry "
                    f"different rewards ({detail}); the reward_machines format has one reward per pair of nodes"
                )
            formula = "|".join(machine.alphabet[k] for k in ks)
            lines.append(f"({u},{v},'{formula}',ConstantRewardFunction({_fmt_number(rewards.pop())}))")
    return "\n".join(lines) + "\n"


def draw_labyrinth(mdp: LabeledMDP, values=None, path=None, *, ax=None, title=None, sizes=None,
                   cmap: str = "coolwarm", label: str = "value", limit: float | None = None, colorbar: bool = True):
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
        fig, ax = _new_figure((9, 4.5))
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
        ax.annotate(f"{mdp.propositions[mdp.labels[st]]} ({mdp.states[st]})", (x[st], y[st]), xytext=(0, 9),
                    textcoords="offset points", ha="center", fontsize=8, fontweight="bold")
    ax.set_axis_off()
    if values is not None and colorbar:
        (fig or ax.figure).colorbar(sc, ax=ax, shrink=0.7, label=label)
    if title:
        ax.set_title(title)
    if path is not None and fig is not None:
        _save(fig, path)
    return fig or ax.figure
