"""The SatEncoder strategies of the :class:`~rmtk.learner.pipeline.Learner`: from the prefix tree and
its negative examples to learned machine models (paper sections 3.1-3.2 and 5.2).

An encoder has two methods, and that is the whole interface a user's encoder implements:

* ``encode(problem, n) -> Formula``: the clauses saying "a machine with ``n`` nodes runs
  every word of the trie and keeps the negative examples apart"
  (:class:`~rmtk.sat.encoding.Problem` in, :class:`~rmtk.sat.encoding.Formula` out);
* ``search(problem, limits) -> SearchResult``: the machines it finds within the
  :class:`~rmtk.limits.SearchLimits` (sizes, solutions listed, the run's deadline, progress),
  every solution enumerated.

What else an encoder can do is a capability (:class:`EncoderCapabilities`, with defaults for
an encoder that does not say): whether its machines are non-stuttering, and whether it wants
negatives found lazily by an oracle.

:class:`SimplestEncoder` is a :class:`SatEncoder` that keeps, among the smallest machines,
those in which the fewest letters move a node. Demonstrations of a near-deterministic expert
exercise many transitions through a few rare words that no negative example constrains; plain
enumeration then lists every way of sending them anywhere (more than 3,000 machines for the
Office World's coffee-and-mail task). Machines written by hand move on few letters and loop on
the others, so it breaks the tie the same way: a weighted MaxSAT at the smallest feasible size
whose soft clauses are the self-loops ``t[i,k,i]``, every optimum enumerated.

:class:`SatEncoder` (hard negatives; smallest ``n`` first) and :class:`MaxSatEncoder` (soft
negatives; every optimum at a fixed ``n``) implement them with the clause families of
:mod:`rmtk.sat.encoding` and the searches of :mod:`rmtk.sat.search`. To change the formula, subclass
one and override ``encode`` (``search`` calls ``self.encode``); a wrapper around any encoder
can also hand its own ``encode`` to :func:`rmtk.sat.search.search`.
"""

from __future__ import annotations

import functools
from typing import ClassVar

import attrs
import numpy as np

from ..errors import RmtkError
from ..learner.capabilities import Capabilities
from ..limits import SearchLimits
from ..negatives.miners import NegativePairs, PolicyClasses
from ..validators import one_of
from . import folded as folded_words
from . import grown
from .encoding import (
    Formula,
    Problem,
    VarPool,
    determinism,
    edge_runs,
    edge_transitions,
    full_specification,
    negative_classes,
    negative_pairs,
    non_stuttering,
    one_node_each,
    prefix_runs,
    reward_outputs,
    soft_negative_pairs,
    soft_reward_outputs,
    symmetry_breaking_bfs,
)
from .fewest import fewest_search
from .search import SearchResult, maxsat_search, search
from .solver import DEFAULT_SOLVER, check_solver_field

NEGATIVE_MODES = ("classes", "pairs", "lazy")
WEIGHT_MODES = ("unit", "evidence")


class EncoderCapabilities(Capabilities):
    """What a SatEncoder strategy can do beyond ``encode`` and ``search``, with the defaults of
    one that does not say (docs/design/05-strategies.md). rmtk's encoders inherit it; so may a
    user's. An encoder that does not inherit it is read with these defaults for whatever it does
    not define (:meth:`~rmtk.learner.capabilities.Capabilities.of`)."""

    __slots__ = ()

    #: Whether the machines it finds are non-stuttering (eq. 7), which compressed words need
    #: and the filling check of the verdicts assumes. Default: ``True``.
    non_stuttering: bool = True

    @property
    def lazy(self) -> bool:
        """It wants negative examples found by an oracle checking its candidates (the problem
        then carries ``oracle``; its search must return the lazy statistics) rather than all of
        them encoded from a built tree. Default: ``False``."""
        return False


