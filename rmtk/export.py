"""The former home of DOT, networkx, pictures and the research text format, kept so that
``from rmtk.export import ...`` and ``rmtk.export.NAME`` go on working.

New code imports from where each thing lives: :mod:`rmtk.io.dot` (edge groups and labels,
DOT, networkx), :mod:`rmtk.io.rmtext` (the ``(u, u', 'formula', reward)`` format) and
:mod:`rmtk.draw` (matplotlib pictures). Importing this module imports neither matplotlib nor
networkx.
"""
from .draw import draw_grid, draw_labyrinth, draw_machine, grid_cells, proposition_colours
from .io.dot import edge_groups, edge_label, to_dot, to_networkx
from .io.rmtext import MAX_FORMULA_DEPTH, TERMINAL, FormulaError, parse_formula, read_rm_text, write_rm_text

__all__ = [
    "to_dot",
    "to_networkx",
    "draw_machine",
    "draw_grid",
    "draw_labyrinth",
    "read_rm_text",
    "write_rm_text",
    "edge_groups",
    "edge_label",
    "grid_cells",
    "proposition_colours",
    "parse_formula",
    "FormulaError",
    "TERMINAL",
    "MAX_FORMULA_DEPTH",
]
