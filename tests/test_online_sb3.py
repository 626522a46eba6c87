"""The online loop with Stable-Baselines3 agents (rmtk/rl/online/): a DQN on the CliffWalking
patrol finds its machine while it trains, the replay buffer serves the current hypothesis'
experiences, runs are repeatable, saved whole and resumed, stopped by Ctrl-C with what they have,
and the errors are clear. Tiny networks, a few thousand steps: seconds each."""

import os
import signal
import tempfile
import zipfile

import numpy as np
import pytest

sb3 = pytest.importorskip("stable_baselines3", reason="stable-baselines3 is not installed (pip install '.[rl]')")
torch = pytest.importorskip("torch", reason="torch is not installed (pip install '.[rl]')")

from rmtk.errors import ModelError, RmtkError  # noqa: E402
from rmtk.gym.wrapper import counterfactual_experiences  # noqa: E402
from rmtk.progress import Progress  # noqa: E402
from rmtk.rl.online import (  # noqa: E402
    AgentExploration,
    OnlineEnv,
    OnlineLearner,
    SubgoalExploration,
    against_truth,
    online_replay,
)
from rmtk.rl.online.hypothesis import Hypothesis  # noqa: E402
from rmtk.rl.online.tasks import cliff_patrol  # noqa: E402

TINY = dict(policy_kwargs={"net_arch": [8]}, batch_size=32, learning_starts=100, buffer_size=5_000, train_freq=4)


def learner(seed=0, **kwargs):
    env, labels, truth = cliff_patrol()
    return OnlineLearner(env, labels, seed=seed, max_nodes=4, **{**TINY, **kwargs}), truth


def test_online_dqn_finds_the_cliff_patrol():
    run, truth = learner()
    run.learn(1_500)
    swaps = run.hypotheses[1:]
    assert len(swaps) >= 2 and swaps[-1].step == 568  # the machine of the last swap is the truth
    for before, swap in zip(run.hypotheses, swaps):  # each swap: a real counterexample to the previous machine
        t, old, new = swap.counterexample, Hypothesis.of(before.machine), Hypothesis.of(swap.machine)
        paid_before = t.expected(old)
        wrong = np.flatnonzero(paid_before != t.rewards)
        if len(wrong):  # paid otherwise
            assert wrong[0] == swap.position and (swap.expected, swap.paid) == (
                paid_before[wrong[0]],
                t.rewards[wrong[0]],
            )
        elif old.terminal[old.runs(t.letters)].any():  # the episode went on after the old machine's end
            assert old.terminal[old.runs(t.letters)[swap.position]]
        else:  # it ended where the old machine went on: the new one ends it there
            last = (new.runs(t.letters)[-1], t.letters[-1])
            assert t.terminated and new.terminal[new.next[last]]
        assert np.array_equal(t.expected(new), t.rewards)  # the new one pays it
        assert t.disagreement(new) is None
    verdict = against_truth(run.machine, truth, run.traces)
    assert verdict.same and run.machine.n_nodes == 4, verdict
    assert any(t.explored for t in run.traces)  # the subgoal walker led episodes
    assert run.env.loop.inference_cpu < run.cpu
    final = run.final
    assert final.machine is run.machine and final.steps == 1_500 and not final.still_changing
    assert str(verdict) == "isomorphic to the true machine"  # its end node too: episodes end where the truth's do


