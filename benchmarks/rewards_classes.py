"""Benchmark: rmtk's inference from reward traces in two machine classes beside JIRP's, on the
same traces (docs/benchmarks/rewards.md, "Two machine classes").

* **rmtk's class** (its default): non-stuttering machines over compressed words
  (``SimplestEncoder()``).
* **JIRP's class**: machines that may stutter, over raw words (``SimplestEncoder(
  non_stuttering=False)``: every step a letter). JIRP also infers where episodes end (a
  terminal state entered by the last step of every episode that did not reach the horizon);
  rmtk does not (the end node is not learned: the transitions into it are left free), so its
  class here is JIRP's without the terminal constraints.

The traces are those of the rows of docs/benchmarks/rewards.md, sections 1 and 4 (:data:`ROWS`:
the explorer and the episodes found there, seed 0). Each rmtk fit (the whole ``Learner.fit``:
counting the traces, the search, the listing) runs ``--repeat`` times in this process, after a
first fit not timed, on the task without its machine (the inference alone, as JIRP's: a fit
given the true machine also judges each answer against it, ``rmtk.traces.verdicts``); JIRP's
whole search over the sizes (``sat_hyp`` of the public repository
corazza/stochastic-reward-machines, run by benchmarks/rewards_jirp.py in its own environment)
``--repeat`` times in one child, limited to ``--jirp-limit`` CPU seconds a run. Reported: CPU
seconds, medians and the range over the runs; the ratio JIRP / rmtk of the medians and its
range (JIRP's slowest over rmtk's fastest, JIRP's fastest over rmtk's slowest). Reference of
the same run: ``python -c "import numpy"`` in a child.

    PYTHONPATH=. python benchmarks/rewards_classes.py --jirp /tmp/srm/src \\
        --jirp-python /tmp/srm-venv/bin/python [--tasks coffee t1] [--repeat 5] [--markdown]
    PYTHONPATH=../other-checkout python benchmarks/rewards_classes.py   # rmtk alone, another rmtk
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import attrs
from _table import render  # the script's folder is on sys.path
from rewards import agrees, jirp_machine, jirp_traces, load, numpy_import_seconds, run_limited, traces

#: task: (explorer, episodes) of docs/benchmarks/rewards.md (section 1: the ε-greedy expert;
#: section 4: random subgoals), whose traces give rmtk the truth alone in its own class.
ROWS = {
    "coffee": ("expert", 400),
    "mail": ("expert", 800),
    "coffee_mail": ("expert", 800),
    "t1": ("expert", 25),
    "t2": ("expert", 50),
    "t3": ("expert", 1600),
    "t4": ("expert", 100),
    "t8": ("expert", 50),
    "patrol": ("subgoals", 200),
    "t5": ("subgoals", 200),
    "t9": ("subgoals", 400),
    "t6": ("subgoals", 800),
    "t7": ("subgoals", 800),
}
CLASSES = {"rmtk": True, "JIRP's": False}  # class: non_stuttering


def rmtk_fits(task, demos, non_stuttering: bool, repeat: int):
    """CPU seconds of ``repeat`` fits (after one not timed) and the last result."""
    from rmtk import Learner
    from rmtk.sat.encoders import SimplestEncoder
    from rmtk.traces.evidence import TraceRewards

    encoder = SimplestEncoder(non_stuttering=non_stuttering)
    blind = attrs.evolve(task, machine=None)  # the inference alone: no verdict against the truth

    def fit():
        return Learner(ptp=None, rewards=TraceRewards(demos), encoder=encoder).fit(blind)

    fit()
    cpu = []
    for _ in range(repeat):
        c = time.process_time()
        r = fit()
        cpu.append(time.process_time() - c)
    return cpu, r


def jirp_runs(args, task, demos, max_states: int) -> dict:
    """JIRP's whole search on the traces, ``--repeat`` times in one child: its per-run CPU
    seconds and its first machine (``None`` when stopped by the CPU limit)."""
    from rewards import WORLDS, world_of

    other = WORLDS[world_of(task.name)][1]
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"traces": jirp_traces(task, demos, other)}, f)
    script = str(Path(__file__).with_name("rewards_jirp.py"))
    cmd = [args.jirp_python, script, "--src", args.jirp, "--method", "sat", "--traces", f.name]
    cmd += ["--max-states", str(max_states), "--repeat", str(args.repeat)]
    env = dict(os.environ, PYTHONHASHSEED="0")  # its sets of traces iterate in hash order
    try:
        code, stdout = run_limited(cmd, env, args.jirp_limit * args.repeat)
    finally:
        Path(f.name).unlink()
    lines = [ln for ln in stdout.splitlines() if ln.startswith("@@jirp ")]
    if code is None or not lines:
        return dict(cpus=None, states=None, truth=None)
    rec = json.loads(lines[-1][len("@@jirp ") :])
    truth = None
    if rec["states"] is not None:
        truth = agrees(task, demos, *jirp_machine(task, rec, other))
    return dict(cpus=rec["cpus"], states=rec["states"], truth=truth)


def spread(values) -> str:
    """The median and the range, to four decimals under 0.1 s (the small rows' few ms)."""
    places = 4 if max(values) < 0.1 else 3
    return f"{statistics.median(values):.{places}f} ({min(values):.{places}f}–{max(values):.{places}f})"


def ratio(peer, own) -> str:
    """JIRP / rmtk: of the medians, and its range over the runs."""
    mid = statistics.median(peer) / statistics.median(own)
    return f"{mid:.1f} ({min(peer) / max(own):.1f}–{max(peer) / min(own):.1f})"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", nargs="*", default=list(ROWS))
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--jirp", help="src folder of corazza/stochastic-reward-machines (none: rmtk alone)")
    ap.add_argument("--jirp-python", default=sys.executable, help="the python with that repository's dependencies")
    ap.add_argument("--jirp-limit", type=float, default=600.0, help="CPU seconds a JIRP run may take")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args(argv)
    ref = numpy_import_seconds()
    rows = []
    for name in args.tasks:
        kind, episodes = ROWS[name]
        task = load(name)
        demos, label = traces(name, task, episodes, 0, kind)
        row = {"task": name, "explorer": label, "episodes": episodes, "steps": int(demos.lengths.sum())}
        cpus = {}
        for cls, ns in CLASSES.items():
            cpu, r = rmtk_fits(task, demos, ns, args.repeat)
            cpus[cls] = cpu
            row[f"{cls} class: nodes"] = r.n_nodes
            row[f"{cls} class: rmtk CPU s"] = spread(cpu)
            print(f"{name}: {cls} class {r.n_nodes} nodes, {len(r.machines)} machines, {spread(cpu)}", file=sys.stderr)
        if not args.jirp:
            rows.append(row)
            continue
        j = jirp_runs(args, task, demos, max_states=row["rmtk class: nodes"] + 1)
        row["JIRP states"] = j["states"] if j["states"] is not None else "—"
        row["JIRP CPU s"] = spread(j["cpus"]) if j["cpus"] else f"not done in {args.jirp_limit:g}"
        for cls in CLASSES:
            row[f"× in {cls} class"] = ratio(j["cpus"], cpus[cls]) if j["cpus"] else "—"
        print(f"{name}: JIRP {row['JIRP CPU s']}", file=sys.stderr, flush=True)
        rows.append(row)
    print(render(rows, args.markdown, frozenset({"task"})))
    print()
    print(f"same-run reference: `python -c 'import numpy'` in a child {ref[0]:.2f} s wall, {ref[1]:.2f} s CPU")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
