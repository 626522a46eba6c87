"""Whether a sampled run's answer holds for the whole run at once (docs/design/14-sampled-experts.md, section 14.1).

Every comparison of an expert that is run holds at level α on its own, as in the paper; a run
compares thousands of pairs of histories, so a few of its negative examples may be false, and
one false negative example can add a node or exclude the truth. :func:`judge` reads each
negative example again with :class:`~rmtk.negatives.anytime.FamilyWise`, whose level is spent per
history, so that every negative example it calls *firm* holds together with all the others
with probability at least 1 − α. It then searches the smallest machines with the firm negative
examples alone (and those between recorded histories, which follow the paper's per-pair rule,
as passive learning does): the same survivors mean the answer holds family-wise; fewer nodes
or more machines mean it rests on comparisons at level α each, and the result says so.
"""

from __future__ import annotations

import attrs
import numpy as np

from .. import ties
from ..learner.pipeline import LearnResult
from ..limits import NEVER, Deadline, SearchLimits
from ..negatives.anytime import FamilyWise
from ..negatives.miners import NegativePairs
from ..sat.encoders import SatEncoder
from ..sat.encoding import Problem
from ..sat.lazy import TrieOracle
from ..sat.search import SearchResult
from ..words import plural
from .sampling import Query, ask_together


@attrs.frozen
class Firmness:
    """How a sampled answer's ``negatives`` examples hold: ``firm`` family-wise at level
    ``alpha`` (every history's interval at its share of α at once), ``recorded`` between
    recorded histories only (the paper's per-pair rule), the rest at level α each. ``nodes`` and
    ``machines``: the smallest machines with the firm and recorded ones alone (``None``: not
    searched, ``why`` says why), ``complete``: all of them were listed; ``same``: they are the
    answer's survivors."""

    negatives: int
    firm: int
    recorded: int
    alpha: float
    nodes: int | None = None
    machines: int = 0
    complete: bool = True
    same: bool | None = None
    why: str = ""

    @property
    def holds(self) -> bool:
        """The answer stands on negative examples that hold together at level α."""
        return bool(self.same)

    def __str__(self) -> str:
        if not self.negatives:
            return "no negative example"
        verb = "holds" if self.negatives == 1 else "hold"
        kept = f"{self.firm} of {plural(self.negatives, 'negative example')} {verb} family-wise"
        kept += f" (every history's interval at once, alpha {self.alpha:g})"
        if self.recorded:
            kept += f", {self.recorded} more are between recorded histories (per pair, as the paper)"
        if self.same is None:
            return f"{kept}; {self.why}"
        if self.same:
            return f"{kept}; with those alone the same machines are the smallest: the answer holds family-wise"
        listed = f"{'' if self.complete else 'at least '}{plural(self.machines, 'machine')}"
        text = (
            f"{kept}; with those alone {listed} of {plural(self.nodes, 'node')} fit: the answer rests on "
            f"comparisons at level {self.alpha:g} each"
        )
        if self.negatives - self.firm - self.recorded:
            text += "; more draws at its negative examples would make them firm"
        return text


def firm_negatives(knowledge, ptp, negatives: NegativePairs, test: FamilyWise) -> tuple[np.ndarray, np.ndarray]:
    """``(firm, recorded)`` masks over ``negatives``: firm when at some state where it was
    detected both histories were asked and :meth:`FamilyWise.firm` separates their answers
    (without recorded counts, seen before the history was ranked); recorded when at every such
    state neither history was asked."""
    k = len(negatives)
    if not k:
        return np.zeros(0, bool), np.zeros(0, bool)
    d = np.asarray(negatives.detections, np.int64)
    which, state = d[:, 0], d[:, 1]
    pairs = np.asarray(negatives.pairs, np.int64)
    i, j = _rows_at(ptp, pairs[which, 0], state), _rows_at(ptp, pairs[which, 1], state)
    place, drawn = knowledge.answers(ptp)
    place = np.r_[place, -1]  # row -1: not in the tree, never asked
    drawn = np.vstack([drawn, np.zeros((1, drawn.shape[1]), drawn.dtype)])
    both = (place[i] >= 0) & (place[j] >= 0)
    sep = np.zeros(len(d), bool)
    if both.any():
        sep[both] = test.firm(drawn[i[both]], drawn[j[both]], place[i[both]], place[j[both]])
    firm = np.bincount(which[sep], minlength=k) > 0
    asked_any = np.bincount(which[(place[i] >= 0) | (place[j] >= 0)], minlength=k) > 0
    return firm, ~firm & ~asked_any


