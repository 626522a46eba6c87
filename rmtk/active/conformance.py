"""Conformance suites: the histories a sampled equivalence check asks, chosen systematically
instead of by random walks (docs/design/14-sampled-experts.md).

With a model (a labeled MDP), the hypothesis is read together with the model's *label
automaton*: after a label word the MDP can be in a set of states (those some path from a start
state producing the word ends in, a run of one label lasting any number of steps for
compressed words), and that set is a function of the word. A *configuration* is a pair
(hypothesis node, set of end states); the configurations reachable from the start form a
Moore machine X over the propositions whose output at a configuration is its end states and
the expert's policy class at each of them under the hypothesis node. The expert's memory T
read the same way is a Moore machine Y over the same letters, and the hypothesis is right
about the expert (every two histories it merges at a state get the same action distribution)
exactly when X and Y have the same output after every word.

The suite is the W-method of conformance testing (Vasilevskii 1973, Chow 1978) on X: for every
configuration its shortest access word, extended by every realisable word of at most k + 1
letters, then by every word of a characterising set W (for every two configurations with the
same end states and different futures, a shortest word after which their outputs differ),
each asked at every state the word can end in and compared with the one representative
history of the state and the hypothesis node it reaches (the first in breadth-first order;
the class read there is the output the hypothesis predicts at that state and node). Its guarantee is
classical: if the expert passes, every memory whose configuration machine has at most
``|X_min| + k`` reachable configurations (X_min: X with equivalent configurations merged) is
one the hypothesis agrees with at every history. A memory of n nodes has at most ``n·|D|``
configurations (``|D|``: the sets of end states reachable), so the suite is complete for every
memory of at most ``⌊(|X_min| + k) / |D|⌋`` nodes; it is what ``Suite.complete_for`` and
``Suite.nodes`` report. A bound on the memory's nodes alone cannot give a suite of
bounded depth: one more node can hide behind a corridor of the model that only a word as
long as the corridor reaches, and the configurations count it.

Without a model, :class:`~rmtk.active.checks.AdaptiveWalks` walks the expert from the start and keeps walking,
longer and more, while the walks keep finding (word, state) pairs never seen; its coverage is
the Good-Turing estimate of the share of visits that go to pairs not seen yet.

Both are equivalence checks of the active loop (:class:`~rmtk.active.checks.EquivalenceCheck`):
they ask only through the loop's :class:`~rmtk.active.asking.Asker`, and say what they covered.
:class:`SuiteCheck` is the loop's check of an expert that is run when there is a model: the
expert is asked first at the representatives (the classes the hypothesis predicts are read
there, and the characterising set is built from them), then every history of the suite is
compared with its representative sequentially at the run's target resolution
(:mod:`rmtk.active.sampling`), the comparisons with the most evidence of a difference first; the
first batch that separates one ends the check (a counterexample: the hypothesis merges two
histories the expert tells apart). Its report (:class:`SuiteCoverage`) says how far the suite
is complete and what it resolved. The guarantee holds for the classes as read at the
representatives: a difference there below the resolution reached may be taken for none.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable

import attrs
import numpy as np

from ..errors import RmtkError
from ..mdp.model import LabeledMDP
from ..validators import positive_int, unit_interval, whole
from .checks import CheckCapabilities
from .sampling import Compared, Query, sample

History = tuple[tuple[int, ...], int]


def _closure(mdp: LabeledMDP, states: frozenset[int], letter: int) -> frozenset[int]:
    """``states`` and every state reachable from them through states labelled ``letter``."""
    succ = mdp.successor_matrix()
    indptr, indices, lab = np.asarray(succ.indptr), np.asarray(succ.indices), mdp.labels
    seen, todo = set(states), list(states)
    while todo:
        s = todo.pop()
        for t in indices[indptr[s] : indptr[s + 1]].tolist():
            if lab[t] == letter and t not in seen:
                seen.add(t)
                todo.append(t)
    return frozenset(seen)


def _step(mdp: LabeledMDP, states: frozenset[int], letter: int, compressed: bool) -> frozenset[int]:
    """The end states after one more letter: successors labelled ``letter`` (run-closed)."""
    succ = mdp.successor_matrix()
    indptr, indices, lab = np.asarray(succ.indptr), np.asarray(succ.indices), mdp.labels
    nxt = frozenset(t for s in states for t in indices[indptr[s] : indptr[s + 1]].tolist() if lab[t] == letter)
    return _closure(mdp, nxt, letter) if compressed and nxt else nxt


@attrs.frozen
class Configurations:
    """The hypothesis ``delta`` read with the model's label automaton (module docstring): per
    configuration its hypothesis ``node``, its set of end ``states`` and its shortest ``word``
    (breadth first, letters in index order); ``next[(c, letter)]``: the configuration after one
    more letter (absent: the model cannot produce it)."""

    node: tuple[int, ...]
    states: tuple[frozenset[int], ...]
    word: tuple[tuple[int, ...], ...]
    next: dict
    compressed: bool

    def __len__(self) -> int:
        return len(self.node)

    @classmethod
    def of(cls, mdp: LabeledMDP, delta, *, compressed: bool = True, initial: int = 0) -> Configurations:
        delta = np.asarray(delta)
        K, lab = mdp.n_propositions, mdp.labels
        index: dict[tuple[int, frozenset[int]], int] = {}
        node: list[int] = []
        states: list[frozenset[int]] = []
        word: list[tuple[int, ...]] = []
        nxt: dict[tuple[int, int], int] = {}
        queue: deque[int] = deque()

        def visit(h: int, d: frozenset[int], w: tuple[int, ...]) -> int:
            key = (h, d)
            if key not in index:
                index[key] = len(node)
                node.append(h)
                states.append(d)
                word.append(w)
                queue.append(index[key])
            return index[key]

        starts = [int(s) for s in mdp.start_states]
        firsts: list[int] = []
        for k in range(K):  # the first letter: the start states labelled with it
            d = frozenset(s for s in starts if lab[s] == k)
            if d:
                d = _closure(mdp, d, k) if compressed else d
                firsts.append(visit(int(delta[initial, k]), d, (k,)))
        while queue:
            c = queue.popleft()
            last = word[c][-1]
            for k in range(K):
                if compressed and k == last:
                    continue
                d = _step(mdp, states[c], k, compressed)
                if d:
                    nxt[(c, k)] = visit(int(delta[node[c], k]), d, word[c] + (k,))
        return cls(tuple(node), tuple(states), tuple(word), nxt, compressed)

    def run(self, start: int, word) -> int | None:
        """The configuration after reading ``word`` from ``start`` (``None``: not realisable)."""
        c: int | None = start
        for k in word:
            if c is None:
                return None
            c = self.next.get((c, int(k)))
        return c

    def find(self, word) -> int | None:
        """The configuration a whole word reaches from the start."""
        first = next((c for c, w in enumerate(self.word) if len(w) == 1 and w[0] == word[0]), None)
        return None if first is None else self.run(first, word[1:])

    @property
    def end_sets(self) -> int:
        """``|D|``: the distinct sets of end states reachable."""
        return len(set(self.states))

    def representatives(self) -> dict[tuple[int, int], History]:
        """For every (state, hypothesis node) some history reaches, the first such history in
        breadth-first order: where the class the hypothesis predicts there is read, and what
        every other history it sends to that state and node is compared with."""
        out: dict[tuple[int, int], History] = {}
        for c in range(len(self)):
            for s in sorted(self.states[c]):
                out.setdefault((s, self.node[c]), (self.word[c], s))
        return out

    def outputs(self, classes: Callable[[int, int], Hashable]) -> list[tuple]:
        """Each configuration's output: its end states with the class ``classes(state, node)``."""
        return [
            (self.states[c], tuple(classes(s, self.node[c]) for s in sorted(self.states[c]))) for c in range(len(self))
        ]

    def minimal(self, outputs: list[tuple]) -> list[int]:
        """Moore partition refinement: the block of every configuration (equal blocks: the same
        output after every word, unrealisable words being unrealisable for both)."""
        K = max((k for _, k in self.next), default=-1) + 1
        ids = {o: i for i, o in enumerate(dict.fromkeys(outputs))}
        block = [ids[o] for o in outputs]
        while True:
            sig = [
                (block[c],) + tuple(block[n] if (n := self.next.get((c, k))) is not None else -1 for k in range(K))
                for c in range(len(self))
            ]
            ids2 = {s: i for i, s in enumerate(dict.fromkeys(sig))}
            new = [ids2[s] for s in sig]
            if len(ids2) == len(set(block)):
                return new
            block = new

    def separating(self, outputs: list[tuple], block: list[int]) -> list[tuple[int, ...]]:
        """A characterising set W: ε, and for every two configurations with the same end states in
        different blocks, a shortest word after which their outputs differ."""
        K = max((k for _, k in self.next), default=-1) + 1
        words: dict[tuple[int, ...], None] = {(): None}
        by_states: dict[frozenset[int], list[int]] = {}
        for c, d in enumerate(self.states):
            by_states.setdefault(d, []).append(c)
        for group in by_states.values():
            for i, a in enumerate(group):
                for b in group[i + 1 :]:
                    if block[a] == block[b]:
                        continue
                    w = self._shortest(a, b, outputs, K)
                    assert w is not None, "configurations in different blocks differ after some word"
                    words.setdefault(w, None)
        return list(words)

    def _shortest(self, a: int, b: int, outputs, K: int) -> tuple[int, ...] | None:
        queue: deque[tuple[int, int, tuple[int, ...]]] = deque([(a, b, ())])
        seen = {(a, b)}
        while queue:
            x, y, w = queue.popleft()
            if outputs[x] != outputs[y]:
                return w
            for k in range(K):
                nx, ny = self.next.get((x, k)), self.next.get((y, k))
                if nx is None or ny is None:
                    continue  # same end states: both or neither read k
                if (nx, ny) not in seen:
                    seen.add((nx, ny))
                    queue.append((nx, ny, w + (k,)))
        return None


