"""Learning the labeling function with the machine: the :class:`LabelingEncoder` strategy of a
:class:`~rmtk.learner.Learner` and its :class:`LabelLearnResult` (docs/design.md, "Learning the
labels").

``Learner(ptp, encoder=LabelingEncoder(...)).fit(task)`` ignores the task's labels: the prefix
tree policy is built over state histories (:mod:`rmtk.labels.histories`), the pairs are searched by
:func:`rmtk.labels.search.label_search`, and the task's labels and machine serve only for the
verdicts (policy-equivalence at every depth, equality up to both renamings).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Mapping
from typing import cast

import attrs
import numpy as np

from ..encoders import EncoderCapabilities
from ..equivalence import consistency, exercised, sync_product
from ..errors import RmtkError
from ..exact import ExactPTP
from ..machine import RewardMachine
from ..mdp import LabeledMDP
from ..negatives import ConfidenceMiner, ExactMiner
from ..progress import Recorder
from ..ptp import Trie
from ..sat.encoding import Problem
from ..sat.lazy import Oracle, TrieOracle
from ..sat.solver import DEFAULT_SOLVER, check_solver_field
from ..space import Space
from ..task import Task
from .histories import StateHistoryPTP, is_state_view, state_machine, state_mdp, state_task
from .search import (
    LabelKnowledge,
    LabelSearchResult,
    LabelSolution,
    canonical_pair,
    label_search,
    mdp_reachable,
    reached_states,
    state_delta,
)


def _k(instance, attribute, value):
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1):
        raise RmtkError(
            f"{attribute.name}: the number of propositions must be a whole number of at least 1, got {value!r}"
        )


@attrs.frozen
class LabelingEncoder(EncoderCapabilities):
    """The SatEncoder strategy that learns the labeling too: (labeling, machine) pairs with
    the fewest nodes, then the fewest propositions.

    Args:
        props: exactly this many propositions k (``None``: the fewest that work).
        max_props: bound on k when searching (default: the states that matter).
        known: ``{state name: proposition name}`` labels the user knows; the named
            propositions keep their names, the others are learned.
        shared: groups of state names known to carry one label.
        negatives: ``"lazy"`` (counterexample-guided; the default) or ``"classes"`` (the
            whole state-history tree encoded at once; needs a finite tree).
        freedom: list, per solution, the states whose label alone could change.
    """

    props: int | None = attrs.field(default=None, validator=_k)
    max_props: int | None = attrs.field(default=None, validator=_k)
    known: Mapping[str, str] = attrs.field(factory=dict, converter=dict)
    shared: tuple = attrs.field(default=(), converter=lambda g: tuple(tuple(x) for x in g))
    negatives: str = "lazy"
    symmetry_breaking: bool = True
    non_stuttering: bool = True
    solver: str = attrs.field(default=DEFAULT_SOLVER, validator=check_solver_field)
    freedom: bool = True

    def __attrs_post_init__(self):
        if self.negatives not in ("lazy", "classes"):
            raise RmtkError(f"negatives must be 'lazy' or 'classes', not {self.negatives!r}")
        if self.props is not None and self.max_props is not None and self.max_props < self.props:
            raise RmtkError(f"max_props={self.max_props} is below props={self.props}")

    @property
    def lazy(self) -> bool:
        """The lazy capability, on when ``negatives="lazy"`` (negatives found by checking
        candidates)."""
        return self.negatives == "lazy"

    def encode(self, problem: Problem, n: int):
        raise RmtkError(
            "LabelingEncoder searches over (nodes, propositions): use Learner.fit, or rmtk.labels.search.label_search"
        )

    def search(self, problem: Problem, **kwargs):
        raise RmtkError("LabelingEncoder needs the MDP's states: use Learner(encoder=LabelingEncoder()).fit(target)")

    def knowledge(self, mdp: LabeledMDP | Space) -> tuple[LabelKnowledge, tuple[str, ...]]:
        """The user's partial knowledge as state indices, and the named propositions (first)."""
        names: list[str] = []
        fixed: dict[int, int] = {}
        for state, prop in self.known.items():
            s = _state(mdp, state, "known label")
            if prop not in names:
                names.append(str(prop))
            fixed[s] = names.index(str(prop))
        groups = tuple(tuple(_state(mdp, s, "shared label") for s in g) for g in self.shared)
        parent = list(range(mdp.n_states))  # contradictions: two named labels in one shared group

        def find(a):
            while parent[a] != a:
                parent[a] = parent[parent[a]]
                a = parent[a]
            return a

        for g in groups:
            for a, b in itertools.pairwise(g):
                parent[find(a)] = find(b)
        label_of_root: dict[int, tuple[int, int]] = {}
        for s, p in fixed.items():
            r = find(s)
            if r in label_of_root and label_of_root[r][1] != p:
                other = label_of_root[r][0]
                raise RmtkError(
                    f"contradicting partial labels: states {state_names(mdp)[other]!r} and "
                    f"{state_names(mdp)[s]!r} "
                    f"share a label but are known as {names[label_of_root[r][1]]!r} and {names[p]!r}"
                )
            label_of_root[r] = (s, p)
        if self.props is not None and len(names) > self.props:
            raise RmtkError(
                f"the known labels name {len(names)} propositions ({', '.join(names)}), more than props={self.props}"
            )
        return LabelKnowledge(fixed, groups, len(names)), tuple(names)

    def fit_labels(self, learner, target) -> LabelLearnResult:
        """What :meth:`Learner.fit` runs with this encoder."""
        return fit_labels(learner, self, target)


