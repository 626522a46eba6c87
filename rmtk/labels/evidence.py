"""What sampled data could resolve, for pairs learned from demonstrations (docs/design.md,
section 13): a result from counted data is no proof. Two state histories at a common state are a
negative example when their action distributions differ with confidence 1 − α (the bound of
:class:`~rmtk.negatives.ConfidenceMiner`: δj = (2^|A| − 2)·exp(−nj ε²/2), δ1 + δ2 ≤ α, ε half
the L1 distance); read backwards, the same bound says the smallest difference n visits could
reveal, and how many visits an observed difference would need to become a negative example.

* :class:`SampleEvidence`: how many negative examples the data held, how many (history, state)
  entries were seen often enough to be compared at all, and the resolution at the best-sampled
  state — stated with every result learned from demonstrations;
* :func:`closest_merges`: the pairs of histories a learned pair puts in one node that came
  closest to being told apart, with the visits each would need (what to record next).
"""

from __future__ import annotations

import attrs
import numpy as np

from ..negatives import ConfidenceMiner, NegativePairs, log_weissman_constant
from ..ptp import PrefixTreePolicy

#: Entries per state, the most visited, among which :func:`closest_merges` looks for pairs.
MOST_VISITED = 30


def _bound(n_actions: int, alpha: float) -> float:
    """``2·(log(2^|A| − 2) + log 2 − log α)``: n·ε² must reach it for two histories seen n times
    each to be told apart by a difference ε."""
    return 2.0 * (log_weissman_constant(n_actions) + np.log(2.0) - np.log(alpha))


@attrs.frozen
class SampleEvidence:
    """What sampled data (demonstrations) could resolve, for a result learned from them.

    Attributes:
        negatives: negative examples mined (pairs of state histories whose action
            distributions at a common state differ with confidence 1 − ``alpha``).
        alpha: the level of the confidence bound.
        compared: (history, state) entries seen often enough to be compared at all.
        entries: (history, state) entries in the data.
        resolution: the smallest difference (half the L1 distance of the two action
            distributions) the bound could reveal between the two most-visited histories of the
            best-sampled state; smaller differences pass for none (``None``: no state had two
            histories seen often enough).
    """

    negatives: int
    alpha: float
    compared: int
    entries: int
    resolution: float | None

    def lines(self) -> list[str]:
        """The statement, as text lines (what was resolved, never the wording of a proof)."""
        head = (
            f"from sampled data: {self.negatives} negative example{'s' if self.negatives != 1 else ''} at confidence "
            f"{1 - self.alpha:g}; {self.compared} of {self.entries} (history, state) entries seen often enough to be "
            "compared"
        )
        if self.negatives == 0:
            head += "; the data held no negative example: nothing the samples show tells two histories apart"
        res = (
            f"the best-sampled histories could reveal a difference of action distributions of {self.resolution:.3g} "
            "or more (half the L1 distance); smaller differences pass for none"
            if self.resolution is not None
            else "no state had two histories seen often enough to reveal any difference"
        )
        return [head, res]


def sample_evidence(ptp: PrefixTreePolicy | None, negatives) -> SampleEvidence | None:
    """The evidence of a tree counted from demonstrations (``None`` for an exact policy)."""
    if ptp is None or ptp.counts is None:
        return None
    alpha = negatives.alpha if isinstance(negatives, NegativePairs) else ConfidenceMiner().alpha
    n = np.asarray(ptp.counts).sum(axis=1)
    A = ptp.counts.shape[1]
    compared = int((n >= ConfidenceMiner(alpha).min_count(A)).sum())
    state = np.asarray(ptp.tree.pair_state)
    order = np.lexsort((-n, state))
    st, nn = state[order], n[order]
    first = np.flatnonzero(np.r_[True, st[1:] != st[:-1]]) if len(st) else np.zeros(0, np.int64)
    second = first + 1
    ok = second < len(st)
    ok[ok] = st[np.minimum(second[ok], len(st) - 1)] == st[first[ok]]
    resolution = None
    if ok.any():  # the two most-visited histories of each state, held to the rarer one's count
        eps = np.sqrt(_bound(A, alpha) / np.maximum(np.minimum(nn[first[ok]], nn[second[ok]]), 1))
        resolution = float(min(1.0, eps.min()))
    found = len(negatives) if isinstance(negatives, NegativePairs) else 0
    return SampleEvidence(found, float(alpha), compared, int(len(n)), resolution)


@attrs.frozen
class CloseMerge:
    """Two histories reaching ``state`` that a learned pair puts in one node, their observed
    difference ``difference`` (half the L1 distance of their empirical action distributions)
    from ``visits`` each, ``radius`` the smallest difference those visits could reveal (the
    observed one is below it: consistent with no difference at all), and the visits each would
    need for the observed difference, were it real, to make them a negative example."""

    history1: tuple[int, ...]
    history2: tuple[int, ...]
    state: int
    difference: float
    visits: tuple[int, int]
    radius: float
    needed: int


def closest_merges(ptp: PrefixTreePolicy, D: np.ndarray, alpha: float, limit: int = 5) -> list[CloseMerge]:
    """The pairs of histories (among the :data:`MOST_VISITED` of each state) that the machine
    over states ``D`` sends to one node, the closest to being told apart first: the largest
    observed difference in units of the radius their visits give (every merge of a pair that
    passes the data is within its radius; a pair seen a few times has a radius too large to say
    anything, so it comes last whatever its observed difference)."""
    assert ptp.counts is not None, "evidence of sampled data needs counts"
    counts = np.asarray(ptp.counts, float)
    n = counts.sum(axis=1)
    phat = counts / np.maximum(n, 1)[:, None]
    node = ptp.trie.run(np.asarray(D), 0)[ptp.tree.pair_node]
    state = np.asarray(ptp.tree.pair_state)
    bound = _bound(counts.shape[1], alpha)
    found: list[tuple[float, int, int]] = []
    order = np.lexsort((-n, state))
    st = state[order]
    starts = np.flatnonzero(np.r_[True, st[1:] != st[:-1]]) if len(st) else np.zeros(0, np.int64)
    for lo, hi in zip(starts, np.r_[starts[1:], len(st)]):
        rows = order[lo : min(hi, lo + MOST_VISITED)]
        if len(rows) < 2:
            continue
        a, b = np.triu_indices(len(rows), 1)
        i, j = rows[a], rows[b]
        same = node[i] == node[j]
        i, j = i[same], j[same]
        eps = 0.5 * np.abs(phat[i] - phat[j]).sum(axis=1)
        ratio = eps / np.sqrt(bound / np.maximum(np.minimum(n[i], n[j]), 1))
        for k in np.lexsort((-np.minimum(n[i], n[j]), -ratio))[:limit]:
            if eps[k] > 0:
                found.append((-float(ratio[k]), int(i[k]), int(j[k])))
    found.sort()  # ties: the order of the states, then of the visits (lexsort above is stable)
    out = []
    for _, i, j in found[:limit]:
        eps = 0.5 * float(np.abs(phat[i] - phat[j]).sum())
        out.append(
            CloseMerge(
                tuple(ptp.trie.word(int(ptp.tree.pair_node[i]))),
                tuple(ptp.trie.word(int(ptp.tree.pair_node[j]))),
                int(state[i]),
                eps,
                (int(n[i]), int(n[j])),
                float(np.sqrt(bound / max(min(n[i], n[j]), 1))),
                int(np.ceil(bound / eps**2)),
            )
        )
    return out
