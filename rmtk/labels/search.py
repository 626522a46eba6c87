"""The search for the smallest (labeling, machine) pairs consistent with the expert's behaviour
over state histories: fewest nodes, then fewest propositions, every pair of that size listed up
to renaming of nodes and of propositions (docs/design/13-learning-labels.md).

A pair search is a strategy of the :class:`~rmtk.labels.learner.LabelLearner` (protocol
:class:`PairSearch`, capabilities :class:`PairSearchCapabilities`); :class:`SmallestPairs` is
rmtk's. It runs over the sizes of one :class:`~rmtk.limits.SearchLimits` (nodes, pairs listed,
the run's deadline, progress) and one :class:`~rmtk.labels.pairs.LabelKnowledge` (what the user
says about the labels), with one incremental :class:`~rmtk.labels.encoding.PairFormula` per
number of nodes: the label-free check first (does any labeling fit n nodes?), then, on the same
solver, the number of propositions by bisection, then the enumeration. With an oracle (lazy or
every-depth learning) a candidate is checked as the machine over states ``D(u, s) = δ(u, L(s))``
by the oracles of :mod:`rmtk.sat.lazy`; counterexamples found at one size are replayed into the
solver of the next.

*Why bisection.* With nothing known, sizes are monotone in k at a fixed n: a pair with k
propositions splits a proposition of two states into two with the same transitions (the same
machine over states) and gains one, and merging propositions of equal columns loses one; and no
smallest pair needs more propositions than the distinct columns of the machine the label-free
check found. With knowledge (named or shared labels, a fixed k) monotonicity fails, and every k
is tried in turn.
"""

from __future__ import annotations

import time
from typing import Protocol

import attrs
import numpy as np

from ..errors import RmtkError
from ..learner.capabilities import Capabilities
from ..limits import SearchLimits
from ..sat.encoding import Problem
from ..sat.lazy import OracleCapabilities, ProductOracle, TrieOracle
from ..sat.solver import DEFAULT_SOLVER, check_solver_field
from ..validators import one_of, whole
from .encoding import Expired, PairFormula, TrueProduct
from .label_free import quotient_machine
from .pairs import (
    LabelKnowledge,
    LabelSolution,
    PairStore,
    distinct_columns,
    label_classes,
    machine_pair,
    state_delta,
)


@attrs.frozen
class LabelSearchResult:
    """Outcome of a pair search: the smallest size found (``n_nodes``, ``n_props``), its
    solutions, and every size tried with its outcome (``tried``: ``(n, k, sat)``, ``None`` when
    undecided); ``cap``: the ``max_solutions`` the enumeration ran with; ``stopped``: why the
    search stopped early (``"time limit"``, ``"interrupted"``, ``"terminated"``), else ``None``;
    ``histories_from``: where the histories came from (``"product"``: the exact expert at every
    depth, encoded on the product; ``"counterexamples"``: found by checking candidates;
    ``"tree"``: a built tree encoded whole)."""

    n_nodes: int | None
    n_props: int | None
    solutions: tuple[LabelSolution, ...]
    complete: bool
    tried: tuple[tuple[int, int, bool | None], ...]
    message: str = ""
    counterexamples: int = 0
    rounds: int = 0
    longest: int = 0
    histories: int = 0
    time_solve: float = 0.0
    lower_bound: int = 1
    cap: int | None = None
    stopped: str | None = None
    histories_from: str = "counterexamples"

    @property
    def ruled_out(self) -> tuple[tuple[int, int], ...]:
        """Sizes ``(n, k)`` the solver proved impossible (besides every n below ``lower_bound``,
        the most policy classes the expert shows at one state, which no n below can hold)."""
        return tuple((n, k) for n, k, sat in self.tried if sat is False)


class PairSearchCapabilities(Capabilities):
    """What a pair search can do beyond ``search``, with the defaults of one that does not say."""

    __slots__ = ()

    #: Whether its machines are non-stuttering, which compressed state histories need (default ``True``).
    non_stuttering: bool = True

    #: The SAT backend, which the steps after the search (the free states) use too (default rmtk's).
    solver: str = DEFAULT_SOLVER

    @property
    def lazy(self) -> bool:
        """It wants negative examples found by an oracle checking its candidates rather than the
        whole tree encoded. Default: ``False``."""
        return False


