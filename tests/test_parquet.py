"""Parquet demonstrations: round trips, the schema, streaming reads, and every bad input named
by file and row."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from grid_data import make_grid, raises, three_walks, walk

from rmtk.data import Demonstrations, load, save
from rmtk.data.parquet_dataset import ParquetDataset
from rmtk.data.parquet_io import Staging, save_parquet
from rmtk.envs import gridworld


@pytest.fixture(scope="module")
def grid():
    return make_grid()


@pytest.fixture(scope="module")
def demos(grid) -> Demonstrations:
    return three_walks(grid, walk(grid, "r0c0", ["down", "down"]))


def rows(grid, trajectories):
    """Columns of a long table from {id: [(state name, action name), ...]}."""
    cols = {"trajectory": [], "step": [], "state": [], "action": []}
    for tid, steps in trajectories.items():
        for k, (s, a) in enumerate(steps):
            cols["trajectory"].append(tid)
            cols["step"].append(k)
            cols["state"].append(grid.state_index(s))
            cols["action"].append(grid.action_index(a))
    return cols


def write(path, columns: dict, types: dict | None = None, metadata: dict | None = None):
    types = types or {}
    table = pa.table({k: pa.array(v, type=types.get(k, pa.int64())) for k, v in columns.items()})
    if metadata:
        table = table.replace_schema_metadata(metadata)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    return path


# ---------------------------------------------------------------------- writing and reading back
def test_round_trip_schema_and_metadata(tmp_path, grid, demos):
    save(demos, tmp_path / "d.parquet", grid, partition_size=3)
    files = sorted(p.name for p in (tmp_path / "d.parquet").iterdir())
    assert files == ["part-00000.parquet", "part-00001.parquet"]
    schema = pq.read_schema(tmp_path / "d.parquet" / files[1])
    assert [(f.name, str(f.type)) for f in schema] == [
        ("trajectory", "uint8"),
        ("step", "uint8"),
        ("state", "uint8"),
        ("action", "uint8"),
    ]
    meta = {k.decode(): v.decode() for k, v in schema.metadata.items() if k.startswith(b"rmtk.")}
    assert meta == {
        "rmtk.format": "1",
        "rmtk.mdp": "grid",
        "rmtk.states": "16",
        "rmtk.actions": "4",
        "rmtk.propositions": "4",
        "rmtk.partition": "1/2",
        "rmtk.trajectories": "1",
        "rmtk.first": "3",
        "rmtk.steps": "2",
    }
    table = pq.read_table(tmp_path / "d.parquet" / files[1])
    assert table.column("trajectory").to_pylist() == [3, 3]  # global ids, ragged rows only
    back = load(tmp_path / "d.parquet", grid)
    assert back == demos and back.lengths.tolist() == [5, 1, 3, 2]
    ds = ParquetDataset.open(tmp_path / "d.parquet", grid)
    assert ds.n_trajectories == 4 and ds.n_rows == demos.n_steps
    assert [len(c) for c in ds.chunks(grid, size=2)] == [2, 1, 1]


def test_narrow_types_follow_the_sizes(tmp_path):
    big = gridworld([" ".join("a" * 20)] * 20, slip=0.0)  # 400 states: uint16
    d = Demonstrations.full(np.zeros((300, 2), int) + [0, 1], np.zeros((300, 2), int))
    save_parquet(d, tmp_path / "b", big, partition_size=1000, labels=True)
    schema = pq.read_schema(tmp_path / "b" / "part-00000.parquet")
    assert {f.name: str(f.type) for f in schema} == {
        "trajectory": "uint16",
        "step": "uint8",
        "state": "uint16",
        "action": "uint8",
        "label": "uint8",
    }
    assert load(tmp_path / "b", big) == d


def test_single_file_unsorted_rows_and_labels(tmp_path, grid):
    # rows interleaved and steps out of order; a label column; trajectories keep first appearance
    cols = {
        "trajectory": [9, 2, 9, 2, 9],
        "step": [1, 0, 0, 1, 2],
        "state": [grid.state_index(s) for s in ("r1c0", "r3c3", "r0c0", "r2c3", "r2c0")],
        "action": [grid.action_index(a) for a in ("down", "up", "down", "up", "right")],
    }
    cols["label"] = [int(grid.labels[s]) for s in cols["state"]]
    d = load(write(tmp_path / "one.parquet", cols), grid)
    assert d == Demonstrations.from_lists(
        [walk(grid, "r0c0", ["down", "down", "right"]), walk(grid, "r3c3", ["up", "up"])]
    )
    cols["label"][3] = (cols["label"][3] + 1) % 4
    with raises(
        "one.parquet: row 3: trajectory 2, step 1: label 'c' disagrees with the MDP, which labels state 'r2c3' with 'b'"
    ):
        load(write(tmp_path / "one.parquet", cols), grid)


def test_overwrite_and_staging(tmp_path, grid, demos):
    out = tmp_path / "d"
    save(demos, out, grid, format="parquet")
    before = (out / "part-00000.parquet").read_bytes()
    with raises(f"{out}: the directory holds data (1 entry); pass --force", "overwrite=True"):
        save(demos[[0]], out, grid, format="parquet")
    assert (out / "part-00000.parquet").read_bytes() == before
    save(demos[[0]], out, grid, format="parquet", overwrite=True)
    assert load(out, grid) == demos[[0]]
    (out / "notes.txt").write_text("mine")
    with raises(f"{out}: holds files that are not Parquet partitions (notes.txt); refusing to replace it"):
        save(demos, out, grid, format="parquet", overwrite=True)
    # an invalid trajectory stops the write before anything appears, and nothing is left behind
    bad = Demonstrations.from_lists([[(0, 1), (0, 0)]])
    with raises("new.parquet: trajectory 0, step 0: the MDP cannot move"):
        save(bad, tmp_path / "new.parquet", grid)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]
    (tmp_path / "empty").mkdir()
    save(demos, tmp_path / "empty", grid)  # an empty directory is no data
    assert load(tmp_path / "empty", grid) == demos


def test_staging_commits_atomically(tmp_path):
    with Staging(tmp_path / "out") as st:
        (tmp_path / "out").mkdir()
        (tmp_path / "out" / "x.bin").write_text("appeared meanwhile")
        with raises("the directory holds data"):
            st.commit()
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # the staging directory is gone


def test_import_rmtk_imports_neither_pyarrow_nor_dask():
    probe = (
        "import sys, rmtk, rmtk.data, rmtk.ptp.empirical, rmtk.engines.local, rmtk.product.simulate, rmtk.cli.main; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'pyarrow', 'dask', 'distributed'}))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# ---------------------------------------------------------------------- bad inputs, one per kind
GOOD = {0: [("r0c0", "down"), ("r1c0", "down"), ("r2c0", "right")], 1: [("r3c3", "up"), ("r2c3", "up")]}


def bad_dataset(tmp_path, grid, kind):
    """A dataset directory with one defect of the given kind."""
    d = tmp_path / "bad"
    cols = rows(grid, GOOD)
    part = d / "part-00000.parquet"
    if kind == "no directory":
        return tmp_path / "nowhere"
    if kind == "empty directory":
        d.mkdir()
        (d / "README").write_text("no data here")
    elif kind == "corrupt partition":
        write(part, cols)
        (d / "part-00001.parquet").write_bytes(b"PAR1 this is not a parquet file")
    elif kind == "missing column":
        del cols["action"]
        write(part, cols)
    elif kind == "unknown column":
        write(part, {**cols, "value": [0] * 5})
    elif kind == "float column":
        write(part, cols, types={"state": pa.float64()})
    elif kind == "another schema":
        write(part, cols, types={"state": pa.uint8()})
        write(d / "part-00001.parquet", rows(grid, {2: GOOD[0]}))
    elif kind == "another mdp":
        write(part, cols, metadata={"rmtk.mdp": "blocks", "rmtk.states": "60", "rmtk.actions": "9"})
    elif kind == "missing partition":
        for k in (0, 2):
            write(d / f"part-0000{k}.parquet", rows(grid, {k: GOOD[0]}), metadata={"rmtk.partition": f"{k}/3"})
    elif kind == "split trajectory":
        write(part, rows(grid, {0: GOOD[0][:2], 4: GOOD[1]}))
        tail = rows(grid, {0: GOOD[0]})
        write(d / "part-00001.parquet", {k: v[2:] for k, v in tail.items()})
    elif kind == "null":
        table = pa.table({k: pa.array(v, type=pa.int64()) for k, v in cols.items()})
        state = pa.array([0, 1, None, 15, 14], type=pa.int64())
        write(part, {**{k: table.column(k).to_pylist() for k in cols}, "state": state.to_pylist()})
    elif kind == "state out of range":
        cols["state"][4] = 99
        write(part, cols)
    elif kind == "negative action":
        cols["action"][1] = -1
        write(part, cols)
    elif kind == "step gap":
        cols["step"][2] = 3
        write(part, cols)
    elif kind == "duplicate step":
        cols["step"][2] = 1
        write(part, cols)
    elif kind == "late start":
        cols["step"][3:] = [1, 2]
        write(part, cols)
    elif kind == "impossible move":
        cols["state"][1] = grid.state_index("r3c3")
        write(part, cols)
    elif kind == "wrong label":
        cols["label"] = [int(grid.labels[s]) for s in cols["state"]]
        cols["label"][4] = 0
        write(part, cols)
    return d


BAD = [
    ("no directory", "nowhere: no such file or directory"),
    ("empty directory", "bad: no Parquet files (*.parquet) in the directory"),
    ("corrupt partition", "bad/part-00001.parquet: not a readable Parquet file"),
    ("missing column", "bad/part-00000.parquet: missing column 'action' (the file has: trajectory, step, state)"),
    (
        "unknown column",
        "bad/part-00000.parquet: unknown column 'value'; the columns are trajectory, step, state, "
        "action and optionally label, reward",
    ),
    ("float column", "bad/part-00000.parquet: column 'state' has type double, expected integers"),
    (
        "another schema",
        "bad/part-00001.parquet: its schema differs from",
        "bad/part-00000.parquet's: column 'state' is int64 here, uint8 there",
    ),
    (
        "another mdp",
        "bad/part-00000.parquet: written for the MDP 'blocks' (60 states, 9 actions); the MDP given is "
        "'grid' (16 states, 4 actions)",
    ),
    ("missing partition", "bad: partition 1 of 3 is missing: 2 of 3 files present"),
    (
        "split trajectory",
        "bad/part-00001.parquet: trajectory 0 also has rows in",
        "bad/part-00000.parquet; a trajectory's rows must all be in one file",
    ),
    ("null", "bad/part-00000.parquet: row 2: missing state (null)"),
    (
        "state out of range",
        "bad/part-00000.parquet: row 4: trajectory 1, step 1: state index 99 is out of range "
        "(the MDP 'grid' has states 0..15)",
    ),
    (
        "negative action",
        "bad/part-00000.parquet: row 1: trajectory 0, step 1: action index -1 is out of range "
        "(the MDP 'grid' has actions 0..3)",
    ),
    ("step gap", "bad/part-00000.parquet: row 2: trajectory 0: step 3 follows step 1; step 2 is missing"),
    ("duplicate step", "bad/part-00000.parquet: row 2: trajectory 0: step 1 appears twice (also on row 1)"),
    ("late start", "bad/part-00000.parquet: row 3: trajectory 1 starts at step 1; steps count from 0"),
    (
        "impossible move",
        "bad/part-00000.parquet: row 0: trajectory 0, step 0: the MDP cannot move from state 'r0c0' "
        "to 'r3c3' with action 'down' (probability 0)",
    ),
    (
        "wrong label",
        "bad/part-00000.parquet: row 4: trajectory 1, step 1: label 'a' disagrees with the MDP, which "
        "labels state 'r2c3' with 'b'",
    ),
]


@pytest.mark.parametrize("case", BAD, ids=[c[0] for c in BAD])
def test_bad_input(tmp_path, grid, case):
    kind, *parts = case
    with raises(*parts):
        load(bad_dataset(tmp_path, grid, kind), grid)


def test_bad_inputs_are_caught_by_the_streaming_counter_too(tmp_path, grid):
    """Counting partition by partition (never loading the dataset) checks the same things."""
    from rmtk import EmpiricalPTP

    for kind, *parts in BAD[2:]:
        d = bad_dataset(tmp_path / kind.replace(" ", "_"), grid, kind)
        if kind == "split trajectory":  # the second file is met alone first
            parts = [
                "bad/part-00001.parquet: row 0: trajectory 0 starts at step 2; steps count from 0 (if its first "
                "steps are in another file: a trajectory's rows must all be in one file)"
            ]
        with raises(*parts):
            EmpiricalPTP(d).counts(grid)


def test_a_trajectory_id_in_two_files_is_refused_when_counting(tmp_path, grid):
    """Two files each with a whole trajectory 4: each is fine alone, the id ranges overlap,
    and the ids are compared exactly (ranges that only interleave pass)."""
    from rmtk import EmpiricalPTP

    d = tmp_path / "twice"
    write(d / "part-00000.parquet", rows(grid, {0: GOOD[0], 4: GOOD[1]}))
    write(d / "part-00001.parquet", rows(grid, {2: GOOD[0], 4: GOOD[0]}))
    with raises("twice/part-00001.parquet: trajectory 4 also has rows in", "twice/part-00000.parquet"):
        EmpiricalPTP(d).counts(grid)
    write(d / "part-00001.parquet", rows(grid, {1: GOOD[0], 3: GOOD[1]}))  # 0 4 | 1 3: overlapping ranges, no dup
    assert EmpiricalPTP(d).counts(grid).n_steps == 10


def test_good_dataset_of_the_bad_ones_loads(tmp_path, grid):
    d = write(tmp_path / "good" / "part-00000.parquet", rows(grid, GOOD)).parent
    assert load(d, grid) == Demonstrations.from_lists(
        [walk(grid, "r0c0", ["down", "down", "right"]), walk(grid, "r3c3", ["up", "up"])]
    )


def test_cli_simulate_parquet_locally_and_learn_as_from_npz(tmp_path, capsys):
    from pathlib import Path

    from rmtk import dsl
    from rmtk.cli.main import main
    from rmtk.product.simulate import simulate

    model = str(Path(__file__).resolve().parents[1] / "models" / "stack_avoid.rm")
    task = dsl.load(model).tasks["stack_avoid"]
    common = [model, "-n", "3000", "-T", "20", "--seed", "5", "-q"]
    assert main(["simulate", *common, "-o", str(tmp_path / "d.parquet"), "--partition-size", "1000"]) == 0
    assert main(["simulate", *common, "-o", str(tmp_path / "d.npz")]) == 0
    assert "wrote" in capsys.readouterr().err
    assert (
        load(tmp_path / "d.parquet", task.mdp) == load(tmp_path / "d.npz", task.mdp) == simulate(task, 3000, 20, seed=5)
    )
    assert len(list((tmp_path / "d.parquet").iterdir())) == 3
    reports = []
    for demos in ("d.parquet", "d.npz"):
        assert (
            main(["learn", model, "--demos", str(tmp_path / demos), "--maxsat", "--nodes", "3", "--no-rewards", "-q"])
            == 0
        )
        reports.append([ln for ln in capsys.readouterr().out.splitlines() if not ln.startswith("# timings")])
    assert reports[0] == reports[1]
    assert main(["simulate", *common, "-o", str(tmp_path / "e.npz"), "--partition-size", "10"]) == 2
    assert "--partition-size applies to Parquet output" in capsys.readouterr().err
    assert main(["learn", model, "--engine", "dask", "-q"]) == 2
    assert (
        "--engine does not apply to learning from the task's exact policy: it chooses where demonstrations"
        in capsys.readouterr().err
    )


# ---------------------------------------------------------------------- a partition holding less than it says
@pytest.fixture(scope="module")
def stack():
    from pathlib import Path

    from rmtk import dsl

    return dsl.load(Path(__file__).resolve().parents[1] / "models" / "stack.rm").tasks["stack"]


def shrunk_dataset(tmp_path, stack, keep, drop_keys=(), shift=0):
    """100 trajectories of 10 steps in 2 partitions of 50; partition 1 rewritten with its first
    ``keep`` rows (the metadata kept, as pyarrow keeps it), without the metadata ``drop_keys``,
    and its trajectory ids shifted by ``shift``."""
    from rmtk.product.simulate import simulate_dataset

    d = tmp_path / "d.parquet"
    simulate_dataset(stack, 100, 10, d, seed=0, partition_size=50)
    part = d / "part-00001.parquet"
    table = pq.read_table(part)
    assert table.num_rows == 500 and table.schema.metadata[b"rmtk.trajectories"] == b"50"
    table = table.slice(0, keep)
    if shift:
        ids = pa.array(table.column("trajectory").to_numpy() + shift, type=table.schema.field("trajectory").type)
        table = table.set_column(0, "trajectory", ids)
    meta = {k: v for k, v in table.schema.metadata.items() if k.decode() not in drop_keys}
    pq.write_table(table.replace_schema_metadata(meta), part)
    return d


SHRUNK = [  # (rows kept, metadata dropped, id shift, message)
    (
        250,
        (),
        0,
        "d.parquet/part-00001.parquet): row 250: the file ends after 250 rows, but rmtk wrote 500 "
        "(metadata rmtk.steps): rows 250..499 are missing",
    ),
    (0, (), 0, "d.parquet/part-00001.parquet): row 0: the file ends after 0 rows, but rmtk wrote 500"),
    (
        0,
        ("rmtk.steps",),
        0,
        "d.parquet/part-00001.parquet): row 0: the file ends after 0 rows, too few for the 50 "
        "trajectories its metadata records",
    ),
    (
        250,
        ("rmtk.steps",),
        0,
        "d.parquet/part-00001.parquet): row 250: the file ends after 25 of the 50 trajectories its metadata records",
    ),
    (255, ("rmtk.steps", "rmtk.first"), 0, "row 255: the file ends after 26 of the 50 trajectories"),
    (
        500,
        ("rmtk.steps",),
        10,
        "d.parquet/part-00001.parquet): row 0: trajectory 60 where its metadata records "
        "trajectory 50 (trajectories 50..99)",
    ),
]


@pytest.mark.parametrize("case", SHRUNK, ids=[f"{c[0]} rows, no {'/'.join(c[1])}, +{c[2]}" for c in SHRUNK])
def test_a_partition_holding_less_than_its_metadata_records_is_refused(tmp_path, stack, case):
    """A partition file rewritten with fewer rows (or none, or other ids) is refused with the
    partition and the row named, by the loader and by the streaming counter alike: never
    counted as if it were whole."""
    from rmtk import EmpiricalPTP

    keep, dropped, shift, message = case
    d = shrunk_dataset(tmp_path, stack, keep, dropped, shift)
    with raises("partition 1 of 2 (", message):
        load(d, stack.mdp)
    with raises("partition 1 of 2 (", message):
        EmpiricalPTP(d).counts(stack.mdp)


def test_a_partition_of_another_dataset_is_refused(tmp_path, stack):
    """Whole files whose id ranges do not follow one another (a file of another dataset of the
    same shape dropped in) are refused when the dataset is opened."""
    from rmtk.product.simulate import simulate_dataset

    d = tmp_path / "d.parquet"
    simulate_dataset(stack, 100, 10, d, seed=0, partition_size=50)
    simulate_dataset(stack, 120, 10, tmp_path / "e.parquet", seed=1, partition_size=60)
    (tmp_path / "e.parquet" / "part-00001.parquet").replace(d / "part-00001.parquet")  # also partition 1 of 2
    with raises(
        "part-00001.parquet): its metadata records trajectories 60..119, where trajectory 50 comes next: "
        "trajectories 50..59 are in no file"
    ):
        ParquetDataset.open(d, stack.mdp)
    simulate_dataset(stack, 80, 10, tmp_path / "f.parquet", seed=1, partition_size=40)
    (tmp_path / "f.parquet" / "part-00001.parquet").replace(d / "part-00001.parquet")
    with raises("trajectories 40..49 are in another file too"):
        ParquetDataset.open(d, stack.mdp)


def test_cli_learn_stops_on_a_shrunk_partition(tmp_path, stack, capsys):
    from pathlib import Path

    from rmtk.cli.main import main

    d = shrunk_dataset(tmp_path, stack, 250, ("rmtk.steps",))
    model = str(Path(__file__).resolve().parents[1] / "models" / "stack.rm")
    assert main(["learn", model, "--demos", str(d), "--no-rewards", "-q"]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and "Traceback" not in captured.err
    assert captured.err.strip().endswith(
        "row 250: the file ends after 25 of the 50 trajectories its metadata records (rmtk.trajectories)"
    )
