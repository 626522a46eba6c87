"""Prefix tree policies (paper section 2.3): for every label word σ the MDP can produce
(``1 ≤ |σ| ≤ l``, from the start states) and every state s ∈ Reach(σ), the action
distribution ``π_PTP(·|s, σ)``.

The words form a trie. With non-stuttering *compression* (on by default, docs/design/02-conventions.md),
runs of a repeated label collapse (``AAB`` → ``AB``): a trie node then stands for every word
of length ≤ l that compresses to it, and its reachable states are the union of theirs.

The trie is built level by level over the uncompressed length with numpy: a frontier of
(trie node, state) pairs is expanded through the MDP's successor relation, child ids are
found or created by a sorted-key lookup on ``(parent, label)``, and pairs already reached at
a smaller length are dropped (they were expanded then). No Python loop runs per pair.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import attrs
import numpy as np

from .._arrays import array_eq, float_array, int_array, unique
from ..errors import ModelError, RmtkError
from ..learner.capabilities import Capabilities
from ..mdp.model import LabeledMDP

if TYPE_CHECKING:
    from ..limits import Deadline
    from ..mdp.space import Space
    from ..progress import Progress
    from ..task import Task


@attrs.frozen
class Trie:
    """Label words as a trie; node 0 is the empty word (the root).

    Attributes:
        parent: ``parent[p]`` (−1 for the root).
        letter: last proposition index of the word of ``p`` (−1 for the root).
        length: number of letters of the (compressed) word of ``p``.
        compressed: whether runs of a repeated label are collapsed.
    """

    parent: np.ndarray = attrs.field(converter=int_array, eq=array_eq)
    letter: np.ndarray = attrs.field(converter=int_array, eq=array_eq)
    length: np.ndarray = attrs.field(converter=int_array, eq=array_eq)
    compressed: bool = True
    #: the levels, computed once (every decoded candidate runs its machine on the trie)
    _levels: list = attrs.field(factory=list, init=False, eq=False, repr=False)

    @classmethod
    def root(cls, compressed: bool = True) -> Trie:
        """The trie of the empty word alone."""
        return cls(np.array([-1]), np.array([-1]), np.array([0]), compressed=compressed)

    @property
    def n_nodes(self) -> int:
        return len(self.parent)

    def word(self, p: int) -> list[int]:
        """Proposition indices of the word of trie node ``p``."""
        out = []
        while p > 0:
            out.append(int(self.letter[p]))
            p = int(self.parent[p])
        return out[::-1]

    def run(self, delta_u: np.ndarray, initial: int, letter_map: np.ndarray | None = None) -> np.ndarray:
        """``node[p] = δ*(u_I, word(p))`` for every trie node, vectorised by word length.

        ``letter_map`` maps the trie's proposition indices to the machine's letter indices.
        """
        node = np.empty(self.n_nodes, dtype=np.int64)
        node[0] = initial
        letters = self.letter if letter_map is None else np.where(self.letter >= 0, letter_map[self.letter], -1)
        for level in self.levels()[1:]:
            node[level] = delta_u[node[self.parent[level]], letters[level]]
        return node

    def levels(self) -> list[np.ndarray]:
        """Trie node ids grouped by word length (level 0 is the root); computed once."""
        if not self._levels:
            order = np.argsort(self.length, kind="stable")
            bounds = np.searchsorted(self.length[order], np.arange(self.length.max() + 2))
            levels = [order[bounds[d] : bounds[d + 1]] for d in range(len(bounds) - 1)]
            for level in levels:
                level.setflags(write=False)  # shared by every caller
            self._levels[:] = levels  # whole, in one step: another thread sees none or all
        return list(self._levels)

    def children(self) -> tuple[np.ndarray, np.ndarray]:
        """Trie edges as arrays ``(parents, children)`` (root's children included)."""
        kids = np.arange(1, self.n_nodes)
        return self.parent[kids], kids


@attrs.frozen
class PrefixTree:
    """The domain of a depth-``l`` prefix tree policy: a trie of label words and the
    (trie node, state) pairs ``(σ, s)`` with ``s ∈ Reach(σ)``, sorted by node then state."""

    trie: Trie
    pair_node: np.ndarray = attrs.field(converter=int_array, eq=array_eq)
    pair_state: np.ndarray = attrs.field(converter=int_array, eq=array_eq)
    depth: int = 0

    @property
    def n_pairs(self) -> int:
        return len(self.pair_node)


#: :meth:`TrieBuilder.steps` looks children up one event at a time (a dictionary) when a block
#: of steps has fewer events than this per step on average, else one sorted-array look-up per
#: step: on this machine an array look-up costs about 40 events' worth of dictionary look-ups.
ARRAY_EVENTS = 40


class TrieBuilder:
    """Grows a trie by batches: :meth:`children` returns (creating when missing) the ids of
    the children ``(parent, letter)`` of whole arrays at once, by a sorted-key lookup. New
    nodes take the next ids in the order of their keys ``parent·K + letter``; the node arrays
    grow by doubling (no copy of the whole trie per batch)."""

    def __init__(self, n_letters: int):
        self.K = n_letters
        self._nodes = np.array([[-1, -1, 0]], dtype=np.int64)  # rows: parent, letter, length
        self.n_nodes = 1
        self._keys = np.empty(0, dtype=np.int64)  # sorted parent*K + letter
        self._ids = np.empty(0, dtype=np.int64)

    def _flatten(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        rows = self._nodes[: self.n_nodes]
        return rows[:, 0], rows[:, 1], rows[:, 2]

    def letters(self) -> np.ndarray:
        """Last letter of every node so far (−1 for the root)."""
        return self._flatten()[1]

    def _grow(self, m: int) -> None:
        """Room for ``m`` more nodes (the node array grows by doubling)."""
        need = self.n_nodes + m
        if need > len(self._nodes):
            grown = np.empty((max(need, 2 * len(self._nodes)), 3), dtype=np.int64)
            grown[: self.n_nodes] = self._nodes[: self.n_nodes]
            self._nodes = grown

    def _add(self, parent: np.ndarray, letter: np.ndarray) -> None:
        m, need = len(parent), self.n_nodes + len(parent)
        self._grow(m)
        new = self._nodes[self.n_nodes : need]
        new[:, 0], new[:, 1], new[:, 2] = parent, letter, self._nodes[parent, 2] + 1
        self.n_nodes += m

    def children(self, parent: np.ndarray, letter: np.ndarray) -> np.ndarray:
        keys = np.asarray(parent, dtype=np.int64) * self.K + letter
        if len(self._keys):
            pos = np.searchsorted(self._keys, keys).clip(max=len(self._keys) - 1)
            found = self._keys[pos] == keys
        else:
            pos, found = np.zeros(len(keys), dtype=np.int64), np.zeros(len(keys), dtype=bool)
        out = np.empty(len(keys), dtype=np.int64)
        out[found] = self._ids[pos[found]]
        if found.all():
            return out
        new_keys, inverse = np.unique(keys[~found], return_inverse=True)
        new_ids = self.n_nodes + np.arange(len(new_keys))
        out[~found] = new_ids[inverse]
        self._add(new_keys // self.K, new_keys % self.K)
        merged = np.concatenate([self._keys, new_keys])
        order = np.argsort(merged, kind="stable")
        self._keys = merged[order]
        self._ids = np.concatenate([self._ids, new_ids])[order]
        return out

    def steps(self, node: np.ndarray, lab: np.ndarray, change: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The nodes of a block of steps of ``N`` words: ``(N, B)`` each word's node before and
        after each step. A step where ``change`` holds extends the word by its label ``lab``;
        the new words are met one step at a time (words in order), so the ids are those a
        step-by-step count gives. ``node`` (the nodes before the block) is moved to those after it.

        Steps where few words grow (fewer than :data:`ARRAY_EVENTS` a step on average: short
        or few episodes) are walked by :meth:`_walk`, one dictionary look-up per event, instead
        of a sorted-array look-up per step; both give the same ids."""
        start = node.copy()
        t, i = np.nonzero(change.T)  # by step, then word
        event = np.empty(len(t), np.int64)
        if len(t):
            cut = np.flatnonzero(np.diff(t)) + 1
            bounds = list(zip(np.r_[0, cut].tolist(), np.r_[cut, len(t)].tolist()))
            if len(t) < ARRAY_EVENTS * len(bounds):
                event[:] = self._walk(node, i, lab[i, t], bounds)
            else:
                for a, b in bounds:
                    rows = i[a:b]
                    event[a:b] = node[rows] = self.children(node[rows], lab[rows, t[a]])
        mark = np.full(change.shape, -1, np.int64)
        mark[i, t] = np.arange(len(t))
        mark = np.maximum.accumulate(mark, axis=1)  # a word's last change so far (its events rise with the step)
        after = np.where(mark >= 0, event[np.maximum(mark, 0)] if len(t) else 0, start[:, None])
        before = np.concatenate([start[:, None], after[:, :-1]], axis=1)
        return before, after

    def _walk(self, node: np.ndarray, word: np.ndarray, letter: np.ndarray, bounds: list) -> list[int]:
        """The nodes the events reach (event ``e``: word ``word[e]`` grows by ``letter[e]``;
        ``bounds`` the events of each step), made as :meth:`children` makes them, step by step:
        the new children of a step numbered in the order of their keys ``parent·K + letter``.
        ``node`` is moved to the words' last nodes."""
        K, n0 = self.K, self.n_nodes
        table = dict(zip(self._keys.tolist(), self._ids.tolist()))
        at, words, letters = node.tolist(), word.tolist(), letter.tolist()
        lengths = self._nodes[:n0, 2].tolist()
        out: list[int] = []
        new_keys: list[int] = []
        for a, b in bounds:
            keys = [at[words[e]] * K + letters[e] for e in range(a, b)]
            missing = sorted({k for k in keys if k not in table})
            for k in missing:
                table[k] = n0 + len(new_keys)
                new_keys.append(k)
                lengths.append(lengths[k // K] + 1)
            for e, k in zip(range(a, b), keys):
                at[words[e]] = table[k]
                out.append(table[k])
        node[:] = at
        if new_keys:
            added = np.asarray(new_keys, np.int64)
            self._grow(len(added))
            rows = self._nodes[n0 : n0 + len(added)]
            rows[:, 0], rows[:, 1], rows[:, 2] = added // K, added % K, lengths[n0:]
            self.n_nodes += len(added)
            merged = np.concatenate([self._keys, added])
            order = np.argsort(merged, kind="stable")
            self._keys = merged[order]
            self._ids = np.concatenate([self._ids, n0 + np.arange(len(added))])[order]
        return out

    @classmethod
    def from_trie(cls, trie: Trie, n_letters: int) -> TrieBuilder:
        """A builder that continues an existing trie (ids are kept)."""
        b = cls(n_letters)
        b._nodes = np.stack([trie.parent, trie.letter, trie.length], axis=1).astype(np.int64)
        b.n_nodes = trie.n_nodes
        kids = np.arange(1, trie.n_nodes)
        keys = trie.parent[kids] * n_letters + trie.letter[kids]
        order = np.argsort(keys, kind="stable")
        b._keys, b._ids = keys[order], kids[order]
        return b

    def trie(self, compressed: bool) -> Trie:
        parent, letter, length = (np.array(a) for a in self._flatten())
        return Trie(parent, letter, length, compressed=compressed)


#: The most (word, state) pairs a built prefix tree may hold.
MAX_TREE_PAIRS = 4_000_000
#: The most levels a built prefix tree may grow while it still gains pairs.
MAX_TREE_LEVELS = 5_000


def _too_large(mdp: LabeledMDP, depth: int, level: int, pairs: int) -> RmtkError:
    return RmtkError(
        f"a prefix tree of depth {depth} is too large to build: at depth {level} it holds {pairs:,} (word, state) "
        f"pairs and still grows (bounds: {MAX_TREE_PAIRS:,} pairs, {MAX_TREE_LEVELS:,} levels). No depth beyond "
        f"|S|·u_max² = {mdp.n_states}·u_max² is ever needed (Theorem 1); learn at every depth instead ('depth inf' "
        "in the task, --depth inf, ExactPTP(None)), which builds no tree, or give a smaller depth"
    )


def build_prefix_tree(mdp: LabeledMDP, depth: int, *, compress: bool = True, start=None) -> PrefixTree:
    """All ``(σ, s)`` with ``1 ≤ |σ| ≤ depth`` (uncompressed length), σ the labels of a
    feasible state sequence from a start state (the support of μ0 unless ``start`` is given).

    A tree that passes :data:`MAX_TREE_PAIRS` pairs, or still grows after
    :data:`MAX_TREE_LEVELS` levels, is refused with an error that points to every-depth
    learning: a huge depth then ends in a message, not in a run that grows without end."""
    if depth < 1:
        raise ModelError(f"the prefix tree depth must be at least 1, got {depth}")
    S, K = mdp.n_states, mdp.n_propositions
    succ = mdp.successor_matrix()
    labels = mdp.labels
    starts = np.asarray(mdp.start_states if start is None else start, dtype=np.int64)

    grow = TrieBuilder(K)
    children_of = grow.children

    nodes = children_of(np.zeros(len(starts), dtype=np.int64), labels[starts])
    frontier = unique(nodes * S + starts)
    seen = frontier
    for level in range(2, depth + 1):
        if level > MAX_TREE_LEVELS:
            raise _too_large(mdp, depth, level - 1, len(seen))
        f_node, f_state = frontier // S, frontier % S
        counts = succ.indptr[f_state + 1] - succ.indptr[f_state]
        if counts.sum() == 0:
            break
        rep = np.repeat(np.arange(len(frontier)), counts)
        offsets = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
        nxt = succ.indices[succ.indptr[f_state][rep] + offsets]
        par = f_node[rep]
        lab = labels[nxt]
        child = np.empty(len(nxt), dtype=np.int64)
        stay = (grow.letters()[par] == lab) if compress else np.zeros(len(nxt), bool)
        child[stay] = par[stay]
        if (~stay).any():
            child[~stay] = children_of(par[~stay], lab[~stay])
        keys = unique(child * S + nxt)
        keys = keys[~np.isin(keys, seen, assume_unique=True)]
        if len(keys) == 0:
            break
        seen = unique(np.concatenate((seen, keys)))
        if len(seen) > MAX_TREE_PAIRS:
            raise _too_large(mdp, depth, level, len(seen))
        frontier = keys
    pairs = seen
    return PrefixTree(grow.trie(compress), pairs // S, pairs % S, depth)


PolicyFn = Callable[[np.ndarray, np.ndarray], np.ndarray]


@attrs.frozen
class PrefixTreePolicy:
    """A prefix tree with an action distribution per (word, state) pair.

    Attributes:
        tree: the domain (trie + pairs).
        policy: ``(n_pairs, |A|)`` action distributions, row ``i`` for pair ``i``.
        true_nodes: optional ``(n_pairs,)`` node of the generating machine (for evaluation).
        classes: optional ``(n_pairs,)`` policy-class ids that override the comparison of
            ``policy`` rows (the "one distinct policy per node" mode of the paper's counts).
        counts: for an empirical policy, the ``(n_pairs, |A|)`` action counts behind it.
        n_trajectories: for an empirical policy, the number of trajectories counted.
    """

    tree: PrefixTree
    policy: np.ndarray = attrs.field(converter=float_array, eq=array_eq, repr=False)
    true_nodes: np.ndarray | None = attrs.field(default=None, eq=False, repr=False)
    classes: np.ndarray | None = attrs.field(default=None, eq=False, repr=False)
    counts: np.ndarray | None = attrs.field(default=None, eq=False, repr=False)
    n_trajectories: int | None = attrs.field(default=None, eq=False)

    @property
    def trie(self) -> Trie:
        return self.tree.trie

    @property
    def n_pairs(self) -> int:
        return self.tree.n_pairs


@runtime_checkable
class PTP(Protocol):
    """The PTP strategy: where the prefix tree policy comes from (paper section 2.3, exact;
    section 5, eq. 17, empirical).

    Consumes the learning target (a :class:`~rmtk.task.Task`, or a bare
    :class:`~rmtk.mdp.model.LabeledMDP` or :class:`~rmtk.mdp.space.Space` when the truth is unknown);
    produces a :class:`PrefixTreePolicy` — a trie of label words and the action distribution
    (and, from data, the action counts) at every (word, state) pair. Long stages report to
    ``progress``.

    ``build`` is all a strategy must have. What else it can do (compressed words, learning at
    every depth, an oracle, the expert's policy classes for verdicts) are its capabilities:
    :class:`PTPCapabilities`, with the defaults a strategy gets when it does not say.
    """

    def build(self, target: Task | LabeledMDP | Space, progress: Progress) -> PrefixTreePolicy:
        """The prefix tree policy of ``target``."""


class PTPCapabilities(Capabilities):
    """What a PTP strategy can do beyond :meth:`PTP.build`, with the defaults of one that does
    not say (docs/design/05-strategies.md). rmtk's PTP strategies inherit it; so may a user's,
    overriding what it can do. A strategy that does not inherit it is read with these defaults
    for whatever it does not define (:meth:`~rmtk.learner.capabilities.Capabilities.of`)."""

    __slots__ = ()

    #: The trie's words are non-stuttering compressed (runs of a label collapsed), which the
    #: encoder must then assume (its ``non_stuttering``). Default: ``True``, rmtk's convention.
    compress: bool = True

    def every_depth_for(self, target: Task | LabeledMDP | Space | None) -> bool:
        """Whether learning ``target`` must hold at every depth: the learner then needs
        :meth:`oracle` and builds no tree. Default: ``False``."""
        return False

    def oracle(self, target: Task | LabeledMDP | Space) -> object | None:
        """An oracle (:class:`rmtk.sat.lazy.Oracle`) that checks candidate machines against this
        strategy's policy without building the prefix tree, used by lazy and every-depth
        learning; ``None`` (the default): it has none for ``target``, so the learner builds the
        tree and checks candidates against it."""
        return None

    def expert_classes(self, task: Task) -> np.ndarray | None:
        """``(S, n)`` policy class of each (state, node of the task's machine) under the expert
        the policy comes from: the learner's verdicts and false positive rates compare with it.
        ``None`` (the default): unknown, so no verdicts are given (a guess could be wrong)."""
        return None

    def build_within(
        self, target: Task | LabeledMDP | Space, progress: Progress, deadline: Deadline
    ) -> tuple[PrefixTreePolicy, str | None]:
        """:meth:`PTP.build` under the run's ``deadline``: the prefix tree policy and, when the
        deadline stopped the build early, what it left out, in words (the policy then holds part
        of the data, e.g. the trajectories counted so far). Default: the whole build, which the
        deadline does not interrupt (``None``)."""
        return self.build(target, progress), None  # type: ignore[attr-defined]


@attrs.frozen
class Disagreements:
    """Recorded (word, word, state) triples the machines disagree on (some send the two words
    to one node, others to two): indices ``i``, ``j`` of the two (word, state) pairs, and which
    machines split each, kept once per distinct split: ``splits`` is the ``(machines, distinct
    splits)`` matrix of the machines that send the words to two nodes, ``which[t]`` the column of
    triple t. Distinct splits are far fewer than triples, so this holds the machines × triples
    table without its size: three integers a triple and one column a distinct split. Columns
    are in the order of their bits (``numpy.packbits`` over the machines, then sorted)."""

    i: np.ndarray
    j: np.ndarray
    which: np.ndarray
    splits: np.ndarray

    def __len__(self) -> int:
        return len(self.i)

    @property
    def split(self) -> np.ndarray:
        """The ``(machines, triples)`` matrix of the machines that split each triple, in full:
        machines × triples booleans, for a few triples only (index ``splits`` by ``which``)."""
        return self.splits[:, self.which]


#: Distinct signature pairs whose splits are compared at a time in :func:`disagreements`.
SPLIT_BLOCK = 1 << 12


def _signatures(trie: Trie, nodes: np.ndarray, deltas: list[np.ndarray]) -> np.ndarray:
    """The rank of each trie node of ``nodes`` by its vector of final nodes under ``deltas``
    (machine 0 first, lexicographic: the order ``numpy.unique`` along an axis gives). A few
    machines at a time fold into one integer key per node (its rank so far, then their final
    nodes as digits), so the ``(machines, nodes)`` matrix is never made."""
    base = max(int(np.asarray(d).shape[0]) for d in deltas) + 1  # final nodes + 1: digits 0..n
    sig, n_sig, m = np.zeros(len(nodes), np.int64), 1, 0
    while m < len(deltas):
        key, scale = sig, n_sig
        while m < len(deltas) and scale * base < 2**62:
            key = key * base + (trie.run(np.asarray(deltas[m]), 0)[nodes] + 1)
            scale, m = scale * base, m + 1
        uniq, sig = np.unique(key, return_inverse=True)
        sig, n_sig = sig.reshape(-1), len(uniq)
    return sig


def _splits(trie: Trie, rep: np.ndarray, a: np.ndarray, b: np.ndarray, deltas: list[np.ndarray]):
    """Which machines split each signature pair (``a``, ``b``: signatures, ``rep``: a trie
    node of each): the packed bits of the pairs some machines split and others merge, the
    number of machines that split each pair, a block of pairs at a time."""
    k = len(deltas)
    small = np.int8 if max(int(np.asarray(d).shape[0]) for d in deltas) < 127 else np.int64
    finals = np.empty((len(rep), k), small)  # one row per signature
    for m, d in enumerate(deltas):
        finals[:, m] = trie.run(np.asarray(d), 0)[rep]
    packed = np.empty((len(a), (k + 7) // 8), np.uint8)
    n_split = np.empty(len(a), np.int64)
    for lo in range(0, len(a), SPLIT_BLOCK):
        split = finals[a[lo : lo + SPLIT_BLOCK]] != finals[b[lo : lo + SPLIT_BLOCK]]
        packed[lo : lo + SPLIT_BLOCK] = np.packbits(split, axis=1)
        n_split[lo : lo + SPLIT_BLOCK] = split.sum(axis=1)
    return packed, n_split


def _index_type(n: int):
    return np.int32 if n < 2**31 else np.int64


def _triples(rows: np.ndarray, bounds: np.ndarray, chunk: int):
    """The pairs ``(rows[p], rows[q])``, ``p < q``, within each group ``bounds[g]:bounds[g + 1]``
    of ``rows``, groups of one size together (smallest first, then by position), at most about
    ``chunk`` pairs a piece."""
    size = np.diff(bounds)
    for g in np.unique(size[size >= 2]).tolist():
        starts = bounds[:-1][size == g]
        a, b = np.triu_indices(g, 1)
        step = max(1, chunk // len(a))
        for lo in range(0, len(starts), step):
            s = starts[lo : lo + step, None]
            yield rows[(s + a[None, :]).ravel()], rows[(s + b[None, :]).ravel()]


#: Triples made at a time in :func:`disagreements` (a piece's arrays are a few times this many).
TRIPLE_CHUNK = 1 << 21


def disagreements(trie, node, state, rank, deltas: list[np.ndarray]) -> Disagreements:
    """The triples of the (word, state) pairs (trie ``node`` and ``state`` of each) that the
    machines ``deltas`` disagree on. Words a state's pairs share a vector of final nodes for
    (a *signature*) split the machines alike, so per state and signature one pair stands for
    them, the first by ``rank`` (smallest first; the index breaks ties): the triples are the
    pairs of representatives of two signatures at one state. Which machines split a triple
    depends on its two signatures alone, so it is found once per distinct signature pair.
    Memory: a few integers per pair and three per triple (32-bit below 2^31 pairs), made a
    piece at a time, plus one small integer per machine and signature and one bit per machine
    and distinct signature pair; never machines × triples."""
    k = len(deltas)
    node, state, rank = np.asarray(node), np.asarray(state), np.asarray(rank)  # integers of any width
    empty = Disagreements(np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.int64), np.zeros((k, 0), bool))
    if not len(node) or not k:
        return empty
    idx = _index_type(len(node))
    nodes, at = np.unique(node, return_inverse=True)
    sig_of_node = _signatures(trie, nodes, deltas)
    sig = sig_of_node[at.reshape(-1)].astype(idx)
    del at
    order = np.lexsort((np.arange(len(node), dtype=idx), rank, sig, state))
    first = np.ones(len(order), dtype=bool)
    first[1:] = (state[order][1:] != state[order][:-1]) | (sig[order][1:] != sig[order][:-1])
    rows = order[first].astype(idx)
    del order, first
    st = state[rows]
    bounds = np.flatnonzero(np.r_[True, st[1:] != st[:-1], True])
    del st
    size = np.diff(bounds)
    total = int((size * (size - 1) // 2).sum())
    n_sig = int(sig_of_node.max()) + 1
    i, j = np.empty(total, idx), np.empty(total, idx)
    keys, at_ = [], 0
    for p, q in _triples(rows, bounds, TRIPLE_CHUNK):  # the triples, and their distinct signature pairs
        i[at_ : at_ + len(p)], j[at_ : at_ + len(p)] = p, q
        keys.append(np.unique(sig[p].astype(np.int64) * n_sig + sig[q]))
        at_ += len(p)
    pair = np.unique(np.concatenate(keys)) if keys else np.empty(0, np.int64)
    del keys
    rep = np.empty(n_sig, np.int64)
    rep[sig_of_node] = nodes
    packed, n_split = _splits(trie, rep, pair // n_sig, pair % n_sig, deltas)
    useful_pair = (n_split > 0) & (n_split < k)
    if not useful_pair.any():
        return empty
    columns, column_of = np.unique(packed[useful_pair], axis=0, return_inverse=True)
    del packed
    col = np.full(len(pair), -1, np.int64)
    col[useful_pair] = column_of.reshape(-1)
    which = np.empty(total, _index_type(len(columns)))
    kept = 0  # the useful triples, moved to the front in place, a piece at a time
    for lo in range(0, total, TRIPLE_CHUNK):
        p, q = i[lo : lo + TRIPLE_CHUNK], j[lo : lo + TRIPLE_CHUNK]
        c = col[np.searchsorted(pair, sig[p].astype(np.int64) * n_sig + sig[q])]
        keep = c >= 0
        n = int(keep.sum())
        i[kept : kept + n], j[kept : kept + n], which[kept : kept + n] = p[keep], q[keep], c[keep]
        kept += n
    splits = np.unpackbits(columns, axis=1, count=k).astype(bool).T.copy()
    return Disagreements(i[:kept], j[:kept], which[:kept], splits)
