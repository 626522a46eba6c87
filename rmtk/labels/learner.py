"""The :class:`LabelLearner`: the labeling function learned with the machine, from state
histories (docs/design/13-learning-labels.md). It sits beside :class:`~rmtk.learner.pipeline.Learner` and
composes the same strategies where they apply — a PTP strategy (read over state histories by
:class:`~rmtk.labels.histories.StateHistoryPTP`) and a negative example miner — with its own
pair search (:class:`~rmtk.labels.search.PairSearch`, default
:class:`~rmtk.labels.search.SmallestPairs`).

``LabelLearner().fit(task)`` ignores the task's labels: the expert's behaviour is read over
state sequences, the pairs are searched, then each pair's free states
(:mod:`rmtk.labels.freedom`) and, when the target is a task, the verdicts against its truth
(:mod:`rmtk.labels.verdicts`). Every step checks the run's deadline (``time_limit``, or a stop
requested by SIGINT / SIGTERM): the search ends by 80 % of the limit so that the steps after it
fit in the rest, and what a step did not finish is named in ``unfinished``.
:meth:`LabelLearner.fit_questions` learns from the questions and answers of an active loop run
on the state view instead.
"""

from __future__ import annotations

import time
from typing import cast

import attrs
import numpy as np

from ..errors import RmtkError
from ..limits import Deadline, SearchLimits, max_nodes_or_default
from ..machine.equivalence import sync_product
from ..mdp.model import LabeledMDP
from ..mdp.space import Space
from ..negatives.miners import ConfidenceMiner, ExactMiner, NegativeExampleMiner
from ..progress import Progress, Recorder
from ..ptp.exact import ExactPTP
from ..ptp.tree import PTP, PTPCapabilities, Trie
from ..sat.encoding import Problem
from ..sat.lazy import Oracle, TrieOracle
from ..task import Task
from ..validators import BOUND_WHY, MAX_NODES, implements, node_count, optional_positive_int, optional_seconds
from .encoding import MAX_CLAUSES, estimated_clauses
from .evidence import asked_evidence, sample_evidence
from .freedom import free_states
from .histories import StateHistoryPTP, is_state_view, state_mdp
from .knowledge import knowledge, known_labels, proposition_names, shared_groups
from .pairs import LabelKnowledge, mdp_reachable, reached_states
from .result import LabelLearnResult
from .search import LabelSearchResult, PairSearch, PairSearchCapabilities, SmallestPairs
from .verdicts import truth_survives, verdicts

#: The share of a time limit the search may use; the free states and the verdicts get the rest.
SEARCH_SHARE = 0.8


