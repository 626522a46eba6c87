"""Bad arguments given deep inside, and a user's environment that raises: one clear error naming
the object and what was expected (or the call and the history it was asked at, with the user's
exception chained), never a ValueError, OverflowError, IndexError or AttributeError from inside."""

from __future__ import annotations

import pytest

from rmtk import dsl
from rmtk.active.experts import QueryError, SimulatedExpert, TaskExpert
from rmtk.errors import RmtkError
from rmtk.labels.histories import state_task
from rmtk.labels.learner import LabelLearner


@pytest.fixture(scope="module")
def patrol():
    return dsl.load_model("patrol").tasks["patrol"]


def _start(task):
    s = int(task.mdp.start_states[0])
    return (int(task.mdp.labels[s]),), s


@pytest.mark.parametrize("m", [-1, 0, 1.5, 10**30, True])
def test_an_expert_asked_for_a_bad_number_of_draws_names_it(patrol, m):
    word, s = _start(patrol)
    with pytest.raises(QueryError, match=r"SimulatedExpert: m \(the actions drawn\) must be a whole number from 1"):
        SimulatedExpert(patrol).act(word, s, m)
    with pytest.raises(QueryError, match=r"SimulatedExpert: m \(the runs\) must be a whole number"):
        SimulatedExpert(patrol).extend(word, s, 3, m)
    with pytest.raises(QueryError, match=r"TaskExpert: k \(the steps of a run\) must be a whole number"):
        TaskExpert(patrol).extend(word, s, m, 2)
    assert SimulatedExpert(patrol).act(word, s, 7).values.sum() == 7  # a good count still draws


def test_state_task_of_a_name_says_to_load_the_task():
    with pytest.raises(RmtkError, match=r"state_task needs an rmtk.Task .*not str 'patrol'.*load_model"):
        state_task("patrol")


@pytest.mark.parametrize("active", [None, 3])
def test_fit_questions_of_something_else_than_an_active_result(patrol, active):
    with pytest.raises(RmtkError, match=r"fit_questions learns from an active run's result"):
        LabelLearner().fit_questions(active, patrol)


# -- Gymnasium ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def office():
    pytest.importorskip("gymnasium")
    from rmtk.gym import NodePolicy
    from rmtk.ptp.exact import shortest_path_table

    task = dsl.load_model("office").tasks["coffee"]
    policy = NodePolicy.from_table(task.machine, shortest_path_table(task, 0.1))
    return task, policy


def test_record_refuses_bad_counts_and_label_names(office):
    from rmtk.gym import office_env
    from rmtk.gym.experts import record, replay

    task, policy = office
    mdp = task.mdp
    cell = int
    index = lambda obs: int(mdp.labels[int(obs)])  # noqa: E731
    name = lambda obs: mdp.propositions[int(mdp.labels[int(obs)])]  # noqa: E731
    for n, what in ((-1, "n"), (0, "n"), (2.5, "n")):
        with pytest.raises(RmtkError, match=rf"record: {what} \(the episodes\) must be a whole number of at least 1"):
            record(office_env(max_steps=10), policy, cell, index, mdp.propositions, n, 10)
    with pytest.raises(RmtkError, match=r"record: horizon \(the steps\) must be a whole number"):
        record(office_env(max_steps=10), policy, cell, index, mdp.propositions, 2, -1)
    with pytest.raises(
        RmtkError, match=r"record: label\(obs\) must return the proposition's index .*got '\w+' \(a name"
    ):
        record(office_env(max_steps=10), policy, cell, name, mdp.propositions, 2, 10)
    episodes = record(office_env(max_steps=10), policy, cell, index, mdp.propositions, 2, 10, seed=3)
    with pytest.raises(RmtkError, match=r"replaying episode 0: label\(obs\) must return the proposition's index"):
        replay(office_env(max_steps=10), episodes[0], 5, cell, name, "episode 0")
    assert replay(office_env(max_steps=10), episodes[0], 5, cell, index) == episodes[0].states[5]


class Boom(Exception):
    pass


def test_an_environment_that_raises_is_named_with_the_history_asked(office):
    import gymnasium

    from rmtk.gym import office_env
    from rmtk.gym.experts import GymExpert

    task, policy = office
    mdp = task.mdp
    word, s = _start(task)

    def restore(env, state):
        raise Boom("no such state here")

    with pytest.raises(QueryError, match=r"GymExpert: the restore function raised Boom: no such state here while "
                       r"answering at the history 'i' ending in state 'r\d+c\d+'") as caught:  # fmt: skip
        GymExpert(office_env(max_steps=40), mdp, policy, restore=restore).act(word, s, 3)
    assert isinstance(caught.value.__cause__, Boom)

    class Steps(gymnasium.Wrapper):
        def step(self, action):
            raise Boom("the simulator crashed")

    far = TaskExpert(task).extend(None, 0, 5, 1)
    w, st = far.words[-1], int(far.states[-1])
    expert = GymExpert(Steps(office_env(max_steps=40)), mdp, policy, mode="replay")
    with pytest.raises(QueryError, match=r"the environment's step raised Boom: the simulator crashed while answering "
                       r"at the history '[\w ]+' ending in state") as caught:  # fmt: skip
        expert.act(w, st, 3)
    assert isinstance(caught.value.__cause__, Boom)
    with pytest.raises(QueryError, match=r"the environment's step raised Boom.*at a run from a seeded reset"):
        expert.extend(None, 0, 5, 1)
