"""What the patrol experiments of appendices D and E share: the expert (reward 10 per
completed patrol, the paper's footnote), its demonstrations, its exact prefix tree policy
and the machines learned with MaxSAT for several bounds u_max."""

from __future__ import annotations

import attrs

from .. import dsl
from ._report import COUNT, POSITIVE, Options, Setting

SETTINGS = {
    "reward": Setting(10.0, "reward of the expert for completing the patrol (the paper's footnote)", domain=POSITIVE),
    "trajectories": Setting(2500, "demonstrations of length 10 learned from", domain=COUNT),
    "ptp_depth": Setting(6, "depth of the expert's exact prefix tree policy used by Algorithm 3", domain=COUNT),
}


def patrol_expert(opts: Options):
    """The patrol task with the reward for completing the patrol set to 10 (paper appendix D,
    footnote), and its demonstrations: 2,500 trajectories of length 10."""
    task = dsl.load_model("patrol").tasks["patrol"]
    reward = opts.get("reward")
    task = attrs.evolve(task, machine=task.machine.with_rewards(task.machine.delta_r * reward))
    from ..product.simulate import simulate

    n = opts.get("trajectories")
    return task, simulate(task, n, 10, seed=opts.seed), reward


def true_ptp(task, opts: Options):
    """The expert's exact prefix tree policy (depth: the task's), the input of Algorithm 3."""
    from ..progress import Progress
    from ..ptp.exact import ExactPTP

    return ExactPTP(opts.get("ptp_depth")).build(task, Progress())


def learn_bounds(task, demos, opts: Options, bounds=(4, 3, 2)):
    from ..learner.pipeline import Learner
    from ..ptp.empirical import EmpiricalPTP
    from ..sat.encoders import MaxSatEncoder

    ptp = EmpiricalPTP(demos)  # counted once, shared by the bounds
    out = {}
    for u in bounds:
        opts.say(f"MaxSAT with u_max = {u}")
        out[u] = Learner(ptp, encoder=MaxSatEncoder(), irl=None, max_nodes=u, nodes=u, max_solutions=1).fit(task)
    return out
