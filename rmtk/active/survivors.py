"""What is known of the expert, and the machines that survive it (docs/design.md, section 12).

:class:`Knowledge` holds every answer the expert gave (and the recorded data): for an exact
expert the action distribution of each (word, state) asked, grouped into policy classes
whose ids never change; for an expert that can only be run, action counts on a trie (the
recorded counts with the answers merged in, :func:`rmtk.empirical.merge_counts`). Either way
it is a partial prefix tree policy, and a :class:`~rmtk.sat.lazy.TrieOracle` over it checks
candidate machines. Counts that the learner gathered while looking at them (an expert that
answers questions) are judged with an anytime-valid test (:class:`~rmtk.anytime.AnytimeMiner`,
the run's :class:`~rmtk.statistics.Sequential` test), which stays valid however the questions
were chosen; recorded data alone with the paper's fixed-sample bound
(:class:`~rmtk.negatives.ConfidenceMiner`), as passive learning does.

:class:`Survivors` keeps one incremental SAT solver per number of nodes across rounds. What
is known only grows, so a counterexample once added stays valid, and a size once
unsatisfiable stays so: each round adds the new counterexamples to the live solver and
enumerates again. The blocking clauses of a round carry a selector literal that is switched
off afterwards, so the next round enumerates afresh on the same solver. Counted knowledge can
lose a negative example when more counts arrive (the confidence bound is not monotone); the
solvers are then rebuilt, and the round says so.
"""

from __future__ import annotations

import time

import attrs
import numpy as np