def _rows_at(ptp, nodes, states) -> np.ndarray:
    """The rows of ``ptp`` at (trie node, state) pairs, ``-1`` where it has none."""
    S = int(np.max(ptp.tree.pair_state, initial=-1)) + 1
    keys = np.asarray(ptp.tree.pair_node, np.int64) * S + np.asarray(ptp.tree.pair_state, np.int64)
    order = np.argsort(keys, kind="stable")
    want = np.asarray(nodes, np.int64) * S + np.asarray(states, np.int64)
    at = np.minimum(np.searchsorted(keys[order], want), max(len(keys) - 1, 0))
    hit = (np.asarray(states) < S) & (keys[order][at] == want) if len(keys) else np.zeros(len(want), bool)
    return np.where(hit, order[at] if len(keys) else -1, -1)


def _firm_search(knowledge, ptp, negatives, keep, result, encoder, max_nodes, deadline):
    """The smallest machines with the ``keep`` negative examples alone (at most one more than
    ``result`` lists)."""
    index = np.flatnonzero(keep)
    d = np.asarray(negatives.detections, np.int64)
    rows = d[np.isin(d[:, 0], index)]
    remap = np.full(len(negatives), -1, np.int64)
    remap[index] = np.arange(len(index))
    subset = NegativePairs(
        negatives.pairs[keep],
        negatives.state[keep],
        negatives.log_delta[keep],
        np.stack([remap[rows[:, 0]], rows[:, 1]], axis=1),
        negatives.alpha,
    )
    encoder = encoder if encoder is not None else SatEncoder()
    oracle = TrieOracle(ptp.trie, subset)
    return encoder.search(
        Problem(ptp.trie, knowledge.mdp.n_propositions, oracle=oracle),
        SearchLimits(max_nodes=max_nodes, max_solutions=len(result.solutions) + 1, deadline=deadline),
    )


def _search(result) -> SearchResult:
    """The search of a :class:`~rmtk.learner.result.LearnResult`, or the :class:`SearchResult` itself."""
    return result.search if isinstance(result, LearnResult) else result


def _same(found, result) -> bool:
    res = _search(result)
    listed = len(found.solutions) == len(res.solutions)  # the answer's listing may be cut short
    listed |= not res.complete and len(found.solutions) >= len(res.solutions)
    return found.n_nodes == res.n_nodes and listed


def _read(knowledge, ptp, negatives, result, *, encoder, max_nodes, deadline):
    """``(firmness, found, (firm, recorded))``: the :class:`Firmness` of ``result``, the
    firm-only search it was read from (``None`` when none was run) and the masks of
    :func:`firm_negatives`."""
    test = FamilyWise(alpha=knowledge.alpha, bound=knowledge.test.bound)
    masks = firm_negatives(knowledge, ptp, negatives, test)
    firm, recorded = masks
    out = Firmness(len(negatives), int(firm.sum()), int(recorded.sum()), knowledge.alpha)
    if not len(negatives) or (firm | recorded).all():
        return attrs.evolve(out, nodes=result.n_nodes, machines=len(result.solutions), same=True), None, masks
    why = ""
    if result.n_nodes is None:
        why = "no machine to compare with"
    elif _search(result).cost is not None:
        why = "the MaxSAT optimum weighs them: not searched again"
    elif deadline.expired():
        why = f"not searched again: {deadline.reason()}"
    if why:
        return attrs.evolve(out, why=why), None, masks
    found = _firm_search(knowledge, ptp, negatives, firm | recorded, result, encoder, max_nodes, deadline)
    if found.n_nodes is None:
        return attrs.evolve(out, why=f"not searched to the end: {found.message}"), None, masks
    out = attrs.evolve(
        out, nodes=found.n_nodes, machines=len(found.solutions), complete=found.complete, same=_same(found, result)
    )
    return out, found, masks


def judge(
    knowledge,
    ptp,
    negatives: NegativePairs | None,
    result,
    *,
    encoder: SatEncoder | None,
    max_nodes: int,
    deadline: Deadline = NEVER,
) -> Firmness | None:
    """The :class:`Firmness` of ``result`` (a :class:`~rmtk.learner.result.LearnResult` or
    :class:`~rmtk.sat.search.SearchResult` of a sampled run, from ``ptp`` and its
    ``negatives``; ``None`` when there are none to judge)."""
    if ptp is None or negatives is None or knowledge.test is None:
        return None
    return _read(knowledge, ptp, negatives, result, encoder=encoder, max_nodes=max_nodes, deadline=deadline)[0]


