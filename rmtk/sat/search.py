"""Search for the smallest consistent machine and enumerate every solution
(paper section 3.2, Algorithm 1), with time limits and progress.

Enumeration blocks a solution on its *used* transitions only — those that some word of the
prefix tree exercises. The other transitions are unconstrained by the data: they are
reported (and printed as the default self-loops), not multiplied out. Counts are given in
two conventions:

* distinct machines up to renaming of nodes (what a user wants), and
* raw satisfying assignments with node 0 fixed as u_I (the paper's convention), computed
  exactly as Σ over machines of (n−1)!/r! relabellings × the completions of the unused
  transitions (r = nodes no word reaches; completions respect non-stuttering).
"""

from __future__ import annotations

import functools
import itertools
import math
import time
from collections.abc import Callable

import attrs
import numpy as np
from pysat.card import CardEnc, EncType

from ..errors import RmtkError
from ..limits import Deadline, Expired, SearchLimits, checking
from ..ptp.tree import Trie
from .encoding import Formula, Problem, VarPool, decode_transitions
from .solver import DEFAULT_SOLVER, maxsat_compute, open_rc2, open_solver, solve

#: An encoder's clause builder, giving the formula of ``problem`` for ``n`` nodes.
Encode = Callable[[Problem, int], Formula]


@attrs.frozen
class Solution:
    """One learned machine model (up to renaming), in canonical BFS numbering.

    Attributes:
        delta_u: ``(n, K)`` transitions; unconstrained ones are self-loops.
        used: ``(n, K)`` transitions determined by the data: exercised by some word of the
            prefix tree, or forced by non-stuttering; the others are unconstrained.
        raw_count: satisfying assignments of this machine (renamings × completions).
    """

    delta_u: np.ndarray = attrs.field(eq=False)
    used: np.ndarray = attrs.field(eq=False)
    raw_count: int
    completions: int
    dropped: tuple[int, ...] = ()

    @property
    def unconstrained(self) -> list[tuple[int, int]]:
        u, k = np.nonzero(~self.used)
        return list(zip(u.tolist(), k.tolist()))


@attrs.frozen
class SearchResult:
    """Outcome of :func:`search`."""

    n_nodes: int | None
    solutions: tuple[Solution, ...]
    complete: bool
    tried: tuple[tuple[int, bool | None], ...]
    clauses: int
    variables: int
    time_encode: float
    time_solve: float
    time_enumerate: float
    message: str = ""
    cost: int | None = None
    lazy: object = None  # rmtk.sat.lazy.LazyStats of a counterexample-guided search
    #: once ``max_solutions`` machines were listed: whether another one survives (``True``: one
    #: was found and not kept; ``False``: none, the listing is complete); ``None``: not asked.
    more: bool | None = None
    #: the least noisy machine found and not proven optimal, an :class:`rmtk.sat.anytime.Unproven`
    #: with its lower bound, the gap and what the samples resolve (``None`` for an exact answer)
    unproven: object = None

    @property
    def raw_count(self) -> int:
        return sum(s.raw_count for s in self.solutions)


