"""rmtk.export: DOT text, networkx graphs, matplotlib pictures of machines and grid worlds, and
the text format of the reward_machines research code (read without eval, written back)."""
from __future__ import annotations

import itertools
import xml.etree.ElementTree as ET

import attrs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmtk import DataError, GeneratorCall, LabeledMDP, ModelError, RewardMachine, RmtkError, isomorphic
from rmtk.export import (
    TERMINAL,
    draw_grid,
    draw_machine,
    edge_groups,
    grid_cells,
    proposition_colours,
    read_rm_text,
    to_dot,
    to_networkx,
    write_rm_text,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def patrol() -> RewardMachine:
    return RewardMachine.from_transitions(
        {("u0", "A"): "u1", ("u1", "B"): "u2", ("u2", "C"): "u3", ("u3", "D"): ("u0", 1.0)}, "ABCD", name="patrol"
    )


def tiny() -> RewardMachine:
    return RewardMachine.from_transitions({("u0", "a"): "u1", ("u1", "b"): ("u0", 1.0)}, "ab", name="tiny")


def machine(n: int, seed: int = 0, k: int = 3) -> RewardMachine:
    rng = np.random.default_rng(seed)
    return RewardMachine(
        nodes=[f"u{i}" for i in range(n)],
        alphabet=[chr(ord("a") + i) for i in range(k)],
        delta_u=rng.integers(0, n, size=(n, k)),
        delta_r=rng.choice([0.0, 0.0, 1.0, -1.0], size=(n, k)),
        name=f"m{n}",
    )


# ---------------------------------------------------------------------------- DOT
TINY_DOT = """\
digraph "tiny" {
  rankdir=LR;
  node [shape=circle];
  "__start" [shape=point, style=invis];
  "u0";
  "u1";
  "__start" -> "u0";
  "u0" -> "u0" [label="b", color=gray50, fontcolor=gray50];
  "u0" -> "u1" [label="a"];
  "u1" -> "u0" [label="b / 1"];
  "u1" -> "u1" [label="a", color=gray50, fontcolor=gray50];
}
"""


def test_to_dot_exact_text_of_a_two_node_machine():
    assert to_dot(tiny()) == TINY_DOT


def test_to_dot_without_defaults_with_title_and_grouped_letters():
    m = RewardMachine.from_transitions(
        {("u0", "a"): "u1", ("u0", "b"): "u1", ("u0", "c"): ("u1", 0.5), ("u1", "a"): ("u1", -2.0)}, "abc", name="g"
    )
    assert to_dot(m, title="grouped", show_defaults=False) == (
        'digraph "g" {\n'
        "  rankdir=LR;\n"
        '  label="grouped";\n'
        "  labelloc=t;\n"
        "  node [shape=circle];\n"
        '  "__start" [shape=point, style=invis];\n'
        '  "u0";\n'
        '  "u1";\n'
        '  "__start" -> "u0";\n'
        '  "u0" -> "u1" [label="a | b"];\n'
        '  "u0" -> "u1" [label="c / 0.5"];\n'
        '  "u1" -> "u1" [label="a / -2"];\n'
        "}\n"
    )
    # a rewarded self-loop is not a default: it stays; the 0-reward loop on b, c goes
    assert [g for g in edge_groups(m, show_defaults=False) if g[0] == g[1]] == [(1, 1, -2.0, ("a",))]


def test_to_dot_quotes_names_and_avoids_the_start_node_name():
    m = RewardMachine.from_transitions(
        {('say "hi"', "a"): ("back\\slash", 1.0)}, ["a"], nodes=['say "hi"', "back\\slash", "__start"], name='q"m'
    )
    dot = to_dot(m)
    assert dot.startswith('digraph "q\\"m" {\n')
    assert '  "say \\"hi\\"" -> "back\\\\slash" [label="a / 1"];\n' in dot
    assert '  "__start_" [shape=point, style=invis];\n' in dot and '  "__start_" -> "say \\"hi\\"";\n' in dot
    assert dot == to_dot(m)  # deterministic


# ---------------------------------------------------------------------------- networkx
def test_to_networkx_one_edge_per_node_and_letter():
    g = to_networkx(patrol())
    assert sorted(g.nodes) == ["u0", "u1", "u2", "u3"]
    assert g.number_of_edges() == 16
    assert {u: d["initial"] for u, d in g.nodes(data=True)} == {"u0": True, "u1": False, "u2": False, "u3": False}
    assert g.edges["u3", "u0", "D"] == {"letter": "D", "reward": 1.0}
    assert g.edges["u0", "u1", "A"] == {"letter": "A", "reward": 0.0}
    assert sorted(k for _, _, k in g.out_edges("u0", keys=True)) == ["A", "B", "C", "D"]
    assert g.number_of_edges("u0", "u0") == 3
    assert sum(d["reward"] for _, _, d in g.edges(data=True)) == 1.0
    assert g.graph["name"] == "patrol" and g.graph["initial"] == "u0"


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
    assert sorted(texts) == sorted(["u0", "u1", "u2", "u3", "start", "A", "B", "C", "D / 1",
                                    "B | C | D", "A | C | D", "A | B | D", "A | B | C"])
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
    # one arrow per (u, v) pair, plus the start arrow
    pairs = {(u, v) for u, v, _, _ in edge_groups(m)}
    from matplotlib.patches import FancyArrowPatch

    assert sum(isinstance(p, FancyArrowPatch) for p in ax.patches) == len(pairs) + 1


def test_draw_machine_without_defaults_drops_the_default_loops():
    fig = draw_machine(patrol(), show_defaults=False, title="patrol")
    texts = sorted(t.get_text() for t in fig.axes[0].texts)
    assert texts == ["A", "B", "C", "D / 1", "start", "u0", "u1", "u2", "u3"]
    assert fig.axes[0].get_title() == "patrol"


# ---------------------------------------------------------------------------- draw_grid
ROOMS = (("D", "D", "C", "C"), ("D", None, "C", "C"), ("A", "A", "B", "B"), ("A", "A", "B", "B"))


def rooms(start=((0, 0), (2, 0)), initial=None) -> LabeledMDP:
    """The 4x4 rooms map with one blocked cell, built by hand: states are the free cells in
    column-major order; one action that stays put (the picture only needs the map)."""
    cells = [(r, c) for c in range(4) for r in range(4) if ROOMS[r][c] is not None]
    S = len(cells)
    mdp = LabeledMDP.from_dense(
        np.eye(S)[None], [ROOMS[r][c] for r, c in cells], ["A", "B", "C", "D"], initial,
        states=[f"r{r}c{c}" for r, c in cells], name="rooms",
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


# ---------------------------------------------------------------------------- reward_machines text format
EXAMPLE = """\
0 # initial state
[2] # terminal state
(0,0,'!e&!n',ConstantRewardFunction(0))
(0,1,'e&!g&!n',ConstantRewardFunction(0))
(0,2,'e&g&!n',ConstantRewardFunction(1))
(1,1,'!g&!n',ConstantRewardFunction(0))
(1,2,'g&!n',ConstantRewardFunction(1))
"""


def test_read_the_official_example():
    m = read_rm_text(EXAMPLE)
    assert m.alphabet == ("e", "g", "n")
    assert m.nodes == ("u0", "u1", TERMINAL) and m.initial == 0
    # each letter alone: 'e&g&!n' never holds, uncovered pairs fall into the terminal node
    assert sorted(m.transitions()) == sorted([
        ("u0", "e", "u1", 0.0), ("u0", "g", "u0", 0.0), ("u0", "n", TERMINAL, 0.0),
        ("u1", "e", "u1", 0.0), ("u1", "g", TERMINAL, 1.0), ("u1", "n", TERMINAL, 0.0),
        ("terminal", "e", TERMINAL, 0.0), ("terminal", "g", TERMINAL, 0.0), ("terminal", "n", TERMINAL, 0.0),
    ])


def test_read_from_a_path_with_an_alphabet(tmp_path):
    (tmp_path / "tasks").mkdir()
    f = tmp_path / "tasks" / "t1.txt"
    f.write_text(EXAMPLE)
    for source in (f, str(f)):
        m = read_rm_text(source, alphabet=["n", "g", "e", "x"], name="office")
        assert m.name == "office" and m.alphabet == ("n", "g", "e", "x")
        # with only x true, '!e&!n' holds: u0 stays; n matches nothing: terminal
        assert m.step("u0", "x") == 0 and m.step("u0", "n") == m.node_index(TERMINAL)
    with pytest.raises(DataError, match=r"t1\.txt:3: the formula '!e&!n' uses 'e', which is not in the alphabet"):
        read_rm_text(f, alphabet=["n", "g"])


def test_read_semantics_terminal_nodes_true_false_parentheses_and_comments():
    text = """
# a comment line, then blank lines

3   # initial
[1, 7]
(3, 3, '!(a | b) & True', ConstantRewardFunction(0))   # stay
(3, 5, 'a', ConstantRewardFunction(-0.5))
(3, 1, 'b', ConstantRewardFunction(+2))
(5, 5, '!!(False | c) & NOTSc', ConstantRewardFunction(0))
(5, 7, 'a|b', ConstantRewardFunction(1e-3))
(1, 3, 'True', ConstantRewardFunction(5))
(7, 7, 'True', ConstantRewardFunction(9))
""".replace("NOTS", "!" * 2000)
    m = read_rm_text(text)
    assert m.nodes == ("u3", "u5", TERMINAL) and m.initial == 0 and m.alphabet == ("a", "b", "c")
    assert dict(((u, a), (v, r)) for u, a, v, r in m.transitions()) == {
        ("u3", "a"): ("u5", -0.5), ("u3", "b"): (TERMINAL, 2.0), ("u3", "c"): ("u3", 0.0),
        ("u5", "a"): (TERMINAL, 0.001), ("u5", "b"): (TERMINAL, 0.001), ("u5", "c"): ("u5", 0.0),
        (TERMINAL, "a"): (TERMINAL, 0.0), (TERMINAL, "b"): (TERMINAL, 0.0), (TERMINAL, "c"): (TERMINAL, 0.0),
    }
    # every pair covered and no terminal target: no terminal node is added
    full = read_rm_text("0\n[]\n(0,1,'a',ConstantRewardFunction(0))\n(0,0,'!a',ConstantRewardFunction(0))\n"
                        "(1,1,'True',ConstantRewardFunction(1))\n", alphabet=["a", "b"])
    assert full.nodes == ("u0", "u1") and full.reward("u1", "b") == 1.0
    # an initial terminal node is the absorbing node
    assert read_rm_text("2\n[2]\n(2,0,'a',ConstantRewardFunction(1))\n").nodes == (TERMINAL,)


BAD = [
    ("", None, r"<string>: expected the initial node .* empty text"),
    ("x = 1\n[]\n", 1, r"<string>:1: expected the initial node \(an integer\), got 'x = 1' \(not a Python literal\)"),
    ("'0'\n[]\n", 1, r"<string>:1: expected the initial node \(a non-negative integer\), got \"'0'\""),
    ("-1\n[]\n", 1, r"expected the initial node \(a non-negative integer\)"),
    ("True\n[]\n", 1, r"expected the initial node"),
    ("0\n", 2, r"<string>:2: expected the list of terminal nodes .* end of the text"),
    ("0\n2\n", 2, r"<string>:2: expected the list of terminal nodes, e.g. \[2\] or \[\], got '2'"),
    ("0\n[1, 'a']\n", 2, r"list of terminal nodes \(non-negative integers\)"),
    ("0\n[\n", 2, r"<string>:2: expected the list of terminal nodes.*not a Python literal"),
    ("0\n[]\n(0,1,'a')\n", 3,
     r"<string>:3: expected \(u1, u2, 'formula', ConstantRewardFunction\(r\)\), got \"\(0,1,'a'\)\""),
    ("0\n[]\n(0,1,'a',ConstantRewardFunction(1)\n", 3, r"<string>:3: expected \(u1, u2, .*not a Python literal"),
    ("0\n[]\n(0,'x','a',ConstantRewardFunction(1))\n", 3, r"non-negative integer nodes"),
    ("0\n[]\n(0,1.5,'a',ConstantRewardFunction(1))\n", 3, r"non-negative integer nodes"),
    ("0\n[]\n(0,1,a,ConstantRewardFunction(1))\n", 3, r"formula as a quoted string"),
    ("0\n[]\n(0,1,'a',RewardControl())\n", 3, r"ConstantRewardFunction\(<number>\)"),
    ("0\n[]\n(0,1,'a',ConstantRewardFunction(x))\n", 3, r"a finite number r"),
    ("0\n[]\n(0,1,'a',ConstantRewardFunction(1e999))\n", 3, r"a finite number r"),
    ("0\n[]\n(0,1,'a',ConstantRewardFunction(r=1))\n", 3, r"ConstantRewardFunction\(<number>\)"),
    ("0\n[]\n(0,1,'a',ConstantRewardFunction(True))\n", 3, r"a finite number r"),
    ("0\n[]\n(0,1,'a&',ConstantRewardFunction(1))\n", 3,
     r"<string>:3: bad formula 'a&': expected a proposition, 'True', 'False', '!' or '\(', got the end of the formula"),
    ("0\n[]\n(0,1,'a b',ConstantRewardFunction(1))\n", 3, r"bad formula 'a b': expected '&', '\|' or the end"),
    ("0\n[]\n(0,1,'a+b',ConstantRewardFunction(1))\n", 3, r"bad formula 'a\+b': unexpected character '\+'"),
    ("0\n[]\n(0,1,'(a|b',ConstantRewardFunction(1))\n", 3, r"expected '\)', got the end of the formula"),
    ("0\n[]\n(0,1,'',ConstantRewardFunction(1))\n", 3, r"bad formula ''"),
    ("0\n[]\n(0,1,'" + "(" * 60 + "a" + ")" * 60 + "',ConstantRewardFunction(1))\n", 3,
     r"bad formula '\(\(\(.*\.\.\.': parentheses nested more than 50 deep \(at character 51 of the formula\)"),
    ("0\n[]\n(0,1,'a',ConstantRewardFunction(1))\n(0,1,'b',ConstantRewardFunction(1))\n", 4,
     r"<string>:4: a second edge from node 0 to node 1 \(the first is at line 3\)"),
    ("0\n[2, 3]\n(0,2,'a',ConstantRewardFunction(1))\n\n(0,3,'b',ConstantRewardFunction(1))\n", 5,
     r"a second edge from node 0 to the terminal state"),
    ("0\n[]\n(0,1,'a|b',ConstantRewardFunction(0))\n# note\n(0,2,'b',ConstantRewardFunction(0))\n", 5,
     r"<string>:5: letter 'b' from node 0 matches this edge and the edge at line 3"),
    ("0\n[]\n(0,0,'True',ConstantRewardFunction(0))\n", None, r"no proposition appears in the formulas"),
    ("0\n[]\n__import__('os').system('echo hi')\n", 3, r"<string>:3: expected \(u1, u2, 'formula'"),
]


@pytest.mark.parametrize("text, line, pattern", BAD, ids=[f"bad{i}" for i in range(len(BAD))])
def test_read_malformed_lines(text, line, pattern):
    with pytest.raises(DataError, match=pattern) as info:
        read_rm_text(text)
    msg = str(info.value)
    assert msg.startswith(f"<string>:{line}: " if line is not None else "<string>: ")
    assert "Traceback" not in msg and "\n" not in msg


def test_read_names_the_file_in_messages(tmp_path):
    f = tmp_path / "t1.txt"
    f.write_text("0 # initial\n[2] # terminal\n(0,1,'a',ConstantRewardFunction(0))\n(0,1)\n")
    with pytest.raises(DataError) as info:
        read_rm_text(f)
    assert str(info.value) == (
        f"{f}:4: expected (u1, u2, 'formula', ConstantRewardFunction(r)), got '(0,1)'"
    )
    with pytest.raises(DataError, match=r"not a UTF-8 text file"):
        (tmp_path / "bin.txt").write_bytes(b"\xff\xfe\x00")
        read_rm_text(tmp_path / "bin.txt")
    with pytest.raises(DataError, match=r"no such file"):
        read_rm_text(tmp_path / "missing.txt")
    with pytest.raises(DataError, match=r"no file of that name exists"):
        read_rm_text(str(tmp_path / "missing.txt"))


def test_read_never_executes_code(tmp_path, capfd):
    marker = tmp_path / "pwned"
    payloads = [
        f"__import__('pathlib').Path({str(marker)!r}).touch()\n[]\n",
        f"0\n__import__('pathlib').Path({str(marker)!r}).touch()\n",
        f"0\n[]\n(0,1,'a',ConstantRewardFunction(__import__('pathlib').Path({str(marker)!r}).touch()))\n",
        f"0\n[]\n(0,1,'a',__import__('pathlib').Path({str(marker)!r}).touch())\n",
        "0\n[]\n__import__('os').system('echo hi')\n",
        "0\n[]\n" + "(" * 500 + "0" + ")" * 500 + "\n",
    ]
    for text in payloads:
        with pytest.raises(DataError):
            read_rm_text(text)
    assert not marker.exists()
    assert "hi" not in capfd.readouterr().out


def test_write_patrol_exact_text():
    assert write_rm_text(patrol()) == (
        "0 # initial state\n"
        "[] # terminal states\n"
        "(0,0,'B|C|D',ConstantRewardFunction(0))\n"
        "(0,1,'A',ConstantRewardFunction(0))\n"
        "(1,1,'A|C|D',ConstantRewardFunction(0))\n"
        "(1,2,'B',ConstantRewardFunction(0))\n"
        "(2,2,'A|B|D',ConstantRewardFunction(0))\n"
        "(2,3,'C',ConstantRewardFunction(0))\n"
        "(3,0,'D',ConstantRewardFunction(1))\n"
        "(3,3,'A|B|C',ConstantRewardFunction(0))\n"
    )


def test_write_refuses_what_the_format_cannot_express():
    m = RewardMachine.from_transitions({("u0", "a"): ("u1", 1.0), ("u0", "b"): ("u1", 2.0)}, "ab")
    with pytest.raises(ModelError, match=r"from 'u0' to 'u1' carry different rewards \(a → 1, b → 2\)"):
        write_rm_text(m)
    with pytest.raises(ModelError, match=r"letter 'a-b' cannot be written"):
        write_rm_text(RewardMachine.from_transitions({}, ["a-b"], nodes=["u0"]))
    with pytest.raises(ModelError, match=r"letter 'True' cannot be written"):
        write_rm_text(RewardMachine.from_transitions({}, ["True"], nodes=["u0"]))


@pytest.mark.parametrize("m", [patrol(), tiny(), machine(3, seed=1, k=1)], ids=["patrol", "tiny", "m3"])
def test_round_trip_known_machines(m):
    back = read_rm_text(write_rm_text(m), alphabet=m.alphabet, name=m.name)
    assert isomorphic(back, m)
    assert np.array_equal(back.delta_u, m.delta_u) and np.array_equal(back.delta_r, m.delta_r)
    assert back.initial == m.initial and back.nodes == tuple(f"u{i}" for i in range(m.n_nodes))


def test_write_with_a_terminal_node():
    m = read_rm_text(EXAMPLE)
    # from u1, g (reward 1) and n (reward 0) both lead to the terminal node
    with pytest.raises(ModelError, match=r"from 'u1' to 'terminal' carry different rewards \(g → 1, n → 0\)"):
        write_rm_text(m)
    text = write_rm_text(m, terminal=TERMINAL)
    assert text == (
        "0 # initial state\n"
        "[2] # terminal states\n"
        "(0,0,'g',ConstantRewardFunction(0))\n"
        "(0,1,'e',ConstantRewardFunction(0))\n"
        "(0,2,'n',ConstantRewardFunction(0))\n"
        "(1,1,'e',ConstantRewardFunction(0))\n"
        "(1,2,'g',ConstantRewardFunction(1))\n"
    )
    back = read_rm_text(text)
    assert back == m
    with pytest.raises(ModelError, match=r"node 'u1' cannot be the terminal node"):
        write_rm_text(m, terminal="u1")


@st.composite
def expressible_machines(draw):
    n = draw(st.integers(1, 5))
    letters = draw(st.lists(st.sampled_from(["a", "b", "c", "d", "e", "go", "x_1", "Z"]), min_size=1, max_size=5,
                            unique=True))
    du = draw(st.lists(st.lists(st.integers(0, n - 1), min_size=len(letters), max_size=len(letters)),
                       min_size=n, max_size=n))
    values = st.sampled_from([0.0, 0.0, 1.0, -1.0, 0.5, 2 / 3, 1e-7, 123456.25])
    pair_reward = draw(st.dictionaries(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), values))
    dr = [[pair_reward.get((u, v), 0.0) for v in row] for u, row in enumerate(du)]
    names = draw(st.permutations([f"n{i}" for i in range(n)]))
    return RewardMachine(nodes=names, alphabet=letters, delta_u=du, delta_r=dr,
                         initial=draw(st.integers(0, n - 1)), name="h")


@settings(max_examples=150, deadline=None)
@given(expressible_machines())
def test_round_trip_generated_machines(m):
    text = write_rm_text(m)
    back = read_rm_text(text, alphabet=m.alphabet, name=m.name)
    assert isomorphic(back, m)
    assert np.array_equal(back.delta_u, m.delta_u) and np.array_equal(back.delta_r, m.delta_r)
    assert back.initial == m.initial
    # with the default (sorted) alphabet the machine is the same up to letter order
    assert isomorphic(read_rm_text(text), m)
    assert to_dot(back) == to_dot(m.renamed(range(m.n_nodes), [f"u{i}" for i in range(m.n_nodes)]))
