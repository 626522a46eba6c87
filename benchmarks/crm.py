"""Benchmark of the product environment and counterfactual experiences (CRM) on a toy-text
grid, each row a ratio to a bare environment step measured in the same run.

The environment is ``gymnasium.make("FrozenLake-v1")`` (4 × 4, slippery), the machine has two
live nodes and a terminal one (cell 2 pays 0.5 and moves on, then cell 1 pays 1 and ends;
the goal pays 1 and ends; a hole ends). Rows, each the best of ``--repeat`` rounds of
``--calls`` calls, the rounds interleaved so that every row sees the same machine load:

* ``bare step``: ``env.step`` of the ``gymnasium.make`` environment (resets included);
* ``RewardMachineEnv step``: the product (``observation="flat"``), same actions;
* ``CRM (RewardMachineEnv)``: one ``counterfactual_experiences`` call on a recorded step
  (the experiences of both live nodes);
* ``PyCRM product step`` and ``PyCRM CRM``: the same machine, labels and environment in
  PyCRM (the PyPI package ``pyrewardmachines``, module ``pycrm``): a ``CrossProduct`` whose
  observation is ``[cell, node]`` and its ``generate_counterfactual_experience``. PyCRM is
  not a dependency of rmtk: ``pip install pyrewardmachines`` to get these rows; without it
  they are skipped with a message;
* ``vector …``: ``--copies`` copies in a ``SyncVectorEnv`` (``gymnasium.make_vec``), per
  copy: the vector step, :class:`~rmtk.gym.RewardMachineVectorEnv`'s step (the labeler
  called once per copy, then a ``StateLabels`` labelling the whole batch in one call), its
  batched CRM.

Targets: our CRM ≤ 2× a bare step, and ≥ 3× faster than PyCRM's CRM. Exit status 1 if one
fails.

    PYTHONPATH=. python benchmarks/crm.py
    PYTHONPATH=. python benchmarks/crm.py --repeat 9 --calls 50000 --markdown
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from _table import render  # the script's folder is on sys.path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's rmtk, whatever is installed

import gymnasium
import numpy as np

from rmtk import RewardMachine
from rmtk.gym import RewardMachineEnv, RewardMachineVectorEnv, StateLabels

ENV_ID = "FrozenLake-v1"
CELLS = {1: "e", 2: "p", 5: "h", 7: "h", 11: "h", 12: "h", 15: "g"}  # the other cells: f


def labeler(obs, info=None) -> str:
    return CELLS.get(int(obs), "f")


def machine() -> RewardMachine:
    return RewardMachine.from_transitions(
        {
            ("u0", "p"): ("u1", 0.5),
            ("u1", "e"): ("done", 1.0),
            ("u0", "g"): ("done", 1.0),
            ("u1", "g"): ("done", 1.0),
            ("u0", "h"): "done",
            ("u1", "h"): ("done", -1.0),
        },
        list("fghpe"),
        nodes=["u0", "u1", "done"],
        name="grid",
    )


def stepper(env, actions):
    """A timed function: ``len(actions)`` steps of ``env``, reset when an episode ends."""

    def run():
        env.reset(seed=0)
        step, reset = env.step, env.reset
        for a in actions:
            _, _, term, trunc, _ = step(a)
            if term or trunc:
                reset()

    return run


def recorded(env, actions) -> list[tuple]:
    """The product steps ``(obs, action, next_obs, info)`` of ``actions``."""
    out = []
    obs, _ = env.reset(seed=0)
    for a in actions:
        nxt, _, term, trunc, info = env.step(a)
        out.append((obs, a, nxt, info))
        obs = env.reset()[0] if term or trunc else nxt
    return out


def crm_caller(fn, steps):
    def run():
        for step in steps:
            fn(*step)

    return run


def pycrm_rows(actions, calls: int):
    """PyCRM's product and CRM on the same environment and machine, or None without it."""
    try:
        from enum import Enum

        from pycrm.automaton import RewardMachine as PyRM
        from pycrm.crossproduct import CrossProduct
        from pycrm.label import LabellingFunction
    except ImportError:
        return None

    Event = Enum("Event", ["P", "E", "G", "H"])
    by_letter = {"p": Event.P, "e": Event.E, "g": Event.G, "h": Event.H}

    class Labels(LabellingFunction):
        @LabellingFunction.event
        def cell(self, obs, action, next_obs):
            return by_letter.get(labeler(next_obs))

    class Grid(PyRM):
        @property
        def u_0(self):
            return 0

        def _get_state_transition_function(self):
            return {
                0: {"P": 1, "G": -1, "H": -1, "not P and not G and not H": 0},
                1: {"E": -1, "G": -1, "H": -1, "not E and not G and not H": 1},
            }

        def _get_reward_transition_function(self):
            return {
                0: {"P": 0.5, "G": 1.0, "H": 0.0, "not P and not G and not H": 0.0},
                1: {"E": 1.0, "G": 1.0, "H": -1.0, "not E and not G and not H": 0.0},
            }

    class Product(CrossProduct):
        def __init__(self):
            super().__init__(gymnasium.make(ENV_ID), Grid(Event), Labels(), max_steps=100)
            self.observation_space = gymnasium.spaces.MultiDiscrete([16, 3])
            self.action_space = self.ground_env.action_space

        def _get_obs(self, ground_obs, u, c):
            return np.array([ground_obs, u])

        def to_ground_obs(self, obs):
            return obs[0]

    product = Product()
    # the same machine: PyCRM's experiences equal ours on every recorded step
    ours = RewardMachineEnv(gymnasium.make(ENV_ID), machine(), labeler, observation="flat")
    steps = recorded(ours, actions[:calls])
    theirs = [(o // 3, a, n // 3) for o, a, n, _ in steps]
    for (o, a, n, info), t in zip(steps[:500], theirs[:500]):
        mine = [(o2 % 3, r, d) for _, _, r, o2, d in ours.counterfactual_experiences(o, a, n, info)]
        _, _, nxt, reward, done, _ = product.generate_counterfactual_experience(*t)
        assert mine == [(int(x[1]), float(r), bool(d)) for x, r, d in zip(nxt, reward, done)], (t, mine)
    return {
        "PyCRM product step": stepper(product, actions[:calls]),
        "PyCRM CRM": crm_caller(product.generate_counterfactual_experience, theirs),
    }


def vector_rows(copies: int, waves: int, seed: int):
    vec = gymnasium.make_vec(ENV_ID, num_envs=copies, vectorization_mode="sync")
    product = RewardMachineVectorEnv(
        gymnasium.make_vec(ENV_ID, num_envs=copies, vectorization_mode="sync"), machine(), labeler, observation="flat"
    )
    cells = StateLabels(list("fghpe"), ["fghpe".index(labeler(s)) for s in range(16)])
    batched = RewardMachineVectorEnv(
        gymnasium.make_vec(ENV_ID, num_envs=copies, vectorization_mode="sync"), machine(), cells, observation="flat"
    )
    actions = np.random.default_rng(seed).integers(4, size=(waves, copies))

    def run(env):
        def go():
            env.reset(seed=0)
            for a in actions:
                env.step(a)

        return go

    steps = []
    obs, _ = product.reset(seed=0)
    for a in actions:
        nxt, _, _, _, info = product.step(a)
        steps.append((obs, a, nxt, info))
        obs = nxt
    return {
        "vector step (per copy)": run(vec),
        "RewardMachineVectorEnv step (per copy)": run(product),
        "... with a batch labeler (per copy)": run(batched),
        "batched CRM (per copy)": crm_caller(product.counterfactual_experiences, steps),
    }, waves * copies


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=20_000, help="calls per timed round (single environment)")
    p.add_argument("--repeat", type=int, default=5, help="rounds; each row is the best round")
    p.add_argument("--copies", type=int, default=256, help="copies of the vector environment")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--markdown", action="store_true")
    args = p.parse_args(argv)

    actions = np.random.default_rng(args.seed).integers(4, size=args.calls).tolist()
    env = RewardMachineEnv(gymnasium.make(ENV_ID), machine(), labeler, observation="flat")
    rows = {
        "bare step": stepper(gymnasium.make(ENV_ID), actions),
        "RewardMachineEnv step": stepper(env, actions),
        "CRM (RewardMachineEnv)": crm_caller(env.counterfactual_experiences, recorded(env, actions)),
    }
    calls = dict.fromkeys(rows, args.calls)
    theirs = pycrm_rows(actions, args.calls)
    if theirs is None:
        print(
            "pyrewardmachines is not installed (pip install pyrewardmachines): the PyCRM rows are skipped",
            file=sys.stderr,
        )
    else:
        rows.update(theirs)
        calls.update(dict.fromkeys(theirs, args.calls))
    waves = max(1, args.calls // args.copies)
    vector, n = vector_rows(args.copies, waves, args.seed)
    rows.update(vector)
    calls.update(dict.fromkeys(vector, n))

    best = dict.fromkeys(rows, float("inf"))
    for r in range(args.repeat):
        for name, fn in rows.items():
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], (time.perf_counter() - t0) / calls[name])
        print(f"round {r + 1}/{args.repeat}", file=sys.stderr)
    bare = best["bare step"]
    table = [
        {"row": name, "us_per_call": f"{t * 1e6:.2f}", "x_bare_step": f"{t / bare:.2f}"} for name, t in best.items()
    ]
    print(render(table, args.markdown, frozenset({"row"})))
    crm = best["CRM (RewardMachineEnv)"]
    ok = crm <= 2 * bare
    print(f"CRM / bare step = {crm / bare:.2f} (target <= 2): {'ok' if ok else 'FAILED'}")
    if theirs is not None:
        speedup = best["PyCRM CRM"] / crm
        print(f"PyCRM CRM / our CRM = {speedup:.1f} (target >= 3): {'ok' if speedup >= 3 else 'FAILED'}")
        ok &= speedup >= 3
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
