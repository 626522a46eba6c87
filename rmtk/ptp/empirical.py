"""Empirical prefix tree policy (paper eq. 17): action counts per (word, state) pair,
counted from demonstrations — and :class:`EmpiricalPTP`, the PTP strategy built on it.

Counting is written as a *map* over chunks of trajectories (:func:`count_chunk`: a local
trie and a table of (node, state, action) counts) and an associative *reduce*
(:func:`merge_counts`: graft one trie onto the other and add the tables), so memory stays
bounded by the chunk size and the same two functions run on any engine (this process, or a
Dask cluster): :class:`CountJob` maps over chunks or partitions, :func:`merge_partial` reduces.
Both are vectorised over trajectories: the only Python loops run over time steps and trie levels.

Trie ids depend on the order words were met; :func:`canonical_counts` renumbers the trie
breadth-first (children by letter), so :class:`EmpiricalPTP`'s table is a function of the
multiset of trajectories alone: the same, ids included, for any chunking, engine and workers.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from typing import Any

import attrs
import numpy as np

from .._arrays import array_eq, int_array
from ..data import Demonstrations
from ..data.rewards import RewardCounts, final_rewards, merge_rewards
from ..engines.local import Engine, LocalEngine, as_engine
from ..engines.shards import TreeReducer
from ..errors import DataError, RmtkError
from ..limits import NEVER, Deadline
from ..mdp.model import LabeledMDP
from ..progress import Progress, as_progress
from ..task import Task
from ._keys import merge_sorted
from .exact import PolicySource, SoftOptimal
from .tree import PrefixTree, PrefixTreePolicy, PTPCapabilities, Trie, TrieBuilder


@attrs.frozen
class CountTable:
    """Action counts on a trie: ``keys`` are sorted unique ``(node·S + state)·A + action``."""

    trie: Trie
    keys: np.ndarray = attrs.field(converter=int_array, eq=array_eq)
    counts: np.ndarray = attrs.field(converter=int_array, eq=array_eq)
    n_states: int
    n_actions: int
    n_letters: int
    n_trajectories: int = 0  # trajectories counted (0: not recorded)
    #: the observed rewards per (trie node, next letter), when the data have rewards
    rewards: RewardCounts | None = None
    #: the policy recorded, when known (``class_table(task)``, ``None`` if unknown): what verdicts compare with
    source: Any = attrs.field(default=None, eq=False, repr=False)

    @property
    def n_steps(self) -> int:
        return int(self.counts.sum())


def _aggregate(
    keys: np.ndarray, counts: np.ndarray | None = None, bound: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct ``keys`` and their counts (or summed ``counts``). Keys known to lie in
    ``0..bound-1`` with ``bound`` small beside their number are counted by a histogram
    instead of a sort (the same result, in linear time)."""
    if counts is None and bound is not None and bound <= max(4 * len(keys), 1 << 16):
        hist = np.bincount(keys, minlength=bound)
        uniq = np.flatnonzero(hist)
        return uniq, hist[uniq]
    if counts is None:
        return np.unique(keys, return_counts=True)
    uniq, inv = np.unique(keys, return_inverse=True)
    return uniq, np.bincount(inv, weights=counts, minlength=len(uniq)).astype(np.int64)


#: Cells (trajectories × steps) :func:`count_chunk` takes at a time: its arrays stay a few
#: times this many numbers, whatever the chunk's size.
COUNT_BLOCK_CELLS = 1 << 20


