"""Slippery grid worlds (paper section 6.1: patrol, patrol-hallway).

Each free cell is a state labeled by one proposition. States are numbered in
column-major order, so that on a grid without blocked cells state ``i`` sits at row
``i mod n_rows``, column ``i div n_rows`` (the paper's numbering, where x is the row).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ._common import Where, alphabet, as_float, as_name, as_sequence, build, slip_moves, start_states, uniform

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
    n_rows, n_cols = len(grid), len(grid[0])
    slip = as_float(slip, "slip", where)
    if not 0.0 <= slip <= 1.0:
        raise where.fail(f"slip={slip} must lie in [0, 1]")
    gamma = as_float(gamma, "gamma", where)

    free = np.array([[c is not None for c in row] for row in grid])
    if not free.any():
        raise where.fail("every cell of the map is blocked")
    # column-major numbering of the free cells: index[r, c] = state, -1 when blocked
    index = np.full((n_rows, n_cols), -1, dtype=np.int64)
    cc, rr = np.nonzero(free.T)  # sorted by column, then row
    S = rr.size
    index[rr, cc] = np.arange(S)

    start_norm, start_idx = start_states(start, index, where)

    cell_labels = [grid[r][c] for r, c in zip(rr.tolist(), cc.tolist())]
    props_norm, props = alphabet(propositions, cell_labels, where)
    pi = {p: i for i, p in enumerate(props)}

    # dest[d, s]: where direction d leads from s (s itself off the grid or into a wall)
    tr, tc = rr[None, :] + STEPS[:, :1], cc[None, :] + STEPS[:, 1:]
    inside = (tr >= 0) & (tr < n_rows) & (tc >= 0) & (tc < n_cols)
    target = np.where(inside, index[np.clip(tr, 0, n_rows - 1), np.clip(tc, 0, n_cols - 1)], -1)
    dest = np.where(target >= 0, target, np.arange(S)[None, :])
    rows, cols, probs = slip_moves(dest, slip)

    params: dict[str, Any] = dict(rows=grid, slip=slip, start=start_norm, gamma=gamma, propositions=props_norm)
    return build(
        "gridworld",
        params,
        states=[f"r{r}c{c}" for r, c in zip(rr.tolist(), cc.tolist())],
        actions=ACTIONS,
        rows=rows,
        cols=cols,
        probs=probs,
        labels=np.array([pi[x] for x in cell_labels], dtype=np.int64),
        propositions=props,
        initial=uniform(start_idx, S),
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
