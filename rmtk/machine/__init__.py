"""Reward machines (paper section 2.1).

Modules:

* :mod:`rmtk.machine.model`: the machine itself, :class:`~rmtk.machine.model.RewardMachine`;
* :mod:`rmtk.machine.equivalence`: exact comparisons of machines on a labeled MDP.

The names of :mod:`rmtk.machine.model` are read here too (``rmtk.machine.X`` as before this folder held
several modules), imported on first use.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from .model import (
        RewardMachine as RewardMachine,
    )
    from .model import (
        isomorphic as isomorphic,
    )

__getattr__, __dir__ = lazy_exports(__name__, {}, fallback=".model")