@attrs.frozen
class SatEncoder(EncoderCapabilities):
    """The SatEncoder strategy (paper sections 3.1-3.2) and its default implementation:
    consumes a :class:`~rmtk.sat.encoding.Problem` (trie of label words, negative examples),
    produces a :class:`~rmtk.sat.search.SearchResult` (the machines, every solution enumerated).

    Negative examples are hard clauses; the smallest ``n`` with a solution is searched for,
    then every solution at that ``n`` is enumerated (paper Algorithm 1).

    Args:
        symmetry_breaking: BFS numbering of the nodes, so each machine appears once.
        non_stuttering: the constraint of eq. 7 (needed by compressed prefix trees).
        solver: a python-sat solver name (see :data:`rmtk.sat.solver.SOLVERS`); by default
            the encoder's :attr:`default_solver` (:data:`rmtk.sat.solver.DEFAULT_SOLVER`,
            CaDiCaL 1.5.3; :class:`SimplestEncoder`: MiniSat 2.2).
        negatives: how negative examples are encoded: ``"classes"`` (grouped, linear in the
            (word, state) pairs), ``"pairs"`` (one clause set per distinct word pair, as in
            the paper) or ``"lazy"`` (only those a candidate violates, with their words' runs,
            found by checking candidates against the whole prefix tree policy:
            :mod:`rmtk.sat.lazy`). Word pairs from demonstrations are always encoded pairwise.
    """

    #: The backend of an encoder made without ``solver``: the one its searches suit best.
    default_solver: ClassVar[str] = DEFAULT_SOLVER

    symmetry_breaking: bool = True
    non_stuttering: bool = True
    solver: str = attrs.field(
        default=attrs.Factory(lambda self: self.default_solver, takes_self=True), validator=check_solver_field
    )
    negatives: str = attrs.field(default="classes", validator=one_of(*NEGATIVE_MODES))

    @property
    def lazy(self) -> bool:
        """The lazy capability, on when ``negatives="lazy"`` (negatives found by checking
        candidates)."""
        return self.negatives == "lazy"

    def structure(self, problem: Problem, n: int, *, symmetry_breaking: bool | None = None) -> Formula:
        """Determinism and full specification (eq. 2, 3), the runs of the words, non-stuttering
        (eq. 7) and BFS symmetry breaking (``symmetry_breaking``: ``None`` the encoder's own
        setting; ``False`` when the lazy search numbers the nodes by pinning a clique), on a
        pool sized for the problem's policy classes."""
        classes = problem.negatives if isinstance(problem.negatives, PolicyClasses) else None
        pool = VarPool(n, problem.n_letters, problem.trie.n_nodes, classes.n_classes if classes is not None else 0)
        return self.machine_with(pool, prefix_runs(pool, problem.trie), symmetry_breaking)

    def machine_with(self, pool: VarPool, runs: list[list[int]], symmetry_breaking: bool | None = None) -> Formula:
        """Determinism and full specification (eq. 2, 3), the words' ``runs`` (their clauses,
        over ``pool``), non-stuttering (eq. 7) and BFS symmetry breaking."""
        clauses = determinism(pool) + full_specification(pool)  # eq. 2, 3
        clauses += runs  # runs of the words on the machine
        if self.non_stuttering:
            clauses += non_stuttering(pool)  # eq. 7
        if (self.symmetry_breaking if symmetry_breaking is None else symmetry_breaking) and pool.n > 1:
            clauses += symmetry_breaking_bfs(pool)
        return Formula(pool, clauses)

    def encode(self, problem: Problem, n: int) -> Formula:
        """The formula of ``problem`` at ``n`` nodes, negatives hard (eq. 6), and the reward
        traces' observations hard when the problem has some."""
        formula = self.encode_negatives(problem, n)
        if problem.rewards is not None:
            formula.hard += reward_outputs(formula.pool, problem.rewards)  # rewards paid, exactly
        return formula

    def encode_negatives(self, problem: Problem, n: int) -> Formula:
        """The structure and the negative examples (eq. 6), hard; no reward observations."""
        formula = self.structure(problem, n)
        neg = problem.negatives
        if isinstance(neg, PolicyClasses) and self.negatives == "classes":
            formula.hard += negative_classes(formula.pool, neg)  # eq. 6, grouped by class
        elif neg is not None:
            pairs = problem.negative_pairs()
            if len(pairs):
                formula.hard += negative_pairs(formula.pool, pairs)  # eq. 6, pairwise
        return formula

    def search(
        self,
        problem: Problem,
        limits: SearchLimits,
    ) -> SearchResult:
        """The smallest size of ``limits`` and all its solutions. A problem with an oracle is
        searched lazily (:func:`rmtk.sat.lazy.lazy_search`)."""
        if problem.oracle is not None:
            from .lazy import lazy_search  # imported when a lazy search runs

            return lazy_search(
                self.structure,
                problem,
                limits,
                solver=self.solver,
                non_stuttering=self.non_stuttering,
                pinned_structure=functools.partial(self.structure, symmetry_breaking=False)
                if self.symmetry_breaking
                else None,
            )
        return self.smallest(problem, limits)

    def smallest(self, problem: Problem, limits: SearchLimits, *, decide_only: bool = False) -> SearchResult:
        """The smallest size of ``limits`` and all its solutions, or with ``decide_only`` the
        size alone (no lazy search: a problem with an oracle goes to :meth:`search`). From
        reward traces alone on a large trie, searched on a sample of the words grown by
        counterexamples (:mod:`rmtk.sat.grown`): the same answer."""
        if not decide_only and grown.applies(problem):
            return grown.grown_search(self._smallest, problem, limits)
        return self._smallest(problem, limits, decide_only=decide_only)

    def _smallest(self, problem: Problem, limits: SearchLimits, *, decide_only: bool = False) -> SearchResult:
        """:meth:`smallest` on every word of the problem's trie."""
        ns = self.non_stuttering
        res = search(self.encode, problem, limits, solver=self.solver, non_stuttering=ns, decide_only=decide_only)
        return none_found(res, problem)


