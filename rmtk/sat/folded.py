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
    edges ``edge_parent[e] —edge_letter[e]→ edge_child[e]``; the deciding observations as
    rows ``(node, letter, value)`` on the graph's nodes, each once."""

    n_nodes: int
    edge_parent: np.ndarray = attrs.field(converter=int_array, eq=array_eq)
    edge_letter: np.ndarray = attrs.field(converter=int_array, eq=array_eq)
    edge_child: np.ndarray = attrs.field(converter=int_array, eq=array_eq)
    node: np.ndarray = attrs.field(converter=int_array, eq=array_eq)
    letter: np.ndarray = attrs.field(converter=int_array, eq=array_eq)
    value: np.ndarray = attrs.field(converter=float_array, eq=array_eq)


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
    need = np.zeros(trie.n_nodes, bool)
    need[0] = True
    need[node] = True
    for level in trie.levels()[:0:-1]:
        need[trie.parent[level[need[level]]]] = True
    # a word's future: its rows (letter, value) and its edges (letter, the child's class)
    rows: dict[int, list] = {}
    for p, k, v in zip(node.tolist(), letter.tolist(), value.reshape(-1).tolist()):
        rows.setdefault(p, []).append((k, v))
    parent, letters = trie.parent.tolist(), trie.letter.tolist()
    edges: dict[int, list] = {}
    classes: dict[tuple, int] = {}
    cls = np.full(trie.n_nodes, -1, np.int64)
    for level in trie.levels()[::-1]:
        for p in level[need[level]].tolist():
            future = (tuple(sorted(rows.get(p, ()))), tuple(sorted(edges.get(p, ()))))
            c = cls[p] = classes.setdefault(future, len(classes))
            if p:
                edges.setdefault(parent[p], []).append((letters[p], c))
    # renumbered from the root (alone in its class: no other word has so long a future)
    n = len(classes)
    rename = np.empty(n, np.int64)
    rename[np.r_[cls[0], np.setdiff1d(np.arange(n), [cls[0]])]] = np.arange(n)
    kids = np.flatnonzero(need[1:]) + 1
    edge = np.unique(np.stack([rename[cls[trie.parent[kids]]], trie.letter[kids], rename[cls[kids]]]), axis=1)
    row = np.unique(np.stack([rename[cls[node]], letter, value.reshape(-1)]), axis=1)
    return Folded(n, edge[0], edge[1], edge[2], row[0], row[1], values[row[2]])
