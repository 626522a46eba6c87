"""Active learning over a recording, for environments with no transition model (docs/design.md,
section 12.1): the questions are asked only at (word, state) pairs that recorded episodes
reached, so every history asked is one the environment can produce, and nothing but the
recording and the expert is needed (the reacher's 16 million cells have no labeled MDP).

Each round:

1. the count table is cut to the (word, state) pairs that can yield a negative example
   (:func:`~rmtk.empirical.prune_counts`), negative examples are mined with the confidence bound
   (:class:`~rmtk.negatives.ConfidenceMiner`) and the optimal machines enumerated by weighted
   MaxSAT (:class:`~rmtk.encoders.MaxSatEncoder`) at ``max_nodes`` nodes;
2. the candidates are the recorded (word, word, state) triples the survivors disagree on (some
   send the two words to one node, others to two) that are not yet *settled* — asked until
   both words have ``samples`` visits; a :class:`TripleStrategy` picks some (by default the
   greedy cover of the surviving pairs, most pairs per step of cost first);
3. the expert acts ``samples`` times (minus the visits there are) after each word of each
   triple picked, and the answers join the counts —

until one machine survives, no candidate is left (every triple the survivors disagree on is
settled: the expert acts alike after both words, to the bound's resolution), or a
:class:`~rmtk.active.loop.Budget` is spent (the survivors so far, flagged). The loop reads nothing
but the recording and the expert's answers.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Protocol

import attrs
import numpy as np

from .. import ties
from ..empirical import CountTable, prune_counts, to_policy
from ..encoders import MaxSatEncoder
from ..errors import RmtkError
from ..learner import LearnResult, _machines
from ..limits import Deadline, SearchLimits
from ..negatives import ConfidenceMiner, log_weissman_constant
from ..sat.encoding import Problem
from ..validators import positive_int
from .loop import Budget, _count


@attrs.frozen
class Triples:
    """Candidate (word, word, state) triples of a round, one per distinct *split* of the
    survivors (which of them send the two words to different nodes): trie nodes ``p``, ``q``,
    the ``state``, the visits ``n_p``, ``n_q`` so far, the empirical total variation ``tv``
    between the two words' actions there, ``evidence`` = tv − 1/√min(n_p, n_q) (a difference
    seen often enough to trust), the ``(machines, triples)`` ``split`` matrix, and ``settled``:
    how many triples of that split already have ``samples`` visits on both words."""

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


class TripleStrategy(Protocol):
    """Which candidate triples to ask about in a round (indices into ``triples``)."""

    def choose(self, triples: Triples, samples: int) -> list[int]: ...


@attrs.frozen
class MostEvidence:
    """The default strategy: every split's candidate, those whose words already look most
    different (largest ``evidence``) first, then the cheapest, up to ``most`` a round. Steps
    are cheap beside what passive recording spends; what costs is a split the expert cannot
    confirm, so the triples most likely to become negative examples go first. Evidence within
    :data:`rmtk.ties.TOL` is a tie (docs/design.md section 2)."""

    most: int = 256

    def choose(self, triples: Triples, samples: int) -> list[int]:
        order = ties.lexsort((triples.cost(samples), -triples.evidence))
        return order[: self.most].tolist()


def _rows(table: CountTable, wanted: np.ndarray) -> np.ndarray:
    """``(len(wanted), A)`` action counts of the (word, state) pair keys ``wanted`` (sorted unique)."""
    A = table.n_actions
    pair = table.keys // A
    at = np.searchsorted(wanted, pair)
    hit = (at < len(wanted)) & (wanted[np.minimum(at, len(wanted) - 1)] == pair)
    rows = np.zeros((len(wanted), A), np.int32)
    np.add.at(rows, (at[hit], table.keys[hit] % A), table.counts[hit])
    return rows


@attrs.frozen
class _Disagreements:
    """Every recorded triple the machines disagree on: pair indices ``i``, ``j`` into the
    table's distinct (word, state) ``pairs`` (with their ``visits``) and the ``split``."""

    pairs: np.ndarray
    visits: np.ndarray
    i: np.ndarray
    j: np.ndarray
    split: np.ndarray  # (triples, machines)

    @classmethod
    def of(cls, table: CountTable, deltas: list[np.ndarray]) -> _Disagreements:
        """Per state, the most visited word of each distinct vector of final nodes; the pairs
        of them some machines merge and others split."""
        k = len(deltas)
        A, S = table.n_actions, table.n_states
        pairs, inv = np.unique(table.keys // A, return_inverse=True)
        visits = np.bincount(inv, weights=table.counts, minlength=len(pairs)).astype(np.int64)
        node, state = pairs // S, pairs % S
        finals = np.stack([table.trie.run(d, 0) for d in deltas])  # (k, trie nodes)
        sigs, sig_of_node = np.unique(finals.T, axis=0, return_inverse=True)
        sig = sig_of_node.reshape(-1)[node]
        order = np.lexsort((-visits, sig, state))
        first = np.ones(len(order), dtype=bool)
        first[1:] = (state[order][1:] != state[order][:-1]) | (sig[order][1:] != sig[order][:-1])
        rows = order[first]
        st = state[rows]
        bounds = np.flatnonzero(np.r_[True, st[1:] != st[:-1], True])
        size = np.diff(bounds)
        P, Q = [np.empty(0, np.int64)], [np.empty(0, np.int64)]
        for g in np.unique(size[size >= 2]):
            starts = bounds[:-1][size == g]
            a, b = np.triu_indices(int(g), 1)
            P.append((starts[:, None] + a[None, :]).ravel())
            Q.append((starts[:, None] + b[None, :]).ravel())
        i, j = rows[np.concatenate(P)], rows[np.concatenate(Q)]
        split = sigs[sig[i]] != sigs[sig[j]]
        n_split = split.sum(axis=1)
        useful = (n_split > 0) & (n_split < k)
        return cls(pairs, visits, i[useful], j[useful], split[useful].reshape(-1, k))

    def tv(self, table: CountTable, i: np.ndarray, j: np.ndarray, chunk: int = 1_000_000) -> np.ndarray:
        """Empirical total variation between the actions of pairs ``i`` and ``j``."""
        used = np.unique(np.concatenate([i, j]))
        counts = _rows(table, self.pairs[used])
        out = np.empty(len(i))
        for lo in range(0, len(i), chunk):
            a = counts[np.searchsorted(used, i[lo : lo + chunk])].astype(float)
            b = counts[np.searchsorted(used, j[lo : lo + chunk])].astype(float)
            out[lo : lo + chunk] = 0.5 * np.abs(a / a.sum(1, keepdims=True) - b / b.sum(1, keepdims=True)).sum(1)
        return out


def candidate_triples(table: CountTable, deltas: list[np.ndarray], samples: int, tries: int = 3) -> Triples:
    """The recorded (word, word, state) triples the machines ``deltas`` disagree on (see
    :class:`Triples`): per split, the unsettled triple with the most evidence of a difference
    (then the cheapest). A split with ``tries`` settled triples is dropped: the expert acted
    alike after its two words at that many states."""
    k, S = len(deltas), table.n_states
    d = _Disagreements.of(table, deltas)
    if not len(d.i):
        return Triples.empty(k)
    _, cls = np.unique(np.packbits(d.split, axis=1), axis=0, return_inverse=True)
    cls = cls.reshape(-1)
    done = np.minimum(d.visits[d.i], d.visits[d.j]) >= samples
    settled = np.bincount(cls[done], minlength=cls.max() + 1)
    live = ~done & (settled[cls] < tries)
    i, j, split, cls = d.i[live], d.j[live], d.split[live], cls[live]
    if not len(i):
        return Triples.empty(k)
    tv = d.tv(table, i, j)
    n_i, n_j = d.visits[i], d.visits[j]
    evidence = tv - 1 / np.sqrt(np.minimum(n_i, n_j))
    cost = np.maximum(0, samples - n_i) + np.maximum(0, samples - n_j)
    best = ties.lexsort((cost, -evidence, cls))
    pick = best[np.r_[True, cls[best][1:] != cls[best][:-1]]]
    i, j = i[pick], j[pick]
    return Triples(
        d.pairs[i] // S,
        d.pairs[j] // S,
        d.pairs[i] % S,
        d.visits[i],
        d.visits[j],
        tv[pick],
        evidence[pick],
        split[pick].T.copy(),
        settled[cls[pick]],
    )


@attrs.frozen
class Separation:
    """How the recorded triples bear on the machines that survive: the machine ``pairs``, the
    ``triples`` some survivors merge and others split, how many are ``settled`` (``samples``
    visits on both words), the largest total variation ``max_tv`` seen at a settled one, and
    the bound's ``resolution`` there (a difference at least that large would have been a
    negative example). ``pairs_split``: the machine pairs some recorded triple tells apart."""

    machines: int
    pairs_split: int
    triples: int
    settled: int
    max_tv: float
    samples: int
    resolution: float

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
        if self.triples and self.settled == self.triples:
            text += (
                f"Every such triple was asked until both words had {self.samples} visits, and the largest "
                f"total variation seen is {self.max_tv:.3f}, below the {self.resolution:.3f} the confidence bound "
                "resolves there: the expert acts alike after both words, so its behaviour does not separate them."
            )
        elif self.triples:
            text += (
                f"{self.settled} of the triples were settled ({self.samples} visits on both words, largest total "
                f"variation {self.max_tv:.3f} against the bound's {self.resolution:.3f}); the others belong to "
                "splits dropped after their settled triples showed no difference."
            )
        return text


def separation(table: CountTable, deltas: list[np.ndarray], samples: int, resolution: float) -> Separation:
    """:class:`Separation` of the machines ``deltas`` by the triples of ``table``."""
    k = len(deltas)
    if k <= 1:
        return Separation(k, 0, 0, 0, 0.0, samples, resolution)
    d = _Disagreements.of(table, deltas)
    done = np.minimum(d.visits[d.i], d.visits[d.j]) >= samples
    tv = d.tv(table, d.i[done], d.j[done]) if done.any() else np.zeros(0)
    covered = np.zeros((k, k), dtype=bool)
    for col in np.unique(d.split, axis=0):
        covered |= col[:, None] != col[None, :]
    return Separation(
        k,
        int(np.triu(covered, 1).sum()),
        len(d.i),
        int(done.sum()),
        float(tv.max()) if len(tv) else 0.0,
        samples,
        resolution,
    )


@attrs.frozen
class RecordedRound:
    """One round: the survivors found (``machines`` optimal machines at ``cost``), the
    negative examples mined, the candidates left, the triples asked after it and the totals
    spent so far (expert ``queries`` and ``steps``)."""

    index: int
    machines: int
    complete: bool
    cost: int | None
    negatives: int
    candidates: int
    asked: int
    queries: int
    steps: int
    seconds: float

    def __str__(self) -> str:
        more = "" if self.complete else " (enumeration stopped at its limit)"
        return (
            f"round {self.index}: {_count(self.machines, 'optimal machine')}{more} (cost {self.cost}) from "
            f"{_count(self.negatives, 'negative example')}; {_count(self.candidates, 'unsettled triple')} they "
            f"disagree on, {self.asked} asked; spent {_count(self.queries, 'query', 'queries')}, "
            f"{_count(self.steps, 'step')}; {self.seconds:.1f} s"
        )


@attrs.frozen
class RecordedActiveResult:
    """What :meth:`RecordedActiveLearner.fit` found: the :class:`~rmtk.learner.LearnResult` of
    the last round (machines, solutions, negatives, prefix tree policy; ``explain()`` works on
    it), the final ``table`` of counts, the log of ``rounds``, why it ``stopped`` and which
    budget was ``exhausted`` (``None``: stopped by itself), the expert ``queries`` and
    ``steps`` spent, and how the recorded triples bear on the survivors (``separation``)."""

    result: LearnResult
    table: CountTable
    rounds: tuple[RecordedRound, ...]
    stopped: str
    exhausted: str | None
    queries: int
    steps: int
    separation: Separation

    @property
    def flagged(self) -> bool:
        return self.exhausted is not None

    @property
    def solutions(self) -> tuple:
        """The last round's solutions (up to renaming)."""
        return self.result.solutions

    @property
    def negatives(self):
        """The last round's negative examples."""
        return self.result.negatives

    def log(self) -> str:
        return "\n".join([str(r) for r in self.rounds] + [f"stopped: {self.stopped}", str(self.separation)])


@attrs.frozen
class RecordedActiveLearner:
    """See the module docstring.

    Args:
        max_nodes: the machines' nodes (MaxSAT at exactly this size, as the reacher experiment).
        alpha: confidence level of the negative examples.
        samples: visits of each word of a triple after which it is settled; the bound then
            detects a total-variation difference of :meth:`resolution` or more.
        tries: settled triples of one split after which the split is dropped (the expert acted
            alike after its two words at that many states).
        strategy: which candidates to ask (:class:`TripleStrategy`; default :class:`MostEvidence`).
        budget: what may be spent (:class:`~rmtk.active.loop.Budget`).
        max_solutions: optimal machines enumerated per round.
        max_rounds: a bound on the rounds.
        time_limit: seconds per MaxSAT enumeration.
        progress: receives one line per round.
    """

    max_nodes: int = attrs.field(default=4, validator=positive_int)
    alpha: float = 1e-3
    samples: int = attrs.field(default=100, validator=positive_int)
    tries: int = attrs.field(default=3, validator=positive_int)
    strategy: TripleStrategy = attrs.field(factory=MostEvidence)
    budget: Budget = attrs.field(factory=Budget)
    max_solutions: int = 1000
    max_rounds: int = attrs.field(default=50, validator=positive_int)
    time_limit: float | None = None
    progress: Callable[[str], None] | None = None

    def __attrs_post_init__(self):
        ConfidenceMiner(self.alpha)  # validates alpha
        if not callable(getattr(self.strategy, "choose", None)):
            raise RmtkError(f"strategy={self.strategy!r} has no choose method (see rmtk.active.recorded)")
        if not isinstance(self.budget, Budget):
            raise RmtkError(f"budget must be a rmtk.active.loop.Budget, not {type(self.budget).__name__}")

    def resolution(self, n_actions: int) -> float:
        """The smallest total-variation difference the bound detects with ``samples`` visits on both sides."""
        c = log_weissman_constant(n_actions) + math.log(2) - math.log(self.alpha)
        return min(1.0, math.sqrt(2 * c / self.samples))

    def fit(self, table: CountTable, expert) -> RecordedActiveResult:
        """Learn from the recorded ``table`` and ``expert``'s answers (see the module docstring)."""
        if not isinstance(table, CountTable):
            raise RmtkError(f"a recorded active learner starts from a count table, not {type(table).__name__}")
        if not expert.answers_queries:
            raise RmtkError(f"expert {type(expert).__name__} answers no queries")
        say = self.progress or (lambda msg: None)
        miner = ConfidenceMiner(self.alpha)
        min_count = miner.min_count(table.n_actions)
        t0 = time.perf_counter()
        spent = {"queries": 0, "steps": 0}
        rounds: list[RecordedRound] = []
        settled: set = set()
        stopped, exhausted = "", None
        while True:
            ptp = to_policy(prune_counts(table, min_count))
            neg = miner.mine(ptp)
            res = MaxSatEncoder().search(
                Problem(table.trie, table.n_letters, neg),
                SearchLimits(
                    max_nodes=self.max_nodes,
                    max_solutions=self.max_solutions,
                    deadline=Deadline.after(self.time_limit),
                ),
            )
            deltas = [s.delta_u for s in res.solutions]
            triples = candidate_triples(table, deltas, self.samples, self.tries) if len(deltas) > 1 else None
            n_cand = len(triples) if triples is not None else 0
            chosen: list[int] = []
            if len(deltas) == 0:
                stopped = res.message or f"no machine of {self.max_nodes} nodes"
            elif len(deltas) == 1:
                stopped = "one machine survives"
            elif n_cand == 0:
                stopped = f"{len(deltas)} machines survive, and no recorded triple they disagree on is left to ask"
            else:
                exhausted = self._exhausted(spent, t0) or ("rounds" if len(rounds) + 1 >= self.max_rounds else None)
                if exhausted:
                    stopped = f"the {exhausted} budget is spent: the survivors so far"
                else:
                    assert triples is not None
                    chosen = list(self.strategy.choose(triples, self.samples))
            asked = 0
            if chosen:
                assert triples is not None
                table, asked = self._ask(table, expert, triples, chosen, spent, t0, settled)
                if asked == 0:
                    exhausted = self._exhausted(spent, t0) or "steps"
                    stopped = f"the {exhausted} budget is spent: the survivors so far"
            rounds.append(
                RecordedRound(
                    len(rounds),
                    len(deltas),
                    res.complete,
                    res.cost,
                    len(neg),
                    n_cand,
                    asked,
                    spent["queries"],
                    spent["steps"],
                    time.perf_counter() - t0,
                )
            )
            say(str(rounds[-1]))
            if stopped:
                break
        sep = separation(table, deltas, self.samples, self.resolution(table.n_actions))
        space = getattr(table, "space", None) or expert.mdp
        result = LearnResult(
            _machines(space, res) if res.n_nodes is not None else (),
            res.solutions,
            res,
            None,
            ptp.tree,
            space,
            None,
            {"total": time.perf_counter() - t0},
            negatives=neg,
            ptp=ptp,
        )
        return RecordedActiveResult(
            result, table, tuple(rounds), stopped, exhausted, spent["queries"], spent["steps"], sep
        )

    def _exhausted(self, spent, t0) -> str | None:
        return self.budget.spent(spent["queries"], spent["steps"], t0)

    def _ask(self, table, expert, triples: Triples, chosen, spent, t0, settled) -> tuple[CountTable, int]:
        """Ask the expert on both words of the triples chosen; the table with the answers in."""
        S, A = table.n_states, table.n_actions
        keys, counts, asked = [], [], 0
        b = self.budget
        for c in chosen:
            sides = [(int(triples.p[c]), int(triples.n_p[c])), (int(triples.q[c]), int(triples.n_q[c]))]
            need = sum(max(0, self.samples - n) for _, n in sides)
            if b.steps is not None and spent["steps"] + need > b.steps:
                break
            if b.queries is not None and spent["queries"] + 2 > b.queries:
                break
            if b.seconds is not None and time.perf_counter() - t0 >= b.seconds:
                break
            s = int(triples.state[c])
            for node, n in sides:
                if n >= self.samples or (node, s) in settled:
                    continue
                obs = expert.act(tuple(table.trie.word(node)), s, self.samples - n)
                spent["queries"] += 1
                spent["steps"] += obs.steps
                a = np.flatnonzero(obs.values[0])
                keys.append((node * S + s) * A + a)
                counts.append(obs.values[0][a].astype(np.int64))
                settled.add((node, s))
            asked += 1
        if not keys:
            return table, asked
        k = np.concatenate([table.keys, *keys])
        v = np.concatenate([table.counts, *counts])
        uniq, inv = np.unique(k, return_inverse=True)
        merged = np.bincount(inv, weights=v, minlength=len(uniq)).astype(np.int64)
        return attrs.evolve(table, keys=uniq, counts=merged), asked
