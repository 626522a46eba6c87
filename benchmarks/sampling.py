"""Sampled experts (docs/design/14-sampled-experts.md): what the statistics cost, whether explain's
lists point at real differences, and the size of conformance suites.

* ``bounds``: the L1 radii of the fixed-sample bound (the paper's) and the anytime-valid one,
  the draws a side each needs to resolve a total variation ε, and the time to compare 10⁶
  pairs of count rows (beside the time to import numpy in a fresh process, the same run's
  reference);
* ``explain``: on soft experts of the corner grid (``tests/test_explain.py``: a size × size
  grid, labels a, b, g at three corners, the expert visits a, then b, then is paid 3 at g;
  γ 0.9), recorded for N episodes of 60 steps, for 3 seeds: how many of the 10 triples the
  former ranking listed (the empirical difference read as the true one) and of those explain
  now gives as beyond sampling noise (confidence 0.8) the true machine separates (``node``:
  sends the two words to different nodes; ``tv>0.05``: its nodes' policies there differ by
  more than 0.05);
* ``suites``: conformance suites (``rmtk.active.conformance``) on shipped models for a 1-node
  hypothesis and for the truth: histories, coverage, seconds;
* ``soft``: active learning from soft experts of a Gymnasium toy-text corner grid (``CornerGrid``
  below: ``size`` × ``size`` cells, deterministic moves, labels a, b, g at three corners; the
  expert visits a, then b, then is paid 3 at g: a 3-node patrol, γ 0.9, soft-optimal at λ)
  through ``GymExpert`` (histories restored), the loop's defaults but the target resolution
  and a draws budget, beside passive learning from 10⁴ recorded episodes of 60 steps (600,000
  steps and draws; the same run's reference). Rows (``SOFT``): ``close`` (8 × 8, λ 0.45: nodes
  0 and 1 differ by at most 0.05, node 2 by ≈ 0.5; the recording holds no negative example),
  ``close4`` (4 × 4, λ 1: every two nodes differ by a few hundredths at most states) and
  ``faint`` (10 × 10, λ 0.5: at most 0.011 and ≈ 0.5). ``alone from``: the draws spent when the
  truth became the only hypothesis for good. Targets (exit status 1 when one fails): on the
  ``close`` rows the active loop's answer is the true machine alone, in fewer policy draws than
  the recording's 600,000, and the run ends by itself or, flagged (a conformance check at the
  target resolution cannot finish within that: docs/benchmarks/23-sampled-active.md), says the
  resolution it reached; on ``faint`` it separates node 2 (at least 2 nodes) and its answer is
  the truth or says the resolution it reached and what the next would cost.
* ``sharp``: the sharp experts of the tests (patrol at λ 0.1, FrozenLake's a-then-g, the
  ε-greedy recorded experts, stack_avoid from 1,000 demonstrations) at the default target
  resolution: machines, policy draws, environment steps.

    PYTHONPATH=. python benchmarks/sampling.py bounds|explain|suites|soft|sharp [--markdown]
    PYTHONPATH=. python benchmarks/sampling.py sharp --reference /path/to/a/checkout/of/main
    PYTHONPATH=. python benchmarks/sampling.py sharp --resolution 0.5  # what 200 draws a side resolve
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from _table import render  # the script's folder is on sys.path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))


def _numpy_import() -> float:
    code = "import time; t = time.perf_counter(); import numpy; print(time.perf_counter() - t)"
    return float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)


def bounds(markdown: bool) -> None:
    from rmtk.negatives.statistics import Mixture, Weissman, compare, draws_to_resolve

    rows = []
    for A in (4, 25):
        for eps in (0.5, 0.2, 0.1, 0.05):
            row = {"actions": A, "epsilon": eps}
            for name, bound in (("fixed", Weissman()), ("anytime", Mixture())):
                m1, _ = draws_to_resolve(np.zeros(1), np.zeros(1), np.array([eps]), A, alpha=0.05, bound=bound)
                row[f"{name} draws a side"] = f"{int(m1[0]):,}"
            rows.append(row)
    print(render(rows, markdown))
    rng = np.random.default_rng(0)
    print()
    rows = []
    for A in (4, 25):
        a = rng.integers(0, 50, (1_000_000, A))
        b = rng.integers(0, 50, (1_000_000, A))
        for name, bound in (("fixed", Weissman()), ("anytime", Mixture())):
            t = time.perf_counter()
            c = compare(a, b, alpha=0.05, bound=bound)
            _ = c.resolution, c.lower, c.separated
            rows.append(
                {"actions": A, "bound": name, "pairs": "1,000,000", "seconds": f"{time.perf_counter() - t:.2f}"}
            )
    print(render(rows, markdown))
    print(f"# reference: importing numpy in a fresh process took {_numpy_import():.3f} s")


def explain(markdown: bool) -> None:
    from test_explain import _corner_grid

    from rmtk import EmpiricalPTP, Learner
    from rmtk.learner.explain import _state_groups, growth_factors, rare_triples
    from rmtk.product.planning import task_policy
    from rmtk.product.simulate import simulate

    rows = []
    for size, lam, n in ((5, 0.5, 3000), (6, 0.5, 10_000), (7, 0.3, 3000), (7, 0.5, 10_000), (8, 0.3, 10_000)):
        task = _corner_grid(size, lam)
        pi = task_policy(task).pi
        true_delta = task.machine.delta_u[:, task.letter_of_proposition]
        agg = np.zeros(7, int)
        machines = []
        for seed in range(3):
            r = Learner(EmpiricalPTP(simulate(task, n, 60, seed=seed)), irl=None).fit(task)
            machines.append(f"{r.n_nodes}:{len(r.negatives)}")
            ptp, deltas = r.ptp, [m.delta_u for m in r.machines]
            counts = np.asarray(ptp.counts, float)
            nn = counts.sum(axis=1)
            node, state = np.asarray(ptp.tree.pair_node), np.asarray(ptp.tree.pair_state)
            true_node = ptp.trie.run(true_delta, task.machine.initial)
            groups = list(_state_groups(ptp, deltas, merged=len(deltas) == 1))
            p = np.concatenate([g[0] for g in groups])
            q = np.concatenate([g[1] for g in groups])
            split = np.concatenate([g[2] for g in groups], axis=1)
            tv = 0.5 * np.abs(counts[p] / nn[p, None] - counts[q] / nn[q, None]).sum(axis=1)
            if len(deltas) == 1:
                p, q, split, tv = p[tv > 0], q[tv > 0], split[:, tv > 0], tv[tv > 0]
            k = len(deltas)
            sep = split.sum(axis=0) * (k - split.sum(axis=0))
            old = np.lexsort((q, p, -sep, growth_factors(nn[p], nn[q], tv, counts.shape[1], 0.05)))[:10]
            u1, u2 = true_node[node[p[old]]], true_node[node[q[old]]]
            agg[0] += 10
            agg[1] += int((u1 != u2).sum())
            agg[2] += int((0.5 * np.abs(pi[state[p[old]], u1] - pi[state[p[old]], u2]).sum(axis=1) > 0.05).sum())
            names = {tuple(task.mdp.propositions[x] for x in ptp.trie.word(t)): t for t in range(1, ptp.trie.n_nodes)}
            rare = rare_triples(task.mdp, ptp, deltas, alpha=0.05, limit=10)
            for x in rare.pairs:
                if x.consistent_with_zero:
                    continue
                s = task.mdp.states.index(x.state)
                a, b = true_node[names[x.word1]], true_node[names[x.word2]]
                agg[3] += 1
                agg[4] += int(a != b)
                agg[5] += int(0.5 * np.abs(pi[s, a] - pi[s, b]).sum() > 0.05)
            agg[6] += rare.beyond_noise
        rows.append(
            {
                "grid": f"{size}x{size}",
                "lambda": lam,
                "episodes": f"{n:,}",
                "nodes:negatives": " ".join(machines),
                "former top 10: node": f"{agg[1]}/{agg[0]}",
                "tv>0.05": f"{agg[2]}/{agg[0]}",
                "beyond noise listed: node": f"{agg[4]}/{agg[3]}",
                "tv>0.05 ": f"{agg[5]}/{agg[3]}",
                "beyond noise in all": int(agg[6]),
            }
        )
    print(render(rows, markdown, left=frozenset({"grid", "nodes:negatives"})))


def suites(markdown: bool) -> None:
    from rmtk import dsl
    from rmtk.active.conformance import Configurations, ConformanceSuite
    from rmtk.machine.equivalence import policy_class_table
    from rmtk.ptp.exact import SoftOptimal

    rows = []
    for model, name in (("patrol", "patrol"), ("stack", "stack"), ("stack_avoid", "stack_avoid")):
        task = dsl.load_model(model).tasks[name]
        table = policy_class_table(SoftOptimal().policy(task))
        truth = task.machine.delta_u[:, task.letter_of_proposition]
        for label, H in (("1 node", np.zeros((1, task.mdp.n_propositions), np.int64)), ("the truth", truth)):
            rep = Configurations.of(task.mdp, H).representatives()

            def final(word, delta=truth, u0=task.machine.initial):
                u = u0
                for x in word:
                    u = int(delta[u, x])
                return u

            cls = {key: int(table[s, final(w)]) for key, (w, s) in rep.items()}
            for k in (0, 1, 2, 3):
                t = time.perf_counter()
                suite = ConformanceSuite(extra=k).suite(task.mdp, H, lambda s, h, c=cls: c[(s, h)])
                secs = time.perf_counter() - t
                found = sum(
                    table[h[1], final(h[0])] != table[p[1], final(p[0])] for h, p in zip(suite.histories, suite.partner)
                )
                rows.append(
                    {
                        "task": name,
                        "hypothesis": label,
                        "k": k,
                        "histories": f"{len(suite):,}",
                        "configurations": (
                            f"{suite.configurations} ({suite.minimal} distinct, {suite.end_sets} end sets)"
                        ),
                        "complete for": f"{suite.complete_for} configurations, {suite.nodes} node(s)",
                        "differences found": found,
                        "seconds": f"{secs:.2f}",
                    }
                )
    print(render(rows, markdown, left=frozenset({"task", "hypothesis", "configurations", "complete for"})))


def corner_grid(size: int, lam: float):
    """The toy-text corner grid (a Gymnasium environment with ``P``, ``s`` and ``isd``, as
    FrozenLake), its labeled MDP from :func:`rmtk.gym.tabular_mdp`, the 3-node patrol task at
    ``lam`` and the soft-optimal expert as a :class:`rmtk.gym.NodePolicy`."""
    import gymnasium

    from rmtk import RewardMachine, Task
    from rmtk.gym import NodePolicy, tabular_mdp
    from rmtk.product.planning import task_policy

    S = size * size
    moves = [(-1, 0), (1, 0), (0, -1), (0, 1)]

    def nxt(s, a):
        r, c = divmod(s, size)
        dr, dc = moves[a]
        return min(max(r + dr, 0), size - 1) * size + min(max(c + dc, 0), size - 1)

    class CornerGrid(gymnasium.Env):
        def __init__(self):
            self.observation_space = gymnasium.spaces.Discrete(S)
            self.action_space = gymnasium.spaces.Discrete(4)
            self.P = {s: {a: [(1.0, nxt(s, a), 0.0, False)] for a in range(4)} for s in range(S)}
            self.isd = np.eye(S)[0]
            self.s = 0

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            self.s = 0
            return self.s, {}

        def step(self, action):
            self.s = nxt(self.s, int(action))
            return self.s, 0.0, False, False, {}

    labels = ["i"] * S
    labels[size - 1], labels[(size - 1) * size], labels[S - 1] = "a", "b", "g"
    env = CornerGrid()
    mdp = tabular_mdp(env, labels, propositions=["i", "a", "b", "g"], gamma=0.9, name=f"corners{size}")
    machine = RewardMachine(
        ["u0", "u1", "u2"],
        ["i", "a", "b", "g"],
        np.array([[0, 1, 0, 0], [1, 1, 2, 1], [2, 2, 2, 0]]),
        np.array([[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 3.0]]),
        name="corners",
    )
    task = Task(mdp, machine, gamma=0.9, lam=lam, max_nodes=4, name="corners")
    pi = task_policy(task).pi
    return env, mdp, task, pi, NodePolicy.from_table(machine, pi.transpose(1, 0, 2))


#: The soft rows: (name, grid size, λ, target resolution, draws budget). ``close``: nodes 0 and 1
#: differ by at most 0.05 (where the expert is near a or b; ≈ 0 elsewhere), node 2 by ≈ 0.5, and
#: 10⁴ recorded episodes hold no negative example; ``close4``: every pair of nodes differs by a
#: few hundredths at most states (nodes 0 and 1: median 0.033, at most 0.11); ``faint``: nodes 0
#: and 1 differ by at most 0.011, node 2 by ≈ 0.5.
SOFT = [
    ("close", 8, 0.45, 0.04, 590_000),
    ("close4", 4, 1.0, 0.05, 590_000),
    ("faint", 10, 0.5, 0.3, 400_000),
]


def _alone_since(run) -> int | None:
    """The policy draws spent when the hypotheses were last narrowed to one machine of the final
    size for good (every later round left that one alone), or ``None``."""
    since = None
    for r in run.rounds:
        if r.survivors == 1 and r.nodes == run.result.n_nodes:
            since = r.draws if since is None else since
        else:
            since = None
    return since


def soft(markdown: bool) -> int:
    from rmtk import EmpiricalPTP, Learner
    from rmtk.active import ActiveLearner, Budget
    from rmtk.gym.experts import GymExpert
    from rmtk.product.simulate import simulate

    rows, failed = [], []
    for name, size, lam, eps, budget in SOFT:
        env, mdp, task, pi, policy = corner_grid(size, lam)

        def tv(a, b, pi=pi) -> float:
            return float((0.5 * np.abs(pi[:, a] - pi[:, b]).sum(-1)).max())

        t = time.perf_counter()
        passive = Learner(EmpiricalPTP(simulate(task, 10_000, 60, seed=0)), irl=None).fit(task)
        t_passive = time.perf_counter() - t
        t = time.perf_counter()
        run = ActiveLearner(resolution=eps, budget=Budget(draws=budget), irl=None).fit(
            task, GymExpert(env, mdp, policy, seed=0)
        )
        t_active = time.perf_counter() - t
        r = run.result
        truth = r.isomorphic_to_truth() == (True,)
        alone = _alone_since(run) if truth else None
        rows.append(
            {
                "grid": f"{size}x{size} λ {lam}",
                "max TV u0-u1": f"{tv(0, 1):.3f}",
                "u2": f"{max(tv(0, 2), tv(1, 2)):.2f}",
                "passive (10^4 x 60 steps)": (
                    f"{passive.n_nodes} node(s), {len(passive.machines)} machine(s)"
                    f"{', the truth among them' if True in passive.isomorphic_to_truth() else ''}, "
                    f"{len(passive.negatives)} negatives, {t_passive:.1f} s"
                ),
                "target": eps,
                "active": f"{r.n_nodes} node(s), {len(r.machines)} machine(s){', the truth' if truth else ''}",
                "draws": f"{run.draws:,}",
                "alone from": "" if alone is None else f"{alone:,}",
                "env steps": f"{run.steps:,}",
                "family-wise": "holds" if run.firmness is not None and run.firmness.holds else "not shown",
                "s": f"{t_active:.0f}",
                "ended": run.ended or "by itself",
            }
        )
        print(f"# {name}: {run.stopped}")
        if run.coverage is not None:
            print(f"#   equivalence check: {run.coverage}")
        said = "resolution (total variation" in run.stopped and (truth or "more draws there" in run.stopped)
        if name.startswith("close") and not (truth and run.draws < 600_000 and (not run.flagged or said)):
            failed.append(
                f"{name}: the truth alone in fewer than 600,000 draws, ended by itself or flagged with the "
                "resolution reached"
            )
        if name == "faint" and not ((r.n_nodes or 0) >= 2 and said):
            failed.append(f"{name}: node 2 separated and the resolution reached said (and what the next would cost)")
    print(render(rows, markdown, left=frozenset({"grid", "passive (10^4 x 60 steps)", "active", "ended"})))
    print("# alone from: the draws spent when the truth became the only hypothesis for good")
    for f in failed:
        print(f"TARGET FAILED: {f}")
    return 1 if failed else 0


def sharp(markdown: bool, resolution: float | None = None) -> int:
    import attrs
    from test_gym_expert import a_then_g, lake
    from test_recorded_active import at_triples, greedy_task, recording

    from rmtk import dsl
    from rmtk.active import ActiveLearner, ExpertWalks, SimulatedExpert
    from rmtk.gym.experts import GymExpert
    from rmtk.product.simulate import simulate

    rows = []
    kw = {} if resolution is None else {"resolution": resolution}

    def row(name, run, note=""):
        r = run.result
        rows.append(
            {
                "expert": name,
                "machines": f"{len(r.machines)} of {r.n_nodes} node(s)",
                # the paper's count: machines with their unconstrained transitions filled in
                "raw": r.raw_count,
                "truth": "yes" if r.isomorphic_to_truth() == (True,) else "no",
                # a reference run of a version before draws were counted: one step per draw there
                "draws": f"{getattr(run, 'draws', run.steps):,}",
                "env steps": f"{run.steps:,}" if hasattr(run, "draws") else "(= draws)",
                "queries": run.queries,
                "note": note,
            }
        )

    patrol = attrs.evolve(dsl.load_model("patrol").tasks["patrol"], lam=0.1)
    row(
        "patrol λ 0.1, walks 50x30",
        ActiveLearner(check=ExpertWalks(50, 30), **kw).fit(patrol, SimulatedExpert(patrol, seed=1)),
    )
    env, mdp = lake(False)
    task, _, policy = a_then_g(mdp)
    for mode in ("restore", "replay"):
        run = ActiveLearner(check=ExpertWalks(30, 30), **kw).fit(task, GymExpert(env, mdp, policy, mode=mode, seed=1))
        row(f"FrozenLake a-then-g ({mode}), walks 30x30", run, "every depth: 9 machines of 2 nodes (raw 9)")
    for name in ("patrol_hallway", "stack"):
        t, source = greedy_task(name)
        run = at_triples(max_nodes=t.machine.n_nodes, **kw).fit(
            t.mdp, SimulatedExpert(t, source=source, seed=1), data=recording(t, source)
        )
        row(f"{name} ε-greedy, recorded triples", run)
    sa = dsl.load_model("stack_avoid").tasks["stack_avoid"]
    demos = simulate(sa, 1000, 20, seed=0)
    run = ActiveLearner(check=ExpertWalks(walks=5), max_nodes=3, **kw).fit(
        sa, SimulatedExpert(sa, seed=0, recorded=demos)
    )
    row("stack_avoid + 1,000 demonstrations, walks 5x40", run, "draws beyond the 20,000 recorded")
    print(render(rows, markdown, left=frozenset({"expert", "machines", "note"})))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("bounds", "explain", "suites", "soft", "sharp"))
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    ap.add_argument("--root", help="run with the rmtk and tests/ of this checkout (a reference version)")
    ap.add_argument("--reference", help="then run the same rows with the checkout at this path (sharp)")
    ap.add_argument(
        "--resolution",
        type=float,
        help="sharp: this target resolution for this checkout's rows (not the reference's; default the loop's 0.3)",
    )
    args = ap.parse_args(argv)
    if args.root:
        sys.path[:0] = [str(Path(args.root).resolve() / "tests"), str(Path(args.root).resolve())]
    fn = {"bounds": bounds, "explain": explain, "suites": suites, "soft": soft, "sharp": sharp}[args.what]
    status = (sharp(args.markdown, args.resolution) if args.what == "sharp" else fn(args.markdown)) or 0
    if args.reference:
        print(f"\n# reference, the same rows with {args.reference} (same run):", flush=True)
        cmd = [sys.executable, __file__, args.what, "--root", args.reference]
        cmd += ["--markdown"] if args.markdown else []
        subprocess.run(cmd, check=True, env={**os.environ, "PYTHONPATH": args.reference})
    return status


if __name__ == "__main__":
    sys.exit(main())
