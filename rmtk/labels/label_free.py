"""The label-free check of the (n, k) search (docs/design.md, section 13): whether some labeling
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
from ..ptp import Trie
from ..sat.encoding import Problem
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
