"""Reward traces as evidence (docs/design/rewards-evidence.md): what the world paid along
label words, beside the negative examples of the expert's policy (rmtk/negatives.py).

A *reward trace* is a label word ``L(s_0) … L(s_T)`` and the rewards the steps earned: the
reward of step ``t`` is what its action earned, paid by the machine on the label of the next
state (docs/design.md, "The prefix convention"): ``r_t = δ_r(u_t, L(s_{t+1}))`` with
``u_t = δ*(u_I, L(s_0) … L(s_t))``. So each step is one *observation*: "the word so far,
followed by the letter ``L(s_{t+1})``, pays ``r_t``", a constraint on where the word ends
(the run variables of the SAT encoding) and on that node's reward on that letter. The last
step's reward is used only where the next label is known; NaN marks a reward not recorded.

* :class:`RewardTraces`: the traces (letters and rewards, padded);
* :class:`RewardObservations`: the observations on a trie, grouped by (trie node, letter,
  reward value) with their counts — what the encoder's clause family
  :func:`rmtk.sat.encoding.reward_outputs` (exact) or
  :func:`rmtk.sat.encoding.soft_reward_outputs` (noisy) consumes;
* :class:`RewardEvidence`: the strategy protocol (``observe(trie, n_letters)``), and
  :class:`TraceRewards`, rmtk's strategy reading traces;
* :func:`decode_rewards`: a machine's rewards from its runs (the observed values, by
  majority under noise), which rewards are free (no trace observes them), and the
  disagreements (the noisy steps);
* :func:`noise_interval`: the noise level and its Clopper-Pearson interval.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import attrs
import numpy as np

from . import ties
from ._arrays import array_eq, float_array, frozen_array, int_array
from .errors import DataError, ModelError
from .ptp import Trie, TrieBuilder

PAD = -1


@attrs.frozen
class RewardTraces:
    """``N`` reward traces: ``letters[i, t]`` the proposition index of ``L(s_t)`` (−1 after the
    trace's length) and ``rewards[i, t]`` the reward of step ``t``, earned on reading
    ``letters[i, t + 1]`` (NaN: not recorded; always NaN at the last step of a trace)."""

    letters: np.ndarray = attrs.field(converter=frozen_array(np.int64), eq=array_eq, repr=False)
    rewards: np.ndarray = attrs.field(converter=float_array, eq=array_eq, repr=False)
    lengths: np.ndarray = attrs.field(converter=int_array, eq=array_eq, repr=False)

    def __attrs_post_init__(self) -> None:
        if self.letters.ndim != 2 or self.rewards.shape != self.letters.shape:
            raise DataError(
                f"reward traces need letters and rewards of one (traces, steps) shape, got {self.letters.shape} "
                f"and {self.rewards.shape}"
            )
        N, T = self.letters.shape
        if self.lengths.shape != (N,) or np.any((self.lengths < 1) | (self.lengths > T)):
            raise DataError(f"reward traces: {N} lengths between 1 and {T} expected, got {self.lengths.tolist()[:5]}")
        inside = np.arange(T)[None, :] < self.lengths[:, None]
        bad = np.argwhere(inside & (self.letters < 0))
        if bad.size:
            i, t = bad[0]
            raise DataError(f"reward trace {i}, step {t}: missing letter (negative index {self.letters[i, t]})")
        paid = np.arange(T)[None, :] < self.lengths[:, None] - 1
        bad = np.argwhere(~paid & ~np.isnan(self.rewards))
        if bad.size:
            i, t = bad[0]
            raise DataError(
                f"reward trace {i}, step {t}: a reward at or after the trace's last step (length "
                f"{self.lengths[i]}): no next label pays it"
            )
        bad = np.argwhere(np.isinf(self.rewards))
        if bad.size:
            i, t = bad[0]
            raise DataError(f"reward trace {i}, step {t}: reward {self.rewards[i, t]} is not a finite number")

    @classmethod
    def from_lists(cls, words, rewards) -> RewardTraces:
        """From per-trace lists: ``words[i]`` the letters (proposition indices) and
        ``rewards[i]`` one reward per step but the last (or per step, the last NaN)."""
        words, rewards = list(words), list(rewards)
        if len(words) != len(rewards) or not words:
            raise DataError(f"reward traces: {len(words)} words and {len(rewards)} reward lists (one each, ≥ 1)")
        T = max(len(w) for w in words)
        letters = np.full((len(words), T), PAD, dtype=np.int64)
        paid = np.full((len(words), T), np.nan)
        for i, (w, r) in enumerate(zip(words, rewards)):
            r = np.asarray(r, dtype=float)
            if len(r) == len(w) and len(w) and np.isnan(r[-1]):
                r = r[:-1]
            if len(r) != len(w) - 1:
                raise DataError(f"reward trace {i}: {len(w)} letters need {len(w) - 1} rewards, got {len(r)}")
            letters[i, : len(w)] = w
            paid[i, : len(r)] = r
        return cls(letters, paid, [len(w) for w in words])

    @property
    def n_traces(self) -> int:
        return len(self.lengths)

    @property
    def n_observed(self) -> int:
        """Steps whose reward was recorded."""
        return int((~np.isnan(self.rewards)).sum())

    def __getitem__(self, index) -> RewardTraces:
        idx = np.arange(self.n_traces)[index]
        idx = np.atleast_1d(idx)
        return RewardTraces(self.letters[idx], self.rewards[idx], self.lengths[idx])


@attrs.frozen
class RewardObservations:
    """Reward observations on a trie, one row per distinct (trie node, letter, reward value):
    the word of ``node[j]`` followed by ``letter[j]`` paid ``values[value[j]]``, ``count[j]``
    times. ``values`` are the distinct rewards, ascending (rewards within the tolerance of
    rmtk/ties.py are one value, the smallest of them)."""

    node: np.ndarray = attrs.field(converter=int_array, eq=array_eq)
    letter: np.ndarray = attrs.field(converter=int_array, eq=array_eq)
    value: np.ndarray = attrs.field(converter=int_array, eq=array_eq)
    count: np.ndarray = attrs.field(converter=int_array, eq=array_eq)
    values: np.ndarray = attrs.field(converter=float_array, eq=array_eq)

    def __len__(self) -> int:
        return len(self.node)

    @property
    def n_steps(self) -> int:
        """Observed steps (the sum of the counts)."""
        return int(self.count.sum())

    @property
    def n_values(self) -> int:
        return len(self.values)


def _value_classes(rewards: np.ndarray, tol: float) -> tuple[np.ndarray, np.ndarray]:
    """The class of each reward and the class values (the smallest member), ascending."""
    if not len(rewards):
        return np.empty(0, np.int64), np.empty(0)
    rank = ties.ranks(rewards, tol)
    values = np.full(int(rank.max()) + 1, np.inf)
    np.minimum.at(values, rank, rewards)
    return rank, values


def observe(
    traces: RewardTraces, n_letters: int, trie: Trie | None = None, *, compress: bool = True, tol: float = ties.TOL
) -> tuple[Trie, RewardObservations]:
    """The trie of the traces' words (``trie`` extended by them, its node ids kept; a new one
    when ``None``) and the traces' reward observations on it. With ``compress`` a repeated
    letter does not grow the word (non-stuttering, docs/design.md section 2): its reward is the
    node's own on that letter, the observation is kept all the same."""
    if traces.letters.size and int(traces.letters.max()) >= n_letters:
        i, t = np.argwhere(traces.letters >= n_letters)[0]
        raise DataError(f"reward trace {i}, step {t}: letter {traces.letters[i, t]} outside the {n_letters} letters")
    if trie is not None and trie.compressed != compress:
        raise ModelError(f"reward traces observed with compress={compress} on a trie with compressed={trie.compressed}")
    builder = TrieBuilder(n_letters) if trie is None else TrieBuilder.from_trie(trie, n_letters)
    N, T = traces.letters.shape
    node = np.zeros(N, np.int64)
    first = np.flatnonzero(traces.lengths > 1)  # a word is added only where a later step observes it
    node[first] = builder.children(node[first], traces.letters[first, 0])
    qs, ks, rs = [], [], []
    for t in range(1, T):
        live = np.flatnonzero(traces.lengths > t)
        if not len(live):
            break
        k = traces.letters[live, t]
        r = traces.rewards[live, t - 1]
        seen = ~np.isnan(r)
        qs.append(node[live[seen]])
        ks.append(k[seen])
        rs.append(r[seen])
        grow = traces.lengths[live] > t + 1  # the last letter's node observes nothing: its target stays free
        if compress:
            grow &= k != traces.letters[live, t - 1]
        if grow.any():
            node[live[grow]] = builder.children(node[live[grow]], k[grow])
    q = np.concatenate(qs) if qs else np.empty(0, np.int64)
    k = np.concatenate(ks) if ks else np.empty(0, np.int64)
    r = np.concatenate(rs) if rs else np.empty(0)
    v, values = _value_classes(r, tol)
    R = max(len(values), 1)
    key = (q * n_letters + k) * R + v
    uniq, count = np.unique(key, return_counts=True)
    obs = RewardObservations(uniq // R // n_letters, uniq // R % n_letters, uniq % R, count, values)
    return builder.trie(compress), obs


@runtime_checkable
class RewardEvidence(Protocol):
    """The RewardEvidence strategy (docs/design/rewards-evidence.md): what the world paid,
    as reward observations on a trie. Consumes a trie (the prefix tree policy's, or ``None``
    for rewards alone) and the number of letters; produces the trie extended by the words
    it observes and the :class:`RewardObservations` on it."""

    def observe(self, trie: Trie | None, n_letters: int, *, compress: bool = True) -> tuple[Trie, RewardObservations]:
        """The (extended) trie and the reward observations on it."""


@attrs.frozen
class TraceRewards:
    """Reward observations read from :class:`RewardTraces` (rewards compared with ``tol``)."""

    traces: RewardTraces = attrs.field(validator=attrs.validators.instance_of(RewardTraces))
    tol: float = ties.TOL

    def observe(self, trie: Trie | None, n_letters: int, *, compress: bool = True) -> tuple[Trie, RewardObservations]:
        return observe(self.traces, n_letters, trie, compress=compress, tol=self.tol)


@attrs.frozen
class DecodedRewards:
    """A machine's rewards read from the observations along its runs.

    Attributes:
        delta_r: ``(n, K)`` the observed reward of each (node, letter); 0 where free.
        observed: ``(n, K)`` which rewards some observation fixes (the others are free).
        disagreements: observed steps whose reward differs from ``delta_r`` (0 for exact
            traces; under noise, the steps the machine calls noisy).
        steps: observed steps in all.
    """

    delta_r: np.ndarray = attrs.field(converter=float_array, eq=array_eq)
    observed: np.ndarray = attrs.field(converter=frozen_array(bool), eq=array_eq)
    disagreements: int
    steps: int

    @property
    def free(self) -> list[tuple[int, int]]:
        """The (node, letter) rewards no observation fixes."""
        return [tuple(map(int, ik)) for ik in np.argwhere(~self.observed)]


def decode_rewards(delta_u: np.ndarray, trie: Trie, obs: RewardObservations, initial: int = 0) -> DecodedRewards:
    """The rewards of the machine ``delta_u`` given the observations: each (node, letter)
    pays the value observed most often there (equal counts: the smallest value, the order of
    ``obs.values``), which the exact clauses make the only one and the MaxSAT optimum the
    majority."""
    n, K = delta_u.shape
    R = max(obs.n_values, 1)
    at = trie.run(delta_u, initial)[obs.node]
    table = np.zeros((n, K, R), np.int64)
    np.add.at(table, (at, obs.letter, obs.value), obs.count)
    seen = table.sum(axis=2)
    best = np.argmax(table, axis=2)  # the first of equal counts: the smallest value
    delta_r = np.where(seen > 0, obs.values[best] if obs.n_values else 0.0, 0.0)
    agree = int(np.take_along_axis(table, best[..., None], axis=2).sum())
    return DecodedRewards(delta_r, seen > 0, obs.n_steps - agree, obs.n_steps)


@attrs.frozen
class NoiseEstimate:
    """The noise level of reward traces: the share of observed steps whose reward differs
    from the learned machine's, with a two-sided Clopper-Pearson interval at ``confidence``.
    It counts the steps the optimum calls noisy, so a noisy reward that agrees with another
    value the machine could pay (a value replaced by itself, or a majority of noise on a rarely
    observed transition) goes unseen: the estimate leans low on sparse data."""

    disagreements: int
    steps: int
    low: float
    high: float
    confidence: float = 0.95

    @property
    def rate(self) -> float:
        return self.disagreements / self.steps if self.steps else 0.0

    def __str__(self) -> str:
        pct = round(100 * self.confidence)
        return (
            f"noise {self.rate:.4f} ({self.disagreements} of {self.steps} observed steps disagree; "
            f"{pct}% interval {self.low:.4f} to {self.high:.4f})"
        )


def noise_interval(disagreements: int, steps: int, confidence: float = 0.95) -> NoiseEstimate:
    """The :class:`NoiseEstimate` of ``disagreements`` among ``steps`` (Clopper-Pearson)."""
    from scipy.stats import beta

    if not 0 < confidence < 1:
        raise ModelError(f"confidence must lie in (0, 1), got {confidence}")
    a = 1 - confidence
    k, m = int(disagreements), int(steps)
    low = 0.0 if k == 0 else float(beta.ppf(a / 2, k, m - k + 1))
    high = 1.0 if k >= m else float(beta.ppf(1 - a / 2, k + 1, m - k))
    return NoiseEstimate(k, m, low, high, confidence)
