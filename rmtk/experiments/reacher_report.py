"""The report of the reacher experiment (:mod:`rmtk.experiments.reacher`): our figures beside
the paper's table, the cost of the run, and the active run's when there is one."""

from __future__ import annotations

from ._report import Report

#: The paper's table (1M trajectories): α → (|E⁻|, FPR %, MaxSAT solutions, machines up to renaming).
PAPER = {1e-3: (1472, 1.90, 4, 2), 1e-4: (1193, 1.67, 4, 2), 1e-5: (882, 1.36, 4, 2)}


SCRIPTED_NOTE = (
    "expert: scripted (inverse kinematics + velocity-command control at the cell centre, torques rounded to the "
    "5 levels, epsilon-greedy 0.1), a function of (cell, true node) as the paper's PPO policy sampled at cell "
    "centres; after r it returns to b and holds there. See rmtk/envs/reacher.py for every choice; recorded "
    "with rmtk.gym.collect from the reacher's Gymnasium vector environment (rmtk/gym/reacher.py)."
)
AGENT_NOTE = (
    "expert: the PPO agent (--set expert=agent; rmtk/rl/reacher.py, trained by benchmarks/train_reacher_agent.py on "
    "the product with the true machine, paid 1 per step of it), observing the centre of its cell with its node, so a "
    "function of (cell, true node) as the paper samples its PPO policy; actions drawn from its softmax; after r "
    "nothing pays and its u3 policy is what training left. Active questions (--set active=true) draw from its "
    "softmax at the history's cell centre (rmtk.rl.AgentExpert, one forward pass per question; recorded counts "
    "and exact answers do not mix); --set exact=true reads the softmax itself at the recorded pairs."
)


def _projection(res, n: int) -> float:
    """Seconds for ``n`` trajectories: generation at the measured rate, the rest as measured."""
    return n / res.trajectories_per_second + (res.seconds - res.generate_seconds)


def report(res, title: str | None = None) -> Report:
    """A :class:`~rmtk.experiments.Report` of :func:`simulate_and_learn`'s result beside the paper's table."""
    who = "PPO agent" if res.expert == "agent" else "scripted expert"
    rep = Report(title or f"reacher (paper section 6.3): discretised 2-link arm, {who}, MaxSAT at 4 nodes")
    rows = []
    for r in res.rows:
        paper = PAPER.get(r.alpha)
        machines = f"{r.machines}" if r.complete else f">={r.machines}"
        raw = f"{r.raw}" if r.complete else f">={r.raw}"
        rows.append(
            (
                f"{r.alpha:g}",
                r.negatives,
                f"{100 * r.fpr:.2f}%",
                r.cost,
                machines,
                raw,
                "yes" if r.truth_optimal else "no",
                "yes" if r.truth_listed else "no",
                paper[0] if paper else None,
                f"{paper[1]:.2f}%" if paper else None,
                f"{paper[2]} ({paper[3]})" if paper else None,
            )
        )
    rep.tables.append(
        (
            f"{res.trajectories} trajectories of {160} steps (seed {res.seed}); the paper: 10^6 trajectories, PPO "
            "expert",
            [
                "alpha",
                "|E-|",
                "FPR",
                "MaxSAT cost",
                "machines",
                "raw",
                "truth optimal",
                "truth listed",
                "paper |E-|",
                "paper FPR",
                "paper solutions (machines)",
            ],
            rows,
        )
    )
    rep.tables.append(
        (
            "cost: wall time and memory of the whole run",
            [
                "trajectories",
                "steps in u0/u1/u2/u3",
                "clipped observations",
                "trajectories/s",
                "(word, cell, action) keys",
                "trie words",
                "pairs kept",
                "wall s",
                "peak traced MB",
                "max RSS MB (main)",
                "max RSS MB (workers)",
                "projected s for 10^6",
            ],
            [
                (
                    res.trajectories,
                    "/".join(f"{100 * x:.0f}%" for x in res.node_steps),
                    res.clipped,
                    f"{res.trajectories_per_second:.0f}",
                    res.count_keys,
                    res.trie_nodes,
                    res.policy_pairs,
                    f"{res.seconds:.1f}",
                    f"{res.peak_traced_mb:.0f}",
                    f"{res.maxrss_mb:.0f}",
                    f"{res.maxrss_children_mb:.0f}",
                    f"{_projection(res, 1_000_000):.0f}",
                )
            ],
        )
    )
    rep.notes += [
        AGENT_NOTE if res.expert == "agent" else SCRIPTED_NOTE,
        "labels: the disc (b, y, r; radius 0.02) the fingertip is in, from the continuous angles, else i; words are "
        "compressed (non-stuttering). States: 36 x 36 angle bins (10 deg) x 112 x 112 velocity bins (0.25 rad/s, "
        "clipped to +-14) = 16,257,024 cells (the paper: ~17.4M).",
        "|E-| = distinct word pairs mined (ConfidenceMiner, unit weights); a false positive is a pair whose two words "
        "end in the same node of the true machine u0 -b-> u1 -y-> u2 -r-> u3; FPR = false positives / |E-|.",
        "machines = optimal MaxSAT machines at 4 nodes up to renaming (unexercised transitions left free), raw = the "
        "paper's count (node 0 fixed); '>=' when the enumeration stopped at its limit. truth optimal = the true "
        "machine "
        "violates exactly the optimum's number of examples (so it is an optimal solution, listed or not); truth listed "
        "= isomorphic (transitions only) to an enumerated machine.",
    ]
    if res.expert == "scripted":
        rep.notes.append(
            "the expert's nodes meet mostly near the targets (handing over from one goal to the next) and where u3 "
            "holds at b, so the negatives separate u1 from u3 and successive nodes; they do not pin the machine down "
            "at this data size: many 4-node machines are optimal, the true one among them."
        )
    if res.integrator != "rk4":
        rep.notes.append(
            f"physics: the {res.integrator} integrator, not Reacher-v5's RK4 (--set integrator={res.integrator}):"
            " faster, and a different physics; figures are not Reacher-v5's."
        )
    if res.explanation is not None:
        rep.notes.append(f"what would separate the machines at alpha {res.rows[0].alpha:g}:\n{res.explanation}")
    if res.active is not None:
        _active_report(rep, res)
    if res.exact is not None:
        x = res.exact
        rep.tables.append(
            (
                "exact (--set exact=true): the agent's softmax at the recorded (word, cell) pairs of cells two words "
                "reached, policy classes (paper section 3), SAT up to 4 nodes",
                ["pairs asked", "policy classes", "negative pairs", "nodes", "machines", "truth listed", "wall s"],
                [
                    (
                        x.pairs,
                        x.classes,
                        x.negatives,
                        x.size,
                        f"{len(x.machines)}" if x.complete else f">={len(x.machines)}",
                        "yes" if x.truth_listed else "no",
                        f"{x.seconds:.1f}",
                    )
                ],
            )
        )
    rep.seconds = res.seconds
    return rep


