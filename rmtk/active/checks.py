"""Equivalence checks of active learning (docs/design/12-active-learning.md): looking for behaviour
the surviving machines fail to explain, once no question is left to tell them apart.

A check asks only through the loop's :class:`~rmtk.active.asking.Asker`, so the budget and
the deadline hold inside it; what it declares (:class:`CheckCapabilities`) tells the loop
whether finding nothing is a proof (``exact``), whether it needs the expert's exact product
oracle, and what one of its walks costs.

* :class:`ProductCheck`: the exact check of an expert that offers its product oracle
  (:class:`~rmtk.active.experts.TaskExpert`): each machine is checked on the synchronised product
  of the MDP, the expert's memory and the machine at every depth; for a machine that fails, the
  expert is asked at both histories of its shortest counterexample, which refutes it.
* :class:`ExpertWalks`: a random-walk oracle: runs of the expert from the start, each step
  moved by a uniform action with probability ``explore``; what it observes is folded in.
* :class:`AdaptiveWalks`: walks without a model whose number and length adapt to what they have
  not met yet, with the coverage reached (:class:`Coverage`).
"""

from __future__ import annotations

import heapq
from typing import Protocol, runtime_checkable

import attrs
import numpy as np

from ..errors import RmtkError
from ..learner.capabilities import Capabilities
from ..validators import positive_int, unit_interval
from .experts import Observations


class CheckCapabilities(Capabilities):
    """What an equivalence check declares, with the defaults of one that does not say."""

    __slots__ = ()

    #: Finding no counterexample is a proof that every machine checked is policy-equivalent
    #: to the expert at every depth (then the loop skips the questions that stand in for a
    #: check that samples: transition tests and alternatives). Default: ``False``.
    exact: bool = False

    #: It asks the expert's exact product oracle (an expert must offer one,
    #: :attr:`~rmtk.active.experts.ExpertCapabilities.equivalence`). Default: ``False``.
    needs_product_oracle: bool = False

    #: It chooses its histories systematically on the model (a conformance suite, which holds a
    #: transition cover): the loop skips the transition tests and alternatives that stand in
    #: for a check that samples at random. Default: ``False``.
    systematic: bool = False

    def walk_steps(self) -> int:
        """Environment steps one of its walks costs (0: it makes none). Default: 0."""
        return 0


@runtime_checkable
class EquivalenceCheck(Protocol):
    """Looks for behaviour the machines fail to explain: ``run(asker, knowledge, machines)``
    asks through ``asker`` (:class:`~rmtk.active.asking.Asker`) and returns the answers to fold
    into the knowledge and the number of walks it made. ``machines``: ``(n, K)`` transition
    arrays, the hypothesis first."""

    def run(self, asker, knowledge, machines) -> tuple[list[Observations], int]: ...


@attrs.frozen
class ProductCheck(CheckCapabilities):
    """The exact equivalence check (see the module docstring): one exact equivalence query,
    then, for each machine that fails, the expert asked at the two histories of up to
    ``per_machine`` of its shortest counterexamples (two histories it acts differently after
    that the machine merges). None found: every machine checked is policy-equivalent to the
    expert, a proof. The query counts as one question, each history asked as one more (and one
    policy evaluation)."""

    per_machine: int = attrs.field(default=1, validator=positive_int)
    exact: bool = attrs.field(default=True, init=False)
    needs_product_oracle: bool = attrs.field(default=True, init=False)

    def run(self, asker, knowledge, machines) -> tuple[list[Observations], int]:
        oracle = asker.equivalence(self.per_machine)
        if oracle is None:
            return [], 0
        answers: list[Observations] = []
        asked: set = set()
        for delta in machines:
            for cex in oracle.check(np.asarray(delta)):
                for word in (cex.word1, cex.word2):
                    key = (tuple(word), int(cex.state))
                    if key in asked or (knowledge is not None and knowledge.visits(*key)):
                        continue
                    obs = asker.act(*key)
                    if obs is None:  # the budget or the deadline: what was asked so far
                        return answers, 0
                    asked.add(key)
                    answers.append(obs)
        return answers, 0


def _final(delta: np.ndarray, word) -> int:
    u = 0
    for k in word:
        u = int(delta[u, k])
    return u