class PairSearch(Protocol):
    """The strategy that finds (labeling, machine) pairs for a
    :class:`~rmtk.labels.learner.LabelLearner`."""

    def search(
        self, problem: Problem, n_states: int, reach: np.ndarray, knowledge: LabelKnowledge, limits: SearchLimits
    ) -> LabelSearchResult:
        """The pairs ``problem`` (histories over states, with an oracle or negatives) accepts,
        with labels on the states of ``reach``, within ``limits``."""


@attrs.frozen
class SmallestPairs(PairSearchCapabilities):
    """The pairs with the fewest nodes, then the fewest propositions (see the module docstring).

    Args:
        symmetry_breaking: breadth-first node numbering and propositions numbered by first
            occurrence, so that each pair appears once.
        non_stuttering: the machines are non-stuttering (needed by compressed histories).
        solver: a python-sat backend (:data:`rmtk.sat.solver.SOLVERS`).
        negatives: ``"lazy"`` (counterexample-guided; the default) or ``"classes"`` (a built
            tree of state histories encoded whole).
        small_k: up to this many propositions, ask the labeled formula (doubling k) before the
            label-free check decides the number of nodes (0: the check first).
    """

    symmetry_breaking: bool = True
    non_stuttering: bool = True
    solver: str = attrs.field(default=DEFAULT_SOLVER, validator=check_solver_field)
    negatives: str = attrs.field(default="lazy", validator=one_of("lazy", "classes"))
    small_k: int = attrs.field(default=0, validator=whole(0))

    @property
    def lazy(self) -> bool:
        """On when ``negatives="lazy"``."""
        return self.negatives == "lazy"

    def search(
        self, problem: Problem, n_states: int, reach: np.ndarray, knowledge: LabelKnowledge, limits: SearchLimits
    ) -> LabelSearchResult:
        return _SizeSearch(self, problem, n_states, reach, knowledge, limits).run()