def _active_report(rep: Report, res) -> None:
    from ..envs.reacher import HORIZON

    act = res.active
    r = act.result
    passive = res.rows[0]
    full = 1_000_000 * HORIZON
    total = act.recorded_steps + r.steps
    rep.tables.append(
        (
            f"active (--set active=true): the {res.trajectories} recorded trajectories, then the expert asked at "
            f"recorded triples the survivors disagree on (alpha {passive.alpha:g}); beside it the passive figures of "
            "the same run, and the passive 10^6 run (1.6e8 steps; its wall time projected from this run's rate)",
            [
                "",
                "machines",
                "truth listed",
                "negatives",
                "expert steps",
                "% of 10^6 passive steps",
                "queries",
                "rounds",
                "wall s",
            ],
            [
                (
                    "passive",
                    passive.machines,
                    "yes" if passive.truth_listed else "no",
                    passive.negatives,
                    act.recorded_steps,
                    f"{100 * act.recorded_steps / full:.1f}%",
                    0,
                    "",
                    f"{res.seconds - act.seconds:.1f}",
                ),
                (
                    "active",
                    len(act.machines),
                    "yes" if act.truth_listed else "no",
                    len(r.negatives),
                    total,
                    f"{100 * total / full:.1f}%",
                    r.queries,
                    len(r.rounds),
                    f"{res.seconds:.1f}",
                ),
                ("passive 10^6 (projected)", "", "", "", full, "100%", 0, "", f"{_projection(res, 1_000_000):.0f}"),
            ],
        )
    )
    rep.notes.append("active rounds:\n" + "\n".join(f"  {x}" for x in r.log().splitlines()))
    if act.explanation is not None:
        rep.notes.append(
            "rmtk.learner.explain on the machines the active run leaves (its rare triples are planned with a lower "
            "confidence bound of their difference, docs/design/14-sampled-experts.md; see the separation note "
            f"above for what the settled triples show):\n{act.explanation}"
        )


__all__ = ["PAPER", "report"]
