"""The binary-tree labyrinth of the mice experiment (paper section 6.4, appendix C.3).

Nodes are numbered in heap order, as in the published discretised trajectories (Ashwood et
al. 2022): node ``s`` has children ``2s+1`` (left) and ``2s+2`` (right) and parent
``(s-1)//2``; with ``depth`` 6 there are 127 nodes, the leaves being 63..126.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ._common import Where, alphabet, as_float, as_int, as_name, as_sequence, build, group_labels, label_pairs, uniform

#: Action names, in the data's action order (0 left, 1 right, 2 reverse, 3 stay).
ACTIONS = ("left", "right", "reverse", "stay")

#: Largest supported depth (2^21 - 1 nodes).
MAX_DEPTH = 20


def labyrinth(
    depth: int = 6,
    labels: Sequence[tuple[str, Sequence[int]]] = (("h", (0,)), ("w", (100,))),
    other: str = "i",
    start: Sequence[int] = (0,),
    gamma: float = 0.99,
    propositions: Sequence[str] | None = None,
    name: str = "labyrinth",
):
    """A complete binary tree of ``2^(depth+1) − 1`` nodes; deterministic moves.

    Args:
        depth: the tree depth (the root alone has depth 0).
        labels: ``(label, node indices)`` pairs; a node may have one label only. The
            default is the paper's: home ``h`` = node 0, water ``w`` = node 100.
        other: the label of every node not listed.
        start: node indices; the initial distribution is uniform over them.
        gamma: the discount.
        propositions: the alphabet order; ``None``: the sorted labels used by some node.
        name: the MDP's name.

    States are named ``n{i}``. Actions: ``left`` (to ``2s+1``), ``right`` (to ``2s+2``),
    ``reverse`` (to the parent; the root stays), ``stay``. At a leaf, left and right stay.
    """
    where = Where("labyrinth", name)
    depth = as_int(depth, "depth", where)
    if not 0 <= depth <= MAX_DEPTH:
        raise where.fail(f"depth={depth} must lie in 0..{MAX_DEPTH}")
    S = 2 ** (depth + 1) - 1
    other = as_name(other, "other", where)
    gamma = as_float(gamma, "gamma", where)

    def node(value: Any, kind: str, note: str = "") -> int:
        """A node index, named ``{kind} {index}{note}`` in messages."""
        i = as_int(value, f"a {kind} index{note}", where)
        if not 0 <= i < S:
            raise where.fail(f"{kind} {i}{note} is outside the maze (nodes 0..{S - 1} for depth {depth})")
        return i

    pairs = []
    for lab, vs in label_pairs(labels, where):
        vs = as_sequence(vs, f"the nodes of label {lab!r}", where)
        pairs.append((lab, tuple(node(v, "node", f" (label {lab!r})") for v in vs)))
    labels_norm = group_labels(pairs)
    owner: dict[int, str] = {}
    for lab, nodes in labels_norm:
        for s in nodes:
            if s in owner:
                how = "twice for label" if owner[s] == lab else f"with two labels, {owner[s]!r} and"
                raise where.fail(f"node {s} is listed {how} {lab!r}")
            owner[s] = lab
    start_norm = tuple(node(v, "start node") for v in as_sequence(start, "start", where))
    if not start_norm:
        raise where.fail("start lists no nodes; give at least one start node")
    if len(set(start_norm)) < len(start_norm):
        dup = next(s for i, s in enumerate(start_norm) if s in start_norm[:i])
        raise where.fail(f"start node {dup} is listed twice")

    used = [lab for lab, _ in labels_norm] + ([other] if len(owner) < S else [])
    props_norm, props = alphabet(propositions, used, where)
    pi = {q: i for i, q in enumerate(props)}
    state_labels = np.full(S, pi.get(other, -1), dtype=np.int64)
    for s, lab in owner.items():
        state_labels[s] = pi[lab]

    s = np.arange(S)
    leaf = s >= 2**depth - 1
    dst = np.stack(
        [
            np.where(leaf, s, 2 * s + 1),
            np.where(leaf, s, 2 * s + 2),
            np.maximum((s - 1) // 2, 0),
            s,
        ],
        axis=1,
    )  # (S, 4), row-major = row s·4 + a
    params: dict[str, Any] = dict(
        depth=depth, labels=labels_norm, other=other, start=start_norm, gamma=gamma, propositions=props_norm
    )
    return build(
        "labyrinth",
        params,
        states=[f"n{i}" for i in range(S)],
        actions=ACTIONS,
        rows=np.arange(S * len(ACTIONS)),
        cols=dst.ravel(),
        probs=np.ones(dst.size),
        labels=state_labels,
        propositions=props,
        initial=uniform(start_norm, S),
        gamma=gamma,
        name=name,
    )
