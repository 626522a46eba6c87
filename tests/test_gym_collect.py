"""rmtk.gym.collect: counts of Gymnasium episodes equal the counts of the same trajectories,
do not depend on the workers, bound their memory by shards, and every bad input is named by
episode and step. Also: ``import rmtk`` does not import gymnasium."""

import subprocess
import sys
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from gymnasium import spaces

from rmtk import ConfidenceMiner, DataError, EmpiricalPTP, Learner, RmtkError, dsl, isomorphic
from rmtk.data import Demonstrations
from rmtk.engines.dask import DaskEngine
from rmtk.engines.shards import plan_shards
from rmtk.gym import (
    Bins,
    Identity,
    InfoLabel,
    MdpEnv,
    MdpVectorEnv,
    NodePolicy,
    Recording,
    StateLabels,
    collect,
    collect_shard,
    office_env,
)
from rmtk.ptp.empirical import canonical_counts, count_chunk, to_policy
from rmtk.ptp.exact import shortest_path_table
from rmtk.sat.encoders import SimplestEncoder

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def coffee():
    return dsl.load(ROOT / "models" / "office.rm").tasks["coffee"]


def as_dict(table):
    ptp = to_policy(table)
    return {
        (tuple(ptp.trie.word(p)), int(s)): tuple(int(c) for c in row)
        for p, s, row in zip(ptp.tree.pair_node, ptp.tree.pair_state, ptp.counts)
    }


def uniform(obs, ctx):
    n = np.shape(ctx.state)
    return ctx.rng.integers(0, 4, size=n) if n else int(ctx.rng.integers(4))


def test_import_rmtk_does_not_import_gymnasium():
    code = "import sys, rmtk, rmtk.learner, rmtk.ptp.empirical, rmtk.envs; print('gymnasium' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_scripted_episode_counted_by_hand():
    # from the start cell r7c2: up, up, left, left, ... (the policy reads the step number)
    script = ["up", "up", "left", "left", "down"]
    mdp = office_env().mdp
    env = MdpEnv(mdp, max_steps=5)
    rec = collect(env, lambda obs, ctx: mdp.action_index(script[ctx.t]), StateLabels.of(mdp), Identity(), 3, seed=1)
    # r7c2 -up-> r6c2 -up-> r6c2 (a wall) -left-> r6c1 -left-> r6c0 (labels i throughout: one word "i")
    i = mdp.propositions.index("i")
    counts = {"r7c2": {"up": 3}, "r6c2": {"up": 3, "left": 3}, "r6c1": {"left": 3}, "r6c0": {"down": 3}}
    expected = {((i,), mdp.state_index(s)): tuple(by.get(a, 0) for a in mdp.actions) for s, by in counts.items()}
    assert as_dict(rec) == expected
    assert (rec.episodes, rec.truncated, rec.terminated, rec.cut, rec.n_steps) == (3, 3, 0, 0, 15)
    assert rec.propositions == mdp.propositions and rec.space.n_states == 108
    # cut at max_steps when the environment does not end its episodes
    rec = collect(MdpEnv(mdp), uniform, StateLabels.of(mdp), Identity(), 2, seed=0, max_steps=7)
    assert (rec.cut, rec.n_steps) == (2, 14)


def test_counts_equal_counting_the_trajectories(coffee):
    mdp = coffee.mdp
    seen = []

    def logging(obs, ctx):
        a = ctx.rng.integers(0, 4, size=len(obs))
        seen.append((np.array(obs), a, np.array(ctx.label)))
        return a

    env = MdpVectorEnv(mdp, 50, max_steps=12)
    rec = collect(env, logging, StateLabels.of(mdp), Identity(), 50, seed=3)
    states, actions, labels = (np.stack([x[k] for x in seen], axis=1) for k in range(3))
    assert np.array_equal(labels, mdp.labels[states])
    whole = count_chunk(mdp, Demonstrations.full(states, actions))
    assert rec.table == canonical_counts(whole)  # the same counts, canonically numbered


