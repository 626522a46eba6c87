"""Search for the smallest (labeling, machine) pairs consistent with the expert's behaviour
over state histories: fewest nodes, then fewest propositions (docs/design.md, "Learning the
labels"), every solution enumerated up to renaming of nodes and of propositions.

The problem is a :class:`~rmtk.sat.encoding.Problem` over the state view (:mod:`rmtk.labels.histories`):
its trie's letters are states. With an oracle (lazy or every-depth learning) the formula starts
from the structural clauses alone and grows by the counterexamples each candidate violates; a
candidate (L, δ) is checked as the machine over states ``D(u, s) = δ(u, L(s))``, so the oracles
of :mod:`rmtk.sat.lazy` serve unchanged. Counterexamples found at one size are replayed into the
solver of the next, so each size starts from what the previous ones learned.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence

import attrs
import numpy as np

from ..equivalence import consistency_many
from ..errors import RmtkError
from ..limits import Deadline
from ..negatives import PolicyClasses
from ..progress import Progress
from ..sat.encoding import (
    Problem,
    decode_transitions,
    determinism,
    full_specification,
    negative_classes,
    negative_pairs,
    non_stuttering,
    symmetry_breaking_bfs,
)
from ..sat.lazy import ProductOracle, TrieOracle
from ..sat.search import _join, canonical_partial, count_completions, used_transitions
from ..sat.solver import DEFAULT_SOLVER, check_solver, open_solver, solve
from .encoding import (
    LabelLazyFormula,
    LabelPool,
    all_propositions_used,
    decode_labels,
    known_labels,
    label_symmetry_breaking,
    one_label_per_state,
    shared_labels,
    state_runs,
)
from .label_free import label_free_check

#: Up to this many propositions the size search asks the labeled encoding before the label-free
#: check decides the number of nodes (0: the check first; it is the cheaper call at every k).
SMALL_K = 0


@attrs.frozen
class LabelSolution:
    """One learned (labeling, machine) pair, in canonical form (propositions numbered by first
    occurrence over the states in index order, nodes in BFS order).

    Attributes:
        labels: ``(S,)`` learned proposition of each state; −1 for states no history reaches.
        delta_u: ``(n, k)`` transitions over the learned propositions; free ones are self-loops.
        used: ``(n, k)`` transitions some history exercises.
        free: ``((state, (p, …)), …)``: states whose label alone could change to one of the
            listed propositions, the machine as it is, without breaking consistency.
        models: satisfying assignments seen for this pair (renamings included when symmetry
            breaking is off).
    """

    labels: np.ndarray = attrs.field(eq=False)
    delta_u: np.ndarray = attrs.field(eq=False)
    used: np.ndarray = attrs.field(eq=False)
    free: tuple = ()
    models: int = 1

    @property
    def n_nodes(self) -> int:
        return int(self.delta_u.shape[0])

    @property
    def n_props(self) -> int:
        return int(self.delta_u.shape[1])

    def state_machine(self) -> np.ndarray:
        """``(n, S)``: the machine read over states, ``δ(u, L(s))`` (unreached states loop)."""
        return state_delta(self.delta_u, self.labels)


@attrs.frozen
class LabelSearchResult:
    """Outcome of :func:`label_search`: the smallest size found (``n_nodes``, ``n_props``), its
    solutions, and every size tried with its outcome (``tried``: ``(n, k, sat)``, ``None`` when
    undecided); ``cap``: the ``max_solutions`` the enumeration ran with."""

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

    @property
    def ruled_out(self) -> tuple[tuple[int, int], ...]:
        """Sizes ``(n, k)`` the solver proved impossible (besides every n below ``lower_bound``,
        the most policy classes the expert shows at one state, which no n below can hold)."""
        return tuple((n, k) for n, k, sat in self.tried if sat is False)


def state_delta(delta_u: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """``(n, S)`` machine over states; states with label −1 (unreached) loop."""
    lab = np.asarray(labels)
    out = np.asarray(delta_u)[:, np.where(lab >= 0, lab, 0)]
    out[:, lab < 0] = np.arange(out.shape[0])[:, None]
    return out


def first_occurrence(labels: np.ndarray, order: Sequence[int], first_free: int = 0) -> np.ndarray:
    """``perm[p]``: the canonical name of proposition p — propositions below ``first_free`` keep
    theirs, the others are numbered by first occurrence along ``order``."""
    k_max = int(np.max(labels)) + 1 if len(labels) else 0
    perm = np.full(max(k_max, first_free), -1, np.int64)
    perm[:first_free] = np.arange(first_free)
    nxt = first_free
    for s in order:
        p = int(labels[s])
        if p >= 0 and perm[p] < 0:
            perm[p] = nxt
            nxt += 1
    free = np.flatnonzero(perm < 0)
    perm[free] = nxt + np.arange(len(free))
    return perm


def canonical_pair(
    labels: np.ndarray, delta_u: np.ndarray, used: np.ndarray, order: Sequence[int], first_free: int = 0
) -> tuple[tuple, np.ndarray, np.ndarray, np.ndarray]:
    """A key invariant under renaming of nodes and propositions, and the canonical
    ``(labels, delta_u, used)``."""
    perm = first_occurrence(labels, order, first_free)
    k = delta_u.shape[1]
    inv = np.argsort(perm[:k])
    lab = np.where(labels >= 0, perm[np.maximum(labels, 0)], -1)
    du, us = delta_u[:, inv], used[:, inv]
    key, bfs = canonical_partial(du, us)
    n = du.shape[0]
    nodes = bfs + [u for u in range(n) if u not in set(bfs)]
    pos = np.empty(n, np.int64)
    pos[nodes] = np.arange(n)
    du2 = pos[du[nodes]]
    us2 = us[nodes]
    du2[~us2] = np.broadcast_to(np.arange(n)[:, None], du2.shape)[~us2]
    return (tuple(lab[list(order)].tolist()), key), lab, du2, us2


def reached_states(trie_letters: np.ndarray) -> np.ndarray:
    """States some history of a state trie passes through."""
    return np.unique(np.asarray(trie_letters)[1:])


def mdp_reachable(mdp) -> np.ndarray:
    """States reachable from the start states."""
    succ = mdp.successor_matrix()
    seen = np.zeros(mdp.n_states, bool)
    frontier = np.unique(mdp.start_states)
    seen[frontier] = True
    while len(frontier):
        nxt = np.concatenate([succ.indices[succ.indptr[s] : succ.indptr[s + 1]] for s in frontier])
        nxt = np.unique(nxt[~seen[nxt]]) if len(nxt) else nxt
        seen[nxt] = True
        frontier = nxt
    return np.flatnonzero(seen)


@attrs.frozen
class LabelKnowledge:
    """What the user knows: ``fixed`` ``{state: proposition}`` (propositions ``0 … m−1`` are
    the named ones, ``first_free = m``), ``shared`` groups of states with one label."""

    fixed: Mapping[int, int] = attrs.field(factory=dict)
    shared: tuple[tuple[int, ...], ...] = ()
    first_free: int = 0


def _structure(
    problem: Problem,
    n: int,
    k: int,
    n_states: int,
    reach: np.ndarray,
    know: LabelKnowledge,
    symmetry: bool,
    stutter_free: bool,
    exactly: bool,
):
    classes = problem.negatives if isinstance(problem.negatives, PolicyClasses) else None
    pool = LabelPool(n, k, n_states, problem.trie.n_nodes, classes.n_classes if classes is not None else 0)
    clauses = determinism(pool) + full_specification(pool) + one_label_per_state(pool, reach)
    clauses.append([int(pool.x(0, 0))])
    if stutter_free:
        clauses += non_stuttering(pool)
    if symmetry:
        if n > 1:
            clauses += symmetry_breaking_bfs(pool)
        clauses += label_symmetry_breaking(pool, reach, know.first_free)
    if exactly:
        clauses += all_propositions_used(pool, reach)
    inside = set(reach.tolist())  # states no history reaches are not learned: what is known of them is moot
    clauses += known_labels(pool, {s: p for s, p in know.fixed.items() if s in inside})
    clauses += shared_labels(pool, [[s for s in g if s in inside] for g in know.shared])
    if problem.oracle is None:
        par, kid = problem.trie.children()
        clauses += state_runs(pool, par, problem.trie.letter[kid], kid)
        if classes is not None:
            clauses += negative_classes(pool, classes)
        elif problem.negatives is not None and len(problem.negative_pairs()):
            clauses += negative_pairs(pool, problem.negative_pairs())
    return pool, clauses


def label_search(
    problem: Problem,
    *,
    n_states: int,
    reach: np.ndarray,
    max_nodes: int,
    min_nodes: int = 1,
    nodes: int | None = None,
    props: int | None = None,
    max_props: int | None = None,
    knowledge: LabelKnowledge | None = None,
    symmetry_breaking: bool = True,
    non_stuttering: bool = True,
    solver: str = DEFAULT_SOLVER,
    max_solutions: int | None = None,
    time_limit: float | None = None,
    freedom: bool = True,
    small_k: int = SMALL_K,
    progress: Progress | None = None,
) -> LabelSearchResult:
    """The smallest (n, k) — fewest nodes, then fewest propositions — with a (labeling, machine)
    pair the problem accepts, and every such pair up to both renamings. ``props`` fixes k,
    ``max_props`` bounds it (default: the states that matter, and no more than the label
    classes the knowledge leaves); past ``small_k`` propositions (default: from the start) the
    number of nodes is decided by the label-free check. With ``time_limit``, a search stopped
    after a pair was found at the fewest nodes lists that pair, ``complete`` false, and says
    what was not decided."""
    progress = progress or Progress()
    know = knowledge or LabelKnowledge()
    reach = np.asarray(reach, np.int64)
    named: dict[int, list[int]] = {}
    for st, p in know.fixed.items():
        named.setdefault(p, []).append(st)
    know_groups = [g for g in (*know.shared, *(tuple(v) for v in named.values())) if len(g) > 1]
    k_lo = props if props is not None else max(1, know.first_free)
    k_hi = (
        props
        if props is not None
        else max(
            k_lo,
            min(
                max_props or max(1, min(len(reach), distinct_columns(max_nodes, non_stuttering))),
                label_classes(reach, know_groups),  # no more propositions than the knowledge leaves apart
            ),
        )
    )
    if k_lo > k_hi:
        raise RmtkError(f"the known labels name {know.first_free} propositions, more than the {k_hi} allowed")
    n_sizes = [nodes] if nodes is not None else list(range(max(1, min_nodes), max_nodes + 1))
    checker = (
        problem.oracle
        if problem.oracle is not None
        else TrieOracle(problem.trie, problem.negatives)
        if problem.negatives is not None
        else None
    )
    deadline = Deadline.after(time_limit)
    solver_name, note = check_solver(solver), ""
    tried: list[tuple[int, int, bool | None]] = []
    seen_cex: list = []
    state = {"rounds": 0, "longest": 0, "t_solve": 0.0, "histories": problem.trie.n_nodes}
    best: dict = {}  # the smallest pair found at the current n (label-free check, then bisection)

    def run(n: int, k: int, enumerate_all: bool):
        """Solve at (n, k): ``(decided, found, complete)``; with ``enumerate_all`` every pair."""
        pool, clauses = _structure(problem, n, k, n_states, reach, know, symmetry_breaking, non_stuttering, True)
        t0 = time.perf_counter()
        found: dict = {}
        complete = True
        with open_solver(solver_name, clauses) as sat:
            lazy = LabelLazyFormula(pool, sat) if problem.oracle is not None else None
            for cex in seen_cex:
                lazy.add(cex)
            while True:
                ok = solve(sat, deadline)
                state["rounds"] += 1
                if ok is None:
                    complete = False
                    break
                if not ok:
                    break
                model = sat.get_model()
                labels, du = decode_labels(model, pool), decode_transitions(model, pool)
                D = state_delta(du, labels)
                if lazy is not None:
                    counter = problem.oracle.check(D)
                    if counter:
                        for cex in counter:
                            lazy.add(cex)
                            state["longest"] = max(state["longest"], cex.labels)
                        seen_cex.extend(counter)
                        progress.count(len(seen_cex), None, "counterexamples")
                        continue
                    used_s = problem.oracle.exercised(D)
                else:
                    used_s = used_transitions(problem.trie, D)[0]
                sat.add_clause(_record(found, pool, labels, du, used_s, reach, know.first_free, non_stuttering))
                progress.solution(len(found), len(found))
                if not enumerate_all or (max_solutions is not None and len(found) >= max_solutions):
                    complete = not enumerate_all
                    break
            if lazy is not None:
                state["histories"] = max(state["histories"], len(lazy.parent))
        state["t_solve"] += time.perf_counter() - t0
        decided = True if found else (False if complete else None)
        progress.note(
            f"{n} nodes, {k} propositions: {'undecided' if decided is None else ('satisfiable' if decided else 'none')}"
        )
        return decided, found, complete

    def any_labeling(n: int):
        """Whether some labeling (any k) and machine with n nodes fit (:mod:`rmtk.labels.label_free`):
        ``(decided, machine over states)``; the machine found is kept as the best pair."""
        t0, before = time.perf_counter(), len(seen_cex)
        out = label_free_check(
            problem.oracle, n, n_states, reach, know_groups, seen_cex,
            solver=solver_name, deadline=deadline, progress=progress,
        )  # fmt: skip
        state["rounds"] += out.rounds
        state["longest"] = max([state["longest"], *(cex.labels for cex in seen_cex[before:])])
        state["t_solve"] += time.perf_counter() - t0
        outcome = "undecided" if out.decided is None else ("satisfiable" if out.decided else "none")
        progress.note(f"{n} nodes, any labeling: {outcome} ({len(out.moving)} states moving the machine)")
        if out.machine is not None and not know.fixed and len(np.unique(out.machine[:, reach], axis=1).T) <= k_hi:
            _record(
                best,
                None,
                *machine_pair(out.machine, reach),
                problem.oracle.exercised(out.machine),
                reach,
                0,
                non_stuttering,
            )
        return out.decided, out.machine

    def unfinished(n, k, why):
        """The search stopped at (n, k): the smallest pair found at n (by the label-free check or
        the bisection), flagged."""
        if not best:
            return result(None, None, {}, False, why)
        kb = next(iter(best.values())).n_props
        return result(
            n,
            kb,
            best,
            False,
            f"{why}: {n} nodes is the fewest (fewer ruled out for every labeling); the pair listed "
            f"({n} nodes, {kb} propositions) is the best found, {k} to {kb - 1} propositions not ruled out at {n} nodes"
            if k < kb
            else f"{why}: the pair listed ({n} nodes, {kb} propositions) is one of those of the fewest sizes, "
            "the others not enumerated",
        )

    def result(n, k, found, complete, msg=""):
        sols = tuple(found.values())
        if freedom and checker is not None:
            sols = tuple(attrs.evolve(x, free=free_states(checker, x, reach)) for x in sols)
        return LabelSearchResult(
            n,
            k,
            sols,
            complete,
            tuple(tried),
            _join(msg, note),
            len(seen_cex),
            state["rounds"],
            state["longest"],
            state["histories"],
            state["t_solve"],
            min_nodes,
            max_solutions,
        )

    # With nothing known, sizes are monotone in k at a fixed n: a pair with k propositions splits
    # a proposition of two states into two with the same transitions (the same machine over
    # states) and gains one, and merging propositions of equal columns loses one. So k grows by
    # doubling up to small_k; then the label-free check (rmtk/labels/label_free.py) decides n for every
    # k at once (or, without it, the largest useful k does); bisection finds the fewest k. What a
    # time limit leaves undecided after the check found a machine is reported with that pair.
    monotone = props is None and not know.fixed and not know.shared
    columns = problem.oracle is not None and non_stuttering
    for n in n_sizes:
        best.clear()
        top = min(k_hi, distinct_columns(n, non_stuttering)) if monotone else k_hi
        ks = list(range(k_lo, top + 1))
        if monotone and ks:
            below, k, first = k_lo - 1, k_lo, None
            while first is None and below < top and (k <= small_k or not columns):
                decided, _, _ = run(n, k, False)
                tried.append((n, k, decided))
                if decided is None:
                    return unfinished(n, k, f"time limit reached while deciding {n} nodes, {k} propositions")
                if decided:
                    first = k
                else:
                    below, k = k, min(2 * k, top)
            if first is None and below < top:  # decide n for every labeling at once
                decided, D = any_labeling(n)
                if decided is None:
                    return result(None, None, {}, False, f"time limit reached while deciding {n} nodes")
                if decided:  # the states grouped by the map they move the machine by: a labeling that fits
                    first = min(top, len(np.unique(D[:, reach], axis=1).T))
                    tried.append((n, first, True))
            if first is None:
                called = {kk for nn, kk, _ in tried if nn == n}
                tried.extend((n, kk, False) for kk in ks if kk not in called)  # ruled out by monotonicity
                continue
            lo, hi = below + 1, first
            while lo < hi:
                mid = (lo + hi) // 2
                decided, found, _ = run(n, mid, False)
                tried.append((n, mid, decided))
                if decided is None:
                    return unfinished(n, lo, f"time limit reached while deciding {n} nodes, {mid} propositions")
                if decided:  # the smallest pair found so far
                    best.clear()
                    best.update(found)
                lo, hi = (lo, mid) if decided else (mid + 1, hi)
            ks = [lo]
        elif columns and ks and ks[-1] > small_k:  # no labeling at all fits n: none with these k either
            decided, _ = any_labeling(n)
            if decided is None:
                return result(None, None, {}, False, f"time limit reached while deciding {n} nodes")
            if not decided:
                tried.extend((n, k, False) for k in ks)
                continue
        for k in ks:
            decided, found, complete = run(n, k, True)
            if (n, k, decided) not in tried:
                tried.append((n, k, decided))
            if found or not complete:
                msg = (
                    ""
                    if complete
                    else (
                        "enumeration stopped early (limit reached); the solutions found are listed"
                        if found
                        else f"time limit reached while deciding {n} nodes, {k} propositions"
                    )
                )
                if not found:
                    return unfinished(n, k, msg)
                return result(n, k, found, complete, msg)
    return LabelSearchResult(
        None,
        None,
        (),
        True,
        tuple(tried),
        _join(
            f"no labeling with {k_lo}-{k_hi} propositions and machine with "
            f"{n_sizes[0]}-{n_sizes[-1]} nodes is consistent with the expert",
            note,
        ),
        len(seen_cex),
        state["rounds"],
        state["longest"],
        state["histories"],
        state["t_solve"],
        min_nodes,
        max_solutions,
    )


def machine_pair(D: np.ndarray, reach: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A machine over states ``(n, S)`` as a pair: the states of ``reach`` grouped by their column
    (``(S,)`` labels, 0 off ``reach``) and the machine over the groups ``(n, k)``."""
    cols, inv = np.unique(np.asarray(D)[:, reach].T, axis=0, return_inverse=True)
    labels = np.zeros(D.shape[1], np.int64)
    labels[reach] = np.ravel(inv)
    return labels, cols.T.copy()


