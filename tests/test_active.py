"""Active learning: the experts answer what their policy says, the loop finds what every-depth
learning finds (shipped tasks, random instances) without reading the true machine, budgets
stop it cleanly, and bad input is a clear error."""

from __future__ import annotations

from pathlib import Path

import attrs
import numpy as np
import pytest
from test_theorem import U_MAX, random_instance

from rmtk import ExactPTP, Learner, SatEncoder, dsl, ties
from rmtk.active.asking import Asker
from rmtk.active.checks import ExpertWalks, ProductCheck
from rmtk.active.conformance import SuiteCheck
from rmtk.active.experts import (
    QueryError,
    RecordedExpert,
    SimulatedExpert,
    TaskExpert,
    realisable,
)
from rmtk.active.loop import ActiveLearner, Budget, default_check
from rmtk.active.questions import QuestionStrategy, SplitMostPairs
from rmtk.cli.main import main
from rmtk.errors import RmtkError
from rmtk.machine.model import RewardMachine
from rmtk.negatives.miners import ConfidenceMiner
from rmtk.product.planning import task_policy
from rmtk.product.simulate import simulate
from rmtk.ptp.empirical import EmpiricalPTP

MODELS = Path(__file__).resolve().parents[1] / "models"
SHIPPED = ["patrol", "patrol_hallway", "stack", "stack_avoid"]


def task_of(name):
    return dsl.load_model(name).tasks[name]


def letters(task, *names):
    return tuple(task.mdp.propositions.index(x) for x in names)


# ---------------------------------------------------------------------- experts
def test_task_expert_answers_the_product_policy_after_the_history():
    t = task_of("patrol")
    pi = task_policy(t).pi
    expert = TaskExpert(t)
    word = letters(t, "A", "B")  # patrol: u0 -A-> u1 -B-> u2
    state = int(np.flatnonzero(realisable(t.mdp, word))[0])
    obs = expert.act(word, state)
    assert obs.exact and obs.evaluations == 1 and obs.steps == 0
    np.testing.assert_allclose(obs.values[0], pi[state, 2])
    # an extension drives the memory along the history and on: every word observed starts with it
    ext = expert.extend(word, state, 6, 3)
    assert not ext.exact and ext.steps == 18 and ext.values.sum() == 18
    assert all(w[:2] == word for w in ext.words)


def test_simulated_expert_draws_from_the_node_the_history_reaches_and_is_seeded():
    t = attrs.evolve(task_of("patrol"), lam=0.1)
    pi = task_policy(t).pi
    word = letters(t, "A")
    states = np.flatnonzero(realisable(t.mdp, word))
    state = int(states[ties.argbest(np.abs(pi[states, 1] - pi[states, 0]).max(axis=1))])  # the same on every CPU
    a = SimulatedExpert(t, seed=5).act(word, state, 20_000)
    assert a.values.sum() == a.draws == 20_000 and a.steps == 1  # one restore of the MDP state, 20,000 draws there
    assert np.abs(a.values[0] / 20_000 - pi[state, 1]).max() < 0.02
    assert np.abs(pi[state, 1] - pi[state, 0]).max() > 0.1  # u1, not a reset u0, acts here
    again = SimulatedExpert(t, seed=5).act(word, state, 20_000)
    np.testing.assert_array_equal(a.values, again.values)


def test_a_history_the_mdp_cannot_realise_is_a_clear_error():
    t = task_of("patrol")
    expert = TaskExpert(t)
    a_state = int(np.flatnonzero(t.mdp.labels == letters(t, "A")[0])[0])
    with pytest.raises(QueryError, match="cannot realise the history 'B'"):
        expert.act(letters(t, "B"), a_state)  # the word must end with the label of its state
    with pytest.raises(QueryError, match="not a state"):
        SimulatedExpert(t).act(letters(t, "A"), 999, 5)
    with pytest.raises(QueryError, match="answers no queries"):
        RecordedExpert(t.mdp, None).act(letters(t, "A"), a_state)


# ---------------------------------------------------------------------- the loop
@pytest.mark.parametrize("name", SHIPPED)
def test_active_learning_finds_what_every_depth_learning_finds(name):
    t = task_of(name)
    every = Learner(ExactPTP(None), irl=None).fit(t)
    full_tree = Learner(ExactPTP(), irl=None).fit(t).tree.n_pairs  # the prefix tree at the task's depth
    active = ActiveLearner().fit(t, TaskExpert(t))
    r = active.result
    assert (r.n_nodes, r.distinct_count, r.raw_count) == (every.n_nodes, every.distinct_count, every.raw_count)
    assert all(v.consistent for v in r.verdicts)
    assert r.isomorphic_to_truth() == every.isomorphic_to_truth()
    assert not active.flagged and "no counterexample" in active.stopped
    assert active.known == r.ptp.n_pairs and 10 * active.known <= full_tree  # >= 10x fewer policy evaluations
    assert [x.index for x in active.rounds] == list(range(len(active.rounds)))
    assert active.rounds[-1].reason == "equivalence" and active.rounds[-1].survivors == 1


