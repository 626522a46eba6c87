"""Benchmark: the Mining task of the stochastic-reward-machine paper (docs/benchmarks/rewards-mining.md).

The task (models/mining.rm, rebuilt from the public repository corazza/stochastic-reward-machines:
its map_13.txt and reward_machines/mine/t1.txt) pays 1 ± 0.1 (platinum) or 1.5 ± 0.1 (gold) on
delivery, the noise uniform as in the paper; rmtk's explorer records the machine's means and
:func:`rmtk.traces.noise.uniform_noise` adds the draw (``seed + 1``) to the paid rewards.

1. **rmtk**: ``Learner(ptp=None, rewards=TolerantRewards(demos, delta), encoder=SimplestEncoder())``
   with the paper's ``δ = 0.1`` given, and with ``δ`` estimated (``--estimate``). Episodes of the
   random-subgoal explorer (:class:`rmtk.traces.explorers.RandomSubgoals`, ε = 0.1, traps ``f``
   walked around, horizon 100), doubled from ``--start`` until the answer is *the truth* at ``n``
   and ``2n``: one machine, the search complete, every transition of the truth exercised, a
   one-to-one node map onto the truth's non-end nodes along the observed steps, and on every
   observed step the learned output within ``±δ`` of the truth's mean and its mean interval
   (:meth:`rmtk.traces.tolerance.NoiseWidth.mean_interval`) holding that mean. Reported: the noise
   half-width's interval (uniform noise) and whether it holds the true 0.1.
2. **Side by side** (``--srm SRC --srm-python PY``): the same episodes in the repository's trace
   format (benchmarks/rewards.py ``jirp_traces``) given to its S-JIRP inference (``smt_noise_cpp``,
   with its ε = 0.1) and to JIRP's SAT inference (``sat_hyp``, exact rewards), run unchanged by
   benchmarks/rewards_jirp.py in the repository's own environment, killed after ``--srm-limit`` s.
   Its machine is checked the same way (outputs within ±0.1 of the truth's means).

3. **The noise level** (``--widths N ...``): at fixed episode counts, δ = 0.1 given, the learned
   outputs with their mean intervals and the noise half-width's interval (it narrows with the
   deliveries observed: the paid steps are what show the noise).

Same-run reference: ``python -c "import numpy"`` in a child.

    PYTHONPATH=. python benchmarks/rewards_mining.py --seed 0 [--estimate] [--markdown] \\
        [--srm /tmp/srm/src --srm-python /tmp/srm-venv/bin/python --srm-limit 600] [--widths 400 1600 6400]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _table import render  # the script's folder is on sys.path
from rewards import agrees, exercised, jirp_machine, jirp_traces, numpy_import_seconds

HALF = 0.1  # the paper's noise: uniform in [-0.1, 0.1] around 1 and 1.5
EXPLORER = dict(epsilon=0.1, avoid=("f",))
HORIZON = 100
OTHER = "o"  # the unmarked cells' proposition: the repository's empty label


def load():
    from rmtk import dsl

    return dsl.load_model("mining").tasks["mining"]


def episodes(task, n: int, seed: int):
    """``n`` random-subgoal episodes with the Mining noise: (the machine's means, the noisy rewards)."""
    from rmtk.traces import RandomSubgoals, explore, uniform_noise

    clean = explore(task, n, HORIZON, seed=seed, explorer=RandomSubgoals(**EXPLORER))
    return clean, uniform_noise(clean, HALF, seed=seed + 1)


def agrees_within(task, demos, delta_u, delta_r, fit=None) -> bool:
    """A learned machine (over the MDP's propositions, initial node 0) is the truth on the observed
    steps: one-to-one onto the truth's non-end nodes and every step's output within ±HALF of the
    truth's mean (benchmarks/rewards.py ``agrees``); with rmtk's ``fit``, each output's mean interval
    also holds the truth's mean it stands for (the nearest: the means are more than 2·HALF apart)."""
    if not agrees(task, demos, delta_u, delta_r, rtol=0.0, atol=HALF + 1e-9):
        return False
    means = np.unique(task.machine.delta_r)
    for j, c in enumerate([] if fit is None else fit.centers.tolist()):
        lo, hi = fit.mean_interval(j)
        if not lo <= means[np.argmin(np.abs(means - c))] <= hi:
            return False
    return True


def learn(task, demos, delta):
    from rmtk import Learner
    from rmtk.sat.encoders import SimplestEncoder
    from rmtk.traces import TolerantRewards

    t0 = time.perf_counter()
    r = Learner(ptp=None, rewards=TolerantRewards(demos, delta=delta), encoder=SimplestEncoder()).fit(task)
    return r, time.perf_counter() - t0


def the_truth(task, demos, r) -> bool:
    if len(r.machines) != 1 or not r.search.complete:
        return False
    return agrees_within(task, demos, r.solutions[0].delta_u, r.machines[0].delta_r, r.noise)


def needed(task, seed: int, start: int, budget: int, delta, log) -> dict | None:
    """Double the episodes until the truth at ``n`` and ``2n``; the first such ``n``'s run."""
    from rmtk.errors import DataError

    n, first = start, None
    while n <= budget:
        clean, noisy = episodes(task, n, seed)
        try:
            r, secs = learn(task, noisy, delta)
        except DataError as e:  # e.g. no (word, letter) paid twice: nothing to estimate δ from
            log(f"{n} episodes: {e}")
            first, n = None, n * 2
            continue
        ok = the_truth(task, noisy, r) and exercised(task, clean)[0]
        log(
            f"{n} episodes, {int(noisy.lengths.sum())} steps: {r.n_nodes} nodes, {len(r.machines)} machines, "
            f"truth {ok}, {secs:.2f} s; {r.noise}"
        )
        if ok and first is not None:
            return first
        first = dict(n=n, demos=noisy, r=r, secs=secs) if ok else None
        n *= 2
    return None


def run_srm(args, task, demos, method: str, log) -> dict:
    """The repository's inference (``smt``: S-JIRP with ε = HALF; ``sat``: JIRP) on ``demos`` in a
    child of its own environment, killed after ``--srm-limit`` s; its machine checked."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"traces": jirp_traces(task, demos, OTHER)}, f)
    adapter = str(Path(__file__).with_name("rewards_jirp.py"))
    cmd = [args.srm_python, adapter, "--src", args.srm, "--method", method, "--traces", f.name]
    cmd += ["--max-states", str(task.machine.n_nodes + 1), "--epsilon", str(HALF), "--seed", str(args.seed)]
    env = dict(os.environ, PYTHONHASHSEED=str(args.seed))  # its sets of traces iterate in hash order
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=args.srm_limit)
    except subprocess.TimeoutExpired:
        return dict(ok=None, secs=None, states=None, note=f"not done in {args.srm_limit:g} s")
    finally:
        Path(f.name).unlink()
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("@@jirp ")]
    if not lines:
        log(proc.stderr[-2000:])
        return dict(ok=None, secs=None, states=None, note=f"failed (status {proc.returncode})")
    rec = json.loads(lines[-1][len("@@jirp ") :])
    if rec["states"] is None:
        return dict(ok=False, secs=rec["total"], states=None, note="no machine up to the size", rec=rec)
    delta_u, delta_r = jirp_machine(task, rec, OTHER)
    return dict(ok=agrees_within(task, demos, delta_u, delta_r), secs=rec["total"], states=rec["states"], rec=rec)


def width_row(task, n: int, seed: int) -> dict:
    """The noise level from ``n`` episodes, δ = HALF given."""
    clean, noisy = episodes(task, n, seed)
    r, secs = learn(task, noisy, HALF)
    fit = r.noise
    lo, hi = fit.half_width
    means = [fit.mean_interval(j) for j in range(len(fit.centers))]
    return {
        "episodes": n,
        "steps": int(noisy.lengths.sum()),
        "truth": the_truth(task, noisy, r) and exercised(task, clean)[0],
        "deliveries": " + ".join(str(c) for c in fit.counts[fit.centers > 0].tolist()),
        "means (interval)": "; ".join(
            f"{c:.3f} ({a:.3f}–{b:.3f})" for c, (a, b) in zip(fit.centers.tolist(), means) if c > 0
        ),
        "largest deviation": f"{fit.max_deviation:.4f}",
        "half-width 95%": f"{lo:.4f}–{hi:.4f}",
        "0.1 inside": lo <= HALF <= hi,
        "rmtk s": f"{secs:.2f}",
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, required=True, help="decides the episodes (the noise: seed + 1)")
    ap.add_argument("--start", type=int, default=25)
    ap.add_argument("--budget", type=int, default=6400)
    ap.add_argument("--estimate", action="store_true", help="also with δ estimated from the data")
    ap.add_argument("--srm", default=None, help="src folder of corazza/stochastic-reward-machines")
    ap.add_argument("--srm-python", default=sys.executable, help="the python with that repository's dependencies")
    ap.add_argument("--srm-limit", type=float, default=600.0, help="seconds before its inference is killed")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--widths", type=int, nargs="*", default=(), help="episode counts for the noise-level table")
    args = ap.parse_args(argv)

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    ref = numpy_import_seconds()
    task = load()
    rows = []
    for delta in (HALF, None) if args.estimate else (HALF,):
        log(f"δ = {delta if delta is not None else 'estimated'}")
        f = needed(task, args.seed, args.start, args.budget, delta, log)
        row = {"δ": "0.1 given" if delta is not None else "estimated"}
        if f is None:
            row.update(episodes=f"> {args.budget}")
            rows.append(row)
            continue
        r, fit = f["r"], f["r"].noise
        lo, hi = fit.half_width
        row.update(
            {
                "episodes": f["n"],
                "steps": int(f["demos"].lengths.sum()),
                "deliveries": int(fit.counts[fit.centers > 0].sum()),
                "nodes": r.n_nodes,
                "outputs": ", ".join(f"{c:.3f}" for c in fit.centers.tolist()),
                "δ used": f"{fit.delta:.4f}",
                "half-width 95%": f"{lo:.4f}–{hi:.4f}",
                "0.1 inside": lo <= HALF <= hi,
                "rmtk s": f"{f['secs']:.2f}",
            }
        )
        if args.srm:
            for method, label in (("smt", "S-JIRP"), ("sat", "JIRP")):
                j = run_srm(args, task, f["demos"], method, log)
                log(f"{label}: {j}")
                row[f"{label} states"] = j["states"] if j["states"] is not None else "—"
                row[f"{label} truth"] = j["ok"] if j["ok"] is not None else "—"
                row[f"{label} s"] = f"{j['secs']:.2f}" if j["secs"] is not None else j["note"]
        rows.append(row)
    print(render(rows, args.markdown, frozenset({"δ"})))
    if args.widths:
        print()
        print(render([width_row(task, n, args.seed) for n in args.widths], args.markdown))
    print()
    print(f"same-run reference: `python -c 'import numpy'` in a child {ref:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
