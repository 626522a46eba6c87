"""The LALR parser of a grammar, built once per user and then loaded from a cache file.

Building the parse tables of ``grammars/rmtk.lark`` costs some 30-50 ms in every process
(three times that under a profiler); loading them back costs a few ms. The file is
``$XDG_CACHE_HOME/rmtk/parser-KEY.pickle`` (``~/.cache/rmtk/`` when the variable is unset),
where KEY hashes the grammar text, the parser options and the Lark and Python versions: a
changed grammar, or another Lark or Python, gets its own file and never reads a stale one.

The file holds Lark's own ``Lark.save`` format, a pickle, so it is read only when this user
owns it and nobody else may write it, and it is written atomically (readers never see half
a file). Any failure (no home directory, a read-only or unwritable directory, a corrupt,
truncated or foreign file) falls back to building the parser: the cache never makes parsing
fail, it only makes it slower. Each new file written prunes the folder to the ``KEEP`` newest
parser files, so upgrades of rmtk, Lark or Python do not pile files up.

A parsed `.rm` file is cached too (:func:`parsed`, used by :func:`rmtk.dsl.load`): a hit
skips Lark altogether (its import, the parser and the first parse cost some 35 ms of the
``rmtk learn`` command's start-up, ``docs/benchmarks/25-start-up.md``). Its file
``file-KEY.pickle`` holds the file's name and text and a fingerprint of rmtk's source beside
the :class:`~rmtk.dsl.RmFile`; it is used only when all three equal those of the file read
now, so an edited file, another name or a changed rmtk never gets a stale answer, whatever
KEY (a CRC of them, which only names the file) collides with. ``KEEP_FILES`` are kept.
"""

from __future__ import annotations

import os
import pickle
import sys
import tempfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lark import Lark

#: Parser files kept in the cache folder (several Python environments may share it).
KEEP = 8
#: Parsed `.rm` files kept (the models a user learns from, the tests' files).
KEEP_FILES = 64


def cache_dir() -> Path | None:
    """``$XDG_CACHE_HOME/rmtk`` (default ``~/.cache/rmtk``); None without an absolute home."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base, "rmtk") if os.path.isabs(base) else None


def cache_file(grammar: str, options: dict) -> Path | None:
    """The cache file of ``grammar`` built with ``options`` (None: do not cache)."""
    folder = cache_dir()
    if folder is None:
        return None
    import hashlib  # its OpenSSL costs a few ms: only when the parser is loaded

    import lark

    key = "\0".join([grammar, repr(sorted(options.items())), lark.__version__, sys.version])
    return folder / f"parser-{hashlib.sha256(key.encode('utf-8')).hexdigest()[:24]}.pickle"


def build(grammar: str, options: dict) -> Lark:
    """Build the parser from the grammar text (the slow path)."""
    from lark import Lark

    return Lark(grammar, **options)


def load_or_build(grammar: str, options: dict) -> Lark:
    """The parser of ``grammar``: the cached one when valid, else built and then saved."""
    path = cache_file(grammar, options)
    parser = _load(path, _lark_load) if path is not None else None
    if parser is None:
        parser = build(grammar, options)
        if path is not None:
            _save(parser.save, path, KEEP)
    return parser


def _lark_load(f) -> Lark:
    from lark import Lark

    return Lark.load(f)


def source_fingerprint() -> tuple:
    """rmtk's version, Python's and numpy's, and the modification time and size of every
    module of the installed rmtk: any change to the code that builds a file changes it."""
    import numpy

    from .. import __version__

    files: list[tuple[str, int, int]] = []
    stack = [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]
    while stack:
        with os.scandir(stack.pop()) as entries:
            for e in entries:
                if e.is_dir() and e.name != "__pycache__":
                    stack.append(e.path)
                elif e.name.endswith(".py"):
                    st = e.stat()
                    files.append((e.path, st.st_mtime_ns, st.st_size))
    return (__version__, sys.version, numpy.__version__, tuple(sorted(files)))


def parsed(text: str, file: str, parse: Callable[[str, str], Any]) -> Any:
    """``parse(text, file)``, or its answer saved for the same file name, text and rmtk."""
    folder = cache_dir()
    if folder is None:
        return parse(text, file)
    key = (file, text, source_fingerprint())
    path = folder / f"file-{zlib.crc32(repr(key).encode('utf-8')):08x}.pickle"
    hit = _load(path, pickle.load)
    if isinstance(hit, tuple) and len(hit) == 2 and hit[0] == key:
        return hit[1]
    answer = parse(text, file)  # a file that does not parse raises here: nothing is saved
    _save(lambda f: pickle.dump((key, answer), f, protocol=pickle.HIGHEST_PROTOCOL), path, KEEP_FILES)
    return answer


def _trusted(st: os.stat_result) -> bool:
    """Owned by this user and writable by nobody else: loading a pickle can run code."""
    if not hasattr(os, "getuid"):  # Windows: the per-user profile folder protects it
        return True
    return st.st_uid == os.getuid() and not st.st_mode & 0o022


def _load(path: Path, read: Callable[[Any], Any]) -> Any:
    try:
        with open(path, "rb") as f:
            return read(f) if _trusted(os.fstat(f.fileno())) else None
    except Exception:  # missing, unreadable, corrupt, or written by an incompatible Lark or rmtk
        return None


def _save(write: Callable[[Any], None], path: Path, keep: int) -> None:
    tmp = None
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("wb", dir=path.parent, prefix=path.stem, suffix=".tmp", delete=False) as f:
            tmp = f.name
            write(f)
        os.replace(tmp, path)
        tmp = None
        _prune(path.parent, path.name.split("-")[0], keep)
    except Exception:  # unwritable or full: keep going without a cache
        pass
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _prune(folder: Path, kind: str, keep: int) -> None:
    """Remove all but the ``keep`` most recently written files of this kind of this user."""
    files = []
    for f in folder.glob(f"{kind}-*.pickle"):
        try:
            st = f.stat()
        except OSError:
            continue
        if _trusted(st):
            files.append((st.st_mtime, f))
    for _, f in sorted(files, reverse=True)[keep:]:
        try:
            f.unlink()
        except OSError:
            pass
