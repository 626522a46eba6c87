"""What to ask the expert next (docs/design.md, section 12): the query strategy of active
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

from .. import ties
from ..equivalence import clash_pairs, compressed, exercised, sync_product
from ..errors import RmtkError
from ..mdp import LabeledMDP
from ..validators import positive_int
from .experts import Observations


@attrs.frozen
class Query:
    """One question: the expert's action at ``state`` after ``word`` (``samples`` draws for an
    expert that is run), asked because the witness (``word``, ``partner``, ``state``) separates
    the surviving pairs ``pairs`` (machine indices of the round, 0-based; ``(i, i)``: it uses a
    free transition of machine ``i``)."""

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
    :class:`~rmtk.active.survivors.Knowledge` and machines of one node more that fit it too (to test
    a lone survivor against), and returns :class:`Query` objects (none: nothing worth asking).
    ``alternatives``: how many such machines it wants per round (0: none). ``free(mdp,
    solutions, knowledge)``: questions that make the survivors' free transitions (those no
    known word uses, :class:`~rmtk.sat.search.Solution` ``used``) constrained, where the MDP can
    use them."""

    @property
    def alternatives(self) -> int: ...

    def choose(self, mdp, deltas: list[np.ndarray], knowledge, expert, alternatives=()) -> list[Query]: ...

    def free(self, mdp, solutions, knowledge) -> list[Query]: ...


@runtime_checkable
class EquivalenceCheck(Protocol):
    """Looks for behaviour the survivors fail to explain: ``run(expert, walks, knowledge,
    deltas)`` returns the answers to fold in and the number of questions asked (``walks``:
    how many runs the budget allows, ``None``: all; ``deltas``: the survivors); ``steps(walks)``
    is the environment steps that costs and ``walks`` the runs it makes."""

    @property
    def walks(self) -> int: ...

    def run(self, expert, walks: int | None = None, knowledge=None, deltas=()) -> tuple[list[Observations], int]: ...

    def steps(self, walks: int) -> int: ...


def _final(delta: np.ndarray, word) -> int:
    u = 0
    for k in word:
        u = int(delta[u, k])
    return u


class _Finals:
    """The node each of several machines (of any sizes) ends in after a word, all at once."""

    def __init__(self, deltas):
        n, K = max(d.shape[0] for d in deltas), deltas[0].shape[1]
        self.delta = np.zeros((len(deltas), n, K), np.int64)
        for m, d in enumerate(deltas):
            self.delta[m, : d.shape[0]] = d
        self.rows = np.arange(len(deltas))

    def __call__(self, word) -> np.ndarray:
        u = np.zeros(len(self.rows), np.int64)
        for k in word:
            u = self.delta[self.rows, u, k]
        return u


def _separated(split: np.ndarray, open_pairs: np.ndarray) -> np.ndarray:
    """Open pairs of survivors each candidate separates (one merges its words, the other splits)."""
    S = split.astype(np.int64)
    O = np.triu(open_pairs, 1).astype(np.int64)
    O = O + O.T
    M = O @ S
    return ((1 - S) * M + S * (O.sum(axis=1)[:, None] - M)).sum(axis=0) // 2


