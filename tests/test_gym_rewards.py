"""rmtk.gym.collect records rewards: CliffWalking's own against an independent log of the same
episodes, a user's reward function, FrozenLake in a vector environment, the same recording on
the Dask engine, and bad rewards named by episode and step. And the reward traces of a
Parquet dataset counted on Dask equal the local ones."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import gymnasium
import numpy as np
import pytest

from rmtk import dsl
from rmtk.data import save
from rmtk.data.rewards import round_rewards
from rmtk.engines.dask import DaskEngine
from rmtk.errors import DataError
from rmtk.gym import Identity, collect
from rmtk.product.simulate import simulate
from rmtk.traces.rewards import reward_traces

MODELS = Path(__file__).resolve().parents[1] / "models"
CLIFF = ("f", "s", "p", "g", "h")


def cliff_label(obs, info=None):
    """CliffWalking 4x12: the start s (36; where a fall into the cliff sends the agent back),
    the goal g (47), the cliff h (never observed: the agent is sent back), a marked cell p."""
    return "s" if obs == 36 else "g" if obs == 47 else "h" if 37 <= obs <= 46 else "p" if obs == 24 else "f"


def cliff(episodes: int, seed: int, steps: int = 60, env=None, **kw):
    """``collect`` of uniform-random CliffWalking episodes labeled by :func:`cliff_label`."""
    env = env if env is not None else gymnasium.make("CliffWalking-v1", max_episode_steps=steps)
    return collect(env, uniform, cliff_label, Identity(), episodes, seed=seed, propositions=CLIFF, **kw)


def uniform(obs, ctx):
    n = np.shape(ctx.state)
    return ctx.rng.integers(0, 4, size=n) if n else int(ctx.rng.integers(4))


class Logged(gymnasium.Wrapper):
    """Logs every episode's observations and rewards as the environment produced them."""

    def __init__(self, env):
        super().__init__(env)
        self.episodes: list[tuple[list, list]] = []

    def reset(self, **kw):
        obs, info = self.env.reset(**kw)
        self.episodes.append(([obs], []))
        return obs, info

    def step(self, action):
        obs, r, term, trunc, info = self.env.step(action)
        self.episodes[-1][0].append(obs)
        self.episodes[-1][1].append(r)
        return obs, r, term, trunc, info


def logged_traces(episodes, label) -> Counter:
    """{(compressed word, next letter, reward): count} from the log, by hand."""
    out: Counter = Counter()
    for observations, rewards in episodes:
        letters = [CLIFF.index(label(o)) for o in observations]
        word: list[int] = []
        for t, r in enumerate(rewards):
            if not word or word[-1] != letters[t]:
                word.append(letters[t])
            out[(tuple(word), letters[t + 1], float(round_rewards(r)))] += 1
    return out


def as_counter(traces) -> Counter:
    return Counter(
        {
            (tuple(traces.trie.word(int(p))), int(k), float(v)): int(c)
            for p, k, v, c in zip(traces.node, traces.letter, traces.value, traces.count)
        }
    )


def test_cliff_walking_rewards_equal_the_environments(tmp_path):
    env = Logged(gymnasium.make("CliffWalking-v1", max_episode_steps=60))
    rec = cliff(40, 3, env=env, rewards=True)
    traces = reward_traces(rec, rec.space)
    assert as_counter(traces) == logged_traces(env.episodes, cliff_label)
    assert traces.n_observations == rec.n_steps == sum(len(r) for _, r in env.episodes)
    assert set(traces.value.tolist()) == {-1.0, -100.0}  # a step, a fall into the cliff
    # the fall and an ordinary step into the start are told apart only by the reward: noisy pairs
    node, letter, _ = traces.pairs()
    assert traces.noisy()[letter == CLIFF.index("s")].any()
    # without rewards= the recording is the one collect made before
    plain = cliff(40, 3)
    assert plain.rewards is None and plain == type(plain)(**{**_fields(rec), "rewards": None})
    with pytest.raises(DataError, match="have no rewards"):
        reward_traces(plain, plain.space)


def _fields(rec):
    import attrs

    return {f.name: getattr(rec, f.name) for f in attrs.fields(type(rec))}


def test_a_reward_function_and_its_errors():
    def goal(obs, action, reward, next_obs, info):
        return 1.0 if next_obs == 47 else 0.0

    rec = cliff(30, 1, steps=200, rewards=goal)
    traces = reward_traces(rec, rec.space)
    g = CLIFF.index("g")
    assert (traces.value == (traces.letter == g)).all() and not traces.noisy().any()
    bad = lambda obs, action, reward, next_obs, info: "lots" if next_obs == 24 else 0.0  # noqa: E731
    with pytest.raises(DataError, match=r"episode \d+, step \d+: the reward function returned the reward 'lots'"):
        cliff(30, 1, steps=200, rewards=bad)
    boom = lambda *a: 1 / 0  # noqa: E731
    with pytest.raises(DataError, match="episode 0, step 0: the reward function raised ZeroDivisionError"):
        cliff(3, 1, steps=200, rewards=boom)


def frozen_label(obs, info=None):
    return {5: "h", 7: "h", 11: "h", 12: "h", 15: "g"}.get(int(obs), "f")


def test_frozen_lake_vector_env_and_dask(dask_client):
    def make():
        return gymnasium.make_vec(
            "FrozenLake-v1", num_envs=4, vectorization_mode="sync", is_slippery=True, max_episode_steps=30
        )

    kw = dict(propositions=("f", "h", "g"), rewards=True, shard=8)
    rec = collect(make(), uniform, frozen_label, Identity(), 64, seed=2, **kw)
    traces = reward_traces(rec, rec.space)
    assert traces.n_observations == rec.n_steps  # NEXT_STEP: every episode's last observation labeled
    assert ((traces.value == 1.0) == (traces.letter == 2)).all()  # paid 1 exactly on reaching the goal
    assert (
        collect(make, uniform, frozen_label, Identity(), 64, seed=2, engine=DaskEngine(client=dask_client), **kw) == rec
    )


def test_parquet_traces_on_dask_equal_local(dask_client, tmp_path):
    task = dsl.load(MODELS / "patrol.rm").tasks["patrol"]
    demos = simulate(task, 6_000, 12, seed=9, rewards=True, epsilon=0.3)
    path = tmp_path / "d.parquet"
    save(demos, path, task.mdp, partition_size=1_000)
    local = reward_traces(path, task)
    assert reward_traces(path, task, engine=DaskEngine(client=dask_client)) == local == reward_traces(demos, task)
    assert reward_traces(demos, task, chunk=700, engine=DaskEngine(client=dask_client)) == local
    assert local.n_observations == 6_000 * 11
