"""Rewards of learned machines (paper section 3.2, appendix D; docs/design/06-rewards.md).

* :mod:`rmtk.rewards.recovery`: the linear soft Bellman fit (Algorithm 3), identification up
  to shaping, the representative of the shaping class (absorbing loops 0, fewest non-zero
  rewards, smallest L1);
* :mod:`rmtk.rewards.system`: solving that fit's system with its null space, small (dense)
  and large (the values eliminated);
* :mod:`rmtk.rewards.maxent`: the :class:`~rmtk.rewards.maxent.MaxEntIRL` strategy of a
  :class:`~rmtk.learner.pipeline.Learner`;
* :mod:`rmtk.rewards.margin`: :class:`~rmtk.rewards.margin.MarginIRL`, a margin LP for
  near-deterministic experts;
* :mod:`rmtk.rewards.l1`: the small problems of the representative (sparsest vertex, L1);
* :mod:`rmtk.rewards.baselines`: the paper's IRL baselines (D-IRL, F-IRL).
"""

from .._lazy import lazy_exports

#: Imported on first use: a learner reads :mod:`rmtk.rewards.maxent` alone, and the margin LP
#: brings the product search's modules with it.
_LAZY = {"MarginIRL": "margin", "MaxEntIRL": "maxent"}

__getattr__, __dir__ = lazy_exports(__name__, _LAZY)


__all__ = ["MaxEntIRL", "MarginIRL"]
