"""Train the paper's reacher agent (section 6.3): PPO (Stable-Baselines3) on the product of
the reacher arm with the true machine b → y → r, in one process on one CPU thread.

The arm is rmtk's batched Reacher-v5 (:class:`rmtk.gym.reacher.ReacherVectorEnv`: the paper's
25 discrete torque actions, its randomised initial joint angles and velocities, episodes of
160 steps, Reacher-v5's own reward dropped). The task is the true machine over
``reacher_labels()`` (the target disc the fingertip is in), paying 1 on each of its three
steps (the machine's own reward, no shaping); u3 is not terminal: after r nothing pays, and
the entropy bonus leaves the agent's u3 policy spread out. The agent observes the product
(``observation="flat"``: Reacher-v5's 10 numbers *at the centre of the arm's cell* of
:func:`rmtk.gym.reacher.reacher_bins`, with the node one-hot), so it is a function of (cell,
node), as the paper samples its PPO policy at cell centres: ``rmtk reproduce reacher --set
expert=agent`` records it with :func:`rmtk.gym.collect` and asks it through
:class:`rmtk.rl.AgentExpert` with ``observe=cell_observations``, exactly the policy trained.

Every ``--every`` steps the greedy policy plays ``--episodes`` seeded episodes (one batch of
arms); the share that completes b → y → r is printed with the CPU time of this process so
far. At the end, 1000 seeded episodes (seeds apart from training's) measure the greedy and
the sampled policy. The model is saved to ``--output`` (not overwritten unless ``--force``)
with a JSON file beside it (command, seed, steps, success rates, CPU minutes, versions, the
curve). Targets (docs/benchmarks/10-reacher.md): ≥ 90 % of episodes complete the task;
training ≤ 60 CPU minutes.

    PYTHONPATH=. nice -n 5 python benchmarks/train_reacher_agent.py --steps 3000000 --seed 0 \\
        --output rmtk/envs/data/reacher_ppo.zip

Needs ``pip install '.[rl,reacher]'`` (Stable-Baselines3 with torch, gymnasium[mujoco]).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:1] = [str(ROOT)]  # this checkout's rmtk; not benchmarks/, whose gym.py would shadow SB3's gym probe

import numpy as np

#: Episodes of the final measurement, and the seed of their arms (training's are drawn from --seed).
FINAL_EPISODES, FINAL_SEED = 1000, 20_000


def reward_machine():
    """The true machine b → y → r, paying 1 on each of its three steps."""
    from rmtk.envs.reacher import true_machine

    m = true_machine()
    reward = np.zeros(m.delta_r.shape)
    for u, letter in (("u0", "b"), ("u1", "y"), ("u2", "r")):
        reward[m.node_index(u), m.letter_index(letter)] = 1.0
    return m.with_rewards(reward)


def make_vec_env(n: int, seed: int):
    """An SB3 vector environment of ``n`` arms stepped together, observing the product."""
    from gymnasium import spaces
    from stable_baselines3.common.vec_env import VecEnv

    from rmtk.gym.reacher import ReacherVectorEnv, cell_observations, reacher_bins, reacher_labels
    from rmtk.gym.wrapper import product_space

    machine, bins, labels = reward_machine(), reacher_bins(), reacher_labels()
    delta_u, delta_r = machine.delta_u, machine.delta_r
    letters = np.array([machine.letter_index(p) for p in labels.propositions])

    class ProductArms(VecEnv):
        render_mode = None

        def __init__(self):
            self.arms = ReacherVectorEnv(n)
            inner = self.arms.single_observation_space
            super().__init__(n, product_space(inner, machine.n_nodes, "flat"), spaces.Discrete(25))
            self.rng = np.random.default_rng(seed)
            self.nodes = np.zeros(n, dtype=np.int64)
            self.actions = np.zeros(n, dtype=np.int64)

        def observe(self, obs):
            cells, _ = bins.batch(obs)
            flat = cell_observations(cells, bins)
            onehot = np.eye(machine.n_nodes)[self.nodes]
            return np.concatenate([flat, onehot], axis=1)

        def _start(self):
            obs, _ = self.arms.reset(seed=int(self.rng.integers(2**31)))
            self.nodes = delta_u[np.full(n, machine.initial), letters[labels.batch(obs)]]  # the reset's label moves it
            return obs

        def reset(self):
            return self.observe(self._start())

        def step_async(self, actions):
            self.actions = np.asarray(actions, dtype=np.int64).reshape(n)

        def step_wait(self):
            obs, _, _, truncated, _ = self.arms.step(self.actions)
            k = letters[labels.batch(obs)]
            reward = delta_r[self.nodes, k].astype(np.float32)
            self.nodes = delta_u[self.nodes, k]
            out = self.observe(obs)
            infos = [{} for _ in range(n)]
            dones = np.asarray(truncated, dtype=bool)
            if dones.any():  # every arm's episode ends at the same step (the horizon)
                for i in range(n):
                    infos[i] = {"terminal_observation": out[i], "TimeLimit.truncated": True}
                    infos[i]["success"] = bool(self.nodes[i] == 3)
                out = self.observe(self._start())
            return out, reward, dones, infos

        def close(self):
            pass

        def get_attr(self, attr_name, indices=None):
            return [getattr(self, attr_name)] * n

        def set_attr(self, attr_name, value, indices=None):
            setattr(self, attr_name, value)

        def env_method(self, method_name, *args, indices=None, **kwargs):
            return [getattr(self, method_name)(*args, **kwargs)] * n

        def env_is_wrapped(self, wrapper_class, indices=None):
            return [False] * n

        def seed(self, seed=None):
            self.rng = np.random.default_rng(seed)
            return [seed] * n

    return ProductArms()


class Scripted:
    """The scripted controller (``rmtk.envs.reacher.Expert``) at the same cell-centre
    observations, ``predict``-like: the same-run reference of the agent's success rate."""

    def __init__(self, epsilon: float, seed: int = 0):
        from rmtk.envs.reacher import Expert
        from rmtk.gym.reacher import joint_state

        self.expert, self.joint_state = Expert(epsilon=epsilon), joint_state
        self.rng = np.random.default_rng(seed)

    def predict(self, obs, deterministic: bool = True):
        joints = self.joint_state(obs[:, :10])
        greedy = self.expert.greedy_from(joints[:, :2], joints[:, 2:], obs[:, 10:].argmax(axis=1))
        if deterministic:
            return greedy, None
        explore = self.rng.random(len(greedy)) < self.expert.epsilon
        return np.where(explore, self.rng.integers(0, 25, len(greedy)), greedy), None


