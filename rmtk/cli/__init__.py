"""The ``rmtk`` command (:mod:`rmtk.cli.main`), a thin layer over the Python API; flags become
the API's objects in :mod:`rmtk.cli.args`."""

from .main import main

__all__ = ["main"]
