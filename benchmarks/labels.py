"""Benchmark of learning the labels with the machine, from the exact expert at every depth.

One row per (task, learner): ``labels`` learns (labeling, machine) pairs from state histories
(``LabelLearner()``, nothing known unless the row says so); ``given`` is the label-given learner
on the same task (``Learner(ExactPTP(None))``), the reference of the same run. Each row runs in
a fresh interpreter, so that ``peak MB`` is the process's maximum resident set (imports
included) and ``s`` the wall time of the fit alone (``cpu s``: its process CPU time, which the
machine's load does not inflate; ``py MB``: the peak of Python and numpy allocations during the
fit, from tracemalloc, with ``--tracemalloc`` only, since tracing slows the run). Columns: nodes
n and propositions k, the pairs (or machines), how many are policy-equivalent to the truth at
every depth and equal to it up to renaming or merging only true propositions the expert does not
tell apart, the free states of the pairs, the counterexamples, the sizes ruled out, whether every
step finished (``complete``: a row with a time limit reports what it proved, flagged), and the
target (PASS/FAIL on CPU seconds, memory and, with a time limit, the wall time within 1.5 times
the limit).

Rows: the shipped grid and block worlds, the Office World (``office_patrol`` with nothing
known; ``_plain``: its plain cells known to share a label), the Craft World's ten tasks
(models/craft.rm, 1,521 states, each with the limit of ``--learn-labels --time-limit 120``;
targets on t1–t4: complete, policy-equivalent, ≤ 120 CPU s and ≤ 1 GB; on t5–t10: back within
the limit and a half with a policy-equivalent pair or flagged), and ``craft_t10_limit``: t10 with
a 30 s limit, which must return within 45 s, flagged.

    PYTHONPATH=. python benchmarks/labels.py [--rows patrol craft_t1 ...] [--markdown] [--tracemalloc]
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

from _child import run_child  # the script's folder is on sys.path
from _table import render

MARK = "@@labels "
MODELS = Path(__file__).resolve().parent.parent / "models"

# name: (model, task, target CPU seconds, target MB, time limit or None, complete wanted)
ROWS = {
    "patrol": ("patrol", "patrol", 5.0, 500, None, True),
    "stack_avoid": ("stack_avoid", "stack_avoid", 5.0, 500, None, True),
    "coffee": ("office", "coffee", 60.0, 1024, None, True),
    "mail": ("office", "mail", 60.0, 1024, None, True),
    "office_patrol": ("office", "patrol", 120.0, 1024, None, True),  # nothing known
    "office_patrol_plain": ("office", "patrol", 60.0, 1024, None, True),  # plain cells known to share a label
    **{f"craft_t{i}": ("craft", f"t{i}", 120.0, 1024, 120.0, i <= 4) for i in range(1, 11)},
    "craft_t10_limit": ("craft", "t10", 45.0, 1024, 30.0, False),
}
DEFAULT = ["patrol", "stack_avoid", "coffee", "office_patrol", "craft_t1", "craft_t2", "craft_t3", "craft_t4"]


def one(name: str, mode: str, trace: str = "0") -> dict:
    import tracemalloc

    import numpy as np

    from rmtk import dsl
    from rmtk.labels import LabelLearner
    from rmtk.learner.pipeline import ExactPTP, Learner

    model, task_name, _, _, limit, _ = ROWS[name]
    task = dsl.load(MODELS / f"{model}.rm").tasks[task_name]
    if trace == "1":
        tracemalloc.start()
    c0, t0 = time.process_time(), time.perf_counter()
    if mode == "labels":
        shared = ()
        if name.endswith("_plain"):  # what a user sees on the map: the most common cell kind is one proposition
            plain = np.bincount(task.mdp.labels).argmax()
            shared = ([s for s, lab in zip(task.mdp.states, task.mdp.labels) if lab == plain],)
        r = LabelLearner(shared=shared, time_limit=limit).fit(task)
        judged = [v for v in r.verdicts if v is not None]
        out = dict(
            n=r.n_nodes,
            k=r.n_props,
            found=len(r.solutions),
            consistent=sum(v.consistent for v in judged),
            equal=sum(v.equal for v in judged),
            merges=sum(v.merges_truth for v in judged),
            free=sum(len(s.free or ()) for s in r.solutions),
            cex=r.search.counterexamples,
            ruled_out=len(r.search.ruled_out),
            truth=list(r.truth_size),
            complete="yes" if r.complete else "no: " + "; ".join(r.unfinished),
        )
    else:
        r = Learner(ExactPTP(None), irl=None, time_limit=limit).fit(task)
        out = dict(
            n=r.n_nodes,
            k=task.mdp.n_propositions,
            found=r.distinct_count,
            consistent=sum(v.consistent for v in r.verdicts),
            equal=sum(r.isomorphic_to_truth()),
            merges="-",
            free="-",
            cex=r.search.lazy.counterexamples,
            ruled_out="-",
            truth="-",
            complete="yes" if r.search.complete else "no",
        )
    out.update(s=time.perf_counter() - t0, cpu=time.process_time() - c0)
    if trace == "1":
        out["py"] = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    out["peak"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def verdict(name: str, r: dict) -> tuple[bool, str]:
    """PASS/FAIL of a labels row against its targets: complete and policy-equivalent within the
    CPU seconds and memory; or, for a row with a time limit that need not finish, back within
    1.5 times the limit with a policy-equivalent pair or flagged."""
    _, task, sec, mb, limit, complete = ROWS[name]
    ok = r["cpu"] <= sec and r["peak"] <= mb
    if complete:
        ok = ok and r["complete"] == "yes" and r["consistent"] >= 1
        what = f"<= {sec:g} CPU s, {mb} MB, complete, policy-equivalent"
    else:
        ok = ok and r["s"] <= 1.5 * limit and (r["consistent"] >= 1 or r["complete"] != "yes")
        what = f"limit {limit:g} s: back within {1.5 * limit:g} s, {mb} MB, an equivalent pair or flagged"
    return ok, f"{'PASS' if ok else 'FAIL'} ({what})"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", nargs="+", choices=sorted(ROWS), default=DEFAULT)
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--tracemalloc", action="store_true", help="also the peak of Python/numpy allocations (slower)")
    ap.add_argument("--one", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        print(MARK + json.dumps(one(*args.one)))
        return 0
    rows, failed = [], False
    for name in args.rows:
        for mode in ("labels", "given"):
            print(f"{name} {mode} ...", file=sys.stderr)
            r = run_child(__file__, [name, mode, "1" if args.tracemalloc else "0"], MARK, f"{name} {mode}")
            target = ""
            if mode == "labels":
                ok, target = verdict(name, r)
                failed |= not ok
            row = {
                "task": name,
                "learner": mode,
                "n": r["n"],
                "k": r["k"],
                "found": r["found"],
                "consistent": r["consistent"],
                "equal truth": r["equal"],
                "merges truth": r["merges"],
                "free states": r["free"],
                "cex": r["cex"],
                "ruled out": r["ruled_out"],
                "complete": r["complete"],
                "s": f"{r['s']:.2f}",
                "cpu s": f"{r['cpu']:.2f}",
                "peak MB": f"{r['peak']:.0f}",
            }
            if args.tracemalloc:
                row["py MB"] = f"{r['py']:.0f}"
            row["target"] = target
            rows.append(row)
    print(render(rows, args.markdown, left=frozenset({"task", "learner", "complete", "target"})))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
