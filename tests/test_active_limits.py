"""Active learning within its limits: a budget is never exceeded whatever asks (questions, the
exact check, walks), the time limit and a run's deadline end every phase with the survivors so
far, flagged; settings that cannot mean anything are refused; an expert or policy that
misbehaves is a clear error naming the question; recordings that do not fit the environment
are named as such; what an expert does not declare gets the safe default."""

from __future__ import annotations

import re
import time
import warnings
from pathlib import Path

import attrs
import numpy as np
import pytest
from test_theorem import U_MAX, random_instance

from rmtk import dsl
from rmtk.active import (
    ActiveLearner,
    AtRecordedTriples,
    Budget,
    ExpertWalks,
    Observations,
    ProductCheck,
    QueryError,
    SimulatedExpert,
    SplitMostPairs,
    TaskExpert,
)
from rmtk.active.experts import realisable
from rmtk.cli.main import main
from rmtk.errors import RmtkError
from rmtk.limits import Deadline, clear_stop, request_stop

#: The instance on which the exact check used to spend 3 queries of a budget of 1.
OVERSPENT = """
mdp m {
  states s0 s1
  actions x0 x1
  propositions a b c
  label a s1
  label b s0
  start s1
  gamma 0.99
  s0 x0 -> s0 0.15331174972027423, s1 0.8466882502797257
  s0 x1 -> s0 0.17864451636023385, s1 0.8213554836397661
  s1 x0 -> s0 0.48180729771283737, s1 0.5181927022871626
  s1 x1 -> s0 0.493638372770892, s1 0.5063616272291082
}
machine truth {
  alphabet a b c
  nodes u0 u1
  initial u0
  u0 -> u0 on a reward 0.421
  u0 -> u1 on b reward 0.274
  u0 -> u0 on c reward 0.562
  u1 -> u1 on a reward 0.671
  u1 -> u1 on b reward 0.85
  u1 -> u0 on c reward 0.221
}
task t { mdp m; machine truth; lambda 1; depth inf; max_nodes 6 }
"""


def task_of(name):
    return dsl.load_model(name).tasks[name]


