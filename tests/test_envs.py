"""Environment generators: the paper's benchmarks exactly (shared/benchmarks.md), input
normalisation, round trips through ``source.kwargs()``, and error messages."""

import itertools
from pathlib import Path

import numpy as np
import pytest

from rmtk import GeneratorCall, LabeledMDP, ModelError
from rmtk.envs import GENERATORS, blockworld, gridworld, labyrinth

ROOMS = ["D D C C", "D D C C", "A A B B", "A A B B"]
HALLWAY = [["D", "H", "C"], ["H", "H", "H"], ["A", "H", "B"]]
ST1, ST2, ST3 = (("G", "Y", "R"), (), ()), ((), ("R", "Y", "G"), ()), ((), (), ("R", "Y", "G"))
BAD, I0 = ("G", "Y", "R"), (("G", "Y"), ("R",), ())  # a string pile is that single block
MICE = Path("/work/shared/data/mice_water_restricted.npz")


def rooms(**kw) -> LabeledMDP:
    return gridworld(ROOMS, slip=0.1, start=[(0, 0), (2, 0), (3, 0), (2, 1), (0, 2)], **kw)


def stack() -> LabeledMDP:
    return blockworld(labels=[("A", [ST1]), ("B", [ST2]), ("C", [ST3])], other="I", start=[ST1, ST2, ST3, I0])


def stack_avoid() -> LabeledMDP:
    return blockworld(labels={"D": [BAD], "A": [ST1], "B": [ST2]}, start=[ST1, ST2, BAD, I0])


def succ(mdp: LabeledMDP, s, a) -> dict:
    return {mdp.states[j]: p for j, p in mdp.successors(s, a)}


# ---------------------------------------------------------------------------- gridworld
def test_rooms_numbering_labels_and_start():
    m = rooms()
    assert (m.n_states, m.actions) == (16, ("down", "right", "up", "left"))
    assert m.states[:5] == ("r0c0", "r1c0", "r2c0", "r3c0", "r0c1")
    # state i at row i mod 4, column i div 4 (shared/benchmarks.md)
    assert all(m.states[i] == f"r{i % 4}c{i // 4}" for i in range(16))
    assert "".join(m.label(i) for i in range(16)) == "DDAADDAACCBBCCBB"
    assert m.propositions == ("A", "B", "C", "D")
    assert m.start_states.tolist() == [0, 2, 3, 6, 8]
    np.testing.assert_allclose(m.initial[[0, 2, 3, 6, 8]], 0.2)


def test_rooms_slip_probabilities():
    m = rooms()
    # corner 0: down is intended (0.925); up and left leave the grid (0.025 each, stay)
    assert succ(m, 0, "down") == pytest.approx({"r1c0": 0.925, "r0c0": 0.05, "r0c1": 0.025})
    assert succ(m, 0, "up") == pytest.approx({"r0c0": 0.925 + 0.025, "r1c0": 0.025, "r0c1": 0.025})
    # interior 5 = r1c1: every neighbour in the grid
    assert succ(m, 5, "right") == pytest.approx({"r1c2": 0.925, "r2c1": 0.025, "r0c1": 0.025, "r1c0": 0.025})
    assert [j for j, _ in m.successors(5, "right")] == [1, 4, 6, 9]  # +4 intended, ±1, −4
    # corner 15 = r3c3: down and right leave the grid
    assert succ(m, 15, "down") == pytest.approx({"r3c3": 0.95, "r2c3": 0.025, "r3c2": 0.025})
    np.testing.assert_allclose(m.transitions.sum(axis=1), 1.0)
    assert m.gamma == 0.99


def test_hallway():
    m = gridworld(HALLWAY, start=[(0, 0), (2, 0), (0, 1), (0, 2), (2, 2)])
    assert m.n_states == 9 and m.propositions == ("A", "B", "C", "D", "H")
    assert "".join(m.label(i) for i in range(9)) == "DHAHHHCHB"  # i = x + 3y
    assert m.start_states.tolist() == [0, 2, 3, 6, 8]
    assert succ(m, 0, "right") == pytest.approx({"r0c1": 0.925, "r0c0": 0.05, "r1c0": 0.025})


def test_slip_extremes():
    det = gridworld(ROOMS, slip=0)
    assert succ(det, 0, "down") == {"r1c0": 1.0} and succ(det, 0, "left") == {"r0c0": 1.0}
    assert det.transitions.nnz == 16 * 4
    assert succ(gridworld(ROOMS, slip=1), 5, "up") == pytest.approx({s: 0.25 for s in ("r0c1", "r1c0", "r1c2", "r2c1")})


