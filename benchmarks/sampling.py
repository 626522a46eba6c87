"""Sampled experts (docs/design.md section 14): what the statistics cost, whether explain's
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
  hypothesis and for the truth: histories, coverage, seconds.

    PYTHONPATH=. python benchmarks/sampling.py bounds|explain|suites [--markdown]
"""

from __future__ import annotations

import argparse
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
    from rmtk.statistics import Mixture, Weissman, compare, draws_to_resolve

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
    from rmtk.explain import _state_groups, growth_factors, rare_triples
    from rmtk.planning import task_policy
    from rmtk.simulate import simulate

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
    from rmtk.equivalence import policy_class_table
    from rmtk.exact import SoftOptimal

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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("bounds", "explain", "suites"))
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = ap.parse_args(argv)
    {"bounds": bounds, "explain": explain, "suites": suites}[args.what](args.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