@attrs.frozen
class SplitMostPairs:
    """The default query strategy (see the module docstring).

    Args:
        samples: actions to have drawn at each history asked, for an expert that is run (an
            exact expert is asked once).
        products: at most this many pairs of survivors get their synchronised product
            searched for witnesses per round (the open pairs in order).
        per_product: witnesses taken from each product and direction, the shortest first.
        data_pairs: the recorded tree's triples are candidates while it holds at most this
            many (word, state) pairs.
        alternatives: machines of one node more to test a lone survivor against, per round.
        per_transition: transition tests of a lone survivor per transition (:meth:`tests`);
            default 1 for an exact expert, 2 for one that is run (drawn actions can hide a
            small difference, so one test per transition says less).
    """

    samples: int = attrs.field(default=200, validator=positive_int)
    alternatives: int = attrs.field(default=4, validator=attrs.validators.ge(0))
    per_transition: int | None = attrs.field(default=None, validator=attrs.validators.optional(attrs.validators.ge(0)))
    per_product: int = attrs.field(default=8, validator=positive_int)
    products: int = attrs.field(default=24, validator=positive_int)
    data_pairs: int = attrs.field(default=4000, validator=positive_int)

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
                    for x, y in clash_pairs(group, cls, prod.depth, self.per_product):
                        w1, w2 = prod.word(x, mdp.labels), prod.word(y, mdp.labels)
                        if knowledge.compressed:
                            w1, w2 = compressed(w1), compressed(w2)
                        key = tuple(sorted((tuple(w1), tuple(w2)))) + (int(s[x]),)
                        out.setdefault(key, None)
        ptp = knowledge.ptp() if not knowledge.exact else None
        if ptp is not None and ptp.n_pairs <= self.data_pairs:
            from ..explain import _disagreements

            p, q, _ = _disagreements(ptp, deltas)
            node, state = np.asarray(ptp.tree.pair_node), np.asarray(ptp.tree.pair_state)
            for x, y in zip(p.tolist(), q.tolist()):
                v1, v2 = tuple(ptp.trie.word(int(node[x]))), tuple(ptp.trie.word(int(node[y])))
                out.setdefault(tuple(sorted((v1, v2))) + (int(state[x]),), None)
        return out

    def free(self, mdp, solutions, knowledge) -> list[Query]:
        """For each transition of a survivor that no known word uses but some word of the
        MDP would, the shortest such history: asking it makes the transition constrained."""
        if not isinstance(mdp, LabeledMDP):
            return []
        out: dict = {}
        lab = mdp.labels
        succ = mdp.successor_matrix()
        for m, sol in enumerate(solutions):
            delta = np.asarray(sol.delta_u)
            prod = sync_product(mdp, np.zeros((1, delta.shape[1]), np.int64), delta)
            todo = exercised(prod, mdp, delta, compress=knowledge.compressed) & ~np.asarray(sol.used)
            for i in range(prod.size):
                if not todo.any():
                    break
                s, h = int(prod.states[i]), int(prod.b[i])
                if not todo[h].any():
                    continue
                for s2 in succ.indices[succ.indptr[s] : succ.indptr[s + 1]].tolist():
                    k = int(lab[s2])
                    if todo[h, k] and (k != lab[s] or not knowledge.compressed):
                        todo[h, k] = False
                        word = tuple(compressed(prod.word(i, lab)) if knowledge.compressed else prod.word(i, lab))
                        word = word + (k,)
                        need = self._need(knowledge, word, s2, knowledge.exact)
                        if need > 0:
                            out.setdefault(
                                (word, s2),
                                Query(word, s2, 1 if knowledge.exact else int(need), (), ((m, m),), float(need)),
                            )
        return list(out.values())

    def tests(self, mdp, solutions, knowledge) -> list[Query]:
        """Transition tests of a lone survivor: for each of its transitions, the first
        ``per_transition`` (state, node) pairs reached after it whose shortest word overall
        differs from the shortest one through the transition, and, for an exact expert (whose
        answers cost an evaluation, not draws), the first ``per_transition`` whose shortest
        word overall does not use the transition at all; the survivor predicts the expert acts
        alike after both words (a check in the manner of a transition cover)."""
        if not isinstance(mdp, LabeledMDP) or len(solutions) != 1:
            return []
        delta = np.asarray(solutions[0].delta_u)
        lab, comp = mdp.labels, knowledge.compressed
        per = self.per_transition if self.per_transition is not None else (1 if knowledge.exact else 2)
        succ = mdp.successor_matrix()
        nxt = [succ.indices[succ.indptr[s] : succ.indptr[s + 1]].tolist() for s in range(mdp.n_states)]
        prod = sync_product(mdp, np.zeros((1, delta.shape[1]), np.int64), delta)
        shortest: dict[tuple[int, int], tuple[int, ...]] = {}
        for i in range(prod.size):
            w = prod.word(i, lab)
            shortest[(int(prod.states[i]), int(prod.b[i]))] = tuple(compressed(w) if comp else w)

        def grow(word, k):
            return word if comp and word and word[-1] == k else word + (k,)

        def uses(word, h, k) -> bool:
            u = 0
            for x in word:
                if (u, x) == (h, k):
                    return True
                u = int(delta[u, x])
            return False

        out: dict = {}
        for h, k in sorted(
            {(h, int(lab[s2])) for (s, h) in shortest for s2 in nxt[s] if not (comp and lab[s2] == lab[s])}
        ):
            frontier = [
                (s2, int(delta[h, k]), grow(w, k))
                for (s, hh), w in shortest.items()
                if hh == h
                for s2 in nxt[s]
                if lab[s2] == k and not (comp and lab[s] == k)
            ]
            frontier.sort(key=lambda t: len(t[2]))
            expanded, tested = set(), set()
            found: list = []  # in the order reached
            good: list = []  # those whose shortest word does not use the transition
            while frontier and ((knowledge.exact and len(good) < per) or len(found) < per):
                step = []
                for s, g, w in frontier:
                    w0 = shortest.get((s, g))
                    if w0 is not None and w0 != w and (s, g) not in tested:
                        tested.add((s, g))
                        found.append((s, w, w0))
                        if not uses(w0, h, k):
                            good.append((s, w, w0))
                    if (s, g) not in expanded:
                        expanded.add((s, g))
                        step += [(s2, int(delta[g, lab[s2]]), grow(w, int(lab[s2]))) for s2 in nxt[s]]
                frontier = step
            for s, w, w0 in dict.fromkeys(found[:per] + (good[:per] if knowledge.exact else [])):
                for word, partner in ((w, w0), (w0, w)):
                    need = self._need(knowledge, word, s, knowledge.exact)
                    if need > 0:
                        out.setdefault(
                            (word, s),
                            Query(word, s, 1 if knowledge.exact else int(need), partner, ((0, 0),), float(need)),
                        )
        return list(out.values())

    def choose(self, mdp, deltas, knowledge, expert, alternatives=()) -> list[Query]:
        n_surv = len(deltas)
        deltas = list(deltas) + list(alternatives)
        k = len(deltas)
        if k < 2:
            return []
        open_pairs = np.triu(np.ones((k, k), dtype=bool), 1)
        open_pairs[n_surv:, n_surv:] = False  # alternatives are only there to test the survivors
        pairs = [(int(i), int(j)) for i, j in np.argwhere(open_pairs)[: self.products]]
        exact = knowledge.exact
        cands, needs, splits = [], [], []
        finals = _Finals(deltas)
        for w1, w2, s in self.candidates(mdp, deltas, knowledge, pairs):
            need = (self._need(knowledge, w1, s, exact), self._need(knowledge, w2, s, exact))
            if sum(need) == 0:
                continue
            split = finals(w1) != finals(w2)
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
            best = int(ties.lexsort((length, -gain / cost))[0])
            if gain[best] == 0:
                break
            col = split[:, best]
            separated = open_pairs & (col[:, None] != col[None, :])
            split_pairs = tuple((int(i), int(j)) for i, j in np.argwhere(separated).tolist())
            open_pairs &= col[:, None] == col[None, :]
            w1, w2, s = cands[best]
            for word, partner, more in ((w1, w2, needs[best][0]), (w2, w1, needs[best][1])):
                if more > 0 and (word, s) not in asked:
                    asked.add((word, s))
                    out.append(Query(word, s, 1 if exact else int(more), partner, split_pairs, float(more)))
            split[:, best] = False  # not picked twice
        return out


