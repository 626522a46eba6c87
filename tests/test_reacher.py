"""The reacher experiment: counting with per-step labels (no LabeledMDP), the discretiser,
labels and expert (plain numpy), and — when gymnasium and mujoco are installed — the
simulation, streamed counting and the quick experiment."""
import math
from pathlib import Path

import attrs
import numpy as np
import pytest

from rmtk import dsl
from rmtk.data import Demonstrations
from rmtk.empirical import count_chunk, count_stream, empirical_policy, merge_counts, to_policy
from rmtk.errors import DataError
from rmtk.envs import reacher as R

MODELS = Path(__file__).resolve().parents[1] / "models"


def as_dict(ptp):
    trie = ptp.trie
    return {
        (tuple(trie.word(p)), int(s)): tuple(int(c) for c in row)
        for p, s, row in zip(ptp.tree.pair_node, ptp.tree.pair_state, ptp.counts)
    }


def table_dict(table):
    return as_dict(to_policy(table))


# ====================================================================== counting without a LabeledMDP
@attrs.frozen
class Shape:
    """Only what the counter needs."""

    n_states: int
    n_actions: int
    n_propositions: int


@pytest.fixture(scope="module")
def stack():
    return dsl.load(MODELS / "stack.rm").tasks["stack"]


def random_walks(mdp, n, T, seed, ragged=False):
    rng = np.random.default_rng(seed)
    trajs = []
    for _ in range(n):
        s = rng.choice(mdp.n_states, p=mdp.initial)
        tr = []
        for _ in range(rng.integers(1, T + 1) if ragged else T):
            a = rng.integers(mdp.n_actions)
            tr.append((s, a))
            s = rng.choice(mdp.n_states, p=mdp.P[a, s])
        trajs.append(tr)
    return Demonstrations.from_lists(trajs)


def mdp_labels(mdp, demos):
    lab = np.full(demos.states.shape, -1, dtype=np.int64)
    inside = demos.mask()
    lab[inside] = mdp.labels[demos.states[inside]]
    return lab


@pytest.mark.parametrize("compress", [True, False])
@pytest.mark.parametrize("ragged", [False, True])
def test_labels_argument_equals_mdp_labels(stack, compress, ragged):
    mdp = stack.mdp
    demos = random_walks(mdp, 200, 10, seed=1, ragged=ragged)
    shape = Shape(mdp.n_states, mdp.n_actions, mdp.n_propositions)
    ref = count_chunk(mdp, demos, compress=compress)
    new = count_chunk(shape, demos, compress=compress, labels=mdp_labels(mdp, demos))
    assert new == ref  # same trie ids, keys and counts
    # the labels override the MDP's when both are there
    assert count_chunk(mdp, demos, compress=compress, labels=mdp_labels(mdp, demos)) == ref


def test_labels_need_not_be_a_function_of_the_state():
    # two trajectories through the same states with different labels: different words
    demos = Demonstrations.full([[0, 1, 1], [0, 1, 1]], [[0, 0, 1], [0, 1, 1]])
    labels = np.array([[0, 1, 1], [0, 2, 0]])
    table = count_chunk(Shape(2, 2, 3), demos, labels=labels)
    got = table_dict(table)
    assert got == {
        ((0,), 0): (2, 0),
        ((0, 1), 1): (1, 1),  # "0 1 1" compresses to "0 1"
        ((0, 2), 1): (0, 1),
        ((0, 2, 0), 1): (0, 1),
    }