def test_online_replay_buffer_serves_the_current_hypothesis():
    env, labels, truth = cliff_patrol()
    online = OnlineEnv(env, labels, max_nodes=4, exploration=SubgoalExploration())
    model = sb3.DQN("MlpPolicy", online, seed=0, device="cpu", learning_starts=10_000, **online_replay(online))
    model.learn(400)
    buf = model.replay_buffer
    rows = np.arange(buf.pos)
    before = online.machine
    assert before.n_nodes > 1  # the walker found something in 400 steps
    checked = 0
    for machine in (before, truth):  # before and after a swap
        if machine is truth:
            online.loop.assume(truth)
        samples = buf._get_samples(rows)
        obs = samples.observations.numpy().ravel().astype(int)
        nxt = samples.next_observations.numpy().ravel().astype(int)
        s, u, s2, v = obs // 4, obs % 4, nxt // 4, nxt % 4
        for i in range(len(rows)):  # rmtk.gym.wrapper's CRM, computed apart from the buffer
            cf = counterfactual_experiences(machine, labels(s2[i], {}), env_terminated=bool(buf.ended[i]))
            j = list(cf.node).index(u[i])  # the buffer draws live nodes only
            assert (v[i], samples.rewards[i, 0], bool(samples.dones[i, 0])) == (
                cf.next_node[j],
                cf.reward[j],
                bool(cf.terminated[j]),
            )
            checked += 1
        assert np.array_equal(s, buf.observations[rows, 0, 0] // 4)  # the stored step's states
    assert checked == 2 * len(rows)
    taken = buf.actions[rows, 0, 0]
    led = [t for t in online.loop.kept if t.explored]
    assert led and len(np.unique(taken)) == 4  # the walker's actions are the ones stored


def test_online_runs_are_repeatable():
    a, _ = learner(seed=3)
    b, _ = learner(seed=3)
    a.learn(800)
    b.learn(800)
    assert len(a.hypotheses) > 2  # swaps at steps 191, 247 and 396
    assert [s.step for s in a.hypotheses] == [s.step for s in b.hypotheses]
    assert a.machine == b.machine
    from rmtk.rl import q_table

    assert np.array_equal(q_table(a.model), q_table(b.model))


def test_online_progress_lines_and_no_logger_folder(monkeypatch, tmp_path):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    class Lines(Progress):
        def __init__(self):
            self.lines = []

        def note(self, message):
            self.lines.append(message)

    lines = Lines()
    run, _ = learner(progress=lines, report_every=500)
    run.learn(1_000)
    assert len(lines.lines) == 2 and lines.lines[1].startswith("online: 1,000 steps, ")
    assert "success" in lines.lines[1] and " node" in lines.lines[1] and " swap" in lines.lines[1]
    assert not [p for p in os.listdir(tmp_path) if p.startswith("SB3-")]


def test_online_save_and_resume(tmp_path):
    path = tmp_path / "run.zip"
    run, _ = learner()
    run.learn(1_200, checkpoint=path)
    with zipfile.ZipFile(path) as z:
        assert {"model.zip", "machine.rm", "state.json", "traces.npz", "buffer.npz", "walker.npz"} <= set(z.namelist())
        from rmtk import dsl

        assert dsl.loads(z.read("machine.rm").decode()).machines["hypothesis"] == run.machine
    with pytest.raises(RmtkError, match="already exists"):
        learner()[0].learn(10, checkpoint=path)  # another run does not overwrite it unasked
    env, labels, _ = cliff_patrol()
    back = OnlineLearner.resume(path, env, labels, seed=0, max_nodes=4, **TINY)
    assert back.machine == run.machine and len(back.hypotheses) == len(run.hypotheses)
    assert [t.episode for t in back.traces] == [t.episode for t in run.traces]
    assert np.array_equal(back.model.replay_buffer.letters[:1_200], run.model.replay_buffer.letters[:1_200])
    from rmtk.rl import q_table

    assert np.array_equal(q_table(back.model), q_table(run.model))
    back.learn(300, checkpoint=path)
    assert back.steps == 1_500 and back.env.loop.episodes > run.env.loop.episodes


def test_online_ctrl_c_stops_and_keeps_the_run(tmp_path):
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        pytest.skip("the test runner handles SIGINT itself")
    path = tmp_path / "run.zip"
    run, _ = learner()

    def press_ctrl_c(model):
        if model.num_timesteps == 400:
            os.kill(os.getpid(), signal.SIGINT)
        return 0.0

    run.learn(5_000, evaluate=press_ctrl_c, evaluate_every=100, checkpoint=path)
    assert run.stopped == "interrupted at step 400" and run.steps == 400
    with zipfile.ZipFile(path) as z:
        assert '"steps": 400' in z.read("state.json").decode()
    run.learn(100)  # the stop was ours: the next call trains
    assert run.steps == 500 and run.stopped is None


def test_online_errors_name_what_was_expected():
    import gymnasium

    pendulum = gymnasium.make("Pendulum-v1")
    with pytest.raises(ModelError, match=r"DQN cannot take the environment's action space Box.*takes Discrete"):
        OnlineLearner(pendulum, lambda obs, info: "o", sb3.DQN, propositions=["o"])
    env, labels, _ = cliff_patrol()
    with pytest.raises(ModelError, match="SubgoalExploration acts in place of the agent.*on-policy PPO"):
        OnlineLearner(env, labels, sb3.PPO, exploration=SubgoalExploration())
    with pytest.raises(RmtkError, match="algorithm must be a Stable-Baselines3 algorithm class"):
        OnlineLearner(env, labels, "DQN")


def test_online_ppo_and_sac_train_on_the_product():
    env, labels, _ = cliff_patrol()
    ppo = OnlineLearner(env, labels, sb3.PPO, max_nodes=3, n_steps=64, batch_size=32, policy_kwargs={"net_arch": [8]})
    assert isinstance(ppo.env.exploration, AgentExploration) and not ppo.off_policy
    ppo.learn(128)
    assert ppo.steps == 128
    import gymnasium

    from rmtk.machine.model import RewardMachine
    from rmtk.rl.online.tasks import MachinePays

    def upright(obs, info):
        return "up" if obs[0] > 0.9 else "o"

    first_up = RewardMachine.from_transitions({("u0", "up"): ("u1", 1.0)}, ["up", "o"], nodes=["u0", "u1"])
    pendulum = MachinePays(gymnasium.make("Pendulum-v1", max_episode_steps=50), first_up, upright)
    sac = OnlineLearner(
        pendulum,
        upright,
        sb3.SAC,
        propositions=["up", "o"],
        max_nodes=3,
        learning_starts=60,
        batch_size=16,
        policy_kwargs={"net_arch": [8]},
        buffer_size=1_000,
    )
    sac.learn(120)
    assert sac.env.observation_space.shape == (3 + 3,)  # cos, sin, velocity and three node slots
    batch = sac.model.replay_buffer.sample(16)
    assert np.allclose(batch.observations[:, 3:].sum(axis=1).numpy(), 1.0)  # one slot set per sample


def test_online_reproduce_reports_the_verdict_and_draws(tmp_path):
    from rmtk.experiments import Options, run

    small = {"task": "cliff", "steps": 1_500, "runs": 1, "arms": "online,true"}
    report = run("online", Options(quick=True, figure_dir=tmp_path, overrides=small))
    text = report.text()
    assert [row[0] for row in report.tables[0][2]] == ["online, subgoals", "true machine, CRM"]
    assert report.notes[-1] == "final machine of online, subgoals, run 1 (seed 0): isomorphic to the true machine"
    assert "u2 -> end on c reward 1" in text and (tmp_path / "online.png").read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(RmtkError, match="setting arms: expected agents among"):
        run("online", Options(quick=True, overrides={"arms": "online,bogus"}))
