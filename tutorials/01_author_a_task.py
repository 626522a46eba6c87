"""
Tutorial 1 — author a task in the ``.rm`` language
==================================================

Goal: write a small learning problem by hand — a labeled MDP, a reward machine and a task
that binds them — as `.rm` text, load it with :func:`rmtk.dsl.loads`, look at the Python
objects it becomes, print it back canonically (an exact round trip), see what an error
message looks like, and meet the ``gridworld`` generator.

Run it with ``python tutorials/01_author_a_task.py [OUTPUT_DIR]``. The only file it
writes (``fetch.rm``) goes to OUTPUT_DIR (default: a temporary directory, removed at exit).
"""

import atexit
import sys
import tempfile
from pathlib import Path

from rmtk import dsl
from rmtk.errors import DslError
from rmtk.io.draw import draw_machine


def output_dir() -> Path:
    """The first command-line argument, else a temporary directory removed at exit."""
    if len(sys.argv) > 1:
        out = Path(sys.argv[1])
        out.mkdir(parents=True, exist_ok=True)
        print(f"output directory: {out}")
        return out
    temporary = tempfile.TemporaryDirectory(prefix="rmtk-tutorial-01-")
    atexit.register(temporary.cleanup)
    print("output directory: a temporary one, removed at exit (give one as the first argument)")
    return Path(temporary.name)


OUT = output_dir()
print()

# %% 1. The task as text
# A "fetch" task on a four-state corridor: the agent starts at home (H), picks up a parcel
# at A or B and is paid 1 when it delivers it at the goal G.
#
# * The MDP is *explicit*: states, actions, one proposition per state (`label`), the start
#   distribution and one line per (state, action) giving the successor distribution. A
#   single successor may omit its probability 1; `s0 right -> s1 0.8, s0 0.2` slips.
# * The machine has two nodes: u0 (empty-handed) and u1 (carrying). The guard `A | B`
#   covers two letters at once; `else` covers every letter the node's other transitions do
#   not (here H, A and B at u1): while carrying, every step costs 0.1. Transitions that are
#   not written are 0-reward self-loops.
# * The task binds both with the MaxEnt settings (lambda, and gamma unless the MDP's is
#   used) and suggests learning settings (prefix tree depth, bound on the number of nodes).
TEXT = """\
mdp corridor {
  states s0 s1 s2 s3
  actions left right
  label H s0          # home
  label A s1          # parcel pick-up point A
  label B s2          # parcel pick-up point B
  label G s3          # goal
  start s0
  gamma 0.9
  s0 left  -> s0
  s0 right -> s1 0.8, s0 0.2
  s1 left  -> s0 0.9, s1 0.1
  s1 right -> s2 0.8, s3 0.2
  s2 left  -> s1
  s2 right -> s3 0.9, s2 0.1
  s3 left  -> s2
  s3 right -> s0
}

machine fetch {
  alphabet H A B G
  initial u0
  u0 -> u1 on A | B              # pick a parcel up
  u1 -> u0 on G reward 1         # deliver it
  u1 -> u1 on else reward -0.1   # carrying costs
}

task fetch { mdp corridor; machine fetch; lambda 1; depth 4; max_nodes 2 }
"""

# %% 2. Load it
# `dsl.loads` returns an `RmFile`: three name -> object tables, `.mdps`, `.machines` and
# `.tasks`. A task refers to the very objects of the other two tables.
doc = dsl.loads(TEXT, file="fetch.rm")
print("== blocks:", doc.names())
mdp = doc.mdps["corridor"]
machine = doc.machines["fetch"]
task = doc.tasks["fetch"]
print(mdp.summary())
print(machine.summary())
print(task.summary())
assert task.mdp is mdp and task.machine is machine

# %% 3. Inspect the MDP
# States, actions and propositions are tuples of names; methods accept a name or an index.
# `successors(state, action)` lists (successor index, probability); `transitions` is the
# whole kernel as a sparse matrix whose row s*|A| + a is P(.|s, a).
print("\n== the MDP")
print("states:", mdp.states, " actions:", mdp.actions, " propositions:", mdp.propositions)
print("label of each state:", [mdp.label(s) for s in mdp.states])
for s, a in [("s0", "right"), ("s1", "right"), ("s2", "left")]:
    succ = mdp.successors(s, a)
    named = ", ".join(f"{mdp.states[t]} {p:g}" for t, p in succ)
    print(f"successors({s!r}, {a!r}) = {succ}   i.e. {named}")
