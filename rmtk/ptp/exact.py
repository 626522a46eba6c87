"""The exact prefix tree policy of a task (paper section 2.3): the PTP strategy
:class:`ExactPTP` and the policy sources it reads the expert's action distributions from.

A *policy source* gives, for a task and a prefix tree, the action distribution of every
(word, state) pair, and the true policy classes of the (state, node) pairs (for verdicts):

* :class:`SoftOptimal`: the task's soft-optimal (MaxEnt) product policy;
* :class:`DistinctPerNode`: every node its own policy (the convention behind the paper's
  counts; nodes whose soft-optimal policies agree everywhere share one);
* :class:`NodePolicyTable`: any stochastic policy per node (optimality is not needed,
  paper appendix B), such as :func:`shortest_path_table`, the scripted expert of the Office
  World experiment (shortest paths to the machine's next reward, with ε-random actions), or
  :func:`greedy_table`, the ε-greedy expert of the soft-optimal policy.

Where these turn values into a choice (nodes with the same policy, the greedy actions) they
decide ties with :mod:`rmtk.ties` (docs/design/02-conventions.md): the same answer on every machine.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Protocol

import attrs
import numpy as np

from .. import ties
from ..axes import order_hint
from ..errors import ModelError, RmtkError
from ..machine.equivalence import policy_class_table
from ..mdp.model import LabeledMDP
from ..negatives.miners import POLICY_TOL
from ..progress import Progress
from ..task import EVERY_DEPTH, Task, depth_beyond
from .tree import PrefixTree, PrefixTreePolicy, PTPCapabilities, build_prefix_tree

if TYPE_CHECKING:
    from ..sat.lazy import ProductOracle

#: Depth used when neither the strategy nor the task sets one.
DEFAULT_DEPTH = 6


class PolicySource(Protocol):
    """Gives the prefix tree policy of a task on a prefix tree, and the true policy classes
    of its (state, node) pairs for the equivalence verdict."""

    name: str

    def prefix_tree_policy(self, task: Task, tree: PrefixTree) -> PrefixTreePolicy: ...

    def class_table(self, task: Task) -> np.ndarray: ...


#: What needs a task's machine here, as an error says it (:meth:`rmtk.task.Task.require_machine`).
EXPERT = "the expert's exact policy (computed from the machine)"


def _true_nodes(task: Task, tree: PrefixTree) -> np.ndarray:
    m = task.require_machine(EXPERT)
    nodes = tree.trie.run(m.delta_u, m.initial, task.letter_of_proposition)
    return nodes[tree.pair_node]


@attrs.define
class SoftOptimal:
    """The task's soft-optimal (MaxEnt) product policy (γ and λ of the task)."""

    tol: float = POLICY_TOL
    name: str = "soft-optimal"
    _cache: dict = attrs.field(factory=dict, repr=False, eq=False)

    def policy(self, task: Task) -> np.ndarray:
        """``(S, n, A)`` product policy (cached for the last task)."""
        from .._threads import single_blas
        from ..product.planning import task_policy

        key = id(task)
        if key not in self._cache:
            with single_blas():  # small dense solves (see rmtk/_threads.py)
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
        rows = pi.transpose(1, 0, 2).reshape(pi.shape[1], -1)  # a node's policy at every state
        return ties.classes(rows, self.tol)  # the first node with the same policy everywhere

    def prefix_tree_policy(self, task: Task, tree: PrefixTree) -> PrefixTreePolicy:
        ptp = super().prefix_tree_policy(task, tree)
        return attrs.evolve(ptp, classes=self.node_classes(task)[ptp.true_nodes])

    def class_table(self, task: Task) -> np.ndarray:
        n = task.require_machine(EXPERT).n_nodes
        return np.broadcast_to(self.node_classes(task), (task.mdp.n_states, n)).copy()


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
        machine = task.machine or task.require_machine("a node policy table")  # a task, or what reads as one
        want = (machine.n_nodes, task.mdp.n_states, task.mdp.n_actions)
        if self.table.shape != want:
            raise ModelError(
                order_hint(
                    "the node policy table",
                    self.table.shape,
                    [("nodes", want[0]), ("states", want[1]), ("actions", want[2])],
                )
            )

    def policy(self, task: Task) -> np.ndarray:
        """``(S, n, A)`` product policy."""
        self._check(task)
        return self.table.transpose(1, 0, 2)

    def prefix_tree_policy(self, task: Task, tree: PrefixTree) -> PrefixTreePolicy:
        self._check(task)
        true = _true_nodes(task, tree)
        return PrefixTreePolicy(tree, self.table[true, tree.pair_state], true_nodes=true)

    def class_table(self, task: Task) -> np.ndarray:
        self._check(task)
        return policy_class_table(self.table.transpose(1, 0, 2), self.tol)


