"""CRM from a detection in Stable-Baselines3's replay buffer (rmtk/rl/belief_crm.py): every live
node's experience on one letter drawn per step, checked against the machine; the draws seeded;
a tiny DQN on the belief product learns the corridor. Skips without the rl extra."""

from __future__ import annotations

import numpy as np
import pytest

sb3 = pytest.importorskip("stable_baselines3", reason="stable-baselines3 is not installed (pip install '.[rl]')")
torch = pytest.importorskip("torch", reason="torch is not installed (pip install '.[rl]')")

from rmtk.envs import gridworld  # noqa: E402
from rmtk.errors import ModelError, RmtkError  # noqa: E402
from rmtk.gym import MdpEnv, RewardMachineEnv, SimulatedDetector, StateLabels  # noqa: E402
from rmtk.label_noise import LabelNoise  # noqa: E402
from rmtk.machine.model import RewardMachine  # noqa: E402
from rmtk.rl import crm, no_log_folder  # noqa: E402
from rmtk.rl.belief_crm import BeliefCounterfactuals  # noqa: E402
from rmtk.rl.sb3 import one_thread  # noqa: E402


def coffee_like() -> RewardMachine:
    """u0 -f-> u1 -g/1-> end, n ends the task from u0 and u1; letters f g i n."""
    return RewardMachine.from_transitions(
        {("u0", "f"): "u1", ("u0", "n"): "end", ("u1", "g"): ("end", 1.0), ("u1", "n"): "end"},
        ["f", "g", "i", "n"],
        nodes=["u0", "u1", "end"],
    )


@pytest.fixture(scope="module")
def corridor():
    """A 1 x 4 corridor f i i g, start at the i next to f."""
    mdp = gridworld(["f i i g"], slip=0.0, start=[(0, 1)], propositions=["f", "g", "i", "n"])
    return mdp, coffee_like()


def belief_env(mdp, machine, noise, seed=0, tracker=None, steps=20):
    labeler = StateLabels.of(mdp)
    detector = SimulatedDetector(labeler, machine, noise, seed=seed)
    return RewardMachineEnv(
        MdpEnv(mdp, steps), machine, labeler, observation="belief", detector=detector, tracker=tracker
    )


def dqn(env, seed=0, **kw):
    """A tiny DQN with belief CRM; by default it acts at random and takes no gradient step."""
    random = {"exploration_initial_eps": 1.0, "exploration_final_eps": 1.0}
    kw = {"learning_starts": 0, "gradient_steps": 0, "buffer_size": 10_000, **random, **kw}
    tiny = {"net_arch": [16]}
    return no_log_folder(
        sb3.DQN("MultiInputPolicy", env, policy_kwargs=tiny, seed=seed, device="cpu", **crm(env, seed=seed), **kw)
    )


def rows(buf):
    """The stored experiences: state, node, next state, next node, reward, ended (one per row)."""
    p = buf.pos
    s = buf.observations["obs"][:p, 0, 0].astype(int)
    s2 = buf.next_observations["obs"][:p, 0, 0].astype(int)
    b, b2 = buf.observations["belief"][:p, 0], buf.next_observations["belief"][:p, 0]
    assert set(b.sum(axis=1).tolist()) == {1.0} and set(b2.sum(axis=1).tolist()) == {1.0}  # one-hot
    ended = buf.dones[:p, 0].astype(bool) & ~buf.timeouts[:p, 0].astype(bool)
    return s, b.argmax(axis=1), s2, b2.argmax(axis=1), buf.rewards[:p, 0], ended


