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

import contextlib
import itertools
import math
import threading
import time
from collections.abc import Callable, Sequence

import attrs
import numpy as np
from pysat.card import CardEnc, EncType
from pysat.solvers import Solver, SolverNames

from ..errors import RmtkError
from ..progress import Progress
from ..ptp import Trie
from .encoding import Formula, Problem, VarPool, decode_transitions

#: An encoder's clause builder, giving the formula of ``problem`` for ``n`` nodes.
Encode = Callable[[Problem, int], Formula]

#: The SAT solver names python-sat offers (``rmtk learn --solver``).
SOLVERS = tuple(sorted(k for k in vars(SolverNames) if not k.startswith("_")))
#: Backends that pysat cannot interrupt (``solve_limited`` is not implemented for them).
NOT_INTERRUPTIBLE = frozenset({"cadical103", "cadical153", "cadical195", "lingeling"})
#: The backend used instead when a time limit needs an interruptible solver.
INTERRUPTIBLE_FALLBACK = "glucose4"


def solver_for(name: str, time_limit: float | None) -> tuple[str, str]:
    """The backend to run and a note: with a time limit, a backend pysat cannot interrupt
    (CaDiCaL, Lingeling) is replaced by Glucose 4 so that the limit is honoured."""
    if time_limit is not None and name in NOT_INTERRUPTIBLE:
        return INTERRUPTIBLE_FALLBACK, (
            f"solver {INTERRUPTIBLE_FALLBACK} used instead of {name}, which cannot be "
            "interrupted, to honour the time limit"
        )
    return name, ""


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
        return [tuple(map(int, ik)) for ik in np.argwhere(~self.used)]


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

    @property
    def raw_count(self) -> int:
        return sum(s.raw_count for s in self.solutions)


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


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
        ok = letter_completions(delta_u, used, k, True, cap)
        total *= len(ok)
        if len(ok) and len(free):
            determined[free, k] = np.all(ok[:, free] == ok[:1, free], axis=0)
    return total, determined


def completions(solution: Solution, non_stuttering: bool = True, limit: int = 4096):
    """Full transition tables of a solution (every filling of its free transitions), at
    most ``limit`` of them."""
    K = solution.delta_u.shape[1]
    columns = [letter_completions(solution.delta_u, solution.used, k, non_stuttering) for k in range(K)]
    for i, combo in enumerate(itertools.product(*columns)):
        if i >= limit:
            return
        yield np.stack(combo, axis=1)


#: An unbounded solve runs in slices of conflicts, from ``FIRST_SLICE`` up to 4 ×
#: ``SLICE_CONFLICTS``, sized to last about ``SLICE_SECONDS``: Ctrl-C and SIGTERM are honoured
#: between slices.
SLICE_CONFLICTS = 50_000
SLICE_SECONDS = 0.5
#: Conflicts of a solve's first slice.
FIRST_SLICE = 1_000


@contextlib.contextmanager
def pysat_sigint_off():
    """pysat puts its own SIGINT handler around a solver call made on the main thread; it
    jumps out of the solver wherever it is, and out of CaDiCaL's memory allocator that leaves
    the process deadlocked (seen with gdb: the solver's destructor waits on malloc's lock).
    Within this block pysat installs none (it asks ``MainThread.check`` whether to), so a
    signal is handled by Python when the call returns, as any other."""
    import pysat.solvers as ps

    saved = ps.MainThread.check
    ps.MainThread.check = staticmethod(lambda: False)  # type: ignore[method-assign]
    try:
        yield
    finally:
        ps.MainThread.check = saved  # type: ignore[method-assign]