def test_same_seed_same_recording_whatever_the_engine(coffee, dask_client):
    mdp = coffee.mdp
    policy = NodePolicy.from_table(coffee.machine, shortest_path_table(coffee, 0.3))
    make = lambda: MdpVectorEnv(mdp, 100, max_steps=30)  # noqa: E731
    one = collect(make, policy, StateLabels.of(mdp), Identity(), 1000, seed=5, shard=200)
    two = collect(
        make, policy, StateLabels.of(mdp), Identity(), 1000, seed=5, shard=200, engine=DaskEngine(client=dask_client)
    )
    assert one == two and one.episodes == 1000
    assert collect(make, policy, StateLabels.of(mdp), Identity(), 1000, seed=6, shard=200) != one
    # a shard is a plain call; shards merge into the whole
    parts = [
        collect_shard(make, policy, StateLabels.of(mdp), Identity(), sh.size, sh.spawned_seed(), first=sh.start)
        for sh in plan_shards(1000, 200, 5)
    ]
    merged = parts[0]
    for p in parts[1:]:
        merged = merged.merge(p)
    assert merged.canonical() == one
    with pytest.raises(RmtkError, match="needs a function that makes the environment"):
        collect(make(), policy, StateLabels.of(mdp), Identity(), 400, shard=200, engine=DaskEngine(client=dask_client))


def test_a_single_environment_and_a_gymnasium_id(coffee):
    mdp = coffee.mdp
    rec = collect("rmtk/OfficeWorld-v0", uniform, StateLabels.of(mdp), Identity(), 4, seed=0, max_steps=10)
    assert rec.episodes == 4 and rec.n_steps == 40 and rec.name == "rmtk/OfficeWorld-v0"
    # the label reported in info, read by a plain labeler, and a plain discretiser function
    rec2 = collect(
        office_env(max_steps=10), uniform, InfoLabel(mdp.propositions), lambda obs: int(obs), 4, seed=0, n_states=108
    )
    assert rec2.table == rec.table


def test_learning_from_a_recording(coffee):
    mdp = coffee.mdp
    table = shortest_path_table(coffee, 0.1)
    rec = collect(
        MdpVectorEnv(mdp, 1000, max_steps=40),
        NodePolicy.from_table(coffee.machine, table),
        StateLabels.of(mdp),
        Identity(),
        10_000,
        seed=0,
    )
    assert isinstance(rec, Recording) and "10000 episodes" in rec.summary()
    res = Learner(EmpiricalPTP(rec), miner=ConfidenceMiner(0.05), encoder=SimplestEncoder(), max_nodes=4, irl=None).fit(
        rec.space
    )
    assert len(res.machines) == 1
    assert isomorphic(res.machines[0], coffee.machine.with_alphabet_order(mdp.propositions), rewards=False)
    # the recording carries its policy: verdicts against the task compare with the table recorded
    from rmtk.ptp.exact import NodePolicyTable

    expected = NodePolicyTable(table).class_table(coffee)
    np.testing.assert_array_equal(EmpiricalPTP(rec).expert_classes(coffee), expected)


# ---------------------------------------------------------------------- bins
class Line(gymnasium.Env):
    """A point on a line, x_{t+1} = x_t + 0.4·(action − 1) (actions 0, 1, 2), starting at
    0.05 ± 0.01; labelled by its sign. ``nan_at`` makes the observation NaN at that step."""

    def __init__(self, nan_at=None):
        self.observation_space = spaces.Box(-np.inf, np.inf, (1,), np.float64)
        self.action_space = spaces.Discrete(3)
        self.nan_at = nan_at

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.x, self.t = 0.05 + self.np_random.uniform(-0.01, 0.01), 0
        return np.array([self.x]), {}

    def step(self, action):
        self.x += 0.4 * (int(action) - 1)
        self.t += 1
        obs = np.array([np.nan if self.t == self.nan_at else self.x])
        return obs, 0.0, False, self.t >= 4, {}


def sign(obs, info):
    return "pos" if obs[0] >= 0 else "neg"


def test_bins_clip_and_count():
    rec = collect(Line(), lambda obs, ctx: 2, sign, Bins(-1.0, 1.0, 4), 5, seed=0, propositions=["neg", "pos"])
    # x = 0.05, 0.45, 0.85, 1.25 (clipped into the last bin) per episode
    assert rec.clipped == 5 and rec.n_states == 4
    assert sorted({s for _, s in as_dict(rec)}) == [2, 3]
    b = Bins([0, -1], [1, 1], [2, 4])
    assert b.n_states == 8 and b(np.array([0.99, 0.0])) == 1 * 4 + 2
    assert np.allclose(b.centres([6]), [[0.75, 0.25]])
    with pytest.raises(RmtkError, match="dimension 0 has low 1.0 and high 1.0"):
        Bins(1.0, 1.0, 3)
    with pytest.raises(RmtkError, match="one per dimension"):
        Bins([0, 0], [1, 1, 1], 2)


