"""What :func:`~rmtk.gym.collect` returns: a :class:`Recording`, the empirical prefix tree
counts of the episodes (a :class:`~rmtk.empirical.CountTable`, so
:class:`~rmtk.empirical.EmpiricalPTP` takes it as it is) together with what the counts
alone do not say: the propositions in label-index order, and how the episodes went.

Recordings of separate shards merge (:meth:`Recording.merge`, associative) and are put in a
canonical trie numbering (:meth:`Recording.canonical`), so the same episodes give an equal
recording whatever the engine, the number of workers or the order of the merges.
"""
from __future__ import annotations

import attrs

from ..empirical import CountTable, canonical_counts, merge_counts
from ..errors import DataError
from ..mdp import _names
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
        """The same recording with its words numbered canonically
        (:func:`rmtk.empirical.canonical_counts`)."""
        return canonical_counts(self)

    def summary(self) -> str:
        ended = f"{self.terminated} terminated, {self.truncated} truncated, {self.cut} cut at max_steps"
        clipped = f"; {self.clipped} observations clipped into the edge bins" if self.clipped else ""
        return (f"recording {self.name}: {self.episodes} episodes ({ended}), {self.n_steps} steps, "
                f"{self.trie.n_nodes - 1} label words, {len(self.keys)} (word, state, action) counts, "
                f"{self.n_states} states, {self.n_actions} actions, propositions {' '.join(self.propositions)}{clipped}")


_TALLIES = ("episodes", "clipped", "terminated", "truncated", "cut")


def _counts(table: CountTable) -> dict:
    """The :class:`~rmtk.empirical.CountTable` fields of ``table``, by name."""
    return {f.name: getattr(table, f.name) for f in attrs.fields(CountTable)}


def of_table(table: CountTable, propositions, *, name: str = "recording", **tallies) -> Recording:
    """A :class:`Recording` of a count table and its bookkeeping."""
    return Recording(**_counts(table), propositions=propositions, name=name, **tallies)
