"""What is known of the expert (docs/design/12-active-learning.md).

:class:`Knowledge` holds every answer the expert gave (and the recorded data): for an exact
expert the action distribution of each (word, state) asked, grouped into policy classes
whose ids never change; for an expert that can only be run, action counts on a trie (the
recorded counts with the answers merged in, :func:`rmtk.ptp.empirical.merge_counts`). Either way
it is a partial prefix tree policy, and a :class:`~rmtk.sat.lazy.TrieOracle` over it checks
candidate machines. Counts that the learner gathered while looking at them (an expert that
answers questions) are judged with an anytime-valid test (:class:`~rmtk.negatives.anytime.AnytimeMiner`,
the run's :class:`~rmtk.negatives.statistics.Sequential` test), which stays valid however the questions
were chosen; recorded data alone with the paper's fixed-sample bound
(:class:`~rmtk.negatives.miners.ConfidenceMiner`), as passive learning does. It also remembers the
order in which histories were first asked and their answers apart from recorded counts, which
the family-wise test ranks and reads (:mod:`rmtk.active.family`).
"""

from __future__ import annotations

import numpy as np

from .. import ties
from ..errors import RmtkError
from ..negatives.anytime import Adaptive, AnytimeMiner
from ..negatives.miners import POLICY_TOL, ConfidenceMiner, NegativePairs, PolicyClasses
from ..negatives.statistics import CountBound, Sequential
from ..ptp.empirical import CountTable, EmpiricalPTP, merge_counts, prune_counts, to_policy
from ..ptp.tree import PrefixTree, PrefixTreePolicy, Trie
from ..sat.lazy import TrieOracle
from .experts import Observations
from .recordings import check_counts, check_recording

__all__ = ["Knowledge"]


class _Words:
    """A trie grown word by word in Python (a dict per edge): a word of L letters costs L
    lookups, however long, where a batch builder would cost a numpy call per letter."""

    def __init__(self):
        self.child: dict[tuple[int, int], int] = {}
        self.parent, self.letter, self.length = [-1], [-1], [0]

    def node(self, word) -> int:
        """The node of ``word``, added with its missing prefixes."""
        p = 0
        for k in word:
            k = int(k)
            q = self.child.get((p, k))
            if q is None:
                q = len(self.parent)
                self.child[(p, k)] = q
                self.parent.append(p)
                self.letter.append(k)
                self.length.append(self.length[p] + 1)
            p = q
        return p

    def find(self, word) -> int:
        """The node of ``word`` (−1 when it is not in the trie)."""
        p = 0
        for k in word:
            p = self.child.get((p, int(k)), -1)
            if p < 0:
                return -1
        return p

    def trie(self, compressed: bool) -> Trie:
        return Trie(np.array(self.parent), np.array(self.letter), np.array(self.length), compressed=compressed)


