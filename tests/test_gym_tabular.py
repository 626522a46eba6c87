"""rmtk.gym.tabular: a toy-text environment's P as a labeled MDP equals a conversion written
independently, and the maximum-likelihood model of many recorded episodes approaches it,
naming what was never tried."""

import gymnasium
import numpy as np
import pytest

from rmtk import LabeledMDP, ModelError
from rmtk.gym import Identity, StateLabels, collect, estimate_mdp, tabular_mdp

MAP = "SFFFFHFHFFFHHFFG"  # FrozenLake 4x4, row by row


def lake_labeler(obs, info):
    return {"H": "h", "G": "g"}.get(MAP[int(obs)], "o")


lake_labeler.propositions = ("g", "h", "o")


def by_hand(env) -> LabeledMDP:
    """The dense P[a, s, s'] written from the toy-text lists, ends made absorbing by hand."""
    u = env.unwrapped
    P = np.zeros((4, 16, 16))
    for s in range(16):
        for a in range(4):
            if MAP[s] in "HG":
                P[a, s, s] = 1.0
                continue
            for p, nxt, _, _ in u.P[s][a]:
                P[a, s, nxt] += p
    labels = [lake_labeler(s, {}) for s in range(16)]
    return LabeledMDP.from_dense(
        P,
        labels,
        ["g", "h", "o"],
        u.initial_state_distrib,
        gamma=0.9,
        states=[f"s{i}" for i in range(16)],
        actions=[f"a{i}" for i in range(4)],
        name="FrozenLake-v1",
    )


@pytest.mark.parametrize("slippery", [True, False])
def test_frozenlake_model_equals_a_conversion_by_hand(slippery):
    env = gymnasium.make("FrozenLake-v1", is_slippery=slippery)
    mdp = tabular_mdp(env, lake_labeler, gamma=0.9)
    assert mdp == by_hand(env)
    assert mdp.initial.tolist() == [1.0] + [0.0] * 15
    assert mdp.successors(5, 0) == [(5, 1.0)]  # a hole absorbs


def test_tabular_mdp_errors_and_other_environments():
    # Taxi's delivered states are also entered by moves that do not end the episode: ambiguous
    with pytest.raises(
        ModelError,
        match="state 0 ends the episode when entered by some transitions but not from state 20 .* pass terminal='keep'",
    ):
        tabular_mdp(gymnasium.make("Taxi-v4"), lambda s, i: "x", propositions="x")
    taxi = tabular_mdp(gymnasium.make("Taxi-v4"), lambda s, i: "x", propositions="x", terminal="keep")
    assert taxi.n_states == 500 and taxi.n_actions == 6
    assert taxi.successors(0, 0) == [(100, 1.0)]  # kept as P says: south from the corner
    with pytest.raises(ModelError, match="has no tabular model env.unwrapped.P"):
        tabular_mdp(gymnasium.make("CartPole-v1"), lake_labeler)
    with pytest.raises(ModelError, match="terminal must be 'absorbing' or 'keep'"):
        tabular_mdp(gymnasium.make("FrozenLake-v1"), lake_labeler, terminal="sometimes")
    with pytest.raises(Exception, match="state 3: the labeler returned 'q'"):
        tabular_mdp(gymnasium.make("FrozenLake-v1"), lambda s, i: "q" if s == 3 else "o", propositions="o")


def test_maximum_likelihood_model_approaches_the_true_one():
    env = gymnasium.make("FrozenLake-v1", is_slippery=True, max_episode_steps=40)
    truth = tabular_mdp(env, lake_labeler)
    rec = collect(env, lambda obs, ctx: int(ctx.rng.integers(4)), lake_labeler, Identity(), 3000, seed=0)
    est = estimate_mdp(rec, lake_labeler, warn=False)
    # every state but the goal's (rarely reached) and the holes is left under all four actions
    tried = est.visits.sum(axis=1) > 0
    assert set(np.flatnonzero(~tried)) <= {5, 7, 11, 12, 15}
    # each tried row within a Hoeffding bound of the truth (2·exp(−2·2.5²) ≈ 1e-5 per entry), the
    # well-visited ones within 0.05
    n = est.visits.ravel()
    err = np.abs(est.mdp.kernel.toarray() - truth.kernel.toarray()).max(axis=1)
    assert (err[n > 0] * np.sqrt(n[n > 0]) <= 2.5).all()
    assert err[n >= 900].max() < 0.05 and (n >= 900).sum() == 12
    few = estimate_mdp(
        collect(env, lambda obs, ctx: int(ctx.rng.integers(4)), lake_labeler, Identity(), 30, seed=1),
        lake_labeler,
        warn=False,
    )
    err_few = np.abs(few.mdp.kernel.toarray() - truth.kernel.toarray()).max(axis=1)
    assert err_few[n >= 900].mean() > 2 * err[n >= 900].mean()  # more data, closer
    # the terminal states are never left: their pairs are untried, given self-loops, and named
    assert {(5, a) for a in range(4)} <= {tuple(p) for p in est.untried.tolist()}
    assert est.mdp.successors(5, 2) == [(5, 1.0)]
    assert est.mdp.initial[0] == 1.0
    with pytest.warns(UserWarning, match=r"\(state, action\) pairs never tried \(self-loops\): \(s5, a0\)"):
        estimate_mdp(rec, lake_labeler)
    # without labels, the holes (never a step's state) cannot be labelled from the recording
    with pytest.raises(ModelError, match=r"no step in states 5 7 11 12"):
        estimate_mdp(rec, warn=False)


