"""The label-free check of the (n, k) search (docs/design/13-learning-labels.md): whether some labeling
and some machine with n nodes fit the expert, for every number of propositions at once.

A labeling and a machine are read over states as ``D(u, s) = δ(u, L(s))``; conversely any
machine D over states is a pair (group the states by their column D(·, s)). So the check learns
a machine over the state letters: a :class:`~rmtk.labels.encoding.PairFormula` asked without its
label layer, checked against the oracle, with states known to share a label given equal
columns. Each state s has an identity selector a[s] → t[i,s,i]: most states of a task move no
machine (the plain cells of a grid), so the solver is asked assuming every selector, and the
failed ones are dropped. They only steer: a machine is returned only when the oracle accepts
it, and "no machine" only when the solver fails with no selector in its core, which is a proof
for every labeling.

:class:`~rmtk.labels.search.SmallestPairs` asks the same formula, then adds the label layer to
it; :func:`label_free_check` is the check alone.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import numpy as np

from ..limits import SearchLimits
from ..ptp.tree import Trie
from ..sat.encoding import Problem
from ..sat.lazy import ProductOracle
from ..sat.solver import DEFAULT_SOLVER
from .encoding import PairFormula
from .pairs import LabelKnowledge


@attrs.frozen
class LabelFreeOutcome:
    """The check at n nodes: ``decided`` (``None``: the deadline), the machine over states
    found (``(n, S)``, or ``None``), ``moving`` the states whose identity selector was dropped,
    ``rounds`` the solver calls."""

    decided: bool | None
    machine: np.ndarray | None = attrs.field(default=None, eq=False)
    moving: tuple[int, ...] = ()
    rounds: int = 0


def label_free_check(
    oracle,
    n: int,
    n_states: int,
    reach: np.ndarray,
    groups: Sequence[Sequence[int]] = (),
    seen: list | None = None,
    *,
    limits: SearchLimits | None = None,
    solver: str = DEFAULT_SOLVER,
) -> LabelFreeOutcome:
    """Whether a non-stuttering machine over states with n nodes (so a labeling with some k and
    a machine with n nodes) passes ``oracle``, within ``limits`` (its deadline and progress).
    ``seen`` (counterexamples found before) are replayed and the new ones appended."""
    limits = limits or SearchLimits()
    seen = [] if seen is None else seen
    problem = Problem(Trie.root(True), n_states, oracle=oracle)
    know = LabelKnowledge(shared=tuple(tuple(int(s) for s in g) for g in groups))
    with PairFormula(problem, n, n_states, reach, know, solver=solver) as f:
        f.add(seen)

        def found(counter):
            seen.extend(counter)
            limits.progress.count(len(seen), None, "counterexamples")

        decided = f.ask([], limits.deadline, found)
        D = f.machine() if decided else None
        return LabelFreeOutcome(decided, D, f.moving(), f.rounds)


def quotient_machine(oracle: ProductOracle) -> np.ndarray | None:
    """The expert's own machine over states, with behaviourally equal nodes merged, when the
    expert is known at every depth (``None`` otherwise): the true machine read over states,
    δ_S(u, s), its nodes split until two nodes in one block move to one block and show one
    policy class on every state (Moore's partition refinement, the output of a step being the
    class at the state entered). It is consistent with the expert by construction, needs no
    search, and when it has as many nodes as the most classes at one state (the lower bound)
    it decides the label-free check at that size at once. ``(n, S)``, node 0 initial, nodes in
    breadth-first order over the states in index order."""
    if not isinstance(oracle, ProductOracle) or oracle.depth is not None:
        return None
    true = np.asarray(oracle.true_delta, np.int64)  # (n_t, S) over the state letters
    table = np.asarray(oracle.table)  # (S, n_t)
    n_t, S = true.shape
    out = table[np.arange(S)[None, :], true]  # class shown after entering s from u: (n_t, S)
    block = np.zeros(n_t, np.int64)
    while True:
        sig = np.concatenate([out, block[true]], axis=1)
        _, new = np.unique(sig, axis=0, return_inverse=True)
        new = np.ravel(new)
        if len(np.unique(new)) == len(np.unique(block)):
            break
        block = new
    order, seen = [int(block[oracle.true_initial])], {int(block[oracle.true_initial])}
    i = 0
    while i < len(order):  # blocks in breadth-first order from the initial one
        rep = int(np.flatnonzero(block == order[i])[0])
        for s in range(S):
            b = int(block[true[rep, s]])
            if b not in seen:
                seen.add(b)
                order.append(b)
        i += 1
    pos = {b: k for k, b in enumerate(order)}
    reps = [int(np.flatnonzero(block == b)[0]) for b in order]
    return np.array([[pos[int(block[true[r, s]])] for s in range(S)] for r in reps], np.int64)
