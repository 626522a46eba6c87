"""The text format of the ``reward_machines`` research code (Toro Icarte et al.).

Line 1 is the initial node (an integer), line 2 the Python list of terminal nodes, then one
line per edge ``(u1, u2, 'formula', ConstantRewardFunction(r))``. A formula is a
propositional formula over ``&``, ``|``, ``!``, ``True``, ``False`` (DNF in practice;
parentheses are accepted too) and ``#`` starts a comment. In that code edges out of terminal
nodes are ignored, every terminal node is one absorbing state with reward 0, and a
``(u, letter)`` pair that no formula matches leads to that terminal state. rmtk labels every
MDP state with exactly one proposition, so a formula is evaluated, for each letter ``ℓ`` of
the alphabet, with ``ℓ`` the only true proposition.

:func:`read_rm_text` parses the file *without* ``eval``; :func:`write_rm_text` writes a
machine back with its rewards exact (``repr``), so that reading it back gives the same machine.
"""

from __future__ import annotations

import ast
import math
import os
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import DataError, ModelError
from ..machine.model import RewardMachine

__all__ = ["TERMINAL", "MAX_FORMULA_DEPTH", "FormulaError", "parse_formula", "read_rm_text", "write_rm_text"]

#: Name of the absorbing node that :func:`read_rm_text` adds for terminal nodes and for the
#: ``(node, letter)`` pairs no formula matches.
TERMINAL = "terminal"


def _exact_number(x: float) -> str:
    """Shortest text that reads back as exactly ``x`` (``1`` for 1.0)."""
    x = float(x)
    if x.is_integer() and abs(x) < 1e16:
        return str(int(x))
    return repr(x)


_TOKEN = re.compile(r"\s*(?:(?P<op>[&|!()])|(?P<name>\w+)|(?P<bad>\S))")
_EDGE_SHAPE = "(u1, u2, 'formula', ConstantRewardFunction(r))"


#: Deepest nesting of parentheses accepted in a formula.
MAX_FORMULA_DEPTH = 50


class FormulaError(DataError):
    """A formula of the reward_machines format does not parse; ``column`` is 1-based."""

    def __init__(self, message: str, column: int):
        super().__init__(message)
        self.column = column


def parse_formula(formula: str):
    """Parse a propositional formula over ``& | ! ( ) True False`` into nested tuples:
    ``("or", [...])``, ``("and", [...])``, ``("not", f)``, ``("const", bool)``, ``("prop", name)``.
    Raises :class:`FormulaError` (message, 1-based column) on bad input."""
    tokens: list[tuple[str, str, int]] = []
    for m in _TOKEN.finditer(formula):
        col = m.start(m.lastgroup) + 1 if m.lastgroup else m.end() + 1
        if m.group("bad") is not None:
            raise FormulaError(f"unexpected character {m.group('bad')!r}", col)
        if m.group("op") is not None:
            tokens.append(("op", m.group("op"), col))
        elif m.group("name") is not None:
            tokens.append(("name", m.group("name"), col))
    end = len(formula) + 1
    i = 0
    depth = 0

    def peek():
        return tokens[i] if i < len(tokens) else ("end", "", end)

    def what(tok) -> str:
        return "the end of the formula" if tok[0] == "end" else repr(tok[1])

    def disjunction():
        nonlocal i
        items = [conjunction()]
        while peek()[:2] == ("op", "|"):
            i += 1
            items.append(conjunction())
        return items[0] if len(items) == 1 else ("or", items)

    def conjunction():
        nonlocal i
        items = [negation()]
        while peek()[:2] == ("op", "&"):
            i += 1
            items.append(negation())
        return items[0] if len(items) == 1 else ("and", items)

    def negation():
        nonlocal i
        count = 0
        while peek()[:2] == ("op", "!"):
            i += 1
            count += 1
        tree = atom()
        for _ in range(count % 2):  # !!a is a
            tree = ("not", tree)
        return tree

    def atom():
        nonlocal i, depth
        tok = peek()
        if tok[0] == "name":
            i += 1
            if tok[1] in ("True", "False"):
                return ("const", tok[1] == "True")
            return ("prop", tok[1])
        if tok[:2] == ("op", "("):
            if depth >= MAX_FORMULA_DEPTH:
                raise FormulaError(f"parentheses nested more than {MAX_FORMULA_DEPTH} deep", tok[2])
            i += 1
            depth += 1
            inner = disjunction()
            depth -= 1
            if peek()[:2] != ("op", ")"):
                raise FormulaError(f"expected ')', got {what(peek())}", peek()[2])
            i += 1
            return inner
        raise FormulaError(f"expected a proposition, 'True', 'False', '!' or '(', got {what(tok)}", tok[2])

    tree = disjunction()
    if i < len(tokens):
        raise FormulaError(f"expected '&', '|' or the end of the formula, got {what(peek())}", peek()[2])
    return tree


