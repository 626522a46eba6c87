"""
Tutorial 9 — learn the reward machine of a deep RL agent, and train a new agent with it
=======================================================================================

Goal: close the loop with an agent nobody here wrote. We train a Stable-Baselines3 DQN on
the Office World's coffee task (fetch a coffee, bring it to the office, never step on a
decoration) with the true reward machine and counterfactual experiences (CRM) in its replay
buffer; learn the machine back from the agent alone — passively from its recorded episodes,
and actively by asking its network for its exact action distribution at chosen histories;
then train fresh agents with the learned machine, the true one and none, and draw their
learning curves in one figure.

Run it with ``python tutorials/09_deep_rl.py [OUTPUT_DIR]``; the figure ``deep_rl.png`` goes
to OUTPUT_DIR (default: a temporary directory, removed at exit). Needs ``pip install '.[rl]'``
(Stable-Baselines3, with torch). It trains four small agents: about a minute on one core.
"""

import atexit
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
from matplotlib.figure import Figure
from stable_baselines3 import DQN
from stable_baselines3.common.callbacks import BaseCallback

from rmtk import ConfidenceMiner, EmpiricalPTP, Learner, dsl, isomorphic
from rmtk.active.loop import ActiveLearner
from rmtk.envs.office import MAP, officeworld
from rmtk.gym import Identity, RewardMachineEnv, StateLabels, collect, office_env
from rmtk.gym.mdp_env import MdpVectorEnv
from rmtk.rl import AgentExpert, GreedyRollouts, agent_policy, crm, hide_node, no_log_folder, q_table, sb3_agent
from rmtk.sat.encoders import SimplestEncoder


def output_dir() -> Path:
    """The first command-line argument, else a temporary directory removed at exit."""
    if len(sys.argv) > 1:
        out = Path(sys.argv[1])
        out.mkdir(parents=True, exist_ok=True)
        print(f"output directory: {out}")
        return out
    temporary = tempfile.TemporaryDirectory(prefix="rmtk-tutorial-09-")
    atexit.register(temporary.cleanup)
    print("output directory: a temporary one, removed at exit (give one as the first argument)")
    return Path(temporary.name)


OUT = output_dir()
torch.set_num_threads(1)  # small networks: one thread is fastest, and leaves the other cores free

# %% 1. The task and the product environment
# models/office.rm holds the Office World and its tasks. RewardMachineEnv is the product of
# the world with the machine: the observation is cell·n + node (flat, Discrete(108·3)), which
# DQN's MlpPolicy one-hot encodes; the reward is the machine's. Episodes last 100 steps and
# start in any cell but a decoration. No machine: the world pays the true machine's reward,
# but the agent sees the cell alone (hide_node).
task = dsl.load_model("office").tasks["coffee"]
truth, labels = task.machine, StateLabels.of(task.mdp)
print(truth)
STARTS = [(r, c) for r, row in enumerate(MAP) for c, mark in enumerate(row.split()) if mark != "n"]


def product(machine, node=True):
    env = RewardMachineEnv(office_env(max_steps=100, start=STARTS), machine, labels, observation="flat")
    return env if node else hide_node(env)


STEPS, EVERY = 8_000, 500
DQN_SETTINGS = dict(
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
    device="cpu",
)


# %% 2. Train with the true machine and CRM
# crm(env) hands DQN a replay buffer that stores, for every step, the experience of every
# node of the machine (what the step would have been from there). We measure the greedy
# policy every EVERY steps: its success rate over the start cells (the world is
# deterministic, so one episode per start cell tells it all; GreedyRollouts plays them
# together on the labeled MDP, from the network's Q-values at every observation).
class Measure(BaseCallback):
    """Every EVERY steps, the success rate of the greedy policy (a callback: one learn call,
    so that the exploration schedule runs over all the steps)."""

    def __init__(self, check):
        super().__init__()
        self.check, self.curve = check, []

    def _on_step(self):
        if self.num_timesteps % EVERY == 0:
            self.curve.append(self.check.rate(q_table(self.model)))
        return True


