"""Conformance suites: the histories a sampled equivalence check asks, chosen systematically
instead of by random walks (docs/design.md, section 14).

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

Without a model, :class:`AdaptiveWalks` walks the expert from the start and keeps walking,
longer and more, while the walks keep finding (word, state) pairs never seen; its coverage is
the Good-Turing estimate of the share of visits that go to pairs not seen yet.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable

import attrs
import numpy as np

from ..errors import RmtkError
from ..mdp import LabeledMDP
from ..validators import positive_int

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


# ---------------------------------------------------------------------- without a model
@attrs.frozen
class Coverage:
    """What walks without a model saw: ``walks`` runs, ``steps`` in all, ``length`` of the last
    batch; ``pairs`` distinct (state, hypothesis nodes) pairs met (the nodes the hypotheses
    reach after the walk's word: what they can tell apart), ``once`` of them met by a single
    walk; ``unseen``: the Good-Turing estimate ``once / walks`` of the chance that one more walk
    meets a pair no walk has met (walks are the independent draws, not steps); ``target``: the
    chance it walks down to."""

    walks: int
    steps: int
    length: int
    pairs: int
    once: int
    target: float
    budget_spent: bool = False

    @property
    def unseen(self) -> float:
        return self.once / self.walks if self.walks else 1.0

    def __str__(self) -> str:
        why = "the budget stopped it" if self.budget_spent else f"below the target {self.target:g}"
        return (
            f"{self.walks} walks, {self.steps} steps, the last {self.length} long: {self.pairs} (state, hypothesis "
            f"node) pairs met; one more walk would meet one no walk has met with an estimated chance of "
            f"{self.unseen:.3f} ({why})"
        )


@attrs.frozen
class AdaptiveWalks:
    """Walks of the expert from the start when there is no model: batches of ``walks`` runs,
    the next batch twice as long whenever a batch meets a new (state, hypothesis nodes) pair
    among its longest words (the walks end before they have seen what the hypotheses tell
    apart), until the Good-Turing estimate of the chance that one more walk meets a new pair
    falls below ``target`` after at least 3 / ``target`` walks (a pair each walk meets with
    chance ``target`` is then missed with probability at most e⁻³ ≈ 5 %; the estimate alone
    runs low on few walks), or ``max_steps`` are spent (module docstring). ``explore``: the
    chance that a step moves by a uniform action instead of the expert's (its own action is
    what is recorded)."""

    walks: int = attrs.field(default=8, validator=positive_int)
    length: int = attrs.field(default=20, validator=positive_int)
    explore: float = 0.3
    target: float = 0.05
    max_steps: int = attrs.field(default=100_000, validator=positive_int)

    def __attrs_post_init__(self):
        if not 0.0 <= self.explore <= 1.0:
            raise RmtkError(f"explore must be a probability in [0, 1], got {self.explore!r}")
        if not 0.0 < self.target < 1.0:
            raise RmtkError(f"target must lie in (0, 1), got {self.target!r}")

    def run(self, expert, deltas, max_steps: int | None = None) -> tuple[list, Coverage]:
        """The expert's answers along the walks and the coverage reached, for the hypotheses
        ``deltas`` (``(n, K)`` arrays)."""
        limit = self.max_steps if max_steps is None else min(self.max_steps, max_steps)
        hyp = [np.asarray(d) for d in deltas]
        met: dict[tuple, int] = {}  # pair -> walks that met it
        answers: list = []
        walks, steps, length = 0, 0, self.length
        while True:
            if steps + self.walks * length > limit:
                return answers, self._coverage(met, walks, steps, length, True)
            frontier = False
            for _ in range(self.walks):  # one walk a call: walks are what the estimate counts
                obs = expert.extend(None, None, length, 1, self.explore)
                answers.append(obs)
                walks += 1
                steps += obs.steps
                longest = max((len(w) for w in obs.words), default=0)
                keys = {(int(s),) + tuple(_final(d, w) for d in hyp): len(w) for w, s in zip(obs.words, obs.states)}
                for key, size in keys.items():
                    if key not in met and size == longest:
                        frontier = True
                    met[key] = met.get(key, 0) + 1
            cov = self._coverage(met, walks, steps, length, False)
            if cov.unseen < self.target and walks * self.target >= 3:
                return answers, cov
            if frontier:
                length *= 2

    def _coverage(self, met, walks, steps, length, spent) -> Coverage:
        once = sum(1 for v in met.values() if v == 1)
        return Coverage(walks, steps, length, len(met), once, self.target, spent)


def _final(delta: np.ndarray, word) -> int:
    u = 0
    for k in word:
        u = int(delta[u, k])
    return u
