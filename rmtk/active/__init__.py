"""Asking the expert: active learning (docs/design.md, section 12).

* :mod:`rmtk.active.experts`: the :class:`~rmtk.active.experts.Expert` protocol and the
  experts that answer it (:class:`~rmtk.active.experts.TaskExpert`,
  :class:`~rmtk.active.experts.SimulatedExpert`, :class:`~rmtk.active.experts.RecordedExpert`);
  Gymnasium experts are in :mod:`rmtk.gym.experts`.
* :mod:`rmtk.active.survivors`: what is known of the expert
  (:class:`~rmtk.active.survivors.Knowledge`) and the machines that survive it
  (:class:`~rmtk.active.survivors.Survivors`).
* :mod:`rmtk.active.questions`: which questions to ask
  (:class:`~rmtk.active.questions.QueryStrategy`, :class:`~rmtk.active.questions.SplitMostPairs`)
  and the equivalence checks.
* :mod:`rmtk.active.loop`: the :class:`~rmtk.active.loop.ActiveLearner` loop and its
  :class:`~rmtk.active.loop.Budget`.
* :mod:`rmtk.active.recorded`: asking at recorded triples, with no model
  (:class:`~rmtk.active.recorded.RecordedActiveLearner`).
"""

from .experts import Expert, Observations, QueryError, RecordedExpert, SimulatedExpert, TaskExpert
from .loop import ActiveLearner, ActiveResult, Budget, Round
from .questions import EquivalenceCheck, ExpertWalks, ProductCheck, Query, QueryStrategy, SplitMostPairs
from .recorded import MostEvidence, RecordedActiveLearner, RecordedActiveResult, TripleStrategy
from .survivors import Knowledge, Survivors

__all__ = [
    "ActiveLearner",
    "ActiveResult",
    "Budget",
    "Round",
    "Expert",
    "Observations",
    "QueryError",
    "TaskExpert",
    "SimulatedExpert",
    "RecordedExpert",
    "Knowledge",
    "Survivors",
    "Query",
    "QueryStrategy",
    "SplitMostPairs",
    "EquivalenceCheck",
    "ExpertWalks",
    "ProductCheck",
    "RecordedActiveLearner",
    "RecordedActiveResult",
    "TripleStrategy",
    "MostEvidence",
]
