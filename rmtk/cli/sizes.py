"""Every size a user types, checked against what it will allocate before any work
(docs/design/11-faults.md: "Bounds").

A number on the command line becomes arrays: ``--learn-labels K`` clauses over K² pairs of
propositions per state, ``--samples M`` M actions drawn per question, ``--walks N
--walk-length L`` words of up to L letters at each of N·L steps, ``--max-solutions K``
machines kept and printed, ``-n N -T T`` an ``(N, T)`` table of steps, ``--workers N``
processes. :func:`check_learn_sizes` and :func:`check_simulate_sizes` estimate the bytes from
the flags and the task and refuse, naming the flag, the size and the bound, what would not fit
in :func:`memory_budget`. The estimates are upper bounds of the largest arrays (a run may need
less: a search may list fewer machines than it may keep).
"""

from __future__ import annotations

import os

from ..errors import RmtkError
from ..task import Task

#: Share of this machine's physical memory one run may plan to allocate.
MEMORY_SHARE = 0.5
#: The budget where the physical memory cannot be read.
FALLBACK_BUDGET = 4 * 2**30
#: Bytes a listed machine costs at most besides its tables (its objects, its blocking clause,
#: its printed text), measured on the shipped models (about 2 KiB) with a margin.
MACHINE_OVERHEAD = 8 * 2**10
#: Bytes a Dask worker process of a local cluster takes before any work (the interpreter,
#: numpy, Dask; about 150 MiB measured), with a margin.
WORKER_BYTES = 256 * 2**20
#: Bytes a step of a walk costs besides its word: a dictionary entry, its key and its row.
WALK_STEP_BYTES = 200


def memory_budget() -> int:
    """What one run may plan to allocate: :data:`MEMORY_SHARE` of the physical memory (or of
    the address-space limit, when lower), :data:`FALLBACK_BUDGET` where neither is known."""
    total = None
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        pass
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft not in (resource.RLIM_INFINITY, -1) and (total is None or soft < total):
            total = soft
    except (ImportError, ValueError, OSError):
        pass
    return FALLBACK_BUDGET if not total or total <= 0 else int(total * MEMORY_SHARE)


def human(nbytes: float) -> str:
    """``931.3 GiB``, ``12.0 MiB``: bytes in binary units."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if nbytes < 1024 or unit == "PiB":
            return f"{nbytes:.0f} {unit}" if unit == "B" else f"{nbytes:.1f} {unit}"
        nbytes /= 1024
    raise AssertionError("unreachable")


def check_bytes(flag: str, what: str, nbytes: float, budget: int | None = None) -> None:
    """Refuse ``flag`` when ``what`` would take ``nbytes``, more than the budget."""
    budget = memory_budget() if budget is None else budget
    if nbytes > budget:
        raise RmtkError(
            f"{flag}: {what} would take {human(nbytes)}, more than the {human(budget)} a run may use here "
            f"({MEMORY_SHARE:.0%} of this machine's memory); give a smaller value"
        )


def check_learn_sizes(args, task: Task, mode: str) -> None:
    """The sizes of ``rmtk learn``'s flags against what they allocate on ``task``."""
    from ..limits import max_nodes_or_default

    S, A = task.mdp.n_states, task.mdp.n_actions
    if args.learn_labels:
        k = args.learn_labels
        if k > S:
            raise RmtkError(
                f"--learn-labels {k}: more propositions than the {S} states of mdp {task.mdp.name!r}, which "
                f"carry one label each; give at most {S}"
            )
        check_bytes(
            "--learn-labels",
            f"{k} propositions (one label per state: {S}·{k}·{k - 1}/2 clauses of two literals)",
            S * k * (k - 1) * 8,
        )
    if args.max_solutions is not None:
        n = max_nodes_or_default(args.nodes, args.max_nodes, task.max_nodes)
        labels = args.learn_labels is not None  # a pair: a label per state, a machine over up to S letters
        letters = (args.learn_labels or S) if labels else task.mdp.n_propositions
        each = MACHINE_OVERHEAD + 4 * 8 * n * letters + (8 * S if labels else 0)
        check_bytes(
            "--max-solutions",
            f"keeping and printing {args.max_solutions:,} machines of up to {n} nodes ({human(each)} each)",
            args.max_solutions * each,
        )
    if args.samples is not None:
        check_bytes(
            "--samples", f"drawing {args.samples:,} actions per question (8 bytes each, twice)", 16 * args.samples
        )
    if args.walks is not None or args.walk_length is not None:
        walks, length = args.walks or 5, args.walk_length or 40
        per_walk = length * (WALK_STEP_BYTES + 8 * A) + 8 * length * (length + 1) / 2
        check_bytes(
            "--walks" if args.walk_length is None else "--walk-length",
            f"{walks:,} walks of {length:,} steps (a word of up to {length:,} letters kept at each step)",
            walks * per_walk,
        )
    if args.workers is not None:
        check_workers(args.workers)


def check_workers(workers: int) -> None:
    """``--workers N``: N processes of about :data:`WORKER_BYTES` each."""
    check_bytes(
        "--workers", f"{workers:,} Dask worker processes (about {human(WORKER_BYTES)} each)", workers * WORKER_BYTES
    )


def check_simulate_sizes(args, parquet: bool) -> None:
    """``rmtk simulate``: the ``(n, T)`` table held in memory (one partition at a time for
    Parquet), and the worker processes."""
    from ..data.parquet_io import PARTITION_SIZE

    held = min(args.n, args.partition_size or PARTITION_SIZE) if parquet else args.n
    chunk = min(held, 100_000)
    steps = f"{held:,} trajectories of {args.horizon:,} steps"
    where = "one partition" if parquet else "the whole table (Parquet output holds one partition at a time)"
    flag = ("--partition-size and -T" if args.partition_size else "-T") if parquet else "-n and -T"
    check_bytes(
        flag,
        f"{steps} in memory, {where}",
        8 * held * args.horizon + 40 * chunk * args.horizon,
    )
    if args.workers is not None:
        check_workers(args.workers)
