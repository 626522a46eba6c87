"""What recorded labels say about the letter of each state (docs/design/15-label-noise.md).

In an MDP every state carries one letter (docs/design/02-conventions.md); a detector that errs
records it wrong now and then, each step on its own. The recorded labels of the visits to a
state are therefore repeated, independent evidence on one unknown letter, and
:class:`StateEvidence` counts them, state by state: how often each letter was recorded there
(hard labels) or the sum of the log-probabilities a detector gave each letter (its
probabilities). It is a map over chunks of demonstrations and an addition, so it runs on any
engine (:class:`StateEvidenceJob`).

:func:`posterior` turns the counts into the log-probability of each letter at each state under
a :class:`~rmtk.label_noise.model.LabelNoise` (the letters alike a priori), and
:class:`LabelBeliefs` reads it: each state's most likely letter, and whether the data decide it
beyond doubt (its rival at most ``doubt`` times as likely) or leave the choice to the learner,
which weighs the machine's evidence against the labels' (rmtk/label_noise/encoding.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs
import numpy as np

from .._arrays import array_eq, float_array, int_array
from ..data import Demonstrations
from ..data.csv_io import DETECTION_PREFIX
from ..engines.local import Engine, as_engine
from ..errors import DataError, ModelError
from ..progress import Progress, as_progress
from .model import LabelNoise

#: A detector's probability is clipped to at least this before its log is taken (a step the
#: detector calls impossible stays merely very unlikely: one such step cannot veto a state's
#: letter against all its other visits).
PROBABILITY_FLOOR = 1e-9

#: The default ``doubt``: a state's letter is decided when no rival is more than this likely
#: relative to it (a likelihood ratio of 10⁶, about 13.8 nats).
DOUBT = 1e-6


@attrs.frozen
class StateEvidence:
    """The recorded labels of the data, state by state.

    Attributes:
        counts: ``(S, K)`` how often state ``s`` was recorded as letter ``k`` (with
            detections: the letter the detector found most likely, the first of equals).
        log_detections: ``(S, K)`` with detections, the sum over the visits of ``log q_t(k)``
            (the step's probabilities normalised over the letters, clipped at
            :data:`PROBABILITY_FLOOR`); ``None`` for hard labels.
        n_trajectories: trajectories counted.
    """

    counts: np.ndarray = attrs.field(converter=int_array, eq=array_eq, repr=False)
    log_detections: np.ndarray | None = attrs.field(
        default=None,
        converter=attrs.converters.optional(float_array),
        eq=attrs.cmp_using(eq=np.array_equal),
        repr=False,
    )
    n_trajectories: int = 0

    @property
    def visits(self) -> np.ndarray:
        """``(S,)`` steps counted at each state."""
        return self.counts.sum(axis=1)

    @property
    def n_steps(self) -> int:
        return int(self.counts.sum())

    @property
    def detected(self) -> bool:
        """Whether the evidence is a detector's probabilities rather than hard labels."""
        return self.log_detections is not None

    def __add__(self, other: StateEvidence) -> StateEvidence:
        if self.counts.shape != other.counts.shape or self.detected != other.detected:
            raise DataError("cannot add the label evidence of different MDPs (or of labels and detections)")
        logs = None if self.log_detections is None else self.log_detections + other.log_detections
        return StateEvidence(self.counts + other.counts, logs, self.n_trajectories + other.n_trajectories)


def step_letters(demos: Demonstrations, n_letters: int) -> tuple[np.ndarray, np.ndarray | None]:
    """The recorded letter of every step (``(N, T)``, −1 outside the trajectories) and, with
    detections, each step's normalised log-probabilities (``(N, T, K)``)."""
    inside = demos.mask()
    if demos.detections is not None:
        q = np.asarray(demos.detections, dtype=np.float64)
        if q.shape[2] != n_letters:
            raise DataError(f"detections have {q.shape[2]} columns for {n_letters} propositions")
        q = np.where(inside[:, :, None], q, 1.0)
        total = q.sum(axis=2, keepdims=True)
        q = np.where(total > 0, q / np.where(total > 0, total, 1.0), 1.0 / n_letters)
        logs = np.log(np.maximum(q, PROBABILITY_FLOOR))
        letters = np.where(inside, np.argmax(q, axis=2), -1)  # integers of one step: no tie by noise
        return letters, logs
    if demos.labels is None:
        raise DataError(
            "the demonstrations carry no recorded labels (load them with labels='keep', or give a detector's "
            "probabilities as detections)"
        )
    letters = np.where(inside, demos.labels, -1)
    if letters.max(initial=-1) >= n_letters:
        i, t = np.argwhere(letters >= n_letters)[0]
        raise DataError(f"trajectory {i}, step {t}: recorded label {letters[i, t]} is not one of {n_letters} letters")
    return letters, None