def success_rate(model, episodes: int, seed: int, deterministic: bool = True) -> float:
    """Share of ``episodes`` seeded episodes (one batch of arms) that complete b → y → r."""
    env = make_vec_env(episodes, seed)
    obs, done = env.reset(), np.zeros(episodes, dtype=bool)
    for _ in range(env.arms.horizon):
        action, _ = model.predict(obs, deterministic=deterministic)
        env.step_async(action)
        obs, _, dones, infos = env.step_wait()
        done |= env.nodes == 3 if not dones.any() else np.array([i["success"] for i in infos])
    return float(done.mean())


def evaluate(path: Path) -> int:
    """The agent in ``path`` and the scripted controller (greedy, and ε = 0.1 as rmtk's
    scripted expert records) on the same ``FINAL_EPISODES`` seeded episodes."""
    import torch
    from stable_baselines3 import PPO

    torch.set_num_threads(1)
    rows = [
        ("agent, greedy", PPO.load(path, device="cpu"), True),
        ("agent, sampled", PPO.load(path, device="cpu"), False),
        ("scripted, greedy", Scripted(0.1), True),
        ("scripted, epsilon 0.1", Scripted(0.1), False),
    ]
    for name, model, deterministic in rows:
        t0 = time.process_time()
        rate = success_rate(model, FINAL_EPISODES, FINAL_SEED, deterministic)
        cpu = time.process_time() - t0
        print(f"{name}: {rate:.3f} of {FINAL_EPISODES} episodes (seed {FINAL_SEED}), {cpu:.1f} CPU s")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=3_000_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--envs", type=int, default=32, help="arms stepped together (one process)")
    ap.add_argument("--n-steps", type=int, default=160, help="PPO rollout length per arm")
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--ent-coef", type=float, default=0.01)
    ap.add_argument("--gamma", type=float, default=0.99)
    ap.add_argument("--net", default="64,64", help="hidden layers of the policy and value networks")
    ap.add_argument("--every", type=int, default=100_000)
    ap.add_argument("--episodes", type=int, default=200)
    ap.add_argument("--output", type=Path, default=Path("reacher_ppo.zip"))
    ap.add_argument("--force", action="store_true")
    ap.add_argument(
        "--evaluate",
        type=Path,
        metavar="ZIP",
        help="train nothing: measure this agent and the scripted controller on the final episodes (CPU seconds each)",
    )
    args = ap.parse_args()
    if args.evaluate:
        return evaluate(args.evaluate)
    if args.output.exists() and not args.force:
        print(f"{args.output} exists; --force to overwrite", file=sys.stderr)
        return 1
    import stable_baselines3
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback

    torch.set_num_threads(1)
    t0 = time.process_time()
    envs = make_vec_env(args.envs, args.seed)
    log: list[tuple[int, float, float]] = []

    class Report(BaseCallback):
        def _on_step(self) -> bool:
            if self.num_timesteps // args.every > len(log):
                rate = success_rate(self.model, args.episodes, 10_000)
                log.append((self.num_timesteps, rate, round((time.process_time() - t0) / 60, 2)))
                print(f"{self.num_timesteps} steps: greedy success {rate:.3f}, {log[-1][2]:.1f} CPU min", flush=True)
            return True

    net = [int(x) for x in args.net.split(",")]
    model = PPO(
        "MlpPolicy",
        envs,
        n_steps=args.n_steps,
        batch_size=args.batch,
        n_epochs=args.epochs,
        gamma=args.gamma,
        gae_lambda=0.95,
        learning_rate=args.lr,
        ent_coef=args.ent_coef,
        policy_kwargs={"net_arch": net},
        seed=args.seed,
        device="cpu",
    )
    model.learn(args.steps, callback=Report())
    train_minutes = (time.process_time() - t0) / 60
    greedy = success_rate(model, FINAL_EPISODES, FINAL_SEED)
    sampled = success_rate(model, FINAL_EPISODES, FINAL_SEED, deterministic=False)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    model.save(args.output, exclude=["env", "_last_obs", "_last_original_obs", "ep_info_buffer", "ep_success_buffer"])
    record = {
        "command": "PYTHONPATH=. python " + " ".join(sys.argv),
        "seed": args.seed,
        "steps": int(model.num_timesteps),
        "algorithm": "PPO",
        "hyperparameters": {
            "n_envs": args.envs,
            "n_steps": args.n_steps,
            "batch_size": args.batch,
            "n_epochs": args.epochs,
            "learning_rate": args.lr,
            "ent_coef": args.ent_coef,
            "gamma": args.gamma,
            "gae_lambda": 0.95,
            "net_arch": net,
        },
        "observation": "Reacher-v5 observation at the centre of the cell (rmtk.gym.reacher.cell_observations) "
        "with the node of the true machine one-hot",
        "success_greedy": greedy,
        "success_sampled": sampled,
        "success_episodes": FINAL_EPISODES,
        "success_seed": FINAL_SEED,
        "cpu_minutes_training": round(train_minutes, 2),
        "cpu_minutes_total": round((time.process_time() - t0) / 60, 2),
        "versions": {
            "stable_baselines3": stable_baselines3.__version__,
            "torch": torch.__version__,
            "numpy": np.__version__,
            "python": platform.python_version(),
        },
        "curve (steps, greedy success, CPU minutes)": log,
    }
    args.output.with_suffix(".json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(record, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
