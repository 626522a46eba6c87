"""rmtk simulate, rmtk learn --demos, rmtk reproduce: end to end through the command line."""

from pathlib import Path

import pytest

from rmtk import dsl
from rmtk.cli.main import main
from rmtk.data import load

MODELS = Path(__file__).resolve().parents[1] / "models"


def test_simulate_then_learn_with_maxsat(tmp_path, capsys):
    out = tmp_path / "d.npz"
    assert (
        main(
            ["simulate", str(MODELS / "stack_avoid.rm"), "-n", "3000", "-T", "20", "--seed", "3", "-o", str(out), "-q"]
        )
        == 0
    )
    task = dsl.load(MODELS / "stack_avoid.rm").tasks["stack_avoid"]
    demos = load(out, task.mdp)
    assert (demos.n_trajectories, demos.horizon) == (3000, 20)
    # the same seed gives the same file content
    again = tmp_path / "e.npz"
    main(["simulate", str(MODELS / "stack_avoid.rm"), "-n", "3000", "-T", "20", "--seed", "3", "-o", str(again), "-q"])
    assert load(again, task.mdp) == demos
    capsys.readouterr()
    assert main(["learn", str(MODELS / "stack_avoid.rm"), "--demos", str(out), "--maxsat", "--nodes", "3", "-q"]) == 0
    text = capsys.readouterr().out
    assert "negative examples at alpha 0.05, false positive rate 0.00%" in text
    assert "# MaxSAT: optimum drops 0 negative example(s)" in text
    learned = dsl.loads(text)
    assert learned.machines and all(m.n_nodes == 3 for m in learned.machines.values())


def test_learn_demos_bad_file_is_reported(tmp_path, capsys):
    bad = tmp_path / "d.csv"
    bad.write_text("trajectory,step,state,action\n0,0,r0c0,down\n0,1,r9c9,down\n")
    assert main(["learn", str(MODELS / "patrol.rm"), "--demos", str(bad), "-q"]) == 1
    err = capsys.readouterr().err
    assert f"{bad}:3" in err and "r9c9" in err and "Traceback" not in err


def test_maxsat_on_an_exact_policy_and_demos_only_options(capsys):
    """MaxSAT composes with the exact policy (its negative examples are all true: nothing is
    dropped); --alpha belongs to demonstrations and is refused without them."""
    assert main(["learn", str(MODELS / "patrol.rm"), "--maxsat", "--nodes", "4", "-q", "--no-rewards"]) == 0
    out = capsys.readouterr().out
    assert "# MaxSAT: optimum drops 0 negative example(s)" in out and "6 raw assignments" in out
    assert main(["learn", str(MODELS / "patrol.rm"), "--alpha", "0.01", "-q"]) == 2
    assert "--alpha does not apply to learning from the task's exact policy" in capsys.readouterr().err


def test_reproduce_tables_quick(capsys):
    assert main(["reproduce", "tables", "--quick", "-q"]) == 0
    out = capsys.readouterr().out
    lines = [line.split() for line in out.splitlines()]
    stack = [row for row in lines if row and row[0] in {"1000", "3000", "5000", "10000"}][:4]
    assert len(stack) == 4
    assert all(row[-1] in {"24", "12", "8"} for row in stack)  # the paper's numbers are printed beside ours
    assert all(int(row[3]) >= 2 for row in stack)  # at least the truth and its renaming
    assert "expert lambda 0.05" in out and "paper solutions" in out


def test_simulate_refuses_to_overwrite(tmp_path, capsys):
    out = tmp_path / "d.npz"
    out.write_bytes(b"precious")
    assert main(["simulate", str(MODELS / "stack.rm"), "-n", "10", "-T", "5", "--seed", "0", "-o", str(out), "-q"]) == 1
    assert out.read_bytes() == b"precious" and "--force" in capsys.readouterr().err


def test_learn_demos_lists_a_bounded_number_with_the_summary(tmp_path, capsys):
    """From demonstrations the listing is bounded (10 machines by default, --max-solutions),
    with the summary of the survivors; the machines printed load back."""
    out = tmp_path / "d.npz"
    model = str(MODELS / "stack_avoid.rm")
    assert main(["simulate", model, "-n", "1000", "-T", "20", "--seed", "0", "-o", str(out), "-q"]) == 0
    capsys.readouterr()
    assert main(["learn", model, "--demos", str(out), "-q", "--no-rewards"]) == 0
    text = capsys.readouterr().out
    assert len(dsl.loads(text).machines) == 10
    assert "# survivors: more than 10 machines with 3 nodes: 10 listed (max_solutions 10)" in text
    assert "# the truth (4 nodes) keeps every one of the 35 negative examples, but 3 nodes suffice" in text
    assert main(["learn", model, "--demos", str(out), "-q", "--no-rewards", "--max-solutions", "100"]) == 0
    text = capsys.readouterr().out
    assert len(dsl.loads(text).machines) == 19 and "# survivors: 19 machines with 3 nodes\n" in text


def test_learn_demos_past_its_time_limit_says_so(tmp_path, capsys):
    out = tmp_path / "d.npz"
    model = str(MODELS / "stack_avoid.rm")
    assert main(["simulate", model, "-n", "200", "-T", "20", "--seed", "0", "-o", str(out), "-q"]) == 0
    capsys.readouterr()
    assert main(["learn", model, "--demos", str(out), "-q", "--time-limit", "1e-9"]) == 1
    text = capsys.readouterr().out
    assert "# stopped (time limit) before building the prefix tree policy; not run: mining negative examples" in text
    assert "# no solution: not searched (the run was stopped)" in text


def _broken_npz(tmp_path, kind: str) -> Path:
    """An unreadable .npz: an empty file, a truncated archive, a .npy array renamed .npz."""
    import numpy as np

    path = tmp_path / f"{kind}.npz"
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "truncated":
        np.savez_compressed(tmp_path / "whole.npz", states=np.zeros((4, 5), int), actions=np.zeros((4, 5), int))
        path.write_bytes((tmp_path / "whole.npz").read_bytes()[:100])
    else:
        np.save(tmp_path / "array.npy", np.zeros((3, 3)))
        (tmp_path / "array.npy").rename(path)
    return path


@pytest.mark.parametrize("kind", ["empty", "truncated", "npy"])
@pytest.mark.parametrize("evidence", [None, "rewards", "policy", "both"])
def test_an_unreadable_npz_gets_the_loaders_error_whatever_from_says(tmp_path, capsys, kind, evidence):
    """Whatever --from says, an unreadable .npz given to --demos ends in the error loading it
    directly gives (rmtk.data.load), not a raw EOFError, BadZipFile or TypeError."""
    from rmtk.errors import DataError

    path = _broken_npz(tmp_path, kind)
    task = dsl.load(MODELS / "patrol.rm").tasks["patrol"]
    with pytest.raises(DataError) as direct:
        load(path, task.mdp)
    argv = ["learn", str(MODELS / "patrol.rm"), "--demos", str(path), "-q"]
    assert main(argv + (["--from", evidence] if evidence else [])) == 1
    assert capsys.readouterr().err == f"rmtk: error: {direct.value}\n"