def state_names(mdp) -> tuple[str, ...]:
    """The states' names (a Space of state histories names them by its propositions)."""
    return mdp.states if isinstance(mdp, LabeledMDP) else mdp.propositions


def _state(mdp, name, what: str) -> int:
    if isinstance(name, (int, np.integer)) and not isinstance(name, bool):
        if 0 <= name < mdp.n_states:
            return int(name)
    elif name in state_names(mdp):
        return state_names(mdp).index(name)
    raise RmtkError(f"{what}: {name!r} is not a state of mdp {mdp.name!r}")


@attrs.frozen
class LabelVerdict:
    """The verdict of one (labeling, machine) pair against the truth: ``consistent`` (policy-
    equivalent at every depth, with a witness otherwise) and ``equal`` (the truth up to
    renaming of nodes and propositions; ``False`` when the sizes differ); ``merges_truth``: every
    learned proposition is a union of true ones (the labels differ from the truth's only by
    merging propositions the expert does not tell apart)."""

    consistent: bool
    equal: bool
    witness: tuple | None = None
    merges_truth: bool = False


@attrs.frozen
class SurvivorSummary:
    """What the listed pairs have in common, for when they are too many to read.

    Attributes:
        found: pairs listed.
        capped: the enumeration stopped before the end (``max_solutions`` or a time limit):
            there are at least ``found`` survivors.
        cap: the ``max_solutions`` in force (``None``: none).
        fixed: ``{state: proposition}`` of the states that move the machine by the same column
            δ(·, L(s)) in every listed pair (nodes in canonical BFS numbering), with their
            label in the first pair.
        varies: the other states no history misses.
        truth_survives: as in :class:`LabelLearnResult`.
    """

    found: int
    capped: bool
    cap: int | None
    fixed: dict[str, str]
    varies: tuple[str, ...]
    truth_survives: bool | None = None

    @property
    def count(self) -> str:
        """The number of survivors, ``"≥N"`` when the enumeration was capped."""
        return f"≥{self.found}" if self.capped else str(self.found)

    def lines(self) -> list[str]:
        """The summary as text lines."""
        why = f"enumeration capped at {self.cap} pairs" if self.cap is not None else "enumeration stopped early"
        out = [f"survivors: {self.count}" + (f" ({why})" if self.capped else "")]
        out.append(
            f"states with the same label in every listed pair: {len(self.fixed)}; varying: {len(self.varies)}"
            + (f" ({', '.join(self.varies[:20])}{', …' if len(self.varies) > 20 else ''})" if self.varies else "")
        )
        if self.truth_survives is not None:
            out.append(f"truth survives: {'yes' if self.truth_survives else 'no'}")
        return out


