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
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import attrs
import numpy as np

from ..errors import DataError
from .demonstrations import PAD, Demonstrations, _show_id, out_of_range, validate
from .parquet_io import PARQUET_COLUMNS, pyarrow
from .rewards import first_infinite, some_known

_REQUIRED = PARQUET_COLUMNS[:4]
_INDEX_MAX = np.iinfo(np.int32).max


def _read_failure(src: str, e: Exception) -> DataError:
    if isinstance(e, FileNotFoundError):
        return DataError(f"{src}: no such file")
    return DataError(f"{src}: not a readable Parquet file ({e})")


def _check_columns(schema, src: str) -> tuple[str, ...]:
    pa, _ = pyarrow()
    names = list(schema.names)
    for name in names:
        if name not in PARQUET_COLUMNS:
            raise DataError(
                f"{src}: unknown column {name!r}; the columns are trajectory, step, state, action and "
                "optionally label, reward"
            )
        if names.count(name) > 1:
            raise DataError(f"{src}: column {name!r} appears twice")
        kind = schema.field(name).type
        if name == "reward":
            if not (pa.types.is_floating(kind) or pa.types.is_integer(kind)):
                raise DataError(f"{src}: column 'reward' has type {kind}, expected numbers")
        elif not pa.types.is_integer(kind):
            raise DataError(f"{src}: column {name!r} has type {kind}, expected integers")
    missing = [c for c in _REQUIRED if c not in names]
    if missing:
        raise DataError(
            f"{src}: missing column{'s' if len(missing) > 1 else ''} {', '.join(map(repr, missing))} "
            f"(the file has: {', '.join(names) or 'none'})"
        )
    return tuple(names)


def _meta(schema) -> dict[str, str]:
    raw = schema.metadata or {}
    return {k.decode(): v.decode(errors="replace") for k, v in raw.items() if k.startswith(b"rmtk.")}


def _check_mdp(meta: dict, mdp, src: str) -> None:
    if mdp is None or "rmtk.states" not in meta:
        return
    name, S, A = meta.get("rmtk.mdp", ""), meta.get("rmtk.states"), meta.get("rmtk.actions")
    if (S, A) != (str(mdp.n_states), str(mdp.n_actions)) or (name and mdp.name and name != mdp.name):
        raise DataError(
            f"{src}: written for the MDP {name!r} ({S} states, {A} actions); the MDP given is "
            f"{mdp.name!r} ({mdp.n_states} states, {mdp.n_actions} actions)"
        )


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

    @classmethod
    def open(cls, path, mdp=None) -> ParquetDataset:
        """Find the partitions (``*.parquet`` in a directory, in name order; names starting
        with ``.`` or ``_`` are not partitions) and check every footer: columns, integer
        types, one schema for all, the MDP of the metadata against ``mdp`` (when given), and
        no partition missing when the files say ``k/n``."""
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
        return cls(str(path), tuple(parts), tuple(first[1].names), first[2])

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
        data = PartitionData.read(part.path, self.columns, mdp, among=len(self.partitions))
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
        states = np.full((sum(len(d) for d in pieces), T), PAD, dtype=np.int32)
        actions = states.copy()
        rewards = None if pieces[0].rewards is None else np.full(states.shape, np.nan)
        lo = 0
        for d in pieces:
            states[lo : lo + len(d), : d.horizon] = d.states
            actions[lo : lo + len(d), : d.horizon] = d.actions
            if rewards is not None:
                rewards[lo : lo + len(d), : d.horizon] = d.rewards
            lo += len(d)
        if rewards is not None:
            some_known(rewards, f"{self.path}: column 'reward'")
        return Demonstrations(states, actions, np.concatenate([d.lengths for d in pieces]), rewards=rewards)


