"""Demonstrations as Apache Parquet: a directory of partition files (``pip install '.[dask]'``
for pyarrow). This module is the format and the writing side; :mod:`rmtk.data.parquet_dataset`
reads.

One row per step, like CSV, in columns of the narrowest unsigned integer type that holds
the values (docs/design/10-parquet-and-engines.md):

==============  ==========================================================================
``trajectory``  the trajectory's id (rmtk writes 0..N−1; any integers are read)
``step``        0, 1, 2, … within the trajectory
``state``       state index (0..S−1)
``action``      action index (0..A−1)
``label``       optional: proposition index of the state, checked against the MDP's (or,
                for demonstrations with recorded labels, the label a detector recorded,
                which may disagree: read with ``labels="keep"``)
``reward``      optional: float64, what the step's action earned (paid on the next row's
                label; null or NaN when unknown; :mod:`rmtk.data.rewards`)
``p_<prop>``    optional, all or none: float32, a detector's probability of each proposition
                at the step (docs/design/15-label-noise.md), as CSV's ``p_<proposition>``
==============  ==========================================================================

The schema metadata names the MDP (``rmtk.mdp``, ``rmtk.states``, ``rmtk.actions``,
``rmtk.propositions``) and the file's place in the dataset (``rmtk.partition`` = ``k/n``;
``rmtk.trajectories``, ``rmtk.first`` and ``rmtk.steps``: the file holds the trajectories
``first .. first + trajectories − 1`` in ``steps`` rows), so a dataset read with another MDP,
missing a file, or with a file that lost rows, is refused. rmtk writes each trajectory whole
in one file, rows sorted by (trajectory, step), files ``part-00000.parquet``,
``part-00001.parquet``, …

Writing never leaves a half dataset under the requested name: files go to a hidden sibling
directory that is renamed only when every partition is written (:class:`Staging`).
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

import attrs
import numpy as np

from .. import output
from .._arrays import whole_number
from ..errors import DataError, RmtkError
from .csv_io import DETECTION_PREFIX
from .demonstrations import Demonstrations, validate

#: Columns of a Parquet dataset (``label`` and ``reward`` optional; beside them, a detector's
#: ``p_<proposition>`` columns, :data:`~rmtk.data.csv_io.DETECTION_PREFIX`).
PARQUET_COLUMNS = ("trajectory", "step", "state", "action", "label", "reward")
#: Trajectories per partition file written by default.
PARTITION_SIZE = 500_000
#: Version of the layout written in ``rmtk.format``.
FORMAT_VERSION = "1"


def pyarrow():
    """``(pyarrow, pyarrow.parquet)``, imported on first use; a clear error when missing."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise RmtkError("Parquet demonstrations need pyarrow: from rmtk's checkout, pip install '.[dask]'") from None
    return pa, pq


def narrow_uint(max_value: int) -> np.dtype:
    """The narrowest unsigned integer type that holds ``0..max_value``."""
    for dtype in (np.uint8, np.uint16, np.uint32, np.uint64):
        if max_value <= np.iinfo(dtype).max:
            return np.dtype(dtype)
    raise DataError(f"{max_value} does not fit in 64 bits")


def is_dataset_path(path, format: str | None = None) -> bool:
    """Whether ``path`` names a Parquet dataset: ``format="parquet"``, a ``.parquet`` name, an
    existing directory or a name ending with a path separator."""
    text = str(path)
    return (
        format == "parquet"
        or text.lower().rstrip("/\\").endswith(".parquet")
        or os.path.isdir(text)
        or text.endswith(("/", os.sep))
    )


