"""Before any work: every size typed is checked against what it allocates
(rmtk/cli/sizes.py), every output path is checked (rmtk/output.py), and the report of an active
run says what was done (rmtk/learner/report.py)."""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import pytest

from rmtk.cli import sizes
from rmtk.cli.main import main

MODELS = Path(__file__).resolve().parents[1] / "models"
PATROL = str(MODELS / "patrol.rm")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--learn-labels", "1000000"], "--learn-labels 1000000: more propositions than the 16 states of mdp 'rooms'"),
        (["--max-solutions", "100000000000"], "--max-solutions: keeping and printing 100,000,000,000 machines"),
        (["--active", "--expert", "simulated", "--samples", "100000000000"], "--samples: drawing 100,000,000,000"),
        (["--active", "--walk-length", "10000000"], "--walk-length: 5 walks of 10,000,000 steps"),
        (["--active", "--walks", "1000000000000"], "--walks: 1,000,000,000,000 walks of 40 steps"),
        (["--demos", "x.npz", "--engine", "dask", "--workers", "1000000"], "--workers: 1,000,000 Dask worker"),
    ],
)
def test_sizes_beyond_memory_are_refused_at_once(argv, message, capsys):
    t0 = time.monotonic()
    assert main(["learn", PATROL, *argv]) == 1
    assert time.monotonic() - t0 < 5
    err = capsys.readouterr().err
    assert err.startswith(f"rmtk: error: {message}") and err.count("\n") == 1, err
    if "would take" in err:
        assert "a run may use here" in err


def test_simulate_sizes_beyond_memory_are_refused(tmp_path, capsys):
    out = tmp_path / "d.npz"
    assert main(["simulate", PATROL, "-n", "1000000000", "-T", "1000", "--seed", "0", "-o", str(out), "-q"]) == 1
    err = capsys.readouterr().err
    assert (
        err.startswith("rmtk: error: -n and -T: 1,000,000,000 trajectories of 1,000 steps in memory")
        and not out.exists()
    )
    pq = tmp_path / "d.parquet"
    argv = ["simulate", PATROL, "-n", "1000000000", "-T", "100000000", "--seed", "0", "-o", str(pq), "-q"]
    assert main(argv) == 1
    assert capsys.readouterr().err.startswith("rmtk: error: -T: 500,000 trajectories of 100,000,000 steps")


def test_the_budget_and_the_estimates():
    budget = sizes.memory_budget()
    assert 2**28 <= budget  # some memory is known
    with pytest.raises(Exception, match=r"x: y would take 2\.0 KiB, more than the 1\.0 KiB"):
        sizes.check_bytes("x", "y", 2048, budget=1024)
    sizes.check_bytes("x", "y", 1024, budget=1024)
    assert sizes.human(931.3 * 2**30) == "931.3 GiB" and sizes.human(12) == "12 B"


def test_reasonable_sizes_pass(capsys):
    assert main(["learn", PATROL, "--learn-labels", "4", "--max-solutions", "1000", "-q"]) == 0
    assert "4 propositions" in capsys.readouterr().out


# ---------------------------------------------------------------------- output paths, before the work
@pytest.mark.parametrize("mode", [[], ["--learn-labels"], ["--active"]])
def test_bad_output_paths_are_refused_before_the_work(tmp_path, capsys, mode, monkeypatch):
    cli = sys.modules["rmtk.cli.learn"]

    def never(*args, **kw):
        raise AssertionError("the learner ran before the paths were checked")

    monkeypatch.setattr(cli, "run_plan", never)
    (tmp_path / "afile").write_text("x")
    (tmp_path / "adir").mkdir()
    (tmp_path / "m_2.png").write_text("a picture of an earlier run")
    cases = [
        (["--dot", str(tmp_path / "nodir" / "m.dot")], "cannot write: no such directory"),
        (["--png", str(tmp_path / "afile" / "m.png")], "is a file, not a directory"),
        (["--dot", str(tmp_path / "adir")], "is a directory; give a file name"),
        (["--dot", str(tmp_path / "afile")], "already exists; pass --force"),
        (["--png", str(tmp_path / "m.gif2")], "m.gif2"),
        (["--png", str(tmp_path / "m.png")], "m_2.png: already exists (several learned machines are written as m_1"),
    ]
    for argv, message in cases:
        assert main(["learn", PATROL, *mode, *argv, "-q"]) == 1
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adir", "afile", "m_2.png"]


