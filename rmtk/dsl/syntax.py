"""Positioned syntax objects produced by the Transformer, before their meaning is built.

Every value remembers where it was written, so that meaning errors (undefined state,
duplicate transition, ...) can point at the exact line and column.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs


@attrs.frozen
class Pos:
    line: int
    column: int


class Ident(str):
    """A name (bare or quoted) with its position."""

    pos: Pos

    def __new__(cls, value: str, pos: Pos) -> Ident:
        obj = super().__new__(cls, value)
        obj.pos = pos
        return obj


@attrs.frozen
class Num:
    """A number with its source text (to tell ``3`` from ``3.0``) and position."""

    value: float
    text: str
    pos: Pos

    @property
    def is_int(self) -> bool:
        return all(c not in self.text for c in ".eE")


@attrs.frozen
class Group:
    """A parenthesised list of values: ``(0 2)`` or ``(G Y R)``."""

    items: tuple
    pos: Pos


@attrs.frozen
class Blank:
    """The ``-`` placeholder (a blocked grid cell)."""

    pos: Pos


Value = Ident | Num | Group | Blank


@attrs.frozen
class Setting:
    """``KEY value ...``."""

    key: Ident
    values: tuple

    @property
    def pos(self) -> Pos:
        return self.key.pos


@attrs.frozen
class Table:
    """``KEY { row / row / ... }``."""

    key: Ident
    rows: tuple

    @property
    def pos(self) -> Pos:
        return self.key.pos


@attrs.frozen
class MdpTransition:
    """``s a -> t p, t' p'``; ``outcomes`` are ``(Ident, Num | None)`` pairs."""

    state: Ident
    action: Ident
    outcomes: tuple

    @property
    def pos(self) -> Pos:
        return self.state.pos


@attrs.frozen
class MachineTransition:
    """``u -> v on GUARD [reward r]``."""

    source: Ident
    target: Ident
    guard: Guard
    reward: Num | None

    @property
    def pos(self) -> Pos:
        return self.source.pos


Statement = Setting | Table | MdpTransition | MachineTransition


@attrs.frozen
class Block:
    """One ``mdp``/``machine``/``task`` block, statements not yet interpreted."""

    kind: str  # "mdp", "generated", "machine", "task"
    name: Ident
    statements: tuple
    generator: Ident | None = None

    @property
    def pos(self) -> Pos:
        return self.name.pos


# ---------------------------------------------------------------------- guards
# The parser accepts at most MAX_NESTING levels (rmtk/dsl/parser.py), so the recursive
# `letters` and `props_of` below stay within a few hundred frames.
@attrs.frozen
class Prop:
    name: Ident

    def letters(self, alphabet: Iterable[str]) -> frozenset[str]:
        return frozenset(a for a in alphabet if a == self.name)


@attrs.frozen
class Not:
    arg: Guard

    def letters(self, alphabet):
        return frozenset(alphabet) - self.arg.letters(alphabet)


@attrs.frozen
class And:
    args: tuple

    def letters(self, alphabet):
        out = frozenset(alphabet)
        for a in self.args:
            out &= a.letters(alphabet)
        return out


@attrs.frozen
class Or:
    args: tuple

    def letters(self, alphabet):
        out: frozenset[str] = frozenset()
        for a in self.args:
            out |= a.letters(alphabet)
        return out


@attrs.frozen
class Const:
    value: bool

    def letters(self, alphabet):
        return frozenset(alphabet) if self.value else frozenset()


@attrs.frozen
class Else:
    """Every letter the node's other transitions do not cover."""

    def letters(self, alphabet):  # resolved by the builder
        raise NotImplementedError


Guard = Prop | Not | And | Or | Const | Else


def props_of(guard) -> list[Ident]:
    """The proposition names a guard mentions, in order."""
    if isinstance(guard, Prop):
        return [guard.name]
    if isinstance(guard, Not):
        return props_of(guard.arg)
    if isinstance(guard, (And, Or)):
        return [p for a in guard.args for p in props_of(a)]
    return []