def _record(found: dict, pool: LabelPool | None, labels, du, used_s, reach, first_free, non_stuttering) -> list[int]:
    """File the pair under its key invariant under both renamings; return the blocking clause
    (its labels of the states that matter and its used transitions; none without a pool)."""
    n, k = du.shape
    used = np.zeros((n, k), bool)
    ii, ss = np.nonzero(used_s)
    used[ii, labels[ss]] = True
    used = count_completions(du, used, non_stuttering)[1]  # with the transitions non-stuttering forces
    lab = np.full(len(labels), -1, np.int64)
    lab[reach] = labels[reach]
    key, clab, cdu, cused = canonical_pair(lab, du, used, reach, first_free)
    if key in found:
        found[key] = attrs.evolve(found[key], models=found[key].models + 1)
    else:
        found[key] = LabelSolution(clab, cdu, cused)
    if pool is None:
        return []
    return [-int(pool.l(s, labels[s])) for s in reach] + [-int(pool.t(i, p, du[i, p])) for i, p in np.argwhere(used)]


def free_states(checker, sol: LabelSolution, reach: np.ndarray) -> tuple:
    """States of ``reach`` whose label alone could change (to which propositions) with the
    machine as it is and the expert still matched. Against an every-depth product oracle all
    the variants are checked in one search of the product (the machines stacked)."""
    variants = []
    for s in reach:
        for p in range(sol.n_props):
            if p != sol.labels[s]:
                lab = sol.labels.copy()
                lab[s] = p
                variants.append((int(s), p, state_delta(sol.delta_u, lab)))
    if not variants:
        return ()
    if isinstance(checker, ProductOracle) and checker.depth is None:
        verdicts = consistency_many(
            checker.mdp, checker.true_delta, checker.table, [v[2] for v in variants], true_initial=checker.true_initial
        )
        ok = [v.consistent for v in verdicts]
    else:
        ok = [not checker.check(v[2]) for v in variants]
    out: dict[int, list[int]] = {}
    for (s, p, _), good in zip(variants, ok):
        if good:
            out.setdefault(s, []).append(p)
    return tuple((s, tuple(ps)) for s, ps in out.items())


def label_classes(reach: np.ndarray, groups: Sequence[Sequence[int]]) -> int:
    """How many states of ``reach`` can carry different labels when each group shares one: the
    classes of the states of ``reach`` joined along the groups."""
    root = {int(s): int(s) for s in reach}

    def find(a: int) -> int:
        while root[a] != a:
            root[a] = root[root[a]]
            a = root[a]
        return a

    for g in groups:
        inside = [int(s) for s in g if int(s) in root]
        for a, b in zip(inside[:-1], inside[1:]):
            root[find(a)] = find(b)
    return len({find(s) for s in root})


def distinct_columns(n: int, non_stuttering: bool = True) -> int:
    """How many different columns δ(·, p) a machine with n nodes can have (n^n, or the
    idempotent maps under non-stuttering): two propositions with the same column can merge, so
    no smallest labeling needs more propositions."""
    if not non_stuttering:
        return n**n
    return sum(math.comb(n, j) * j ** (n - j) for j in range(1, n + 1))


def renamings(n: int, k: int) -> int:
    """How many (node, proposition) renamings one pair has at most: (n−1)!·k!."""
    return math.factorial(n - 1) * math.factorial(k)
