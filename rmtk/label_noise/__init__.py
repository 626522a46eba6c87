"""Labels from a detector that errs (docs/design/15-label-noise.md): the noise model, what the
recorded labels say about each state's letter, learning a machine under them, and using one.

* :class:`LabelNoise` (:mod:`rmtk.label_noise.model`): ``P(recorded | true letter)``, uniform,
  a detector's miss and false-alarm rates, or a confusion matrix; seeded corruption of labels.
* :class:`StateEvidence`, :class:`LabelBeliefs` (:mod:`rmtk.label_noise.evidence`): the recorded
  labels counted state by state on any engine, and each state's most likely letter.
* :func:`estimate` (:mod:`rmtk.label_noise.estimate`): the noise with intervals; the noise model
  chosen by BIC among :class:`UniformModel` and :class:`DetectorModel` (:mod:`rmtk.label_noise.models`).
* :class:`NoisyLabels` (:mod:`rmtk.label_noise.learner`): a :class:`~rmtk.learner.pipeline.Learner` fitted
  under label noise; the letters of doubtful states chosen by weighted MaxSAT
  (:mod:`rmtk.label_noise.encoding`, :mod:`rmtk.label_noise.search`); the corrections
  (:mod:`rmtk.label_noise.corrections`).
* Using a machine: the belief over its nodes (:mod:`rmtk.label_noise.filter`; in
  ``RewardMachineEnv(observation="belief")``), and for the online learner each state's letter
  believed from every detection there (:class:`~rmtk.label_noise.online.StateBeliefLabels`).
"""

from .corrections import Corrections, corrections
from .estimate import Estimate, NoiseMeasure, Rate, estimate, measure
from .evidence import LabelBeliefs, StateEvidence, count_evidence
from .learner import NoisyLabelResult, NoisyLabels
from .model import LabelNoise
from .models import DetectorModel, NoiseModel, UniformModel

__all__ = [
    "LabelNoise",
    "NoiseModel",
    "UniformModel",
    "DetectorModel",
    "StateEvidence",
    "LabelBeliefs",
    "count_evidence",
    "estimate",
    "measure",
    "Estimate",
    "NoiseMeasure",
    "Rate",
    "NoisyLabels",
    "NoisyLabelResult",
    "Corrections",
    "corrections",
]