def test_labels_read_from_the_recording_and_unvisited_states():
    from rmtk.gym import office_env

    mdp = office_env().mdp
    rec = collect(
        office_env(max_steps=30), lambda o, c: int(c.rng.integers(4)), StateLabels.of(mdp), Identity(), 20, seed=0
    )
    with pytest.raises(ModelError, match="no step in states"):
        estimate_mdp(rec, warn=False)
    est = estimate_mdp(rec, StateLabels.of(mdp), warn=False)
    assert np.array_equal(est.mdp.labels, mdp.labels)
    assert est.unvisited and all(est.visits[s].sum() == 0 for s in est.unvisited)
    assert "states never visited" in est.summary()
    # a model from a recording whose every state was stepped in reads its labels itself
    full = collect(
        office_env(max_steps=400), lambda o, c: int(c.rng.integers(4)), StateLabels.of(mdp), Identity(), 60, seed=0
    )
    assert np.array_equal(estimate_mdp(full, warn=False).mdp.labels, mdp.labels)


def test_axis_orders_mixed_up_are_named():
    from rmtk import dsl
    from rmtk.gym import NodePolicy
    from rmtk.ptp.exact import NodePolicyTable

    lake = tabular_mdp(gymnasium.make("FrozenLake-v1"), lake_labeler)
    P = lake.P  # P[a, s, s'] (4, 16, 16)
    labels = [lake_labeler(s, {}) for s in range(16)]
    assert LabeledMDP.from_dense(P, labels, ["g", "h", "o"]).P.tolist() == P.tolist()
    with pytest.raises(
        ModelError,
        match=r"P has shape \(16, 4, 16\); expected \(actions, states, next states\) = "
        r"\(4, 16, 16\); it reads as \(states, actions, next states\): pass it "
        r"\.transpose\(1, 0, 2\); from_dense takes P\[a, s, s'\]",
    ):
        LabeledMDP.from_dense(P.transpose(1, 0, 2), labels, ["g", "h", "o"])
    machine = dsl.loads("machine m {\n alphabet g h o\n initial u0\n u0 -> u1 on g\n}").machines["m"]
    table = np.full((2, 16, 4), 0.25)  # (u, s, a)
    NodePolicy.from_table(machine, table)
    with pytest.raises(ModelError, match=r"it reads as \(states, nodes, actions\): pass it \.transpose\(1, 0, 2\)"):
        NodePolicy.from_table(machine, table.transpose(1, 0, 2))
    given = type("Given", (), {"machine": machine, "mdp": lake})()  # what _check reads of a task
    with pytest.raises(
        ModelError,
        match=r"the node policy table has shape \(16, 2, 4\); expected \(nodes, states, "
        r"actions\) = \(2, 16, 4\); it reads as \(states, nodes, actions\)",
    ):
        NodePolicyTable(np.full((16, 2, 4), 0.25)).policy(given)


def test_a_vector_environment_counts_the_moves_that_end_episodes():
    # episodes of a sync make_vec end at different steps; each move is one the model allows, and
    # every step is counted with its successor (the observation that ended it included)
    env = gymnasium.make("FrozenLake-v1")
    truth = tabular_mdp(env, lake_labeler)
    vec = gymnasium.make_vec("FrozenLake-v1", num_envs=4, vectorization_mode="sync")
    rec = collect(vec, lambda obs, ctx: ctx.rng.integers(0, 4, len(obs)), lake_labeler, Identity(), 40, seed=0)
    assert rec.terminated == 40 and rec.move_counts.sum() == rec.n_steps
    allowed = truth.kernel.toarray()
    assert all(allowed[s * 4 + a, s2] > 0 for s, a, s2 in rec.moves.tolist())
    assert {s2 for _, _, s2 in rec.moves.tolist()} & {5, 7, 11, 12}  # ended in holes, counted


