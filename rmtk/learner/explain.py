"""What would separate the machines that survive learning (docs/design/09-beyond-the-paper.md).

When several machines fit the data, each pair differs somewhere: a state and two label words
reaching it that one machine sends to the same node and the other to different nodes
(:func:`rmtk.machine.equivalence.distinguish`). Observing whether the expert acts the same after both
words there refutes the machines that merge them whenever it does not. :func:`cover` picks a
small set of such witnesses (greedy set cover over the pairs of machines) that tells every
pair apart that can be told apart.

From demonstrations, some (word, state) pairs the surviving machines disagree on were seen,
but too rarely for the confidence bound (paper eq. 18-19) to make them a negative example.
:func:`rare_pairs` lists them with the visits each word would need if the empirical
distributions stayed as they are, and what that means in trajectories of the same kind.
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from .. import ties
from ..errors import RmtkError
from ..machine.equivalence import Witness, distinguish
from ..mdp.model import LabeledMDP
from ..mdp.space import Space
from ..negatives.miners import log_weissman_constant
from ..negatives.statistics import FIXED, compare_counts, draws_to_resolve, growth_to_resolve
from ..ptp.tree import disagreements


@attrs.frozen
class CoverWitness:
    """A witness and how every surviving machine reads it: ``merging`` machines send both words
    to one node, ``splitting`` ones to two (indices into the result's machines, 0-based).
    ``expert``: when the truth is known, whether the expert acts ``"differently"`` after the
    two words there (then the merging machines are refuted) or ``"alike"`` (nothing is)."""

    witness: Witness
    merging: tuple[int, ...]
    splitting: tuple[int, ...]
    expert: str | None = None

    def __str__(self) -> str:
        w = self.witness
        text = (
            f"at state {w.state}, after {' '.join(w.word1)} vs after {' '.join(w.word2)}: "
            f"{_count(self.merging)} merge ({_list(self.merging)}), "
            f"{_count(self.splitting)} split ({_list(self.splitting)})"
        )
        if self.expert == "differently":
            text += "; the expert acts differently there: the merging machines are refuted"
        elif self.expert == "alike":
            text += "; the expert acts alike there: observing it refutes none"
        return text


def _count(ix) -> str:
    return f"{len(ix)} machine{'s' if len(ix) != 1 else ''}"


def _list(ix, most: int = 12) -> str:
    shown = " ".join(f"#{i + 1}" for i in ix[:most])
    return shown + (f" and {len(ix) - most} more" if len(ix) > most else "")


@attrs.frozen
class Cover:
    """Witnesses that together tell the surviving machines apart; ``alike`` lists the pairs of
    machines (indices) no witness separates (they split the words the same way everywhere, or
    in all the data when witnesses come from demonstrations)."""

    witnesses: tuple[CoverWitness, ...]
    alike: tuple[tuple[int, int], ...]
    machines: int
    source: str = "model"

    def __str__(self) -> str:
        if self.machines < 2:
            return "one machine fits: nothing to separate" if self.machines else "no machine: nothing to separate"
        where = "the MDP" if self.source == "model" else "the demonstrations"
        if not self.witnesses:
            return (
                f"no witness from {where} separates any two of the {self.machines} machines: each pair "
                "splits the words reaching every state the same way, so no observation of the expert can "
                f"tell them apart ({_pairs(self.alike)})"
            )
        lines = [
            f"{len(self.witnesses)} witness(es) from {where} separate the {self.machines} machines "
            "(#i: the i-th machine printed); where the expert acts differently after the two words, "
            "every machine that merges them is refuted:"
        ]
        lines += [f"  {i + 1}. {w}" for i, w in enumerate(self.witnesses)]
        if self.alike:
            lines.append(
                f"  {len(self.alike)} pair(s) of machines are not separated by any witness: " + _pairs(self.alike)
            )
        return "\n".join(lines)


def _pairs(pairs, most: int = 10) -> str:
    return ", ".join(f"#{a + 1}~#{b + 1}" for a, b in pairs[:most]) + (" ..." if len(pairs) > most else "")


def _final(delta: np.ndarray, word: list[int], initial: int = 0) -> int:
    u = initial
    for k in word:
        u = int(delta[u, k])
    return u


def separated(split: np.ndarray, open_pairs: np.ndarray) -> np.ndarray:
    """For a ``(k, C)`` boolean matrix (machine splits candidate c) and a ``(k, k)`` matrix of
    open pairs, the number of open pairs each candidate separates (one machine merges, the
    other splits): sᵀO(1−s) + (1−s)ᵀOs per column."""
    S = split.astype(float)
    O = np.triu(open_pairs, 1).astype(float)
    O = O + O.T
    M = O @ S
    return np.rint(((1 - S) * M + S * (O.sum(axis=1)[:, None] - M)).sum(axis=0) / 2).astype(np.int64)


def _greedy(split: np.ndarray, open_pairs: np.ndarray, lengths: np.ndarray) -> list[int]:
    """Greedy set cover: candidates (columns of ``split``) in the order they are picked, each
    separating the most open pairs (ties: the shortest)."""
    chosen = []
    while open_pairs.any():
        gain = separated(split, open_pairs)
        best = int(np.lexsort((lengths, -gain))[0])
        if gain[best] == 0:
            break
        chosen.append(best)
        s = split[:, best]
        open_pairs = open_pairs & (s[:, None] == s[None, :])
    return chosen


def cover(mdp, deltas: list[np.ndarray], names: list[str] | None = None, *, ptp=None, truth=None) -> Cover:
    """A small set of witnesses telling apart every pair of the machines ``deltas`` (``(n, K)``
    arrays over the MDP's propositions) that can be told apart (greedy set cover).

    With a :class:`LabeledMDP` the witnesses are shortest ones on the synchronised product (the
    witnesses of the pairs still open are the candidates); without a transition model (an
    environment known only through its data) they are the (word, word, state) triples of the
    empirical prefix tree policy ``ptp``. ``truth = (true_delta, classes, initial)`` says for
    each witness whether the expert acts alike after both words."""
    k = len(deltas)
    names = list(names) if names is not None else [f"machine {i + 1}" for i in range(k)]
    if not isinstance(mdp, LabeledMDP):
        if ptp is None:
            raise ValueError("witnesses without a transition model come from the data: pass the prefix tree policy")
        return _cover_from_data(mdp, deltas, ptp)
    index = {p: i for i, p in enumerate(mdp.propositions)}
    open_pairs = np.triu(np.ones((k, k), dtype=bool), 1)
    alike: list[tuple[int, int]] = []
    witnesses: list[Witness] = []
    splits: list[np.ndarray] = []
    refutes: list[bool] = []
    tried = np.zeros((k, k), dtype=bool)
    chosen: list[int] = []
    while open_pairs.any():
        fresh = False
        for i in range(k):  # the shortest witness of the first untried open pair of every machine
            js = np.flatnonzero(open_pairs[i] & ~tried[i])
            if not len(js):
                continue
            j = int(js[0])
            tried[i, j] = fresh = True
            found = distinguish(mdp, deltas[i], deltas[j], names=(names[i], names[j]), both=True)
            if not found:
                alike.append((i, j))
                open_pairs[i, j] = False
            for w in found:  # one witness per direction (which of the two merges)
                a, b = [index[x] for x in w.word1], [index[x] for x in w.word2]
                witnesses.append(w)
                splits.append(np.array([_final(d, a) != _final(d, b) for d in deltas]))
                refutes.append(truth is not None and _expert(w, mdp, truth) == "differently")
        if not witnesses:  # every pair tried so far is inseparable: try the open ones left
            if fresh:
                continue
            break
        split = np.stack(splits, axis=1)
        gain = separated(split, open_pairs)
        # most pairs separated; then witnesses where the known expert acts differently; then the shortest
        best = int(np.lexsort((np.array([w.length for w in witnesses]), ~np.array(refutes), -gain))[0])
        if gain[best] == 0:
            if not fresh:
                break
            continue
        chosen.append(best)
        s = split[:, best]
        open_pairs &= s[:, None] == s[None, :]
    out = tuple(_cover_witness(witnesses[c], splits[c], mdp, truth) for c in chosen)
    return Cover(out, tuple(sorted(alike)), k)


def _expert(w: Witness, mdp, truth) -> str:
    """How the known expert acts after the witness's two words: ``"alike"`` or ``"differently"``."""
    true_delta, classes, initial = truth
    index = {p: i for i, p in enumerate(mdp.propositions)}
    s = mdp.states.index(w.state)
    u1 = _final(true_delta, [index[x] for x in w.word1], initial)
    u2 = _final(true_delta, [index[x] for x in w.word2], initial)
    return "alike" if classes[s, u1] == classes[s, u2] else "differently"


def _cover_witness(w: Witness, split: np.ndarray, mdp, truth) -> CoverWitness:
    expert = None if truth is None else _expert(w, mdp, truth)
    return CoverWitness(w, tuple(np.flatnonzero(~split).tolist()), tuple(np.flatnonzero(split).tolist()), expert)


def _state_groups(ptp, deltas: list[np.ndarray], *, merged: bool = False):
    """Per state, the pair-of-(word, state) indices ``(p, q)`` of the prefix tree policy at it
    that the machines disagree on (some merge the two words, some split them), with the
    ``(k, m)`` matrix of which machines split them; with ``merged``, those that some machine
    merges instead (with one machine: the pairs it merges)."""
    trie, node, state = ptp.trie, np.asarray(ptp.tree.pair_node), np.asarray(ptp.tree.pair_state)
    finals = np.stack([trie.run(d, 0) for d in deltas])[:, node]  # (machines, pairs)
    order = np.argsort(state, kind="stable")
    for idx in np.split(order, np.flatnonzero(np.diff(state[order])) + 1):
        if len(idx) < 2:
            continue
        a, b = np.triu_indices(len(idx), 1)
        i, j = idx[a], idx[b]
        split = finals[:, i] != finals[:, j]
        n_split = split.sum(axis=0)
        keep = (n_split < len(deltas)) & (merged | (n_split > 0))
        yield i[keep], j[keep], split[:, keep]


def _word_names(space, trie, p) -> tuple[str, ...]:
    names = getattr(space, "propositions", None)
    return tuple(names[k] if names is not None else str(k) for k in trie.word(int(p)))


def _state_name(space, s: int) -> str:
    states = getattr(space, "states", None)
    return str(states[s]) if states is not None else str(s)


def _cover_from_data(space, deltas, ptp, most: int = 20_000) -> Cover:
    k = len(deltas)
    node, state = np.asarray(ptp.tree.pair_node), np.asarray(ptp.tree.pair_state)
    d = disagreements(
        ptp.trie, node, state, ptp.trie.length[node], deltas
    )  # the shortest word stands for its signature
    p, q, which = d.i, d.j, d.which
    if len(p) > most:  # the best-supported candidates: the most visited pairs
        n = np.asarray(ptp.counts).sum(axis=1)
        keep = np.argsort(-np.minimum(n[p], n[q]), kind="stable")[:most]
        p, q, which = p[keep], q[keep], which[keep]
    split = d.splits[:, which]  # (machines, at most `most` candidates)
    lengths = ptp.trie.length[node[p]] + ptp.trie.length[node[q]]
    open_pairs = np.triu(np.ones((k, k), dtype=bool), 1)
    chosen = _greedy(split, open_pairs, lengths) if len(p) else []
    left = open_pairs.copy()
    for c in chosen:
        s = split[:, c]
        left &= s[:, None] == s[None, :]
    out = []
    for c in chosen:
        w = Witness(
            _state_name(space, int(state[p[c]])),
            _word_names(space, ptp.trie, node[p[c]]),
            _word_names(space, ptp.trie, node[q[c]]),
            "",
            "",
        )
        out.append(
            CoverWitness(w, tuple(np.flatnonzero(~split[:, c]).tolist()), tuple(np.flatnonzero(split[:, c]).tolist()))
        )
    alike = tuple((int(a), int(b)) for a, b in np.argwhere(left).tolist())
    return Cover(tuple(out), alike, k, source="data")


#: The confidence of the lower bound that ``explain`` plans with (docs/design/14-sampled-experts.md):
#: weaker than a negative example's 1 − α, so it only orders what to look at next.
PLANNING_CONFIDENCE = 0.8


@attrs.frozen
class RarePair:
    """Two words seen at ``state`` with an empirical total variation ``tv`` between their
    actions, not a negative example at level ``alpha``. ``lower``: the lower confidence bound of
    the true total variation at the explanation's planning confidence (0: the difference is
    consistent with zero, it may be sampling noise); ``resolution``: the smallest difference the
    test at ``alpha`` detects with the visits there are. ``factor``: how many times the data
    must grow (same kind of trajectories) for the test to detect a true difference of
    ``lower`` with probability at least 1 − α (``inf``: consistent with zero, nothing to plan
    for); ``trajectories``: the additional trajectories that growth means; ``extra``: the
    fewest additional visits of each word that do it, the less visited word first (what asking
    the expert at the two histories would cost); ``separates``: pairs of machines it would tell
    apart; ``refutes``: machines that send both words to one node, which it would refute."""

    state: str
    word1: tuple[str, ...]
    word2: tuple[str, ...]
    visits: tuple[int, int]
    tv: float
    factor: float
    extra: tuple[int, int]
    trajectories: int | None
    separates: int
    refutes: int = 0
    lower: float = 0.0
    resolution: float = math.inf
    alpha: float = 0.05

    @property
    def consistent_with_zero(self) -> bool:
        return not self.lower > 0

    def __str__(self) -> str:
        gain = (
            f"would separate {self.separates} pair(s) of machines"
            if self.separates
            else "would refute the machine merging the two words"
            if self.refutes == 1
            else f"would refute the {self.refutes} machines merging the two words"
        )
        head = (
            f"state {self.state}: {' '.join(self.word1)} ({self.visits[0]} visits) vs {' '.join(self.word2)} "
            f"({self.visits[1]} visits), TV {self.tv:.3f}"
        )
        if self.consistent_with_zero:
            hide = f"{self.resolution:.2f}" if self.resolution < 1 else "1 (any difference)"
            return (
                f"{head}, consistent with zero (it may be sampling noise; a difference below {hide} could hide "
                f"here); {gain} if a difference were found"
            )
        need = f"{self.extra[0]} and {self.extra[1]} more visits" + (
            "" if self.trajectories is None else f" (about {self.trajectories} more trajectories of the same kind)"
        )
        if self.factor <= 1:
            need = "no more visits"
        return (
            f"{head}, at least {self.lower:.3f}: needs {need} to detect a difference of {self.lower:.3f} at alpha "
            f"{self.alpha:g}; {gain}"
        )


def growth_factors(n1: np.ndarray, n2: np.ndarray, tv: np.ndarray, n_actions: int, alpha: float) -> np.ndarray:
    """Smallest f ≥ 1 with δ(f·n1) + δ(f·n2) ≤ α, δ(n) = (2^|A| − 2)·exp(−n·tv²/2) (paper
    eq. 18-19), elementwise (``inf`` where tv = 0): the growth after which the confidence miner
    would call the *observed* difference a negative example, were the empirical distributions to
    stay as they are (which reads sampling noise as a difference; :func:`rare_pairs` plans with a
    lower confidence bound instead). By bisection on log f."""
    n1, n2, tv = (np.asarray(x, dtype=float) for x in (n1, n2, tv))
    c, la = log_weissman_constant(n_actions), math.log(alpha)

    def ok(f):
        return np.logaddexp(c - f * n1 * tv**2 / 2, c - f * n2 * tv**2 / 2) <= la

    out = np.full(tv.shape, np.inf)
    live = tv > 0
    lo, hi = np.zeros(tv.shape), np.full(tv.shape, 64.0)  # log2 f in [0, 64]
    done = live & ok(np.ones(tv.shape))
    out[done] = 1.0
    live &= ~done
    for _ in range(60):
        mid = (lo + hi) / 2
        good = ok(2.0**mid)
        hi, lo = np.where(good, mid, hi), np.where(good, lo, mid)
    out[live] = 2.0 ** hi[live]
    return out


@attrs.frozen
class Rare:
    """The triples :func:`rare_triples` ranked: the ``pairs`` listed, how many triples were
    ``examined`` and how many of them differ ``beyond_noise`` (a positive lower bound at the
    planning ``confidence``)."""

    pairs: tuple[RarePair, ...]
    examined: int
    beyond_noise: int
    confidence: float


def rare_pairs(
    mdp: LabeledMDP | Space,
    ptp,
    deltas: list[np.ndarray],
    *,
    alpha: float,
    n_trajectories: int | None = None,
    limit: int = 10,
    confidence: float = PLANNING_CONFIDENCE,
) -> list[RarePair]:
    """The listed triples of :func:`rare_triples`."""
    return list(
        rare_triples(
            mdp, ptp, deltas, alpha=alpha, n_trajectories=n_trajectories, limit=limit, confidence=confidence
        ).pairs
    )


def rare_triples(
    mdp: LabeledMDP | Space,
    ptp,
    deltas: list[np.ndarray],
    *,
    alpha: float,
    n_trajectories: int | None = None,
    limit: int = 10,
    confidence: float = PLANNING_CONFIDENCE,
) -> Rare:
    """The (word, word, state) triples of an empirical prefix tree policy that are not negative
    examples but would tell the machines ``deltas`` apart (several machines: the triples they
    disagree on; one machine: the triples it merges, any of which would refute it), ranked so
    that real differences come first (docs/design/14-sampled-experts.md).

    Each triple's true total variation has a lower confidence bound at the planning
    ``confidence`` (the fixed-sample bound of :mod:`rmtk.negatives.statistics`: the data were recorded
    before being looked at). Triples whose bound is positive come first, the cheapest first:
    the growth of the data after which the test at ``alpha`` detects a difference as large as
    the bound with probability at least 1 − α (:func:`rmtk.negatives.statistics.growth_to_resolve`). The
    others are consistent with zero, their empirical difference may be sampling noise; they
    follow, closest to a negative example first, with no visits promised."""
    examined = beyond = 0
    if limit < 1:
        return Rare((), 0, 0, confidence)
    counts = np.asarray(ptp.counts)
    trie, node, state = ptp.trie, np.asarray(ptp.tree.pair_node), np.asarray(ptp.tree.pair_state)
    n = counts.sum(axis=1).astype(float)
    k, A = len(deltas), counts.shape[1]
    plan_level = 1.0 - _confidence(confidence)
    with np.errstate(invalid="ignore"):
        phat = counts / n[:, None]
    radius = FIXED.radius(n, A, plan_level / 2)  # per (word, state): the planning bound's radius
    log_c = log_weissman_constant(A)
    kept: list[tuple] = []
    cutoff = np.inf  # the limit-th smallest upper end of `near` so far among the rest: none beyond it is listed
    best_hi = np.empty(0)
    for p, q, split in _state_groups(ptp, deltas, merged=k == 1):
        tv = 0.5 * np.abs(phat[p] - phat[q]).sum(axis=1)
        if k == 1:  # a triple the empirical distributions agree on never refutes anything
            p, q, split, tv = p[tv > 0], q[tv > 0], split[:, tv > 0], tv[tv > 0]
        if not len(p):
            continue
        examined += len(p)
        lower = np.maximum(0.0, tv - (radius[p] + radius[q]) / 2)
        up = lower > 0
        beyond += int(up.sum())
        # the rest, consistent with zero: ordered by threshold / tv, which lies between the rarer
        # word's own threshold at α and at α/2 (the paper's rule; docs/design/09-beyond-the-paper.md)
        m = np.minimum(n[p], n[q])
        with np.errstate(divide="ignore"):
            lo = np.sqrt(2 * (log_c - math.log(alpha)) / m) / tv
            hi = np.sqrt(2 * (log_c - math.log(alpha / 2)) / m) / tv
        rest_hi = hi[~up]
        if len(rest_hi):
            best_hi = np.concatenate([best_hi, rest_hi])
            if len(best_hi) > limit:
                best_hi = np.partition(best_hi, limit - 1)[:limit]
            if len(best_hi) == limit:
                cutoff = best_hi.max()
        keep = up | ties.at_most(lo, cutoff)  # a bound within the tolerance of the cutoff may tie
        n_split = split.sum(axis=0)
        kept.append((p[keep], q[keep], n_split[keep], tv[keep], lower[keep], lo[keep]))
    if not kept:
        return Rare((), examined, beyond, confidence)
    p, q, n_split, tv, lower, lo = (np.concatenate(parts) for parts in zip(*kept))
    keep = (lower > 0) | ties.at_most(lo, cutoff)
    p, q, n_split, tv, lower = p[keep], q[keep], n_split[keep], tv[keep], lower[keep]
    sep = n_split * (k - n_split)
    test = compare_counts(n[p], n[q], tv, A, alpha=alpha, bound=FIXED)
    f = growth_to_resolve(n[p], n[q], lower, A, alpha=alpha, bound=FIXED)
    res = test.resolution
    with np.errstate(divide="ignore"):
        near = test.threshold / tv
    pick = ties.lexsort((q, p, -sep, near, f))[:limit]  # values within rmtk.ties.TOL are tied
    out = []
    m1, m2 = np.zeros(len(p)), np.zeros(len(p))
    m1[pick], m2[pick] = draws_to_resolve(n[p[pick]], n[q[pick]], lower[pick], A, alpha=alpha, bound=FIXED)
    for r in pick:
        fr = float(f[r])
        finite = math.isfinite(fr)
        extra = (math.ceil(m1[r]), math.ceil(m2[r])) if finite else (-1, -1)
        traj = math.ceil((fr - 1) * n_trajectories) if finite and n_trajectories else None
        out.append(
            RarePair(
                _state_name(mdp, int(state[p[r]])),
                _word_names(mdp, trie, node[p[r]]),
                _word_names(mdp, trie, node[q[r]]),
                (int(n[p[r]]), int(n[q[r]])),
                float(tv[r]),
                fr,
                extra,
                traj,
                int(sep[r]),
                int(k - n_split[r]),
                float(lower[r]),
                float(res[r]),
                float(alpha),
            )
        )
    return Rare(tuple(out), examined, beyond, confidence)


def _confidence(value: float) -> float:
    if not 0.0 < float(value) < 1.0:
        raise RmtkError(f"confidence must lie in (0, 1), got {value}")
    return float(value)


@attrs.frozen
class Explanation:
    """:meth:`rmtk.learner.result.LearnResult.explain`: the witness cover and the rare pairs, and, from
    demonstrations, how many negative examples were mined at which ``alpha``, how many rare
    triples were ``examined`` and how many of them differ ``beyond_noise`` at the planning
    ``confidence`` (docs/design/14-sampled-experts.md)."""

    cover: Cover
    rare: tuple[RarePair, ...] = ()
    negatives: int | None = None
    alpha: float | None = None
    examined: int = 0
    beyond_noise: int = 0
    confidence: float = PLANNING_CONFIDENCE

    def __str__(self) -> str:
        if self.cover.machines == 1 and self.negatives is not None:
            return "\n".join(self._one_machine())
        lines = [str(self.cover)]
        if self.rare:
            level = "" if self.alpha is None else f" at alpha {self.alpha:g}"
            lines.append(
                f"{len(self.rare)} of the {self.examined} (word, word, state) triple(s) the machines disagree on, "
                f"not negative examples{level}; {self._noise()}:"
            )
            lines += [f"  {r}" for r in self.rare]
        return "\n".join(lines)

    def _noise(self) -> str:
        """What the lower bounds say about the rare triples, and the order they are listed in."""
        if not self.beyond_noise:
            return (
                f"none differs beyond sampling noise even at confidence {self.confidence:g}, so these are only "
                "the closest to a negative example and may all be noise"
            )
        return (
            f"{self.beyond_noise} differ beyond sampling noise at confidence {self.confidence:g} (weaker than a "
            "negative example's), listed first with the visits that would confirm the difference their lower "
            "bound promises; the others are consistent with zero"
        )

    def _one_machine(self) -> list[str]:
        assert self.alpha is not None, "one machine from demonstrations: the negatives' level is known"
        if self.negatives == 0:
            lines = [
                "one machine fits, and nothing forces two words into different nodes: no (word, word, state) "
                f"triple of the demonstrations differs significantly at confidence level {1 - self.alpha:g} "
                f"(alpha {self.alpha:g}), so there are 0 negative examples; the machine is what the data do not "
                "refute, not a proof"
            ]
        else:
            lines = [
                f"one machine fits the {self.negatives} negative example(s) mined at alpha {self.alpha:g}: "
                "nothing to separate"
            ]
        if self.rare:
            lines.append(
                f"{len(self.rare)} of the {self.examined} (word, word, state) triple(s) it merges, any of which would "
                f"refute it once its difference is confirmed; {self._noise()}:"
            )
            lines += [f"  {r}" for r in self.rare]
        else:
            lines.append(
                "the demonstrations show no difference at all between two words it merges: more data of the "
                "same kind would not refute it"
            )
        return lines