@attrs.frozen
class Suite:
    """A conformance suite: ``histories`` to ask, and for each the ``partner`` history the
    hypothesis says the expert acts alike after (the representative of the state and the node
    it reaches, :meth:`Configurations.representatives`). ``extra``: the k it was built with; ``configurations``,
    ``minimal``, ``end_sets``: ``|X|``, ``|X_min|``, ``|D|``; ``complete_for``: the largest number
    of configurations of the expert's memory up to which it is complete (``|X_min| + k``);
    ``nodes``: the memories of at most this many nodes it is complete for;
    ``truncated``: the suite for ``extra`` did not fit in the budget, and the figures are
    those of the largest k that did (``extra`` says which)."""

    histories: tuple[History, ...]
    partner: tuple[History, ...]
    extra: int
    configurations: int
    minimal: int
    end_sets: int
    truncated: bool = False

    def __len__(self) -> int:
        return len(self.histories)

    @property
    def complete_for(self) -> int:
        return self.minimal + self.extra

    @property
    def nodes(self) -> int:
        return self.complete_for // max(1, self.end_sets)

    def __str__(self) -> str:
        cut = " (the budget stopped it there)" if self.truncated else ""
        return (
            f"conformance suite of {len(self)} histories, {self.extra} extra letter(s){cut}: complete for every "
            f"expert whose memory, read with the model, reaches at most {self.complete_for} configurations "
            f"(the hypothesis reaches {self.configurations}, {self.minimal} distinct; {self.end_sets} sets of "
            f"end states), so for every memory of at most {self.nodes} node{'s' if self.nodes != 1 else ''}"
        )