def _props(tree) -> set[str]:
    kind = tree[0]
    if kind == "prop":
        return {tree[1]}
    if kind == "not":
        return _props(tree[1])
    if kind in ("and", "or"):
        return set().union(*(_props(t) for t in tree[1]))
    return set()


def _holds(tree, letter: str) -> bool:
    """The formula's value when ``letter`` is the only true proposition."""
    kind = tree[0]
    if kind == "prop":
        return tree[1] == letter
    if kind == "const":
        return tree[1]
    if kind == "not":
        return not _holds(tree[1], letter)
    if kind == "and":
        return all(_holds(t, letter) for t in tree[1])
    return any(_holds(t, letter) for t in tree[1])


def _node_number(node: ast.AST) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int and node.value >= 0:
        return node.value
    return None


def _reward_number(node: ast.AST) -> float | None:
    sign = 1.0
    while isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        if isinstance(node.op, ast.USub):
            sign = -sign
        node = node.operand
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        try:
            value = sign * float(node.value)
        except OverflowError:
            return None
        return value if math.isfinite(value) else None
    return None


def _snippet(line: str) -> str:
    s = line.strip()
    return repr(s if len(s) <= 80 else s[:77] + "...")


def _source_text(text_or_path: str | os.PathLike) -> tuple[str, str, bool]:
    """``(text, file name for messages, whether it was read from a file)``."""
    if isinstance(text_or_path, os.PathLike) or (
        isinstance(text_or_path, str) and "\n" not in text_or_path and os.path.isfile(text_or_path)
    ):
        path = os.fspath(text_or_path)
        try:
            with open(path, encoding="utf-8") as f:
                return f.read(), path, True
        except FileNotFoundError:
            raise DataError(f"{path}: no such file") from None
        except UnicodeDecodeError as e:
            raise DataError(f"{path}: not a UTF-8 text file ({e.reason} at byte {e.start})") from None
        except OSError as e:
            raise DataError(f"{path}: cannot read the file: {e.strerror or e}") from None
    if not isinstance(text_or_path, str):
        raise DataError(f"read_rm_text expects the text of a file or a path, got {type(text_or_path).__name__}")
    return text_or_path, "<string>", False


