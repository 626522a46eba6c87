"""Where `.rm` text came from, and the located meaning errors raised while building blocks
(shared by the block builder and the generator syntax)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import NoReturn

from ..errors import DslMeaningError, Location
from . import syntax as S


class Context:
    """Where the text came from; raises located meaning errors."""

    def __init__(self, file: str, text: str):
        self.file, self.text = file, text

    def fail(self, message: str, where) -> NoReturn:
        pos = where if isinstance(where, S.Pos) else getattr(where, "pos", None)
        loc = Location(self.file, pos.line, pos.column) if pos else Location(self.file)
        raise DslMeaningError(message, loc, self.text)

    # value readers -------------------------------------------------------
    def idents(self, st: S.Setting, what: str = "a name") -> list[S.Ident]:
        for v in st.values:
            if not isinstance(v, S.Ident):
                self.fail(f"'{st.key}' expects {what}, got {describe(v)}", v)
        return list(st.values)

    def one(self, st: S.Setting, what: str):
        if len(st.values) != 1:
            where = st.values[1] if len(st.values) > 1 else st.key
            self.fail(f"'{st.key}' expects exactly one value ({what}), got {len(st.values)}", where)
        return st.values[0]

    def ident(self, v, key: str, what: str = "a name") -> S.Ident:
        if not isinstance(v, S.Ident):
            self.fail(f"'{key}' expects {what}, got {describe(v)}", v)
        return v

    def number(self, v, key: str, what: str = "a number") -> float:
        if not isinstance(v, S.Num):
            self.fail(f"'{key}' expects {what}, got {describe(v)}", v)
        return v.value

    def integer(self, v, key: str, what: str = "a whole number") -> int:
        if not isinstance(v, S.Num) or not v.is_int:
            self.fail(f"'{key}' expects {what}, got {describe(v)}", v)
        return int(v.text)

    def unique(self, names: Iterable[S.Ident], kind: str) -> None:
        seen: dict[str, S.Ident] = {}
        for n in names:
            if n in seen:
                self.fail(f"{kind} {str(n)!r} is listed twice (first at line {seen[n].pos.line})", n)
            seen[n] = n


def describe(v) -> str:
    if isinstance(v, S.Ident):
        return f"the name {str(v)!r}"
    if isinstance(v, S.Num):
        return f"the number {v.text}"
    if isinstance(v, S.Group):
        return "a parenthesised group"
    if isinstance(v, S.Blank):
        return "'-'"
    return repr(v)


def _unknown(ctx: Context, key: S.Ident, block: str, allowed: Iterable[str]) -> NoReturn:
    ctx.fail(f"unknown setting '{key}' in {block}; expected one of: {', '.join(allowed)}", key)


def _wrong_statement(ctx: Context, st, block: str) -> NoReturn:
    what = {
        S.MdpTransition: "an MDP transition ('s a -> t p')",
        S.MachineTransition: "a machine transition ('u -> v on A')",
        S.Table: f"a table ('{getattr(st, 'key', '')} {{ ... }}')",
        S.Setting: f"the setting '{getattr(st, 'key', '')}'",
    }[type(st)]
    ctx.fail(f"{what} cannot appear in {block}", st)
