"""What would separate the machines that survive learning (docs/design.md, section 9).

When several machines fit the data, each pair differs somewhere: a state and two label words
reaching it that one machine sends to the same node and the other to different nodes
(:func:`rmtk.equivalence.distinguish`). Observing whether the expert acts the same after both
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

from . import ties
from .equivalence import Witness, distinguish
from .mdp import LabeledMDP
from .negatives import log_weissman_constant
from .space import Space


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


def _separated(split: np.ndarray, open_pairs: np.ndarray) -> np.ndarray:
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
        gain = _separated(split, open_pairs)
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
        gain = _separated(split, open_pairs)
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


def _disagreements(ptp, deltas: list[np.ndarray]):
    """All of :func:`_state_groups` at once: ``(p, q, split)``."""
    groups = list(_state_groups(ptp, deltas))
    if not groups:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.zeros((len(deltas), 0), bool)
    return tuple(np.concatenate(parts, axis=-1) for parts in zip(*groups))


def _word_names(space, trie, p) -> tuple[str, ...]:
    names = getattr(space, "propositions", None)
    return tuple(names[k] if names is not None else str(k) for k in trie.word(int(p)))


def _state_name(space, s: int) -> str:
    states = getattr(space, "states", None)
    return str(states[s]) if states is not None else str(s)


def _cover_from_data(space, deltas, ptp, most: int = 20_000) -> Cover:
    k = len(deltas)
    p, q, split = _disagreements(ptp, deltas)
    node, state = np.asarray(ptp.tree.pair_node), np.asarray(ptp.tree.pair_state)
    if len(p) > most:  # the best-supported candidates: the most visited pairs
        n = np.asarray(ptp.counts).sum(axis=1)
        keep = np.argsort(-np.minimum(n[p], n[q]), kind="stable")[:most]
        p, q, split = p[keep], q[keep], split[:, keep]
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
    return Cover(tuple(out), tuple(map(tuple, np.argwhere(left).tolist())), k, source="data")


@attrs.frozen
class RarePair:
    """Two words seen at ``state`` whose empirical action distributions differ (total
    variation ``tv``) but not enough times to be a negative example at level ``alpha``.
    ``factor``: how many times the data must grow (same kind of trajectories, distributions
    unchanged) for the bound to be met (``inf``: the empirical distributions agree);
    ``extra``: the additional visits of each word; ``trajectories``: additional trajectories;
    ``separates``: pairs of machines it would tell apart; ``refutes``: machines that send both
    words to one node, which it would refute."""

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

    def __str__(self) -> str:
        if not math.isfinite(self.factor):
            need = "never (the empirical distributions agree)"
        else:
            need = f"{self.extra[0]} and {self.extra[1]} more visits" + (
                "" if self.trajectories is None else f", about {self.trajectories} more trajectories"
            )
        gain = (
            f"would separate {self.separates} pair(s) of machines"
            if self.separates
            else "would refute the machine merging the two words"
            if self.refutes == 1
            else f"would refute the {self.refutes} machines merging the two words"
        )
        return (
            f"state {self.state}: {' '.join(self.word1)} ({self.visits[0]} visits) vs {' '.join(self.word2)} "
            f"({self.visits[1]} visits), TV {self.tv:.3f}: needs {need}; {gain}"
        )


def growth_factors(n1: np.ndarray, n2: np.ndarray, tv: np.ndarray, n_actions: int, alpha: float) -> np.ndarray:
    """Smallest f ≥ 1 with δ(f·n1) + δ(f·n2) ≤ α, δ(n) = (2^|A| − 2)·exp(−n·tv²/2) (paper
    eq. 18-19), elementwise (``inf`` where tv = 0); by bisection on log f."""
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


def _factor_bounds(n1, n2, tv, n_actions: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Bounds ``lo ≤ f ≤ hi`` on :func:`growth_factors` without bisection: the smaller count m
    alone must meet α (``lo``), and meeting α/2 with it suffices for both (``hi``)."""
    need = log_weissman_constant(n_actions) - math.log(alpha)
    with np.errstate(divide="ignore"):
        scale = 2.0 / (np.minimum(n1, n2) * tv**2)
    return np.maximum(1.0, need * scale), np.maximum(1.0, (need + math.log(2)) * scale)


