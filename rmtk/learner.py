"""The :class:`Learner`: prefix tree policy → negative examples → SAT → machines, with the
exact equivalence verdict when the truth is known (paper Algorithm 1).

Each stage is a small strategy object that can be swapped without touching the others:

* a policy *source* gives the action distribution of every (word, state) pair:
  :class:`SoftOptimal` (the task's MaxEnt policy), :class:`DistinctPerNode` (every node its
  own policy, the convention behind the paper's counts) or :class:`NodePolicyTable` (any
  per-node stochastic policy: optimality is not needed, paper appendix B);
* a *miner* turns it into policy classes (:class:`ExactMiner`);
* the encoder options (:class:`~rmtk.solve.EncodingOptions`) and the search settings decide
  the SAT problem and how it is solved.
"""
from __future__ import annotations

import time
from typing import Protocol

import attrs
import numpy as np

from .equivalence import Verdict, consistency, policy_class_table
from .errors import ModelError, RmtkError
from .machine import RewardMachine, isomorphic
from .mdp import LabeledMDP
from .negatives import POLICY_TOL, ConfidenceMiner, NegativePairs, PolicyClasses, policy_classes
from .ptp import PrefixTree, PrefixTreePolicy, build_prefix_tree
from .solve import Encoder, EncodingOptions, Progress, SearchResult, Solution, maxsat_search, search
from .task import Task


# ---------------------------------------------------------------------- policy sources
class PolicySource(Protocol):
    """Gives the prefix tree policy of a task on a prefix tree, and the true policy classes
    of its (state, node) pairs for the equivalence verdict."""

    name: str

    def prefix_tree_policy(self, task: Task, tree: PrefixTree) -> PrefixTreePolicy: ...

    def class_table(self, task: Task) -> np.ndarray: ...


def _true_nodes(task: Task, tree: PrefixTree) -> np.ndarray:
    nodes = tree.trie.run(task.machine.delta_u, task.machine.initial, task.letter_of_proposition)
    return nodes[tree.pair_node]


@attrs.define
class SoftOptimal:
    """The task's soft-optimal (MaxEnt) product policy (γ and λ of the task)."""

    tol: float = POLICY_TOL
    name: str = "soft-optimal"
    _cache: dict = attrs.field(factory=dict, repr=False)

    def policy(self, task: Task) -> np.ndarray:
        """``(S, n, A)`` product policy (cached per task)."""
        from .planning import task_policy

        key = id(task)
        if key not in self._cache:
            self._cache = {key: (task, task_policy(task).pi)}
        return self._cache[key][1]

    def prefix_tree_policy(self, task: Task, tree: PrefixTree) -> PrefixTreePolicy:
        true = _true_nodes(task, tree)
        return PrefixTreePolicy(tree, self.policy(task)[tree.pair_state, true], true_nodes=true)

    def class_table(self, task: Task) -> np.ndarray:
        return policy_class_table(self.policy(task), self.tol)


@attrs.define
class DistinctPerNode(SoftOptimal):
    """Every node has its own policy at every state, except nodes whose soft-optimal
    policies agree at every state (stack-avoid's u2 and u3). Reproduces the paper's counts."""

    name: str = "distinct"

    def node_classes(self, task: Task) -> np.ndarray:
        pi = self.policy(task)
        same = np.abs(pi[:, :, None, :] - pi[:, None, :, :]).max(axis=(0, 3)) <= self.tol
        return np.argmax(same, axis=1)  # first node with the same policy everywhere

    def prefix_tree_policy(self, task: Task, tree: PrefixTree) -> PrefixTreePolicy:
        ptp = super().prefix_tree_policy(task, tree)
        return attrs.evolve(ptp, classes=self.node_classes(task)[ptp.true_nodes])

    def class_table(self, task: Task) -> np.ndarray:
        return np.broadcast_to(self.node_classes(task), (task.mdp.n_states, task.machine.n_nodes)).copy()


