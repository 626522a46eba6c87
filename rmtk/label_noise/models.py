"""Which noise model the recorded labels show: the uniform one or a detector's, chosen by BIC
(docs/design/15-label-noise.md).

A :class:`NoiseModel` is a family of confusion matrices with a *support* (which confusions it
allows at all), a number of free rates, and a maximum-likelihood fit from the counts
``B[ℓ, k]`` of steps at states believed to carry ``ℓ`` recorded as ``k``:

* :class:`UniformModel`: each label replaced, with one probability ``p``, by another letter drawn
  uniformly (1 rate; every confusion possible);
* :class:`DetectorModel`: events seen against a *plain* letter ``o``: per event ``e`` a miss rate
  (``e`` recorded as ``o``) and a false-alarm rate (``o`` recorded as ``e``); an event is never
  recorded as another event (``2(K − 1)`` rates). Without a stated plain letter every letter is
  tried, and the likeliest kept.

:func:`select` fits each by *classification* maximum likelihood: the states' letters are
parameters too, and the fit alternates the letters (each state's likeliest letter among those
the model's support allows for what was recorded there) and the rates (their maximum-likelihood
values given the letters), each step raising the likelihood, until the letters stop changing. It
reads the states visited at least ``min_visits`` times (as
:func:`~rmtk.label_noise.estimate.measure`: a state seen a few times fits its own labels). The
models are compared by the Bayesian information criterion ``BIC = −2 log L + k ln n`` (``k`` free
rates, ``n`` recorded labels read): the letters are the same number of parameters in every model
and cancel. The smaller BIC wins; equal ones (``rmtk.ties``'s tolerance) go to the model listed
first (the uniform one by default: the fewer rates). The two models are not nested (the uniform
one allows an event recorded as another event, the detector's does not), so a likelihood-ratio
test does not apply; BIC compares non-nested models, and is consistent: with enough data it picks
the model that holds. The chosen model's rates come with two-sided Clopper-Pearson intervals,
each a count of binomial draws at the states whose letter is believed.

Rates fitted at 0 are raised to :data:`FLOOR` (and the uniform rate kept below ``(K − 1)/K``), so
that a state seen rarely, outside the fit, is never recorded as something no letter explains.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import attrs
import numpy as np

from .. import ties
from .._arrays import array_eq
from ..errors import ModelError
from ..words import plural
from .model import LabelNoise
from .rates import Rate

#: The least rate a fitted model keeps (module docstring).
FLOOR = 1e-6

#: Rounds of the alternation at most (it stops earlier once the letters stop changing).
ROUNDS = 50

#: The false-alarm rate of the detector the fit also starts from (:meth:`DetectorModel.starts`).
START_ALARM = 0.01


@runtime_checkable
class NoiseModel(Protocol):
    """A family of noise models :func:`select` fits and compares."""

    def candidates(self, propositions: tuple[str, ...]) -> tuple[NoiseModel, ...]:
        """The concrete models the family tries (a detector without a plain letter: one per letter)."""

    def starts(self, propositions: tuple[str, ...]) -> tuple[LabelNoise, ...]:
        """Noises whose likeliest letters start the fit, beside the plurality of each state's labels."""

    def support(self, propositions: tuple[str, ...]) -> np.ndarray:
        """``(K, K)``: the confusions ``true → recorded`` the model allows."""

    def n_rates(self, propositions: tuple[str, ...]) -> int:
        """The free rates (the ``k`` of BIC)."""

    def fit(self, counts: np.ndarray, propositions: tuple[str, ...]) -> LabelNoise:
        """The maximum-likelihood noise from ``counts[ℓ, k]`` (believed ``ℓ``, recorded ``k``)."""

    def rates(self, counts: np.ndarray, propositions: tuple[str, ...]) -> tuple[tuple[str, Rate], ...]:
        """The fitted rates with their intervals, named."""

    def describe(self, propositions: tuple[str, ...]) -> str:
        """The model as the report names it."""


