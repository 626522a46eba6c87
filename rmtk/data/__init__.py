"""Demonstrations and the files they are kept in (paper section 5).

:class:`Demonstrations` (:mod:`rmtk.data.demonstrations`) holds trajectories as padded integer
arrays; :func:`load` and :func:`save` pick the file format from the extension: CSV
(:mod:`rmtk.data.csv_io`), NPZ (:mod:`rmtk.data.npz_io`), or a Parquet dataset directory
(:mod:`rmtk.data.parquet_io`, :mod:`rmtk.data.parquet_dataset`; pyarrow is imported only then).
Loading always validates the data against the MDP: indices in range, labels matching, every
step possible.
"""

from __future__ import annotations

import os

from ..errors import DataError
from ._files import _check_writable, _read_error
from .csv_io import CSV_COLUMNS, load_csv, save_csv
from .demonstrations import PAD, Demonstrations, validate
from .npz_io import load_npz, open_npz, save_npz

#: Supported file extensions → format name (a Parquet dataset is a directory).
FORMATS = {".csv": "CSV", ".npz": "NPZ", ".parquet": "Parquet"}


def format_of(path, format: str | None = None) -> str:
    """``"csv"``, ``"npz"`` or ``"parquet"``: ``format`` when given, else from ``path`` (a
    ``.parquet`` name, an existing directory or a path ending with ``/`` is a Parquet
    dataset; otherwise the extension)."""
    if format is not None and format not in ("csv", "npz", "parquet"):
        raise DataError(f"unknown demonstrations format {format!r}; the formats are csv, npz, parquet")
    if format is not None:
        return format
    from .parquet_io import is_dataset_path

    if is_dataset_path(path):
        return "parquet"
    ext = os.path.splitext(str(path))[1].lower()
    if ext not in FORMATS:
        supported = ", ".join(f"{e} ({n})" for e, n in FORMATS.items())
        raise DataError(
            f"{path}: unsupported demonstrations format {ext or '(no extension)'!r}; supported: {supported}"
        )
    return ext[1:]


def holds_rewards(path) -> bool:
    """Whether the demonstrations at ``path`` have rewards (a ``reward`` column; an NPZ
    ``rewards`` array), read from the header or footers only; ``False`` for a path that does
    not exist. A file that cannot be read as its format is the :class:`DataError` loading it
    gives (:func:`load`), whatever is asked of it."""
    if not os.path.exists(path):
        return False
    fmt = format_of(path)
    if fmt == "parquet":
        from .parquet_dataset import ParquetDataset

        return "reward" in ParquetDataset.open(path).columns
    if fmt == "csv":
        try:
            with open(path, encoding="utf-8-sig", errors="replace") as f:  # the first non-blank line
                header = next((line for line in f if line.strip()), "")
        except OSError as e:
            raise _read_error(str(path), e) from None
        return "reward" in (c.strip().lower() for c in header.split(","))
    with open_npz(path) as z:
        return "rewards" in z.files


def load(path, mdp, *, labels: str = "check") -> Demonstrations:
    """Load demonstrations by extension (``.csv``, ``.npz``; a directory or ``.parquet`` is a
    Parquet dataset) and validate them against ``mdp``. ``labels``: ``"check"`` (recorded labels
    must agree with the MDP's) or ``"keep"`` (labels recorded by a detector that errs, kept as
    ``Demonstrations.labels``: docs/design/15-label-noise.md)."""
    if not os.path.exists(path):
        raise DataError(f"{path}: no such file or directory")
    fmt = format_of(path)
    if fmt == "parquet":
        from .parquet_dataset import ParquetDataset

        if labels not in ("check", "keep"):
            raise DataError(f"labels must be 'check' or 'keep', got {labels!r}")
        return ParquetDataset.open(path, mdp, labels=labels).load(mdp)
    if fmt == "csv":
        if mdp is None:
            raise DataError(f"{path}: reading a CSV file needs the MDP (its state, action and label names)")
        return load_csv(path, mdp, labels=labels)
    return load_npz(path, mdp, labels=labels)


def save(
    demos: Demonstrations,
    path,
    mdp=None,
    overwrite: bool = False,
    *,
    format: str | None = None,
    partition_size: int | None = None,
) -> None:
    """Save demonstrations by ``format`` (``"csv"``, ``"npz"``, ``"parquet"``) or by extension
    (``.csv`` needs ``mdp``; ``.npz`` validates against it when given; a ``.parquet`` name, an
    existing directory or a path ending with ``/`` is a Parquet dataset directory, which needs
    ``mdp`` and takes ``partition_size`` trajectories per file)."""
    fmt = format_of(path, format)
    if partition_size is not None and fmt != "parquet":
        raise DataError(f"{path}: partition_size applies to Parquet datasets only")
    if fmt == "parquet":
        from .parquet_io import PARTITION_SIZE, save_parquet

        save_parquet(demos, path, mdp, overwrite=overwrite, partition_size=partition_size or PARTITION_SIZE)
    elif fmt == "csv":
        if mdp is None:
            raise DataError(f"{path}: writing a CSV file needs the MDP (its state, action and label names)")
        save_csv(demos, path, mdp, overwrite=overwrite)
    else:
        _check_writable(path, overwrite)
        if mdp is not None:
            validate(demos, mdp, source=str(path))
        save_npz(demos, path, overwrite=overwrite)


__all__ = [
    "PAD",
    "Demonstrations",
    "validate",
    "load",
    "save",
    "load_csv",
    "save_csv",
    "load_npz",
    "save_npz",
    "FORMATS",
    "CSV_COLUMNS",
    "format_of",
    "holds_rewards",
]