def test_observation_outside_the_bins_is_an_error_when_asked():
    with pytest.raises(
        DataError, match=r"episode 0, step 3: the observation is outside the bins \(dimension 0 is 1.25"
    ):
        collect(
            Line(), lambda obs, ctx: 2, sign, Bins(-1.0, 1.0, 4, clip=False), 5, seed=0, propositions=["neg", "pos"]
        )
    with pytest.raises(DataError, match="episode 0, step 2: the observation holds NaN"):
        collect(Line(nan_at=2), lambda obs, ctx: 1, sign, Bins(-1.0, 1.0, 4), 5, seed=0, propositions=["neg", "pos"])


# ---------------------------------------------------------------------- bad input, named
def test_bad_labels_are_named():
    props = ["neg", "pos"]
    with pytest.raises(
        DataError,
        match=r"episode 0, step 0: the labeler returned 'zero', which is not a proposition; "
        r"the alphabet is 'neg', 'pos'",
    ):
        collect(Line(), lambda o, c: 1, lambda obs, info: "zero", Bins(-1, 1, 4), 3, seed=0, propositions=props)
    with pytest.raises(
        DataError,
        match=r"episode 0, step 1: the labeler returned 1 \(int\); it must return one "
        r"proposition name",
    ):
        collect(
            Line(),
            lambda o, c: 2,
            lambda obs, info: "pos" if obs[0] < 0.2 else 1,
            Bins(-1, 1, 4),
            3,
            seed=0,
            propositions=props,
        )
    with pytest.raises(RmtkError, match="pass propositions"):
        collect(Line(), lambda o, c: 1, sign, Bins(-1, 1, 4), 3)

    # a vector labeler's batch, checked entry by entry
    class Batch:
        propositions = ("a", "b")

        def batch(self, obs, infos):
            return np.where(np.arange(len(obs)) == 2, 7, 0)

    with pytest.raises(
        DataError,
        match=r"episode 2, step 0: the labeler returned a label that is not a proposition "
        r"\(index 7\)",
    ):
        collect(MdpVectorEnv(office_env().mdp, 4, max_steps=3), uniform, Batch(), Identity(), 4, seed=0)


def test_bad_actions_are_named():
    mdp = office_env().mdp
    labels = StateLabels.of(mdp)
    starts = []

    def second_episode_bad(obs, ctx):
        starts.append(ctx.t == 0)
        return 4 if sum(starts) == 2 and ctx.t == 2 else 0

    with pytest.raises(
        DataError,
        match=r"episode 1, step 2: the policy returned action 4, which is not in the action "
        r"space Discrete\(4\)",
    ):
        collect(MdpEnv(mdp, max_steps=5), second_episode_bad, labels, Identity(), 3, seed=0)
    with pytest.raises(
        DataError,
        match=r"episode 0, step 0: the policy returned 1.0 \(float64\); actions of "
        r"Discrete\(4\) are integers",
    ):
        collect(MdpEnv(mdp, max_steps=5), lambda obs, ctx: 1.0, labels, Identity(), 3, seed=0)
    with pytest.raises(DataError, match=r"episode 0, step 0: .* one action per copy of the vector environment"):
        collect(MdpVectorEnv(mdp, 4, max_steps=5), lambda obs, ctx: 0, labels, Identity(), 4, seed=0)
    with pytest.raises(DataError, match=r"episode 3, step 0: the policy returned action -1"):
        collect(MdpVectorEnv(mdp, 4, max_steps=5), lambda obs, ctx: np.array([0, 1, 2, -1]), labels, Identity(), 4)
    with pytest.raises(RmtkError, match="counts discrete actions"):
        collect(gymnasium.make("Pendulum-v1"), uniform, sign, Bins(-1, 1, 2), 1, propositions=["neg", "pos"])


def test_bad_discretisers_are_named():
    mdp = office_env().mdp
    labels = StateLabels.of(mdp)
    with pytest.raises(DataError, match=r"episode 0, step 0: the discretiser returned state 200, outside 0..107"):
        collect(MdpEnv(mdp, max_steps=5), uniform, labels, lambda obs: 200, 2, n_states=108)
    with pytest.raises(DataError, match=r"episode 0, step 0: the discretiser returned 2.5 \(float\)"):
        collect(MdpEnv(mdp, max_steps=5), uniform, labels, lambda obs: 2.5, 2, n_states=108)
    with pytest.raises(RmtkError, match="pass n_states=N"):
        collect(MdpEnv(mdp, max_steps=5), uniform, labels, lambda obs: 0, 2)
    with pytest.raises(RmtkError, match="Identity needs a Discrete observation space"):
        collect(Line(), lambda o, c: 1, sign, Identity(), 2, propositions=["neg", "pos"])
    with pytest.raises(RmtkError, match="episodes must be a whole number"):
        collect(MdpEnv(mdp), uniform, labels, Identity(), 0)


