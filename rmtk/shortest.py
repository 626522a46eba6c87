"""A scripted expert for a task on a labeled MDP: shortest paths to the machine's next
reward, with ε-random actions (the expert of the Office World experiment). It is a policy per
(state, node), so it serves as an exact expert (:class:`~rmtk.exact.NodePolicyTable`) and, in
a simulator, as a demonstrator."""

from __future__ import annotations

import numpy as np

from .errors import ModelError
from .task import Task


def shortest_path_table(task: Task, epsilon: float = 0.1) -> np.ndarray:
    """``(nodes, S, A)``: the scripted expert of ``task``: in each product state (s, u) the
    actions that reach the machine's next positive reward in the fewest expected steps
    (ties split evenly), mixed with ``epsilon`` of uniformly random actions; uniform where
    no reward can be reached (e.g. an absorbing end node)."""
    if not 0.0 <= epsilon <= 1.0:
        raise ModelError(f"epsilon={epsilon} must lie in [0, 1]")
    mdp, m = task.mdp, task.machine
    S, A, n = mdp.n_states, mdp.n_actions, m.n_nodes
    letter = task.letter_of_proposition[mdp.labels]
    nxt, paid = m.delta_u[:, letter], m.delta_r[:, letter] > 0  # (n, S'): entering s' from node u
    kernel = mdp.kernel
    rows = kernel.row_ids()
    big = float(S * n + 1)  # more steps than any finite distance
    dist = np.full((n, S), big)
    for _ in range(S * n + 1):
        after = np.where(paid, 0.0, np.minimum(dist[nxt, np.arange(S)[None, :]], big))  # (n, S')
        q = np.zeros((n, S * A))
        for u in range(n):
            q[u] = np.bincount(rows, weights=kernel.data * after[u, kernel.indices], minlength=S * A)
        q = 1.0 + q.reshape(n, S, A)
        new = np.minimum(q.min(axis=2), big)
        if np.array_equal(new, dist):
            break
        dist = new
    greedy = (q <= dist[..., None] + 1e-9) & (dist[..., None] < big)
    greedy[~greedy.any(axis=2)] = True
    return (1.0 - epsilon) * greedy / greedy.sum(axis=2, keepdims=True) + epsilon / A