@attrs.frozen
class LabelLearner:
    """Learn (labeling, machine) pairs with the fewest nodes, then the fewest propositions,
    from the expert's behaviour over state histories.

    Args:
        ptp: where the expert's behaviour comes from (default ``ExactPTP(None)``: the task's
            exact expert at every depth; ``EmpiricalPTP(demos)`` for demonstrations of states
            and actions only). Read over state histories (:class:`StateHistoryPTP`).
        miner: negative example miner of a built tree (default: exact classes, or the
            confidence bound for demonstrations).
        search: the pair search (default :class:`~rmtk.labels.search.SmallestPairs`: symmetry
            breaking, non-stuttering, the solver, lazy or whole-tree negatives).
        known: ``{state: proposition name}`` labels the user knows; the named propositions keep
            their names, the others are learned.
        shared: groups of states known to carry one label.
        props: exactly this many propositions (``None``: the fewest that work).
        max_props: bound on the propositions when searching (default: the states that matter).
        freedom: list, per pair, the states whose label alone could change.
        max_nodes: bound on the nodes (default: the task's, else 4).
        nodes: exactly this many nodes.
        max_solutions: stop after this many pairs (the summary then says "≥N").
        time_limit: seconds for the whole fit; what was found is returned, flagged.
        progress: a :class:`~rmtk.progress.Progress`.
    """

    ptp: PTP = attrs.field(
        factory=lambda: ExactPTP(None),
        validator=implements("a PTP strategy", "build", example="ExactPTP, EmpiricalPTP"),
    )
    miner: NegativeExampleMiner | None = attrs.field(
        default=None, validator=implements("a negative example miner", "mine", optional=True)
    )
    search: PairSearch = attrs.field(
        factory=SmallestPairs, validator=implements("a pair search", "search", example="SmallestPairs()")
    )
    known: dict = attrs.field(factory=dict, converter=known_labels)
    shared: tuple = attrs.field(default=(), converter=shared_groups)
    props: int | None = attrs.field(default=None, validator=optional_positive_int)
    max_props: int | None = attrs.field(default=None, validator=optional_positive_int)
    freedom: bool = True
    max_nodes: int | None = attrs.field(default=None, validator=node_count)
    nodes: int | None = attrs.field(default=None, validator=node_count)
    max_solutions: int | None = attrs.field(default=None, validator=optional_positive_int)
    time_limit: float | None = attrs.field(default=None, validator=optional_seconds)
    progress: Progress = attrs.field(factory=Progress)

    def __attrs_post_init__(self):
        if self.props is not None and self.max_props is not None and self.max_props < self.props:
            raise RmtkError(f"max_props={self.max_props} is below props={self.props}")
        if self.nodes is not None and self.max_nodes is not None and self.nodes > self.max_nodes:
            raise RmtkError(f"nodes={self.nodes} contradicts max_nodes={self.max_nodes}")
        if PTPCapabilities.of(self.ptp).compress and not PairSearchCapabilities.of(self.search).non_stuttering:
            raise RmtkError(
                "compressed state histories assume a non-stuttering machine: build the PTP with compress=False "
                "to learn without the non-stuttering constraint"
            )

    def _deadlines(self) -> tuple[Deadline, Deadline]:
        deadline = Deadline.after(self.time_limit)
        search = deadline if self.time_limit is None else deadline.sooner(SEARCH_SHARE * self.time_limit)
        return deadline, search

    def fit(self, target: Task | LabeledMDP | Space) -> LabelLearnResult:
        """Learn from ``target``: a :class:`~rmtk.task.Task` (its labels and machine serve only for
        the verdicts), a :class:`~rmtk.mdp.model.LabeledMDP` (its labels are not read) or a
        :class:`~rmtk.mdp.space.Space` of state histories (a recording without labels)."""
        if not isinstance(target, (Task, LabeledMDP, Space)):
            raise RmtkError(
                "learning the labels needs a Task, a LabeledMDP or a Space of state histories, not "
                f"{type(target).__name__}"
            )
        t0 = time.perf_counter()
        deadline, search_deadline = self._deadlines()
        rec = Recorder(self.progress)
        task = target if isinstance(target, Task) else None
        mdp = target.mdp if isinstance(target, Task) else target
        know, named = knowledge(mdp, self.known, self.shared, self.props, self.max_props)
        ptp = self.ptp if isinstance(self.ptp, StateHistoryPTP) else StateHistoryPTP(self.ptp)
        every_depth = ptp.every_depth_for(target)
        lazy = PairSearchCapabilities.of(self.search).lazy or every_depth
        oracle = ptp.state_oracle(target) if lazy else None  # the expert known as a task: no tree
        trie, negatives, built, mined = Trie.root(ptp.compress), None, None, None
        if oracle is not None:
            reach = mdp_reachable(mdp)
        elif every_depth:
            raise RmtkError("learning the labels at every depth needs the expert as a task")
        else:
            built = ptp.state_tree(target, rec)
            miner = self.miner or (ExactMiner() if built.counts is None else ConfidenceMiner())
            negatives = mined = miner.mine(built)
            reach = reached_states(built.trie.letter)
            if lazy:
                oracle = TrieOracle(built.trie, negatives)
                negatives = None
            else:
                trie = built.trie
        problem = Problem(trie, mdp.n_states, negatives, oracle=oracle)
        limits = self._limits(task, problem, mdp, reach, know, search_deadline, rec)
        res = self.search.search(problem, mdp.n_states, reach, know, limits)
        rec.stage("search", time.perf_counter() - t0)
        checker = _checker(problem)
        first = res.solutions[0].state_machine() if res.solutions else None
        evidence = sample_evidence(built, mined, first)
        result = self._finish(task, mdp, res, named, reach, checker, ptp, deadline, rec, t0, evidence)
        return attrs.evolve(result, ptp=built if evidence is not None else None)

    def fit_questions(self, active, target: Task | LabeledMDP) -> LabelLearnResult:
        """Learn from what an active loop asked the expert on the state view
        (``ActiveLearner().fit(state_task(task), TaskExpert(state_task(task)))``): its questions
        and answers, kept as a prefix tree with their negatives (the last round's oracle), are
        checked lazily; no tree of the expert is built. ``target``: the task (verdicts against its
        truth) or its MDP. The loop's survivors over states are many machines, one letter per
        state; the labeling collapses them."""
        if not isinstance(target, (Task, LabeledMDP)):
            raise RmtkError(f"fit_questions needs the Task or the LabeledMDP asked about, not {type(target).__name__}")
        result = getattr(active, "result", None)  # an ActiveResult's LearnResult, read without importing the loop
        if result is None:
            raise RmtkError(
                "fit_questions learns from an active run's result (an rmtk.active.ActiveResult, what "
                "ActiveLearner().fit(state_task(task), TaskExpert(state_task(task))) returns), not "
                f"{type(active).__name__} {active!r}"
            )
        oracle = result.oracle
        if not isinstance(oracle, TrieOracle):
            raise RmtkError("the active result holds no questions and answers to learn the labels from (no oracle)")
        task = target if isinstance(target, Task) else None
        mdp = target.mdp if isinstance(target, Task) else target
        asked = result.mdp
        if not (isinstance(asked, LabeledMDP) and is_state_view(asked)):
            raise RmtkError(
                "the active loop asked about label words: to learn the labels, run it on the state view "
                "(rmtk.labels.histories.state_task(task), TaskExpert(state_task(task)))"
            )
        _same_mdp(asked, mdp)
        t0 = time.perf_counter()
        deadline, search_deadline = self._deadlines()
        rec = Recorder(self.progress)
        know, named = knowledge(mdp, self.known, self.shared, self.props, self.max_props)
        reach = reached_states(oracle.trie.letter)
        stop = f"questions ({active.ended})" if active.flagged else None  # what stopped the loop, by name
        if stop is not None and not len(reach):  # nothing answered: no labels yet, and the stop is why
            message = f"the active loop stopped ({active.ended}) before any history was answered: no labels to learn"
            empty = LabelSearchResult(None, None, (), False, (), message, histories=1, stopped=active.ended)
            return LabelLearnResult(empty, mdp, (), unfinished=(stop,), timings={"total": time.perf_counter() - t0})
        problem = Problem(Trie.root(oracle.trie.compressed), mdp.n_states, None, oracle=oracle)
        limits = self._limits(task, problem, mdp, reach, know, search_deadline, rec)
        res = self.search.search(problem, mdp.n_states, reach, know, limits)
        rec.stage("search", time.perf_counter() - t0)
        view = StateHistoryPTP(ExactPTP(None))
        evidence = asked_evidence(active, res.solutions[0].state_machine() if res.solutions else None)
        result = self._finish(task, mdp, res, named, reach, oracle, view, deadline, rec, t0, evidence)
        return result if stop is None else attrs.evolve(result, unfinished=(stop, *result.unfinished))

    # -------------------------------------------------------------------------------- steps
    def _limits(self, task, problem, mdp, reach, know: LabelKnowledge, deadline, rec) -> SearchLimits:
        """The search's limits, every size a user typed checked against what it will allocate."""
        max_nodes = max_nodes_or_default(self.max_nodes, task.max_nodes if task is not None else None)
        if self.nodes is not None:
            max_nodes = self.nodes if max_nodes > MAX_NODES else max(max_nodes, self.nodes)
        elif max_nodes > MAX_NODES:
            raise RmtkError(f"the task suggests max_nodes {max_nodes}, above rmtk's bound of {MAX_NODES}: {BOUND_WHY}")
        if not len(reach):
            raise RmtkError(f"no history reaches a state of {mdp.name!r}: there are no labels to learn")
        if self.props is not None and self.props > len(reach):
            raise RmtkError(
                f"props={self.props}: only {len(reach)} states are reached by the histories, and every proposition "
                "labels at least one of them"
            )
        biggest = self.nodes or max_nodes
        pairs, edges = _product_size(problem)
        clauses = estimated_clauses(biggest, mdp.n_states, len(reach), pairs, edges, self.props or 0)
        if clauses > MAX_CLAUSES:
            what = f"max_nodes={biggest}" if self.props is None else f"max_nodes={biggest} and props={self.props}"
            raise RmtkError(
                f"{what} over {len(reach)} states would build a formula of about {clauses:,} clauses (rmtk's bound "
                f"for label learning is {MAX_CLAUSES:,}, a few GB in the solver); pass fewer nodes"
                + (" or propositions" if self.props is not None else "")
            )
        return SearchLimits(
            max_nodes=max_nodes,
            min_nodes=min(problem.lower_bound(), max_nodes),
            nodes=self.nodes,
            max_solutions=self.max_solutions,
            deadline=deadline,
            progress=rec,
        )

    def _finish(self, task, mdp, res: LabelSearchResult, named, reach, checker, ptp, deadline, rec, t0, evidence):
        k = res.n_props or max([kk for _, kk, _ in res.tried] or [len(named)])
        names = proposition_names(named, max(k, len(named)))
        unfinished: list[str] = []
        if not res.complete and res.stopped:
            unfinished.append(f"search ({res.stopped})")
        how = PairSearchCapabilities.of(self.search)
        judged = survives = size = None
        unseen = 0
        if task is not None and task.machine is not None:  # the verdicts first: cheap, what a reader looks at
            t = time.perf_counter()
            # the expert's classes (a soft Bellman solve of the state task: 0.3-0.5 s on the Craft World)
            # only when some pair can still be judged; a stopped run reports at once
            classes = None if deadline.expired() else ptp.expert_classes(task)
            judged, size = verdicts(task, classes, res.solutions, reach, deadline, how.non_stuttering)
            survives = truth_survives(task, checker, reach, size, (res.n_nodes, res.n_props), deadline)
            missing = sum(v is None for v in judged)
            if missing:
                unfinished.append(f"verdicts of {missing} of {len(judged)} pairs ({deadline.reason() or 'time limit'})")
            if survives is None:
                unfinished.append(f"whether the truth survives ({deadline.reason() or 'time limit'})")
            unseen = len(np.setdiff1d(mdp_reachable(task.mdp), reach))
            rec.stage("verdict", time.perf_counter() - t)
        if self.freedom and checker is not None and res.solutions:
            t = time.perf_counter()
            sols = []
            for s in res.solutions:
                free = None if deadline.expired() else free_states(checker, s, reach, deadline, solver=how.solver)
                sols.append(attrs.evolve(s, free=free))
            missing = sum(s.free is None for s in sols)
            if missing:
                unfinished.append(
                    f"free states of {missing} of {len(sols)} pairs ({deadline.reason() or 'time limit'})"
                )
            res = attrs.evolve(res, solutions=tuple(sols))
            rec.stage("freedom", time.perf_counter() - t)
        elif res.solutions:
            res = attrs.evolve(res, solutions=tuple(attrs.evolve(s, free=None) for s in res.solutions))
        result = LabelLearnResult(
            res,
            mdp,
            names,
            verdicts=judged,
            truth_size=size,
            truth_survives=survives,
            unseen=unseen,
            evidence=evidence,
            timings=rec.timings,
        )
        result.timings["total"] = time.perf_counter() - t0
        return attrs.evolve(result, unfinished=tuple(unfinished))


