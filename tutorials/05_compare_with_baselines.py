"""
Tutorial 5 — compare a learned reward machine with IRL baselines
================================================================

Goal: reproduce, in small, the paper's comparison (appendix D, section 6.4) on the patrol
task. From 2,500 demonstrations of 10 steps we learn a reward machine and act with its
product policy; the baselines are tabular MaxCausalEnt IRL with a *static* reward on the
MDP's states — one reward per state (D-IRL) or per proposition (F-IRL) — and the uniform
policy. We score rollouts of 100 steps with the true machine (average return) and the
held-out log-likelihood of fresh demonstrations. A static reward cannot say "visit A, then
B, then C, then D": it has no memory, and that is what the machine adds.

Run it with ``python tutorials/05_compare_with_baselines.py [OUTPUT_DIR]`` (it writes
nothing).
"""

import sys
from pathlib import Path

import attrs
import numpy as np

from rmtk import EmpiricalPTP, Learner, MaxSatEncoder, dsl
from rmtk.io.draw import draw_machine
from rmtk.learner.evaluation import average_log_likelihood, average_return, log_likelihood
from rmtk.product.planning import soft_bellman, task_policy
from rmtk.product.simulate import simulate
from rmtk.rewards.baselines import d_irl, f_irl, uniform_policy
from rmtk.rewards.recovery import learned_product_policy

# Like every tutorial this one accepts an output directory as its first argument, but it
# writes no file, so it neither creates nor uses one.
OUT = Path(sys.argv[1]) if len(sys.argv) > 1 else None

# %% 1. The task, with a reward worth chasing
# As in the paper's appendix D, completing the patrol pays 10 instead of 1, so the
# soft-optimal expert is far from random. Models are frozen attrs objects: `attrs.evolve`
# makes a copy with another machine.
base = dsl.load_model("patrol.rm").tasks["patrol"]
task = attrs.evolve(base, machine=base.machine.with_rewards(base.machine.delta_r * 10))
mdp, truth = task.mdp, task.machine
print(task.summary())
print(dsl.dumps(truth))

# %% 2. Demonstrations
# 2,500 trajectories of 10 steps to learn from, and 1,000 more (another seed) held out.
train = simulate(task, 2500, 10, seed=0)
test = simulate(task, 1000, 10, seed=1)
print("train:", train.summary(), "| held out:", test.summary())

# %% 3. Learn a machine, and its product policy
# MaxSAT at 4 nodes (tutorial 3). The machine's product policy pi(a|s,u) comes from the
# demonstrations themselves (the paper's Algorithm 3): every demonstrated (word, state)
# adds its action counts to the product state (s, node the word leads to); product states
# never visited get the uniform distribution.
result = Learner(EmpiricalPTP(train), encoder=MaxSatEncoder(), nodes=4).fit(task)
learned = result.machines[0]
print(
    f"\nlearned {result.distinct_count} machine(s); |E-| = {len(result.negatives)}, "
    f"MaxSAT cost {result.search.cost}; same structure as the truth: {result.isomorphic_to_truth()[0]}"
)
print(dsl.dumps(learned))
picture = draw_machine(learned, title="learned from the training demonstrations")  # a Figure
product_policy = learned_product_policy(learned, result.ptp, n_states=mdp.n_states)
print("product policy shape (states, nodes, actions):", product_policy.shape)
# The recovered rewards printed above are estimates from 25,000 steps, so they are noisy,
# and they are the sparsest of a shaping class (tutorial 4): shaping can move the round's
# reward of 10 to another transition of the cycle (here it stays on the last, entering D).
# They can be planned with too: the soft-optimal policy of the learned machine with its
# recovered rewards.
replanned = soft_bellman(mdp, learned, gamma=task.discount, lam=task.lam)

# %% 4. The baselines
# MaxCausalEnt IRL with a reward on entering each state (D-IRL) or each proposition
# (F-IRL). `stationary=True` fits the discounted infinite-horizon model, whose policy
# pi(a|s) can act for 100 steps although the demonstrations have 10; `l2` keeps the rewards
# of never-visited states finite.
dirl = d_irl(mdp, train, stationary=True, l2=1e-2)
firl = f_irl(mdp, train, stationary=True, l2=1e-2)
print("D-IRL:", dirl.summary())
print("F-IRL:", firl.summary())

# Every policy together with the machine whose node it reads (None: Markovian).
policies = {
    "expert (true machine)": (task_policy(task), truth),
    "learned machine, product policy": (product_policy, learned),
    "learned machine, re-planned": (replanned, learned),
    "D-IRL (reward per state)": (dirl.policy, None),
    "F-IRL (reward per proposition)": (firl.policy, None),
    "uniform": (uniform_policy(mdp), None),
}

# %% 5. Average return
# 2,000 rollouts of 100 steps per policy (seeded, so every policy sees the same random
# numbers), scored by the *true* machine: 10 per completed round.
print("\n== average return of 100-step rollouts, scored by the true machine")
returns = {}
for name, (policy, policy_machine) in policies.items():
    returns[name] = average_return(mdp, policy, policy_machine, truth, n=2000, horizon=100, seed=1)
    print(f"  {name:34} {returns[name]:8.2f}")

# %% 6. Held-out log-likelihood
# The mean over the held-out trajectories of sum_t log pi(a_t | s_t[, u_t]). The product
# policy estimated from counts gives probability 0 to actions never demonstrated at a product
# state, so a few held-out trajectories score -inf; the paper clips such policies. We report
# both, clipping every policy at 1e-3 (max(pi, 1e-3), renormalised).
ll_raw = log_likelihood(test, mdp, product_policy, machine=learned)
print(
    f"\nlearned product policy, unclipped: {int(np.isinf(ll_raw).sum())} of {len(ll_raw)} held-out "
    f"trajectories have log-likelihood -inf"
)
print("== held-out log-likelihood per trajectory (higher is better)")
print(f"  {'':34} {'raw':>9} {'clip 1e-3':>10}")
clipped = {}
for name, (policy, policy_machine) in policies.items():
    raw = average_log_likelihood(test, mdp, policy, machine=policy_machine)
    clipped[name] = average_log_likelihood(test, mdp, policy, machine=policy_machine, clip=1e-3)
    print(f"  {name:34} {raw:9.3f} {clipped[name]:10.3f}")

# The learned machine acts like the expert; the static rewards cannot remember which room
# comes next, so D-IRL does much worse and F-IRL (one reward per room) no better than chance.
ours = "learned machine, product policy"
baselines = ["D-IRL (reward per state)", "F-IRL (reward per proposition)", "uniform"]
assert all(returns[ours] > returns[b] and clipped[ours] > clipped[b] for b in baselines)
print(
    "\nthe learned machine's product policy beats D-IRL, F-IRL and uniform on the return and on "
    "the (clipped) held-out log-likelihood"
)
