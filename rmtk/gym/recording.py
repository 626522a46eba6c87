"""What :func:`~rmtk.gym.collect` returns: a :class:`Recording`, the empirical prefix tree
counts of the episodes (a :class:`~rmtk.ptp.empirical.CountTable`, so
:class:`~rmtk.ptp.empirical.EmpiricalPTP` takes it as it is) together with what the counts
alone do not say: the propositions in label-index order, and how the episodes went.

Recordings of separate shards merge (:meth:`Recording.merge`, associative) and are put in a
canonical trie numbering (:meth:`Recording.canonical`), so the same episodes give an equal
recording whatever the engine, the number of workers or the order of the merges.
"""

from __future__ import annotations

import attrs
import numpy as np

from .._arrays import array_eq, frozen_array
from ..errors import DataError
from ..mdp.model import _names
from ..mdp.space import Space
from ..ptp.empirical import CountTable, canonical_counts, merge_counts
from .labels import quoted


def _rows(value) -> np.ndarray:
    arr = frozen_array(np.int64)(value)
    if arr.ndim != 2 or arr.shape[1] != 3:
        raise DataError(f"recording moves are (state, action, next state) rows, shape (k, 3), not {arr.shape}")
    return arr


def sum_rows(rows: np.ndarray, counts: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows of non-negative integers (sorted) and their summed counts (each row
    once when ``counts`` is None). Rows are sorted as one integer each when their values fit
    (the common case, much faster than sorting rows)."""
    rows = np.asarray(rows, dtype=np.int64)
    if counts is None:
        counts = np.ones(len(rows), dtype=np.int64)
    if not len(rows):
        return rows, np.asarray(counts, dtype=np.int64)
    radix = rows.max(axis=0).astype(object) + 1
    if int(np.prod(radix)) < 2**62:
        codes = np.ravel_multi_index(tuple(rows.T), tuple(int(r) for r in radix))
        uniq, inv = np.unique(codes, return_inverse=True)
        uniq_rows = np.stack(np.unravel_index(uniq, tuple(int(r) for r in radix)), axis=1).astype(np.int64)
    else:
        uniq_rows, inv = np.unique(rows, axis=0, return_inverse=True)
    return uniq_rows, np.bincount(inv.ravel(), weights=counts, minlength=len(uniq_rows)).astype(np.int64)


@attrs.frozen
class Recording(CountTable):
    """Action counts per (label word, state) of recorded episodes, and their bookkeeping
    (the attributes below come besides the :class:`~rmtk.ptp.empirical.CountTable` ones).

    Attributes:
        propositions: the alphabet; label index ``k`` is ``propositions[k]``.
        episodes: episodes recorded.
        clipped: observations outside a :class:`~rmtk.gym.Bins` box, clipped into its edge bins.
        terminated: episodes that ended in a terminal state of the environment.
        truncated: episodes the environment truncated (its time limit).
        cut: episodes stopped at ``collect``'s ``max_steps``.
        name: the environment's name, for messages.
        moves: the distinct ``(state, action, next state)`` steps seen, rows sorted, and
            ``move_counts`` how often each was seen, the data of a maximum-likelihood
            transition model (:func:`rmtk.gym.tabular.estimate_mdp`); an episode's last step
            counts with the state of the observation that ended it.
        starts: the distinct start states of the episodes (sorted), ``start_counts`` how
            often each was one.
    """

    propositions: tuple[str, ...] = attrs.field(default=(), converter=_names)
    episodes: int = 0
    clipped: int = 0
    terminated: int = 0
    truncated: int = 0
    cut: int = 0
    name: str = "recording"
    moves: np.ndarray = attrs.field(factory=lambda: np.zeros((0, 3), np.int64), converter=_rows, eq=array_eq)
    move_counts: np.ndarray = attrs.field(
        factory=lambda: np.zeros(0, np.int64), converter=frozen_array(np.int64), eq=array_eq
    )
    starts: np.ndarray = attrs.field(
        factory=lambda: np.zeros(0, np.int64), converter=frozen_array(np.int64), eq=array_eq
    )
    start_counts: np.ndarray = attrs.field(
        factory=lambda: np.zeros(0, np.int64), converter=frozen_array(np.int64), eq=array_eq
    )

    def __attrs_post_init__(self):
        if len(self.propositions) != self.n_letters:
            raise DataError(
                f"recording {self.name!r}: {len(self.propositions)} propositions for {self.n_letters} label indices"
            )
        if len(self.moves) != len(self.move_counts) or len(self.starts) != len(self.start_counts):
            raise DataError(
                f"recording {self.name!r}: {len(self.moves)} moves for {len(self.move_counts)} counts, "
                f"{len(self.starts)} start states for {len(self.start_counts)} counts"
            )

    @property
    def space(self) -> Space:
        """What a :class:`~rmtk.learner.pipeline.Learner` fits when there is no transition model."""
        return Space(self.n_states, self.n_actions, self.propositions, self.name)

    @property
    def table(self) -> CountTable:
        """The counts alone."""
        return CountTable(**_counts(self))

    def merge(self, other: Recording) -> Recording:
        """Both recordings' counts and bookkeeping (the reduce of a sharded collection)."""
        if self.propositions != other.propositions:
            raise DataError(
                f"cannot merge recordings with different propositions: {quoted(self.propositions)} "
                f"and {quoted(other.propositions)}"
            )
        table = merge_counts(self, other)
        moves, move_counts = sum_rows(
            np.concatenate([self.moves, other.moves]), np.concatenate([self.move_counts, other.move_counts])
        )
        starts, start_counts = sum_rows(
            np.concatenate([self.starts, other.starts])[:, None],
            np.concatenate([self.start_counts, other.start_counts]),
        )
        return of_table(
            table,
            self.propositions,
            name=self.name,
            moves=moves,
            move_counts=move_counts,
            starts=starts[:, 0],
            start_counts=start_counts,
            **{f: getattr(self, f) + getattr(other, f) for f in _TALLIES},
        )

    def canonical(self) -> Recording:
        """The same recording with its words numbered canonically
        (:func:`rmtk.ptp.empirical.canonical_counts`)."""
        return canonical_counts(self)

    def summary(self) -> str:
        ended = f"{self.terminated} terminated, {self.truncated} truncated, {self.cut} cut at max_steps"
        clipped = f"; {self.clipped} observations clipped into the edge bins" if self.clipped else ""
        return (
            f"recording {self.name}: {self.episodes} episodes ({ended}), {self.n_steps} steps, "
            f"{self.trie.n_nodes - 1} label words, {len(self.keys)} (word, state, action) counts, "
            f"{self.n_states} states, {self.n_actions} actions, propositions {' '.join(self.propositions)}{clipped}"
        )


_TALLIES = ("episodes", "clipped", "terminated", "truncated", "cut")


def _counts(table: CountTable) -> dict:
    """The :class:`~rmtk.ptp.empirical.CountTable` fields of ``table``, by name."""
    return {f.name: getattr(table, f.name) for f in attrs.fields(CountTable)}


def of_table(table: CountTable, propositions, *, name: str = "recording", **tallies) -> Recording:
    """A :class:`Recording` of a count table and its bookkeeping."""
    return Recording(**_counts(table), propositions=propositions, name=name, **tallies)
