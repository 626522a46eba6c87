"""What to ask the expert next (docs/design/12-active-learning.md): the question strategies of active
learning.

A round needs a *hypothesis* (a smallest machine consistent with what is known) and questions
that refute it or a *rival* (another machine consistent with what is known), not the list of
every survivor. A :class:`QuestionStrategy` opens, for one run, an :class:`Inquiry` that finds
each round's :class:`Hypotheses` and chooses questions of the kinds the strategy declares
(:class:`StrategyCapabilities`):

* ``"split"``: questions that tell the hypothesis and its rivals apart (both histories of a
  witness some of them merge and others split);
* ``"free"``: histories that use a transition of a machine no known word uses;
* ``"tests"``: transition tests of a lone hypothesis (for a check that samples);
* ``"alternatives"``: witnesses against machines of one node more (likewise).

The loop asks the kinds in this order and, when none gives a question, runs the equivalence
check (:mod:`rmtk.active.checks`); only at the end does the inquiry list the survivors,
bounded by ``max_solutions``.

:class:`SplitMostPairs` (the default, for an environment with a model) takes the hypothesis and
up to ``rivals`` more machines from the lazy search on solvers kept between rounds
(:class:`~rmtk.active.survivors.Survivors`: the rivals are its next models, each checked against
what is known), and as candidate questions the witnesses of their pairs (every group of the
synchronised product of the MDP with two of them where one merges two words and the other splits
them, :func:`rmtk.machine.equivalence.clash_pairs`) and, from counted data, the recorded triples they
disagree on (:func:`rmtk.ptp.tree.disagreements`). It picks, greedily, the candidate separating
the most open pairs per unit of cost, until every pair is covered, and asks both histories of
each pick where not enough is known. Memory and time per round depend on ``rivals``, never on
how many machines survive. :class:`~rmtk.active.recorded.AtRecordedTriples` asks only at
recorded histories, with no model.

Cost model: an exact expert's answer costs one policy evaluation per (history, state) never
asked; a run expert's costs the next batch of its comparison (the sequential test of
:mod:`rmtk.active.sampling`: the less visited history raised first, then both), in policy
draws and the environment steps the expert declares. Candidates whose answer is in (both
histories known; from a run expert, their comparison decided: separated, resolved to the
run's target resolution, or capped) cost nothing more and are dropped.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import attrs
import numpy as np

from .. import ties
from ..errors import RmtkError
from ..learner.capabilities import Capabilities
from ..learner.explain import separated
from ..limits import NEVER, Deadline
from ..machine.equivalence import clash_pairs, compressed, exercised, sync_product
from ..mdp.model import LabeledMDP
from ..mdp.space import Space
from ..progress import Progress
from ..ptp.tree import disagreements
from ..sat.encoders import SatEncoder
from ..sat.encoding import VarPool
from ..sat.search import SearchResult, canonical_partial, record
from ..validators import positive_int, unit_interval, whole
from .knowledge import Knowledge
from .reuse import Counted
from .sampling import Query, needs
from .survivors import Survivors
from .witnesses import label_distances, nearest, nearest_change

__all__ = [
    "KINDS",
    "Query",
    "Setting",
    "Hypotheses",
    "Inquiry",
    "StrategyCapabilities",
    "QuestionStrategy",
    "SplitMostPairs",
]

#: The kinds of question, in the order the loop asks them (see the module docstring).
KINDS = ("split", "free", "tests", "alternatives")


@attrs.frozen
class Setting:
    """What a question strategy is told when a run starts: the environment (``mdp``: a
    :class:`~rmtk.mdp.model.LabeledMDP`, or a :class:`~rmtk.mdp.space.Space` without a model), what is
    known (``knowledge``, which the loop grows with every answer), the ``encoder`` (``None``:
    the strategy's default), the node bound, ``max_solutions`` (the survivors listed at the end),
    whether the expert's answers are ``exact``, the run's ``deadline`` and ``progress``."""

    mdp: LabeledMDP | Space
    knowledge: Knowledge
    encoder: SatEncoder | None
    max_nodes: int
    max_solutions: int | None
    exact: bool
    deadline: Deadline = NEVER
    progress: Progress = attrs.field(factory=Progress)


@attrs.frozen
class Hypotheses:
    """A round's machines: the hypothesis first, then its rivals (``(n, K)`` transition arrays
    of ``nodes`` nodes, with the transitions known words ``used``); ``complete``: they are every
    machine that survives (up to renaming). ``nodes`` is ``None`` when none survives (``message``
    says why: no machine within the bound, or the deadline). ``keys``: renaming-invariant keys of
    the machines (what :class:`~rmtk.active.cycles.Verdicts` remembers as checked). ``negatives``,
    ``cost``, ``rebuilt``: what the search used, when the strategy says."""

    nodes: int | None
    machines: tuple = ()
    used: tuple = ()
    complete: bool = True
    message: str = ""
    negatives: int | None = None
    cost: int | None = None
    rebuilt: bool = False

    @property
    def keys(self) -> tuple:
        return tuple(
            sorted(canonical_partial(np.asarray(d), np.asarray(u))[0] for d, u in zip(self.machines, self.used))
        )

    def __len__(self) -> int:
        return len(self.machines)

    def as_result(self, n_letters: int) -> SearchResult:
        """These machines as a search result, flagged incomplete (when a run ended before it
        could list the survivors)."""
        found: dict = {}
        for d, u in zip(self.machines, self.used):
            d = np.asarray(d)
            record(found, d, np.asarray(u), VarPool(d.shape[0], n_letters, 0, 0), True)
        return SearchResult(
            self.nodes,
            tuple(found.values()),
            False,
            (),
            0,
            0,
            0.0,
            0.0,
            0.0,
            "the run ended before the survivors were listed",
        )


@runtime_checkable
class Inquiry(Protocol):
    """One run of a question strategy (see the module docstring)."""

    def round(self) -> Hypotheses:
        """The hypothesis and its rivals under what is known now."""

    def choose(self, kind: str, hypotheses: Hypotheses) -> list[Query]:
        """Questions of ``kind`` (one of the strategy's ``kinds``) worth their cost; none:
        nothing of that kind to ask."""

    def survivors(self, limit: int | None, judge=None) -> SearchResult:
        """The machines that survive, at most ``limit`` (``None``: all); ``judge(delta_u)``: a
        machine it refuses (the exact check found a counterexample, now asked) stops the
        listing, unfinished."""

    def known(self) -> tuple:
        """``(ptp, negatives, oracle)`` of what is known, for the result (the prefix tree
        policy, its negative examples, the oracle that checks candidates against it)."""

    def separation(self, solutions) -> object | None:
        """What the strategy can say of the survivors it leaves (or ``None``)."""

    def close(self) -> None:
        """Free the solvers."""


class StrategyCapabilities(Capabilities):
    """What a question strategy declares, with the defaults of one that does not say."""

    __slots__ = ()

    #: The kinds of question it offers (a subset of :data:`KINDS`, asked in that order).
    #: Default: ``("split",)``.
    kinds: tuple[str, ...] = ("split",)

    #: It needs a transition model (a :class:`~rmtk.mdp.model.LabeledMDP`: synchronised products);
    #: ``False``: it asks at recorded histories only. Default: ``True``.
    needs_model: bool = True

    #: What its split questions are called in the message when none is left (default ``"question"``).
    question: str = "question"

    #: From an expert that is run, the share of a round's undecided comparisons each batch goes
    #: to, those with the most evidence of a difference first (:func:`~rmtk.active.sampling.sample`).
    #: Default ``1.0``, all of them.
    focus: float = 1.0

    def default_check(self, expert) -> object | None:
        """The equivalence check to run when none is given, for an expert declaring
        ``expert`` (:class:`~rmtk.active.experts.ExpertCapabilities`): the exact check when it
        offers an exact product oracle, else the conformance suite on the model, compared at the
        run's target resolution (:class:`~rmtk.active.conformance.SuiteCheck`). ``None``: none
        (the loop stops when no question is left)."""
        from .checks import ProductCheck
        from .conformance import SuiteCheck

        return ProductCheck() if expert.equivalence else SuiteCheck()


@runtime_checkable
class QuestionStrategy(Protocol):
    """How a run finds its questions: ``start(setting)`` opens the run's :class:`Inquiry`,
    whose ``choose`` picks each round's questions. What else it can do it declares through
    :class:`StrategyCapabilities`."""

    def start(self, setting: Setting) -> Inquiry: ...


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


@attrs.frozen
class SplitMostPairs(StrategyCapabilities):
    """The default question strategy (see the module docstring).

    Args:
        samples: the most actions drawn at a history, for an expert that is run (``None``, the
            default: no cap; each witness's two histories are sampled until the expert is seen to
            act differently after them or the run's target resolution is reached,
            :mod:`rmtk.active.sampling`). An exact expert is asked once.
        rivals: machines besides the hypothesis that a round's questions tell apart (the
            lazy search's next models): bounds a round's memory and time whatever survives.
        alternatives: machines of one node more to test a lone survivor against, per round.
        per_transition: transition tests of a lone survivor per transition (:meth:`tests`);
            default 1 for an exact expert, 2 for one that is run (drawn actions can hide a
            small difference, so one test per transition says less).
        per_product: witnesses taken from each product and direction, the shortest first.
        products: at most this many pairs of machines get their synchronised product
            searched for witnesses per round (the hypothesis's pairs first).
        data_pairs: the recorded tree's triples are candidates while it holds at most this
            many (word, state) pairs.
        witnesses: from an expert that is run, the comparisons a round asks at most: the greedy
            cover, then further witnesses of the same pairs (the most pairs per unit of cost
            first), so that the sequential sampling can spend where a difference shows.
        focus: the share of a round's undecided comparisons each batch goes to (those with the
            most evidence of a difference), for an expert that is run.
    """

    samples: int | None = attrs.field(default=None, validator=whole(1, optional=True))
    alternatives: int = attrs.field(default=4, validator=whole(0))
    per_transition: int | None = attrs.field(default=None, validator=whole(0, optional=True))
    per_product: int = attrs.field(default=8, validator=positive_int)
    products: int = attrs.field(default=8, validator=positive_int)
    data_pairs: int = attrs.field(default=4000, validator=positive_int)
    rivals: int = attrs.field(default=8, validator=positive_int)
    witnesses: int = attrs.field(default=16, validator=positive_int)
    focus: float = attrs.field(default=0.25, validator=unit_interval(open_low=True))
    kinds: tuple[str, ...] = attrs.field(default=KINDS, init=False)
    question: str = attrs.field(default="witness", init=False)

    def start(self, setting: Setting) -> Inquiry:
        return _Pairs(self, setting)

    def _needs(self, knowledge, pairs) -> tuple[np.ndarray, np.ndarray]:
        """Draws wanted now at each side of comparisons ``(word, partner, state)`` (``partner``
        ``()``: a lone history): for an exact expert 1 at a history not asked yet, else the next
        batch of an undecided comparison (0 and 0 once it is decided, :func:`~rmtk.active.sampling.needs`)."""
        if knowledge.exact:
            d1 = np.array([0 if knowledge.visits(w, s) else 1 for w, _, s in pairs], np.int64)
            d2 = np.array([0 if not p or knowledge.visits(p, s) else 1 for _, p, s in pairs], np.int64)
            return d1, d2
        need = needs(knowledge, pairs, [self.samples] * len(pairs))
        live = need.status == "open"
        return np.where(live, need.draw1, 0), np.where(live, need.draw2, 0)

    def candidates(self, mdp, deltas, knowledge, pairs) -> dict:
        """``(word1, word2, state) -> None`` for every candidate witness of the machine
        ``pairs`` (deduplicated, in order); from an expert that is run, each product's
        ``per_product`` nearest a label that changes the pair of nodes they split
        (:func:`~rmtk.active.witnesses.nearest_change`), else its shortest."""
        out: dict = {}
        if isinstance(mdp, LabeledMDP):
            near = None if knowledge.exact else label_distances(mdp)
            for i, j in pairs[: self.products]:
                prod = sync_product(mdp, deltas[i], deltas[j])
                s, a, b = prod.states, prod.a, prod.b
                for group, cls, delta in ((s * prod.nb + b, a, deltas[i]), (s * prod.na + a, b, deltas[j])):
                    found = clash_pairs(group, cls, prod.depth, self.per_product if near is None else None)
                    if near is not None:
                        found = nearest_change(found, s, cls, prod.depth, np.asarray(delta), near)[: self.per_product]
                    for x, y in found:
                        w1, w2 = prod.word(x, mdp.labels), prod.word(y, mdp.labels)
                        if knowledge.compressed:
                            w1, w2 = compressed(w1), compressed(w2)
                        key = tuple(sorted((tuple(w1), tuple(w2)))) + (int(s[x]),)
                        out.setdefault(key, None)
        ptp = knowledge.ptp() if not knowledge.exact else None
        if ptp is not None and ptp.n_pairs <= self.data_pairs:
            node, state = np.asarray(ptp.tree.pair_node), np.asarray(ptp.tree.pair_state)
            d = disagreements(ptp.trie, node, state, -np.asarray(ptp.counts).sum(axis=1), deltas)
            for x, y in zip(d.i.tolist(), d.j.tolist()):
                v1, v2 = tuple(ptp.trie.word(int(node[x]))), tuple(ptp.trie.word(int(node[y])))
                out.setdefault(tuple(sorted((v1, v2))) + (int(state[x]),), None)
        return out

    def free(self, mdp, machines, used, knowledge) -> list[Query]:
        """For each transition of a machine that no known word uses (``used``: the
        transitions known words use, per machine) but some word of the MDP would, the shortest
        such history: asking it makes the transition constrained."""
        if not isinstance(mdp, LabeledMDP):
            return []
        out: dict = {}
        lab = mdp.labels
        succ = mdp.successor_matrix()
        for m, (delta, seen) in enumerate(zip(machines, used)):
            delta = np.asarray(delta)
            prod = sync_product(mdp, np.zeros((1, delta.shape[1]), np.int64), delta)
            todo = exercised(prod, mdp, delta, compress=knowledge.compressed) & ~np.asarray(seen)
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
                        out.setdefault((word + (k,), s2), m)
        keys = list(out)
        d, _ = self._needs(knowledge, [(w, (), s) for w, s in keys])
        return [
            Query(w, s, int(n), (), ((out[(w, s)], out[(w, s)]),), float(n), self.samples)
            for (w, s), n in zip(keys, d.tolist())
            if n > 0
        ]

    def tests(self, mdp, delta, knowledge) -> list[Query]:
        """Transition tests of a lone survivor: for each of its transitions, the first
        ``per_transition`` (state, node) pairs reached after it whose shortest word overall
        differs from the shortest one through the transition, and, for an exact expert (whose
        answers cost an evaluation, not draws), the first ``per_transition`` whose shortest
        word overall does not use the transition at all; the survivor predicts the expert acts
        alike after both words (a check in the manner of a transition cover)."""
        if not isinstance(mdp, LabeledMDP):
            return []
        delta = np.asarray(delta)
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

        counted = None if knowledge.exact else Counted(knowledge, delta)
        out: dict = {}
        offers: list = []  # from an expert that is run: each transition's possible tests
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
            # an exact expert's first tests; from one that is run, every (state, node) reached
            while frontier and (not knowledge.exact or len(good) < per or len(found) < per):
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
            if counted is None:
                for s, w, w0 in dict.fromkeys(found[:per] + good[:per]):
                    out.setdefault((w, w0, s), None)
            else:  # from an expert that is run, the tests decided with the fewest further draws
                offers.append([counted.pair(s, w, w0, lambda x, h=h, k=k: uses(x, h, k)) for s, w, w0 in found])
        if counted is not None:
            for s, w, w0 in counted.cheapest(offers, per):
                out.setdefault((w, w0, s), None)
        comps = list(out)
        d1, d2 = self._needs(knowledge, comps)
        queries: dict = {}
        for (w, w0, s), a, b in zip(comps, d1.tolist(), d2.tolist()):
            for word, partner, more in ((w, w0, a), (w0, w, b)):
                if more > 0:
                    queries.setdefault(
                        (word, s), Query(word, s, int(more), partner, ((0, 0),), float(more), self.samples)
                    )
        return list(queries.values())

    def choose(self, mdp, deltas, knowledge, alternatives=()) -> list[Query]:
        """The greedy cover of the open pairs among ``deltas`` (and between them and the
        ``alternatives``): witnesses separating the most pairs per unit of cost first; both
        histories of each pick where not enough is known."""
        n_surv = len(deltas)
        deltas = list(deltas) + list(alternatives)
        k = len(deltas)
        if k < 2:
            return []
        open_pairs = np.triu(np.ones((k, k), dtype=bool), 1)
        open_pairs[n_surv:, n_surv:] = False  # alternatives are only there to test the survivors
        pairs = [(int(i), int(j)) for i, j in np.argwhere(open_pairs)[: self.products]]
        cands, wanted, splits, ends = [], [], [], []
        finals = _Finals(deltas)
        telling = _telling(mdp, knowledge)
        found = [c for c in self.candidates(mdp, deltas, knowledge, pairs) if telling[c[2]]]
        d1, d2 = self._needs(knowledge, found) if found else (np.zeros(0), np.zeros(0))
        for (w1, w2, s), a, b in zip(found, d1.tolist(), d2.tolist()):
            if a + b == 0:  # decided already: its answer is in
                continue
            split = finals(w1) != finals(w2)
            if split.all() or not split.any():
                continue
            cands.append((w1, w2, s))
            ends.append((finals(w1), finals(w2)))
            wanted.append((a, b))
            splits.append(split)
        if not cands:
            return []
        split = np.stack(splits, axis=1)
        cost = np.array([sum(n) for n in wanted], dtype=float)
        length = np.array([len(c[0]) + len(c[1]) for c in cands])
        # from an expert that is run, those nearest a label that changes a pair of nodes they split first
        d = np.zeros(len(cands)) if knowledge.exact else nearest(mdp, deltas, cands, ends, split)
        out: list[Query] = []
        asked: set = set()
        first = open_pairs.copy()
        picked = 0
        while open_pairs.any():
            gain = separated(split, open_pairs)
            best = int(ties.lexsort((length, -gain / cost, d))[0])
            if gain[best] == 0:
                break
            col = split[:, best]
            cut = open_pairs & (col[:, None] != col[None, :])
            split_pairs = tuple((int(i), int(j)) for i, j in np.argwhere(cut).tolist())
            open_pairs &= col[:, None] == col[None, :]
            w1, w2, s = cands[best]
            for word, partner, more in ((w1, w2, wanted[best][0]), (w2, w1, wanted[best][1])):
                if more > 0 and (word, s) not in asked:
                    asked.add((word, s))
                    out.append(Query(word, s, int(more), partner, split_pairs, float(more), self.samples))
            split[:, best] = False  # not picked twice
            picked += 1
        if not knowledge.exact:  # further witnesses of the same pairs, for the sampling to choose among
            gain = separated(split, first)
            for best in ties.lexsort((length, -gain / cost, d)).tolist():
                if picked >= self.witnesses or gain[best] == 0:
                    break
                col = split[:, best]
                cut = first & (col[:, None] != col[None, :])
                split_pairs = tuple((int(i), int(j)) for i, j in np.argwhere(cut).tolist())
                w1, w2, s = cands[best]
                for word, partner, more in ((w1, w2, wanted[best][0]), (w2, w1, wanted[best][1])):
                    if more > 0:
                        out.append(Query(word, s, int(more), partner, split_pairs, float(more), self.samples, True))
                picked += 1
        return out


def _telling(mdp, knowledge) -> np.ndarray:
    """``(S,)`` bool: the states where a question can tell reward machines apart. From an
    expert that is run, not the states where every action leads to the same place
    (:meth:`~rmtk.mdp.model.LabeledMDP.indifferent`): every machine's soft-optimal policy acts alike
    there under all its nodes, so two machines cannot disagree on what the expert does there,
    and a sampled comparison could only spend draws to find it alike (docs/design/14-sampled-experts.md, section
    14.1). An exact expert is asked everywhere: its answer costs one evaluation."""
    if knowledge.exact or not isinstance(mdp, LabeledMDP):
        return np.ones(mdp.n_states, bool)
    return ~mdp.indifferent()


class _Pairs:
    """A run of :class:`SplitMostPairs`: the hypothesis and its rivals from the lazy search on
    solvers kept between rounds, questions from their synchronised products."""

    def __init__(self, strategy: SplitMostPairs, setting: Setting):
        if not isinstance(setting.mdp, LabeledMDP):
            raise RmtkError(
                f"{type(strategy).__name__} searches synchronised products, which need a transition model: "
                f"{setting.mdp.name!r} is a {type(setting.mdp).__name__}; ask at recorded histories "
                "instead (rmtk.active.AtRecordedTriples)"
            )
        encoder = setting.encoder if setting.encoder is not None else SatEncoder()
        if not isinstance(encoder, SatEncoder):
            raise RmtkError(
                f"encoder={encoder!r}: {type(strategy).__name__} adds counterexamples to the structure clauses "
                "of a rmtk.sat.encoders.SatEncoder (or a subclass) between rounds"
            )
        self.s, self.setting, self.knowledge, self.mdp = strategy, setting, setting.knowledge, setting.mdp
        self._search = Survivors(
            encoder, setting.mdp.n_propositions, max_nodes=setting.max_nodes, compressed=setting.knowledge.compressed
        )
        self._oracle = None

    def _fresh_oracle(self):
        self._oracle = self.knowledge.oracle()[2]
        return self._oracle

    def round(self) -> Hypotheses:
        oracle = self._fresh_oracle()
        found = self._search.search(
            oracle,
            max_solutions=1 + self.s.rivals,
            lower_bound=oracle.lower_bound(),
            deadline=self.setting.deadline,
            count=False,
        )
        res = found.search
        return Hypotheses(res.n_nodes, found.machines, found.used, res.complete, res.message, rebuilt=found.rebuilt)

    def choose(self, kind: str, hypotheses: Hypotheses) -> list[Query]:
        ms = [np.asarray(d) for d in hypotheses.machines]
        mdp, know = self.mdp, self.knowledge
        if not ms:
            return []
        if kind == "split":
            return self.s.choose(mdp, ms, know) if len(ms) > 1 else []
        telling = _telling(mdp, know)
        if kind == "free":
            return [q for q in self.s.free(mdp, ms, hypotheses.used, know) if telling[q.state]]
        if kind == "tests":
            tests = self.s.tests(mdp, ms[0], know) if len(ms) == 1 and hypotheses.complete else []
            return [q for q in tests if telling[q.state]]
        if kind == "alternatives":
            assert self._oracle is not None, "a round comes first"
            alts = self._search.alternatives(self._oracle, self.s.alternatives, self.setting.deadline)
            return self.s.choose(mdp, ms, know, alts) if alts else []
        raise RmtkError(f"unknown kind of question {kind!r}; {type(self.s).__name__} offers {', '.join(self.s.kinds)}")

    def survivors(self, limit: int | None, judge=None) -> SearchResult:
        oracle = self._fresh_oracle()
        return self._search.search(
            oracle, max_solutions=limit, lower_bound=oracle.lower_bound(), deadline=self.setting.deadline, judge=judge
        ).search

    def known(self) -> tuple:
        return self.knowledge.oracle()

    def separation(self, solutions) -> None:
        return None

    def close(self) -> None:
        self._search.close()
