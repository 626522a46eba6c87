"""Active learning from an expert whose recorded data carry labels from a detector that errs
(docs/design/15-label-noise.md).

The active loop (:class:`~rmtk.active.loop.ActiveLearner`) asks the expert at *histories*: a
word of labels and a state, which the expert realises in its world and acts after. Under label
noise two things differ, and :class:`NoisyActive` handles the one it soundly can:

* **The recorded data** (the expert's ``recorded`` demonstrations, or ``data``) carry the labels
  a detector recorded. They are read as :class:`~rmtk.label_noise.learner.NoisyLabels` reads them:
  the evidence counted state by state, the noise given or estimated
  (:func:`~rmtk.label_noise.estimate.estimate`), each state's letter believed. The loop then runs
  on the MDP *as the labels are believed*: its questions are words of the believed letters, its
  counts of the recorded data read them, and its answer is the machine over the true letters
  wherever the data decide them (states never visited keep the model's labels, as
  ``NoisyLabels`` keeps them).
* **A doubtful state** (its labels leave a rival letter within ``doubt``) is refused, naming the
  states: a question is a word the expert must realise in its world, and a word through a letter
  believed wrong is one the world may not have (the expert refuses it, or answers a history the
  learner did not mean). ``NoisyLabels`` chooses such letters with the machine, from the data
  alone; here the choice would have to come before the first question. Asking more at a doubtful
  state does not help either: an expert's answers are actions, not labels (rmtk's experts carry
  none), so no question can settle a letter. Record more visits there, or learn passively.

The expert's own answers are read as exact: :class:`~rmtk.active.experts.TaskExpert` and
:class:`~rmtk.active.experts.SimulatedExpert` realise the words asked in the labeled MDP, which is
the world the detector observed. An expert that reads its own labels through the same detector
(a Gymnasium expert with a noisy labeler) returns words the learner cannot correct (a compressed
word keeps no state per step); that is not supported, and a target known only through data (a
:class:`~rmtk.mdp.space.Space`) has no states' letters to believe and is refused.
"""

from __future__ import annotations

import os
import time
from typing import Any

import attrs

from ..active.experts import ExpertCapabilities
from ..active.loop import ActiveLearner
from ..active.result import ActiveResult
from ..data import Demonstrations
from ..errors import RmtkError
from ..mdp.model import LabeledMDP
from ..task import Task
from ..validators import implements
from .encoding import Choices
from .estimate import estimate
from .evidence import DOUBT, count_evidence
from .learner import NoisyLabelResult, _doubt, _models, _noise, stated
from .model import LabelNoise
from .models import MODELS


@attrs.frozen
class NoisyActive:
    """Ask the expert with ``learner`` on the MDP as the recorded labels are believed (module
    docstring); ``noise``, ``doubt`` and ``models`` as for
    :class:`~rmtk.label_noise.learner.NoisyLabels`."""

    learner: ActiveLearner = attrs.field(validator=implements("an active learner", "fit"))
    noise: LabelNoise | None = attrs.field(default=None, validator=_noise)
    doubt: float = attrs.field(default=DOUBT, validator=_doubt)
    models: tuple = attrs.field(default=MODELS, converter=tuple, validator=_models)

    def fit(self, target: Task | LabeledMDP, expert, *, data=None, deadline=None) -> NoisyActiveResult:
        """Believe the letters from ``data`` (default: the expert's recorded data), then run the
        loop on ``target`` relabeled by them (``deadline`` as for
        :meth:`~rmtk.active.loop.ActiveLearner.fit`)."""
        if not isinstance(target, (Task, LabeledMDP)):
            raise RmtkError(
                f"active learning under label noise needs a Task or a LabeledMDP (states whose letters the recorded "
                f"labels speak of), not {type(target).__name__}"
            )
        task = target if isinstance(target, Task) else None
        mdp = target.mdp if isinstance(target, Task) else target
        t0 = time.perf_counter()
        recorded = _recorded(data if data is not None else ExpertCapabilities.of(expert).recorded, mdp)
        est = estimate(
            count_evidence(mdp, recorded, progress=self.learner.progress),
            mdp.propositions,
            stated(self.noise, mdp),
            doubt=self.doubt,
            fallback=mdp.labels,
            models=self.models,
        )
        self.learner.progress.note(est.measure.line())
        choices = Choices.of(est.beliefs)
        if choices.n_states:
            names = ", ".join(mdp.states[s] for s in choices.states[:5].tolist())
            more = f" and {choices.n_states - 5} more" if choices.n_states > 5 else ""
            raise RmtkError(
                f"{choices.n_states} visited states' letters are in doubt under the label noise ({names}{more}): the "
                "active loop asks words of the believed letters, which the expert must realise in its world, and its "
                "answers are actions that cannot settle a letter; record more visits there, or learn passively "
                "(NoisyLabels, rmtk learn --demos without --active), which chooses doubtful letters with the machine"
            )
        letters = est.beliefs.letter
        believed = attrs.evolve(mdp, labels=letters, name=mdp.name)
        counted = recorded if isinstance(recorded, Demonstrations) else recorded.reading("ignore")
        timings = {"labels": time.perf_counter() - t0}
        active = self.learner.fit(
            attrs.evolve(task, mdp=believed) if task is not None else believed, expert, data=counted, deadline=deadline
        )
        timings["total"] = time.perf_counter() - t0
        labels = NoisyLabelResult(active.result, est, choices, None, letters, recorded, mdp, timings)
        return NoisyActiveResult(active, labels)


def _recorded(data, mdp) -> Any:
    """The recorded data with their labels as the detector recorded them: Demonstrations, or a
    Parquet dataset read so; what carries no recorded labels is refused."""
    from ..data import format_of, load
    from ..data.parquet_dataset import ParquetDataset

    if isinstance(data, (str, os.PathLike)):
        data = ParquetDataset.open(data, mdp) if format_of(data) == "parquet" else load(data, mdp, labels="keep")
    if isinstance(data, ParquetDataset):
        data = data.reading("keep")
        if data.recorded:
            return data
    elif isinstance(data, Demonstrations) and (data.labels is not None or data.detections is not None):
        return data
    what = "no recorded data" if data is None else f"{type(data).__name__} without recorded labels"
    raise RmtkError(
        f"active learning under label noise reads the labels the expert's recorded data carry, and it has {what}: "
        "give demonstrations with recorded labels or a detector's probabilities (loaded with labels='keep'; "
        "a count table or a recording keeps words, not the labels per state)"
    )


@attrs.frozen
class NoisyActiveResult:
    """What :class:`NoisyActive` found: the loop's :class:`~rmtk.active.result.ActiveResult` on
    the MDP as believed, and the labels' side (:class:`~rmtk.label_noise.learner.NoisyLabelResult`:
    the noise, the beliefs, the corrections; its ``result`` is the loop's)."""

    active: ActiveResult
    labels: NoisyLabelResult

    def lines(self, shown: int = 5) -> list[str]:
        """The report's lines about the labels."""
        return self.labels.lines(shown)
