"""What to ask the expert next (docs/design.md, section 11): the query strategy of active
learning and the sampled equivalence check.

A :class:`QueryStrategy` looks at the surviving machines and what is known, and returns the
questions worth their cost. rmtk's :class:`SplitMostPairs` takes as candidates the witnesses
of the surviving pairs (a state and two label words reaching it that some survivors send to
one node and others to two: every group of the synchronised product of the MDP with two
survivors where one merges what the other splits, :func:`rmtk.equivalence.clash_pairs`) and,
from counted data, the (word, word, state) triples of the recorded tree the survivors disagree
on (the rare triples of :mod:`rmtk.explain`). It picks, greedily, the candidate separating the
most open pairs of survivors per unit of cost, until every pair is covered (as the witness
cover does), and asks the expert at both histories of each pick where not enough is known.

Cost model: an exact expert's answer costs one policy evaluation per (history, state) never
asked; a run expert's costs the actions still to be drawn there (``samples`` minus the
visits already counted), one environment step each. Candidates whose histories are both
known cost nothing more and are dropped: their answer is in already.

:class:`ExpertWalks` is the equivalence check (a random-walk oracle): ``walks`` runs of the
expert from the start, ``length`` steps each, moving by a uniform action with probability
``explore``; what it observes is folded in, and a survivor it refutes is a counterexample.
"""
from __future__ import annotations

from typing import Protocol, runtime_checkable

import attrs
import numpy as np

from .equivalence import clash_pairs, compressed, sync_product
from .errors import RmtkError
from .expert import Observations
from .mdp import LabeledMDP


@attrs.frozen
class Query:
    """One question: the expert's action at ``state`` after ``word`` (``samples`` draws for an
    expert that is run), asked because the witness (``word``, ``partner``, ``state``) separates
    the surviving pairs ``pairs`` (machine indices of the round, 0-based)."""

    word: tuple[int, ...]
    state: int
    samples: int
    partner: tuple[int, ...]
    pairs: tuple[tuple[int, int], ...]
    cost: float


@runtime_checkable
class QueryStrategy(Protocol):
    """Chooses the questions of a round: ``choose(mdp, deltas, knowledge, expert,
    alternatives)`` gets the survivors' ``(n, K)`` transition arrays, the
    :class:`~rmtk.survivors.Knowledge` and machines of one node more that fit it too (to test
    a lone survivor against), and returns :class:`Query` objects (none: nothing worth asking).
    ``alternatives``: how many such machines it wants per round (0: none)."""

    alternatives: int

    def choose(self, mdp, deltas: list[np.ndarray], knowledge, expert, alternatives=()) -> list[Query]: ...


@runtime_checkable
class EquivalenceCheck(Protocol):
    """Looks for behaviour the survivors fail to explain: ``run(expert, walks)`` returns what
    the expert showed (``walks``: how many of its runs the budget allows, ``None``: all);
    ``steps(walks)`` is the environment steps that costs and ``walks`` the runs it makes."""

    walks: int

    def run(self, expert, walks: int | None = None) -> Observations: ...

    def steps(self, walks: int) -> int: ...


def _final(delta: np.ndarray, word) -> int:
    u = 0
    for k in word:
        u = int(delta[u, k])
    return u


def _separated(split: np.ndarray, open_pairs: np.ndarray) -> np.ndarray:
    """Open pairs of survivors each candidate separates (one merges its words, the other splits)."""
    S = split.astype(np.int64)
    O = np.triu(open_pairs, 1).astype(np.int64)
    O = O + O.T
    M = O @ S
    return ((1 - S) * M + S * (O.sum(axis=1)[:, None] - M)).sum(axis=0) // 2


def _positive(instance, attribute, value):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise RmtkError(f"{attribute.name} must be a whole number of at least 1, got {value!r}")


