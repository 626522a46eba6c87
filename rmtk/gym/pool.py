"""Shards of :func:`~rmtk.gym.collect` played by worker processes: each worker makes its own
environment, plays its shards (dealt round-robin) and merges them as they come; the caller
merges the workers' recordings. The result is put in canonical numbering afterwards, so it
does not depend on the number of workers. A worker's :class:`~rmtk.errors.RmtkError` (e.g. a
bad label, with its episode and step) is raised again in the caller as it is."""
from __future__ import annotations

import multiprocessing as mp
import traceback
from typing import Callable, Iterator

from ..errors import RmtkError
from .play import make_env, play_shard
from .recording import Merger, Recording


def _worker(index, env, policy, setup, jobs, max_steps, compress, queue):  # pragma: no cover - a child process
    try:
        import tracemalloc

        if tracemalloc.is_tracing():  # inherited through fork: the parent measures itself only
            tracemalloc.stop()
        made, _ = make_env(env)
        merged = Merger()
        try:
            for first, size, seq in jobs:
                merged.add(play_shard(setup, made, policy, size, seq, first, max_steps, compress))
                queue.put(("progress", index, size))
        finally:
            made.close()
        queue.put(("result", index, merged.result()))
    except RmtkError as e:
        queue.put(("error", index, e))
    except BaseException as e:  # report, do not hang the caller
        queue.put(("error", index, RuntimeError(f"a collect worker failed: {type(e).__name__}: {e}\n"
                                                f"{traceback.format_exc()}")))


def run_shards(env, policy, setup, plan, workers: int, max_steps: int, compress: bool,
               progress: Callable[[int], None]) -> Iterator[Recording]:
    """The recordings of ``workers`` processes sharing the shards of ``plan``, in worker
    order; ``progress(episodes done)`` after every shard."""
    ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(w, env, policy, setup, plan[w::workers], max_steps, compress, queue),
                         daemon=True) for w in range(workers)]
    for p in procs:
        p.start()
    results: dict[int, Recording] = {}
    done, failed = 0, False
    try:
        while len(results) < workers:
            kind, index, payload = queue.get()
            if kind == "error":
                failed = True
                raise payload
            if kind == "progress":
                done += payload
                progress(done)
            else:
                results[index] = payload
        for w in range(workers):
            yield results.pop(w)
    finally:
        for p in procs:
            if failed and p.is_alive():
                p.terminate()
            p.join()
