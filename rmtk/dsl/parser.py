"""Parsing `.rm` text: the Lark grammar (``grammars/rmtk.lark``), one Transformer, and
translation of Lark's errors into :class:`~rmtk.errors.DslSyntaxError` in plain words."""

from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path

from lark import Lark, Token, Transformer, Tree, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, VisitError
from lark.lexer import PatternStr

from ..errors import DslError, DslSyntaxError, Location
from . import syntax as S
from .cache import load_or_build

GRAMMAR = "rmtk.lark"

#: The deepest nesting accepted in a guard (levels of '!' and of parenthesised '&'/'|';
#: parentheses around a single term do not count) and in a value group. The transformer
#: and the builder recurse once or twice per level: this keeps them far from Python's
#: recursion limit, whatever the input.
MAX_NESTING = 200
_NESTED = {"not_": "guard", "conj": "guard", "disj": "guard", "group": "value"}
_TOO_DEEP = {
    "guard": f"guard nested too deeply: more than {MAX_NESTING} levels of '!' or parentheses; simplify the guard",
    "value": f"value nested too deeply: more than {MAX_NESTING} levels of parentheses",
}


def grammar_text() -> str:
    """The grammar, from the installed package data, or from the source tree's ``grammars/``."""
    try:
        return resources.files("rmtk.grammars").joinpath(GRAMMAR).read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError):
        here = Path(__file__).resolve().parents[2] / "grammars" / GRAMMAR
        return here.read_text(encoding="utf-8")


#: Options of the LALR parser; they are part of the cache key (:mod:`rmtk.dsl.cache`).
OPTIONS = {"parser": "lalr", "propagate_positions": True, "maybe_placeholders": False}


@functools.lru_cache(maxsize=1)
def _parser() -> Lark:
    """The parser: one per process, loaded from the user's cache after the first build."""
    return load_or_build(grammar_text(), OPTIONS)


def _pos(tok) -> S.Pos:
    return S.Pos(tok.line, tok.column)


