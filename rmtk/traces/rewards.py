"""Reward traces: the rewards the world paid, per (label word, next letter) — the evidence
on a reward machine's ``δ_r`` that demonstrations with rewards hold.

:func:`reward_traces` counts demonstrations (any :class:`~rmtk.ptp.empirical.EmpiricalPTP`
source: :class:`~rmtk.data.Demonstrations`, a CSV/NPZ file, a Parquet dataset counted on
any engine, a stream of chunks, a count table or a :func:`rmtk.gym.collect` recording) and
returns :class:`RewardTraces`: for every recorded pair (word ``σ = L(s_0) … L(s_t)``, next
letter ``ℓ = L(s_{t+1})``) each distinct observed reward with how often it was observed.
A machine explains the traces exactly when ``δ_r(δ_u*(u_I, σ), ℓ)`` equals the observed
reward of every pair; a pair with several values is noisy evidence, kept with its counts.
The convention (which row's reward, NaN, the last row) and the rounding that decides when
two rewards are one value are those of :mod:`rmtk.data.rewards`.

The words are the nodes of the count table's trie in canonical numbering
(:func:`rmtk.ptp.empirical.canonical_counts`): with the same data, ``compress`` and ``depth``,
node ids are those of the empirical prefix tree policy the same data give, whatever the
engine, chunk or partition size.
"""

from __future__ import annotations

import os
from typing import Any

import attrs
import numpy as np

from .._arrays import array_eq, float_array, int_array
from ..data.rewards import REWARD_DECIMALS, RewardCounts
from ..engines.local import Engine, LocalEngine, as_engine
from ..errors import DataError
from ..progress import Progress
from ..ptp.empirical import CountTable, EmpiricalPTP
from ..ptp.tree import Trie
from ..task import Task

__all__ = ["RewardTraces", "reward_traces", "REWARD_DECIMALS"]