def test_force_replaces_numbered_files(tmp_path, capsys):
    (tmp_path / "m_2.dot").write_text("old")
    dot = tmp_path / "m.dot"
    argv = ["learn", str(MODELS / "stack.rm"), "--nodes", "4", "--max-solutions", "3", "--dot", str(dot), "-q"]
    assert main([*argv, "--no-rewards"]) == 1
    assert "m_2.dot: already exists" in capsys.readouterr().err
    assert main([*argv, "--no-rewards", "--force"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m_1.dot", "m_2.dot", "m_3.dot"]
    assert (tmp_path / "m_2.dot").read_text().startswith('digraph "learned_2"')


def test_numbered_files_probe_their_directory_once(tmp_path, capsys, monkeypatch):
    """Each file is created once (its temporary name, then linked): no probe file per machine,
    which made a stopped listing's thousands of files cost seconds (docs/benchmarks/21-stopped-runs.md)."""
    import os

    created = []
    real_open = os.open

    def counting(path, flags, *args, **kwargs):
        if flags & os.O_CREAT:
            created.append(os.path.basename(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", counting)
    dot = tmp_path / "m.dot"
    argv = ["learn", str(MODELS / "stack.rm"), "--nodes", "4", "--max-solutions", "5", "--dot", str(dot), "-q"]
    assert main([*argv, "--no-rewards"]) == 0
    capsys.readouterr()
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == [f"m_{i}.dot" for i in range(1, 6)]
    probes = [c for c in created if c.endswith(".probe")]
    assert len(probes) == 2  # the --dot path before the work, the numbered files' directory once after it
    assert len([c for c in created if c.endswith(".tmp")]) == 5


def test_a_stopped_listing_writes_the_first_files_only(tmp_path, capsys, monkeypatch):
    """After a time limit, --dot writes STOPPED_FILES at most (the first machines), says so, and
    the listing printed still has every machine."""
    import attrs

    import rmtk.cli.learn as cli_learn
    from rmtk.learner.summary import Stop

    run = cli_learn.run_plan

    def stopped(plan):
        result = run(plan)
        return attrs.evolve(result, stopped=Stop("enumerate", "time limit"))

    monkeypatch.setattr(cli_learn, "run_plan", stopped)
    monkeypatch.setitem(cli_learn.STOPPED_FILES, "dot", 2)
    dot = tmp_path / "m.dot"
    argv = ["learn", str(MODELS / "stack.rm"), "--nodes", "4", "--max-solutions", "5", "--dot", str(dot)]
    assert main([*argv, "--no-rewards"]) == 0
    out, err = capsys.readouterr()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m_1.dot", "m_2.dot"]
    assert "--dot is written for the first 2 of the 5 machines listed" in err
    assert out.count("\nmachine learned_") == 5


# ---------------------------------------------------------------------- the report of an active run
def test_the_active_report_says_no_tree_was_built(capsys):
    assert main(["learn", PATROL, "--active", "-q"]) == 0
    out = capsys.readouterr().out
    assert "prefix tree policy of depth" not in out and "# prefix tree:" not in out
    lines = out.splitlines()
    first = next(i for i, ln in enumerate(lines) if ln.startswith("# learned from task"))
    assert lines[first] == (
        "# learned from task patrol: active learning, questions to the expert's exact policy, compressed words "
        "(no tree built)"
    )
    m = re.fullmatch(
        r"# asked: (\d+) words, (\d+) \(word, state\) pairs known, the longest word (\d+) labels", lines[first + 1]
    )
    assert m, lines[first + 1]
    header = next(ln for ln in lines if ln.startswith("# active learning"))
    assert f"{m.group(2)} (word, state) pairs known" in header  # the same count as the loop's own