class _SizeSearch:
    """One run of :class:`SmallestPairs`: what it tried, the counterexamples it found, and the
    best pair at the current number of nodes (kept for a run a limit stops)."""

    def __init__(
        self,
        how: SmallestPairs,
        problem: Problem,
        n_states: int,
        reach: np.ndarray,
        know: LabelKnowledge,
        limits: SearchLimits,
    ):
        self.how, self.problem, self.S, self.limits, self.know = how, problem, n_states, limits, know
        self.reach = np.asarray(reach, np.int64)
        self.deadline, self.progress = limits.deadline, limits.progress
        props, max_props = know.props, know.max_props
        self.k_lo = props if props is not None else max(1, know.first_free)
        bound = max_props or max(1, min(len(self.reach), distinct_columns(limits.max_nodes, how.non_stuttering)))
        self.k_hi = (
            props
            if props is not None
            else max(
                self.k_lo, min(bound, label_classes(self.reach, know.groups()))
            )  # no more than the knowledge leaves apart
        )
        if self.k_lo > self.k_hi:
            raise RmtkError(f"the known labels name {know.first_free} propositions, more than the {self.k_hi} allowed")
        self.tried: list[tuple[int, int, bool | None]] = []
        self.seen: list = []  # counterexamples, replayed at every size
        self.rounds = self.longest = 0
        self.histories = problem.trie.n_nodes
        self.t_solve = 0.0
        self.best = self._store()
        oracle = problem.oracle
        every_depth = isinstance(oracle, ProductOracle) and oracle.depth is None
        self.product = TrueProduct.of(oracle) if every_depth else None  # built once for every size
        checker = (
            oracle
            if oracle is not None
            else TrieOracle(problem.trie, problem.negatives)
            if problem.negatives is not None
            else None
        )
        self.clique = OracleCapabilities.of(checker).clique() if checker is not None else ()
        self.quotient = quotient_machine(oracle) if every_depth else None  # the expert's own machine

    def _store(self) -> PairStore:
        return PairStore(self.reach, self.know.first_free, self.how.non_stuttering)

    def _formula(self, n: int) -> PairFormula:
        f = PairFormula(
            self.problem,
            n,
            self.S,
            self.reach,
            self.know,
            symmetry_breaking=self.how.symmetry_breaking,
            non_stuttering=self.how.non_stuttering,
            solver=self.how.solver,
            product=self.product,
            deadline=self.deadline,
            clique=self.clique,
        )
        if f.lazy is not None:
            f.add(self.seen)
        return f

    def _counterexamples(self, counter) -> None:
        self.seen.extend(counter)
        self.longest = max([self.longest, *(c.labels for c in counter)])
        self.progress.count(len(self.seen), None, "counterexamples")

    def _ask(self, f: PairFormula, assumptions) -> bool | None:
        t0, r0 = time.perf_counter(), f.rounds
        try:
            return f.ask(assumptions, self.deadline, self._counterexamples)
        finally:
            self.t_solve += time.perf_counter() - t0
            self.rounds += f.rounds - r0
            if f.lazy is not None:
                self.histories = max(self.histories, len(f.lazy.parent))

    # ------------------------------------------------------------------ the questions
    def any_labeling(self, f: PairFormula, n: int) -> tuple[bool | None, np.ndarray | None]:
        """Whether some labeling (any k) and machine with n nodes fit; the machine found is kept
        as the best pair when nothing is known. The expert's own machine (its quotient) decides
        it at once when it has n nodes and fits what the user knows."""
        D = self.quotient if self.quotient is not None and self.fits(self.quotient, n) else None
        decided = True if D is not None else self._ask(f, [])
        if D is None and decided:
            D = f.machine()
        if D is not None and self.know.empty:  # its labeling, preferred by the labeled questions
            f.prefer(machine_pair(D, self.reach)[0])
        outcome = "undecided" if decided is None else ("satisfiable" if decided else "none")
        self.progress.note(f"{n} nodes, any labeling: {outcome} ({len(f.moving())} states moving the machine)")
        if D is not None and self.know.empty and self.columns(D) <= self.k_hi:
            labels, delta = machine_pair(D, self.reach)
            self.best.add(labels, delta, f.exercised(D))
        return decided, D

    def fits(self, D: np.ndarray, n: int) -> bool:
        """``D`` has n nodes, keeps the user's groups together, is non-stuttering when asked,
        and the oracle accepts it."""
        if D.shape[0] != n:
            return False
        if any((D[:, list(g)] != D[:, [g[0]]]).any() for g in self.know.groups()):
            return False
        if self.how.non_stuttering and (np.take_along_axis(D, D, axis=0) != D).any():
            return False
        return not self.problem.oracle.check(D)

    def columns(self, D: np.ndarray) -> int:
        return len(np.unique(D[:, self.reach], axis=1).T)

    def pairs(self, f: PairFormula, n: int, k: int, exactly: bool, every: bool) -> tuple[bool | None, PairStore, bool]:
        """Pairs at (n, k): ``(decided, found, complete)``; with ``every``, all of them (up to
        ``max_solutions``), else the first."""
        last = f.layers[-1].K if f.layers else 0
        layer = f.layer(k if last >= k or not last else max(k, min(self.k_hi, 2 * last)))
        found, complete = self._store(), True
        cap = self.limits.max_solutions
        guard = f.guard()  # this enumeration's blocking clauses hold while it runs only
        while True:
            ok = self._ask(f, [*layer.assume(k, exactly), guard])
            if ok is None:
                complete = False
                break
            if not ok:
                break
            labels, delta = f.pair(layer, k)
            used = found.add(labels, delta, f.exercised(state_delta(delta, labels)))
            f.block([-guard, *f.blocking(layer, labels, delta, used)])
            self.progress.solution(len(found), len(found))
            if not every or (cap is not None and len(found) >= cap):
                complete = not every
                break
        decided = True if len(found) else (False if complete else None)
        self.progress.note(
            f"{n} nodes, {k} propositions: {'undecided' if decided is None else ('satisfiable' if decided else 'none')}"
        )
        return decided, found, complete

    # ------------------------------------------------------------------ the search
    def run(self) -> LabelSearchResult:
        for n in self.limits.sizes:
            self.best = self._store()
            try:
                with self._formula(n) as f:
                    out = self.size(f, n)
            except Expired:
                out = self.unfinished(n, self.k_lo, f"{self.why()} while building the formula of {n} nodes")
            if out is not None:
                return out
        sizes = self.limits.sizes
        return self.result(
            None,
            None,
            self._store(),
            True,
            f"no labeling with {self.k_lo}-{self.k_hi} propositions and machine with "
            f"{sizes[0]}-{sizes[-1]} nodes is consistent with the expert",
        )

    def why(self) -> str:
        return self.deadline.reason() or "time limit"

    def size(self, f: PairFormula, n: int) -> LabelSearchResult | None:
        """Decide n nodes: the result when the search ends at n, ``None`` to go on."""
        monotone = self.know.props is None and self.know.empty
        top = min(self.k_hi, distinct_columns(n, self.how.non_stuttering)) if monotone else self.k_hi
        ks = list(range(self.k_lo, top + 1))
        if not ks:
            return None
        if not monotone:
            decided, _ = self.any_labeling(f, n)
            if decided is None:
                return self.result(None, None, self._store(), False, f"{self.why()} while deciding {n} nodes")
            if not decided:
                self.tried.extend((n, k, False) for k in ks)
                return None
            return self.each_k(f, n, ks)
        below, k, first = self.k_lo - 1, self.k_lo, None
        while first is None and below < top and k <= self.how.small_k:  # the labeled formula first
            decided, found, _ = self.pairs(f, n, k, False, False)
            self.tried.append((n, k, decided))
            if decided is None:
                return self.unfinished(n, k, f"{self.why()} while deciding {n} nodes, {k} propositions")
            if decided:
                first = k
                self.best = found
            else:
                below, k = k, min(2 * k, top)
        if first is None and below < top:  # decide n for every labeling at once
            decided, D = self.any_labeling(f, n)
            if decided is None:
                return self.result(None, None, self._store(), False, f"{self.why()} while deciding {n} nodes")
            if decided:  # the states grouped by the column they move the machine by: a labeling that fits
                first = min(top, self.columns(D))
                self.tried.append((n, first, True))
        if first is None:
            called = {kk for nn, kk, _ in self.tried if nn == n}
            self.tried.extend((n, kk, False) for kk in ks if kk not in called)  # ruled out by monotonicity
            return None
        lo, hi = below + 1, first
        f.layer(hi)
        while lo < hi:
            mid = (lo + hi) // 2
            decided, found, _ = self.pairs(f, n, mid, False, False)
            self.tried.append((n, mid, decided))
            if decided is None:
                return self.unfinished(n, lo, f"{self.why()} while deciding {n} nodes, {mid} propositions")
            if decided:  # the smallest pair found so far
                self.best = found
            lo, hi = (lo, mid) if decided else (mid + 1, hi)
        return self.each_k(f, n, [lo])

    def each_k(self, f: PairFormula, n: int, ks: list[int]) -> LabelSearchResult | None:
        """Enumerate at (n, k) for each k in turn; the first k with a pair ends the search."""
        for k in ks:
            decided, found, complete = self.pairs(f, n, k, True, True)
            if (n, k, decided) not in self.tried:
                self.tried.append((n, k, decided))
            if not len(found) and not complete:
                return self.unfinished(n, k, f"{self.why()} while deciding {n} nodes, {k} propositions")
            if len(found):
                if complete:
                    return self.result(n, k, found, True)
                cap = self.limits.max_solutions
                capped = cap is not None and len(found) >= cap
                msg = (
                    f"enumeration capped at {cap} pairs; the pairs found are listed"
                    if capped
                    else f"enumeration stopped early ({self.why()}); the pairs found are listed"
                )
                return self.result(n, k, found, False, msg, stopped=None if capped else self.why())
        return None

    def unfinished(self, n: int, k: int, why: str) -> LabelSearchResult:
        """The search stopped at (n, k): the smallest pair found at n (by the label-free check
        or the bisection), flagged."""
        if not len(self.best):
            return self.result(None, None, self._store(), False, why, stopped=self.why())
        kb = next(iter(self.best.found.values())).n_props
        msg = (
            f"{why}: {n} nodes is the fewest (fewer ruled out for every labeling); the pair listed "
            f"({n} nodes, {kb} propositions) is the best found, {k} to {kb - 1} propositions not ruled out at {n} nodes"
            if k < kb
            else f"{why}: the pair listed ({n} nodes, {kb} propositions) is one of those of the fewest sizes, "
            "the others not enumerated"
        )
        return self.result(n, kb, self.best, False, msg, stopped=self.why())

    def result(
        self, n, k, found: PairStore, complete: bool, msg: str = "", stopped: str | None = None
    ) -> LabelSearchResult:
        if stopped is None and not complete and self.deadline.expired():
            stopped = self.why()
        return LabelSearchResult(
            n_nodes=n,
            n_props=k,
            solutions=found.solutions(),
            complete=complete,
            tried=tuple(self.tried),
            message=msg,
            counterexamples=len(self.seen),
            rounds=self.rounds,
            longest=self.longest,
            histories=self.histories,
            time_solve=self.t_solve,
            lower_bound=self.limits.min_nodes,
            cap=self.limits.max_solutions,
            stopped=stopped,
            histories_from="product"
            if self.product is not None
            else "tree"
            if self.problem.oracle is None
            else "counterexamples",
        )


__all__ = ["LabelSearchResult", "PairSearch", "PairSearchCapabilities", "SmallestPairs"]