SOURCES = {"soft-optimal": SoftOptimal, "distinct": DistinctPerNode}


def policy_source(value):
    """A policy source: ``value`` itself, or the one named ``"soft-optimal"`` or ``"distinct"``."""
    if isinstance(value, str):
        if value not in SOURCES:
            raise RmtkError(f"unknown policy source {value!r}; choose one of {', '.join(SOURCES)}")
        return SOURCES[value]()
    return value


def _depth(instance, attribute, value):
    if value == "task" or value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise RmtkError(f"depth must be a whole number of at least 1, 'task' or None (every depth), got {value!r}")
    beyond = depth_beyond(value)
    if beyond is not None:
        raise RmtkError(f"ExactPTP: {beyond}")


def require_task(target, what: str) -> Task:
    """``target`` as a :class:`Task`, or a clear error saying why ``what`` needs one."""
    if isinstance(target, Task):
        return target
    if isinstance(target, LabeledMDP):
        raise RmtkError(f"{what} needs a task (an MDP with the expert's machine); got the bare mdp {target.name!r}")
    raise RmtkError(f"{what} needs a Task, not {type(target).__name__}")


@attrs.frozen
class ExactPTP(PTPCapabilities):
    """The PTP strategy of a known expert: the exact prefix tree policy of a task.

    Capabilities (:class:`~rmtk.ptp.tree.PTPCapabilities`): ``compress`` as set; every depth when
    ``depth`` is ``None`` (or the task says ``depth inf``); an oracle on the synchronised
    product for a task; the expert's policy classes from its ``source``.

    Args:
        depth: the prefix tree depth l (words of 1..l labels); ``"task"`` (default): the
            task's ``depth``, else 6; ``None``: every depth (learning is then
            counterexample-guided on the synchronised product: :meth:`oracle`).
        source: the expert's policy: a :class:`PolicySource` or its name (``"soft-optimal"``,
            ``"distinct"``).
        compress: key the trie by non-stuttering compressed words (the encoder must then
            assume non-stuttering machines).
    """

    depth: int | str | None = attrs.field(default="task", validator=_depth)
    source: PolicySource = attrs.field(factory=SoftOptimal, converter=policy_source)
    compress: bool = True

    def every_depth_for(self, target) -> bool:
        """Whether learning ``target`` must hold at every depth: ``depth=None``, or ``"task"``
        with a task that says ``depth inf``."""
        return self.depth is None or (self.depth == "task" and isinstance(target, Task) and target.depth == EVERY_DEPTH)

    def depth_for(self, task: Task) -> int | None:
        """The prefix tree depth l for ``task``; ``None`` when learning it at every depth."""
        if self.every_depth_for(task):
            return None
        if self.depth == "task":
            # the task's depth is a whole number or None here ("inf" is every depth, above)
            return task.depth if isinstance(task.depth, int) and task.depth else DEFAULT_DEPTH
        assert isinstance(self.depth, (int, np.integer)), "the validator admits a whole number, 'task' or None"
        return int(self.depth)

    def _check_truth(self, task: Task) -> None:
        m = task.require_machine(EXPERT)
        if self.compress and not m.is_non_stuttering():
            raise RmtkError(
                f"machine {m.name!r} is stuttering: compressed words do not determine its "
                "nodes; use ExactPTP(compress=False) with SatEncoder(non_stuttering=False)"
            )

    def build(self, target, progress: Progress) -> PrefixTreePolicy:
        task = require_task(target, "the exact prefix tree policy")
        depth = self.depth_for(task)
        if depth is None:
            raise RmtkError(
                "a prefix tree of every depth cannot be built: learn at every depth through the "
                "Learner, which checks candidates on the synchronised product (ExactPTP.oracle)"
            )
        self._check_truth(task)
        t0 = time.perf_counter()
        tree = build_prefix_tree(task.mdp, depth, compress=self.compress)
        progress.stage("tree", time.perf_counter() - t0, words=tree.trie.n_nodes - 1, pairs=tree.n_pairs)
        t0 = time.perf_counter()
        ptp = self.source.prefix_tree_policy(task, tree)
        progress.stage("policy", time.perf_counter() - t0)
        return ptp

    def expert_classes(self, task: Task) -> np.ndarray:
        """``(S, n)`` true policy class of each (state, node) of the task's machine."""
        return self.source.class_table(task)

    def oracle(self, target) -> ProductOracle | None:
        """The prefix tree policy of this depth as an oracle on the synchronised product (no
        tree is built): what lazy and every-depth learning check candidates with. ``None``
        when ``target`` is not a task (no expert to check against)."""
        from ..sat.lazy import ProductOracle

        if not isinstance(target, Task):
            return None
        task = target
        self._check_truth(task)
        policy = self.source.policy(task) if hasattr(self.source, "policy") else None
        m = task.require_machine(EXPERT)
        return ProductOracle(
            task.mdp,
            m.delta_u[:, task.letter_of_proposition],
            self.expert_classes(task),
            policy,
            self.depth_for(task),
            self.compress,
            m.initial,
        )