@attrs.frozen
class LabelLearnResult:
    """What :meth:`Learner.fit` found with a :class:`LabelingEncoder`.

    Attributes:
        search: the search (sizes tried, the ones ruled out, counterexamples, solutions).
        mdp: the labeled MDP learned on (its labels were not used), or the
            :class:`~rmtk.space.Space` of state histories.
        propositions: names of the learned propositions (the user's named ones first).
        verdicts: per solution, against the truth (when the target is a task).
        truth_size: the truth's (nodes, propositions) on the states that matter.
        truth_survives: whether the truth is among the survivors: it has the smallest size
            found and passes every check of the data (every negative example mined, or the
            exact expert); ``None`` without a truth. Decided directly, so it holds even when
            the survivors are too many to enumerate (``max_solutions``).
        timings: seconds per stage.
    """

    search: LabelSearchResult
    mdp: LabeledMDP | Space
    propositions: tuple[str, ...]
    verdicts: tuple[LabelVerdict, ...] | None = None
    truth_size: tuple[int, int] | None = None
    truth_survives: bool | None = None
    timings: dict = attrs.field(factory=dict)

    @property
    def solutions(self) -> tuple[LabelSolution, ...]:
        return self.search.solutions

    @property
    def n_nodes(self):
        return self.search.n_nodes

    @property
    def n_props(self):
        return self.search.n_props

    def labeling(self, i: int) -> dict[str, str | None]:
        """``{state: learned proposition}`` of solution ``i`` (``None``: a state no history reaches)."""
        lab = self.solutions[i].labels
        return {s: (self.propositions[p] if p >= 0 else None) for s, p in zip(state_names(self.mdp), lab)}

    def free(self, i: int) -> list[tuple[str, tuple[str, ...]]]:
        """States of solution ``i`` whose label alone could change, with the propositions it could take."""
        return [(state_names(self.mdp)[s], tuple(self.propositions[p] for p in ps)) for s, ps in self.solutions[i].free]

    def machine(self, i: int) -> RewardMachine:
        """Solution ``i``'s machine over the learned propositions (free transitions loop)."""
        s = self.solutions[i]
        return RewardMachine(
            nodes=[f"u{j}" for j in range(s.n_nodes)],
            alphabet=self.propositions,
            delta_u=s.delta_u,
            delta_r=np.zeros(s.delta_u.shape),
            initial=0,
            name="learned" if len(self.solutions) == 1 else f"learned_{i + 1}",
        )

    def relabeled_mdp(self, i: int) -> LabeledMDP:
        """The MDP with solution ``i``'s learned labels (unreached states get the first proposition)."""
        if isinstance(self.mdp, Space):
            raise RmtkError(
                f"{self.mdp.name!r} is a space of state histories without a transition model: there is no "
                "MDP to relabel (labeling(i) gives the learned labels)"
            )
        lab = np.maximum(self.solutions[i].labels, 0)
        return attrs.evolve(self.mdp, labels=lab, propositions=self.propositions, source=None)

    def summary(self) -> SurvivorSummary:
        """The survivors summarised: how many, and which states' labels the listed pairs agree on."""
        names = state_names(self.mdp)
        sols = self.solutions
        reach = np.flatnonzero(sols[0].labels >= 0) if sols else np.zeros(0, np.int64)
        cols = np.stack([s.state_machine()[:, reach] for s in sols]) if sols else None
        same = (cols == cols[:1]).all(axis=(0, 1)) if cols is not None else np.zeros(0, bool)
        fixed = {names[s]: self.propositions[sols[0].labels[s]] for s in reach[same]}
        return SurvivorSummary(
            len(sols),
            bool(sols) and not self.search.complete,
            self.search.cap,
            fixed,
            tuple(names[s] for s in reach[~same]),
            self.truth_survives,
        )

    @property
    def truth_is_smaller_or_equal(self) -> bool | None:
        """Whether the truth is among the smallest sizes (``None`` without a truth)."""
        if self.truth_size is None or self.n_nodes is None:
            return None
        return self.truth_size <= (self.n_nodes, self.n_props)


