"""Learning a reward machine from labels recorded by a detector that errs
(docs/design/15-label-noise.md).

:class:`NoisyLabels` wraps a :class:`~rmtk.learner.pipeline.Learner` (its demonstrations, policy,
rewards or both, its encoder and limits) and fits it on the MDP *as the labels are believed*:

1. the recorded labels are counted state by state (:func:`~rmtk.label_noise.evidence.count_evidence`,
   on the learner's engine) and the noise is estimated, or taken as given
   (:func:`~rmtk.label_noise.estimate.estimate`): each state's most likely letter, and whether the
   data decide it;
2. when some states stay doubtful, the learner runs on the MDP whose doubtful states carry a
   placeholder letter each, with a :class:`~rmtk.label_noise.search.ChoosingEncoder`: the smallest
   machine some choice of their letters allows, the choice of least cost (the log-likelihood of
   the labels it disbelieves) at that size;
3. the learner runs on the MDP relabeled by the beliefs and the choice, with its own encoder:
   the answer, its verdicts (against the truth on that MDP), its rewards.

The MDP's own labels are never read by the search; states the data never visit keep them
(they take no part in any word).
"""

from __future__ import annotations

import os
import time
from typing import Any

import attrs
import numpy as np

from ..data import Demonstrations
from ..errors import RmtkError
from ..learner.pipeline import Learner
from ..learner.result import LearnResult
from ..limits import Deadline
from ..machine.model import RewardMachine
from ..mdp.model import LabeledMDP
from ..ptp.empirical import EmpiricalPTP
from ..sat.encoders import EncoderCapabilities, NoisyRewardEncoder, SatEncoder, SimplestEncoder
from ..task import Task
from ..traces.evidence import TraceRewards
from ..traces.tolerance import TolerantRewards
from ..validators import implements
from ..words import plural
from .corrections import Corrections, corrections
from .encoding import Choices
from .estimate import Estimate, estimate
from .evidence import DOUBT, count_evidence
from .model import LabelNoise
from .models import MODELS, NoiseModel
from .search import ChoosingEncoder, SimplestChoosingEncoder, chosen_letters

#: The reward evidence strategies whose data :class:`NoisyLabels` reads and counts afresh.
REWARD_EVIDENCE = (TraceRewards, TolerantRewards)

#: Machines (with their choices of letters) listed when choosing the doubtful states' letters:
#: the choice taken is the first of them in the order of its letters.
CHOICE_SOLUTIONS = 10


def _noise(instance, attribute, value) -> None:
    if value is not None and not isinstance(value, LabelNoise):
        raise RmtkError(f"noise must be a LabelNoise or None (estimated), not {type(value).__name__}")


def _models(instance, attribute, value) -> None:
    bad = [m for m in value if not isinstance(m, NoiseModel)]
    if not value or bad:
        raise RmtkError(f"models must be NoiseModels (e.g. UniformModel(), DetectorModel()), got {list(value)!r}")


def _doubt(instance, attribute, value) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
        raise RmtkError(f"doubt must lie in (0, 1), got {value!r}")


