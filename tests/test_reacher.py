"""The reacher experiment: counting with per-step labels (no LabeledMDP), the discretiser
(Bins over joint angles and velocities), labels and expert, and — when mujoco is installed —
the vector environment, recording with collect and the quick experiment."""

import math
from pathlib import Path

import attrs
import numpy as np
import pytest

from rmtk import dsl
from rmtk.data import Demonstrations
from rmtk.engines.dask import DaskEngine
from rmtk.envs import reacher as R
from rmtk.errors import DataError, RmtkError
from rmtk.gym import collect
from rmtk.gym.reacher import ReacherLabels, joint_state, reacher_bins, reacher_expert
from rmtk.mdp.space import Space
from rmtk.ptp.empirical import count_chunk, count_stream, empirical_policy, to_policy

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
    S = reacher_bins().n_states
    demos = Demonstrations.full([[S - 1, S - 2]], [[24, 0]])
    table = count_chunk(Space(S, 25, R.PROPOSITIONS), demos, labels=np.array([[3, 2]]))
    ptp = to_policy(table)
    assert sorted(as_dict(ptp)) == [((3,), S - 1), ((3, 2), S - 2)]
    assert ptp.counts[:, 24].sum() == 1


# ====================================================================== discretiser, labels, expert
def observations(angles, velocities):
    """Reacher-v5 observations of joint angles and velocities (target at the origin)."""
    angles, velocities = np.asarray(angles, float), np.asarray(velocities, float)
    zeros = np.zeros((len(angles), 2))
    return np.concatenate([np.cos(angles), np.sin(angles), zeros, velocities, zeros], axis=1)


def test_state_count():
    b = reacher_bins()
    assert b.n_states == 36 * 36 * 112 * 112 == 16_257_024
    assert b.n == (36, 36, 112, 112) and b.clip


def test_discretiser_bins_by_hand():
    b = reacher_bins()
    rad = math.radians
    angles = np.array(
        [
            [-math.pi, 0.0],  # −180° → bin 0; 0° → bin 18
            [rad(-175), rad(5)],  # inside bins 0 and 18
            [rad(9.999), rad(10.001)],  # 18 and 19
            [math.pi, 3 * math.pi],  # +180° wraps to −180° → bin 0 (both)
            [rad(179.999), -rad(0.001)],  # 35 and 17
            [rad(-190), rad(371)],  # −190° ≡ 170° → 35; 371° ≡ 11° → 19
        ]
    )
    vel = np.array([[0.0, -0.001], [-14.0, 13.999], [14.0, -20.0], [100.0, 0.25], [0.2499, -0.25], [-14.1, 13.75]])
    index, outside = b.batch(observations(angles, vel))
    bins = b.bins(index)
    assert bins[:, :2].tolist() == [[0, 18], [0, 18], [18, 19], [0, 0], [35, 17], [35, 19]]
    assert bins[:, 2:].tolist() == [[56, 55], [0, 111], [111, 0], [111, 57], [56, 55], [0, 111]]
    assert outside.tolist() == [False, False, True, True, False, True]  # velocities beyond ±14, clipped
    assert index.min() >= 0 and index.max() < b.n_states
    assert b(observations([[math.pi - 1e-9] * 2], [[14, 14]])[0]) == b.n_states - 1
    assert b(observations([[-math.pi] * 2], [[-14, -14]])[0]) == 0


def test_cell_centres():
    b = reacher_bins()
    index, _ = b.batch(observations([[0.01, -0.01]], [[0.1, -13.99]]))
    centre = b.centres(index)
    assert np.allclose(np.degrees(centre[:, :2]), [[5, -5]]) and np.allclose(centre[:, 2:], [[0.125, -13.875]])
    rng = np.random.default_rng(0)
    idx = rng.integers(0, b.n_states, 1000)
    c = b.centres(idx)
    assert np.array_equal(b.batch(observations(c[:, :2], c[:, 2:]))[0], idx)  # a centre lies in its own cell