def _reward_column(column, path: str) -> np.ndarray:
    """A ``reward`` column as float64, null as NaN (unknown); an infinite value is refused by row."""
    pa, _ = pyarrow()
    values = np.array(column.cast(pa.float64()).to_numpy(zero_copy_only=False), dtype=np.float64)
    if column.null_count:
        values[column.is_null().to_numpy(zero_copy_only=False)] = np.nan
    row = first_infinite(values)
    if row is not None:
        raise DataError(f"{path}: row {row}: reward {values[row]} is infinite; a reward is a finite number or null/nan")
    return values


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


class _Rows:
    """Row numbers of the records (trajectory i, step t) of a partition, for messages."""

    def __init__(self, starts: np.ndarray, order: np.ndarray | None):
        self.starts, self.order = starts, order

    def __getitem__(self, it) -> int:
        i, t = it
        p = int(self.starts[i]) + int(t)
        return p if self.order is None else int(self.order[p])


@attrs.define
class PartitionData:
    """One partition's rows grouped into trajectories (in order of first appearance, steps
    checked to be 0, 1, 2, …): ``ids``, ``starts`` (first sorted row of each; one more entry
    at the end) and the sorted ``columns``; ``order`` maps sorted rows to file rows (None
    when the file is already sorted, as rmtk writes it)."""

    source: str
    ids: np.ndarray
    starts: np.ndarray
    order: np.ndarray | None
    columns: dict

    @property
    def n_trajectories(self) -> int:
        return len(self.ids)

    def row(self, i: int) -> int:
        """The file row of the first step of trajectory ``i``."""
        p = int(self.starts[i])
        return p if self.order is None else int(self.order[p])

    @classmethod
    def read(cls, path: str, expected: tuple[str, ...] | None = None, mdp=None, among: int = 1) -> PartitionData:
        """Read the file ``path`` (one of ``among`` partitions)."""
        _, pq = pyarrow()
        try:
            table = pq.read_table(path)
        except Exception as e:
            raise _read_failure(path, e) from None
        names = _check_columns(table.schema, path)
        if expected is not None and names != tuple(expected):
            raise DataError(f"{path}: its columns changed since the dataset was opened: {', '.join(names)}")
        _check_mdp(_meta(table.schema), mdp, path)
        cols = {}
        for name in names:
            column = table.column(name)
            if name == "reward":  # null: unknown
                cols[name] = _reward_column(column, path)
                continue
            if column.null_count:
                row = int(np.flatnonzero(column.is_null().to_numpy(zero_copy_only=False))[0])
                raise DataError(f"{path}: row {row}: missing {name} (null)")
            cols[name] = column.to_numpy()
        del table
        data = cls._group(path, cols, among)
        if mdp is not None:
            data._check_ranges(mdp)
        return data

    @classmethod
    def _group(cls, src: str, cols: dict, among: int = 1) -> PartitionData:
        ids, steps = cols.pop("trajectory"), cols.pop("step")
        if ids.dtype == np.uint64 and ids.size and ids.max() > np.iinfo(np.int64).max:
            raise DataError(
                f"{src}: row {int(np.argmax(ids))}: trajectory id {ids.max()} is too large (at most 2^63-1)"
            )
        ids = ids.astype(np.int64, copy=False)
        n = len(ids)
        if n == 0:
            return cls(src, ids[:0], np.zeros(1, np.int64), None, cols)
        change = np.flatnonzero(ids[1:] != ids[:-1]) + 1
        if np.all(ids[change] > ids[change - 1]):  # ids sorted: each trajectory's rows together
            starts = np.concatenate(([0], change, [n]))
            lengths = np.diff(starts)
            T = int(lengths.max())
            if (lengths == T).all():
                ok = (steps.reshape(-1, T) == np.arange(T)).all()
            else:
                ok = np.array_equal(steps, np.arange(n) - np.repeat(starts[:-1], lengths))
            if ok:
                return cls(src, ids[starts[:-1]], starts, None, cols)
        # general case: group by id in order of first appearance, sort each group by step
        uniq, first, inv = np.unique(ids, return_index=True, return_inverse=True)
        rank = np.empty(len(uniq), dtype=np.int64)
        rank[np.argsort(first, kind="stable")] = np.arange(len(uniq))
        group = rank[inv.ravel()]
        signed = steps.astype(np.int64)
        order = np.lexsort((signed, group))
        g, k = group[order], signed[order]
        counts = np.bincount(group, minlength=len(uniq))
        starts = np.concatenate(([0], np.cumsum(counts)))
        expect = np.arange(n) - starts[g]
        wrong = np.flatnonzero(k != expect)
        if wrong.size:
            p = int(wrong[0])
            tid = _show_id(ids[order[p]])
            if p > 0 and g[p - 1] == g[p] and k[p - 1] == k[p]:
                msg = f"trajectory {tid}: step {k[p]} appears twice (also on row {int(order[p - 1])})"
            elif expect[p] == 0:
                msg = f"trajectory {tid} starts at step {k[p]}; steps count from 0"
                if among > 1 and k[p] > 0:
                    msg += " (if its first steps are in another file: a trajectory's rows must all be in one file)"
            else:
                msg = f"trajectory {tid}: step {k[p]} follows step {k[p - 1]}; step {expect[p]} is missing"
            raise DataError(f"{src}: row {int(order[p])}: {msg}")
        first_rows = np.sort(first)
        return cls(src, ids[first_rows], starts, order, {c: v[order] for c, v in cols.items()})

    def _check_ranges(self, mdp) -> None:
        """Indices in range, before they are narrowed to the int32 of :class:`Demonstrations`."""
        bounds = {"state": mdp.n_states, "action": mdp.n_actions, "label": mdp.n_propositions}
        for name, column in self.columns.items():
            if name == "reward":
                continue
            bad = (column >= bounds[name]) if column.dtype.kind == "u" else ((column < 0) | (column >= bounds[name]))
            if bad.any():
                p = int(np.argmax(bad))
                i = int(np.searchsorted(self.starts, p, side="right") - 1)
                t = p - int(self.starts[i])
                row = p if self.order is None else int(self.order[p])
                raise DataError(
                    f"{self.source}: row {row}: trajectory {_show_id(self.ids[i])}, step {t}: "
                    + out_of_range(name, int(column[p]), mdp)
                )

    def demonstrations(self, mdp, lo: int, hi: int) -> Demonstrations:
        """Trajectories ``lo .. hi − 1`` of the partition, validated against ``mdp`` (when given)."""
        hi = min(hi, self.n_trajectories)
        starts = self.starts[lo : hi + 1]
        a, b = int(starts[0]), int(starts[-1])
        lengths = np.diff(starts)
        if mdp is None:  # no ranges checked: refuse what int32 cannot hold
            for name, column in self.columns.items():
                if name != "reward" and column[a:b].size and int(column[a:b].max()) > _INDEX_MAX:
                    raise DataError(f"{self.source}: {name} index {int(column[a:b].max())} is too large")
        T = int(lengths.max())
        arrays = {}
        for name, column in self.columns.items():
            part = column[a:b]
            dtype, pad = (np.float64, np.nan) if name == "reward" else (np.int32, PAD)
            if (lengths == T).all():
                arrays[name] = part.reshape(-1, T).astype(dtype)
            else:
                out = np.full((hi - lo, T), pad, dtype=dtype)
                rows = np.repeat(np.arange(hi - lo), lengths)
                out[rows, np.arange(b - a) - np.repeat(starts[:-1] - a, lengths)] = part
                arrays[name] = out
        demos = Demonstrations(arrays["state"], arrays["action"], lengths, rewards=arrays.get("reward"))
        if mdp is not None:
            validate(
                demos,
                mdp,
                labels=arrays.get("label"),
                source=self.source,
                trajectory_ids=self.ids[lo:hi],
                rows=_Rows(starts, self.order),
            )
        return demos
