"""The product of a labeled MDP with a reward machine (paper section 2.2), restricted to the
product states reachable from the initial distribution.

Conventions (docs/design/02-conventions.md, "The prefix convention"): the first label already moves the machine, so
the initial product states are ``(s0, δ_u(u_I, L(s0)))`` for ``s0`` in the support of ``μ0``,
and a step ``(s, u) --a--> (s', δ_u(u, L(s')))`` happens with probability ``P(s'|s,a)`` and
earns ``δ_r(u, L(s'))``.

The MDP's proposition ``k`` is read by the machine as its letter ``letter[k]``: with a
:class:`~rmtk.task.Task` this is ``task.letter_of_proposition``; given an MDP and a machine
directly, :func:`letter_map` matches the names.

Reachability is computed breadth first, one numpy expansion per BFS level (no Python loop
over state pairs). Pairs are numbered in BFS discovery order: the initial pairs by state
index, then each level's new pairs in the order a queue-based BFS would find them (parents
in order, successor states ascending).
"""

from __future__ import annotations

import attrs
import numpy as np

from .._arrays import Csr, array_eq, as_csr, frozen_array
from ..errors import ModelError
from ..machine.model import RewardMachine
from ..mdp.model import LabeledMDP
from ..task import Task


def letter_map(mdp: LabeledMDP, machine: RewardMachine, letter=None) -> np.ndarray:
    """``letter[k]``: index in ``machine.alphabet`` of the MDP's proposition ``k``.

    Without ``letter`` the map is computed from the names; a given map is validated.
    Raises :class:`ModelError` if an MDP proposition is not in the machine's alphabet.
    """
    K, n_letters = mdp.n_propositions, len(machine.alphabet)
    if letter is None:
        missing = [p for p in mdp.propositions if p not in machine.alphabet]
        if missing:
            raise ModelError(
                f"machine {machine.name!r} has no transitions on "
                f"{', '.join(map(repr, missing))}, which mdp {mdp.name!r} produces"
            )
        return np.array([machine.alphabet.index(p) for p in mdp.propositions], dtype=np.int64)
    letter = np.asarray(letter)
    if letter.shape != (K,) or not np.issubdtype(letter.dtype, np.integer):
        raise ModelError(f"letter map must be {K} integers (one per MDP proposition), got shape {letter.shape}")
    if K and (letter.min() < 0 or letter.max() >= n_letters):
        raise ModelError(f"letter map has an index outside the machine alphabet 0..{n_letters - 1}")
    return letter.astype(np.int64)


