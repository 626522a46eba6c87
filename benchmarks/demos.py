"""Benchmark of learning from demonstrations on the block world (simulate → count → mine → MaxSAT).

One table row per (task, N): N trajectories of T = 20 steps on ``models/stack.rm`` (task
``stack``) and ``models/stack_avoid.rm`` (task ``stack_avoid``), for N = 10^3 … 10^6. The
stages and what each row reports:

* ``sim_s`` — :func:`rmtk.product.simulate.simulate` ``(task, N, 20, seed)``; it includes solving the
  soft Bellman equations for the expert's policy (milliseconds, once per call);
* ``count_s`` — :func:`rmtk.ptp.empirical.empirical_policy`: counting the demonstrations into the
  empirical prefix tree policy; ``pairs`` its (word, state) pairs, ``trie`` its label words
  (trie nodes incl. the root);
* ``mine_s`` — ``ConfidenceMiner(alpha=0.05).mine``: negative word pairs by the Weissman
  confidence bound (paper eq. 18-19); ``neg`` is |E⁻|;
* ``maxsat_s`` — encoding and weighted MaxSAT with unit weights at exactly 3 nodes
  (``MaxSatEncoder().search``), including the enumeration of every optimal machine
  (:func:`rmtk.sat.search.maxsat_search`); ``cost`` the optimal cost (violated
  negatives), ``machines`` the optimal machines up to renaming, ``raw`` their raw
  solution count (the paper's count);
* ``mine+maxsat_s`` — the sum of the two;
* ``pk_*`` — the peak Python/numpy allocation of each stage in MiB (tracemalloc: numpy's
  buffers are tracked, the SAT solver's C++ heap is not), measured above what was allocated
  when the stage began, so the simulate peak includes the demonstrations it returns;
* ``rss`` — the maximum resident set size of the process that ran the row (timed pass).

Each (task, N) runs in a fresh interpreter (this script with ``--one``), so one row's memory
cannot inflate another's and ``rss`` is that row's own. Inside it, a warm-up run of every
stage on 200 trajectories comes first (imports, lazy set-up, SAT solver loading), then the
timed pass (``time.perf_counter`` per stage, tracemalloc off since it slows allocation), then
a second, untimed pass of the same stages under tracemalloc for the peaks. Both passes use
the same seed, hence the same data.

The expert. At the paper's λ = 1 the stack task (reward 1 per completed cycle, γ = 0.99) is
dominated by the entropy term: the soft-optimal policy is nearly uniform, its rows at the
three machine nodes differ by at most 0.06 in total variation, and the confidence bound then
needs thousands of visits of two words at the same state before it separates them (0
negatives at N = 10^5, 3 at 10^6, leaving hundreds of optimal machines). The stack expert is
therefore sharpened to λ = 0.05 (``--stack-lambda``); stack_avoid keeps its shipped λ = 1
(``--stack-avoid-lambda`` overrides it), whose policy already differs strongly between nodes.

Targets, checked at N = 10^6 for every task (exit status 1 if one fails): simulate ≤ 15 s;
count ≤ 5 s with peak allocation ≤ 2 GB (2048 MiB); mine + MaxSAT ≤ 15 s.

    PYTHONPATH=. python benchmarks/demos.py                  # N = 1e3 1e4 1e5 1e6, both tasks
    PYTHONPATH=. python benchmarks/demos.py --quick          # N = 1e3 1e4 (smoke test)
    PYTHONPATH=. python benchmarks/demos.py --tasks stack --sizes 1e5 --markdown
    PYTHONPATH=. python benchmarks/demos.py --stack-lambda 1 --seed 3

**The Craft World** (``--craft``): every task of ``models/craft.rm`` (or ``--model FILE``), run as
a new user would, one process each: ``rmtk simulate`` writes N = 10^4 episodes of 150 steps
(``--craft-n``, ``--craft-horizon``), then ``rmtk learn FILE TASK --demos DATA`` with the
command line's defaults (at most :data:`rmtk.learner.pipeline.DEMOS_MAX_SOLUTIONS` machines listed,
their verdicts and rewards) and, as the same-run reference, the exact label-given run
``rmtk learn FILE TASK`` (every depth). Each process is measured by ``os.wait4``: CPU seconds
(user + system) and peak RSS. The row also reads the report: nodes, machines printed, the
survivors line, how many listed machines are policy-equivalent to the truth, whether the
truth keeps the negative examples, and a stop flag. Targets per task (exit status 1 if one
fails): the demonstrations run ≤ 120 CPU s and ≤ 1 GB, at most ``max_solutions`` machines
printed, with the survivors summary. ``--craft-limit S`` adds one run per task with
``--max-solutions 100000 --time-limit S``, which must return within 1.5 S wall, flagged.

    PYTHONPATH=. python benchmarks/demos.py --craft                     # t1 ... t10
    PYTHONPATH=. python benchmarks/demos.py --craft --craft-tasks t1 t5 --craft-limit 30
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from _child import run_child as child  # the script's folder is on sys.path
from _child import size
from _table import render

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "models"
TASKS = ("stack", "stack_avoid")
HORIZON = 20
ALPHA = 0.05
NODES = 3
WARMUP_N = 200
MARK = "@@demos-bench@@ "
STAGES = ("sim", "count", "mine", "maxsat")

# targets at N = TARGET_N
TARGET_N = 10**6
SIM_MAX_S = 15.0
COUNT_MAX_S = 5.0
COUNT_MAX_MB = 2048.0
MINE_MAXSAT_MAX_S = 15.0

MiB = 2**20


# --------------------------------------------------------------------------- child process
def load_task(name: str, lam: float | None):
    import attrs

    from rmtk import dsl

    task = dsl.load(MODELS / f"{name}.rm").tasks[name]
    return task if lam is None else attrs.evolve(task, lam=lam)


def run_stages(task, n: int, seed: int, clock, out: dict | None = None) -> dict:
    """Run simulate → count → mine → MaxSAT; ``clock`` wraps each stage and returns its
    measurement (seconds or peak bytes). Returns the measurements and the outcome."""
    from rmtk.limits import SearchLimits
    from rmtk.negatives.miners import ConfidenceMiner
    from rmtk.product.simulate import simulate
    from rmtk.ptp.empirical import empirical_policy
    from rmtk.sat.encoders import MaxSatEncoder
    from rmtk.sat.encoding import Problem

    m = {}
    demos, m["sim"] = clock(lambda: simulate(task, n, HORIZON, seed=seed))
    ptp, m["count"] = clock(lambda: empirical_policy(task.mdp, demos))
    neg, m["mine"] = clock(lambda: ConfidenceMiner(alpha=ALPHA).mine(ptp))

    def solve():
        return MaxSatEncoder().search(Problem(ptp.trie, task.mdp.n_propositions, neg), SearchLimits(max_nodes=NODES))

    res, m["maxsat"] = clock(solve)
    if out is not None:
        out.update(
            steps=int(demos.n_steps),
            pairs=int(ptp.n_pairs),
            trie=int(ptp.trie.n_nodes),
            neg=len(neg),
            cost=None if res.cost is None else int(res.cost),
            machines=len(res.solutions),
            raw=int(res.raw_count),
        )
    return m


def wall(fn):
    gc.collect()
    t0 = time.perf_counter()
    r = fn()
    return r, time.perf_counter() - t0


def peak(fn):
    gc.collect()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    r = fn()
    return r, tracemalloc.get_traced_memory()[1] - base


def max_rss_bytes() -> int:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss * (1 if sys.platform == "darwin" else 1024)


def one(name: str, n: int, seed: int, lam: float | None) -> dict:
    task = load_task(name, lam)
    run_stages(task, WARMUP_N, seed + 1, wall)  # warm-up
    gc.collect()
    rec = {"task": name, "N": n, "lam": task.lam}
    secs = run_stages(task, n, seed, wall, rec)
    rec["rss"] = max_rss_bytes()
    gc.collect()
    tracemalloc.start()
    peaks = run_stages(task, n, seed, peak)
    tracemalloc.stop()
    rec["secs"], rec["peaks"] = secs, peaks
    return rec


# --------------------------------------------------------------------------- parent process
def run_child(name: str, n: int, args) -> dict:
    lam = args.stack_lambda if name == "stack" else args.stack_avoid_lambda
    extra = ["--lambda", repr(lam)] if lam is not None else []
    return child(__file__, [name, str(n), "--seed", str(args.seed), *extra], MARK, f"{name} N={n}")


def check(rec: dict) -> list[str]:
    """The failed targets of a row at N = 10^6 (empty: all pass or not a target row)."""
    if rec["N"] != TARGET_N:
        return []
    s, p = rec["secs"], rec["peaks"]
    fails = []
    if s["sim"] > SIM_MAX_S:
        fails.append(f"simulate {s['sim']:.2f}s > {SIM_MAX_S:g}s")
    if s["count"] > COUNT_MAX_S:
        fails.append(f"count {s['count']:.2f}s > {COUNT_MAX_S:g}s")
    if p["count"] / MiB > COUNT_MAX_MB:
        fails.append(f"count peak {p['count'] / MiB:.0f}MB > {COUNT_MAX_MB:g}MB")
    if s["mine"] + s["maxsat"] > MINE_MAXSAT_MAX_S:
        fails.append(f"mine+MaxSAT {s['mine'] + s['maxsat']:.2f}s > {MINE_MAXSAT_MAX_S:g}s")
    return fails


def row(rec: dict) -> dict:
    s, p = rec["secs"], rec["peaks"]
    fails = check(rec)
    return {
        "task": rec["task"],
        "lam": f"{rec['lam']:g}",
        "N": f"{rec['N']:.0e}".replace("+0", ""),
        "steps": rec["steps"],
        "sim_s": f"{s['sim']:.3f}",
        "count_s": f"{s['count']:.3f}",
        "pairs": rec["pairs"],
        "trie": rec["trie"],
        "mine_s": f"{s['mine']:.3f}",
        "neg": rec["neg"],
        "maxsat_s": f"{s['maxsat']:.3f}",
        "mine+maxsat_s": f"{s['mine'] + s['maxsat']:.3f}",
        "cost": "-" if rec["cost"] is None else rec["cost"],
        "machines": rec["machines"],
        "raw": rec["raw"],
        **{f"pk_{st}": f"{p[st] / MiB:.1f}" for st in STAGES},
        "rss": f"{rec['rss'] / MiB:.0f}",
        "target": "-" if rec["N"] != TARGET_N else ("PASS" if not fails else "FAIL"),
    }


# --------------------------------------------------------------------------- the Craft World
CRAFT_TASKS = tuple(f"t{i}" for i in range(1, 11))
CRAFT_MAX_CPU_S = 120.0
CRAFT_MAX_RSS_MB = 1024.0
CRAFT_LISTED = 10  # rmtk.learner.pipeline.DEMOS_MAX_SOLUTIONS, the command line's default


def measured(cmd: list[str], out: Path) -> dict:
    """Run ``cmd`` (stdout to ``out``) as its own process: wall and CPU seconds, peak RSS (MiB),
    exit status."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    t0 = time.perf_counter()
    with open(out, "w") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.DEVNULL, env=env)
        _, status, ru = os.wait4(proc.pid, 0)
    return {
        "wall": time.perf_counter() - t0,
        "cpu": ru.ru_utime + ru.ru_stime,
        "rss": ru.ru_maxrss / (1 if sys.platform == "darwin" else 1024) / (MiB if sys.platform == "darwin" else 1),
        "status": os.waitstatus_to_exitcode(status),
    }


