"""The current hypothesis of the online loop (docs/guide/14-online.md): a reward machine with the
tables a step and a replay-buffer sample read, and how a new hypothesis takes the node slots
of the one it replaces.

The agent observes the node in a *slot* (:class:`~rmtk.rl.encoding.ProductEncoding` with
``max_nodes`` nodes, whatever the hypothesis' size), so its network survives a swap. A new
hypothesis is numbered so that each of its nodes takes the slot of the old node the traces'
runs most often put at the same place (:func:`aligned`): what the network learned at that slot
stays where it applies. The machine is the same up to that renaming.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import numpy as np

from ...errors import ModelError
from ...machine.model import RewardMachine


def trivial(propositions: Sequence[str]) -> RewardMachine:
    """The first hypothesis: one node that pays nothing (JIRP's start)."""
    K = len(propositions)
    return RewardMachine(["u0"], propositions, np.zeros((1, K), np.int64), np.zeros((1, K)), name="hypothesis")


#: The name of the node the loop adds for the transitions that ended every episode they were seen in.
END = "end"


def end_mask(machine: RewardMachine) -> np.ndarray:
    """``(n,)``: the nodes every letter keeps in place with reward 0 (nothing can be earned there:
    the target of a temporal difference ends)."""
    loops = (machine.delta_u == np.arange(machine.n_nodes)[:, None]).all(axis=1)
    return loops & (machine.delta_r == 0).all(axis=1)


@attrs.frozen
class Hypothesis:
    """A machine as the loop uses it: ``next[u, k]``, ``reward[u, k]``, the ``ends`` mask
    (:func:`end_mask`), the ``live`` nodes a counterfactual sample is drawn from (those that
    are not ends; every node when all are, as for the one-node machine that pays nothing) and
    the ``terminal`` mask: the end node named :data:`END` (:func:`with_end`), where the
    hypothesis says the episode ends."""

    machine: RewardMachine
    next: np.ndarray = attrs.field(eq=False, repr=False)
    reward: np.ndarray = attrs.field(eq=False, repr=False)
    ends: np.ndarray = attrs.field(eq=False, repr=False)
    live: np.ndarray = attrs.field(eq=False, repr=False)
    terminal: np.ndarray = attrs.field(eq=False, repr=False)

    @classmethod
    def of(cls, machine: RewardMachine) -> Hypothesis:
        ends = end_mask(machine)
        live = np.flatnonzero(~ends) if (~ends).any() else np.arange(machine.n_nodes)
        terminal = ends & (np.array(machine.nodes) == END)
        return cls(machine, machine.delta_u.copy(), machine.delta_r.astype(np.float64), ends, live, terminal)

    @property
    def pays(self) -> bool:
        """Whether some transition pays a non-zero reward."""
        return bool(np.any(self.reward != 0))

    def start(self, letter: int) -> int:
        """The node after the reset observation's letter (the prefix convention)."""
        return int(self.next[self.machine.initial, letter])

    def runs(self, letters: np.ndarray) -> np.ndarray:
        """The node before each letter after the first: ``u_t`` for ``t = 0 .. T − 1`` of a
        word ``letters`` of length ``T + 1`` (``u_0`` after the reset letter)."""
        out = np.empty(max(len(letters) - 1, 0), np.int64)
        u = self.start(int(letters[0]))
        for t, k in enumerate(letters[1:].tolist()):
            out[t] = u
            u = int(self.next[u, k])
        return out


def aligned(new: RewardMachine, old: RewardMachine, words: Sequence[np.ndarray]) -> RewardMachine:
    """``new`` with its nodes renumbered so that each takes the slot of the old node that the
    runs of ``words`` (label words, as proposition indices) most often place beside it (an
    assignment maximising the co-occurrences; ties to the lower slot, by scipy's
    ``linear_sum_assignment`` on integer counts); nodes beyond the old ones take the free slots
    in their own order. The names stay ``u<slot>``."""
    from scipy.optimize import linear_sum_assignment  # type: ignore[import-untyped]

    if tuple(new.alphabet) != tuple(old.alphabet):
        raise ModelError("aligned: the two machines read different alphabets")
    n, m = new.n_nodes, old.n_nodes
    counts = np.zeros((n, m), np.int64)
    a, b = Hypothesis.of(new), Hypothesis.of(old)
    for w in words:
        if len(w) > 1:
            np.add.at(counts, (a.runs(w), b.runs(w)), 1)
        counts[a.start(int(w[0])), b.start(int(w[0]))] += 1
    size = max(n, m)
    square = np.zeros((size, size), np.int64)
    square[:n, :m] = counts
    rows, cols = linear_sum_assignment(-square)
    slot = np.empty(n, np.int64)
    slot[rows[rows < n]] = cols[rows < n]
    order = np.argsort(slot, kind="stable")  # node order[i] takes position i
    # positions must be 0..n-1: slots beyond n (old nodes dropped) are compacted in order
    renamed = new.renamed(order.tolist(), [f"u{i}" for i in range(n)])
    return attrs.evolve(renamed, name=new.name)


def ending(machine: RewardMachine, traces) -> np.ndarray:
    """``(n, K)``: the (node, letter) transitions some step of ``traces`` took and every such
    step ended its episode (the environment terminated it; a time limit does not count)."""
    h = Hypothesis.of(machine)
    n, K = machine.delta_u.shape
    seen = np.zeros((n, K), np.int64)
    last = np.zeros((n, K), np.int64)
    for t in traces:
        if not len(t.rewards):
            continue
        u, k = h.runs(t.letters), t.letters[1:]
        np.add.at(seen, (u, k), 1)
        if t.terminated:
            last[u[-1], k[-1]] += 1
    return (seen > 0) & (last == seen)


def with_end(machine: RewardMachine, traces, max_nodes: int) -> RewardMachine:
    """``machine`` with an end node :data:`END` (absorbing, paying nothing) that the (node,
    letter) transitions go to whose every step in ``traces`` ended its episode (the environment
    terminated it; a time limit does not count), as JIRP infers termination: the
    counterfactual experiences then end there, and a trace that goes on after it disagrees.
    A machine that has its end node already sends the new such transitions there. Unchanged when
    no transition qualifies or the node slots are full."""
    h = Hypothesis.of(machine)
    ends = ending(machine, traces) & ~h.terminal[:, None]
    if not ends.any():
        return machine
    n, K = machine.delta_u.shape
    if h.terminal.any():
        return attrs.evolve(machine, delta_u=np.where(ends, int(np.argmax(h.terminal)), machine.delta_u))
    if n >= max_nodes:
        return machine
    delta_u = np.vstack([np.where(ends, n, machine.delta_u), np.full((1, K), n)])
    delta_r = np.vstack([machine.delta_r, np.zeros((1, K))])
    return RewardMachine([*machine.nodes, END], machine.alphabet, delta_u, delta_r, machine.initial, machine.name)


__all__ = ["END", "Hypothesis", "aligned", "end_mask", "ending", "trivial", "with_end"]
