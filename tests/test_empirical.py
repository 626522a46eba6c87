"""Empirical prefix tree policy: counts equal a slow reference; chunked = one pass."""

from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest

from rmtk import dsl
from rmtk.data import Demonstrations
from rmtk.progress import Progress
from rmtk.ptp.empirical import count_chunk, count_stream, empirical_policy, merge_counts, to_policy

MODELS = Path(__file__).resolve().parents[1] / "models"


def random_walks(mdp, n, T, seed, ragged=False):
    """Feasible random trajectories (uniform actions), optionally of random lengths."""
    rng = np.random.default_rng(seed)
    P = mdp.P
    trajs = []
    for _ in range(n):
        s = rng.choice(mdp.n_states, p=mdp.initial)
        length = rng.integers(1, T + 1) if ragged else T
        tr = []
        for _ in range(length):
            a = rng.integers(mdp.n_actions)
            tr.append((s, a))
            s = rng.choice(mdp.n_states, p=P[a, s])
        trajs.append(tr)
    return Demonstrations.from_lists(trajs)


def reference_counts(mdp, demos, compress, depth=None):
    out = defaultdict(Counter)
    for i in range(demos.n_trajectories):
        word = []
        for t in range(demos.lengths[i]):
            if depth is not None and t >= depth:
                break
            s, a = int(demos.states[i, t]), int(demos.actions[i, t])
            lab = int(mdp.labels[s])
            if not (compress and word and word[-1] == lab):
                word.append(lab)
            out[(tuple(word), s)][a] += 1
    return out


def as_dict(ptp):
    trie = ptp.trie
    return {
        (tuple(trie.word(p)), int(s)): Counter({a: int(c) for a, c in enumerate(row) if c})
        for p, s, row in zip(ptp.tree.pair_node, ptp.tree.pair_state, ptp.counts)
    }


@pytest.fixture(scope="module")
def stack():
    return dsl.load(MODELS / "stack.rm").tasks["stack"]


@pytest.mark.parametrize("compress", [True, False])
@pytest.mark.parametrize("ragged", [False, True])
def test_counts_equal_reference(stack, compress, ragged):
    demos = random_walks(stack.mdp, 300, 12, seed=1, ragged=ragged)
    ptp = empirical_policy(stack.mdp, demos, compress=compress)
    assert as_dict(ptp) == reference_counts(stack.mdp, demos, compress)
    assert ptp.counts.sum() == demos.n_steps
    assert np.allclose(ptp.policy.sum(axis=1), 1.0)


def test_depth_limit(stack):
    demos = random_walks(stack.mdp, 200, 10, seed=2)
    ptp = empirical_policy(stack.mdp, demos, depth=4)
    assert as_dict(ptp) == reference_counts(stack.mdp, demos, True, depth=4)


def test_chunked_counting_equals_one_pass(stack):
    demos = random_walks(stack.mdp, 500, 10, seed=3, ragged=True)
    whole = as_dict(empirical_policy(stack.mdp, demos, chunk=10_000))
    for chunk in (1, 7, 128):
        assert as_dict(empirical_policy(stack.mdp, demos, chunk=chunk)) == whole


def test_reduce_is_associative_and_commutative_in_content(stack):
    demos = random_walks(stack.mdp, 300, 8, seed=4)
    a, b, c = (count_chunk(stack.mdp, d) for d in demos.chunks(100))
    left = to_policy(merge_counts(merge_counts(a, b), c))
    right = to_policy(merge_counts(a, merge_counts(b, c)))
    swapped = to_policy(merge_counts(merge_counts(c, a), b))
    assert as_dict(left) == as_dict(right) == as_dict(swapped)


class Counts(Progress):
    def __init__(self):
        self.calls = []

    def count(self, done, total, what="trajectories"):
        self.calls.append((done, total))


def test_stream_progress(stack):
    demos = random_walks(stack.mdp, 50, 5, seed=5)
    seen = Counts()
    count_stream(stack.mdp, demos.chunks(20), progress=seen)
    assert seen.calls == [(20, None), (40, None), (50, None)]


def test_counting_stops_at_the_deadline_between_partitions(stack, tmp_path):
    """A Parquet dataset is counted partition by partition: once the deadline passes no
    partition is started, and what was counted is the count of the partitions read."""
    from rmtk.data import save
    from rmtk.limits import Deadline, clear_stop, request_stop
    from rmtk.progress import Progress
    from rmtk.ptp.empirical import EmpiricalPTP

    class StopAfterOne(Progress):
        def count(self, done, total, what="trajectories"):
            if what == "partitions counted" and done >= 1:
                request_stop("terminated")

    demos = random_walks(stack.mdp, 300, 12, seed=3)
    save(demos, tmp_path / "d.parquet", stack.mdp, partition_size=100)
    try:
        table, unfinished = EmpiricalPTP(tmp_path / "d.parquet").counted(stack.mdp, StopAfterOne(), Deadline())
    finally:
        clear_stop()
    assert unfinished == "1 of 3 partitions counted (100 trajectories)"
    assert table == EmpiricalPTP(demos[:100]).counts(stack.mdp)
    whole, rest = EmpiricalPTP(tmp_path / "d.parquet").counted(stack.mdp, Progress(), Deadline())
    assert rest is None and whole == EmpiricalPTP(demos).counts(stack.mdp)