def test_fingertip_and_labels():
    tip = R.fingertip([[0.0, 0.0], [math.pi / 2, 0.0], [0.0, math.pi / 2]])
    assert np.allclose(tip, [[0.21, 0], [0, 0.21], [0.1, 0.11]])
    assert R.label(tip).tolist() == [0, 0, 3]  # (0.1, 0.11) is r
    pts = np.array(
        [
            [0.1, -0.11],
            [-0.1, 0.11],
            [0.1, 0.11],  # centres: b, y, r
            [0.1 + 0.0199, -0.11],
            [-0.1, 0.11 - 0.0199],  # just inside
            [0.1 + 0.0201, 0.11],
            [0.0, 0.0],
            [0.1, 0.0],  # outside
        ]
    )
    assert R.label(pts).tolist() == [1, 2, 3, 1, 2, 0, 0, 0]
    for sign in (1, -1):  # the inverse kinematics hits every target, both elbow branches
        q = R.inverse_kinematics(R.TARGETS, sign)
        assert np.allclose(R.fingertip(q), R.TARGETS)
        assert R.label(R.fingertip(q)).tolist() == [1, 2, 3]
        # the labeler reads the same discs from the observation's cosines and sines
        assert ReacherLabels().batch(observations(q, np.zeros_like(q))).tolist() == [1, 2, 3]
    assert ReacherLabels()(observations([[0.0, math.pi / 2]], [[0, 0]])[0]) == "r"


def test_true_machine_and_advance():
    m = R.true_machine()
    assert m.n_nodes == 4 and m.alphabet == R.PROPOSITIONS
    assert m.run([0, 1, 3, 1, 2, 1, 3, 1, 2]) == [0, 0, 1, 1, 1, 2, 2, 3, 3, 3]
    node = np.zeros(4, dtype=int)
    for lab in ([0, 1, 2, 3], [1, 2, 3, 1], [2, 2, 2, 2], [3, 3, 3, 3]):
        node = R.advance(node, np.array(lab))
    assert node.tolist() == [3, 3, 0, 3]


def test_expert_depends_on_cell_centre_and_node_only():
    b = reacher_bins()
    choose = reacher_expert(bins=b).choose
    ex = choose.expert
    rng = np.random.default_rng(1)
    angles = rng.uniform(-math.pi, math.pi, (500, 2))
    vel = rng.uniform(-15, 15, (500, 2))
    cells, _ = b.batch(observations(angles, vel))
    node = rng.integers(0, 4, 500)
    centre = b.centres(cells)
    g = ex.greedy_from(centre[:, :2], centre[:, 2:], node)
    jittered, _ = b.batch(
        observations(angles + rng.uniform(-1, 1, (500, 2)) * 1e-3, vel + rng.uniform(-1, 1, (500, 2)) * 1e-3)
    )
    same = jittered == cells
    assert same.mean() > 0.9
    c2 = b.centres(jittered[same])
    assert np.array_equal(ex.greedy_from(c2[:, :2], c2[:, 2:], node[same]), g[same])
    # ε-greedy: the greedy action with probability 1 − ε + ε/25
    picks = np.array([choose(cells[:50], node[:50], np.random.default_rng(k)) for k in range(400)])
    share = (picks == g[:50]).mean()
    assert abs(share - (1 - ex.epsilon + ex.epsilon / 25)) < 0.02
    assert ((g >= 0) & (g < 25)).all()


