"""Reading Parquet demonstrations (the format: :mod:`rmtk.data.parquet_io`), whole or one
partition at a time, with the validation of CSV and NPZ.

:meth:`ParquetDataset.open` reads only the files' footers: the columns and their types, the
schema metadata (the MDP the data were written for, ``k/n`` of each partition) and the row
counts, so a dataset of another schema, for another MDP or missing a file is refused before
any data is read. :meth:`ParquetDataset.read` then reads one partition and groups its rows
into trajectories; its :meth:`PartitionData.demonstrations` builds (and validates) any range
of them, so that a counting job holds one chunk of padded arrays at a time.

Every message names the file and, for a bad record, its row (counted from 0, as pyarrow and
pandas number rows) with the trajectory id and step; the checks are vectorised.

A dataset is read with one of three ways of reading its labels (``labels``): ``"check"`` (a label
column must agree with the MDP's), ``"keep"`` (the labels a detector that errs recorded, kept as
``Demonstrations.labels``; docs/design/15-label-noise.md) or ``"ignore"`` (neither the label nor a
detector's ``p_<proposition>`` columns are read: the words are the MDP's labels, as a learner
counting on the MDP as the labels are believed needs). A detector's columns are read with the
first two, as ``Demonstrations.detections``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import attrs
import numpy as np

from ..errors import DataError
from .demonstrations import PAD, Demonstrations, _show_id
from .parquet_io import pyarrow
from .parquet_partition import (
    LABEL_MODES,
    PartitionData,
    _check_columns,
    _check_detections,
    _check_mdp,
    _detection,
    _meta,
    _read_failure,
)
from .rewards import some_known

__all__ = ["ParquetDataset", "Partition", "check_disjoint"]  # PartitionData: rmtk.data.parquet_partition


@attrs.frozen
class Partition:
    """One file of a dataset: the item a counting job receives."""

    index: int
    count: int
    path: str
    rows: int
    trajectories: int | None = None  # from the metadata, when written by rmtk
    first: int | None = None  # the first trajectory id (rmtk writes first .. first + trajectories − 1)
    steps: int | None = None  # the rows rmtk wrote, from the metadata

    def __str__(self) -> str:
        return f"partition {self.index} of {self.count} ({self.path})"

    @classmethod
    def of(cls, index: int, count: int, path: str, rows: int, info: dict) -> Partition:
        """The partition of a file with ``rows`` rows (its footer) and ``rmtk.*`` metadata
        ``info``, checked to hold what the metadata says it holds as far as the footer tells."""
        n, first, steps = (_whole(info, key, path) for key in ("rmtk.trajectories", "rmtk.first", "rmtk.steps"))
        part = cls(index, count, path, rows, n, first, steps)
        if steps is not None and rows != steps:
            raise DataError(
                f"{part}: row {min(rows, steps)}: the file "
                + (
                    f"ends after {rows} rows, but rmtk wrote {steps} (metadata rmtk.steps): rows {rows}..{steps - 1} "
                    "are missing"
                    if rows < steps
                    else f"holds {rows} rows, but rmtk wrote {steps} (metadata rmtk.steps)"
                )
            )
        if n is not None and rows < n:
            raise DataError(
                f"{part}: row {rows}: the file ends after {rows} rows, too few for the {n} trajectories "
                "its metadata records (rmtk.trajectories)"
            )
        return part

    def check(self, data: PartitionData) -> None:
        """Refuse ``data`` (this partition, read) unless it holds what the footer and the metadata
        record: the rows, and the trajectories ``first .. first + trajectories − 1`` (or their number)."""
        rows = int(data.starts[-1])
        if rows != self.rows:
            raise DataError(f"{self}: the file changed since the dataset was opened: {rows} rows now, {self.rows} then")
        n, found = self.trajectories, data.n_trajectories
        if n is None:
            return
        if self.first is None:  # the number only
            if found == n:
                return
            k = min(found, n)
        else:
            expected = np.arange(self.first, self.first + n, dtype=np.int64)
            m = min(found, n)
            differ = np.flatnonzero(data.ids[:m] != expected[:m])
            if not differ.size and found == n:
                return
            k = int(differ[0]) if differ.size else m
            if k < m:
                raise DataError(
                    f"{self}: row {data.row(k)}: trajectory {_show_id(data.ids[k])} where its metadata "
                    f"records trajectory {expected[k]} (trajectories {self.first}..{self.first + n - 1})"
                )
        if found < n:
            raise DataError(
                f"{self}: row {rows}: the file ends after {found} of the {n} trajectories its metadata "
                "records (rmtk.trajectories)"
            )
        raise DataError(
            f"{self}: row {data.row(k)}: trajectory {_show_id(data.ids[k])} is one more than the {n} "
            "its metadata records (rmtk.trajectories)"
        )


def _whole(info: dict, key: str, path: str) -> int | None:
    value = info.get(key)
    if value is None:
        return None
    if not value.isdigit():
        raise DataError(f"{path}: unreadable metadata {key} = {value!r}, expected a whole number")
    return int(value)


@attrs.frozen
class ParquetDataset:
    """A directory of Parquet partitions (or a single ``.parquet`` file), checked for
    consistency by :meth:`open`."""

    path: str
    partitions: tuple[Partition, ...]
    columns: tuple[str, ...]
    metadata: dict = attrs.field(eq=False, repr=False)
    labels: str = attrs.field(default="check", kw_only=True)

    @classmethod
    def open(cls, path, mdp=None, *, labels: str = "check") -> ParquetDataset:
        """Find the partitions (``*.parquet`` in a directory, in name order; names starting
        with ``.`` or ``_`` are not partitions) and check every footer: columns, integer
        types, one schema for all, the MDP of the metadata against ``mdp`` (when given), a
        detector's columns against its propositions, and no partition missing when the files
        say ``k/n``. ``labels``: how the label column is read (module docstring)."""
        if labels not in LABEL_MODES:
            raise DataError(f"labels must be one of {', '.join(map(repr, LABEL_MODES))}, got {labels!r}")
        _, pq = pyarrow()
        p = Path(path)
        if not p.exists():
            raise DataError(f"{path}: no such file or directory")
        if p.is_dir():
            files = sorted(
                f for f in p.iterdir() if f.suffix == ".parquet" and f.is_file() and not f.name.startswith((".", "_"))
            )
            if not files:
                raise DataError(f"{path}: no Parquet files (*.parquet) in the directory")
        else:
            files = [p]
        first = None
        parts, places = [], []
        for f in files:
            src = str(f)
            try:
                meta = pq.read_metadata(f)
                schema = meta.schema.to_arrow_schema()
            except Exception as e:  # pyarrow raises OSError or ArrowInvalid subclasses
                raise _read_failure(src, e) from None
            _check_columns(schema, src)
            _check_detections(schema.names, mdp, src)
            info = _meta(schema)
            _check_mdp(info, mdp, src)
            if first is None:
                first = (src, schema, info)
            else:
                _same_schema(first, (src, schema, info))
            parts.append(Partition.of(len(parts), len(files), src, meta.num_rows, info))
            places.append(info.get("rmtk.partition"))
        if p.is_dir():
            _check_complete(str(path), files, places)
            _check_ids_tile(parts)
        return cls(str(path), tuple(parts), tuple(first[1].names), first[2], labels=labels)

    def reading(self, labels: str) -> ParquetDataset:
        """The same dataset, its labels read as ``labels`` says (module docstring)."""
        if labels not in LABEL_MODES:
            raise DataError(f"labels must be one of {', '.join(map(repr, LABEL_MODES))}, got {labels!r}")
        return attrs.evolve(self, labels=labels)

    @property
    def recorded(self) -> bool:
        """Whether reading gives a detector's recorded labels or probabilities."""
        return self.labels == "keep" and ("label" in self.columns or any(map(_detection, self.columns)))

    def read_columns(self) -> tuple[str, ...]:
        """The columns reading takes (without the label and detection columns when ignored)."""
        if self.labels != "ignore":
            return self.columns
        return tuple(c for c in self.columns if c != "label" and not _detection(c))

    @property
    def n_rows(self) -> int:
        return sum(p.rows for p in self.partitions)

    @property
    def n_trajectories(self) -> int | None:
        """The number of trajectories when every file's metadata says it (rmtk's files do)."""
        counts = [p.trajectories for p in self.partitions]
        return None if None in counts else sum(counts)

    def summary(self) -> str:
        n = self.n_trajectories
        return (
            f"{len(self.partitions)} Parquet partition{'s' if len(self.partitions) != 1 else ''}, "
            + (f"{n:,} trajectories, " if n is not None else "")
            + f"{self.n_rows:,} steps"
        )

    def read(self, partition: Partition | int, mdp=None) -> PartitionData:
        """Read one partition and group its rows into trajectories (steps checked)."""
        part = self.partitions[partition] if isinstance(partition, (int, np.integer)) else partition
        data = PartitionData.read(part.path, self.read_columns(), mdp, among=len(self.partitions), labels=self.labels)
        part.check(data)
        return data

    def ids(self, partition: Partition | int) -> np.ndarray:
        """The sorted distinct trajectory ids of one partition (reads that column only)."""
        _, pq = pyarrow()
        part = self.partitions[partition] if isinstance(partition, (int, np.integer)) else partition
        try:
            column = pq.read_table(part.path, columns=["trajectory"]).column(0)
        except Exception as e:
            raise _read_failure(part.path, e) from None
        return np.unique(column.to_numpy().astype(np.int64))

    def chunks(self, mdp, size: int = 250_000) -> Iterator[Demonstrations]:
        """Validated demonstrations, partition after partition, ``size`` trajectories at a time.
        (Ids are not compared across partitions here; :meth:`load` and the counting engines do.)"""
        for part in self.partitions:
            data = self.read(part, mdp)
            for lo in range(0, data.n_trajectories, size):
                yield data.demonstrations(mdp, lo, lo + size)

    def load(self, mdp=None) -> Demonstrations:
        """Every trajectory, validated against ``mdp`` (when given), in file order."""
        check_disjoint([(p, self.ids(p)) for p in self.partitions])
        parts = [self.read(p, mdp) for p in self.partitions]
        pieces = [d.demonstrations(mdp, 0, d.n_trajectories) for d in parts if d.n_trajectories]
        if not pieces:
            raise DataError(f"{self.path}: no trajectories (every partition is empty)")
        T = max(d.horizon for d in pieces)
        shape = (sum(len(d) for d in pieces), T)
        first = pieces[0]
        arrays = {"states": np.full(shape, PAD, dtype=np.int32), "actions": np.full(shape, PAD, dtype=np.int32)}
        if first.rewards is not None:
            arrays["rewards"] = np.full(shape, np.nan)
        if first.labels is not None:
            arrays["labels"] = np.full(shape, PAD, dtype=np.int32)
        if first.detections is not None:
            arrays["detections"] = np.full((*shape, first.detections.shape[2]), np.nan, dtype=np.float32)
        lo = 0
        for d in pieces:
            for name, out in arrays.items():
                out[lo : lo + len(d), : d.horizon] = getattr(d, name)
            lo += len(d)
        if "rewards" in arrays:
            some_known(arrays["rewards"], f"{self.path}: column 'reward'")
        lengths = np.concatenate([d.lengths for d in pieces])
        return Demonstrations(
            arrays.pop("states"), arrays.pop("actions"), lengths, **{k: arrays.get(k) for k in _OPTIONAL}
        )