@attrs.frozen
class RewardTraces:
    """Observed rewards per (trie node, next letter), rows sorted by node, letter, value.

    Attributes:
        trie: the label words (canonical numbering; node 0 the empty word, never a row's).
        node: ``(m,)`` trie node of the word ``σ`` of each row.
        letter: ``(m,)`` proposition index of the next letter ``ℓ`` (the MDP's order,
            ``propositions[letter]``).
        value: ``(m,)`` the reward observed on ``(σ, ℓ)``, rounded to
            :data:`~rmtk.data.rewards.REWARD_DECIMALS` places.
        count: ``(m,)`` how many steps observed that value there.
        propositions: the alphabet of the letters.
        n_trajectories: trajectories counted (0 when not recorded).
        tolerance: for traces whose values were replaced by the outputs of a tolerance fit
            (:class:`rmtk.traces.tolerance.TolerantRewards`), that fit's
            :class:`~rmtk.traces.tolerance.NoiseWidth`; ``None`` for exact values.

    Each (node, letter, value) is one row; a (node, letter) with several rows is noisy.
    """

    trie: Trie
    node: np.ndarray = attrs.field(converter=int_array, eq=array_eq)
    letter: np.ndarray = attrs.field(converter=int_array, eq=array_eq)
    value: np.ndarray = attrs.field(converter=float_array, eq=array_eq)
    count: np.ndarray = attrs.field(converter=int_array, eq=array_eq)
    propositions: tuple[str, ...] = attrs.field(converter=tuple)
    n_trajectories: int = 0
    tolerance: object = attrs.field(default=None, eq=False, repr=False)

    def __attrs_post_init__(self):
        m = len(self.node)
        if not len(self.letter) == len(self.value) == len(self.count) == m:
            raise DataError("reward traces: node, letter, value and count differ in length")

    @classmethod
    def of(cls, table: CountTable, propositions) -> RewardTraces:
        """The traces a count table holds (:class:`DataError` when its data had no rewards)."""
        if table.rewards is None:
            raise DataError("the demonstrations have no rewards (no reward column / Demonstrations.rewards is None)")
        if len(propositions) != table.n_letters:
            raise DataError(f"{len(propositions)} propositions for counts over {table.n_letters} letters")
        r: RewardCounts = table.rewards
        K = table.n_letters
        return cls(table.trie, r.keys // K, r.keys % K, r.values, r.counts, propositions, table.n_trajectories)

    # ------------------------------------------------------------------ queries
    @property
    def n_rows(self) -> int:
        return len(self.node)

    @property
    def n_observations(self) -> int:
        """Steps whose reward is evidence (each counted once)."""
        return int(self.count.sum())

    def pairs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(node, letter, indptr)``: the distinct (word, letter) pairs, and the rows of pair
        ``j`` are ``indptr[j] .. indptr[j + 1] − 1`` (one row per distinct value)."""
        if not self.n_rows:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(1, np.int64)
        new = np.ones(self.n_rows, dtype=bool)
        new[1:] = (self.node[1:] != self.node[:-1]) | (self.letter[1:] != self.letter[:-1])
        starts = np.flatnonzero(new)
        return self.node[starts], self.letter[starts], np.append(starts, self.n_rows)

    @property
    def n_pairs(self) -> int:
        return len(self.pairs()[0])

    def noisy(self) -> np.ndarray:
        """Boolean per pair (order of :meth:`pairs`): observed with more than one value."""
        return np.diff(self.pairs()[2]) > 1

    def majority(self) -> tuple[np.ndarray, np.ndarray]:
        """Per pair (order of :meth:`pairs`): the value observed most often (a tie goes to the
        smaller value) and the share of the pair's observations that had it."""
        _, _, indptr = self.pairs()
        if not self.n_rows:
            return np.zeros(0), np.zeros(0)
        pair = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
        order = np.lexsort((self.value, -self.count, pair))  # per pair: most observed first, then smaller
        first = order[indptr[:-1]]
        totals = np.add.reduceat(self.count, indptr[:-1])
        return self.value[first], self.count[first] / totals

    def word(self, row: int) -> list[str]:
        """The word ``σ`` of row ``row`` as proposition names."""
        return [self.propositions[k] for k in self.trie.word(int(self.node[row]))]

    def explains(self, delta_u, delta_r, initial: int, letter_map=None) -> np.ndarray:
        """Per row: whether the machine (``delta_u``, ``delta_r`` over the machine's letters,
        ``letter_map[k]`` the machine's letter of proposition ``k``) pays the row's value on
        its (word, letter) exactly (after rounding). A check of a candidate machine."""
        from ..data.rewards import round_rewards

        delta_u, delta_r = np.asarray(delta_u), np.asarray(delta_r)
        nodes = self.trie.run(delta_u, initial, None if letter_map is None else np.asarray(letter_map))
        letters = self.letter if letter_map is None else np.asarray(letter_map)[self.letter]
        return round_rewards(delta_r[nodes[self.node], letters]) == self.value

    def summary(self) -> str:
        noisy = int(self.noisy().sum())
        return (
            f"reward traces: {self.n_observations:,} rewarded steps on {self.n_pairs:,} (word, letter) pairs "
            f"({noisy:,} with more than one value), {len(np.unique(self.value)):,} distinct values"
        )


def reward_traces(
    data: Any,
    mdp,
    *,
    compress: bool = True,
    depth: int | None = None,
    labels: np.ndarray | None = None,
    chunk: int = 250_000,
    engine: str | Engine = "local",
    progress: Progress | None = None,
) -> RewardTraces:
    """The reward traces of ``data`` on ``mdp`` (a :class:`~rmtk.mdp.model.LabeledMDP`, a
    :class:`~rmtk.task.Task`'s MDP, or a :class:`~rmtk.mdp.space.Space` for a recording).

    Args:
        data: :class:`~rmtk.data.Demonstrations` with ``rewards``; a path (a Parquet dataset
            directory, counted partition by partition on ``engine``, or a ``.csv``/``.npz``
            file) with a ``reward`` column; a stream of chunks; a
            :class:`~rmtk.ptp.empirical.CountTable` or :class:`~rmtk.gym.Recording` counted from
            data with rewards; or an :class:`~rmtk.ptp.empirical.EmpiricalPTP` (its counts are
            used and kept, so the policy and the traces are counted once and share the trie).
        compress, depth, labels, chunk, engine: as for :class:`~rmtk.ptp.empirical.EmpiricalPTP`
            (ignored when ``data`` is one).
        progress: hears the counting.

    Raises :class:`~rmtk.errors.DataError` when the data have no rewards, or none that is
    evidence (every one unknown, or on a last step).
    """
    from ..progress import as_progress

    if isinstance(mdp, Task):
        mdp = mdp.mdp
    strategy = (
        data
        if isinstance(data, EmpiricalPTP)
        else EmpiricalPTP(
            data,
            depth=depth,
            compress=compress,
            chunk=chunk,
            labels=labels,
            engine=as_engine(engine) if not isinstance(engine, LocalEngine) else engine,
        )
    )
    table = strategy.counts(mdp, as_progress(progress))
    traces = RewardTraces.of(table, mdp.propositions)
    if not traces.n_observations:
        raise DataError(
            f"{_source(strategy.data)} hold{'s' if _is_path(strategy.data) else ''} no reward a machine pays: every "
            "recorded reward is unknown (empty, null or nan) or on a trajectory's last step, whose next label is not "
            "known; record the rewards of steps with a next step"
        )
    return traces


def _is_path(data) -> bool:
    return isinstance(data, (str, os.PathLike))


def _source(data) -> str:
    """How a message names the data: its path and column, or what it is."""
    if _is_path(data):
        return f"{data}: the 'reward' column"
    return "the demonstrations' rewards"