@attrs.frozen
class ConformanceSuite:
    """The W-method suite of a hypothesis on a model (module docstring), built for ``extra`` =
    k extra configurations, or for the largest k ≤ ``extra`` whose suite has at most
    ``max_histories`` histories (flagged ``truncated``)."""

    extra: int = attrs.field(default=1, validator=attrs.validators.ge(0))
    max_histories: int = attrs.field(default=100_000, validator=positive_int)

    def suite(
        self, mdp: LabeledMDP, delta, classes: Callable[[int, int], Hashable], *, compressed: bool = True
    ) -> Suite:
        """The suite of the hypothesis ``delta`` (``(n, K)``); ``classes(state, node)``: the
        expert's policy class the hypothesis predicts there (read at the representative
        histories, :meth:`Configurations.representatives`)."""
        if not isinstance(mdp, LabeledMDP):
            raise RmtkError(
                f"a conformance suite is built on a model (a LabeledMDP), not {type(mdp).__name__}: "
                "without one, use AdaptiveWalks"
            )
        conf = Configurations.of(mdp, delta, compressed=compressed)
        out = conf.outputs(classes)
        block = conf.minimal(out)
        W = conf.separating(out, block)
        best: tuple[list[History], list[History]] | None = None
        done = -1
        for k in range(self.extra + 1):
            hist = self._histories(conf, k, W)
            if hist is None:
                break
            best, done = hist, k
        if best is None:  # not even k = 0 fits: the access histories and W alone
            best, done = self._histories(conf, 0, W, budget=False) or ([], []), 0
        return Suite(
            tuple(best[0]),
            tuple(best[1]),
            done,
            len(conf),
            len(set(block)),
            conf.end_sets,
            truncated=done < self.extra,
        )

    def _histories(self, conf: Configurations, k: int, W, budget: bool = True):
        """P·Σ^{≤k+1}·W, each word at every state it can end in, with its partner."""
        K = max((x for _, x in conf.next), default=-1) + 1
        words: dict[tuple[int, ...], int] = {}
        for c in range(len(conf)):
            layer: list[tuple[int, tuple[int, ...]]] = [(c, ())]
            for depth in range(k + 2):
                for end, mid in layer:
                    for z in W:
                        last = conf.run(end, z)
                        if last is not None:
                            words.setdefault(conf.word[c] + mid + z, last)
                if depth == k + 1:
                    break
                layer = [
                    (n, mid + (x,))
                    for end, mid in layer
                    for x in range(K)
                    if (n := conf.next.get((end, x))) is not None
                ]
            if budget and sum(len(conf.states[e]) for e in words.values()) > self.max_histories:
                return None
        rep = conf.representatives()
        hist, partner = [], []
        for w, end in words.items():
            for s in sorted(conf.states[end]):
                hist.append((w, s))
                partner.append(rep[(s, conf.node[end])])
        return hist, partner