def read_rm_text(
    text_or_path: str | os.PathLike, *, alphabet: Sequence[str] | None = None, name: str = "machine"
) -> RewardMachine:
    """Read a reward machine in the text format of the ``reward_machines`` research code.

    ``text_or_path`` is a path (a :class:`os.PathLike`, or a one-line string naming an
    existing file) or the text itself. The file is parsed with :func:`ast.parse` and only
    literal integers, lists of integers and edge tuples whose reward is
    ``ConstantRewardFunction(<number>)`` are accepted: nothing in it is ever executed.
    Blank lines and ``#`` comments are skipped (line numbers in messages are the file's).

    The machine has the non-terminal node numbers ``i`` that appear in the file, sorted, named
    ``u{i}``, and (only when needed) one absorbing node :data:`TERMINAL` with 0-reward
    self-loops, which stands for every terminal node and receives every ``(node, letter)``
    pair that no formula matches (with reward 0). Edges out of terminal nodes are ignored,
    as in the research code. ``alphabet`` defaults to the sorted propositions of the formulas.

    Raises :class:`DataError` (``FILE:LINE: ...``) on a malformed line, a bad formula, a
    proposition outside ``alphabet``, two edges between the same pair of nodes (the research
    code silently keeps only the last one), or two edges from one node matching the same
    letter with different targets or rewards.
    """
    text, file, from_file = _source_text(text_or_path)
    if text.startswith("\ufeff"):
        text = text[1:]
    content = [
        (no, line)
        for no, line in enumerate(text.splitlines(), start=1)
        if line.strip() and not line.lstrip().startswith("#")
    ]

    def fail(no: int | None, message: str):
        where = f"{file}:{no}" if no is not None else file
        raise DataError(f"{where}: {message}")

    def parse(no: int, line: str, expected: str, hint: str = "") -> ast.AST:
        try:
            return ast.parse(line.strip(), mode="eval").body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            fail(no, f"expected {expected}, got {_snippet(line)} (not a Python literal){hint}")

    # line 1: initial node
    if not content:
        fail(None, "expected the initial node (an integer) on line 1, got an empty text")
    # a one-line string that is not a number was probably meant as a file name
    hint = "" if from_file or "\n" in text.strip() else "; no file of that name exists either"
    no, line = content[0]
    initial = _node_number(parse(no, line, "the initial node (an integer)", hint))
    if initial is None:
        fail(no, f"expected the initial node (a non-negative integer), got {_snippet(line)}{hint}")

    # line 2: terminal nodes
    if len(content) < 2:
        fail(
            no + 1,
            "expected the list of terminal nodes (e.g. [2] or []) after the initial node, got the end of the text",
        )
    no, line = content[1]
    expr = parse(no, line, "the list of terminal nodes, e.g. [2] or []")
    terminal: set[int] = set()
    if not isinstance(expr, (ast.List, ast.Tuple, ast.Set)):
        fail(no, f"expected the list of terminal nodes, e.g. [2] or [], got {_snippet(line)}")
    for elt in expr.elts:
        num = _node_number(elt)
        if num is None:
            fail(
                no, f"expected the list of terminal nodes (non-negative integers), e.g. [2] or [], got {_snippet(line)}"
            )
        terminal.add(num)

    # edges
    edges: list[tuple[int, int, int, Any, float, str]] = []  # line, u1, u2, tree, reward, formula
    for no, line in content[2:]:
        expr = parse(no, line, _EDGE_SHAPE)
        if not (isinstance(expr, ast.Tuple) and len(expr.elts) == 4):
            fail(no, f"expected {_EDGE_SHAPE}, got {_snippet(line)}")
        a, b, f, rw = expr.elts
        u1, u2 = _node_number(a), _node_number(b)
        if u1 is None or u2 is None:
            fail(no, f"expected {_EDGE_SHAPE} with non-negative integer nodes u1 and u2, got {_snippet(line)}")
        if not (isinstance(f, ast.Constant) and isinstance(f.value, str)):
            fail(no, f"expected {_EDGE_SHAPE} with the formula as a quoted string, got {_snippet(line)}")
        if not (
            isinstance(rw, ast.Call)
            and isinstance(rw.func, ast.Name)
            and rw.func.id == "ConstantRewardFunction"
            and len(rw.args) == 1
            and not rw.keywords
        ):
            fail(
                no,
                f"expected {_EDGE_SHAPE}: the reward must be ConstantRewardFunction(<number>) "
                f"(other reward functions are not supported), got {_snippet(line)}",
            )
        reward = _reward_number(rw.args[0])
        if reward is None:
            fail(no, f"expected {_EDGE_SHAPE} with a finite number r, got {_snippet(line)}")
        try:
            tree = parse_formula(f.value)
        except FormulaError as e:
            shown = f.value if len(f.value) <= 60 else f.value[:57] + "..."
            fail(no, f"bad formula {shown!r}: {e} (at character {e.column} of the formula)")
        edges.append((no, u1, u2, tree, reward, f.value))

    # alphabet
    mentioned = sorted(set().union(*(_props(e[3]) for e in edges))) if edges else []
    if alphabet is None:
        letters = mentioned
        if not letters:
            fail(None, "no proposition appears in the formulas; pass alphabet=[...] to read_rm_text")
    else:
        letters = [str(x) for x in alphabet]
        known = set(letters)
        for no, _, _, tree, _, formula in edges:
            unknown = sorted(_props(tree) - known)
            if unknown:
                fail(no, f"the formula {formula!r} uses {unknown[0]!r}, which is not in the alphabet {letters}")

    # nodes and transitions
    def target(v: int) -> str:
        return TERMINAL if v in terminal else f"u{v}"

    used = [e for e in edges if e[1] not in terminal]  # the research code skips edges out of terminal nodes
    numbers = {initial} | {e[1] for e in used} | {e[2] for e in used}
    live = sorted(numbers - terminal)
    nodes = [f"u{i}" for i in live]
    seen_pairs: dict[tuple[int, str], int] = {}
    trans: dict[tuple[str, str], tuple[str, float]] = {}
    origin: dict[tuple[str, str], int] = {}
    for no, u1, u2, tree, reward, _formula in used:
        key = (u1, target(u2))
        if key in seen_pairs:
            what = "the terminal state" if u2 in terminal else f"node {u2}"
            fail(
                no,
                f"a second edge from node {u1} to {what} (the first is at line {seen_pairs[key]}); the research "
                "code keeps only the last one: merge the formulas with '|' into one line",
            )
        seen_pairs[key] = no
        for letter in letters:
            if not _holds(tree, letter):
                continue
            k = (f"u{u1}", letter)
            val = (target(u2), reward)
            if k in trans and trans[k] != val:
                fail(
                    no,
                    f"letter {letter!r} from node {u1} matches this edge and the edge at line {origin[k]}, "
                    "which lead to different nodes or rewards",
                )
            trans[k] = val
            origin[k] = no
    need_terminal = initial in terminal or any(v == TERMINAL for v, _ in trans.values())
    for u in nodes:
        for letter in letters:
            if (u, letter) not in trans:
                trans[(u, letter)] = (TERMINAL, 0.0)
                need_terminal = True
    if need_terminal:
        nodes.append(TERMINAL)
    try:
        return RewardMachine.from_transitions(trans, letters, nodes=nodes, initial=target(initial), name=name)
    except ModelError as e:
        raise DataError(f"{file}: {e}") from None


