"""Benchmark of ``rmtk.gym.collect`` against a hand-written loop, measured in the same run.

The environment is a toy-text grid, ``CliffWalking-v1`` from ``gymnasium.make`` with a
60-step time limit; the policy walks towards the goal with probability 0.8 and acts at
random otherwise (its generator: ``ctx.rng``); the labeler is a ``StateLabels`` of the grid
(``c`` on the cliff, ``g`` at the goal, ``o`` elsewhere). The hand-written loop plays the
same episodes with the same environment, policy and labeler and counts (compressed label
word, state, action) into a dict: what a user would write instead of ``collect``. Rows:

* ``hand loop``: the reference.
* ``collect``: a single environment (target: ≤ 1.5 × the hand loop).
* ``collect, make_vec sync k``: ``gymnasium.make_vec(..., num_envs=k, vectorization_mode=
  "sync")``: Gymnasium's own vector environment, which steps its copies one by one.
* ``collect, make_vec async k`` (``--async-copies``): the same with one process per copy.
* ``collect, MdpVectorEnv k``: the grid's model (``rmtk.gym.tabular_mdp``) stepped by
  ``rmtk.gym.MdpVectorEnv``, all copies at once with numpy.

Each row is the best of ``--repeat`` runs (after a warm-up of 50 episodes), the hand loop and
``collect`` taken alternately; times per episode step in µs beside the wall time.

    PYTHONPATH=. python benchmarks/collect.py                  # 2000 episodes, best of 3
    PYTHONPATH=. python benchmarks/collect.py --episodes 10000 --repeat 1 --markdown

Exit status 1 if collect on a single environment costs more than 1.5 × the hand loop.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from _table import render  # the script's folder is on sys.path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's rmtk, whatever is installed

import gymnasium

from rmtk.gym import Identity, MdpVectorEnv, StateLabels, collect, tabular_mdp

ENV_ID, STEPS, TARGET = "CliffWalking-v1", 60, 1.5
ROWS, COLS = 4, 12
LABELS = StateLabels(
    "c g o",
    [0 if s // COLS == 3 and 0 < s % COLS < COLS - 1 else 1 if s == ROWS * COLS - 1 else 2 for s in range(ROWS * COLS)],
)
# towards the goal: up from the bottom row's start, right along row 2, down at the last column
TOWARDS = np.array([0 if s // COLS == 3 else 2 if s % COLS == COLS - 1 else 1 for s in range(ROWS * COLS)])


def policy(obs, ctx):
    """Towards the goal with probability 0.8, a random action otherwise (batched for vector envs)."""
    if np.ndim(obs):
        go = TOWARDS[obs]
        return np.where(ctx.rng.random(len(go)) < 0.2, ctx.rng.integers(0, 4, len(go)), go)
    return int(ctx.rng.integers(4)) if ctx.rng.random() < 0.2 else int(TOWARDS[obs])


class _Ctx:
    """What the hand loop hands the same policy: the generator."""

    def __init__(self, rng):
        self.rng = rng


def hand_loop(env, episodes: int, seed: int) -> dict:
    """What a user writes instead of collect: play, label, count into a dict."""
    rng = np.random.default_rng(seed)
    ctx = _Ctx(rng)
    counts: dict = {}
    for e in range(episodes):
        obs, info = env.reset(seed=seed + e)
        word: tuple = ()
        for _ in range(STEPS):
            label = LABELS(obs, info)
            if not word or word[-1] != label:
                word = word + (label,)
            action = policy(obs, ctx)
            key = (word, obs, action)
            counts[key] = counts.get(key, 0) + 1
            obs, _, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                break
    return counts


def best(fn, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--episodes", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--copies", type=int, nargs="*", default=[16, 256], help="make_vec sizes")
    ap.add_argument("--async-copies", type=int, nargs="*", default=[], help="make_vec async sizes (processes)")
    ap.add_argument("--native", type=int, nargs="*", default=[1000], help="MdpVectorEnv sizes")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args(argv)
    n = args.episodes
    env = gymnasium.make(ENV_ID, max_episode_steps=STEPS)
    mdp = tabular_mdp(env, LABELS)
    run = {"propositions": LABELS.propositions, "max_steps": STEPS}
    hand_loop(env, 50, 0)
    collect(env, policy, LABELS, Identity(), 50, seed=0, **run)
    rows = []

    def row(what, seconds, steps):
        rows.append(
            {
                "path": what,
                "episodes": n,
                "steps": steps,
                "seconds": f"{seconds:.2f}",
                "µs/step": f"{1e6 * seconds / steps:.2f}",
                "× hand loop": f"{seconds / ref:.2f}",
            }
        )

    # the two that the target compares run alternately, so that both see the same machine load
    ref = single = float("inf")
    for _ in range(args.repeat):
        t, counts = best(lambda: hand_loop(env, n, 0), 1)
        ref = min(ref, t)
        t, rec = best(lambda: collect(env, policy, LABELS, Identity(), n, seed=0, **run), 1)
        single = min(single, t)
    row("hand loop", ref, sum(counts.values()))
    row("collect", single, rec.n_steps)
    for mode, sizes in (("sync", args.copies), ("async", args.async_copies)):
        for k in sizes:
            vec = gymnasium.make_vec(ENV_ID, num_envs=k, vectorization_mode=mode, max_episode_steps=STEPS)
            t, r = best(lambda vec=vec: collect(vec, policy, LABELS, Identity(), n, seed=0, **run), args.repeat)
            row(f"collect, make_vec {mode} {k}", t, r.n_steps)
            vec.close()
    for k in args.native:
        t, r = best(
            lambda k=k: collect(MdpVectorEnv(mdp, k, max_steps=STEPS), policy, LABELS, Identity(), n, seed=0, **run),
            args.repeat,
        )
        row(f"collect, MdpVectorEnv {k}", t, r.n_steps)
    print(f"{ENV_ID}, {STEPS}-step limit, best of {args.repeat}")
    print(render(rows, args.markdown, frozenset({"path"})))
    ratio = single / ref
    print(f"collect / hand loop: {ratio:.2f} (target ≤ {TARGET})")
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
