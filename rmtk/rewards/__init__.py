"""Rewards of learned machines (paper section 3.2, appendix D; docs/design.md, section 6).

* :mod:`rmtk.rewards.recovery`: the linear soft Bellman fit (Algorithm 3), identification up
  to shaping, the sparsest representative;
* :mod:`rmtk.rewards.maxent`: the :class:`~rmtk.rewards.maxent.MaxEntIRL` strategy of a
  :class:`~rmtk.learner.Learner`;
* :mod:`rmtk.rewards.margin`: :class:`~rmtk.rewards.margin.MarginIRL`, a margin LP for
  near-deterministic experts;
* :mod:`rmtk.rewards.l1`: the small least-absolute-deviations problems of the sparsest fit;
* :mod:`rmtk.rewards.baselines`: the paper's IRL baselines (D-IRL, F-IRL).
"""

from .margin import MarginIRL
from .maxent import MaxEntIRL

__all__ = ["MaxEntIRL", "MarginIRL"]