def test_label_noise_sb3_belief_crm_stores_every_nodes_experience_on_the_true_letter(corridor):
    """A detector that never errs: each step's letter is the next state's, for both live nodes."""
    mdp, m = corridor
    model = dqn(belief_env(mdp, m, LabelNoise.exact(m.alphabet)))
    model.learn(200)
    buf = model.replay_buffer
    assert buf.experiences == model.num_timesteps * 2 == buf.pos
    s, u, s2, v, r, ended = rows(buf)
    assert u[0::2].tolist() == [0] * (buf.pos // 2) and u[1::2].tolist() == [1] * (buf.pos // 2)
    letter = np.array([m.alphabet.index(mdp.propositions[k]) for k in mdp.labels[s2]])
    np.testing.assert_array_equal(v, m.delta_u[u, letter])
    np.testing.assert_array_equal(r, m.delta_r[u, letter])
    both = np.repeat(ended[0::2] & ended[1::2], 2)  # the world's episode ended: every row ends
    assert (ended[v == 2]).all() and (ended <= (v == 2) | both).all() and (both & (v != 2)).any()
    assert (r == 1).any() and (v == 1).any()


def test_label_noise_sb3_belief_crm_draws_one_letter_a_step_seeded(corridor):
    """Under a detector at 0.9 the letter is drawn from the detection: the same for every node of
    a step, not the true one at about 1 − (0.9·0.9 + 0.1·0.1/3) ≈ 0.19 of the steps (fewer where
    another letter moves both nodes alike), and the same draws from the same seed."""
    mdp, m = corridor
    noise = LabelNoise.uniform(m.alphabet, 0.1)
    runs = []
    for _ in range(2):
        model = dqn(belief_env(mdp, m, noise, seed=5), seed=3)
        model.learn(300)
        runs.append(rows(model.replay_buffer))
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)
    s, u, s2, v, r, ended = runs[0]
    true = np.array([m.alphabet.index(mdp.propositions[k]) for k in mdp.labels[s2]])
    # the letter of each step, from node u0's row: which letters lead u0 where it went
    consistent = m.delta_u[u[1::2][:, None], np.arange(4)[None, :]] == v[1::2][:, None]
    from_u0 = m.delta_u[0][None, :] == v[0::2][:, None]
    assert (consistent & from_u0).any(axis=1).all()  # one letter explains both nodes' rows
    wrong = ~(consistent & from_u0)[np.arange(len(v[0::2])), true[0::2]]
    assert len(wrong) == 300 and 0.05 < wrong.mean() < 0.25


def test_label_noise_sb3_belief_crm_refuses_what_it_cannot_do(corridor):
    mdp, m = corridor
    env = belief_env(mdp, m, LabelNoise.exact(m.alphabet))
    with pytest.raises(RmtkError, match="n-step returns with CRM from a belief"):
        crm(env, n_steps=3, gamma=0.9)
    flat = RewardMachineEnv(MdpEnv(mdp, 20), m, StateLabels.of(mdp), observation="flat")
    with pytest.raises(ModelError, match="a belief replay buffer needs"):
        BeliefCounterfactuals.of(flat)


def test_label_noise_sb3_dqn_on_the_belief_learns_the_corridor(corridor):
    """A tiny DQN trained with belief CRM at detector confidence 0.9 fetches f, then walks to g,
    greedily."""
    mdp, m = corridor
    env = belief_env(mdp, m, LabelNoise.uniform(m.alphabet, 0.1))
    explore = {"exploration_initial_eps": 1.0, "exploration_final_eps": 0.1, "exploration_fraction": 0.5}
    model = dqn(env, gradient_steps=1, learning_rate=5e-3, target_update_interval=100, gamma=0.9, **explore)
    model.learn(3000)
    test = belief_env(mdp, m, LabelNoise.exact(m.alphabet), seed=9)
    obs, _ = test.reset(seed=4)
    actions = []
    for _ in range(12):
        actions.append(int(model.predict(obs, deterministic=True)[0]))
        obs, reward, term, trunc, _ = test.step(actions[-1])
        if term or trunc:
            break
    assert reward == 1.0 and [mdp.actions[a] for a in actions] == ["left", "right", "right", "right"]


def qmdp_dqn(env, seed=0, **kw):
    """``dqn`` with ``QmdpPolicy`` (rmtk/rl/qmdp.py)."""
    from rmtk.rl.qmdp import qmdp_kwargs, qmdp_policy

    kw = {"learning_starts": 0, "buffer_size": 10_000, **kw}
    policy_kwargs = dict(qmdp_kwargs(env), net_arch=[16])
    model = sb3.DQN(qmdp_policy(), env, policy_kwargs=policy_kwargs, seed=seed, device="cpu", **crm(env), **kw)
    return no_log_folder(model)


