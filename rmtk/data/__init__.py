"""Demonstrations and the files they are kept in (paper section 5).

:class:`Demonstrations` (:mod:`rmtk.data.demonstrations`) holds trajectories as padded integer
arrays; :func:`load` and :func:`save` pick the file format from the extension: CSV
(:mod:`rmtk.data.csv_io`), NPZ (:mod:`rmtk.data.npz_io`). Loading always validates the data
against the MDP: indices in range, labels matching, every step possible.
"""
from __future__ import annotations

import os

from ..errors import DataError
from ._files import _check_writable
from .csv_io import CSV_COLUMNS, load_csv, save_csv
from .demonstrations import PAD, Demonstrations, validate
from .npz_io import load_npz, save_npz

#: Supported file extensions → format name.
FORMATS = {".csv": "CSV", ".npz": "NPZ"}


def _format(path) -> str:
    ext = os.path.splitext(str(path))[1].lower()
    if ext not in FORMATS:
        supported = ", ".join(f"{e} ({n})" for e, n in FORMATS.items())
        raise DataError(f"{path}: unsupported demonstrations format {ext or '(no extension)'!r}; supported: {supported}")
    return ext


def load(path, mdp) -> Demonstrations:
    """Load demonstrations by extension (``.csv`` or ``.npz``) and validate them against ``mdp``."""
    ext = _format(path)
    if ext == ".csv":
        if mdp is None:
            raise DataError(f"{path}: reading a CSV file needs the MDP (its state, action and label names)")
        return load_csv(path, mdp)
    return load_npz(path, mdp)


def save(demos: Demonstrations, path, mdp=None, overwrite: bool = False) -> None:
    """Save demonstrations by extension (``.csv`` needs ``mdp``; ``.npz`` validates against it when given)."""
    ext = _format(path)
    if ext == ".csv":
        if mdp is None:
            raise DataError(f"{path}: writing a CSV file needs the MDP (its state, action and label names)")
        save_csv(demos, path, mdp, overwrite=overwrite)
    else:
        _check_writable(path, overwrite)
        if mdp is not None:
            validate(demos, mdp, source=str(path))
        save_npz(demos, path, overwrite=overwrite)


__all__ = ["PAD", "Demonstrations", "validate", "load", "save", "load_csv", "save_csv", "load_npz", "save_npz",
           "FORMATS", "CSV_COLUMNS"]
