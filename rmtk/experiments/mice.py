"""Section 6.4 and appendix C.3: real water-restricted mice in the 127-node labyrinth: the
learned machine, its rewards, and the held-out log-likelihood against IRL baselines."""

from __future__ import annotations

import time

import attrs
import numpy as np

from .. import dsl
from ..errors import RmtkError
from ._report import COUNT, LEVEL, Domain, Options, Report, Setting

#: The figure the experiment draws (checked before the run: :func:`rmtk.experiments.run`).
FIGURE = "mice.png"
SETTINGS = {
    "data": Setting(None, "the trajectories (.npz with states and actions; also --data PATH)"),
    "alpha": Setting(0.001, "confidence level of the negative examples", domain=LEVEL),
    "clip": Setting(
        0.05,
        "minimum action probability of the product policy (the paper's clipping)",
        domain=Domain(low=0, high=1, high_open=True),
    ),
    "test": Setting(20, "held-out trajectories", domain=COUNT),
}

PAPER_MICE = {"D-IRL": -28.99, "F-IRL": -28.57, "uniform": -30.49, "learned RM": -9.81}


def run(opts: Options) -> Report:
    """Section 6.4 and appendix C.3: real water-restricted mice in the 127-node labyrinth.
    α = 0.001, u_max = 2, MaxSAT; rewards from the learned product policy clipped at 0.05;
    a seeded 180/20 split: held-out average log-likelihood against D-IRL, F-IRL, uniform."""
    import resource
    import tracemalloc

    from ..data import load
    from ..io.draw import draw_labyrinth
    from ..learner.evaluation import average_log_likelihood
    from ..learner.pipeline import Learner
    from ..negatives.miners import ConfidenceMiner
    from ..product.planning import soft_bellman
    from ..ptp.empirical import EmpiricalPTP
    from ..rewards.baselines import d_irl, f_irl, uniform_policy
    from ..rewards.maxent import MaxEntIRL
    from ..rewards.recovery import learned_product_policy
    from ..sat.encoders import MaxSatEncoder

    path = opts.get("data")
    if not path:
        raise RmtkError(
            "the mice experiment needs the trajectories: rmtk reproduce mice --data PATH (rmtk does not ship "
            "them; where they come from and the file's format: docs/guide/08-experiments.md, 'The mice data')"
        )
    t0 = time.perf_counter()
    tracing = not tracemalloc.is_tracing()  # a caller measuring already keeps its own trace
    if tracing:
        tracemalloc.start()
    try:
        report = Report("mice in the labyrinth (paper section 6.4, appendix C.3)")
        task = dsl.load_model("labyrinth").tasks["water"]
        mdp = task.mdp
        demos = load(path, mdp)  # validated against the maze: any impossible step is reported
        opts.say(f"loaded {path}: {demos.summary()}")
        alpha, clip, n_test = opts.get("alpha"), opts.get("clip"), opts.get("test")
        learner = Learner(
            EmpiricalPTP(demos),
            miner=ConfidenceMiner(alpha=alpha),
            encoder=MaxSatEncoder(),
            irl=MaxEntIRL(clip=clip),
            max_nodes=2,
            nodes=2,
        )
        full = learner.fit(mdp)
        fit = full.reward_fits[0]
        rows = [
            ("all", demos.n_trajectories, len(full.negatives), full.search.cost, full.distinct_count, full.raw_count)
        ]
        report.tables.append(
            (
                f"learning from all trajectories: alpha {alpha:g}, u_max 2, MaxSAT",
                ["data", "trajectories", "|E-|", "cost", "machines", "raw"],
                rows,
            )
        )
        report.notes.append(
            "learned machine with its rewards (sparsest up to shaping, policy clipped at "
            f"{clip:g}; fit residual rms {fit.residual_rms:.3g}):\n" + dsl.dumps(fit.machine).rstrip()
        )
        # held-out log-likelihood
        train, test = demos.split(n_test, seed=opts.seed)
        opts.say(f"split {train.n_trajectories}/{test.n_trajectories} (seed {opts.seed})")
        part = attrs.evolve(learner, ptp=EmpiricalPTP(train)).fit(mdp)
        m = part.machines[0]
        ll = {}
        ll["learned RM (product policy)"] = average_log_likelihood(
            test, mdp, learned_product_policy(m, part.ptp, n_states=mdp.n_states), machine=m, clip=clip
        )
        ll["learned RM (re-planned rewards)"] = average_log_likelihood(
            test,
            mdp,
            soft_bellman(mdp, part.reward_fits[0].machine, gamma=task.discount, lam=task.lam).pi,
            machine=part.reward_fits[0].machine,
        )
        ll["D-IRL"] = average_log_likelihood(test, mdp, d_irl(mdp, train, l2=1e-2).policy)
        ll["F-IRL"] = average_log_likelihood(test, mdp, f_irl(mdp, train).policy)
        ll["uniform"] = average_log_likelihood(test, mdp, uniform_policy(mdp))
        paper = {
            "learned RM (product policy)": PAPER_MICE["learned RM"],
            "D-IRL": PAPER_MICE["D-IRL"],
            "F-IRL": PAPER_MICE["F-IRL"],
            "uniform": PAPER_MICE["uniform"],
        }
        report.tables.append(
            (
                f"held-out average log-likelihood: {test.n_trajectories} test trajectories, model from the other "
                f"{train.n_trajectories} (seed {opts.seed}); machine "
                f"{'unique' if part.distinct_count == 1 else 'not unique'}",
                ["model", "avg log-likelihood", "paper"],
                [(k, v, paper.get(k)) for k, v in ll.items()],
            )
        )
        visits = np.bincount(demos.states[demos.mask()], minlength=mdp.n_states)

        def draw(fig):
            axes = np.atleast_1d(fig.subplots(1, fit.machine.n_nodes))
            entry = fit.machine.delta_r[:, mdp.labels]  # (n, S): reward for entering each state at node u
            limit = float(np.abs(entry).max()) or 1.0
            for u, ax in enumerate(axes):
                draw_labyrinth(
                    mdp,
                    entry[u],
                    ax=ax,
                    sizes=visits,
                    limit=limit,
                    colorbar=False,
                    title=f"machine node {fit.machine.nodes[u]}: reward for entering a maze node",
                )
            import matplotlib.cm as cm
            from matplotlib.colors import Normalize

            fig.colorbar(
                cm.ScalarMappable(Normalize(-limit, limit), "coolwarm"),
                ax=list(axes),
                shrink=0.7,
                label="recovered reward",
            )
            fig.suptitle("mice (water-restricted): learned machine u0 -w-> u1; node size = visits")

        opts.figure(report, FIGURE, draw, size=(12, 5))
        report.notes += [
            "the paper's 180/20 split is not published; ours is seeded (--seed). D-IRL and F-IRL are "
            "finite-horizon MaxCausalEnt IRL (T = 22) on state / label one-hot features; the learned RM's "
            f"product policy is Algorithm 3 on the training counts, clipped at {clip:g} like the paper's, and "
            "scored along the learned machine's nodes.",
            "figure: node size = visits in the data, colour = recovered reward for entering the node, per "
            "machine node.",
        ]
        _, peak = tracemalloc.get_traced_memory()
    finally:  # an error (bad data) must not leave every later allocation traced
        if tracing:
            tracemalloc.stop()
    report.seconds = time.perf_counter() - t0
    report.notes.append(
        f"peak memory {peak / 2**20:.1f} MiB (Python/numpy), max RSS "
        f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB"
    )
    return report
