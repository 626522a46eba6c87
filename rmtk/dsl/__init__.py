"""The `.rm` language: read and write labeled MDPs, reward machines and tasks.

Mirrors :mod:`json`: :func:`loads`/:func:`load` read text/a file into an :class:`RmFile`,
:func:`dumps`/:func:`dump` write canonical text. The grammar is ``grammars/rmtk.lark``.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import RmtkError
from .document import RmFile
from .printer import dumps


def loads(text: str, *, file: str = "<string>") -> RmFile:
    """Parse `.rm` text; errors name ``file``, the line and the column."""
    if not isinstance(text, str):
        hint = "; decode bytes first (text.decode('utf-8'))" if isinstance(text, (bytes, bytearray)) else ""
        raise RmtkError(
            f"{file}: loads expects the text of an .rm file (a str), not {type(text).__name__}{hint}; "
            "dsl.load(path) reads a file"
        )
    from .parser import parse_text  # imports Lark only when something is parsed

    return parse_text(text, file)


def load(path: str | os.PathLike) -> RmFile:
    """Parse a `.rm` file (its answer is cached per user: :func:`rmtk.dsl.cache.parsed`)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RmtkError(f"{p}: no such file") from None
    except IsADirectoryError:
        raise RmtkError(f"{p}: is a directory, not an .rm file") from None
    except UnicodeDecodeError as err:
        raise RmtkError(f"{p}: not UTF-8 text ({err.reason} at byte {err.start})") from None
    from .cache import parsed

    return parsed(text, str(path), lambda text, file: loads(text, file=file))


def load_model(name: str) -> RmFile:
    """A model shipped with rmtk, by file name (``"patrol"`` or ``"patrol.rm"``): from the
    installed package data ``rmtk.models``, or the source tree's ``models/``."""
    from importlib import resources

    file = name if name.endswith(".rm") else f"{name}.rm"
    local = Path(__file__).resolve().parents[2] / "models" / file
    if local.is_file():
        return load(local)
    try:
        ref = resources.files("rmtk.models").joinpath(file)
        if ref.is_file():
            return loads(ref.read_text(encoding="utf-8"), file=file)
    except ModuleNotFoundError:
        pass
    raise RmtkError(f"no shipped model {name!r}")


def dump(obj, path: str | os.PathLike, *, overwrite: bool = False) -> None:
    """Write ``obj`` as `.rm` text to ``path``; an existing file is kept unless ``overwrite``."""
    from .. import output

    text = dumps(obj)
    with output.replacing(path, overwrite=overwrite, text=True) as f:  # whole or not at all
        f.write(text)


__all__ = ["RmFile", "load", "loads", "load_model", "dump", "dumps"]
