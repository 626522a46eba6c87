"""
Tutorial 6 — draw machines and maps, and exchange machines with other tools
===========================================================================

Goal: get reward machines and grid worlds out of rmtk: pictures (PNG or SVG, drawn with
matplotlib, no display needed), Graphviz DOT text, a networkx graph to compute with, and
the text format of the ``reward_machines`` research code (Toro Icarte et al.), which rmtk
both writes and reads (safely: the file is parsed, never evaluated).

Run it with ``python tutorials/06_draw.py [OUTPUT_DIR]``; every picture and text file goes
to OUTPUT_DIR (default: a temporary directory, removed at exit).
"""

import atexit
import sys
import tempfile
from pathlib import Path

import networkx as nx
from matplotlib.figure import Figure

from rmtk import dsl, isomorphic
from rmtk.errors import DataError, ModelError
from rmtk.io.dot import to_dot, to_networkx
from rmtk.io.draw import draw_grid, draw_machine
from rmtk.io.rmtext import read_rm_text, write_rm_text
from rmtk.product.planning import task_policy


def output_dir() -> Path:
    """The first command-line argument, else a temporary directory removed at exit."""
    if len(sys.argv) > 1:
        out = Path(sys.argv[1])
        out.mkdir(parents=True, exist_ok=True)
        print(f"output directory: {out}")
        return out
    temporary = tempfile.TemporaryDirectory(prefix="rmtk-tutorial-06-")
    atexit.register(temporary.cleanup)
    print("output directory: a temporary one, removed at exit (give one as the first argument)")
    return Path(temporary.name)


def wrote(path: Path) -> None:
    print(f"wrote {path.name} ({path.stat().st_size:,} bytes)")


OUT = output_dir()
print()

task = dsl.load_model("patrol.rm").tasks["patrol"]
machine, rooms = task.machine, task.mdp

# %% 1. Pictures
# `rmtk.io.draw.draw_machine` puts the nodes on a circle, the initial node at the left with a
# "start" arrow; each (source, target, reward) group is its own arc, labelled with its
# letters and " / reward" when it is not 0 (rounded to 6 significant digits); the grey
# loops are the 0-reward defaults (`show_defaults=False` leaves them out). The file
# extension chooses the format. `draw_grid` draws a gridworld's map, start cells marked.
print("== pictures")
draw_machine(machine, OUT / "patrol.png")
wrote(OUT / "patrol.png")
draw_machine(machine, OUT / "patrol.svg", show_defaults=False, title="patrol, defaults hidden")
wrote(OUT / "patrol.svg")
draw_grid(rooms, OUT / "rooms.png")
wrote(OUT / "rooms.png")
try:  # only grid worlds have a map
    draw_grid(dsl.load_model("stack.rm").mdps["blocks"])
except ModelError as err:
    print(f"draw_grid on a block world: {type(err).__name__}: {err}")

# %% 2. A machine and its map in one figure
# `draw_grid(rewards=...)` writes a number in each cell: a value per proposition, or one per
# state (states are the free cells, column by column), e.g. the expert's soft value
# V(s, u3) when only room D is left to visit (shifted so that the best cell shows 0).
# With `ax=` both functions draw into your own matplotlib Axes, so a machine and its map
# can share a figure (no pyplot: safe without a display).
print("\n== a machine and its map")
V = task_policy(task).V[:, machine.node_index("u3")]
fig = Figure(figsize=(8, 3.8))
left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.3, 1]})
draw_machine(machine, ax=left, title="the patrol machine")
# draw_machine sets both axis limits on an Axes it is given; keep them (and matplotlib quiet
# about "ignoring fixed x limits") by letting the box, not the limits, adjust to the aspect.
left.set_aspect("equal", adjustable="box")
draw_grid(rooms, ax=right, rewards=V - V.max(), title="V(s, u3) - max: in u3, room D pays")
fig.savefig(OUT / "patrol_and_rooms.png", dpi=125)
wrote(OUT / "patrol_and_rooms.png")

# %% 3. DOT text
# `rmtk.io.dot`: one edge per (source, target, reward) group, deterministic order; render it with
# Graphviz (`dot -Tpng patrol.dot -o patrol.png`) if you have it.
print("\n== DOT")
dot = to_dot(machine, title="patrol")
(OUT / "patrol.dot").write_text(dot, encoding="utf-8")
print(dot, end="")
wrote(OUT / "patrol.dot")

# %% 4. networkx
# A MultiDiGraph with one edge per (node, letter), keyed by the letter, carrying `letter`
# and `reward`: handy for graph algorithms, e.g. the shortest word from the start to the
# paying transition.
print("\n== networkx")
g = to_networkx(machine)
print(g, "| graph attributes:", g.graph)
path = nx.shortest_path(g, g.graph["initial"], "u3")
letters = [next(k for k in g[u][v]) for u, v in zip(path, path[1:])]
print("shortest path u0 -> u3:", " -> ".join(path), "reading", " ".join(letters))
paying = [(u, v, d["letter"], d["reward"]) for u, v, d in g.edges(data=True) if d["reward"] != 0]
print("paying edges:", paying)

# %% 5. The reward_machines text format
# Line 1: initial node; line 2: terminal nodes; then one line per pair of nodes:
# (u1, u2, 'formula', ConstantRewardFunction(r)). `rmtk.io.rmtext.write_rm_text` writes one
# (rewards exact), and `read_rm_text` reads a path or the text itself back into a RewardMachine.
print("\n== reward_machines text format")
text = write_rm_text(machine)
(OUT / "patrol.txt").write_text(text, encoding="utf-8")
print(text, end="")
wrote(OUT / "patrol.txt")
back = read_rm_text(OUT / "patrol.txt", name="patrol")
print("read back: equal to the original:", back == machine, "| isomorphic:", isomorphic(back, machine))

# Files from the research code often have terminal nodes and leave letters unmatched; in
# that code both lead to one absorbing terminal state. rmtk's reading adds a node named
# "terminal" for them. (rmtk labels every state with one proposition, so a formula is
# evaluated with one letter true at a time.)
research = """\
0                     # initial state
[2]                   # terminal states
(0, 0, '!A', ConstantRewardFunction(0))
(0, 1, 'A', ConstantRewardFunction(0))
(1, 1, '!B&!D', ConstantRewardFunction(0))
(1, 2, 'B', ConstantRewardFunction(1))
"""
first_b = read_rm_text(research, name="a_then_b")
print("\na research-format machine (the letter D at u1 matches no formula):")
print(dsl.dumps(first_b))
print("written back with the terminal node:")
print(write_rm_text(first_b, terminal="terminal"), end="")

# Nothing in the file is ever executed: anything but literals is refused, with its line.
try:
    read_rm_text(research.replace("ConstantRewardFunction(1)", "__import__('os').getcwd()"))
except DataError as err:
    print(f"\nrefused: {err}")
