"""Learning the labeling function with the machine, from state histories (docs/design/13-learning-labels.md).

* :mod:`rmtk.labels.learner`: :class:`~rmtk.labels.learner.LabelLearner`, beside
  :class:`~rmtk.learner.pipeline.Learner`;
* :mod:`rmtk.labels.result`: what it finds, :class:`~rmtk.labels.result.LabelLearnResult`;
* :mod:`rmtk.labels.histories`: the state view of an MDP, where every state is its own
  letter, and :class:`~rmtk.labels.histories.StateHistoryPTP`;
* :mod:`rmtk.labels.knowledge`: what a user says about the labels, checked;
* :mod:`rmtk.labels.pairs`: (labeling, machine) pairs and their canonical form;
* :mod:`rmtk.labels.encoding`: the formula of the pairs at n nodes, one incremental solver;
* :mod:`rmtk.labels.label_free`: the label-free check, which decides a number of nodes for
  every labeling at once;
* :mod:`rmtk.labels.search`: the pair search (fewest nodes, then fewest propositions);
* :mod:`rmtk.labels.freedom`: the states whose label alone could change;
* :mod:`rmtk.labels.verdicts`: the pairs against the truth;
* :mod:`rmtk.labels.report`: the learned pairs as `.rm` text and pictures.
"""

from .histories import StateHistoryPTP, state_task
from .learner import LabelLearner
from .result import LabelLearnResult
from .search import PairSearch, SmallestPairs

__all__ = ["LabelLearner", "LabelLearnResult", "SmallestPairs", "PairSearch", "StateHistoryPTP", "state_task"]
