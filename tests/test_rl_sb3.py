"""Stable-Baselines3 agents with reward machines (rmtk.rl): an agent's exact distribution as an
expert (a hand-set DQN whose greedy policy is the Office World's scripted expert, a PPO whose
softmax is a known table), collect through one batched call, CRM in the replay buffer checked
against the machine, PPO on the product, and one clear error per bad input. Every test needs
stable-baselines3 (the rl extra) and skips without it."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

sb3 = pytest.importorskip("stable_baselines3", reason="stable-baselines3 is not installed (pip install '.[rl]')")
torch = pytest.importorskip("torch", reason="torch is not installed (pip install '.[rl]')")

from rmtk import RewardMachine, dsl, isomorphic  # noqa: E402
from rmtk.active.experts import TaskExpert  # noqa: E402
from rmtk.active.loop import ActiveLearner  # noqa: E402
from rmtk.errors import ModelError  # noqa: E402
from rmtk.gym import Bins, Identity, NodePolicy, RewardMachineEnv, StateLabels, collect, office_env  # noqa: E402
from rmtk.gym.mdp_env import MdpVectorEnv  # noqa: E402
from rmtk.product.planning import task_policy  # noqa: E402
from rmtk.ptp.exact import NodePolicyTable, shortest_path_table  # noqa: E402
from rmtk.rl import AgentExpert, agent_policy, crm, no_log_folder, sb3_agent  # noqa: E402

EPSILON = 0.1


@pytest.fixture(scope="module")
def office():
    return dsl.load("models/office.rm")


def product(task, **kw):
    return RewardMachineEnv(office_env(max_steps=100), task.machine, StateLabels.of(task.mdp), observation="flat", **kw)


def steps_to_reward(task) -> np.ndarray:
    """``(n, S, A)``: one plus the expected steps to the machine's next reward (what
    shortest_path_table ranks), by the same fixed point on the dense kernel."""
    mdp, m = task.mdp, task.machine
    S, A, n = mdp.n_states, mdp.n_actions, m.n_nodes
    letter = task.letter_of_proposition[mdp.labels]
    nxt, paid = m.delta_u[:, letter], m.delta_r[:, letter] > 0
    dense = mdp.kernel.toarray().reshape(S, A, S)
    big = float(S * n + 1)
    dist = np.full((n, S), big)
    for _ in range(S * n + 1):
        after = np.where(paid, 0.0, np.minimum(dist[nxt, np.arange(S)[None, :]], big))
        q = 1.0 + np.einsum("sat,ut->usa", dense, after)
        new = np.minimum(q.min(axis=2), big)
        if np.array_equal(new, dist):
            break
        dist = new
    return q


def hand_set_dqn(task, env, **kw):
    """A DQN whose Q-network is one linear layer on the one-hot product state, set to minus the
    expected steps to the next reward: its ε-greedy policy is the scripted expert."""
    model = sb3.DQN("MlpPolicy", env, policy_kwargs={"net_arch": []}, seed=0, device="cpu", **kw)
    q = -steps_to_reward(task)  # (n, S, A); the flat observation is s·n + u
    n, S, A = q.shape
    weight = q.transpose(1, 0, 2).reshape(S * n, A).T
    layer = model.q_net.q_net[0]
    with torch.no_grad():
        layer.weight.copy_(torch.as_tensor(weight, dtype=torch.float32))
        layer.bias.zero_()
    return no_log_folder(model)


def test_sb3_dqn_expert_gives_the_greedy_distribution_exactly(office):
    task = office.tasks["coffee"]
    env = product(task)
    model = hand_set_dqn(task, env)
    expert = AgentExpert(model, task.mdp, task.machine, seed=1)  # a model is adapted with epsilon 0
    assert expert.exact and expert.equivalence
    expert = AgentExpert(sb3_agent(model, epsilon=EPSILON), task.mdp, task.machine)
    table = shortest_path_table(task, EPSILON)  # (n, S, A)
    np.testing.assert_allclose(expert.table(), table.transpose(1, 0, 2), rtol=0, atol=1e-15)
    f, g = task.mdp.propositions.index("f"), task.mdp.propositions.index("i")
    state = int(np.flatnonzero(task.mdp.labels == g)[5])
    obs = expert.act((g, f, g), state)
    assert obs.exact and obs.draws == 0 and obs.evaluations == 1 and obs.steps == 0
    np.testing.assert_allclose(obs.values[0], table[1, state], atol=1e-15)  # after f: node u1
    # the same greedy rows from SB3's own Q-network output, argmax where no tie
    with torch.no_grad():
        qv = model.q_net(torch.as_tensor(np.array([[state * 3 + 1]]))).numpy()[0]
    assert table[1, state].argmax() == qv.argmax()


def test_sb3_ppo_expert_gives_the_softmax(office):
    task = office.tasks["coffee"]
    env = product(task)
    model = sb3.PPO(
        "MlpPolicy", env, policy_kwargs={"net_arch": {"pi": [], "vf": []}}, n_steps=32, batch_size=32, seed=0
    )
    pi = task_policy(task).pi  # (S, n, A), soft-optimal
    S, n, A = pi.shape
    logits = np.log(pi).reshape(S * n, A).T
    with torch.no_grad():
        model.policy.action_net.weight.copy_(torch.as_tensor(logits, dtype=torch.float32))
        model.policy.action_net.bias.zero_()
    expert = AgentExpert(model, task.mdp, task.machine)
    softmax = torch.softmax(torch.as_tensor(logits.T, dtype=torch.float32), dim=1).numpy().astype(float)
    np.testing.assert_array_equal(expert.table().reshape(S * n, A), softmax)
    assert np.abs(expert.table() - pi).max() < 1e-6


def test_sb3_active_learning_from_a_dqn_finds_the_coffee_machine_with_no_draws(office):
    task = office.tasks["coffee"]
    model = hand_set_dqn(task, product(task))
    run = ActiveLearner().fit(task, AgentExpert(sb3_agent(model, epsilon=EPSILON), task.mdp, task.machine))
    same = ActiveLearner().fit(task, TaskExpert(task, source=NodePolicyTable(shortest_path_table(task, EPSILON))))
    r = run.result
    assert r.isomorphic_to_truth() == (True,) and r.verdicts[0].consistent and not run.flagged
    assert run.draws == 0 and run.evaluations > 0
    assert (r.n_nodes, r.raw_count, run.queries) == (same.result.n_nodes, same.result.raw_count, same.queries)
    # the same questions, plus the agent's product table: 108 states x 3 nodes in one batched pass
    assert run.evaluations == same.evaluations + 108 * 3


def test_sb3_collect_batches_a_vector_environment_through_the_agent(office):
    task = office.tasks["coffee"]
    model = hand_set_dqn(task, product(task))
    labels = StateLabels.of(task.mdp)
    vec = MdpVectorEnv(task.mdp, 4, max_steps=30)
    policy = agent_policy(sb3_agent(model, epsilon=EPSILON), task.machine, labels, env=vec)
    calls: list[int] = []
    agent = policy.choose.agent
    q_values = agent.q_values
    agent.q_values = lambda obs: calls.append(len(obs)) or q_values(obs)
    rec = collect(vec, policy, labels, Identity(), 40, seed=3)
    assert calls and max(calls) == 4  # one forward pass per step for the 4 copies
    table = NodePolicy.from_table(task.machine, shortest_path_table(task, EPSILON))
    ref = collect(MdpVectorEnv(task.mdp, 4, max_steps=30), table, labels, Identity(), 40, seed=3)
    assert rec.canonical() == ref.canonical()  # the same draws from the same distribution


def test_sb3_crm_adds_every_nodes_experience_with_the_machines_reward(office):
    from stable_baselines3.common.env_util import make_vec_env

    task = office.tasks["coffee"]
    m = task.machine
    vec = make_vec_env(lambda: product(task), n_envs=2, seed=0)
    # the scripted expert, ε-greedy, not trained (no gradient step): it delivers coffee
    explore = {"exploration_initial_eps": EPSILON, "exploration_final_eps": EPSILON}
    model = hand_set_dqn(task, vec, learning_starts=0, gradient_steps=0, **explore, **crm(vec))
    model.learn(300)
    buf = model.replay_buffer
    live = int((~product(task).terminal).sum())
    steps = model.num_timesteps  # environment steps, over both copies
    assert live == 2 and steps >= 300 and buf.experiences == steps * live and buf.pos == steps // 2 * live
    obs = buf.observations[: buf.pos, :, 0].ravel()
    nxt = buf.next_observations[: buf.pos, :, 0].ravel()
    s, u = np.divmod(obs, m.n_nodes)
    s2, v = np.divmod(nxt, m.n_nodes)
    letter = task.letter_of_proposition[task.mdp.labels[s2]]
    np.testing.assert_array_equal(v, m.delta_u[u, letter])
    np.testing.assert_array_equal(buf.rewards[: buf.pos].ravel(), m.delta_r[u, letter])
    ended = buf.dones[: buf.pos].ravel().astype(bool) & ~buf.timeouts[: buf.pos].ravel().astype(bool)
    np.testing.assert_array_equal(ended, v == m.node_index("terminal"))
    assert set(u.tolist()) == {0, 1} and (buf.rewards[: buf.pos] == 1).any()


def test_sb3_crm_n_step_returns_follow_each_nodes_counterfactual_run(office):
    from stable_baselines3.common.env_util import make_vec_env

    task, gamma, n_steps = office.tasks["coffee"], 0.9, 4
    m = task.machine
    vec = make_vec_env(
        lambda: RewardMachineEnv(office_env(max_steps=40), m, StateLabels.of(task.mdp), observation="flat"),
        n_envs=2,
        seed=0,
    )
    explore = {"exploration_initial_eps": EPSILON, "exploration_final_eps": EPSILON}
    model = hand_set_dqn(
        task, vec, learning_starts=0, gradient_steps=0, gamma=gamma, **explore, **crm(vec, n_steps=n_steps, gamma=gamma)
    )
    model.learn(400)
    buf = model.replay_buffer
    live, pos = 2, buf.pos
    np.random.seed(0)
    rows = np.arange(pos)
    got = buf._get_samples(rows)
    np.random.seed(0)
    e = np.random.randint(0, buf.n_envs, size=pos)  # the copies the sampler drew
    obs, nxt = buf.observations[:, :, 0], buf.next_observations[:, :, 0]
    cut = buf.timeouts.astype(bool)
    paid = 0
    for i, (row, copy) in enumerate(zip(rows.tolist(), e.tolist())):
        u, t = int(obs[row, copy]) % m.n_nodes, row // live
        ret, k, first = 0.0, 0, 0.0
        while True:  # the node's own run over the copy's next letters, from the machine's tables
            state = int(nxt[t * live, copy]) // m.n_nodes
            letter = task.letter_of_proposition[task.mdp.labels[state]]
            ret += gamma**k * m.delta_r[u, letter]
            first = ret if k == 0 else first  # the step's own reward
            u, k = int(m.delta_u[u, letter]), k + 1
            ended = u == m.node_index("terminal")
            if ended or cut[t * live, copy] or k == n_steps or (t + 1) * live >= pos:
                break
            t += 1
        paid += ret > 0 and first == 0
        assert got.rewards[i, 0].item() == pytest.approx(ret, abs=1e-6)
        assert got.discounts[i, 0].item() == pytest.approx(gamma**k, abs=1e-6)
        assert got.dones[i, 0].item() == float(ended)
        assert int(got.next_observations[i, 0].item()) == int(nxt[t * live, copy]) // m.n_nodes * m.n_nodes + u
    assert paid > 0  # some returns reach the reward from steps before it


class Line(gymnasium.Env):
    """A point on [0, 1] moved by a continuous action; labels: a below 0.2, b above 0.8."""

    observation_space = gymnasium.spaces.Box(0.0, 1.0, (1,), np.float32)
    action_space = gymnasium.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.x = np.array([0.5], np.float32)
        return self.x.copy(), {}

    def step(self, action):
        self.x = np.clip(self.x + 0.1 * np.asarray(action, np.float32), 0.0, 1.0).astype(np.float32)
        return self.x.copy(), 0.0, False, False, {}


def line_labels(obs, info=None) -> str:
    return "a" if obs[0] < 0.2 else "b" if obs[0] > 0.8 else "i"


def a_then_b() -> RewardMachine:
    return RewardMachine.from_transitions(
        {("u0", "a"): "u1", ("u1", "b"): ("done", 1.0)}, ["a", "b", "i"], nodes=["u0", "u1", "done"], name="ab"
    )


def test_sb3_sac_learns_from_counterfactual_experiences_of_a_continuous_product():
    from gymnasium.wrappers import TimeLimit

    env = RewardMachineEnv(TimeLimit(Line(), 20), a_then_b(), line_labels, observation="flat")
    model = sb3.SAC("MlpPolicy", env, policy_kwargs={"net_arch": [8]}, learning_starts=50, seed=0, **crm(env))
    no_log_folder(model)
    model.learn(80)
    buf = model.replay_buffer
    assert buf.experiences == 2 * 80 and buf.pos == 160
    nodes = buf.observations[: buf.pos, 0, 1:].argmax(axis=1)
    np.testing.assert_array_equal(np.bincount(nodes), [80, 80])  # every step from u0 and from u1
    # continuous actions: the agent samples (seeded), the expert bins them
    agent = sb3_agent(model)
    obs = np.array([[0.5, 1.0, 0.0, 0.0]] * 5, np.float32)
    first = agent.sample(obs, np.random.default_rng(7))
    np.testing.assert_array_equal(first, agent.sample(obs, np.random.default_rng(7)))
    assert first.shape == (5, 1)
    # the expert of a continuous agent: m actions drawn at the history in one pass, binned, counted
    from rmtk.mdp.space import Space

    def cells(states):  # cell centres of 10 cells over [0, 1]
        return ((np.asarray(states) + 0.5) / 10).astype(np.float32)[:, None]

    space = Space(10, 3, ("a", "b", "i"), "line")
    expert = AgentExpert(model, space, a_then_b(), observe=cells, actions=Bins(-1.0, 1.0, 3), seed=2)
    answer = expert.act((0, 2), 5, 60)  # after a: node u1, in cell 5
    assert not expert.exact and not answer.exact and answer.draws == 60 and answer.values.shape == (1, 3)
    again = AgentExpert(model, space, a_then_b(), observe=cells, actions=Bins(-1.0, 1.0, 3), seed=2)
    np.testing.assert_array_equal(again.act((0, 2), 5, 60).values, answer.values)


def test_sb3_ppo_trains_on_the_product_and_passes_check_env(office):
    from stable_baselines3.common.env_checker import check_env

    task = office.tasks["patrol"]
    for mode in ("flat", "dict"):
        env = RewardMachineEnv(office_env(max_steps=50), task.machine, StateLabels.of(task.mdp), observation=mode)
        check_env(env)
        model = sb3.PPO(
            "MultiInputPolicy" if mode == "dict" else "MlpPolicy",
            env,
            n_steps=64,
            batch_size=32,
            n_epochs=1,
            policy_kwargs={"net_arch": [8]},
            seed=0,
        )
        no_log_folder(model).learn(128)
        assert model.num_timesteps >= 128
        expert = AgentExpert(model, task.mdp, task.machine)
        p = expert.act(
            (task.mdp.propositions.index("i"),),
            int(np.flatnonzero(task.mdp.labels == task.mdp.propositions.index("i"))[0]),
        ).values[0]
        assert p.shape == (4,) and abs(p.sum() - 1) < 1e-6


def test_sb3_bad_inputs_get_one_clear_error_each(office):
    task = office.tasks["coffee"]
    plain = sb3.DQN("MlpPolicy", office_env(), policy_kwargs={"net_arch": [4]}, seed=0)
    with pytest.raises(ModelError, match=r"observation space is Discrete\(108\), the environment.s own: it observes"):
        AgentExpert(plain, task.mdp, task.machine)
    with pytest.raises(ModelError, match=r"observation space is Discrete\(108\), the environment.s own: it observes"):
        agent_policy(plain, task.machine, StateLabels.of(task.mdp), env=office_env())
    model = sb3.DQN("MlpPolicy", product(task), policy_kwargs={"net_arch": [4]}, seed=0)
    other = RewardMachine.from_transitions({("u0", "x"): ("u1", 1.0)}, ["x", "y"], nodes=["u0", "u1", "u2"])
    with pytest.raises(ModelError, match="the labeler produces 'a', 'b'.*which machine .* does not read"):
        agent_policy(model, other, StateLabels.of(task.mdp))
    with pytest.raises(ModelError, match="the environment's labels include 'a', 'b'.*does not read"):
        AgentExpert(model, task.mdp, other)
    sac = sb3.SAC("MlpPolicy", RewardMachineEnv(Line(), a_then_b(), line_labels, observation="flat"), seed=0)
    space = dsl.load("models/office.rm").tasks["coffee"].mdp
    with pytest.raises(ModelError, match=r"action space is Box.*reads Discrete\(4\) actions"):
        AgentExpert(sac, space, task.machine, observe=lambda s: np.zeros((len(s), 1), np.float32))
    with pytest.raises(Exception, match="is not an rmtk.rl.Agent"):
        AgentExpert(object(), task.mdp, task.machine)
    assert Bins  # the action discretiser a continuous agent's expert takes


def greedy_by_steps(machine, truth, labels, q, cells, node=True) -> float:
    """The share of ``cells`` whose greedy episode of ``q`` earns ``truth``'s reward, each
    played in its own RewardMachineEnv from that cell, one action at a time: the reference
    GreedyRollouts must equal."""
    from rmtk.rl import hide_node

    won = 0
    for cell in cells:
        env = RewardMachineEnv(office_env(max_steps=100, start=[cell]), machine, labels, observation="flat")
        env = env if node else hide_node(env)
        obs, info = env.reset(seed=0)
        v = truth.step(truth.initial, info["rm_label"])
        for _ in range(100):
            obs, _, terminated, truncated, info = env.step(int(np.argmax(q[obs])))
            if truth.reward(v, info["rm_label"]) > 0:
                won += 1
                break
            v = truth.step(v, info["rm_label"])
            if terminated or truncated:
                break
    return won / len(cells)


@pytest.mark.parametrize("name", ["coffee", "patrol"])
def test_sb3_greedy_rollouts_equal_episodes_played_step_by_step(office, name):
    from rmtk.envs.office import officeworld
    from rmtk.experiments._dqn import STARTS
    from rmtk.rl import GreedyRollouts

    task = office.tasks[name]
    m, labels = task.machine, StateLabels.of(task.mdp)
    n, S = m.n_nodes, task.mdp.n_states
    mdp = officeworld(start=STARTS)
    expert = -steps_to_reward(task).transpose(1, 0, 2).reshape(S * n, 4)  # the scripted expert: succeeds
    rng = np.random.default_rng(5)
    tables = [expert, expert + rng.normal(0, 0.4, expert.shape), rng.random((S * n, 4))]
    rates = [GreedyRollouts.of(mdp, m, m, 100).rate(q) for q in tables]
    assert rates[0] == 1.0 and rates[2] < 0.1 and 0.0 < rates[1] < 1.0
    for q, rate in zip(tables, rates):
        assert rate == greedy_by_steps(m, m, labels, q, STARTS)
    cells = expert[::n]  # the node hidden: node 0's values at every cell
    hidden = GreedyRollouts.of(mdp, m, m, 100, node=False).rate(cells)
    assert hidden == greedy_by_steps(m, m, labels, cells, STARTS, node=False)
    with pytest.raises(ModelError, match="deterministic MDP"):
        GreedyRollouts.of(officeworld(slip=0.1), m, m, 100)
    with pytest.raises(ModelError, match=r"Q-values of shape \(324, 4\)"):
        GreedyRollouts.of(mdp, office.tasks["coffee"].machine, m, 100).rate(expert[:5])


def test_sb3_dqn_with_crm_trains_in_the_craft_world_from_every_cell():
    from rmtk.experiments._dqn import DQNConfig, World, train_dqn

    task = dsl.load_model("craft").tasks["t1"]
    world = World.craft(horizon=30)
    assert world.mdp.n_states == 1521 and np.count_nonzero(world.mdp.initial) == 1521
    config = DQNConfig(hidden=(8,), learning_starts=50, explore=100, buffer_size=3_000, batch_size=16)
    seen = []
    curve, model = train_dqn(
        task.machine,
        task.machine,
        StateLabels.of(task.mdp),
        use_crm=True,
        seed=0,
        steps=300,
        every=100,
        config=config,
        world=world,
        log=lambda step, rate: seen.append((step, rate)),
    )
    assert curve.steps == (100, 200, 300) and list(zip(curve.steps, curve.success)) == seen
    assert all(0.0 <= r <= 1.0 for r in curve.success)
    buf = model.replay_buffer
    assert model.observation_space.n == 1521 * 3 and buf.experiences == 300 * 2  # two live nodes a step
    cells = buf.observations[: buf.pos, 0, 0] // 3
    assert len(np.unique(cells)) > 30  # ten episodes of 30 steps from cells drawn across the map


def test_sb3_reward_like_pays_the_learned_machine_as_the_truth(office):
    from rmtk import isomorphic
    from rmtk.experiments._dqn import reward_like

    for name in ("coffee", "patrol"):
        truth = office.tasks[name].machine
        order = list(reversed(range(truth.n_nodes)))  # the learned machine numbers its nodes otherwise
        renamed = RewardMachine(
            [f"q{k}" for k in range(truth.n_nodes)],
            truth.alphabet,
            np.argsort(order)[truth.delta_u[order]],
            np.zeros_like(truth.delta_r[order]),
            initial=int(np.argsort(order)[truth.initial]),
        ).with_alphabet_order(sorted(truth.alphabet, reverse=True))
        paid = reward_like(renamed, truth)
        assert isomorphic(paid, truth, rewards=True) and paid.delta_r.sum() == truth.delta_r.sum()


def test_sb3_reproduce_deep_rl_reports_the_five_curves_and_the_machine_learned_back(tmp_path, monkeypatch):
    """The quick run's report at a still smaller size (its training: 300 steps a curve, a tiny
    network; the quick run itself is measured by `rmtk reproduce deep-rl --quick`)."""
    import tempfile

    from rmtk.experiments import Options, run
    from rmtk.experiments.deep_rl import SETTINGS, _config

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    small = {"steps": 300, "every": 100, "episodes": 200, "hidden": 8}
    report = run("deep-rl", Options(quick=True, figure_dir=tmp_path, overrides=small))
    caption, header, rows = report.tables[0]
    learned = dict(zip(header, rows[0]))
    assert "300 steps" in caption and "200 episodes" in caption
    assert learned["draws"] == 0 and learned["active machines"] >= 1  # exact: no sampled draw
    assert learned["evaluations"] >= 108 * 3  # the product table's batched pass is counted
    caption, header, rows = report.tables[1]
    assert caption.startswith("DQN (1 run, greedy evaluation every 100 steps")
    assert header == ["agent", "steps to 90%", "per run", "best", "final", "s (median)"]
    assert [r[0] for r in rows] == ["true, CRM", "true, no CRM", "learned, CRM", "learned, no CRM", "no machine"]
    assert all(0.0 <= r[4] <= r[3] <= 1.0 for r in rows)
    finding = report.notes[0]
    assert finding.startswith("finding: the machine learned back actively is ") and "plain DQN" in finding
    assert (tmp_path / "deep_rl.png").read_bytes()[:4] == b"\x89PNG"
    assert not list(tmp_path.glob("SB3-*"))  # five training runs, no log folder
    # --quick trains the full run's network (a smaller one trains no agent within its budget)
    quick, full = Options(quick=True, settings=SETTINGS), Options(settings=SETTINGS)
    assert _config(quick) == _config(full) and quick.get("steps") >= 6_000
    with pytest.raises(Exception, match="setting task: expected one of coffee, patrol"):
        run("deep-rl", Options(quick=True, overrides={"task": "mail"}))


def test_sb3_learn_back_finds_the_truth_of_a_trained_agent_and_flags_a_greedy_recording(office):
    """The quick run's second half on an agent trained to the end (the scripted expert's
    Q-values set in the network): actively the truth with no draw; passively, its greedy
    episodes show one action a history, which the notes say."""
    from rmtk.experiments.deep_rl import learn_back

    task = office.tasks["coffee"]
    model = hand_set_dqn(task, product(task))
    row, machine, notes = learn_back(task, model, episodes=300, epsilon=EPSILON, alpha=0.05, seed=0)
    assert row["active = truth"] == "yes" and row["draws"] == 0 and row["negatives"] > 0
    assert isomorphic(machine, task.machine, rewards=False) and not notes
    row, machine, notes = learn_back(task, model, episodes=300, epsilon=0.0, alpha=0.05, seed=0)
    assert not notes  # greedy, but its tied actions share the greedy mass: not one action a history
    row, machine, notes = learn_back(task, tiny_dqn(product(task)), episodes=300, epsilon=0.0, alpha=0.05, seed=0)
    assert row["passive nodes"] == 1 and row["negatives"] == 0  # an untrained greedy agent's loops
    assert len(notes) == 1 and "every recorded history shows a single action" in notes[0]
    assert "here they never do" in notes[0]


def four_nodes() -> RewardMachine:
    """A 4-node machine over the Office World's letters: coffee, then mail, then the office."""
    office_letters = dsl.load("models/office.rm").tasks["coffee"].machine.alphabet
    return RewardMachine.from_transitions(
        {("u0", "f"): "u1", ("u1", "e"): "u2", ("u2", "g"): ("done", 1.0)},
        office_letters,
        nodes=["u0", "u1", "u2", "done"],
        name="four",
    )


