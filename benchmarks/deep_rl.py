"""Benchmark of deep RL with reward machines (rmtk.rl, the extra rmtk[rl]): DQN with and
without counterfactual experiences (CRM) on the Office World's coffee and patrol tasks, and
learning the machine back from the trained agent.

Training: Stable-Baselines3 DQN (same network for every run: an MLP of ``--hidden`` units on
the one-hot flat product observation, Discrete(108 · nodes); same hyper-parameters) on
``RewardMachineEnv(office_env(max_steps=100), machine, labels, observation="flat")`` from the
literature's start cell, for at most ``--steps`` environment steps; every ``--every`` steps the
greedy agent plays ``--episodes`` episodes (seeded) and the *success rate* (episodes ending with
the machine's reward) is measured. Reported per task and variant: the steps to a success rate
≥ 90 %, median over ``--seeds`` seeds (``>steps`` when not reached within the budget), with
the per-seed values, and the training time. CRM uses ``crm(env)``: the replay buffer stores
every live node's experience of each step.

Learning back (``--learn``): the CRM agent of the first seed, ε-greedy (``--epsilon``), is
recorded for 10⁴ episodes of 40 steps from every start state (``collect`` with
:func:`rmtk.rl.agent_policy`, 100 copies stepped together) and the machine learned from the
counts (EmpiricalPTP, ConfidenceMiner 0.05); and actively (:class:`rmtk.rl.AgentExpert`, its
exact ε-greedy distribution, the default exact check). Both are compared with the truth.

Reference in the same run: the same steps of the bare product (a random agent) per second.

    PYTHONPATH=. python benchmarks/deep_rl.py --steps 30000 --seeds 3 --learn
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

from rmtk import ConfidenceMiner, EmpiricalPTP, Learner, dsl, isomorphic
from rmtk.active.loop import ActiveLearner
from rmtk.encoders import SimplestEncoder
from rmtk.gym import Identity, RewardMachineEnv, StateLabels, collect, office_env
from rmtk.gym.mdp_env import MdpVectorEnv
from rmtk.rl import AgentExpert, agent_policy, crm, sb3_agent


def product(task, max_steps: int = 100):
    return RewardMachineEnv(office_env(max_steps=max_steps), task.machine, StateLabels.of(task.mdp), observation="flat")


def success(model, task, episodes: int, seed: int) -> float:
    """Share of greedy episodes that earn the machine's reward."""
    env, won = product(task), 0
    for e in range(episodes):
        obs, _ = env.reset(seed=seed + e)
        for _ in range(100):
            action, _ = model.predict(obs, deterministic=True)
            obs, reward, terminated, truncated, _ = env.step(int(action))
            if reward > 0:
                won += 1
            if terminated or truncated:
                break
    return won / episodes


def train(task, use_crm: bool, seed: int, args):
    """Steps to ≥ 90 % success (``None``: not within the budget), the model, the seconds."""
    from stable_baselines3 import DQN

    env = product(task)
    model = DQN(
        "MlpPolicy",
        env,
        policy_kwargs={"net_arch": [args.hidden]},
        learning_rate=1e-3,
        buffer_size=100_000,
        learning_starts=1000,
        batch_size=64,
        gamma=0.9,
        train_freq=4,
        target_update_interval=500,
        exploration_fraction=0.2,
        exploration_final_eps=0.1,
        seed=seed,
        device="cpu",
        **(crm(env) if use_crm else {}),
    )
    t0, reached = time.perf_counter(), None
    while model.num_timesteps < args.steps:
        model.learn(args.every, reset_num_timesteps=False)
        if success(model, task, args.episodes, 1000 * seed) >= 0.9:
            reached = model.num_timesteps
            break
    return reached, model, time.perf_counter() - t0


def bare_rate(task, steps: int = 20_000) -> float:
    env = product(task)
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    t0 = time.perf_counter()
    for a in rng.integers(4, size=steps).tolist():
        _, _, term, trunc, _ = env.step(a)
        if term or trunc:
            env.reset()
    return steps / (time.perf_counter() - t0)


def learn_back(task, model, epsilon: float) -> dict:
    mdp = task.mdp
    agent = sb3_agent(model, epsilon=epsilon)
    labels = StateLabels.of(mdp)
    vec = MdpVectorEnv(mdp, 100, max_steps=40)
    t0 = time.perf_counter()
    rec = collect(vec, agent_policy(agent, task.machine, labels, env=vec), labels, Identity(), 10_000, seed=0)
    t_rec = time.perf_counter() - t0
    res = Learner(
        EmpiricalPTP(rec), miner=ConfidenceMiner(0.05), encoder=SimplestEncoder(), max_nodes=task.max_nodes, irl=None
    ).fit(rec.space)
    truth = task.machine.with_alphabet_order(mdp.propositions)
    passive = [isomorphic(m, truth, rewards=False) for m in res.machines]
    t1 = time.perf_counter()
    run = ActiveLearner().fit(task, AgentExpert(agent, mdp, task.machine))
    return {
        "record_s": f"{t_rec:.1f}",
        "passive": f"{len(res.machines)} machine(s), {res.n_nodes} nodes, truth among them: {any(passive)}",
        "active": f"{len(run.result.machines)} machine(s), truth: {run.result.isomorphic_to_truth()}, "
        f"draws {run.draws}, evaluations {run.evaluations}, {time.perf_counter() - t1:.1f} s",
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", nargs="+", default=["coffee", "patrol"])
    ap.add_argument("--steps", type=int, default=30_000)
    ap.add_argument("--every", type=int, default=2_000)
    ap.add_argument("--episodes", type=int, default=10)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--epsilon", type=float, default=0.1)
    ap.add_argument("--learn", action="store_true")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    import torch

    torch.set_num_threads(1)
    doc = dsl.load(ROOT / "models" / "office.rm")
    rows, learned = [], []
    for name in args.tasks:
        task = doc.tasks[name]
        first = None
        for use_crm in (False, True):
            reached, secs = [], []
            for seed in range(args.seeds):
                r, model, s = train(task, use_crm, seed, args)
                reached.append(r)
                secs.append(s)
                print(f"{name} crm={use_crm} seed={seed}: {r} steps, {s:.0f} s", flush=True)
                if use_crm and seed == 0:
                    first = model
            finite = [r if r is not None else float("inf") for r in reached]
            med = statistics.median(finite)
            rows.append(
                {
                    "task": name,
                    "CRM": "yes" if use_crm else "no",
                    "median steps to 90 %": f">{args.steps}" if med == float("inf") else int(med),
                    "per seed": " ".join(str(r) if r is not None else f">{args.steps}" for r in reached),
                    "train s (median)": f"{statistics.median(secs):.0f}",
                    "bare product steps/s": f"{bare_rate(task):.0f}",
                }
            )
        if args.learn and first is not None:
            learned.append({"task": name, **learn_back(task, first, args.epsilon)})
    print(render(rows, args.markdown))
    if learned:
        print()
        print(render(learned, args.markdown, frozenset({"passive", "active"})))
    return 0


if __name__ == "__main__":
    sys.exit(main())
