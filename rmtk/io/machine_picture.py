"""Pictures of reward machines: nodes on a circle in breadth-first order, arcs bent apart where
edges run both ways, self-loops turned away from the centre, labels placed where they overlap
least. Edges are the ``(source, target, reward)`` groups of :func:`rmtk.io.dot.edge_groups`,
labelled as in :func:`rmtk.io.dot.edge_label` (rewards rounded for reading). matplotlib is
imported when drawing, not with this module."""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import ties
from .dot import edge_groups, edge_label
from .figures import new_figure, save_picture, text_width

if TYPE_CHECKING:
    from ..machine.model import RewardMachine

__all__ = ["draw_machine"]


def _unit(angle: float) -> np.ndarray:
    return np.array([math.cos(angle), math.sin(angle)])


_NODE_FILL = "#dbe8f6"
_NODE_EDGE = "#1f3b5c"
_EDGE = "#2b2b2b"
_DEFAULT = "#8a8a8a"
_POSITIVE = "#1a7f37"
_NEGATIVE = "#c0392b"

#: How far an arc bulges: its control point lies this fraction of the chord off the chord's
#: midpoint; each further arc between the same two nodes bulges ``_BULGE_STEP`` more (:func:`_bulges`).
_BULGE = 0.22
_BULGE_STEP = 0.2


def _reward_colour(r: float, loop: bool) -> str:
    if r > 0:
        return _POSITIVE
    if r < 0:
        return _NEGATIVE
    return _DEFAULT if loop else _EDGE


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


def _inside(points: np.ndarray, box: tuple[float, float, float, float]) -> int:
    """How many of ``points`` (an ``(m, 2)`` array) lie in ``box``."""
    x, y = points[:, 0], points[:, 1]
    return int(np.count_nonzero((x > box[0]) & (x < box[2]) & (y > box[1]) & (y < box[3])))


def _arc(pu: np.ndarray, pv: np.ndarray, R: float, bulge: float):
    """The arc from the node at ``pu`` to the node at ``pv`` (radius ``R``) whose control point
    lies ``bulge`` chord lengths to the right of the chord: ``(start, end, control point, rad)``,
    ``rad`` as matplotlib's ``arc3`` connection style wants it for the same curve."""
    d = pv - pu
    ctrl = (pu + pv) / 2 + bulge * np.array([d[1], -d[0]])
    pa = pu + R * (ctrl - pu) / np.linalg.norm(ctrl - pu)
    pb = pv + R * (ctrl - pv) / np.linalg.norm(ctrl - pv)
    d2 = pb - pa
    rad = float(np.dot(ctrl - (pa + pb) / 2, [d2[1], -d2[0]]) / np.dot(d2, d2))
    return pa, pb, ctrl, rad


def _loop(c: np.ndarray, a: float, half: float, R: float):
    """A self-loop on the node at ``c`` (radius ``R``) pointing at the angle ``a`` and spanning
    ``2 * half``: its Bézier vertices, and where and how to anchor its label at its tip
    (``(point, ha, va)``)."""
    L = 3.0 * R
    verts = [
        c + R * _unit(a + 0.75 * half),
        c + L * _unit(a + half),
        c + L * _unit(a - half),
        c + R * _unit(a - 0.75 * half),
    ]
    tip = 0.125 * verts[0] + 0.375 * verts[1] + 0.375 * verts[2] + 0.125 * verts[3]
    anchor = c + (np.linalg.norm(tip - c) + 0.04) * _unit(a)
    ca, sa = math.cos(a), math.sin(a)
    ha = "left" if ca > 0.35 else "right" if ca < -0.35 else "center"
    va = "bottom" if sa > 0.35 else "top" if sa < -0.35 else "center"
    return verts, anchor, ha, va


def _bulges(forward: int, backward: int, inward: int) -> tuple[list[float], list[float]]:
    """The bulges of ``forward`` arcs u→v and ``backward`` arcs v→u, each to the right of its
    own direction when positive; ``inward`` is the side of u→v facing the centre of the layout
    (1 right, -1 left, 0 neither).

    The first arc of each direction bulges ``_BULGE`` to its right, so u→v and v→u never
    overlap. Each further arc takes the next slot, ``_BULGE_STEP`` further out, on the other
    side while that side is empty, else on its own side unless that side faces the centre,
    where a wide arc would run into the arcs of the neighbouring nodes.
    """
    count = {1: 0, -1: 0}  # arcs on each side of u→v

    def take(side: int) -> float:
        count[side] += 1
        return side * (_BULGE + (count[side] - 1) * _BULGE_STEP)

    fw = [take(1)] if forward else []
    bw = [take(-1)] if backward else []
    for arcs, own, m in ((fw, 1, forward), (bw, -1, backward)):
        for _ in range(m - 1):
            arcs.append(take(-own if count[-own] == 0 or own == inward else own))
    return fw, [-b for b in bw]