def fit_labels(learner, encoder: LabelingEncoder, target) -> LabelLearnResult:
    """Learn (labeling, machine) pairs from ``target`` with the learner's PTP strategy over
    state histories (see the module docstring)."""
    if not isinstance(target, (Task, LabeledMDP, Space)):
        raise RmtkError(
            f"learning the labels needs a Task, a LabeledMDP or a Space of state histories, not {type(target).__name__}"
        )
    task = target if isinstance(target, Task) else None
    mdp = target.mdp if isinstance(target, Task) else target
    rec = Recorder(learner.progress)
    t0 = time.perf_counter()
    know, named = encoder.knowledge(mdp)
    ptp = learner.ptp if isinstance(learner.ptp, StateHistoryPTP) else StateHistoryPTP(learner.ptp)
    every_depth = ptp.every_depth_for(target)
    lazy = encoder.lazy or every_depth
    negatives = None
    trie = Trie.root(ptp.compress)
    oracle = ptp.oracle(target) if lazy else None  # the expert known as a task: no tree
    if oracle is not None:
        reach = mdp_reachable(mdp)
    elif every_depth:
        raise RmtkError("learning the labels at every depth needs the expert as a task")
    else:
        built = ptp.build(target, rec)
        miner = learner.miner or (ExactMiner() if built.counts is None else ConfidenceMiner())
        negatives = miner.mine(built)
        reach = reached_states(built.trie.letter)
        if lazy:
            oracle = TrieOracle(built.trie, negatives)
            negatives = None
        else:
            trie = built.trie
    problem = Problem(trie, mdp.n_states, negatives, oracle=oracle)
    max_nodes = learner.max_nodes or (task.max_nodes if task is not None else None) or 4
    if learner.nodes is not None:
        max_nodes = max(max_nodes, learner.nodes)
    res = _search(
        problem,
        mdp,
        reach,
        max_nodes,
        encoder,
        know,
        nodes=learner.nodes,
        max_solutions=learner.max_solutions,
        time_limit=learner.time_limit,
        progress=rec,
    )
    k = res.n_props or max([kk for _, kk, _ in res.tried] or [len(named)])
    names = named + tuple(f"p{j}" for j in range(len(named), max(k, len(named))))
    rec.stage("search", time.perf_counter() - t0)
    result = LabelLearnResult(res, mdp, names, timings=rec.timings)
    if task is not None:
        t = time.perf_counter()
        verdicts, size = _verdicts(task, ptp, res, reach)
        survives = _truth_survives(task, problem, reach, size, res)
        rec.stage("verdict", time.perf_counter() - t)
        result = attrs.evolve(result, verdicts=verdicts, truth_size=size, truth_survives=survives)
    result.timings["total"] = time.perf_counter() - t0
    return result


def _search(problem: Problem, mdp, reach, max_nodes: int, encoder: LabelingEncoder, know, **kw) -> LabelSearchResult:
    """:func:`label_search` with the encoder's settings."""
    return label_search(
        problem,
        n_states=mdp.n_states,
        reach=reach,
        max_nodes=max_nodes,
        min_nodes=min(problem.lower_bound(), max_nodes),
        props=encoder.props,
        max_props=encoder.max_props,
        knowledge=know,
        symmetry_breaking=encoder.symmetry_breaking,
        non_stuttering=encoder.non_stuttering,
        solver=encoder.solver,
        freedom=encoder.freedom,
        **kw,
    )


