"""Output files are whole or absent: checked before the work, written to a temporary name and
renamed into place, cleaned up on an error or Ctrl-C (rmtk/output.py)."""

from __future__ import annotations

import os
import re
import selectors
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rmtk import dsl, output
from rmtk.cli.main import main
from rmtk.errors import RmtkError

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"


def listing(directory: Path) -> list[str]:
    """Every name in ``directory``, hidden ones included (a leftover temporary file shows)."""
    return sorted(p.name for p in directory.iterdir())


# ---------------------------------------------------------------------- the helper
def test_replacing_puts_the_content_in_place_only_when_complete(tmp_path):
    target = tmp_path / "out.txt"
    with output.replacing(target, text=True) as f:
        f.write("first half\n")
        assert not target.exists()  # nothing under the final name while writing
        assert len(listing(tmp_path)) == 1 and listing(tmp_path)[0].startswith(".out.txt.")
        f.write("second half\n")
    assert target.read_text() == "first half\nsecond half\n" and listing(tmp_path) == ["out.txt"]


@pytest.mark.parametrize("exc", [KeyboardInterrupt, ValueError])
def test_an_interrupted_write_leaves_the_old_file_and_no_temporary(tmp_path, exc):
    target = tmp_path / "out.bin"
    target.write_bytes(b"precious")
    with pytest.raises(exc):
        with output.replacing(target, overwrite=True) as f:
            f.write(b"new content, half written")
            raise exc()
    assert target.read_bytes() == b"precious" and listing(tmp_path) == ["out.bin"]


def test_checks_before_the_work(tmp_path):
    (tmp_path / "afile").write_text("x")
    (tmp_path / "adir").mkdir()
    cases = [
        (tmp_path / "nodir" / "out.npz", f"{tmp_path}/nodir/out.npz: cannot write: no such directory {tmp_path}/nodir"),
        (tmp_path / "afile" / "out.npz", f"cannot write: {tmp_path}/afile is a file, not a directory"),
        (tmp_path / "afile" / "deeper" / "out.npz", f"cannot write: {tmp_path}/afile is a file, not a directory"),
        (tmp_path / "afile", f"{tmp_path}/afile: already exists; pass --force (command line) or overwrite=True"),
        (tmp_path / "adir", f"{tmp_path}/adir: is a directory; give a file name"),
    ]
    for path, message in cases:
        with pytest.raises(RmtkError, match=re.escape(message)):
            output.check(path)
    assert output.check(tmp_path / "afile", overwrite=True) == tmp_path / "afile"
    assert listing(tmp_path) == ["adir", "afile"]  # the probe files are gone


@pytest.mark.skipif(
    not os.path.isdir("/sys") or os.access("/sys", os.W_OK) and os.getuid() != 0,
    reason="needs a directory nobody can create files in",
)
def test_a_directory_that_takes_no_files_is_refused_before_the_work():
    with pytest.raises(RmtkError, match=r"/sys/out\.npz: cannot write: cannot create files in /sys"):
        output.check("/sys/out.npz")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_a_device_is_written_in_place_and_its_errors_are_clean(tmp_path):
    """/dev/full cannot be renamed over: it is written directly (with --force, as any existing
    path) and its 'no space left' is a clean error naming it."""
    with pytest.raises(RmtkError, match="/dev/full: already exists"):
        output.check("/dev/full")
    with pytest.raises(RmtkError, match="/dev/full: cannot write: No space left on device"):
        with output.replacing("/dev/full", overwrite=True) as f:
            f.write(b"x" * 100_000)
    with output.replacing("/dev/null", overwrite=True, text=True) as f:
        f.write("discarded")


def test_a_symlink_is_kept_and_permissions_survive(tmp_path):
    real = tmp_path / "real.txt"
    real.write_text("old")
    os.chmod(real, 0o640)
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    with output.replacing(link, overwrite=True, text=True) as f:
        f.write("new")
    assert link.is_symlink() and real.read_text() == "new" and stat.S_IMODE(real.stat().st_mode) == 0o640


def test_a_file_that_appears_meanwhile_is_not_overwritten(tmp_path):
    target = tmp_path / "out.txt"
    with pytest.raises(RmtkError, match="appeared while rmtk was writing"):
        with output.replacing(target, text=True) as f:
            f.write("mine")
            target.write_text("someone else's")
    assert target.read_text() == "someone else's" and listing(tmp_path) == ["out.txt"]


@pytest.fixture
def interrupt_mid_write(monkeypatch):
    """Ctrl-C right after the first write into a temporary file (the test hook, in-process)."""

    def ctrl_c(seconds):
        raise KeyboardInterrupt

    monkeypatch.setenv(output.PAUSE_VARIABLE, "1")
    monkeypatch.setattr(output.time, "sleep", ctrl_c)


