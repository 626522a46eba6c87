"""The Dask engine: the map over items and the tree reduce of :mod:`rmtk.engines.local` on a
``dask.distributed`` cluster (``pip install '.[dask]'``).

The job goes to the cluster as a task of its own that returns it, and each item becomes one
task (``job(item)``) depending on it: the workers fetch the job as any task's input, and a
worker lost while it holds it costs a recomputation from the scheduler's copy, never the
run (a broadcast of the job, by contrast, could hang or fail when a worker died during it).
Each merge of the reduce tree is one task depending on two earlier ones, submitted in the
order of :class:`~rmtk.engines.shards.TreeReducer`, so the tree is the local engine's and the result
is the same. Results stay on the workers until merged; only the final one comes back. Items
are read lazily and at most ``max_in_flight`` of them wait or run at a time.

Failures (docs/design/11-faults.md, section 11.1). A task whose worker dies is rescheduled by the
scheduler (up to ``distributed.scheduler.allowed-failures`` times), lost results are
recomputed from their inputs. A task that raises an :class:`~rmtk.errors.RmtkError` (bad data,
found on a worker) stops the run at once with that error: data errors are not transient. Any
other exception (a flaky filesystem, a worker short of memory) is retried ``retries`` times,
then stops the run naming the item. No piece of work finishing for ``timeout`` seconds stops
the run too. A stopped run returns nothing: a result is never missing a piece silently.
"""

from __future__ import annotations

import collections
import contextlib
import os
import queue
import time
import uuid

import attrs

from .._arrays import whole_number
from ..errors import RmtkError
from ..progress import as_progress
from .cluster import (
    connect,
    keep_freed_memory,
    local_cluster,
    quiet,
    scheduler_address,
)
from .shards import TreeReducer

__all__ = ["DaskEngine", "WorkError", "keep_freed_memory", "local_cluster"]

#: Seconds between checks of the stall timer and of the connection while waiting.
POLL = 1.0
#: Phases of a run, in order, at which ``DaskEngine.phase_hook`` is called.
PHASES = ("before", "send", "after", "mid-count", "merge")


class WorkError(RmtkError):
    """A piece of distributed work failed for good (after its retries), or the cluster
    stopped making progress."""


def _dask():
    try:
        import distributed
    except ImportError:
        raise RmtkError("the Dask engine needs dask.distributed: from rmtk's checkout, pip install '.[dask]'") from None
    return distributed


def _hold(job):
    return job


def _call(job, item):
    return job(item)


def _merge(reduce, left, right):
    return reduce(left, right)