def _groups(knowledge, deltas) -> set:
    """(machine, state, node) of every (word, state) known, for each machine of ``deltas``."""
    ptp = knowledge.ptp()
    if ptp is None:
        return set()
    node, state = np.asarray(ptp.tree.pair_node), np.asarray(ptp.tree.pair_state)
    return {
        (m, int(s), int(h))
        for m, d in enumerate(deltas)
        for s, h in zip(state.tolist(), ptp.trie.run(d, 0)[node].tolist())
    }


@attrs.frozen
class ExpertWalks:
    """The sampled equivalence check: ``walks`` runs of the expert from the start, ``length``
    steps each, a uniform move with probability ``explore`` (see the module docstring). From
    an expert that is run, the actions drawn are the observations. From an exact expert, at
    most ``evaluations`` of the (word, state) pairs visited are asked: first those where a
    survivor predicts the class of a known pair (same state and node), the longest words
    first, then pairs of states and nodes nothing is known at."""

    walks: int = attrs.field(default=5, validator=positive_int)
    length: int = attrs.field(default=40, validator=positive_int)
    explore: float = 0.5
    evaluations: int = attrs.field(default=20, validator=positive_int)

    def __attrs_post_init__(self):
        if not 0.0 <= self.explore <= 1.0:
            raise RmtkError(f"explore must be a probability in [0, 1], got {self.explore!r}")

    def steps(self, walks: int) -> int:
        return walks * self.length

    def run(self, expert, walks: int | None = None, knowledge=None, deltas=()) -> tuple[list[Observations], int]:
        """What ``walks`` (default: all) runs of the expert show, as answers to fold in, and
        the number of questions asked (walks, plus evaluations for an exact expert)."""
        walks = self.walks if walks is None else walks
        seen = expert.extend(None, None, self.length, walks, self.explore)
        if not expert.exact:
            return [seen], walks
        known = _groups(knowledge, deltas) if knowledge is not None else set()
        tests: list = []
        fresh: list = []
        for word, s in zip(seen.words, seen.states.tolist()):
            if knowledge is not None and knowledge.visits(word, s):
                continue
            nodes = [(m, s, _final(d, word)) for m, d in enumerate(deltas)]
            (tests if any(g in known for g in nodes) else fresh).append((-len(word), len(tests) + len(fresh), word, s))
        chosen = (sorted(tests) + sorted(fresh))[: self.evaluations]
        answers = [expert.act(word, s) for _, _, word, s in chosen]
        steps = Observations((), np.empty(0, np.int64), np.empty((0, expert.mdp.n_actions)), True, seen.steps)
        return [steps] + answers, walks + len(answers)


