"""Where a witness of a sampled expert sits (docs/design/14-sampled-experts.md, section 14.1).

A witness splits two nodes p, q of a machine at a state. While the two run through labels that
leave them the same two nodes, their futures agree, so a discounted expert's policies under p
and q differ most near the first label that changes the pair and fade with the distance to it.
These functions measure that distance on the labeled MDP, so that the questions to an expert
that is run go first where a difference can show. They choose where to look; no test reads
them.
"""

from __future__ import annotations

import numpy as np

from .. import ties
from ..mdp.model import LabeledMDP

__all__ = ["label_distances", "change_distance", "nearest", "nearest_change"]


def label_distances(mdp: LabeledMDP) -> np.ndarray:
    """``(K, S)``: the fewest steps from each state to a state labeled with each proposition
    (``inf``: never), by a breadth-first search backwards from the labeled states."""
    S, K = mdp.n_states, mdp.n_propositions
    succ = mdp.successor_matrix()
    src = np.repeat(np.arange(S), np.diff(np.asarray(succ.indptr)))
    dst = np.asarray(succ.indices)
    dist = np.full((K, S), np.inf)
    frontier = np.asarray(mdp.labels)[None, :] == np.arange(K)[:, None]
    reached = np.zeros((K, S), dtype=bool)
    for d in range(1, S + 1):
        step = np.stack([np.bincount(src, weights=frontier[k, dst], minlength=S) > 0 for k in range(K)])
        new = step & ~reached
        if not new.any():
            break
        dist[new] = d
        reached |= new
        frontier = new
    return dist


def change_distance(delta, p, q, states, near) -> np.ndarray:
    """For pairs of nodes ``p``, ``q`` of the machine of transitions ``delta`` at ``states``:
    the fewest steps to a label after which they are not the same two nodes again (``near``:
    :func:`label_distances`; ``inf``: none is reachable)."""
    dp, dq = delta[p], delta[q]
    same = ((dp == p[:, None]) & (dq == q[:, None])) | ((dp == q[:, None]) & (dq == p[:, None]))
    return np.where(same, np.inf, near[:, states].T).min(axis=1, initial=np.inf)


def nearest(mdp, deltas, cands, ends, split) -> np.ndarray:
    """Each candidate witness's least :func:`change_distance` over the machines that split it."""
    near = label_distances(mdp)
    states = np.array([c[2] for c in cands], dtype=np.int64)
    f1 = np.stack([e[0] for e in ends])
    f2 = np.stack([e[1] for e in ends])
    out = np.full(len(cands), np.inf)
    for m, delta in enumerate(deltas):
        cut = split[m]
        if cut.any():
            d = change_distance(np.asarray(delta), f1[cut, m], f2[cut, m], states[cut], near)
            out[cut] = np.minimum(out[cut], d)
    return out


def nearest_change(found, states, cls, depth, delta, near) -> list[tuple[int, int]]:
    """The witnesses ``found`` (pairs of product triples; ``cls``: the node of the machine of
    transitions ``delta`` that splits them) ordered by how near their state is to a label that
    changes the pair of nodes it splits (a letter after which the two nodes are not the same
    two nodes again), then by length. Where no such label is near, the two nodes' futures
    agree for longer, and a discounted expert acts alike there for longer too: a difference
    between them shows first near those labels (docs/design/14-sampled-experts.md, section 14.1). Ties keep the
    shortest-first order of :func:`rmtk.machine.equivalence.clash_pairs`."""
    if not found:
        return []
    x, y = np.array(found, dtype=np.int64).T
    d = change_distance(delta, cls[x], cls[y], states[x], near)
    order = ties.lexsort((np.arange(len(x)), depth[x] + depth[y], d))
    return [(int(x[k]), int(y[k])) for k in order.tolist()]