from .. import ties
from ..anytime import Adaptive, AnytimeMiner
from ..empirical import CountTable, EmpiricalPTP, merge_counts, prune_counts, to_policy
from ..encoders import SatEncoder
from ..errors import RmtkError
from ..limits import NEVER, Deadline
from ..negatives import POLICY_TOL, ConfidenceMiner, NegativePairs, PolicyClasses
from ..ptp import PrefixTree, PrefixTreePolicy, Trie
from ..sat.encoding import Problem, decode_transitions
from ..sat.lazy import LazyFormula, TrieOracle
from ..sat.search import SearchResult, canonical_partial, record, stopped_while
from ..sat.solver import open_solver, solve
from ..statistics import CountBound, Sequential
from .experts import Observations
from .recordings import check_counts, check_recording


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
    ``test`` (the run's :class:`~rmtk.statistics.Sequential`, for counts gathered while
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
                    f"the knowledge mines counts gathered while looking with rmtk.anytime.Adaptive; the test's bound "
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
        self._lookup: tuple | None = None
        self._pairs: int | None = None
        #: histories answered (counts the loop chose), each with its place in the order of first
        #: asking (the family-wise level of its row: rmtk.anytime.FamilyWise)
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
        if self._pairs is None:
            self._pairs = len(np.unique(self.table.keys // self.mdp.n_actions))
        return self._pairs

    def visits(self, word, state: int) -> float:
        """How much is known at (word, state): 1 for an exact answer, the action count from data
        (``inf``-free), 0 if nothing."""
        if self.exact:
            return 1.0 if (self._words.find(word), int(state)) in self._entry else 0.0
        return float(self.counts(word, state).sum())

    def _index(self) -> tuple:
        if self._lookup is None:
            t = self.table.trie
            child = {(int(p), int(k)): i for i, (p, k) in enumerate(zip(t.parent, t.letter)) if i}
            S, A = self.mdp.n_states, self.mdp.n_actions
            pair = self.table.keys // A
            uniq, inv = np.unique(pair, return_inverse=True)
            rows = np.zeros((len(uniq) + 1, A))  # the last row: nothing known
            np.add.at(rows, (inv, self.table.keys % A), self.table.counts)
            self._lookup = (child, dict(zip(uniq.tolist(), range(len(uniq)))), rows, S)
        return self._lookup

    def counts(self, word, state: int) -> np.ndarray:
        """``(A,)`` action counts at (word, state) (zeros when nothing is known; counts only)."""
        return self.rows([(word, state)])[0]

    def rows(self, histories) -> np.ndarray:
        """``(len(histories), A)`` action counts of (word, state) histories (counts only)."""
        if self.exact:
            raise RmtkError("an exact expert's knowledge holds distributions, not counts")
        child, index, rows, S = self._index()
        out = np.empty(len(histories), np.int64)
        for r, (word, state) in enumerate(histories):
            p: int | None = 0
            for k in word:
                p = child.get((p, int(k)))
                if p is None:
                    break
            out[r] = len(rows) - 1 if p is None else index.get(p * S + int(state), len(rows) - 1)
        return rows[out]

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
            self._lookup = self._pairs = None
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
        seen before it was first asked: rmtk.anytime.FamilyWise ranks the answers only)."""
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
        pair = table.keys // A
        uniq, inv = np.unique(pair, return_inverse=True)
        total = np.bincount(inv, weights=table.counts, minlength=len(uniq))
        states = np.unique([s for _, s in self._asked])
        keep_pair = (total >= min_count) | np.isin(uniq % S, states)
        state = uniq % S
        kept_states, per_state = np.unique(state[keep_pair], return_counts=True)
        keep_pair &= np.isin(state, kept_states[per_state >= 2])
        keep = keep_pair[inv]
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


@attrs.frozen
class Found:
    """The machines of one search: the search outcome (``search.solutions``, or, for a
    round's hypotheses, ``machines`` and their ``used`` transitions without counts), whether the
    solvers were rebuilt, and whether a judge refuted a machine (the enumeration then stopped)."""

    search: SearchResult
    rebuilt: bool
    machines: tuple = ()
    used: tuple = ()
    refuted: bool = False


def determined(du: np.ndarray, used: np.ndarray, non_stuttering: bool) -> np.ndarray:
    """The transitions of ``du`` the data determine: the ``used`` ones and those with a single
    valid filling (as :func:`~rmtk.sat.search.count_completions` finds, without listing the
    fillings). For a non-stuttering machine a letter's column is idempotent: δ(j, k) = j
    wherever a used transition reads k into j, and a free δ(i, k) may be any node that can be
    a fixed point (a free one, i itself included, or such a j), so it is determined only when i
    is the one candidate. Without non-stuttering every filling is valid: only the used ones are
    determined (the convention of ``count_completions``)."""
    n, K = du.shape
    out = np.asarray(used, bool).copy()
    if not non_stuttering:
        return out
    for k in range(K):
        fixed = np.unique(du[out[:, k], k])
        out[fixed, k] = True
        free = np.flatnonzero(~out[:, k])
        if len(free) == 1 and not len(fixed):
            out[free, k] = True
    return out


def _light(found: dict, du: np.ndarray, used: np.ndarray, pool, non_stuttering: bool) -> list[int]:
    """File ``du`` under its renaming-invariant key without counting its completions (with
    its determined transitions); the blocking clause of its used transitions (as
    :func:`~rmtk.sat.search.record`)."""
    key = canonical_partial(du, used)[0]
    found.setdefault(key, (du, determined(du, used, non_stuttering)))
    return [-int(pool.t(i, k, du[i, k])) for i, k in np.argwhere(used)]


class Survivors:
    """The smallest machines consistent with the knowledge, searched lazily on solvers kept
    between rounds (see the module docstring); and *alternatives*, machines of one node more
    consistent with it, whose disagreements with the survivors are where to test them."""

    def __init__(self, encoder: SatEncoder, n_letters: int, *, max_nodes: int, compressed: bool = True):
        self.encoder, self.K, self.max_nodes, self.compressed = encoder, n_letters, max_nodes, compressed
        self.n = 1
        self._live: dict[int, dict] = {}
        self._added: set = set()
        self._rounds = 0

    def close(self, below: int | None = None) -> None:
        """Delete the solvers (of fewer than ``below`` nodes only)."""
        for n in [n for n in self._live if below is None or n < below]:
            self._live.pop(n)["solver"].delete()

    def _get(self, n: int, oracle) -> dict:
        if n not in self._live:
            problem = Problem(Trie.root(self.compressed), self.K, oracle=oracle)
            formula = self.encoder.structure(problem, n)
            solver = open_solver(self.encoder.solver, formula.hard)
            self._live[n] = {
                "solver": solver,
                "pool": formula.pool,
                "lazy": LazyFormula(formula.pool, solver),
                "clauses": len(formula.hard),
                "alt": formula.pool.new(("alternatives",)),
                "seen": 0,
            }
        return self._live[n]

    def _enumerate(
        self,
        n: int,
        oracle,
        limit: int | None,
        *,
        alternatives: bool = False,
        deadline: Deadline = NEVER,
        judge=None,
        count: bool = True,
    ) -> tuple[dict, bool, float, bool]:
        """Machines at ``n`` nodes that ``oracle`` accepts, at most ``limit``; with
        ``alternatives`` those never returned as alternatives before (their blocking clauses
        are kept for later calls of that kind only). ``judge(delta_u)``: a machine it refuses
        ends the enumeration (refuted). ``count``: file solutions with their raw counts (else
        the machines and their used transitions only). Returns (found, complete, seconds spent
        adding counterexamples, refuted)."""
        live = self._get(n, oracle)
        solver, pool, lazy = live["solver"], live["pool"], live["lazy"]
        self._rounds += 1
        selector = pool.new(("round", self._rounds))
        assume = [selector, live["alt"]] if alternatives else [selector]
        found: dict = {}  # survivors by their renaming-invariant key; alternatives by their number
        complete, refuted, t_enc = True, False, 0.0
        while True:
            sat = solve(solver, deadline, assume)
            if sat is None:  # the deadline: what was found so far
                complete = False
                break
            if not sat:
                break
            du = decode_transitions(solver.get_model(), pool)
            counter = oracle.check(du)
            if counter:
                t1 = time.perf_counter()
                for cex in counter:
                    lazy.add(cex)
                    if cex.class1 < 0:
                        self._added.add(frozenset((cex.word1, cex.word2)))
                t_enc += time.perf_counter() - t1
                continue
            if alternatives:  # every transition of the model: an alternative is a whole machine
                found[len(found)] = du
                solver.add_clause([-live["alt"]] + [-int(pool.t(i, k, du[i, k])) for i, k in np.ndindex(du.shape)])
            else:
                if judge is not None and not judge(du):
                    complete, refuted = False, True
                    break
                used = oracle.exercised(du)
                if count:
                    block = record(found, du, used, pool, self.encoder.non_stuttering)
                else:
                    block = _light(found, du, used, pool, self.encoder.non_stuttering)
                solver.add_clause([-selector] + block)
            if limit is not None and len(found) >= limit:
                complete = False
                break
        solver.add_clause([-selector])  # this round's blocking clauses are done with
        return found, complete, t_enc, refuted

    def _maybe_rebuild(self, oracle) -> bool:
        neg = oracle.negatives
        if isinstance(neg, NegativePairs) and self._added:  # counted pairs may have gone: rebuild if so
            t = oracle.trie
            child = dict(zip(zip(t.parent.tolist(), t.letter.tolist()), range(t.n_nodes)))

            def node(word):
                p = 0
                for k in word:
                    p = child.get((p, k), -1)
                return p

            pairs = set(map(tuple, np.sort(np.asarray(neg.pairs), axis=1).tolist()))
            added = (tuple(sorted(node(w) for w in pair)) for pair in self._added)
            if not all(len(a) == 2 and a in pairs for a in added):
                self.close()
                self._added, self.n = set(), 1
                return True
        return False

    def search(
        self,
        oracle,
        *,
        max_solutions: int | None = None,
        lower_bound: int = 1,
        deadline: Deadline = NEVER,
        judge=None,
        count: bool = True,
    ) -> Found:
        """The survivors under ``oracle`` (the knowledge as it is now): the smallest size with a
        machine, and at most ``max_solutions`` machines of it (see :meth:`_enumerate` for
        ``judge`` and ``count``). A deadline that passes returns what was found, flagged."""
        t0 = time.perf_counter()
        rebuilt = self._maybe_rebuild(oracle)
        self.n = max(self.n, min(lower_bound, self.max_nodes))
        tried: list[tuple[int, bool | None]] = []
        t_enc = 0.0
        while self.n <= self.max_nodes:
            self.close(below=self.n)
            found, complete, t, refuted = self._enumerate(
                self.n, oracle, max_solutions, deadline=deadline, judge=judge, count=count
            )
            t_enc += t
            stopped = not complete and not found and not refuted
            tried.append((self.n, True if found else (None if stopped or refuted else False)))
            if found or stopped or refuted:
                live = self._live[self.n]
                if stopped:
                    message = stopped_while(deadline, f"searching machines of {self.n} nodes")
                elif complete:
                    message = ""
                elif refuted:
                    message = "a machine was refuted: the enumeration stopped"
                elif deadline.expired():
                    message = (
                        stopped_while(deadline, f"listing machines of {self.n} nodes") + "; those found are listed"
                    )
                else:
                    message = f"listing stopped at the limit: at least {len(found)} machines survive, those are listed"
                values = list(found.values())
                res = SearchResult(
                    self.n if found else None,
                    tuple(values) if count else (),
                    complete,
                    tuple(tried),
                    live["clauses"] + live["lazy"].added,
                    live["pool"].top,
                    t_enc,
                    time.perf_counter() - t0 - t_enc,
                    0.0,
                    message,
                    lazy=live["lazy"].stats(self._rounds),
                )
                if count:
                    return Found(res, rebuilt, refuted=refuted)
                return Found(res, rebuilt, tuple(v[0] for v in values), tuple(v[1] for v in values), refuted)
            self.n += 1
        self.close()
        res = SearchResult(
            None,
            (),
            True,
            tuple(tried),
            0,
            0,
            t_enc,
            time.perf_counter() - t0,
            0.0,
            f"no machine with at most {self.max_nodes} nodes is consistent with the expert's answers",
        )
        return Found(res, rebuilt)

    def alternatives(self, oracle, count: int, deadline: Deadline = NEVER) -> list[np.ndarray]:
        """Up to ``count`` machines of one node more than the survivors, consistent with the
        knowledge and never returned here before (``[]`` at the node bound)."""
        if self.n + 1 > self.max_nodes or count < 1:
            return []
        found, _, _, _ = self._enumerate(self.n + 1, oracle, count, alternatives=True, deadline=deadline)
        return list(found.values())
