"""One partition of a Parquet dataset (:mod:`rmtk.data.parquet_dataset`): its columns checked from
the footer, its rows read and grouped into trajectories (:class:`PartitionData`), and any range
of them built into validated :class:`~rmtk.data.Demonstrations`, so that a counting job holds
one chunk of padded arrays at a time. How the label column is read (``labels``: ``"check"``,
``"keep"``, ``"ignore"``) is the dataset's (:mod:`rmtk.data.parquet_dataset`).

Every message names the file and, for a bad record, its row (counted from 0) with the trajectory
id and step; the checks are vectorised.
"""

from __future__ import annotations

import attrs
import numpy as np

from ..errors import DataError
from .csv_io import DETECTION_PREFIX
from .demonstrations import PAD, Demonstrations, _show_id, out_of_range, validate
from .parquet_io import PARQUET_COLUMNS, pyarrow
from .rewards import first_infinite

_REQUIRED = PARQUET_COLUMNS[:4]
_INDEX_MAX = np.iinfo(np.int32).max
#: How a dataset's label column is read (:mod:`rmtk.data.parquet_dataset`).
LABEL_MODES = ("check", "keep", "ignore")


def _detection(name: str) -> bool:
    return name.startswith(DETECTION_PREFIX)


def _read_failure(src: str, e: Exception) -> DataError:
    if isinstance(e, FileNotFoundError):
        return DataError(f"{src}: no such file")
    return DataError(f"{src}: not a readable Parquet file ({e})")


def _check_columns(schema, src: str) -> tuple[str, ...]:
    pa, _ = pyarrow()
    names = list(schema.names)
    for name in names:
        if name not in PARQUET_COLUMNS and not _detection(name):
            raise DataError(
                f"{src}: unknown column {name!r}; the columns are trajectory, step, state, action and "
                f"optionally label, reward and a detector's {DETECTION_PREFIX}<proposition>"
            )
        if names.count(name) > 1:
            raise DataError(f"{src}: column {name!r} appears twice")
        kind = schema.field(name).type
        if name == "reward" or _detection(name):
            if not (pa.types.is_floating(kind) or pa.types.is_integer(kind)):
                raise DataError(f"{src}: column {name!r} has type {kind}, expected numbers")
        elif not pa.types.is_integer(kind):
            raise DataError(f"{src}: column {name!r} has type {kind}, expected integers")
    missing = [c for c in _REQUIRED if c not in names]
    if missing:
        raise DataError(
            f"{src}: missing column{'s' if len(missing) > 1 else ''} {', '.join(map(repr, missing))} "
            f"(the file has: {', '.join(names) or 'none'})"
        )
    return tuple(names)


