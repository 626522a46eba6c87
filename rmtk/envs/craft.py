"""The Craft World of Toro Icarte et al. (reward machines for RL): a map of characters, read as
the literature writes it: ``X`` a wall, ``A`` the agent's start cell (empty otherwise), a lower
case letter an object, a space an empty cell.

The dynamics are the literature's: four deterministic moves (up, right, down, left, in that
order); a move into a wall or off the map leaves the agent where it is; objects are never used
up. The label of a state is the letter of its cell; an empty cell has no true proposition in
the literature, and since rmtk labels every state with exactly one proposition (paper section
2), empty cells get one of their own, ``other`` (default ``o``, for open floor; no object of
the literature's maps uses it). The literature's task formulas read the same with it: ``!a``
holds on an empty cell either way. States are the free cells numbered column by column like
:mod:`rmtk.envs.gridworld`, named ``r{row}c{col}`` with the map's own row and column (the
border walls included), so that state names point at the map text.

The map is taken as text rather than as a :func:`~rmtk.envs.gridworld.gridworld` map of one
proposition per cell: the literature's file goes in unchanged (diffable against its source),
its walls, start cell and empty cells keep their meaning, and the action order is its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ._common import Where, alphabet, as_float, as_name, as_slip, grid_mdp, number_cells, start_states

#: Action names in the literature's order, and their (row, column) steps.
ACTIONS = ("up", "right", "down", "left")
STEPS = np.array([(-1, 0), (0, 1), (1, 0), (0, -1)])
WALL, AGENT, EMPTY = "X", "A", " "
#: ``start`` value that starts at the map's agent cell ``A``.
AGENT_START = "agent"


def _read_map(text: str | Sequence[str], where: Where) -> tuple[str, ...]:
    """The map's rows: ``text`` is the file's text or its lines; every row has the same width
    and only the characters ``X``, ``A``, ``a``…``z`` and spaces."""
    if isinstance(text, str):
        lines = text.splitlines()
        while lines and not lines[-1].strip():
            lines.pop()  # a trailing newline or blank lines end the file
    else:
        try:
            lines = list(text)
        except TypeError:
            raise where.fail(f"the map must be its text or a sequence of rows, got {text!r}") from None
    if not lines:
        raise where.fail("the map has no rows")
    for i, row in enumerate(lines):
        if not isinstance(row, str):
            raise where.fail(f"map row {i} must be a string of map characters, got {row!r}")
        for j, ch in enumerate(row):
            if not (ch in (WALL, AGENT, EMPTY) or "a" <= ch <= "z"):
                raise where.fail(
                    f"map row {i}, column {j}: unexpected character {ch!r} (expected 'X' a wall, 'A' the agent, "
                    "a lower case letter an object, or a space)"
                )
    width = len(lines[0])
    for i, row in enumerate(lines):
        if len(row) != width:
            raise where.fail(f"map row {i} has {len(row)} characters, row 0 has {width}")
    if width == 0:
        raise where.fail("map row 0 is empty")
    return tuple(lines)


def craftworld(
    rows: str | Sequence[str],
    start: str | Sequence[tuple[int, int]] | None = AGENT_START,
    other: str = "o",
    slip: float = 0.0,
    gamma: float = 0.99,
    propositions: Sequence[str] | None = None,
    name: str = "craft",
):
    """The Craft World of a map as a labeled MDP (4 actions; the free cells are the states).

    Args:
        rows: the map: its text (``open(path).read()``) or its rows, e.g. the literature's
            ``map_0.txt`` (41 × 41 characters, 1,521 free cells).
        start: ``"agent"``: the map's cell ``A`` (there must be exactly one); ``(row,
            column)`` cells, uniform initial distribution; ``None``: every free cell.
        other: the proposition of the empty cells (and of the agent's cell).
        slip: with probability ``slip`` the move goes in a direction drawn uniformly (as in
            :func:`~rmtk.envs.gridworld.gridworld`); 0, the literature's: deterministic moves.
        gamma: the discount.
        propositions: the alphabet order; ``None``: the sorted propositions used.
        name: the MDP's name.
    """
    where = Where("craftworld", name)
    grid = _read_map(rows, where)
    other = as_name(other, "other", where)
    if other in {ch for row in grid for ch in row}:
        raise where.fail(f"other={other!r} is a character of the map; choose another proposition")
    slip = as_slip(slip, where)
    gamma = as_float(gamma, "gamma", where)
    chars = np.array([list(row) for row in grid])
    free = chars != WALL
    if not free.any():
        raise where.fail("every cell of the map is a wall")
    cells = index, rr, cc = number_cells(free)
    if isinstance(start, str) and start == AGENT_START:
        agents = np.argwhere(chars == AGENT)
        if len(agents) != 1:
            raise where.fail(
                f"the map has {len(agents)} agent cells 'A', expected one for start='agent' "
                "(give the start cells, or None for every cell)"
            )
        start_norm: Any = AGENT_START
        start_idx = np.array([index[agents[0][0], agents[0][1]]])
    else:
        start_norm, start_idx = start_states(start, index, where)
    cell_labels = [other if chars[r, c] in (EMPTY, AGENT) else str(chars[r, c]) for r, c in zip(rr, cc)]
    props_norm, props = alphabet(propositions, cell_labels, where)
    params: dict[str, Any] = dict(
        rows=grid, start=start_norm, other=other, slip=slip, gamma=gamma, propositions=props_norm
    )
    return grid_mdp(
        "craftworld",
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
