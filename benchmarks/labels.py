"""Benchmark of learning the labels with the machine, from the exact expert at every depth.

One row per (task, learner): ``labels`` learns (labeling, machine) pairs from state histories
(``LabelLearner()``, the exact expert at every depth); ``given`` is the label-given learner
on the same task (``Learner(ExactPTP(None))``), the reference of the same run. Each row runs in
a fresh interpreter, so that ``peak MB`` is the process's maximum resident set (imports
included) and ``s`` the wall time of the fit alone (``cpu s``: its process CPU time, which
the machine's load does not inflate). Columns: nodes n and propositions k, the pairs (or
machines), how many are policy-equivalent to the truth at every depth and equal to it up to
renaming or merging only true propositions the expert does not tell apart, the free states of the
pairs, the counterexamples, the sizes ruled out, whether the search finished (``complete``: a
row with a time limit reports what it proved, its best pair flagged), and the target
(PASS/FAIL on seconds and memory).

    PYTHONPATH=. python benchmarks/labels.py [--rows patrol stack_avoid coffee ...] [--markdown]
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

# name: (model, task, target seconds, target MB)
ROWS = {
    "patrol": ("patrol", "patrol", 5.0, 500),
    "stack_avoid": ("stack_avoid", "stack_avoid", 5.0, 500),
    "coffee": ("office", "coffee", 60.0, 1024),
    "mail": ("office", "mail", 60.0, 1024),
    "office_patrol": ("office", "patrol", 60.0, 1024),  # nothing known, with a time limit
    "office_patrol_plain": ("office", "patrol", 60.0, 1024),  # the plain cells known to share a label
}
#: Seconds of search allowed to a row (the search then reports what it proved, flagged).
TIME_LIMIT = {"office_patrol": 50.0}


def one(name: str, mode: str) -> dict:
    import numpy as np

    from rmtk import dsl
    from rmtk.labels import LabelLearner
    from rmtk.learner import ExactPTP, Learner

    model, task_name, _, _ = ROWS[name]
    task = dsl.load(MODELS / f"{model}.rm").tasks[task_name]
    c0, t0 = time.process_time(), time.perf_counter()
    if mode == "labels":
        shared = ()
        if name.endswith("_plain"):  # what a user sees on the map: the most common cell kind is one proposition
            plain = np.bincount(task.mdp.labels).argmax()
            shared = ([s for s, lab in zip(task.mdp.states, task.mdp.labels) if lab == plain],)
        r = LabelLearner(shared=shared, time_limit=TIME_LIMIT.get(name)).fit(task)
        out = dict(
            n=r.n_nodes,
            k=r.n_props,
            found=len(r.solutions),
            consistent=sum(v.consistent for v in r.verdicts),
            equal=sum(v.equal for v in r.verdicts),
            merges=sum(v.merges_truth for v in r.verdicts),
            free=sum(len(s.free or ()) for s in r.solutions),
            cex=r.search.counterexamples,
            ruled_out=len(r.search.ruled_out),
            truth=list(r.truth_size),
            complete="yes" if r.search.complete else "no",
        )
    else:
        r = Learner(ExactPTP(None), irl=None).fit(task)
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
    out.update(
        s=time.perf_counter() - t0,
        cpu=time.process_time() - c0,
        peak=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    )
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", nargs="+", choices=sorted(ROWS), default=["patrol", "stack_avoid", "coffee"])
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--one", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        print(MARK + json.dumps(one(*args.one)))
        return 0
    rows, failed = [], False
    for name in args.rows:
        for mode in ("labels", "given"):
            print(f"{name} {mode} ...", file=sys.stderr)
            r = run_child(__file__, [name, mode], MARK, f"{name} {mode}")
            _, _, sec, mb = ROWS[name]
            ok = r["s"] <= sec and r["peak"] <= mb
            failed |= mode == "labels" and not ok
            rows.append(
                {
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
                    "target": (f"{'PASS' if ok else 'FAIL'} (<= {sec:g} s, {mb} MB)" if mode == "labels" else ""),
                }
            )
    print(render(rows, args.markdown, left=frozenset({"task", "learner", "target"})))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