@attrs.frozen
class NoisyLabels:
    """Learn with ``learner`` from labels recorded by a detector that errs.

    Args:
        learner: a :class:`~rmtk.learner.pipeline.Learner` whose demonstrations (its
            :class:`~rmtk.ptp.empirical.EmpiricalPTP`, or its reward evidence's) carry recorded labels
            or a detector's probabilities (:class:`~rmtk.data.Demonstrations` ``labels`` or
            ``detections``; a path is loaded with ``labels="keep"``).
        noise: the detector's :class:`~rmtk.label_noise.model.LabelNoise`, or ``None``: estimated
            from the data, the model of ``models`` of smallest BIC (:mod:`rmtk.label_noise.models`).
            Unused for a detector's probabilities, which are their own likelihoods.
        doubt: a state's letter is decided by its labels when no rival letter is more than
            ``doubt`` times as likely; otherwise it is chosen with the machine.
        models: the noise models compared when the noise is estimated
            (:class:`~rmtk.label_noise.models.NoiseModel`; default: the uniform one and a detector's).
    """

    learner: Learner = attrs.field(validator=implements("a learner", "fit"))
    noise: LabelNoise | None = attrs.field(default=None, validator=_noise)
    doubt: float = attrs.field(default=DOUBT, validator=_doubt)
    models: tuple = attrs.field(default=MODELS, converter=tuple, validator=_models)

    def fit(self, target: Task | LabeledMDP) -> NoisyLabelResult:
        """Learn from ``target`` (a :class:`~rmtk.task.Task`, whose machine serves the verdicts
        only, or a bare :class:`~rmtk.mdp.model.LabeledMDP`)."""
        if not isinstance(target, (Task, LabeledMDP)):
            raise RmtkError(f"NoisyLabels.fit needs a Task or a LabeledMDP, not {type(target).__name__}")
        task = target if isinstance(target, Task) else None
        mdp = target.mdp if isinstance(target, Task) else target
        t0 = time.perf_counter()
        deadline = Deadline.after(self.learner.time_limit)
        ptp, data = self._data(mdp)
        progress = self.learner.progress
        evidence = count_evidence(mdp, data, chunk=ptp.chunk, engine=ptp.engine, progress=progress)
        noise = stated(self.noise, mdp)
        est = estimate(evidence, mdp.propositions, noise, doubt=self.doubt, fallback=mdp.labels, models=self.models)
        progress.note(est.measure.line())
        timings = {"labels": time.perf_counter() - t0}
        choices = Choices.of(est.beliefs)
        letters = est.beliefs.letter.copy()
        chosen = None
        if choices.n_states:
            t1 = time.perf_counter()
            chosen = self._choose(mdp, ptp, data, choices, est, deadline)
            timings["choose"] = time.perf_counter() - t1
            if chosen.letters is None:
                return NoisyLabelResult(chosen.result, est, choices, chosen, letters, data, mdp, timings)
            letters[choices.states] = chosen.letters
        believed = attrs.evolve(mdp, labels=letters, name=mdp.name)
        learner = _fresh(self.learner, data, ptp, _remaining(deadline))
        t2 = time.perf_counter()
        result = learner.fit(attrs.evolve(task, mdp=believed) if task is not None else believed)
        timings["learn"] = time.perf_counter() - t2
        timings["total"] = time.perf_counter() - t0
        return NoisyLabelResult(result, est, choices, chosen, letters, data, mdp, timings)

    def _data(self, mdp) -> tuple[EmpiricalPTP, Any]:
        """The learner's demonstrations strategy and its data with their recorded labels: in memory,
        or a Parquet dataset (:class:`~rmtk.data.parquet_dataset.ParquetDataset`) read as recorded."""
        ptp: object = self.learner.ptp
        if not isinstance(ptp, EmpiricalPTP) and isinstance(self.learner.rewards, REWARD_EVIDENCE):
            ptp = self.learner.rewards.data
        if not isinstance(ptp, EmpiricalPTP):
            raise RmtkError(
                "learning under label noise reads the recorded labels of demonstrations: give the learner an "
                "EmpiricalPTP (or reward evidence counted by one) over Demonstrations or a .csv/.npz file"
            )
        data: Any = ptp.data
        from ..data.parquet_dataset import ParquetDataset

        if isinstance(data, (str, os.PathLike)):
            from ..data import format_of, load

            if format_of(data) == "parquet":
                data = ParquetDataset.open(data, mdp, labels="keep")
            else:
                data = load(data, mdp, labels="keep")
        if isinstance(data, ParquetDataset):  # read partition by partition, on the learner's engine
            data = data.reading("keep")
            if not data.recorded:
                raise RmtkError(
                    f"{data.path}: the dataset has no label column nor a detector's p_<proposition> columns: "
                    "there is no noise to learn under"
                )
            return ptp, data
        if not isinstance(data, Demonstrations):
            raise RmtkError(
                f"learning under label noise reads the data three times (labels, choice, counts): give Demonstrations, "
                f"a file or a Parquet dataset, not {type(data).__name__}"
            )
        if data.labels is None and data.detections is None and ptp.labels is not None:
            data = attrs.evolve(data, labels=ptp.labels)  # the recorded labels given to the counting
        if data.labels is None and data.detections is None:
            raise RmtkError(
                "the demonstrations carry no recorded labels nor detections: their labels are the MDP's, and there "
                "is no noise to learn under (load them with labels='keep')"
            )
        return ptp, data

    def _choose(self, mdp, ptp, data, choices: Choices, est: Estimate, deadline: Deadline) -> Chosen:
        """Step 2: the doubtful states' letters, chosen with the smallest machine."""
        K = mdp.n_propositions
        names = list(mdp.propositions)
        for s in choices.states.tolist():
            name = "?" + mdp.states[s]
            while name in names:
                name = "?" + name
            names.append(name)
        labels = est.beliefs.letter.copy()
        labels[choices.states] = K + np.arange(choices.n_states)
        view = attrs.evolve(mdp, labels=labels, propositions=names)
        base = self.learner.encoder
        if isinstance(base, NoisyRewardEncoder):
            raise RmtkError(
                f"doubtful after their labels: {plural(choices.n_states, 'state')}, whose letters are chosen with the "
                "machine by weighted MaxSAT over rewards read exactly; rewards weighed as noisy (NoisyRewardEncoder, "
                "--noisy) would be a second objective this search does not combine: give data that visit those "
                "states more often (their labels then decide them), or rewards read exactly or within a tolerance "
                "(--tolerance)"
            )
        kind = SimplestChoosingEncoder if isinstance(base, SimplestEncoder) else ChoosingEncoder
        breaking = base.symmetry_breaking if isinstance(base, SatEncoder) else True
        stutter = EncoderCapabilities.of(base).non_stuttering
        encoder = kind(choices=choices, non_stuttering=stutter, symmetry_breaking=breaking)
        learner = attrs.evolve(
            _fresh(self.learner, data, ptp, _remaining(deadline)),
            encoder=encoder,
            irl=None,
            max_solutions=CHOICE_SOLUTIONS,
        )
        result = learner.fit(view)
        if not result.solutions:
            return Chosen(None, result, None)
        options = sorted({tuple(chosen_letters(choices, s.dropped).tolist()) for s in result.solutions})
        return Chosen(np.asarray(options[0], np.int64), result, len(options))