# ---------------------------------------------------------------------- the user's objects failing, named
class Strict(gymnasium.Env):
    """Two states; ``step`` accepts only a Python int (as some environments do), and raises
    at ``fail_step`` of ``fail_episode`` (``reset`` at the episode's start when ``fail_step`` is
    None)."""

    def __init__(self, fail_episode=None, fail_step=None):
        self.observation_space, self.action_space = spaces.Discrete(2), spaces.Discrete(3)
        self.fail_episode, self.fail_step, self.episode = fail_episode, fail_step, -1

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.episode, self.t = self.episode + 1, 0
        if self.episode == self.fail_episode and self.fail_step is None:
            raise ConnectionError("simulator lost")
        return 0, {}

    def step(self, action):
        if type(action) is not int:
            raise TypeError(f"step() wants an int, got {type(action).__name__}")
        if self.episode == self.fail_episode and self.t == self.fail_step:
            raise RuntimeError("physics exploded")
        self.t += 1
        return self.t % 2, 0.0, False, self.t >= 3, {}


def test_policy_with_the_wrong_signature_is_named():
    with pytest.raises(DataError, match=r"episode 0, step 0: the policy cannot be called as policy\(obs, ctx\)"):
        collect(Strict(), lambda obs: 0, lambda o, i: "a", Identity(), 2, propositions=["a"])
    # an error inside a policy of the right signature is named, and chained
    with pytest.raises(DataError, match=r"episode 0, step 1: the policy raised KeyError: 'x'") as err:
        collect(
            Strict(), lambda obs, ctx: {}["x"] if ctx.t == 1 else 0, lambda o, i: "a", Identity(), 2, propositions=["a"]
        )
    assert isinstance(err.value.__cause__, KeyError)


def test_the_checked_action_is_what_the_environment_gets():
    # np.array(2) and np.int64(1) pass the check; the environment gets the Python integer
    for action in (np.array(2), np.int64(1), 2):
        rec = collect(Strict(), lambda obs, ctx, a=action: a, lambda o, i: "a", Identity(), 2, propositions=["a"])
        assert rec.n_steps == 6 and set(rec.keys % 3) == {int(action)}
    assert office_env().step  # MdpEnv takes what its action space contains
    env = office_env()
    env.reset(seed=0)
    assert env.action_space.contains(np.array(1))
    assert env.step(np.array(1))[0] == env.mdp.state_index("r7c3")
    with pytest.raises(RmtkError, match=r"action 4 is not in Discrete\(4\)"):
        env.step(4)


def test_propositions_as_one_string_of_names():
    rec = collect(Strict(), lambda o, c: 0, lambda o, i: "o" if o else "a", Identity(), 2, propositions="a b c o")
    assert rec.propositions == ("a", "b", "c", "o")
    assert StateLabels("a b", [0, 1]).propositions == ("a", "b")


def test_an_environment_that_raises_is_named():
    with pytest.raises(
        DataError,
        match=r"episode 2, step 1: the environment's step\(0\) raised RuntimeError: "
        r"physics exploded",
    ) as err:
        collect(
            Strict(fail_episode=2, fail_step=1), lambda o, c: 0, lambda o, i: "a", Identity(), 4, propositions=["a"]
        )
    assert isinstance(err.value.__cause__, RuntimeError)
    with pytest.raises(
        DataError,
        match=r"episode 1, step 0: the environment's reset\(\) raised ConnectionError: "
        r"simulator lost",
    ) as err:
        collect(Strict(fail_episode=1), lambda o, c: 0, lambda o, i: "a", Identity(), 4, propositions=["a"])
    assert isinstance(err.value.__cause__, ConnectionError)
    with pytest.raises(RmtkError, match=r"cannot make the Gymnasium environment 'NoSuchEnv-v0': NameNotFound"):
        collect("NoSuchEnv-v0", lambda o, c: 0, lambda o, i: "a", Identity(), 2, propositions=["a"])
    with pytest.raises(RmtkError, match=r"'rmtk/Office-v0'.*named with their module: 'rmtk.gym:rmtk/OfficeWorld-v0'"):
        collect("rmtk/Office-v0", lambda o, c: 0, lambda o, i: "a", Identity(), 2, propositions=["a"])

    def broken():
        raise OSError("no display")

    with pytest.raises(RmtkError, match=r"the environment factory 'broken' raised OSError: no display"):
        collect(broken, lambda o, c: 0, lambda o, i: "a", Identity(), 2, propositions=["a"])


