"""Names a package re-exports, imported from their modules on first use (PEP 562), so that
importing the package, or one of its modules, costs only what is used."""

from __future__ import annotations

import importlib
import sys


def lazy_exports(package: str, table: dict[str, str]):
    """The ``__getattr__`` and ``__dir__`` of ``package`` for the names of ``table`` (name →
    module relative to the package): a name is imported on first use, then kept."""

    def __getattr__(name: str):
        if name in table:
            value = getattr(importlib.import_module(f".{table[name]}", package), name)
            setattr(sys.modules[package], name, value)
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__():
        return sorted(set(vars(sys.modules[package])) | set(table))

    return __getattr__, __dir__
