"""
Tutorial 10 — learn the reward machine while a deep RL agent trains
====================================================================

Goal: a Gymnasium environment whose reward is not Markovian (it pays for visiting three cells
in order), a labeler that names the cells, no machine and no expert. We train a Stable-Baselines3
DQN with :class:`rmtk.rl.OnlineLearner`, which learns the reward machine from the rewards while
the agent trains (counterexample episodes, inference, the new machine swapped in without
starting over), and compare it with the agent's own ε-greedy exploration and with a DQN given
the true machine. Then we save the run, resume it, and read what the final machine says.

Run it with ``python tutorials/10_online.py [OUTPUT_DIR]``; the figure ``online.png``, the machine
``cliff.rm`` and the run's archive ``cliff_online.zip`` go to OUTPUT_DIR (default: a fresh
temporary directory). Needs ``pip install '.[rl]'`` (Stable-Baselines3, with torch). It trains
three agents for 4,000 steps each: about half a CPU minute.
"""

import atexit
import sys
import tempfile
from pathlib import Path

import gymnasium
import torch
from matplotlib.figure import Figure
from stable_baselines3 import DQN
from stable_baselines3.common.callbacks import BaseCallback

from rmtk import dsl
from rmtk.gym import RewardMachineEnv, tabular_mdp
from rmtk.rl import GreedyRollouts, OnlineLearner, crm, q_table
from rmtk.rl.online import AgentExploration, against_truth
from rmtk.rl.online.tasks import cliff_machine


def output_dir() -> Path:
    """The first command-line argument, else a temporary directory removed at exit."""
    if len(sys.argv) > 1:
        out = Path(sys.argv[1])
        out.mkdir(parents=True, exist_ok=True)
        print(f"output directory: {out}")
        return out
    temporary = tempfile.TemporaryDirectory(prefix="rmtk-tutorial-10-")
    atexit.register(temporary.cleanup)
    print("output directory: a temporary one, removed at exit (give one as the first argument)")
    return Path(temporary.name)


OUT = output_dir()
torch.set_num_threads(1)  # small networks: one thread is fastest

# %% 1. Your environment and your labeler
# CliffWalking (4 x 12 cells; the cliff sends the walker back to the start, the goal cell ends
# the episode). We make it pay 1 for visiting a (row 0, column 1), then b (row 0, column 10),
# then c (row 2, column 5), and end the episode there: a reward that depends on the past.
CELLS = {1: "a", 10: "b", 29: "c", 47: "g"}  # state index row * 12 + column; g: the goal cell


class Patrol(gymnasium.Wrapper):
    """CliffWalking paying 1 for a, then b, then c (its own -1 per step replaced)."""

    def reset(self, **kwargs):
        self.stage = 0
        return self.env.reset(**kwargs)

    def step(self, action):
        obs, _, terminated, truncated, info = self.env.step(action)
        mark, reward = CELLS.get(int(obs)), 0.0
        if mark == "abc"[self.stage]:
            self.stage += 1
            reward = 1.0 if self.stage == 3 else 0.0
        return obs, reward, terminated or self.stage == 3, truncated, info


def labeler(obs, info):
    """The event of an observation: a marked cell's letter, else o."""
    return CELLS.get(int(obs), "o")


def patrol():
    return Patrol(gymnasium.make("CliffWalking-v1", max_episode_steps=100))


# %% 2. How we measure an agent
# CliffWalking is deterministic and starts in one cell: one greedy episode is the policy's whole
# behaviour. GreedyRollouts plays it on the environment's own table (tabular_mdp), the agent's
# node driven by the machine it uses, and says whether the *true* machine pays it. The online
# agent observes its node in a slot of max_nodes: we read the slots of its current hypothesis.
MDP = tabular_mdp(gymnasium.make("CliffWalking-v1"), labeler, propositions="a b c g o")
TRUTH = cliff_machine()  # for measuring only: the learner never sees it
STEPS, EVERY = 4_000, 250


def greedy_success(model, machine, slots):
    q = q_table(model).reshape(MDP.n_states, slots, -1)[:, : machine.n_nodes].reshape(-1, 4)
    return GreedyRollouts.of(MDP, machine, TRUTH, 100).rate(q)


