"""Shared by the demonstrations tests: a deterministic 4x4 grid, walks on it, and
``raises`` for messages checked part by part."""

import re

import pytest

from rmtk.data import Demonstrations
from rmtk.envs import gridworld
from rmtk.errors import DataError


def raises(*parts: str):
    """pytest.raises(DataError) whose message contains every part, in order."""
    return pytest.raises(DataError, match=".*".join(re.escape(p) for p in parts))


def make_grid():
    """The grid 'grid': states r{row}c{col} (column-major indices 0..15), labels a..d, no slip."""
    return gridworld(["a b c d", "b c d a", "c d a b", "d a b c"], slip=0.0)


def step(mdp, s, a):
    ((t, p),) = mdp.successors(s, a)
    return t


def walk(mdp, start, moves):
    """[(s, a), ...] along the deterministic grid."""
    out, s = [], mdp.state_index(start)
    for m in moves:
        a = mdp.action_index(m)
        out.append((s, a))
        s = step(mdp, s, a)
    return out


def three_walks(grid, *more) -> Demonstrations:
    """Three ragged trajectories (5, 1 and 3 steps), then the walks ``more``."""
    return Demonstrations.from_lists(
        [
            walk(grid, "r0c0", ["down", "right", "right", "up", "left"]),
            walk(grid, "r3c3", ["up"]),
            walk(grid, "r1c1", ["left", "down", "down"]),
            *more,
        ]
    )
