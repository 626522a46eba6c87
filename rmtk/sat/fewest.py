"""The simplest machines: the smallest size, then the fewest of a set of relaxation variables
true (``SimplestEncoder``'s moving transitions), then every machine with that few, all on one
solver, listed in their canonical order (docs/design/rewards-evidence.md; the size search and
the listing are :mod:`rmtk.sat.search`'s)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from ..limits import SearchLimits
from .encoding import Formula, Problem
from .search import (
    Encode,
    SearchResult,
    Solution,
    _Decoder,
    _stopped,
    canonical_partial,
    list_optima,
    search,
    stopped_while,
    true_at,
)
from .solver import DEFAULT_SOLVER, solve


def fewest_search(
    encode: Encode,
    weigh: Callable[[Problem, int, Formula], Formula],
    problem: Problem,
    limits: SearchLimits,
    *,
    solver: str = DEFAULT_SOLVER,
    non_stuttering: bool = True,
) -> SearchResult:
    """The smallest n of ``limits.sizes`` whose ``encode(problem, n)`` is satisfiable (as
    :func:`search`), then every machine at n with the fewest of the unit-weight relaxation
    variables of ``weigh(problem, n, formula)`` true (the formula taken over and extended),
    all on the solver that decided n: the new clauses added, at most the middle of the known
    bounds asked for until they meet (:func:`fewest_true`), then the optima listed under "at most that many" (its learnt
    clauses kept: a fresh solver would search the same space again). The machines come in
    their canonical order (:func:`canonical_order`): which solver listed them, and in which
    order, does not show in the answer."""
    found: dict = {}

    def decide(sat_solver, formula: Formula, n: int) -> bool | None:
        floor = limits.fewest_floor[1] if limits.fewest_floor and limits.fewest_floor[0] == n else 0
        sat, climbed = decide_size(sat_solver, formula, n, lambda: weigh(problem, n, formula), limits.deadline, floor)
        found["climbed"] = climbed
        return sat

    def at_smallest(sat_solver, formula: Formula, n: int) -> None:
        t0 = time.perf_counter()
        climbed = found.pop("climbed", None)
        if climbed is None or climbed.n != n:  # decided by one call: the relaxations added now
            size = len(formula.hard)
            weighed = weigh(problem, n, formula)
            for clause in weighed.hard[size:]:
                sat_solver.add_clause(clause)
            tot, low, sat = None, 0, None
        else:
            weighed, tot, low, sat = climbed.formula, climbed.tot, climbed.low, True
        t1 = time.perf_counter()
        relax = np.asarray(weighed.relax, np.int64)
        if sat is None:
            sat = solve(sat_solver, limits.deadline)
        floor = limits.fewest_floor[1] if limits.fewest_floor and limits.fewest_floor[0] == n else 0
        best = fewest_true(sat_solver, relax, weighed.pool.top, limits.deadline, floor, tot, low) if sat else None
        found.update(formula=weighed, best=best, encode=t1 - t0, solve=time.perf_counter() - t1)
        if best is None:
            return
        t2 = time.perf_counter()
        decoder = _Decoder(problem.trie, non_stuttering)
        for clause in best.bound:
            sat_solver.add_clause(clause)
        sols, complete, more = list_optima(sat_solver, weighed.pool, decoder, n, limits, relax)
        found.update(listed=(canonical_order(sols), complete, more), enumerate=time.perf_counter() - t2)

    probe = search(
        encode,
        problem,
        limits,
        solver=solver,
        non_stuttering=non_stuttering,
        decide_only=True,
        at_smallest=at_smallest,
        decide=decide,
    )
    if probe.n_nodes is None:
        return probe
    n, formula, best = probe.n_nodes, found["formula"], found["best"]
    t_enc, t_solve = probe.time_encode + found["encode"], probe.time_solve + found["solve"]
    pool = formula.pool
    if best is None:
        why = stopped_while(limits.deadline, f"optimising at {n} nodes")
        return SearchResult(None, (), False, probe.tried, formula.n_clauses, pool.top, t_enc, t_solve, 0.0, why)
    sols, complete, more = found["listed"]
    return SearchResult(
        n,
        sols,
        complete,
        probe.tried,
        formula.n_clauses,
        pool.top,
        t_enc,
        t_solve,
        found["enumerate"],
        _stopped(complete, limits, more),
        cost=best.count,
        more=more,
    )


def canonical_order(solutions) -> tuple[Solution, ...]:
    """``solutions`` sorted by their renaming-invariant key (:func:`canonical_partial`: fewer
    reached nodes first, then their used transitions in BFS numbering, lexicographically):
    an order that depends on the machines alone, not on the solver that listed them."""
    return tuple(sorted(solutions, key=lambda s: canonical_partial(s.delta_u, s.used)[0]))


#: The conflicts a call of :func:`fewest_true` asking for at most the middle of its bounds may
#: spend undecided before the descent turns to climbing: at most the lower bound asked for, one
#: more at a time until a machine has that few. Those calls are refutations (but the last) that
#: the solver's learnt clauses make quick, where a machine with few moves can be hard to find
#: (Craft t7 in JIRP's class: 81,000 conflicts, 4.3 s, to find one moving on 8 transitions of 6
#: nodes; the seven refutations and the machine moving on 7 from below, 2.5 s). Counted in
#: conflicts, not seconds, so the path, and the machines a cut listing keeps, are the same under
#: any load. Fewer (2,000) would reach calls of smaller searches and change which machines their
#: cut listings keep (t9 in JIRP's class, docs/benchmarks/rewards.md, "Two machine classes").
DESCENT_CONFLICTS = 10_000


#: The conflicts a size's first call may spend undecided before :func:`decide_size` also asks
#: for machines with few moving transitions, doubled each round. Counted in conflicts, so the
#: path is the same under any load; above what every reward row of docs/benchmarks/rewards.md
#: but Craft t10 from random subgoals needs (those sizes are decided by one call, as before).
DECIDE_CONFLICTS = 100_000


@attrs.frozen
class Climbed:
    """A size decided by :func:`decide_size` climbing: its ``formula`` with the relaxation
    variables, the totalizer ``tot`` over them added to the solver, and ``low``: no machine of
    the size has fewer of them true (its last model has that many, when satisfiable)."""

    n: int
    formula: Formula
    tot: Any  # a pysat.card.ITotalizer
    low: int


def decide_size(
    solver, formula: Formula, n: int, weigh: Callable[[], Formula], deadline, floor: int = 0
) -> tuple[bool | None, Climbed | None]:
    """Whether ``formula`` (at ``n`` nodes, on ``solver``) is satisfiable, in rounds: a call of
    at most :data:`DECIDE_CONFLICTS` conflicts (doubled each round), then, while undecided, calls
    sharing as many conflicts asking for a machine with at most ``low`` moving transitions (the
    relaxation variables of ``weigh()``, made at the first round that needs them, added to
    ``solver``), ``low`` one more after each refutation, from ``floor``. A machine with few
    moves is much easier to find than any machine (Craft t10 from random subgoals, 200
    episodes, 7 nodes: none within 6 CPU minutes of one call; at most 7 moves refuted and one
    with 8 found in 47 s), and the climb's lower bound holds for the fewest moves asked next.
    Returns the decision (``None``: the deadline) and, when the climb started, what it left."""
    from pysat.card import ITotalizer

    budget, climbed = DECIDE_CONFLICTS, None
    while True:
        sat = solve(solver, deadline, conflicts=budget)
        if sat is not None or deadline.expired():
            return sat, climbed
        if climbed is None:
            size = len(formula.hard)
            weighed = weigh()
            for clause in weighed.hard[size:]:
                solver.add_clause(clause)
            relax = np.asarray(weighed.relax, np.int64).tolist()
            tot = ITotalizer(lits=relax, ubound=len(relax), top_id=weighed.pool.top)
            for clause in tot.cnf.clauses:
                solver.add_clause(clause)
            climbed = Climbed(n, weighed, tot, floor)
        spent = 0  # the climb's calls share the round's conflicts: at most twice the first call's work
        while climbed.low < climbed.tot.ubound and spent < budget:
            before = conflicts(solver)
            sat = solve(solver, deadline, assumptions=[-climbed.tot.rhs[climbed.low]], conflicts=budget - spent)
            spent += conflicts(solver) - before
            if sat:
                return True, climbed
            if sat is None:
                break
            climbed = attrs.evolve(climbed, low=climbed.low + 1)
        budget *= 2


def conflicts(solver) -> int:
    """The conflicts ``solver`` has met so far (0 for a backend that does not count them)."""
    return int((solver.accum_stats() or {}).get("conflicts", 0))


@attrs.frozen
class Fewest:
    """What :func:`fewest_true` found: the fewest ``count`` of the relaxation variables true,
    and the clauses (over the totalizer it added) that keep every model at most that."""

    count: int
    bound: list[list[int]]


def fewest_true(
    solver, relax: np.ndarray, top: int, deadline, floor: int = 0, tot=None, known: int = 0
) -> Fewest | None:
    """The fewest of ``relax`` true in a model of ``solver`` (which has just found one), by
    asking for at most the middle of what is known until the two bounds meet (an incremental
    totalizer over ``relax``, numbered past ``top``, added to ``solver``), or, once such a call
    has spent :data:`DESCENT_CONFLICTS` undecided, for at most the lower bound, one more at a
    time until a model has that few (the same count); ``None`` when ``deadline`` stopped it.
    ``floor``: a lower bound known to hold (the optimum of a sample of the same evidence, where
    the machines satisfy fewer clauses): asked for first, so that a sample's optimum that still
    holds costs one call, and never gone below (the same count, without proving the step under
    it). ``tot``: a totalizer over ``relax`` already on ``solver`` (:func:`decide_size`'s), with
    ``known``: no model has fewer true."""
    from pysat.card import ITotalizer

    def count() -> int:
        return int(true_at(solver.get_model(), relax).sum())

    best = count()
    if best == 0:
        return Fewest(0, [[-int(b)] for b in relax.tolist()])
    if best == len(relax):  # pragma: no cover - every relaxation variable true: nothing to bound
        return Fewest(best, [])
    if tot is None:
        tot = ITotalizer(lits=relax.tolist(), ubound=best + 1, top_id=top)  # rhs[j]: at least j + 1 true
        for clause in tot.cnf.clauses:
            solver.add_clause(clause)
    low = floor if known < floor <= best else known  # no model has fewer true
    if known < low < best:  # the sample's optimum first: when it holds (often), one call ends the descent
        sat = solve(solver, deadline, assumptions=[-tot.rhs[low]])
        if sat is None:
            return None
        best, low = (count(), low) if sat else (best, low + 1)
    climbing = False  # asking for at most the lower bound, one more at a time
    while best > low:  # halve the gap: at most the middle count asked for
        mid = low if climbing else (low + best - 1) // 2
        budget = None if mid == low else DESCENT_CONFLICTS
        sat = solve(solver, deadline, assumptions=[-tot.rhs[mid]], conflicts=budget)
        if sat is None and budget is not None:  # a hard machine to find: prove the lower bounds instead
            climbing = True  # (a deadline passed stops the next call)
            continue
        if sat is None:
            return None
        best, low = (count(), low) if sat else (best, mid + 1)
    return Fewest(best, [[-tot.rhs[best]]])