def _writers():
    from rmtk.data import save
    from rmtk.io import draw
    from rmtk.product.simulate import simulate

    task = dsl.load(MODELS / "stack.rm").tasks["stack"]
    demos = simulate(task, 50, 5, seed=0)
    return {
        "dsl.dump": ("copy.rm", lambda p: dsl.dump(task.machine, p, overwrite=True)),
        "save npz": ("d.npz", lambda p: save(demos, p, task.mdp, overwrite=True)),
        "save csv": ("d.csv", lambda p: save(demos, p, task.mdp, overwrite=True)),
        "draw_machine": ("m.png", lambda p: draw.draw_machine(task.machine, p)),
    }


@pytest.mark.parametrize("writer", ["dsl.dump", "save npz", "save csv", "draw_machine"])
def test_api_writers_interrupted_mid_write_keep_the_old_file(tmp_path, interrupt_mid_write, writer):
    name, write = _writers()[writer]
    (tmp_path / name).write_bytes(b"precious")
    with pytest.raises(KeyboardInterrupt):
        write(tmp_path / name)
    assert listing(tmp_path) == [name] and (tmp_path / name).read_bytes() == b"precious"


def test_dsl_dump_round_trips_and_keeps_what_exists(tmp_path):
    doc = dsl.load(MODELS / "stack.rm")
    path = tmp_path / "copy.rm"
    dsl.dump(doc.tasks["stack"].machine, path)
    assert dsl.load(path).machines
    with pytest.raises(RmtkError, match="already exists"):
        dsl.dump(doc.tasks["stack"].machine, path)


# ---------------------------------------------------------------------- the command line
def test_learn_checks_its_outputs_before_learning(tmp_path, capsys):
    """A --dot or --png that cannot be written fails before the search, not after the report."""
    (tmp_path / "afile").write_text("x")
    for args, message in [
        (["--dot", str(tmp_path / "nodir" / "m.dot")], f"no such directory {tmp_path}/nodir"),
        (["--dot", str(tmp_path / "afile" / "m.dot")], f"{tmp_path}/afile is a file, not a directory"),
        (["--png", str(tmp_path / "m.bmpx")], "the file name must end in .png or .svg"),
        (["--png", str(tmp_path / "afile")], "already exists; pass --force"),
    ]:
        assert main(["learn", str(MODELS / "stack.rm"), "-q", "--no-rewards", *args]) == 1
        captured = capsys.readouterr()
        assert captured.out == "" and message in captured.err and "Traceback" not in captured.err
    assert listing(tmp_path) == ["afile"]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_write_errors_are_reported_cleanly(tmp_path, capsys):
    for args in (
        [
            "simulate",
            str(MODELS / "stack.rm"),
            "-n",
            "50",
            "-T",
            "5",
            "--seed",
            "0",
            "-o",
            "/dev/full",
            "--format",
            fmt,
            "--force",
            "-q",
        ]
        for fmt in ("npz", "csv")
    ):
        assert main(args) == 1
        err = capsys.readouterr().err
        assert err == "rmtk: error: /dev/full: cannot write: No space left on device\n"
    assert main(["learn", str(MODELS / "stack.rm"), "-q", "--no-rewards", "--dot", "/dev/full", "--force"]) == 1
    assert capsys.readouterr().err.endswith("rmtk: error: /dev/full: cannot write: No space left on device\n")


def test_learn_demos_names_a_missing_file(tmp_path, capsys):
    for name in ("gone.npz", "gone"):
        assert main(["learn", str(MODELS / "stack.rm"), "--demos", str(tmp_path / name), "-q"]) == 1
        assert capsys.readouterr().err == f"rmtk: error: {tmp_path / name}: no such file or directory (--demos)\n"


def _rmtk(args, cwd, env_extra=None, preexec=None, text=True):
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env_extra or {})}
    return subprocess.Popen(
        [sys.executable, "-m", "rmtk", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=text,
        preexec_fn=preexec,
    )


def _file_size_limit():
    import resource

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
    resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))


@pytest.mark.skipif(not hasattr(signal, "SIGXFSZ"), reason="needs RLIMIT_FSIZE")
@pytest.mark.parametrize("fmt", ["csv", "npz"])
def test_a_write_failing_midway_leaves_nothing(tmp_path, fmt):
    """A regular file whose write fails after 20 kB (the file size limit stands in for a full
    disk): a one-line error, and neither the target nor a temporary file is left."""
    proc = _rmtk(
        ["simulate", str(MODELS / "stack.rm"), "-n", "3000", "-T", "10", "--seed", "0", "-q", "-o", f"d.{fmt}"],
        tmp_path,
        preexec=_file_size_limit,
    )
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1 and "Traceback" not in err
    assert err == f"rmtk: error: d.{fmt}: cannot write: File too large\n"
    assert listing(tmp_path) == []


