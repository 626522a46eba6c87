"""Benchmark: the reward machine learned while a DQN agent trains (rmtk.rl.online, the extra
rl, ``pip install '.[rl]'``), against the targets of docs/benchmarks/online.md.

For each task (``--tasks``: ``cliff`` CliffWalking's patrol a → b → c, ``coffee`` and ``patrol``
of the Office World, ``craft-t1`` and ``craft-t2`` of the Craft World) and each agent (``--arms``:
``online`` the OnlineLearner with subgoal exploration, ``online-eps`` with the agent's own
ε-greedy exploration, ``true`` DQN with CRM given the true machine, ``none`` DQN given no machine),
``--seeds`` runs (``--first-seed``, the next, …), each in its own process, ``--jobs`` at a time;
``--algorithm``: DQN (the default) or PPO (on-policy: the online agent explores as PPO does, the
agent given the true machine has no CRM).
Training, the settings of each task (those of docs/benchmarks/deep-rl.md, the same for every
agent of a task) and the measure (the greedy policy's exact success rate from every start state
of the task, every ``--every`` steps) are :mod:`rmtk.experiments._online`'s, which
``rmtk reproduce online`` runs too. A run stops at its first success rate ≥ ``--stop`` (0:
never) or at ``--steps``.

Reported per task and agent: the median over seeds of the steps to 90 % (``>N``: the median run
did not get there), the steps per seed, the process CPU seconds of training (measured in the
child: load-robust, unlike wall seconds), and for the online agents the swaps, the inference's
share of the CPU and each final machine's verdict against the truth; per task the targets: the
online agent's median at most 1.5× the true machine's, at most ⅓ of no machine's (or no machine
never reaching 90 % within the budget), inference at most 5 % of the CPU, the final machine the
truth up to the pairs no trace exercised. Same-run reference: the agent given the true machine,
and ``python -c "import numpy"`` in a child (its seconds say how loaded the machine was).

    PYTHONPATH=. python benchmarks/online.py --tasks cliff coffee --seeds 3 --markdown [--out runs.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from _child import run_child  # the script's folder is on sys.path
from _table import render

ROOT = Path(__file__).resolve().parent.parent
MARK = "@@online "
ARMS = ("online", "online-eps", "true", "none")
#: A child reports its steps and success rate to stderr about this often (steps).
PROGRESS_EVERY = 5_000
#: The step budgets of the tasks (docs/benchmarks/deep-rl.md's, where it has one).
BUDGET = {
    "cliff": 15_000,
    "coffee": 40_000,
    "patrol": 40_000,
    "craft-t1": 60_000,
    "craft-t2": 60_000,
    "coffee-noisy": 40_000,
    "mining": 100_000,
}


def one(args: list[str]) -> int:
    """A child: train one agent and print its record."""
    sys.path.insert(0, str(ROOT))
    import torch

    from rmtk import dsl
    from rmtk.experiments._online import task, train

    torch.set_num_threads(1)
    name, arm, seed, steps, every, stop, algorithm = args
    t = task(name)
    t0 = time.process_time()

    def progress(n: int, rate: float) -> None:  # long runs show progress (stderr: the parent's log)
        if n % PROGRESS_EVERY < int(every):
            print(f"{name} {arm} seed={seed}: {n} steps, success {rate:.2f}", file=sys.stderr, flush=True)

    r = train(
        t,
        arm,
        seed=int(seed),
        steps=int(steps),
        every=int(every),
        stop=float(stop) or None,
        log=progress,
        algorithm=algorithm,
    )
    record = {
        "task": name,
        "arm": arm,
        "algorithm": algorithm,
        "seed": int(seed),
        "reached": r.reached(),
        "steps": list(r.steps),
        "success": list(r.success),
        "trained": r.trained,
        "swaps": list(r.swaps),
        "verdict": r.verdict,
        "train_cpu": r.cpu,
        "inference_cpu": r.inference_cpu,
        "process_cpu": time.process_time() - t0,
    }
    if arm.startswith("online"):
        learner = r.learner
        record["machine"] = dsl.dumps(learner.machine)
        record["history"] = [h.line(learner.env.loop.propositions) for h in learner.hypotheses]
        record["final"] = str(learner.final)
    print(MARK + json.dumps(record), flush=True)
    return 0


def numpy_seconds() -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import numpy"], check=True)
    return time.perf_counter() - t0


def median(values) -> float | None:
    finite = sorted(v if v is not None else float("inf") for v in values)
    m = statistics.median(finite) if finite else float("inf")
    return None if m == float("inf") else m


def target_row(name: str, by: dict, med: dict) -> dict:
    """The targets of task ``name`` (module docstring) from its runs ``by`` agent and their medians."""
    o, t, n = med["online"], med["true"], med.get("none")
    if "none" not in by:
        against_none = "not run"
    elif n is None:
        against_none = "no machine never reached 90 %"
    else:
        against_none = "-" if o is None else f"{o / n:.2f} of no machine's {n:.0f}"
    share = max(r["inference_cpu"] / r["train_cpu"] for r in by["online"])
    return {
        "task": name,
        "online / true (≤ 1.5)": "-" if o is None or t is None else f"{o / t:.2f}",
        "online vs no machine (≤ 1/3)": against_none,
        "inference share (≤ 5 %)": f"{100 * share:.1f} % at most",
        "final machines": "; ".join(f"seed {r['seed']}: {r['verdict']}" for r in by["online"]),
    }


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--one":
        return one(sys.argv[2:])
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", nargs="+", default=["cliff"])
    ap.add_argument("--arms", nargs="+", choices=ARMS, default=list(ARMS))
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--steps", type=int, default=None, help="budget of a run (default: the task's, BUDGET)")
    ap.add_argument("--every", type=int, default=250)
    ap.add_argument("--stop", type=float, default=0.9, help="end a run at this success rate (0: never)")
    ap.add_argument("--jobs", type=int, default=2, help="children at a time")
    ap.add_argument("--algorithm", choices=("DQN", "PPO"), default="DQN", help="every agent's algorithm")
    ap.add_argument("--out", type=Path, help="write every run's record here (JSON)")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    reference = numpy_seconds()
    jobs = [
        (name, arm, seed)
        for name in args.tasks
        for arm in args.arms
        for seed in range(args.first_seed, args.first_seed + args.seeds)
    ]

    def launch(job):
        name, arm, seed = job
        steps = args.steps or BUDGET[name]
        rec = run_child(
            __file__,
            [name, arm, str(seed), str(steps), str(args.every), str(args.stop), args.algorithm],
            MARK,
            f"{name} {arm} {seed}",
        )
        rec["budget"] = steps
        print(
            f"{name} {arm} seed={seed}: {rec['reached'] or '>' + str(steps)} steps, {rec['train_cpu']:.0f} s CPU"
            + (f", {len(rec['swaps'])} swaps, {rec['verdict']}" if arm.startswith("online") else ""),
            flush=True,
        )
        return rec

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        records = list(pool.map(launch, jobs))
    if args.out:
        args.out.write_text(json.dumps({"numpy_seconds": reference, "runs": records}, indent=1))
    rows, targets = [], []
    for name in args.tasks:
        by = {arm: [r for r in records if r["task"] == name and r["arm"] == arm] for arm in args.arms}
        med = {arm: median(r["reached"] for r in rs) for arm, rs in by.items()}
        for arm, rs in by.items():
            budget = rs[0]["budget"]
            online = arm.startswith("online")
            cpu = sum(r["train_cpu"] for r in rs)
            rows.append(
                {
                    "task": name,
                    "agent": arm if args.algorithm == "DQN" else f"{arm} ({args.algorithm})",
                    "median steps to 90 %": f">{budget}" if med[arm] is None else int(med[arm]),
                    "per seed": " ".join(str(r["reached"] or f">{budget}") for r in rs),
                    "train CPU s (median)": f"{statistics.median(r['train_cpu'] for r in rs):.0f}",
                    "swaps": " ".join(str(len(r["swaps"])) for r in rs) if online else "-",
                    "inference share": f"{100 * sum(r['inference_cpu'] for r in rs) / cpu:.1f} %" if online else "-",
                    "final machine": "; ".join(sorted(set(r["verdict"] for r in rs))) if online else "-",
                }
            )
        if "online" in by and "true" in by:
            targets.append(target_row(name, by, med))
    print(render(rows, args.markdown))
    if targets:
        print()
        print(render(targets, args.markdown))
    print(f"\nSame-run reference: python -c 'import numpy' in a child {reference:.2f} s.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
