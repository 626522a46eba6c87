"""Helpers shared by the generators: argument normalisation (so that a generator call
can be written back exactly from its :class:`~rmtk.mdp.model.GeneratorCall`), the alphabet, and
assembling the :class:`~rmtk.mdp.model.LabeledMDP`."""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from .._arrays import Csr
from ..errors import ModelError
from ..mdp.model import GeneratorCall, LabeledMDP


class Where:
    """Prefix for error messages: ``gridworld 'rooms': ...``."""

    def __init__(self, generator: str, name: str):
        self.generator, self.name = generator, str(name)

    def fail(self, message: str) -> ModelError:
        return ModelError(f"{self.generator} {self.name!r}: {message}")


def as_int(value: Any, what: str, where: Where) -> int:
    """``value`` as a Python int; bools and non-integral numbers are refused."""
    if isinstance(value, (bool, np.bool_)):
        raise where.fail(f"{what} must be a whole number, got {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        if isinstance(value, (float, np.floating)) and float(value).is_integer():
            return int(value)
        raise where.fail(f"{what} must be a whole number, got {value!r}") from None


def as_float(value: Any, what: str, where: Where) -> float:
    if isinstance(value, (bool, np.bool_)):
        raise where.fail(f"{what} must be a number, got {value!r}")
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise where.fail(f"{what} must be a number, got {value!r}") from None
    if not math.isfinite(out):
        raise where.fail(f"{what} must be a finite number, got {value!r}")
    return out


def as_slip(value: Any, where: Where) -> float:
    """A slip probability: a number in [0, 1]."""
    slip = as_float(value, "slip", where)
    if not 0.0 <= slip <= 1.0:
        raise where.fail(f"slip={slip} must lie in [0, 1]")
    return slip


def as_name(value: Any, what: str, where: Where) -> str:
    """A non-empty string without whitespace (a proposition or block name)."""
    if not isinstance(value, str) or not value or any(ch.isspace() for ch in value):
        raise where.fail(f"{what} must be a non-empty name without spaces, got {value!r}")
    return value


def as_sequence(value: Any, what: str, where: Where) -> tuple:
    """``value`` as a tuple; strings and scalars are refused (they are easy to pass by mistake)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise where.fail(f"{what} must be a sequence, got {value!r}")
    return tuple(value)


def label_pairs(labels: Any, where: Where) -> list[tuple[str, tuple]]:
    """``labels`` (pairs ``(label, items)`` or a mapping) as a list of ``(label, items)``."""
    if isinstance(labels, dict):
        labels = labels.items()
    out = []
    for pair in as_sequence(labels, "labels", where):
        if isinstance(pair, (str, bytes)) or not isinstance(pair, Iterable) or len(tuple(pair)) != 2:
            raise where.fail(f"each entry of labels must be a (label, items) pair, got {pair!r}")
        label, items = tuple(pair)
        out.append((as_name(label, "a label", where), items))
    return out


def group_labels(pairs: Iterable[tuple[str, tuple]]) -> tuple[tuple[str, tuple], ...]:
    """Merge pairs with the same label (items in order) and sort by label."""
    merged: dict[str, list] = {}
    for label, items in pairs:
        merged.setdefault(label, []).extend(items)
    return tuple((label, tuple(merged[label])) for label in sorted(merged))


def alphabet(
    propositions: Sequence[str] | None, used: Sequence[str], where: Where
) -> tuple[tuple[str, ...] | None, tuple[str, ...]]:
    """``(normalised propositions argument, the alphabet)``.

    ``None`` means the sorted set of labels used; an explicit alphabet fixes the order and
    may hold extra propositions, but must contain every label used.
    """
    if propositions is None:
        return None, tuple(sorted(set(used)))
    props = tuple(as_name(p, "a proposition", where) for p in as_sequence(propositions, "propositions", where))
    seen: set[str] = set()
    for p in props:
        if p in seen:
            raise where.fail(f"proposition {p!r} is listed twice in propositions")
        seen.add(p)
    missing = [u for u in dict.fromkeys(used) if u not in seen]
    if missing:
        raise where.fail(
            f"propositions ({', '.join(props)}) do not include the label(s) "
            f"{', '.join(map(repr, missing))} used by the states"
        )
    return props, props


def slip_moves(dest: np.ndarray, slip: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """COO ``(rows, cols, probs)`` of grid moves: ``dest[d, s]`` is where direction ``d``
    leads from ``s``; action ``a`` moves in direction ``a`` with probability ``1 − slip``,
    and with probability ``slip`` in a direction drawn uniformly (possibly ``a`` itself)."""
    n_dir, S = dest.shape
    mass = np.full((n_dir, n_dir), slip / n_dir) + np.eye(n_dir) * (1.0 - slip)
    a_idx, d_idx, s_idx = np.meshgrid(np.arange(n_dir), np.arange(n_dir), np.arange(S), indexing="ij")
    return (s_idx * n_dir + a_idx).ravel(), dest[d_idx, s_idx].ravel(), mass[a_idx, d_idx].ravel()


def number_cells(free: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(index, rr, cc)``: the free cells of a grid numbered column by column (``index[r, c]``
    the state of a cell, −1 when blocked; state ``s`` at ``(rr[s], cc[s])``)."""
    index = np.full(free.shape, -1, dtype=np.int64)
    cc, rr = np.nonzero(free.T)  # sorted by column, then row
    index[rr, cc] = np.arange(rr.size)
    return index, rr, cc


def grid_mdp(
    generator: str,
    params: dict[str, Any],
    *,
    cells: tuple[np.ndarray, np.ndarray, np.ndarray],
    cell_labels: Sequence[str],
    propositions: Sequence[str],
    actions: Sequence[str],
    steps: np.ndarray,
    slip: float,
    start: np.ndarray,
    gamma: float,
    name: str,
    dest: np.ndarray | None = None,
) -> LabeledMDP:
    """A grid MDP: the numbered ``cells`` (:func:`number_cells`), states named ``r{row}c{col}``,
    moves ``steps`` per action (:func:`grid_dest`; ``dest[d, s]`` instead when the grid has
    walls between cells), slipping (:func:`slip_moves`), one label per state, uniform over the
    ``start`` states."""
    index, rr, cc = cells
    pi = {p: i for i, p in enumerate(propositions)}
    rows, cols, probs = slip_moves(grid_dest(index, rr, cc, steps) if dest is None else dest, slip)
    return build(
        generator,
        params,
        states=[f"r{r}c{c}" for r, c in zip(rr.tolist(), cc.tolist())],
        actions=actions,
        rows=rows,
        cols=cols,
        probs=probs,
        labels=np.array([pi[x] for x in cell_labels], dtype=np.int64),
        propositions=propositions,
        initial=uniform(start, rr.size),
        gamma=gamma,
        name=name,
    )


def grid_dest(index: np.ndarray, rr: np.ndarray, cc: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """``dest[d, s]``: the state direction ``d`` (a ``(row, column)`` step of ``steps``) leads
    to from state ``s`` at cell ``(rr[s], cc[s])``, on a grid whose ``index[r, c]`` is the state
    of a cell (−1: blocked); a move off the grid or into a blocked cell stays at ``s``."""
    n_rows, n_cols = index.shape
    tr, tc = rr[None, :] + steps[:, :1], cc[None, :] + steps[:, 1:]
    inside = (tr >= 0) & (tr < n_rows) & (tc >= 0) & (tc < n_cols)
    target = np.where(inside, index[np.clip(tr, 0, n_rows - 1), np.clip(tc, 0, n_cols - 1)], -1)
    return np.where(target >= 0, target, np.arange(rr.size)[None, :])


def uniform(indices: Sequence[int], n: int) -> np.ndarray:
    init = np.zeros(n)
    init[np.asarray(indices, dtype=np.int64)] = 1.0 / len(indices)
    return init


def build(
    generator: str,
    params: dict[str, Any],
    *,
    states: Sequence[str],
    actions: Sequence[str],
    rows: np.ndarray,
    cols: np.ndarray,
    probs: np.ndarray,
    labels: np.ndarray,
    propositions: Sequence[str],
    initial: np.ndarray,
    gamma: float,
    name: str,
) -> LabeledMDP:
    """The MDP from COO transition arrays (row ``s·A + a``; duplicates are summed)."""
    S, A = len(states), len(actions)
    T = Csr.from_coo(probs, rows, cols, (S * A, S))
    return LabeledMDP(
        states=states,
        actions=actions,
        transitions=T,
        labels=labels,
        propositions=propositions,
        initial=initial,
        gamma=gamma,
        name=name,
        source=GeneratorCall(generator, tuple(sorted(params.items()))),
    )


def start_cells(start: Any, where: Where) -> tuple[tuple[int, int], ...]:
    """``start`` as distinct ``(row, column)`` pairs of whole numbers."""
    cells = []
    for cell in as_sequence(start, "start", where):
        if isinstance(cell, (str, bytes)) or not hasattr(cell, "__len__") or len(cell) != 2:
            raise where.fail(f"a start cell is a (row, column) pair, got {cell!r}")
        cells.append((as_int(cell[0], "a start row", where), as_int(cell[1], "a start column", where)))
    if not cells:
        raise where.fail("start lists no cells (use None for every cell)")
    dup = [c for i, c in enumerate(cells) if c in cells[:i]]
    if dup:
        raise where.fail(f"start cell {dup[0]} is listed twice")
    return tuple(cells)


def start_states(start: Any, index: np.ndarray, where: Where) -> tuple[tuple[tuple[int, int], ...] | None, np.ndarray]:
    """``(normalised start cells, their state indices)`` on a grid whose ``index[r, c]`` is
    the state of a cell (−1: blocked); ``None`` starts anywhere."""
    if start is None:
        return None, index[index >= 0]
    cells = start_cells(start, where)
    n_rows, n_cols = index.shape
    for r, c in cells:
        if not (0 <= r < n_rows and 0 <= c < n_cols):
            raise where.fail(f"start cell ({r}, {c}) is outside the {n_rows}x{n_cols} grid")
        if index[r, c] < 0:
            raise where.fail(f"start cell ({r}, {c}) is blocked")
    return cells, np.array([index[r, c] for r, c in cells])