@attrs.frozen
class UniformModel:
    """Each label replaced, with probability ``p``, by another letter drawn uniformly."""

    def candidates(self, propositions):
        return (self,)

    def starts(self, propositions):
        return ()  # the plurality is the likeliest letter under any uniform rate below (K − 1)/K

    def support(self, propositions) -> np.ndarray:
        return np.ones((len(propositions),) * 2, dtype=bool)

    def n_rates(self, propositions) -> int:
        return 1

    def fit(self, counts, propositions) -> LabelNoise:
        K, total = len(propositions), counts.sum()
        p = (total - np.trace(counts)) / total if total else 0.0
        return LabelNoise.uniform(propositions, min(max(float(p), FLOOR), 1.0 - 1.0 / K - FLOOR))

    def rates(self, counts, propositions):
        total = int(counts.sum())
        return (("each label wrong", Rate.of(total - int(np.trace(counts)), total)),)

    def describe(self, propositions) -> str:
        return "uniform"


@attrs.frozen
class DetectorModel:
    """Events seen against the ``plain`` letter (``None``: the likeliest letter), per event a
    miss and a false-alarm rate (:meth:`~rmtk.label_noise.model.LabelNoise.detector`)."""

    plain: str | None = None

    def candidates(self, propositions):
        if self.plain is not None:
            if self.plain not in propositions:
                raise ModelError(f"the plain letter {self.plain!r} is not one of the propositions {list(propositions)}")
            return (self,)
        return tuple(DetectorModel(p) for p in propositions)

    def starts(self, propositions):
        """A detector that misses half the events and raises false alarms at :data:`START_ALARM`:
        a state is read as an event recorded there at least about a fifth as often as the plain
        letter (a detector that misses most events makes the plain letter the plurality at every
        event's state, from which the fit would never leave)."""
        return (LabelNoise.detector(propositions, self.plain, miss=0.5, false_alarm=START_ALARM),)

    def _plain(self, propositions) -> int:
        if self.plain is None:
            raise ModelError("a detector model is fitted with its plain letter (candidates() gives one per letter)")
        return list(propositions).index(self.plain)

    def support(self, propositions) -> np.ndarray:
        o = self._plain(propositions)
        out = np.eye(len(propositions), dtype=bool)
        out[:, o] = out[o, :] = True
        return out

    def n_rates(self, propositions) -> int:
        return 2 * (len(propositions) - 1)

    def fit(self, counts, propositions) -> LabelNoise:
        o = self._plain(propositions)
        events = [k for k in range(len(propositions)) if k != o]
        at = counts.sum(axis=1)
        miss = {propositions[e]: _share(counts[e, o], at[e]) for e in events}
        alarm = {propositions[e]: _share(counts[o, e], at[o]) for e in events}
        scale = min(1.0, (1.0 - FLOOR) / max(sum(alarm.values()), FLOOR))  # the plain letter still recorded right
        alarm = {p: f * scale for p, f in alarm.items()}
        return LabelNoise.detector(propositions, self.plain, miss=miss, false_alarm=alarm)

    def rates(self, counts, propositions):
        o = self._plain(propositions)
        at = counts.sum(axis=1)
        out = []
        for e in range(len(propositions)):
            if e != o:
                p = propositions[e]
                out += [(f"{p} miss", Rate.of(int(counts[e, o]), int(at[e])))]
                out += [(f"{p} false alarm", Rate.of(int(counts[o, e]), int(at[o])))]
        return tuple(out)

    def describe(self, propositions) -> str:
        return f"detector against {self.plain!r}" if self.plain is not None else "detector"


def _share(k, n) -> float:
    return min(max(float(k) / float(n) if n else 0.0, FLOOR), 1.0 - FLOOR)


@attrs.frozen
class Fit:
    """One concrete model fitted: its noise, letters (of the states read), log-likelihood,
    free rates, BIC and the counts ``B[ℓ, k]`` its letters give."""

    model: NoiseModel
    noise: LabelNoise
    letters: np.ndarray = attrs.field(eq=array_eq, repr=False)
    log_likelihood: float
    n_rates: int
    n: int
    counts: np.ndarray = attrs.field(eq=array_eq, repr=False)

    @property
    def bic(self) -> float:
        return -2.0 * self.log_likelihood + self.n_rates * float(np.log(max(self.n, 1)))