def test_label_noise_sb3_qmdp_acts_on_the_belief_weighted_values_of_the_live_nodes(corridor):
    """QmdpPolicy's value at a belief: the network at each live node's one-hot, weighted by the
    belief, an end node worth 0 (computed here from the plain MultiInputPolicy network with the
    same weights); the greedy action is its argmax; a saved model loads with it."""
    mdp, m = corridor
    env = belief_env(mdp, m, LabelNoise.uniform(m.alphabet, 0.2))
    model = qmdp_dqn(env, gradient_steps=1)
    with one_thread():
        model.learn(300)
    plain = dqn(env)
    plain.q_net.load_state_dict(model.q_net.state_dict())
    beliefs = np.array([[0.2, 0.5, 0.3], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.1, 0.0, 0.9], [0.7, 0.3, 0.0]])
    states = np.array([1, 2, 0, 3, 1])
    obs = {"obs": states, "belief": beliefs}
    with torch.no_grad():
        got = model.q_net(model.policy.obs_to_tensor(obs)[0]).numpy()
        at = [
            plain.q_net(plain.policy.obs_to_tensor({"obs": states, "belief": np.eye(3)[[u] * 5]})[0]).numpy()
            for u in range(3)
        ]
    want = beliefs[:, 0, None] * at[0] + beliefs[:, 1, None] * at[1]  # node 2 (end) worth 0
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(got[1], at[1][1])  # a live one-hot: the network as it is
    assert not got[2].any() and np.abs(at[2][2]).sum() > 0  # an end one-hot: 0, not the network's
    np.testing.assert_array_equal(model.predict(obs, deterministic=True)[0], got.argmax(axis=1))
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        model.save(f"{folder}/m.zip")
        again = sb3.DQN.load(f"{folder}/m.zip", device="cpu")
    with torch.no_grad():
        np.testing.assert_array_equal(again.q_net(again.policy.obs_to_tensor(obs)[0]).numpy(), got)


def test_label_noise_sb3_qmdp_trains_as_the_plain_policy_where_beliefs_are_one_hot(corridor):
    """With a detector that never errs every belief is one-hot: QmdpPolicy acts, trains and ends
    with the weights of MultiInputPolicy, bit for bit (same seed, greedy steps included)."""
    mdp, m = corridor
    env = lambda: belief_env(mdp, m, LabelNoise.exact(m.alphabet))  # noqa: E731
    kw = {"gradient_steps": 1, "exploration_final_eps": 0.1, "exploration_fraction": 0.3}
    models = [qmdp_dqn(env(), seed=2, **kw)]
    with one_thread():
        models[0].learn(600)  # before the next model is made: SB3 samples batches with numpy's global generator
        models.append(dqn(env(), seed=2, exploration_initial_eps=1.0, **kw))
        models[1].learn(600)
    a, b = (dict(x.q_net.state_dict()) for x in models)
    assert set(a) == set(b)
    for key in a:
        torch.testing.assert_close(a[key], b[key], rtol=0, atol=0)


def test_label_noise_sb3_qmdp_refuses_what_it_cannot_do(corridor):
    from rmtk.rl.qmdp import qmdp_kwargs, qmdp_policy

    mdp, m = corridor
    flat = RewardMachineEnv(MdpEnv(mdp, 20), m, StateLabels.of(mdp), observation="flat")
    with pytest.raises(ModelError, match="QmdpPolicy acts on a belief"):
        qmdp_kwargs(flat)
    env = belief_env(mdp, m, LabelNoise.exact(m.alphabet))
    with pytest.raises(ModelError, match="one of them live"):
        sb3.DQN(qmdp_policy(), env, policy_kwargs={"ended": (True, True, True)}, device="cpu")
    with pytest.raises(RmtkError, match="the belief has 3 nodes, and the machine 2"):
        sb3.DQN(qmdp_policy(), env, policy_kwargs={"ended": (False, True)}, device="cpu").predict(env.reset()[0])
