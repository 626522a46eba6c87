"""Output files, written whole or not at all.

Every file rmtk writes (demonstrations, Parquet partitions, DOT, pictures, `.rm` text,
experiment figures) goes through :func:`replacing`: the content is written to a hidden
temporary file in the target's directory (``.NAME.XXXXXXXX.tmp``) and renamed over the target
only once it is complete and flushed to disk. An interrupted or failed write (Ctrl-C, a full
disk) removes the temporary file and leaves the target as it was: never a truncated file
under the final name. :func:`check` makes the checks that can be made before the work starts
(the directory exists and takes new files, the target is not a directory, an existing file is
replaced only when asked), so that a long run does not fail at its last step.

A target that exists and is not a regular file (a device such as ``/dev/null`` or
``/dev/full``, a named pipe) cannot be renamed over: it is written in place, and its write
errors are reported like any other. A symbolic link to a file is kept: the file it points to
is replaced.

For tests only: with the environment variable ``RMTK_TEST_PAUSE_WRITE`` set to a number of
seconds, the first write into a temporary file is followed by the line ``rmtk-test: paused
mid-write`` on stderr and a pause of that length, so that a test can interrupt a write midway.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from .errors import RmtkError

#: The environment variable of the test hook (see the module's docstring).
PAUSE_VARIABLE = "RMTK_TEST_PAUSE_WRITE"


def _fail(error, path, reason: str):
    return error(f"{path}: cannot write: {reason}")


def _exists(error, path, when: str = ""):
    return error(f"{path}: already exists{when}; pass --force (command line) or overwrite=True to replace it")


def _directory_of(path: Path, error) -> Path:
    """The directory ``path`` goes in, checked to exist and to be a directory."""
    parent = path.parent
    if parent.is_dir():
        return parent
    probe = parent
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        raise _fail(error, path, f"{probe} is a file, not a directory")
    raise _fail(error, path, f"no such directory {parent}")


def check_directory(path, *, error=RmtkError) -> Path:
    """The existing directory ``path`` would be created in, after checking that a new file can
    be made there (a probe file is created and removed)."""
    p = Path(path)
    parent = _directory_of(p, error)
    probe = parent / f".{p.name}.{os.urandom(4).hex()}.probe"
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError as e:
        raise _fail(error, path, f"cannot create files in {parent} ({e.strerror or e})") from None
    os.unlink(probe)
    return parent


def check(path, *, overwrite: bool = False, error=RmtkError, probe: bool = True) -> Path:
    """Check, before the work, that ``path`` can be written: its directory exists and takes new
    files, it is not a directory, and it does not exist unless ``overwrite``. Returns ``path``
    as a :class:`~pathlib.Path`; raises ``error`` (a :class:`~rmtk.errors.RmtkError` class).
    ``probe=False`` leaves out the test file that shows the directory takes new files (a
    creation and a removal), for a caller that has probed it already or creates a file there
    at once: thousands of files in one directory each probed cost seconds."""
    p = Path(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        st = None
    except NotADirectoryError:
        _directory_of(p, error)  # names the file that stands where a directory should be
        raise _fail(error, p, "a part of the path is not a directory") from None
    except OSError as e:
        raise _fail(error, p, e.strerror or str(e)) from None
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            raise error(f"{p}: is a directory; give a file name")
        if not overwrite:
            raise _exists(error, p)
        if not stat.S_ISREG(st.st_mode):  # a device or a pipe: written in place
            if not os.access(p, os.W_OK):
                raise _fail(error, p, "permission denied")
            return p
        if probe:
            check_directory(Path(os.path.realpath(p)), error=error)
        return p
    if probe:
        check_directory(p, error=error)
    else:
        _directory_of(p, error)
    return p


class _Paused:
    """A file whose first write pauses (the test hook); everything else is the file's."""

    def __init__(self, f, seconds: float):
        self._f, self._seconds, self._paused = f, seconds, False

    def write(self, data):
        n = self._f.write(data)
        if not self._paused:
            self._paused = True
            self._f.flush()
            sys.stderr.write("rmtk-test: paused mid-write\n")  # one write: a signal cannot split the line
            sys.stderr.flush()
            time.sleep(self._seconds)
        return n

    def __getattr__(self, name):
        return getattr(self._f, name)


def _pause_seconds() -> float | None:
    value = os.environ.get(PAUSE_VARIABLE)
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        return None


def _install(tmp: str, target: str, overwrite: bool, path, error) -> None:
    """Rename ``tmp`` to ``target``; without ``overwrite``, never over a file that appeared."""
    if overwrite:
        os.replace(tmp, target)
        return
    try:
        os.link(tmp, target)  # fails if the target exists, unlike a rename
    except FileExistsError:
        raise _exists(error, path, " (it appeared while rmtk was writing)") from None
    except OSError:  # a filesystem without hard links
        if os.path.lexists(target):
            raise _exists(error, path) from None
        os.replace(tmp, target)
        return
    os.unlink(tmp)


@contextlib.contextmanager
def replacing(
    path,
    *,
    overwrite: bool = False,
    text: bool = False,
    encoding: str = "utf-8",
    newline: str | None = None,
    error=RmtkError,
    durable: bool = True,
) -> Iterator:
    """A file object to write ``path``'s new content into: binary, or text with ``text``
    (``encoding``, ``newline`` as for ``open()``). The content appears at ``path`` when the
    ``with`` block ends normally; an exception (a write error, Ctrl-C) removes it and leaves
    ``path`` as it was. Write errors become ``error`` naming ``path``. ``durable``: the content
    is on disk before it appears (``fsync``, a few ms a file); ``False`` keeps only the
    whole-or-nothing of the rename, which a stopped process cannot break but a power cut can
    (for the thousands of small files of one listing, written after a stop)."""
    p = check(path, overwrite=overwrite, error=error, probe=False)  # the temporary file below is the probe
    mode = "w" if text else "wb"
    kw = {"encoding": encoding, "newline": newline} if text else {}
    if p.exists() and not p.is_file():  # a device or a pipe (checked): no temporary file can replace it
        try:
            f = open(p, mode, **kw)
        except OSError as e:
            raise _fail(error, p, e.strerror or str(e)) from None
        try:
            with f:
                yield f
        except OSError as e:
            raise _fail(error, p, e.strerror or str(e)) from None
        return
    target = os.path.realpath(p)
    directory, name = os.path.split(target)
    tmp = os.path.join(directory, f".{name}.{os.urandom(4).hex()}.tmp")
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
        fd = os.open(tmp, flags, 0o666)  # the umask applies, as for open()
    except OSError as e:
        raise _fail(error, p, f"cannot create files in {directory} ({e.strerror or e})") from None
    try:
        try:
            if overwrite and os.path.isfile(target):
                os.chmod(tmp, stat.S_IMODE(os.stat(target).st_mode))  # a replaced file keeps its permissions
            f = os.fdopen(fd, mode, **kw)
        except BaseException:
            os.close(fd)
            raise
        with f:
            pause = _pause_seconds()
            yield f if pause is None else _Paused(f, pause)
            f.flush()
            if durable:
                os.fsync(f.fileno())
        _install(tmp, target, overwrite, p, error)
        tmp = ""  # installed: nothing left to remove
    except OSError as e:
        raise _fail(error, p, e.strerror or str(e)) from None
    finally:
        if tmp:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