def test_active_learning_agrees_with_every_depth_on_random_instances():
    for seed in range(40):
        for kind in ("soft-optimal", "table"):
            inst = random_instance(seed, "non-stuttering", kind)
            every = Learner(ExactPTP(None, source=inst.source), max_nodes=U_MAX, irl=None).fit(inst.task)
            active = ActiveLearner(max_nodes=U_MAX).fit(inst.task, TaskExpert(inst.task, source=inst.source, seed=seed))
            r = active.result
            assert not active.flagged, (seed, kind, active.stopped)  # each ends by itself
            assert (r.n_nodes, r.distinct_count) == (every.n_nodes, every.distinct_count), (seed, kind)
            assert all(v.consistent for v in r.verdicts), (seed, kind)


def test_the_loop_never_reads_the_true_machine():
    t = task_of("patrol")
    expert = TaskExpert(t)
    right = ActiveLearner().fit(t, expert)
    wrong_machine = RewardMachine(
        ["v0", "v1"], t.machine.alphabet, np.zeros((2, 4), np.int64), np.zeros((2, 4)), name="wrong"
    )
    wrong = attrs.evolve(t, machine=wrong_machine)
    other = ActiveLearner().fit(wrong, TaskExpert(t))  # the truth given for verdicts is wrong
    assert [m.delta_u.tolist() for m in other.result.machines] == [m.delta_u.tolist() for m in right.result.machines]
    assert [x.survivors for x in other.rounds] == [x.survivors for x in right.rounds]
    assert right.result.isomorphic_to_truth() == (True,) and other.result.isomorphic_to_truth() == (False,)


def test_a_simulated_expert_is_learned_from_its_runs():
    t = attrs.evolve(task_of("patrol"), lam=0.1)  # a sharp expert: differences show in 200 draws
    active = ActiveLearner(check=ExpertWalks(50, 30)).fit(t, SimulatedExpert(t, seed=1))
    r = active.result
    assert r.n_nodes == 4 and r.isomorphic_to_truth() == (True,) and r.verdicts[0].consistent
    asked = [q for x in active.rounds for q in x.asked]
    walks = [x.walks for x in active.rounds if x.reason == "equivalence"]
    assert walks and set(walks) == {50}  # each equivalence check: 50 walks of 30 steps
    assert active.draws == sum(q.samples for q in asked) + sum(walks) * 30  # the actions drawn, and the walks'
    assert active.steps == len(asked) + sum(walks) * 30  # a restore per question; a reset and 29 moves per walk
    assert r.negatives is not None and len(r.negatives) > 0


def test_recorded_data_run_through_the_same_loop_as_passive_learning():
    t = task_of("stack_avoid")
    demos = simulate(t, 2000, 20, seed=3)
    active = ActiveLearner(max_nodes=3).fit(t, RecordedExpert(t.mdp, demos))
    passive = Learner(
        EmpiricalPTP(demos), miner=ConfidenceMiner(), encoder=SatEncoder(negatives="lazy"), max_nodes=3, irl=None
    ).fit(t)
    r = active.result
    assert (r.n_nodes, r.distinct_count, r.raw_count) == (passive.n_nodes, passive.distinct_count, passive.raw_count)
    assert active.queries == active.steps == 0 and len(active.rounds) == 1 and "no queries" in active.stopped
    assert len(r.negatives) == len(passive.negatives)


def test_a_budget_that_runs_out_returns_the_survivors_so_far_flagged():
    t = task_of("patrol")
    active = ActiveLearner(budget=Budget(queries=3)).fit(t, TaskExpert(t))
    assert active.flagged and active.exhausted == "queries" and active.queries <= 3
    assert active.result.machines and "survivors so far" in active.stopped
    s = attrs.evolve(t, lam=0.1)
    active = ActiveLearner(budget=Budget(steps=500)).fit(s, SimulatedExpert(s, seed=1))
    assert active.flagged and active.exhausted == "steps" and active.steps <= 500 and active.result.machines
    active = ActiveLearner(budget=Budget(seconds=1e-9)).fit(t, TaskExpert(t))
    assert active.exhausted == "seconds" and len(active.rounds) == 1
    active = ActiveLearner(max_rounds=2).fit(t, TaskExpert(t))
    assert active.exhausted == "rounds" and len(active.rounds) == 2 and active.result.machines


def test_bad_input_is_a_clear_error():
    t = task_of("patrol")
    for bad in ({"queries": 0}, {"steps": -5}, {"seconds": float("inf")}, {"queries": True}):
        with pytest.raises(RmtkError, match="budget"):
            Budget(**bad)
    other = task_of("stack")
    with pytest.raises(QueryError, match="alphabet"):
        ActiveLearner().fit(t, TaskExpert(other))
    with pytest.raises(RmtkError, match="choose"):
        ActiveLearner(strategy=object())
    with pytest.raises(RmtkError, match="exact one"):
        ActiveLearner().fit(t, TaskExpert(t), data=simulate(t, 10, 5, seed=0))
    assert isinstance(SplitMostPairs(), QuestionStrategy)
    flip = np.array([[1, 0, 0, 0], [0, 1, 1, 1]])  # reading A twice returns to u0: a stuttering memory
    stutter = attrs.evolve(t, machine=RewardMachine(["u0", "u1"], t.machine.alphabet, flip, np.zeros((2, 4))))
    with pytest.raises(QueryError, match="stutters"):
        SimulatedExpert(stutter)


