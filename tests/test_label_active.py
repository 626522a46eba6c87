"""``rmtk learn --learn-labels --active``: the active loop asks the exact expert about state
histories and the labels and machine are learned from its questions alone (no prefix tree)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rmtk.cli.main import main

MODELS = Path(__file__).resolve().parents[1] / "models"


def test_labels_learned_from_the_active_loops_questions(capsys):
    assert main(["learn", str(MODELS / "patrol.rm"), "--learn-labels", "--active", "-q"]) == 0
    out = capsys.readouterr().out
    assert "# active learning on state histories:" in out
    assert "1 (labeling, machine) pair with 4 nodes and 4 propositions" in out
    assert "1 of 1 policy-equivalent to the truth at every depth; 1 equal to the truth up to both renamings" in out


def test_labels_with_the_active_loop_take_no_demonstrations(tmp_path, capsys):
    demos = tmp_path / "d.npz"
    args = ["simulate", str(MODELS / "patrol.rm"), "-n", "5", "--horizon", "5", "--seed", "0", "-o", str(demos)]
    assert main(args) == 0
    code = main(["learn", str(MODELS / "patrol.rm"), "--learn-labels", "--active", "--demos", str(demos), "-q"])
    assert code != 0
    assert "--demos does not apply to learning the labels by asking the exact expert" in capsys.readouterr().err


@pytest.mark.parametrize("flag", [["--maxsat"]])
def test_labels_with_the_active_loop_refuse_what_does_not_apply(flag, capsys):
    code = main(["learn", str(MODELS / "patrol.rm"), "--learn-labels", "--active", *flag, "-q"])
    assert code != 0 and "--maxsat does not apply" in capsys.readouterr().err
