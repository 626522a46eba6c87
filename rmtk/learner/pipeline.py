"""The :class:`Learner`: prefix tree policy → negative examples → SAT → machines → rewards,
with the exact equivalence verdict when the truth is known (paper Algorithm 1, section 5).

A learner composes four strategies, each an object with a small interface, so that a user
swaps one without touching the others (docs/design/05-strategies.md):

* a **PTP** (:class:`~rmtk.ptp.tree.PTP`) builds the prefix tree policy:
  :class:`~rmtk.ptp.exact.ExactPTP` (a task's exact policy) or
  :class:`~rmtk.ptp.empirical.EmpiricalPTP` (demonstrations);
* a **NegativeExampleMiner** (:class:`~rmtk.negatives.miners.NegativeExampleMiner`) turns it into
  negative examples: :class:`~rmtk.negatives.miners.ExactMiner` (policy classes) or
  :class:`~rmtk.negatives.miners.ConfidenceMiner` (the confidence bound of eq. 18-19);
* a **SatEncoder** (:class:`~rmtk.sat.encoders.SatEncoder`) encodes and searches:
  :class:`~rmtk.sat.encoders.SatEncoder` (hard negatives, smallest n) or
  :class:`~rmtk.sat.encoders.MaxSatEncoder` (soft negatives, every optimum);
* a **MaxEntIRL** (:class:`~rmtk.rewards.maxent.MaxEntIRL`) recovers the rewards (``None`` skips it).

What else a strategy can do (an oracle instead of a tree, every depth, the expert's policy
classes for verdicts, lazy negatives, ...) it declares as capabilities
(:mod:`rmtk.learner.capabilities`); :meth:`Learner.fit` takes its path from them.

The result is :class:`~rmtk.learner.result.LearnResult` (rmtk/learner/result.py, offered here too); the
survivors' summary and the phases' deadline bookkeeping live in :mod:`rmtk.learner.summary`, the
verdicts in :mod:`rmtk.machine.equivalence`.
"""

from __future__ import annotations

import time
import warnings
from typing import TYPE_CHECKING

import attrs
import numpy as np

from .._deprecated import LabelingEncoder
from ..errors import RmtkError
from ..limits import Deadline, SearchLimits, max_nodes_or_default, node_bound_note
from ..machine.equivalence import judge as verdicts_of  # the active learner's verdicts too
from ..machine.model import RewardMachine
from ..mdp.model import LabeledMDP
from ..mdp.space import Space
from ..negatives.miners import ConfidenceMiner, ExactMiner, NegativeExampleMiner, NegativePairs, PolicyClasses
from ..progress import Progress, Recorder
from ..ptp.exact import DistinctPerNode, ExactPTP, NodePolicyTable, SoftOptimal
from ..ptp.tree import PTP, PrefixTree, PrefixTreePolicy, PTPCapabilities, Trie
from ..rewards.maxent import IRLCapabilities, MaxEntIRL
from ..sat.encoders import EncoderCapabilities, SatEncoder
from ..sat.encoding import Problem
from ..sat.search import SearchResult
from ..task import Task
from ..traces.evidence import RewardEvidence, warm_noise_interval
from ..validators import BOUND_WHY, MAX_NODES, implements, node_count, optional_positive_int, optional_seconds
from .result import LearnResult
from .summary import Phases

if TYPE_CHECKING:
    from ..sat.lazy import Oracle

__all__ = [
    "Learner",
    "LearnResult",
    "DEMOS_MAX_SOLUTIONS",
    "ExactPTP",
    "SoftOptimal",
    "DistinctPerNode",
    "NodePolicyTable",
    "ExactMiner",
    "ConfidenceMiner",
]


def __getattr__(name):
    if name == "EmpiricalPTP":  # re-exported without importing the demonstrations machinery up front
        from ..ptp.empirical import EmpiricalPTP

        return EmpiricalPTP
    raise AttributeError(f"module 'rmtk.learner' has no attribute {name!r}")


#: Machines listed by default when learning from sampled data (an empirical prefix tree policy):
#: rare words leave transitions free, and the machines that differ only there number thousands
#: (docs/design/09-beyond-the-paper.md); the verdicts and rewards of the listed ones are computed, and
#: :meth:`LearnResult.summary` says how many survive beyond them. From an exact policy every
#: machine is listed unless ``max_solutions`` says otherwise.
DEMOS_MAX_SOLUTIONS = 10


