"""Bad input: every case gives a located message in words, the offending line with a caret,
exit code 1 from the CLI, and no traceback."""

import re
import subprocess
import sys

import pytest

from rmtk import dsl
from rmtk.cli.main import main
from rmtk.errors import DslMeaningError, DslSyntaxError

MACHINE = "machine m {\n  alphabet A B\n  initial u0\n%s\n}\n"
MDP = "mdp x {\n  states s t\n  actions a\n  label P s t\n%s\n}\n"

# (text, line, column, error class, pattern in the message)
CASES = [
    ("machne x {}\n", 1, 1, DslSyntaxError, r"unexpected name machne.*a file holds blocks"),
    (MACHINE % "  u0 -> u1 A", 4, 12, DslSyntaxError, r"expected 'on'.*u -> v on GUARD"),
    ("machine m {\n  alphabet A\n  u0 -> u1 on A\n", 3, 16, DslSyntaxError, r"'\}' is missing"),
    (MACHINE % "  u0 -> u1 on A @", 4, 17, DslSyntaxError, r"unexpected character '@'"),
    (MACHINE % "  u0 -> u1 on A reward x", 4, 24, DslSyntaxError, r"unexpected name x; expected a number"),
    (MACHINE % "  u0 -> u1 on A |", 4, 18, DslSyntaxError, r"unexpected end of line; expected a name"),
    (
        "machine m {\n  alphabet A B\n  nodes u0 u1\n  u0 -> u9 on A\n}\n",
        4,
        9,
        DslMeaningError,
        r"undefined node 'u9'; the 'nodes' setting declares u0 u1",
    ),
    (
        MACHINE % "  u0 -> u1 on C",
        4,
        15,
        DslMeaningError,
        r"unknown proposition 'C'; the alphabet of machine 'm' is A B",
    ),
    (
        MACHINE % "  u0 -> u1 on A\n  u0 -> u0 on B | A",
        5,
        3,
        DslMeaningError,
        r"two transitions from node 'u0' on 'A' \(the first at line 4\)",
    ),
    (MDP % "  s a -> t 0.5, s 0.4\n  t a -> t", 5, 3, DslMeaningError, r"sum to 0.9, expected 1"),
    (MDP % "  s a -> q\n  t a -> t", 5, 10, DslMeaningError, r"undefined state 'q'"),
    (MDP % "  s b -> t\n  t a -> t", 5, 5, DslMeaningError, r"undefined action 'b'.*actions are a"),
    (
        "mdp x {\n  states s\n  actions a\n  propositions P\n  label Q s\n  s a -> s\n}\n",
        5,
        9,
        DslMeaningError,
        r"label 'Q' is not in the propositions of mdp 'x': P",
    ),
    (
        "mdp x {\n  states s\n  actions a\n  label P s\n  label Q s\n  s a -> s\n}\n",
        5,
        11,
        DslMeaningError,
        r"state 's' already has label 'P' \(line 4\)",
    ),
    (MDP % "  s a -> t", 1, 5, DslMeaningError, r"no transition for state 't', action 'a'"),
    (
        "mdp g = gridwrld {\n  map { A }\n}\n",
        1,
        9,
        DslMeaningError,
        r"unknown generator 'gridwrld'; available: blockworld, craftworld, gridworld, labyrinth",
    ),
    (
        "mdp g = gridworld {\n  map {\n    A B\n  }\n  wind 0.1\n}\n",
        5,
        3,
        DslMeaningError,
        r"unknown setting 'wind'.*expected one of: map, slip, start, gamma, propositions",
    ),
    (
        "mdp g = gridworld {\n  map {\n    A B\n    A\n  }\n}\n",
        4,
        5,
        DslMeaningError,
        r"this map row has 1 cells, the first row has 2",
    ),
    (MACHINE % "" + "task t {\n  mdp m\n}\n", 7, 7, DslMeaningError, r"undefined mdp 'm'; this file defines: none"),
    ("machine m {\n  u0 -> u1 on A\n}\n", 1, 9, DslMeaningError, r"no 'alphabet' setting"),
    (MACHINE % "" + MACHINE % "", 6, 9, DslMeaningError, r"a second machine is named 'm' \(the first at line 1\)"),
    (MDP % "  s a -> t, s\n  t a -> t", 5, 10, DslMeaningError, r"probability missing after 't'"),
    (
        MACHINE % "" + "task t {\n  machine m\n  depth 2.5\n}\n",
        8,
        9,
        DslMeaningError,
        r"'depth' expects a whole number or inf \(every depth\), got the number 2.5",
    ),
    (
        "mdp x {\n  states s\n  actions a\n  label P s\n  gamma 1.5\n  s a -> s\n}\n",
        1,
        5,
        DslMeaningError,
        r"discount gamma=1.5 must lie in \[0, 1\)",
    ),
    (
        "mdp x {\n  states s\n  actions a\n  label P s\n  s a -> s\n}\n"
        + MACHINE % ""
        + "task t {\n  mdp x\n  machine m\n}\n",
        12,
        6,
        DslMeaningError,
        r"machine 'm' has no transitions on 'P', which mdp 'x' produces",
    ),
    (
        "mdp b = blockworld {\n  blocks G Y R\n  piles 3\n  label A (G Y) ()\n  other I\n  start (G Y R) () ()\n}\n",
        1,
        5,
        DslMeaningError,
        r"configuration",
    ),
]


@pytest.mark.parametrize("text,line,col,cls,pattern", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_error_message_and_location(text, line, col, cls, pattern):
    with pytest.raises(cls) as info:
        dsl.loads(text, file="bad.rm")
    err = info.value
    assert (err.location.line, err.location.column) == (line, col), str(err)
    assert re.search(pattern, err.message), err.message
    rendered = str(err)
    assert rendered.startswith(f"bad.rm:{line}:{col}: ")
    # the offending line is shown with a caret under the column
    src_line = text.splitlines()[line - 1] if line <= len(text.splitlines()) else ""
    shown = rendered.splitlines()
    assert shown[1].endswith(src_line.expandtabs(1))
    assert shown[2].index("^") - shown[2].index("|") - 2 == col - 1


@pytest.mark.parametrize("text,line,col,cls,pattern", CASES[::3], ids=[f"case{i}" for i in range(0, len(CASES), 3)])
def test_cli_check_reports_without_traceback(tmp_path, capsys, text, line, col, cls, pattern):
    path = tmp_path / "bad.rm"
    path.write_text(text)
    assert main(["check", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"{path}:{line}:{col}:" in err
    assert "Traceback" not in err


def test_cli_process_exit_code(tmp_path):
    path = tmp_path / "bad.rm"
    path.write_text(CASES[0][0])
    proc = subprocess.run([sys.executable, "-m", "rmtk", "check", str(path)], capture_output=True, text=True)
    assert proc.returncode == 1
    assert "syntax error" in proc.stderr and "Traceback" not in proc.stderr


def test_missing_file_and_unknown_name(tmp_path, capsys, models_dir):
    assert main(["check", str(tmp_path / "nope.rm")]) == 1
    assert "no such file" in capsys.readouterr().err
    assert main(["show", str(models_dir / "patrol.rm"), "nothing"]) == 1
    err = capsys.readouterr().err
    assert "no block named 'nothing'" in err and "task patrol" in err
