"""Every flag of ``rmtk learn`` × every mode (rmtk/cli/flags.py): a flag the table says applies
changes what is run (the plan built from the flags differs from the plan without it), and a flag
it says does not apply is refused before any work, naming the flag and the mode. Nothing typed is
silently dropped."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rmtk.cli.flags import BY_DEST, LEARN_FLAGS, MODES, learn_mode, mode_of
from rmtk.cli.learn import prepare_learn
from rmtk.cli.main import build_parser, main
from rmtk.errors import RmtkError

MODELS = Path(__file__).resolve().parents[1] / "models"

PATROL = str(MODELS / "patrol.rm")

#: Flags that choose the mode, and the arguments that make each mode.
BASE = {
    "exact": [],
    "demos": ["--demos", "{demos}"],
    "rewards": ["--demos", "{rdemos}", "--from", "rewards"],
    "both": ["--demos", "{rdemos}"],
    "labels": ["--learn-labels"],
    "labels-demos": ["--learn-labels", "--demos", "{demos}"],
    "active": ["--active"],
    "active-simulated": ["--active", "--expert", "simulated"],
    "labels-active": ["--learn-labels", "--active"],
    "labels-active-simulated": ["--learn-labels", "--active", "--expert", "simulated"],
}

#: A value for each flag, and what it needs besides the mode (given in both runs compared).
SAMPLE = {
    "--depth": ([], ["--depth", "3"]),
    "--max-nodes": ([], ["--max-nodes", "3"]),
    "--nodes": ([], ["--nodes", "3"]),
    "--policy": ([], ["--policy", "distinct"]),
    "--no-compress": ([], ["--no-compress"]),
    "--stuttering": (["--no-compress"], ["--stuttering"]),
    "--no-symmetry-breaking": ([], ["--no-symmetry-breaking"]),
    "--negatives": ([], ["--negatives", "lazy"]),
    "--solver": ([], ["--solver", "glucose4"]),
    "--engine": ([], ["--engine", "dask"]),
    "--scheduler": (["--engine", "dask"], ["--scheduler", "tcp://127.0.0.1:8786"]),
    "--workers": (["--engine", "dask"], ["--workers", "2"]),
    "--dask-timeout": (["--engine", "dask"], ["--dask-timeout", "5"]),
    "--alpha": ([], ["--alpha", "0.01"]),
    "--maxsat": ([], ["--maxsat"]),
    "--noisy": ([], ["--noisy"]),
    "--noisy-moves": (["--noisy"], ["--noisy-moves", "500"]),
    "--noisy-exact": (["--noisy"], ["--noisy-exact"]),
    "--tolerance": ([], ["--tolerance", "0.1"]),
    "--label-noise": (["--demos", "{rdemos}"], ["--label-noise", "auto"]),  # with --active: the labels --demos recorded
    "--simplest": ([], ["--simplest"]),
    "--weights": (["--maxsat"], ["--weights", "evidence"]),
    "--budget-queries": ([], ["--budget-queries", "3"]),
    "--budget-steps": (["--walks", "2"], ["--budget-steps", "100"]),
    "--budget-seconds": ([], ["--budget-seconds", "9"]),
    "--budget-draws": (["--walks", "2"], ["--budget-draws", "100"]),
    "--samples": ([], ["--samples", "50"]),
    "--resolution": ([], ["--resolution", "0.2"]),
    "--walks": ([], ["--walks", "2"]),
    "--walk-length": ([], ["--walk-length", "10"]),
    "--seed": (["--walks", "2"], ["--seed", "3"]),
    "--lambda": ([], ["--lambda", "0.5"]),
    "--max-solutions": ([], ["--max-solutions", "2"]),
    "--time-limit": ([], ["--time-limit", "30"]),
    "--explain": ([], ["--explain"]),
    "--count-pairs": ([], ["--count-pairs"]),
    "--no-rewards": ([], ["--no-rewards"]),
    "--dot": ([], ["--dot", "{out}/m.dot"]),
    "--png": ([], ["--png", "{out}/m.png"]),
    "--force": (["--dot", "{out}/m.dot"], ["--force"]),
    "--quiet": ([], ["--quiet"]),
}
MODE_FLAGS = {"--active", "--learn-labels", "--demos", "--from", "--expert"}


@pytest.fixture(scope="module")
def demos(tmp_path_factory):
    path = tmp_path_factory.mktemp("flags") / "d.npz"
    assert main(["simulate", PATROL, "-n", "200", "-T", "10", "--seed", "0", "-o", str(path), "-q"]) == 0
    return path


@pytest.fixture(scope="module")
def rdemos(tmp_path_factory):
    """Demonstrations with rewards: learned from their policy and rewards by default."""
    path = tmp_path_factory.mktemp("flags") / "r.npz"
    argv = ["simulate", PATROL, "-n", "200", "-T", "10", "--seed", "0", "-o", str(path), "-q", "--rewards"]
    assert main(argv) == 0
    return path


def _args(words, demos, out, rdemos=""):
    return [w.format(demos=demos, out=out, rdemos=rdemos) for w in words]


def _plan(argv):
    """What ``rmtk learn`` would run, as text (object addresses left out)."""
    plan = prepare_learn(build_parser().parse_args(["learn", PATROL, *argv]))
    return re.sub(r"<([\w.]+) object at 0x[0-9a-f]+>", r"<\1>", repr(plan))


def test_the_table_lists_every_flag_of_learn_once():
    parser = build_parser()
    learn = parser._subparsers._group_actions[0].choices["learn"]
    dests = {a.dest for a in learn._actions if a.option_strings and a.dest != "help"}
    assert dests == set(BY_DEST) and len(LEARN_FLAGS) == len(BY_DEST)
    assert set(SAMPLE) | MODE_FLAGS == {f.option for f in LEARN_FLAGS}
    assert all(f.modes <= set(MODES) and f.modes for f in LEARN_FLAGS)


@pytest.mark.parametrize("mode", MODES)
def test_the_mode_flags_make_each_mode(mode, demos, rdemos):
    args = build_parser().parse_args(["learn", PATROL, *_args(BASE[mode], demos, "", rdemos)])
    assert mode_of(args) == learn_mode(args) == mode


@pytest.mark.parametrize("mode", MODES)
def test_every_flag_in_every_mode_is_used_or_refused(mode, demos, rdemos, tmp_path):
    """The table both ways, exhaustively: 34 flags × 10 modes."""
    base = _args(BASE[mode] + ["-q"], demos, tmp_path, rdemos)
    refused, used = [], []
    for option, (needs, words) in SAMPLE.items():
        flag = next(f for f in LEARN_FLAGS if f.option == option)
        words = _args(words, demos, tmp_path)
        if option == "--quiet":
            base_q = [w for w in base if w != "-q"]
            assert _plan(base_q + words) != _plan(base_q), f"{option} is dropped in mode {mode}"
            continue
        if mode in flag.modes:
            extra = _args(needs, demos, tmp_path, rdemos)
            assert _plan(base + extra + words) != _plan(base + extra), f"{option} is silently dropped in mode {mode}"
            used.append(option)
        else:
            with pytest.raises(RmtkError) as err:
                _plan(base + words)
            assert str(err.value).startswith(f"{option} does not apply to {MODES[mode]}: "), str(err.value)
            refused.append(option)
    assert used and refused


def test_flags_that_need_another_say_which():
    cases = {
        ("--stuttering",): "--stuttering needs --no-compress",
        ("--maxsat", "--weights", "unit", "--nodes", "4"): None,
        ("--weights", "unit"): "--weights needs --maxsat",
        ("--force",): "--force needs --dot or --png",
        ("--active", "--seed", "2"): "--seed needs --walks, --walk-length or --expert simulated",
        ("--active", "--budget-steps", "9"): "--budget-steps needs --walks, --walk-length or --expert simulated",
        ("--active", "--label-noise", "auto"): "--label-noise needs --demos with --active: the noise is learned from",
        ("--learn-labels", "--active", "--walks", "2", "--seed", "2"): None,
        ("--demos", "x.npz", "--scheduler", "tcp://h:1"): "--scheduler needs --engine dask: it connects",
        ("--maxsat", "--negatives", "lazy"): "--negatives does not apply with --maxsat",
        ("--demos", "x.npz", "--depth", "inf"): "--depth inf applies to the exact policy",
    }
    for argv, message in cases.items():
        args = build_parser().parse_args(["learn", PATROL, *argv])
        if message is None:
            learn_mode(args)
            continue
        with pytest.raises(RmtkError, match=re.escape(message)):
            learn_mode(args)


def test_the_command_refuses_before_any_work(capsys):
    """The examples of flags once silently dropped, through the command: exit 1, one line."""
    for argv, flag in (
        (["--learn-labels", "--budget-queries", "3"], "--budget-queries"),
        (["--learn-labels", "--samples", "9"], "--samples"),
        (["--learn-labels", "--walks", "2"], "--walks"),
        (["--learn-labels", "--expert", "exact"], "--expert"),
        (["--learn-labels", "--negatives", "pairs"], "--negatives"),
        (["--lambda", "0.5", "--demos", "x.npz"], "--lambda"),
        (["--seed", "4"], "--seed"),
        (["--active", "--samples", "9"], "--samples"),
    ):
        assert main(["learn", PATROL, *argv]) == 2  # a usage error
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 1 and err[0].startswith(f"rmtk: error: {flag} does not apply to "), err


def test_dot_with_learn_labels_is_written(tmp_path, capsys):
    dot = tmp_path / "labels.dot"
    assert main(["learn", PATROL, "--learn-labels", "--dot", str(dot), "-q"]) == 0
    text = dot.read_text()
    assert text.startswith('digraph "learned_1"') and text.count("->") >= 4
    assert f"wrote {dot}" in capsys.readouterr().err


def test_the_other_commands_refuse_flags_that_do_nothing(capsys, tmp_path):
    assert main(["show", PATROL, "--force"]) == 2
    assert capsys.readouterr().err == "rmtk: error: --force needs --png: it lets the picture replace an existing file\n"
    for flag in (["--force"], ["--figures", str(tmp_path)]):
        assert main(["reproduce", "tables", "--quick", "--no-figures", *flag]) == 2
        assert f"{flag[0]} does not apply with --no-figures" in capsys.readouterr().err
    out = tmp_path / "d.npz"
    assert main(["simulate", PATROL, "-n", "5", "-T", "5", "--seed", "0", "-o", str(out), "--partition-size", "9"]) == 2
    assert "--partition-size applies to Parquet output" in capsys.readouterr().err and not out.exists()