@attrs.define
class NodePolicyTable:
    """A given stochastic policy per node of the task's machine: ``table[u, s, a]``."""

    table: np.ndarray
    tol: float = POLICY_TOL
    name: str = "table"

    def __attrs_post_init__(self):
        self.table = np.asarray(self.table, dtype=float)
        if self.table.ndim != 3:
            raise ModelError(f"a node policy table has shape (nodes, states, actions), got {self.table.shape}")
        if np.any(self.table < 0) or not np.allclose(self.table.sum(axis=2), 1.0, atol=1e-9):
            raise ModelError("every row of a node policy table must be a probability distribution")

    def _check(self, task: Task) -> None:
        want = (task.machine.n_nodes, task.mdp.n_states, task.mdp.n_actions)
        if self.table.shape != want:
            raise ModelError(f"node policy table has shape {self.table.shape}, the task needs {want}")

    def prefix_tree_policy(self, task: Task, tree: PrefixTree) -> PrefixTreePolicy:
        self._check(task)
        true = _true_nodes(task, tree)
        return PrefixTreePolicy(tree, self.table[true, tree.pair_state], true_nodes=true)

    def class_table(self, task: Task) -> np.ndarray:
        self._check(task)
        return policy_class_table(self.table.transpose(1, 0, 2), self.tol)


SOURCES = {"soft-optimal": SoftOptimal, "distinct": DistinctPerNode}


@attrs.frozen
class ExactMiner:
    """Policy classes per state, rows compared with a tolerance (exact setting)."""

    tol: float = POLICY_TOL

    def mine(self, ptp: PrefixTreePolicy) -> PolicyClasses:
        return policy_classes(ptp, tol=self.tol)


# ---------------------------------------------------------------------- result
@attrs.frozen
class LearnResult:
    """What :meth:`Learner.fit` found.

    Attributes:
        machines: the learned machine models, one per solution up to renaming, canonical
            node names ``u0 u1 ...``, alphabet = the MDP's propositions, rewards 0
            (unconstrained transitions are self-loops; see ``solutions``).
        solutions: the SAT solutions (transitions, which are determined, raw counts).
        search: the search outcome (sizes tried, clauses, solver timings, messages).
        classes: the policy classes (negative examples) used.
        tree: the prefix tree.
        verdicts: exact consistency of each machine with the true policy (when known), its
            free transitions written as self-loops.
        completion_consistent: whether some filling of each machine's free transitions is
            consistent at every depth (the data cannot tell the fillings apart).
        reward_fits: per machine, the :class:`~rmtk.irl.RewardFit` of its rewards (MaxEnt
            linear characterisation on the learned product policy); ``machines`` carry them.
        timings: seconds per stage: tree, policy, mine, encode, solve, enumerate, verdict, total.
    """

    machines: tuple[RewardMachine, ...]
    solutions: tuple[Solution, ...]
    search: SearchResult
    classes: PolicyClasses | None
    tree: PrefixTree
    mdp: LabeledMDP
    verdicts: tuple[Verdict, ...] | None
    timings: dict
    truth: RewardMachine | None = None
    negatives: NegativePairs | None = None
    false_positives: np.ndarray | None = None
    completion_consistent: tuple[bool, ...] | None = None
    ptp: PrefixTreePolicy | None = attrs.field(default=None, repr=False)
    reward_fits: tuple | None = None

    @property
    def n_nodes(self) -> int | None:
        return self.search.n_nodes

    @property
    def raw_count(self) -> int:
        """Satisfying assignments with node 0 fixed (the paper's solution count)."""
        return self.search.raw_count

    @property
    def distinct_count(self) -> int:
        return len(self.machines)

    def isomorphic_to_truth(self) -> tuple[bool, ...] | None:
        if self.truth is None:
            return None
        truth = self.truth.with_rewards(np.zeros_like(self.truth.delta_r))
        return tuple(isomorphic(m.with_alphabet_order(truth.alphabet), truth, rewards=False)
                     if set(m.alphabet) == set(truth.alphabet) else False for m in self.machines)

    def unconstrained(self, i: int) -> list[tuple[str, str]]:
        """``(node, letter)`` transitions of machine ``i`` that the data leave free."""
        m = self.machines[i]
        return [(m.nodes[u], m.alphabet[k]) for u, k in self.solutions[i].unconstrained]

    @property
    def false_positive_rate(self) -> float | None:
        """Share of mined negative examples that are wrong under the true machine."""
        if self.false_positives is None or not len(self.false_positives):
            return None
        return float(self.false_positives.mean())

    def dropped(self, i: int) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
        """The negative examples (as word pairs) that MaxSAT solution ``i`` violates."""
        trie, props = self.tree.trie, self.mdp.propositions
        word = lambda p: tuple(props[k] for k in trie.word(int(p)))  # noqa: E731
        return [(word(self.negatives.pairs[k, 0]), word(self.negatives.pairs[k, 1])) for k in self.solutions[i].dropped]

    def stats(self) -> dict:
        out = {"trie_nodes": self.tree.trie.n_nodes, "pairs": self.tree.n_pairs}
        if self.classes is not None:
            out.update(classes=self.classes.n_classes, per_state_pairs=self.classes.per_state_pairs(),
                       lower_bound=self.classes.lower_bound())
        if self.negatives is not None:
            out.update(negatives=len(self.negatives), cost=self.search.cost)
            if self.false_positives is not None:
                out.update(false_positives=int(self.false_positives.sum()))
        out.update(clauses=self.search.clauses, variables=self.search.variables)
        return out


