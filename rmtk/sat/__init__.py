"""The SAT core (paper section 3.1; docs/design/03-sat-encoding.md and docs/design/09-beyond-the-paper.md).

* :mod:`rmtk.sat.encoding`: the variable pool, one generator of clauses per constraint
  family, and decoding a model into a machine;
* :mod:`rmtk.sat.search`: the smallest size, every solution up to renaming, weighted MaxSAT;
* :mod:`rmtk.sat.lazy`: negatives added only when a candidate machine violates them, checked
  by an oracle.

The strategies a :class:`~rmtk.learner.pipeline.Learner` composes from these are in
:mod:`rmtk.sat.encoders`.
"""
