"""The Dask engine: the map over items and the tree reduce of :mod:`rmtk.engines` on a
``dask.distributed`` cluster (``pip install 'rmtk[dask]'``).

Each item becomes one task (``job(item)``) and each merge of the reduce tree one task that
depends on two earlier ones: the merges are submitted in the order of
:class:`~rmtk.shards.TreeReducer`, so the tree is the local engine's and the result is the
same. Results stay on the workers until merged; only the final one comes back. Items are
read lazily and at most ``max_in_flight`` of them wait or run at a time, so an iterator of
shards or chunks is not drained into the cluster's memory at once.

Failures. A task that raises is run again up to ``retries`` times (a flaky filesystem, a
worker short of memory); a task whose worker dies is rescheduled by the scheduler on another
worker (up to ``distributed.scheduler.allowed-failures`` times). When an item still fails,
the run stops with an error that names it (a data error keeps its own message, which names
the file and row): a result is never missing a piece silently.
"""
from __future__ import annotations

import contextlib
import logging
import os
import uuid

import attrs

from ._arrays import whole_number
from .errors import RmtkError
from .progress import as_progress
from .shards import TreeReducer

__all__ = ["DaskEngine", "WorkError"]


class WorkError(RmtkError):
    """A piece of distributed work failed for good (after its retries)."""


def _dask():
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise RmtkError("the Dask engine needs dask.distributed: pip install 'rmtk[dask]'") from None
    return Client, LocalCluster, as_completed


def keep_freed_memory() -> None:
    """Let glibc keep freed memory for reuse (arrays up to 64 MiB from the heap, trimmed only
    above 256 MiB free). Dask starts workers with ``MALLOC_TRIM_THRESHOLD_=65536``, which
    also pins the mmap threshold at 128 KiB: every array is then mapped, faulted in page by
    page and unmapped again — about 40 % of the time of counting a partition went to such page
    faults. Not glibc (macOS, musl): nothing to do."""
    import ctypes

    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 64 << 20)  # M_MMAP_THRESHOLD
        libc.mallopt(-1, 256 << 20)  # M_TRIM_THRESHOLD
    except (OSError, AttributeError):
        pass


def local_cluster(workers: int):
    """``(cluster, client)``: a local cluster of ``workers`` processes of one thread each, its
    workers set up by :func:`keep_freed_memory` (also when the nanny restarts one)."""
    Client, LocalCluster, _ = _dask()
    from distributed.diagnostics.plugin import WorkerPlugin

    class KeepFreedMemory(WorkerPlugin):
        name = "rmtk-keep-freed-memory"

        def setup(self, worker):
            keep_freed_memory()

    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0",
                           silence_logs=logging.ERROR)
    client = Client(cluster)
    client.register_plugin(KeepFreedMemory())
    return cluster, client


def _call(job, item):
    return job(item)


def _merge(reduce, left, right):
    return reduce(left, right)