def _unescape(quoted: str) -> str:
    body, out, i = quoted[1:-1], [], 0
    table = {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            out.append(table.get(body[i + 1], body[i + 1]))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


class RmTransformer(Transformer):
    """Turns the parse tree into positioned syntax objects (:mod:`rmtk.dsl.syntax`), then
    builds the model objects of the whole file (:func:`rmtk.dsl.builder.build_file`)."""

    def __init__(self, file: str, text: str):
        super().__init__()
        self.file, self.text = file, text

    # terminals and values
    def ident(self, children):
        """A bare or quoted name."""
        (tok,) = children
        value = _unescape(tok) if tok.type == "STRING" else str(tok)
        return S.Ident(value, _pos(tok))

    def number(self, children):
        """A number; its text is kept to tell integers from reals."""
        (tok,) = children
        return S.Num(float(tok), str(tok), _pos(tok))

    def group(self, children):
        """``( value ... )``."""
        return S.Group(tuple(children[1:]), _pos(children[0]))

    @v_args(meta=True)
    def blank(self, meta, children):
        """``-``."""
        return S.Blank(S.Pos(meta.line, meta.column))

    # statements
    def setting(self, children):
        """``KEY value ...``."""
        return S.Setting(children[0], tuple(children[1:]))

    def row(self, children):
        return tuple(children)

    def table(self, children):
        """``KEY { rows }``."""
        return S.Table(children[0], tuple(children[1:]))

    def outcome(self, children):
        return (children[0], children[1] if len(children) > 1 else None)

    def mdp_transition(self, children):
        """``s a -> t p, ...``."""
        return S.MdpTransition(children[0], children[1], tuple(children[2:]))

    def machine_transition(self, children):
        """``u -> v on GUARD [reward r]``."""
        src, dst, guard = children[:3]
        return S.MachineTransition(src, dst, guard, children[3] if len(children) > 3 else None)

    # guards
    def guard(self, children):
        return children[0]

    def else_guard(self, children):
        return S.Else()

    def prop(self, children):
        return S.Prop(children[0])

    def not_(self, children):
        return S.Not(children[0])

    def conj(self, children):
        return S.And(tuple(children))

    def disj(self, children):
        return S.Or(tuple(children))

    def true_(self, children):
        return S.Const(True)

    def false_(self, children):
        return S.Const(False)

    # blocks
    def body(self, children):
        return tuple(children)

    def mdp_block(self, children):
        """``mdp NAME { ... }``."""
        return S.Block("mdp", children[0], children[1])

    def generated_block(self, children):
        """``mdp NAME = GENERATOR { ... }``."""
        return S.Block("generated", children[0], children[2], generator=children[1])

    def machine_block(self, children):
        """``machine NAME { ... }``."""
        return S.Block("machine", children[0], children[1])

    def task_block(self, children):
        """``task NAME { ... }``."""
        return S.Block("task", children[0], children[1])

    def start(self, children):
        """The whole file: build every block's object."""
        from .builder import build_file

        return build_file(children, self.file, self.text)


# ------------------------------------------------------------------ syntax errors
_WORDS = {
    "NAME": "a name",
    "STRING": "a quoted name",
    "NUMBER": "a number",
    "_NL": "the end of the statement (a new line or ';')",
    "$END": "the end of the file",
}


def _describe_terminal(name: str) -> str:
    if name in _WORDS:
        return _WORDS[name]
    try:
        term = _parser().get_terminal(name)
    except KeyError:
        return name.lower()
    if isinstance(term.pattern, PatternStr):
        return f"'{term.pattern.value}'"
    return name.lower()


def _expected_words(expected) -> str:
    names = set(expected)
    if names & {"NAME", "STRING"}:
        names.discard("STRING")
    words = sorted({_describe_terminal(n) for n in names}, key=lambda w: (not w.startswith("a"), w))
    if not words:
        return "something else"
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


_KEYWORD_TERMINALS = {"MDP", "MACHINE", "TASK", "ON", "REWARD", "ELSE", "TRUE", "FALSE"}


def _hint(expected: set[str]) -> str:
    if {"MDP", "MACHINE", "TASK"} & expected and not {"NAME"} & expected:
        return "; a file holds blocks: 'mdp NAME { ... }', 'machine NAME { ... }' or 'task NAME { ... }'"
    if expected == {"ON"}:
        return "; a machine transition reads 'u -> v on GUARD [reward r]'"
    return ""


def _describe_token(tok: Token) -> str:
    if tok.type == "_NL":
        return "end of line" if tok.strip() in ("", "") or not tok.startswith(";") else "';'"
    if tok.type == "$END":
        return "end of file"
    if tok.type in ("NAME", "STRING"):
        return f"name {tok!s}"
    if tok.type == "NUMBER":
        return f"number {tok!s}"
    return f"'{tok!s}'"


def syntax_error(err: UnexpectedInput, file: str, text: str) -> DslSyntaxError:
    """A :class:`DslSyntaxError` in words from one of Lark's exceptions."""
    line, col = getattr(err, "line", None), getattr(err, "column", None)
    if isinstance(err, UnexpectedCharacters):
        ch = text[err.pos_in_stream] if err.pos_in_stream < len(text) else "?"
        expected = set(err.allowed or ())
        msg = f"unexpected character {ch!r}"
        if expected:
            msg += f"; expected {_expected_words(expected)}"
        msg += _hint(expected)
    elif isinstance(err, UnexpectedToken):
        expected = set(err.expected or ())
        tok = err.token
        if tok.type == "$END":
            lines = text.rstrip("\n").splitlines() or [""]
            line, col = len(lines), len(lines[-1]) + 1
            msg = "unexpected end of file"
            if "RBRACE" in expected:
                msg += "; a block or table is not closed: '}' is missing"
            else:
                msg += f"; expected {_expected_words(expected)}"
        else:
            if tok.type == "_NL" and tok.startswith(("\n", "\r", "#")):
                # point at the end of the line, where something is missing
                line = tok.line
                col = tok.column
            msg = f"unexpected {_describe_token(tok)}; expected {_expected_words(expected)}"
            if tok.type in _KEYWORD_TERMINALS and expected & {"NAME", "STRING"}:
                msg += f"; '{tok}' is a keyword: write \"{tok}\" in quotes to use it as a name"
        msg += _hint(expected)
    elif isinstance(err, UnexpectedEOF):
        lines = text.rstrip("\n").splitlines() or [""]
        line, col = len(lines), len(lines[-1]) + 1
        msg = "unexpected end of file; a block or table is not closed: '}' is missing"
    else:  # pragma: no cover - every UnexpectedInput is one of the above
        msg = str(err)
    return DslSyntaxError(msg, Location(file, line, col), text)


def check_nesting(tree: Tree, file: str, text: str) -> None:
    """Raise a located :class:`DslSyntaxError` at the outermost, leftmost place nested more
    than :data:`MAX_NESTING` levels deep. Iterative: safe on a tree of any depth."""
    stack = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        kind = _NESTED.get(node.data)
        if kind is not None:
            depth += 1
            if depth > MAX_NESTING:
                raise DslSyntaxError(_TOO_DEEP[kind], Location(file, node.meta.line, node.meta.column), text)
        stack.extend((c, depth) for c in reversed(node.children) if isinstance(c, Tree))


def parse_text(text: str, file: str = "<string>"):
    """Parse and build a whole `.rm` text; returns an :class:`~rmtk.dsl.RmFile`."""
    try:
        tree = _parser().parse(text)
    except UnexpectedInput as err:
        raise syntax_error(err, file, text) from None
    check_nesting(tree, file, text)
    try:
        return RmTransformer(file, text).transform(tree)
    except VisitError as err:
        if isinstance(err.orig_exc, DslError):
            raise err.orig_exc from None
        raise
