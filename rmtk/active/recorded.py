"""Asking at recorded histories, for environments with no transition model (docs/design/12-active-learning.md,
section 12.1): the question strategy :class:`AtRecordedTriples` asks only at (word, state)
pairs that recorded episodes reached, so every history asked is one the environment can
produce, and nothing but the recording and the expert is needed (the reacher's 16 million
cells have no labeled MDP).

Each round of the loop (:class:`~rmtk.active.loop.ActiveLearner`):

1. the count table is cut to the (word, state) pairs that can yield a negative example
   (:func:`~rmtk.ptp.empirical.prune_counts`), negative examples are mined with the confidence bound
   (:class:`~rmtk.negatives.miners.ConfidenceMiner`) and the optimal machines enumerated by the encoder
   (default :class:`~rmtk.sat.encoders.MaxSatEncoder`, weighted MaxSAT) at the node bound, at most
   ``max_solutions`` of them;
2. the candidates are the recorded (word, word, state) triples the survivors disagree on (some
   send the two words to one node, others to two) that are not yet *settled*: their comparison
   with the run's sequential test (:class:`~rmtk.negatives.statistics.Sequential`, anytime-valid) is
   neither separated nor resolved to the run's target resolution, and not both words have
   ``samples`` visits (the cap); a :class:`TripleStrategy` picks some (by default the triples
   most likely to become negative examples: the largest :meth:`~rmtk.negatives.statistics.Sequential.evidence`);
3. the expert is asked after both words of each triple picked, sequentially
   (:mod:`rmtk.active.sampling`), and the answers join the counts —

until one machine survives, no candidate is left (every triple the survivors disagree on is
settled: the expert acts alike after both words, to the resolution reached), or the budget or
the deadline ends the run (the survivors so far, flagged). Nothing but the recording and the
expert's answers is read.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import attrs
import numpy as np

from .. import ties
from ..errors import RmtkError
from ..limits import SearchLimits
from ..negatives.anytime import Adaptive
from ..negatives.miners import ConfidenceMiner, NegativePairs
from ..negatives.statistics import Sequential
from ..ptp.empirical import CountTable, to_policy
from ..ptp.tree import disagreements
from ..sat.encoders import MaxSatEncoder, SatEncoder
from ..sat.encoding import Problem
from ..sat.search import SearchResult
from ..validators import positive_int
from .questions import Hypotheses, Inquiry, Query, Setting, StrategyCapabilities
from .sampling import needs


@attrs.frozen
class Triples:
    """Candidate (word, word, state) triples of a round, one per distinct *split* of the
    survivors (which of them send the two words to different nodes): trie nodes ``p``, ``q``,
    the ``state``, the visits ``n_p``, ``n_q`` so far, the empirical total variation ``tv``
    between the two words' actions there, the ``evidence`` of a difference (the run's test's
    signed margin, :meth:`~rmtk.negatives.statistics.Sequential.evidence`: positive once the two are
    separated, the noise being the test's own bound at these counts), the
    ``(machines, triples)`` ``split`` matrix, and ``settled``: how many triples of that split
    are settled already (decided by the test, or both words at the cap)."""

    p: np.ndarray
    q: np.ndarray
    state: np.ndarray
    n_p: np.ndarray
    n_q: np.ndarray
    tv: np.ndarray
    evidence: np.ndarray
    split: np.ndarray
    settled: np.ndarray

    def __len__(self) -> int:
        return len(self.p)

    def cost(self, samples: int) -> np.ndarray:
        """Expert steps that settle each triple: the visits missing on both sides."""
        return np.maximum(0, samples - self.n_p) + np.maximum(0, samples - self.n_q)

    @classmethod
    def empty(cls, k: int) -> Triples:
        e, f = np.empty(0, np.int64), np.empty(0)
        return cls(e, e, e, e, e, f, f, np.zeros((k, 0), bool), e)


@runtime_checkable
class TripleStrategy(Protocol):
    """Which candidate triples to ask about in a round (indices into ``triples``)."""

    def choose(self, triples: Triples, samples: int) -> list[int]: ...


@attrs.frozen
class MostEvidence:
    """The default strategy: every split's candidate, those whose words already look most
    different (largest ``evidence``) first, then the cheapest, up to ``most`` a round. Steps
    are cheap beside what passive recording spends; what costs is a split the expert cannot
    confirm, so the triples most likely to become negative examples go first. Evidence within
    :data:`rmtk.ties.TOL` is a tie (docs/design/02-conventions.md)."""

    most: int = attrs.field(default=256, validator=positive_int)

    def choose(self, triples: Triples, samples: int) -> list[int]:
        order = ties.lexsort((triples.cost(samples), -triples.evidence))
        return order[: self.most].tolist()


#: Triples whose two words' counts are compared at a time (a block's arrays are a few times
#: this many rows of actions, whatever the number of triples).
TRIPLE_BLOCK = 1 << 14


@attrs.frozen
class _Disagreements:
    """Every recorded triple the machines disagree on (:func:`rmtk.ptp.tree.disagreements`, the
    most visited word standing for each signature): pair indices ``i``, ``j`` into the table's
    distinct (word, state) pairs (with their ``visits``; the keys of pair p are
    ``table.keys[start[p]:start[p + 1]]``), the column ``which`` of each in the ``(machines,
    distinct splits)`` matrix ``splits``."""

    visits: np.ndarray
    start: np.ndarray
    i: np.ndarray
    j: np.ndarray
    which: np.ndarray
    splits: np.ndarray

    @classmethod
    def of(cls, table: CountTable, deltas: list[np.ndarray]) -> _Disagreements:
        A, S = table.n_actions, table.n_states
        pair = table.keys // A  # sorted: a pair begins wherever it changes
        start = np.flatnonzero(np.r_[True, pair[1:] != pair[:-1], True]) if len(pair) else np.zeros(1, np.int64)
        pairs = pair[start[:-1]]
        del pair
        visits = np.add.reduceat(table.counts, start[:-1]) if len(pairs) else np.zeros(0, np.int64)
        start = start.astype(np.int32 if len(table.keys) < 2**31 else np.int64)
        # the pairs' words, states and ranks in 32 bits where they fit (the same order)
        node = (pairs // S).astype(np.int32 if table.trie.n_nodes < 2**31 else np.int64)
        state = (pairs % S).astype(np.int32 if S < 2**31 else np.int64)
        del pairs
        rank = -visits.astype(np.int32) if len(visits) and visits.max() < 2**31 else -visits
        d = disagreements(table.trie, node, state, rank, deltas)
        return cls(visits.astype(np.int64), start, d.i, d.j, d.which, d.splits)

    def pairs(self, table: CountTable, p: np.ndarray) -> np.ndarray:
        """The (word, state) pair keys ``node·S + state`` of pairs ``p``."""
        return table.keys[self.start[p]] // table.n_actions

    def rows(self, table: CountTable, p: np.ndarray) -> np.ndarray:
        """``(len(p), A)`` action counts of the pairs ``p`` (as floats)."""
        lo, n = self.start[p], self.start[np.asarray(p) + 1] - self.start[p]
        at = np.repeat(lo - np.cumsum(n) + n, n) + np.arange(n.sum())
        out = np.zeros((len(p), table.n_actions))
        out[np.repeat(np.arange(len(p)), n), table.keys[at] % table.n_actions] = table.counts[at]
        return out

    def tv(self, table: CountTable, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """Empirical total variation between the actions of pairs ``i`` and ``j``."""
        out = np.empty(len(i))
        for lo in range(0, len(i), TRIPLE_BLOCK):
            a, b = self.rows(table, i[lo : lo + TRIPLE_BLOCK]), self.rows(table, j[lo : lo + TRIPLE_BLOCK])
            out[lo : lo + TRIPLE_BLOCK] = 0.5 * np.abs(a / a.sum(1, keepdims=True) - b / b.sum(1, keepdims=True)).sum(1)
        return out


def _decided(table: CountTable, d: _Disagreements, samples: int, test: Sequential, resolution: bool = False):
    """Which triples of ``d`` are settled (decided by ``test`` or both words at ``samples``
    visits) and each one's margin under the test (and, with ``resolution``, its resolution), a
    block of triples at a time. The comparison only: the draws a finer resolution would take
    are not needed to choose (and cost a search per pair)."""
    n = len(d.i)
    done, margin, res = np.zeros(n, bool), np.empty(n), np.empty(n if resolution else 0)
    for lo in range(0, n, TRIPLE_BLOCK):
        i, j = d.i[lo : lo + TRIPLE_BLOCK], d.j[lo : lo + TRIPLE_BLOCK]
        c = test.compare(d.rows(table, i), d.rows(table, j))
        capped = np.minimum(d.visits[i], d.visits[j]) >= samples
        r = np.asarray(c.resolution, dtype=float)
        done[lo : lo + TRIPLE_BLOCK] = capped | np.asarray(c.separated) | ties.at_most(r, test.epsilon)
        margin[lo : lo + TRIPLE_BLOCK] = np.asarray(c.margin, dtype=float)
        if resolution:
            res[lo : lo + TRIPLE_BLOCK] = r
    return done, margin, res


def candidate_triples(
    table: CountTable, deltas: list[np.ndarray], samples: int, tries: int = 3, test: Sequential | None = None
) -> Triples:
    """The recorded (word, word, state) triples the machines ``deltas`` disagree on (see
    :class:`Triples`): per split, the unsettled triple with the most evidence of a difference
    (then the cheapest, then the first), ``test`` deciding (default:
    :class:`~rmtk.negatives.statistics.Sequential` with :class:`~rmtk.negatives.anytime.Adaptive`), ``samples`` the
    cap. A split with ``tries`` settled triples is dropped: the expert acted alike after its two
    words at that many states. Memory: a few numbers per triple, whatever the machines."""
    test = test if test is not None else Sequential(bound=Adaptive())
    k, S = len(deltas), table.n_states
    d = _Disagreements.of(table, deltas)
    if not len(d.i):
        return Triples.empty(k)
    cls = d.which  # one class per distinct split
    done, margin, _ = _decided(table, d, samples, test)
    settled = np.bincount(cls[done], minlength=int(cls.max()) + 1)
    live = ~done & (settled[cls] < tries)
    del done
    if not live.any():
        return Triples.empty(k)
    n = 0  # the live triples' margins, negated, moved to the front in place a block at a time
    for lo in range(0, len(live), TRIPLE_BLOCK):
        m = -margin[lo : lo + TRIPLE_BLOCK][live[lo : lo + TRIPLE_BLOCK]]
        margin[n : n + len(m)] = m
        n += len(m)
    against = margin[:n]
    del margin
    # a split's pick has the most evidence (ranked within the tolerance over every live triple,
    # rmtk.ties), then the least cost, then comes first: only its triples of that rank compete
    rank = ties.ranks(against)
    of = cls[live]
    top = np.full(len(settled), np.iinfo(np.int64).max)
    np.minimum.at(top, of, rank)
    best = rank == top[of]
    del rank, of
    live[live] = best  # the candidates left, among every triple
    chosen = np.flatnonzero(live)
    evidence = -against[best]
    del against
    i, j, cls = d.i[chosen], d.j[chosen], cls[chosen]
    n_i, n_j = d.visits[i], d.visits[j]
    cost = np.maximum(0, samples - n_i) + np.maximum(0, samples - n_j)
    order = np.lexsort((cost, cls))  # within a split every candidate left has its best rank
    pick = order[np.r_[True, cls[order][1:] != cls[order][:-1]]]
    i, j = i[pick], j[pick]
    p, q = d.pairs(table, i), d.pairs(table, j)
    return Triples(
        p // S,
        q // S,
        p % S,
        d.visits[i],
        d.visits[j],
        d.tv(table, i, j),
        evidence[pick],
        d.splits[:, cls[pick]],
        settled[cls[pick]],
    )


@attrs.frozen
class Separation:
    """How the recorded triples bear on the machines that survive: the machine ``pairs``, the
    ``triples`` some survivors merge and others split, how many are ``settled`` (decided by the
    run's test, or ``samples`` visits on both words), the largest total variation ``max_tv``
    seen at a settled one, and the weakest ``resolution`` reached there (no difference at least
    that large was found at any of them, at level ``alpha``). ``pairs_split``: the machine pairs
    some recorded triple tells apart."""

    machines: int
    pairs_split: int
    triples: int
    settled: int
    max_tv: float
    samples: int
    resolution: float
    alpha: float = 0.05

    def __str__(self) -> str:
        k = self.machines
        pairs = k * (k - 1) // 2
        if k <= 1:
            return "one machine survives: no pair to separate"
        text = (
            f"{pairs} pair(s) of surviving machines; {self.pairs_split} of them disagree on some of the "
            f"{self.triples} recorded (word, word, cell) triple(s) that tell them apart, the other "
            f"{pairs - self.pairs_split} on none. "
        )
        found = (
            f"no difference ≥ {self.resolution:.3f} found at them (alpha {self.alpha:g}; largest total variation "
            f"seen {self.max_tv:.3f})"
        )
        if self.triples and self.settled == self.triples:
            text += (
                f"Every such triple was asked until the test decided it or both words had {self.samples} visits: "
                f"{found}; the expert's behaviour, to that resolution, does not separate them."
            )
        elif self.triples:
            text += (
                f"{self.settled} of the triples were settled ({found}); the others belong to splits dropped after "
                "their settled triples showed no difference."
            )
        return text


def separation(table: CountTable, deltas: list[np.ndarray], samples: int, test: Sequential | None = None) -> Separation:
    """:class:`Separation` of the machines ``deltas`` by the triples of ``table`` (``test``: the
    run's, default :class:`~rmtk.negatives.statistics.Sequential` with
    :class:`~rmtk.negatives.anytime.Adaptive`)."""
    test = test if test is not None else Sequential(bound=Adaptive())
    k = len(deltas)
    if k <= 1:
        return Separation(k, 0, 0, 0, 0.0, samples, 1.0, test.alpha)
    d = _Disagreements.of(table, deltas)
    done, _, res = _decided(table, d, samples, test, resolution=True)
    tv = d.tv(table, d.i[done], d.j[done])
    res = res[done]
    # two machines are told apart by some triple unless they split every triple alike: unless
    # their rows of the distinct splits are equal
    _, group = np.unique(d.splits, axis=0, return_counts=True) if d.splits.shape[1] else (None, np.array([k]))
    return Separation(
        k,
        k * (k - 1) // 2 - int((group * (group - 1) // 2).sum()),
        len(d.i),
        int(done.sum()),
        float(tv.max()) if len(tv) else 0.0,
        samples,
        float(res.max()) if len(res) else 1.0,
        test.alpha,
    )


def _picks(instance, attribute, value) -> None:
    if not isinstance(value, TripleStrategy):
        raise RmtkError(
            f"pick={value!r} has no choose method: which recorded triples to ask is a "
            "rmtk.active.TripleStrategy (choose(triples, samples) -> indices; see rmtk.active.recorded)"
        )


@attrs.frozen
class AtRecordedTriples(StrategyCapabilities):
    """The question strategy for an environment known only through a recording (see the
    module docstring).

    Args:
        samples: visits of each word of a triple after which it is settled whatever the test
            says (a cap; the run's sequential test settles it sooner when it separates the two
            words or resolves them to the run's target resolution).
        tries: settled triples of one split after which the split is dropped (the expert acted
            alike after its two words at that many states).
        pick: which candidates to ask (:class:`TripleStrategy`; default :class:`MostEvidence`).
    """

    samples: int = attrs.field(default=100, validator=positive_int)
    tries: int = attrs.field(default=3, validator=positive_int)
    pick: TripleStrategy = attrs.field(factory=MostEvidence, validator=_picks)
    kinds: tuple[str, ...] = attrs.field(default=("split",), init=False)
    needs_model: bool = attrs.field(default=False, init=False)
    question: str = attrs.field(default="recorded triple", init=False)

    def default_check(self, expert) -> None:
        """None: a walk leaves the recorded histories, the only ones this strategy asks at."""
        return None

    def start(self, setting: Setting) -> Inquiry:
        return _Recorded(self, setting)


class _Recorded:
    """A run of :class:`AtRecordedTriples`."""

    def __init__(self, strategy: AtRecordedTriples, setting: Setting):
        know = setting.knowledge
        if know.exact:
            raise RmtkError(
                "asking at recorded triples judges counts with the confidence bound: it needs an expert that is "
                "run (its answers are actions drawn), not an exact one"
            )
        if not len(know.table.keys):
            what = "the recording is empty" if know.recorded is not None else "no recording was given"
            raise RmtkError(
                f"{what}: asking at recorded triples starts from a recording (a count table, demonstrations or a "
                "rmtk.gym Recording, fit(..., data=...)) and asks only at (word, state) pairs its episodes reached"
            )
        encoder = setting.encoder if setting.encoder is not None else MaxSatEncoder()
        if not isinstance(encoder, SatEncoder):
            raise RmtkError(
                f"encoder={encoder!r} is not a rmtk.sat.encoders.SatEncoder (its search is what a round runs)"
            )
        self.s, self.setting, self.knowledge, self.encoder = strategy, setting, know, encoder
        self.min_count = ConfidenceMiner(know.alpha).min_count(know.table.n_actions)  # recorded pairs' least
        self._last: tuple | None = None

    def round(self) -> Hypotheses:
        table = self.knowledge.table
        ptp = to_policy(self.knowledge.pruned(self.min_count))
        neg = self.knowledge.negatives(ptp)
        res = self.encoder.search(
            Problem(table.trie, table.n_letters, neg),
            SearchLimits(
                max_nodes=self.setting.max_nodes,
                max_solutions=self.setting.max_solutions,
                deadline=self.setting.deadline,
            ),
        )
        self._last = (ptp, neg, res)
        return Hypotheses(
            res.n_nodes,
            tuple(s.delta_u for s in res.solutions),
            tuple(s.used for s in res.solutions),
            res.complete,
            res.message,
            negatives=len(neg) if isinstance(neg, NegativePairs) else None,
            cost=res.cost,
        )

    def choose(self, kind: str, hypotheses: Hypotheses) -> list[Query]:
        if kind != "split" or len(hypotheses) < 2:
            return []
        know, samples = self.knowledge, self.s.samples
        table = know.table
        triples = candidate_triples(
            table, [np.asarray(d) for d in hypotheses.machines], samples, self.s.tries, know.test
        )
        if not len(triples):
            return []
        picks = self.s.pick.choose(triples, samples)
        comps = [
            (
                tuple(table.trie.word(int(triples.p[c]))),
                tuple(table.trie.word(int(triples.q[c]))),
                int(triples.state[c]),
            )
            for c in picks
        ]
        need = needs(know, comps, [samples] * len(comps)) if know.test is not None else None
        out = []
        for r, (w1, w2, s) in enumerate(comps):
            if need is None:  # no test (an expert that answers nothing): the cap alone
                d1, d2 = max(0, samples - int(triples.n_p[picks[r]])), max(0, samples - int(triples.n_q[picks[r]]))
            else:
                d1, d2 = int(need.draw1[r]), int(need.draw2[r])
            for word, partner, more in ((w1, w2, d1), (w2, w1, d2)):
                if more > 0:  # pairs: the split says
                    out.append(Query(word, s, more, partner, (), float(more), samples))
        return out

    def survivors(self, limit: int | None, judge=None) -> SearchResult:
        assert self._last is not None, "a round comes first"
        res = self._last[2]
        if judge is not None:
            for k, sol in enumerate(res.solutions[:limit]):
                if not judge(sol.delta_u):
                    return attrs.evolve(res, solutions=res.solutions[:k], complete=False)
        if limit is not None and len(res.solutions) > limit:
            return attrs.evolve(res, solutions=res.solutions[:limit], complete=False)
        return res

    def known(self) -> tuple:
        assert self._last is not None, "a round comes first"
        ptp, neg, _ = self._last
        return ptp, neg, None

    def separation(self, solutions) -> Separation:
        know = self.knowledge
        return separation(know.table, [np.asarray(s.delta_u) for s in solutions], self.s.samples, know.test)

    def close(self) -> None:
        return None