# ---------------------------------------------------------------------- Ctrl-C in the middle of a write
INTERRUPTED = {  # name: (arguments, the output, a file there before the run)
    "simulate npz": (["simulate", "stack.rm", "-n", "2000", "-T", "10", "--seed", "0", "-o", "d.npz"], "d.npz", None),
    "simulate npz, SIGTERM": (
        ["simulate", "stack.rm", "-n", "2000", "-T", "10", "--seed", "0", "-o", "d.npz"],
        "d.npz",
        None,
    ),
    "simulate csv over a file": (
        ["simulate", "stack.rm", "-n", "2000", "-T", "10", "--seed", "0", "-o", "d.csv", "--force"],
        "d.csv",
        "trajectory,step,state,action\n",
    ),
    "simulate parquet": (
        ["simulate", "stack.rm", "-n", "2000", "-T", "10", "--seed", "0", "-o", "d.parquet", "--partition-size", "500"],
        "d.parquet",
        None,
    ),
    "learn dot": (["learn", "stack.rm", "--no-rewards", "--dot", "m.dot"], "m.dot", None),
    "learn png": (["learn", "stack.rm", "--no-rewards", "--png", "m.png"], "m.png", None),
}


def test_sigint_mid_write_leaves_no_finished_looking_file(tmp_path):
    """Each command, paused in the middle of writing its output (the test hook of rmtk/output.py),
    gets SIGINT (one SIGTERM): it exits with 130 (143) and one line, and the output is absent
    (or, when it was replacing a file, that file is unchanged), with no temporary file left. The runs go in
    parallel to keep the test short."""
    runs = {}
    for name, (args, out, before) in INTERRUPTED.items():
        where = tmp_path / name.replace(" ", "_")
        where.mkdir()
        (where / "stack.rm").write_bytes((MODELS / "stack.rm").read_bytes())
        if before is not None:
            (where / out).write_text(before)
        runs[name] = (where, _rmtk([*args, "-q"], where, {output.PAUSE_VARIABLE: "60"}, text=False))
    sel = selectors.DefaultSelector()
    for name, (_, proc) in runs.items():
        sel.register(proc.stderr, selectors.EVENT_READ, name)
    seen = {name: b"" for name in runs}
    deadline = time.monotonic() + 120
    waiting = set(runs)
    while waiting and time.monotonic() < deadline:
        for key, _ in sel.select(timeout=1):
            name = key.data
            chunk = os.read(key.fileobj.fileno(), 1 << 16)
            seen[name] += chunk
            if b"rmtk-test: paused mid-write" in seen[name] or not chunk:  # paused, or ended without pausing
                if chunk:
                    runs[name][1].send_signal(signal.SIGTERM if "SIGTERM" in name else signal.SIGINT)
                waiting.discard(name)
                sel.unregister(key.fileobj)
    sel.close()
    failures = []
    for name, (where, proc) in runs.items():
        rest_out, rest_err = proc.communicate(timeout=60)
        err = (seen[name] + rest_err).decode()
        args, out, before = INTERRUPTED[name]
        left = [n for n in listing(where) if n != "stack.rm"]
        expected = [out] if before is not None else []
        problems = []
        if "rmtk-test: paused mid-write" not in err:
            problems.append("never paused mid-write")
        code, last = (143, "rmtk: terminated") if "SIGTERM" in name else (130, "rmtk: interrupted")
        if proc.returncode != code:
            problems.append(f"exit {proc.returncode}")
        if "Traceback" in err or err.strip().splitlines()[-1:] != [last]:
            problems.append(f"stderr {err!r}")
        if left != expected or (before is not None and (where / out).read_text() != before):
            problems.append(f"left {left}")
        if problems:
            failures.append(f"{name}: {'; '.join(problems)}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("durable", [True, False])
def test_durable_syncs_before_the_rename_and_either_way_is_whole_or_absent(tmp_path, monkeypatch, durable):
    synced = []
    monkeypatch.setattr(output.os, "fsync", lambda fd: synced.append(fd))
    target = tmp_path / "m.dot"
    with pytest.raises(KeyboardInterrupt):
        with output.replacing(target, text=True, durable=durable) as f:
            f.write("half")
            raise KeyboardInterrupt
    assert not target.exists() and list(tmp_path.iterdir()) == []
    with output.replacing(target, text=True, durable=durable) as f:
        f.write("digraph {}")
    assert target.read_text() == "digraph {}"
    assert len(synced) == (1 if durable else 0)
