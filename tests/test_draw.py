"""rmtk.io.draw: matplotlib pictures of machines, grid worlds and the labyrinth."""

from __future__ import annotations

import itertools
import xml.etree.ElementTree as ET

import attrs
import numpy as np
import pytest
from example_machines import machine, patrol, tiny

from rmtk import GeneratorCall, LabeledMDP, ModelError, RewardMachine, RmtkError
from rmtk.io.dot import edge_groups
from rmtk.io.draw import draw_grid, draw_labyrinth, draw_machine, grid_cells, proposition_colours

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


# ---------------------------------------------------------------------------- draw_machine
def _no_pyplot_figures():
    from matplotlib._pylab_helpers import Gcf

    return not Gcf.get_all_fig_managers()


def test_draw_machine_writes_png_and_svg(tmp_path):
    m = patrol()
    fig = draw_machine(m, tmp_path / "patrol.png")
    data = (tmp_path / "patrol.png").read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 5000
    draw_machine(m, str(tmp_path / "patrol.svg"))
    root = ET.parse(tmp_path / "patrol.svg").getroot()
    assert root.tag.endswith("svg")
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert sorted(texts) == sorted(
        ["u0", "u1", "u2", "u3", "start", "A", "B", "C", "D / 1", "B | C | D", "A | C | D", "A | B | D", "A | B | C"]
    )
    assert _no_pyplot_figures()


def test_draw_machine_rejects_unknown_extension(tmp_path):
    with pytest.raises(RmtkError, match=r"\.png or \.svg"):
        draw_machine(tiny(), tmp_path / "picture.xyz")


def _overlaps(fig):
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in fig.axes[0].texts]
    bad = []
    for (ta, a), (tb, b) in itertools.combinations(boxes, 2):
        w = min(a.x1, b.x1) - max(a.x0, b.x0)
        h = min(a.y1, b.y1) - max(a.y0, b.y0)
        if w > 0.5 and h > 0.5:
            bad.append((ta, tb))
    return bad


@pytest.mark.parametrize("m", [patrol(), tiny()] + [machine(n, seed=n) for n in range(1, 5)], ids=lambda m: m.name)
def test_draw_machine_texts_do_not_overlap(m):
    assert _overlaps(draw_machine(m)) == []


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6])
def test_draw_machine_one_to_six_nodes_into_a_given_axes(n):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(4, 4))
    ax = fig.add_subplot()
    m = machine(n, seed=10 + n)
    assert draw_machine(m, ax=ax) is fig
    names = {t.get_text() for t in ax.texts}
    assert set(m.nodes) | {"start"} <= names
    # one arrow per (u, v, reward) group, plus the start arrow
    from matplotlib.patches import FancyArrowPatch

    assert sum(isinstance(p, FancyArrowPatch) for p in ax.patches) == len(edge_groups(m)) + 1


def test_draw_machine_without_defaults_drops_the_default_loops():
    fig = draw_machine(patrol(), show_defaults=False, title="patrol")
    texts = sorted(t.get_text() for t in fig.axes[0].texts)
    assert texts == ["A", "B", "C", "D / 1", "start", "u0", "u1", "u2", "u3"]
    assert fig.axes[0].get_title() == "patrol"


def test_draw_machine_rounds_rewards_in_labels():
    m = RewardMachine.from_transitions(
        {("u0", "a"): ("u1", 98.7979798), ("u1", "a"): ("u0", -0.001999999999), ("u1", "b"): ("u1", 0.2)}, "ab"
    )
    texts = {t.get_text() for t in draw_machine(m).axes[0].texts}
    assert {"a / 98.798", "a / -0.002", "b / 0.2"} <= texts


# ---------------------------------------------------------------------------- parallel transitions
def parallel() -> RewardMachine:
    """u1 → u2 on B (reward 0) and on D (reward 1), and u2 → u1 on A."""
    return RewardMachine.from_transitions(
        {("u0", "A"): "u1", ("u1", "B"): "u2", ("u1", "D"): ("u2", 1.0), ("u2", "A"): ("u1", -0.5)},
        "ABCD",
        name="parallel",
    )


def stack_avoid_learned() -> RewardMachine:
    """The machine learned on stack_avoid (models/stack_avoid.rm): u1 → u2 on B and on D."""
    return RewardMachine.from_transitions(
        {
            ("u0", "A"): "u1",
            ("u0", "B"): ("u0", -0.001999999999),
            ("u0", "I"): ("u0", -0.001999999999),
            ("u0", "D"): "u2",
            ("u1", "A"): ("u1", -0.002020202019),
            ("u1", "I"): ("u1", -0.002020202019),
            ("u1", "B"): ("u2", 98.7979798),
            ("u1", "D"): ("u2", -0.002020202022),
        },
        "ABDI",
        name="stack_avoid_learned",
    )


