"""Adapter: JIRP's SAT inference (Xu et al., ICAPS 2020) and the stochastic-reward-machine SMT
inference (S-JIRP: Corazza, Gavran and Neider, AAAI 2022), as published in the public repository
corazza/stochastic-reward-machines, run unchanged on traces written by benchmarks/rewards.py.

This script is ours; it imports the repository's own functions from its ``src`` folder (given by
``--src``; nothing of it is copied here) and must run with that repository's dependencies
(python-sat, gym, IPython, numpy; z3-solver 4.8.10 and the compiled ``rl_agents/sjirp/cpp/a.out``
for ``--method smt``), e.g. in a separate virtual environment::

    /tmp/srm-venv/bin/python benchmarks/rewards_jirp.py --src /tmp/srm/src --method sat \
        --traces traces.json --min-states 1 --max-states 6

The traces file is JSON: ``{"traces": [[labels, rewards, truncated], ...]}`` with ``labels`` the
label strings seen after each step (``""``: no proposition) and ``rewards`` the rewards paid.
The repository's inference functions take one machine size ``n_states``; its ``consistent_hyp``
tries ``n_states = 1, 2, ...`` until one is satisfiable, which this adapter does the same way,
timing every call. With ``--repeat R`` the whole search (every size) runs ``R`` times on the
same traces. It prints one JSON line after ``@@jirp``: the size found, the transitions
``[p, label, q, reward]`` (``-1`` the terminal state), the seconds per size of the first run,
and the median over the runs of the wall seconds (``total``) and of the CPU seconds (``cpu``:
this process's, and for S-JIRP also its solver's, a child process; each run's in ``cpus``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time
import warnings

MARK = "@@jirp "


def cpu_seconds() -> float:
    """CPU seconds of this process and of its waited-for children (S-JIRP's solver runs in one)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", required=True, help="the src folder of corazza/stochastic-reward-machines")
    ap.add_argument("--method", choices=("sat", "smt"), default="sat", help="sat: JIRP (sat_hyp); smt: S-JIRP")
    ap.add_argument("--traces", required=True)
    ap.add_argument("--min-states", type=int, default=1)
    ap.add_argument("--max-states", type=int, default=6)
    ap.add_argument("--epsilon", type=float, default=0.0, help="S-JIRP's noise bound (smt only)")
    ap.add_argument("--no-termination", action="store_true", help="infer_termination=False")
    ap.add_argument("--seed", type=int, default=0, help="passed to S-JIRP's solver call")
    ap.add_argument("--repeat", type=int, default=1, help="runs of the whole search (medians reported)")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    with open(args.traces) as f:
        raw = json.load(f)["traces"]
    X = {(tuple(labels), tuple(float(r) for r in rewards)) for labels, rewards, _ in raw}
    X_tl = {(tuple(labels), tuple(float(r) for r in rewards)) for labels, rewards, cut in raw if cut}
    here = os.path.dirname(os.path.abspath(__file__))  # its gym.py would shadow the package gym
    sys.path[:] = [os.path.abspath(args.src)] + [p for p in sys.path if os.path.abspath(p or ".") != here]
    os.chdir(args.src)  # S-JIRP calls its solver binary by a path relative to src
    t0 = time.perf_counter()
    if args.method == "sat":
        from rl_agents.jirp.sat_hyp import sat_hyp

        def infer(n):
            return sat_hyp(0.0, X, X_tl, n, not args.no_termination, report=False)
    else:
        from rl_agents.sjirp.smt_noise import smt_noise_cpp

        def infer(n):
            return smt_noise_cpp(
                args.epsilon, X, X_tl, n, not args.no_termination, report=False, alg_name="rmtkbench", seed=args.seed
            )

    t_import = time.perf_counter() - t0
    runs = []
    for _ in range(max(1, args.repeat)):
        seconds, found, transitions = [], None, {}
        wall, cpu = time.perf_counter(), cpu_seconds()
        for n in range(args.min_states, args.max_states + 1):
            t = time.perf_counter()
            out = infer(n)
            seconds.append(time.perf_counter() - t)
            if out is not None:
                found, transitions = n, out
                break
        runs.append((time.perf_counter() - wall, cpu_seconds() - cpu, seconds, found, transitions))
    _, _, seconds, found, transitions = runs[0]
    rows = [
        [int(p), "".join(label), int(q), float(r) if r is not None else None]
        for (p, label), (q, r) in transitions.items()
    ]
    record = dict(
        states=found,
        transitions=rows,
        seconds=seconds,
        total=statistics.median(r[0] for r in runs),
        cpu=statistics.median(r[1] for r in runs),
        cpus=[r[1] for r in runs],
        runs=len(runs),
        same=all(r[3:] == runs[0][3:] for r in runs),
        import_seconds=t_import,
    )
    print(MARK + json.dumps(record), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
