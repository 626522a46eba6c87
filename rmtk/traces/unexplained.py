"""Why no machine pays the recorded rewards (docs/design/rewards-evidence.md): the message of a
search from reward traces that proved no size consistent, in terms of the rewards.

Exact reward evidence fails in two ways. A (word, letter) observed with two values is a
*contradiction*: no machine of any size pays both, since one word ends in one node and the
node pays one value on a letter (:func:`contradiction` finds the first, shortest word first,
and :func:`first_step` the trajectory and step of the data that paid each value). Otherwise a
machine of more nodes may pay them all (with compressed words, one node per word does):
the bound was too small. Either way, rewards that may be wrong are learned with the noisy
encoder (weighted MaxSAT) or within a tolerance, which the message suggests.
"""

from __future__ import annotations

import attrs
import numpy as np

from ..data.demonstrations import Demonstrations
from ..data.rewards import round_rewards
from ..limits import SearchLimits
from ..mdp.model import LabeledMDP
from ..ptp.empirical import EmpiricalPTP
from ..sat.search import SearchResult
from .rewards import RewardTraces

#: Steps of the data examined to place a contradiction (those paying its value on its letter);
#: past them the message names the word only.
LOOKED_AT = 100_000

#: What a user whose rewards may be wrong is told to use, in the Python API and on the command line.
NOISY = (
    "if the rewards may be wrong, learn with NoisyRewardEncoder (--noisy: weighted MaxSAT calls the fewest steps "
    "noisy) or TolerantRewards (--tolerance DELTA: each reward within ±DELTA of the machine's output)"
)


@attrs.frozen
class Contradiction:
    """A (word, letter) the traces observed with two values: ``rows`` of the traces, the value
    observed most often first (equal counts: the smaller value)."""

    traces: RewardTraces = attrs.field(repr=False)
    rows: tuple[int, int]

    @property
    def word(self) -> list[str]:
        return self.traces.word(self.rows[0])

    @property
    def letter(self) -> str:
        return self.traces.propositions[int(self.traces.letter[self.rows[0]])]

    def values(self) -> tuple[float, float]:
        return float(self.traces.value[self.rows[0]]), float(self.traces.value[self.rows[1]])

    def counts(self) -> tuple[int, int]:
        return int(self.traces.count[self.rows[0]]), int(self.traces.count[self.rows[1]])


def contradiction(traces: RewardTraces) -> Contradiction | None:
    """The first (word, letter) observed with two values, the shortest word first (ties: the
    trie's order, then the letter's); ``None`` when each is observed with one value."""
    node, letter, indptr = traces.pairs()
    several = np.flatnonzero(np.diff(indptr) > 1)
    if not len(several):
        return None
    length = traces.trie.length[node[several]]
    j = int(several[np.lexsort((letter[several], node[several], length))[0]])
    rows = np.arange(indptr[j], indptr[j + 1])
    order = rows[np.lexsort((traces.value[rows], -traces.count[rows]))]  # most observed, then smaller
    return Contradiction(traces, (int(order[0]), int(order[1])))


def first_step(
    demos: Demonstrations, labels: np.ndarray, word: list[int], letter: int, value: float, compress: bool
) -> tuple[int, int] | None:
    """The first (trajectory, step) of ``demos`` whose label word is ``word`` (compressed when
    ``compress``), whose next label is ``letter`` and whose reward is ``value`` (rounded as the
    traces round it); ``labels``: the MDP's label of each state. ``None`` when none is found
    among the first :data:`LOOKED_AT` steps paying ``value`` on ``letter``."""
    if demos.rewards is None or demos.horizon < 2:
        return None
    lab = np.asarray(labels)[np.maximum(demos.states, 0)]
    inside = demos.mask()
    paid = inside[:, :-1] & inside[:, 1:] & (lab[:, 1:] == letter) & (round_rewards(demos.rewards[:, :-1]) == value)
    target = tuple(word)
    for i, t in np.argwhere(paid)[:LOOKED_AT].tolist():
        seen = lab[i, : t + 1].tolist()
        if compress:
            seen = [k for n, k in enumerate(seen) if n == 0 or k != seen[n - 1]]
        if tuple(seen) == target:
            return i, t
    return None


def recorded(evidence) -> Demonstrations | None:
    """The demonstrations in memory behind rmtk's reward evidence
    (:class:`~rmtk.traces.evidence.TraceRewards` or :class:`~rmtk.traces.tolerance.TolerantRewards` of them, or of an
    :class:`~rmtk.ptp.empirical.EmpiricalPTP` counting them); ``None`` for a file or dataset counted
    as it was read, a table, or other evidence."""
    from .evidence import TraceRewards
    from .tolerance import TolerantRewards

    data = evidence.data if isinstance(evidence, (TraceRewards, TolerantRewards)) else None
    if isinstance(data, EmpiricalPTP):
        data = data.data
    return data if isinstance(data, Demonstrations) else None


def none_paid(res: SearchResult, traces: RewardTraces, limits: SearchLimits, evidence, mdp, *, policy: bool):
    """``res``, its message in terms of the rewards (:func:`no_machine_pays`) when the search
    proved no size consistent with ``traces`` (from ``evidence``, on ``mdp``); learning from the
    policy too (``policy``), only when the rewards contradict each other, which no policy undoes."""
    if res.n_nodes is not None or not res.complete or not res.tried:
        return res
    if policy and contradiction(traces) is None:
        return res
    hi = limits.sizes[-1]
    sizes = f"{limits.describe_sizes()} node{'s' if hi != 1 else ''}"
    labels = mdp.labels if isinstance(mdp, LabeledMDP) else None
    message = no_machine_pays(traces, sizes, policy=policy, data=recorded(evidence), labels=labels)
    return attrs.evolve(res, message=message)


def no_machine_pays(
    traces: RewardTraces,
    sizes: str,
    *,
    policy: bool = False,
    data: Demonstrations | None = None,
    labels: np.ndarray | None = None,
) -> str:
    """The message of a search that proved no machine of ``sizes`` (``"at most 4 nodes"``) pays
    the recorded ``traces`` (``policy``: and reproduces the expert's policy too): the
    contradiction, placed in ``data`` (the demonstrations counted, :func:`recorded`, with the
    MDP's ``labels``) when it can be, or the bound; and how to learn from rewards that may be
    wrong."""
    also = "is consistent with the prefix tree policy and " if policy else ""
    head = f"no machine with {sizes} {also}pays the recorded rewards"
    found = contradiction(traces)
    if found is None:
        return (
            f"{head}; every (word, letter) was paid one value, so a machine of more nodes may pay them all: raise "
            f"the bound (max_nodes=N, --max-nodes N); {NOISY}"
        )
    word = " ".join(found.word) or "(the empty word)"
    paid = []
    for row, value, count in zip(found.rows, found.values(), found.counts()):
        where = None
        if data is not None and labels is not None:
            at = traces.trie.word(int(traces.node[row]))
            where = first_step(data, labels, at, int(traces.letter[row]), value, traces.trie.compressed)
        steps = f"{count:,} step{'s' if count != 1 else ''}"
        if where is not None:
            steps += f", {'the first ' if count > 1 else ''}at trajectory {where[0]}, step {where[1]}"
        paid.append(f"{value:g} ({steps})")
    return (
        f"{head}, which contradict each other: after the word '{word}', the letter '{found.letter}' was paid "
        f"{paid[0]} and {paid[1]}; no machine pays two values there (a word ends in one node); {NOISY}"
    )
