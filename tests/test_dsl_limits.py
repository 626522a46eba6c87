"""Pathological `.rm` input: deep nesting is a located error (never a RecursionError), wide
input parses, and parsing at the nesting limit fits in a modest stack."""

import inspect
import subprocess
import sys

import pytest

from rmtk import dsl
from rmtk.cli.main import main
from rmtk.dsl.parser import MAX_NESTING
from rmtk.errors import DslMeaningError, DslSyntaxError

HEAD = "machine m { alphabet A B; u0 -> u1 on "
DEEP = 3_000  # levels: several times what the default recursion limit (1000 frames) allows
GUARD_MSG = f"guard nested too deeply: more than {MAX_NESTING} levels of '!' or parentheses; simplify the guard"
VALUE_MSG = f"value nested too deeply: more than {MAX_NESTING} levels of parentheses"


def machine(guard: str) -> str:
    return HEAD + guard + " }\n"


# (text, line and column of the first level beyond the limit, message)
TOO_DEEP = {
    "not": (machine("!" * DEEP + "A"), 1, len(HEAD) + MAX_NESTING + 1, GUARD_MSG),
    "not-paren": (machine("!(" * DEEP + "A" + ")" * DEEP), 1, len(HEAD) + 2 * MAX_NESTING + 1, GUARD_MSG),
    "and-paren": (machine("(A & " * DEEP + "A" + ")" * DEEP), 1, len(HEAD) + 5 * MAX_NESTING + 2, GUARD_MSG),
    "or-paren": (machine("(B | " * DEEP + "A" + ")" * DEEP), 1, len(HEAD) + 5 * MAX_NESTING + 2, GUARD_MSG),
    "group": ("machine m { alphabet A; x " + "(" * DEEP + ")" * DEEP + " }\n", 1, 27 + MAX_NESTING, VALUE_MSG),
    "blockworld": (
        "mdp b = blockworld { blocks G; piles 1\n  label A " + "(" * DEEP + ")" * DEEP + "\n}\n",
        2,
        11 + MAX_NESTING,
        VALUE_MSG,
    ),
}


@pytest.mark.parametrize("case", TOO_DEEP)
def test_too_deep_is_located_syntax_error(case):
    text, line, col, msg = TOO_DEEP[case]
    with pytest.raises(DslSyntaxError) as info:
        dsl.loads(text, file="deep.rm")
    err = info.value
    assert (err.location.line, err.location.column, err.message) == (line, col, msg)
    shown = str(err).splitlines()
    assert shown[0] == f"deep.rm:{line}:{col}: syntax error: {msg}"
    source = text.splitlines()[line - 1]
    if len(source) <= 100:
        assert shown[1].endswith(source)
        assert shown[2].index("^") - shown[2].index("|") - 2 == col - 1
    else:  # a long line is shown as a window around the column, the caret under the character
        assert len(shown[1]) < 150 and "..." in shown[1]
        caret = shown[2].index("^")
        assert shown[1][caret] == source[col - 1]


@pytest.mark.parametrize("case", TOO_DEEP)
def test_cli_too_deep_exits_1_without_traceback(tmp_path, capsys, case):
    text, line, col, msg = TOO_DEEP[case]
    path = tmp_path / "deep.rm"
    path.write_text(text)
    assert main(["check", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:{line}:{col}: syntax error: {msg}\n") and "Traceback" not in err


def test_cli_process_hundred_thousand_negations(tmp_path):
    path = tmp_path / "deep.rm"
    path.write_text(machine("!" * 100_000 + "A"))
    proc = subprocess.run([sys.executable, "-m", "rmtk", "check", str(path)], capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"{path}:1:{len(HEAD) + MAX_NESTING + 1}: syntax error: {GUARD_MSG}\n")
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "guard",
    ["(" * DEEP + "A" + ")" * DEEP, " & ".join(["A"] * DEEP), " | ".join(["A"] * DEEP)],
    ids=["redundant-parens", "and-chain", "or-chain"],
)
def test_wide_guards_and_redundant_parentheses_parse(guard):
    m = dsl.loads(machine(guard)).machines["m"]
    assert m.step("u0", "A") == 1 and m.step("u0", "B") == 0


def test_unclosed_deep_nesting_is_a_plain_syntax_error():
    with pytest.raises(DslSyntaxError, match=r"unexpected '\}'; expected '\)'"):
        dsl.loads(machine("(" * DEEP + "A"))
    with pytest.raises(DslSyntaxError, match=r"unexpected '\}'"):
        dsl.loads(machine("!" * DEEP))


def _with_stack_budget(frames: int, fn):
    """``fn()`` with at most ``frames`` Python frames left above the caller."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack()) + frames)
    try:
        return fn()
    finally:
        sys.setrecursionlimit(old)


# guard exactly MAX_NESTING levels deep, and where each letter leads from u0
AT_LIMIT = {
    "not": ("!" * MAX_NESTING + "A", "u1 u0"),  # an even number of '!': A
    "and": ("(A & " * MAX_NESTING + "A" + ")" * MAX_NESTING, "u1 u0"),
    "or": ("(B | " * MAX_NESTING + "A" + ")" * MAX_NESTING, "u1 u1"),
    "mixed": ("!(A & " * (MAX_NESTING // 2) + "B" + ")" * (MAX_NESTING // 2), "u0 u1"),  # levels: ! & ! & ...
}


@pytest.mark.parametrize("kind", AT_LIMIT)
def test_at_the_limit_parses_in_a_modest_stack_and_round_trips(kind):
    guard, targets = AT_LIMIT[kind]
    m = _with_stack_budget(600, lambda: dsl.loads(machine(guard))).machines["m"]
    assert " ".join(m.nodes[m.step("u0", a)] for a in "AB") == targets
    assert dsl.loads(dsl.dumps(m)).machines["m"] == m
    with pytest.raises(DslSyntaxError, match="nested too deeply"):
        dsl.loads(machine("!" + guard))


def test_group_at_the_limit_reaches_the_builder():
    text = "mdp b = blockworld { blocks G; piles 1\n  label A " + "(" * MAX_NESTING + ")" * MAX_NESTING + "\n}\n"
    with pytest.raises(DslMeaningError):
        _with_stack_budget(600, lambda: dsl.loads(text))
