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
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from pathlib import Path

import lark
from lark import Lark

#: Parser files kept in the cache folder (several Python environments may share it).
KEEP = 8


def cache_dir() -> Path | None:
    """``$XDG_CACHE_HOME/rmtk`` (default ``~/.cache/rmtk``); None without an absolute home."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base, "rmtk") if os.path.isabs(base) else None


def cache_file(grammar: str, options: dict) -> Path | None:
    """The cache file of ``grammar`` built with ``options`` (None: do not cache)."""
    folder = cache_dir()
    if folder is None:
        return None
    key = "\0".join([grammar, repr(sorted(options.items())), lark.__version__, sys.version])
    return folder / f"parser-{hashlib.sha256(key.encode('utf-8')).hexdigest()[:24]}.pickle"


def build(grammar: str, options: dict) -> Lark:
    """Build the parser from the grammar text (the slow path)."""
    return Lark(grammar, **options)


def load_or_build(grammar: str, options: dict) -> Lark:
    """The parser of ``grammar``: the cached one when valid, else built and then saved."""
    path = cache_file(grammar, options)
    parser = _load(path) if path is not None else None
    if parser is None:
        parser = build(grammar, options)
        if path is not None:
            _save(parser, path)
    return parser


def _trusted(st: os.stat_result) -> bool:
    """Owned by this user and writable by nobody else: loading a pickle can run code."""
    if not hasattr(os, "getuid"):  # Windows: the per-user profile folder protects it
        return True
    return st.st_uid == os.getuid() and not st.st_mode & 0o022


def _load(path: Path) -> Lark | None:
    try:
        with open(path, "rb") as f:
            return Lark.load(f) if _trusted(os.fstat(f.fileno())) else None
    except Exception:  # missing, unreadable, corrupt, or written by an incompatible Lark
        return None


def _save(parser: Lark, path: Path) -> None:
    tmp = None
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("wb", dir=path.parent, prefix=path.stem, suffix=".tmp", delete=False) as f:
            tmp = f.name
            parser.save(f)
        os.replace(tmp, path)
        tmp = None
        _prune(path.parent)
    except Exception:  # unwritable or full: keep going without a cache
        pass
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _prune(folder: Path) -> None:
    """Remove all but the ``KEEP`` most recently written parser files of this user."""
    files = []
    for f in folder.glob("parser-*.pickle"):
        try:
            st = f.stat()
        except OSError:
            continue
        if _trusted(st):
            files.append((st.st_mtime, f))
    for _, f in sorted(files, reverse=True)[KEEP:]:
        try:
            f.unlink()
        except OSError:
            pass