# ---------------------------------------------------------------------- learner
@attrs.define
class Learner:
    """Learn the smallest reward machine consistent with a prefix tree policy.

    Args:
        depth: prefix tree depth l (default: the task's ``depth``, else 6).
        max_nodes: bound u_max on the number of nodes (default: the task's, else 4).
        nodes: solve for exactly this many nodes instead of the smallest feasible number
            (the paper's experiments solve at n = u_max).
        source: policy source (:class:`SoftOptimal`, :class:`DistinctPerNode`,
            :class:`NodePolicyTable`) or its name ("soft-optimal", "distinct").
        miner: negative example miner (default :class:`ExactMiner`).
        compress: key the trie by non-stuttering compressed words (needs non_stuttering).
        encoding: :class:`~rmtk.solve.EncodingOptions` (non-stuttering, symmetry breaking,
            class-grouped or pairwise negatives, solver name).
        max_solutions: stop after this many distinct machines.
        time_limit: seconds for the whole SAT search; the best found so far is returned.
        progress: a :class:`~rmtk.solve.Progress` (e.g. :class:`~rmtk.solve.StderrProgress`).
    """

    depth: int | None = None
    max_nodes: int | None = None
    nodes: int | None = None
    source: object = attrs.field(factory=SoftOptimal)
    miner: ExactMiner = attrs.field(factory=ExactMiner)
    compress: bool = True
    encoding: EncodingOptions = attrs.field(factory=EncodingOptions)
    max_solutions: int | None = None
    time_limit: float | None = None
    progress: Progress = attrs.field(factory=Progress)
    alpha: float = 0.05
    maxsat: bool = False
    weights: str = "unit"
    rewards: bool = True
    reward_limit: int = 10
    clip: float | None = None

    def __attrs_post_init__(self):
        if isinstance(self.source, str):
            if self.source not in SOURCES:
                raise RmtkError(f"unknown policy source {self.source!r}; choose one of {', '.join(SOURCES)}")
            self.source = SOURCES[self.source]()
        if self.compress and not self.encoding.non_stuttering:
            raise RmtkError("compressed prefixes assume a non-stuttering machine: "
                            "turn compression off to learn without the non-stuttering constraint")
        if self.weights not in ("unit", "evidence"):
            raise RmtkError(f"weights must be 'unit' or 'evidence', not {self.weights!r}")
        if not 0 < self.alpha < 1:
            raise RmtkError(f"alpha must lie in (0, 1), got {self.alpha}")
        for name in ("depth", "max_nodes", "nodes", "max_solutions"):
            v = getattr(self, name)
            if v is not None and v < 1:
                raise RmtkError(f"{name} must be at least 1, got {v}")

    def fit(self, task: Task) -> LearnResult:
        """Learn from the task's exact prefix tree policy; the verdict compares with its machine."""
        depth = self.depth or task.depth or 6
        max_nodes = self.max_nodes or task.max_nodes or 4
        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        tree = build_prefix_tree(task.mdp, depth, compress=self.compress)
        timings["tree"] = time.perf_counter() - t0
        self.progress.stage("prefix tree", timings["tree"], words=tree.trie.n_nodes - 1, pairs=tree.n_pairs)
        t = time.perf_counter()
        ptp = self.source.prefix_tree_policy(task, tree)
        timings["policy"] = time.perf_counter() - t
        result = self._learn(task.mdp, ptp, max_nodes, timings, t0)
        t = time.perf_counter()
        verdicts, some = self._verdicts(task, result.machines, result.solutions)
        timings["verdict"] = time.perf_counter() - t
        result = attrs.evolve(result, verdicts=verdicts, truth=task.machine, completion_consistent=some)
        result = self._with_rewards(result, task.discount, task.lam, timings)
        timings["total"] = time.perf_counter() - t0
        return result

    def _with_rewards(self, result: "LearnResult", gamma: float, lam: float, timings: dict) -> "LearnResult":
        """Recover δ_r for the first ``reward_limit`` machines from the learned product policy."""
        if not self.rewards or not result.machines:
            return result
        from .irl import reward_fit, sparsest

        t = time.perf_counter()
        fits = tuple(
            sparsest(reward_fit(result.mdp, m, result.ptp, gamma=gamma, lam=lam, clip=self.clip))
            for m in result.machines[: self.reward_limit]
        )
        timings["rewards"] = time.perf_counter() - t
        machines = tuple(f.machine for f in fits) + result.machines[len(fits):]
        return attrs.evolve(result, machines=machines, reward_fits=fits)

    def _verdicts(self, task: Task, machines, solutions) -> tuple[tuple[Verdict, ...], tuple[bool, ...]]:
        from .solve import completions

        true_du = task.machine.delta_u[:, task.letter_of_proposition]
        table = self.source.class_table(task)

        def check(du):
            return consistency(task.mdp, true_du, table, du, true_initial=task.machine.initial)

        verdicts = tuple(check(m.delta_u) for m in machines)
        some = tuple(
            v.consistent or any(check(du).consistent
                                for du in completions(sol, self.encoding.non_stuttering, limit=256))
            for v, sol in zip(verdicts, solutions)
        )
        return verdicts, some

    def fit_demonstrations(self, target, demos, *, chunk: int = 250_000) -> LearnResult:
        """Learn from demonstrations (paper section 5): empirical prefix tree policy,
        confidence-bound negatives (``alpha``), then SAT (smallest n) or, with ``maxsat``,
        weighted MaxSAT at n = ``nodes`` or ``max_nodes``.

        ``target`` is a :class:`Task` (the truth is then used for the false positive rate and
        the verdicts) or a bare :class:`LabeledMDP`.
        """
        from .empirical import empirical_policy

        task = target if isinstance(target, Task) else None
        mdp = task.mdp if task is not None else target
        max_nodes = self.max_nodes or (task.max_nodes if task is not None else None) or 4
        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        ptp = empirical_policy(mdp, demos, compress=self.compress, depth=self.depth, chunk=chunk,
                               progress=lambda done: self.progress.count(done, demos.n_trajectories))
        timings["count"] = time.perf_counter() - t0
        self.progress.stage("empirical prefix tree", timings["count"], words=ptp.trie.n_nodes - 1, pairs=ptp.n_pairs)
        t = time.perf_counter()
        negatives = ConfidenceMiner(alpha=self.alpha).mine(ptp)
        timings["mine"] = time.perf_counter() - t
        self.progress.stage("negative examples", timings["mine"], pairs=len(negatives))
        options = attrs.evolve(self.encoding, negatives="pairs")
        if self.maxsat:
            encoder = Encoder(ptp.trie, mdp.n_propositions, None, None, options)
            res = maxsat_search(encoder, negatives.pairs, negatives.weights(self.weights),
                                nodes=self.nodes or max_nodes, max_solutions=self.max_solutions,
                                time_limit=self.time_limit, progress=self.progress)
        else:
            encoder = Encoder(ptp.trie, mdp.n_propositions, None, negatives.pairs, options)
            res = search(encoder, max_nodes=max(max_nodes, self.nodes or 0), exact_nodes=self.nodes,
                         max_solutions=self.max_solutions, time_limit=self.time_limit, progress=self.progress)
            if res.n_nodes is None and res.complete:
                res = attrs.evolve(res, message=res.message + " (the mined negative examples may contain false "
                                   "positives: try MaxSAT, --maxsat, or a smaller alpha)")
        timings.update(encode=res.time_encode, solve=res.time_solve, enumerate=res.time_enumerate)
        result = LearnResult(self._machines(mdp, res), res.solutions, res, None, ptp.tree, mdp, None, timings,
                             negatives=negatives, ptp=ptp)
        if task is not None:
            t = time.perf_counter()
            table = self.source.class_table(task)
            trie_nodes = ptp.trie.run(task.machine.delta_u, task.machine.initial, task.letter_of_proposition)
            fp = negatives.false_positives(trie_nodes, table)
            verdicts, some = self._verdicts(task, result.machines, result.solutions)
            timings["verdict"] = time.perf_counter() - t
            result = attrs.evolve(result, verdicts=verdicts, truth=task.machine, false_positives=fp,
                                  completion_consistent=some)
        gamma = task.discount if task is not None else mdp.gamma
        lam = task.lam if task is not None else 1.0
        result = self._with_rewards(result, gamma, lam, timings)
        timings["total"] = time.perf_counter() - t0
        return result

    @staticmethod
    def _machines(mdp: LabeledMDP, res: SearchResult) -> tuple[RewardMachine, ...]:
        return tuple(
            RewardMachine(
                nodes=[f"u{i}" for i in range(res.n_nodes)],
                alphabet=mdp.propositions,
                delta_u=s.delta_u,
                delta_r=np.zeros(s.delta_u.shape),
                initial=0,
                name="learned" if len(res.solutions) == 1 else f"learned_{i + 1}",
            )
            for i, s in enumerate(res.solutions)
        )

    def fit_policy(self, mdp: LabeledMDP, ptp: PrefixTreePolicy, *, max_nodes: int | None = None) -> LearnResult:
        """Learn from a given prefix tree policy (no truth: no verdict)."""
        t0 = time.perf_counter()
        return self._learn(mdp, ptp, max_nodes or self.max_nodes or 4, {}, t0)

    def _learn(self, mdp: LabeledMDP, ptp: PrefixTreePolicy, max_nodes: int, timings: dict, t0: float):
        t = time.perf_counter()
        classes = self.miner.mine(ptp)
        timings["mine"] = time.perf_counter() - t
        self.progress.stage("negative examples", timings["mine"], classes=classes.n_classes)
        pairs = None
        if self.encoding.negatives == "pairs":
            pairs = classes.distinct_pairs()
        encoder = Encoder(ptp.trie, mdp.n_propositions, classes, pairs, self.encoding)
        if self.nodes is not None and self.nodes > max_nodes:
            max_nodes = self.nodes
        res = search(
            encoder,
            max_nodes=max_nodes,
            min_nodes=min(classes.lower_bound(), max_nodes),
            exact_nodes=self.nodes,
            max_solutions=self.max_solutions,
            time_limit=self.time_limit,
            progress=self.progress,
        )
        timings.update(encode=res.time_encode, solve=res.time_solve, enumerate=res.time_enumerate)
        machines = self._machines(mdp, res)
        timings["total"] = time.perf_counter() - t0
        return LearnResult(machines, res.solutions, res, classes, ptp.tree, mdp, None, timings, ptp=ptp)
