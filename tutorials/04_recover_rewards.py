"""
Tutorial 4 — recover a machine's rewards from a policy
======================================================

Goal: given a reward machine's *structure* (its transitions) and a soft-optimal (MaxEnt)
product policy, find rewards ``delta_r`` that make the policy soft-optimal. With entropy
weight lambda, the soft Bellman equations::

    lambda log pi(a|s,u) = sum_s' P(s'|s,a) [delta_r(u, L(s')) + gamma V(s', delta_u(u, L(s')))] - V(s,u)

are *linear* in the rewards and the values, so this is a least-squares problem. Rewards are
only identified up to potential-based shaping on the nodes; we see what that means, pick
the sparsest representative, and check the result by planning again with it.

The learner does this for every machine it finds (``result.reward_fits``, tutorials 2 and
3); here we run it by hand on the patrol task's own machine and expert policy.

Run it with ``python tutorials/04_recover_rewards.py [OUTPUT_DIR]`` (it writes nothing).
"""

import sys
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from rmtk import dsl
from rmtk.io.draw import draw_machine
from rmtk.product.planning import task_policy
from rmtk.rewards.recovery import check, describe, reward_fit, sparsest

# Like every tutorial this one accepts an output directory as its first argument, but it
# writes no file, so it neither creates nor uses one.
OUT = Path(sys.argv[1]) if len(sys.argv) > 1 else None

task = dsl.load_model("patrol.rm").tasks["patrol"]
mdp, machine = task.mdp, task.machine
gamma, lam = task.discount, task.lam
print(task.summary())
print("true rewards: 1 on u3 --D--> u0, 0 everywhere else\n")

# %% 1. The minimum-norm fit
# `reward_fit(task)` takes the task's machine and its soft-optimal policy, writes one
# equation per reachable product state (s, u) and action, and solves for delta_r and V.
# `describe` prints the diagnostics and every (node, letter) reward.
fit = reward_fit(task)
print("== reward_fit(task)")
print(describe(fit))

# The rewards look nothing like the truth — every entry is non-zero — yet they are
# correct: the residual is at rounding level. The reason is *shaping*: for any potential
# phi on the nodes, the rewards
#     delta_r'(u, l) = delta_r(u, l) + gamma * phi(delta_u(u, l)) - phi(u)
# give exactly the same soft-optimal policy (V changes to V - phi(u)). The null space of the
# equations is spanned by these directions, one per node ("4 shaping" above), and nothing
# else: the rewards are "identified up to potential shaping". Among all of them,
# `reward_fit` reports the one of minimum Euclidean norm; "identified" marks entries whose
# value in that canonical gauge the policy determines (an entry that some other null
# direction could move, or that no equation mentions, would be marked otherwise).

# %% 2. Shaping, checked by planning
# Shape the *true* rewards with an arbitrary potential and re-plan: `check` solves the soft
# Bellman equations for a machine with given rewards and returns the largest difference to
# a policy. The true policy is unchanged by the shaping (difference at rounding level).
policy = task_policy(task).pi  # (states, nodes, actions)
phi = np.array([0.0, 5.0, -2.0, 3.0])
shaped = machine.delta_r + gamma * phi[machine.delta_u] - phi[:, None]
print("\n== shaping the true rewards with phi =", phi)
print("shaped rewards (rows: nodes, columns: letters A B C D):")
print(np.round(shaped, 3))
diff = check(mdp, machine.with_rewards(shaped), policy, gamma=gamma, lam=lam)
print(f"re-planned policy with the shaped rewards differs from the expert's by {diff:.2g}")
# A reward change that is not a shaping does change the policy:
other = machine.delta_r.copy()
other[0, 0] += 0.5  # pay 0.5 more for entering room A from u0
diff_other = check(mdp, machine.with_rewards(other), policy, gamma=gamma, lam=lam)
print(f"...while adding 0.5 to u0 --A--> u1 changes it by {diff_other:.2g}")

# %% 3. The sparsest representative
# `sparsest(fit)` picks, among the shaped versions of the fit, the one with the fewest
# and smallest non-zero rewards (an L1 linear program over phi). For the patrol that is the
# machine as the designer wrote it: 1 for completing the round, 0 elsewhere.
best = sparsest(reward_fit(task))
print("\n== sparsest(reward_fit(task))")
print(describe(best))
print("\nequal to the true rewards:", bool(np.allclose(best.delta_r, machine.delta_r, atol=1e-9)))
print(dsl.dumps(best.machine))

# Both fits drawn (`draw_machine` into the Axes of one Figure): the minimum-norm one pays
# something on nearly every transition, the sparsest only on completing the round.
pictures = Figure(figsize=(11, 5), layout="constrained")
for ax, shown, name in zip(pictures.subplots(1, 2), (fit, best), ("minimum-norm fit", "sparsest fit")):
    draw_machine(shown.machine, ax=ax, title=name)

# %% 4. The re-planning check
# Every fit re-plans with the rewards it found and compares with the input policy on the
# product states of the equations: `replan_error`. Shaping never changes it, so the
# minimum-norm and the sparsest fits agree; for a wrong machine or a noisy empirical policy
# it is large (tutorial 2 shows wrong machines).
print(f"replan_error: minimum-norm fit {fit.replan_error:.2g}, sparsest fit {best.replan_error:.2g}")
print(
    f"residual of the equations: {fit.residual:.2g}; null space {fit.null_dim}, "
    f"shaping directions {fit.shaping_dim}, identified up to shaping: {fit.identified_up_to_shaping}"
)
