"""The encoders that choose the doubtful states' letters with the machine (the clause families of
:mod:`rmtk.label_noise.encoding` on the SAT core of :mod:`rmtk.sat.encoding`), and their search:
the smallest size at which some choice of letters makes the evidence hold, then, at that size,
the choices of least cost (weighted MaxSAT, every optimum listed), and, for
:class:`SimplestChoosingEncoder`, among those the machines in which the fewest letters move a
node (the noise weights scaled above the sum of every move's, so the order is strict).

A solution is a machine over the ``K + D`` letters of the believed MDP: its placeholder columns
are the chosen letters' (``Solution.dropped`` lists the rivals chosen, as indices into
:func:`~rmtk.label_noise.encoding.label_costs`' order); :func:`chosen_letters` reads them back.
"""

from __future__ import annotations

from typing import ClassVar

import attrs
import numpy as np

from ..errors import RmtkError
from ..limits import SearchLimits
from ..negatives.miners import PolicyClasses
from ..sat.encoders import SatEncoder, moving_transitions
from ..sat.encoding import (
    Formula,
    Problem,
    VarPool,
    determinism,
    full_specification,
    non_stuttering,
    prefix_runs,
    symmetry_breaking_bfs,
)
from ..sat.search import SearchResult, maxsat_search, search
from .encoding import Choices, chosen_rewards, chosen_transitions, label_choices, label_costs


class _RealLetters:
    """The pool's variables over the MDP's ``K`` letters alone (a placeholder's column is a real
    letter's, so the breadth-first numbering over the real letters numbers every machine once)."""

    def __init__(self, pool: VarPool, K: int):
        self.pool, self.n, self.K = pool, pool.n, K

    def t(self, i, k, j):
        return self.pool.t(i, k, j)

    def new(self, key) -> int:
        return self.pool.new(key)

    def t_grid(self) -> np.ndarray:
        return self.pool.t_grid()[:, : self.K, :]


@attrs.frozen
class ChoosingEncoder(SatEncoder):
    """Hard evidence (negatives, reward observations) on the believed MDP, each doubtful
    state's letter chosen among its candidates at a cost of its log-likelihood ratio
    (:class:`~rmtk.label_noise.encoding.Choices`): the smallest size some choice allows, then
    every choice of least cost there (weighted MaxSAT). ``SearchResult.cost`` is that cost in
    :data:`~rmtk.label_noise.encoding.SCALE` units."""

    choices: Choices = attrs.field(kw_only=True)
    negatives: str = attrs.field(default="pairs", kw_only=True)

    def structure(self, problem: Problem, n: int, *, symmetry_breaking: bool | None = None) -> Formula:
        """As :meth:`SatEncoder.structure` over the ``K + D`` letters, the breadth-first numbering
        over the real ``K`` alone (:class:`_RealLetters`)."""
        K = self.choices.n_letters
        if problem.n_letters != K + self.choices.n_states:
            raise RmtkError(
                f"the prefix tree has {problem.n_letters} letters; the choices are over {K} letters and "
                f"{self.choices.n_states} doubtful states"
            )
        classes = problem.negatives if isinstance(problem.negatives, PolicyClasses) else None
        pool = VarPool(n, problem.n_letters, problem.trie.n_nodes, classes.n_classes if classes is not None else 0)
        clauses = determinism(pool) + full_specification(pool) + prefix_runs(pool, problem.trie)
        if self.non_stuttering:
            clauses += non_stuttering(pool)
        if (self.symmetry_breaking if symmetry_breaking is None else symmetry_breaking) and n > 1:
            clauses += symmetry_breaking_bfs(_RealLetters(pool, K))  # type: ignore[arg-type]
        return Formula(pool, clauses)

    def encode(self, problem: Problem, n: int) -> Formula:
        """The hard formula with the choices (:func:`label_choices`, :func:`chosen_transitions`,
        :func:`chosen_rewards`) and their costs as soft units (``relax``, ``weights``)."""
        formula = super().encode(problem, n)
        pool = formula.pool
        clauses, ids = label_choices(pool, self.choices)
        formula.hard += clauses
        formula.hard += chosen_transitions(pool, self.choices, ids)
        if problem.rewards is not None:
            formula.hard += chosen_rewards(pool, self.choices, ids, problem.rewards)
        formula.relax, formula.weights = label_costs(self.choices, ids)
        return formula

    def weighed(self, problem: Problem, n: int) -> Formula:
        """The formula MaxSAT optimises at ``n`` nodes (here :meth:`encode`'s)."""
        return self.encode(problem, n)

    def search(self, problem: Problem, limits: SearchLimits) -> SearchResult:
        if problem.oracle is not None:
            raise RmtkError("choosing doubtful letters needs a built prefix tree: no lazy or every-depth search")
        size = search(
            self.encode, problem, limits, solver=self.solver, non_stuttering=self.non_stuttering, decide_only=True
        )
        if size.n_nodes is None:
            return size
        res = maxsat_search(
            self.weighed,
            problem,
            limits.evolve(nodes=size.n_nodes),
            solver=self.solver,
            non_stuttering=self.non_stuttering,
        )
        return attrs.evolve(
            res,
            tried=size.tried[:-1] + res.tried,
            time_encode=size.time_encode + res.time_encode,
            time_solve=size.time_solve + res.time_solve,
        )


@attrs.frozen
class SimplestChoosingEncoder(ChoosingEncoder):
    """:class:`ChoosingEncoder`, then among the choices of least cost the machines in which the
    fewest of the real letters move a node (as :class:`~rmtk.sat.encoders.SimplestEncoder`).
    ``SearchResult.cost`` is the choices' cost alone."""

    default_solver: ClassVar[str] = "minisat22"

    def weighed(self, problem: Problem, n: int) -> Formula:
        formula = self.encode(problem, n)
        assert formula.relax is not None and formula.weights is not None, "the choices' costs"
        moves = moving_transitions(formula, n, self.choices.n_letters)
        scale = len(moves) + 1
        formula.relax = np.concatenate([formula.relax, moves])
        formula.weights = np.concatenate([formula.weights * scale, np.ones(len(moves), np.int64)])
        return formula

    def search(self, problem: Problem, limits: SearchLimits) -> SearchResult:
        res = super().search(problem, limits)
        if res.cost is None or res.n_nodes is None:
            return res
        scale = res.n_nodes * self.choices.n_letters + 1
        cost, moving = divmod(res.cost, scale)
        n_soft = int((self.choices.weights() > 0).sum())
        solutions = tuple(attrs.evolve(s, dropped=tuple(j for j in s.dropped if j < n_soft)) for s in res.solutions)
        message = (
            f"the simplest machines among the likeliest labels: {moving} (node, letter) transitions leave their node"
        )
        return attrs.evolve(
            res, solutions=solutions, cost=cost, message="; ".join(m for m in (message, res.message) if m)
        )


def chosen_letters(choices: Choices, dropped) -> np.ndarray:
    """``(D,)``: the letter each doubtful state carries in a solution whose rivals chosen are
    ``dropped`` (indices into :func:`~rmtk.label_noise.encoding.label_costs`' order)."""
    w = choices.weights()
    rivals = np.flatnonzero(w > 0)  # the candidate index of each soft unit
    out = choices.letter[choices.start[:-1]].copy() if choices.n_states else np.zeros(0, np.int64)
    d_of = np.repeat(np.arange(choices.n_states), np.diff(choices.start))
    for j in dropped:
        c = int(rivals[int(j)])
        out[d_of[c]] = choices.letter[c]
    return out