def stated(noise: LabelNoise | None, mdp) -> LabelNoise | None:
    """``noise``, checked to be stated over ``mdp``'s propositions."""
    if noise is not None and noise.propositions != mdp.propositions:
        raise RmtkError(
            f"the noise is stated over {list(noise.propositions)}; the MDP {mdp.name!r} has {list(mdp.propositions)}"
        )
    return noise


def _remaining(deadline: Deadline) -> float | None:
    left = deadline.remaining()
    return None if left is None else max(left, 1e-3)


def _fresh(learner: Learner, data, ptp: EmpiricalPTP, time_limit) -> Learner:
    """``learner`` with strategies that count ``data`` afresh (their counts are kept per MDP size,
    and each stage reads another labeling of the same MDP)."""
    if not isinstance(data, Demonstrations):  # a Parquet dataset: its words read on the MDP's labels
        data = data.reading("ignore")
    counting = attrs.evolve(ptp, data=data, labels=None)  # the believed labels are the MDP's
    changes: dict = {"time_limit": time_limit}
    if learner.ptp is not None:
        changes["ptp"] = counting
    rewards = learner.rewards
    if isinstance(rewards, REWARD_EVIDENCE) and isinstance(rewards.data, EmpiricalPTP):
        own = counting if rewards.data is ptp else attrs.evolve(rewards.data, data=data, labels=None)
        changes["rewards"] = attrs.evolve(rewards, data=own)
    return attrs.evolve(learner, **changes)


@attrs.frozen
class Chosen:
    """What choosing the doubtful states' letters found: the letters (``None``: no machine
    allows any choice), the search's result on the MDP with placeholders, and how many
    different choices its optima made."""

    letters: np.ndarray | None
    result: LearnResult
    options: int | None