def rare_pairs(
    mdp: LabeledMDP | Space,
    ptp,
    deltas: list[np.ndarray],
    *,
    alpha: float,
    n_trajectories: int | None = None,
    limit: int = 10,
) -> list[RarePair]:
    """The (word, word, state) triples of an empirical prefix tree policy closest to becoming
    negative examples (cheapest to settle first), each with the visits the confidence bound
    asks for (see :class:`RarePair`): with several machines ``deltas``, the triples they
    disagree on (some merge the words, some split them); with one machine, the triples it
    merges, any of which would refute it."""
    if limit < 1:
        return []
    counts = np.asarray(ptp.counts)
    trie, node, state = ptp.trie, np.asarray(ptp.tree.pair_node), np.asarray(ptp.tree.pair_state)
    n = counts.sum(axis=1).astype(float)
    k, A = len(deltas), counts.shape[1]
    kept: list[tuple] = []
    cutoff = np.inf  # the limit-th smallest upper bound so far: no better triple lies beyond it
    best = np.empty(0)
    phat = counts / n[:, None]
    for p, q, split in _state_groups(ptp, deltas, merged=k == 1):
        tv = 0.5 * np.abs(phat[p] - phat[q]).sum(axis=1)
        if k == 1:  # a triple the empirical distributions agree on never refutes anything
            p, q, split, tv = p[tv > 0], q[tv > 0], split[:, tv > 0], tv[tv > 0]
        lo, hi = _factor_bounds(n[p], n[q], tv, A, alpha)
        best = np.concatenate([best, hi])
        if len(best) > limit:
            best = np.partition(best, limit - 1)[:limit]
        if len(best) == limit:
            cutoff = best.max()
        near = ties.at_most(lo, cutoff)  # a bound within the tolerance of the cutoff may tie
        kept.append((p[near], q[near], split[:, near], tv[near], lo[near]))
    if not kept:
        return []
    p, q, split, tv, lo = (np.concatenate(parts, axis=-1) for parts in zip(*kept))
    near = ties.at_most(lo, cutoff)
    p, q, split, tv = p[near], q[near], split[:, near], tv[near]
    n_split = split.sum(axis=0)
    sep = n_split * (k - n_split)  # machine pairs it would separate
    f = growth_factors(n[p], n[q], tv, A, alpha)
    pick = ties.lexsort((q, p, -sep, f))[:limit]  # factors within rmtk.ties.TOL are tied
    out = []
    for r in pick:
        fr = float(f[r])
        finite = math.isfinite(fr)
        extra = (math.ceil((fr - 1) * n[p[r]]), math.ceil((fr - 1) * n[q[r]])) if finite else (-1, -1)
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
            )
        )
    return out


@attrs.frozen
class Explanation:
    """:meth:`rmtk.learner.LearnResult.explain`: the witness cover and the rare pairs, and, from
    demonstrations, how many negative examples were mined at which ``alpha``."""

    cover: Cover
    rare: tuple[RarePair, ...] = ()
    negatives: int | None = None
    alpha: float | None = None

    def __str__(self) -> str:
        if self.cover.machines == 1 and self.negatives is not None:
            return "\n".join(self._one_machine())
        lines = [str(self.cover)]
        if self.rare:
            lines.append(
                f"{len(self.rare)} (word, word, state) triple(s) the machines disagree on, seen too rarely "
                "for a negative example (cheapest to settle first):"
            )
            lines += [f"  {r}" for r in self.rare]
        return "\n".join(lines)

    def _one_machine(self) -> list[str]:
        if self.negatives == 0:
            lines = [
                "one machine fits, and nothing forces two words into different nodes: no (word, word, state) "
                f"triple of the demonstrations differs significantly at confidence level {1 - self.alpha:g} "
                f"(alpha {self.alpha:g}), so there are 0 negative examples"
            ]
        else:
            lines = [
                f"one machine fits the {self.negatives} negative example(s) mined at alpha {self.alpha:g}: "
                "nothing to separate"
            ]
        if self.rare:
            lines.append(
                f"the {len(self.rare)} (word, word, state) triple(s) it merges closest to becoming negative "
                "examples (cheapest to settle first); any one of them would refute it:"
            )
            lines += [f"  {r}" for r in self.rare]
        else:
            lines.append(
                "the demonstrations show no difference at all between two words it merges: more data of the "
                "same kind would not refute it"
            )
        return lines