@attrs.frozen
class SplitMostPairs:
    """The default query strategy (see the module docstring).

    Args:
        samples: actions to have drawn at each history asked, for an expert that is run (an
            exact expert is asked once).
        products: at most this many pairs of survivors get their synchronised product
            searched for witnesses per round (the open pairs in order).
        data_pairs: the recorded tree's triples are candidates while it holds at most this
            many (word, state) pairs.
        alternatives: machines of one node more to test a lone survivor against, per round.
    """

    samples: int = attrs.field(default=200, validator=_positive)
    alternatives: int = attrs.field(default=16, validator=attrs.validators.ge(0))
    products: int = attrs.field(default=64, validator=_positive)
    data_pairs: int = attrs.field(default=4000, validator=_positive)

    def _need(self, knowledge, word, state, exact: bool) -> float:
        seen = knowledge.visits(word, state)
        return (0.0 if seen else 1.0) if exact else max(0.0, self.samples - seen)

    def candidates(self, mdp, deltas, knowledge, pairs) -> dict:
        """``(word1, word2, state) -> None`` for every candidate witness of the machine
        ``pairs`` (deduplicated, in order)."""
        out: dict = {}
        if isinstance(mdp, LabeledMDP):
            for i, j in pairs[: self.products]:
                prod = sync_product(mdp, deltas[i], deltas[j])
                s, a, b = prod.states, prod.a, prod.b
                for group, cls in ((s * prod.nb + b, a), (s * prod.na + a, b)):
                    for x, y in clash_pairs(group, cls, prod.depth):
                        w1, w2 = prod.word(x, mdp.labels), prod.word(y, mdp.labels)
                        if knowledge.compressed:
                            w1, w2 = compressed(w1), compressed(w2)
                        key = tuple(sorted((tuple(w1), tuple(w2)))) + (int(s[x]),)
                        out.setdefault(key, None)
        ptp = knowledge.ptp() if not knowledge.exact else None
        if ptp is not None and ptp.n_pairs <= self.data_pairs:
            from .explain import _disagreements

            p, q, _ = _disagreements(ptp, deltas)
            node, state = np.asarray(ptp.tree.pair_node), np.asarray(ptp.tree.pair_state)
            for x, y in zip(p.tolist(), q.tolist()):
                w1, w2 = tuple(ptp.trie.word(int(node[x]))), tuple(ptp.trie.word(int(node[y])))
                out.setdefault(tuple(sorted((w1, w2))) + (int(state[x]),), None)
        return out

    def choose(self, mdp, deltas, knowledge, expert, alternatives=()) -> list[Query]:
        n_surv = len(deltas)
        deltas = list(deltas) + list(alternatives)
        k = len(deltas)
        if k < 2:
            return []
        open_pairs = np.triu(np.ones((k, k), dtype=bool), 1)
        open_pairs[n_surv:, n_surv:] = False  # alternatives are only there to test the survivors
        pairs = [tuple(map(int, ij)) for ij in np.argwhere(open_pairs)]
        exact = knowledge.exact
        cands, needs, splits = [], [], []
        for w1, w2, s in self.candidates(mdp, deltas, knowledge, pairs):
            need = (self._need(knowledge, w1, s, exact), self._need(knowledge, w2, s, exact))
            if sum(need) == 0:
                continue
            split = np.array([_final(d, w1) != _final(d, w2) for d in deltas])
            if split.all() or not split.any():
                continue
            cands.append((w1, w2, s))
            needs.append(need)
            splits.append(split)
        if not cands:
            return []
        split = np.stack(splits, axis=1)
        cost = np.array([sum(n) for n in needs])
        length = np.array([len(c[0]) + len(c[1]) for c in cands])
        out: list[Query] = []
        asked: set = set()
        while open_pairs.any():
            gain = _separated(split, open_pairs)
            best = int(np.lexsort((length, -gain / cost))[0])
            if gain[best] == 0:
                break
            col = split[:, best]
            separated = open_pairs & (col[:, None] != col[None, :])
            pairs = tuple((int(i), int(j)) for i, j in np.argwhere(separated))
            open_pairs &= col[:, None] == col[None, :]
            w1, w2, s = cands[best]
            for word, partner, need in ((w1, w2, needs[best][0]), (w2, w1, needs[best][1])):
                if need > 0 and (word, s) not in asked:
                    asked.add((word, s))
                    out.append(Query(word, s, 1 if exact else int(need), partner, pairs, float(need)))
            split[:, best] = False  # not picked twice
        return out


@attrs.frozen
class ExpertWalks:
    """The sampled equivalence check: ``walks`` runs of the expert from the start, ``length``
    steps each, a uniform move with probability ``explore`` (see the module docstring)."""

    walks: int = attrs.field(default=5, validator=_positive)
    length: int = attrs.field(default=40, validator=_positive)
    explore: float = 0.5

    def __attrs_post_init__(self):
        if not 0.0 <= self.explore <= 1.0:
            raise RmtkError(f"explore must be a probability in [0, 1], got {self.explore!r}")

    def steps(self, walks: int) -> int:
        return walks * self.length

    def run(self, expert, walks: int | None = None) -> Observations:
        """What ``walks`` (default: all) runs of the expert observe."""
        return expert.extend(None, None, self.length, self.walks if walks is None else walks, self.explore)