def test_blocked_cells_and_default_start():
    m = gridworld(["A - B", ["A", None, "B"], ["A", "A", "B"]])
    assert m.states == ("r0c0", "r1c0", "r2c0", "r2c1", "r0c2", "r1c2", "r2c2")
    # r2c1: up is blocked, down leaves the grid -> both stay
    assert succ(m, "r2c1", "up") == pytest.approx({"r2c1": 0.95, "r2c0": 0.025, "r2c2": 0.025})
    np.testing.assert_allclose(m.initial, 1 / 7)
    kw = m.source.kwargs()
    assert kw["rows"] == (("A", None, "B"), ("A", None, "B"), ("A", "A", "B")) and kw["start"] is None


def test_gridworld_propositions_order():
    m = gridworld(ROOMS, propositions=["D", "C", "B", "A", "H"])
    assert m.propositions == ("D", "C", "B", "A", "H") and m.label(0) == "D" and m.labels[0] == 0


@pytest.mark.parametrize(
    "kwargs,pattern",
    [
        (dict(rows=["A B", "A"]), r"gridworld 'grid': map row 1 has 1 cells, row 0 has 2"),
        (dict(rows=[]), r"the map has no rows"),
        (dict(rows=["- -"]), r"every cell of the map is blocked"),
        (dict(rows=[["A", 3]]), r"cell \(0, 1\) must be a non-empty name"),
        (dict(rows=ROOMS, slip=1.5), r"slip=1.5 must lie in \[0, 1\]"),
        (dict(rows=ROOMS, start=[(4, 0)]), r"start cell \(4, 0\) is outside the 4x4 grid"),
        (dict(rows=["A -"], start=[(0, 1)]), r"start cell \(0, 1\) is blocked"),
        (dict(rows=ROOMS, start=[(0, 0), (0, 0)]), r"start cell \(0, 0\) is listed twice"),
        (dict(rows=ROOMS, start=[(0, 0, 1)]), r"a start cell is a \(row, column\) pair"),
        (dict(rows=ROOMS, start=[(0.5, 0)]), r"a start row must be a whole number, got 0.5"),
        (dict(rows=ROOMS, propositions=["A", "B", "C"]), r"do not include the label\(s\) 'D'"),
        (dict(rows=ROOMS, gamma=1.0), r"gamma=1.0 must lie in \[0, 1\)"),
    ],
)
def test_gridworld_errors(kwargs, pattern):
    with pytest.raises(ModelError, match=pattern):
        gridworld(**kwargs)


# ---------------------------------------------------------------------------- blockworld
def _reference_move(name: str, f: int, t: int) -> str:
    """The move written directly on state names (single-character blocks)."""
    piles = [list("" if q == "_" else q) for q in name.split("|")]
    if f != t and piles[f]:
        piles[t].append(piles[f].pop())
    return "|".join("".join(q) or "_" for q in piles)


def test_blockworld_states_and_moves():
    m = stack()
    assert (m.n_states, m.n_actions) == (60, 9)
    assert m.actions == ("0to0", "0to1", "0to2", "1to0", "1to1", "1to2", "2to0", "2to1", "2to2")
    assert m.states[:7] == ("GYR|_|_", "GRY|_|_", "YGR|_|_", "YRG|_|_", "RGY|_|_", "RYG|_|_", "GY|R|_")
    assert len(set(m.states)) == 60 and m.transitions.nnz == 60 * 9  # deterministic
    assert succ(m, "GYR|_|_", "0to1") == {"GY|R|_": 1.0}
    assert succ(m, "GY|R|_", "1to0") == {"GYR|_|_": 1.0}
    assert succ(m, "GY|R|_", "0to2") == {"G|R|Y": 1.0}
    assert succ(m, "GYR|_|_", "0to0") == {"GYR|_|_": 1.0}  # from == to
    assert succ(m, "GYR|_|_", "1to2") == {"GYR|_|_": 1.0}  # empty source
    for s, (f, t) in itertools.product(m.states, itertools.product(range(3), repeat=2)):
        assert succ(m, s, f"{f}to{t}") == {_reference_move(s, f, t): 1.0}


def test_stack_labels_and_start():
    m = stack()
    assert m.propositions == ("A", "B", "C", "I")
    assert [m.label(s) for s in ("GYR|_|_", "_|RYG|_", "_|_|RYG", "GY|R|_", "G|Y|R")] == list("ABCII")
    assert np.bincount(m.labels).tolist() == [1, 1, 1, 57]
    assert sorted(m.states[i] for i in m.start_states) == sorted(["GYR|_|_", "_|RYG|_", "_|_|RYG", "GY|R|_"])
    np.testing.assert_allclose(m.initial[m.start_states], 0.25)


