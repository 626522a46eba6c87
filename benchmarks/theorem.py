"""How much smaller than Theorem 1's bound l = |S|·u_max² can the prefix tree depth be?

For seeded random small instances (the generator of tests/test_theorem.py: ≤ 3 states,
2 actions, ≤ 3 propositions, true machine ≤ 2 nodes, u_max = 2), find the smallest depth d
at which

* reported: every solution the learner enumerates (unconstrained transitions as
  self-loops) is policy-equivalent to the true machine at every depth, and
* all: every satisfying assignment (every completion of the unconstrained transitions)
  is policy-equivalent,

and print histograms of d and of d / l, per family and overall. It also checks the theorem
itself at depth l on every instance and prints any counterexample.

    python benchmarks/theorem.py [--instances 300] [--first-seed 0]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from test_theorem import FAMILIES, all_assignments_consistent, depth_profile, random_instance  # noqa: E402


def bar(count: int, total: int, width: int = 40) -> str:
    return "#" * max(1 if count else 0, round(width * count / total))


def histogram(title: str, counter: Counter, total: int, fmt=str) -> None:
    print(title)
    for key in sorted(counter):
        c = counter[key]
        print(f"  {fmt(key):>10}  {c:4d}  {100 * c / total:5.1f}%  {bar(c, total)}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--instances", type=int, default=300, help="instances in all (split over the 4 families)")
    ap.add_argument("--first-seed", type=int, default=0)
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    per_family = -(-args.instances // len(FAMILIES))
    rows = []  # (family, S, n_true, l, d_reported, d_all, n_learned, seed)
    failures = []
    flips = []  # seeds where the enumerated solutions are consistent at d but not at some d' > d
    shallow = []  # seeds where depth 1 or 2 admits an inconsistent reported solution
    for fam in FAMILIES:
        for seed in range(args.first_seed, args.first_seed + per_family):
            inst = random_instance(seed, *fam)
            l = inst.bound
            r = inst.fit(l)
            ok = (
                r.n_nodes is not None
                and r.n_nodes <= inst.task.machine.n_nodes
                and all(v.consistent for v in r.verdicts)
                and all_assignments_consistent(inst, r)
            )
            if not ok:
                failures.append(inst.describe())
                continue
            prof = depth_profile(inst)
            d_rep = next(d for d, rep, _ in prof if rep)
            d_all = prof[-1][0]
            if any(not rep for d, rep, _ in prof if d > d_rep):
                flips.append((fam, seed, [d for d, rep, _ in prof if rep]))
            rows.append((fam, inst.n_states, inst.task.machine.n_nodes, l, d_rep, d_all, r.n_nodes, seed))
            if d_rep > 2:
                shallow.append((fam, seed, d_rep, l))
    total = len(rows)
    elapsed = time.perf_counter() - t0

    print(
        f"{total + len(failures)} instances ({per_family} per family), u_max = 2, l = |S|·u_max² "
        f"(4, 8 or 12); {elapsed:.1f} s"
    )
    print(f"Theorem 1 at depth l: {total} hold, {len(failures)} counterexamples")
    for f in failures:
        print("COUNTEREXAMPLE:\n" + f)
    if not total:
        return 1

    histogram(
        "\nsmallest sufficient depth d (every enumerated solution consistent):", Counter(r[4] for r in rows), total
    )
    histogram(
        "\nsmallest sufficient depth d (every satisfying assignment consistent):", Counter(r[5] for r in rows), total
    )
    bins = [(0, 0.125), (0.125, 0.25), (0.25, 0.375), (0.375, 0.5), (0.5, 0.75), (0.75, 1.0001)]

    def ratio_hist(idx: int, title: str, subset) -> None:
        c = Counter()
        for r in subset:
            x = r[idx] / r[3]
            c[next(i for i, (lo, hi) in enumerate(bins) if lo < x <= hi or (i == 0 and x <= hi))] += 1
        histogram(title, c, len(subset), fmt=lambda i: f"({bins[i][0]:.3g},{min(bins[i][1], 1):.3g}]")

    ratio_hist(4, "\nd / l (enumerated solutions):", rows)
    ratio_hist(5, "\nd / l (every satisfying assignment):", rows)

    print(
        "\nper family: instances, mean d (solutions / assignments), max d, mean l, "
        "share with d = 1, true machines with 2 nodes"
    )
    for fam in FAMILIES:
        sub = [r for r in rows if r[0] == fam]
        if not sub:
            continue
        print(
            f"  {fam[0]:>14} / {fam[1]:<12} {len(sub):4d}  "
            f"{sum(r[4] for r in sub) / len(sub):.2f} / {sum(r[5] for r in sub) / len(sub):.2f}  "
            f"max {max(r[5] for r in sub):2d}  l {sum(r[3] for r in sub) / len(sub):.1f}  "
            f"d=1 {100 * sum(r[5] == 1 for r in sub) / len(sub):5.1f}%  "
            f"2 nodes {sum(r[2] == 2 for r in sub)}"
        )
    print("\nby |S|: max d (assignments) / l")
    for S in sorted({r[1] for r in rows}):
        sub = [r for r in rows if r[1] == S]
        print(f"  |S| = {S}: {len(sub):4d} instances, max d {max(r[5] for r in sub)}, l = {sub[0][3]}")
    two = [r for r in rows if r[6] == 2]
    histogram(
        f"\nonly the {len(two)} instances whose smallest policy-equivalent machine has 2 nodes, "
        "smallest sufficient depth d (every satisfying assignment):",
        Counter(r[5] for r in two),
        len(two),
    )
    ratio_hist(5, "d / l for them:", two)
    gap = [r for r in rows if r[5] > r[4]]
    print(f"\ninstances where the enumerated solutions were consistent before every completion was: {len(gap)}")
    for r in gap:
        print(f"  {r[0][0]} / {r[0][1]} seed {r[7]}: d = {r[4]} (solutions), {r[5]} (assignments)")
    print(f"instances where 'every enumerated solution consistent' is not monotone in the depth: {len(flips)}")
    for fam, seed, ok in flips:
        print(
            f"  {fam[0]} / {fam[1]} seed {seed}: enumerated solutions all consistent only at depths {ok} "
            "(then at every larger depth)"
        )
    print(f"instances needing depth > 2 for the enumerated solutions: {len(shallow)}")
    for fam, seed, d, l in sorted(shallow, key=lambda x: -x[2])[:10]:
        print(f"  {fam[0]} / {fam[1]} seed {seed}: d = {d}, l = {l}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