def _checker(problem: Problem) -> Oracle | None:
    if problem.oracle is not None:
        return cast(Oracle, problem.oracle)
    if problem.negatives is not None:
        return TrieOracle(problem.trie, problem.negatives)
    return None


def _product_size(problem: Problem) -> tuple[int, int]:
    """(pairs, steps) of the product the every-depth encoding ranges over (0, 0 otherwise)."""
    from ..sat.lazy import ProductOracle

    oracle = problem.oracle
    if not isinstance(oracle, ProductOracle) or oracle.depth is not None:
        return 0, 0
    true = np.asarray(oracle.true_delta)
    prod = sync_product(oracle.mdp, true, np.zeros((1, true.shape[1]), np.int64), init_a=oracle.true_initial)
    succ = oracle.mdp.successor_matrix()
    degree = np.diff(np.asarray(succ.indptr))
    return prod.size, int(degree[prod.states].sum())


def _same_mdp(asked: LabeledMDP, mdp: LabeledMDP) -> None:
    """The active loop asked about the state view of ``mdp`` (same states, actions and moves)."""
    view = state_mdp(mdp)
    if asked.states != view.states or asked.actions != view.actions:
        raise RmtkError(
            f"the active loop asked about {asked.name!r} ({asked.n_states} states), not about the state view of "
            f"{mdp.name!r} ({mdp.n_states} states): learn the labels of the task the loop was run on"
        )
    a, b = asked.successor_matrix(), view.successor_matrix()
    same = np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices)
    if not same or not np.array_equal(asked.start_states, view.start_states):
        raise RmtkError(
            f"the active loop asked about {asked.name!r}, whose moves differ from those of {mdp.name!r}: learn the "
            "labels of the task the loop was run on"
        )