def test_stream_and_policy_with_labels(stack):
    mdp = stack.mdp
    demos = random_walks(mdp, 300, 9, seed=2, ragged=True)
    labels = mdp_labels(mdp, demos)
    shape = Shape(mdp.n_states, mdp.n_actions, mdp.n_propositions)
    whole = as_dict(empirical_policy(mdp, demos))
    for chunk in (1, 64, 1000):
        assert as_dict(empirical_policy(shape, demos, chunk=chunk, labels=labels)) == whole
    chunks = [(part, labels[lo : lo + 50, : part.horizon]) for lo, part in zip(range(0, 300, 50), demos.chunks(50))]
    assert as_dict(to_policy(count_stream(shape, chunks))) == whole
    # mixing plain chunks (MDP labels) and labelled chunks
    mixed = [chunks[0][0]] + chunks[1:]
    assert as_dict(to_policy(count_stream(mdp, mixed))) == whole


def test_bad_labels_are_refused():
    demos = Demonstrations.full([[0, 1]], [[0, 0]])
    shape = Shape(2, 1, 2)
    with pytest.raises(DataError, match="shape"):
        count_chunk(shape, demos, labels=np.zeros((1, 3), dtype=int))
    with pytest.raises(DataError, match="step 1: label 2"):
        count_chunk(shape, demos, labels=np.array([[0, 2]]))
    with pytest.raises(DataError, match="integer"):
        count_chunk(shape, demos, labels=np.array([[0.0, 1.0]]))
    # padding may hold anything negative
    ragged = Demonstrations.from_lists([[(0, 0), (1, 0)], [(1, 0)]])
    count_chunk(shape, ragged, labels=np.array([[0, 1], [1, -1]]))


def test_keys_are_int64_safe_at_reacher_scale():
    S = R.Discretiser().n_states
    demos = Demonstrations.full([[S - 1, S - 2]], [[24, 0]])
    table = count_chunk(R.Space(S), demos, labels=np.array([[3, 2]]))
    ptp = to_policy(table)
    assert sorted(as_dict(ptp)) == [((3,), S - 1), ((3, 2), S - 2)]
    assert ptp.counts[:, 24].sum() == 1


# ====================================================================== discretiser, labels, expert (numpy)
def test_state_count():
    d = R.Discretiser()
    assert d.n_states == 36 * 36 * 112 * 112 == 16_257_024
    assert d.angle_width == pytest.approx(math.radians(10))
    assert d.velocity_width == pytest.approx(0.25)


def test_discretiser_bins_by_hand():
    d = R.Discretiser()
    rad = math.radians
    angles = np.array([
        [-math.pi, 0.0],  # −180° → bin 0; 0° → bin 18
        [rad(-175), rad(5)],  # inside bins 0 and 18
        [rad(9.999), rad(10.001)],  # 18 and 19
        [math.pi, 3 * math.pi],  # +180° wraps to −180° → bin 0 (both)
        [rad(179.999), -rad(0.001)],  # 35 and 17
        [rad(-190), rad(370)],  # −190° ≡ 170° → 35; 370° ≡ 10° → 19
    ])
    vel = np.array([[0.0, -0.001], [-14.0, 13.999], [14.0, -20.0], [100.0, 0.25], [0.2499, -0.25], [-14.1, 13.75]])
    b = d.bins(angles, vel)
    assert b[:, :2].tolist() == [[0, 18], [0, 18], [18, 19], [0, 0], [35, 17], [35, 19]]
    assert b[:, 2:].tolist() == [[56, 55], [0, 111], [111, 0], [111, 57], [56, 55], [0, 111]]
    idx = d.index(angles, vel)
    assert np.array_equal(d.decode(idx), b)
    assert idx.min() >= 0 and idx.max() < d.n_states
    assert d.index([[math.pi - 1e-9, math.pi - 1e-9]], [[14, 14]])[0] == d.n_states - 1
    assert d.index([[-math.pi, -math.pi]], [[-14, -14]])[0] == 0


def test_cell_centres():
    d = R.Discretiser()
    a, v = d.centre(d.index([[0.01, -0.01]], [[0.1, -13.99]]))
    assert np.allclose(np.degrees(a), [[5, -5]])
    assert np.allclose(v, [[0.125, -13.875]])
    rng = np.random.default_rng(0)
    idx = rng.integers(0, d.n_states, 1000)
    assert np.array_equal(d.index(*d.centre(idx)), idx)  # a centre lies in its own cell


