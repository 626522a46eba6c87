"""Learning the labeling function with the machine, from state histories (docs/design.md,
section 13).

* :mod:`rmtk.labels.histories`: the state view of an MDP, where every state is its own
  letter, and :class:`~rmtk.labels.histories.StateHistoryPTP`;
* :mod:`rmtk.labels.encoding`: the clause families of a (labeling, machine) pair;
* :mod:`rmtk.labels.label_free`: the label-free check, which decides a number of nodes for
  every labeling at once;
* :mod:`rmtk.labels.search`: the search for the fewest nodes, then the fewest propositions;
* :mod:`rmtk.labels.learner`: :class:`~rmtk.labels.learner.LabelingEncoder` and
  :class:`~rmtk.labels.learner.LabelLearnResult`;
* :mod:`rmtk.labels.report`: the learned pairs as `.rm` text and pictures.
"""

from .histories import StateHistoryPTP, state_task
from .learner import LabelingEncoder, LabelLearnResult, labels_from_active

__all__ = ["StateHistoryPTP", "state_task", "LabelingEncoder", "LabelLearnResult", "labels_from_active"]
