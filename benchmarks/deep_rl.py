"""Benchmark of deep RL with reward machines (rmtk.rl, the rl extra): DQN with and
without counterfactual experiences (CRM) on the Office World's coffee and patrol tasks and on
Craft World tasks, the machine learned back from the trained agent, and DQN with CRM on the
learned machine.

Training (:mod:`rmtk.experiments._dqn`, the code of ``rmtk reproduce deep-rl``):
Stable-Baselines3 DQN, the same network and settings in every run of a task (``DQNConfig``'s
defaults but the settings given: ``--hidden`` units (none: a linear Q-network), ``--gamma``,
``--explore`` steps of exploration, ``--lr`` falling linearly to ``--final-lr`` over the
budget, ``--batch``, ``--train-freq``, ``--gradient-steps``, ``--target-update``,
``--buffer``, ``--n-steps``), on ``RewardMachineEnv(MdpEnv(world, max_steps=horizon),
machine, labels, observation="flat")``: ``--world office`` episodes of 100 steps from every
cell but the decorations; ``--world craft`` the Craft World of models/craft.rm, episodes of
``--horizon`` steps from every free cell. Every ``--every`` steps the greedy policy's *success
rate* is measured exactly: one greedy episode from each start cell (the world and the policy
are deterministic), the share that earns the true machine's reward
(:class:`rmtk.rl.GreedyRollouts`); for the Craft World also from the task's own start, the
map's ``A`` cell, once at the end. A run stops at the first success rate ≥ ``--stop`` (0:
never) or at ``--steps``. Reported per task and agent (``--arms``): the steps to 90 %, median
over ``--seeds`` seeds (``--first-seed``, the next, …; ``>steps`` when the median run did not
get there), the per-seed values, the final success rates and the training seconds. The target
(Office): CRM's median at most half of plain DQN's.

Learning back: the CRM agent of the first seed (as it stopped), ε-greedy (``--epsilon``),
recorded for ``--episodes`` episodes of ``--length`` steps from the world's start cells
(``collect`` with :func:`rmtk.rl.agent_policy`) and learned from the counts (EmpiricalPTP,
ConfidenceMiner 0.05, SimplestEncoder; where several machines survive, what separates one
from the truth); and actively (:class:`rmtk.rl.AgentExpert`, exact ε-greedy distributions).
The active run's machine, paying what the truth pays after the same word (``reward_like``),
trains DQN with CRM on the same seeds: ``learned, CRM``.

Reference in the same run: the bare product (``RewardMachineEnv``, random actions) steps per
second. The commands of docs/benchmarks/deep-rl.md, e.g.:

    PYTHONPATH=. python benchmarks/deep_rl.py --tasks coffee --steps 40000 --seeds 3 --markdown
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from _table import render  # the script's folder is on sys.path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's rmtk, whatever is installed

import numpy as np

from rmtk import dsl
from rmtk.experiments._dqn import DQNConfig, World, product, reward_like, train_dqn
from rmtk.experiments.deep_rl import learn_back, median_steps
from rmtk.gym import StateLabels
from rmtk.rl import GreedyRollouts, q_table


def bare_rate(machine, labels, world, steps: int = 20_000) -> float:
    env = product(machine, labels, world=world)
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    t0 = time.perf_counter()
    for a in rng.integers(4, size=steps).tolist():
        _, _, term, trunc, _ = env.step(a)
        if term or trunc:
            env.reset()
    return steps / (time.perf_counter() - t0)


ARMS = {"true-crm": ("true, CRM", True), "true-plain": ("true, no CRM", False), "learned-crm": ("learned, CRM", True)}


def config_of(args) -> DQNConfig:
    """``DQNConfig``'s defaults, but the settings given on the command line."""
    given = {
        "hidden": None if args.hidden is None else tuple(h for h in args.hidden if h > 0),
        "gamma": args.gamma,
        "explore": args.explore,
        "learning_rate": args.lr,
        "final_learning_rate": args.final_lr,
        "batch_size": args.batch,
        "train_freq": args.train_freq,
        "gradient_steps": args.gradient_steps,
        "target_update_interval": args.target_update,
        "buffer_size": args.buffer,
        "n_steps": args.n_steps,
    }
    return DQNConfig(**{k: v for k, v in given.items() if v is not None})


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--world", choices=("office", "craft"), default="office")
    ap.add_argument("--tasks", nargs="+", default=["coffee", "patrol"])
    ap.add_argument("--arms", nargs="+", choices=tuple(ARMS), default=list(ARMS))
    ap.add_argument("--steps", type=int, default=40_000, help="budget of a run (environment steps)")
    ap.add_argument("--every", type=int, default=500)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--first-seed", type=int, default=0, help="seeds first-seed, first-seed + 1, …")
    ap.add_argument("--stop", type=float, default=0.9, help="end a run at this success rate (0: never)")
    ap.add_argument("--horizon", type=int, default=None, help="steps of an episode (Craft; Office: 100)")
    ap.add_argument("--hidden", type=int, nargs="*", default=None, help="hidden units per layer (0 or none: linear)")
    ap.add_argument("--gamma", type=float, default=None)
    ap.add_argument("--explore", type=int, default=None, help="steps of ε falling from 1 to 0.1")
    ap.add_argument("--lr", type=float, default=None, help="learning rate (at the start)")
    ap.add_argument("--final-lr", type=float, default=None, help="learning rate at the end of the budget")
    ap.add_argument("--batch", type=int, default=None)
    ap.add_argument("--train-freq", type=int, default=None)
    ap.add_argument("--gradient-steps", type=int, default=None)
    ap.add_argument("--target-update", type=int, default=None)
    ap.add_argument("--buffer", type=int, default=None, help="replay buffer size (experiences)")
    ap.add_argument("--n-steps", type=int, default=None, help="n-step returns")
    ap.add_argument("--episodes", type=int, default=10_000)
    ap.add_argument("--length", type=int, default=40, help="steps of a recorded episode (learning back)")
    ap.add_argument("--epsilon", type=float, default=0.1)
    ap.add_argument("--no-learn", action="store_true", help="skip learning back and the learned machine")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    import torch

    torch.set_num_threads(1)
    config = config_of(args)
    print(config, flush=True)
    world = World.office() if args.world == "office" else World.craft(args.horizon or 200)
    doc = dsl.load(ROOT / "models" / f"{args.world}.rm")
    rows, learned_rows = [], []
    for name in args.tasks:
        task = doc.tasks[name]
        truth, labels = task.machine, StateLabels.of(task.mdp)
        reference = bare_rate(truth, labels, world)
        runs: dict[str, list] = {}
        at_start: dict[str, list] = {}

        def arm(
            label, machine, use_crm, task_name=name, labels=labels, truth=truth, runs=runs, at_start=at_start, task=task
        ):
            """Train ``--seeds`` runs; the model of the first seed."""
            runs[label], at_start[label], first = [], [], None
            fixed = GreedyRollouts.of(task.mdp, machine, truth, world.horizon)  # from the task's own start(s)
            for seed in range(args.first_seed, args.first_seed + args.seeds):
                curve, model = train_dqn(
                    machine,
                    truth,
                    labels,
                    use_crm=use_crm,
                    seed=seed,
                    steps=args.steps,
                    every=args.every,
                    config=config,
                    stop=args.stop or None,
                    world=world,
                    log=lambda s, r, lab=label, seed=seed: print(
                        f"  {task_name} {lab} seed={seed} {s}: {r:.3f}", flush=True
                    ),
                )
                runs[label].append(curve)
                at_start[label].append(fixed.rate(q_table(model)) if args.world == "craft" else None)
                print(f"{task_name} {label} seed={seed}: {curve.reached()} steps, {curve.seconds:.0f} s", flush=True)
                first = model if seed == args.first_seed else first
            return first

        learned = None
        for key in args.arms:
            label, use_crm = ARMS[key]
            if key == "learned-crm":  # after the true machine's CRM agent, learned back from its seed 0
                if learned is not None:
                    arm(label, reward_like(learned, truth), True)
                continue
            model = arm(label, truth, use_crm)
            if key == "true-crm" and not args.no_learn:
                row, learned, notes = learn_back(
                    task,
                    model,
                    episodes=args.episodes,
                    epsilon=args.epsilon,
                    alpha=0.05,
                    seed=0,
                    mdp=world.mdp,
                    length=args.length,
                )
                learned_rows.append({"task": name, **row})
                print(learned_rows[-1], *notes, sep="\n", flush=True)
        for label, curves in runs.items():
            med = median_steps(curves)
            starts = [x for x in at_start[label] if x is not None]
            rows.append(
                {
                    "task": name,
                    "agent": label,
                    "median steps to 90 %": f">{args.steps}" if med is None else med,
                    "per seed": " ".join(str(c.reached() or f">{args.steps}") for c in curves),
                    "final success": " ".join(f"{c.success[-1]:.2f}" for c in curves),
                    "from the task's start": " ".join(f"{x:.0f}" for x in starts) if starts else "-",
                    "train s (median)": f"{statistics.median(c.seconds for c in curves):.0f}",
                    "bare product steps/s": f"{reference:.0f}",
                }
            )
    print(render(rows, args.markdown))
    if learned_rows:
        print()
        for r in learned_rows:
            r["passive s"], r["active s"] = f"{r['passive s']:.1f}", f"{r['active s']:.1f}"
        print(render(learned_rows, args.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