def tiny_dqn(env):
    return sb3.DQN("MlpPolicy", env, policy_kwargs={"net_arch": [4]}, seed=0, device="cpu")


def test_sb3_agent_policy_refuses_an_agent_trained_with_another_number_of_nodes(office):
    task = office.tasks["coffee"]
    labels = StateLabels.of(task.mdp)
    four = tiny_dqn(RewardMachineEnv(office_env(max_steps=20), four_nodes(), labels, observation="flat"))
    three = tiny_dqn(product(task))
    vec = MdpVectorEnv(task.mdp, 4, max_steps=10)
    # without env=: the StateLabels say the world has 108 states (432 = 108 x 4 is also 144 x 3)
    with pytest.raises(ModelError, match=r"Discrete\(432\): the product of the environment's Discrete\(108\) with 4 "):
        agent_policy(four, task.machine, labels)
    with pytest.raises(ModelError, match=r"with 3 nodes, and the machine has 4; give the machine the agent was"):
        agent_policy(three, four_nodes(), labels, env=vec)

    # a labeler that does not say the states: the agent's Discrete(324) alone does not split into nodes
    def plain(obs, info):
        return labels(obs)

    with pytest.raises(ModelError, match=r"only if the environment has 81 states.*give env="):
        agent_policy(three, four_nodes(), plain)
    assert agent_policy(three, task.machine, plain, env=vec).encoding.inner == gymnasium.spaces.Discrete(108)