@attrs.frozen
class MaxSatEncoder(SatEncoder):
    """Negative examples as soft clauses (paper section 5.2): weighted MaxSAT at a fixed
    ``n`` (``nodes``, else ``max_nodes``), every optimal machine enumerated with the
    examples it drops. Robust to false positive negatives mined from finite data.

    Args:
        weights: ``"unit"`` (each example weighs 1) or ``"evidence"`` (⌊log(δ1+δ2)/log α⌋,
            stronger evidence weighs more; needs word pairs from a confidence miner).
        symmetry_breaking, non_stuttering, solver: as for :class:`SatEncoder`; negative
            examples are always encoded pairwise (``negatives="pairs"``).
    """

    negatives: str = attrs.field(default="pairs", validator=one_of("pairs"))
    weights: str = attrs.field(default="unit", validator=one_of(*WEIGHT_MODES))

    def encode(self, problem: Problem, n: int) -> Formula:
        """The formula of ``problem`` at ``n`` nodes, each negative example soft."""
        if problem.rewards is not None:
            raise RmtkError("MaxSatEncoder weighs negative examples; reward traces are weighed by NoisyRewardEncoder")
        formula = self.structure(problem, n)
        pairs = problem.negative_pairs()
        soft, relax = soft_negative_pairs(formula.pool, pairs)
        formula.hard += soft
        formula.relax = relax
        if isinstance(problem.negatives, NegativePairs):
            formula.weights = problem.negatives.weights(self.weights)
        elif self.weights != "unit":
            raise RmtkError(
                "evidence weights need negative examples mined from demonstrations (word pairs with "
                "their confidence); exact policy classes have no evidence level: use weights='unit'"
            )
        else:
            formula.weights = np.ones(len(pairs), dtype=np.int64)
        return formula

    def search(
        self,
        problem: Problem,
        limits: SearchLimits,
    ) -> SearchResult:
        """Every optimal machine at ``limits.nodes`` (else ``limits.max_nodes``) nodes."""
        return _at_fixed_size(
            self,
            problem,
            limits,
            "MaxSAT weighs a finite set of negative examples: lazy and every-depth learning "
            "(negatives found by checking candidates) need SatEncoder",
        )


def none_found(res: SearchResult, problem: Problem) -> SearchResult:
    """``res``, its message extended when no size was consistent with negatives mined from data."""
    if res.n_nodes is None and res.complete and isinstance(problem.negatives, NegativePairs):
        res = attrs.evolve(
            res,
            message=res.message + " (negative examples mined from data may contain false "
            "positives: try MaxSatEncoder (--maxsat) or a smaller alpha)",
        )
    return res


def _at_fixed_size(encoder, problem: Problem, limits: SearchLimits, lazy: str) -> SearchResult:
    """Weighted MaxSAT of ``encoder.encode`` at ``limits.nodes`` (else ``limits.max_nodes``)
    nodes, every optimal machine; a lazy problem (no built tree) is refused with ``lazy``."""
    if problem.oracle is not None:
        raise RmtkError(lazy)
    return maxsat_search(
        encoder.encode,
        problem,
        limits.evolve(nodes=limits.nodes or limits.max_nodes),
        solver=encoder.solver,
        non_stuttering=encoder.non_stuttering,
    )


