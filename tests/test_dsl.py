"""The .rm language: shipped models load, printing is canonical, loads(dumps(x)) == x."""

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from rmtk import LabeledMDP, RewardMachine, Task, dsl, isomorphic
from rmtk.dsl.parser import grammar_text
from rmtk.errors import DslSyntaxError, RmtkError

MODELS = sorted((Path(__file__).resolve().parents[1] / "models").glob("*.rm"))


def test_all_models_shipped():
    assert {p.stem for p in MODELS} >= {"patrol", "patrol_hallway", "stack", "stack_avoid", "labyrinth"}


@pytest.mark.parametrize("path", MODELS, ids=[p.stem for p in MODELS])
def test_round_trip_shipped_model(path):
    doc = dsl.load(path)
    text = dsl.dumps(doc)
    again = dsl.loads(text)
    assert again == doc
    assert dsl.dumps(again) == text  # the canonical text is a fixed point
    for mdp in doc.mdps.values():
        assert mdp.source is not None  # generated MDPs are printed back in generator form
        assert "= " + mdp.source.generator in text


def test_patrol_model_content():
    doc = dsl.load(MODELS[[p.stem for p in MODELS].index("patrol")])
    task = doc.tasks["patrol"]
    m = task.machine
    assert m.nodes == ("u0", "u1", "u2", "u3") and m.alphabet == tuple("ABCD")
    assert [m.nodes[u] for u in m.run("AABCD")] == ["u0", "u1", "u1", "u2", "u3", "u0"]
    assert m.reward("u3", "D") == 1.0 and m.delta_r.sum() == 1.0
    assert task.mdp.n_states == 16 and task.depth == 6 and task.max_nodes == 4
    assert list(task.mdp.start_states) == [0, 2, 3, 6, 8]
    # paper numbering: state i at row i mod 4, column i div 4
    assert "".join(task.mdp.label(i) for i in range(16)) == "DDAADDAACCBBCCBB"


def test_stack_avoid_machine():
    doc = dsl.load(MODELS[[p.stem for p in MODELS].index("stack_avoid")])
    m = doc.machines["stack_avoid"]
    assert [m.nodes[u] for u in m.run(["I", "A", "I", "B"])] == ["u0", "u0", "u1", "u1", "u2"]
    assert m.reward("u0", "D") == 0.2 and m.reward("u2", "I") == 1.0 and m.reward("u3", "A") == 0.0
    assert m.is_non_stuttering()


def test_guards_and_else():
    doc = dsl.loads(
        "machine m {\n alphabet A B C D\n"
        " u0 -> u1 on !(A | B) & !D reward 2\n"
        " u0 -> u2 on else\n"
        " u1 -> u0 on true\n"
        " u2 -> u2 on false | B\n}\n"
    )
    m = doc.machines["m"]
    assert [m.nodes[m.step("u0", a)] for a in "ABCD"] == ["u2", "u2", "u1", "u2"]
    assert m.reward("u0", "C") == 2.0 and m.reward("u0", "A") == 0.0
    assert [m.nodes[m.step("u1", a)] for a in "ABCD"] == ["u0"] * 4
    assert [m.nodes[m.step("u2", a)] for a in "ABCD"] == ["u2"] * 4


def test_defaults_are_zero_self_loops_and_keywords_as_names():
    doc = dsl.loads('machine "on" { alphabet "else" "on"; "mdp" -> "reward" on "on" reward -1e-3 }')
    m = doc.machines["on"]
    assert m.nodes == ("mdp", "reward") and m.alphabet == ("else", "on")
    assert m.step("mdp", "on") == 1 and m.reward("mdp", "on") == -1e-3
    assert m.step("mdp", "else") == 0 and m.reward("mdp", "else") == 0.0
    assert dsl.loads(dsl.dumps(m)).machines["on"] == m
    with pytest.raises(DslSyntaxError, match='keyword: write "on" in quotes'):
        dsl.loads("machine m { alphabet A on }")


def test_explicit_mdp_start_weights_and_comments():
    text = """# a comment line
mdp x {   # trailing comment
  states s t u ; actions a
  label P s t
  label Q u
  start s 0.25 u 0.75
  s a -> t 0.5, u 0.5
  t a -> t; u a -> s
}
"""
    mdp = dsl.loads(text).mdps["x"]
    assert np.allclose(mdp.initial, [0.25, 0, 0.75])
    assert mdp.successors("s", "a") == [(1, 0.5), (2, 0.5)]
    assert mdp.propositions == ("P", "Q") and mdp.label("u") == "Q"
    assert dsl.loads(dsl.dumps(mdp)).mdps["x"] == mdp


def test_task_alone_prints_its_parts():
    m = RewardMachine.from_transitions({("u0", "P"): ("u1", 1.0)}, ["P"])
    mdp = LabeledMDP.from_dense(np.ones((1, 1, 1)), ["P"], name="one")
    task = Task(mdp, m, lam=0.5, gamma=0.9, name="t")
    again = dsl.loads(dsl.dumps(task))
    assert again.tasks["t"] == task and again.mdps["one"] == mdp


def test_dump_does_not_overwrite(tmp_path):
    m = RewardMachine.from_transitions({}, ["A"], nodes=["u0"])
    path = tmp_path / "m.rm"
    dsl.dump(m, path)
    with pytest.raises(RmtkError, match="already exists"):
        dsl.dump(m, path)
    dsl.dump(m, path, overwrite=True)
    assert dsl.load(path).machines["machine"] == m


def test_grammar_is_found():
    assert "machine_transition" in grammar_text()