def test_sb3_agent_policy_refuses_the_product_environment_with_rmtks_error(office):
    task = office.tasks["coffee"]
    labels = StateLabels.of(task.mdp)
    three = tiny_dqn(product(task))
    with pytest.raises(ModelError, match="already the product of an environment with a machine"):
        agent_policy(three, task.machine, labels, env=product(task))
    # recorded on the product (no env= given): its labels do not cover its observations
    with pytest.raises(
        Exception, match=r"labels 108 states \(StateLabels\), and the environment observes Discrete\(324"
    ):
        collect(product(task), agent_policy(three, task.machine, labels), labels, Identity(), 2, seed=0)


class StepLine(Line):
    """Line with three discrete moves: left, stay, right."""

    action_space = gymnasium.spaces.Discrete(3)

    def step(self, action):
        return super().step(np.array([float(action) - 1.0], np.float32))


def test_sb3_agent_policy_checks_box_observations_and_the_action_space():
    from gymnasium.wrappers import TimeLimit

    env = RewardMachineEnv(TimeLimit(StepLine(), 10), a_then_b(), line_labels, observation="flat")
    ppo = sb3.PPO("MlpPolicy", env, policy_kwargs={"net_arch": [4]}, n_steps=32, batch_size=32, seed=0, device="cpu")
    two = RewardMachine.from_transitions({("u0", "a"): ("u1", 1.0)}, ["a", "b", "i"], nodes=["u0", "u1"], name="two")
    bins = Bins(0.0, 1.0, 10)
    # the agent's Box(4,) is 1 number with 3 nodes, or 2 numbers with 2: the observations say which
    policy = agent_policy(ppo, two, line_labels)
    with pytest.raises(Exception, match=r"observations have 1 number each.*are of 2 \(a product with 3 nodes\)"):
        collect(TimeLimit(StepLine(), 10), policy, line_labels, bins, 2, seed=0, propositions=["a", "b", "i"])
    with pytest.raises(
        ModelError, match=r"Box.*: the product of the environment's Box.*with 3 nodes, and the machine has 2"
    ):
        agent_policy(ppo, two, line_labels, env=StepLine())
    # the right machine records, one batched call per step for a vector environment's copies
    vec = gymnasium.vector.SyncVectorEnv([lambda: TimeLimit(StepLine(), 10)] * 3)
    rec = collect(
        vec,
        agent_policy(ppo, a_then_b(), line_labels, env=vec),
        line_labels,
        bins,
        6,
        seed=0,
        propositions=["a", "b", "i"],
    )
    assert rec.episodes == 6 and rec.n_actions == 3
    # a continuous-action agent: collect records Discrete actions, said before a step is played
    sac = sb3.SAC("MlpPolicy", RewardMachineEnv(Line(), a_then_b(), line_labels, observation="flat"), seed=0)
    with pytest.raises(
        ModelError,
        match=r"acts in Box\(-1.0, 1.0, \(1,\), float32\), and collect records the environment's Discrete\(3\)",
    ):
        agent_policy(sac, a_then_b(), line_labels, env=vec)
    # a discrete agent with other actions than the environment's
    task = dsl.load("models/office.rm").tasks["coffee"]

    class ThreeMoves:  # the Office World's cells, three actions
        observation_space = gymnasium.spaces.Discrete(108)
        action_space = gymnasium.spaces.Discrete(3)

    with pytest.raises(
        ModelError, match=r"acts in Discrete\(4\), and the environment in Discrete\(3\): expected Discrete\(3"
    ):
        agent_policy(tiny_dqn(product(task)), task.machine, StateLabels.of(task.mdp), env=ThreeMoves())


