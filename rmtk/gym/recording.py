"""What :func:`~rmtk.gym.collect` returns: a :class:`Recording`, the empirical prefix tree
counts of the episodes (a :class:`~rmtk.empirical.CountTable`, so
:class:`~rmtk.empirical.EmpiricalPTP` takes it as it is) together with what the counts
alone do not say: the propositions in label-index order, and how the episodes went.

Recordings of separate shards merge (:meth:`Recording.merge`, associative) and are put in a
canonical trie numbering (:func:`canonical`), so the same episodes give an equal recording
whatever the number of workers or the order of the merges.
"""
from __future__ import annotations

import attrs
import numpy as np

from ..empirical import CountTable, merge_counts
from ..errors import DataError
from ..mdp import _names
from ..ptp import Trie
from ..space import Space


@attrs.frozen
class Recording(CountTable):
    """Action counts per (label word, state) of recorded episodes, and their bookkeeping.

    Attributes (besides the :class:`~rmtk.empirical.CountTable` ones):
        propositions: the alphabet; label index ``k`` is ``propositions[k]``.
        episodes: episodes recorded.
        clipped: observations outside a :class:`~rmtk.gym.Bins` box, clipped into its edge bins.
        terminated: episodes that ended in a terminal state of the environment.
        truncated: episodes the environment truncated (its time limit).
        cut: episodes stopped at ``collect``'s ``max_steps``.
        name: the environment's name, for messages.
    """

    propositions: tuple[str, ...] = attrs.field(default=(), converter=_names)
    episodes: int = 0
    clipped: int = 0
    terminated: int = 0
    truncated: int = 0
    cut: int = 0
    name: str = "recording"

    def __attrs_post_init__(self):
        if len(self.propositions) != self.n_letters:
            raise DataError(f"recording {self.name!r}: {len(self.propositions)} propositions for "
                            f"{self.n_letters} label indices")

    @property
    def space(self) -> Space:
        """What a :class:`~rmtk.learner.Learner` fits when there is no transition model."""
        return Space(self.n_states, self.n_actions, self.propositions, self.name)

    @property
    def table(self) -> CountTable:
        """The counts alone."""
        return CountTable(**_counts(self))

    def merge(self, other: "Recording") -> "Recording":
        """Both recordings' counts and bookkeeping (the reduce of a sharded collection)."""
        if self.propositions != other.propositions:
            raise DataError(f"cannot merge recordings with different propositions: {' '.join(self.propositions)} "
                            f"and {' '.join(other.propositions)}")
        table = merge_counts(self, other)
        return of_table(table, self.propositions, name=self.name,
                        **{f: getattr(self, f) + getattr(other, f) for f in _TALLIES})

    def canonical(self) -> "Recording":
        """The same recording with its words numbered canonically (see :func:`canonical`)."""
        return canonical(self)

    def summary(self) -> str:
        ended = f"{self.terminated} terminated, {self.truncated} truncated, {self.cut} cut at max_steps"
        clipped = f"; {self.clipped} observations clipped into the edge bins" if self.clipped else ""
        return (f"recording {self.name}: {self.episodes} episodes ({ended}), {self.n_steps} steps, "
                f"{self.trie.n_nodes - 1} label words, {len(self.keys)} (word, state, action) counts, "
                f"{self.n_states} states, {self.n_actions} actions, propositions {' '.join(self.propositions)}{clipped}")


_TALLIES = ("episodes", "clipped", "terminated", "truncated", "cut")


class Merger:
    """Merges recordings like a binary counter (tables of similar size together), so that N
    shards cost O(N log N) merge work instead of O(N²)."""

    def __init__(self):
        self.stack: list[tuple[int, Recording]] = []
        self.episodes = 0

    def add(self, rec: Recording) -> None:
        self.episodes += rec.episodes
        weight = 1
        while self.stack and self.stack[-1][0] <= weight:
            w, top = self.stack.pop()
            rec, weight = top.merge(rec), weight + w
        self.stack.append((weight, rec))

    def result(self) -> Recording:
        rec = None
        for _, r in reversed(self.stack):
            rec = r if rec is None else r.merge(rec)
        return rec


def _counts(table: CountTable) -> dict:
    """The :class:`~rmtk.empirical.CountTable` fields of ``table``, by name."""
    return {f.name: getattr(table, f.name) for f in attrs.fields(CountTable)}


def of_table(table: CountTable, propositions, *, name: str = "recording", **tallies) -> Recording:
    """A :class:`Recording` of a count table and its bookkeeping."""
    return Recording(**_counts(table), propositions=propositions, name=name, **tallies)


def canonical(table: CountTable) -> CountTable:
    """``table`` (a count table or a recording, which stays one) with its trie renumbered
    breadth first, the children of a word by letter: two tables with the same counts are
    then equal, however their tries were grown."""
    trie = table.trie
    new = np.zeros(trie.n_nodes, dtype=np.int64)
    top = 1
    for level in trie.levels()[1:]:
        order = level[np.argsort(new[trie.parent[level]] * (table.n_letters + 1) + trie.letter[level], kind="stable")]
        new[order] = np.arange(top, top + len(order))
        top += len(order)
    old = np.empty_like(new)
    old[new] = np.arange(trie.n_nodes)
    parent = np.where(trie.parent[old] >= 0, new[np.maximum(trie.parent[old], 0)], -1)
    SA = table.n_states * table.n_actions
    keys = new[table.keys // SA] * SA + table.keys % SA
    order = np.argsort(keys, kind="stable")
    return attrs.evolve(table, trie=Trie(parent, trie.letter[old], trie.length[old], compressed=trie.compressed),
                        keys=keys[order], counts=table.counts[order])