#: The optional arrays of :class:`Demonstrations` a dataset may hold.
_OPTIONAL = ("rewards", "labels", "detections")


def _same_schema(first, other) -> None:
    (src0, s0, m0), (src, s, m) = first, other
    if list(s.names) != list(s0.names):
        raise DataError(
            f"{src}: its schema differs from {src0}'s: columns {', '.join(s.names)} here, {', '.join(s0.names)} there"
        )
    for name in s.names:
        if s.field(name).type != s0.field(name).type:
            raise DataError(
                f"{src}: its schema differs from {src0}'s: column {name!r} is {s.field(name).type} here, "
                f"{s0.field(name).type} there"
            )
    for key in ("rmtk.mdp", "rmtk.states", "rmtk.actions", "rmtk.propositions"):
        if m.get(key) != m0.get(key):
            raise DataError(
                f"{src}: its schema differs from {src0}'s: metadata {key} is {m.get(key)!r} here, {m0.get(key)!r} there"
            )


def _check_complete(path: str, files, places) -> None:
    """With ``k/n`` in every file's metadata: exactly the partitions 0..n−1."""
    if not places or any(p is None for p in places):
        return
    try:
        pairs = [tuple(int(x) for x in p.split("/")) for p in places]
    except ValueError:
        raise DataError(f"{path}: unreadable rmtk.partition metadata {places!r}") from None
    totals = {n for _, n in pairs}
    seen: dict[int, Path] = {}
    for (k, n), f in zip(pairs, files):
        if len(totals) > 1:
            raise DataError(f"{f}: partition {k} of {n}, but other files say they are of {sorted(totals - {n})[0]}")
        if k in seen:
            raise DataError(f"{f}: partition {k} of {n} again (also {seen[k]})")
        seen[k] = f
    n = totals.pop()
    missing = sorted(set(range(n)) - set(seen))
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise DataError(f"{path}: partition {missing[0]} of {n} is missing{more}: {len(files)} of {n} files present")


