"""Policies for :func:`~rmtk.gym.collect`: what the policy sees at every step
(:class:`Context`) and a policy that follows a reward machine's node (:class:`NodePolicy`),
e.g. the scripted expert of :func:`rmtk.ptp.exact.shortest_path_table`.

A policy is any callable ``policy(obs, ctx) -> action``; with a vector environment ``obs``
is the batch and the policy returns one action per environment. Every random draw it makes
should come from ``ctx.rng``: collect seeds it per shard, so the same seed gives the same data.

A :class:`NodePolicy` also says what verdicts against a task compare with
(:meth:`NodePolicy.expert_classes`); a recording made with it carries it
(:class:`RecordedPolicy`, the recording's ``source``), so that learning from the recording
judges its machines against the policy recorded, not against the task's soft-optimal policy.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import NamedTuple

import attrs
import numpy as np

from ..axes import order_hint
from ..errors import ModelError
from ..machine.model import RewardMachine


def draw(cdf: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One index per row of ``cdf`` (cumulative, not necessarily normalised weights), drawn by
    inversion with one uniform number per row from ``rng``."""
    return np.minimum((cdf < rng.random(len(cdf))[:, None] * cdf[:, -1:]).sum(axis=1), cdf.shape[1] - 1)


class Context(NamedTuple):
    """What :func:`~rmtk.gym.collect` tells the policy at a step (an immutable named tuple:
    one is made at every step, and a tuple is the cheapest immutable record to make).

    Attributes:
        t: the step within the episode (0 at a reset).
        state: discretised state index (an array over a vector environment's copies; −1 for
            a copy that plays no episode in this wave, when fewer episodes than copies remain,
            or whose episode has ended).
        label: proposition index of this step's label (likewise, −1 where the state is).
        propositions: the alphabet, in label-index order.
        rng: the shard's random generator: the policy's only source of randomness.
    """

    t: int
    state: np.ndarray
    label: np.ndarray
    propositions: tuple[str, ...]
    rng: np.random.Generator


def same_machine(a: RewardMachine, b: RewardMachine | None) -> bool:
    """Whether ``a`` and ``b`` are the same machine model, node for node: same alphabet, initial
    node and transitions (a policy driven by ``a`` then has a policy at every node of ``b``);
    ``False`` when ``b`` is missing (a task that names no machine)."""
    return (
        b is not None and a.alphabet == b.alphabet and a.initial == b.initial and np.array_equal(a.delta_u, b.delta_u)
    )