def test_sb3_training_leaves_no_log_folder_in_the_temporary_directory(tmp_path, monkeypatch, capsys):
    import tempfile

    from rmtk.experiments._dqn import DQNConfig, train_dqn

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # a private temporary directory
    monkeypatch.delenv("SB3_LOGDIR", raising=False)  # Stable-Baselines3's default (tests/conftest.py sets one)
    task = dsl.load("models/office.rm").tasks["coffee"]
    plain = sb3.PPO("MlpPolicy", product(task), n_steps=32, batch_size=32, policy_kwargs={"net_arch": [4]}, seed=0)
    plain.learn(32)
    assert len(list(tmp_path.glob("SB3-*"))) == 1  # Stable-Baselines3's own logger: one empty folder a run
    config = DQNConfig(hidden=(4,), learning_starts=20, explore=50, buffer_size=500, batch_size=8)
    curve, model = train_dqn(
        task.machine, task.machine, StateLabels.of(task.mdp), use_crm=True, seed=0, steps=100, every=50, config=config
    )
    assert curve.steps == (50, 100) and model.num_timesteps == 100
    loud = no_log_folder(sb3.PPO("MlpPolicy", product(task), n_steps=32, batch_size=32, verbose=1, seed=0))
    loud.learn(32)
    assert "total_timesteps" in capsys.readouterr().out  # a verbose model still logs to standard output
    assert len(list(tmp_path.glob("SB3-*"))) == 1  # the rmtk-trained runs added none