@attrs.frozen
class DaskEngine:
    """Runs the map and the reduce on a Dask cluster.

    Args:
        client: a ``dask.distributed.Client`` to use (kept open after the run).
        scheduler: the address of a running scheduler (``tcp://host:8786``), connected to
            for the run.
        workers: without ``client`` or ``scheduler``, a local cluster of this many worker
            processes (one thread each) is started for the run and closed after it
            (default: one per CPU).
        retries: times a failing task is run again before the run stops.
        max_in_flight: items submitted but not finished at a time (default: twice the
            cluster's threads, at least 4).
    """

    client: object = attrs.field(default=None, eq=False, repr=False)
    scheduler: str | None = None
    workers: int | None = attrs.field(default=None, validator=whole_number("workers", optional=True, error=RmtkError))
    retries: int = attrs.field(default=2, validator=whole_number("retries", 0, error=RmtkError))
    max_in_flight: int | None = attrs.field(default=None, validator=whole_number("max_in_flight", optional=True,
                                                                                  error=RmtkError))

    def __attrs_post_init__(self):
        if self.client is not None and self.scheduler is not None:
            raise RmtkError("give the Dask engine a client or a scheduler address, not both")
        if self.workers is not None and (self.client is not None or self.scheduler is not None):
            raise RmtkError("workers sets the size of a local cluster started for the run; a client or a "
                            "scheduler brings its own workers")
        if self.scheduler is not None and (not isinstance(self.scheduler, str) or not self.scheduler.strip()):
            raise RmtkError(f"a scheduler address is a string such as tcp://host:8786, not {self.scheduler!r}")

    @contextlib.contextmanager
    def session(self, progress=None):
        """A client for the run: the given one, one connected to ``scheduler``, or one of a
        local cluster started (and closed) here."""
        progress = as_progress(progress)
        Client, _, _ = _dask()
        if self.client is not None:
            yield self.client
            return
        if self.scheduler is not None:
            try:
                client = Client(self.scheduler, timeout="10s")
            except (OSError, TimeoutError) as e:
                raise RmtkError(f"cannot reach the Dask scheduler at {self.scheduler}: {e}") from None
            try:
                yield client
            finally:
                client.close()
            return
        n = self.workers or os.cpu_count() or 1
        cluster, client = local_cluster(n)
        progress.note(f"started a local Dask cluster of {n} worker process{'es' if n != 1 else ''}")
        try:
            yield client
        finally:
            client.close()
            cluster.close()

    def map_reduce(self, job, items, *, reduce=None, sizes=None, total=None, what="items", progress=None):
        progress = as_progress(progress)
        with self.session(progress) as client:
            return self._run(client, job, items, reduce, sizes, total, what, progress)

    def _run(self, client, job, items, reduce, sizes, total, what, progress):
        _, _, as_completed = _dask()
        token = uuid.uuid4().hex[:10]
        slug = what.split()[0]
        limit = self.max_in_flight or max(4, 2 * sum(client.nthreads().values()))
        [job_future] = client.scatter([job], broadcast=True, hash=False)
        merges = [0]

        def merge(left, right):
            merges[0] += 1
            return client.submit(_merge, reduce, left, right, key=f"rmtk-merge-{token}-{merges[0]}",
                                 retries=self.retries, pure=False)

        reducer = TreeReducer(merge) if reduce is not None else None
        ordered = []
        about: dict[str, tuple[str, int]] = {}
        pending = as_completed()
        source = iter(items)
        index = 0

        def submit_next() -> bool:
            nonlocal index
            try:
                item = next(source)
            except StopIteration:
                return False
            future = client.submit(_call, job_future, item, key=f"rmtk-{slug}-{token}-{index}",
                                   retries=self.retries, pure=False)
            about[future.key] = (str(item), 1 if sizes is None else int(sizes(item)))
            index += 1
            pending.add(future)
            if reducer is None:
                ordered.append(future)
            else:
                reducer.add(future)
            return True

        try:
            progress.count(0, total, what)
            for _ in range(limit):
                if not submit_next():
                    break
            done = 0
            for future in pending:
                name, weight = about.pop(future.key)
                if future.status != "finished":
                    raise self._failure(future, name)
                done += weight
                progress.count(done, total, what)
                submit_next()
            if reducer is None:
                return client.gather(ordered)
            if not reducer.n_inputs:
                raise RmtkError(f"nothing to reduce: no {slug}")
            final = reducer.result()
            try:
                return final.result()
            except RmtkError:
                raise
            except Exception as e:
                raise WorkError(f"merging the results of the {slug} failed: {type(e).__name__}: {e}") from e
        except BaseException:
            stale = list(pending.futures) + ordered + ([] if reducer is None else [f for _, f in reducer._stack])
            client.cancel(stale)
            raise

    def _failure(self, future, name: str) -> Exception:
        try:
            exc = future.exception()
        except Exception as e:  # cancelled
            exc = e
        if isinstance(exc, RmtkError):
            return exc
        if type(exc).__name__ == "KilledWorker":
            return WorkError(f"{name}: its worker died each time it ran it (distributed.scheduler.allowed-failures "
                             "times); the run stopped and returned nothing")
        return WorkError(f"{name} failed {self.retries + 1} time{'s' if self.retries else ''} "
                         f"(retries={self.retries}); the run stopped and returned nothing. "
                         f"Last error: {type(exc).__name__}: {exc}")

    def __str__(self) -> str:
        where = (f"scheduler {self.scheduler}" if self.scheduler else "a given client" if self.client is not None
                 else f"a local cluster of {self.workers or os.cpu_count()} workers")
        return f"Dask engine ({where})"