# -- scripted experts: shortest paths (the Office World experiment's), ε-greedy ----------------
def _epsilon(epsilon: float) -> None:
    if not 0.0 <= epsilon <= 1.0:
        raise ModelError(f"epsilon={epsilon} must lie in [0, 1]")


def greedy_table(policy, epsilon: float = 0.1) -> np.ndarray:
    """``(nodes, S, A)``: the ε-greedy expert of a product policy (a
    :class:`~rmtk.product.planning.SoftPolicy` such as a task's soft-optimal one, or its ``(S, n, A)``
    action distributions): in each product state (s, u) the most probable action with
    probability 1 − ε, else a uniformly random one. Actions within :data:`rmtk.ties.TOL` of
    the most probable are tied and the lowest action index wins (:func:`rmtk.ties.argbest`),
    so the expert is the same on every machine."""
    from ..product.planning import SoftPolicy

    _epsilon(epsilon)
    pi = np.asarray(policy.pi if isinstance(policy, SoftPolicy) else policy, dtype=float)
    if pi.ndim != 3:
        raise ModelError(f"a product policy has shape (states, nodes, actions), got {pi.shape}")
    S, n, A = pi.shape
    best = ties.argbest(pi, axis=2).T  # (n, S)
    table = np.full((n, S, A), epsilon / A)
    table[np.arange(n)[:, None], np.arange(S)[None, :], best] += 1.0 - epsilon
    return table


def shortest_path_table(task: Task, epsilon: float = 0.1) -> np.ndarray:
    """``(nodes, S, A)``: the scripted expert of ``task``: in each product state (s, u) the
    actions that reach the machine's next positive reward in the fewest expected steps
    (ties split evenly), mixed with ``epsilon`` of uniformly random actions; uniform where
    no reward can be reached (e.g. an absorbing end node). Actions whose expected steps lie
    within :data:`rmtk.ties.TOL` (relative) of the fewest are tied (:func:`rmtk.ties.best`)."""
    _epsilon(epsilon)
    mdp, m = task.mdp, task.require_machine("the scripted expert's shortest paths")
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
    greedy = ties.best(q, axis=2, lowest=True) & (dist[..., None] < big)
    greedy[~greedy.any(axis=2)] = True
    return (1.0 - epsilon) * greedy / greedy.sum(axis=2, keepdims=True) + epsilon / A
