"""The formula of reward traces on fewer words: the trie folded where the machines it admits
stay the same (docs/design/rewards-evidence.md, "Fewer words, the same machines").

Without negative examples, a word's run variables (``x[p,i]``: the word of ``p`` ends in node
``i``) are constrained only by the runs along the trie (:func:`~rmtk.sat.encoding.prefix_runs`)
and by the observations made after the word (:func:`~rmtk.sat.encoding.reward_outputs`), and
only in one direction (a run variable set true when no word ends there still satisfies them).
So two reductions keep exactly the same transition assignments, hence the same sizes, the
same fewest moving transitions and the same machines:

* a letter every observation of which paid the same value constrains nothing (each node may
  pay that value on it): its rows are dropped, and the words below which no other row is
  observed are cut;
* words whose observed futures are the same (the same (letter, value) rows, the same letters
  leading to words with the same futures) ask the same of whatever node they end in: they
  share one set of run variables. The trie becomes an acyclic graph with its common subtrees
  shared (a minimal acyclic automaton of the observed futures); a shared node's variables
  may then be true at several machine nodes at once, each bound by the same constraints.

On Craft t9 from 400 episodes over raw words (28,147 observations) the 27,749 words fold into
4,801 graph nodes and 5,011 edges; the runs' clauses shrink in proportion.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs
import numpy as np

from .._arrays import array_eq, float_array, int_array

if TYPE_CHECKING:
    from ..traces.rewards import RewardTraces


@attrs.frozen
class Folded:
    """The words of reward traces folded into an acyclic graph: node 0 the empty word; the
    edges ``edge_parent[e] —edge_letter[e]→ edge_child[e]``, each 2^``edge_power[e]`` steps
    on its letter; the deciding observations as rows ``(node, letter, value)`` on the graph's
    nodes, each once."""

    n_nodes: int
    edge_parent: np.ndarray = attrs.field(converter=int_array, eq=array_eq)
    edge_letter: np.ndarray = attrs.field(converter=int_array, eq=array_eq)
    edge_child: np.ndarray = attrs.field(converter=int_array, eq=array_eq)
    node: np.ndarray = attrs.field(converter=int_array, eq=array_eq)
    letter: np.ndarray = attrs.field(converter=int_array, eq=array_eq)
    value: np.ndarray = attrs.field(converter=float_array, eq=array_eq)
    edge_power: np.ndarray = attrs.field(converter=int_array, eq=array_eq)


def deciding_rows(obs: RewardTraces) -> np.ndarray:
    """Which rows of ``obs`` can decide anything: those of letters observed paying two values
    or more (a letter paid one value throughout is satisfied by every node paying it)."""
    if not obs.n_rows:
        return np.zeros(0, bool)
    values, value = np.unique(obs.value, return_inverse=True)
    n_letters = int(obs.letter.max()) + 1
    paid = np.zeros((n_letters, len(values)), bool)
    paid[obs.letter, value.reshape(-1)] = True
    return (paid.sum(axis=1) > 1)[obs.letter]


def fold(obs: RewardTraces) -> Folded:
    """``obs``'s words cut to those with a deciding row at or below them
    (:func:`deciding_rows`), then folded: each word numbered by the class of its observed
    future, the deepest words first, so that two words share a node exactly when their
    subtrees, with their rows, are the same."""
    trie = obs.trie
    keep = deciding_rows(obs)
    node, letter = obs.node[keep], obs.letter[keep]
    values, value = np.unique(obs.value[keep], return_inverse=True)
    parent, letters = trie.parent.tolist(), trie.letter.tolist()
    marked = bytearray(trie.n_nodes)  # the words with a deciding row at or below them
    marked[0] = 1
    for p in np.unique(node).tolist():
        while not marked[p]:
            marked[p] = 1
            p = parent[p]
    need = np.frombuffer(bytes(marked), bool)
    needed = np.flatnonzero(need)
    # a word's future: its rows (letter, value; sorted, as the traces' rows) and its edges
    # (letter, the child's class), numbered from the deepest words up
    rows: dict[int, list] = {}
    for p, k, v in zip(node.tolist(), letter.tolist(), value.reshape(-1).tolist()):
        rows.setdefault(p, []).append((k, v))
    edges: dict[int, list] = {}
    classes: dict[tuple, int] = {}
    cls = [-1] * trie.n_nodes
    futures = {p: (tuple(r), ()) for p, r in rows.items()}
    none = ((), ())
    for p in needed[np.argsort(-trie.length[needed], kind="stable")].tolist():
        below = edges.pop(p, None)
        if below is None:
            future = futures.get(p, none)
        else:
            future = (futures[p][0] if p in futures else (), tuple(sorted(below)) if len(below) > 1 else below[0])
        c = cls[p] = classes.setdefault(future, len(classes))
        if p:
            up = parent[p]
            if up in edges:
                edges[up].append((letters[p], c))
            else:
                edges[up] = [(letters[p], c)]
    cls = np.array(cls, np.int64)
    # renumbered from the root (alone in its class: no other word has so long a future)
    n = len(classes)
    rename = np.empty(n, np.int64)
    rename[np.r_[cls[0], np.setdiff1d(np.arange(n), [cls[0]])]] = np.arange(n)
    kids = needed[1:]
    edge = _distinct(rename[cls[trie.parent[kids]]], trie.letter[kids], rename[cls[kids]])
    row = _distinct(rename[cls[node]], letter, value.reshape(-1))
    return Folded(n, edge[0], edge[1], edge[2], row[0], row[1], values[row[2]], np.zeros(edge.shape[1], np.int64))


#: Compressed words are encoded as a tree (:func:`cut`) instead of folded when their folding
#: keeps at least this many nodes: where few words share their futures, the search is hard and
#: the tree's clauses pay (Craft t10 from random subgoals, 200 episodes: 3,402 folded nodes,
#: 4,366 words; 6 nodes refuted in 0.2 M conflicts, not 11.6 M). The other reward rows of
#: docs/benchmarks/rewards.md fold into 10-688 nodes, where the folded formula, a third to a
#: half of the tree's, is the faster (Craft t9, 400 episodes: 0.15 against 0.34 CPU s a fit).
TREE_FROM = 2_000


def cut(obs: RewardTraces) -> Folded:
    """``obs``'s words cut to those with a deciding row at or below them (:func:`deciding_rows`),
    not folded: a tree, each node one word, so that a machine sends each to exactly one node
    (:func:`~rmtk.sat.encoding.one_node_each`), which folded words may not say (a shared node
    stands for words that may end in different nodes). Numbered in the trie's order."""
    trie = obs.trie
    keep = deciding_rows(obs)
    node, letter, value = obs.node[keep], obs.letter[keep], obs.value[keep]
    parent = trie.parent.tolist()
    marked = bytearray(trie.n_nodes)
    marked[0] = 1
    for p in np.unique(node).tolist():
        while not marked[p]:
            marked[p] = 1
            p = parent[p]
    need = np.flatnonzero(np.frombuffer(bytes(marked), bool))
    ids = np.full(trie.n_nodes, -1, np.int64)
    ids[need] = np.arange(len(need))
    kids = need[1:]
    row = _distinct(ids[node], letter, np.unique(value, return_inverse=True)[1].reshape(-1))
    values = np.unique(value)
    zero = np.zeros(len(kids), np.int64)
    return Folded(len(need), ids[trie.parent[kids]], trie.letter[kids], ids[kids], row[0], row[1], values[row[2]], zero)