def both_ways() -> RewardMachine:
    """Three reward groups from u0 to u1, two back, and two self-loops on each node."""
    return RewardMachine.from_transitions(
        {
            ("u0", "a"): "u1",
            ("u0", "b"): ("u1", 1.0),
            ("u0", "c"): ("u1", -1.0),
            ("u0", "d"): ("u0", 2.0),
            ("u1", "a"): ("u0", 2.0),
            ("u1", "b"): ("u0", 0.5),
            ("u1", "c"): ("u1", -0.5),
        },
        "abcde",
        name="both_ways",
    )


def _shafts(fig) -> dict[str, tuple[np.ndarray, float]]:
    """Each text → 50 points, in pixels, along the shaft of the arrow nearest to its centre,
    and the distance in pixels from that centre to the shaft."""
    from matplotlib.patches import FancyArrowPatch

    fig.canvas.draw()
    ax = fig.axes[0]
    renderer = fig.canvas.get_renderer()
    shafts = []
    for patch in ax.patches:
        if isinstance(patch, FancyArrowPatch):
            # the shaft: the first curve of the path (a move comes first, the head last)
            segment = next(seg for seg, _ in patch.get_path().iter_bezier() if seg.degree > 0)
            shafts.append(ax.transData.transform(segment(np.linspace(0, 1, 50))))
    out = {}
    for text in ax.texts:
        box = text.get_window_extent(renderer)
        centre = np.array([(box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2])
        distances = [np.min(np.linalg.norm(s - centre, axis=1)) for s in shafts]
        out[text.get_text()] = shafts[int(np.argmin(distances))], float(min(distances))
    return out


def _apart(a: np.ndarray, b: np.ndarray) -> float:
    """The least distance in pixels between the middle 80% of two shafts."""
    a, b = a[5:-5], b[5:-5]
    return float(np.min(np.linalg.norm(a[:, None, :] - b[None, :, :], axis=2)))


@pytest.mark.parametrize(
    "m, arcs, loops",
    [
        (parallel(), [["B", "D / 1", "A / -0.5"]], []),
        (stack_avoid_learned(), [["B / 98.798", "D / -0.0020202"]], []),
        (both_ways(), [["c / -1", "a", "b / 1", "a / 2", "b / 0.5"]], [["d / 2", "e"], ["c / -0.5", "d | e"]]),
    ],
    ids=lambda x: getattr(x, "name", ""),
)
def test_draw_machine_parallel_transitions_are_separate_arrows(m, arcs, loops, tmp_path):
    """Groups sharing their two nodes (either way, or a node's self-loops) are separate curves,
    each arc's label on its own curve, and no two labels overlap (on the rendered figure)."""
    fig = draw_machine(m, tmp_path / f"{m.name}.png")
    assert _overlaps(fig) == []
    shafts = _shafts(fig)
    for labels in arcs + loops:
        for a, b in itertools.combinations(labels, 2):
            (sa, _), (sb, _) = shafts[a], shafts[b]
            assert _apart(sa, sb) > 4, (a, b)
            assert np.linalg.norm(sa[25] - sb[25]) > 15, (a, b)  # their middles
    for labels in arcs:
        assert all(shafts[label][1] < 3 for label in labels)


def test_draw_machine_colours_each_parallel_arrow_by_its_reward():
    from matplotlib.colors import to_hex
    from matplotlib.patches import FancyArrowPatch

    fig = draw_machine(parallel())
    ax = fig.axes[0]
    texts = {t.get_text(): to_hex(t.get_color()) for t in ax.texts}
    assert texts["D / 1"] == "#1a7f37" and texts["A / -0.5"] == "#c0392b" and texts["B"] == "#2b2b2b"
    colours = [to_hex(p.get_edgecolor()) for p in ax.patches if isinstance(p, FancyArrowPatch)]
    assert colours.count("#1a7f37") == 1 and colours.count("#c0392b") == 1


# ---------------------------------------------------------------------------- draw_grid
ROOMS = (("D", "D", "C", "C"), ("D", None, "C", "C"), ("A", "A", "B", "B"), ("A", "A", "B", "B"))


def rooms(start=((0, 0), (2, 0)), initial=None) -> LabeledMDP:
    """The 4x4 rooms map with one blocked cell, built by hand: states are the free cells in
    column-major order; one action that stays put (the picture only needs the map)."""
    cells = [(r, c) for c in range(4) for r in range(4) if ROOMS[r][c] is not None]
    S = len(cells)
    mdp = LabeledMDP.from_dense(
        np.eye(S)[None],
        [ROOMS[r][c] for r, c in cells],
        ["A", "B", "C", "D"],
        initial,
        states=[f"r{r}c{c}" for r, c in cells],
        name="rooms",
    )
    params = (("rows", ROOMS), ("slip", 0.1), ("start", start), ("gamma", 0.99))
    return attrs.evolve(mdp, source=GeneratorCall("gridworld", params))


def _cell_colours(ax):
    from matplotlib.colors import to_hex
    from matplotlib.patches import Rectangle

    H = len(ROOMS)
    return {
        (H - 1 - int(p.get_y()), int(p.get_x())): to_hex(p.get_facecolor())
        for p in ax.patches
        if isinstance(p, Rectangle) and p.get_width() == 1 and p.fill
    }


def test_draw_grid_colours_labels_and_start_cells(tmp_path):
    from matplotlib.colors import to_hex
    from matplotlib.patches import Polygon

    mdp = rooms()
    fig = draw_grid(mdp, tmp_path / "rooms.png")
    assert (tmp_path / "rooms.png").read_bytes().startswith(PNG_MAGIC)
    ax = fig.axes[0]
    colours = proposition_colours("ABCD")
    assert len(set(colours.values())) == 4
    cells = _cell_colours(ax)
    assert len(cells) == 16
    assert cells[(1, 1)] == "#3d3d3d"
    assert all(cells[(r, c)] == to_hex(colours[ROOMS[r][c]]) for r in range(4) for c in range(4) if ROOMS[r][c])
    assert sorted(t.get_text() for t in ax.texts) == sorted(p for row in ROOMS for p in row if p)
    assert sum(isinstance(p, Polygon) for p in ax.patches) == 2  # start triangles at (0, 0) and (2, 0)
    assert ax.get_title() == "rooms"
    draw_grid(mdp, tmp_path / "rooms.svg")
    assert ET.parse(tmp_path / "rooms.svg").getroot().tag.endswith("svg")
    assert _no_pyplot_figures()


def test_draw_grid_start_from_initial_distribution_and_rewards():
    init = np.zeros(15)
    init[[0, 4]] = 0.5  # cells (0, 0) and (0, 1) in column-major order
    mdp = rooms(start=None, initial=init)
    assert grid_cells(mdp)[:5] == [(0, 0), (1, 0), (2, 0), (3, 0), (0, 1)]
    fig = draw_grid(mdp, rewards={"D": 1.0})
    ax = fig.axes[0]
    triangles = [p for p in ax.patches if type(p).__name__ == "Polygon"]
    corners = sorted((round(p.get_xy()[0][0] - 0.1), round(p.get_xy()[0][1] - 0.9)) for p in triangles)
    assert corners == [(0, 3), (1, 3)]  # (x, y) of rows 0, columns 0 and 1
    assert sorted(t.get_text() for t in ax.texts).count("1") == 3  # the three D cells
    uniform = draw_grid(rooms(start=None))
    assert "any free cell" in uniform.axes[0].get_title()
    values = draw_grid(mdp, rewards=np.arange(15) / 10)
    assert "1.4" in [t.get_text() for t in values.axes[0].texts]
    with pytest.raises(ModelError, match="15 free cells"):
        draw_grid(mdp, rewards=[1.0, 2.0])
    with pytest.raises(ModelError, match="no cell is labelled 'Z'"):
        draw_grid(mdp, rewards={"Z": 1.0})


def test_draw_grid_rejects_other_mdps():
    plain = LabeledMDP.from_dense(np.eye(2)[None], ["A", "B"], name="plain")
    with pytest.raises(ModelError, match="'plain' is an explicit MDP, not a grid world"):
        draw_grid(plain)
    blocks = attrs.evolve(plain, source=GeneratorCall("blockworld", ()))
    with pytest.raises(ModelError, match="'blockworld' generator, not a grid world"):
        draw_grid(blocks)


def test_draw_grid_into_a_given_axes():
    from matplotlib.figure import Figure

    fig = Figure()
    ax1, ax2 = fig.subplots(1, 2)
    assert draw_grid(rooms(), ax=ax2) is fig
    assert draw_machine(patrol(), ax=ax1) is fig
    assert len(ax2.texts) == 15


# ---------------------------------------------------------------------------- draw_labyrinth
def test_draw_labyrinth_alone_and_into_a_given_axes(tmp_path):
    from matplotlib.figure import Figure

    from rmtk.envs import labyrinth

    mdp = labyrinth(depth=3, labels=(("h", (0,)), ("w", (10,))))
    values = np.linspace(-1, 1, mdp.n_states)
    fig = draw_labyrinth(mdp, values, tmp_path / "maze.png", title="maze", sizes=np.arange(mdp.n_states))
    assert (tmp_path / "maze.png").read_bytes().startswith(PNG_MAGIC)
    assert fig.axes[0].get_title() == "maze" and len(fig.axes) == 2  # the maze and its colour bar
    assert sorted(t.get_text() for t in fig.axes[0].texts) == ["h (n0)", "w (n10)"]
    own = Figure()
    assert draw_labyrinth(mdp, ax=own.add_subplot()) is own and len(own.axes) == 1
    with pytest.raises(ModelError, match="is not a labyrinth"):
        draw_labyrinth(rooms())
    assert _no_pyplot_figures()
