"""Helpers shared by the generators: argument normalisation (so that a generator call
can be written back exactly from its :class:`~rmtk.mdp.GeneratorCall`), the alphabet, and
assembling the :class:`~rmtk.mdp.LabeledMDP`."""
from __future__ import annotations

import math
import operator
from typing import Any, Iterable, Sequence

import numpy as np

from .._arrays import Csr
from ..errors import ModelError
from ..mdp import GeneratorCall, LabeledMDP


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
