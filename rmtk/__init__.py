"""rmtk: learn reward machines from what an agent does (prefix tree policies, SAT/MaxSAT, MaxEnt IRL)."""
from .errors import DataError, DslError, DslMeaningError, DslSyntaxError, ModelError, RmtkError
from .machine import RewardMachine, isomorphic
from .mdp import GeneratorCall, LabeledMDP
from .task import Task
from .learner import Learner, LearnResult

__version__ = "0.1.0"

__all__ = [
    "LabeledMDP",
    "RewardMachine",
    "Task",
    "Learner",
    "LearnResult",
    "GeneratorCall",
    "isomorphic",
    "RmtkError",
    "ModelError",
    "DslError",
    "DslSyntaxError",
    "DslMeaningError",
    "DataError",
]