def _check_ids_tile(parts) -> None:
    """With ``rmtk.first`` and ``rmtk.trajectories`` in every file: the files' id ranges follow
    one another from 0, as rmtk writes them (a file from another dataset is refused)."""
    if not parts or any(p.first is None or p.trajectories is None for p in parts):
        return
    expected = 0
    for part in sorted(parts, key=lambda p: p.first):
        if part.first != expected:
            what = "trajectories " + (
                f"{expected}..{part.first - 1} are in no file"
                if part.first > expected
                else f"{part.first}..{expected - 1} are in another file too"
            )
            last = part.first + part.trajectories - 1
            raise DataError(
                f"{part}: its metadata records trajectories {part.first}..{last}, where trajectory "
                f"{expected} comes next: {what}"
            )
        expected += part.trajectories


def check_disjoint(ids_per_partition) -> None:
    """Refuse a trajectory whose rows are in two files: ``ids_per_partition`` holds
    ``(partition, sorted distinct ids)`` pairs."""
    if len(ids_per_partition) < 2:
        return
    ids = np.concatenate([ids for _, ids in ids_per_partition])
    owner = np.repeat(np.arange(len(ids_per_partition)), [len(ids) for _, ids in ids_per_partition])
    order = np.argsort(ids, kind="stable")
    dup = np.flatnonzero(ids[order][1:] == ids[order][:-1])
    if dup.size:
        a, b = owner[order[dup[0]]], owner[order[dup[0] + 1]]
        tid = ids[order[dup[0]]]
        raise DataError(
            f"{ids_per_partition[b][0].path}: trajectory {_show_id(tid)} also has rows in "
            f"{ids_per_partition[a][0].path}; a trajectory's rows must all be in one file"
        )
