"""Exact comparisons of machines on a labeled MDP, at every depth or up to a given depth.

The words a labeled MDP produces are infinitely many, but the triples (state, node of machine
A, node of machine B) they reach are finitely many: the synchronised product of the MDP with
both machines (paper appendix A.2). :func:`sync_product` explores it breadth first, one numpy
expansion per level, recording for every triple the number of labels of its shortest word
and the triple it was first reached from. On it:

* :func:`consistency`: a learned machine (B) reproduces the true prefix tree policy (A with
  its policy classes) at every depth — or up to ``max_depth`` labels; otherwise the two
  shortest words that witness the difference;
* :func:`clashes`: every (state, B node) where words of different true classes meet, with
  a shortest pair of words each (the counterexamples of lazy and every-depth learning);
* :func:`exercised`: the transitions of B that some word of at most ``max_depth`` labels uses;
* :func:`distinguish`: a shortest witness that two machines differ — a state and two words
  reaching it that one machine sends to the same node and the other to different nodes.

Words follow the prefix convention (docs/design/02-conventions.md): the first label already moves both
machines. Letters are the MDP's proposition indices.
"""

from __future__ import annotations

from typing import ClassVar

import attrs
import numpy as np

from .. import ties
from .._arrays import unique
from ..limits import NEVER
from ..mdp.model import LabeledMDP
from ..negatives.miners import POLICY_TOL

#: Beyond this many (state, node, node) codes the BFS keeps its visited set sorted instead of dense.
DENSE_CODES = 50_000_000

#: Machines judged in one search of the synchronised product by :func:`judge` (the deadline is
#: checked between two).
VERDICT_BATCH = 16


@attrs.frozen
class Verdict:
    """Result of :func:`consistency`.

    Attributes:
        consistent: the learned machine reproduces the true prefix tree policy at every depth
            (or up to the depth checked).
        witness: when inconsistent, ``(word1, word2, state)``: both words reach ``state`` and
            the same learned node, with different true policies (labels as proposition names).
        triples: number of reachable (state, true node, learned node) triples explored.
    """

    #: How a summary counts the machines judged equivalent (:class:`rmtk.learner.summary.MachineSummary`).
    equivalence: ClassVar[str] = "policy-equivalent"

    consistent: bool
    witness: tuple[tuple[str, ...], tuple[str, ...], str] | None
    triples: int

    def __str__(self) -> str:
        if self.consistent:
            return f"consistent at every depth ({self.triples} synchronised product states checked)"
        w1, w2, s = self.witness
        return (
            f"inconsistent: words {' '.join(w1)} and {' '.join(w2)} both reach state {s} and the same "
            "learned node, but the true policy differs there"
        )


def policy_class_table(policy: np.ndarray, tol: float = POLICY_TOL) -> np.ndarray:
    """``(S, n)`` class ids: at each state, nodes with equal action distributions (≤ tol)
    share an id, that of the class's first node (:func:`rmtk.ties.classes`). ``policy`` is
    ``(S, n, A)``."""
    return ties.classes(policy, tol)


