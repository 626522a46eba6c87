"""Names a package re-exports, imported from their modules on first use (PEP 562), so that
importing the package, or one of its modules, costs only what is used."""

from __future__ import annotations

import importlib
import sys


def lazy_exports(package: str, table: dict[str, str], fallback: str | None = None):
    """The ``__getattr__`` and ``__dir__`` of ``package`` for the names of ``table`` (name →
    module relative to the package): a name is imported on first use, then kept. With
    ``fallback`` (a module relative to the package), any other name is read from that module:
    a module that became a folder keeps every name it had (``rmtk.machine.RewardMachine``)."""

    def __getattr__(name: str):
        module = table.get(name, fallback.lstrip(".") if fallback and not name.startswith("__") else None)
        if module is not None:
            source = importlib.import_module(f".{module}", package)
            if hasattr(source, name):
                value = getattr(source, name)
                setattr(sys.modules[package], name, value)
                return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__():
        extra = dir(importlib.import_module(fallback, package)) if fallback else []
        return sorted(set(vars(sys.modules[package])) | set(table) | set(extra))

    return __getattr__, __dir__