def recorded_by(noise: LabelNoise, demos: Demonstrations, mdp, *, seed) -> Demonstrations:
    """``demos`` with the labels a detector with ``noise`` records along them (the MDP's labels,
    each drawn through ``noise``, ``seed`` deciding; −1 after each end)."""
    inside = demos.mask()
    true = np.where(inside, np.asarray(mdp.labels)[np.where(inside, demos.states, 0)], -1)
    return attrs.evolve(demos, labels=noise.corrupt(true, seed=seed))


@attrs.frozen
class StateEvidenceJob:
    """The map: the :class:`StateEvidence` of one chunk of demonstrations, or of one partition of
    a Parquet ``dataset`` read with its recorded labels on ``mdp`` (picklable, so any engine
    runs it)."""

    n_states: int
    n_letters: int
    dataset: Any = None
    mdp: Any = attrs.field(default=None, eq=False, repr=False)
    chunk: int = 250_000

    def __call__(self, item) -> StateEvidence:
        if self.dataset is None:
            return self.count(item)
        data = self.dataset.read(item, self.mdp)
        S, K = self.n_states, self.n_letters
        detected = any(c.startswith(DETECTION_PREFIX) for c in self.dataset.columns)
        out = StateEvidence(np.zeros((S, K), np.int64), np.zeros((S, K)) if detected else None, 0)
        for lo in range(0, data.n_trajectories, self.chunk):
            out = out + self.count(data.demonstrations(self.mdp, lo, lo + self.chunk))
        return out

    def count(self, demos: Demonstrations) -> StateEvidence:
        S, K = self.n_states, self.n_letters
        letters, logs = step_letters(demos, K)
        inside = letters >= 0
        s = demos.states[inside].astype(np.int64)
        if s.size and s.max() >= S:
            raise DataError(f"state index {int(s.max())} is outside the MDP's {S} states")
        counts = np.bincount(s * K + letters[inside], minlength=S * K).reshape(S, K)
        total = None
        if logs is not None:
            total = np.stack([np.bincount(s, weights=logs[inside][:, k], minlength=S) for k in range(K)], axis=1)
        return StateEvidence(counts, total, demos.n_trajectories)


def count_evidence(
    mdp,
    data: Demonstrations | Iterable[Demonstrations] | Any,
    *,
    chunk: int = 250_000,
    engine: str | Engine = "local",
    progress: Progress | None = None,
) -> StateEvidence:
    """The :class:`StateEvidence` of ``data`` (demonstrations with recorded labels or
    detections, a stream of such chunks, or a :class:`~rmtk.data.parquet_dataset.ParquetDataset`
    read partition by partition) on ``mdp``'s states, counted on ``engine``."""
    from ..data.parquet_dataset import ParquetDataset

    job = StateEvidenceJob(mdp.n_states, mdp.n_propositions)
    progress = as_progress(progress)
    if isinstance(data, ParquetDataset):
        dataset = data.reading("keep")
        return as_engine(engine).map_reduce(
            attrs.evolve(job, dataset=dataset, mdp=mdp, chunk=chunk),
            dataset.partitions,
            reduce=lambda a, b: a + b,
            total=len(dataset.partitions),
            what="partitions read for their labels",
            progress=progress,
        )
    chunks: Any = data.chunks(chunk) if isinstance(data, Demonstrations) else data
    total = data.n_trajectories if isinstance(data, Demonstrations) else None
    return as_engine(engine).map_reduce(
        job,
        chunks,
        reduce=lambda a, b: a + b,
        sizes=lambda c: c.n_trajectories,
        total=total,
        what="trajectories read for their labels",
        progress=progress,
    )