def train(machine, *, use_crm=True, node=True, seed=0):
    env = product(machine, node)
    measure = Measure(GreedyRollouts.of(officeworld(start=STARTS), machine, truth, 100, node=node))
    model = DQN("MlpPolicy", env, seed=seed, **DQN_SETTINGS, **(crm(env) if use_crm else {}))
    no_log_folder(model).learn(STEPS, callback=measure)
    return model, np.array(measure.curve)


model, expert_curve = train(truth)
steps = np.arange(1, STEPS // EVERY + 1) * EVERY


def reached(curve):
    """The steps at the first evaluation with a success rate of 90 % or more."""
    hit = np.flatnonzero(curve >= 0.9)
    return f"at {steps[hit[0]]} steps" if len(hit) else "not reached"


print(
    f"agent trained with the true machine and CRM: 90% success from {len(STARTS)} cells "
    f"{reached(expert_curve)}; {expert_curve[-1]:.2f} after {STEPS} steps"
)

# %% 3. Learn its machine from its episodes
# sb3_agent reads the DQN as an ε-greedy policy (exact: its Q-values' argmax, ε spread over
# the actions). agent_policy runs it in collect: the true machine drives the agent's node,
# the learner sees only cells, actions and labels. 2,000 episodes of 40 steps from every cell.
agent = sb3_agent(model, epsilon=0.1)
envs = MdpVectorEnv(task.mdp, 100, max_steps=40)
rec = collect(envs, agent_policy(agent, truth, labels, env=envs), labels, Identity(), 2_000, seed=0)
passive = Learner(EmpiricalPTP(rec), miner=ConfidenceMiner(0.05), encoder=SimplestEncoder(), max_nodes=3, irl=None).fit(
    rec.space
)
ordered = truth.with_alphabet_order(task.mdp.propositions)
print(
    f"from {rec.episodes} episodes: {len(passive.machines)} machine(s) with {passive.n_nodes} nodes; "
    f"the truth among them: {any(isomorphic(m, ordered, rewards=False) for m in passive.machines)}"
)

# %% 4. Learn it actively, asking the network
# AgentExpert answers a question (what does the agent do after this history?) with the
# network's exact distribution: one forward pass, no sampled draw. The active loop asks
# until one machine explains every answer, and checks it on the exact product.
run = ActiveLearner().fit(task, AgentExpert(agent, task.mdp, truth))
learned = run.result.machines[0]
print(f"actively: {len(run.result.machines)} machine(s), draws {run.draws}, forward passes {run.evaluations}")
print("the learned machine is the truth, up to renaming:", isomorphic(learned, ordered, rewards=False))

# %% 5. Put the task's reward on the learned machine
# The active loop learns the structure (its rewards are 0). We pay 1 for reaching the office
# with the coffee: the transition on g from the node reached after f.
learned = learned.with_alphabet_order(truth.alphabet)
reward = np.zeros(learned.delta_r.shape)
reward[learned.step(learned.initial, "f"), learned.letter_index("g")] = 1.0
learned = learned.with_rewards(reward)

# %% 6. Train fresh agents: the learned machine, the true one without CRM, no machine
# Same seed and settings as the first agent, whose curve is the true machine's with CRM.
curves = {
    "true, CRM": expert_curve,
    "learned, CRM": train(learned)[1],
    "true, no CRM": train(truth, use_crm=False)[1],
    "no machine": train(truth, use_crm=False, node=False)[1],
}
for name, curve in curves.items():
    print(f"{name:13s} 90% success {reached(curve)}; {curve[-1]:.2f} after {STEPS} steps")

# %% 7. The figure
fig = Figure(figsize=(6.5, 4), layout="constrained")
ax = fig.subplots()
for (name, curve), style in zip(curves.items(), ("-", "--", "-", ":")):
    ax.plot(steps, curve, style, label=name)
ax.axhline(0.9, color="grey", lw=0.5)
ax.set_xlabel("environment steps")
ax.set_ylabel("success rate of the greedy policy")
ax.legend(loc="lower right")
ax.set_title("Office World coffee: DQN (one seed)")
fig.savefig(OUT / "deep_rl.png", dpi=120)
print(f"wrote deep_rl.png ({(OUT / 'deep_rl.png').stat().st_size:,} bytes)")