def _sliced(solver: Solver, assumptions: list[int]) -> bool:
    """``solver.solve(assumptions)`` in slices of conflicts (see :data:`SLICE_SECONDS`), so
    that Ctrl-C and SIGTERM raise between two slices."""
    budget = FIRST_SLICE  # most solves end within it
    with pysat_sigint_off():
        while True:
            solver.conf_budget(budget)
            t0 = time.monotonic()
            result = solver.solve_limited(assumptions=assumptions)
            if result is not None:
                solver.conf_budget(-1)
                return result
            took = time.monotonic() - t0
            if took > 2 * SLICE_SECONDS:
                budget = max(FIRST_SLICE, budget // 2)
            elif took < SLICE_SECONDS / 2:
                budget = min(4 * SLICE_CONFLICTS, budget * 2)


def _solve(solver: Solver, deadline: float | None, assumptions: Sequence[int] = ()) -> bool | None:
    if deadline is None:
        return _sliced(solver, list(assumptions))
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        return None
    timer = threading.Timer(remaining, solver.interrupt)
    timer.start()
    try:
        result = solver.solve_limited(assumptions=list(assumptions), expect_interrupt=True)
    finally:
        timer.cancel()
        solver.clear_interrupt()
    return result


@attrs.frozen
class _Decoder:
    """What decoding a model needs besides the model: the words, and whether completions
    of free transitions must respect non-stuttering."""

    trie: Trie
    non_stuttering: bool


def search(
    encode: Encode,
    problem: Problem,
    *,
    max_nodes: int,
    min_nodes: int = 1,
    exact_nodes: int | None = None,
    solver: str = "cadical153",
    non_stuttering: bool = True,
    max_solutions: int | None = None,
    time_limit: float | None = None,
    progress: Progress | None = None,
) -> SearchResult:
    """Smallest n in [min_nodes, max_nodes] (or exactly ``exact_nodes``) whose formula
    ``encode(problem, n)`` is satisfiable, and all its solutions (up to ``max_solutions``
    distinct machines / the time limit). Each size gets a fresh solver; enumeration adds
    blocking clauses to it incrementally."""
    progress = progress or Progress()
    deadline = None if time_limit is None else time.monotonic() + time_limit
    solver_name, note = solver_for(solver, time_limit)
    decoder = _Decoder(problem.trie, non_stuttering)
    sizes: Sequence[int] = [exact_nodes] if exact_nodes is not None else range(max(1, min_nodes), max_nodes + 1)
    tried: list[tuple[int, bool | None]] = []
    t_enc = t_solve = 0.0
    for n in sizes:
        t0 = time.perf_counter()
        formula = encode(problem, n)
        pool, clauses = formula.pool, formula.hard
        t1 = time.perf_counter()
        t_enc += t1 - t0
        with Solver(name=solver_name, bootstrap_with=clauses) as sat_solver:
            sat = _solve(sat_solver, deadline)
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
                    _join(f"time limit reached while deciding {n} nodes", note),
                )
            if not sat:
                continue
            sols, complete, t_enum = _enumerate(sat_solver, pool, decoder, n, max_solutions, deadline, progress)
            msg = "" if complete else "enumeration stopped early (limit reached); the solutions found are listed"
            return SearchResult(
                n, sols, complete, tuple(tried), len(clauses), pool.top, t_enc, t_solve, t_enum, _join(msg, note)
            )
    lo, hi = sizes[0], sizes[-1]
    what = f"exactly {hi}" if exact_nodes is not None else (f"at most {hi}" if lo <= 1 else f"{lo} to {hi}")
    return SearchResult(
        None,
        (),
        True,
        tuple(tried),
        0,
        0,
        t_enc,
        t_solve,
        0.0,
        f"no machine with {what} node{'s' if hi != 1 else ''} is consistent with the prefix tree policy",
    )


def _record(found: dict, model, pool: VarPool, decoder: _Decoder, n: int, dropped=()) -> list[int]:
    """Decode a model, file its machine under its renaming-invariant key; return the
    blocking clause (the negation of its used transitions)."""
    du = decode_transitions(model, pool)
    return record(found, du, used_transitions(decoder.trie, du)[0], pool, decoder.non_stuttering, dropped)


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
    return [-int(pool.t(i, k, du[i, k])) for i, k in np.argwhere(used)]