@attrs.frozen
class NoisyLabelResult:
    """The answer of :class:`NoisyLabels`.

    Attributes:
        result: the :class:`~rmtk.learner.result.LearnResult` on the MDP as the labels are believed
            (or, when no choice of letters allowed a machine, the choice's).
        estimate: the noise (given or estimated), the beliefs, what the data show.
        choices: the doubtful states and their candidate letters.
        chosen: what choosing their letters found (``None`` when no state was doubtful).
        labels: ``(S,)`` the letter of each state as finally believed.
        data: the demonstrations learned from (:class:`~rmtk.data.Demonstrations`, or a Parquet
            dataset read partition by partition).
        mdp: the MDP as given (its labels are the model's, not read by the search).
        timings: seconds per step.
    """

    result: LearnResult
    estimate: Estimate
    choices: Choices
    chosen: Chosen | None
    labels: np.ndarray = attrs.field(repr=False)
    data: Any = attrs.field(repr=False)
    mdp: LabeledMDP = attrs.field(repr=False)
    timings: dict = attrs.field(factory=dict)

    @property
    def machines(self) -> tuple[RewardMachine, ...]:
        return self.result.machines if self.chosen is None or self.chosen.letters is not None else ()

    @property
    def noise(self) -> LabelNoise | None:
        return self.estimate.noise

    def corrections(self) -> Corrections:
        """The recorded labels believed wrong, by trajectory and step (:mod:`rmtk.label_noise.corrections`)."""
        return corrections(self.data, self.labels, self.estimate.beliefs, mdp=self.mdp)

    def relabeled(self) -> np.ndarray:
        """The states whose believed letter differs from the MDP's own label (a check when the
        MDP's labels are the truth, as for simulated data)."""
        return np.flatnonzero((self.labels != self.mdp.labels) & (self.estimate.beliefs.visits > 0))

    def lines(self, shown: int = 5) -> list[str]:
        """The report's lines about the labels."""
        est = self.estimate
        sel = est.selection
        rates = sel.rates() if sel is not None else ()
        # the measured rates per proposition, unless the chosen model states its own per event
        out = est.measure.lines() if len(rates) <= 1 else [est.measure.line()]
        if est.given:
            out.append(
                f"noise stated: {est.noise}"
                if est.noise is not None
                else "the detector's probabilities weigh the labels"
            )
        else:
            if sel is not None:  # the model's rates, unless they restate the measured flip rate
                out += sel.lines()[: 1 if [r for _, r in rates] == [est.measure.flips] else None]
            out.append(f"noise estimated: {est.noise}")
        b = est.beliefs
        visited = int((b.visits > 0).sum())
        line = f"labels believed: {visited - self.choices.n_states} of {visited} visited states decided by their labels"
        if self.choices.n_states:
            line += f", {self.choices.n_states} doubtful"
            if self.chosen is not None and self.chosen.letters is not None:
                cost = self.chosen.result.search.cost
                nats = f"; the choice disbelieves {cost / 1000:.3f} nats of labels" if cost is not None else ""
                others = (
                    ""
                    if not self.chosen.options or self.chosen.options < 2
                    else (f" ({self.chosen.options} choices equally likely: the first in letter order taken)")
                )
                line += f" chosen with the smallest machine{nats}{others}"
            elif self.chosen is not None:
                line += f": no machine allows any choice ({self.chosen.result.search.message})"
        out.append(line)
        c = self.corrections()
        out.append(c.line(self.mdp, shown))
        moved = self.relabeled()
        if moved.size:
            props = self.mdp.propositions
            names = ", ".join(
                f"{self.mdp.states[s]} {props[self.mdp.labels[s]]}→{props[self.labels[s]]}"
                for s in moved[:shown].tolist()
            )
            more = f" and {moved.size - shown} more" if moved.size > shown else ""
            out.append(f"believed labels differ from the model's at {moved.size} states: {names}{more}")
        return out
