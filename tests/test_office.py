"""The Office World: the generator's map, walls and doors, its `.rm` syntax, and the four
tasks of models/office.rm against the same machines written in the RM literature's format."""

from pathlib import Path

import numpy as np
import pytest

from rmtk import DslMeaningError, ExactPTP, Learner, ModelError, NodePolicyTable, dsl, isomorphic
from rmtk.envs import GENERATORS, officeworld
from rmtk.io.rmtext import read_rm_text

MODELS = Path(__file__).resolve().parents[1] / "models"

#: The four tasks in the text format of the RM literature (formulas over the marks; the
#: terminal node absorbs; a letter no formula matches falls into it).
LITERATURE = {
    "coffee": """0 # initial state
[2] # terminal state
(0,0,'!f&!n',ConstantRewardFunction(0))
(0,1,'f&!n',ConstantRewardFunction(0))
(1,1,'!g&!n',ConstantRewardFunction(0))
(1,2,'g&!n',ConstantRewardFunction(1))
""",
    "mail": """0 # initial state
[2] # terminal state
(0,0,'!e&!n',ConstantRewardFunction(0))
(0,1,'e&!n',ConstantRewardFunction(0))
(1,1,'!g&!n',ConstantRewardFunction(0))
(1,2,'g&!n',ConstantRewardFunction(1))
""",
    "coffee_mail": """0 # initial state
[1] # terminal state
(0,0,'!e&!f&!n',ConstantRewardFunction(0))
(0,2,'e&!n',ConstantRewardFunction(0))
(0,3,'!e&f&!n',ConstantRewardFunction(0))
(2,2,'!f&!n',ConstantRewardFunction(0))
(2,4,'f&!n',ConstantRewardFunction(0))
(3,3,'!e&!n',ConstantRewardFunction(0))
(3,4,'e&!n',ConstantRewardFunction(0))
(4,1,'g&!n',ConstantRewardFunction(1))
(4,4,'!g&!n',ConstantRewardFunction(0))
""",
    "patrol": """0 # initial state
[4] # terminal state
(0,0,'!a&!n',ConstantRewardFunction(0))
(0,1,'a&!n',ConstantRewardFunction(0))
(1,1,'!b&!n',ConstantRewardFunction(0))
(1,2,'b&!n',ConstantRewardFunction(0))
(2,2,'!c&!n',ConstantRewardFunction(0))
(2,3,'c&!n',ConstantRewardFunction(0))
(3,3,'!d&!n',ConstantRewardFunction(0))
(3,4,'d&!n',ConstantRewardFunction(1))
""",
}


@pytest.fixture(scope="module")
def doc():
    return dsl.load(MODELS / "office.rm")


def move(mdp, cell, action):
    """The cell reached from ``(row, col)`` by ``action`` (deterministic moves)."""
    ((succ, p),) = mdp.successors(f"r{cell[0]}c{cell[1]}", action)
    assert p == 1.0
    return tuple(int(x) for x in mdp.states[succ][1:].split("c"))


def test_map_marks_and_start():
    mdp = officeworld()
    assert (mdp.n_states, mdp.n_actions) == (108, 4) and mdp.actions == ("up", "right", "down", "left")
    marks = {(r, c): mdp.label(f"r{r}c{c}") for r in range(9) for c in range(12) if mdp.label(f"r{r}c{c}") != "i"}
    # the literature's (x, y) cells at row 8 - y, column x
    assert marks == {
        (7, 1): "a",
        (1, 1): "b",
        (1, 10): "c",
        (7, 10): "d",
        (4, 7): "e",
        (6, 8): "f",
        (2, 3): "f",
        (4, 4): "g",
        (7, 4): "n",
        (7, 7): "n",
        (1, 4): "n",
        (1, 7): "n",
        (4, 1): "n",
        (4, 10): "n",
    }
    assert [mdp.states[s] for s in mdp.start_states] == ["r7c2"]
    assert mdp.propositions == ("a", "b", "c", "d", "e", "f", "g", "i", "n")


