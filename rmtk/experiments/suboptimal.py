"""Appendix B: policy optimality is not required. A 2-node machine model in the block world
whose nodes act with arbitrary stochastic policies is still identified from demonstrations."""

from __future__ import annotations

import time

import numpy as np

from .. import dsl
from ._report import COUNT, POSITIVE, Options, Report, Setting

#: The figure the experiment draws (checked before the run: :func:`rmtk.experiments.run`).
FIGURE = "suboptimal.png"
SETTINGS = {
    "trajectories": Setting(50_000, "demonstrations of length 20", quick=20_000, domain=COUNT),
    "concentration": Setting(1.0, "Dirichlet concentration of the random policy per (state, node)", domain=POSITIVE),
}


def run(opts: Options) -> Report:
    """Appendix B (policy optimality is not required): block world, a 2-node machine model
    whose nodes act with arbitrary stochastic policies (no reward, no planning); 50K
    trajectories of length 20 identify the machine uniquely."""
    from ..learner.pipeline import Learner
    from ..machine.model import RewardMachine, isomorphic
    from ..product.simulate import simulate
    from ..ptp.empirical import EmpiricalPTP
    from ..ptp.exact import NodePolicyTable
    from ..sat.encoders import MaxSatEncoder, SatEncoder
    from ..task import Task

    t0 = time.perf_counter()
    report = Report("arbitrary stochastic policies per node (paper appendix B)")
    blocks = dsl.load_model("stack").mdps["blocks"]
    machine = RewardMachine.from_transitions(
        {("u0", "A"): "u1", ("u1", "C"): "u0"}, blocks.propositions, name="two_node"
    )
    task = Task(blocks, machine, name="suboptimal")
    rng = np.random.default_rng(opts.seed)
    table = rng.dirichlet(
        np.full(blocks.n_actions, opts.get("concentration")), size=(blocks.n_states, machine.n_nodes)
    )  # (S, n, A), no optimality
    n = opts.get("trajectories")
    demos = simulate(task, n, 20, seed=opts.seed, policy=table)
    ptp = EmpiricalPTP(demos, expert=NodePolicyTable(table.transpose(1, 0, 2)))
    rows = []
    for maxsat in (False, True):
        opts.say("MaxSAT" if maxsat else "SAT")
        encoder = MaxSatEncoder() if maxsat else SatEncoder()
        r = Learner(ptp, encoder=encoder, irl=None, max_nodes=3, nodes=2 if maxsat else None).fit(task)
        found = [isomorphic(m, machine, rewards=False) for m in r.machines]
        rows.append(
            (
                "MaxSAT, n = 2" if maxsat else "SAT, smallest n",
                len(r.negatives),
                f"{100 * (r.false_positive_rate or 0):.1f}%",
                r.n_nodes,
                r.raw_count,
                r.distinct_count,
                "yes" if any(found) else "no",
                sum(c is True for c in r.completion_consistent or ()),
            )
        )
        if not maxsat and r.machines:
            from ..io.draw import draw_machine

            first = r.machines[0]
            opts.figure(report, FIGURE, lambda fig, first=first: draw_machine(first, ax=fig.add_subplot()), layout=None)
    report.tables.append(
        (
            f"{n} trajectories of length 20; machine u0 -A-> u1 -C-> u0; Dirichlet({opts.get('concentration'):g}) "
            f"policy per (state, node), seed {opts.seed}",
            ["solver", "|E-|", "FPR", "nodes", "raw", "machines", "truth found", "consistent"],
            rows,
        )
    )
    report.notes.append(
        "the paper reports that its method 'learns uniquely the reward machine model' here "
        "(raw 1 = one machine, node 0 fixed, no free transition)."
    )
    report.seconds = time.perf_counter() - t0
    return report