def moving_transitions(formula: Formula, n: int, n_letters: int) -> np.ndarray:
    """One variable ``m[i,k]`` per (node, letter), true exactly when letter ``k`` moves node
    ``i`` (its clauses added to ``formula``): the relaxations of the soft "stays" clauses."""
    pool = formula.pool
    i, k = np.meshgrid(np.arange(n), np.arange(n_letters), indexing="ij")
    stays = pool.t(i.ravel(), k.ravel(), i.ravel())
    moves = np.array([pool.aux.id(("moves", int(a), int(b))) for a, b in zip(i.ravel(), k.ravel())], np.int64)
    formula.extend([[int(m), int(s)] for m, s in zip(moves, stays)])
    formula.extend([[-int(m), -int(s)] for m, s in zip(moves, stays)])
    return moves


# -- SimplestEncoder: the smallest machines in which the fewest letters move a node ------
@attrs.frozen
class SimplestEncoder(SatEncoder):
    """Hard negatives, the smallest ``n`` (as :class:`~rmtk.sat.encoders.SatEncoder`), then only
    the machines with the fewest transitions that leave their node (``SearchResult.message``
    says how many; their ``cost`` is ``None``: no negative example is dropped), listed in
    their canonical order (:func:`rmtk.sat.fewest.canonical_order`), so a complete listing is
    the same on every backend.

    Its backend is MiniSat 2.2 unless ``solver`` says otherwise: its searches are many small
    incremental calls (a size at a time, then a bound on the moving transitions at a time, then one
    machine at a time), where MiniSat loads clauses faster and finishes sooner than CaDiCaL
    (Craft t9 from 400 episodes of rewards: about half the CPU; the Office World's tasks from
    10⁴ demonstrations: a quarter less; docs/benchmarks/rewards.md)."""

    default_solver: ClassVar[str] = "minisat22"

    def encode(self, problem: Problem, n: int) -> Formula:
        """As :meth:`SatEncoder.encode`; reward traces alone are encoded on the words that
        observe something deciding, folded (:mod:`rmtk.sat.folded`; raw words with their runs
        of a letter contracted), or, compressed words whose folding keeps many nodes
        (:data:`~rmtk.sat.folded.TREE_FROM`), as a tree, each word in exactly one node and each
        edge's transition fixed by its words' nodes (:func:`~rmtk.sat.folded.cut`,
        :func:`~rmtk.sat.encoding.one_node_each`, :func:`~rmtk.sat.encoding.edge_transitions`:
        clauses that propagate). The same machines, listed in their canonical order."""
        if problem.rewards is None or problem.negatives is not None or problem.oracle is not None:
            return super().encode(problem, n)
        tree = problem.rewards.trie.compressed and problem.folded().n_nodes >= folded_words.TREE_FROM
        words = problem.tree() if tree else problem.folded()
        pool = VarPool(n, problem.n_letters, words.n_nodes, 0)
        if n == 1 and len(words.node):  # one node pays one value a letter; a deciding letter was paid two
            return Formula(pool, [[int(pool.x(0, 0))], [-int(pool.x(0, 0))]])
        runs = edge_runs(pool, words.edge_parent, words.edge_letter, words.edge_child, words.edge_power)
        if tree:
            runs += one_node_each(pool, words.n_nodes)
            runs += edge_transitions(pool, words.edge_parent, words.edge_letter, words.edge_child)
        formula = self.machine_with(pool, runs)
        formula.hard += reward_outputs(pool, words)
        return formula

    def moves(self, problem: Problem, n: int, hard: Formula | None = None) -> Formula:
        """The hard formula at ``n`` nodes (``hard``, when given: ``encode(problem, n)`` made
        already, taken over) with one soft "stays" clause per (node, letter): the relaxation
        ``m[i,k]`` is true exactly when letter ``k`` moves node ``i``."""
        formula = self.encode(problem, n) if hard is None else hard
        formula.relax = moving_transitions(formula, n, problem.n_letters)
        formula.weights = np.ones(len(formula.relax), np.int64)
        return formula

    def search(
        self,
        problem: Problem,
        limits: SearchLimits,
    ) -> SearchResult:
        """The smallest feasible ``n`` (or exactly ``nodes``), then every machine at ``n``
        with the fewest moving transitions."""
        if problem.oracle is not None:
            raise RmtkError(
                "SimplestEncoder weighs a finite set of transitions on a built prefix tree: lazy and "
                "every-depth learning need SatEncoder"
            )
        if grown.applies(problem, folded=True):  # reward traces alone, many words: on a sample of them
            res = grown.grown_search(self._fewest, problem, limits)
        else:
            res = self._fewest(problem, limits)
        return self._simplest(res, problem)

    def _fewest(self, problem: Problem, limits: SearchLimits) -> SearchResult:
        """The search on every word of the problem's trie; its ``cost``: the fewest moving
        transitions (a sample's bounds the next sample's, ``SearchLimits.fewest_floor``)."""
        return fewest_search(
            self.encode, self.moves, problem, limits, solver=self.solver, non_stuttering=self.non_stuttering
        )

    def _simplest(self, res: SearchResult, problem: Problem) -> SearchResult:
        """``res`` as :meth:`search` says it: no negative example dropped, the moving count in words."""
        if res.n_nodes is None:
            return none_found(res, problem)
        solutions = tuple(attrs.evolve(s, dropped=()) for s in res.solutions)
        moving = f"the simplest machines: {res.cost} (node, letter) transitions leave their node"
        return attrs.evolve(
            res, solutions=solutions, cost=None, message="; ".join(m for m in (moving, res.message) if m)
        )