# ---------------------------------------------------------------------- the loop's check
@attrs.frozen
class SuiteCoverage:
    """What a :class:`SuiteCheck` covered: the ``suite`` (its histories and the bound up to which
    it is complete, :class:`Suite`), the comparisons as they stand (``compared``: each suite
    history with its representative), the ``target`` resolution, at level ``alpha``, and whether
    the budget or the deadline ``stopped`` it (else it ended at a difference or with every
    comparison decided)."""

    suite: Suite
    compared: tuple[Compared, ...]
    target: float | None
    alpha: float
    stopped: bool = False
    exact: bool = False

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for c in self.compared:
            out[c.status] = out.get(c.status, 0) + 1
        return out

    @property
    def differ(self) -> int:
        return self.counts().get("separated", 0)

    @property
    def weakest(self) -> float:
        """The largest resolution among the comparisons not separated, 1 when one resolved nothing."""
        return max((c.upper for c in self.compared if c.status != "separated"), default=0.0)

    def __str__(self) -> str:
        s = self.suite
        cut = ", cut by its size bound" if s.truncated else ""
        head = (
            f"conformance suite of {len(s)} histories ({s.extra} extra letter(s){cut}): "
            f"complete for every memory of at most {s.nodes} node{'s' if s.nodes != 1 else ''} "
            f"({s.complete_for} configurations with the model)"
        )
        if self.exact:
            return head + f"; {len(self.compared)} histories compared exactly, {self.differ} differ"
        n = self.counts()
        parts = [
            f"{n[k]} {w}"
            for k, w in (("separated", "differ"), ("resolved", "alike"), ("capped", "capped"), ("open", "open"))
            if n.get(k)
        ]
        text = f"{head}; {len(self.compared)} comparisons at level {self.alpha:g}: {', '.join(parts) or 'none'}"
        if self.differ == 0 and self.compared:
            text += f": no difference ≥ {self.weakest:.2f} found (target {self.target:g})"
        if self.stopped:
            text += "; the budget or the time limit stopped it"
        return text