@attrs.define
class NodePolicy:
    """Acts on (state, node): follows ``machine`` on the labels (prefix convention: the
    step's own label already moves it) and calls ``choose(states, nodes, rng) -> actions``
    with arrays. The node is reset at every episode start (``ctx.t == 0``); one instance
    serves one collection (it keeps the nodes of the environments between steps)."""

    machine: RewardMachine
    choose: Callable[[np.ndarray, np.ndarray, np.random.Generator], np.ndarray]
    #: The ``(nodes, states, actions)`` table it samples from, when made by :meth:`from_table`
    #: (what verdicts against a task compare with; ``None`` for any other policy).
    table: np.ndarray | None = attrs.field(default=None, repr=False, eq=False)
    _node: np.ndarray | None = attrs.field(default=None, init=False, repr=False)
    _letters: dict = attrs.field(factory=dict, init=False, repr=False)

    @classmethod
    def from_table(cls, machine: RewardMachine, table) -> NodePolicy:
        """Sample from ``table[u, s, a]``, a stochastic policy per node (e.g. from
        :func:`shortest_path_table`)."""
        table = np.asarray(table, dtype=float)
        n = machine.n_nodes
        if table.ndim != 3 or table.shape[0] != n:
            if table.ndim == 3 and table.shape[1] == n:  # a SoftPolicy's pi is (states, nodes, actions)
                raise ModelError(
                    order_hint(
                        "a node policy table",
                        table.shape,
                        [("nodes", n), ("states", table.shape[0]), ("actions", table.shape[2])],
                    )
                )
            raise ModelError(
                f"a node policy table has shape {table.shape}; expected (nodes, states, actions) with {n} nodes"
            )
        cdf = np.cumsum(table, axis=2)

        def choose(states, nodes, rng):
            return draw(cdf[nodes, states], rng)

        return cls(machine, choose, table)

    def expert_classes(self, task) -> np.ndarray | None:
        """``(S, n)`` policy classes of this policy on ``task``'s product, what verdicts against
        the task compare with: those of its :meth:`from_table` table (its rows normalised, as
        drawn) when ``task``'s machine is the one driving its node and the table has the task's
        states and actions; ``None`` otherwise (a function's choices are not known)."""
        from ..machine.equivalence import policy_class_table

        table = self.table
        if table is None or not same_machine(self.machine, task.machine):
            return None
        if table.shape[1:] != (task.mdp.n_states, task.mdp.n_actions):
            return None
        return policy_class_table((table / table.sum(axis=2, keepdims=True)).transpose(1, 0, 2))

    def source_name(self) -> str:
        """What verdicts against its classes are said to be against."""
        return "the recorded policy's table" if self.table is not None else "the recorded policy"

    def letters(self, propositions: tuple[str, ...]) -> np.ndarray:
        """Machine letter index of each proposition index."""
        if propositions not in self._letters:
            missing = [p for p in propositions if p not in self.machine.alphabet]
            if missing:
                raise ModelError(
                    f"machine {self.machine.name!r} does not read {', '.join(map(repr, missing))}, "
                    "which the labeler can return"
                )
            self._letters[propositions] = np.array([self.machine.alphabet.index(p) for p in propositions])
        return self._letters[propositions]

    def node_after(self, word, propositions: tuple[str, ...]) -> int:
        """The policy's node after reading ``word`` (proposition indices) from its initial node."""
        letters, u = self.letters(propositions), self.machine.initial
        for k in word:
            u = int(self.machine.delta_u[u, letters[k]])
        return u

    def advance(self, ctx: Context) -> tuple[np.ndarray, np.ndarray]:
        """Move the nodes on the step's labels; ``(states, live)`` of the copies (a copy playing
        no episode, state −1, keeps its node and is not live)."""
        state, label = np.atleast_1d(ctx.state), np.atleast_1d(ctx.label)
        if ctx.t == 0 or self._node is None or len(self._node) != len(state):
            self._node = np.full(len(state), self.machine.initial, dtype=np.int64)
        live = state >= 0
        letters = self.letters(ctx.propositions)[np.where(live, label, 0)]
        self._node = np.where(live, self.machine.delta_u[self._node, letters], self._node)
        return state, live

    @property
    def nodes(self) -> np.ndarray | None:
        """The copies' current nodes (``None`` before the first step)."""
        return self._node

    def __call__(self, obs, ctx: Context):
        state, live = self.advance(ctx)  # copies playing no episode get action 0
        assert self._node is not None
        if live.all():
            actions = np.asarray(self.choose(state, self._node, ctx.rng))
        else:
            actions = np.zeros(len(state), dtype=np.int64)
            if live.any():
                actions[live] = np.asarray(self.choose(state[live], self._node[live], ctx.rng))
        return actions if np.ndim(ctx.state) else actions[0]


@attrs.frozen
class RecordedPolicy:
    """The policy a recording was made with (a :class:`NodePolicy`), as the source of a count
    table (:attr:`rmtk.ptp.empirical.CountTable.source`): its policy classes on a task are what
    :class:`~rmtk.ptp.empirical.EmpiricalPTP`'s verdicts compare with by default. Where it has none
    (a function's choices, an agent that only samples, another machine than the task's), there
    are no verdicts, and a warning says why."""

    policy: NodePolicy = attrs.field(repr=False)
    name: str = "the recorded policy"

    def class_table(self, task) -> np.ndarray | None:
        table = self.policy.expert_classes(task)
        if table is None:
            warnings.warn(
                f"no verdicts against {self.name} ({type(self.policy).__name__}): its policy classes on task "
                f"{task.name!r} are not known (only a table's or an exact agent's are, and only for the machine "
                "driving its node); EmpiricalPTP(recording, expert=SoftOptimal()) judges against the task's "
                "soft-optimal policy instead",
                UserWarning,
                stacklevel=2,
            )
        return table

    def prefix_tree_policy(self, task, tree):
        from ..errors import RmtkError

        raise RmtkError(f"{self.name} gives its policy classes only, not a prefix tree policy")