def test_actions_decode_to_torques():
    a = np.arange(25)
    assert np.array_equal(R.TORQUES[a // 5][[0, 12, 24]], [-1, 0, 1])
    assert np.array_equal(R.TORQUES[a % 5][[1, 12, 23]], [-0.5, 0, 0.5])


# ====================================================================== simulation (mujoco)
@pytest.fixture(scope="module")
def vec():
    pytest.importorskip("mujoco")
    from rmtk.gym.reacher import ReacherVectorEnv

    return ReacherVectorEnv(50)


def play(env, policy, seed, steps=R.HORIZON):
    """The observations, labels, states and actions of one wave, and the true node reached."""
    from rmtk.gym import Context

    b, labeler = reacher_bins(), ReacherLabels()
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    out = []
    for t in range(steps):
        s, _ = b.batch(obs)
        lab = labeler.batch(obs)
        a = policy(obs, Context(t, s, lab, R.PROPOSITIONS, rng))
        out.append((obs, lab, s, a))
        obs, *_ = env.step(a)
    return out


def test_expert_completes_the_task(vec):
    policy = reacher_expert()
    steps = play(vec, policy, 123)
    labels = np.stack([x[1] for x in steps], axis=1)
    nodes = np.array([R.true_machine().run(row.tolist())[1:] for row in labels])
    done = (nodes == 3).any(axis=1)
    assert done.mean() >= 0.95
    first = np.argmax(nodes == 3, axis=1)[done]
    assert 20 < first.mean() < 100  # about 53 steps on average


def test_simulation_matches_gymnasium_step(vec):
    import gymnasium as gym

    env = gym.make("Reacher-v5")
    obs, _ = env.reset(seed=0)
    u = env.unwrapped
    vec.reset(seed=0)
    vec._state[:, 1:5], vec._state[:, 5:9] = u.data.qpos, u.data.qvel
    for a in (13, 0, 24):  # torque levels (0.5, -1) ... as Reacher-v5's continuous actions
        obs, *_ = env.step(np.array([R.TORQUES[a // 5], R.TORQUES[a % 5]]))
        vobs, *_ = vec.step(np.full(50, a))
        assert np.allclose(vobs[0, :8], obs[:8])  # joint cosines, sines, target, velocities
        assert np.allclose(vobs[0, 8:], obs[8:], atol=1e-5)  # fingertip: forward kinematics
    env.close()


def test_recording_is_reproducible_and_worker_independent(vec, dask_client):
    from rmtk.gym.reacher import ReacherVectorEnv

    b, labels = reacher_bins(), ReacherLabels()
    make = lambda: ReacherVectorEnv(25)  # noqa: E731
    one = collect(make, reacher_expert(bins=b), labels, b, 100, seed=3, shard=25)
    two = collect(make, reacher_expert(bins=b), labels, b, 100, seed=3, shard=25, engine=DaskEngine(client=dask_client))
    assert one == two and one.n_steps == 100 * R.HORIZON and one.truncated == 100
    assert collect(make, reacher_expert(bins=b), labels, b, 100, seed=4, shard=25) != one
    # the counts are those of the played trajectories (here one wave of 50, logged)
    steps = play(vec, reacher_expert(bins=b), 7)
    states, actions, lab = (np.stack([x[k] for x in steps], axis=1) for k in (2, 3, 1))
    table = count_chunk(Space(b.n_states, 25, R.PROPOSITIONS), Demonstrations.full(states, actions), labels=lab)
    assert table.n_steps == 50 * R.HORIZON and table_dict(table)


def test_labels_and_states_are_consistent(vec):
    b = reacher_bins()
    steps = play(vec, reacher_expert(bins=b), 5, steps=60)
    obs = np.concatenate([x[0] for x in steps])
    lab = np.concatenate([x[1] for x in steps])
    angles = b.centres(b.batch(obs)[0])[:, :2]
    # the label comes from the continuous position: within a cell's reach of the centre's label
    tip = R.fingertip(angles)
    dist = np.sqrt(((tip[:, None, :] - R.TARGETS) ** 2).sum(-1)).min(axis=1)
    assert (dist[lab > 0] < R.RADIUS + 0.04).all()
    assert np.allclose(joint_state(obs)[:, 2:], obs[:, 6:8])


def test_idle_stages_change_no_state(vec):
    """The MuJoCo stages skipped for speed compute nothing in Reacher-v5: same states, bitwise."""
    from rmtk.gym.reacher import ReacherVectorEnv

    skipped = ReacherVectorEnv(40)
    plain = ReacherVectorEnv(40)
    plain.model.opt.disableflags = 0
    assert skipped.model.opt.disableflags != 0
    rng = np.random.default_rng(0)
    a, _ = skipped.reset(seed=1)
    b, _ = plain.reset(seed=1)
    for _ in range(60):
        act = rng.integers(0, 25, 40)
        a, *_ = skipped.step(act)
        b, *_ = plain.step(act)
    assert np.array_equal(a, b)
    euler = ReacherVectorEnv(40, integrator="euler")
    c, _ = euler.reset(seed=1)
    c, *_ = euler.step(np.zeros(40, dtype=int))
    assert c.shape == a.shape
    with pytest.raises(ValueError, match="integrator must be one of rk4, euler"):
        ReacherVectorEnv(4, integrator="verlet")


def test_quick_experiment_finds_the_true_machine(dask_client):
    pytest.importorskip("mujoco")
    from rmtk.experiments import Report
    from rmtk.experiments.reacher import report, simulate_and_learn

    res = simulate_and_learn(2000, seed=0, client=dask_client, alphas=(1e-3,), max_solutions=300)
    (row,) = res.rows
    assert res.trajectories == 2000 and abs(sum(res.node_steps) - 1) < 1e-9
    assert res.node_steps[3] > 0.5  # the expert is done (holding at b) most of the time
    assert row.false_positives <= row.negatives
    # the true machine violates only its false positives, and that is the optimum
    assert row.cost == row.truth_cost == row.false_positives
    assert row.truth_optimal and row.truth_found
    rep = report(res)
    assert isinstance(rep, Report) and len(rep.tables) == 2
    assert "reacher" in rep.text() and "rmtk.gym.collect" in rep.text()


def test_unknown_integrator_is_refused_before_any_work(capsys):
    from rmtk.cli.main import main
    from rmtk.errors import RmtkError
    from rmtk.experiments.reacher import simulate_and_learn

    with pytest.raises(RmtkError, match="integrator: one of rk4, euler, not 'verlet'"):
        simulate_and_learn(10, integrator="verlet", workers=1)
    if __import__("importlib").util.find_spec("mujoco") is not None:
        assert main(["reproduce", "reacher", "--set", "integrator=verlet", "-q", "--no-figures"]) == 1
        assert "setting integrator: expected one of rk4, euler, got 'verlet'" in capsys.readouterr().err


# ====================================================================== the expert asked (mujoco)
def _cell_at(point):
    """The cell of joint state ``point`` (angles, velocities)."""
    b = reacher_bins()
    q = np.asarray(point, dtype=float)
    obs = np.array([[np.cos(q[0]), np.cos(q[1]), np.sin(q[0]), np.sin(q[1]), 0, 0, q[2], q[3], 0, 0]])
    return int(b.batch(obs)[0][0])


def test_the_asked_expert_acts_from_the_node_its_history_reaches():
    pytest.importorskip("mujoco")
    from rmtk.gym.reacher import ReacherExpert

    q = R.inverse_kinematics(R.TARGETS[0:1], 1)[0]  # the fingertip on b, at rest
    cell = _cell_at([q[0], q[1], 0.1, 0.1])
    expert = ReacherExpert(seed=3)
    centre = reacher_bins().centres([cell])
    for word, node in [((0, 1), 1), ((0, 1, 0, 2, 0, 3, 0, 1), 3)]:
        obs = expert.act(word, cell, 200)
        # 200 draws; environment steps: each of the 200 arms restored, then stepped with its action
        assert obs.steps == 2 * 200 and obs.values.sum() == 200 and obs.words == (word,)
        greedy = R.Expert().greedy_from(centre[:, :2], centre[:, 2:], np.array([node]))[0]
        assert obs.values[0].argmax() == greedy and obs.values[0, greedy] > 150  # 0.904 of the draws
    first, second = (ReacherExpert(seed=3).act((0, 1), cell, 200) for _ in range(2))
    assert np.array_equal(first.values, second.values)  # seeded
    ext = expert.extend((0, 1), cell, 10, 20)
    assert ext.steps == 200 and ext.values.sum() == 200  # per arm a restore and 9 moves
    assert all(w[:2] == (0, 1) for w in ext.words)


def test_a_history_the_arm_cannot_realise_is_a_clear_error():
    pytest.importorskip("mujoco")
    from rmtk.active.experts import QueryError
    from rmtk.gym.reacher import ReacherExpert

    expert = ReacherExpert()
    home = _cell_at([0.0, 0.0, 0.0, 0.0])  # fingertip at (0.21, 0): in no disc
    with pytest.raises(QueryError, match=f"no point of cell {home} found with label 'b'"):
        expert.act((0, 1), home, 10)
    with pytest.raises(QueryError, match="compressed"):
        expert.act((0, 0, 1), home, 10)
    with pytest.raises(QueryError, match="is not a cell of the reacher"):
        expert.act((0,), -1, 10)
    with pytest.raises(RmtkError, match="integrator"):
        ReacherExpert(integrator="verlet")


def test_quick_active_experiment_leaves_the_truth_with_few_extra_steps(dask_client):
    pytest.importorskip("mujoco")
    from rmtk.experiments.reacher import report, simulate_and_learn

    res = simulate_and_learn(2000, seed=0, client=dask_client, alphas=(1e-3,), max_solutions=1000, active=True)
    act = res.active
    assert res.rows[0].machines >= 1000  # passive: the enumeration stops at its limit
    assert act.truth_listed and 1 <= len(act.machines) <= 2
    assert act.result.steps < act.recorded_steps  # the questions cost less than the recording
    assert act.result.separation.machines == len(act.machines)
    text = report(res).text()
    assert "active" in text and "passive 10^6 (projected)" in text