# ---------------------------------------------------------------------- budgets
@pytest.mark.parametrize("queries", [1, 2, 3])
def test_the_exact_check_keeps_a_query_budget(tmp_path, capsys, queries):
    task = dsl.loads(OVERSPENT).tasks["t"]
    run = ActiveLearner(budget=Budget(queries=queries)).fit(task, TaskExpert(task))
    assert run.queries <= queries and run.result.machines
    path = tmp_path / "overspent.rm"
    path.write_text(OVERSPENT)
    assert main(["learn", str(path), "--active", "--budget-queries", str(queries), "-q"]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    spent = int(re.search(r"(\d+) quer(?:y|ies),", head).group(1))
    assert spent <= queries


@pytest.mark.slow  # about ten CPU seconds: CI runs it apart (setup.cfg)
def test_budgets_hold_on_random_instances():
    """Small budgets of queries and steps, exact and run experts, exact and sampled checks:
    never a question or a step more than allowed."""
    for seed in range(30):
        inst = random_instance(seed, "non-stuttering", "soft-optimal" if seed % 2 else "table")
        t = inst.task
        for budget in (
            Budget(queries=1 + seed % 5),
            Budget(steps=50 + 37 * (seed % 4)),
            Budget(queries=3, steps=90),
            Budget(draws=40 + 53 * (seed % 4)),
            Budget(steps=12, draws=300),
        ):
            for expert, check in (
                (TaskExpert(t, source=inst.source, seed=seed), None),
                (TaskExpert(t, source=inst.source, seed=seed), ExpertWalks(3, 7)),
                (SimulatedExpert(t, source=inst.source, seed=seed), ExpertWalks(2, 9)),
            ):
                run = ActiveLearner(
                    strategy=SplitMostPairs(samples=20), check=check, budget=budget, max_nodes=U_MAX
                ).fit(t, expert)
                if budget.queries is not None:
                    assert run.queries <= budget.queries, (seed, budget, type(expert).__name__)
                if budget.steps is not None:
                    assert run.steps <= budget.steps, (seed, budget, type(expert).__name__)
                if budget.draws is not None:
                    assert run.draws <= budget.draws, (seed, budget, type(expert).__name__)
                assert run.exhausted in (None, "queries", "steps", "draws")
                assert run.result.machines or run.result.search.message


def test_a_step_budget_holds_on_recorded_triples():
    from test_recorded_active import greedy_task, recording

    task, source = greedy_task("patrol_hallway")
    table = recording(task, source, n=100)
    listed = 50  # the budget is the point here, not the listing of up to 1,000 survivors
    for steps in (3, 15, 77):
        learner = ActiveLearner(
            strategy=AtRecordedTriples(), alpha=1e-3, budget=Budget(steps=steps), max_solutions=listed
        )
        run = learner.fit(task.mdp, SimulatedExpert(task, source=source, seed=1), data=table)
        assert run.steps <= steps and run.table.n_steps == table.n_steps + run.draws
        assert run.steps == run.queries  # a restore of the MDP state per question
    for draws in (30, 150, 777):
        learner = ActiveLearner(
            strategy=AtRecordedTriples(), alpha=1e-3, budget=Budget(draws=draws), max_solutions=listed
        )
        run = learner.fit(task.mdp, SimulatedExpert(task, source=source, seed=1), data=table)
        assert run.draws <= draws and run.table.n_steps == table.n_steps + run.draws


# ---------------------------------------------------------------------- deadlines
def test_a_time_limit_ends_every_phase_with_the_survivors_so_far():
    office = dsl.load_model("office").tasks["patrol"]  # about 20 CPU s to the end
    t0 = time.perf_counter()
    run = ActiveLearner(time_limit=1.0).fit(office, TaskExpert(office))
    assert time.perf_counter() - t0 < 8
    assert run.flagged and run.exhausted == "time limit" and "time limit" in run.stopped
    assert run.result.machines and not run.result.search.complete


def test_a_stop_request_ends_the_run_flagged():
    office = dsl.load_model("office").tasks["patrol"]
    request_stop("interrupted")
    try:
        run = ActiveLearner().fit(office, TaskExpert(office), deadline=Deadline.after(60))
    finally:
        clear_stop()
    assert run.exhausted == "interrupted" and len(run.rounds) == 1


def test_a_seconds_budget_cuts_a_long_walk_in_pieces():
    t = attrs.evolve(task_of("patrol"), lam=0.1)
    t0 = time.perf_counter()
    run = ActiveLearner(check=ExpertWalks(walks=2, length=10**8), budget=Budget(seconds=2)).fit(
        t, SimulatedExpert(t, seed=0)
    )
    assert time.perf_counter() - t0 < 12
    assert run.exhausted == "seconds" and run.result.machines


def test_rounds_hold_a_bounded_number_of_machines():
    """The hypotheses of a round are at most 1 + rivals, however many machines survive."""
    t = task_of("stack_avoid")
    run = ActiveLearner(strategy=SplitMostPairs(rivals=2), max_nodes=4).fit(t, TaskExpert(t))
    assert max(r.survivors for r in run.rounds) <= 3
    assert any(not r.complete for r in run.rounds)  # more survived than a round held
    every = ActiveLearner(max_nodes=4).fit(t, TaskExpert(t))
    assert [m.delta_u.tolist() for m in run.result.machines] == [m.delta_u.tolist() for m in every.result.machines]


def test_the_listing_says_at_least_how_many_survive():
    t = task_of("stack_avoid")
    run = ActiveLearner(max_nodes=4, max_solutions=2, budget=Budget(queries=4)).fit(t, TaskExpert(t))
    assert len(run.result.machines) <= 2 and not run.listed_all
    assert "at least" in run.result.search.message


# ---------------------------------------------------------------------- settings
@pytest.mark.parametrize(
    "kw, match",
    [
        ({"max_nodes": 0}, "max_nodes"),
        ({"max_nodes": "3"}, "max_nodes"),
        ({"max_solutions": -1}, "max_solutions"),
        ({"max_rounds": 0}, "max_rounds"),
        ({"test_rounds": -1}, "test_rounds"),
        ({"irl": object()}, "irl"),
        ({"alpha": 0}, "alpha"),
        ({"time_limit": -1}, "time_limit"),
        ({"check": object()}, "check"),
        ({"encoder": "cadical"}, "encoder"),
        ({"budget": {"queries": 3}}, "budget"),
        ({"progress": print}, "progress"),
    ],
)
def test_settings_that_cannot_mean_anything_are_refused(kw, match):
    with pytest.raises(RmtkError, match=match):
        ActiveLearner(**kw)


def test_experts_refuse_what_cannot_mean_anything():
    t = task_of("patrol")
    with pytest.raises(RmtkError, match="from a task"):
        TaskExpert("patrol")
    with pytest.raises(RmtkError, match="seed"):
        TaskExpert(t, seed=-1)
    with pytest.raises(RmtkError, match="seed"):
        SimulatedExpert(t, seed=1.5)
    with pytest.raises(RmtkError, match="Task, a LabeledMDP or a Space"):
        ActiveLearner().fit("patrol", TaskExpert(t))
    with pytest.raises(RmtkError, match="not an rmtk.active.Expert"):
        ActiveLearner().fit(t, object())
    with pytest.raises(RmtkError, match="product oracle"):
        ActiveLearner(check=ProductCheck()).fit(t, SimulatedExpert(t))
    with pytest.raises(RmtkError, match="piece"):
        ExpertWalks(piece=0)


# ---------------------------------------------------------------------- misbehaving experts
@attrs.define
class Bent(TaskExpert):
    bend: object = None

    def act(self, word, state, m=1):
        return self.bend(super().act(word, state, m))


@pytest.mark.parametrize(
    "bend, match",
    [
        (lambda o: None, "NoneType"),
        (lambda o: attrs.evolve(o, values=np.full_like(o.values, np.nan)), "not finite"),
        (lambda o: attrs.evolve(o, values=-o.values), "negative"),
        (lambda o: attrs.evolve(o, values=np.hstack([o.values, o.values[:, :1]])), "shape"),
        (lambda o: attrs.evolve(o, values=np.zeros_like(o.values)), "not a probability distribution"),
        (lambda o: attrs.evolve(o, values=o.values[:, :-1]), "shape"),
        (lambda o: attrs.evolve(o, exact=False), "counts where exact"),
        (lambda o: attrs.evolve(o, words=((0,),)), "other histories"),
    ],
)
def test_an_exact_experts_bad_answer_is_a_clear_error(bend, match):
    t = task_of("patrol")
    with pytest.raises(QueryError, match=match) as err:
        ActiveLearner().fit(t, Bent(t, bend=bend))
    assert "history" in str(err.value) and "ending in state" in str(err.value)


def test_an_exception_inside_the_expert_names_the_question_and_is_chained():
    t = task_of("patrol")

    def boom(obs):
        raise ZeroDivisionError("the user's bug")

    with pytest.raises(QueryError, match="failed to answer act at the history .* ZeroDivisionError") as err:
        ActiveLearner().fit(t, Bent(t, bend=boom))
    assert isinstance(err.value.__cause__, ZeroDivisionError)


@attrs.define
class Counts(SimulatedExpert):
    bend: object = None

    def act(self, word, state, m=100):
        return self.bend(super().act(word, state, m))


@pytest.mark.parametrize(
    "bend, match",
    [
        (lambda o: attrs.evolve(o, values=o.values - 1000), "negative"),
        (lambda o: attrs.evolve(o, values=o.values / 3), "whole numbers"),
        (lambda o: attrs.evolve(o, values=o.values * 2), "counts .* actions where"),
        (lambda o: attrs.evolve(o, steps=10**9), "declares"),
    ],
)
def test_a_run_experts_bad_answer_is_a_clear_error(bend, match):
    t = attrs.evolve(task_of("patrol"), lam=0.1)
    with pytest.raises(QueryError, match=match):
        ActiveLearner().fit(t, Counts(t, seed=1, bend=bend))


class Structural:
    """A user's expert that declares nothing: only mdp, act and extend."""

    def __init__(self, task):
        self.inner = SimulatedExpert(task, seed=3)
        self.mdp = task.mdp

    def act(self, word, state, m):
        return self.inner.act(word, state, m)

    def extend(self, word, state, k, m, explore=0.0):
        return self.inner.extend(word, state, k, m, explore)


def test_an_expert_that_declares_nothing_gets_the_safe_defaults_and_a_warning():
    t = attrs.evolve(task_of("patrol"), lam=0.1)
    with pytest.warns(UserWarning, match="no verdicts: the expert Structural does not say"):
        run = ActiveLearner(check=ExpertWalks(20, 20), budget=Budget(queries=30)).fit(t, Structural(t))
    assert run.result.verdicts is None and run.result.machines and run.table is not None  # counts, not exact
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ActiveLearner(budget=Budget(queries=5)).fit(t, SimulatedExpert(t, seed=3))  # declares its classes


# ---------------------------------------------------------------------- recordings
def test_recordings_that_do_not_fit_the_environment_are_named():
    from test_recorded_active import greedy_task, recording

    task, source = greedy_task("stack")
    table = recording(task, source, n=30)
    expert = SimulatedExpert(task, source=source, seed=1)
    empty = attrs.evolve(table, keys=table.keys[:0], counts=table.counts[:0])
    with pytest.raises(RmtkError, match="the recording is empty"):
        ActiveLearner(strategy=AtRecordedTriples()).fit(task.mdp, expert, data=empty)
    other = task_of("patrol")  # 16 states, as stack's count table cannot say
    with pytest.raises(RmtkError, match="count table was made on"):
        ActiveLearner(strategy=AtRecordedTriples()).fit(other.mdp, SimulatedExpert(other), data=table)
    mdp = task.mdp
    relabeled = attrs.evolve(mdp, labels=(mdp.labels + 1) % mdp.n_propositions)  # propositions in another order
    with pytest.raises(RmtkError, match="another label, e.g. the word"):
        ActiveLearner(strategy=AtRecordedTriples()).fit(
            relabeled, SimulatedExpert(attrs.evolve(task, mdp=relabeled)), data=table
        )


def test_a_gymnasium_recording_with_propositions_in_another_order_is_named():
    pytest.importorskip("gymnasium")
    from rmtk.gym import Recording

    task = task_of("patrol")
    from rmtk.gym.recording import of_table
    from rmtk.product.simulate import simulate
    from rmtk.ptp.empirical import count_chunk

    counts = count_chunk(task.mdp, simulate(task, 20, 10, seed=0))
    props = tuple(task.mdp.propositions)
    shuffled = of_table(counts, props[1:] + props[:1])
    assert isinstance(shuffled, Recording)
    expert = SimulatedExpert(task, seed=0)
    with pytest.raises(RmtkError, match="same names in another order"):
        ActiveLearner().fit(task, expert, data=shuffled)
    assert ActiveLearner(budget=Budget(queries=2)).fit(task, expert, data=of_table(counts, props)).result.machines


# ---------------------------------------------------------------------- Gymnasium experts
def test_a_gym_expert_checks_the_environment_against_the_mdp():
    gymnasium = pytest.importorskip("gymnasium")
    from rmtk.gym import GymExpert, NodePolicy

    t = dsl.load_model("office").tasks["patrol"]
    policy = NodePolicy.from_table(t.machine, np.full((t.machine.n_nodes, t.mdp.n_states, 4), 0.25))
    lake = gymnasium.make("FrozenLake-v1")
    with pytest.raises(RmtkError, match=r"observation space is Discrete\(16\).*108 states"):
        GymExpert(lake, t.mdp, policy)
    with pytest.raises(RmtkError, match="NodePolicy"):
        GymExpert(lake, t.mdp, lambda s, u, rng: 0)


def test_the_command_line_says_what_active_learning_did(capsys):
    models = Path(__file__).resolve().parents[1] / "models"
    assert main(["learn", str(models / "patrol.rm"), "--active", "-q"]) == 0
    out = capsys.readouterr().out
    assert "# learned from task patrol: active learning, questions to the expert's exact policy" in out
    assert "prefix tree policy of depth" not in out
    assert main(["learn", str(models / "patrol.rm"), "--active", "--samples", "30", "-q"]) == 2  # a usage error
    assert "--samples" in capsys.readouterr().err


def test_histories_asked_are_realisable():
    t = task_of("patrol")
    run = ActiveLearner().fit(t, TaskExpert(t))
    for r in run.rounds:
        for q in r.asked:
            assert realisable(t.mdp, q.word)[q.state]


def test_observations_check_is_used_by_every_question():
    """The exact check's histories go through the same checks as the strategy's."""
    t = task_of("patrol")
    calls = []

    def spy(obs):
        calls.append(obs)
        return obs

    run = ActiveLearner(strategy=SplitMostPairs(rivals=1)).fit(t, Bent(t, bend=spy))
    assert len(calls) == run.evaluations == run.known and isinstance(calls[0], Observations)


@pytest.mark.parametrize(
    "choose, match",
    [
        (lambda s, u, rng: np.full(len(s), 7), "shape"),  # an action out of range
        (lambda s, u, rng: np.full(len(s), -1), "ValueError"),
        (lambda s, u, rng: None, "failed to answer act at the history"),
        (lambda s, u, rng: np.full(len(s), np.nan), "failed to answer"),
    ],
)
def test_a_gym_policy_that_misbehaves_is_named_with_the_question(choose, match):
    gymnasium = pytest.importorskip("gymnasium")
    from test_gym_expert import a_then_g, lake

    from rmtk.gym import GymExpert, NodePolicy

    env, mdp = lake(False)
    task, _, _ = a_then_g(mdp)
    expert = GymExpert(env, mdp, NodePolicy(task.machine, choose), seed=0)
    with pytest.raises(QueryError, match=match):
        ActiveLearner(check=ExpertWalks(2, 5)).fit(task, expert)
    assert isinstance(env, gymnasium.Env)


def test_a_replay_expert_needs_a_name_for_every_label():
    pytest.importorskip("gymnasium")
    from test_replay import office

    from rmtk.gym import ReplayExpert, office_env
    from rmtk.gym.experts import record

    task, _, policy, cell, label = office()
    episodes = record(office_env(max_steps=10), policy, cell, label, task.mdp.propositions, 3, 10, seed=3)
    with pytest.raises(RmtkError, match="label index .* there are 2 propositions"):
        ReplayExpert(office_env(max_steps=10), policy, episodes, cell, label, task.mdp.propositions[:2])
    with pytest.raises(RmtkError, match="seed"):
        ReplayExpert(office_env(max_steps=10), policy, episodes, cell, label, task.mdp.propositions, seed=-2)
    expert = ReplayExpert(office_env(max_steps=10), policy, episodes, cell, label, task.mdp.propositions)
    word, state = expert.histories[-1]
    assert expert.act_steps(word, state, 7) == 1 + expert._where[(word, state)][1]  # declared: reset + replay


def test_a_stop_requested_during_the_run_returns_the_survivors_so_far():
    import threading

    office = dsl.load_model("office").tasks["patrol"]
    timer = threading.Timer(0.5, request_stop, args=("terminated",))
    timer.start()
    t0 = time.perf_counter()
    try:
        run = ActiveLearner().fit(office, TaskExpert(office))
    finally:
        timer.cancel()
        clear_stop()
    assert time.perf_counter() - t0 < 6
    assert run.exhausted == "terminated" and run.result.machines and "terminated" in run.stopped


def test_learn_active_with_a_time_limit_answers_in_time(capsys):
    models = Path(__file__).resolve().parents[1] / "models"
    t0 = time.perf_counter()
    code = main(["learn", str(models / "office.rm"), "patrol", "--active", "--time-limit", "1", "-q"])
    assert code == 0 and time.perf_counter() - t0 < 10
    out = capsys.readouterr().out
    assert "# time limit: the machines below are the survivors so far" in out and "machine learned" in out


def test_the_reachers_expert_checks_its_settings():
    pytest.importorskip("mujoco")
    from rmtk.gym.reacher import ReacherExpert

    with pytest.raises(RmtkError, match="seed"):
        ReacherExpert(seed=-1)
    with pytest.raises(RmtkError, match="tries"):
        ReacherExpert(tries=0)
    with pytest.raises(RmtkError, match="NodePolicy"):
        ReacherExpert(policy=lambda s, u, rng: s)
    expert = ReacherExpert()
    assert not expert.exact and expert.answers_queries and expert.act_steps((0,), 0, 9) == 18  # restore + step
