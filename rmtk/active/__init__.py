"""Asking the expert: active learning (docs/design.md, section 12).

One loop, :class:`ActiveLearner`, asks an :class:`Expert` through a :class:`QuestionStrategy`
and an :class:`EquivalenceCheck`, within a :class:`Budget`:

* :mod:`rmtk.active.loop`: the loop (:class:`ActiveLearner`, :class:`ActiveResult`, :class:`Round`);
* :mod:`rmtk.active.experts`: the :class:`Expert` protocol, what an expert declares
  (:class:`ExpertCapabilities`) and rmtk's experts (:class:`TaskExpert`, :class:`SimulatedExpert`,
  :class:`RecordedExpert`); Gymnasium experts are in :mod:`rmtk.gym` (``GymExpert``,
  ``ReplayExpert``, ``ReacherExpert``);
* :mod:`rmtk.active.asking`: the :class:`Budget` and the :class:`Asker` every question goes through;
* :mod:`rmtk.active.questions`: question strategies (:class:`QuestionStrategy`,
  :class:`SplitMostPairs` on a model's synchronised products) and what a round finds
  (:class:`Hypotheses`);
* :mod:`rmtk.active.recorded`: asking at recorded histories, with no model
  (:class:`AtRecordedTriples`, :class:`MostEvidence`);
* :mod:`rmtk.active.checks`: equivalence checks (:class:`ProductCheck`, exact;
  :class:`ExpertWalks`, sampled);
* :mod:`rmtk.active.survivors`: what is known of the expert (:class:`Knowledge`) and the machines
  that survive it (:class:`Survivors`).
"""

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
from .loop import ActiveLearner
from .questions import Hypotheses, Inquiry, Query, QuestionStrategy, Setting, SplitMostPairs, StrategyCapabilities
from .recorded import AtRecordedTriples, MostEvidence, Separation, Triples, TripleStrategy
from .result import ActiveResult, Round
from .survivors import Knowledge, Survivors

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