def _bezier(pa: np.ndarray, ctrl: np.ndarray, pb: np.ndarray, t) -> np.ndarray:
    """Points of the quadratic Bézier curve ``pa, ctrl, pb`` at the parameters ``t``."""
    t = np.asarray(t, dtype=float)[..., None]
    return (1 - t) ** 2 * pa + 2 * t * (1 - t) * ctrl + t**2 * pb


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
    breadth-first order. Every ``(source, target, reward)`` group is its own arrow, coloured by
    its reward (green positive, red negative) and labelled as in
    :func:`rmtk.io.dot.edge_label`, so that parallel transitions with different rewards are
    told apart. Between two nodes the arrows are arcs of different bulges (``u→v`` and
    ``v→u`` on opposite sides, see :func:`_bulges`), each labelled near its midpoint, moved
    along its own arc when that spot is taken by another label or hides another arc between
    the same nodes. Self-loops are small loops outside the circle, fanned out when a node has
    several, labelled at their tip (grey for the 0-reward defaults, left out with
    ``show_defaults=False``). An arrow marked "start" points at the initial node.
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

    # --- the reward groups of each (u, v) pair: one arrow and one label each
    pairs: dict[tuple[int, int], list[tuple[float, tuple[str, ...]]]] = {}
    for u, v, r, letters in edge_groups(machine, show_defaults=show_defaults):
        pairs.setdefault((u, v), []).append((r, letters))

    arrows: list[tuple[str, Any, str]] = []  # ("arc", (pa, pb, rad), colour) | ("loop", verts, colour)
    labels: list[tuple[float, float, str, str, str, str]] = []  # x, y, ha, va, text, colour
    occupied: list[tuple[float, float, float, float]] = [
        (pos[u][0] - R, pos[u][1] - R, pos[u][0] + R, pos[u][1] + R) for u in range(n)
    ]
    extent = list(occupied)

    def size(text: str) -> tuple[float, float]:
        return text_width(text, fs_label) * pt + 0.06, lh + 0.03

    # self-loops first, fanned out around the node's loop direction: their labels have fixed
    # places outside the circle
    for (u, v), groups in sorted(pairs.items()):
        if u != v:
            continue
        half = math.radians(min(40.0, 70.0 / len(groups)))  # half the angle one loop spans
        for j, (r, letters) in enumerate(groups):
            a = loop_dir[u] + (2 * j + 1 - len(groups)) * half
            verts, anchor, ha, va = _loop(pos[u], a, half, R)
            text = edge_label(letters, r)
            box = _box(anchor[0], anchor[1], *size(text), ha, va)
            arrows.append(("loop", verts, _reward_colour(r, True)))
            labels.append((anchor[0], anchor[1], ha, va, text, _reward_colour(r, True)))
            occupied.append(box)
            extent += [box, tuple(np.min(verts, axis=0)) + tuple(np.max(verts, axis=0))]

    # arcs between distinct nodes, one per reward group (see _bulges)
    def by_chord_length(ps: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """``ps`` shortest chord first; chords within rmtk.ties.TOL by node numbers."""
        length = [float(np.linalg.norm(pos[u] - pos[v])) for u, v in ps]
        return [ps[i] for i in ties.lexsort(([v for _, v in ps], [u for u, _ in ps], length))]

    bulges: dict[tuple[int, int], list[float]] = {}
    for u, v in {(min(p), max(p)) for p in pairs if p[0] != p[1]}:
        d, mid = pos[v] - pos[u], (pos[u] + pos[v]) / 2
        out = float(np.dot([d[1], -d[0]], mid))  # > 0: the right of u→v faces away from the centre
        inward = -1 if out > 1e-9 else 1 if out < -1e-9 else 0
        bulges[(u, v)], bulges[(v, u)] = _bulges(len(pairs.get((u, v), ())), len(pairs.get((v, u), ())), inward)
    arcs = []  # (u, v, reward, letters, (pa, pb, ctrl, rad)), shortest chords first
    for u, v in by_chord_length([(u, v) for u, v in pairs if u != v]):
        for (r, letters), bulge in zip(pairs[(u, v)], bulges[(u, v)]):
            arcs.append((u, v, r, letters, _arc(pos[u], pos[v], R, bulge)))
    curves = [_bezier(pa, ctrl, pb, np.linspace(0.0, 1.0, 41)) for *_, (pa, pb, ctrl, _) in arcs]
    extent += [tuple(c.min(axis=0)) + tuple(c.max(axis=0)) for c in curves]

    # their labels, shortest chords first (they have the least room): the first spot along the
    # arc that overlaps no label or node, else the least overlap; among equal overlaps, the
    # spot that hides the fewest points of the other arcs between the same two nodes
    for i, (u, v, r, letters, (pa, pb, ctrl, rad)) in enumerate(arcs):
        siblings = [curves[j] for j, arc in enumerate(arcs) if j != i and {arc[0], arc[1]} == {u, v}]
        text = edge_label(letters, r)
        w, h = size(text)
        spots = []  # (overlap, hidden points, anchor, box) of every spot, in order of preference
        for t in (0.5, 0.42, 0.58, 0.34, 0.66, 0.27, 0.73):
            at = _bezier(pa, ctrl, pb, t)
            box = _box(at[0], at[1], w, h, "center", "center")
            spots.append((sum(_overlap(box, o) for o in occupied), sum(_inside(c, box) for c in siblings), at, box))
            if ties.at_most(spots[-1][0], 0.0) and spots[-1][1] == 0:
                break
        # the least overlap (equal within rmtk.ties.TOL), then the fewest hidden points, then the first
        _, _, at, box = spots[int(ties.lexsort(([s[1] for s in spots], [s[0] for s in spots]))[0])]
        arrows.append(("arc", (pa, pb, rad), _reward_colour(r, False)))
        labels.append((at[0], at[1], "center", "center", text, _reward_colour(r, False)))
        occupied.append(box)
        extent.append(box)

    # --- start arrow
    s_end = pos[init] + R * _unit(start_dir)
    s_begin = pos[init] + (R + 0.42) * _unit(start_dir)
    cs, ss = math.cos(start_dir), math.sin(start_dir)
    s_ha = "left" if cs > 0.35 else "right" if cs < -0.35 else "center"
    s_va = "bottom" if ss > 0.35 else "top" if ss < -0.35 else "center"
    s_text = s_begin + 0.03 * _unit(start_dir)
    extent.append(_box(s_text[0], s_text[1], text_width("start", fs_label) * pt, lh, s_ha, s_va))

    ext = np.array(extent)
    margin = 0.08
    x0, y0 = ext[:, 0].min() - margin, ext[:, 1].min() - margin
    x1, y1 = ext[:, 2].max() + margin, ext[:, 3].max() + margin

    if ax is None:
        head = 0.35 if title is not None else 0.0  # inches above the drawing for the title
        width, height = (x1 - x0) * scale, (y1 - y0) * scale
        fig = new_figure((width, height + head))
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
                posA=tuple(pa),
                posB=tuple(pb),
                connectionstyle=f"arc3,rad={rad:.6f}",
                arrowstyle="-|>",
                mutation_scale=14,
                shrinkA=0,
                shrinkB=0,
                lw=1.4,
                color=colour,
                zorder=2,
            )
        else:
            path_ = MPath(spec, [MPath.MOVETO, MPath.CURVE4, MPath.CURVE4, MPath.CURVE4])
            patch = FancyArrowPatch(path=path_, arrowstyle="-|>", mutation_scale=12, lw=1.2, color=colour, zorder=2)
        ax.add_patch(patch)
    bbox = dict(boxstyle="round,pad=0.12", facecolor="white", edgecolor="none", alpha=0.9)
    for x, y, ha, va, text, colour in labels:
        _, by0, _, by1 = _box(x, y, 0.0, lh, ha, va)
        ax.text(x, (by0 + by1) / 2, text, ha=ha, va="center", fontsize=fs_label, color=colour, bbox=bbox, zorder=4)
    ax.add_patch(
        FancyArrowPatch(
            posA=tuple(s_begin),
            posB=tuple(s_end),
            arrowstyle="-|>",
            mutation_scale=14,
            shrinkA=0,
            shrinkB=0,
            lw=1.4,
            color=_NODE_EDGE,
            zorder=2,
        )
    )
    ax.text(s_text[0], s_text[1], "start", ha=s_ha, va=s_va, fontsize=fs_label, color=_NODE_EDGE, zorder=4)
    for u in range(n):
        initial = u == init
        ax.add_patch(
            Circle(tuple(pos[u]), R, facecolor=_NODE_FILL, edgecolor=_NODE_EDGE, lw=2.2 if initial else 1.4, zorder=3)
        )
        name = machine.nodes[u]
        fs = max(5.0, min(fs_node, 0.85 * (2 * R / pt) / (0.62 * max(len(name), 1))))
        ax.text(
            pos[u][0],
            pos[u][1],
            name,
            ha="center",
            va="center",
            fontsize=fs,
            zorder=5,
            color=_NODE_EDGE,
            fontweight="bold" if initial else "normal",
        )
    if path is not None:
        save_picture(fig, path)
    return fig
