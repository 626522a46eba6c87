"""Labeled MDPs (paper section 2.1).

Modules:

* :mod:`rmtk.mdp.model`: the labeled MDP, :class:`~rmtk.mdp.model.LabeledMDP`;
* :mod:`rmtk.mdp.space`: what learning from counted behaviour needs of an environment without a transition model.

The names of :mod:`rmtk.mdp.model` are read here too (``rmtk.mdp.X`` as before this folder held
several modules), imported on first use.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from .model import (
        PROB_TOL as PROB_TOL,
    )
    from .model import (
        GeneratorCall as GeneratorCall,
    )
    from .model import (
        LabeledMDP as LabeledMDP,
    )

__getattr__, __dir__ = lazy_exports(__name__, {}, fallback=".model")