def _check_detections(names, mdp, src: str) -> None:
    """A detector's columns name the MDP's propositions, all of them or none."""
    found = [n for n in names if _detection(n)]
    if mdp is None or not found:
        return
    props = [str(p) for p in mdp.propositions]
    for name in found:
        if name[len(DETECTION_PREFIX) :] not in props:
            raise DataError(f"{src}: column {name!r} names no proposition of the MDP {mdp.name!r} ({', '.join(props)})")
    missing = [DETECTION_PREFIX + p for p in props if DETECTION_PREFIX + p not in found]
    if missing:
        raise DataError(f"{src}: detections need a column per proposition: missing {', '.join(missing)}")


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
    labels: str = "check"

    @property
    def n_trajectories(self) -> int:
        return len(self.ids)

    def row(self, i: int) -> int:
        """The file row of the first step of trajectory ``i``."""
        p = int(self.starts[i])
        return p if self.order is None else int(self.order[p])

    @classmethod
    def read(
        cls, path: str, expected: tuple[str, ...] | None = None, mdp=None, among: int = 1, labels: str = "check"
    ) -> PartitionData:
        """Read the file ``path`` (one of ``among`` partitions; with ``labels="ignore"``, the
        ``expected`` columns only)."""
        _, pq = pyarrow()
        try:
            table = pq.read_table(path, columns=list(expected) if labels == "ignore" and expected else None)
        except Exception as e:
            raise _read_failure(path, e) from None
        names = _check_columns(table.schema, path)
        if expected is not None and names != tuple(expected):
            raise DataError(f"{path}: its columns changed since the dataset was opened: {', '.join(names)}")
        _check_mdp(_meta(table.schema), mdp, path)
        if labels != "ignore":
            _check_detections(names, mdp, path)
        cols = {}
        for name in names:
            column = table.column(name)
            if name == "reward":  # null: unknown
                cols[name] = _reward_column(column, path)
                continue
            if _detection(name):
                if column.null_count:
                    row = int(np.flatnonzero(column.is_null().to_numpy(zero_copy_only=False))[0])
                    raise DataError(f"{path}: row {row}: missing {name} (null)")
                cols[name] = np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.float32)
                continue
            if column.null_count:
                row = int(np.flatnonzero(column.is_null().to_numpy(zero_copy_only=False))[0])
                raise DataError(f"{path}: row {row}: missing {name} (null)")
            cols[name] = column.to_numpy()
        del table
        data = cls._group(path, cols, among)
        data.labels = labels
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
            if _detection(name):
                bad = ~((column >= 0) & (column <= 1))
            else:
                bad = (column >= bounds[name]) if column.dtype.kind == "u" else (column < 0) | (column >= bounds[name])
            if bad.any():
                p = int(np.argmax(bad))
                i = int(np.searchsorted(self.starts, p, side="right") - 1)
                t = p - int(self.starts[i])
                row = p if self.order is None else int(self.order[p])
                what = (
                    f"{name} = {float(column[p])!r} is not a probability in [0, 1]"
                    if _detection(name)
                    else out_of_range(name, int(column[p]), mdp)
                )
                raise DataError(f"{self.source}: row {row}: trajectory {_show_id(self.ids[i])}, step {t}: {what}")

    def demonstrations(self, mdp, lo: int, hi: int) -> Demonstrations:
        """Trajectories ``lo .. hi − 1`` of the partition, validated against ``mdp`` (when given)."""
        hi = min(hi, self.n_trajectories)
        starts = self.starts[lo : hi + 1]
        a, b = int(starts[0]), int(starts[-1])
        lengths = np.diff(starts)
        if mdp is None:  # no ranges checked: refuse what int32 cannot hold
            for name, column in self.columns.items():
                if (
                    name != "reward"
                    and not _detection(name)
                    and column[a:b].size
                    and int(column[a:b].max()) > _INDEX_MAX
                ):
                    raise DataError(f"{self.source}: {name} index {int(column[a:b].max())} is too large")
        T = int(lengths.max())
        arrays = {}
        for name, column in self.columns.items():
            part = column[a:b]
            dtype, pad = (
                (np.float64, np.nan)
                if name == "reward"
                else (np.float32, np.nan)
                if _detection(name)
                else (np.int32, PAD)
            )
            if (lengths == T).all():
                arrays[name] = part.reshape(-1, T).astype(dtype)
            else:
                out = np.full((hi - lo, T), pad, dtype=dtype)
                rows = np.repeat(np.arange(hi - lo), lengths)
                out[rows, np.arange(b - a) - np.repeat(starts[:-1] - a, lengths)] = part
                arrays[name] = out
        found = [n for n in self.columns if _detection(n)]
        if found:  # in the MDP's order of propositions (checked to name them all), else the file's
            names = [DETECTION_PREFIX + str(p) for p in mdp.propositions] if mdp is not None else found
            detections = np.stack([arrays.pop(n) for n in names], axis=2)
        keep = self.labels == "keep"
        demos = Demonstrations(
            arrays["state"],
            arrays["action"],
            lengths,
            rewards=arrays.get("reward"),
            labels=arrays.get("label") if keep else None,
            detections=detections if found else None,
        )
        if mdp is not None:
            validate(
                demos,
                mdp,
                labels=arrays.get("label"),
                source=self.source,
                trajectory_ids=self.ids[lo:hi],
                rows=_Rows(starts, self.order),
                agree=not keep,
            )
        return demos