@attrs.frozen
class SuiteCheck(CheckCapabilities):
    """The equivalence check of an expert that is run, on a model (module docstring): the
    W-method suite of the hypothesis for ``extra`` extra configurations (the largest k that
    fits ``max_histories``), each history compared with its representative sequentially at
    the run's target resolution, at most ``samples`` draws a history (``None``: the resolution
    decides). Each batch goes to the ``focus`` share of the undecided comparisons with the most
    evidence of a difference (at least one): the budget goes where a difference is growing, and
    the comparisons that look alike are resolved once those are decided. With an exact expert
    each history is asked once."""

    extra: int = attrs.field(default=3, validator=whole(0))
    max_histories: int = attrs.field(default=4_000, validator=positive_int)
    samples: int | None = attrs.field(default=None, validator=whole(1, optional=True))
    focus: float = attrs.field(default=0.25, validator=unit_interval(open_low=True))
    systematic: bool = attrs.field(default=True, init=False)

    def run(self, asker, knowledge, machines) -> tuple[list, int, SuiteCoverage | None]:
        mdp = knowledge.mdp if knowledge is not None else None
        if not isinstance(mdp, LabeledMDP):
            raise RmtkError(
                f"a conformance suite is built on a model (a LabeledMDP), not {type(mdp).__name__}: "
                "without one, use AdaptiveWalks"
            )
        delta = np.asarray(machines[0])
        conf = Configurations.of(mdp, delta, compressed=knowledge.compressed)
        reps = conf.representatives()
        # the representatives first: where the classes the hypothesis predicts are read
        rep_queries = [Query(w, s, 0, (), (), 0.0, self.samples) for (w, s) in dict.fromkeys(reps.values())]
        if knowledge.exact:
            return self._exact(asker, knowledge, mdp, delta, conf, reps)
        first = sample(asker, knowledge, rep_queries)
        if asker.exhausted is not None or asker.stopped() is not None:
            return [], 0, None
        classes = _classes(knowledge, reps)
        suite = ConformanceSuite(self.extra, self.max_histories).suite(
            mdp, delta, lambda s, h: classes[(s, h)], compressed=knowledge.compressed
        )
        queries = [
            Query(tuple(w), int(s), 0, tuple(p), (), 0.0, self.samples)
            for (w, s), (p, _) in zip(suite.histories, suite.partner)
            if tuple(w) != tuple(p)
        ]
        done = sample(asker, knowledge, queries, stop_on_separation=True, focus=self.focus)
        stopped = asker.exhausted is not None or asker.stopped() is not None
        del first
        return [], 0, SuiteCoverage(suite, done.compared, knowledge.test.epsilon, knowledge.test.alpha, stopped)

    def _exact(self, asker, knowledge, mdp, delta, conf, reps):
        """An exact expert: every representative, then every suite history, asked once."""
        out: list = []

        def ask(word, s) -> bool:
            if knowledge.class_of(word, s) is not None:
                return True
            obs = asker.act(word, s)
            if obs is None:
                return False
            knowledge.add(obs)
            return True

        for w, s in dict.fromkeys(reps.values()):
            if not ask(w, s):
                return out, 0, None
        classes = {key: knowledge.class_of(*h) for key, h in reps.items()}
        suite = ConformanceSuite(self.extra, self.max_histories).suite(
            mdp, delta, lambda s, h: classes[(s, h)], compressed=knowledge.compressed
        )
        compared, stopped = [], False
        for (w, s), (p, _) in zip(suite.histories, suite.partner):
            if tuple(w) == tuple(p):
                continue
            if not ask(w, s):
                stopped = True
                break
            same = knowledge.class_of(w, s) == knowledge.class_of(p, s)
            compared.append(
                Compared(
                    tuple(w),
                    tuple(p),
                    int(s),
                    "resolved" if same else "separated",
                    1,
                    1,
                    0.0 if same else 1.0,
                    0.0 if same else 1.0,
                )
            )
        return out, 0, SuiteCoverage(suite, tuple(compared), None, knowledge.alpha, stopped, exact=True)


def _classes(knowledge, reps: dict) -> dict:
    """The class the hypothesis predicts at each (state, node), read at its representative:
    per state, in node order, a node joins the first class whose leader's counts the run's
    test does not separate from its own; a representative with no count is a class of its own."""
    out: dict[tuple[int, int], int] = {}
    by_state: dict[int, list[int]] = {}
    for s, h in sorted(reps):
        by_state.setdefault(s, []).append(h)
    for s, nodes in by_state.items():
        rows = knowledge.rows([reps[(s, h)] for h in nodes])
        leaders: list[int] = []
        for i, h in enumerate(nodes):
            cls = -1
            if rows[i].sum() > 0 and leaders:
                c = knowledge.test.compare(np.repeat(rows[i][None], len(leaders), axis=0), rows[leaders])
                alike = np.flatnonzero(~np.asarray(c.separated) & (rows[leaders].sum(axis=1) > 0))
                if len(alike):
                    cls = int(leaders[int(alike[0])])
            if cls < 0:
                leaders.append(i)
                cls = i
            out[(s, h)] = cls
    return out