def _groups(knowledge, deltas) -> set:
    """(machine, state, node) of every (word, state) known, for each machine of ``deltas``."""
    ptp = knowledge.ptp()
    if ptp is None:
        return set()
    node, state = np.asarray(ptp.tree.pair_node), np.asarray(ptp.tree.pair_state)
    return {
        (m, int(s), int(h))
        for m, d in enumerate(deltas)
        for s, h in zip(state.tolist(), ptp.trie.run(np.asarray(d), 0)[node].tolist())
    }


#: Letters a piece of a long walk may hold in its words (a piece is shortened as the walk's
#: word grows, so that asking and folding one piece stays a bounded amount of work).
PIECE_LETTERS = 200_000


@attrs.frozen
class ExpertWalks(CheckCapabilities):
    """The sampled equivalence check: ``walks`` runs of the expert from the start, ``length``
    steps each, a uniform move with probability ``explore`` (see the module docstring). From
    an expert that is run, the actions drawn are the observations. From an exact expert, at
    most ``evaluations`` of the (word, state) pairs visited are asked: first those where a
    machine predicts the class of a known pair (same state and node), the longest words
    first, then pairs of states and nodes nothing is known at.

    The walks are asked together, as many as the budget allows. A walk longer than ``piece``
    steps is asked in pieces, each continuing where the last ended (the ``ends`` of the expert's
    :class:`~rmtk.active.experts.Observations`), shorter as the walk's word grows, each folded
    into the knowledge as it comes: the deadline and the budget are checked between two pieces,
    and no more than one piece is held in memory."""

    walks: int = attrs.field(default=5, validator=positive_int)
    length: int = attrs.field(default=40, validator=positive_int)
    explore: float = attrs.field(default=0.5, validator=unit_interval())
    evaluations: int = attrs.field(default=20, validator=positive_int)
    piece: int = attrs.field(default=1000, validator=positive_int)

    def walk_steps(self) -> int:
        return self.length

    def run(self, asker, knowledge, machines) -> tuple[list[Observations], int]:
        """What the walks show, as answers to fold in (those of long walks are folded piece by
        piece already), and the number of walks made."""
        exact = bool(asker.caps.exact)
        known = _groups(knowledge, machines) if exact and knowledge is not None else set()
        picks = _Picks(self.evaluations, knowledge, machines, known)
        answers: list[Observations] = []
        if self.length <= self.piece:
            per = int(asker.caps.extend_steps(None, None, self.length, 1))
            n = asker.room(self.walks, per)
            obs = asker.extend(None, None, self.length, max(n, 1), self.explore)
            n = n if obs is not None else 0
            if obs is not None:
                picks.see(obs) if exact else answers.append(obs)
        else:
            n = 0
            for _ in range(self.walks):
                if not self._walk(asker, knowledge, picks, exact):
                    break
                n += 1
        if not exact:
            return answers, n
        out: list[Observations] = []
        for word, s in picks.chosen():
            obs = asker.act(word, s)
            if obs is None:
                break
            out.append(obs)
        return out, n  # the walks' steps are counted by the asker; their draws are not distributions

    def _walk(self, asker, knowledge, picks, exact: bool) -> bool:
        """One long walk in pieces (see the class docstring); whether it was begun."""
        left, word, state, begun = self.length, None, None, False
        while left > 0:
            k = min(self.piece, left, max(16, PIECE_LETTERS // (1 + (len(word) if word else 0))))
            obs = asker.extend(word, state, k, 1, self.explore)
            if obs is None:
                break
            begun = True
            left -= k
            if exact:
                picks.see(obs)
            elif knowledge is not None:
                knowledge.add(obs)
            if not obs.ends:  # the expert does not say where the walk ended: it cannot go on
                if left > 0:
                    raise RmtkError(
                        f"a walk of {self.length} steps is asked in pieces, but the expert "
                        f"{type(asker.expert).__name__} does not say where a piece ends (Observations.ends)"
                    )
                break
            word, state = obs.ends[0]
        return begun


class _Picks:
    """The histories a walk of an exact expert's check will ask, kept while the walks go
    (at most ``most`` of each kind): where a machine predicts the class of a known pair, the
    longest words first, then fresh ones, the longest first."""

    def __init__(self, most: int, knowledge, machines, known: set):
        self.most, self.knowledge, self.machines, self.known = most, knowledge, machines, known
        self.tests: list = []
        self.fresh: list = []
        self.seen = 0

    def see(self, obs: Observations) -> None:
        tests, fresh = self.tests, self.fresh
        for word, s in zip(obs.words, obs.states.tolist()):
            self.seen += 1
            if self.knowledge is not None and self.knowledge.visits(word, s):
                continue
            nodes = [(m, s, _final(np.asarray(d), word)) for m, d in enumerate(self.machines)]
            (tests if any(g in self.known for g in nodes) else fresh).append((-len(word), self.seen, tuple(word), s))
        self.tests = heapq.nsmallest(self.most, tests)
        self.fresh = heapq.nsmallest(self.most, fresh)

    def chosen(self) -> list:
        picked = dict.fromkeys((word, s) for _, _, word, s in sorted(self.tests) + sorted(self.fresh))
        return list(picked)[: self.most]


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
class AdaptiveWalks(CheckCapabilities):
    """Walks of the expert from the start when there is no model: batches of ``walks`` runs,
    the next batch twice as long whenever a batch meets a new (state, hypothesis nodes) pair
    among its longest words (the walks end before they have seen what the hypotheses tell
    apart), until the Good-Turing estimate of the chance that one more walk meets a new pair
    falls below ``target`` after at least 3 / ``target`` walks (a pair each walk meets with
    chance ``target`` is then missed with probability at most e⁻³ ≈ 5 %; the estimate alone
    runs low on few walks), or ``max_steps`` are spent, or the run's budget ends (the docstring
    of :mod:`rmtk.active.conformance`). ``explore``: the chance that a step moves by a uniform action instead of the
    expert's (its own action is what is recorded). An equivalence check of the active loop:
    it asks through the :class:`~rmtk.active.asking.Asker`, one query per walk."""

    walks: int = attrs.field(default=8, validator=positive_int)
    length: int = attrs.field(default=20, validator=positive_int)
    explore: float = attrs.field(default=0.3, validator=unit_interval())
    target: float = attrs.field(default=0.05, validator=unit_interval(open_low=True, open_high=True))
    max_steps: int = attrs.field(default=100_000, validator=positive_int)

    def walk_steps(self) -> int:
        return self.length

    def run(self, asker, knowledge, machines) -> tuple[list, int, Coverage]:
        """The expert's answers along the walks (folded into ``knowledge`` as they come when
        one is given, else returned), the walks made and the coverage reached, for the
        hypotheses ``machines`` (``(n, K)`` arrays)."""
        hyp = [np.asarray(d) for d in machines]
        met: dict[tuple, int] = {}  # pair -> walks that met it
        answers: list = []
        walks, steps, length = 0, 0, self.length
        while True:
            per = int(asker.caps.extend_steps(None, None, length, 1))
            if steps + self.walks * per > self.max_steps or asker.room(self.walks, per, length) < self.walks:
                return self._out(answers, knowledge, walks, self._coverage(met, walks, steps, length, True))
            frontier = False
            batch: list = []
            for _ in range(self.walks):  # one walk a call: walks are what the estimate counts
                obs = asker.extend(None, None, length, 1, self.explore)
                if obs is None:
                    return self._out(answers + batch, knowledge, walks, self._coverage(met, walks, steps, length, True))
                batch.append(obs)
                walks += 1
                steps += obs.steps
                longest = max((len(w) for w in obs.words), default=0)
                keys = {(int(s),) + tuple(_final(d, w) for d in hyp): len(w) for w, s in zip(obs.words, obs.states)}
                for key, size in keys.items():
                    if key not in met and size == longest:
                        frontier = True
                    met[key] = met.get(key, 0) + 1
            if knowledge is not None:
                knowledge.add(*batch)
            else:
                answers += batch
            cov = self._coverage(met, walks, steps, length, False)
            if cov.unseen < self.target and walks * self.target >= 3:
                return self._out(answers, knowledge, walks, cov)
            if frontier:
                length *= 2

    def _out(self, answers, knowledge, walks, cov):
        if knowledge is not None and answers:
            knowledge.add(*answers)
            answers = []
        return answers, walks, cov

    def _coverage(self, met, walks, steps, length, spent) -> Coverage:
        once = sum(1 for v in met.values() if v == 1)
        return Coverage(walks, steps, length, len(met), once, self.target, spent)
