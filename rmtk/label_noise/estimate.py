"""The noise of recorded labels, estimated with intervals (docs/design/15-label-noise.md).

Once each state's letter is believed (:class:`~rmtk.label_noise.evidence.LabelBeliefs`), every
recorded label of a visit to a state whose letter the data decide is a draw of the detector on
a known letter: a recorded label that differs is a wrong one. :func:`measure` counts them over
the states visited at least :data:`MIN_VISITS` times (chosen by their visits alone, not by what
was recorded there, so that the choice does not bias the count) and gives, with two-sided
Clopper-Pearson intervals:

* the share of recorded labels that are wrong (the *flip rate*);
* per proposition, its *miss* rate (a step at a state of that letter recorded as another) and
  its *false-alarm* rate (a step at a state of another letter recorded as it).

:func:`estimate` fits a noise model to the data alone (``auto``): first the uniform one
(:meth:`~rmtk.label_noise.model.LabelNoise.uniform`) whose rate is the flip rate, found by
alternating the beliefs and the rate from the plurality of each state's labels until the beliefs
stop changing (the most likely letter under uniform noise is the plurality whatever the rate below
(K−1)/K, so this settles at once unless ties are broken differently); then, from those letters,
every model of ``models`` (the uniform one and a detector's) by classification maximum likelihood,
the one of smallest BIC kept (:mod:`rmtk.label_noise.models`).
"""

from __future__ import annotations

import attrs
import numpy as np

from ..errors import DataError
from .evidence import DOUBT, LabelBeliefs, StateEvidence
from .model import LabelNoise
from .models import MODELS, Selection, select
from .rates import CONFIDENCE, Rate, clopper_pearson  # noqa: F401 (their home before rmtk/label_noise/rates.py)

__all__ = ["MIN_VISITS", "NoiseMeasure", "measure", "Estimate", "estimate"]

#: States visited fewer times than this are left out of the rates (their letter is the
#: plurality of too few draws to say which recorded ones were wrong).
MIN_VISITS = 10


@attrs.frozen
class NoiseMeasure:
    """The label noise the data show (:func:`measure`).

    Attributes:
        flips: the share of recorded labels that differ from their state's believed letter.
        miss: per proposition (the MDP's order), the share of steps at its states recorded as another letter.
        false_alarm: per proposition, the share of steps at other states recorded as it.
        propositions: the alphabet.
        states: states counted (visited at least ``min_visits`` times).
        min_visits: the visits a state needs to be counted.
        detected: whether the labels were a detector's probabilities (then a step's label is the
            letter it found most likely).
    """

    flips: Rate
    miss: tuple[Rate, ...]
    false_alarm: tuple[Rate, ...]
    propositions: tuple[str, ...]
    states: int
    min_visits: int = MIN_VISITS
    detected: bool = False

    def line(self) -> str:
        """The report's line."""
        what = "of the detector's most likely labels" if self.detected else "of recorded labels"
        return (
            f"label noise: {self.flips} {what} wrong ({self.flips.k:,} of {self.flips.n:,} steps at the "
            f"{self.states} states visited at least {self.min_visits} times)"
        )

    def lines(self) -> list[str]:
        """The report's line and one per proposition with some evidence."""
        out = [self.line()]
        for p, m, f in zip(self.propositions, self.miss, self.false_alarm):
            if m.n or f.k:
                out.append(f"  {p}: miss {m}, false alarm {f}")
        return out


def measure(beliefs: LabelBeliefs, evidence: StateEvidence, *, min_visits: int = MIN_VISITS) -> NoiseMeasure:
    """The label noise of ``evidence`` against the letters ``beliefs`` hold (module docstring)."""
    counts = evidence.counts
    S, K = counts.shape
    visits = counts.sum(axis=1)
    used = visits >= min_visits
    letter = beliefs.letter
    by_letter = np.zeros((K, K), np.int64)  # [believed, recorded]
    np.add.at(by_letter, letter[used], counts[used])
    total = int(by_letter.sum())
    right = int(np.trace(by_letter))
    at = by_letter.sum(axis=1)  # steps at states of each letter
    recorded = by_letter.sum(axis=0)
    miss = tuple(Rate.of(int(at[k] - by_letter[k, k]), int(at[k])) for k in range(K))
    alarm = tuple(Rate.of(int(recorded[k] - by_letter[k, k]), int(total - at[k])) for k in range(K))
    props = tuple(f"letter {k}" for k in range(K))
    return NoiseMeasure(
        Rate.of(total - right, total), miss, alarm, props, int(used.sum()), min_visits, evidence.detected
    )


@attrs.frozen
class Estimate:
    """The noise model fitted to the data (``noise``), the beliefs under it, what the data show
    (``measure``) and, when estimated, the models compared (``selection``)."""

    noise: LabelNoise | None
    beliefs: LabelBeliefs
    measure: NoiseMeasure
    given: bool = False
    selection: Selection | None = None


def estimate(
    evidence: StateEvidence,
    propositions,
    noise: LabelNoise | None = None,
    *,
    doubt: float = DOUBT,
    fallback=None,
    min_visits: int = MIN_VISITS,
    models=MODELS,
) -> Estimate:
    """The beliefs about each state's letter and the noise: under ``noise`` when given; else the
    model of ``models`` the data show by BIC (module docstring). A detector's probabilities need
    no noise model: the beliefs are theirs, and the measure says how often their most likely
    letter was wrong."""
    props = tuple(propositions)
    if evidence.detected or noise is not None:
        beliefs = LabelBeliefs.of(evidence, noise, doubt=doubt, fallback=fallback)
        return Estimate(noise, beliefs, _named(measure(beliefs, evidence, min_visits=min_visits), props), True)
    K = len(props)
    if evidence.n_steps == 0:
        raise DataError("no recorded label to estimate the noise from")
    rate = 0.1  # a start; under uniform noise the beliefs are the plurality for any rate below (K-1)/K
    seen: set[tuple] = set()
    for _ in range(20):
        fitted = LabelNoise.uniform(props, rate)
        beliefs = LabelBeliefs.of(evidence, fitted, doubt=doubt, fallback=fallback)
        m = measure(beliefs, evidence, min_visits=min_visits)
        if m.flips.n == 0:
            m = measure(beliefs, evidence, min_visits=1)
        new = min(max(m.flips.value, 1e-6), 1.0 - 1.0 / K - 1e-6)
        key = (tuple(beliefs.letter.tolist()), round(new, 12))
        if key in seen:
            break
        seen.add(key)
        rate = new
    if m.flips.value >= 1.0 - 1.0 / K:
        raise DataError(
            f"the recorded labels disagree with their states' most common label {m.flips.value:.0%} of the time: "
            "too noisy to tell the letters apart"
        )
    visits = evidence.visits
    read = visits >= min_visits if (visits >= min_visits).any() else visits > 0
    chosen = select(models, evidence.counts[read], props, beliefs.letter[read])
    beliefs = LabelBeliefs.of(evidence, chosen.noise, doubt=doubt, fallback=fallback)
    m = _named(measure(beliefs, evidence, min_visits=min_visits), props)
    return Estimate(chosen.noise, beliefs, m, selection=chosen)


def _named(m: NoiseMeasure, props: tuple[str, ...]) -> NoiseMeasure:
    return attrs.evolve(m, propositions=props)
