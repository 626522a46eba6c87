"""Rewards in the data: the reward column of CSV, NPZ and Parquet files (round trips, bad
values named by file and row), the reward traces against an independent run of the machine,
simulated rewards, and the same traces from every engine and chunking."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from grid_data import make_grid, raises, three_walks

from rmtk import dsl
from rmtk.cli.main import main
from rmtk.data import Demonstrations, load, load_csv, load_npz, save
from rmtk.data.rewards import round_rewards
from rmtk.errors import DataError, ModelError
from rmtk.product.simulate import simulate, simulate_dataset, simulate_sharded
from rmtk.ptp.empirical import EmpiricalPTP
from rmtk.traces.rewards import RewardTraces, reward_traces

MODELS = Path(__file__).resolve().parents[1] / "models"


@pytest.fixture(scope="module")
def grid():
    return make_grid()


@pytest.fixture(scope="module")
def rewarded(grid) -> Demonstrations:
    """Three ragged walks with awkward rewards: a NaN inside, 0.1 + 0.2, negatives, tiny values."""
    d = three_walks(grid)
    r = np.full(d.states.shape, np.nan)
    r[0, :5] = [0.1 + 0.2, -1.5, np.nan, 1e-12, 7.0]
    r[1, :1] = [2.5]
    r[2, :3] = [0.0, -0.0, 1 / 3]
    return d.with_rewards(r)


@pytest.fixture(scope="module")
def patrol():
    return dsl.load(MODELS / "patrol.rm").tasks["patrol"]


# ---------------------------------------------------------------------- the object
def test_demonstrations_carry_rewards(grid, rewarded):
    assert rewarded[[2, 0]].rewards[0, :3].tolist() == rewarded.rewards[2, :3].tolist()
    assert rewarded[1].rewards.tolist() == [[2.5]]  # cut to the trajectory's length
    assert "with rewards" in rewarded.summary()
    d = rewarded
    triples = [
        [(int(s), int(a), float(r)) for s, a, r in zip(d.states[i, :n], d.actions[i, :n], d.rewards[i, :n])]
        for i, n in enumerate(d.lengths)
    ]
    assert Demonstrations.from_lists(triples) == rewarded
    with pytest.raises(DataError, match="trajectory 0, step 1: reward inf is infinite"):
        Demonstrations.full([[0, 1]], [[0, 0]], [[0.0, np.inf]])
    with pytest.raises(DataError, match="trajectory 1, step 1: reward after the trajectory's end"):
        Demonstrations([[0, 1], [0, -1]], [[0, 0], [0, -1]], [2, 1], rewards=[[0, 0], [0, 5]])
    with pytest.raises(DataError, match="pairs or .* triples"):
        Demonstrations.from_lists([[(0, 0), (0, 0, 1.0)]])


# ---------------------------------------------------------------------- files
@pytest.mark.parametrize("name", ["d.csv", "d.npz", "d.parquet"])
def test_round_trip_with_rewards(grid, rewarded, tmp_path, name):
    path = tmp_path / name
    save(rewarded, path, grid)
    back = load(path, grid)
    assert back == rewarded  # NaN where NaN, every float bit for bit
    assert np.array_equal(back.rewards, rewarded.rewards, equal_nan=True)
    save(rewarded.with_rewards(None), tmp_path / ("plain" + name[1:]), grid)
    plain = load(tmp_path / ("plain" + name[1:]), grid)
    assert plain.rewards is None and plain == rewarded.with_rewards(None)


def test_csv_reward_column_written_exactly(grid, rewarded, tmp_path):
    save(rewarded, tmp_path / "d.csv", grid)
    lines = (tmp_path / "d.csv").read_text().splitlines()
    assert lines[0] == "trajectory,step,state,action,label,reward"
    assert lines[1].endswith(",0.30000000000000004") and lines[3].endswith(",")  # NaN: an empty field


def test_csv_reward_any_column_order_nan_and_blank(grid, tmp_path):
    text = "reward,trajectory,step,state,action\n1.5,t,0,r0c0,down\nnan,t,1,r1c0,down\n,t,2,r2c0,down\n"
    (tmp_path / "d.csv").write_text(text)
    d = load_csv(tmp_path / "d.csv", grid)
    assert d.rewards[0, 0] == 1.5 and np.isnan(d.rewards[0, 1:]).all()


CSV_BAD_REWARDS = [
    ("0,0,r0c0,down,a,1\n0,1,r1c0,down,b,abc\n", "d.csv:3: reward 'abc' is not a number"),
    ("0,0,r0c0,down,a,1\n0,1,r1c0,down,b,2\n0,2,r2c0,down,c,-inf\n", "d.csv:4: reward '-inf' is infinite"),
    ("0,0,r0c0,down,a,1e400\n", "d.csv:2: reward '1e400' is infinite"),
]


@pytest.mark.parametrize("body,message", CSV_BAD_REWARDS)
def test_csv_bad_reward_named_by_line(grid, tmp_path, body, message):
    (tmp_path / "d.csv").write_text("trajectory,step,state,action,label,reward\n" + body)
    with raises(message):
        load_csv(tmp_path / "d.csv", grid)


def test_npz_bad_rewards(grid, tmp_path):
    s = np.array([[0, 1, 2], [0, 1, 2]])
    good = np.zeros((2, 3))
    np.savez(tmp_path / "d.npz", states=s, actions=np.zeros_like(s), rewards=good)
    assert load_npz(tmp_path / "d.npz").rewards.tolist() == good.tolist()
    bad = good.copy()
    bad[1, 2] = np.inf
    np.savez(tmp_path / "d.npz", states=s, actions=np.zeros_like(s), rewards=bad)
    with raises("d.npz: array 'rewards' at trajectory 1, step 2: inf is infinite"):
        load_npz(tmp_path / "d.npz")
    np.savez(tmp_path / "d.npz", states=s, actions=np.zeros_like(s), rewards=np.array([["a"] * 3] * 2))
    with raises("d.npz: array 'rewards' has dtype <U1, expected numbers"):
        load_npz(tmp_path / "d.npz")
    np.savez(tmp_path / "d.npz", states=s, actions=np.zeros_like(s), rewards=good[:, :2])
    with raises("d.npz: array 'rewards' has shape (2, 2), but 'states' has (2, 3)"):
        load_npz(tmp_path / "d.npz")
    # a reward after a trajectory's end is refused by its record, as Demonstrations refuses it
    np.savez(tmp_path / "d.npz", states=[[0, -1]], actions=[[0, -1]], lengths=[1], rewards=[[1.0, 0.0]])
    with raises("d.npz: array 'rewards': trajectory 0, step 1: reward after the trajectory's end (length 1; it must"):
        load_npz(tmp_path / "d.npz")
    with raises("trajectory 0, step 1: reward after the trajectory's end (length 1; it must be nan)"):
        Demonstrations([[0, -1]], [[0, -1]], [1], rewards=[[1.0, 0.0]])
    np.savez(tmp_path / "d.npz", states=[[0, -1]], actions=[[0, -1]], lengths=[1], rewards=[[1.0, np.nan]])
    assert load_npz(tmp_path / "d.npz").rewards[0, 0] == 1.0


def test_a_reward_column_without_a_reward_is_refused(grid, rewarded, patrol, tmp_path, capsys):
    """A reward column that exists but records nothing (empty, nan, null) is refused by file and
    column, never read as "with rewards" (which learned a 1-node machine from no reward)."""
    (tmp_path / "e.csv").write_text("trajectory,step,state,action,reward\n0,0,r0c0,down,\n0,1,r1c0,down,nan\n")
    with raises("e.csv: column 'reward' holds no reward: every value is unknown"):
        load(tmp_path / "e.csv", grid)
    np.savez(tmp_path / "e.npz", states=[[0, 1]], actions=[[0, 0]], rewards=[[np.nan, np.nan]])
    with raises("e.npz: array 'rewards' holds no reward: every value is unknown"):
        load(tmp_path / "e.npz", grid)
    nulls = pa.array([None] * rewarded.n_steps, type=pa.float64())
    path = _parquet(tmp_path, grid, rewarded, nulls)
    with raises(f"{path}: column 'reward' holds no reward"):
        load(path, grid)
    with raises(f"{path}: the 'reward' column holds no reward a machine pays"):  # counted, never loaded whole
        reward_traces(str(path), grid)
    last = Demonstrations.from_lists([[(0, 0, 1.0)], [(4, 0, 0.0)]])  # one step each: no next label
    with raises("the demonstrations' rewards hold no reward a machine pays"):
        reward_traces(last, grid)
    csv = tmp_path / "p.csv"
    assert main(["simulate", str(MODELS / "patrol.rm"), "-n", "5", "-T", "4", "--seed", "1", "-o", str(csv), "-q"]) == 0
    rows = csv.read_text().splitlines()
    csv.write_text("\n".join([rows[0] + ",reward"] + [r + "," for r in rows[1:]]) + "\n")
    capsys.readouterr()
    for evidence in (None, "rewards", "both", "policy"):
        argv = ["learn", str(MODELS / "patrol.rm"), "--demos", str(csv), "-q"]
        assert main(argv + (["--from", evidence] if evidence else [])) == 1
        assert capsys.readouterr().err.startswith(f"rmtk: error: {csv}: column 'reward' holds no reward")


def _parquet(tmp_path, grid, rewarded, column):
    path = tmp_path / "d.parquet"
    save(rewarded, path, grid, overwrite=True)
    part = path / "part-00000.parquet"
    table = pq.read_table(part)
    meta = table.schema.metadata
    table = table.set_column(table.schema.get_field_index("reward"), "reward", column).replace_schema_metadata(meta)
    pq.write_table(table, part)
    return path


def test_parquet_bad_rewards_named_by_row(grid, rewarded, tmp_path):
    n = rewarded.n_steps
    values = np.zeros(n)
    values[6] = np.inf
    path = _parquet(tmp_path, grid, rewarded, pa.array(values))
    with raises("d.parquet/part-00000.parquet: row 6: reward inf is infinite"):
        load(path, grid)
    path = _parquet(tmp_path, grid, rewarded, pa.array(["x"] * n))
    with raises("part-00000.parquet: column 'reward' has type string, expected numbers"):
        load(path, grid)
    nulls = pa.array([1.0] * 3 + [None] * (n - 3), type=pa.float64())  # null: unknown
    back = load(_parquet(tmp_path, grid, rewarded, nulls), grid)
    assert back.rewards[0, :3].tolist() == [1.0] * 3 and np.isnan(back.rewards[0, 3])
    ints = load(_parquet(tmp_path, grid, rewarded, pa.array(np.arange(n, dtype=np.int16))), grid)
    assert ints.rewards[0, :5].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


# ---------------------------------------------------------------------- reward traces
def _independent_traces(mdp, demos, compress: bool, depth=None) -> Counter:
    """{(word, next letter, reward): count} walked step by step in Python."""
    out: Counter = Counter()
    T = demos.horizon if depth is None else depth
    for i, n in enumerate(demos.lengths):
        word: list[int] = []
        for t in range(min(n, T)):
            letter = int(mdp.labels[demos.states[i, t]])
            if not (compress and word and word[-1] == letter):
                word.append(letter)
            if t + 1 < n and not np.isnan(demos.rewards[i, t]):
                nxt = int(mdp.labels[demos.states[i, t + 1]])
                out[(tuple(word), nxt, float(round_rewards(demos.rewards[i, t])))] += 1
    return out


def _as_counter(traces: RewardTraces) -> Counter:
    return Counter(
        {
            (tuple(traces.trie.word(int(p))), int(k), float(v)): int(c)
            for p, k, v, c in zip(traces.node, traces.letter, traces.value, traces.count)
        }
    )


@pytest.mark.parametrize("compress", [True, False])
def test_traces_match_an_independent_walk(grid, rewarded, compress):
    traces = reward_traces(rewarded, grid, compress=compress)
    assert _as_counter(traces) == _independent_traces(grid, rewarded, compress)
    # 0.1 + 0.2 is stored as 0.3 (rounded), -0.0 as 0.0
    assert 0.3 in traces.value.tolist() and 0.1 + 0.2 not in traces.value.tolist()
    assert not np.signbit(traces.value[traces.value == 0]).any()
    assert traces.n_observations == 5  # walk 0: rows 0-3 but one NaN; walk 1: none; walk 2: rows 0-1


def test_traces_share_the_policy_trie_and_ignore_chunks(patrol):
    demos = simulate(patrol, 3_000, 12, seed=3, rewards=True, epsilon=0.3)
    ptp = EmpiricalPTP(demos)
    traces = reward_traces(ptp, patrol)
    assert traces.trie == ptp.counts(patrol.mdp).trie
    for chunk in (1, 257, 3_000):
        assert reward_traces(demos, patrol.mdp, chunk=chunk) == traces
    assert _as_counter(traces) == _independent_traces(patrol.mdp, demos, True)
    assert _as_counter(reward_traces(demos, patrol, depth=5, compress=False)) == _independent_traces(
        patrol.mdp, demos, False, depth=5
    )
    m = patrol.machine
    assert traces.explains(m.delta_u, m.delta_r, m.initial, patrol.letter_of_proposition).all()
    assert traces.n_observations == 3_000 * 11 and not traces.noisy().any()


def test_noisy_traces_keep_their_evidence(patrol):
    demos = simulate(patrol, 2_000, 10, seed=5, rewards=True, policy="uniform")
    rng = np.random.default_rng(0)
    noisy = demos.rewards.copy()
    flip = rng.random(noisy.shape) < 0.05
    noisy[flip] = rng.choice([-1.0, 0.5], size=int(flip.sum()))
    clean = reward_traces(demos, patrol)
    dirty = reward_traces(demos.with_rewards(noisy), patrol)
    assert dirty.n_observations == clean.n_observations and dirty.noisy().any()
    value, share = dirty.majority()
    node, letter, _ = dirty.pairs()
    truth = dict(zip(zip(*clean.pairs()[:2]), clean.majority()[0]))
    many = np.diff(dirty.pairs()[2]) >= 1
    right = np.array([truth[(p, k)] == v for p, k, v in zip(node, letter, value)])
    assert right[share > 0.5].mean() > 0.99 and many.all()


def test_no_rewards_is_a_clear_error(patrol):
    with pytest.raises(DataError, match="have no rewards"):
        reward_traces(simulate(patrol, 10, 5, seed=0), patrol)


# ---------------------------------------------------------------------- simulate
def test_simulated_rewards_are_the_machines(patrol):
    """Each step's reward equals δ_r along the machine's run on the label sequence, computed
    with RewardMachine.run / .reward by name; the draws are those of a run without rewards."""
    demos = simulate(patrol, 200, 15, seed=11, rewards=True, epsilon=0.5)
    assert demos.with_rewards(None) == simulate(patrol, 200, 15, seed=11, epsilon=0.5)
    m, mdp = patrol.machine, patrol.mdp
    for i in range(demos.n_trajectories):
        letters = [mdp.propositions[mdp.labels[s]] for s in demos.states[i]]
        nodes = m.run(letters)  # nodes[t + 1]: the node after reading letters[t]
        expected = [m.reward(nodes[t + 1], letters[t + 1]) for t in range(len(letters) - 1)]
        assert demos.rewards[i, :-1].tolist() == expected
        assert np.isnan(demos.rewards[i, -1])
    assert np.nansum(demos.rewards) > 0  # the patrol was completed somewhere


def test_simulate_policies(patrol):
    uniform = simulate(patrol, 300, 8, seed=2, policy="uniform")
    assert uniform == simulate(patrol, 300, 8, seed=2, epsilon=1.0)
    assert uniform != simulate(patrol, 300, 8, seed=2)
    share = np.bincount(uniform.actions.ravel(), minlength=patrol.mdp.n_actions) / uniform.n_steps
    assert np.abs(share - 1 / patrol.mdp.n_actions).max() < 0.03  # 2400 draws: 4 standard deviations
    with pytest.raises(ModelError, match="epsilon is a probability"):
        simulate(patrol, 3, 3, seed=0, epsilon=1.5)
    with pytest.raises(ModelError, match="unknown policy 'random'"):
        simulate(patrol, 3, 3, seed=0, policy="random")


def test_sharded_and_dataset_rewards_are_the_same(patrol, tmp_path):
    whole = simulate(patrol, 500, 9, seed=8, rewards=True, epsilon=0.2)
    assert simulate_sharded(patrol, 500, 9, seed=8, rewards=True, epsilon=0.2, shard_size=120) == whole
    simulate_dataset(patrol, 500, 9, tmp_path / "s.parquet", seed=8, rewards=True, epsilon=0.2, partition_size=120)
    assert load(tmp_path / "s.parquet", patrol.mdp) == whole
    assert reward_traces(tmp_path / "s.parquet", patrol) == reward_traces(whole, patrol)


def test_cli_simulate_writes_rewards(patrol, tmp_path, capsys):
    out = tmp_path / "d.csv"
    args = ["simulate", str(MODELS / "patrol.rm"), "-n", "50", "-T", "10", "--seed", "4", "-o", str(out), "-q"]
    assert main(args + ["--rewards", "--policy", "uniform"]) == 0
    assert load(out, patrol.mdp) == simulate(patrol, 50, 10, seed=4, rewards=True, policy="uniform")
    assert main(args + ["--force", "--epsilon", "0.25"]) == 0
    assert load(out, patrol.mdp) == simulate(patrol, 50, 10, seed=4, epsilon=0.25)
    assert main(args + ["--force", "--policy", "uniform", "--lambda", "2"]) == 1
    assert "does not apply with --policy uniform" in capsys.readouterr().err
