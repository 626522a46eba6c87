"""rmtk: learn reward machines from what an agent does (prefix tree policies, SAT/MaxSAT, MaxEnt IRL).

A :class:`Learner` composes four strategies: a :class:`PTP` (:class:`ExactPTP`,
:class:`EmpiricalPTP`), a :class:`NegativeExampleMiner` (:class:`ExactMiner`,
:class:`ConfidenceMiner`), a :class:`SatEncoder` (:class:`SatEncoder`, :class:`MaxSatEncoder`)
and a :class:`MaxEntIRL`; see docs/design/05-strategies.md. An :class:`ActiveLearner` asks an expert
(:class:`TaskExpert`, :class:`SimulatedExpert`) the questions a strategy picks
(:class:`SplitMostPairs` on a model, :class:`AtRecordedTriples` without one), checked by
:class:`ProductCheck` or :class:`ExpertWalks`, within a :class:`Budget` (docs/design/12-active-learning.md).
A :class:`LabelLearner` learns the labeling function with the machine, from state histories
(docs/design/13-learning-labels.md).
"""

from . import _deprecated
from ._lazy import lazy_exports
from .errors import DataError, DslError, DslMeaningError, DslSyntaxError, ModelError, RmtkError
from .machine.model import RewardMachine, isomorphic
from .mdp.model import GeneratorCall, LabeledMDP
from .progress import Progress, StderrProgress
from .task import Task

#: Names imported from their modules on first use, so that ``import rmtk`` stays cheap.
_LAZY = {
    "PTP": "ptp.tree",
    "ExactPTP": "ptp.exact",
    "SoftOptimal": "ptp.exact",
    "DistinctPerNode": "ptp.exact",
    "NodePolicyTable": "ptp.exact",
    "EmpiricalPTP": "ptp.empirical",
    "NegativeExampleMiner": "negatives.miners",
    "ExactMiner": "negatives.miners",
    "ConfidenceMiner": "negatives.miners",
    "SatEncoder": "sat.encoders",
    "MaxSatEncoder": "sat.encoders",
    "MaxEntIRL": "rewards.maxent",
    "Learner": "learner.pipeline",
    "LearnResult": "learner.result",
    "LabelLearner": "labels.learner",
    "ActiveLearner": "active.loop",
    "Budget": "active.asking",
    "TaskExpert": "active.experts",
    "SimulatedExpert": "active.experts",
    "SplitMostPairs": "active.questions",
    "AtRecordedTriples": "active.recorded",
    "ProductCheck": "active.checks",
    "ExpertWalks": "active.checks",
}

__getattr__, __dir__ = lazy_exports(__name__, _LAZY)


__version__ = "0.2.0"

_deprecated.install()  # the previous version's module paths, with a warning (rmtk/_deprecated.py)

__all__ = [
    "LabeledMDP",
    "RewardMachine",
    "Task",
    "Learner",
    "LearnResult",
    "LabelLearner",
    "PTP",
    "ExactPTP",
    "EmpiricalPTP",
    "SoftOptimal",
    "DistinctPerNode",
    "NodePolicyTable",
    "NegativeExampleMiner",
    "ExactMiner",
    "ConfidenceMiner",
    "SatEncoder",
    "MaxSatEncoder",
    "MaxEntIRL",
    "ActiveLearner",
    "Budget",
    "TaskExpert",
    "SimulatedExpert",
    "SplitMostPairs",
    "AtRecordedTriples",
    "ProductCheck",
    "ExpertWalks",
    "Progress",
    "StderrProgress",
    "GeneratorCall",
    "isomorphic",
    "RmtkError",
    "ModelError",
    "DslError",
    "DslSyntaxError",
    "DslMeaningError",
    "DataError",
]
