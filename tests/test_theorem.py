"""Paper section 4, Theorem 1, checked on random small instances.

If the prefix tree depth is l ≥ |S|·u_max², every machine with at most u_max nodes that is
consistent with the depth-l prefix tree policy is policy-equivalent to the true machine (at
every depth). For each seeded random instance (≤ 3 states, 2 actions, ≤ 3 propositions, a
true machine of ≤ 2 nodes, an incomplete random transition kernel, random labels and start
distribution), with u_max = 2 and l = |S|·u_max²:

1. the learner finds a machine with at most as many nodes as the true one;
2. every enumerated solution is consistent at every depth (the exact verdict), and so is
   every *completion* of its unconstrained transitions — the theorem speaks of every
   satisfying assignment, not only the self-loop completion the learner reports.

Four families are covered: {non-stuttering machines, compressed words} and {any machine,
uncompressed words, no non-stuttering constraint}, each with the soft-optimal policy of
random rewards and with a random per-node stochastic policy table (paper appendix B).

The smallest sufficient depth d (the first depth at which every satisfying assignment is
policy-equivalent) is usually far below l; ``benchmarks/theorem.py`` prints its histogram.
Here only robust facts are asserted: d ≤ l, and once a depth suffices every larger one does.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pytest

from rmtk.learner.pipeline import ExactPTP, Learner, LearnResult, NodePolicyTable, SoftOptimal
from rmtk.machine.equivalence import consistency
from rmtk.machine.model import RewardMachine
from rmtk.mdp.model import LabeledMDP
from rmtk.sat.encoders import SatEncoder
from rmtk.task import Task

U_MAX = 2
MODES = ("non-stuttering", "stuttering")
SOURCES = ("soft-optimal", "table")
FAMILIES = [(m, s) for m in MODES for s in SOURCES]


# ---------------------------------------------------------------------- random instances
@dataclass
class Instance:
    seed: int
    mode: str  # "non-stuttering": compressed words + non-stuttering constraint; "stuttering": neither
    source_kind: str
    task: Task
    source: object

    @property
    def n_states(self) -> int:
        return self.task.mdp.n_states

    @property
    def bound(self) -> int:
        """The theorem's depth l = |S|·u_max²."""
        return self.n_states * U_MAX**2

    def learner(self, depth: int) -> Learner:
        if self.mode == "non-stuttering":
            return Learner(ExactPTP(depth, source=self.source), max_nodes=U_MAX, irl=None)
        return Learner(
            ExactPTP(depth, source=self.source, compress=False),
            max_nodes=U_MAX,
            irl=None,
            encoder=SatEncoder(non_stuttering=False),
        )

    def fit(self, depth: int) -> LearnResult:
        return self.learner(depth).fit(self.task)

    def describe(self) -> str:
        m, mdp = self.task.machine, self.task.mdp
        return (
            f"seed={self.seed} mode={self.mode} source={self.source_kind}: S={mdp.n_states} "
            f"K={mdp.n_propositions} labels={mdp.labels.tolist()} init={np.round(mdp.initial, 3).tolist()}\n"
            f"P=\n{np.round(mdp.P, 3)}\nmachine alphabet={m.alphabet} nodes={m.n_nodes} "
            f"delta_u={m.delta_u.tolist()} delta_r={np.round(m.delta_r, 3).tolist()}"
        )


def _sparse_distribution(rng: np.random.Generator, n: int, keep: float) -> np.ndarray:
    """A random distribution over n outcomes; each entry is zero with probability 1 − keep
    (at least one is positive)."""
    support = rng.random(n) < keep
    if not support.any():
        support[rng.integers(n)] = True
    p = np.zeros(n)
    p[support] = rng.dirichlet(np.ones(support.sum()))
    return p


def random_instance(seed: int, mode: str = "non-stuttering", source_kind: str = "soft-optimal") -> Instance:
    """A seeded random instance of the given family (mode × policy source)."""
    family = FAMILIES.index((mode, source_kind))
    rng = np.random.default_rng([seed, family])
    S = int(rng.choice([1, 2, 3], p=[0.1, 0.4, 0.5]))
    A = 2
    K = int(rng.integers(1, 4))
    P = np.array([[_sparse_distribution(rng, S, 0.6) for _ in range(S)] for _ in range(A)])
    labels = rng.integers(K, size=S)
    initial = _sparse_distribution(rng, S, 0.6)
    props = [f"p{k}" for k in range(K)]
    mdp = LabeledMDP.from_dense(P, labels, props, initial, gamma=0.9)

    n = int(rng.choice([1, 2], p=[0.3, 0.7]))
    alphabet = list(rng.permutation(props))  # same set as the MDP's propositions, any order
    while True:
        delta_u = rng.integers(n, size=(n, K))
        machine = RewardMachine(
            [f"q{i}" for i in range(n)], alphabet, delta_u, rng.normal(size=(n, K)), initial=int(rng.integers(n))
        )
        if mode == "non-stuttering" and not machine.is_non_stuttering():
            continue
        # the "stuttering" family asks for a stuttering machine whenever one exists (n = 2)
        if mode == "stuttering" and n > 1 and machine.is_non_stuttering():
            continue
        break
    task = Task(mdp, machine, lam=1.0)
    if source_kind == "soft-optimal":
        source = SoftOptimal()
    else:
        source = NodePolicyTable(rng.dirichlet(np.ones(A), size=(n, S)))
    return Instance(seed, mode, source_kind, task, source)