def posterior(evidence: StateEvidence, noise: LabelNoise | None) -> np.ndarray:
    """``(S, K)``: the log-probability (up to a constant per state) that state ``s`` carries
    letter ``ℓ``, the letters alike a priori: ``Σ_k counts[s, k]·log C[ℓ, k]`` for hard labels
    under ``noise``; the summed log-probabilities for a detector's (``noise`` unused). Rows of
    states never visited are 0 (no evidence)."""
    if evidence.log_detections is not None:
        return np.array(evidence.log_detections, dtype=np.float64)
    if noise is None:
        raise ModelError("hard labels need a noise model to be weighed (LabelNoise, given or estimated)")
    logc = noise.log_confusion()  # (true ℓ, recorded k)
    c = evidence.counts.astype(np.float64)
    finite = np.where(np.isfinite(logc), logc, 0.0)
    out = c @ finite.T  # (S, ℓ)
    impossible = (c > 0).astype(np.float64) @ (~np.isfinite(logc)).T.astype(np.float64) > 0
    out[impossible] = -np.inf
    dead = np.flatnonzero(np.all(impossible, axis=1) & (c.sum(axis=1) > 0))
    if dead.size:
        s = int(dead[0])
        seen = [noise.propositions[k] for k in np.flatnonzero(c[s])]
        raise DataError(
            f"state {s}: recorded as {', '.join(seen)}, which no letter explains under the stated noise "
            f"({noise}); state a noise that allows these confusions"
        )
    return out


@attrs.frozen
class LabelBeliefs:
    """Each state's letter as the recorded labels say it: the most likely letter and whether the
    data decide it (``doubt``: the largest likelihood ratio of a rival that still leaves it
    undecided).

    Attributes:
        log_post: ``(S, K)`` log-probabilities up to a constant per state (:func:`posterior`).
        visits: ``(S,)`` steps counted at each state.
        letter: ``(S,)`` the most likely letter (the first of equals, within rmtk.ties's
            tolerance); for a state never visited, ``fallback``'s.
        doubtful: ``(S,)`` visited states whose letter some rival makes doubtful.
        doubt: the likelihood ratio below which a rival is ruled out.
    """

    log_post: np.ndarray = attrs.field(converter=float_array, eq=array_eq, repr=False)
    visits: np.ndarray = attrs.field(converter=int_array, eq=array_eq, repr=False)
    letter: np.ndarray = attrs.field(converter=int_array, eq=array_eq, repr=False)
    doubtful: np.ndarray = attrs.field(eq=array_eq, repr=False)
    doubt: float = DOUBT

    @classmethod
    def of(
        cls, evidence: StateEvidence, noise: LabelNoise | None, *, doubt: float = DOUBT, fallback=None
    ) -> LabelBeliefs:
        """The beliefs of ``evidence`` under ``noise``; ``fallback``: the letters of states no step
        visits (default 0: they take no part in any word)."""
        from .. import ties

        if not 0 < doubt < 1:
            raise ModelError(f"doubt must lie in (0, 1), got {doubt!r}")
        lp = posterior(evidence, noise)
        visits = evidence.visits
        S = lp.shape[0]
        safe = np.where(np.isfinite(lp), lp, -1e300)
        letter = ties.argbest(safe, axis=1)
        fallback = np.zeros(S, np.int64) if fallback is None else np.asarray(fallback, np.int64)
        letter = np.where(visits > 0, letter, fallback)
        best = np.take_along_axis(lp, letter[:, None], axis=1)
        rival = np.where(np.arange(lp.shape[1])[None, :] == letter[:, None], -np.inf, lp).max(axis=1)
        doubtful = (visits > 0) & (best[:, 0] - rival < -np.log(doubt))
        doubtful.setflags(write=False)
        return cls(lp, visits, letter, doubtful, doubt)

    @property
    def n_states(self) -> int:
        return len(self.letter)

    @property
    def n_doubtful(self) -> int:
        return int(self.doubtful.sum())

    def candidates(self, s: int) -> np.ndarray:
        """The letters state ``s`` may carry: those at most ``1/doubt`` times less likely than
        its most likely one, most likely first (then by index)."""
        lp = self.log_post[s]
        best = lp[self.letter[s]]
        keep = np.flatnonzero(np.isfinite(lp) & (best - lp < -np.log(self.doubt)))
        return keep[np.lexsort((keep, -(lp[keep] - best)))]

    def costs(self, s: int) -> np.ndarray:
        """Per letter of :meth:`candidates`: how much less likely it makes the data than the most
        likely letter, in nats (0 for that one)."""
        lp = self.log_post[s]
        return lp[self.letter[s]] - lp[self.candidates(s)]
