"""The Office World of Toro Icarte et al. (reward machines for RL): a 9 × 12 grid of 3 × 3
rooms joined by doors, with coffee machines ``f``, the mail room ``e``, the office ``g``,
decorations ``n`` and four corner rooms' marks ``a b c d``; four moves.

The map is the literature's, with their cell ``(x, y)`` (y up) at row ``8 − y``, column
``x`` here (row 0 on top, as printed). Moves are deterministic unless ``slip`` > 0; a move
into a wall or off the grid leaves the agent in place. Every state carries exactly one
proposition (paper section 2): the unmarked cells get their own, ``other`` (default ``i``).
States are numbered column by column like :mod:`rmtk.envs.gridworld` and named
``r{row}c{col}``.

The Office World at its other layers: the Gymnasium environment in ``rmtk/gym/mdp_env.py``,
the experiment in ``rmtk/experiments/office.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ._common import Where, alphabet, as_float, as_name, as_slip, grid_mdp, number_cells, start_states

#: The marks of the Office World, row 0 on top; '.' is a cell without a mark.
MAP = (
    ". . . . . . . . . . . .",
    ". b . . n . . n . . c .",
    ". . . f . . . . . . . .",
    ". . . . . . . . . . . .",
    ". n . . g . . e . . n .",
    ". . . . . . . . . . . .",
    ". . . . . . . . f . . .",
    ". a . . n . . n . . d .",
    ". . . . . . . . . . . .",
)
ROWS, COLUMNS = 9, 12
#: Doors through the room walls, as the ``(row, column)`` of the cell left of a vertical wall
#: (a passage to the right), and of the cell above a horizontal wall (a passage down).
DOORS_RIGHT = tuple((r, c) for r in (1, 7) for c in (2, 5, 8))
DOORS_DOWN = tuple((2, c) for c in (1, 4, 7, 10)) + tuple((5, c) for c in (1, 10))
#: Action names in the literature's order, and their (row, column) steps.
ACTIONS = ("up", "right", "down", "left")
STEPS = np.array([(-1, 0), (0, 1), (1, 0), (0, -1)])
#: The literature's start cell, (2, 1) in its coordinates.
START = ((7, 2),)


def _passable() -> np.ndarray:
    """``ok[d, r, c]``: direction ``d`` from cell ``(r, c)`` stays on the grid and crosses no wall."""
    right = np.ones((ROWS, COLUMNS), dtype=bool)
    right[:, COLUMNS - 1] = False
    right[:, 2::3] = False  # the wall right of columns 2, 5, 8 (and the grid's edge)
    down = np.ones((ROWS, COLUMNS), dtype=bool)
    down[2::3, :] = False  # the wall below rows 2, 5 (and the edge)
    for r, c in DOORS_RIGHT:
        right[r, c] = True
    for r, c in DOORS_DOWN:
        down[r, c] = True
    left = np.zeros_like(right)
    left[:, 1:] = right[:, :-1]
    up = np.zeros_like(down)
    up[1:, :] = down[:-1, :]
    return np.stack([up, right, down, left])


def officeworld(
    start: Sequence[tuple[int, int]] | None = START,
    other: str = "i",
    slip: float = 0.0,
    gamma: float = 0.99,
    propositions: Sequence[str] | None = None,
    name: str = "office",
):
    """The Office World as a labeled MDP (108 states, 4 actions).

    Args:
        start: ``(row, column)`` cells, uniform initial distribution; ``None``: every cell.
            Default: the literature's start cell (row 7, column 2).
        other: the proposition of the unmarked cells.
        slip: with probability ``slip`` the move goes in a direction drawn uniformly (as in
            :func:`~rmtk.envs.gridworld.gridworld`); 0: deterministic moves.
        gamma: the discount.
        propositions: the alphabet order; ``None``: the sorted propositions used.
        name: the MDP's name.
    """
    where = Where("officeworld", name)
    other = as_name(other, "other", where)
    slip, gamma = as_slip(slip, where), as_float(gamma, "gamma", where)
    marks = [row.split() for row in MAP]
    if other in {m for row in marks for m in row if m != "."}:
        raise where.fail(f"other={other!r} is already the mark of some cells; choose another proposition")
    cells = index, rr, cc = number_cells(np.ones((ROWS, COLUMNS), dtype=bool))
    start_norm, start_idx = start_states(start, index, where)
    cell_labels = [other if marks[r][c] == "." else marks[r][c] for r, c in zip(rr.tolist(), cc.tolist())]
    props_norm, props = alphabet(propositions, cell_labels, where)
    ok = _passable()[:, rr, cc]
    target = index[np.clip(rr[None] + STEPS[:, :1], 0, ROWS - 1), np.clip(cc[None] + STEPS[:, 1:], 0, COLUMNS - 1)]
    params: dict[str, Any] = dict(start=start_norm, other=other, slip=slip, gamma=gamma, propositions=props_norm)
    return grid_mdp(
        "officeworld",
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
        dest=np.where(ok, target, np.arange(rr.size)[None, :]),
    )
