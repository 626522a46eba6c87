"""What the rewards of the listed machines cost beside the learning, from demonstrations.

The command a new user runs on the Craft World (docs/benchmarks/rewards-cost.md):
``rmtk simulate models/craft.rm t2 -n 10000 -T 150 --seed 0`` then ``rmtk learn --demos``,
which lists 10 machines and recovers the MaxEnt rewards of each. Per task, in one process:

* ``learn``: the learning alone (``irl=None``): the same-run reference;
* ``rewards``: the rewards of the listed machines as ``Learner`` computes them by default
  (the values eliminated past :data:`rmtk.rewards.recovery.DENSE_LIMIT` unknowns);
* ``dense``: the same fits through the dense eigendecomposition of ``AᵀA`` (the path every
  system of under 3,000 unknowns took before), on ``--dense`` machines, and the largest
  difference between its rewards and the default's (``max |Δr|``).

CPU seconds (``time.process_time``) beside wall seconds: the machine may be shared.

    PYTHONPATH=. python benchmarks/rewards_cost.py                    # t2, 10^4 episodes
    PYTHONPATH=. python benchmarks/rewards_cost.py --tasks t2 t3 --dense 2 --markdown
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _table import render  # the script's folder is on sys.path

from rmtk import dsl
from rmtk._threads import single_blas
from rmtk.learner.pipeline import Learner
from rmtk.product.simulate import simulate
from rmtk.ptp.empirical import EmpiricalPTP
from rmtk.rewards.maxent import MaxEntIRL
from rmtk.rewards.recovery import reward_fit


def _timed(f):
    c, w = time.process_time(), time.perf_counter()
    out = f()
    return out, time.process_time() - c, time.perf_counter() - w


def run(task_name: str, n: int, horizon: int, seed: int, dense: int) -> dict:
    task = dsl.load_model("craft").tasks[task_name]
    demos = simulate(task, n, horizon, seed=seed)
    res, c_learn, w_learn = _timed(lambda: Learner(ptp=EmpiricalPTP(demos), irl=None).fit(task))
    irl = MaxEntIRL()
    kw = dict(gamma=task.discount, lam=task.lam)
    with single_blas():  # as MaxEntIRL.fit_within
        fits, c_rew, w_rew = _timed(lambda: irl.fit(task.mdp, res.machines, res.ptp, **kw))
        old, c_dense, w_dense = _timed(
            lambda: [reward_fit(task.mdp, m, res.ptp, dense_limit=10**9, **kw) for m in res.machines[:dense]]
        )
    new = [reward_fit(task.mdp, m, res.ptp, **kw) for m in res.machines[:dense]]
    diff = max((float(np.abs(a.delta_r - b.delta_r).max()) for a, b in zip(old, new)), default=float("nan"))
    per = c_dense / max(1, len(old))
    return {
        "task": task_name,
        "episodes": f"{n:,}",
        "machines": len(res.machines),
        "unknowns": max((f.n_unknowns for f in fits), default=0),
        "learn CPU s": f"{c_learn:.2f}",
        "rewards CPU s": f"{c_rew:.2f}",
        "rewards wall s": f"{w_rew:.2f}",
        "dense CPU s / machine": f"{per:.2f}",
        "dense, all machines (est.) CPU s": f"{per * len(fits):.1f}",
        "max |Δr|": f"{diff:.1e}",
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", nargs="+", default=["t2"])
    ap.add_argument("-n", type=int, default=10_000, help="episodes (default 10^4)")
    ap.add_argument("-T", type=int, default=150, help="steps per episode (default 150)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dense", type=int, default=1, help="machines fitted the dense way too (default 1)")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    rows = [run(t, args.n, args.T, args.seed, args.dense) for t in args.tasks]
    print(render(rows, args.markdown, left=frozenset({"task"})))


if __name__ == "__main__":
    main()
