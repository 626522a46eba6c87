"""Small random instances for the label learner's tests, and independent checks: a key of a
(labeling, machine) pair found by trying every renaming, the expert seen through a fixed
labeling (so that the label-given learner can run on any labeling), and a brute force over
every labeling."""

from __future__ import annotations

import itertools

import numpy as np

from rmtk import ExactPTP, RewardMachine, SatEncoder, Task
from rmtk.labels import LabelLearner
from rmtk.labels.histories import state_task
from rmtk.labels.pairs import mdp_reachable
from rmtk.limits import SearchLimits
from rmtk.mdp.model import LabeledMDP
from rmtk.ptp.exact import NodePolicyTable
from rmtk.ptp.tree import Trie
from rmtk.sat.encoding import Problem
from rmtk.sat.lazy import Counterexample
from rmtk.sat.search import canonical_partial


def pair_key(labels, delta_u, used, reach):
    """Independent key of a (labeling, machine) pair up to renaming of propositions (every
    permutation tried) and of nodes (breadth-first numbering of the used part)."""
    k = delta_u.shape[1]
    best = None
    for perm in itertools.permutations(range(k)):
        perm = np.array(perm)
        inv = np.argsort(perm)
        lab = tuple(int(perm[labels[s]]) for s in reach)
        cand = (lab, canonical_partial(delta_u[:, inv], used[:, inv])[0])
        best = cand if best is None or cand < best else best
    return best


def random_task(seed: int, policy: str = "table"):
    """A random task of 3–5 states, 2–3 propositions and a non-stuttering machine of 2–3 nodes,
    and (``policy="table"``) a random expert policy per (node, state)."""
    rng = np.random.default_rng(seed)
    S, A = int(rng.integers(3, 6)), 2
    K, n = int(rng.integers(2, 4)), int(rng.integers(2, 4))
    P = rng.random((A, S, S)) * (rng.random((A, S, S)) < 0.5)
    P[:, np.arange(S), rng.integers(S, size=S)] += 1.0
    P /= P.sum(axis=2, keepdims=True)
    initial = np.zeros(S)
    initial[rng.choice(S, size=2, replace=False)] = 0.5
    props = [f"p{i}" for i in range(K)]
    labels = np.r_[np.arange(K), rng.integers(K, size=S - K)] if S >= K else rng.integers(K, size=S)
    mdp = LabeledMDP.from_dense(P, rng.permutation(labels), props, initial, gamma=0.9)
    while True:
        m = RewardMachine([f"q{i}" for i in range(n)], props, rng.integers(n, size=(n, K)), rng.normal(size=(n, K)))
        if m.is_non_stuttering():
            break
    return Task(mdp, m, lam=1.0, max_nodes=3), rng.dirichlet(np.ones(A), size=(n, S)) if policy == "table" else None


def expert(task, table):
    return ExactPTP(None) if table is None else ExactPTP(None, source=NodePolicyTable(table))


def learn(task, table, **kw):
    return LabelLearner(expert(task, table), max_nodes=3, **kw).fit(task)


class LabelWordOracle:
    """The expert's state-history oracle seen through a fixed labeling: candidates are machines
    over the labels; counterexamples are turned into compressed label words. This lets the
    label-given learner (SatEncoder's lazy search) run on any labeling."""

    def __init__(self, state_oracle, labels):
        self.inner, self.labels = state_oracle, np.asarray(labels)

    def _word(self, states):
        word = [int(self.labels[s]) for s in states]
        return tuple(k for i, k in enumerate(word) if i == 0 or k != word[i - 1])

    def check(self, du):
        return [
            Counterexample(self._word(c.word1), self._word(c.word2), c.state, c.class1, c.class2, c.labels)
            for c in self.inner.check(du[:, self.labels])
        ]

    def exercised(self, du):
        used_s = self.inner.exercised(du[:, self.labels])
        used = np.zeros(du.shape, bool)
        ii, ss = np.nonzero(used_s)
        used[ii, self.labels[ss]] = True
        return used

    def lower_bound(self):
        return self.inner.lower_bound()


def labelings(reach, k):
    """Every labeling of ``reach`` onto exactly k propositions, one per renaming class
    (restricted growth strings)."""
    for combo in itertools.product(range(k), repeat=len(reach)):
        seen = -1
        ok = True
        for p in combo:
            if p > seen + 1:
                ok = False
                break
            seen = max(seen, p)
        if ok and seen == k - 1:
            yield combo


def brute_force(task, table, max_nodes=3, max_props=3):
    """Smallest (n, k) and the pairs there, over every labeling (label-given learner each)."""
    S = task.mdp.n_states
    reach = mdp_reachable(task.mdp)
    state_oracle = expert(task, table).oracle(state_task(task))
    per_size: dict = {}
    for k in range(1, min(max_props, len(reach)) + 1):
        for combo in labelings(reach, k):
            labels = np.zeros(S, np.int64)
            labels[reach] = combo
            oracle = LabelWordOracle(state_oracle, labels)
            res = SatEncoder().search(Problem(Trie.root(True), k, oracle=oracle), SearchLimits(max_nodes=max_nodes))
            if res.n_nodes is None:
                continue
            keys = {pair_key(labels, s.delta_u, s.used, reach) for s in res.solutions}
            per_size.setdefault((res.n_nodes, k), set()).update(keys)
    if not per_size:
        return None, set()
    best = min(per_size)
    return best, per_size[best]