def test_fingertip_and_labels():
    tip = R.fingertip([[0.0, 0.0], [math.pi / 2, 0.0], [0.0, math.pi / 2]])
    assert np.allclose(tip, [[0.21, 0], [0, 0.21], [0.1, 0.11]])
    assert R.label(tip).tolist() == [0, 0, 3]  # (0.1, 0.11) is r
    pts = np.array([
        [0.1, -0.11], [-0.1, 0.11], [0.1, 0.11],  # centres: b, y, r
        [0.1 + 0.0199, -0.11], [-0.1, 0.11 - 0.0199],  # just inside
        [0.1 + 0.0201, 0.11], [0.0, 0.0], [0.1, 0.0],  # outside
    ])
    assert R.label(pts).tolist() == [1, 2, 3, 1, 2, 0, 0, 0]
    # the inverse kinematics hits every target, both elbow branches
    for sign in (1, -1):
        q = R.inverse_kinematics(R.TARGETS, sign)
        assert np.allclose(R.fingertip(q), R.TARGETS)
        assert R.label(R.fingertip(q)).tolist() == [1, 2, 3]


def test_true_machine_and_advance():
    m = R.true_machine()
    assert m.n_nodes == 4 and m.alphabet == R.PROPOSITIONS
    assert m.run([0, 1, 3, 1, 2, 1, 3, 1, 2]) == [0, 0, 1, 1, 1, 2, 2, 3, 3, 3]
    node = np.zeros(4, dtype=int)
    for lab in ([0, 1, 2, 3], [1, 2, 3, 1], [2, 2, 2, 2], [3, 3, 3, 3]):
        node = R.advance(node, np.array(lab))
    assert node.tolist() == [3, 3, 0, 3]


def test_expert_depends_on_cell_centre_and_node_only():
    d = R.Discretiser()
    ex = R.Expert()
    rng = np.random.default_rng(1)
    angles = rng.uniform(-math.pi, math.pi, (500, 2))
    vel = rng.uniform(-15, 15, (500, 2))
    cells = d.index(angles, vel)
    node = rng.integers(0, 4, 500)
    g = ex.greedy(cells, node)
    # any other point of the same cell gives the same action
    jitter_a = angles + rng.uniform(-1, 1, (500, 2)) * 1e-3
    jitter_v = vel + rng.uniform(-1, 1, (500, 2)) * 1e-3
    same = d.index(jitter_a, jitter_v) == cells
    assert same.mean() > 0.9
    assert np.array_equal(ex.greedy(d.index(jitter_a, jitter_v)[same], node[same]), g[same])
    p = ex.policy(cells, node)
    assert np.allclose(p.sum(axis=1), 1) and np.allclose(p.max(axis=1), 1 - ex.epsilon + ex.epsilon / 25)
    assert np.array_equal(p.argmax(axis=1), g)
    # at rest on a target's inverse kinematics (cell centre) the expert does not push away hard
    assert ((g >= 0) & (g < 25)).all()


