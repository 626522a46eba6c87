"""Slippery grid worlds (paper section 6.1: patrol, patrol-hallway).

Each free cell is a state labeled by one proposition. States are numbered in
column-major order, so that on a grid without blocked cells state ``i`` sits at row
``i mod n_rows``, column ``i div n_rows`` (the paper's numbering, where x is the row).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ._common import Where, alphabet, as_float, as_name, as_sequence, as_slip, grid_mdp, number_cells, start_states

#: Action names and their (row, column) steps, in action order (the paper's x+1, y+1, x−1, y−1).
ACTIONS = ("down", "right", "up", "left")
STEPS = np.array([(1, 0), (0, 1), (-1, 0), (0, -1)])

#: Input marker of a blocked cell (normalised to ``None``).
BLOCKED = "-"


def gridworld(
    rows: Sequence[Sequence[str | None]],
    slip: float = 0.1,
    start: Sequence[tuple[int, int]] | None = None,
    gamma: float = 0.99,
    propositions: Sequence[str] | None = None,
    name: str = "grid",
):
    """A grid world with 4 moves and slip probability ``slip``.

    Args:
        rows: the map, one sequence of cells per row; a cell is its proposition, or
            ``None`` / ``"-"`` for a blocked cell. A row given as a string is split on
            whitespace (``"D D C C"``).
        slip: with probability ``slip`` the move is replaced by one of the 4 directions
            drawn uniformly (possibly the intended one): the intended neighbour gets
            ``1 − slip + slip/4``, every other direction ``slip/4``. A move off the grid
            or into a blocked cell leaves the agent in place, with that mass.
        start: ``(row, column)`` cells; the initial distribution is uniform over them.
            ``None``: uniform over all free cells.
        gamma: the discount.
        propositions: the alphabet order (may list unused propositions); ``None``: the
            sorted labels of the map.
        name: the MDP's name.

    States are named ``r{row}c{col}``; actions ``down, right, up, left`` (row+1, col+1,
    row−1, col−1).
    """
    where = Where("gridworld", name)
    grid = _normalise_rows(rows, where)
    slip = as_slip(slip, where)
    gamma = as_float(gamma, "gamma", where)

    free = np.array([[c is not None for c in row] for row in grid])
    if not free.any():
        raise where.fail("every cell of the map is blocked")
    cells = index, rr, cc = number_cells(free)
    start_norm, start_idx = start_states(start, index, where)
    cell_labels = [grid[r][c] for r, c in zip(rr.tolist(), cc.tolist())]
    props_norm, props = alphabet(propositions, cell_labels, where)
    params: dict[str, Any] = dict(rows=grid, slip=slip, start=start_norm, gamma=gamma, propositions=props_norm)
    return grid_mdp(
        "gridworld",
        params,
        cells=cells,
        cell_labels=cell_labels,
        propositions=props,
        actions=ACTIONS,
        steps=STEPS,
        slip=slip,
        start=start_idx,
        gamma=gamma,
        name=name,
    )


def _normalise_rows(rows: Any, where: Where) -> tuple[tuple[str | None, ...], ...]:
    grid = []
    for i, row in enumerate(as_sequence(rows, "the map (rows)", where)):
        cells = row.split() if isinstance(row, str) else as_sequence(row, f"map row {i}", where)
        out = []
        for j, cell in enumerate(cells):
            if cell is None or cell == BLOCKED:
                out.append(None)
            else:
                out.append(as_name(cell, f"cell ({i}, {j})", where))
        grid.append(tuple(out))
    if not grid:
        raise where.fail("the map has no rows")
    width = len(grid[0])
    if width == 0:
        raise where.fail("map row 0 has no cells")
    for i, row in enumerate(grid):
        if len(row) != width:
            raise where.fail(f"map row {i} has {len(row)} cells, row 0 has {width}")
    return tuple(grid)