# ------------------------------------------------------------------ property tests
names = st.text(st.characters(min_codepoint=32, max_codepoint=0x2FF, exclude_characters="\\"), min_size=1, max_size=6)
rewards = st.one_of(
    st.just(0.0), st.integers(-3, 3).map(float), st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
)


@st.composite
def machines(draw):
    n = draw(st.integers(1, 5))
    alphabet = draw(st.lists(names, min_size=1, max_size=4, unique=True))
    nodes = draw(st.lists(names, min_size=n, max_size=n, unique=True))
    du = draw(st.lists(st.integers(0, n - 1), min_size=n * len(alphabet), max_size=n * len(alphabet)))
    dr = draw(st.lists(rewards, min_size=n * len(alphabet), max_size=n * len(alphabet)))
    return RewardMachine(
        nodes=nodes,
        alphabet=alphabet,
        delta_u=np.reshape(du, (n, len(alphabet))),
        delta_r=np.reshape(dr, (n, len(alphabet))),
        initial=draw(st.integers(0, n - 1)),
        name=draw(names),
    )


@settings(max_examples=150, deadline=None)
@given(machines())
def test_round_trip_random_machines(m):
    again = dsl.loads(dsl.dumps(m)).machines[m.name]
    assert again == m
    assert isomorphic(again, m)


@st.composite
def mdps(draw):
    S = draw(st.integers(1, 5))
    A = draw(st.integers(1, 3))
    props = draw(st.lists(names, min_size=1, max_size=3, unique=True))
    states = draw(st.lists(names, min_size=S, max_size=S, unique=True))
    actions = draw(st.lists(names, min_size=A, max_size=A, unique=True))
    P = np.zeros((S * A, S))
    for row in range(S * A):
        weights = draw(st.lists(st.integers(0, 5), min_size=S, max_size=S).filter(any))
        P[row] = np.array(weights, float) / sum(weights)
    init = np.array(draw(st.lists(st.integers(0, 3), min_size=S, max_size=S).filter(any)), float)
    return LabeledMDP(
        states=states,
        actions=actions,
        transitions=sp.csr_array(P),
        labels=draw(st.lists(st.integers(0, len(props) - 1), min_size=S, max_size=S)),
        propositions=props,
        initial=init / init.sum(),
        gamma=draw(st.floats(0, 0.999)),
        name=draw(names),
    )


@settings(max_examples=100, deadline=None)
@given(mdps())
def test_round_trip_random_explicit_mdps(mdp):
    assert dsl.loads(dsl.dumps(mdp)).mdps[mdp.name] == mdp


@st.composite
def tasks(draw):
    """A task over a random MDP, with a machine over its propositions (and more) or none."""
    mdp = draw(mdps())
    machine = None
    if draw(st.booleans()):
        m = draw(machines())
        alphabet = list(mdp.propositions) + [a for a in m.alphabet if a not in mdp.propositions]
        n = m.n_nodes
        machine = RewardMachine(
            nodes=m.nodes,
            alphabet=alphabet,
            delta_u=np.reshape(
                draw(st.lists(st.integers(0, n - 1), min_size=n * len(alphabet), max_size=n * len(alphabet))), (n, -1)
            ),
            delta_r=np.reshape(
                draw(st.lists(rewards, min_size=n * len(alphabet), max_size=n * len(alphabet))), (n, -1)
            ),
            initial=m.initial,
            name=m.name,
        )
    return Task(
        mdp,
        machine,
        gamma=draw(st.one_of(st.none(), st.floats(0, 0.999))),
        lam=draw(st.floats(0.01, 100)),
        depth=draw(st.one_of(st.none(), st.integers(1, 50), st.just("inf"))),
        max_nodes=draw(st.one_of(st.none(), st.integers(1, 9))),
        name=draw(names),
    )


@settings(max_examples=100, deadline=None)
@given(tasks())
def test_round_trip_random_tasks_with_or_without_a_machine(task):
    text = dsl.dumps(task)
    again = dsl.loads(text)
    assert again.tasks[task.name] == task and dsl.dumps(again) == text
    assert ("\n  machine " in text.split("task ")[-1]) == (task.machine is not None)


NO_MACHINE = """\
mdp one {
  states s
  actions a
  propositions P
  label P s
  start s
  gamma 0.99
  s a -> s
}

task t {
  mdp one
  lambda 0.5
}
"""


def test_a_task_may_leave_its_machine_out_until_something_needs_it():
    """The machine of a task is needed only by what reads it (the expert's policy, simulating,
    the verdicts): left out, it prints back without one, and what needs it names the place of
    the task (file, line, column) and itself."""
    doc = dsl.loads(NO_MACHINE, file="x.rm")
    task = doc.tasks["t"]
    assert task.machine is None and not doc.machines and task.lam == 0.5
    assert dsl.dumps(doc) == NO_MACHINE and dsl.loads(dsl.dumps(task)) == doc
    assert task.summary() == "task t: mdp one, no machine, gamma 0.99, lambda 0.5"
    with pytest.raises(RmtkError) as err:
        task.require_machine("simulating its expert")
    assert str(err.value) == (
        "x.rm:11:6: task 't' names no machine, and simulating its expert needs one: add a line 'machine NAME' to it"
    )
    from rmtk.product.simulate import simulate

    with pytest.raises(RmtkError, match=r"^x\.rm:11:6: task 't' names no machine, and simulating its expert"):
        simulate(task, 2, 2, seed=0)
    with pytest.raises(RmtkError, match="task 't' names no machine, and .* needs one: give Task a machine"):
        assert Task(task.mdp, name="t").letter_of_proposition is None
    with pytest.raises(RmtkError, match=r"x\.rm:11:6: error: task 't' names no mdp"):
        dsl.loads(NO_MACHINE.replace("  mdp one\n", ""), file="x.rm")
