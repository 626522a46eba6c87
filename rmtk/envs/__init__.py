"""Generators of the paper's environments: each returns a :class:`~rmtk.mdp.model.LabeledMDP`
whose ``source`` is the normalised :class:`~rmtk.mdp.model.GeneratorCall`, so that
``GENERATORS[call.generator](**call.kwargs(), name=mdp.name) == mdp``."""

from __future__ import annotations

from collections.abc import Callable

from ..mdp.model import LabeledMDP
from .blockworld import blockworld
from .craft import craftworld
from .gridworld import gridworld
from .labyrinth import labyrinth
from .office import officeworld

#: Generator name (as written in `.rm` files) → function.
GENERATORS: dict[str, Callable[..., LabeledMDP]] = {
    "gridworld": gridworld,
    "blockworld": blockworld,
    "labyrinth": labyrinth,
    "officeworld": officeworld,
    "craftworld": craftworld,
}

__all__ = ["gridworld", "blockworld", "labyrinth", "officeworld", "craftworld", "GENERATORS"]