# ---------------------------------------------------------------------- exact checks
def completions(delta_u: np.ndarray, determined: np.ndarray, non_stuttering: bool):
    """Every transition function that agrees with ``delta_u`` on the determined transitions
    (non-stuttering ones only, when asked)."""
    n = delta_u.shape[0]
    free = np.argwhere(~determined)
    for values in itertools.product(range(n), repeat=len(free)):
        du = delta_u.copy()
        for (u, k), v in zip(free, values):
            du[u, k] = v
        if non_stuttering and not np.all(du[du, np.arange(du.shape[1])] == du):
            continue
        yield du


def all_assignments_consistent(inst: Instance, r: LearnResult) -> bool:
    """Every satisfying assignment (every solution × every completion of its unconstrained
    transitions) is policy-equivalent to the true machine at every depth."""
    task = inst.task
    true_du = task.machine.delta_u[:, task.letter_of_proposition]
    table = inst.source.class_table(task)
    for sol in r.solutions:
        for du in completions(sol.delta_u, sol.used, inst.mode == "non-stuttering"):
            v = consistency(task.mdp, true_du, table, du, true_initial=task.machine.initial)
            if not v.consistent:
                return False
    return True


def depth_profile(inst: Instance, max_depth: int | None = None) -> list[tuple[int, bool, bool]]:
    """``(d, every enumerated solution consistent, every satisfying assignment consistent)``
    for d = 1, 2, ... up to the first d at which every assignment is consistent (or
    max_depth, default l)."""
    out = []
    for d in range(1, (max_depth or inst.bound) + 1):
        r = inst.fit(d)
        assert r.n_nodes is not None  # the true machine (≤ u_max nodes) is always a solution
        everything = all_assignments_consistent(inst, r)
        out.append((d, all(v.consistent for v in r.verdicts), everything))
        if everything:
            break
    return out


def sufficient_depths(inst: Instance, max_depth: int | None = None) -> tuple[int | None, int | None]:
    """Smallest depths d ≤ max_depth (default l) at which (first) every enumerated solution's
    verdict is consistent, and (second) every satisfying assignment is consistent.

    Only the second is monotone: the learner reports unconstrained transitions as self-loops,
    the verdict judges that completion, and a deeper tree can turn another completion into
    a reported, inconsistent solution (see test_self_loop_completion_can_hide_inconsistency).
    """
    prof = depth_profile(inst, max_depth)
    reported = next((d for d, rep, _ in prof if rep), None)
    everything = next((d for d, _, ev in prof if ev), None)
    return reported, everything


# ---------------------------------------------------------------------- the property
SEEDS = range(20)


