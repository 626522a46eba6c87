"""
Tutorial 8 — a Gymnasium toy-text environment's model, exact learning, rewards, and RL
======================================================================================

Goal: take FrozenLake from ``gymnasium.make``, turn its transition model ``env.unwrapped.P``
into a labeled MDP with one call (``rmtk.gym.tabular_mdp``), give it a task (a reward
machine we write: fetch a key, then reach the goal), learn the machine back from the
expert's exact policy at *every* depth, recover its rewards, and use the learned machine in
RL through ``RewardMachineEnv`` over the very ``gymnasium.make`` environment, checked by
Gymnasium's ``check_env``. Last, the same model estimated from recorded episodes alone
(``rmtk.gym.estimate_mdp``), for environments that do not publish ``P``.

Run it with ``python tutorials/08_frozenlake.py [OUTPUT_DIR]`` (it writes nothing; the
argument is accepted like in the other tutorials). Needs ``pip install '.[gym]'``.
"""

import sys
import warnings
from pathlib import Path

import gymnasium
import numpy as np
from gymnasium.utils.env_checker import check_env

from rmtk import ExactPTP, Learner, Task, dsl
from rmtk.gym import (
    Identity,
    RewardMachineEnv,
    StateLabels,
    collect,
    estimate_mdp,
    tabular_mdp,
)
from rmtk.io.draw import draw_machine
from rmtk.product.planning import soft_bellman

OUT = Path(sys.argv[1]) if len(sys.argv) > 1 else None  # accepted, not used: nothing is written


# %% 1. The environment and its labels
# FrozenLake 4x4, slippery: a move goes in the intended direction or one of the two beside
# it, each with probability 1/3; a hole (H) or the goal (G) ends the episode. Every state
# carries one proposition: h on the holes, g at the goal, and we put a key k on the cell
# top right (state 3); the other cells are f. StateLabels maps state indices to them.
def make():
    return gymnasium.make("FrozenLake-v1", is_slippery=True)


env = make()
cells = "".join("".join(row) for row in env.unwrapped.desc.astype(str))
print("map:", " ".join(cells[r * 4 : r * 4 + 4] for r in range(4)))
KEY = 3
names = ["k" if s == KEY else {"H": "h", "G": "g"}.get(c, "f") for s, c in enumerate(cells)]
labeler = StateLabels("f g h k", [["f", "g", "h", "k"].index(n) for n in names])

# %% 2. Its P as a labeled MDP, in one call
# env.unwrapped.P[s][a] lists (probability, next state, reward, terminated). A labeled MDP
# has no episode ends: a state entered by a terminating transition (the holes, the goal)
# becomes absorbing, every action a self-loop. The start distribution is the environment's.
mdp = tabular_mdp(env, labeler, gamma=0.95)
print(mdp.summary())
print("P[14][2] (right, next to the goal):", env.unwrapped.P[14][2])
print("as the labeled MDP:", mdp.successors(14, 2))
print("a hole absorbs:", mdp.successors(5, 0))

# %% 3. A task: fetch the key, then reach the goal
# The machine is the expert's task; its rewards are the expert's motivation. The expert is
# soft-optimal (MaxEnt, λ = 0.1) on the product of the MDP and the machine.
machine = dsl.loads("""
machine key_then_goal {
  alphabet f g h k
  initial search
  search -> carry on k
  carry -> done on g reward 1
}""").machines["key_then_goal"]
task = Task(mdp, machine, lam=0.1, max_nodes=4, name="key_then_goal")

# %% 4. Learn the machine back, exactly, at every depth
# ExactPTP(None): no depth to choose; the learner grows the prefix tree until the exact
# verdict holds for every word of every length (docs/design/09-beyond-the-paper.md).
result = Learner(ExactPTP(None), max_nodes=4).fit(task)
print(
    f"{len(result.machines)} machine(s) with {result.n_nodes} nodes; every one reproduces the expert's policy "
    f"after every word: {all(v.consistent for v in result.verdicts)}"
)
# The learned machines differ only where no behaviour can tell (what the goal and the holes
# do next: the agent stays there for ever); the first one:
learned = result.machines[0]
print(dsl.dumps(learned))
picture = draw_machine(learned, title="key, then goal: learned at every depth")  # a Figure

# %% 5. Rewards
# MaxEnt IRL (Algorithm 3, the default strategy) recovered rewards on the learned machine
# (printed above): the sparsest rewards under which the expert's policy is soft-optimal.
# Re-planning with them gives the expert's policy back.
fit = result.reward_fits[0]
print(f"reward fit: residual {fit.residual:.1e}; re-planned policy differs from the expert's by {fit.replan_error:.1e}")
policy = soft_bellman(mdp, learned, gamma=0.95, lam=0.1).pi  # (states, nodes, actions)


# %% 6. The learned machine in RL, over the gymnasium.make environment
# RewardMachineEnv is the product environment: the observation carries the machine's node,
# the reward is the machine's. It passes Gymnasium's check_env. The planned policy acts on
# (state, node): it fetches the key, then reaches the goal, far more often than random moves.
def product():
    return RewardMachineEnv(make(), learned, labeler, terminal="loops")


with warnings.catch_warnings():  # check_env advises checking env.unwrapped; we check the product itself
    warnings.simplefilter("ignore")
    check_env(product(), skip_render_check=True)
print("check_env(RewardMachineEnv(gymnasium.make('FrozenLake-v1'), ...)): passed")


def success(act, episodes=300):
    wins, env_ = 0, product()
    rng = np.random.default_rng(0)
    for k in range(episodes):
        obs, _ = env_.reset(seed=k)
        for _ in range(100):
            obs, reward, terminated, truncated, _ = env_.step(act(obs, rng))
            wins += reward > 0
            if terminated or truncated:
                break
    return wins / episodes


planned = success(lambda obs, rng: int(np.argmax(policy[obs["obs"], obs["node"]])))
random = success(lambda obs, rng: int(rng.integers(4)))
print(f"key then goal: planned with the learned machine {planned:.2f}, random moves {random:.2f} of 300 episodes")
print("the learned machine's policy does the task:", planned > 0.3 > random)

# %% 7. Without P: a model estimated from episodes
# Most environments do not publish P. collect counts every (state, action, next state) it
# sees; estimate_mdp turns the counts into the maximum-likelihood labeled MDP, gives the
# (state, action) pairs never tried a self-loop and names them (here the holes and the goal,
# which no episode leaves).
recording = collect(make(), lambda obs, ctx: int(ctx.rng.integers(4)), labeler, Identity(), 3000, seed=0)
estimate = estimate_mdp(recording, labeler, gamma=0.95, warn=False)
print(estimate.summary())
tried = np.repeat(estimate.visits.sum(axis=1) > 0, 4)
gap = np.abs(estimate.mdp.kernel.toarray() - mdp.kernel.toarray())[tried].max()
print(f"largest gap to the true P over the tried pairs: {gap:.2f}")