def truth_pair(task: Task, reach: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The truth as a (labeling, machine) pair on ``reach``: labels numbered densely (−1 off
    ``reach``), the machine over them, and its used transitions."""
    mdp, m = task.mdp, task.machine
    used_props = np.unique(mdp.labels[reach])
    dense = np.full(mdp.n_propositions, -1, np.int64)
    dense[used_props] = np.arange(len(used_props))
    labels = np.full(mdp.n_states, -1, np.int64)
    labels[reach] = dense[mdp.labels[reach]]
    du = m.delta_u[:, task.letter_of_proposition[used_props]]
    if m.initial != 0:  # node 0 first, as learned machines have it
        perm = [m.initial] + [u for u in range(m.n_nodes) if u != m.initial]
        pos = np.empty(m.n_nodes, np.int64)
        pos[perm] = np.arange(m.n_nodes)
        du = pos[du[perm]]
    smdp = state_mdp(mdp)
    D = state_delta(du, labels)
    used_s = exercised(sync_product(smdp, D, D), smdp, D)
    used = np.zeros(du.shape, bool)
    ii, ss = np.nonzero(used_s)
    used[ii, labels[ss]] = True
    return labels, du, used


def _truth_survives(task: Task, problem: Problem, reach, size, res: LabelSearchResult) -> bool:
    """The truth is a survivor: the smallest size found, and no check of the data fails on it."""
    checker: Oracle
    if problem.oracle is not None:
        checker = cast(Oracle, problem.oracle)
    else:
        assert problem.negatives is not None, "a tree-built problem carries its negatives"
        checker = TrieOracle(problem.trie, problem.negatives)
    t_lab, t_du, _ = truth_pair(task, reach)
    return size == (res.n_nodes, res.n_props) and not checker.check(state_delta(t_du, t_lab))


def _verdicts(task: Task, ptp: StateHistoryPTP, res: LabelSearchResult, reach) -> tuple[tuple, tuple[int, int]]:
    st = state_task(task)
    table = ptp.expert_classes(task)
    true_D = state_machine(task).delta_u
    t_lab, t_du, t_used = truth_pair(task, reach)
    t_key = canonical_pair(t_lab, t_du, t_used, reach)[0]
    out = []
    for s in res.solutions:
        v = consistency(st.mdp, true_D, table, s.state_machine(), true_initial=task.machine.initial)
        same = s.delta_u.shape == t_du.shape and canonical_pair(s.labels, s.delta_u, s.used, reach)[0] == t_key
        pairs = set(zip(t_lab[reach].tolist(), s.labels[reach].tolist()))
        merges = len({t for t, _ in pairs}) == len(pairs)  # each true proposition maps to one learned one
        out.append(LabelVerdict(v.consistent, bool(same), v.witness, merges))
    return tuple(out), (int(t_du.shape[0]), int(t_du.shape[1]))


def labels_from_active(active, target, encoder: LabelingEncoder | None = None, *, max_nodes: int | None = None):
    """(labeling, machine) pairs from what an active loop asked the expert on the state view
    (``ActiveLearner().fit(state_task(task), TaskExpert(state_task(task)))``): its questions and
    answers, kept as a prefix tree with their negatives (the last round's oracle), are checked
    lazily by :func:`~rmtk.labels.search.label_search`. ``target``: the task (verdicts against
    its truth) or the MDP. The loop's survivors over states are many machines, one letter per state;
    the labeling collapses them."""
    encoder = encoder or LabelingEncoder()
    oracle = getattr(active.result, "oracle", None)
    if not isinstance(oracle, TrieOracle):
        raise RmtkError("the active result holds no questions and answers to learn the labels from (no oracle)")
    if not is_state_view(active.result.mdp):
        raise RmtkError(
            "the active loop asked about label words: to learn the labels, run it on the state view "
            "(rmtk.labels.histories.state_task(task), TaskExpert(state_task(task)))"
        )
    task = target if isinstance(target, Task) else None
    mdp = task.mdp if task is not None else target
    know, named = encoder.knowledge(mdp)
    t0 = time.perf_counter()
    reach = reached_states(oracle.trie.letter)
    problem = Problem(Trie.root(oracle.trie.compressed), mdp.n_states, None, oracle=oracle)
    max_nodes = max_nodes or (task.max_nodes if task is not None else None) or 4
    res = _search(problem, mdp, reach, max_nodes, encoder, know)
    k = res.n_props or max([kk for _, kk, _ in res.tried] or [len(named)])
    names = named + tuple(f"p{j}" for j in range(len(named), max(k, len(named))))
    result = LabelLearnResult(res, mdp, names, timings={"search": time.perf_counter() - t0})
    if task is not None:
        verdicts, size = _verdicts(task, StateHistoryPTP(ExactPTP(None)), res, reach)
        survives = _truth_survives(task, problem, reach, size, res)
        result = attrs.evolve(result, verdicts=verdicts, truth_size=size, truth_survives=survives)
    return result
