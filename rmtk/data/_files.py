"""Opening demonstration files for reading and writing, with errors that name the file."""
from __future__ import annotations

import os

from ..errors import DataError


def _check_writable(path, overwrite: bool) -> None:
    if not overwrite and os.path.exists(path):
        raise DataError(f"{path}: the file exists; pass --force (command line) or overwrite=True to replace it")


def _open_write(path, overwrite: bool, **kw):
    """Open for writing; exclusive creation unless ``overwrite``."""
    mode = ("w" if overwrite else "x") + ("b" if "newline" not in kw else "")
    try:
        return open(path, mode, **kw)
    except FileExistsError:
        raise DataError(f"{path}: the file exists; pass --force (command line) or overwrite=True to replace it") from None
    except OSError as e:
        raise DataError(f"{path}: cannot write: {e.strerror or e}") from None


def _read_error(path, e: OSError) -> DataError:
    if isinstance(e, FileNotFoundError):
        return DataError(f"{path}: no such file")
    if isinstance(e, IsADirectoryError):
        return DataError(f"{path}: is a directory, not a file")
    return DataError(f"{path}: cannot read: {e.strerror or e}")
