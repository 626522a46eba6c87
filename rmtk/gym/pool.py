"""Shards of :func:`~rmtk.gym.collect` played by worker processes: each worker makes its own
environment, plays its shards (dealt round-robin) and sends back one recording per shard;
the caller receives them in shard order, so the merged recording does not depend on the
number of workers. A worker's :class:`~rmtk.errors.RmtkError` (e.g. a bad label, with its
episode and step) is raised again in the caller as it is."""
from __future__ import annotations

import multiprocessing as mp
import traceback
from typing import Iterator

from ..errors import RmtkError
from .play import play_shard, make_env


def _worker(env, policy, setup, jobs, max_steps, compress, queue):  # pragma: no cover - runs in a child process
    try:
        import tracemalloc

        if tracemalloc.is_tracing():  # inherited through fork: the parent measures itself only
            tracemalloc.stop()
        made, _ = make_env(env)
        try:
            for k, first, size, seq in jobs:
                queue.put(("shard", k, (first, size, play_shard(setup, made, policy, size, seq, first, max_steps, compress))))
        finally:
            made.close()
    except RmtkError as e:
        queue.put(("error", None, e))
    except BaseException as e:  # report, do not hang the caller
        queue.put(("error", None, RuntimeError(f"a collect worker failed: {type(e).__name__}: {e}\n"
                                               f"{traceback.format_exc()}")))


def run_shards(env, policy, setup, plan, workers: int, max_steps: int, compress: bool) -> Iterator[tuple]:
    """``(first, size, recording)`` of every shard of ``plan``, in order."""
    ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    queue = ctx.Queue()
    jobs = [(k, first, size, seq) for k, (first, size, seq) in enumerate(plan)]
    procs = [ctx.Process(target=_worker, args=(env, policy, setup, jobs[w::workers], max_steps, compress, queue),
                         daemon=True) for w in range(workers)]
    for p in procs:
        p.start()
    waiting: dict[int, tuple] = {}
    nxt, failed = 0, False
    try:
        while nxt < len(plan):
            kind, k, payload = queue.get()
            if kind == "error":
                failed = True
                raise payload
            waiting[k] = payload
            while nxt in waiting:
                yield waiting.pop(nxt)
                nxt += 1
    finally:
        for p in procs:
            if (failed or nxt < len(plan)) and p.is_alive():
                p.terminate()
            p.join()
