"""What the online loop's final machine says (docs/guide/14-online.md): which (node, letter)
pairs no recorded step exercised, whether it was still changing, and, when the true machine is
known (an experiment), how it stands against it on what the traces exercised.

:func:`against_truth` runs both machines along every step of the traces: each step pairs the
learned machine's node with the truth's before it reads the step's letter. The learned machine
is *the truth up to unexercised pairs* when those pairs are a one-to-one map between the nodes
the steps leave from, and both machines pay alike on every step (within a tolerance for noisy
rewards); the transitions between the mapped nodes then agree wherever a step exercised them. A
node the traces only ever enter (an episode's last, such as the end node of a task that ends the
episode) has no step leaving it: nothing shows what it does, and it is named, not compared. When
every pair of both machines was exercised, this is :func:`rmtk.machine.model.isomorphic`.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import numpy as np

from ...machine.model import RewardMachine, isomorphic
from ...words import plural
from .hypothesis import Hypothesis
from .traces import Trace


@attrs.frozen
class FinalMachine:
    """The loop's final ``machine``, the (node, letter) pairs of its reachable nodes no recorded
    step exercised (``unexercised``), the step of its last swap, the steps of the run, and
    ``still_changing``: the last swap came in the last ``recent`` share of the run's steps (then
    more training may change it again)."""

    machine: RewardMachine
    unexercised: tuple[tuple[str, str], ...]
    last_swap: int
    steps: int
    swaps: int
    recent: float = 0.25

    @property
    def still_changing(self) -> bool:
        return self.swaps > 0 and self.last_swap > (1.0 - self.recent) * self.steps

    def __str__(self) -> str:
        flag = (
            f"still changing (its last swap at step {self.last_swap:,}, in the last {self.recent:.0%} of "
            f"{self.steps:,} steps)"
            if self.still_changing
            else f"stable since step {self.last_swap:,} of {self.steps:,}"
        )
        free = ", ".join(f"({u}, {k})" for u, k in self.unexercised[:12])
        more = f" and {len(self.unexercised) - 12} more" if len(self.unexercised) > 12 else ""
        pairs = (
            f"{len(self.unexercised)} (node, letter) pairs no step exercised: {free}{more}"
            if free
            else "every (node, letter) pair exercised"
        )
        return f"{plural(self.machine.n_nodes, 'node')}, {plural(self.swaps, 'swap')}, {flag}; {pairs}"


@attrs.frozen
class Verdict:
    """:func:`against_truth`'s answer: ``same`` (the truth up to unexercised pairs), ``complete``
    (every pair of both machines exercised, and then :func:`~rmtk.machine.model.isomorphic`),
    ``never_left`` (the truth's nodes no step leaves: nothing shows what they do), ``unexercised``
    (the learned machine's pairs no step read), and ``reason`` when not ``same``."""

    same: bool
    complete: bool
    never_left: tuple[str, ...]
    unexercised: tuple[tuple[str, str], ...]
    reason: str = ""

    def __str__(self) -> str:
        if not self.same:
            return f"not isomorphic to the true machine: {self.reason}"
        if self.complete:
            return "isomorphic to the true machine"
        parts = []
        if self.unexercised:
            parts.append(f"the {len(self.unexercised)} (node, letter) pairs no trace exercised")
        if self.never_left:
            parts.append(f"the truth's {', '.join(self.never_left)}, which no episode leaves (episodes end there)")
        if not parts:
            return "isomorphic to the true machine on its reachable nodes"
        return "isomorphic to the true machine up to " + " and ".join(parts)


def against_truth(
    learned: RewardMachine, truth: RewardMachine, traces: Sequence[Trace], tolerance: float = 0.0
) -> Verdict:
    """The learned machine against ``truth`` on every step of ``traces`` (module docstring); both
    read the traces' letters in ``learned``'s alphabet order."""
    truth = truth.with_alphabet_order(learned.alphabet)
    a, b = Hypothesis.of(learned), Hypothesis.of(truth)
    pairs: dict[tuple[int, int], tuple[int, int]] = {}  # (learned, truth) -> (trace, step) first seen
    exercised = np.zeros(learned.delta_u.shape, bool)
    left = np.zeros(truth.n_nodes, bool)
    for i, t in enumerate(traces):
        if not len(t.rewards):
            continue
        u, v, k = a.runs(t.letters), b.runs(t.letters), t.letters[1:]
        gap = np.abs(a.reward[u, k] - b.reward[v, k])
        bad = np.flatnonzero(gap > tolerance + 1e-9)
        if len(bad):
            j = int(bad[0])
            word = " ".join(learned.alphabet[x] for x in t.letters[: j + 1])
            return Verdict(
                False,
                False,
                (),
                (),
                f"after {word} then {learned.alphabet[k[j]]} it pays {a.reward[u[j], k[j]]:g}, the truth "
                f"{b.reward[v[j], k[j]]:g}",
            )
        exercised[u, k] = True
        left[v] = True
        for j, pair in enumerate(zip(u.tolist(), v.tolist())):
            pairs.setdefault(pair, (i, j))
        end = (int(a.next[u[-1], k[-1]]), int(b.next[v[-1], k[-1]]))
        if t.terminated and a.ends[end[0]]:  # the learned machine ends the episode there: so must the truth
            pairs.setdefault(end, (i, len(u)))
    first_l: dict[int, tuple[int, tuple[int, int]]] = {}  # learned node -> (truth node, where)
    first_t: dict[int, tuple[int, tuple[int, int]]] = {}
    for (lu, tv), where in sorted(pairs.items(), key=lambda item: item[1]):
        for node, other, table, what in (
            (lu, tv, first_l, "the learned machine is in one node, the truth in two"),
            (tv, lu, first_t, "the truth is in one node, the learned machine in two"),
        ):
            if node in table and table[node][0] != other:
                return Verdict(
                    False,
                    False,
                    (),
                    (),
                    f"{_at(traces, table[node][1], learned)} and {_at(traces, where, learned)}: {what}",
                )
            table.setdefault(node, (other, where))
    ends_l, ends_t = a.ends, b.ends
    matched = {tv for (lu, tv) in pairs if ends_l[lu] and ends_t[tv]}  # an end for an end: nothing happens there
    never = tuple(truth.nodes[v] for v in truth.reachable() if not left[v] and v not in matched)
    reach = [u for u in learned.reachable() if not (ends_l[u] and any(lu == u for lu, _ in pairs))]
    free = tuple(
        (learned.nodes[u], learned.alphabet[k])
        for u in reach
        for k in range(len(learned.alphabet))
        if not exercised[u, k]
    )
    # every pair exercised: the structure is the truth's, and its rewards were checked step by step
    # (within the tolerance: noisy outputs are the observed values' centers, not the truth's means)
    complete = not free and not never and isomorphic(learned, truth, rewards=tolerance == 0)
    return Verdict(True, complete, never, free)


def _at(traces: Sequence[Trace], where: tuple[int, int], m: RewardMachine) -> str:
    i, j = where
    word = " ".join(m.alphabet[x] for x in traces[i].letters[: j + 1])
    return f"after {word}"


def final_machine(loop, steps: int, recent: float = 0.25) -> FinalMachine:
    """The :class:`FinalMachine` of an :class:`~rmtk.rl.online.loop.OnlineLoop` after ``steps`` steps."""
    return FinalMachine(loop.machine, tuple(loop.unexercised()), loop.history[-1].step, int(steps), loop.swaps, recent)


__all__ = ["FinalMachine", "Verdict", "against_truth", "final_machine"]
