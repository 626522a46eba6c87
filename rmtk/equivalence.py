"""Exact consistency of a learned machine with the true prefix tree policy, at every depth.

The learned machine induces the prefix tree policy π(·|s, σ) = π_true(·|s, u_true(σ)) only if
every word reaching the same (state, learned node) carries the same true policy there. The
words are infinitely many, but the triples (s, u_true, u_learned) they reach are finitely
many: the synchronised product of both machines with the MDP (paper appendix A.2). A
breadth-first search over it decides consistency at every depth and returns the two
shortest words that witness an inconsistency.
"""
from __future__ import annotations

import attrs
import numpy as np

from .mdp import LabeledMDP
from .negatives import POLICY_TOL


@attrs.frozen
class Verdict:
    """Result of :func:`consistency`.

    Attributes:
        consistent: the learned machine reproduces the true prefix tree policy at every depth.
        witness: when inconsistent, ``(word1, word2, state)``: both words reach ``state`` and
            the same learned node, with different true policies (labels as proposition names).
        triples: number of reachable (state, true node, learned node) triples explored.
    """

    consistent: bool
    witness: tuple[tuple[str, ...], tuple[str, ...], str] | None
    triples: int

    def __str__(self) -> str:
        if self.consistent:
            return f"consistent at every depth ({self.triples} synchronised product states checked)"
        w1, w2, s = self.witness
        return (f"inconsistent: words {' '.join(w1)} and {' '.join(w2)} both reach state {s} and the same "
                "learned node, but the true policy differs there")


def policy_class_table(policy: np.ndarray, tol: float = POLICY_TOL) -> np.ndarray:
    """``(S, n)`` class ids: at each state, nodes with equal action distributions (≤ tol)
    share an id. ``policy`` is ``(S, n, A)``."""
    S, n, _ = policy.shape
    out = np.zeros((S, n), dtype=np.int64)
    for s in range(S):
        rows = policy[s]
        close = np.abs(rows[:, None, :] - rows[None, :, :]).max(axis=2) <= tol
        out[s] = np.argmax(close, axis=1)  # the first node with the same distribution
    return out


def consistency(
    mdp: LabeledMDP,
    true_delta_u: np.ndarray,
    classes: np.ndarray,
    learned_delta_u: np.ndarray,
    *,
    true_initial: int = 0,
    learned_initial: int = 0,
) -> Verdict:
    """Decide whether the learned machine is policy-equivalent to the true one.

    Args:
        mdp: the labeled MDP.
        true_delta_u: ``(n_t, K)`` true transitions, letters indexed like ``mdp.propositions``.
        classes: ``(S, n_t)`` policy class of each (state, true node) — e.g. from
            :func:`policy_class_table`, or the node ids themselves for "one policy per node".
        learned_delta_u: ``(n_l, K)`` learned transitions, same letter indexing.
    """
    nt, nl = true_delta_u.shape[0], learned_delta_u.shape[0]
    succ = mdp.successor_matrix()
    lab = mdp.labels

    def key(s, ut, ul):
        return (s * nt + ut) * nl + ul

    starts = mdp.start_states
    cur = np.unique(key(starts, true_delta_u[true_initial, lab[starts]], learned_delta_u[learned_initial, lab[starts]]))
    parent = {int(k): -1 for k in cur}
    depth = {int(k): 1 for k in cur}
    frontier = cur
    level = 1
    while len(frontier):
        level += 1
        s, rest = np.divmod(frontier, nt * nl)
        ut, ul = np.divmod(rest, nl)
        counts = succ.indptr[s + 1] - succ.indptr[s]
        rep = np.repeat(np.arange(len(frontier)), counts)
        offs = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
        s2 = succ.indices[succ.indptr[s][rep] + offs]
        k2 = key(s2, true_delta_u[ut[rep], lab[s2]], learned_delta_u[ul[rep], lab[s2]])
        new, first = np.unique(k2, return_index=True)
        fresh = np.array([int(k) not in parent for k in new], dtype=bool) if len(new) else np.zeros(0, bool)
        for k, src in zip(new[fresh], frontier[rep[first[fresh]]]):
            parent[int(k)] = int(src)
            depth[int(k)] = level
        frontier = new[fresh]
    reached = np.fromiter(parent.keys(), dtype=np.int64, count=len(parent))
    s, rest = np.divmod(reached, nt * nl)
    ut, ul = np.divmod(rest, nl)
    cls = classes[s, ut]
    group = s * nl + ul
    dep = np.array([depth[int(k)] for k in reached])
    order = np.lexsort((dep, cls, group))
    g, c = group[order], cls[order]
    clash_groups = np.unique(g[1:][(g[1:] == g[:-1]) & (c[1:] != c[:-1])])
    if not len(clash_groups):
        return Verdict(True, None, len(reached))
    best = None
    for grp in clash_groups:  # the shortest pair of witnesses over all clashing groups
        idx = order[g == grp]
        firsts = idx[np.unique(cls[idx], return_index=True)[1]]  # min depth per class
        pair = firsts[np.argsort(dep[firsts], kind="stable")[:2]]
        cost = dep[pair].sum()
        if best is None or cost < best[0]:
            best = (cost, pair)
    a, b = reached[best[1][0]], reached[best[1][1]]

    def word(k: int) -> tuple[str, ...]:
        out = []
        while k != -1:
            out.append(mdp.propositions[lab[k // (nt * nl)]])
            k = parent[k]
        return tuple(out[::-1])

    return Verdict(False, (word(int(a)), word(int(b)), mdp.states[int(a // (nt * nl))]), len(reached))
