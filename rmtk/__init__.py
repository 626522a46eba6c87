"""rmtk: learn reward machines from what an agent does (prefix tree policies, SAT/MaxSAT, MaxEnt IRL).

A :class:`Learner` composes four strategies: a :class:`PTP` (:class:`ExactPTP`,
:class:`EmpiricalPTP`), a :class:`NegativeExampleMiner` (:class:`ExactMiner`,
:class:`ConfidenceMiner`), a :class:`SatEncoder` (:class:`SatEncoder`, :class:`MaxSatEncoder`)
and a :class:`MaxEntIRL`; see docs/design.md.
"""
from .errors import DataError, DslError, DslMeaningError, DslSyntaxError, ModelError, RmtkError
from .machine import RewardMachine, isomorphic
from .mdp import GeneratorCall, LabeledMDP
from .task import Task
from .ptp import PTP
from .exact import DistinctPerNode, ExactPTP, NodePolicyTable, SoftOptimal
from .empirical import EmpiricalPTP
from .negatives import ConfidenceMiner, ExactMiner, NegativeExampleMiner
from .encoders import MaxSatEncoder, SatEncoder
from .maxent import MaxEntIRL
from .progress import Progress, StderrProgress
from .learner import Learner, LearnResult

__version__ = "0.1.0"

__all__ = [
    "LabeledMDP",
    "RewardMachine",
    "Task",
    "Learner",
    "LearnResult",
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