def _distinct(*columns: np.ndarray) -> np.ndarray:
    """The distinct rows of non-negative integer ``columns``, sorted, as a ``(len(columns), m)``
    array (one packed key each: cheaper than ``np.unique(axis=1)``)."""
    if not len(columns[0]):
        return np.zeros((len(columns), 0), np.int64)
    sizes = [int(c.max()) + 1 for c in columns]
    key = np.zeros(len(columns[0]), np.int64)
    for c, size in zip(columns, sizes):
        key = key * size + c
    key = np.unique(key)
    out = []
    for size in sizes[::-1]:
        key, c = np.divmod(key, size)
        out.append(c)
    return np.stack(out[::-1])


def contract_runs(words: Folded) -> Folded:
    """``words`` with each run of one letter through nodes that observe nothing and have one
    edge in and one out, m steps, made one edge per binary digit of m, each 2^s steps (largest
    first), through new nodes: the nodes inside the runs go, the powers of the letter's
    transitions (:func:`~rmtk.sat.encoding.letter_powers`) replace their run variables. Over
    raw words (a letter repeats while the agent stays; a machine may move on each repetition)
    the runs of the letter of nothing are most of the graph: Craft t9, 400 episodes, 5,011
    edges become 1,737."""
    n = words.n_nodes
    edge = np.stack([words.edge_parent, words.edge_letter, words.edge_child])
    parent, letter, child = (a.tolist() for a in edge)
    n_in, n_out = np.bincount(edge[2], minlength=n), np.bincount(edge[0], minlength=n)
    quiet = (n_in == 1) & (n_out == 1)
    quiet[words.node] = False
    into = np.full(n, -1, np.int64)
    into[edge[2]] = edge[1]
    after = {p: (k, c) for p, k, c in zip(parent, letter, child)}  # the one edge out of a quiet node
    out_of = np.full(n, -2, np.int64)
    out_of[edge[0]] = edge[1]
    inside = quiet & (into == out_of)  # a run goes on through it
    ids = np.full(n, -1, np.int64)
    ids[~inside] = np.arange(int((~inside).sum()))
    top = int((~inside).sum())
    out: list[tuple[int, int, int, int]] = []
    for p, k, c in zip(parent, letter, child):
        if inside[p]:
            continue  # inside a run: counted from the run's first edge
        m = 1
        while inside[c]:
            c = after[c][1]
            m += 1
        at = int(ids[p])
        bits = [s for s in range(m.bit_length() - 1, -1, -1) if m >> s & 1]
        for s in bits[:-1]:
            out.append((at, k, top, s))
            at, top = top, top + 1
        out.append((at, k, int(ids[c]), bits[-1]))
    e = np.array(out, np.int64).reshape(-1, 4).T
    return Folded(top, e[0], e[1], e[2], ids[words.node], words.letter, words.value, e[3])