def test_gymnasium_make_by_module_and_id_in_a_fresh_interpreter():
    code = """
import gymnasium
try:
    gymnasium.make("rmtk/OfficeWorld-v0")
except gymnasium.error.NamespaceNotFound:
    print("plain id before import: NamespaceNotFound")
env = gymnasium.make("rmtk.gym:rmtk/OfficeWorld-v0")
print("module:id", env.reset(seed=0)[0], env.unwrapped.mdp.n_states)
vec = gymnasium.make_vec("rmtk.gym:rmtk/OfficeWorld-v0", num_envs=3)
print("make_vec", type(vec).__name__, vec.reset(seed=0)[0].tolist())
print("plain id after", gymnasium.make("rmtk/OfficeWorld-v0").reset(seed=0)[0])
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    start = office_env().mdp.state_index("r7c2")
    assert out.stdout.splitlines() == [
        "plain id before import: NamespaceNotFound",
        f"module:id {start} 108",
        f"make_vec MdpVectorEnv {[start] * 3}",
        f"plain id after {start}",
    ]


def test_a_recording_counts_moves_and_starts():
    mdp = office_env().mdp
    seen = []

    def logging(obs, ctx):
        a = int(ctx.rng.integers(4))
        seen.append((ctx.t, int(obs), a))
        return a

    rec = collect(MdpEnv(mdp, max_steps=6), logging, StateLabels.of(mdp), Identity(), 30, seed=2)
    expected = {}
    for (t, s, a), nxt in zip(seen, seen[1:] + [None]):
        if nxt is not None and nxt[0] == t + 1:
            expected[(s, a, nxt[1])] = expected.get((s, a, nxt[1]), 0) + 1
    # every step but the last of each episode, checked against the next step's observation
    got = {tuple(m): int(c) for m, c in zip(rec.moves.tolist(), rec.move_counts)}
    assert sum(got.values()) == rec.n_steps == 180
    assert all(got.get(k, 0) >= v for k, v in expected.items()) and sum(expected.values()) == 150
    for s, a, s2 in got:  # the office moves are deterministic
        assert mdp.successors(s, a) == [(s2, 1.0)]
    assert rec.starts.tolist() == [mdp.state_index("r7c2")] and rec.start_counts.tolist() == [30]
    # a vector environment's recording counts the same moves
    vec = collect(
        MdpVectorEnv(mdp, 10, max_steps=6),
        lambda o, c: c.rng.integers(0, 4, 10),
        StateLabels.of(mdp),
        Identity(),
        30,
        seed=2,
    )
    assert vec.move_counts.sum() == 180 and vec.start_counts.tolist() == [30]
    merged = rec.merge(vec)
    assert merged.move_counts.sum() == 360 and merged.start_counts.tolist() == [60]


def test_a_labelers_own_error_is_located():
    with pytest.raises(DataError, match=r"^episode 0, step 0: the environment's info has no 'nope' entry"):
        collect(office_env(max_steps=3), lambda o, c: 0, InfoLabel("a b", key="nope"), Identity(), 2)
    with pytest.raises(DataError, match=r"^episode 0, step 1: the labeler raised ZeroDivisionError"):
        collect(
            Strict(),
            lambda o, c: 0,
            lambda o, i, n=[0]: "a" if n.append(1) or len(n) < 3 else 1 / 0,
            Identity(),
            2,
            propositions="a",
        )


def test_a_node_policy_is_asked_only_about_copies_that_play(coffee):
    """With fewer episodes than copies (a last wave, or a small run), the copies that play no
    episode have state −1: a node policy chooses only for the others (the reacher's expert
    looked up a bin at −1), and the episodes played are those of a full wave."""
    mdp = coffee.mdp
    table = shortest_path_table(coffee, 0.3)
    seen = []
    inner = NodePolicy.from_table(coffee.machine, table)

    def choose(states, nodes, rng):
        seen.append(np.asarray(states).copy())
        return inner.choose(states, nodes, rng)

    policy = NodePolicy(coffee.machine, choose)
    rec = collect(MdpVectorEnv(mdp, 8, max_steps=12), policy, StateLabels.of(mdp), Identity(), 3, seed=1)
    assert rec.episodes == 3 and seen and all(len(s) == 3 and (s >= 0).all() for s in seen)
    # the same three episodes as from a vector of three copies (same seed: same resets and draws)
    three = collect(MdpVectorEnv(mdp, 3, max_steps=12), inner, StateLabels.of(mdp), Identity(), 3, seed=1)
    assert rec == three
