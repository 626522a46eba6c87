"""Negative examples (paper eq. 6, Lemma 1).

Modules:

* :mod:`rmtk.negatives.miners`: the NegativeExampleMiner strategies;
* :mod:`rmtk.negatives.statistics`: comparing two sampled action distributions;
* :mod:`rmtk.negatives.anytime`: anytime-valid comparisons that adapt to the counts.

The names of :mod:`rmtk.negatives.miners` are read here too (``rmtk.negatives.X`` as before this folder held
several modules), imported on first use.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from .miners import (
        POLICY_TOL as POLICY_TOL,
    )
    from .miners import (
        ConfidenceMiner as ConfidenceMiner,
    )
    from .miners import (
        ExactMiner as ExactMiner,
    )
    from .miners import (
        NegativeExampleMiner as NegativeExampleMiner,
    )
    from .miners import (
        NegativePairs as NegativePairs,
    )
    from .miners import (
        PolicyClasses as PolicyClasses,
    )
    from .miners import (
        log_weissman_constant as log_weissman_constant,
    )
    from .miners import (
        policy_classes as policy_classes,
    )

__getattr__, __dir__ = lazy_exports(__name__, {}, fallback=".miners")
