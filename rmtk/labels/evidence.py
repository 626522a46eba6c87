"""What sampled data could resolve, for pairs learned from demonstrations (docs/design/13-learning-labels.md and
docs/design/14-sampled-experts.md): a result from counted data is no proof. Two state histories at a common
state are a negative example when their action distributions differ at level α; every
comparison goes through :mod:`rmtk.negatives.statistics` with the bound of recorded data
(:data:`rmtk.negatives.statistics.FIXED`, the rule :class:`~rmtk.negatives.miners.ConfidenceMiner` applies).

* :class:`SampleEvidence`: how many negative examples the data held, how many (history, state)
  entries were seen often enough to be compared at all, and the resolution of the merges the
  first pair rests on (:func:`rmtk.negatives.statistics.merge_resolution`: the weakest merge, the median,
  the firmest) — stated with every result learned from demonstrations;
* :func:`closest_merges`: the pairs of histories a learned pair puts in one node that came
  closest to being told apart, with the visits each would need (what to record next);
* :class:`AskedEvidence`: the same statement for pairs learned from a sampled expert's answers
  to an active loop, from what its comparisons resolved.
"""

from __future__ import annotations

import attrs
import numpy as np

from ..negatives.miners import ConfidenceMiner, NegativePairs
from ..negatives.statistics import (
    FIXED,
    MergeResolution,
    compare_counts,
    draws_to_resolve,
    merge_resolution,
    total_variation,
)
from ..ptp.tree import PrefixTreePolicy

#: Entries per state, the most visited, among which :func:`closest_merges` looks for pairs.
MOST_VISITED = 30


@attrs.frozen
class SampleEvidence:
    """What sampled data (demonstrations) could resolve, for a result learned from them.

    Attributes:
        negatives: negative examples mined (pairs of state histories whose action
            distributions at a common state differ at level ``alpha``).
        alpha: the level of the test.
        compared: (history, state) entries seen often enough to be compared at all.
        entries: (history, state) entries in the data.
        merges: what the data resolved behind the first pair's merges
            (:class:`~rmtk.negatives.statistics.MergeResolution`; ``None`` without a pair).
    """

    negatives: int
    alpha: float
    compared: int
    entries: int
    merges: MergeResolution | None = None

    def lines(self) -> list[str]:
        """The statement, as text lines (what was resolved, never the wording of a proof)."""
        head = (
            f"from sampled data: {self.negatives} negative example{'s' if self.negatives != 1 else ''} at level "
            f"{self.alpha:g}; {self.compared} of {self.entries} (history, state) entries seen often enough to be "
            "compared"
        )
        if self.negatives == 0:
            head += "; the data held no negative example: nothing the samples show tells two histories apart"
        return [head] + ([f"pair 1: {self.merges}"] if self.merges is not None else [])


@attrs.frozen
class AskedEvidence:
    """What the questions to a sampled expert could resolve, for pairs learned from an active
    loop's answers (:meth:`~rmtk.labels.learner.LabelLearner.fit_questions`): the label-given
    path's statement (:meth:`rmtk.active.result.ActiveResult.resolution`), made of the first pair.

    Attributes:
        negatives: negative examples the answers held (two histories the expert acts
            differently after, at level ``alpha``).
        alpha: the level of the tests.
        comparisons: comparisons of two histories the expert was asked.
        ended: what stopped the questions before the loop stopped by itself (``None``: it did).
        merges: what the comparisons resolved behind the first pair's merges
            (:class:`~rmtk.active.result.Resolved`, or the counts' resolution; ``None``: no pair).
    """

    negatives: int
    alpha: float
    comparisons: int
    ended: str | None = None
    merges: object = None

    def lines(self) -> list[str]:
        """The statement, as text lines (what was resolved, never the wording of a proof)."""
        head = (
            f"from the sampled expert's answers: {self.negatives} negative example{'s' if self.negatives != 1 else ''}"
            f" at level {self.alpha:g}; {self.comparisons:,} comparison{'s' if self.comparisons != 1 else ''} of two "
            "histories asked"
        )
        if self.ended is not None:
            head += f"; the questions stopped early ({self.ended}): more would resolve more"
        if self.negatives == 0:
            head += "; no negative example: nothing the answers show tells two histories apart"
        return [head] + ([f"pair 1: {self.merges}"] if self.merges is not None else [])


