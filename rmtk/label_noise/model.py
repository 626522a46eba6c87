"""A noise model for labels: how a detector that errs turns the true letter of a step into the
recorded one (docs/design/15-label-noise.md).

rmtk labels every state with exactly one proposition (docs/design/02-conventions.md), so a
detector's error is a *confusion*: the true letter ``ℓ`` is recorded as ``k`` with probability
``C[ℓ, k]``. :class:`LabelNoise` holds that matrix over the MDP's propositions, with the three
shapes a user states:

* :meth:`LabelNoise.uniform`: each recorded label is, with probability ``p``, replaced by another
  letter drawn uniformly (what ``rmtk simulate --label-noise P`` writes; a detector of
  confidence ``c`` is ``p = 1 − c``);
* :meth:`LabelNoise.detector`: events seen against a *plain* letter (the Office World's ``i``, the
  Craft World's ``o``): per proposition a *miss* rate (the event recorded as the plain letter) and
  a *false-alarm* rate (the plain letter recorded as the event);
* a confusion matrix given whole.

Steps err independently. Every draw takes a seed (:meth:`LabelNoise.corrupt`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs
import numpy as np

from .._arrays import array_eq
from ..errors import ModelError

#: How far a row of a confusion matrix may sum from 1.
ROW_TOL = 1e-9


def _names(value) -> tuple[str, ...]:
    return tuple(str(v) for v in value)


def _confusion(value) -> np.ndarray:
    try:
        arr = np.array(value, dtype=np.float64, copy=True)
    except (TypeError, ValueError):
        raise ModelError("a confusion matrix is a (K, K) array of probabilities") from None
    arr.setflags(write=False)
    return arr


def _rate(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise ModelError(f"{name} must be a probability in [0, 1], got {value!r}")
    value = float(value)
    if not 0.0 <= value <= 1.0:
        raise ModelError(f"{name} must be a probability in [0, 1], got {value!r}")
    return value


@attrs.frozen
class LabelNoise:
    """``C[ℓ, k]``: the probability that a step whose true letter is ``propositions[ℓ]`` is
    recorded as ``propositions[k]`` (rows sum to 1).

    Attributes:
        propositions: the alphabet, in the order of the MDP's label indices.
        confusion: the ``(K, K)`` row-stochastic matrix (read-only).
    """

    propositions: tuple[str, ...] = attrs.field(converter=_names)
    confusion: np.ndarray = attrs.field(converter=_confusion, eq=array_eq, repr=False)

    def __attrs_post_init__(self) -> None:
        K = len(self.propositions)
        if K < 2:
            raise ModelError(f"label noise needs at least two letters to confuse, got {list(self.propositions)}")
        if len(set(self.propositions)) != K:
            raise ModelError(f"label noise: the propositions repeat a name: {list(self.propositions)}")
        C = self.confusion
        if C.shape != (K, K):
            raise ModelError(f"the confusion matrix has shape {C.shape}; {K} propositions need ({K}, {K})")
        if not np.all(np.isfinite(C)) or C.min() < 0 or C.max() > 1:
            raise ModelError("the confusion matrix holds a value outside [0, 1]")
        bad = np.flatnonzero(np.abs(C.sum(axis=1) - 1) > ROW_TOL)
        if bad.size:
            ell = int(bad[0])
            raise ModelError(
                f"the confusion matrix's row {self.propositions[ell]!r} sums to {C[ell].sum():.12g}, expected 1 "
                "(each row is where that true letter is recorded)"
            )

    # ------------------------------------------------------------------ constructors
    @classmethod
    def exact(cls, propositions: Sequence[str]) -> LabelNoise:
        """Labels recorded without error."""
        return cls(propositions, np.eye(len(propositions)))

    @classmethod
    def uniform(cls, propositions: Sequence[str], rate: float) -> LabelNoise:
        """Each label replaced, with probability ``rate``, by another letter drawn uniformly."""
        rate = _rate("rate", rate)
        K = len(propositions)
        if K < 2:
            raise ModelError(f"label noise needs at least two letters to confuse, got {list(propositions)}")
        C = np.full((K, K), rate / (K - 1))
        np.fill_diagonal(C, 1.0 - rate)
        return cls(propositions, C)

    @classmethod
    def detector(
        cls,
        propositions: Sequence[str],
        plain: str,
        *,
        miss: float | Mapping[str, float] = 0.0,
        false_alarm: float | Mapping[str, float] = 0.0,
    ) -> LabelNoise:
        """A detector of events against the ``plain`` letter: event ``p`` recorded as ``plain``
        with probability ``miss[p]`` (a miss), ``plain`` recorded as ``p`` with probability
        ``false_alarm[p]`` (a false alarm). A number applies to every event; a mapping names
        events (the others: 0)."""
        props = tuple(propositions)
        if plain not in props:
            raise ModelError(f"the plain letter {plain!r} is not one of the propositions {list(props)}")
        events = [p for p in props if p != plain]
        miss_of, alarm_of = (
            _per_event("miss", miss, events, plain),
            _per_event("false_alarm", false_alarm, events, plain),
        )
        K, o = len(props), props.index(plain)
        C = np.eye(K)
        for p in events:
            k = props.index(p)
            C[k, k], C[k, o] = 1.0 - miss_of[p], miss_of[p]
            C[o, k] = alarm_of[p]
        total = sum(alarm_of.values())
        if total > 1.0 + ROW_TOL:
            raise ModelError(
                f"the false-alarm rates sum to {total:g}: the plain letter cannot be recorded wrong that often"
            )
        C[o, o] = max(0.0, 1.0 - total)
        return cls(props, C)

    @classmethod
    def from_text(cls, text: str, propositions: Sequence[str], *, plain: str | None = None) -> LabelNoise:
        """The noise a command line states: ``P`` (uniform, each label wrong with probability
        ``P``), or comma-separated rates of a detector (:meth:`detector`): ``miss=M`` and
        ``false-alarm=F`` for every event, ``miss.p=M`` and ``false-alarm.p=F`` for event ``p``,
        ``plain=o`` its plain letter (default ``plain``, the argument)."""
        text = text.strip()
        try:
            return cls.uniform(propositions, float(text))
        except ValueError:
            pass
        rates: dict[str, dict | float] = {"miss": {}, "false_alarm": {}}
        for item in text.split(","):
            key, sep, value = (part.strip() for part in item.partition("="))
            if not sep or not key:
                raise ModelError(f"label noise {text!r}: expected P, or KEY=RATE items (miss=, false-alarm=, plain=)")
            if key == "plain":
                plain = value
                continue
            kind, dot, prop = key.replace("-", "_").partition(".")
            if kind not in rates:
                raise ModelError(f"label noise {text!r}: unknown key {key!r}; the keys are miss, false-alarm, plain")
            try:
                rate = float(value)
            except ValueError:
                raise ModelError(f"label noise {text!r}: {key}={value!r} is not a number") from None
            entry = rates[kind]
            if dot:
                if isinstance(entry, float):
                    entry = {p: entry for p in propositions}
                entry[prop] = rate
            else:
                entry = rate if not entry else {p: entry.get(p, rate) for p in propositions}  # type: ignore[union-attr]
            rates[kind] = entry
        if plain is None:
            raise ModelError(f"label noise {text!r}: a detector's rates need its plain letter (plain=...)")
        given = {k: v if isinstance(v, float) else {p: r for p, r in v.items() if p != plain} for k, v in rates.items()}
        return cls.detector(propositions, plain, miss=given["miss"], false_alarm=given["false_alarm"])

    # ------------------------------------------------------------------ queries
    @property
    def n_letters(self) -> int:
        return len(self.propositions)

    def log_confusion(self) -> np.ndarray:
        """``log C`` (−inf where a confusion is impossible)."""
        with np.errstate(divide="ignore"):
            return np.log(self.confusion)

    def flip_rate(self, weights=None) -> float:
        """The share of labels recorded wrong when the true letters occur with ``weights``
        (default: all alike)."""
        w = np.ones(self.n_letters) if weights is None else np.asarray(weights, dtype=np.float64)
        if w.shape != (self.n_letters,) or w.min() < 0 or w.sum() <= 0:
            raise ModelError(f"weights must be {self.n_letters} non-negative numbers, not all 0")
        return float(w @ (1.0 - np.diag(self.confusion)) / w.sum())

    def miss(self, p: str) -> float:
        """The probability that event ``p`` is recorded as another letter."""
        k = self._index(p)
        return float(1.0 - self.confusion[k, k])

    def false_alarm(self, p: str, weights=None) -> float:
        """The probability that a step whose true letter is another is recorded as ``p``, the
        true letters occurring with ``weights`` (default: all alike)."""
        k = self._index(p)
        w = np.ones(self.n_letters) if weights is None else np.asarray(weights, dtype=np.float64)
        w = np.where(np.arange(self.n_letters) == k, 0.0, w)
        if w.sum() <= 0:
            raise ModelError(f"no other letter than {p!r} has a positive weight")
        return float(w @ self.confusion[:, k] / w.sum())

    def _index(self, p: str) -> int:
        if p not in self.propositions:
            raise ModelError(f"{p!r} is not one of the propositions {list(self.propositions)}")
        return self.propositions.index(p)

    def posterior(self, recorded) -> np.ndarray:
        """``(…, K)``: the probability of each true letter given the recorded one(s), the true
        letters alike a priori (``C[:, k]`` normalised; −1 entries give NaN rows)."""
        recorded = np.asarray(recorded)
        col = self.confusion.T[np.maximum(recorded, 0)]
        total = col.sum(axis=-1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            out = np.where(total > 0, col / total, np.nan)
        out[recorded < 0] = np.nan
        return out

    def corrupt(self, labels, *, seed) -> np.ndarray:
        """``labels`` (an integer array of true letters, −1 where none) as the detector records
        them: each entry ``ℓ`` becomes ``k`` with probability ``C[ℓ, k]``, one uniform draw per
        entry (padding included, so the draws do not depend on where the data end)."""
        labels = np.asarray(labels)
        if not np.issubdtype(labels.dtype, np.integer):
            raise ModelError(f"labels must be integer letters, got dtype {labels.dtype}")
        if labels.size and labels.max() >= self.n_letters:
            raise ModelError(f"label {int(labels.max())} is outside the {self.n_letters} letters")
        u = np.random.default_rng(seed).random(labels.shape)
        cdf = np.cumsum(self.confusion, axis=1)
        cdf[:, -1] = 1.0
        live = labels >= 0
        rows = cdf[np.where(live, labels, 0)]  # (..., K)
        drawn = (u[..., None] >= rows).sum(axis=-1)
        drawn = np.minimum(drawn, self.n_letters - 1)
        return np.where(live, drawn, labels).astype(labels.dtype)

    def __str__(self) -> str:
        flips = 1.0 - np.diag(self.confusion)
        if np.allclose(flips, flips[0], atol=ROW_TOL):
            return f"label noise: each label wrong with probability {flips[0]:g}"
        shown = ", ".join(f"{p} {f:g}" for p, f in zip(self.propositions, flips) if f > 0)
        return f"label noise: labels wrong with probability {shown or '0'}"


def plain_letter(mdp) -> str:
    """The letter most states carry (the first of equals): the plain cells' of a map, against
    which a detector's events are seen."""
    counts = np.bincount(np.asarray(mdp.labels), minlength=mdp.n_propositions)
    return str(mdp.propositions[int(np.argmax(counts))])


def _per_event(name: str, value, events: list[str], plain: str) -> dict[str, float]:
    if isinstance(value, Mapping):
        unknown = [p for p in value if p not in events]
        if unknown:
            what = "the plain letter" if unknown[0] == plain else "not a proposition"
            raise ModelError(f"{name} names {unknown[0]!r}, {what}; events are {events}")
        return {p: _rate(f"{name}[{p!r}]", value.get(p, 0.0)) for p in events}
    rate = _rate(name, value)
    return {p: rate for p in events}
