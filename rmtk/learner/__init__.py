"""The learner: prefix tree policy → negative examples → SAT → machines → rewards.

Modules:

* :mod:`rmtk.learner.pipeline`: the :class:`~rmtk.learner.pipeline.Learner` that composes the strategies;
* :mod:`rmtk.learner.result`: what a fit found;
* :mod:`rmtk.learner.summary`: what a run leaves to say beside its machines;
* :mod:`rmtk.learner.report`: a result as text;
* :mod:`rmtk.learner.explain`: what would separate the surviving machines;
* :mod:`rmtk.learner.evaluation`: metrics of the paper's evaluations;
* :mod:`rmtk.learner.capabilities`: what a strategy can do beyond its protocol.

The names of :mod:`rmtk.learner.pipeline` are read here too (``rmtk.learner.X`` as before this folder held
several modules), imported on first use.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from .pipeline import (
        DEMOS_MAX_SOLUTIONS as DEMOS_MAX_SOLUTIONS,
    )
    from .pipeline import (
        Learner as Learner,
    )
    from .pipeline import (
        expert_class_table as expert_class_table,
    )
    from .pipeline import (
        machines_of as machines_of,
    )

__getattr__, __dir__ = lazy_exports(__name__, {}, fallback=".pipeline")