def asked_evidence(active, delta: np.ndarray | None) -> AskedEvidence | None:
    """The evidence of an active loop's answers (an :class:`~rmtk.active.result.ActiveResult`; ``None``
    for an exact expert, whose answers prove); ``delta``: the first pair's machine over states."""
    if not active.sampled:
        return None
    negatives = active.result.negatives
    merges = None if delta is None else active.resolution_of(delta)
    return AskedEvidence(
        0 if negatives is None else len(negatives),
        float(active.alpha),
        len(active.compared),
        active.ended if active.flagged else None,
        merges,
    )


def sample_evidence(ptp: PrefixTreePolicy | None, negatives, delta: np.ndarray | None) -> SampleEvidence | None:
    """The evidence of a tree counted from demonstrations (``None`` for an exact policy);
    ``delta``: the first pair's machine over states (``None``: no pair)."""
    if ptp is None or ptp.counts is None:
        return None
    alpha = negatives.alpha if isinstance(negatives, NegativePairs) else ConfidenceMiner().alpha
    n = np.asarray(ptp.counts).sum(axis=1)
    compared = int((n >= ConfidenceMiner(alpha).min_count(ptp.counts.shape[1])).sum())
    found = len(negatives) if isinstance(negatives, NegativePairs) else 0
    merges = None if delta is None else merge_resolution(ptp, delta, alpha=alpha, negatives=found, bound=FIXED)
    return SampleEvidence(found, float(alpha), compared, int(len(n)), merges)


@attrs.frozen
class CloseMerge:
    """Two histories reaching ``state`` that a learned pair puts in one node: their observed
    total variation ``difference`` from ``visits`` each, the ``threshold`` the test at these
    counts needs to call it a difference (the observed one is below it: consistent with no
    difference at all), and the further visits ``needed`` on each side for a difference as
    large as the observed one, were it real, to be detected."""

    history1: tuple[int, ...]
    history2: tuple[int, ...]
    state: int
    difference: float
    visits: tuple[int, int]
    threshold: float
    needed: tuple[int, int]


def closest_merges(ptp: PrefixTreePolicy, D: np.ndarray, alpha: float, limit: int = 5) -> list[CloseMerge]:
    """The pairs of histories (among the :data:`MOST_VISITED` of each state) that the machine
    over states ``D`` sends to one node, the closest to being told apart first: the largest
    margin of the observed difference over the test's threshold (:func:`rmtk.negatives.statistics.evidence`;
    a pair seen a few times has a threshold too large to say anything, so it comes last whatever
    its observed difference)."""
    assert ptp.counts is not None, "evidence of sampled data needs counts"
    counts = np.asarray(ptp.counts, float)
    n = counts.sum(axis=1)
    node = ptp.trie.run(np.asarray(D), 0)[ptp.tree.pair_node]
    state = np.asarray(ptp.tree.pair_state)
    order = np.lexsort((np.arange(len(n)), -n, state))  # per state, the most visited first
    st = state[order]
    starts = np.flatnonzero(np.r_[True, st[1:] != st[:-1]]) if len(st) else np.zeros(0, np.int64)
    ii, jj = [], []
    for lo, hi in zip(starts, np.r_[starts[1:], len(st)]):
        rows = order[lo : min(hi, lo + MOST_VISITED)]
        a, b = np.triu_indices(len(rows), 1)
        same = node[rows[a]] == node[rows[b]]
        ii.append(rows[a][same])
        jj.append(rows[b][same])
    if not ii:
        return []
    i, j = np.concatenate(ii), np.concatenate(jj)
    tv = total_variation(counts[i], counts[j])
    c = compare_counts(n[i], n[j], tv, counts.shape[1], alpha=alpha, bound=FIXED)
    keep = np.flatnonzero(tv > 0)
    best = keep[np.lexsort((keep, -c.margin[keep]))][:limit]  # ties: the order of the states and visits
    m1, m2 = draws_to_resolve(n[i[best]], n[j[best]], tv[best], counts.shape[1], alpha=alpha, bound=FIXED)
    return [
        CloseMerge(
            tuple(ptp.trie.word(int(ptp.tree.pair_node[i[k]]))),
            tuple(ptp.trie.word(int(ptp.tree.pair_node[j[k]]))),
            int(state[i[k]]),
            float(tv[k]),
            (int(n[i[k]]), int(n[j[k]])),
            float(c.threshold[k]),
            (int(a), int(b)) if np.isfinite(a) and np.isfinite(b) else (-1, -1),
        )
        for k, a, b in zip(best, m1, m2)
    ]