class Knowledge:
    """Answers of the expert as a partial prefix tree policy (see the module docstring).

    ``exact``: answers are distributions (classes compared with ``tol``), else counts: with a
    ``test`` (the run's :class:`~rmtk.negatives.statistics.Sequential`, for counts gathered while
    looking) negative examples are the pairs its anytime-valid bound separates at its level;
    without one, those the paper's fixed-sample bound separates at level ``alpha`` (recorded
    data only)."""

    def __init__(
        self,
        mdp,
        *,
        exact: bool,
        compressed: bool = True,
        alpha: float = 0.05,
        tol: float = POLICY_TOL,
        recorded=None,
        test: Sequential | None = None,
    ):
        self.mdp, self.exact, self.compressed, self.alpha, self.tol = mdp, exact, compressed, alpha, tol
        self.recorded, self.test = recorded, test
        self.miner: AnytimeMiner | ConfidenceMiner = ConfidenceMiner(alpha=alpha)
        if test is not None:
            bound = test.bound if isinstance(test.bound, CountBound) else None
            if not isinstance(bound, Adaptive):
                raise RmtkError(
                    f"the knowledge mines counts gathered while looking with rmtk.negatives.anytime.Adaptive; "
                    f"the test's bound "
                    f"is {type(test.bound).__name__}"
                )
            self.alpha = test.alpha
            self.miner = AnytimeMiner(alpha=test.alpha, bound=bound)
        S, A, K = mdp.n_states, mdp.n_actions, mdp.n_propositions
        self._words = _Words()  # the exact answers' words
        self._entry: dict[tuple[int, int], int] = {}  # (trie node, state) -> entry
        self._nodes: list[int] = []
        self._states: list[int] = []
        self._class: list[int] = []  # exact: stable class id per entry
        self._class_state: list[int] = []
        self._reps: dict[int, list[tuple[int, np.ndarray]]] = {}
        self.table = CountTable(Trie.root(compressed), np.empty(0, np.int64), np.empty(0, np.int64), S, A, K)
        if recorded is not None:
            if exact:
                raise RmtkError(
                    "recorded data are counts: learn from them with an expert that is run "
                    "(SimulatedExpert or RecordedExpert), not with an exact one"
                )
            check_recording(recorded, mdp)
            self.table = EmpiricalPTP(recorded, compress=compressed).counts(mdp)
            check_counts(self.table, mdp)
        self._child: dict[tuple[int, int], int] = {}  # the table trie's (parent, letter) -> node
        self._child_key = np.empty(0, np.int64)  # the nodes filed there, as parent·(K + 1) + letter
        self._child_trie: Trie | None = None  # the trie they were filed from
        self._pairs: int | None = None
        #: how many times an answer changed what is known (a round's hypotheses and a check's
        #: verdicts hold for one version: rmtk.active.cycles)
        self.version = 0
        #: histories answered (counts the loop chose), each with its place in the order of first
        #: asking (the family-wise level of its row: rmtk.negatives.anytime.FamilyWise)
        self._asked: dict[tuple[tuple[int, ...], int], int] = {}
        #: the action counts of the answers alone at each history asked
        self._drawn: dict[tuple[tuple[int, ...], int], np.ndarray] = {}
        #: comparisons asked, ``(state, word, word) -> (status, lower, upper, cap)``: the
        #: intersection of every anytime-valid interval their test gave, whether they were
        #: decided, and the question's cap
        self.intervals: dict[tuple, tuple] = {}
        #: comparisons only ever asked as optional further witnesses (none of the answer's
        #: merges needs them decided)
        self.optional: set[tuple] = set()

    # -- counting -------------------------------------------------------------------------------
    def __len__(self) -> int:
        """Distinct (word, state) pairs known."""
        if self.exact:
            return len(self._entry)
        if self._pairs is None:  # the table's keys are sorted: a pair begins wherever key // A changes
            pair = self.table.keys // self.mdp.n_actions
            self._pairs = int(len(pair) > 0) + int(np.count_nonzero(pair[1:] != pair[:-1]))
        return self._pairs

    def visits(self, word, state: int) -> float:
        """How much is known at (word, state): 1 for an exact answer, the action count from data
        (``inf``-free), 0 if nothing."""
        if self.exact:
            return 1.0 if (self._words.find(word), int(state)) in self._entry else 0.0
        return float(self.counts(word, state).sum())

    def _children(self) -> dict:
        """``(parent, letter) -> node`` of the table's trie, grown with it: merging answers keeps
        every node's id and appends the new ones (rmtk.ptp.empirical.merge_counts), so only those
        are filed; rebuilt whole if the nodes already filed changed."""
        t = self.table.trie
        if t is self._child_trie:  # the table has not changed since
            return self._child
        key = t.parent.astype(np.int64) * (self.table.n_letters + 1) + t.letter
        done = len(self._child_key)
        if done > len(key) or not np.array_equal(self._child_key, key[:done]):
            self._child, done = {}, 0
        first = max(done, 1)  # node 0 is the root
        for i, (p, k) in enumerate(zip(t.parent[first:].tolist(), t.letter[first:].tolist()), first):
            self._child[(p, k)] = i
        self._child_key, self._child_trie = key, t
        return self._child

    def counts(self, word, state: int) -> np.ndarray:
        """``(A,)`` action counts at (word, state) (zeros when nothing is known; counts only)."""
        return self.rows([(word, state)])[0]

    def rows(self, histories) -> np.ndarray:
        """``(len(histories), A)`` action counts of (word, state) histories (counts only): each
        history's keys found by bisection in the table's sorted keys, no table of every pair."""
        if self.exact:
            raise RmtkError("an exact expert's knowledge holds distributions, not counts")
        child = self._children()
        S, A = self.mdp.n_states, self.mdp.n_actions
        pair = np.full(len(histories), -1, np.int64)
        for r, (word, state) in enumerate(histories):
            p: int | None = 0
            for k in word:
                p = child.get((p, int(k)))
                if p is None:
                    break
            if p is not None:
                pair[r] = p * S + int(state)
        keys, counts = self.table.keys, self.table.counts
        lo = np.searchsorted(keys, pair * A)
        hi = np.searchsorted(keys, pair * A + A)
        hi = np.where(pair >= 0, hi, lo)
        out = np.zeros((len(histories), A))
        n = hi - lo
        if n.sum():
            at = np.repeat(lo, n) + (np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n))
            out[np.repeat(np.arange(len(histories)), n), keys[at] % A] = counts[at]
        return out

    # -- folding answers ------------------------------------------------------------------------
    def add(self, *answers: Observations) -> int:
        """Fold answers in (one merge for all of them); returns the number of (word, state)
        pairs new to the knowledge."""
        before = len(self)
        for obs in answers:
            if len(obs) and obs.exact != self.exact:
                raise RmtkError(
                    "the expert's answers are "
                    + ("exact" if obs.exact else "counts")
                    + " but the knowledge holds "
                    + ("exact answers" if self.exact else "counts")
                )
        if self.exact:
            for word, s, dist in (
                (w, s, d) for obs in answers for w, s, d in zip(obs.words, obs.states.tolist(), obs.values)
            ):
                key = (self._words.node(word), s)
                if key in self._entry:
                    continue
                self._entry[key] = len(self._nodes)
                self._nodes.append(key[0])
                self._states.append(s)
                self._class.append(self._classify(s, dist))
                self.version += 1
            return len(self) - before
        S, A = self.mdp.n_states, self.mdp.n_actions
        grow = _Words()
        keys, counts = [], []
        for word, s, row in (
            (w, s, r) for obs in answers for w, s, r in zip(obs.words, obs.states.tolist(), obs.values)
        ):
            history = (tuple(int(k) for k in word), int(s))
            self._asked.setdefault(history, len(self._asked))
            self._drawn[history] = self._drawn.get(history, 0) + np.asarray(row, np.int64)
            p = grow.node(word)
            for a in np.flatnonzero(row):
                keys.append((p * S + s) * A + int(a))
                counts.append(int(row[a]))
        if keys:
            keys_, counts_ = np.array(keys, np.int64), np.array(counts, np.int64)
            order = np.argsort(keys_, kind="stable")
            uniq, inv = np.unique(keys_[order], return_inverse=True)
            summed = np.bincount(inv, weights=counts_[order]).astype(np.int64)
            small = CountTable(grow.trie(self.compressed), uniq, summed, S, A, self.mdp.n_propositions)
            self.table = merge_counts(self.table, small)
            self._pairs = None
            self.version += 1
        return len(self) - before

    def _classify(self, s: int, dist: np.ndarray) -> int:
        reps = self._reps.setdefault(s, [])
        for c, rep in reps:
            if ties.alike(rep, dist, self.tol):
                return c
        c = len(self._class_state)
        self._class_state.append(s)
        reps.append((c, np.asarray(dist, float).copy()))
        return c

    # -- the partial prefix tree policy ---------------------------------------------------------
    def ptp(self) -> PrefixTreePolicy | None:
        """The prefix tree policy of what is known (``None`` when nothing is)."""
        if not self.exact:
            return to_policy(self.table) if len(self.table.keys) else None
        if not self._entry:
            return None
        trie = self._words.trie(self.compressed)
        node, state = np.array(self._nodes), np.array(self._states)
        order = np.lexsort((state, node))
        policy = np.zeros((len(order), self.mdp.n_actions))  # classes carry the comparison
        return PrefixTreePolicy(
            PrefixTree(trie, node[order], state[order], int(trie.length.max())),
            policy,
            classes=np.array(self._class)[order],
        )

    def negatives(self, ptp: PrefixTreePolicy) -> PolicyClasses | NegativePairs:
        if self.exact:
            return PolicyClasses(ptp.classes, np.array(self._class_state, np.int64), ptp.tree.pair_node)
        if isinstance(self.miner, AnytimeMiner):
            return self.miner.mine(ptp, fixed=~self.asked_rows(ptp))
        return self.miner.mine(ptp)

    def asked_rows(self, ptp: PrefixTreePolicy) -> np.ndarray:
        """Which rows of ``ptp`` (on this knowledge's trie) hold counts of answers: the others
        are recorded data no one looked at before counting."""
        return self.asked_index(ptp) >= 0

    def places(self, histories) -> tuple[np.ndarray, np.ndarray]:
        """The place of each (word, state) history in the order of first asking (−1: never
        asked) and the action counts of its answers alone, without recorded counts (those were
        seen before it was first asked: rmtk.negatives.anytime.FamilyWise ranks the answers only)."""
        keys = [(tuple(int(k) for k in w), int(s)) for w, s in histories]
        zero = np.zeros(self.mdp.n_actions, np.int64)
        place = np.array([self._asked.get(k, -1) for k in keys], dtype=np.int64)
        return place, np.array([self._drawn.get(k, zero) for k in keys], dtype=np.int64).reshape(-1, len(zero))

    def asked_index(self, ptp: PrefixTreePolicy) -> np.ndarray:
        """The place of each row of ``ptp`` in the order of first asking (−1: recorded only)."""
        return self.answers(ptp)[0]

    def answers(self, ptp: PrefixTreePolicy) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`places` of every row of ``ptp`` (on this knowledge's trie)."""
        A = self.mdp.n_actions
        out, drawn = np.full(ptp.n_pairs, -1, np.int64), np.zeros((ptp.n_pairs, A), np.int64)
        if not self._asked:
            return out, drawn
        t = ptp.trie
        child = {(int(p), int(k)): i for i, (p, k) in enumerate(zip(t.parent.tolist(), t.letter.tolist())) if i}
        S = self.mdp.n_states
        keys = np.asarray(ptp.tree.pair_node, np.int64) * S + np.asarray(ptp.tree.pair_state, np.int64)
        wanted, place, counts = [], [], []
        for (word, s), r in self._asked.items():
            p: int | None = 0
            for k in word:
                p = child.get((p, k), None) if p is not None else None
            if p is not None:
                wanted.append(p * S + s)
                place.append(r)
                counts.append(self._drawn[(word, s)])
        if wanted:
            order = np.argsort(keys, kind="stable")
            w = np.array(wanted, np.int64)
            at = np.searchsorted(keys[order], w)
            hit = at < len(keys)
            hit[hit] = keys[order][at[hit]] == w[hit]
            out[order[at[hit]]] = np.array(place, np.int64)[hit]
            drawn[order[at[hit]]] = np.array(counts, np.int64).reshape(-1, A)[hit]
        return out, drawn

    def pruned(self, min_count: float) -> CountTable:
        """The count table cut to the pairs that can yield a negative example: recorded pairs seen
        at least ``min_count`` times (the fixed-sample rule's least), every pair at a state where
        something was asked, at states with two or more such pairs."""
        table = self.table
        if not self._asked:
            return prune_counts(table, min_count)
        A, S = table.n_actions, table.n_states
        pair = table.keys // A  # sorted: a pair begins wherever it changes (no sort of the keys)
        start = np.flatnonzero(np.r_[True, pair[1:] != pair[:-1]]) if len(pair) else np.zeros(0, np.int64)
        state = pair[start] % S
        del pair
        total = np.add.reduceat(table.counts, start) if len(start) else np.zeros(0, np.int64)
        states = np.unique([s for _, s in self._asked])
        keep_pair = (total >= min_count) | np.isin(state, states)
        kept_states, per_state = np.unique(state[keep_pair], return_counts=True)
        keep_pair &= np.isin(state, kept_states[per_state >= 2])
        keep = np.repeat(keep_pair, np.diff(np.r_[start, len(table.keys)]))
        return CountTable(table.trie, table.keys[keep], table.counts[keep], S, A, table.n_letters, table.n_trajectories)

    def class_of(self, word, state: int) -> int | None:
        """The policy class of an exact answer at (word, state) (``None``: not asked)."""
        entry = self._entry.get((self._words.find(word), int(state))) if self.exact else None
        return None if entry is None else self._class[entry]

    def oracle(self):
        """``(ptp, negatives, oracle)`` of what is known; the oracle accepts everything when
        nothing is known."""
        ptp = self.ptp()
        if ptp is None:
            return None, None, TrieOracle(Trie.root(self.compressed), PolicyClasses([], [], []))
        neg = self.negatives(ptp)
        return ptp, neg, TrieOracle(ptp.trie, neg)