def gather_rows(mat: Csr, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For CSR ``mat`` and row ids ``rows``: ``(which, pos)`` where ``pos`` lists the storage
    positions of every entry of those rows (rows in the given order, entries in storage order)
    and ``which[e]`` is the index into ``rows`` that entry ``e`` belongs to."""
    starts = mat.indptr[rows]
    counts = mat.indptr[rows + 1] - starts
    total = int(counts.sum())
    which = np.repeat(np.arange(len(rows)), counts)
    offsets = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
    return which, starts[which] + offsets


@attrs.frozen
class Product:
    """The reachable part of the product MDP ``M × R``.

    Attributes:
        pairs: ``(m, 2)`` product states ``(s, u)`` in BFS discovery order.
        index: ``(S, n)`` id of ``(s, u)`` in ``pairs``, ``-1`` if unreachable.
        kernel: :class:`~rmtk._arrays.Csr` ``(m·|A|, m)``; row ``i·|A| + a`` is
            ``P'(· | pairs[i], a)`` (constructor argument ``transitions``).
        transitions: the same as a read-only ``scipy.sparse.csr_array`` (a property).
        rewards: ``(m, |A|)`` expected immediate reward ``Σ_s' P(s'|s,a) δ_r(u, L(s'))``.
        initial: ``(m,)`` initial distribution ``μ0'`` (mass ``μ0(s0)`` on ``(s0, δ_u(u_I, L(s0)))``).
        letter: ``(K,)`` machine letter index of each MDP proposition.
        n_actions: ``|A|``.
    """

    pairs: np.ndarray = attrs.field(converter=frozen_array(np.int64), eq=array_eq, hash=False, repr=False)
    index: np.ndarray = attrs.field(converter=frozen_array(np.int64), eq=array_eq, hash=False, repr=False)
    kernel: Csr = attrs.field(alias="transitions", converter=as_csr, hash=False, repr=False)
    rewards: np.ndarray = attrs.field(converter=frozen_array(float), eq=array_eq, hash=False, repr=False)
    initial: np.ndarray = attrs.field(converter=frozen_array(float), eq=array_eq, hash=False, repr=False)
    letter: np.ndarray = attrs.field(converter=frozen_array(np.int64), eq=array_eq, hash=False, repr=False)
    n_actions: int = attrs.field(converter=int)

    @property
    def transitions(self):
        """``kernel`` as a read-only ``scipy.sparse.csr_array`` (imports scipy)."""
        return self.kernel.to_scipy()

    @property
    def n_pairs(self) -> int:
        return len(self.pairs)

    @property
    def states(self) -> np.ndarray:
        """MDP state of each product state."""
        return self.pairs[:, 0]

    @property
    def nodes(self) -> np.ndarray:
        """Machine node of each product state."""
        return self.pairs[:, 1]

    def reachable_nodes(self) -> np.ndarray:
        """Sorted machine nodes that occur in some reachable product state."""
        return np.unique(self.pairs[:, 1])

    def restrict(self, grid: np.ndarray) -> np.ndarray:
        """Rows of a full-grid array ``grid[s, u, ...]`` for the reachable pairs, in order."""
        return np.asarray(grid)[self.pairs[:, 0], self.pairs[:, 1]]

    def summary(self) -> str:
        S, n = self.index.shape
        return (
            f"product: {self.n_pairs} reachable of {S}×{n} = {S * n} pairs, "
            f"{self.n_actions} actions, {self.kernel.nnz} transitions"
        )


def reachable_pairs(mdp: LabeledMDP, machine: RewardMachine, letter=None) -> np.ndarray:
    """``(m, 2)`` reachable product states ``(s, u)`` in BFS discovery order."""
    letter = letter_map(mdp, machine, letter)
    S, n = mdp.n_states, machine.n_nodes
    lp = letter[mdp.labels]  # machine letter of each state's label
    nxt = machine.delta_u[:, lp]  # (n, S): node after entering s' from u
    succ = mdp.successor_matrix()

    starts = mdp.start_states
    codes = starts * n + nxt[machine.initial, starts]
    seen = np.zeros(S * n, dtype=bool)
    seen[codes] = True
    levels = [codes]
    frontier = codes
    while len(frontier):
        which, pos = gather_rows(succ, frontier // n)
        s2 = succ.indices[pos]
        new = s2 * n + nxt[(frontier % n)[which], s2]
        new = new[~seen[new]]
        if not len(new):
            break
        uniq, first = np.unique(new, return_index=True)
        frontier = uniq[np.argsort(first, kind="stable")]
        seen[frontier] = True
        levels.append(frontier)
    codes = np.concatenate(levels)
    return np.stack([codes // n, codes % n], axis=1)


def product(mdp: LabeledMDP, machine: RewardMachine, letter=None) -> Product:
    """The reachable product ``M × R`` (see the module docstring for the conventions)."""
    letter = letter_map(mdp, machine, letter)
    S, A, n = mdp.n_states, mdp.n_actions, machine.n_nodes
    lp = letter[mdp.labels]
    nxt = machine.delta_u[:, lp]  # (n, S)
    rew = machine.delta_r[:, lp]  # (n, S)

    pairs = reachable_pairs(mdp, machine, letter)
    m = len(pairs)
    index = np.full((S, n), -1, dtype=np.int64)
    index[pairs[:, 0], pairs[:, 1]] = np.arange(m)

    T = mdp.kernel
    rows = (pairs[:, 0][:, None] * A + np.arange(A)).ravel()  # product row i*A+a -> MDP row s*A+a
    which, pos = gather_rows(T, rows)
    s2 = T.indices[pos]
    p = T.data[pos]
    u = pairs[which // A, 1]
    cols = index[s2, nxt[u, s2]]
    assert (cols >= 0).all(), "product reachability is not closed under transitions"
    trans = Csr.from_coo(p, which, cols, (m * A, m))
    rewards = np.bincount(which, weights=p * rew[u, s2], minlength=m * A).reshape(m, A)
    initial = mdp.initial[pairs[:, 0]] * (np.arange(m) < len(mdp.start_states))
    return Product(
        pairs=pairs, index=index, transitions=trans, rewards=rewards, initial=initial, letter=letter, n_actions=A
    )


def task_product(task: Task) -> Product:
    """The reachable product of a task's MDP and machine."""
    return product(task.mdp, task.require_machine("the product of its MDP and machine"), task.letter_of_proposition)