@attrs.frozen
class Learner:
    """Learn the smallest reward machine consistent with an expert's behaviour.

    Args:
        ptp: where the prefix tree policy comes from (default :class:`ExactPTP`: the task's
            exact soft-optimal policy at the task's depth).
        miner: negative example miner (default: :class:`ExactMiner` for an exact policy,
            :class:`ConfidenceMiner` (α = 0.05) for one counted from demonstrations).
        encoder: SAT encoding and search (default :class:`~rmtk.sat.encoders.SatEncoder`).
        irl: reward recovery (default :class:`~rmtk.rewards.maxent.MaxEntIRL`); ``None`` skips it.
        max_nodes: bound u_max on the number of nodes (default: the task's, else 4).
        nodes: solve for exactly this many nodes instead of the smallest feasible number
            (the paper's experiments solve at n = u_max).
        max_solutions: list at most this many distinct machines (their verdicts and rewards
            are computed); default: every machine from an exact policy, :data:`DEMOS_MAX_SOLUTIONS`
            from sampled data. :meth:`LearnResult.summary` says whether more survive.
        time_limit: seconds for the whole run: every phase stops when it passes (as when SIGINT
            or SIGTERM requests a stop) and the result holds what was found, flagged
            (``LearnResult.stopped``).
        progress: a :class:`~rmtk.progress.Progress` (e.g. :class:`~rmtk.progress.StderrProgress`).
    """

    ptp: PTP | None = attrs.field(factory=ExactPTP, validator=implements("a ptp strategy", "build", optional=True))
    miner: NegativeExampleMiner | None = attrs.field(
        default=None, validator=implements("a miner strategy", "mine", optional=True)
    )
    encoder: SatEncoder = attrs.field(
        factory=SatEncoder, validator=implements("an encoder strategy", "encode", "search")
    )
    irl: MaxEntIRL | None = attrs.field(
        factory=MaxEntIRL, validator=implements("an irl strategy", "fit", optional=True)
    )
    max_nodes: int | None = attrs.field(default=None, validator=node_count)
    nodes: int | None = attrs.field(default=None, validator=node_count)
    max_solutions: int | None = attrs.field(default=None, validator=optional_positive_int)
    time_limit: float | None = attrs.field(default=None, validator=optional_seconds)
    progress: Progress = attrs.field(factory=Progress)
    rewards: RewardEvidence | None = attrs.field(
        default=None, validator=implements("a reward evidence strategy", "observe", "compressed", optional=True)
    )

    def __attrs_post_init__(self):
        if self.ptp is None and self.rewards is None:
            raise RmtkError(
                "nothing to learn from: give a ptp strategy (the expert's policy), reward evidence "
                "(rewards=TraceRewards(data)), or both"
            )
        if self.nodes is not None and self.max_nodes is not None and self.nodes > self.max_nodes:
            raise RmtkError(
                f"nodes={self.nodes} contradicts max_nodes={self.max_nodes}: the machine would have more "
                "nodes than the bound allows (give one of them, or nodes <= max_nodes)"
            )
        if self.ptp is not None:
            compress = PTPCapabilities.of(self.ptp).compress
        else:  # rewards alone: words as the encoder asks, unless counted already
            assert self.rewards is not None, "checked above"
            compress = bool(self.rewards.compressed())
        if compress and not EncoderCapabilities.of(self.encoder).non_stuttering:
            raise RmtkError(
                "compressed prefixes assume a non-stuttering machine: build the prefix tree with "
                "compress=False to learn without the non-stuttering constraint"
            )

    def fit(self, target: Task | LabeledMDP | Space) -> LearnResult:
        """Learn from ``target``: a :class:`Task` (the truth is known: verdicts, false positive
        rate), a bare :class:`LabeledMDP` or a :class:`~rmtk.mdp.space.Space` (an environment
        without a transition model: no rewards), with a PTP strategy that needs no truth,
        such as :class:`EmpiricalPTP`.

        The path is read from the strategies' capabilities (:class:`~rmtk.ptp.tree.PTPCapabilities`,
        :class:`~rmtk.sat.encoders.EncoderCapabilities`): learning at every depth or a lazy encoder
        checks candidates with the PTP's oracle when it has one for ``target``, else with the
        built tree; verdicts need the PTP's ``expert_classes``.

        Every phase (tree, mining, search, listing, verdicts, rewards) keeps the run's deadline
        (``time_limit``, or a stop requested by SIGINT or SIGTERM, :mod:`rmtk.limits`): the
        result then holds what was found before it, and ``stopped`` says what was left undone."""
        if isinstance(self.encoder, LabelingEncoder):  # the previous version's labels (rmtk/_deprecated.py)
            return self.encoder.fit_labels(self, target)
        if not isinstance(target, (Task, LabeledMDP, Space)):
            raise RmtkError(
                f"fit needs a Task or a LabeledMDP (or a Space, for data without a transition model), "
                f"not {type(target).__name__}"
            )
        if self.ptp is None:  # rewards alone
            return self._fit_rewards(target)
        task = target if isinstance(target, Task) else None
        mdp = target.mdp if isinstance(target, Task) else target
        source, encoder = PTPCapabilities.of(self.ptp), EncoderCapabilities.of(self.encoder)
        rec = Recorder(self.progress)
        t0 = time.perf_counter()
        deadline = Deadline.after(self.time_limit)
        phases = Phases(deadline)
        every_depth = bool(source.every_depth_for(target))
        lazy = every_depth or bool(encoder.lazy)
        ptp: PrefixTreePolicy | None = None
        negatives: PolicyClasses | NegativePairs | None = None
        oracle: Oracle | None = source.oracle(target) if lazy else None  # e.g. the expert known as a task: no tree
        if every_depth and oracle is None:
            raise RmtkError(
                "learning at every depth needs the expert as a task (its product policy), or a PTP "
                "strategy whose oracle checks candidates without a tree; got "
                + (f"the bare mdp {mdp.name!r}" if task is None else type(self.ptp).__name__)
            )
        max_nodes = self._max_nodes(task)
        if oracle is None:
            if not phases.starts("tree"):
                return self._unsearched(mdp, None, phases, rec, t0, ("mine", "search", "verdict", "rewards"))
            ptp, unfinished = source.build_within(target, rec, deadline)
            if unfinished:
                phases.cut("tree", unfinished)
            if ptp.trie.compressed and not encoder.non_stuttering:
                raise RmtkError(
                    f"{type(self.ptp).__name__} built compressed words, which assume a non-stuttering "
                    "machine: build uncompressed words (and say so: compress=False) to learn without "
                    "the non-stuttering constraint"
                )
            if not phases.starts("mine"):
                return self._unsearched(mdp, ptp, phases, rec, t0, ("search", "verdict", "rewards"))
            miner = self.miner or (ExactMiner() if ptp.counts is None else ConfidenceMiner())
            t = time.perf_counter()
            negatives = miner.mine(ptp)
            if isinstance(negatives, PolicyClasses):
                rec.stage("mine", time.perf_counter() - t, classes=negatives.n_classes)
            else:
                rec.stage("mine", time.perf_counter() - t, pairs=len(negatives))
            if lazy:
                from ..sat.lazy import TrieOracle  # the lazy search's modules, imported when it runs

                oracle = TrieOracle(ptp.trie, negatives, depth=ptp.tree.depth)
        traces = None
        if self.rewards is not None:
            if oracle is not None:
                raise RmtkError(
                    "reward traces are observed on a built prefix tree: learning at every depth or with "
                    "lazy negatives cannot take them (give a depth, and negatives='classes' or 'pairs')"
                )
            assert ptp is not None, "without an oracle the tree was built"
            traces = self.rewards.observe(mdp, ptp.trie, compress=ptp.trie.compressed)
        if oracle is None:
            assert ptp is not None, "without an oracle the tree was built"
            trie = ptp.trie if traces is None else traces.trie
            problem = Problem(trie, mdp.n_propositions, negatives, rewards=traces)
        else:
            compress = source.compress if ptp is None else ptp.trie.compressed
            problem = Problem(Trie.root(compress), mdp.n_propositions, oracle=oracle)
        listed = self.max_solutions
        if listed is None and ptp is not None and ptp.counts is not None:
            listed = DEMOS_MAX_SOLUTIONS  # sampled data: survivors the data cannot separate are many
        if not phases.starts("search"):
            return self._unsearched(mdp, ptp, phases, rec, t0, ("verdict", "rewards"))
        limits = SearchLimits(
            max_nodes=max(max_nodes, self.nodes or 0),
            min_nodes=min(problem.lower_bound(), max_nodes),
            nodes=self.nodes,
            max_solutions=listed,
            deadline=deadline,
            progress=rec,
        )
        res = self.encoder.search(problem, limits)
        if res.n_nodes is None and res.complete and self.nodes is None and res.tried:  # the bound may be why
            res = attrs.evolve(res, message=res.message + node_bound_note(max_nodes, self.max_nodes, task))
        if traces is not None:  # rewards that contradict each other are said so, by word and step
            from ..traces.unexplained import none_paid  # imported where reward traces are learned from

            res = none_paid(res, traces, limits, self.rewards, mdp, policy=True)
        if oracle is not None and res.lazy is None:
            raise RmtkError(
                f"encoder {type(self.encoder).__name__} does not search lazily (it ignored the oracle "
                "of lazy or every-depth learning); use SatEncoder"
            )
        phases.after_search(res, listed)
        if ptp is not None:
            tree = ptp.tree
        else:
            assert oracle is not None, "without a tree the oracle was searched with"
            tree, negatives = _counterexample_tree(res.lazy, oracle.depth)
        timings = rec.timings
        timings.update(encode=res.time_encode, solve=res.time_solve, enumerate=res.time_enumerate)
        result = LearnResult(
            machines=machines_of(mdp, res),
            solutions=res.solutions,
            search=res,
            classes=negatives if isinstance(negatives, PolicyClasses) else None,
            tree=tree,
            mdp=mdp,
            verdicts=None,
            timings=timings,
            negatives=negatives if isinstance(negatives, NegativePairs) else None,
            ptp=ptp,
            oracle=oracle,
            max_solutions=listed,
        )
        if task is not None and task.machine is not None:  # a truth to judge against
            result = self._judge(task, result, source, encoder, rec, phases)
        if traces is not None:  # the rewards are the observed ones: no IRL
            from ..traces.compare import with_rewards  # reward traces' modules, imported when learning from them

            result = with_rewards(result, traces)
        elif self.irl is not None and result.machines:
            if isinstance(mdp, Space):
                rec.note(f"no rewards: {mdp.name!r} has no transition model (pass irl=None to say so)")
            elif phases.starts("rewards"):
                gamma = task.discount if task is not None else mdp.gamma
                lam = task.lam if task is not None else 1.0
                policy = ptp if ptp is not None else oracle
                assert policy is not None, "the tree, or the oracle of a tree-free search"
                fits, unfinished = IRLCapabilities.of(self.irl).fit_within(
                    mdp, result.machines, policy, gamma=gamma, lam=lam, progress=rec, deadline=deadline
                )
                if unfinished:
                    phases.cut("rewards", unfinished)
                machines = tuple(f.machine for f in fits) + result.machines[len(fits) :]
                result = attrs.evolve(result, machines=machines, reward_fits=tuple(fits))
        timings["total"] = time.perf_counter() - t0
        return attrs.evolve(result, stopped=phases.stop())

    def _fit_rewards(self, target) -> LearnResult:
        """:meth:`Learner.fit` without a policy: the smallest machines that pay what the traces
        observed (``rewards``), every survivor listed (up to ``max_solutions``, by default
        :data:`DEMOS_MAX_SOLUTIONS`: sampled data), their rewards the observed ones.
        The truth, when ``target`` is a task with a machine, is attached, and each machine's
        verdict says whether it pays what the truth pays (:mod:`rmtk.traces.verdicts`; no policy
        verdicts: no expert)."""
        assert self.rewards is not None, "rewards alone need reward evidence"
        task = target if isinstance(target, Task) else None
        mdp = target.mdp if isinstance(target, Task) else target
        encoder = EncoderCapabilities.of(self.encoder)
        warm_noise_interval()  # every run ends with the noise interval, a stopped one too
        rec = Recorder(self.progress)
        t0 = time.perf_counter()
        deadline = Deadline.after(self.time_limit)
        phases = Phases(deadline)
        phases.starts("tree")
        traces = self.rewards.observe(mdp, None, compress=encoder.non_stuttering)
        rec.stage("tree", time.perf_counter() - t0, words=traces.trie.n_nodes)
        max_nodes = self._max_nodes(task)
        listed = self.max_solutions or DEMOS_MAX_SOLUTIONS
        problem = Problem(traces.trie, mdp.n_propositions, rewards=traces)
        limits = SearchLimits(
            max_nodes=max(max_nodes, self.nodes or 0),
            min_nodes=1,
            nodes=self.nodes,
            max_solutions=listed,
            deadline=deadline,
            progress=rec,
        )
        phases.starts("search")
        from ..traces.unexplained import none_paid
        from ..traces.verdicts import judge_rewards

        res = none_paid(self.encoder.search(problem, limits), traces, limits, self.rewards, mdp, policy=False)
        phases.after_search(res, listed)
        timings = rec.timings
        timings.update(encode=res.time_encode, solve=res.time_solve, enumerate=res.time_enumerate)
        empty = np.empty(0, np.int64)
        result = LearnResult(
            machines=machines_of(mdp, res),
            solutions=res.solutions,
            search=res,
            classes=None,
            tree=PrefixTree(traces.trie, empty, empty, 0),
            mdp=mdp,
            verdicts=None,
            timings=timings,
            truth=task.machine if task is not None else None,
            max_solutions=listed,
        )
        from ..traces.compare import with_rewards

        result = with_rewards(result, traces)
        if task is not None and task.machine is not None and result.machines and phases.starts("verdict"):
            t = time.perf_counter()
            result = judge_rewards(task, result)  # does each pay what the true machine pays?
            rec.stage("verdict", time.perf_counter() - t)
        timings["total"] = time.perf_counter() - t0
        return attrs.evolve(result, stopped=phases.stop())

    def _max_nodes(self, task: Task | None) -> int:
        """The bound on the nodes: the learner's, else the task's suggestion, else the default."""
        max_nodes = max_nodes_or_default(self.max_nodes, task.max_nodes if task is not None else None)
        if self.nodes is not None:  # exactly this many: a larger suggestion of the task does not apply
            return self.nodes if max_nodes > MAX_NODES else max(max_nodes, self.nodes)
        if max_nodes > MAX_NODES:
            assert task is not None, "the learner's own max_nodes is validated: only a task's suggestion exceeds it"
            raise RmtkError(
                f"task {task.name!r} suggests max_nodes {max_nodes}, above rmtk's bound of {MAX_NODES} "
                f"nodes: {BOUND_WHY}; pass a smaller max_nodes"
            )
        return max_nodes

    def _unsearched(
        self, mdp, ptp: PrefixTreePolicy | None, phases: Phases, rec: Recorder, t0: float, rest: tuple[str, ...]
    ) -> LearnResult:
        """The result of a run whose deadline passed before its search: no machine, flagged
        (``rest``: the phases not run)."""
        phases.skip_rest(*rest)
        stop = phases.stop()
        res = SearchResult(None, (), False, (), 0, 0, 0.0, 0.0, 0.0, "not searched (the run was stopped)")
        tree = ptp.tree if ptp is not None else PrefixTree(Trie.root(), np.empty(0), np.empty(0), 0)
        rec.timings["total"] = time.perf_counter() - t0
        return LearnResult(
            machines=(),
            solutions=(),
            search=res,
            classes=None,
            tree=tree,
            mdp=mdp,
            verdicts=None,
            timings=rec.timings,
            ptp=ptp,
            max_solutions=self.max_solutions,
            stopped=stop,
        )

    def _judge(self, task: Task, result: LearnResult, source, encoder, rec: Recorder, phases: Phases) -> LearnResult:
        """The result with the truth, and, when the PTP strategy gives the expert's policy
        classes, the verdicts and false positive rate; without them, a warning and no verdicts."""
        truth = task.require_machine("verdicts against the truth")
        result = attrs.evolve(result, truth=truth)
        if not phases.starts("verdict"):  # stopped: the expert's classes (from demonstrations a soft
            return result  # Bellman solve, half a second) would serve verdicts not judged
        t = time.perf_counter()
        table = expert_class_table(
            task,
            source.expert_classes(task),
            f"{type(self.ptp).__name__}.expert_classes",
            f"the PTP strategy {type(self.ptp).__name__} does not say which expert its policy comes from (give it "
            "expert_classes(task), docs/design/05-strategies.md)",
            rec,
        )
        if table is None:
            return result
        fp = merges = None
        if result.negatives is not None and result.ptp is not None:
            trie_nodes = result.ptp.trie.run(truth.delta_u, truth.initial, task.letter_of_proposition)
            fp = result.negatives.false_positives(trie_nodes, table)
            pairs = result.negatives.pairs
            merges = int((trie_nodes[pairs[:, 0]] == trie_nodes[pairs[:, 1]]).sum()) if len(pairs) else 0
        result = attrs.evolve(result, false_positives=fp, truth_merges=merges, expert_classes=table)
        if not result.machines:
            rec.stage("verdict", time.perf_counter() - t)
            return attrs.evolve(result, verdicts=(), completion_consistent=())
        if not phases.starts("verdict"):
            return result
        verdicts, some = verdicts_of(
            task,
            table,
            result.machines,
            result.solutions,
            encoder.non_stuttering,
            deadline=phases.deadline,
            progress=rec,
        )
        if len(verdicts) < len(result.machines):
            phases.cut("verdict", f"verdicts for {len(verdicts)} of the {len(result.machines)} machines")
        elif any(c is None for c in some):
            phases.cut("verdict", "whether some filling of the free transitions is consistent is left undecided")
        rec.stage("verdict", time.perf_counter() - t)
        return attrs.evolve(result, verdicts=verdicts, completion_consistent=some)

    def fit_demonstrations(self, target: Task | LabeledMDP, demos, *, chunk: int = 250_000) -> LearnResult:
        """Convenience: :meth:`fit` with ``ptp=EmpiricalPTP(demos)`` (same compression as
        this learner's PTP; default miner :class:`ConfidenceMiner`)."""
        from ..ptp.empirical import EmpiricalPTP

        ptp = EmpiricalPTP(demos, compress=PTPCapabilities.of(self.ptp).compress, chunk=chunk)
        return attrs.evolve(self, ptp=ptp).fit(target)