def test_stack_avoid_labels():
    m = stack_avoid()
    assert m.propositions == ("A", "B", "D", "I")
    assert [m.label(s) for s in ("GYR|_|_", "_|RYG|_", "G|Y|R", "_|_|RYG")] == ["A", "B", "D", "I"]
    assert m.source.kwargs()["labels"] == (
        ("A", (ST1,)),
        ("B", (ST2,)),
        ("D", ((("G",), ("Y",), ("R",)),)),
    )
    assert {m.states[i] for i in m.start_states} == {"GYR|_|_", "_|RYG|_", "G|Y|R", "GY|R|_"}


def test_blockworld_long_names_string_configurations_and_alphabet():
    m = blockworld(blocks=["red", "blue"], piles=2, labels=[("T", ["red.blue|_"])], start=["_|blue.red"])
    assert m.states == ("red.blue|_", "blue.red|_", "red|blue", "blue|red", "_|red.blue", "_|blue.red")
    assert succ(m, "red.blue|_", "0to1") == {"red|blue": 1.0}
    assert m.label("red.blue|_") == "T" and m.propositions == ("I", "T")
    kw = m.source.kwargs()
    assert kw["labels"] == (("T", ((("red", "blue"), ()),)),) and kw["start"] == (((), ("blue", "red")),)
    # every configuration labeled: `other` is unused and left out of the alphabet
    one = blockworld(blocks=["X"], piles=1, labels=[("P", [[["X"]]])], start=["X"])
    assert (one.n_states, one.n_actions, one.propositions) == (1, 1, ("P",))


@pytest.mark.parametrize(
    "kwargs,pattern",
    [
        (dict(start=[(("G", "Y"), ())]), r"configuration \(G Y\) \(\) has 2 piles, expected 3"),
        (dict(start=[(("G", "Y", "B"), (), ())]), r"configuration \(G Y B\) \(\) \(\) holds the unknown block 'B'"),
        (dict(start=[(("G", "Y", "G"), (), ())]), r"configuration \(G Y G\) \(\) \(\) holds block 'G' twice"),
        (dict(start=[(("G", "Y"), (), ())]), r"configuration \(G Y\) \(\) \(\) misses block\(s\) 'R'"),
        (
            dict(labels=[("A", [ST1]), ("B", [ST1])], start=[ST1]),
            r"configuration GYR\|_\|_ is listed with two labels, 'A' and 'B'",
        ),
        (dict(labels=[("A", [ST1, ST1])], start=[ST1]), r"configuration GYR\|_\|_ is listed twice for label 'A'"),
        (dict(), r"start lists no configurations"),
        (dict(start=[ST1, ST1]), r"start configuration GYR\|_\|_ is listed twice"),
        (dict(blocks=["G", "G"], start=[ST1]), r"block 'G' is listed twice in blocks"),
        (dict(piles=0, start=[ST1]), r"piles=0 must be at least 1"),
        (dict(blocks=list("ABCDEFGH"), piles=8, start=[ST1]), r"8 blocks on 8 piles give \d+ configurations"),
        (
            dict(labels=[("A", [ST1])], start=[ST1], propositions=["A"]),
            r"propositions \(A\) do not include the label\(s\) 'I'",
        ),
    ],
)
def test_blockworld_errors(kwargs, pattern):
    with pytest.raises(ModelError, match=r"blockworld 'blocks': " + pattern):
        blockworld(**kwargs)


# ---------------------------------------------------------------------------- labyrinth
def test_labyrinth_tree():
    m = labyrinth()
    assert (m.n_states, m.actions) == (127, ("left", "right", "reverse", "stay"))
    assert m.states[100] == "n100" and m.transitions.nnz == 127 * 4
    assert [m.successors(0, a) for a in m.actions] == [[(1, 1.0)], [(2, 1.0)], [(0, 1.0)], [(0, 1.0)]]
    assert [m.successors(62, a)[0][0] for a in m.actions] == [125, 126, 30, 62]
    assert [m.successors(100, a)[0][0] for a in m.actions] == [100, 100, 49, 100]  # a leaf
    assert m.propositions == ("h", "i", "w")
    assert (m.label(0), m.label(100), m.label(49)) == ("h", "w", "i")
    assert np.bincount(m.labels).tolist() == [1, 125, 1]
    assert m.start_states.tolist() == [0] and m.initial[0] == 1.0


