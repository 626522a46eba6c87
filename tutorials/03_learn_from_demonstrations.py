"""
Tutorial 3 — learn a reward machine from demonstrations
=======================================================

Goal: learn the stack-avoid machine of the paper (section 6.2) from what an expert *does*,
not from its exact policy. We simulate 20,000 trajectories of 20 steps of the expert, save
them to an ``.npz`` file and load them back (the format your own data would come in),
then learn with MaxSAT: the negative examples are now statistical (the confidence bound of
the paper's eq. 18-19), so some could be wrong, and MaxSAT may drop the fewest of them.

Run it with ``python tutorials/03_learn_from_demonstrations.py [OUTPUT_DIR]``; the
demonstrations are written to OUTPUT_DIR (default: a temporary directory, removed at exit).
"""

import atexit
import sys
import tempfile
from pathlib import Path

from rmtk import ConfidenceMiner, EmpiricalPTP, Learner, MaxSatEncoder, data, dsl
from rmtk.io.draw import draw_machine
from rmtk.product.simulate import simulate


def output_dir() -> Path:
    """The first command-line argument, else a temporary directory removed at exit."""
    if len(sys.argv) > 1:
        out = Path(sys.argv[1])
        out.mkdir(parents=True, exist_ok=True)
        print(f"output directory: {out}")
        return out
    temporary = tempfile.TemporaryDirectory(prefix="rmtk-tutorial-03-")
    atexit.register(temporary.cleanup)
    print("output directory: a temporary one, removed at exit (give one as the first argument)")
    return Path(temporary.name)


OUT = output_dir()
print()

# %% 1. The task
# A block world with three blocks and three piles. The expert must build the stack st1
# (label A), then st2 (label B), without passing through the "bad" configuration D; every
# other configuration is labelled I. Its nodes u2 (success) and u3 (failure) both have the
# uniform policy, so the smallest machine that explains the behaviour has 3 nodes.
task = dsl.load_model("stack_avoid.rm").tasks["stack_avoid"]
mdp = task.mdp
print(task.summary())
print(mdp.summary())
print(dsl.dumps(task.machine))

# %% 2. Simulate demonstrations
# `simulate` samples trajectories of the task's soft-optimal product policy (vectorised,
# reproducible: trajectory i depends only on the seed and the horizon). Demonstrations
# hold (N, T) arrays of state and action indices.
demos = simulate(task, 20000, 20, seed=0)
print("simulated:", demos.summary())
first = demos[0]
steps = [
    f"{mdp.states[s]}[{mdp.label(int(s))}] {mdp.actions[a]}" for s, a in zip(first.states[0, :4], first.actions[0, :4])
]
print("trajectory 0 begins:", " ; ".join(steps), "...")
print("its label word:", " ".join(mdp.label(int(s)) for s in first.states[0]))

# %% 3. Save and load
# `rmtk.data.save`/`load` pick the format from the extension: `.npz` (compact; arrays
# states, actions, lengths) or `.csv` (one row per step, with state, action and label names;
# writing it needs the MDP). Loading validates the data against the MDP: indices in range,
# and every step possible under the MDP's transitions.
npz = OUT / "stack_avoid_demos.npz"
data.save(demos, npz, mdp, overwrite=True)
loaded = data.load(npz, mdp)
assert loaded == demos
print(f"\nsaved and loaded {npz.name} ({npz.stat().st_size // 1024} KiB): equal to the simulated data")
csv = OUT / "stack_avoid_first3.csv"
data.save(demos[:3], csv, mdp, overwrite=True)
print(f"the first 3 trajectories as {csv.name}, first lines:")
print("".join(csv.read_text().splitlines(keepends=True)[:4]), end="")

# %% 4. Learn with MaxSAT
# The empirical prefix tree policy counts the actions taken after every (word, state).
# Two words reaching the same state become a negative example (they must end in different
# nodes) when their action counts differ beyond the confidence bound at level `alpha`.
# With the MaxSatEncoder every negative example is a soft clause: the solver finds the
# machines with `nodes` nodes that violate the fewest, and enumerates all of them. The
# learner composes the strategies: the empirical prefix tree policy of the demonstrations,
# the confidence-bound miner (alpha 0.05), MaxSAT, and MaxEnt IRL for the rewards.
learner = Learner(ptp=EmpiricalPTP(loaded), miner=ConfidenceMiner(alpha=0.05), encoder=MaxSatEncoder(), nodes=3)
result = learner.fit(task)
print("\n== 20,000 trajectories, MaxSAT at 3 nodes")
print(f"|E-| = {len(result.negatives)} negative examples")
# Because the task knows the true machine, rmtk can tell which mined examples are wrong.
print(f"false positive rate: {result.false_positive_rate:.3f}")
print(f"MaxSAT cost (negative examples dropped): {result.search.cost}")
print(f"{result.distinct_count} distinct machine(s), {result.raw_count} raw solutions")
for i, machine in enumerate(result.machines):
    # Rewards are recovered from the empirical product policy: estimates, with noise.
    print()
    print(dsl.dumps(machine))
    print("dropped negative examples:", result.dropped(i) or "none")
    # A transition that no demonstrated word exercises is left free (printed as a
    # self-loop). Here (u1, D): in these demonstrations no expert that had built st1
    # then walked into D.
    print("unconstrained transitions:", result.unconstrained(i) or "none")
    print("verdict with the free transitions as self-loops:", result.verdicts[i])
# The verdict above fails only because of the free transition; `completion_consistent`
# asks whether *some* filling of the free transitions (here u1 -D-> u2) reproduces the
# expert's policy after every word. The data cannot tell the fillings apart.
print("completion_consistent:", result.completion_consistent)
picture = draw_machine(result.machines[0], title="learned from 20,000 demonstrations")  # a Figure
print("stats:", result.stats())

# %% 5. Less data
# With 500 trajectories far fewer pairs pass the confidence bound, so fewer negative
# examples constrain the machine and many more machines explain the data. Only the PTP
# strategy changes (`irl=None` skips the reward recovery, which we do not look at here).
few = Learner(ptp=EmpiricalPTP(loaded[:500]), encoder=MaxSatEncoder(), nodes=3, irl=None).fit(task)
print("\n== 500 trajectories, MaxSAT at 3 nodes")
print(
    f"|E-| = {len(few.negatives)}, false positive rate {few.false_positive_rate:.3f}, "
    f"MaxSAT cost {few.search.cost}, {few.distinct_count} distinct machines"
)
