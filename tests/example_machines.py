"""Small reward machines shared by the tests of rmtk.io and rmtk.io.draw."""

from __future__ import annotations

import numpy as np

from rmtk import RewardMachine


def patrol() -> RewardMachine:
    return RewardMachine.from_transitions(
        {("u0", "A"): "u1", ("u1", "B"): "u2", ("u2", "C"): "u3", ("u3", "D"): ("u0", 1.0)}, "ABCD", name="patrol"
    )


def tiny() -> RewardMachine:
    return RewardMachine.from_transitions({("u0", "a"): "u1", ("u1", "b"): ("u0", 1.0)}, "ab", name="tiny")


def machine(n: int, seed: int = 0, k: int = 3) -> RewardMachine:
    rng = np.random.default_rng(seed)
    return RewardMachine(
        nodes=[f"u{i}" for i in range(n)],
        alphabet=[chr(ord("a") + i) for i in range(k)],
        delta_u=rng.integers(0, n, size=(n, k)),
        delta_r=rng.choice([0.0, 0.0, 1.0, -1.0], size=(n, k)),
        name=f"m{n}",
    )
