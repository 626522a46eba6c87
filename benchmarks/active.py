"""Benchmark of active learning from the exact expert, beside learning at every depth.

One row per task and learner, each in a fresh interpreter (``peak MB``: the process's maximum
resident set, imports included; ``cpu s``: the fit's process CPU time, which the machine's
load does not inflate; ``s``: its wall time):

* ``every depth``: ``Learner(ExactPTP(None), irl=None)``, the reference of the same run; it
  reads the expert's policy class at every (state, memory node) its product reaches
  (``reads``);
* ``active``: ``ActiveLearner(irl=None).fit(task, TaskExpert(task))`` from no data: a
  hypothesis and a few rivals per round, the exact check's counterexamples, the survivors listed
  at the end (docs/design/12-active-learning.md); ``reads`` is its policy evaluations.

Rows: the Craft World's ten tasks (``models/craft.rm``, map_0) and the Office World's patrol
(``models/office.rm``). Targets (exit status 1 when one
fails): the active row finds the truth, consistent at every depth, in ≤ 60 CPU s and ≤ 1,024 MB,
and on the Craft World with fewer evaluations than the every-depth row reads (on the Office
World's patrol it asks more than the 512 (state, node) classes: its counterexamples are long).

    PYTHONPATH=. python benchmarks/active.py [--rows t1 t10 office_patrol] [--markdown]
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

MARK = "@@active "
MODELS = Path(__file__).resolve().parent.parent / "models"
CRAFT = [f"t{i}" for i in range(1, 11)]
ROWS = CRAFT + ["office_patrol"]
TARGET_CPU, TARGET_MB = 60.0, 1024


def _task(name: str):
    from rmtk import dsl

    if name == "office_patrol":
        return dsl.load(MODELS / "office.rm").tasks["patrol"]
    return dsl.load(MODELS / "craft.rm").tasks[name]


def _reads(task) -> int:
    """(state, memory node) pairs the expert's product reaches: what every-depth learning reads."""
    import numpy as np

    from rmtk.machine.equivalence import sync_product

    true = task.machine.delta_u[:, task.letter_of_proposition]
    prod = sync_product(task.mdp, true, np.zeros((1, true.shape[1]), np.int64), init_a=task.machine.initial)
    return len(np.unique(prod.states * true.shape[0] + prod.a))


def one(name: str, mode: str) -> dict:
    from rmtk.active import ActiveLearner, TaskExpert
    from rmtk.learner.pipeline import ExactPTP, Learner

    task = _task(name)
    c0, t0 = time.process_time(), time.perf_counter()
    if mode == "active":
        run = ActiveLearner(irl=None).fit(task, TaskExpert(task))
        r = run.result
        out = dict(reads=run.evaluations, rounds=len(run.rounds), queries=run.queries)
    else:
        r = Learner(ExactPTP(None), irl=None).fit(task)
        out = dict(reads=_reads(task), rounds=r.search.lazy.rounds, queries=0)
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    out.update(
        n=r.n_nodes,
        machines=len(r.machines),
        truth=r.isomorphic_to_truth() == (True,) and all(v.consistent for v in r.verdicts or ()),
        cpu=round(cpu, 2),
        s=round(wall, 2),
        mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    )
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", nargs="+", choices=ROWS, default=ROWS)
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--one", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(MARK + json.dumps(one(*args.one)), flush=True)
        return 0
    rows, failed = [], []
    for name in args.rows:
        got = {}
        for mode in ("every depth", "active"):
            rec = run_child(__file__, [name, mode.split()[0]], MARK, f"{name} {mode}")
            got[mode] = rec
            ok = ""
            if mode == "active":
                checks = (
                    rec["truth"],
                    rec["cpu"] <= TARGET_CPU,
                    rec["mb"] <= TARGET_MB,
                    name == "office_patrol" or rec["reads"] < got["every depth"]["reads"],
                )
                ok = "PASS" if all(checks) else "FAIL"
                if ok == "FAIL":
                    failed.append(name)
            rows.append(
                {
                    "task": name,
                    "learner": mode,
                    "n": rec["n"],
                    "machines": rec["machines"],
                    "truth": "yes" if rec["truth"] else "no",
                    "evaluations read": f"{rec['reads']:,}",
                    "rounds": rec["rounds"],
                    "cpu s": f"{rec['cpu']:.2f}",
                    "s": f"{rec['s']:.2f}",
                    "peak MB": rec["mb"],
                    "target": ok,
                }
            )
            print(f"{name} {mode}: {rec}", file=sys.stderr, flush=True)
    print(render(rows, args.markdown, left=frozenset({"task", "learner"})))
    if failed:
        print(f"targets missed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
