"""Which states of a learned pair are *free*: their label alone could change, the machine as it
is, and the expert would still be matched (docs/design/13-learning-labels.md). Freedom belongs to a
pair, not to a state.

A change at state s is invisible when every node s is entered from (the transitions over
states some history exercises) moves alike under both labels: such a state is free at once.
The others are checked against the oracle:

* the exact expert at every depth (a :class:`~rmtk.sat.lazy.ProductOracle` without a depth):
  one formula per pair, the product encoding of :mod:`rmtk.labels.encoding` with each state's
  column chosen among the pair's propositions and *at most one* state off its label; each model
  names a free (state, proposition), which is then excluded, until none is left. One SAT call
  per free change and one proof, instead of a search of the product per change;
* any other oracle (a tree of demonstrations, a bounded depth): one check per change.

Every step honours the run's deadline; a pair whose freedom was not decided in time gets
``free=None``.
"""

from __future__ import annotations

import numpy as np
from pysat.card import CardEnc, EncType

from ..limits import Deadline
from ..sat.encoding import _rows, determinism
from ..sat.lazy import ProductOracle
from ..sat.solver import DEFAULT_SOLVER, open_solver, solve
from .encoding import FIRST_CONFLICTS, StatePool, TrueProduct, product_clauses
from .pairs import LabelSolution, state_delta


def invisible(sol: LabelSolution, used_s: np.ndarray, s: int, p: int) -> bool:
    """Relabelling state ``s`` with ``p`` changes no exercised transition: every node some
    history enters ``s`` from moves alike under ``p`` and under its label."""
    entered = np.flatnonzero(used_s[:, s])
    return bool(np.all(sol.delta_u[entered, p] == sol.delta_u[entered, sol.labels[s]]))


def free_states(
    oracle,
    sol: LabelSolution,
    reach: np.ndarray,
    deadline: Deadline,
    *,
    product: TrueProduct | None = None,
    solver: str = DEFAULT_SOLVER,
) -> tuple | None:
    """``((state, (p, …)), …)``: the states of ``reach`` whose label alone could change (to the
    listed propositions) with the machine as it is and the expert still matched; ``None`` when
    the deadline passed first."""
    reach = np.asarray(reach, np.int64)
    k = sol.n_props
    if k < 2 or not len(reach):
        return ()
    D = sol.state_machine()
    used_s = oracle.exercised(D)
    out: dict[int, list[int]] = {}
    rest = []
    for s in reach.tolist():
        for p in range(k):
            if p == sol.labels[s]:
                continue
            if invisible(sol, used_s, s, p):
                out.setdefault(s, []).append(p)
            else:
                rest.append((s, p))
    if rest:
        every_depth = isinstance(oracle, ProductOracle) and oracle.depth is None
        if every_depth:
            tp = product or TrueProduct.of(oracle)
            left = deadline.remaining()
            if left is not None and left < SECONDS_PER_CLAUSE * _clauses(tp, sol.n_nodes, len(sol.labels)):
                return None  # the formula alone would take longer to build than the time left
            found = _by_product(tp, sol, reach, rest, deadline, solver)
        else:
            found = _one_by_one(oracle, sol, rest, deadline)
        if found is None:
            return None
        for s, p in found:
            out.setdefault(s, []).append(p)
    return tuple((s, tuple(sorted(ps))) for s, ps in sorted(out.items()))


#: About how long building one clause of the freedom formula takes (numpy, then the solver's
#: copy), to skip a step that could not finish in the time left.
SECONDS_PER_CLAUSE = 1.5e-6


def _clauses(tp: TrueProduct, n: int, n_states: int) -> int:
    """Clauses of the freedom formula before the choices: determinism and the product."""
    return n_states * n * n * (n - 1) // 2 + (len(tp.pairs) + len(tp.edges)) * n + len(tp.pairs) * n * n


def _one_by_one(oracle, sol: LabelSolution, changes, deadline: Deadline):
    ok = []
    for s, p in changes:
        if deadline.expired():
            return None
        lab = sol.labels.copy()
        lab[s] = p
        if not oracle.check(state_delta(sol.delta_u, lab)):
            ok.append((s, p))
    return ok


def _by_product(tp: TrueProduct, sol: LabelSolution, reach, changes, deadline: Deadline, solver: str):
    """The free changes among ``changes`` by the product encoding (see the module docstring)."""
    n, S = sol.n_nodes, len(sol.labels)
    allowed: dict[int, list[int]] = {}
    for s, p in changes:
        allowed.setdefault(s, []).append(p)
    if not allowed:
        return []
    pool = StatePool(n, S, 1, 0, len(tp.pairs))
    nodes = np.arange(n)
    D = sol.state_machine()
    fixed = np.setdiff1d(np.arange(S), list(allowed))  # every other column is the pair's
    with open_solver(solver) as sat:
        sat.append_formula(determinism(pool))
        for part in product_clauses(pool, tp):
            if deadline.expired():
                return None
            sat.append_formula(part)
        sat.append_formula([[int(v)] for v in pool.t(nodes[None, :], fixed[:, None], D[:, fixed].T).ravel()])
        choice: dict[tuple[int, int], int] = {}
        moved = []
        for s, ps in allowed.items():
            own = int(sol.labels[s])
            lits = []
            for p in [own, *ps]:
                c = pool.new(("column", s, p))
                choice[s, p] = c
                lits.append(c)
                sat.append_formula(_rows(np.stack([np.full(n, -c), pool.t(nodes, s, sol.delta_u[:, p])], axis=1)))
            sat.add_clause(lits)
            moved.append(-choice[s, own])
        sat.add_clause(moved)  # some state is off its label …
        sat.append_formula(CardEnc.atmost(moved, bound=1, vpool=pool.aux, encoding=EncType.seqcounter).clauses)
        found = []  # … only one
        while True:
            ok = solve(sat, deadline, first=FIRST_CONFLICTS)
            if ok is None:
                return None
            if not ok:
                return found
            model = set(v for v in sat.get_model() if v > 0)
            hit = next((s, p) for (s, p), c in choice.items() if c in model and p != sol.labels[s])
            found.append(hit)
            sat.add_clause([-choice[hit]])
