"""The label-free check of the (n, k) search (docs/design.md, section 13): whether some labeling
and some machine with n nodes fit the expert, for every number of propositions at once.

A labeling and a machine are read over states as ``D(u, s) = δ(u, L(s))``; conversely any
non-stuttering machine D over states is a pair (group the states by their column D(·, s)). So
the check learns a machine over the state letters, with the encoding of :mod:`rmtk.sat.encoding`
(t[i,s,j], determinism, full specification, non-stuttering, BFS numbering) checked lazily
against the oracle; states known to share a label get equal columns.

*Identity first.* Most states of a task move no machine (the plain cells of a grid). Each
state s gets a selector a[s] → t[i,s,i] for every node i, and the solver is asked under the
assumption that every selector holds. When that fails, the failed assumptions (the core,
shrunk by deletion with a conflict budget) are dropped and the loop goes on. The assumptions
only steer: a machine is returned only when the oracle accepts it, and "no machine" only when
the solver fails with no assumption in its core, which is a proof for every labeling.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import numpy as np
from pysat.solvers import Solver

from ..limits import NEVER, Deadline
from ..progress import Progress
from ..sat.encoding import (
    Clauses,
    VarPool,
    decode_transitions,
    determinism,
    full_specification,
    non_stuttering,
    symmetry_breaking_bfs,
)
from ..sat.lazy import LazyFormula
from ..sat.solver import DEFAULT_SOLVER, open_solver, solve

#: Conflicts allowed to each call that shrinks a core (an unfinished call keeps the state in).
CORE_BUDGET = 1000


@attrs.frozen
class LabelFreeOutcome:
    """The check at n nodes: ``decided`` (``None``: the time limit), the machine over states
    found (``(n, S)``, or ``None``), ``moving`` the states whose identity assumption was
    dropped, ``rounds`` the solver calls."""

    decided: bool | None
    machine: np.ndarray | None = attrs.field(default=None, eq=False)
    moving: tuple[int, ...] = ()
    rounds: int = 0


def equal_columns(pool: VarPool, groups: Sequence[Sequence[int]]) -> Clauses:
    """States of a group move the machine alike: t[i,s,j] ↔ t[i,s′,j] along each group."""
    out: Clauses = []
    i, j = (a.ravel() for a in np.meshgrid(np.arange(pool.n), np.arange(pool.n), indexing="ij"))
    for g in groups:
        for a, b in zip(g[:-1], g[1:]):
            ta, tb = pool.t(i, int(a), j), pool.t(i, int(b), j)
            out += np.stack([-ta, tb], axis=1).tolist() + np.stack([ta, -tb], axis=1).tolist()
    return out


def shrink_core(sat: Solver, core: list[int], budget: int = CORE_BUDGET) -> list[int]:
    """Deletion-based shrinking of a failed assumption set: drop each literal the solver still
    fails without (within ``budget`` conflicts; an undecided call keeps the literal)."""
    core, i = list(core), 0
    while i < len(core):
        trial = core[:i] + core[i + 1 :]
        if solve(sat, NEVER, trial, conflicts=budget) is False:
            kept = set(sat.get_core() or [])
            core = [v for v in trial if v in kept]
        else:
            i += 1
    return core


def label_free_check(
    oracle,
    n: int,
    n_states: int,
    reach: np.ndarray,
    groups: Sequence[Sequence[int]] = (),
    seen: list | None = None,
    *,
    solver: str = DEFAULT_SOLVER,
    deadline: Deadline = NEVER,
    progress: Progress | None = None,
    budget: int = CORE_BUDGET,
) -> LabelFreeOutcome:
    """Whether a non-stuttering machine over states with n nodes (so a labeling with some k and
    a machine with n nodes) passes ``oracle``. ``seen`` (counterexamples found before) are
    replayed and the new ones appended."""
    progress = progress or Progress()
    seen = [] if seen is None else seen
    pool = VarPool(n, n_states, 1, 0)
    clauses = determinism(pool) + full_specification(pool) + non_stuttering(pool) + [[int(pool.x(0, 0))]]
    if n > 1:
        clauses += symmetry_breaking_bfs(pool)
    clauses += equal_columns(pool, groups)
    select: dict[int, int] = {}
    for s in np.asarray(reach, np.int64).tolist():
        a = pool.new(("identity", s))
        select[a] = s
        clauses += [[-a, int(pool.t(i, s, i))] for i in range(n)]
    rounds = 0
    with open_solver(solver, clauses) as sat:
        lazy = LazyFormula(pool, sat)
        for cex in seen:
            lazy.add(cex)
        while True:
            ok = solve(sat, deadline, list(select))
            rounds += 1
            if ok is None or (ok is False and not set(sat.get_core() or []) & set(select)):
                moving = tuple(sorted(set(np.asarray(reach).tolist()) - set(select.values())))
                return LabelFreeOutcome(None if ok is None else False, None, moving, rounds)
            if not ok:
                core = [v for v in sat.get_core() or [] if v in select]
                for v in shrink_core(sat, core, budget):
                    del select[v]
                continue
            D = decode_transitions(sat.get_model(), pool)
            counter = oracle.check(D)
            if not counter:
                moving = tuple(sorted(set(np.asarray(reach).tolist()) - set(select.values())))
                return LabelFreeOutcome(True, D, moving, rounds)
            for cex in counter:
                lazy.add(cex)
            seen.extend(counter)
            progress.count(len(seen), None, "counterexamples")
