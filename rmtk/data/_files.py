"""Opening demonstration files for reading and writing, with errors that name the file.

Writing goes through :mod:`rmtk.output`: checked before the work, written to a temporary
file and renamed into place when complete."""

from __future__ import annotations

from .. import output
from ..errors import DataError


def _check_writable(path, overwrite: bool) -> None:
    output.check(path, overwrite=overwrite, error=DataError)


def _open_write(path, overwrite: bool, **kw):
    """A context manager: a file whose content appears at ``path`` only when complete."""
    text = "newline" in kw or "encoding" in kw
    return output.replacing(path, overwrite=overwrite, text=text, error=DataError, **kw)


def _read_error(path, e: OSError) -> DataError:
    if isinstance(e, FileNotFoundError):
        return DataError(f"{path}: no such file")
    if isinstance(e, IsADirectoryError):
        return DataError(f"{path}: is a directory, not a file")
    return DataError(f"{path}: cannot read: {e.strerror or e}")
