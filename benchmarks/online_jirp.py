"""Adapter: JIRP's own learning loop (Xu et al., ICAPS 2020: tabular Q-learning on the product with
the hypothesis, counterexample episodes, SAT inference), as published in the public repository
corazza/stochastic-reward-machines (``src/rl_agents/jirp/jirp.py``, function ``learn``), run
unchanged on its own environments with its own defaults, for docs/benchmarks/online.md.

This script is ours; it imports the repository's modules from its ``src`` folder (``--src``;
nothing of it is copied here) and must run with that repository's dependencies (gym 0.15,
numpy, python-sat, IPython, z3-solver), e.g. in a separate virtual environment::

    /tmp/srm-venv/bin/python benchmarks/online_jirp.py --src /tmp/srm/src --env Office-v0 --rm-id 0 \\
        --steps 300000 --seed 0

What it does in place of the repository's ``run.py`` (which imports TensorFlow and OpenAI Baselines
for its deep agents): the environment as ``run.py --alg=jirp --rm_hidden --rm_id=K`` builds it
(``gym.make``, the repository's ``RewardMachineHidden`` with γ 0.9, seeded), then ``learn(env,
seed=..., total_timesteps=..., gamma=0.9, results_path=...)`` with the function's defaults for
everything else (learning rate 0.1, ε 0.1, Q initialised to 1). Two stand-ins of ours: a
``baselines.logger`` that prints nothing (the loop only reports through it), and, to know its final
machine, a record of the machine the loop passes to its results object at each re-inference (its
results file stores an empty dict instead). On a world with exact rewards (the Office and Craft
Worlds) the two attributes the loop reads and only the repository's noisy environments declare are
supplied (``supply_exact``: exact rewards, no slip), and the record says so. It prints one JSON
line after ``@@jirp``: the steps of each re-inference with the machine's size and transitions, the
mean reward of the last 100 episodes every 100 steps (the loop's own measure), the first step where
it reaches ``--level``, and the process CPU seconds; a SIGTERM (e.g. ``timeout``) ends the loop and
prints what it reached, flagged ``stopped``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import time
import types

MARK = "@@jirp "


def stand_in_logger() -> None:
    """``baselines.logger``: the calls the loop makes, printing nothing."""
    baselines = types.ModuleType("baselines")
    logger = types.ModuleType("baselines.logger")
    logger.record_tabular = lambda *a, **k: None
    logger.dump_tabular = lambda *a, **k: None
    logger.log = lambda *a, **k: None
    logger.get_dir = lambda: None
    baselines.logger = logger
    sys.modules["baselines"], sys.modules["baselines.logger"] = baselines, logger


def supply_exact(env) -> dict:
    """The attributes the loop reads that an environment with exact rewards lacks, supplied.

    ``learn`` reads the noise level from the hidden machine (``epsilon_cont``, set only by a noisy
    reward function) or else from the environment (``noise_epsilon``), and ``slip_prob`` from the
    environment: only the repository's Mining, Harvest and garden environments declare them, so
    on the Office and Craft Worlds it stops with an AttributeError. Supplied here, only where
    missing: ``noise_epsilon`` 0.0 (the loop's own branch for exact rewards: exact inference) and
    ``slip_prob`` 0.0 (the worlds are deterministic; the loop only records it)."""
    supplied = {}
    rm_epsilon = getattr(getattr(env, "current_rm", None), "epsilon_cont", None)
    for name in ("noise_epsilon", "slip_prob"):
        if name == "noise_epsilon" and rm_epsilon is not None:
            continue
        try:
            getattr(env, name)
        except AttributeError:
            setattr(env, name, 0.0)
            supplied[name] = 0.0
    return supplied


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", required=True, help="the src folder of corazza/stochastic-reward-machines")
    ap.add_argument("--env", default="Office-v0", help="a gym id the repository registers")
    ap.add_argument("--rm-id", type=int, default=0, help="the task: its reward machine among the environment's")
    ap.add_argument("--steps", type=int, default=300_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--level", type=float, default=0.9)
    args = ap.parse_args()
    stand_in_logger()
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]  # benchmarks/gym.py is not gym
    sys.path.insert(0, os.path.abspath(args.src))
    os.chdir(args.src)  # its environments read their reward machines by relative paths
    import envs  # noqa: F401  (registers the repository's environments)
    import gym
    from reward_machines.rm_environment import RewardMachineHidden
    from rl_agents.jirp import jirp
    from rl_agents.sjirp import util

    rebuilt: list = []
    curve: list = []
    base_rebuild, base_reward = util.EvalResults.register_rebuilding, util.EvalResults.register_mean_reward

    def register_rebuilding(self, step, rm):  # the loop's own calls, recorded, then passed on
        rebuilt.append((step, rm))
        return base_rebuild(self, step, rm)

    def register_mean_reward(self, step, reward):
        curve.append((step, reward))
        return base_reward(self, step, reward)

    util.EvalResults.register_rebuilding = register_rebuilding
    util.EvalResults.register_mean_reward = register_mean_reward

    def stop(signum, frame):  # SIGTERM (a time limit of the caller): report what was reached, flagged
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    env = RewardMachineHidden(gym.make(args.env), 0.9, 0.9, args.rm_id)
    env.seed(args.seed)
    supplied = supply_exact(env)
    results = os.path.join(tempfile.mkdtemp(prefix="jirp-"), "results.json")
    t0 = time.process_time()
    stopped = None
    try:
        jirp.learn(env, seed=args.seed, total_timesteps=args.steps, gamma=0.9, results_path=results)
    except KeyboardInterrupt:
        stopped = f"stopped by a signal at step {curve[-1][0] if curve else 0}"
    cpu = time.process_time() - t0
    reached = next((step for step, reward in curve if reward >= args.level), None)
    record = {
        "stopped": stopped,
        "supplied": supplied,
        "env": args.env,
        "rm_id": args.rm_id,
        "seed": args.seed,
        "steps": args.steps,
        "reached": reached,
        "cpu": cpu,
        "rebuilds": [
            {"step": step, "states": len({k.split("-")[0] for k in rm}), "transitions": rm} for step, rm in rebuilt
        ],
        "curve": curve[:: max(1, len(curve) // 400)],
    }
    print(MARK + json.dumps(record), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