def _seconds(name: str, optional: bool):
    def check(_, __, value):
        if value is None and optional:
            return
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
            raise RmtkError(f"{name} is a positive number of seconds{' or None' if optional else ''}, not {value!r}")

    return check


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
        retries: times a task failing with an error that is not rmtk's is run again before
            the run stops (rmtk's errors, i.e. bad data, stop it at once).
        max_in_flight: items submitted but not finished at a time (default: twice the
            cluster's threads, at least 4).
        timeout: seconds without any piece of work finishing after which the run stops with
            :class:`WorkError` (``None``: wait for ever). The default, 10 minutes, is far
            above the seconds a partition or a shard of rmtk's takes.
        connect_timeout: seconds allowed to each step of reaching ``scheduler``.
        phase_hook: a test hook: ``phase_hook(phase, client, futures)`` is called at each
            phase of :data:`PHASES` with the futures that phase is about
            (tests/test_dask_faults.py kills a worker there); nothing else uses it.
    """

    client: object = attrs.field(default=None, eq=False, repr=False)
    scheduler: str | None = attrs.field(default=None, converter=attrs.converters.optional(scheduler_address))
    workers: int | None = attrs.field(default=None, validator=whole_number("workers", optional=True, error=RmtkError))
    retries: int = attrs.field(default=2, validator=whole_number("retries", 0, error=RmtkError))
    max_in_flight: int | None = attrs.field(
        default=None, validator=whole_number("max_in_flight", optional=True, error=RmtkError)
    )
    timeout: float | None = attrs.field(default=600.0, validator=_seconds("timeout", optional=True))
    connect_timeout: float = attrs.field(default=10.0, validator=_seconds("connect_timeout", optional=False))
    phase_hook: object = attrs.field(default=None, eq=False, repr=False)

    def __attrs_post_init__(self):
        if self.client is not None and self.scheduler is not None:
            raise RmtkError("give the Dask engine a client or a scheduler address, not both")
        if self.workers is not None and (self.client is not None or self.scheduler is not None):
            raise RmtkError(
                "workers sets the size of a local cluster started for the run; a client or a "
                "scheduler brings its own workers"
            )

    @contextlib.contextmanager
    def session(self, progress=None):
        """A client for the run: the given one, one connected to ``scheduler``, or one of a
        local cluster started (and closed) here. Dask's own log lines are kept off the
        terminal while rmtk runs a cluster of its own making."""
        progress = as_progress(progress)
        _dask()
        if self.client is not None:
            yield self.client
            return
        with quiet():
            if self.scheduler is not None:
                client, cluster = connect(self.scheduler, self.connect_timeout), None
            else:
                n = self.workers or os.cpu_count() or 1
                cluster, client = local_cluster(n)
                progress.note(f"started a local Dask cluster of {n} worker process{'es' if n != 1 else ''}")
            try:
                yield client
            finally:
                client.close(timeout=self.connect_timeout)
                if cluster is not None:
                    cluster.close(timeout=self.connect_timeout)

    def map_reduce(self, job, items, *, reduce=None, sizes=None, total=None, what="items", progress=None):
        progress = as_progress(progress)
        with self.session(progress) as client:
            return _Run(self, client, what, progress).run(job, items, reduce, sizes, total)

    def __str__(self) -> str:
        where = (
            f"scheduler {self.scheduler}"
            if self.scheduler
            else "a given client"
            if self.client is not None
            else f"a local cluster of {self.workers or os.cpu_count()} workers"
        )
        return f"Dask engine ({where})"


class _Run:
    """One map and reduce on a client: submits, watches the futures (their completions come
    through a queue, so every wait is bounded), retries or stops."""

    def __init__(self, engine: DaskEngine, client, what: str, progress):
        self.engine, self.client, self.what, self.progress = engine, client, what, progress
        self.slug = what.split()[0]
        self.token = uuid.uuid4().hex[:10]
        self.done: queue.SimpleQueue = queue.SimpleQueue()
        self.watched: dict[str, tuple[object, str, int]] = {}
        self.attempts: collections.Counter = collections.Counter()
        self.last_news = time.monotonic()

    def hook(self, phase: str, futures) -> None:
        if self.engine.phase_hook is not None:
            self.engine.phase_hook(phase, self.client, list(futures))

    def submit(self, fn, *args, key: str):
        return self.client.submit(fn, *args, key=key, retries=0, pure=False)

    def watch(self, future, name: str, weight: int = 0) -> None:
        self.watched[future.key] = (future, name, weight)
        future.add_done_callback(self.done.put)

    def run(self, job, items, reduce, sizes, total):
        client, engine = self.client, self.engine
        limit = engine.max_in_flight or max(4, 2 * sum(client.nthreads().values()))
        reducer = TreeReducer(self.merge(reduce)) if reduce is not None else None
        ordered: list = []
        source = iter(items)
        count = [0, 0]  # items submitted, weight done

        def submit_next() -> bool:
            try:
                item = next(source)
            except StopIteration:
                return False
            future = self.submit(_call, job_future, item, key=f"rmtk-{self.slug}-{self.token}-{count[0]}")
            self.watch(future, str(item), 1 if sizes is None else int(sizes(item)))
            count[0] += 1
            (ordered.append if reducer is None else reducer.add)(future)
            return True

        try:
            self.hook("before", [])
            job_future = self.submit(_hold, job, key=f"rmtk-job-{self.token}")
            self.watch(job_future, "the job sent to the workers")
            self.progress.count(0, total, self.what)
            for _ in range(limit):
                if not submit_next():
                    break
            self.hook("send", [job_future])
            while self.watched:
                future, _, weight = self.next_finished()
                if future is job_future:
                    self.hook("after", [job_future])
                    continue
                count[1] += weight
                self.progress.count(count[1], total, self.what)
                submit_next()
                if count[1] == weight and len(self.watched) > 1:
                    self.hook("mid-count", [f for f, _, _ in self.watched.values()])
            if reducer is None:
                return [self.fetch(f) for f in ordered]
            if not reducer.n_inputs:
                raise RmtkError(f"nothing to reduce: no {self.slug}")
            self.hook("merge", [f for _, f in reducer._stack])
            final = reducer.result()
            self.watch(final, f"merging the results of the {self.slug}")
            self.next_finished()
            return self.fetch(final)
        except BaseException:
            # Released, not cancelled: the scheduler forgets what no one wants any more (running
            # tasks included), while cancelling a merge whose inputs were released trips an
            # assertion inside Dask's scheduler.
            live = (
                [f for f, _, _ in self.watched.values()]
                + ordered
                + ([] if reducer is None else [f for _, f in reducer._stack])
            )
            for future in live:
                with contextlib.suppress(Exception):
                    future.release()
            raise

    def merge(self, reduce):
        merges = [0]

        def merge(left, right):
            merges[0] += 1
            return self.submit(_merge, reduce, left, right, key=f"rmtk-merge-{self.token}-{merges[0]}")

        return merge

    def next_finished(self):
        """The next watched future that finished, as ``(future, name, weight)``; a failed one
        is retried or stops the run."""
        while True:
            future = self.next_news()
            if future.key not in self.watched or future.status == "pending":
                continue  # stale news: already handled, or retried meanwhile
            self.last_news = time.monotonic()
            entry = self.watched[future.key]
            if future.status == "finished":
                del self.watched[future.key]
                return entry
            self.retry_or_stop(future, entry[1])

    def next_news(self):
        """A future that changed state, waiting at most ``timeout`` s since the last news."""
        timeout = self.engine.timeout
        while True:
            try:
                return self.done.get(timeout=POLL)
            except queue.Empty:
                pass
            if self.client.status not in ("running", "connecting"):
                raise WorkError(
                    f"lost the connection to the Dask scheduler (client {self.client.status}); "
                    "the run stopped and returned nothing"
                )
            if timeout is not None and time.monotonic() - self.last_news > timeout:
                raise WorkError(
                    f"no piece of work finished for {timeout:g} s ({self.workers()}); the run stopped "
                    "and returned nothing (the bound is DaskEngine(timeout=...), --dask-timeout)"
                )

    def workers(self) -> str:
        try:
            n = len(self.client.scheduler_info()["workers"])
        except Exception:  # noqa: BLE001 - only a description
            return "the scheduler does not answer"
        return f"the cluster has {n} worker{'s' if n != 1 else ''}"

    def retry_or_stop(self, future, name: str) -> None:
        exc = _exception(future)
        if isinstance(exc, RmtkError):
            raise exc
        retries = self.engine.retries
        if future.status == "error" and type(exc).__name__ != "KilledWorker" and self.attempts[future.key] < retries:
            self.attempts[future.key] += 1
            self.client.retry([future])
            future.add_done_callback(self.done.put)
            return
        if type(exc).__name__ == "KilledWorker":
            raise WorkError(
                f"{name}: its worker died each time it ran it (distributed.scheduler.allowed-failures "
                "times); the run stopped and returned nothing"
            )
        if future.status != "error":
            raise WorkError(f"{name}: Dask reports it {future.status}; the run stopped and returned nothing")
        if name.startswith("merging"):
            raise WorkError(f"{name} failed: {type(exc).__name__}: {exc}")
        raise WorkError(
            f"{name} failed {retries + 1} time{'s' if retries else ''} (retries={retries}); the run "
            f"stopped and returned nothing. Last error: {type(exc).__name__}: {exc}"
        )

    def fetch(self, future):
        """The value of a finished future, within the time bound (a lost result is recomputed)."""
        try:
            return future.result(timeout=self.engine.timeout)
        except RmtkError:
            raise
        except TimeoutError:
            raise WorkError(
                f"fetching the result of the {self.slug} took over {self.engine.timeout:g} s "
                f"({self.workers()}); the run stopped and returned nothing"
            ) from None
        except Exception as e:
            raise WorkError(f"fetching the result of the {self.slug} failed: {type(e).__name__}: {e}") from e


def _exception(future):
    try:
        return future.exception(timeout=POLL)
    except Exception as e:  # noqa: BLE001 - cancelled, or the scheduler gone
        return e
