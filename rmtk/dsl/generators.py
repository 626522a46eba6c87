"""`.rm` syntax of the generated environments (:mod:`rmtk.envs`): how the settings of a
``mdp NAME = GENERATOR { ... }`` block map to the generator's keyword arguments, and back.

gridworld::

    mdp rooms = gridworld {
      map {            # one proposition per cell, '-' for a blocked cell
        D D C C
        A A B B
      }
      slip 0.1         # probability mass spread evenly over the 4 directions
      start (0 0) (1 2)   # (row column) cells, uniform initial distribution
    }

blockworld::

    mdp blocks = blockworld {
      blocks G Y R     # block names
      piles 3
      label A (G Y R) () ()   # a configuration: one group per pile, bottom to top
      other I          # the label of every configuration not listed
      start (G Y) (R) ()      # one start configuration per 'start' line
    }

labyrinth::

    mdp maze = labyrinth {
      depth 6          # 2^(depth+1) - 1 nodes in heap order
      label h 0
      label w 100
      other i
      start 0
    }

officeworld (the Office World of Toro Icarte et al., a fixed 9 × 12 map of rooms)::

    mdp office = officeworld {
      start (7 2)      # (row column) cells, or 'start all'; default: the literature's (7 2)
      other i          # the proposition of the unmarked cells
      slip 0           # deterministic moves
    }

craftworld (the Craft World of Toro Icarte et al.: the literature's map text, one quoted row
per line)::

    mdp craft = craftworld {
      map {            # 'X' wall, 'A' the agent's start cell, 'a'...'z' objects, ' ' empty
        "XXXXX"
        "X A aX"
        "XXXXX"
      }
      start agent      # the 'A' cell (the default), 'start all', or (row column) cells
      other o          # the proposition of the empty cells
      slip 0           # deterministic moves
    }

Every generator also accepts ``gamma`` and ``propositions`` (the alphabet's order).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import ModelError
from ..mdp.model import LabeledMDP
from . import syntax as S
from .context import _unknown, _wrong_statement, describe
from .format import fmt_ident, fmt_number


class GeneratorSyntax:
    """Settings ↔ keyword arguments for one generator."""

    name: str = ""
    settings: tuple[str, ...] = ()

    def generator(self) -> Callable[..., LabeledMDP]:
        from ..envs import GENERATORS

        return GENERATORS[self.name]

    def build(self, block: S.Block, ctx) -> LabeledMDP:
        kwargs: dict[str, Any] = {}
        where = f"mdp '{block.name}' = {self.name}"
        once: dict[str, Any] = {}
        for st in block.statements:
            if not isinstance(st, (S.Setting, S.Table)):
                _wrong_statement(ctx, st, where)
            key = str(st.key)
            if key not in self.settings + ("gamma", "propositions"):
                _unknown(ctx, st.key, where, self.settings + ("gamma", "propositions"))
            if isinstance(st, S.Table) != (key in self.tables):
                shape = f"'{key} {{ ... }}' with one row per line" if key in self.tables else f"'{key} value ...'"
                ctx.fail(f"'{key}' is written as {shape}", st.key)
            if key not in self.repeatable:
                if key in once:
                    ctx.fail(f"'{key}' is set twice in {where} (first at line {once[key].pos.line})", st.key)
                once[key] = st
            if key == "gamma":
                kwargs["gamma"] = ctx.number(ctx.one(st, "the discount"), "gamma")
            elif key == "propositions":
                kwargs["propositions"] = tuple(str(p) for p in ctx.idents(st, "proposition names"))
            else:
                self.read(st, kwargs, ctx)
        self.complete(block, kwargs, ctx)
        try:
            return self.generator()(**kwargs, name=str(block.name))
        except ModelError as err:
            ctx.fail(str(err), block.name)

    tables: tuple[str, ...] = ()
    repeatable: tuple[str, ...] = ()

    def read(self, st, kwargs: dict, ctx) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def complete(self, block: S.Block, kwargs: dict, ctx) -> None:
        """Check required settings once all are read."""

    def format(self, kw: dict[str, Any]) -> list[str]:  # pragma: no cover - overridden
        raise NotImplementedError

    @staticmethod
    def common(kw: dict[str, Any]) -> list[str]:
        lines = [f"gamma {fmt_number(kw['gamma'])}"]
        if kw.get("propositions") is not None:
            lines.append("propositions " + " ".join(fmt_ident(p) for p in kw["propositions"]))
        return lines


def _cell(v, ctx) -> str | None:
    if isinstance(v, S.Blank):
        return None
    if isinstance(v, S.Ident):
        return str(v)
    ctx.fail(f"a map cell is a proposition name or '-' (blocked), not {_describe(v)}", v)


def _describe(v) -> str:

    return describe(v)


class GridworldSyntax(GeneratorSyntax):
    name = "gridworld"
    settings = ("map", "slip", "start")
    tables = ("map",)

    def read(self, st, kw, ctx):
        key = str(st.key)
        if key == "map":
            if not st.rows:
                ctx.fail("the map is empty", st.key)
            kw["rows"] = tuple(tuple(_cell(v, ctx) for v in row) for row in st.rows)
            width = len(st.rows[0])
            for row in st.rows:
                if len(row) != width:
                    ctx.fail(f"this map row has {len(row)} cells, the first row has {width}", row[0])
        elif key == "slip":
            kw["slip"] = ctx.number(ctx.one(st, "the slip probability"), "slip")
        else:  # start
            kw["start"] = _cells(st, ctx)

    def complete(self, block, kw, ctx):
        if "rows" not in kw:
            ctx.fail(f"gridworld '{block.name}' has no map; write 'map {{ ... }}' with one row per line", block.name)

    def format(self, kw):
        rows = [[("-" if c is None else fmt_ident(c)) for c in row] for row in kw["rows"]]
        width = max(len(c) for row in rows for c in row)
        lines = ["map {"] + ["  " + " ".join(c.ljust(width) for c in row).rstrip() for row in rows] + ["}"]
        lines.append(f"slip {fmt_number(kw['slip'])}")
        return lines + _fmt_cells(kw) + self.common(kw)


def _cells(st, ctx) -> tuple[tuple[int, int], ...]:
    """The ``(row column)`` cells of a ``start`` statement."""
    cells = []
    for v in st.values:
        if not isinstance(v, S.Group) or len(v.items) != 2:
            ctx.fail(f"'start' expects (row column) cells, got {_describe(v)}", v)
        cells.append(tuple(ctx.integer(x, "start", "a row or column number") for x in v.items))
    if not cells:
        ctx.fail("'start' expects at least one (row column) cell", st.key)
    return tuple(cells)


def _fmt_cells(kw) -> list[str]:
    if kw.get("start") is None:
        return []
    return ["start " + " ".join(f"({r} {c})" for r, c in kw["start"])]


class OfficeworldSyntax(GeneratorSyntax):
    name = "officeworld"
    settings = ("start", "other", "slip")

    def read(self, st, kw, ctx):
        key = str(st.key)
        if key == "start":
            every = len(st.values) == 1 and isinstance(st.values[0], S.Ident) and str(st.values[0]) == "all"
            kw["start"] = None if every else _cells(st, ctx)
        elif key == "other":
            kw["other"] = str(ctx.ident(ctx.one(st, "a proposition"), "other", "a proposition name"))
        else:  # slip
            kw["slip"] = ctx.number(ctx.one(st, "the slip probability"), "slip")

    def format(self, kw):
        lines = _fmt_cells(kw) or ["start all"]
        return lines + [f"other {fmt_ident(kw['other'])}", f"slip {fmt_number(kw['slip'])}"] + self.common(kw)


#: The ``start`` word of a craftworld block for the map's agent cell (``AGENT_START`` of
#: :mod:`rmtk.envs.craft`, which this module does not import: generators load on first use).
AGENT_START = "agent"


class CraftworldSyntax(GeneratorSyntax):
    name = "craftworld"
    settings = ("map", "start", "other", "slip")
    tables = ("map",)

    def read(self, st, kw, ctx):
        key = str(st.key)
        if key == "map":
            if not st.rows:
                ctx.fail("the map is empty", st.key)
            rows = []
            for row in st.rows:
                if len(row) != 1 or not isinstance(row[0], S.Ident):
                    ctx.fail('a craftworld map row is one quoted string of map characters, e.g. "X  a X"', row[0])
                rows.append(str(row[0]))
            kw["rows"] = tuple(rows)
        elif key == "start":
            word = str(st.values[0]) if len(st.values) == 1 and isinstance(st.values[0], S.Ident) else None
            if word == "all":
                kw["start"] = None
            elif word == AGENT_START:
                kw["start"] = AGENT_START
            else:
                kw["start"] = _cells(st, ctx)
        elif key == "other":
            kw["other"] = str(ctx.ident(ctx.one(st, "a proposition"), "other", "a proposition name"))
        else:  # slip
            kw["slip"] = ctx.number(ctx.one(st, "the slip probability"), "slip")

    def complete(self, block, kw, ctx):
        if "rows" not in kw:
            ctx.fail(
                f"craftworld '{block.name}' has no map; write 'map {{ ... }}' with one quoted row per line", block.name
            )

    def format(self, kw):
        lines = ["map {"] + [f'  "{row}"' for row in kw["rows"]] + ["}"]
        if kw["start"] == AGENT_START:
            lines.append(f"start {AGENT_START}")
        else:
            lines += _fmt_cells(kw) or ["start all"]
        return lines + [f"other {fmt_ident(kw['other'])}", f"slip {fmt_number(kw['slip'])}"] + self.common(kw)


def _configuration(values, ctx, key: str) -> tuple[tuple[str, ...], ...]:
    piles = []
    for v in values:
        if not isinstance(v, S.Group):
            ctx.fail(f"'{key}' expects a configuration: one (bottom ... top) group per pile, got {_describe(v)}", v)
        piles.append(tuple(str(ctx.ident(b, key, "block names")) for b in v.items))
    return tuple(piles)


def _fmt_configuration(config) -> str:
    return " ".join("(" + " ".join(fmt_ident(b) for b in pile) + ")" for pile in config)


class BlockworldSyntax(GeneratorSyntax):
    name = "blockworld"
    settings = ("blocks", "piles", "label", "other", "start")
    repeatable = ("label", "start")

    def read(self, st, kw, ctx):
        key = str(st.key)
        if key == "blocks":
            kw["blocks"] = tuple(str(b) for b in ctx.idents(st, "block names"))
        elif key == "piles":
            kw["piles"] = ctx.integer(ctx.one(st, "the number of piles"), "piles")
        elif key == "other":
            kw["other"] = str(ctx.ident(ctx.one(st, "a proposition"), "other", "a proposition name"))
        elif key == "label":
            if not st.values:
                ctx.fail("'label' expects a proposition and a configuration: 'label A (G Y R) () ()'", st.key)
            prop = str(ctx.ident(st.values[0], "label", "a proposition name"))
            labels = kw.setdefault("labels", {})
            labels.setdefault(prop, []).append(_configuration(st.values[1:], ctx, "label"))
        else:
            kw.setdefault("start", []).append(_configuration(st.values, ctx, "start"))

    def complete(self, block, kw, ctx):
        if "labels" in kw:
            kw["labels"] = tuple((p, tuple(c)) for p, c in kw["labels"].items())
        if "start" in kw:
            kw["start"] = tuple(kw["start"])

    def format(self, kw):
        lines = ["blocks " + " ".join(fmt_ident(b) for b in kw["blocks"]), f"piles {kw['piles']}"]
        for prop, configs in kw["labels"]:
            lines += [f"label {fmt_ident(prop)} {_fmt_configuration(c)}" for c in configs]
        lines.append(f"other {fmt_ident(kw['other'])}")
        lines += [f"start {_fmt_configuration(c)}" for c in kw["start"]]
        return lines + self.common(kw)


class LabyrinthSyntax(GeneratorSyntax):
    name = "labyrinth"
    settings = ("depth", "label", "other", "start")
    repeatable = ("label",)

    def read(self, st, kw, ctx):
        key = str(st.key)
        if key == "depth":
            kw["depth"] = ctx.integer(ctx.one(st, "the tree depth"), "depth")
        elif key == "other":
            kw["other"] = str(ctx.ident(ctx.one(st, "a proposition"), "other", "a proposition name"))
        elif key == "label":
            if len(st.values) < 2:
                ctx.fail("'label' expects a proposition and node numbers: 'label w 100'", st.key)
            prop = str(ctx.ident(st.values[0], "label", "a proposition name"))
            nodes = [ctx.integer(v, "label", "node numbers") for v in st.values[1:]]
            kw.setdefault("labels", {}).setdefault(prop, []).extend(nodes)
        else:
            if not st.values:
                ctx.fail("'start' expects node numbers", st.key)
            kw["start"] = tuple(ctx.integer(v, "start", "node numbers") for v in st.values)

    def complete(self, block, kw, ctx):
        if "labels" in kw:
            kw["labels"] = tuple((p, tuple(n)) for p, n in kw["labels"].items())

    def format(self, kw):
        lines = [f"depth {kw['depth']}"]
        lines += [f"label {fmt_ident(p)} " + " ".join(map(str, nodes)) for p, nodes in kw["labels"]]
        lines.append(f"other {fmt_ident(kw['other'])}")
        lines.append("start " + " ".join(map(str, kw["start"])))
        return lines + self.common(kw)


SYNTAX: dict[str, GeneratorSyntax] = {
    s.name: s
    for s in (GridworldSyntax(), BlockworldSyntax(), LabyrinthSyntax(), OfficeworldSyntax(), CraftworldSyntax())
}