@pytest.mark.parametrize(
    "mode,source_kind",
    # the stuttering class with soft-optimal sources: about ten CPU seconds, CI runs it apart (setup.cfg)
    [pytest.param(*f, marks=pytest.mark.slow) if f == ("stuttering", "soft-optimal") else f for f in FAMILIES],
)
def test_theorem_1_on_random_instances(mode, source_kind):
    for seed in SEEDS:
        inst = random_instance(seed, mode, source_kind)
        l = inst.bound
        r = inst.fit(l)
        info = inst.describe()
        # (1) a solution exists and is never larger than the true machine
        assert r.n_nodes is not None, f"no solution at depth {l}\n{info}"
        assert r.n_nodes <= inst.task.machine.n_nodes, info
        assert r.machines and len(r.verdicts) == len(r.machines) == r.distinct_count, info
        # (2) every enumerated solution is policy-equivalent at every depth ...
        bad = [str(v) for v in r.verdicts if not v.consistent]
        assert not bad, f"depth {l} = |S|·u_max² yet inconsistent solutions: {bad}\n{info}"
        # ... and so is every completion of its unconstrained transitions
        assert all_assignments_consistent(inst, r), info
        if inst.mode == "non-stuttering":
            assert all(m.is_non_stuttering() for m in r.machines), info
        # the smallest sufficient depth is at most l, and sufficiency is monotone in depth
        reported, everything = sufficient_depths(inst)
        assert everything is not None and reported is not None and reported <= everything <= l, info
        for d in sorted({everything + 1, (everything + l) // 2}):
            if d < l:
                rd = inst.fit(d)
                assert rd.n_nodes == r.n_nodes and all_assignments_consistent(inst, rd), (d, info)


def test_random_instances_cover_the_intended_families():
    """The generator really produces what the property test claims to cover."""
    seen = {"stuttering": 0, "incomplete": 0, "two_nodes": 0, "three_states": 0, "partial_start": 0}
    for mode, source_kind in FAMILIES:
        for seed in SEEDS:
            inst = random_instance(seed, mode, source_kind)
            m, mdp = inst.task.machine, inst.task.mdp
            assert (mode == "stuttering") or m.is_non_stuttering()
            assert set(m.alphabet) == set(mdp.propositions)
            seen["stuttering"] += not m.is_non_stuttering()
            seen["incomplete"] += bool((mdp.P == 0).any())
            seen["two_nodes"] += m.n_nodes == 2
            seen["three_states"] += mdp.n_states == 3
            seen["partial_start"] += bool((mdp.initial == 0).any())
    assert all(v >= 5 for v in seen.values()), seen


# ---------------------------------------------------------------------- too shallow
# pinned instances, found among the random ones by benchmarks/theorem.py
SHALLOW = (41, "non-stuttering", "soft-optimal")  # needs depth 5 (l = 12)
SELF_LOOP_TRAP = (32, "stuttering", "table")  # reported solutions consistent at 2, not at 3


def test_too_shallow_depth_yields_inconsistent_solution():
    """Depths 1–4 admit an inconsistent smallest machine, and the verdict catches it with a
    witness; from depth 5 on every solution is consistent (the bound is l = 12)."""
    inst = random_instance(*SHALLOW)
    assert inst.bound == 12 and inst.task.machine.n_nodes == 2
    for d in (1, 2, 3, 4):
        r = inst.fit(d)
        assert r.n_nodes is not None
        bad = [v for v in r.verdicts if not v.consistent]
        assert bad, (d, inst.describe())
        w1, w2, state = bad[0].witness
        assert w1 and w2 and w1 != w2 and state in inst.task.mdp.states
        assert w1[0] == w2[0] == inst.task.mdp.label(int(inst.task.mdp.start_states[0]))
        assert max(len(w1), len(w2)) > d  # the clash lies beyond the prefix tree
    assert sufficient_depths(inst) == (5, 5)
    r = inst.fit(inst.bound)
    assert r.n_nodes == 2 and all(v.consistent for v in r.verdicts)


def test_self_loop_completion_can_hide_inconsistency():
    """At depth 2 the only enumerated solution (unconstrained transitions shown as
    self-loops) is consistent, yet another completion of it is not, and at depth 3 that
    completion is enumerated with an inconsistent verdict: "every reported solution is
    consistent" is not a monotone stopping rule; "every satisfying assignment" is."""
    inst = random_instance(*SELF_LOOP_TRAP)
    r2 = inst.fit(2)
    assert r2.distinct_count == 1 and r2.verdicts[0].consistent
    assert r2.unconstrained(0)  # some transitions are left free by the data
    assert not all_assignments_consistent(inst, r2)
    r3 = inst.fit(3)
    assert r3.n_nodes == r2.n_nodes and not all(v.consistent for v in r3.verdicts)
    assert depth_profile(inst) == [(1, False, False), (2, True, False), (3, False, False), (4, True, True)]
    assert all(v.consistent for v in inst.fit(inst.bound).verdicts)


def test_hand_made_detour_needs_depth_three():
    """States s0 (a), s1 (b), s2 (c); s0 → s0 or s1 or s2, s1 → s2, s2 → s2; start s0. The
    true machine moves q0 → q1 on b, and acts differently at s2 in q0 and in q1. State s2 is
    reached in q0 by "a c" (length 2) and in q1 only by "a b c" (length 3): up to depth 2 no
    state is reached by two words, there are no negative examples, and the 1-node machine
    is accepted although it is not policy-equivalent. Depth 3 already suffices (l = 12)."""
    P = np.zeros((2, 3, 3))
    P[0, 0] = [0.5, 0.5, 0.0]
    P[1, 0] = [0.5, 0.0, 0.5]
    P[:, 1, 2] = P[:, 2, 2] = 1.0
    mdp = LabeledMDP.from_dense(P, [0, 1, 2], ["a", "b", "c"], [1.0, 0.0, 0.0], gamma=0.9)
    machine = RewardMachine.from_transitions({("q0", "b"): "q1"}, ["a", "b", "c"], nodes=["q0", "q1"])
    assert machine.is_non_stuttering()
    table = np.full((2, 3, 2), 0.5)
    table[1, 2] = [0.9, 0.1]
    inst = Instance(-1, "non-stuttering", "table", Task(mdp, machine), NodePolicyTable(table))
    for d in (1, 2):
        r = inst.fit(d)
        assert r.n_nodes == 1 and len(r.verdicts) == 1
        v = r.verdicts[0]
        assert not v.consistent
        assert v.witness == (("a", "c"), ("a", "b", "c"), "s2")
    r = inst.fit(3)
    assert r.n_nodes == 2 and all(v.consistent for v in r.verdicts)
    assert sufficient_depths(inst) == (3, 3)
    r = inst.fit(inst.bound)
    assert r.n_nodes == 2 and all(v.consistent for v in r.verdicts)
    assert all_assignments_consistent(inst, r)
