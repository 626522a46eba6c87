"""The same answers on "other machines": what rmtk computes under several BLAS kernels, thread
counts and numpy SIMD levels, each in a fresh process, compared by digest.

Floating-point sums change in their last bits with the BLAS kernel (OpenBLAS picks one for
the CPU; ``OPENBLAS_CORETYPE`` forces another), the thread count (``OPENBLAS_NUM_THREADS``)
and numpy's SIMD dispatch (``NPY_DISABLE_CPU_FEATURES`` turns off every feature above the
baseline numpy was built for). Each configuration is a stand-in for another CPU. Per
configuration the child reports:

* ``pi bits``: a digest of the soft-optimal policies of ``stack_avoid``, ``patrol`` and the
  Office World's ``coffee_mail`` (the raw floats: they are expected to differ, which shows the
  configuration changes the arithmetic);
* ``argmax``: the greedy experts by ``np.argmax`` (the former rule: may differ);
* ``greedy``, ``shortest``, ``classes``: the greedy experts by :func:`rmtk.ptp.exact.greedy_table`,
  the shortest-path experts (:func:`rmtk.ptp.exact.shortest_path_table`) and the policy classes
  at depth 6 (:class:`rmtk.negatives.miners.ExactMiner`): by rmtk's tie rule (docs/design/02-conventions.md), they must
  not differ;
* ``learned``: the machines learned from the greedy expert of ``stack_avoid`` (exact prefix
  tree of depth 4);
* ``survivors (old)``, ``survivors``: the machines left by active learning over a recording
  of ``stack_avoid``'s argmax expert (300 episodes of 30 steps), and of ``stack``'s tie-rule
  expert (100 episodes of 6 steps), what ``tests/test_recorded_active.py`` checks.

Exit status 1 if a tie-rule column differs between configurations.

    PYTHONPATH=. python benchmarks/ties.py [--markdown]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from _table import render  # the script's folder is on sys.path

ROOT = Path(__file__).resolve().parent.parent
DECIDED = ("greedy", "shortest", "classes", "learned", "survivors")


def _simd() -> str:
    """Every SIMD feature numpy dispatches to above its baseline, comma-separated."""
    from numpy._core._multiarray_umath import __cpu_dispatch__

    return ",".join(__cpu_dispatch__)


def configurations() -> dict[str, dict[str, str]]:
    return {
        "default": {},
        "1 BLAS thread": {"OPENBLAS_NUM_THREADS": "1"},
        "BLAS Haswell": {"OPENBLAS_CORETYPE": "Haswell"},
        "BLAS Prescott, 1 thread": {"OPENBLAS_CORETYPE": "Prescott", "OPENBLAS_NUM_THREADS": "1"},
        "numpy baseline SIMD": {"NPY_DISABLE_CPU_FEATURES": _simd()},
    }


def child() -> dict[str, str]:
    import hashlib

    import numpy as np

    from rmtk import Learner, dsl
    from rmtk.active.experts import SimulatedExpert
    from rmtk.active.recorded import RecordedActiveLearner
    from rmtk.negatives.miners import ExactMiner
    from rmtk.product.planning import task_policy
    from rmtk.product.simulate import simulate
    from rmtk.progress import Progress
    from rmtk.ptp.empirical import count_chunk
    from rmtk.ptp.exact import ExactPTP, NodePolicyTable, greedy_table, shortest_path_table

    def digest(*arrays) -> str:
        h = hashlib.sha256()
        for a in arrays:
            h.update(np.ascontiguousarray(a).tobytes())
        return h.hexdigest()[:10]

    tasks = [
        dsl.load_model(m).tasks[t]
        for m, t in (("stack_avoid", "stack_avoid"), ("patrol", "patrol"), ("office", "coffee_mail"))
    ]
    pols = [task_policy(t) for t in tasks]
    out = {
        "pi bits": digest(*(p.pi for p in pols)),
        "argmax": digest(*(p.pi.argmax(axis=2) for p in pols)),
        "greedy": digest(*(greedy_table(p) for p in pols)),
        "shortest": digest(*(shortest_path_table(t) for t in tasks)),
        "classes": digest(*(ExactMiner().mine(ExactPTP(depth=6).build(t, Progress())).pair_class for t in tasks[:2])),
    }
    avoid, pol = tasks[0], pols[0]
    res = Learner(ptp=ExactPTP(depth=4, source=NodePolicyTable(greedy_table(pol)))).fit(avoid)
    out["learned"] = digest(*(m.delta_u for m in res.machines))

    def survivors(task, table, n, horizon) -> int:
        source = NodePolicyTable(table)
        rec = count_chunk(task.mdp, simulate(task, n, horizon, seed=0, policy=source))
        learner = RecordedActiveLearner(max_nodes=task.machine.n_nodes, alpha=1e-3)
        return len(learner.fit(rec, SimulatedExpert(task, source=source, seed=1)).solutions)

    S, U, A = pol.pi.shape
    old = np.full((U, S, A), 0.1 / A)
    old[np.arange(U)[:, None], np.arange(S)[None, :], pol.pi.argmax(axis=2).T] += 0.9
    out["survivors (old)"] = str(survivors(avoid, old, 300, 30))
    stack = dsl.load_model("stack").tasks["stack"]
    out["survivors"] = str(survivors(stack, greedy_table(task_policy(stack)), 100, 6))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child()))
        return 0
    rows = []
    for name, extra in configurations().items():
        env = {**os.environ, **extra}
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
        run = subprocess.run(
            [sys.executable, __file__, "--child"], cwd=ROOT, env=env, capture_output=True, text=True, check=True
        )
        rows.append({"configuration": name, **json.loads(run.stdout.strip().splitlines()[-1])})
    print(render(rows, args.markdown, left=frozenset({"configuration"})))
    differ = [c for c in DECIDED if len({r[c] for r in rows}) > 1]
    print(f"# by rmtk's tie rule: {'differ: ' + ', '.join(differ) if differ else 'the same in every configuration'}")
    print(f"# the raw floats: {len({r['pi bits'] for r in rows})} distinct digests in {len(rows)} configurations")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
