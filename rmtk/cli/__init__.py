"""The ``rmtk`` command (:mod:`rmtk.cli.main`), a thin layer over the Python API; flags become
the API's objects in :mod:`rmtk.cli.args`."""

from .. import _deprecated
from .main import main

__all__ = ["main"]


def __getattr__(name: str):
    """Names of the previous version that moved (rmtk/_deprecated.py), with a warning."""
    return _deprecated.moved(__name__, name)
