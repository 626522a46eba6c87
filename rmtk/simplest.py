"""The :class:`SimplestEncoder` strategy: among the smallest machines that keep every
negative example apart, the ones in which the fewest letters move a node.

Demonstrations of a near-deterministic expert exercise many transitions through a few rare
words that no negative example constrains; plain enumeration (:class:`~rmtk.encoders.SatEncoder`)
then lists every way of sending them anywhere (more than 3,000 machines for the Office
World's coffee-and-mail task).
Reward machines written by hand move on few letters and loop on the others, so this encoder
breaks the tie the same way: a weighted MaxSAT at the smallest feasible size whose soft
clauses are the self-loops ``t[i,k,i]`` (one per node and letter), every optimum
enumerated. The negatives stay hard; transitions no word exercises stay free, as always.
"""

from __future__ import annotations

import attrs
import numpy as np

from .encoders import SatEncoder
from .encoding import Formula, Problem
from .errors import RmtkError
from .progress import Progress
from .solve import SearchResult, maxsat_search


@attrs.frozen
class SimplestEncoder(SatEncoder):
    """Hard negatives, the smallest ``n`` (as :class:`~rmtk.encoders.SatEncoder`), then only
    the machines with the fewest transitions that leave their node (``SearchResult.message``
    says how many; their ``cost`` is ``None``: no negative example is dropped)."""

    def moves(self, problem: Problem, n: int) -> Formula:
        """The hard formula at ``n`` nodes with one soft "stays" clause per (node, letter):
        the relaxation ``m[i,k]`` is true exactly when letter ``k`` moves node ``i``."""
        formula = self.encode(problem, n)
        pool = formula.pool
        i, k = np.meshgrid(np.arange(n), np.arange(problem.n_letters), indexing="ij")
        stays = pool.t(i.ravel(), k.ravel(), i.ravel())
        moves = np.array([pool.aux.id(("moves", int(a), int(b))) for a, b in zip(i.ravel(), k.ravel())], np.int64)
        formula.extend([[int(m), int(s)] for m, s in zip(moves, stays)])
        formula.extend([[-int(m), -int(s)] for m, s in zip(moves, stays)])
        formula.relax, formula.weights = moves, np.ones(len(moves), np.int64)
        return formula

    def search(
        self,
        problem: Problem,
        *,
        max_nodes: int,
        min_nodes: int = 1,
        nodes: int | None = None,
        max_solutions: int | None = None,
        time_limit: float | None = None,
        progress: Progress | None = None,
    ) -> SearchResult:
        """The smallest feasible ``n`` (or exactly ``nodes``), then every machine at ``n``
        with the fewest moving transitions."""
        if problem.oracle is not None:
            raise RmtkError(
                "SimplestEncoder weighs a finite set of transitions on a built prefix tree: lazy and "
                "every-depth learning need SatEncoder"
            )
        probe = super().search(
            problem,
            max_nodes=max_nodes,
            min_nodes=min_nodes,
            nodes=nodes,
            max_solutions=1,
            time_limit=time_limit,
            progress=progress,
        )
        if probe.n_nodes is None:
            return probe
        res = maxsat_search(
            self.moves,
            problem,
            nodes=probe.n_nodes,
            solver=self.solver,
            non_stuttering=self.non_stuttering,
            max_solutions=max_solutions,
            time_limit=time_limit,
            progress=progress,
        )
        solutions = tuple(attrs.evolve(s, dropped=()) for s in res.solutions)
        moving = f"the simplest machines: {res.cost} (node, letter) transitions leave their node"
        return attrs.evolve(
            res,
            solutions=solutions,
            tried=probe.tried,
            cost=None,
            message="; ".join(m for m in (moving, res.message) if m),
            time_encode=probe.time_encode + res.time_encode,
            time_solve=probe.time_solve + res.time_solve,
        )