print("start distribution:", mdp.initial, " gamma:", mdp.gamma)
print("kernel: a", mdp.transitions.shape, "sparse matrix with", mdp.transitions.nnz, "entries")

# %% 4. Inspect the machine
# `run(word)` gives the node after each prefix of a word of letters, starting from the
# initial node (so it is one longer than the word). `step` and `reward` give one
# transition; `delta_u` and `delta_r` are the (nodes x letters) arrays behind them.
print("\n== the machine")
word = "HABGHAG"
print(f"run({word!r}) =", machine.run(word))
total, u = 0.0, machine.initial
for letter in word:
    r = machine.reward(u, letter)
    v = machine.step(u, letter)
    print(f"  {machine.nodes[u]} --{letter}--> {machine.nodes[v]}   reward {r:+g}")
    total, u = total + r, v
print(f"total reward of {word!r}: {total:g}")
print("non-default transitions:", list(machine.transitions(include_defaults=False)))
print(f"delta_u (rows: nodes, columns: letters {' '.join(machine.alphabet)}):")
print(machine.delta_u)
print("delta_r:")
print(machine.delta_r)
print("non-stuttering (repeating a letter never moves it again):", machine.is_non_stuttering())

# A picture (`rmtk.io.draw.draw_machine`, a matplotlib Figure; given a path it saves the
# file too): one edge per (source, target, reward) group, labelled with its letters and its
# reward when not 0: the `A | B` guard is one edge, the `else` of u1 a loop paying -0.1.
picture = draw_machine(machine, title="the fetch machine, as written")

# %% 5. Print it back: the round trip
# `dsl.dumps` writes canonical text: explicit `propositions` and `nodes` lines, successors
# sorted, guards expanded into the letters they cover (the `else` became `H | A | B`).
# Loading that text gives back an equal document, and so does a trip through a file.
print("\n== dsl.dumps(doc)")
text = dsl.dumps(doc)
print(text)
assert dsl.loads(text) == doc
path = OUT / "fetch.rm"
dsl.dump(doc, path, overwrite=True)
assert dsl.load(path) == doc
print(f"round trip: dsl.loads(dsl.dumps(doc)) == doc -> True; also through {path.name}")

# %% 6. Errors
# Every mistake is reported with the file, line and column, the offending line and a caret,
# as an `rmtk.errors.DslError` (`DslSyntaxError` when the text does not parse,
# `DslMeaningError` when it parses but means something invalid).
print("\n== error messages")
broken = {
    "a transition without 'on'": TEXT.replace("u0 -> u1 on A | B", "u0 -> u1 A | B"),
    "a letter outside the alphabet": TEXT.replace("on G reward 1", "on G | Q reward 1"),
    "probabilities summing to 0.9": TEXT.replace("s1 left  -> s0 0.9, s1 0.1", "s1 left  -> s0 0.8, s1 0.1"),
    "two transitions on the same letter": TEXT.replace(
        "u1 -> u1 on else reward -0.1   # carrying costs", "u1 -> u1 on G"
    ),
}
for what, bad in broken.items():
    try:
        dsl.loads(bad, file="broken.rm")
    except DslError as err:
        print(f"-- {what} ({type(err).__name__}):")
        print(err)
    else:  # pragma: no cover - every variant above is broken
        raise SystemExit(f"expected an error for {what}")

# %% 7. A generated MDP: the gridworld block
# Writing large MDPs by hand is tedious, so `mdp NAME = GENERATOR { ... }` calls a
# generator. A `gridworld` map has one proposition per cell ('-' is a blocked cell), `slip`
# is the probability of moving in a random direction instead, spread evenly over the four
# directions, and `start` lists (row column) cells. The printer writes the call, not its
# states: the round trip keeps the block as you wrote it (with the default gamma made
# explicit).
print("\n== a gridworld generator block")
GRID = """\
mdp tiny = gridworld {
  map {
    A - G
    A - G
    H H H
  }
  slip 0.2
  start (2 0)
}
"""
grid = dsl.loads(GRID).mdps["tiny"]
print(grid.summary())
print("states (free cells, column by column):", grid.states)
print("actions:", grid.actions)
print("labels:", [grid.label(s) for s in grid.states])
print("successors('r2c0', 'up') =", [(grid.states[t], round(p, 3)) for t, p in grid.successors("r2c0", "up")])
print("made by:", grid.source.generator, dict(grid.source.params))
print(dsl.dumps(grid))