# -- NoisyRewardEncoder: reward traces whose rewards are sometimes wrong ----------------
@attrs.frozen
class NoisyRewardEncoder(SatEncoder):
    """Reward observations as soft clauses weighted by their counts, negative examples hard:
    weighted MaxSAT at a fixed ``n`` (``nodes``, else ``max_nodes``), every optimal machine
    enumerated. The optimum calls the fewest observed steps noisy; the learner reports that
    share as the noise level, with an interval (:func:`rmtk.traces.evidence.noise_interval`). Noise
    cannot choose the size: more nodes always explain more of it, so the size is given."""

    def encode(self, problem: Problem, n: int) -> Formula:
        """The hard structure and negatives at ``n`` nodes, and one soft clause set per
        reward observation (:func:`rmtk.sat.encoding.soft_reward_outputs`)."""
        if problem.rewards is None:
            raise RmtkError("NoisyRewardEncoder weighs reward traces: give reward evidence (Learner(rewards=...))")
        formula = self.encode_negatives(problem, n)
        soft, formula.relax, formula.weights = soft_reward_outputs(formula.pool, problem.rewards)
        formula.hard += soft
        formula.exclusive_softs = True
        return formula

    def search(self, problem: Problem, limits: SearchLimits) -> SearchResult:
        """Every optimal machine at ``limits.nodes`` (else ``limits.max_nodes``) nodes."""
        return _at_fixed_size(
            self,
            problem,
            limits,
            "NoisyRewardEncoder weighs a finite set of observations on a built tree: no lazy search",
        )


@attrs.frozen
class SimplestNoisyRewardEncoder(NoisyRewardEncoder):
    """:class:`NoisyRewardEncoder`, then among the machines that call the fewest steps noisy,
    those in which the fewest letters move a node (as :class:`SimplestEncoder` among the
    smallest): one weighted MaxSAT whose noise weights are scaled above the sum of every
    move's, so the order is strict (noise first). ``SearchResult.cost`` is the noisy steps."""

    def encode(self, problem: Problem, n: int) -> Formula:
        formula = super().encode(problem, n)
        assert formula.relax is not None and formula.weights is not None, "the observations' relaxations"
        moves = moving_transitions(formula, n, problem.n_letters)
        scale = len(moves) + 1
        formula.relax = np.concatenate([formula.relax, moves])
        formula.weights = np.concatenate([formula.weights * scale, np.ones(len(moves), np.int64)])
        return formula

    def search(self, problem: Problem, limits: SearchLimits) -> SearchResult:
        res = super().search(problem, limits)
        if res.cost is None:
            return res
        scale = (limits.nodes or limits.max_nodes) * problem.n_letters + 1
        noisy, moving = divmod(res.cost, scale)
        dropped = problem.rewards.n_rows if problem.rewards is not None else 0
        solutions = tuple(attrs.evolve(s, dropped=tuple(j for j in s.dropped if j < dropped)) for s in res.solutions)
        message = f"the simplest machines among the least noisy: {moving} (node, letter) transitions leave their node"
        return attrs.evolve(
            res, solutions=solutions, cost=noisy, message="; ".join(m for m in (message, res.message) if m)
        )