def test_sb3_a_greedy_agents_recording_says_why_it_shows_no_negative_example(office):
    """A greedy agent in a deterministic world is seen along its own paths only: its recording
    shows one action a history, and the result says so when no negative example came of it."""
    import io

    from rmtk import ConfidenceMiner, EmpiricalPTP, Learner
    from rmtk.learner.report import report_demos
    from rmtk.sat.encoders import SimplestEncoder

    task = office.tasks["coffee"]
    labels = StateLabels.of(task.mdp)
    model = tiny_dqn(product(task))  # untrained: no ties among its Q-values
    found = {}
    for epsilon in (0.0, EPSILON):
        envs = MdpVectorEnv(task.mdp, 50, max_steps=20)
        policy = agent_policy(sb3_agent(model, epsilon=epsilon), task.machine, labels, env=envs)
        rec = collect(envs, policy, labels, Identity(), 500, seed=0)
        learner = Learner(EmpiricalPTP(rec), miner=ConfidenceMiner(0.05), encoder=SimplestEncoder(), irl=None)
        found[epsilon] = learner.fit(rec.space)
    greedy = found[0.0]
    assert greedy.n_nodes == 1 and len(greedy.negatives) == 0
    assert (greedy.ptp.counts > 0).sum(axis=1).max() == 1  # one action at every recorded history
    text = str(greedy.summary())  # the summary as text, not a repr
    assert text.splitlines()[0] == "survivors: 1 machine with 1 node"
    assert "every recorded history shows a single action (a deterministic policy" in text
    assert "here they never do; record it with exploration" in text
    out = io.StringIO()
    report_demos(greedy, out=out)
    assert out.getvalue().startswith("# demonstrations: 0 negative examples at alpha 0.05\n# every recorded history")
    exploring = found[EPSILON]
    assert (exploring.ptp.counts > 0).sum(axis=1).max() > 1
    assert "single action" not in str(exploring.summary())