def _enumerate(solver, pool, decoder, n, max_solutions, deadline, progress, relax=None):
    t0 = time.perf_counter()
    found: dict[tuple, Solution] = {}
    numbered = 0
    complete = True
    model = solver.get_model()
    while True:
        dropped = ()
        if relax is not None:
            m = np.asarray(model)
            dropped = np.flatnonzero(m[relax - 1] > 0).tolist()
        block = _record(found, model, pool, decoder, n, dropped)
        numbered += 1
        progress.solution(numbered, len(found))
        solver.add_clause(block)
        if max_solutions is not None and len(found) >= max_solutions:
            complete = False
            break
        sat = _solve(solver, deadline)
        if sat is None:
            complete = False
            break
        if not sat:
            break
        model = solver.get_model()
    return tuple(found.values()), complete, time.perf_counter() - t0


def maxsat_search(
    encode: Encode,
    problem: Problem,
    *,
    nodes: int,
    solver: str = "cadical153",
    non_stuttering: bool = True,
    max_solutions: int | None = None,
    time_limit: float | None = None,
    progress: Progress | None = None,
) -> SearchResult:
    """Weighted MaxSAT (paper section 5.2) at ``nodes`` nodes on ``encode(problem, nodes)``:
    its hard clauses, and the soft units ¬relax[k] of weight ``weights[k]`` (one per negative
    example). Every optimal machine is enumerated (blocking its used transitions, as for
    SAT); the examples each one violates are reported. The time limit is checked between
    solutions."""
    from pysat.examples.rc2 import RC2, RC2Stratified
    from pysat.formula import WCNF

    progress = progress or Progress()
    deadline = None if time_limit is None else time.monotonic() + time_limit
    decoder = _Decoder(problem.trie, non_stuttering)
    t0 = time.perf_counter()
    formula = encode(problem, nodes)
    pool = formula.pool
    relax = np.empty(0, np.int64) if formula.relax is None else np.asarray(formula.relax, dtype=np.int64)
    weights = np.ones(len(relax), np.int64) if formula.weights is None else np.asarray(formula.weights, np.int64)
    wcnf = WCNF()
    wcnf.extend(formula.hard)
    for b, w in zip(relax.tolist(), weights.tolist()):
        wcnf.append([-b], weight=int(w))
    t1 = time.perf_counter()
    uniform = len(set(weights.tolist())) <= 1
    solver_name, note = solver_for(solver, time_limit)
    found: dict[tuple, Solution] = {}
    complete = True
    with (RC2 if uniform else RC2Stratified)(wcnf, solver=solver_name) as rc2:
        model = rc2.compute()
        t2 = time.perf_counter()
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
                if (max_solutions is not None and len(found) >= max_solutions) or (
                    deadline is not None and time.monotonic() > deadline
                ):
                    complete = False
                    break
                model = rc2.compute()
    if uniform:
        # unit weights: the optima are the models of hard ∧ (at most `best` dropped examples);
        # a plain SAT solver enumerates them much faster than repeated MaxSAT calls
        bound = (
            [[-int(b)] for b in relax]
            if best == 0 or len(relax) == 0
            else CardEnc.atmost(relax.tolist(), bound=best, vpool=pool.aux, encoding=EncType.totalizer).clauses
        )
        with Solver(name=solver_name, bootstrap_with=wcnf.hard + bound) as sat_solver:
            if not sat_solver.solve():  # pragma: no cover - RC2 found a model of these clauses
                raise RmtkError("internal error: the MaxSAT optimum is not reproducible by SAT")
            sols, complete, _ = _enumerate(sat_solver, pool, decoder, nodes, max_solutions, deadline, progress, relax)
            found = {i: s for i, s in enumerate(sols)}
    t3 = time.perf_counter()
    msg = "" if complete else "enumeration stopped early (limit reached); the solutions found are listed"
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
        _join(msg, note),
        cost=int(best),
    )


def _renumber(du: np.ndarray, used: np.ndarray, perm: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Renumber nodes so that old node ``perm[r]`` becomes ``r``; unused transitions become
    self-loops (always valid under non-stuttering)."""
    inv = np.empty(len(perm), dtype=np.int64)
    inv[perm] = np.arange(len(perm))
    new_du = inv[du[perm]]
    new_used = used[perm]
    loops = np.broadcast_to(np.arange(len(perm))[:, None], new_du.shape)
    return np.where(new_used, new_du, loops), new_used
