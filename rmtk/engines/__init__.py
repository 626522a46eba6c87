"""Engines: where the work of counting, simulating and recording runs (docs/design/10-parquet-and-engines.md).

* :mod:`rmtk.engines.local`: the :class:`~rmtk.engines.local.Engine` protocol,
  :class:`~rmtk.engines.local.LocalEngine` (this process) and
  :func:`~rmtk.engines.local.as_engine`;
* :mod:`rmtk.engines.dask`: :class:`~rmtk.engines.dask.DaskEngine`, on a Dask cluster
  (``pip install '.[dask]'``; imported only when asked for);
* :mod:`rmtk.engines.cluster`: reaching and starting Dask clusters with bounded waits;
* :mod:`rmtk.engines.shards`: work split into seeded shards and the one order of their reduce.
"""

from .._lazy import lazy_exports

#: Imported on first use: the command line reads the engines' names alone on every run.
_LAZY = {
    "ENGINES": "local",
    "Engine": "local",
    "LocalEngine": "local",
    "as_engine": "local",
    "Shard": "shards",
    "TreeReducer": "shards",
    "plan_shards": "shards",
}

__getattr__, __dir__ = lazy_exports(__name__, _LAZY)


__all__ = ["Engine", "LocalEngine", "as_engine", "ENGINES", "Shard", "TreeReducer", "plan_shards"]
