"""Demonstrations files: validation, CSV and NPZ round trips, bad inputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from grid_data import make_grid, raises, three_walks, walk

from rmtk.data import Demonstrations, load, load_csv, load_npz, save, save_csv, save_npz, validate
from rmtk.envs import gridworld, labyrinth
from rmtk.mdp.model import LabeledMDP

MICE = Path("/work/shared/data")

HEADER = "trajectory,step,state,action,label\n"


@pytest.fixture(scope="module")
def grid() -> LabeledMDP:
    return make_grid()


@pytest.fixture(scope="module")
def demos(grid) -> Demonstrations:
    return three_walks(grid)


def write(tmp_path, text, name="demos.csv"):
    p = tmp_path / name
    p.write_text(text)
    return p


# ---------------------------------------------------------------------- validate
def test_validate_accepts_good_demonstrations(grid, demos):
    validate(demos, grid)
    labels = np.where(demos.mask(), grid.labels[np.maximum(demos.states, 0)], -1)
    validate(demos, grid, labels=labels)


def test_validate_bad_transition_message(grid):
    s = [grid.state_index("r0c0"), grid.state_index("r3c3")]
    d = Demonstrations.from_lists(
        [walk(grid, "r0c0", ["down"]), [(s[0], 0), (s[1], 0)]] + [walk(grid, "r0c0", ["down"])] * 2
    )
    with raises(
        "demos.csv: trajectory 1, step 0: the MDP cannot move from state 'r0c0' to 'r3c3' "
        "with action 'down' (probability 0)"
    ):
        validate(d, grid, source="demos.csv")


def test_validate_reports_first_bad_record_and_counts_the_rest(grid):
    good = walk(grid, "r0c0", ["down", "down", "down", "right"])
    bad = list(good)
    bad[2] = (bad[2][0], 2)  # r2c0 up -> r1c0, but the next state is r3c0
    bad2 = list(good)
    bad2[1] = (bad2[1][0], 1)  # step 1 goes right instead of down
    d = Demonstrations.from_lists([good, bad, bad2])
    with raises(
        "trajectory 1, step 2: the MDP cannot move from state 'r2c0' to 'r3c0' with action 'up'",
        "1 more bad step after this one",
    ):
        validate(d, grid)


def test_validate_state_and_action_out_of_range(grid):
    d = Demonstrations.from_lists([[(0, 0), (1, 0)], [(0, 0), (1, 0), (99, 0)]])
    with raises("<demonstrations>: trajectory 1, step 2: state index 99 is out of range", "0..15"):
        validate(d, grid)
    d = Demonstrations.from_lists([[(0, 0), (1, 7)]])
    with raises("src: trajectory 0, step 1: action index 7 is out of range", "0..3"):
        validate(d, grid, source="src")


def test_validate_labels(grid, demos):
    labels = np.where(demos.mask(), grid.labels[np.maximum(demos.states, 0)], -1)
    wrong = labels.copy()
    wrong[2, 1] = (wrong[2, 1] + 1) % grid.n_propositions
    s = grid.states[demos.states[2, 1]]
    with raises("f.npz: trajectory 2, step 1: label", f"disagrees with the MDP, which labels state {s!r} with"):
        validate(demos, grid, labels=wrong, source="f.npz")
    missing = labels.copy()
    missing[0, 0] = -1
    with raises("trajectory 0, step 0: missing label"):
        validate(demos, grid, labels=missing)
    with raises("labels have shape"):
        validate(demos, grid, labels=labels[:, :2])


def test_validate_is_vectorised_on_large_data():
    m = labyrinth()
    rng = np.random.default_rng(1)
    N, T = 2000, 100
    succ = np.asarray(m.transitions.indices).reshape(m.n_states, 4)
    A = rng.integers(0, 4, (N, T))
    S = np.zeros((N, T), dtype=int)
    for t in range(1, T):
        S[:, t] = succ[S[:, t - 1], A[:, t - 1]]
    validate(Demonstrations.full(S, A), m)
    S[1500, 50] = (S[1500, 50] + 3) % m.n_states
    with raises("trajectory 1500, step 49: the MDP cannot move"):
        validate(Demonstrations.full(S, A), m)


# ---------------------------------------------------------------------- CSV
@pytest.mark.parametrize("names", [True, False])
def test_csv_round_trip(tmp_path, grid, demos, names):
    p = tmp_path / "d.csv"
    save_csv(demos, p, grid, names=names)
    text = p.read_text().splitlines()
    assert text[0] == "trajectory,step,state,action,label"
    assert len(text) == 1 + demos.n_steps
    first = text[1].split(",")
    assert first == (["0", "0", "r0c0", "down", "a"] if names else ["0", "0", "0", "0", str(grid.labels[0])])
    back = load_csv(p, grid)
    assert back == demos
    assert list(back.lengths) == [5, 1, 3]  # ragged


def test_csv_names_indices_order_and_grouping(tmp_path, grid):
    # columns in another order, no label column, mixed names / indices, string ids,
    # rows of a trajectory interleaved and steps out of order
    r0c0, r1c0, r2c0 = (grid.state_index(x) for x in ("r0c0", "r1c0", "r2c0"))
    text = (
        "state,action,step,trajectory\n"
        "r0c0,down,0,mouse-b\n"
        f"{r1c0},0,1,mouse-a\n"
        "r0c0,0,0,mouse-a\n"
        "\n"
        "r1c0,down,1,mouse-b\n"
        "r2c0,right,2,mouse-b\n"
    )
    d = load_csv(write(tmp_path, text), grid)
    assert d == Demonstrations.from_lists(
        [
            [(r0c0, 0), (r1c0, 0), (r2c0, 1)],  # mouse-b first: first appearance
            [(r0c0, 0), (r1c0, 0)],
        ]
    )


def test_csv_name_wins_over_index(tmp_path):
    P = np.zeros((1, 3, 3))
    P[0, :, :] = 1 / 3
    m = LabeledMDP.from_dense(P, [0, 1, 0], ["p", "q"], states=["1", "0", "x"], actions=["go"])
    text = "trajectory,step,state,action,label\n0,0,1,0,p\n0,1,2,go,0\n0,2,0,0,q\n"
    d = load_csv(write(tmp_path, text), m)
    # "1" and "0" are state names (indices 0 and 1); "2" is an index (state "x")
    assert d.states.tolist() == [[0, 2, 1]]
    with raises("demos.csv:2: unknown state '3' (not a state name nor an index 0..2)"):
        load_csv(write(tmp_path, "trajectory,step,state,action\n0,0,3,go\n"), m)


def test_csv_line_numbers_with_quoted_newline(tmp_path, grid):
    text = 'trajectory,step,state,action\n"two\nlines",0,r0c0,down\n"two\nlines",1,q7,down\n'
    with raises("demos.csv:4: unknown state 'q7' (not a state name nor an index 0..15)"):
        load_csv(write(tmp_path, text), grid)


CSV_BAD = [
    ("", "demos.csv: empty file"),
    ("\n\n", "demos.csv: empty file"),
    ("trajectory,step,state,action\n", "demos.csv: no steps after the header"),
    ("0,0,r0c0,down\n", "demos.csv:1: unknown column '0'", "the first line must be a header"),
    ("trajectory,step,state\n0,0,r0c0\n", "demos.csv:1: missing column 'action'"),
    ("trajectory,step,state,action,value\n", "demos.csv:1: unknown column 'value'"),
    ("trajectory,step,state,state,action\n", "demos.csv:1: column 'state' appears twice"),
    (HEADER + "0,0,r0c0,down,a\n0,1,r1c0\n", "demos.csv:3: 3 fields, expected 5"),
    (HEADER + "0,0,r0c0,down,a\n0,1,r1c0,down,b,x\n", "demos.csv:3: 6 fields, expected 5"),
    (HEADER + "0,0,,down,a\n", "demos.csv:2: empty state field"),
    (HEADER + "0,0,r0c0,,a\n", "demos.csv:2: empty action field"),
    (HEADER + ",0,r0c0,down,a\n", "demos.csv:2: empty trajectory field"),
    (HEADER + "0,,r0c0,down,a\n", "demos.csv:2: empty step field"),
    (
        HEADER + "0,0,r0c0,down,a\n0,1,q7,down,b\n0,2,q8,down,c\n",
        "demos.csv:3: unknown state 'q7' (not a state name nor an index 0..15)",
        "1 more bad state value below",
    ),
    (HEADER + "0,0,r0c0,jump,a\n", "demos.csv:2: unknown action 'jump' (not an action name nor an index 0..3)"),
    (HEADER + "0,0,r0c0,4,a\n", "demos.csv:2: unknown action '4'"),
    (HEADER + "0,0,-1,down,a\n", "demos.csv:2: unknown state '-1'"),
    (HEADER + "0,0,r0c0,down,z\n", "demos.csv:2: unknown label 'z' (not a proposition nor an index 0..3)"),
    (HEADER + "0,0,r0c0,down,a\n0,x,r1c0,down,b\n", "demos.csv:3: step 'x' is not a non-negative integer"),
    (HEADER + "0,0,r0c0,down,a\n0,-1,r1c0,down,b\n", "demos.csv:3: step '-1' is not a non-negative integer"),
    (HEADER + "0,0,r0c0,down,a\n0,1.0,r1c0,down,b\n", "demos.csv:3: step '1.0'"),
    (
        HEADER + "0,0,r0c0,down,a\n0,1" + "0" * 30 + ",r1c0,down,b\n",
        "demos.csv:3: step '1" + "0" * 30 + "' is too large (column 'step'",
    ),
    (
        HEADER + "0,0,r0c0,down,a\n0,2,r2c0,down,c\n",
        "demos.csv:3: trajectory 0: step 2 follows step 0; step 1 is missing",
    ),
    (HEADER + "0,0,r0c0,down,a\nt7,1,r1c0,down,b\n", "demos.csv:3: trajectory t7 starts at step 1; steps count from 0"),
    (
        HEADER + "0,0,r0c0,down,a\n0,1,r1c0,down,b\n0,1,r1c0,down,b\n",
        "demos.csv:4: trajectory 0: step 1 appears twice (also on line 3)",
    ),
    (
        HEADER + "0,0,r0c0,down,a\n0,1,r1c0,down,b\n1,0,r0c0,down,a\n1,1,r1c0,down,a\n",
        "demos.csv:5: trajectory 1, step 1: label 'a' disagrees with the MDP, which labels state 'r1c0' with 'b'",
    ),
    (
        HEADER + "0,0,r0c0,down,a\n0,1,r1c0,down,b\n7,0,r0c0,down,a\n7,1,r3c3,down,c\n7,2,r3c3,down,c\n",
        "demos.csv:4: trajectory 7, step 0: the MDP cannot move from state 'r0c0' to 'r3c3' with action 'down' "
        "(probability 0)",
    ),
]


@pytest.mark.parametrize("case", CSV_BAD, ids=[c[1].split(": ", 1)[1][:40] for c in CSV_BAD])
def test_csv_bad_input(tmp_path, grid, case):
    text, *parts = case
    with raises(*parts):
        load_csv(write(tmp_path, text), grid)


def test_csv_missing_file(tmp_path, grid):
    with raises("nope.csv: no such file"):
        load_csv(tmp_path / "nope.csv", grid)


def test_csv_100k_rows(tmp_path):
    m = labyrinth()
    rng = np.random.default_rng(0)
    N, T = 1000, 100
    succ = np.asarray(m.transitions.indices).reshape(m.n_states, 4)
    A = rng.integers(0, 4, (N, T))
    S = np.zeros((N, T), dtype=int)
    for t in range(1, T):
        S[:, t] = succ[S[:, t - 1], A[:, t - 1]]
    lengths = rng.integers(1, T + 1, N)
    inside = np.arange(T)[None, :] < lengths[:, None]
    d = Demonstrations(np.where(inside, S, -1), np.where(inside, A, -1), lengths)
    p = tmp_path / "big.csv"
    save_csv(d, p, m)
    assert load_csv(p, m) == d


# ---------------------------------------------------------------------- NPZ
def test_npz_round_trip(tmp_path, demos, grid):
    p = tmp_path / "d.npz"
    save_npz(demos, p)
    with np.load(p) as z:
        assert sorted(z.files) == ["actions", "lengths", "states"]
    assert load_npz(p) == demos
    assert load_npz(p, grid) == demos


def npz(tmp_path, name="bad.npz", **arrays):
    p = tmp_path / name
    np.savez(p, **arrays)
    return p


def test_npz_bad_input(tmp_path, grid):
    s = np.zeros((2, 3), dtype=np.int64)
    with raises("bad.npz: missing array 'actions'"):
        load_npz(npz(tmp_path, states=s))
    with raises("bad.npz: array 'actions' has dtype float64, expected integers"):
        load_npz(npz(tmp_path, states=s, actions=s.astype(float)))
    with raises("bad.npz: array 'actions' has shape (2, 2), but 'states' has (2, 3)"):
        load_npz(npz(tmp_path, states=s, actions=s[:, :2]))
    with raises("bad.npz: array 'states' is 1-D"):
        load_npz(npz(tmp_path, states=s[0], actions=s[0]))
    with raises("bad.npz: array 'lengths' has 3 entries for 2 trajectories"):
        load_npz(npz(tmp_path, states=s, actions=s, lengths=[3, 3, 3]))
    with raises("bad.npz: unknown array 'returns'"):
        load_npz(npz(tmp_path, states=s, actions=s, returns=s))
    padded = np.array([[0, 1, -1], [0, 0, 0]])
    with raises("bad.npz: trajectory 0, step 2: missing state", "no 'lengths' array"):
        load_npz(npz(tmp_path, states=padded, actions=padded))
    assert load_npz(npz(tmp_path, states=padded, actions=padded, lengths=[2, 3])).lengths.tolist() == [2, 3]
    with raises("bad.npz: trajectory 1, step 2: state index 99 is out of range"):
        load_npz(npz(tmp_path, states=[[0, 1, 2], [0, 1, 99]], actions=np.zeros((2, 3), int)), grid)
    lab = np.tile(grid.labels[[0, 1, 2]], (2, 1))  # r0c0 r1c0 r2c0 down the column
    st = np.array([[0, 1, 2], [0, 1, 2]])
    assert load_npz(npz(tmp_path, states=st, actions=np.zeros((2, 3), int), labels=lab), grid).n_steps == 6
    lab[1, 2] = (lab[1, 2] + 1) % grid.n_propositions
    with raises("bad.npz: trajectory 1, step 2: label"):
        load_npz(npz(tmp_path, states=st, actions=np.zeros((2, 3), int), labels=lab), grid)
    notzip = tmp_path / "text.npz"
    notzip.write_text("hello")
    with raises("text.npz: not a readable NPZ file"):
        load_npz(notzip)
    with raises("gone.npz: no such file"):
        load_npz(tmp_path / "gone.npz")


def test_a_trajectory_must_start_where_the_mdp_can_start(tmp_path):
    """A first state of start probability 0 is refused with the trajectory named, in every
    format (NPZ, CSV) as a bad step is; the start states are listed."""
    mdp = gridworld(["a b", "c d"], slip=0.0, start=[(0, 0)])
    good = walk(mdp, "r0c0", ["right", "down"])
    late = walk(mdp, "r0c1", ["down"])  # r0c1 is reachable, but no trajectory starts there
    d = Demonstrations.from_lists([good, good, late])
    p = npz(tmp_path, states=d.states, actions=d.actions, lengths=d.lengths)
    message = (
        "bad.npz: trajectory 2, step 0: the trajectory starts in state 'r0c1', where the MDP cannot start "
        "(start probability 0; its start state is 'r0c0')"
    )
    with raises(message):
        load_npz(p, mdp)
    with raises(message):
        load(p, mdp)
    assert load_npz(p).n_trajectories == 3  # without an MDP there is nothing to check against
    csv = write(tmp_path, HEADER + "0,0,r0c0,right,a\n7,0,r0c1,down,b\n")
    with raises("demos.csv:3: trajectory 7, step 0: the trajectory starts in state 'r0c1'"):
        load_csv(csv, mdp)
    with raises("out.csv: trajectory 2, step 0: the trajectory starts in state 'r0c1'"):
        save(d, tmp_path / "out.csv", mdp)
    assert not (tmp_path / "out.csv").exists()
    assert load_npz(npz(tmp_path, "ok.npz", states=d.states[:2], actions=d.actions[:2]), mdp).n_steps == 4


# ---------------------------------------------------------------------- dispatch, overwrite
def test_load_save_dispatch(tmp_path, grid, demos):
    for ext in (".csv", ".npz", ".CSV"):
        p = tmp_path / f"d{ext}"
        save(demos, p, grid)
        assert load(p, grid) == demos
    (tmp_path / "d.txt").write_text("0,0,0,0\n")
    with raises("d.txt: unsupported demonstrations format '.txt'", ".csv", ".npz", ".parquet"):
        load(tmp_path / "d.txt", grid)
    with raises("d.npz: partition_size applies to Parquet datasets only"):
        save(demos, tmp_path / "d.npz", grid, partition_size=2)


@pytest.mark.parametrize("ext", [".csv", ".npz"])
def test_no_overwrite_without_force(tmp_path, grid, demos, ext):
    p = tmp_path / f"d{ext}"
    save(demos, p, grid)
    before = p.read_bytes()
    other = demos[[0]]
    with raises(f"d{ext}: already exists; pass --force", "overwrite=True"):
        save(other, p, grid)
    with raises("already exists"):
        (save_csv(other, p, grid) if ext == ".csv" else save_npz(other, p))
    assert p.read_bytes() == before
    save(other, p, grid, overwrite=True)
    assert load(p, grid) == other


def test_save_refuses_invalid_demonstrations(tmp_path, grid):
    d = Demonstrations.from_lists([[(0, 1), (0, 0)]])  # r0c0 right -> r0c1, not r0c0
    with raises("bad.csv: trajectory 0, step 0: the MDP cannot move"):
        save(d, tmp_path / "bad.csv", grid)
    assert not (tmp_path / "bad.csv").exists()


# ---------------------------------------------------------------------- mice
@pytest.mark.parametrize("cohort,shape", [("restricted", (200, 22)), ("unrestricted", (207, 14))])
def test_mice_files(tmp_path, cohort, shape):
    path = MICE / f"mice_water_{cohort}.npz"
    if not path.exists():
        pytest.skip(f"{path} is absent")
    maze = labyrinth()
    d = load(path, maze)
    assert d.states.shape == shape and d.n_steps == shape[0] * shape[1]
    assert (d.states[:, 0] == 0).all()  # every trajectory starts at home
    assert load_npz(path) == d
    # through CSV and our NPZ
    save(d, tmp_path / "m.csv", maze)
    save(d, tmp_path / "m.npz", maze)
    assert load(tmp_path / "m.csv", maze) == d
    assert load(tmp_path / "m.npz", maze) == d
    # a depth-5 maze (63 nodes) cannot hold node 100
    with raises(f"mice_water_{cohort}.npz: trajectory", "state index", "out of range"):
        load(path, labyrinth(depth=5, labels=[("h", [0])]))