def fit_model(model: NoiseModel, counts: np.ndarray, propositions, start: np.ndarray) -> Fit:
    """Classification maximum likelihood of one concrete ``model`` on ``counts[s, k]`` (the
    states read), from the letters ``start`` and from those of the model's :meth:`~NoiseModel.starts`
    (module docstring): the likeliest fit (the first of equals)."""
    props = tuple(propositions)
    c = counts.astype(np.float64)
    allowed = model.support(props)
    feasible = ((c > 0).astype(np.float64) @ (~allowed).T.astype(np.float64)) == 0  # (S, ℓ): ℓ explains the labels
    begin = [np.asarray(start, np.int64)]
    for noise in model.starts(props):
        with np.errstate(divide="ignore"):
            logc = np.where(allowed & (noise.confusion > 0), np.log(np.maximum(noise.confusion, FLOOR)), 0.0)
        begin.append(ties.argbest(np.where(feasible, c @ logc.T, -1e300), axis=1))
    fits = [_climb(model, counts, props, feasible, letters) for letters in begin]
    return fits[int(ties.argbest(np.array([f.log_likelihood for f in fits])))]


def _climb(model: NoiseModel, counts: np.ndarray, props: tuple[str, ...], feasible, letters) -> Fit:
    """The alternation of letters and rates from ``letters`` until the letters stop changing."""
    K = len(props)
    c = counts.astype(np.float64)
    allowed = model.support(props)
    letters = np.where(feasible[np.arange(len(letters)), letters], letters, ties.argbest(feasible, axis=1))

    def rates_at(letters):
        B = np.zeros((K, K), np.int64)
        np.add.at(B, letters, counts)
        noise = model.fit(B, props)
        with np.errstate(divide="ignore"):
            logc = np.where(allowed, np.log(noise.confusion), -np.inf)
        return B, noise, np.where(feasible, c @ np.where(np.isfinite(logc), logc, 0.0).T, -np.inf)

    for _ in range(ROUNDS):
        B, noise, lp = rates_at(letters)
        new = ties.argbest(np.where(feasible, lp, -1e300), axis=1)
        if np.array_equal(new, letters):
            break
        letters = new
    else:
        B, noise, lp = rates_at(letters)
    ll = float(lp[np.arange(len(letters)), letters].sum())
    return Fit(model, noise, letters, ll, model.n_rates(props), int(counts.sum()), B)


@attrs.frozen
class Selection:
    """The models fitted (the best concrete one of each family, in the order given) and the one
    chosen: the smallest BIC, the first of equals."""

    fits: tuple[Fit, ...]
    chosen: int
    propositions: tuple[str, ...]

    @property
    def best(self) -> Fit:
        return self.fits[self.chosen]

    @property
    def noise(self) -> LabelNoise:
        return self.best.noise

    def rates(self) -> tuple[tuple[str, Rate], ...]:
        """The chosen model's rates, with their intervals (at its letters)."""
        return self.best.model.rates(self.best.counts, self.propositions)

    def lines(self) -> list[str]:
        """The report's lines: the models' BIC, the one chosen, its rates."""
        props = self.propositions
        n = self.best.n
        scores = ", ".join(f"{f.model.describe(props)} {f.bic:,.1f} ({plural(f.n_rates, 'rate')})" for f in self.fits)
        out = [f"noise model: {self.best.model.describe(props)}, the smallest BIC over {n:,} labels: {scores}"]
        out += [f"  {name} {rate}" for name, rate in self.rates()]
        return out


def select(models, counts: np.ndarray, propositions, start: np.ndarray) -> Selection:
    """Fit every family of ``models`` to ``counts[s, k]`` (the states read) from the letters
    ``start``, each family's likeliest concrete model kept, and choose by BIC (module docstring)."""
    props = tuple(propositions)
    if not models:
        raise ModelError("select needs at least one noise model")
    fits = []
    for family in models:
        if not isinstance(family, NoiseModel):
            raise ModelError(f"{family!r} is not a NoiseModel (candidates, support, n_rates, fit, rates, describe)")
        tried = [fit_model(m, counts, props, start) for m in family.candidates(props)]
        fits.append(tried[int(ties.argbest(np.array([f.log_likelihood for f in tried])))])
    chosen = int(ties.argbest(np.array([f.bic for f in fits]), lowest=True))
    return Selection(tuple(fits), chosen, props)


#: The families ``auto`` compares, in their order of preference at equal BIC.
MODELS: tuple[NoiseModel, ...] = (UniformModel(), DetectorModel())
