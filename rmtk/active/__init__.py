"""Asking the expert: active learning (docs/design/12-active-learning.md).

One loop asks an expert through a question strategy and an equivalence check, within a budget:

* :mod:`rmtk.active.loop`: the loop (:class:`~rmtk.active.loop.ActiveLearner`) and
  :mod:`rmtk.active.result` what it gives back (:class:`~rmtk.active.result.ActiveResult`,
  :class:`~rmtk.active.result.Round`);
* :mod:`rmtk.active.experts`: the :class:`~rmtk.active.experts.Expert` protocol, what an expert
  declares (:class:`~rmtk.active.experts.ExpertCapabilities`) and rmtk's experts
  (:class:`~rmtk.active.experts.TaskExpert`, :class:`~rmtk.active.experts.SimulatedExpert`,
  :class:`~rmtk.active.experts.RecordedExpert`); Gymnasium experts are in :mod:`rmtk.gym`
  (``GymExpert``, ``ReplayExpert``, ``ReacherExpert``);
* :mod:`rmtk.active.asking`: the :class:`~rmtk.active.asking.Budget` and the
  :class:`~rmtk.active.asking.Asker` every question goes through;
* :mod:`rmtk.active.questions`: question strategies
  (:class:`~rmtk.active.questions.QuestionStrategy`; :class:`~rmtk.active.questions.SplitMostPairs`
  on a model's synchronised products) and what a round finds
  (:class:`~rmtk.active.questions.Hypotheses`);
* :mod:`rmtk.active.recorded`: asking at recorded histories, with no model
  (:class:`~rmtk.active.recorded.AtRecordedTriples`, :class:`~rmtk.active.recorded.MostEvidence`);
* :mod:`rmtk.active.checks`: equivalence checks (:class:`~rmtk.active.checks.ProductCheck`,
  exact; :class:`~rmtk.active.checks.ExpertWalks`, sampled);
* :mod:`rmtk.active.survivors`: what is known of the expert
  (:class:`~rmtk.active.knowledge.Knowledge`) and the machines that survive it
  (:class:`~rmtk.active.survivors.Survivors`).
"""

from .. import _deprecated
from .asking import Asker, Budget
from .checks import CheckCapabilities, EquivalenceCheck, ExpertWalks, ProductCheck
from .experts import (
    Expert,
    ExpertCapabilities,
    Observations,
    QueryError,
    RecordedExpert,
    SimulatedExpert,
    TaskExpert,
)
from .knowledge import Knowledge
from .loop import ActiveLearner
from .questions import Hypotheses, Inquiry, Query, QuestionStrategy, Setting, SplitMostPairs, StrategyCapabilities
from .recorded import AtRecordedTriples, MostEvidence, Separation, Triples, TripleStrategy
from .result import ActiveResult, Round
from .survivors import Survivors

__all__ = [
    "ActiveLearner",
    "ActiveResult",
    "Round",
    "Budget",
    "Asker",
    "Expert",
    "ExpertCapabilities",
    "Observations",
    "QueryError",
    "TaskExpert",
    "SimulatedExpert",
    "RecordedExpert",
    "QuestionStrategy",
    "StrategyCapabilities",
    "Inquiry",
    "Setting",
    "Hypotheses",
    "Query",
    "SplitMostPairs",
    "AtRecordedTriples",
    "TripleStrategy",
    "MostEvidence",
    "Triples",
    "Separation",
    "EquivalenceCheck",
    "CheckCapabilities",
    "ProductCheck",
    "ExpertWalks",
    "Knowledge",
    "Survivors",
]


def __getattr__(name: str):
    """Names of the previous version that moved (rmtk/_deprecated.py), with a warning."""
    return _deprecated.moved(__name__, name)
