"""
Tutorial 7 — learn a reward machine for your Gymnasium environment, then train with it
======================================================================================

Goal: bring your own environment. We write a small Gymnasium environment here (a shuttle on
a line, with a continuous position), watch a scripted expert that fetches parcels at the
left end and delivers them at the right end, and learn the machine behind its behaviour
from the recorded episodes alone — no transition model, no rewards. Then we use the learned
machine for what reward machines are for: training an agent, with Q-learning and
counterfactual experiences (CRM) through ``rmtk.gym.RewardMachineEnv``.

What you provide: the environment, a *labeler* (observation → one proposition), a
*discretiser* (observation → state index; here ``Bins``), and a policy to record.

Run it with ``python tutorials/07_gymnasium.py [OUTPUT_DIR]`` (it writes nothing; the
argument is accepted like in the other tutorials). Needs ``pip install '.[gym]'``.
"""

import sys
from pathlib import Path

import gymnasium
import numpy as np
from gymnasium import spaces

from rmtk import ConfidenceMiner, EmpiricalPTP, Learner, dsl, isomorphic
from rmtk.gym import Bins, NodePolicy, QLearning, RewardMachineEnv, collect, greedy_episode
from rmtk.io.draw import draw_machine
from rmtk.sat.encoders import SimplestEncoder

OUT = Path(sys.argv[1]) if len(sys.argv) > 1 else None  # accepted, not used: nothing is written


# %% 1. Your environment
# A shuttle on the line [0, 10]: actions left, stay, right move it by 0.8 (plus a little
# noise); episodes last 60 steps. The observation is the position, a Box. The environment
# knows nothing of parcels: the task will be a reward machine over labels.
class Shuttle(gymnasium.Env):
    def __init__(self):
        self.observation_space = spaces.Box(0.0, 10.0, (1,), np.float64)
        self.action_space = spaces.Discrete(3)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.x, self.t = self.np_random.uniform(0.0, 10.0), 0
        return np.array([self.x]), {}

    def step(self, action):
        self.x = float(np.clip(self.x + 0.8 * (int(action) - 1) + self.np_random.normal(0, 0.1), 0.0, 10.0))
        self.t += 1
        return np.array([self.x]), 0.0, False, self.t >= 60, {}


# %% 2. A labeler and a discretiser
# Every observation carries exactly one proposition: p at the pick-up (x < 1), d at the
# drop-off (x > 9), o in between. The discretiser cuts [0, 10] into 20 bins: the states of
# the prefix tree policy.
def labeler(obs, info):
    return "p" if obs[0] < 1.0 else "d" if obs[0] > 9.0 else "o"


PROPOSITIONS = ["d", "o", "p"]
bins = Bins(0.0, 10.0, 20)
print("bins:", bins.n_states, "states; x = 4.3 is state", bins(np.array([4.3])))

# %% 3. The expert and its episodes
# The expert fetches a parcel (goes left until p), delivers it (goes right until d), and
# starts over; with probability 0.1 it acts at random. Its memory is the node of a machine,
# which NodePolicy tracks from the labels for us. The machine is the expert's secret: the
# learner will only see what it does.
secret = dsl.loads("""
machine shuttle {
  alphabet d o p
  initial fetch
  fetch -> deliver on p
  deliver -> fetch on d reward 1
}""").machines["shuttle"]


def choose(states, nodes, rng):
    go = np.where(nodes == secret.node_index("fetch"), 0, 2)  # left while fetching, right while delivering
    return np.where(rng.random(len(go)) < 0.1, rng.integers(0, 3, len(go)), go)


recording = collect(Shuttle(), NodePolicy(secret, choose), labeler, bins, 500, seed=0, propositions=PROPOSITIONS)
print(recording.summary())

# %% 4. Learn the machine from the episodes
# The recording is an empirical prefix tree policy's counts: EmpiricalPTP takes it as it
# is. There is no transition model, so we fit the recording's `space` (states, actions,
# propositions) and ask for no rewards. SimplestEncoder keeps, among the smallest machines
# that separate every negative example, those where the fewest letters move a node.
result = Learner(
    EmpiricalPTP(recording), miner=ConfidenceMiner(0.01), encoder=SimplestEncoder(), irl=None, max_nodes=3
).fit(recording.space)
learned = result.machines[0]
print(f"{len(result.negatives)} negative examples; {len(result.machines)} machine(s) with {result.n_nodes} nodes")
print(dsl.dumps(learned))
print(
    "the expert's machine, up to renaming:",
    isomorphic(learned, secret.with_alphabet_order(learned.alphabet), rewards=False),
)

# %% 5. Rewards for the learned machine
# Without a model, the data say what the task's steps are, not what they are worth; we say
# it: a delivery (the letter d moving a node) pays 1.
d = learned.letter_index("d")
rewards = np.zeros(learned.delta_r.shape)
rewards[learned.delta_u[:, d] != np.arange(learned.n_nodes), d] = 1.0
learned = learned.with_rewards(rewards)
picture = draw_machine(learned, title="learned from the recorded episodes, delivery pays 1")  # a Figure


# %% 6. Train with the learned machine
# RewardMachineEnv is the product of the environment with the machine: the observation
# carries the node, the reward is the machine's. Q-learning is tabular, so we give it the
# bins (Gymnasium's TransformObservation) and the flat product observation bin·n + node; the
# labeler then reads a bin (its centre: the bins' edges fall on the labels' edges). CRM:
# every step also teaches the Q-values of the other node.
def product(machine):
    binned = gymnasium.wrappers.TransformObservation(Shuttle(), bins, spaces.Discrete(bins.n_states))
    return RewardMachineEnv(binned, machine, lambda b, info: labeler(bins.centres([b])[0], info), observation="flat")


env, check = product(learned), product(learned)
trained = QLearning(alpha=0.2, q_init=1.0).train(env, 30_000, seed=0)  # a small rate: the moves are noisy
delivered = [sum(greedy_episode(check, trained.q, seed=k, max_steps=60).rewards) for k in range(20)]
print(f"trained agent: {np.mean(delivered):.1f} deliveries per 60-step episode (20 episodes)")
rng = np.random.default_rng(0)
random_runs = []
for k in range(20):
    check.reset(seed=k)
    random_runs.append(sum(check.step(int(rng.integers(3)))[1] for _ in range(60)))
print(f"random actions: {np.mean(random_runs):.1f} deliveries per episode")
print("the learned machine makes the agent deliver:", np.mean(delivered) > 2 + np.mean(random_runs))