def test_labyrinth_small_and_normalised():
    m = labyrinth(depth=1, labels=[["b", [2, 1]], ["a", [0]]], start=[1, 2])
    assert m.states == ("n0", "n1", "n2") and m.propositions == ("a", "b")  # `other` unused
    assert m.successors(1, "left") == [(1, 1.0)] and m.successors(2, "reverse") == [(0, 1.0)]
    np.testing.assert_allclose(m.initial, [0, 0.5, 0.5])
    assert m.source == GeneratorCall(
        "labyrinth",
        (
            ("depth", 1),
            ("gamma", 0.99),
            ("labels", (("a", (0,)), ("b", (2, 1)))),
            ("other", "i"),
            ("propositions", None),
            ("start", (1, 2)),
        ),
    )
    assert labyrinth(depth=0, labels=()).n_states == 1


@pytest.mark.parametrize(
    "kwargs,pattern",
    [
        (dict(depth=-1), r"depth=-1 must lie in 0\.\.20"),
        (dict(labels=[("w", [127])]), r"node 127 \(label 'w'\) is outside the maze \(nodes 0\.\.126 for depth 6\)"),
        (dict(labels=[("h", [0]), ("w", [0])]), r"node 0 is listed with two labels, 'h' and 'w'"),
        (dict(labels=[("w", 100)]), r"the nodes of label 'w' must be a sequence, got 100"),
        (dict(start=[]), r"start lists no nodes"),
        (dict(start=[200]), r"start node 200 is outside the maze"),
        (dict(other="two words"), r"other must be a non-empty name without spaces"),
    ],
)
def test_labyrinth_errors(kwargs, pattern):
    with pytest.raises(ModelError, match=r"labyrinth 'labyrinth': " + pattern):
        labyrinth(**kwargs)


@pytest.mark.skipif(not MICE.exists(), reason="mice data not available")
def test_labyrinth_replays_the_mice_data():
    data = np.load(MICE)
    states, actions = data["states"].astype(np.int64), data["actions"].astype(np.int64)
    assert states.shape == actions.shape == (200, 22)
    m = labyrinth()
    rows = (states[:, :-1] * m.n_actions + actions[:, :-1]).ravel()
    probs = m.transitions[rows, states[:, 1:].ravel()]
    assert probs.size == 200 * 21 and np.all(probs == 1.0)
    assert np.all(states[:, 0] == 0) and (states == 100).any(axis=1).sum() == 199


# ---------------------------------------------------------------------------- round trips
CASES = {
    "rooms": lambda: rooms(name="rooms"),
    "hallway": lambda: gridworld(HALLWAY, slip=0.2, gamma=0.9, propositions=list("HDCBA")),
    "blocked": lambda: gridworld(["A - B", "A A B"], start=[[1, 1]]),
    "stack": stack,
    "stack_avoid": stack_avoid,
    "strings": lambda: blockworld(
        blocks=["red", "blue"], piles=2, labels=[("T", ["red.blue|_"])], start=["_|blue.red"]
    ),
    "labyrinth": labyrinth,
    "labyrinth_small": lambda: labyrinth(depth=3, labels={"x": [5, 3], "a": np.arange(2)}, start=np.array([4])),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_regenerate_from_source(case):
    m = CASES[case]()
    src = m.source
    assert src.generator in GENERATORS and GENERATORS[src.generator].__name__ == src.generator
    keys = [k for k, _ in src.params]
    assert keys == sorted(keys) and "name" not in keys
    hash(src)  # every value is hashable
    for v in src.kwargs().values():
        assert not isinstance(v, (list, np.ndarray, np.generic))
    again = GENERATORS[src.generator](**src.kwargs(), name=m.name)
    assert again == m and again.source == src and again.name == m.name


def test_normalised_values_are_plain_python():
    kw = labyrinth(
        depth=np.int64(2), labels={"x": np.array([1, 2])}, start=[np.int8(0)], gamma=np.float32(0.5)
    ).source.kwargs()
    assert type(kw["depth"]) is int and type(kw["gamma"]) is float
    assert all(type(n) is int for n in kw["labels"][0][1]) and type(kw["start"][0]) is int
    kw = gridworld(ROOMS, slip=0, start=[(np.int64(1), 2)]).source.kwargs()
    assert type(kw["slip"]) is float and kw["start"] == ((1, 2),) and type(kw["start"][0][0]) is int