def count_chunk(
    mdp: LabeledMDP,
    demos: Demonstrations,
    *,
    compress: bool = True,
    depth: int | None = None,
    labels: np.ndarray | None = None,
    final_labels: np.ndarray | None = None,
) -> CountTable:
    """The map: count the actions of ``demos`` per (word, state), on a trie of its own.

    When ``demos`` have rewards, the table also holds the observed rewards per (trie node of
    the word up to step ``t``, label of step ``t + 1``) (:class:`~rmtk.data.rewards.RewardCounts`,
    the convention of :mod:`rmtk.data.rewards`) for every counted step ``t`` (``t < depth``)
    whose next label is known: the next row's, or for a trajectory's last step
    ``final_labels[i]`` (the label of the state after it, −1 when unknown; default: unknown).

    ``mdp`` is a :class:`~rmtk.mdp.model.LabeledMDP` or any object with ``n_states``,
    ``n_actions``, ``n_propositions`` (and ``labels`` when ``labels`` is not given): the
    counts need no transition model. ``labels``, an ``(N, T)`` integer array of per-step
    proposition indices (−1 padded, like ``demos.states``), overrides ``mdp.labels[state]``
    — for environments whose labels are not a function of the (discretised) state.
    """
    S, A, K = mdp.n_states, mdp.n_actions, mdp.n_propositions
    if demos.states.max(initial=-1) >= S or demos.actions.max(initial=-1) >= A:
        raise DataError("demonstrations refer to states or actions the MDP does not have; validate them first")
    if labels is not None:
        labels = np.asarray(labels)
        if labels.shape != demos.states.shape:
            raise DataError(f"labels have shape {labels.shape}, expected {demos.states.shape} like the states")
        if not np.issubdtype(labels.dtype, np.integer):
            raise DataError(f"labels have dtype {labels.dtype}, expected integer proposition indices")
        inside = demos.mask()
        bad = np.argwhere(inside & ((labels < 0) | (labels >= K)))
        if bad.size:
            i, t = bad[0]
            raise DataError(f"trajectory {i}, step {t}: label {labels[i, t]} is not a proposition index 0..{K - 1}")
    T = demos.horizon if depth is None else min(depth, demos.horizon)
    grow = TrieBuilder(K)
    N = demos.n_trajectories
    node = np.zeros(N, dtype=np.int64)  # the trie node of each trajectory's word so far
    last = np.full(N, -1, dtype=np.int64)  # the label of its last counted step
    lengths = np.minimum(demos.lengths, T)
    keys = []
    paid: list[tuple[np.ndarray, np.ndarray]] = []  # (node·K + next letter, reward) of the rewarded steps
    width = max(1, COUNT_BLOCK_CELLS // max(N, 1))
    for t0 in range(0, int(lengths.max(initial=0)), width):
        steps = np.arange(t0, min(t0 + width, int(lengths.max())))
        live = lengths[:, None] > steps[None, :]  # (N, B): the steps counted
        s = np.where(live, demos.states[:, steps], 0).astype(np.int64)
        lab = mdp.labels[s] if labels is None else np.where(live, labels[:, steps], 0).astype(np.int64)
        if compress:
            prev = np.concatenate([last[:, None], lab[:, :-1]], axis=1)
            change = live & (lab != prev)
        else:
            change = live
        before, after = grow.steps(node, lab, change)
        if demos.rewards is not None:  # the previous step's reward, paid on this label
            i, b = np.nonzero(live & (steps > 0)[None, :])
            paid.append((before[i, b] * K + lab[i, b], demos.rewards[i, steps[b] - 1]))
        keys.append(((after * S + s) * A + demos.actions[:, steps])[live])
        last = np.where(live[:, -1], lab[:, -1], last)
    uniq, counts = _aggregate(np.concatenate(keys) if keys else np.empty(0, np.int64), bound=grow.n_nodes * S * A)
    rewards = None
    if demos.rewards is not None:
        if T < demos.horizon:  # step T − 1 of the trajectories the depth cuts: its next label is known
            cut = np.flatnonzero(demos.lengths > T)
            s = demos.states[cut, T].astype(np.int64)
            lab = mdp.labels[s] if labels is None else labels[cut, T].astype(np.int64)
            paid.append((node[cut] * K + lab, demos.rewards[cut, T - 1]))
        if final_labels is not None:
            paid.append(final_rewards(node, final_labels, demos.lengths, demos.rewards, T, K))
        rewards = RewardCounts.of(
            np.concatenate([k for k, _ in paid]) if paid else np.empty(0, np.int64),
            np.concatenate([r for _, r in paid]) if paid else np.empty(0),
        )
    return CountTable(grow.trie(compress), uniq, counts, S, A, K, demos.n_trajectories, rewards)


def merge_counts(a: CountTable, b: CountTable) -> CountTable:
    """The reduce: ``b``'s words grafted onto ``a``'s trie (``a``'s ids kept), counts added."""
    if (a.n_states, a.n_actions, a.n_letters) != (b.n_states, b.n_actions, b.n_letters):
        raise DataError("cannot merge counts made on different MDPs")
    if a.trie.compressed != b.trie.compressed:
        raise DataError("cannot merge compressed and uncompressed counts")
    grow = TrieBuilder.from_trie(a.trie, a.n_letters)
    mapped = np.zeros(b.trie.n_nodes, dtype=np.int64)
    for level in b.trie.levels()[1:]:
        mapped[level] = grow.children(mapped[b.trie.parent[level]], b.trie.letter[level])
    SA = a.n_states * a.n_actions
    b_keys = mapped[b.keys // SA] * SA + b.keys % SA
    merged = merge_sorted(a.keys, a.counts, b_keys, b.counts)  # a few answers: no sort of the table
    keys, counts = merged or _aggregate(np.concatenate([a.keys, b_keys]), np.concatenate([a.counts, b.counts]))
    b_rewards = None if b.rewards is None else b.rewards.renumbered(mapped, a.n_letters)
    return CountTable(
        grow.trie(a.trie.compressed),
        keys,
        counts,
        a.n_states,
        a.n_actions,
        a.n_letters,
        a.n_trajectories + b.n_trajectories,
        merge_rewards(a.rewards, b_rewards),
    )


def count_stream(
    mdp: LabeledMDP,
    chunks: Iterable,
    *,
    compress: bool = True,
    depth: int | None = None,
    progress: Progress | Callable[[int], None] | None = None,
    total: int | None = None,
) -> CountTable:
    """Map every chunk and reduce as they come: trajectories are never all in memory.

    Each chunk is a :class:`Demonstrations` or a pair ``(demos, labels)`` with per-step
    labels (see :func:`count_chunk`). ``progress`` (a :class:`~rmtk.progress.Progress` or a
    callable of the number counted so far) hears after every chunk; ``total`` is the
    number of trajectories expected, when known."""
    progress = as_progress(progress)
    reducer = TreeReducer(merge_counts)
    done = 0
    for index, chunk in enumerate(chunks):
        chunk, labels = _chunk(chunk, index)
        reducer.add(count_chunk(mdp, chunk, compress=compress, depth=depth, labels=labels))
        done += chunk.n_trajectories
        progress.count(done, total)
    if not reducer.n_inputs:
        raise DataError("no demonstrations to count")
    return reducer.result()


def _chunk(chunk, index) -> tuple[Demonstrations, np.ndarray | None]:
    chunk, labels = chunk if isinstance(chunk, tuple) else (chunk, None)
    if not isinstance(chunk, Demonstrations):
        raise DataError(
            f"chunk {index}: expected Demonstrations or (Demonstrations, labels), got {type(chunk).__name__}"
        )
    return chunk, labels


def canonical_counts(table: CountTable) -> CountTable:
    """The same counts on the trie renumbered breadth-first: by word length, then by the
    parent's new id, then by letter. Two tables of the same words and counts become equal
    arrays, whatever order the words were met in (a subclass, such as a recording of
    :func:`rmtk.gym.collect`, keeps its class and its other fields)."""
    trie = table.trie
    new = np.zeros(trie.n_nodes, dtype=np.int64)
    next_id = 1
    for level in trie.levels()[1:]:
        order = np.lexsort((trie.letter[level], new[trie.parent[level]]))
        new[level[order]] = next_id + np.arange(len(level))
        next_id += len(level)
    old = np.empty_like(new)
    old[new] = np.arange(trie.n_nodes)
    parent = trie.parent[old]
    parent = np.where(parent >= 0, new[np.maximum(parent, 0)], -1)
    SA = table.n_states * table.n_actions
    keys = new[table.keys // SA] * SA + table.keys % SA
    order = np.argsort(keys, kind="stable")
    return attrs.evolve(
        table,
        trie=Trie(parent, trie.letter[old], trie.length[old], compressed=trie.compressed),
        keys=keys[order],
        counts=table.counts[order],
        rewards=None if table.rewards is None else table.rewards.renumbered(new, table.n_letters),
    )


# ---------------------------------------------------------------------- the map and reduce of the engines
@attrs.frozen
class PartialCount:
    """What a count job returns: the table of the trajectories it counted (None if none),
    their number, and ``(partition, first id, last id)`` of the Parquet partitions among them."""

    table: CountTable | None
    trajectories: int = 0
    spans: tuple = ()


def merge_partial(a: PartialCount, b: PartialCount) -> PartialCount:
    """The reduce of :class:`CountJob` results (:func:`merge_counts` on the tables)."""
    table = a.table if b.table is None else b.table if a.table is None else merge_counts(a.table, b.table)
    return PartialCount(table, a.trajectories + b.trajectories, a.spans + b.spans)


@attrs.frozen
class CountJob:
    """The map: count one item — a :class:`~rmtk.data.Demonstrations` chunk, a
    ``(demos, labels)`` pair, or a :class:`~rmtk.data.parquet_dataset.Partition` of
    ``dataset`` (read, validated against ``mdp`` and counted ``chunk`` trajectories at a
    time). Picklable, so any engine can run it."""

    mdp: Any
    compress: bool = True
    depth: int | None = None
    chunk: int = 250_000
    dataset: Any = None

    def __call__(self, item) -> PartialCount:
        if self.dataset is None:
            demos, labels = _chunk(item, 0)
            table = count_chunk(self.mdp, demos, compress=self.compress, depth=self.depth, labels=labels)
            return PartialCount(table, demos.n_trajectories)
        data = self.dataset.read(item, self.mdp)
        if not data.n_trajectories:
            return PartialCount(None)
        reducer = TreeReducer(merge_counts)
        for lo in range(0, data.n_trajectories, self.chunk):
            demos = data.demonstrations(self.mdp, lo, lo + self.chunk)
            reducer.add(count_chunk(self.mdp, demos, compress=self.compress, depth=self.depth))
        ids = data.ids
        return PartialCount(reducer.result(), data.n_trajectories, ((item, int(ids.min()), int(ids.max())),))


class Until:
    """The items of ``items`` until ``deadline`` passes, checked before each item but the first
    (the first is always given, so that something is counted); ``taken`` weighs the items
    given (``size(item)``, default 1) and ``cut`` says whether the deadline stopped them."""

    def __init__(self, items: Iterable, deadline: Deadline, size: Callable[[Any], int] | None = None):
        self.items, self.deadline, self.size = items, deadline, size
        self.taken, self.cut = 0, False

    def __iter__(self):
        for k, item in enumerate(self.items):
            if k and self.deadline.expired():
                self.cut = True
                return
            self.taken += 1 if self.size is None else int(self.size(item))
            yield item


def count_dataset(
    engine: Engine,
    mdp,
    dataset,
    *,
    compress: bool = True,
    depth: int | None = None,
    chunk: int = 250_000,
    progress: Progress | None = None,
    deadline: Deadline = NEVER,
) -> PartialCount:
    """Count a :class:`~rmtk.data.parquet_dataset.ParquetDataset` partition by partition on
    ``engine`` (progress over partitions), and refuse a trajectory whose rows are in two
    files. The table is in canonical order (:func:`canonical_counts`). Once ``deadline``
    passes no further partition is started: the count is then of those started
    (``PartialCount.spans`` lists them)."""
    from ..data.parquet_dataset import check_disjoint

    job = CountJob(mdp, compress, depth, chunk, dataset)
    parts = dataset.partitions
    out = engine.map_reduce(
        job,
        Until(parts, deadline),
        reduce=merge_partial,
        total=len(parts),
        what="partitions counted",
        progress=progress,
    )
    spans = sorted(out.spans, key=lambda s: (s[1], s[2]))
    reach, overlapping = None, set()
    for part, lo, hi in spans:  # id ranges that overlap: compare the ids exactly
        if reach is not None and lo <= reach[0]:
            overlapping |= {part, reach[1]}
        if reach is None or hi > reach[0]:
            reach = (hi, part)
    if overlapping:
        suspects = sorted(overlapping, key=lambda p: p.index)
        check_disjoint(list(zip(suspects, engine.map_reduce(dataset.ids, suspects, what="partitions checked"))))
    if out.table is None:
        raise DataError(f"{dataset.path}: no trajectories (every partition is empty)")
    return attrs.evolve(out, table=canonical_counts(out.table))


def prune_counts(table: CountTable, min_count: float) -> CountTable:
    """Keep the (word, cell) pairs seen at least ``min_count`` times, at cells where two or
    more such pairs remain (no other pair can yield a negative example); the trie is kept."""
    A, S = table.n_actions, table.n_states
    pair = table.keys // A
    uniq, inv = np.unique(pair, return_inverse=True)
    total = np.bincount(inv, weights=table.counts, minlength=len(uniq))
    keep_pair = total >= min_count
    state = uniq % S
    kept_states, per_state = np.unique(state[keep_pair], return_counts=True)
    multi = kept_states[per_state >= 2]
    keep_pair &= np.isin(state, multi)
    keep = keep_pair[inv]
    return CountTable(
        table.trie, table.keys[keep], table.counts[keep], S, A, table.n_letters, table.n_trajectories, table.rewards
    )


def to_policy(table: CountTable, depth: int | None = None) -> PrefixTreePolicy:
    """The empirical prefix tree policy p̂(a | s, σ) with its counts."""
    A = table.n_actions
    pair_key, action = table.keys // A, table.keys % A
    pairs, inv = np.unique(pair_key, return_inverse=True)
    counts = np.bincount(inv * A + action, weights=table.counts, minlength=len(pairs) * A)
    counts = counts.astype(np.int64).reshape(len(pairs), A)
    tree = PrefixTree(
        table.trie,
        pairs // table.n_states,
        pairs % table.n_states,
        depth if depth is not None else int(table.trie.length.max()),
    )
    return PrefixTreePolicy(
        tree, counts / counts.sum(axis=1, keepdims=True), counts=counts, n_trajectories=table.n_trajectories or None
    )


def empirical_policy(
    mdp: LabeledMDP,
    demos: Demonstrations,
    *,
    compress: bool = True,
    depth: int | None = None,
    chunk: int = 250_000,
    progress: Progress | Callable[[int], None] | None = None,
    labels: np.ndarray | None = None,
) -> PrefixTreePolicy:
    """Count ``demos`` in chunks of ``chunk`` trajectories and return the empirical policy
    (``labels``: optional per-step labels overriding the MDP's, see :func:`count_chunk`)."""
    chunks: Iterable[Any]
    if labels is None:
        chunks = demos.chunks(chunk)
    else:
        labels = np.asarray(labels)
        if labels.shape != demos.states.shape:
            raise DataError(f"labels have shape {labels.shape}, expected {demos.states.shape} like the states")
        chunks = (
            (part, labels[lo : lo + chunk, : part.horizon])
            for lo, part in zip(range(0, demos.n_trajectories, chunk), demos.chunks(chunk))
        )
    table = count_stream(mdp, chunks, compress=compress, depth=depth, progress=progress, total=demos.n_trajectories)
    return to_policy(table, depth)


# ---------------------------------------------------------------------- the PTP strategy
@attrs.frozen
class EmpiricalPTP(PTPCapabilities):
    """The PTP strategy of demonstrations (paper section 5, eq. 17): the empirical prefix
    tree policy p̂(a | s, σ) with its action counts.

    Args:
        data: :class:`~rmtk.data.Demonstrations`; a path (a Parquet dataset directory —
            read one partition at a time, never whole — or a ``.npz``/``.csv`` file, loaded
            and validated against the MDP) or a :class:`~rmtk.data.parquet_dataset.ParquetDataset` opened (its
            labels read as it says); a :class:`CountTable` already counted (used as
            it is); or an iterable of chunks (:class:`Demonstrations` or ``(demos, labels)``
            pairs) counted as they come. A one-shot iterable is counted on the first
            :meth:`build`; the counts are kept for later builds.
        depth: count only the first ``depth`` steps of each trajectory (default: all).
        compress: key the trie by non-stuttering compressed words.
        chunk: trajectories counted at once (memory ∝ chunk · steps).
        labels: per-step letters overriding the MDP's labels (:class:`Demonstrations` only, :func:`count_chunk`).
        total: number of trajectories a stream holds, for progress (optional).
        expert: the policy the demonstrations came from, when the target is a task: used
            for the false positive rate and the verdicts only (default: a count table's ``source``,
            the policy :func:`rmtk.gym.collect` recorded; else the task's soft-optimal policy).
        engine: where the counting runs: ``"local"`` (this process, the default),
            ``"dask"`` (a local Dask cluster started for the run) or an engine object such as
            ``DaskEngine(client=...)`` or ``DaskEngine(scheduler="tcp://host:8786")``
            (:mod:`rmtk.engines.local`). Every engine returns the same count table.

    Capabilities (:class:`~rmtk.ptp.tree.PTPCapabilities`): ``compress`` as set; the expert's
    policy classes from ``expert``; no oracle, no learning at every depth.

    The engine is a setting, not a strategy: it changes where the map and the reduce run, never
    the prefix tree policy they produce (the table is put in canonical order, :func:`canonical_counts`).
    """

    data: Any
    depth: int | None = None
    compress: bool = True
    chunk: int = 250_000
    labels: np.ndarray | None = attrs.field(default=None, eq=False, repr=False)
    total: int | None = None
    expert: PolicySource | None = None
    engine: Engine = attrs.field(factory=LocalEngine, converter=as_engine)
    _counted: dict = attrs.field(factory=dict, init=False, eq=False, repr=False)

    def __attrs_post_init__(self):
        if self.depth is not None and (isinstance(self.depth, bool) or self.depth < 1):
            raise RmtkError(f"depth must be at least 1 (or None for whole trajectories), got {self.depth!r}")
        if self.chunk < 1:
            raise RmtkError(f"chunk must be at least 1, got {self.chunk}")
        if self.labels is not None and not isinstance(self.data, Demonstrations):
            raise RmtkError("per-step labels go with Demonstrations data; a stream carries them in its chunks")

    def counts(self, mdp, progress: Progress | None = None) -> CountTable:
        """The count table of the data on ``mdp`` (counted once, then kept)."""
        return self.counted(mdp, progress)[0]

    def counted(
        self, mdp, progress: Progress | None = None, deadline: Deadline = NEVER
    ) -> tuple[CountTable, str | None]:
        """The count table of the data on ``mdp`` and, when ``deadline`` passed before all of
        it was counted, what was left out (no chunk or partition is started after it; a table
        of part of the data is not kept for later calls)."""
        progress = as_progress(progress)
        data = self.data
        if isinstance(data, CountTable):
            if (data.n_states, data.n_actions, data.n_letters) != (mdp.n_states, mdp.n_actions, mdp.n_propositions):
                raise DataError(
                    f"the count table was made on {data.n_states} states, {data.n_actions} actions and "
                    f"{data.n_letters} propositions; mdp {getattr(mdp, 'name', '')!r} has "
                    f"{mdp.n_states}, {mdp.n_actions} and {mdp.n_propositions}"
                )
            if data.trie.compressed != self.compress:
                raise DataError(
                    "the count table's words are "
                    + ("" if data.trie.compressed else "not ")
                    + "compressed, unlike this strategy's setting (compress="
                    + str(self.compress)
                    + ")"
                )
            return data, None
        key = (mdp.n_states, mdp.n_actions, mdp.n_propositions)
        if key in self._counted:
            return self._counted[key], None
        if not isinstance(data, Demonstrations):
            from ..data.parquet_dataset import ParquetDataset
            from ..data.parquet_io import is_dataset_path

            path = isinstance(data, (str, os.PathLike))
            if isinstance(data, ParquetDataset) or path and is_dataset_path(data):
                dataset = data if isinstance(data, ParquetDataset) else ParquetDataset.open(data, mdp)
                progress.note(f"counting {dataset.path}: {dataset.summary()} on the {self.engine}")
                part = count_dataset(
                    self.engine,
                    mdp,
                    dataset,
                    compress=self.compress,
                    depth=self.depth,
                    chunk=self.chunk,
                    progress=progress,
                    deadline=deadline,
                )
                assert part.table is not None  # count_dataset refuses an empty dataset
                n_parts = len(dataset.partitions)
                if len(part.spans) < n_parts:
                    return part.table, (
                        f"{len(part.spans)} of {n_parts} partitions counted ({part.trajectories:,} trajectories)"
                    )
                self._counted[key] = part.table
                return part.table, None
            if path:
                from ..data import load

                data = load(data, mdp)
        if self._counted and not isinstance(data, Demonstrations):
            raise DataError(
                "this stream of demonstrations was already counted on an MDP of another size; "
                "a stream can be read only once"
            )
        chunks: Iterable[Any]
        total: int | None
        if isinstance(data, Demonstrations):
            if self.labels is None:
                chunks = data.chunks(self.chunk)
            else:
                labels = np.asarray(self.labels)
                if labels.shape != data.states.shape:
                    raise DataError(f"labels have shape {labels.shape}, expected {data.states.shape} like the states")
                chunks = (
                    (part, labels[lo : lo + self.chunk, : part.horizon])
                    for lo, part in zip(range(0, data.n_trajectories, self.chunk), data.chunks(self.chunk))
                )
            total = data.n_trajectories
        else:
            try:
                chunks = iter(data)
            except TypeError:
                raise RmtkError(
                    f"EmpiricalPTP data must be Demonstrations, a path, a CountTable or an iterable of "
                    f"chunks, not {type(data).__name__}"
                ) from None
            total = self.total
        sizes = lambda c: len(c[0] if isinstance(c, tuple) else c)  # noqa: E731
        given = Until(chunks, deadline, sizes)
        out = self.engine.map_reduce(
            CountJob(mdp, self.compress, self.depth),
            given,
            reduce=merge_partial,
            sizes=sizes,
            total=total,
            what="trajectories",
            progress=progress,
        )
        table = canonical_counts(out.table)
        if given.cut:
            whole = f" of {total:,}" if total is not None else ""
            rest = "" if total is not None else "; the rest of the stream was not read"
            return table, f"{given.taken:,}{whole} trajectories counted{rest}"
        self._counted[key] = table
        return table, None

    def build(self, target, progress: Progress) -> PrefixTreePolicy:
        return self.build_within(target, progress, NEVER)[0]

    def build_within(self, target, progress: Progress, deadline: Deadline) -> tuple[PrefixTreePolicy, str | None]:
        """The empirical prefix tree policy of the trajectories counted before ``deadline``
        (chunks or partitions are not started after it) and what was left out."""
        mdp = target.mdp if isinstance(target, Task) else target
        t0 = time.perf_counter()
        table, unfinished = self.counted(mdp, progress, deadline)
        ptp = to_policy(table, self.depth)
        progress.stage("count", time.perf_counter() - t0, words=ptp.trie.n_nodes - 1, pairs=ptp.n_pairs)
        return ptp, unfinished

    def expert_classes(self, task: Task) -> np.ndarray | None:
        """``(S, n)`` policy classes of the expert the data came from (``expert``); ``None``: unknown."""
        recorded = self.data.source if isinstance(self.data, CountTable) else None
        return (self.expert or recorded or SoftOptimal()).class_table(task)