_LETTER = re.compile(r"\w+\Z")


def write_rm_text(machine: RewardMachine, *, terminal: str | None = None) -> str:
    """``machine`` in the text format of the ``reward_machines`` research code.

    Nodes are numbered by their index and there is one line per pair of nodes ``(u, v)``
    joined by some letter, self-loops included (the format has no default transitions), with
    the letters as a disjunction ``a|b``. The terminal list is ``[]``: an rmtk machine has no
    terminal nodes, an absorbing node is written with its self-loops.

    ``terminal`` optionally names an absorbing node with 0 rewards (such as the
    :data:`TERMINAL` node made by :func:`read_rm_text`) to write as the terminal node
    ``[t]``: its own lines are left out, and when the letters leading into it carry different
    rewards the 0-reward ones are left out too (in the research code a letter no formula
    matches leads to the terminal state with reward 0). A letter may then appear in no
    formula: pass ``alphabet=`` when reading such a file back.

    Raises :class:`ModelError` when the format cannot express the machine: two letters from
    ``u`` to the same ``v`` with different rewards (the format has one reward per pair of
    nodes), or a letter that is not a word (letters, digits, ``_``) or is ``True``/``False``.
    """
    for letter in machine.alphabet:
        if not _LETTER.match(letter) or letter in ("True", "False"):
            raise ModelError(
                f"machine {machine.name!r}: the letter {letter!r} cannot be written in a reward_machines "
                "formula (use letters, digits and '_', not True/False)"
            )
    t = None
    if terminal is not None:
        t = machine.node_index(terminal)
        if not (np.all(machine.delta_u[t] == t) and np.all(machine.delta_r[t] == 0)):
            raise ModelError(
                f"machine {machine.name!r}: node {machine.nodes[t]!r} cannot be the terminal node: "
                "it must loop on every letter with reward 0"
            )
    lines = [f"{machine.initial} # initial state", f"[{'' if t is None else t}] # terminal states"]
    for u in range(machine.n_nodes):
        if u == t:
            continue
        by_target: dict[int, list[int]] = {}
        for k in range(len(machine.alphabet)):
            by_target.setdefault(int(machine.delta_u[u, k]), []).append(k)
        for v in sorted(by_target):
            ks = by_target[v]
            rewards = {float(machine.delta_r[u, k]) + 0.0 for k in ks}
            if v == t and len(rewards) > 1:
                ks = [k for k in ks if machine.delta_r[u, k] != 0]  # 0-reward letters fall into [t] anyway
                rewards.discard(0.0)
            if len(rewards) > 1:
                detail = ", ".join(f"{machine.alphabet[k]} → {_exact_number(machine.delta_r[u, k])}" for k in ks)
                raise ModelError(
                    f"machine {machine.name!r}: the letters from {machine.nodes[u]!r} to {machine.nodes[v]!r} carry "
                    f"different rewards ({detail}); the reward_machines format has one reward per pair of nodes"
                )
            formula = "|".join(machine.alphabet[k] for k in ks)
            lines.append(f"({u},{v},'{formula}',ConstantRewardFunction({_exact_number(rewards.pop())}))")
    return "\n".join(lines) + "\n"