def pending(knowledge, ptp, negatives, result, *, encoder, max_nodes, deadline, per_machine: int = 4) -> list[tuple]:
    """The comparisons ``(word, partner, state)`` to sample until firm: for each machine that
    the firm negative examples alone allow and ``result`` does not list, the ``per_machine``
    strongest negative examples not yet firm it violates (one firm one excludes it), each at
    the state of its strongest detection, where both histories were asked; empty when the
    answer holds family-wise."""
    if ptp is None or negatives is None or knowledge.test is None or not len(negatives):
        return []
    out, found, (firm, recorded) = _read(
        knowledge, ptp, negatives, result, encoder=encoder, max_nodes=max_nodes, deadline=deadline
    )
    if found is None or out.same:
        return []
    listed = {np.asarray(s.delta_u).tobytes() for s in _search(result).solutions}
    pairs = np.asarray(negatives.pairs, np.int64)
    tentative = ~firm & ~recorded
    strength = np.asarray(negatives.log_delta, float)
    wanted: set[int] = set()
    for sol in found.solutions:
        delta = np.asarray(sol.delta_u)
        if found.n_nodes == result.n_nodes and delta.tobytes() in listed:
            continue
        nodes = ptp.trie.run(delta, 0)
        hit = np.flatnonzero(tentative & (nodes[pairs[:, 0]] == nodes[pairs[:, 1]]))
        # one firm negative example is enough to exclude the machine: the strongest few first
        wanted.update(hit[ties.lexsort((hit, strength[hit]))][:per_machine].tolist())
    ks = np.array(sorted(wanted), np.int64)
    state = np.asarray(negatives.state, np.int64)[ks]
    place = np.r_[knowledge.asked_index(ptp), -1]
    i, j = _rows_at(ptp, pairs[ks, 0], state), _rows_at(ptp, pairs[ks, 1], state)
    comps = [
        (tuple(ptp.trie.word(int(pairs[k, 0]))), tuple(ptp.trie.word(int(pairs[k, 1]))), int(s))
        for k, s, ok in zip(ks.tolist(), state.tolist(), (place[i] >= 0) & (place[j] >= 0))
        if ok
    ]
    return sorted(comps, key=lambda c: (c[2], len(c[0]) + len(c[1]), c[0], c[1]))


@attrs.frozen
class Confirmed:
    """What :func:`confirm` asked: the questions (one per batch at a history), the (word,
    state) pairs new to the knowledge, and how many comparisons became firm or stopped being
    separated at all (``dropped``: with more draws their difference fell within noise)."""

    asked: tuple
    new: int
    firm: int
    dropped: int


def confirm(asker, knowledge, comparisons, *, growth: float = 1.5) -> Confirmed:
    """Sample ``comparisons`` ``(word, partner, state)`` (each a negative example at level α
    each) until :class:`~rmtk.negatives.anytime.FamilyWise` separates it, the run's own test no longer
    separates it, or the budget ends: batches as :class:`~rmtk.negatives.statistics.Sequential` grows them
    (the less visited side by ``growth``, at least to the test's first batch; the other follows)."""
    test = FamilyWise(alpha=knowledge.alpha, bound=knowledge.test.bound)
    live = list(comparisons)
    asked: list = []
    new = firm = dropped = 0
    while live:
        rows1 = knowledge.rows([(w, s) for w, _, s in live])
        rows2 = knowledge.rows([(p, s) for _, p, s in live])
        i1, own1 = knowledge.places([(w, s) for w, _, s in live])
        i2, own2 = knowledge.places([(p, s) for _, p, s in live])
        ok = (i1 >= 0) & (i2 >= 0)
        is_firm = np.zeros(len(live), bool)
        if ok.any():
            is_firm[ok] = test.firm(own1[ok], own2[ok], i1[ok], i2[ok])
        still = np.asarray(knowledge.test.compare(rows1, rows2).separated, bool)
        firm += int(is_firm.sum())
        dropped += int((~is_firm & ~still).sum())
        keep = ~is_firm & still & ok
        n1, n2 = own1.sum(axis=1), own2.sum(axis=1)  # the answers alone grow
        level = np.ceil(np.maximum(np.minimum(n1, n2) * growth, float(knowledge.test.first)))
        answers, stopped, nxt = [], False, []
        for c, (w, p, s) in enumerate(live):
            if not keep[c]:
                continue
            group = [(h, int(level[c] - n)) for h, n in ((w, n1[c]), (p, n2[c])) if level[c] > n]
            got, stopped = ask_together(asker, group, s)
            for (h, d), obs in zip(group, got):
                answers.append(obs)
                asked.append(Query(h, s, d, p if h == w else w, (), float(d)))
            if stopped:
                break
            nxt.append((w, p, s))
        new += knowledge.add(*answers)
        if stopped:
            break
        live = nxt
    return Confirmed(tuple(asked), new, firm, dropped)


def firm_up(asker, knowledge, result, *, encoder, max_nodes: int) -> Confirmed | None:
    """The comparisons behind ``result``'s negative examples that it rests on and that do not
    hold family-wise (:func:`pending`), sampled until they do (:func:`confirm`); ``None`` when
    there are none."""
    ptp, neg, _ = knowledge.oracle()
    if not isinstance(neg, NegativePairs):
        return None
    todo = pending(knowledge, ptp, neg, result, encoder=encoder, max_nodes=max_nodes, deadline=asker.deadline)
    return confirm(asker, knowledge, todo) if todo else None