@pytest.mark.parametrize("mode", ["SAME_STEP", "DISABLED"])
def test_vector_autoreset_modes(mode):
    from gymnasium.vector import AutoresetMode

    from rmtk import RmtkError

    vec = gymnasium.make_vec(
        "FrozenLake-v1",
        num_envs=4,
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": getattr(AutoresetMode, mode)},
    )
    run = lambda: collect(vec, lambda o, c: c.rng.integers(0, 4, len(o)), lake_labeler, Identity(), 20, seed=0)  # noqa: E731
    if mode == "DISABLED":
        with pytest.raises(RmtkError, match="autoreset_mode=DISABLED forbids"):
            run()
        return
    rec = run()  # the observation that ended an episode comes from info["final_obs"]
    allowed = tabular_mdp(gymnasium.make("FrozenLake-v1"), lake_labeler).kernel.toarray()
    assert rec.move_counts.sum() == rec.n_steps
    assert all(allowed[s * 4 + a, s2] > 0 for s, a, s2 in rec.moves.tolist())


def test_a_plain_function_labeler_needs_no_alphabet():
    """tabular_mdp visits every state: the names a plain function gives them are the alphabet,
    sorted (the same model as with the alphabet given)."""
    env = gymnasium.make("FrozenLake-v1")

    def plain(obs, info):
        return {"H": "hole", "G": "goal"}.get(MAP[int(obs)], "ice")

    mdp = tabular_mdp(env, plain)
    assert mdp.propositions == ("goal", "hole", "ice")
    assert mdp == tabular_mdp(env, plain, propositions=["goal", "hole", "ice"])
    assert [mdp.label(s) for s in mdp.states[:6]] == ["ice", "ice", "ice", "ice", "ice", "hole"]
    by_list = tabular_mdp(env, [plain(s, {}) for s in range(16)])  # one name per state: collected too
    assert by_list == mdp
    with pytest.raises(ModelError, match=r"state 0: the labeler returned 3 \(int\); without propositions="):
        tabular_mdp(env, lambda obs, info: 3)


def test_names_in_messages_are_quoted_and_one_long_name_is_explained():
    env = gymnasium.make("FrozenLake-v1")
    with pytest.raises(Exception) as err:
        tabular_mdp(env, lake_labeler, propositions="gho")
    message = str(err.value)
    assert "the alphabet is 'gho' (propositions='gho' is one proposition named 'gho'" in message
    assert "separated by whitespace: 'g h o', or given as a list" in message
    assert tabular_mdp(env, lake_labeler, propositions="g h o") == tabular_mdp(env, lake_labeler)
    with pytest.raises(Exception, match=r"the labeler returned 'q', which is not a proposition; the alphabet is 'o'$"):
        tabular_mdp(env, lambda s, i: "q" if s == 3 else "o", propositions="o")
    with pytest.raises(Exception, match=r"the alphabet is 'g', 'h', 'o'$"):
        tabular_mdp(env, lambda s, i: "x", propositions=["g", "h", "o"])


def test_a_labeler_of_one_argument_is_refused_where_it_is_given():
    """A labeler is called ``labeler(obs, info)``; one of one argument is named at once, by the
    model, the wrappers and ``collect``, not by a TypeError deep inside a run."""
    from rmtk.gym import RewardMachineEnv
    from rmtk.machine.model import RewardMachine

    env = gymnasium.make("FrozenLake-v1", is_slippery=False)

    def by_cell(obs):
        return lake_labeler(obs, {})

    with pytest.raises(ModelError, match=r"labeler by_cell\(obs\) cannot be called as labeler\(obs, info\)"):
        tabular_mdp(env, by_cell, propositions=lake_labeler.propositions)
    machine = RewardMachine.from_transitions({("u", p): "u" for p in "gho"}, "gho")
    with pytest.raises(ModelError, match="cannot be called as labeler"):
        RewardMachineEnv(env, machine, by_cell)
    with pytest.raises(ModelError, match="cannot be called as labeler"):
        collect(env, lambda obs: 0, by_cell, Identity(), 1, propositions="g h o")
    # a labeler with defaults or *args is callable as labeler(obs, info)
    assert tabular_mdp(env, lambda obs, *rest: lake_labeler(obs, {})) == tabular_mdp(env, lake_labeler)