# %% 3. Learn the machine while DQN trains
# The default exploration lets a subgoal walker act in half of the episodes (all of them while
# the hypothesis pays nothing): it walks to propositions and to the hypothesis' unexercised
# (node, letter) pairs, by the paths it has seen. ``evaluate`` is called every EVERY steps.
def online(exploration=None, seed=0):
    learner = OnlineLearner(patrol(), labeler, DQN, propositions="a b c g o", seed=seed, exploration=exploration)
    learner.learn(
        STEPS,
        evaluate=lambda model: greedy_success(model, learner.machine, learner.env.max_nodes),
        evaluate_every=EVERY,
    )
    return learner


learner = online()
for h in learner.hypotheses:
    print(h.line(learner.env.loop.propositions))
print(f"final machine: {learner.final}")
print(dsl.dumps(learner.machine))
print("against the truth:", against_truth(learner.machine, TRUTH, learner.traces))
dsl.dump(learner.machine, OUT / "cliff.rm", overwrite=True)

# %% 4. The agent's own exploration, and the true machine
# With AgentExploration the agent explores by itself (DQN's ε-greedy): it seldom completes the
# patrol, so its hypothesis rarely learns anything to pay. DQN given the true machine, with
# counterfactual experiences of every node (CRM), is the reference.
eps = online(AgentExploration())
print(f"ε-greedy exploration: {eps.final}")


class Measure(BaseCallback):
    def __init__(self):
        super().__init__()
        self.curve = []

    def _on_step(self):
        if self.num_timesteps % EVERY == 0:
            self.curve.append((self.num_timesteps, greedy_success(self.model, TRUTH, TRUTH.n_nodes)))
        return True


env = RewardMachineEnv(gymnasium.make("CliffWalking-v1", max_episode_steps=100), TRUTH, labeler, observation="flat")
measure = Measure()
true_agent = DQN(  # the online learner's default settings (docs/benchmarks/deep-rl.md)
    "MlpPolicy",
    env,
    seed=0,
    device="cpu",
    policy_kwargs={"net_arch": [64]},
    learning_rate=1e-3,
    buffer_size=50_000,
    learning_starts=500,
    batch_size=256,
    gamma=0.9,
    train_freq=4,
    target_update_interval=25,
    exploration_fraction=3_000 / STEPS,
    exploration_final_eps=0.1,
    **crm(env),
)
true_agent.learn(STEPS, callback=measure)


def reached(curve):
    hit = [n for n, ok in curve if ok >= 0.9]
    return f"at {hit[0]} steps" if hit else f"not within {STEPS} steps"


CURVES = {"online, subgoals": learner.curve, "online, ε-greedy": eps.curve, "true machine, CRM": measure.curve}
for name, curve in CURVES.items():
    print(f"{name:17s} greedy success {reached(curve)}")

# %% 5. Save, resume, and go on
# One archive holds the agent, the machine, its history, the kept traces and the replay buffer;
# it is written whole or not at all. Ctrl-C during learn() saves it too, flagged.
learner.save(OUT / "cliff_online.zip", overwrite=True)
again = OnlineLearner.resume(OUT / "cliff_online.zip", patrol(), labeler, DQN, propositions="a b c g o", seed=0)
again.learn(500)
same = again.machine == learner.machine
print(f"resumed: {again.steps} steps, {len(again.hypotheses)} hypotheses, the same machine: {same}")

# %% 6. The figure: success against steps, the swaps marked
fig = Figure(figsize=(6.5, 4), layout="constrained")
ax = fig.subplots()
for (name, curve), color in zip(CURVES.items(), ("C0", "C3", "C2")):
    ax.plot([n for n, _ in curve], [ok for _, ok in curve], color=color, label=name)
for h in learner.hypotheses[1:]:
    ax.plot([h.step, h.step], [-0.02, 0.05], color="C0", lw=1)
ax.axhline(0.9, color="grey", lw=0.5)
ax.set_xlabel("environment steps (ticks: the online agent's swaps)")
ax.set_ylabel("greedy success from the start")
ax.legend(loc="center right")
ax.set_title("CliffWalking patrol a, b, c: DQN (one seed)")
fig.savefig(OUT / "online.png", dpi=120)
print(f"wrote online.png ({(OUT / 'online.png').stat().st_size:,} bytes)")