# ---------------------------------------------------------------------- command line
def test_learn_active_on_the_command_line(capsys):
    assert main(["learn", str(MODELS / "patrol.rm"), "--active", "-q"]) == 0
    out = capsys.readouterr().out
    assert "# active learning from the expert's exact policy" in out and "isomorphic to the true machine" in out
    assert main(["learn", str(MODELS / "patrol.rm"), "--active", "--budget-queries", "2", "-q"]) == 0
    assert "# budget spent (queries)" in capsys.readouterr().out
    with pytest.raises(SystemExit) as err:
        main(["learn", str(MODELS / "patrol.rm"), "--active", "--budget-steps", "0"])
    assert err.value.code == 2 and "at least 1, got 0" in capsys.readouterr().err
    assert main(["learn", str(MODELS / "patrol.rm"), "--budget-steps", "5"]) == 2  # a usage error
    assert "--budget-steps does not apply to learning from the task's exact policy" in capsys.readouterr().err
    assert main(["learn", str(MODELS / "patrol.rm"), "--active", "--depth", "3"]) == 2
    assert "does not apply to active learning" in capsys.readouterr().err
    assert main(["learn", str(MODELS / "patrol.rm"), "--active", "--no-rewards"]) == 2  # the loop recovers none
    assert "--no-rewards does not apply to active learning" in capsys.readouterr().err


@pytest.mark.slow  # tens of seconds: CI runs it apart (setup.cfg)
def test_reproduce_active_quick(tmp_path):
    from rmtk.experiments import Options, run

    report = run("active", Options(quick=True, figure_dir=tmp_path, overrides={"demos": 200}))
    assert len(report.tables) == 2  # the soft expert is off in quick runs
    (_, header, rows), (_, _, stack_avoid) = report.tables
    row = dict(zip(header, rows[0]))
    assert row["task"] == "patrol" and row["truth"] == "yes" and row["consistent"] == "yes"
    assert row["active evaluations"] * 3 < row["tree evaluations"] == 254
    passive, active = stack_avoid
    assert active[3] == active[2] >= 1 and active[4] > passive[4] == 200 * 20  # steps: recorded + asked
    assert (tmp_path / "active.png").exists()


def test_transition_tests_compare_with_a_word_that_avoids_the_transition():
    """Office coffee starts in every cell: the shortest word to a cell after f is often f
    itself (a start there), which reads the same letter and tells nothing; the test that finds
    the truth compares with a word that never reads f."""
    t = dsl.load_model("office").tasks["coffee"]
    r = ActiveLearner().fit(t, TaskExpert(t)).result
    assert r.isomorphic_to_truth() == (True,) and r.verdicts[0].consistent


def test_the_exact_check_refutes_a_wrong_machine_with_two_histories_and_passes_the_truth():
    t = task_of("patrol")
    expert = TaskExpert(t)
    truth = t.machine.delta_u[:, t.letter_of_proposition]
    one = np.zeros((1, 4), np.int64)
    asker = Asker(expert, expert, Budget())
    answers, _ = ProductCheck().run(asker, None, [one])
    asked = asker.queries
    assert asked == 3 and len(answers) == 2  # the check, then both histories of its counterexample
    (w1,), (w2,) = (a.words for a in answers)
    assert w1 != w2 and answers[0].states[0] == answers[1].states[0]  # one state, two histories
    assert np.abs(answers[0].values - answers[1].values).max() > 1e-6  # the expert acts differently there
    asker = Asker(expert, expert, Budget())
    assert (ProductCheck().run(asker, None, [truth]), asker.queries) == (([], 0), 1)
    simulated = SimulatedExpert(t)
    with pytest.raises(RmtkError, match="product_oracle"):
        ProductCheck().run(Asker(simulated, simulated, Budget()), None, [one])
    assert isinstance(default_check(expert), ProductCheck)
    assert isinstance(default_check(SimulatedExpert(t)), SuiteCheck)  # sampled: the conformance suite


@pytest.mark.parametrize("name", SHIPPED)
def test_the_exact_check_finds_what_short_walks_miss(name):
    """Without transition tests, 1 walk of 3 steps finds nothing and the loop stops at a
    wrong machine; the exact check (the default for an exact expert) reaches the truth."""
    t = task_of(name)
    plain = SplitMostPairs(per_transition=0, alternatives=0)
    walked = ActiveLearner(strategy=plain, check=ExpertWalks(1, 3)).fit(t, TaskExpert(t)).result
    assert not walked.verdicts[0].consistent
    exact = ActiveLearner(strategy=plain).fit(t, TaskExpert(t))
    assert all(v.consistent for v in exact.result.verdicts) and "no counterexample" in exact.stopped