def expert_class_table(task: Task, table, given_by: str, unknown: str, progress: Progress) -> np.ndarray | None:
    """The expert's ``(states, true nodes)`` policy classes ``table`` (given by ``given_by``) that
    verdicts against ``task`` compare with, checked; ``None`` (no verdicts) when there is none,
    with a note and a warning saying why (``unknown``): verdicts are never guessed."""
    if table is None:
        message = f"no verdicts: {unknown}; verdicts from another expert's policy could be wrong"
        progress.note(message)
        warnings.warn(message, UserWarning, stacklevel=4)
        return None
    table = np.asarray(table)
    want = (task.mdp.n_states, task.require_machine("verdicts against the truth").n_nodes)
    if table.shape != want or not np.issubdtype(table.dtype, np.integer):
        raise RmtkError(
            f"{given_by} gave an array of shape {table.shape} and type {table.dtype}; the task needs whole-number "
            f"policy classes of shape {want} (states, nodes of the true machine)"
        )
    return table


def machines_of(mdp: LabeledMDP | Space, res: SearchResult) -> tuple[RewardMachine, ...]:
    """The machines of a search's solutions: canonical node names ``u0 u1 ...``, the MDP's
    propositions as alphabet, rewards 0 (unconstrained transitions are self-loops)."""
    names = {n: tuple(f"u{i}" for i in range(n)) for n in {len(s.delta_u) for s in res.solutions}}
    return tuple(
        RewardMachine(
            nodes=names[len(s.delta_u)],
            alphabet=mdp.propositions,
            delta_u=s.delta_u,
            delta_r=np.zeros(s.delta_u.shape),
            initial=0,
            name="learned" if len(res.solutions) == 1 else f"learned_{i + 1}",
        )
        for i, s in enumerate(res.solutions)
    )


def _counterexample_tree(stats, depth) -> tuple[PrefixTree, PolicyClasses]:
    """The words and (word, state, class) entries a tree-free lazy search used, as a partial
    prefix tree and its policy classes."""
    order = np.lexsort((stats.pair_state, stats.pair_node))
    node, state, cls = stats.pair_node[order], stats.pair_state[order], stats.pair_class[order]
    kept, dense = np.unique(cls, return_inverse=True)
    class_state = np.zeros(len(kept), np.int64)
    class_state[dense] = state
    tree = PrefixTree(stats.trie, node, state, 0 if depth is None else depth)
    return tree, PolicyClasses(dense, class_state, node)