def test_sb3_learning_from_an_agents_recording_judges_against_the_agent(office):
    """fit(task) on an agent's recording: the verdicts compare with the agent recorded (its
    exact distribution, carried by the recording), not with the task's soft-optimal policy."""
    import warnings

    from rmtk import ConfidenceMiner, EmpiricalPTP, Learner
    from rmtk.ptp.exact import SoftOptimal
    from rmtk.rl import PredictAgent
    from rmtk.sat.encoders import SimplestEncoder

    task = office.tasks["coffee"]
    labels = StateLabels.of(task.mdp)
    model = tiny_dqn(product(task))  # untrained: its greedy action ignores its node
    with torch.no_grad():
        q = model.q_net(torch.arange(108 * 3)).numpy().reshape(108, 3, 4)
    assert (q.argmax(axis=2) == q[:, :1].argmax(axis=2)).all()  # the same action at every node of a cell

    def learn(agent, **kw):
        envs = MdpVectorEnv(task.mdp, 50, max_steps=20)
        rec = collect(envs, agent_policy(agent, task.machine, labels, env=envs), labels, Identity(), 500, seed=0)
        ptp = EmpiricalPTP(rec, **kw)
        return Learner(ptp, miner=ConfidenceMiner(0.05), encoder=SimplestEncoder(), irl=None, max_nodes=3).fit(task)

    agent = sb3_agent(model, epsilon=EPSILON)
    judged = learn(agent)
    assert judged.n_nodes == 1 and judged.verdicts[0].consistent  # the agent has one node's behaviour
    soft = learn(agent, expert=SoftOptimal())  # asked for: the task's soft-optimal policy uses its nodes
    assert not soft.verdicts[0].consistent
    # an agent that only samples: its classes are not known, so no verdict (and a warning says why)
    sampled = PredictAgent(agent.sample, agent.observation_space, agent.action_space)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        blind = learn(sampled)
    assert blind.verdicts is None
    assert any(
        "no verdicts against the recorded agent (AgentPolicy): its policy classes" in str(w.message) for w in caught
    )


def test_sb3_agent_expert_points_a_gymnasium_environment_to_its_labeled_mdp(office):
    from rmtk.errors import RmtkError

    task = office.tasks["coffee"]
    model = tiny_dqn(product(task))
    env = gymnasium.make("CliffWalking-v1")
    with pytest.raises(RmtkError, match=r"mdp is a Gymnasium environment \(CliffWalking-v1\).*tabular_mdp\(env"):
        AgentExpert(model, env, task.machine)
    with pytest.raises(RmtkError, match=r"estimate_mdp\(recording\).*rmtk.Task\(mdp, machine\)"):
        AgentExpert(model, office_env(), task.machine)