def used_transitions(trie: Trie, delta_u: np.ndarray, initial: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(used (n, K) mask, node reached by each trie node) of ``delta_u`` on the trie."""
    node = trie.run(delta_u, initial)
    used = np.zeros(delta_u.shape, dtype=bool)
    par, kid = trie.children()
    used[node[par], trie.letter[kid]] = True
    return used, node


def canonical_partial(delta_u: np.ndarray, used: np.ndarray, initial: int = 0) -> tuple[tuple, list[int]]:
    """A renaming-invariant key of the used part, and the BFS order of the reached nodes."""
    order, seen = [initial], {initial}
    i = 0
    while i < len(order):
        u = order[i]
        for k in range(delta_u.shape[1]):
            if used[u, k] and int(delta_u[u, k]) not in seen:
                seen.add(int(delta_u[u, k]))
                order.append(int(delta_u[u, k]))
        i += 1
    pos = {u: r for r, u in enumerate(order)}
    key = tuple((pos[u], k, pos[int(delta_u[u, k])]) for u in order for k in range(delta_u.shape[1]) if used[u, k])
    return (len(order), delta_u.shape[0], key), order


def letter_completions(
    delta_u: np.ndarray, used: np.ndarray, k: int, non_stuttering: bool, cap: int = 2_000_000
) -> np.ndarray:
    """Every valid column ``δ(·, k)`` that keeps the used transitions: an ``(m, n)`` array
    (with non-stuttering the column must be idempotent: f(f(i)) = f(i))."""
    n = delta_u.shape[0]
    free = np.flatnonzero(~used[:, k])
    if n ** len(free) > cap:
        raise RmtkError(f"too many completions to list ({n}^{len(free)}) for letter {k}")
    f = np.tile(delta_u[:, k], (n ** len(free), 1))
    if len(free):
        f[:, free] = np.array(list(itertools.product(range(n), repeat=len(free))), dtype=np.int64)
    if non_stuttering:
        f = f[np.all(np.take_along_axis(f, f, axis=1) == f, axis=1)]
    return f


def count_completions(
    delta_u: np.ndarray, used: np.ndarray, non_stuttering: bool, cap: int = 2_000_000
) -> tuple[int, np.ndarray]:
    """Number of ways to fill the unused transitions, and which transitions are determined
    (used, or forced by non-stuttering). Letters are independent."""
    n, K = delta_u.shape
    total = 1
    determined = used.copy()
    for k in range(K):
        free = np.flatnonzero(~used[:, k])
        if not non_stuttering:
            total *= n ** len(free)
            continue
        count, fixed = _column_completions(tuple(delta_u[:, k].tolist()), tuple(used[:, k].tolist()), cap)
        total *= count
        determined[:, k] |= fixed
    return total, determined


@functools.lru_cache(maxsize=1 << 16)
def _column_completions(column: tuple, used: tuple, cap: int) -> tuple[int, np.ndarray]:
    """For one letter's column of a non-stuttering machine (``column`` its targets, ``used``
    which are the data's): how many valid columns keep the used targets, and which free
    targets all of them share (forced). Columns recur across the machines of one listing
    (thousands of machines, a handful of distinct columns), so the answers are kept."""
    du, us = np.array(column, np.int64)[:, None], np.array(used, bool)[:, None]
    ok = letter_completions(du, us, 0, True, cap)
    free = np.flatnonzero(~us[:, 0])
    fixed = np.zeros(len(column), bool)
    if len(ok) and len(free):
        fixed[free] = np.all(ok[:, free] == ok[:1, free], axis=0)
    fixed.setflags(write=False)
    return len(ok), fixed


def completions(solution: Solution, non_stuttering: bool = True, limit: int = 4096):
    """Full transition tables of a solution (every filling of its free transitions), at
    most ``limit`` of them."""
    K = solution.delta_u.shape[1]
    columns = [letter_completions(solution.delta_u, solution.used, k, non_stuttering) for k in range(K)]
    for i, combo in enumerate(itertools.product(*columns)):
        if i >= limit:
            return
        yield np.stack(combo, axis=1)


@attrs.frozen
class _Decoder:
    """What decoding a model needs besides the model: the words, and whether completions
    of free transitions must respect non-stuttering."""

    trie: Trie
    non_stuttering: bool


def search(
    encode: Encode,
    problem: Problem,
    limits: SearchLimits,
    *,
    solver: str = DEFAULT_SOLVER,
    non_stuttering: bool = True,
    decide_only: bool = False,
    at_smallest: Callable[[object, Formula, int], None] | None = None,
    decide: Callable[[object, Formula, int], bool | None] | None = None,
) -> SearchResult:
    """Smallest n of ``limits.sizes`` whose formula ``encode(problem, n)`` is satisfiable,
    and all its solutions (up to ``limits.max_solutions`` distinct machines, or until the
    deadline). Each size gets a fresh solver; enumeration adds blocking clauses to it
    incrementally. ``decide_only``: the smallest n alone, no solution listed (a search that
    lists its machines by another formula at that size, e.g. the simplest ones).
    ``at_smallest(solver, formula, n)`` is called at the smallest size, its solver still open
    (it has just found a model of ``formula``), before the listing. ``decide(solver, formula,
    n)``: how a size is decided on its open solver (``None``: not decided; by default one call)."""
    progress, deadline = limits.progress, limits.deadline
    decoder = _Decoder(problem.trie, non_stuttering)
    tried: list[tuple[int, bool | None]] = []
    t_enc = t_solve = 0.0
    for n in limits.sizes:
        t0 = time.perf_counter()
        try:  # a large encoding, and the solver's set-up, look at the deadline as they go
            with checking(deadline):
                formula = encode(problem, n)
            pool, clauses = formula.pool, formula.hard
            t1 = time.perf_counter()
            t_enc += t1 - t0
            opened = open_solver(solver, clauses, deadline)
        except Expired:
            tried.append((n, None))
            t_enc += time.perf_counter() - t0
            return SearchResult(
                None, (), False, tuple(tried), 0, 0, t_enc, t_solve, 0.0, stopped_while(deadline, f"deciding {n} nodes")
            )
        with opened as sat_solver:
            sat = solve(sat_solver, deadline) if decide is None else decide(sat_solver, formula, n)
            t2 = time.perf_counter()
            t_solve += t2 - t1
            tried.append((n, sat))
            progress.size(n, sat, t2 - t1)
            if sat is None:
                return SearchResult(
                    None,
                    (),
                    False,
                    tuple(tried),
                    len(clauses),
                    pool.top,
                    t_enc,
                    t_solve,
                    0.0,
                    stopped_while(deadline, f"deciding {n} nodes"),
                )
            if not sat:
                continue
            if at_smallest is not None:
                at_smallest(sat_solver, formula, n)
            if decide_only:
                return SearchResult(n, (), True, tuple(tried), len(clauses), pool.top, t_enc, t_solve, 0.0)
            sols, complete, t_enum, more = _enumerate(sat_solver, pool, decoder, n, limits)
            return SearchResult(
                n,
                sols,
                complete,
                tuple(tried),
                len(clauses),
                pool.top,
                t_enc,
                t_solve,
                t_enum,
                _stopped(complete, limits, more),
                more=more,
            )
    return SearchResult(None, (), True, tuple(tried), 0, 0, t_enc, t_solve, 0.0, no_machine(limits))


def stopped_while(deadline, doing: str) -> str:
    """``time limit reached while deciding 4 nodes`` (or ``interrupted while ...``)."""
    why = deadline.reason() or "time limit"
    return f"{'time limit reached' if why == 'time limit' else why} while {doing}"


def _stopped(complete: bool, limits: SearchLimits | None = None, more: bool | None = None) -> str:
    """Why an enumeration stopped early (nothing when it did not): the bound of
    ``limits.max_solutions`` machines with ``more`` surviving (one more was found), the
    deadline's reason (time limit, interrupted, terminated), or the bound reached."""
    if complete:
        return ""
    if more and limits is not None:
        return f"listing stopped at {limits.max_solutions} machines (max_solutions): more survive"
    why = "limit reached"
    if limits is not None:
        stop = limits.deadline.reason()
        bound = limits.max_solutions
        why = stop if stop else f"the bound of {bound} machines reached" if bound is not None else why
    return f"enumeration stopped early ({why}); the solutions found are listed"


def no_machine(limits: SearchLimits) -> str:
    """The message of a search that proved no size of ``limits`` consistent."""
    hi = limits.sizes[-1]
    return (
        f"no machine with {limits.describe_sizes()} node{'s' if hi != 1 else ''} is consistent with the "
        "prefix tree policy"
    )


def _record(found: dict, model, pool: VarPool, decoder: _Decoder, n: int, dropped=()) -> list[int]:
    """Decode a model, file its machine under its renaming-invariant key; return the
    blocking clause (the negation of its used transitions)."""
    du = decode_transitions(model, pool)
    return record(found, du, used_transitions(decoder.trie, du)[0], pool, decoder.non_stuttering, dropped)


def _another(solver, found: dict, pool: VarPool, decoder: _Decoder, deadline) -> bool | None:
    """Whether a machine not in ``found`` satisfies the solver's clauses (its earlier models
    blocked): models of machines already found (under another numbering) are blocked and
    skipped; the new one is not kept, so memory does not grow with the survivors. ``None``:
    the deadline passed first."""
    while True:
        sat = solve(solver, deadline)
        if not sat:
            return sat
        du = decode_transitions(solver.get_model(), pool)
        used = used_transitions(decoder.trie, du)[0]
        if canonical_partial(du, used)[0] not in found:
            return True
        solver.add_clause(blocking(pool, du, used))


def record(found: dict, du: np.ndarray, used: np.ndarray, pool: VarPool, non_stuttering: bool, dropped=()) -> list[int]:
    """File the machine ``du`` (whose ``used`` transitions the data exercise) under its
    renaming-invariant key, with its raw count; return the blocking clause (the negation of
    its used transitions)."""
    n = du.shape[0]
    key, order = canonical_partial(du, used)
    if key not in found:
        reached = set(order)
        perm = order + [u for u in range(n) if u not in reached]
        canon_du, canon_used = _renumber(du, used, perm)
        comp, determined = count_completions(canon_du, canon_used, non_stuttering)
        relabel = math.factorial(n - 1) // math.factorial(n - len(order))
        found[key] = Solution(canon_du, determined, relabel * comp, comp, tuple(dropped))
    return blocking(pool, du, used)


def true_at(model: list[int], variables: np.ndarray) -> np.ndarray:
    """Which of ``variables`` a python-sat model (``model[v − 1] = ±v``) makes true, read at
    their places: a model holds every word's variables, too many to convert per machine."""
    return np.fromiter((model[v - 1] > 0 for v in np.asarray(variables).tolist()), bool, len(variables))


def blocking(pool: VarPool, du: np.ndarray, used: np.ndarray) -> list[int]:
    """The clause that blocks machine ``du`` on its ``used`` transitions: ¬t[i,k,δ(i,k)] for
    each, in row-major order."""
    i, k = np.nonzero(used)
    return (-pool.t(i, k, du[i, k])).tolist()


def _enumerate(solver, pool, decoder, n, limits: SearchLimits, relax=None):
    t0 = time.perf_counter()
    found: dict[tuple, Solution] = {}
    numbered = 0
    complete = True
    more: bool | None = None
    model = solver.get_model()
    while True:
        dropped = ()
        if relax is not None:
            dropped = np.flatnonzero(true_at(model, relax)).tolist()
        block = _record(found, model, pool, decoder, n, dropped)
        numbered += 1
        limits.progress.solution(numbered, len(found))
        solver.add_clause(block)
        if limits.max_solutions is not None and len(found) >= limits.max_solutions:
            more = _another(solver, found, pool, decoder, limits.deadline)
            complete = more is False
            break
        sat = solve(solver, limits.deadline)
        if sat is None:
            complete = False
            break
        if not sat:
            break
        model = solver.get_model()
    return tuple(found.values()), complete, time.perf_counter() - t0, more


@attrs.frozen
class WorkBudget(Deadline):
    """A deadline that also expires once the oracle of the RC2 it watches has made more than
    ``propagations`` propagations (its :meth:`watch`, which :func:`maxsat_search` calls; read at
    every 32nd check of the deadline): a bound
    on the work of a MaxSAT search that, unlike a time limit, ends it at the same point on every
    machine under any load (the stop checks are placed by the solver's work: rmtk/sat/solver.py)."""

    propagations: int = 0
    _state: dict = attrs.field(factory=dict, eq=False, repr=False)

    def watch(self, rc2) -> None:
        """Count the work of ``rc2``'s oracle from now on."""
        self._state.update(rc2=rc2, start=rc2.oracle.accum_stats()["propagations"], spent=False)

    @property
    def work(self) -> int:
        """The propagations counted at the last check."""
        return int(self._state.get("work", 0))

    @property
    def spent(self) -> bool:
        """Whether the budget ran out (not the time limit, nor a stop request)."""
        return bool(self._state.get("spent"))

    def expired(self) -> bool:
        rc2 = self._state.get("rc2")
        if rc2 is not None and rc2.oracle is None:  # its search is over: the budget bounded it alone
            self._state["rc2"] = rc2 = None
        if rc2 is not None and not self.spent:
            calls = self._state["calls"] = self._state.get("calls", 0) + 1
            if calls % 32 == 1:  # reading the counts costs microseconds; a count, not the clock, spaces them
                work = self._state["work"] = rc2.oracle.accum_stats()["propagations"] - self._state["start"]
                self._state["spent"] = work > self.propagations
        return self.spent or Deadline.expired(self)

    def reason(self) -> str | None:
        return "its budget of work spent" if self.spent else Deadline.reason(self)


def maxsat_search(
    encode: Encode,
    problem: Problem,
    limits: SearchLimits,
    *,
    solver: str = DEFAULT_SOLVER,
    non_stuttering: bool = True,
) -> SearchResult:
    """Weighted MaxSAT (paper section 5.2) at ``limits.nodes`` nodes on ``encode(problem,
    nodes)``: its hard clauses, and the soft units ¬relax[k] of weight ``weights[k]`` (one per
    negative example). Every optimal machine is enumerated (blocking its used transitions, as
    for SAT); the examples each one violates are reported."""
    if limits.nodes is None:
        raise RmtkError("MaxSAT searches one size: give SearchLimits(nodes=...)")
    nodes, deadline, progress = limits.nodes, limits.deadline, limits.progress
    decoder = _Decoder(problem.trie, non_stuttering)
    t0 = time.perf_counter()
    t1 = float("inf")
    formula = None

    def undecided() -> SearchResult:  # the deadline expired before the optimum was known
        t = time.perf_counter()
        return SearchResult(
            None,
            (),
            False,
            ((nodes, None),),
            0 if formula is None else formula.n_clauses,
            0 if formula is None else formula.pool.top,
            min(t, t1) - t0,
            max(0.0, t - t1),
            0.0,
            stopped_while(deadline, f"optimising at {nodes} nodes"),
        )

    try:  # the encoding of a million steps takes a second: it looks at the deadline (checkpoint)
        with checking(deadline):
            formula = encode(problem, nodes)
    except Expired:
        return undecided()
    pool = formula.pool
    if deadline.expired():
        return undecided()
    relax = np.empty(0, np.int64) if formula.relax is None else np.asarray(formula.relax, dtype=np.int64)
    weights = np.ones(len(relax), np.int64) if formula.weights is None else np.asarray(formula.weights, np.int64)
    wcnf = weighted_cnf(formula.hard, relax, weights)
    t1 = time.perf_counter()
    uniform = len(set(weights.tolist())) <= 1
    found: dict[tuple, Solution] = {}
    complete = True
    more: bool | None = None
    # exclusive soft groups (noisy rewards): RC2 finds them first and exhausts each core, 60-150x
    # faster on Office coffee's noisy traces (benchmarks/rewards.py --noise); the optima are the same
    options = dict(adapt=True, exhaust=True) if formula.exclusive_softs else {}
    rc2 = open_rc2(wcnf, deadline, stratified=not uniform, solver=solver, **options)
    if rc2 is None:
        return undecided()
    with rc2:
        if isinstance(deadline, WorkBudget):
            deadline.watch(rc2)
        model, decided = maxsat_compute(rc2, deadline)
        t2 = time.perf_counter()
        if not decided:
            return undecided()
        if model is None:
            return SearchResult(
                None,
                (),
                True,
                ((nodes, False),),
                formula.n_clauses,
                pool.top,
                t1 - t0,
                t2 - t1,
                0.0,
                f"the hard constraints with {nodes} nodes are unsatisfiable",
            )
        progress.size(nodes, True, t2 - t1)
        best = int(rc2.cost)
        if not uniform:  # weighted: enumerate the optima with RC2 itself
            truth = np.zeros(pool.top + 1, dtype=bool)
            while model is not None and rc2.cost == best:
                m = np.asarray(model)
                truth[:] = False
                truth[m[(m > 0) & (m <= pool.top)]] = True
                dropped = np.flatnonzero(truth[relax])
                rc2.add_clause(_record(found, model, pool, decoder, nodes, dropped.tolist()))
                progress.solution(len(found), len(found))
                if limits.max_solutions is not None and len(found) >= limits.max_solutions:
                    complete = False
                    break
                model, decided = maxsat_compute(rc2, deadline)
                if not decided:
                    complete = False
                    break
    if uniform:
        sols, complete, more = optima(wcnf.hard, pool, relax, best, decoder, nodes, limits, solver)
        found = {i: s for i, s in enumerate(sols)}
    t3 = time.perf_counter()
    return SearchResult(
        nodes,
        tuple(found.values()),
        complete,
        ((nodes, True),),
        formula.n_clauses,
        pool.top,
        t1 - t0,
        t2 - t1,
        t3 - t2,
        _stopped(complete, limits, more),
        cost=int(best),
        more=more,
    )


def optima(hard, pool: VarPool, relax: np.ndarray, best: int, decoder: _Decoder, n: int, limits, solver: str):
    """Every machine of ``hard`` with at most ``best`` of the unit-weight ``relax`` true (the
    optima, ``best`` being the optimum), listed by a plain SAT solver, much faster than
    repeated MaxSAT calls: (solutions, complete, more)."""
    bound = (
        [[-int(b)] for b in relax]
        if best == 0 or len(relax) == 0
        else CardEnc.atmost(relax.tolist(), bound=best, vpool=pool.aux, encoding=EncType.totalizer).clauses
    )
    with open_solver(solver, hard + bound) as sat_solver:
        return list_optima(sat_solver, pool, decoder, n, limits, relax)


def list_optima(sat_solver, pool: VarPool, decoder: _Decoder, n: int, limits, relax: np.ndarray):
    """Every machine of ``sat_solver``'s clauses, which admit an optimum already found (at most
    that many of ``relax`` true), listed on it: (solutions, complete, more); not complete when
    the deadline stopped the first call."""
    sat = solve(sat_solver, limits.deadline)
    if sat is None:
        return (), False, None
    if not sat:  # pragma: no cover - the optimum was found on these clauses
        raise RmtkError("internal error: an optimum found is not reproducible by SAT")
    sols, complete, _, more = _enumerate(sat_solver, pool, decoder, n, limits, relax)
    return sols, complete, more


def weighted_cnf(hard: list[list[int]], relax: np.ndarray, weights: np.ndarray):
    """The WCNF of ``hard`` clauses and the soft units ``¬relax[k]`` of weight ``weights[k]``:
    what ``WCNF.extend`` and ``WCNF.append`` build clause by clause (the same ``hard``, ``soft``,
    ``wght``, ``topw`` and ``nv``, the largest variable, which RC2 numbers its own after),
    built by whole lists (the per-clause calls were a tenth of a small fit)."""
    from pysat.formula import WCNF

    wcnf = WCNF()
    lits = np.fromiter(itertools.chain.from_iterable(hard), np.int64)
    weights = np.asarray(weights, np.int64)
    zero = weights == 0  # WCNF.append files a clause of weight 0 as hard
    wcnf.hard = hard + [[-b] for b in relax[zero].tolist()] if zero.any() else hard
    wcnf.soft = [[-b] for b in relax[~zero].tolist()]
    wcnf.wght = [int(w) for w in weights[~zero].tolist()]
    wcnf.topw = 1 + sum(wcnf.wght)
    wcnf.nv = int(max(np.abs(lits).max(initial=0), np.abs(relax).max(initial=0)))
    return wcnf


def _renumber(du: np.ndarray, used: np.ndarray, perm: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Renumber nodes so that old node ``perm[r]`` becomes ``r``; unused transitions become
    self-loops (always valid under non-stuttering)."""
    inv = np.empty(len(perm), dtype=np.int64)
    inv[perm] = np.arange(len(perm))
    new_du = inv[du[perm]]
    new_used = used[perm]
    loops = np.broadcast_to(np.arange(len(perm))[:, None], new_du.shape)
    return np.where(new_used, new_du, loops), new_used