@attrs.frozen
class ProductCheck:
    """The exact equivalence check of an expert whose policy is known (one with a
    ``product_oracle``, as :class:`~rmtk.active.experts.TaskExpert`): each survivor is checked on the
    synchronised product of the MDP, the expert's memory and the survivor, at every depth
    (:class:`~rmtk.sat.lazy.ProductOracle`); for each survivor that fails, the expert is asked at
    the two histories of up to ``per_machine`` of its shortest counterexamples (two
    histories it acts differently after that the survivor merges). None found: every
    survivor is policy-equivalent to the expert, a proof, not a sample. One check is one
    query; each history asked is one more (and one policy evaluation). ``exact``: the loop
    skips the transition tests and alternatives, which stand in for a check that samples."""

    per_machine: int = attrs.field(default=1, validator=positive_int)
    walks: int = attrs.field(default=1, init=False)
    exact: bool = attrs.field(default=True, init=False)

    def steps(self, walks: int) -> int:
        return 0

    def run(self, expert, walks: int | None = None, knowledge=None, deltas=()) -> tuple[list[Observations], int]:
        oracle = getattr(expert, "product_oracle", None)
        if not callable(oracle):
            raise RmtkError(
                f"the exact equivalence check asks an expert whose policy is known (a product_oracle method); "
                f"{type(expert).__name__} has none: use ExpertWalks"
            )
        product = oracle(self.per_machine)
        answers, asked = [], set()
        for delta in deltas:
            for cex in product.check(np.asarray(delta)):
                for word in (cex.word1, cex.word2):
                    key = (tuple(word), int(cex.state))
                    if key in asked or (knowledge is not None and knowledge.visits(*key)):
                        continue
                    asked.add(key)
                    answers.append(expert.act(key[0], key[1]))
        return answers, 1 + len(answers)
