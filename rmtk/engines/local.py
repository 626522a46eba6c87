"""Engines: where a map over pieces of work and the reduce of their results run.

An engine has one method, :meth:`~Engine.map_reduce`: apply a picklable ``job`` to
every item (a :class:`~rmtk.engines.shards.Shard`, a partition number, a chunk of trajectories) and
reduce the results with an associative ``reduce`` along the fixed tree of
:class:`~rmtk.engines.shards.TreeReducer`, reporting progress as items finish. The engine decides
*where* the work runs, never *what* it computes: every engine feeds the reducer in item
order, so they build the same merges and return the same result.

* :class:`LocalEngine` (the default): in this process, one item after another; memory holds
  one item's work and ``log2(n)`` partial results.
* :class:`~rmtk.engines.dask.DaskEngine`: on a Dask cluster (``pip install '.[dask]'``);
  a local cluster of worker processes or a scheduler's address. Imported only when asked
  for, so ``import rmtk`` never imports Dask.

:func:`as_engine` turns the names ``"local"`` and ``"dask"`` (the command line's
``--engine``) into engine objects.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol, runtime_checkable

import attrs

from ..errors import RmtkError
from ..progress import Progress, as_progress
from .shards import TreeReducer

__all__ = ["Engine", "LocalEngine", "as_engine", "ENGINES"]

#: Engine names accepted by :func:`as_engine` (and ``--engine``).
ENGINES = ("local", "dask")


@runtime_checkable
class Engine(Protocol):
    """Runs ``job`` on every item and reduces the results in item order (see the module)."""

    def map_reduce(
        self,
        job: Callable[[Any], Any],
        items: Iterable,
        *,
        reduce: Callable[[Any, Any], Any] | None = None,
        sizes: Callable[[Any], int] | None = None,
        total: int | None = None,
        what: str = "items",
        progress: Progress | None = None,
    ) -> Any:
        """``reduce`` over ``job(item)`` for every item (a list of the results, in item
        order, when ``reduce`` is None). ``sizes(item)`` weighs an item in the progress
        count (default 1); ``total`` is the sum of the weights when known; ``what`` names
        what is counted ("partitions counted")."""


def _weight(sizes, item) -> int:
    return 1 if sizes is None else int(sizes(item))


@attrs.frozen
class LocalEngine:
    """Runs every job in this process, in item order, merging as results come."""

    def map_reduce(self, job, items, *, reduce=None, sizes=None, total=None, what="items", progress=None):
        progress = as_progress(progress)
        out: list = []
        reducer = TreeReducer(reduce) if reduce is not None else None
        done = 0
        progress.count(0, total, what)
        for item in items:
            result = job(item)
            if reducer is None:
                out.append(result)
            else:
                reducer.add(result)
            done += _weight(sizes, item)
            progress.count(done, total, what)
        if reducer is None:
            return out
        if not reducer.n_inputs:
            raise RmtkError(f"nothing to reduce: no {what.split()[0]}")
        return reducer.result()

    def __str__(self) -> str:
        return "local engine (this process)"


def as_engine(
    engine: str | Engine | None = "local", *, client=None, scheduler: str | None = None, workers: int | None = None
) -> Engine:
    """An engine object from a name (``"local"``, ``"dask"``) or an engine (returned as it is).

    ``client`` (a ``dask.distributed.Client``), ``scheduler`` (an address such as
    ``tcp://host:8786``) and ``workers`` (the size of a local cluster started for the run)
    configure ``"dask"`` and are refused with ``"local"``.
    """
    dask_options = {
        k: v for k, v in (("client", client), ("scheduler", scheduler), ("workers", workers)) if v is not None
    }
    if engine is None or engine == "local":
        if dask_options:
            raise RmtkError(
                f"{', '.join(dask_options)} configure the Dask engine; choose engine='dask' (--engine dask) to use them"
            )
        return LocalEngine()
    if engine == "dask":
        from .dask import DaskEngine

        return DaskEngine(**dask_options)
    if isinstance(engine, str):
        raise RmtkError(f"unknown engine {engine!r}; the engines are {', '.join(ENGINES)}")
    if not callable(getattr(engine, "map_reduce", None)):
        raise RmtkError(
            f"an engine is 'local', 'dask' or an object with a map_reduce method, not {type(engine).__name__}"
        )
    if dask_options:
        raise RmtkError(
            f"{', '.join(dask_options)} configure an engine made by name; set them on the "
            f"{type(engine).__name__} itself"
        )
    return engine