def test_walls_and_doors():
    mdp = officeworld()
    assert move(mdp, (7, 2), "right") == (7, 3)  # a door between the bottom rooms
    assert move(mdp, (6, 2), "right") == (6, 2)  # a wall
    assert move(mdp, (3, 4), "up") == (2, 4)  # the office room's only door
    assert move(mdp, (5, 4), "down") == (5, 4)  # no door down from the office room
    assert move(mdp, (5, 1), "down") == (6, 1) and move(mdp, (5, 10), "down") == (6, 10)
    assert move(mdp, (4, 5), "right") == (4, 5)  # the middle rooms are not joined
    assert move(mdp, (0, 0), "up") == (0, 0) and move(mdp, (8, 11), "right") == (8, 11)  # the grid's edge
    inner = sum(move(mdp, (r, c), "right") != (r, c) for r in range(9) for c in range(11))
    assert inner == 9 * 8 + 6  # 8 open pairs per row inside rooms, plus 6 doors


def test_generator_settings_and_errors():
    every = officeworld(start=None, other="blank")
    assert len(every.start_states) == 108 and "blank" in every.propositions
    slippery = officeworld(slip=0.2)
    assert np.isclose(dict(slippery.successors("r7c2", "right"))[slippery.state_index("r7c3")], 0.85)
    with pytest.raises(ModelError, match="outside the 9x12 grid"):
        officeworld(start=[(9, 0)])
    with pytest.raises(ModelError, match="already the mark"):
        officeworld(other="g")
    assert GENERATORS["officeworld"] is officeworld


def test_rm_syntax_round_trip():
    doc = dsl.loads("mdp a = officeworld { start all; other o }\nmdp b = officeworld { start (0 0) (8 11); slip 0.1 }")
    assert dsl.loads(dsl.dumps(doc)) == doc
    assert len(doc.mdps["a"].start_states) == 108 and len(doc.mdps["b"].start_states) == 2
    assert "start all" in dsl.dumps(doc.mdps["a"])
    with pytest.raises(DslMeaningError, match="unknown setting 'map'.*expected one of: start, other, slip"):
        dsl.loads("mdp a = officeworld { map { a } }")


@pytest.mark.parametrize("name", sorted(LITERATURE))
def test_models_are_the_literature_machines(doc, name):
    machine = doc.machines[name]
    read = read_rm_text(LITERATURE[name], alphabet=machine.alphabet, name=name)
    assert isomorphic(read, machine)  # same transitions and rewards, up to renaming
    assert read.n_nodes == machine.n_nodes and "terminal" in read.nodes
    assert machine.is_non_stuttering()


@pytest.mark.parametrize("name", ["coffee", "patrol"])
def test_every_depth_learning_recovers_the_task(doc, name):
    from rmtk.ptp.exact import shortest_path_table

    task = doc.tasks[name]
    table = shortest_path_table(task, 0.1)
    res = Learner(ExactPTP(None, source=NodePolicyTable(table)), irl=None, max_nodes=6).fit(task)
    assert len(res.machines) == 1 and res.n_nodes == task.machine.n_nodes
    assert res.isomorphic_to_truth() == (True,) and res.verdicts[0].consistent


def test_tasks_say_depth_inf_and_learn_at_every_depth(doc):
    import math

    from rmtk.task import EVERY_DEPTH, Task

    task = doc.tasks["mail"]
    assert task.depth == EVERY_DEPTH and "depth inf" in dsl.dumps(task)
    res = Learner(irl=None).fit(task)  # ExactPTP("task"): the task's depth, here every depth
    assert res.ptp is None and res.search.lazy is not None and res.search.lazy.counterexamples > 0
    assert res.isomorphic_to_truth() == (True,) and res.verdicts[0].consistent
    assert Task(task.mdp, task.machine, depth=math.inf).depth == EVERY_DEPTH
    with pytest.raises(ModelError, match="depth must be at least 1"):
        Task(task.mdp, task.machine, depth=0)
    for bad in ("deep", 2.5, True):
        with pytest.raises(ModelError, match="a task's depth is a whole number of at least 1 or 'inf'"):
            Task(task.mdp, task.machine, depth=bad)
    with pytest.raises(Exception, match="cannot be built"):
        ExactPTP().build(task, None)
    text = dsl.dumps(task).replace("depth inf", "depth deep")
    with pytest.raises(
        DslMeaningError, match=r"'depth' expects a whole number or inf \(every depth\), got the name 'deep'"
    ):
        dsl.loads(text)
