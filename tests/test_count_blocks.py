"""count_chunk takes the steps a block at a time (rmtk.ptp.empirical.COUNT_BLOCK_CELLS) and calls the
trie builder only on the steps where some word grows (by sorted arrays, or by a dictionary where
few words grow a step: rmtk.ptp.tree.ARRAY_EVENTS): the same count table, trie ids included, as
counting one step at a time (the reference below), for every block size."""

import attrs
import numpy as np
import pytest

from rmtk.data import Demonstrations
from rmtk.ptp import empirical
from rmtk.ptp import tree as ptp
from rmtk.ptp.empirical import count_chunk
from rmtk.ptp.tree import TrieBuilder


@attrs.frozen
class _MDP:
    labels: np.ndarray
    n_states: int = 7
    n_actions: int = 3
    n_propositions: int = 4


def step_by_step(mdp, demos, compress, depth, labels=None):
    """The count of one step at a time: (trie parent, letter; keys; reward keys and values)."""
    S, A, K = mdp.n_states, mdp.n_actions, mdp.n_propositions
    T = demos.horizon if depth is None else min(depth, demos.horizon)
    grow = TrieBuilder(K)
    N = demos.n_trajectories
    node, last = np.zeros(N, np.int64), np.full(N, -1, np.int64)
    keys, pk, pv = [], [], []
    for t in range(T):
        active = np.flatnonzero(demos.lengths > t)
        if not len(active):
            break
        s = demos.states[active, t].astype(np.int64)
        lab = mdp.labels[s] if labels is None else labels[active, t].astype(np.int64)
        if demos.rewards is not None and t:
            pk.append(node[active] * K + lab)
            pv.append(demos.rewards[active, t - 1])
        changed = lab != last[active] if compress else np.ones(len(active), bool)
        move = active[changed]
        if len(move):
            node[move] = grow.children(node[move], lab[changed])
        last[active] = lab
        keys.append((node[active] * S + s) * A + demos.actions[active, t])
    trie = grow.trie(compress)
    return trie, np.unique(np.concatenate(keys)), pk, pv, node


@pytest.mark.parametrize("block", [1, 3, 50, 1 << 20])
@pytest.mark.parametrize("compress", [True, False])
@pytest.mark.parametrize("depth", [None, 5])
@pytest.mark.parametrize("walk", [0, 1 << 30])  # the children looked up per step (arrays) or per event (a dict)
def test_blocks_count_as_steps(monkeypatch, block, compress, depth, walk):
    rng = np.random.default_rng(block + 7 * compress + (depth or 0))
    N, T = 40, 12
    mdp = _MDP(labels=rng.integers(0, 4, size=7))
    lengths = rng.integers(1, T + 1, size=N)
    pad = np.arange(T)[None, :] >= lengths[:, None]
    states = np.where(pad, -1, rng.integers(0, 3, size=(N, T)))  # few states: long runs of one label
    actions = np.where(pad, -1, rng.integers(0, 3, size=(N, T)))
    rewards = np.where(pad, np.nan, rng.integers(0, 3, size=(N, T)).astype(float))
    demos = Demonstrations(states, actions, lengths, rewards=rewards)
    monkeypatch.setattr(empirical, "COUNT_BLOCK_CELLS", block * N)
    monkeypatch.setattr(ptp, "ARRAY_EVENTS", walk)
    table = count_chunk(mdp, demos, compress=compress, depth=depth)
    trie, keys, pk, pv, node = step_by_step(mdp, demos, compress, depth)
    assert np.array_equal(table.trie.parent, trie.parent) and np.array_equal(table.trie.letter, trie.letter)
    assert np.array_equal(table.keys, keys)
    steps = depth if depth is not None and depth < T else T
    if steps < T:  # the reward of step depth − 1 of the trajectories the depth cuts
        cut = np.flatnonzero(lengths > steps)
        pk.append(node[cut] * 4 + mdp.labels[states[cut, steps]])
        pv.append(rewards[cut, steps - 1])
    want = empirical.RewardCounts.of(np.concatenate(pk), np.concatenate(pv))
    assert table.rewards == want and table.rewards.counts.sum() > 0
    labels = np.where(pad, -1, rng.integers(0, 4, size=(N, T)))  # per-step labels overriding the MDP's
    table = count_chunk(mdp, demos, compress=compress, depth=depth, labels=labels)
    trie, keys, *_ = step_by_step(mdp, demos, compress, depth, labels)
    assert np.array_equal(table.trie.parent, trie.parent) and np.array_equal(table.keys, keys)