def read_report(text: str) -> dict:
    """What a row shows of an ``rmtk learn`` report."""

    def find(pattern, default="-"):
        m = re.search(pattern, text, re.M)
        return m.group(1) if m else default

    tried = re.findall(r"(\d+): sat", find(r"^# SAT: nodes tried (.*?);", ""))
    return {
        "nodes": tried[0] if tried else find(r"with (\d+) nodes"),
        "printed": len(re.findall(r"^machine ", text, re.M)),
        "survivors": find(r"^# survivors: (.*?) machines? with", "1" if "# survivors" not in text else "-"),
        "summary": "# survivors:" in text,
        "equivalent": find(r"^# policy-equivalent to the truth at every depth: (\d+ of the \d+)"),
        "truth": (
            "merges"
            if "# the truth merges" in text
            else "keeps, larger"
            if "nodes suffice for them" in text
            else "keeps"
            if "# the truth (" in text
            else "-"
        ),
        "fpr": find(r"false positive rate ([\d.]+%)"),
        "isomorphic": "isomorphic to the true machine" in text,
        "stopped": find(r"^# (stopped \(.*?\)) ", ""),
    }


def craft_rows(args) -> tuple[list[dict], list[str]]:
    model = Path(args.model) if args.model else MODELS / "craft.rm"
    if not model.exists():
        raise SystemExit(f"{model}: no such file (give the Craft World's model with --model FILE)")
    py = [sys.executable, "-m", "rmtk"]
    rows, fails = [], []
    with tempfile.TemporaryDirectory(prefix="rmtk-craft-demos-") as tmp:
        for task in args.craft_tasks:
            data, out = Path(tmp) / f"{task}.npz", Path(tmp) / f"{task}.txt"
            sim = measured(
                [
                    *py,
                    "simulate",
                    str(model),
                    task,
                    "-n",
                    str(args.craft_n),
                    "-T",
                    str(args.craft_horizon),
                    "--seed",
                    str(args.seed),
                    "-o",
                    str(data),
                    "--force",
                    "-q",
                ],
                out,
            )
            exact = measured([*py, "learn", str(model), task, "-q"], out)
            ref = read_report(out.read_text())
            demos = measured([*py, "learn", str(model), task, "--demos", str(data), "-q"], out)
            got = read_report(out.read_text())
            failed = []
            if demos["cpu"] > CRAFT_MAX_CPU_S:
                failed.append(f"{demos['cpu']:.1f} CPU s > {CRAFT_MAX_CPU_S:g}")
            if demos["rss"] > CRAFT_MAX_RSS_MB:
                failed.append(f"{demos['rss']:.0f} MB > {CRAFT_MAX_RSS_MB:g}")
            if got["printed"] > CRAFT_LISTED or not got["summary"] or demos["status"] != 0:
                failed.append(f"{got['printed']} machines printed, summary {got['summary']}, exit {demos['status']}")
            row = {
                "task": task,
                "sim_cpu": f"{sim['cpu']:.1f}",
                "exact_cpu": f"{exact['cpu']:.1f}",
                "exact_mb": f"{exact['rss']:.0f}",
                "exact_nodes": ref["nodes"],
                "exact_truth": "yes" if ref["isomorphic"] else "no",
                "demos_cpu": f"{demos['cpu']:.1f}",
                "demos_wall": f"{demos['wall']:.1f}",
                "demos_mb": f"{demos['rss']:.0f}",
                "nodes": got["nodes"],
                "printed": got["printed"],
                "survivors": got["survivors"],
                "equivalent": got["equivalent"],
                "fpr": got["fpr"],
                "truth": got["truth"],
            }
            if args.craft_limit:
                limited = measured(
                    [
                        *py,
                        "learn",
                        str(model),
                        task,
                        "--demos",
                        str(data),
                        "-q",
                        "--max-solutions",
                        "100000",
                        "--time-limit",
                        repr(args.craft_limit),
                    ],
                    out,
                )
                flag = read_report(out.read_text())["stopped"]
                row.update(limit_wall=f"{limited['wall']:.1f}", limit_flag=flag or "-")
                if limited["wall"] > 1.5 * args.craft_limit or limited["status"] not in (0, 1):
                    failed.append(f"--time-limit {args.craft_limit:g}: {limited['wall']:.1f} s wall")
            row["target"] = "PASS" if not failed else "FAIL"
            rows.append(row)
            fails += [f"{task}: {f}" for f in failed]
            print(f"# done {task}", file=sys.stderr, flush=True)
    return rows, fails


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--sizes",
        nargs="+",
        type=size,
        default=[10**3, 10**4, 10**5, 10**6],
        metavar="N",
        help="numbers of trajectories (default 1e3 1e4 1e5 1e6)",
    )
    ap.add_argument("--quick", action="store_true", help="sizes 1e3 1e4 only (smoke test)")
    ap.add_argument("--tasks", nargs="+", choices=TASKS, default=list(TASKS))
    ap.add_argument("--seed", type=int, default=0, help="simulation seed (default 0)")
    ap.add_argument(
        "--stack-lambda",
        type=float,
        default=0.05,
        help="entropy weight λ of the stack expert (default 0.05; the model file says 1)",
    )
    ap.add_argument(
        "--stack-avoid-lambda",
        type=float,
        default=None,
        help="entropy weight λ of the stack_avoid expert (default: as shipped, 1)",
    )
    ap.add_argument("--craft", action="store_true", help="the Craft World's tasks instead (see the docstring)")
    ap.add_argument("--model", metavar="FILE", help="with --craft: the model (default models/craft.rm)")
    ap.add_argument("--craft-tasks", nargs="+", default=list(CRAFT_TASKS), metavar="TASK")
    ap.add_argument("--craft-n", type=size, default=10_000, metavar="N", help="episodes (default 1e4)")
    ap.add_argument("--craft-horizon", type=size, default=150, metavar="T", help="steps (default 150)")
    ap.add_argument("--craft-limit", type=float, metavar="S", help="also a run per task with --time-limit S")
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    ap.add_argument("--one", nargs=2, metavar=("TASK", "N"), help=argparse.SUPPRESS)
    ap.add_argument("--lambda", dest="lam", type=float, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.one:  # child: one (task, N), result as a JSON line
        rec = one(args.one[0], size(args.one[1]), args.seed, args.lam)
        print(MARK + json.dumps(rec), flush=True)
        return 0

    if args.craft:
        rows, fails = craft_rows(args)
        print(
            f"# the Craft World from {args.craft_n} episodes of {args.craft_horizon} steps (seed {args.seed}), one "
            "process per run; CPU s = user + system, MB = peak RSS; exact = the label-given run at every depth "
            "(same-run reference)"
        )
        print(render(rows, args.markdown, frozenset({"task", "survivors", "equivalent", "truth", "limit_flag"})))
        for f in fails:
            print(f"# FAIL {f}")
        print(
            f"# targets: demonstrations <= {CRAFT_MAX_CPU_S:g} CPU s and <= {CRAFT_MAX_RSS_MB:g} MB, at most "
            f"{CRAFT_LISTED} machines printed with the summary: " + ("PASS" if not fails else "FAIL")
        )
        return 1 if fails else 0

    sizes = [10**3, 10**4] if args.quick else args.sizes
    recs = []
    for name in args.tasks:
        for n in sizes:
            recs.append(run_child(name, n, args))
            print(f"# done {name} N={n}", file=sys.stderr, flush=True)
    print(
        f"# learning from demonstrations, T={HORIZON}, seed={args.seed}, alpha={ALPHA}, MaxSAT at "
        f"{NODES} nodes; times in s, pk_* = peak allocation per stage in MiB (tracemalloc), "
        "rss = max RSS of the row's process in MiB"
    )
    print(render([row(r) for r in recs], args.markdown, frozenset({"task", "target"})))
    target_recs = [r for r in recs if r["N"] == TARGET_N]
    failed = False
    for r in target_recs:
        s, p = r["secs"], r["peaks"]
        fails = check(r)
        failed |= bool(fails)
        print(
            f"# {r['task']} N=1e6: simulate {s['sim']:.2f}s (<= {SIM_MAX_S:g}), "
            f"count {s['count']:.2f}s (<= {COUNT_MAX_S:g}) peak {p['count'] / MiB:.0f}MB (<= {COUNT_MAX_MB:g}), "
            f"mine+MaxSAT {s['mine'] + s['maxsat']:.2f}s (<= {MINE_MAXSAT_MAX_S:g}): "
            + ("PASS" if not fails else "FAIL: " + "; ".join(fails))
        )
    if not target_recs:
        print("# targets are checked at N = 1e6, not among the sizes run")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