def test_actions_decode_to_torques():
    a = np.arange(25)
    assert np.array_equal(R.TORQUES[a // 5][[0, 12, 24]], [-1, 0, 1])
    assert np.array_equal(R.TORQUES[a % 5][[1, 12, 23]], [-0.5, 0, 0.5])


# ====================================================================== simulation (gymnasium + mujoco)
@pytest.fixture(scope="module")
def sim():
    pytest.importorskip("gymnasium")
    pytest.importorskip("mujoco")
    return R.Simulator()


def test_expert_completes_the_task(sim):
    batch = sim.run(50, 123)
    assert batch.states.shape == batch.actions.shape == batch.labels.shape == (50, R.HORIZON)
    assert (batch.done_at >= 0).mean() >= 0.95
    # the recorded labels drive the true machine to u3 exactly when done_at says
    m = R.true_machine()
    for i in range(50):
        nodes = m.run(batch.labels[i].tolist())[1:]
        first = next((t for t, u in enumerate(nodes) if u == 3), -1)
        assert first == batch.done_at[i]


def test_simulation_matches_gymnasium_step(sim):
    import gymnasium as gym
    import mujoco

    env = gym.make("Reacher-v5")
    env.reset(seed=0)
    u = env.unwrapped
    state = np.zeros((1, sim.nstate))
    mujoco.mj_getState(u.model, u.data, state[0], sim.spec)
    for a in (np.array([0.5, -1.0]), np.array([-1.0, 0.0])):
        env.step(a)
        out, _ = sim._rollout.rollout(sim.model, sim.data, state, np.tile(a, (1, sim.frame_skip, 1)))
        state = out[:, -1]
        assert np.allclose(state[0, 1:5], u.data.qpos) and np.allclose(state[0, 5:9], u.data.qvel)
    env.close()


def test_determinism(sim):
    a, b = sim.run(20, 7), sim.run(20, 7)
    c = sim.run(20, 8)
    assert np.array_equal(a.states, b.states) and np.array_equal(a.actions, b.actions)
    assert np.array_equal(a.labels, b.labels)
    assert not np.array_equal(a.states, c.states)


def test_labels_and_states_are_consistent(sim):
    batch = sim.run(30, 5)
    d = R.Discretiser()
    angles, _ = d.centre(batch.states.ravel())
    # the label comes from the continuous position: within a cell's reach of the centre's label
    tip = R.fingertip(angles)
    dist = np.sqrt(((tip[:, None, :] - R.TARGETS) ** 2).sum(-1)).min(axis=1)
    lab = batch.labels.ravel()
    assert (dist[lab > 0] < R.RADIUS + 0.04).all()


def test_streaming_counts_equal_batch_counts(sim):
    pytest.importorskip("gymnasium")
    n, chunk = 60, 25
    table, stats = R.generate_counts(n, seed=3, workers=1, chunk=chunk)
    assert stats.trajectories == n
    # the same chunks simulated and counted in one batch
    sizes_seeds = R.chunk_seeds(3, n, chunk)
    batches = [sim.run(size, seq) for size, seq in sizes_seeds]
    states = np.concatenate([b.states for b in batches])
    actions = np.concatenate([b.actions for b in batches])
    labels = np.concatenate([b.labels for b in batches])
    whole = count_chunk(R.Space(R.Discretiser().n_states), Demonstrations.full(states, actions), labels=labels)
    assert table_dict(table) == table_dict(whole)
    assert table.n_steps == n * R.HORIZON
    # two worker processes: the same counts (chunk seeds do not depend on the workers)
    table2, _ = R.generate_counts(n, seed=3, workers=2, chunk=chunk)
    assert table_dict(table2) == table_dict(whole)
    # and an unrelated merge order gives the same content
    assert table_dict(merge_counts(whole, whole)) == {k: tuple(2 * c for c in v) for k, v in table_dict(whole).items()}


def test_quick_experiment_finds_the_true_machine():
    pytest.importorskip("gymnasium")
    pytest.importorskip("mujoco")
    from rmtk.experiments import Report
    from rmtk.experiments.reacher import report, simulate_and_learn

    res = simulate_and_learn(2000, seed=0, workers=2, alphas=(1e-3,), max_solutions=300)
    (row,) = res.rows
    assert res.trajectories == 2000 and res.completion_rate >= 0.95
    assert row.false_positives <= row.negatives
    # the true machine violates only its false positives, and that is the optimum
    assert row.cost == row.truth_cost == row.false_positives
    assert row.truth_optimal and row.truth_found
    rep = report(res)
    assert isinstance(rep, Report) and len(rep.tables) == 2
    assert "reacher" in rep.text()