@attrs.frozen
class SyncProduct:
    """The triples ``(s, a, b)`` reachable in MDP × A × B, in breadth-first order.

    Attributes:
        codes: ``(m,)`` triple codes ``(s·na + a)·nb + b``.
        depth: ``(m,)`` labels in the shortest word reaching each triple (1 for start triples).
        parent: ``(m,)`` index of the triple it was first reached from (−1 at the start).
        na: number of nodes of A.
        nb: number of nodes of B.
        complete: whether every reachable triple is listed (``False`` when cut at a depth).
    """

    codes: np.ndarray
    depth: np.ndarray
    parent: np.ndarray
    na: int
    nb: int
    complete: bool = True

    @property
    def size(self) -> int:
        return len(self.codes)

    @property
    def states(self) -> np.ndarray:
        return self.codes // (self.na * self.nb)

    @property
    def a(self) -> np.ndarray:
        return (self.codes // self.nb) % self.na

    @property
    def b(self) -> np.ndarray:
        return self.codes % self.nb

    def word(self, i: int, labels: np.ndarray) -> list[int]:
        """The labels (uncompressed) of the shortest word reaching triple ``i``."""
        out = []
        while i >= 0:
            out.append(int(labels[self.codes[i] // (self.na * self.nb)]))
            i = int(self.parent[i])
        return out[::-1]


def compressed(word: list[int]) -> list[int]:
    """``word`` with runs of a repeated letter collapsed (``AAB`` → ``AB``)."""
    return [k for i, k in enumerate(word) if i == 0 or k != word[i - 1]]


def _successors(mdp: LabeledMDP):
    succ = mdp.successor_matrix()
    return np.asarray(succ.indptr), np.asarray(succ.indices)


def sync_product(
    mdp: LabeledMDP,
    delta_a: np.ndarray,
    delta_b: np.ndarray,
    *,
    init_a: int = 0,
    init_b=0,
    max_depth: int | None = None,
) -> SyncProduct:
    """Breadth-first search of MDP × A × B from the start states (labels read by both
    machines), up to words of ``max_depth`` labels (``None``: all). ``delta_*`` are
    ``(n, K)`` arrays indexed by the MDP's proposition indices. ``init_b`` may list several
    initial nodes of B: several machines stacked into one are then searched in one pass
    (:func:`stacked`)."""
    delta_a, delta_b = np.asarray(delta_a, np.int64), np.asarray(delta_b, np.int64)
    na, nb = delta_a.shape[0], delta_b.shape[0]
    indptr, indices = _successors(mdp)
    lab = mdp.labels
    total = mdp.n_states * na * nb
    starts = mdp.start_states
    inits = np.atleast_1d(np.asarray(init_b, np.int64))
    first = unique(
        ((starts * na + delta_a[init_a, lab[starts]]) * nb)[:, None] + delta_b[inits[None, :], lab[starts][:, None]]
    )
    codes, depths, parents = [first], [np.ones(len(first), np.int64)], [np.full(len(first), -1, np.int64)]
    dense = total <= DENSE_CODES
    seen = np.zeros(total, dtype=bool) if dense else np.sort(first)
    if dense:
        seen[first] = True
    frontier, base, level = first, 0, 1
    while len(frontier) and (max_depth is None or level < max_depth):
        level += 1
        s, rest = np.divmod(frontier, na * nb)
        a, b = np.divmod(rest, nb)
        counts = indptr[s + 1] - indptr[s]
        which = np.repeat(np.arange(len(frontier)), counts)
        s2 = indices[indptr[s][which] + (np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts))]
        new = (s2 * na + delta_a[a[which], lab[s2]]) * nb + delta_b[b[which], lab[s2]]
        fresh = ~seen[new] if dense else ~np.isin(new, seen, assume_unique=False)
        new, which = new[fresh], which[fresh]
        uniq, pos = np.unique(new, return_index=True)
        order = np.argsort(pos, kind="stable")  # discovery order
        uniq, pos = uniq[order], pos[order]
        if dense:
            seen[uniq] = True
        else:
            seen = np.union1d(seen, uniq)
        codes.append(uniq)
        depths.append(np.full(len(uniq), level, np.int64))
        parents.append(base + which[pos])
        base += len(frontier)
        frontier = uniq
    complete = not len(frontier)
    if len(frontier) and max_depth is not None:  # would the next level add anything?
        complete = False
    return SyncProduct(np.concatenate(codes), np.concatenate(depths), np.concatenate(parents), na, nb, complete)


def stacked(deltas: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, int]:
    """Machines side by side as one: ``(delta, initial nodes, width)`` where machine ``m``'s
    node ``u`` is node ``m·width + u`` (width = the most nodes of any machine)."""
    width = max(d.shape[0] for d in deltas)
    K = deltas[0].shape[1]
    out = np.zeros((len(deltas) * width, K), np.int64)
    for m, d in enumerate(deltas):
        out[m * width : m * width + d.shape[0]] = m * width + np.asarray(d, np.int64)
        out[m * width + d.shape[0] : (m + 1) * width] = np.arange(m * width + d.shape[0], (m + 1) * width)[:, None]
    return out, np.arange(len(deltas)) * width, width


def clash_pairs(group: np.ndarray, cls: np.ndarray, depth: np.ndarray, limit: int | None = None) -> list:
    """For every group id holding several classes, the two triples of different classes with
    the fewest labels in total (the shallowest triple of each of the two shallowest classes);
    groups with the shortest witnesses first. Vectorised over all groups."""
    order = np.lexsort((depth, cls, group))
    g, c = group[order], cls[order]
    first = np.r_[True, (g[1:] != g[:-1]) | (c[1:] != c[:-1])] if len(g) else np.zeros(0, bool)
    reps, rep_group = order[first], g[first]  # the shallowest triple of every (group, class)
    by = np.lexsort((depth[reps], rep_group))
    reps, rep_group = reps[by], rep_group[by]
    starts = np.flatnonzero(np.r_[True, rep_group[1:] != rep_group[:-1]]) if len(reps) else np.empty(0, np.int64)
    counts = np.diff(np.r_[starts, len(reps)])
    two = starts[counts >= 2]
    i, j = reps[two], reps[two + 1]
    pick = np.lexsort((j, i, depth[i] + depth[j]))
    if limit is not None:
        pick = pick[:limit]
    return [(int(a), int(b)) for a, b in zip(i[pick], j[pick])]


def clashes(prod: SyncProduct, classes: np.ndarray, limit: int | None = None) -> list[tuple[int, int]]:
    """Every (state, B node) holding triples of different classes ``classes[s, a]``, as a pair
    of triple indices with the fewest labels in total, shortest first."""
    s = prod.states
    return clash_pairs(s * prod.nb + prod.b, np.asarray(classes)[s, prod.a], prod.depth, limit)


def consistency(
    mdp: LabeledMDP,
    true_delta_u: np.ndarray,
    classes: np.ndarray,
    learned_delta_u: np.ndarray,
    *,
    true_initial: int = 0,
    learned_initial: int = 0,
    max_depth: int | None = None,
) -> Verdict:
    """Decide whether the learned machine is policy-equivalent to the true one.

    Args:
        mdp: the labeled MDP.
        true_delta_u: ``(n_t, K)`` true transitions, letters indexed like ``mdp.propositions``.
        classes: ``(S, n_t)`` policy class of each (state, true node) — e.g. from
            :func:`policy_class_table`, or the node ids themselves for "one policy per node".
        learned_delta_u: ``(n_l, K)`` learned transitions, same letter indexing.
        max_depth: check only words of at most this many labels (default: every depth).
    """
    prod = sync_product(
        mdp, true_delta_u, learned_delta_u, init_a=true_initial, init_b=learned_initial, max_depth=max_depth
    )
    bad = clashes(prod, classes)
    if not bad:
        return Verdict(True, None, prod.size)
    i, j = bad[0]
    names = mdp.propositions

    def word(k: int) -> tuple[str, ...]:
        return tuple(names[x] for x in prod.word(k, mdp.labels))

    return Verdict(False, (word(i), word(j), mdp.states[int(prod.states[i])]), prod.size)


def consistency_many(
    mdp: LabeledMDP, true_delta_u: np.ndarray, classes: np.ndarray, deltas: list[np.ndarray], *, true_initial: int = 0
) -> list[Verdict]:
    """:func:`consistency` of several machines at every depth, in one search of the product
    with the machines stacked side by side (:func:`stacked`)."""
    if not deltas:
        return []
    big, inits, width = stacked(deltas)
    prod = sync_product(mdp, true_delta_u, big, init_a=true_initial, init_b=inits)
    machine = prod.b // width
    sizes = np.bincount(machine, minlength=len(deltas))
    first: dict[int, tuple[int, int]] = {}
    for i, j in clashes(prod, classes):
        first.setdefault(int(machine[i]), (i, j))
        if len(first) == len(deltas):
            break
    names = mdp.propositions

    def word(k: int) -> tuple[str, ...]:
        return tuple(names[x] for x in prod.word(k, mdp.labels))

    out = []
    for m in range(len(deltas)):
        if m not in first:
            out.append(Verdict(True, None, int(sizes[m])))
        else:
            i, j = first[m]
            out.append(Verdict(False, (word(i), word(j), mdp.states[int(prod.states[i])]), int(sizes[m])))
    return out


def exercised(
    prod: SyncProduct,
    mdp: LabeledMDP,
    delta_b: np.ndarray,
    *,
    init_b: int = 0,
    max_depth: int | None = None,
    compress: bool = True,
) -> np.ndarray:
    """``(n_b, K)``: the transitions of B that a word of at most ``max_depth`` labels uses —
    the first letter from B's initial node, then every letter that extends a word (with
    ``compress``, a repeated letter extends nothing: the compressed word stays the same)."""
    used = np.zeros(np.shape(delta_b), dtype=bool)
    lab = mdp.labels
    used[init_b, lab[mdp.start_states]] = True
    keep = np.arange(prod.size) if max_depth is None else np.flatnonzero(prod.depth < max_depth)
    s, b = prod.states[keep], prod.b[keep]
    indptr, indices = _successors(mdp)
    counts = indptr[s + 1] - indptr[s]
    which = np.repeat(np.arange(len(keep)), counts)
    s2 = indices[indptr[s][which] + (np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts))]
    moves = lab[s2] != lab[s[which]] if compress else np.ones(len(s2), dtype=bool)
    used[b[which][moves], lab[s2][moves]] = True
    return used


@attrs.frozen
class Witness:
    """Two words that reach ``state`` and tell two machines apart: ``merged_by`` sends both to
    the same node, ``split_by`` to different nodes. Observing whether the expert acts the same
    after both at ``state`` can refute the machine that merges them."""

    state: str
    word1: tuple[str, ...]
    word2: tuple[str, ...]
    merged_by: str
    split_by: str

    @property
    def length(self) -> int:
        return len(self.word1) + len(self.word2)

    def __str__(self) -> str:
        return (
            f"state {self.state} after {' '.join(self.word1)} and after {' '.join(self.word2)}: "
            f"{self.merged_by} takes both to one node, {self.split_by} to two"
        )


def distinguish(
    mdp: LabeledMDP,
    delta_1: np.ndarray,
    delta_2: np.ndarray,
    *,
    init_1: int = 0,
    init_2: int = 0,
    names: tuple[str, str] = ("machine 1", "machine 2"),
    both: bool = False,
):
    """A shortest witness telling machine 1 and machine 2 apart (``None``: they induce the same
    partition of words at every state, so no observation of the expert separates them). With
    ``both``, the list of the shortest witness in each direction (machine 1 merges, machine 2
    merges) that exists."""
    prod = sync_product(mdp, delta_1, delta_2, init_a=init_1, init_b=init_2)
    s, a, b = prod.states, prod.a, prod.b
    found = []
    for group, cls, who in ((s * prod.nb + b, a, names[::-1]), (s * prod.na + a, b, names)):
        for i, j in clash_pairs(group, cls, prod.depth, limit=1):
            found.append((int(prod.depth[i] + prod.depth[j]), i, j, who))
    labels = mdp.propositions

    def witness(i, j, who) -> Witness:
        w1 = tuple(labels[x] for x in prod.word(i, mdp.labels))
        w2 = tuple(labels[x] for x in prod.word(j, mdp.labels))
        return Witness(mdp.states[int(s[i])], w1, w2, who[0], who[1])

    if both:
        return [witness(i, j, who) for _, i, j, who in found]
    if not found:
        return None
    _, i, j, who = min(found, key=lambda f: f[:3])
    return witness(i, j, who)


class Fillings:
    """Whether *some* filling of a machine's free transitions (those the data leave
    unconstrained) is policy-equivalent to the truth at every depth — one SAT query per
    machine instead of one product search per filling.

    Variables: t[i,k,j] (the machine, its used transitions fixed by assumptions) and R[p,i]
    (true product state p = (s, u_true) is reached together with machine node i). Clauses: R at
    the start triples, R[p,i] ∧ t[i,k,j] → R[q,j] along every edge p → q of the true product
    (k the label entered), and ¬R[p,i] ∨ ¬R[p′,i] where p, p′ share a state with different
    policy classes. Every model's R holds the reachable triples, and the reachable triples
    of a consistent filling make a model, so the query is exact. The formula depends only on
    the number of nodes; machines are checked under assumptions on one solver per size.
    """

    def __init__(
        self,
        mdp: LabeledMDP,
        true_delta: np.ndarray,
        table: np.ndarray,
        *,
        true_initial: int = 0,
        non_stuttering: bool = True,
    ):
        K = true_delta.shape[1]
        prod = sync_product(mdp, true_delta, np.zeros((1, K), np.int64), init_a=true_initial)
        nt = true_delta.shape[0]
        self.pair_code = np.sort(prod.states * nt + prod.a)  # reachable (s, u_true), sorted
        s, a = self.pair_code // nt, self.pair_code % nt
        indptr, indices = _successors(mdp)
        counts = indptr[s + 1] - indptr[s]
        src = np.repeat(np.arange(len(s)), counts)
        s2 = indices[indptr[s][src] + (np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts))]
        lab = mdp.labels
        dst = np.searchsorted(self.pair_code, s2 * nt + np.asarray(true_delta)[a[src], lab[s2]])
        self.edges = np.unique(np.stack([src, lab[s2], dst], axis=1), axis=0)
        starts = mdp.start_states
        self.starts = np.unique(
            np.stack(
                [
                    lab[starts],
                    np.searchsorted(self.pair_code, starts * nt + np.asarray(true_delta)[true_initial, lab[starts]]),
                ],
                axis=1,
            ),
            axis=0,
        )
        cls = np.asarray(table)[s, a]
        # pairs of one state are adjacent (sorted codes) and at most nt apart: memory linear in
        # the product, not quadratic (all pairs of a 1,521-state grid × 8 nodes took 2.5 GB)
        gaps = range(1, min(nt, len(s)))
        i = np.concatenate([np.arange(len(s) - d) for d in gaps] or [np.empty(0, np.int64)])
        j = i + np.concatenate([np.full(len(s) - d, d) for d in gaps] or [np.empty(0, np.int64)])
        clash = (s[i] == s[j]) & (cls[i] != cls[j])
        order = np.lexsort((j[clash], i[clash]))  # the order of all pairs (i, j), i < j
        self.clash = np.stack([i[clash][order], j[clash][order]], axis=1)
        self.K, self.non_stuttering = K, non_stuttering
        self._solvers: dict[int, object] = {}

    def _solver(self, n: int):
        if n in self._solvers:
            return self._solvers[n]
        from ..sat.solver import DEFAULT_SOLVER, open_solver  # pysat is imported by the first query

        K = self.K

        def t(i, k, j):
            return 1 + (np.asarray(i) * K + k) * n + j

        def r(p, i):
            return 1 + n * K * n + np.asarray(p) * n + i

        ii, jj = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
        ii, jj = ii.ravel(), jj.ravel()
        parts = [t(np.arange(n)[:, None, None], np.arange(K)[None, :, None], np.arange(n)).reshape(-1, n)]  # ≥ 1
        lo, hi = np.triu_indices(n, 1)
        for k in range(K):  # ≤ 1 target per (node, letter)
            parts.append(
                -np.stack(
                    [
                        t(np.repeat(np.arange(n), len(lo)), k, np.tile(lo, n)),
                        t(np.repeat(np.arange(n), len(lo)), k, np.tile(hi, n)),
                    ],
                    axis=1,
                )
            )
            if self.non_stuttering:
                off = ii != jj
                parts.append(np.stack([-t(ii[off], k, jj[off]), t(jj[off], k, jj[off])], axis=1))
        k0, p0 = self.starts[:, 0], self.starts[:, 1]
        parts.append(np.stack([-t(0, k0[:, None], np.arange(n)), r(p0[:, None], np.arange(n))], axis=-1).reshape(-1, 2))
        e = self.edges
        parts.append(
            np.stack([-r(e[:, 0, None], ii), -t(ii, e[:, 1, None], jj), r(e[:, 2, None], jj)], axis=-1).reshape(-1, 3)
        )
        c = self.clash
        parts.append(
            np.stack([-r(c[:, 0, None], np.arange(n)), -r(c[:, 1, None], np.arange(n))], axis=-1).reshape(-1, 2)
        )
        solver = open_solver(DEFAULT_SOLVER)
        for part in parts:  # in slices: a whole part as Python lists took hundreds of MB at 12,000 product states
            for lo in range(0, len(part), 50_000):
                solver.append_formula(part[lo : lo + 50_000].tolist())
        self._solvers[n] = (solver, t)
        return self._solvers[n]

    def __call__(self, delta_u: np.ndarray, used: np.ndarray, deadline=None) -> bool | None:
        """Some filling of the transitions not in ``used`` makes ``delta_u`` consistent
        (``None``: the ``deadline`` (a :class:`~rmtk.limits.Deadline`; default: none) or a stop
        request ended the query undecided)."""
        from ..limits import NEVER
        from ..sat.solver import solve

        n = delta_u.shape[0]
        solver, t = self._solver(n)
        fixed = np.argwhere(used)
        return solve(solver, deadline or NEVER, t(fixed[:, 0], fixed[:, 1], delta_u[used]).tolist())

    def close(self) -> None:
        for solver, _ in self._solvers.values():
            solver.delete()
        self._solvers.clear()


def judge(
    task,
    table: np.ndarray,
    machines,
    solutions,
    non_stuttering: bool,
    *,
    deadline=None,
    progress=None,
) -> tuple[tuple[Verdict, ...], tuple[bool | None, ...]]:
    """The verdicts of learned machines on a :class:`~rmtk.task.Task` whose ``(S, n)`` policy
    classes are ``table``: exact consistency of each machine at every depth (free transitions as self-loops), and
    whether some filling of its free transitions is consistent (one SAT query each). Machines
    are judged :data:`VERDICT_BATCH` at a time; once ``deadline`` passes, the verdicts cover
    the first machines only, and undecided fillings are ``None`` (``progress``: a
    :class:`~rmtk.progress.Progress` told of the machines judged)."""
    deadline = deadline or NEVER
    truth = task.require_machine("verdicts against the truth")
    true_du = truth.delta_u[:, task.letter_of_proposition]
    found: list[Verdict] = []
    for lo in range(0, len(machines), VERDICT_BATCH):
        if lo and deadline.expired():
            break
        batch = [m.delta_u for m in machines[lo : lo + VERDICT_BATCH]]
        found += consistency_many(task.mdp, true_du, table, batch, true_initial=truth.initial)
        if progress is not None and len(machines) > VERDICT_BATCH:
            progress.count(len(found), len(machines), "verdicts")
    verdicts = tuple(found)
    if all(v.consistent for v in verdicts):
        return verdicts, tuple(True for _ in verdicts)
    fillings = Fillings(task.mdp, true_du, table, true_initial=truth.initial, non_stuttering=non_stuttering)
    try:
        some = tuple(v.consistent or fillings(sol.delta_u, sol.used, deadline) for v, sol in zip(verdicts, solutions))
    finally:
        fillings.close()
    return verdicts, some
