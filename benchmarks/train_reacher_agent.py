"""Train the paper's reacher agent (section 6.3): PPO (Stable-Baselines3) on the product of
the Reacher-v5 arm with the true machine b → y → r, on 2 CPU cores.

The environment is Gymnasium's ``Reacher-v5`` (MuJoCo) with the paper's 25 discrete actions
(torque levels ``rmtk.envs.reacher.TORQUES`` per joint, action ``5·i + j``), episodes of
``rmtk.envs.reacher.HORIZON`` steps and Reacher-v5's own reward dropped; the task is the true
machine over ``reacher_labels()`` (the target disc the fingertip is in), paying 1 for each of
its three steps, its last node terminal. The agent observes the product (``observation="flat"``:
Reacher-v5's 10 numbers with the node one-hot), so ``rmtk.rl.sb3_agent`` reads its exact
softmax and ``rmtk.rl.AgentExpert`` can be asked about it (continuous observations: give
``observe=`` the cell centres, as ``rmtk.gym.ReacherExpert`` does).

Every ``--every`` steps the greedy policy plays ``--episodes`` seeded episodes; the share that
completes b → y → r is printed with the elapsed CPU time. The model is saved to ``--output``
(not overwritten unless ``--force``) with a JSON file beside it recording the command, seed,
steps, success rate and CPU minutes. Targets (the issue): ≥ 90 % of episodes complete the task;
training ≤ 60 CPU minutes.

    PYTHONPATH=. python benchmarks/train_reacher_agent.py --steps 2000000 --seed 0 --output reacher_ppo.zip

Needs ``pip install 'rmtk[rl,reacher]'`` (Stable-Baselines3 with torch, gymnasium[mujoco]).
Status: written, not yet run to completion (this checkout's machine has no MuJoCo); the
hyper-parameters are a starting point, not a measured recipe.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's rmtk, whatever is installed

import numpy as np


def reward_machine():
    """The true machine b → y → r, paying 1 on each of its three steps."""
    from rmtk.envs.reacher import true_machine

    m = true_machine()
    reward = np.zeros(m.delta_r.shape)
    for u, letter in (("u0", "b"), ("u1", "y"), ("u2", "r")):
        reward[m.node_index(u), m.letter_index(letter)] = 1.0
    return m.with_rewards(reward)


def make_env(seed: int):
    """Reacher-v5 with 25 discrete torque actions, no reward of its own, the product with the machine."""
    import gymnasium
    from gymnasium import spaces

    from rmtk.envs.reacher import HORIZON, TORQUES
    from rmtk.gym import RewardMachineEnv, reacher_labels

    class DiscreteTorques(gymnasium.ActionWrapper):
        def __init__(self, env):
            super().__init__(env)
            self.action_space = spaces.Discrete(len(TORQUES) ** 2)

        def action(self, action):
            a = int(action)
            return np.array([TORQUES[a // len(TORQUES)], TORQUES[a % len(TORQUES)]], dtype=np.float32)

    arm = DiscreteTorques(gymnasium.make("Reacher-v5", max_episode_steps=HORIZON))
    env = RewardMachineEnv(arm, reward_machine(), reacher_labels(), observation="flat", terminal=["u3"])
    env.reset(seed=seed)
    return env


def success_rate(model, episodes: int, seed: int) -> float:
    """Share of greedy episodes that complete b → y → r."""
    env, done = make_env(seed), 0
    for e in range(episodes):
        obs, _ = env.reset(seed=seed + e)
        while True:
            action, _ = model.predict(obs, deterministic=True)
            obs, _, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                done += int(info["rm_node"] == env.machine.node_index("u3"))
                break
    return done / episodes


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=2_000_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--envs", type=int, default=8, help="environment copies (SubprocVecEnv over 2 cores)")
    ap.add_argument("--every", type=int, default=100_000)
    ap.add_argument("--episodes", type=int, default=50)
    ap.add_argument("--output", type=Path, default=Path("reacher_ppo.zip"))
    ap.add_argument("--force", action="store_true")
    args = ap.parse_args()
    if args.output.exists() and not args.force:
        print(f"{args.output} exists; --force to overwrite", file=sys.stderr)
        return 1
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import SubprocVecEnv

    torch.set_num_threads(1)
    envs = make_vec_env(lambda: make_env(args.seed), n_envs=args.envs, seed=args.seed, vec_env_cls=SubprocVecEnv)
    t0 = time.process_time()
    log: list[tuple[int, float, float]] = []

    class Report(BaseCallback):
        def _on_step(self) -> bool:
            if self.num_timesteps // args.every > len(log):
                rate = success_rate(self.model, args.episodes, 10_000)
                log.append((self.num_timesteps, rate, (time.process_time() - t0) / 60))
                print(f"{self.num_timesteps} steps: success {rate:.2f}, {log[-1][2]:.1f} CPU min", flush=True)
            return True

    model = PPO(
        "MlpPolicy",
        envs,
        n_steps=1024,
        batch_size=1024,
        n_epochs=10,
        gamma=0.99,
        gae_lambda=0.95,
        learning_rate=3e-4,
        ent_coef=0.01,
        policy_kwargs={"net_arch": [64, 64]},
        seed=args.seed,
        device="cpu",
    )
    model.learn(args.steps, callback=Report())
    rate = success_rate(model, 200, 20_000)
    model.save(args.output)
    record = {
        "command": " ".join(sys.argv),
        "seed": args.seed,
        "steps": args.steps,
        "success (200 greedy episodes)": rate,
        "cpu minutes (this process)": (time.process_time() - t0) / 60,
        "curve": log,
    }
    args.output.with_suffix(".json").write_text(json.dumps(record, indent=2), encoding="utf-8")
    print(json.dumps(record))
    return 0


if __name__ == "__main__":
    sys.exit(main())