@attrs.frozen
class PartitionSchema:
    """The column types and metadata of one dataset: everything a worker needs to write a
    partition (small and picklable; no pyarrow object)."""

    mdp_name: str
    n_states: int
    n_actions: int
    n_propositions: int
    horizon: int = attrs.field(validator=whole_number("the horizon", error=DataError))
    n_trajectories: int = attrs.field(validator=whole_number("the number of trajectories", error=DataError))
    n_partitions: int = attrs.field(validator=whole_number("the number of partitions", error=DataError))
    labels: np.ndarray | None = attrs.field(default=None, eq=False, repr=False)
    rewards: bool = False
    recorded: bool = False
    detections: tuple[str, ...] = ()

    @classmethod
    def of(
        cls,
        mdp,
        *,
        horizon: int,
        n_trajectories: int,
        partition_size: int,
        labels: bool = False,
        rewards: bool = False,
        recorded: bool = False,
        detections: bool = False,
    ):
        """The schema of ``n_trajectories`` trajectories of up to ``horizon`` steps on ``mdp`` in
        partitions of ``partition_size`` (``labels``: write the label column, the MDP's labels;
        ``rewards``: the reward column, from the demonstrations' rewards; ``recorded``: the label
        column, from the demonstrations' recorded labels; ``detections``: a ``p_<proposition>``
        column per proposition, from their detections)."""
        whole_number("partition_size", error=DataError)(partition_size)
        return cls(
            str(getattr(mdp, "name", "") or ""),
            mdp.n_states,
            mdp.n_actions,
            mdp.n_propositions,
            horizon,
            n_trajectories,
            -(-n_trajectories // partition_size),
            np.asarray(mdp.labels) if labels and not recorded else None,
            rewards,
            recorded,
            tuple(DETECTION_PREFIX + str(p) for p in mdp.propositions) if detections else (),
        )

    def dtypes(self) -> dict[str, np.dtype]:
        out = {
            "trajectory": narrow_uint(self.n_trajectories - 1),
            "step": narrow_uint(self.horizon - 1),
            "state": narrow_uint(self.n_states - 1),
            "action": narrow_uint(self.n_actions - 1),
        }
        if self.labels is not None or self.recorded:
            out["label"] = narrow_uint(self.n_propositions - 1)
        if self.rewards:
            out["reward"] = np.dtype(np.float64)
        for name in self.detections:
            out[name] = np.dtype(np.float32)
        return out

    def metadata(self, index: int, n_trajectories: int, first_id: int, n_steps: int) -> dict[str, str]:
        return {
            "rmtk.format": FORMAT_VERSION,
            "rmtk.mdp": self.mdp_name,
            "rmtk.states": str(self.n_states),
            "rmtk.actions": str(self.n_actions),
            "rmtk.propositions": str(self.n_propositions),
            "rmtk.partition": f"{index}/{self.n_partitions}",
            "rmtk.trajectories": str(n_trajectories),
            "rmtk.first": str(first_id),
            "rmtk.steps": str(n_steps),
        }

    def write(self, demos: Demonstrations, path, *, index: int, first_id: int) -> int:
        """Write ``demos`` (trajectories ``first_id, first_id + 1, …``) as partition ``index``
        at ``path`` (which must not exist); returns the file's size in bytes."""
        pa, pq = pyarrow()
        N, T = demos.states.shape
        if T > self.horizon or first_id + N > self.n_trajectories:
            raise DataError(
                f"partition {index}: {N} trajectories of up to {T} steps from id {first_id} do not "
                f"fit the dataset's {self.n_trajectories} trajectories of up to {self.horizon} steps"
            )
        types = self.dtypes()
        for name, given, wanted in (
            ("a reward column", demos.rewards, self.rewards),
            ("recorded labels", demos.labels, self.recorded),
            ("detections", demos.detections, bool(self.detections)),
        ):
            if wanted and given is None:
                raise DataError(f"partition {index}: the dataset has {name}, but these demonstrations have none")
        if bool((demos.lengths == T).all()):  # no padding: the rows are the arrays in order
            ids = np.repeat(np.arange(first_id, first_id + N, dtype=types["trajectory"]), T)
            steps = np.tile(np.arange(T, dtype=types["step"]), N)
            rows = lambda a: a.reshape(N * T, *a.shape[2:])  # noqa: E731
        else:
            ii, tt = np.nonzero(demos.mask())
            ids = (ii + first_id).astype(types["trajectory"])
            steps = tt.astype(types["step"])
            rows = lambda a: a[ii, tt]  # noqa: E731
        states, actions = rows(demos.states), rows(demos.actions)
        columns = {
            "trajectory": ids,
            "step": steps,
            "state": states.astype(types["state"]),
            "action": actions.astype(types["action"]),
        }
        if self.recorded:
            columns["label"] = rows(demos.labels).astype(types["label"])
        elif self.labels is not None:
            columns["label"] = self.labels[states].astype(types["label"])
        if self.rewards:
            columns["reward"] = rows(demos.rewards)
        if self.detections:
            probs = rows(demos.detections)
            columns.update({name: probs[:, k].astype(np.float32) for k, name in enumerate(self.detections)})
        table = pa.table({k: pa.array(v) for k, v in columns.items()})
        table = table.replace_schema_metadata(self.metadata(index, N, first_id, len(ids)))
        small = [c for c in columns if c not in ("trajectory", "reward") and c not in self.detections]
        with output.replacing(path, error=DataError) as f:
            pq.write_table(
                table,
                f,
                compression="zstd",
                use_dictionary=small,
                column_encoding={"trajectory": "DELTA_BINARY_PACKED"},
            )
        return os.path.getsize(path)


def partition_file(directory, index: int) -> str:
    """The file of partition ``index`` in ``directory``: ``part-00000.parquet``, …"""
    return os.path.join(str(directory), f"part-{index:05d}.parquet")


class Staging:
    """A dataset directory written under a hidden temporary name next to ``path`` and renamed
    to ``path`` by :meth:`commit`, so that an interrupted write leaves no partial dataset.

    An existing ``path`` is replaced only with ``overwrite``, and only when it holds nothing
    but Parquet files (a directory with other files is never deleted); an empty directory is
    replaced. Used as a context manager, the temporary directory is removed unless committed.
    """

    def __init__(self, path, overwrite: bool = False):
        self.path = Path(str(path).rstrip("/\\") or str(path))
        self.overwrite = overwrite
        self._check()
        parent = output.check_directory(self.path, error=DataError)
        self.tmp = parent / f".{self.path.name}.partial-{uuid.uuid4().hex[:10]}"
        try:
            self.tmp.mkdir()
        except OSError as e:
            raise DataError(f"{self.path}: cannot write: {e.strerror or e}") from None
        self.committed = False

    def _check(self) -> None:
        p = self.path
        if not p.exists():
            return
        if not p.is_dir():
            if not self.overwrite:
                raise DataError(f"{p}: the file exists; pass --force (command line) or overwrite=True to replace it")
            return
        entries = sorted(e.name for e in p.iterdir())
        if not entries:
            return
        if not self.overwrite:
            raise DataError(
                f"{p}: the directory holds data ({len(entries)} entr{'ies' if len(entries) > 1 else 'y'}); "
                "pass --force (command line) or overwrite=True to replace it"
            )
        others = [e for e in entries if not (e.endswith(".parquet") and (p / e).is_file())]
        if others:
            raise DataError(
                f"{p}: holds files that are not Parquet partitions ({', '.join(others[:3])}); "
                "refusing to replace it, even with --force"
            )

    def file(self, index: int) -> str:
        """Where partition ``index`` is written."""
        return partition_file(self.tmp, index)

    def commit(self) -> None:
        """Put the written dataset in place (replacing what ``overwrite`` allowed)."""
        self._check()  # again: something may have appeared at ``path`` meanwhile
        old = None
        if self.path.is_dir() and not any(self.path.iterdir()):
            self.path.rmdir()
        elif self.path.exists():
            old = self.path.parent / f".{self.path.name}.old-{uuid.uuid4().hex[:10]}"
            self.path.rename(old)
        self.tmp.rename(self.path)
        self.committed = True
        if old is not None:
            shutil.rmtree(old) if old.is_dir() else old.unlink()

    def abort(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self) -> Staging:
        return self

    def __exit__(self, *exc) -> None:
        if not self.committed:
            self.abort()


def save_parquet(
    demos: Demonstrations,
    path,
    mdp,
    *,
    partition_size: int = PARTITION_SIZE,
    overwrite: bool = False,
    labels: bool = False,
) -> int:
    """Write ``demos`` as a Parquet dataset directory at ``path``: ``partition_size``
    trajectories per file, trajectory ids 0..N−1, the label column when ``labels``, and the
    reward column when ``demos`` have rewards (NaN for an unknown one). The demonstrations
    are validated against ``mdp`` first. Demonstrations with recorded labels write those as the
    label column (they may disagree with the MDP's); with detections, a ``p_<proposition>``
    column each. Returns the number of files."""
    if mdp is None:
        raise DataError(f"{path}: writing Parquet needs the MDP (its size and name go in the schema)")
    schema = PartitionSchema.of(
        mdp,
        horizon=demos.horizon,
        n_trajectories=demos.n_trajectories,
        partition_size=partition_size,
        labels=labels,
        rewards=demos.rewards is not None,
        recorded=demos.labels is not None,
        detections=demos.detections is not None,
    )
    pyarrow()
    with Staging(path, overwrite) as staging:
        validate(demos, mdp, source=str(path))
        for k, lo in enumerate(range(0, demos.n_trajectories, partition_size)):
            schema.write(demos[lo : lo + partition_size], staging.file(k), index=k, first_id=lo)
        staging.commit()
    return schema.n_partitions
