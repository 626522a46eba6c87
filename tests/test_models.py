"""Model classes: validation messages, queries, canonical forms and isomorphism."""

import attrs
import numpy as np
import pytest
import scipy.sparse as sp

from rmtk import LabeledMDP, ModelError, RewardMachine, Task, isomorphic


def patrol() -> RewardMachine:
    return RewardMachine.from_transitions(
        {("u0", "A"): "u1", ("u1", "B"): "u2", ("u2", "C"): "u3", ("u3", "D"): ("u0", 1.0)}, "ABCD"
    )


def two_state_mdp(**kw) -> LabeledMDP:
    P = np.array([[[0.5, 0.5], [0.0, 1.0]]])  # one action
    return LabeledMDP.from_dense(P, ["A", "B"], **kw)


def test_machine_queries():
    m = patrol()
    assert m.run("AABCD") == [0, 1, 1, 2, 3, 0]
    assert m.final("ABC") == 3 and m.reward("u3", "D") == 1.0 and m.step(0, "B") == 0
    assert m.is_non_stuttering()
    assert sorted(m.transitions(include_defaults=False)) == [
        ("u0", "A", "u1", 0.0),
        ("u1", "B", "u2", 0.0),
        ("u2", "C", "u3", 0.0),
        ("u3", "D", "u0", 1.0),
    ]
    assert len(list(m.transitions())) == 16
    assert RewardMachine.from_dict(m.to_dict()) == m


def test_machine_arrays_are_read_only_and_hashable():
    m = patrol()
    with pytest.raises(ValueError):
        m.delta_u[0, 0] = 3
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        m.initial = 1
    assert hash(m) == hash(patrol()) and m == patrol()


def test_isomorphic_up_to_renaming_and_alphabet_order():
    m = patrol()
    renamed = m.renamed([0, 3, 1, 2], names=["a", "b", "c", "d"])
    assert renamed != m and isomorphic(m, renamed) and isomorphic(renamed, m)
    assert isomorphic(m, m.with_alphabet_order("DCBA"))
    changed = m.with_rewards(np.where(m.delta_r > 0, 2.0, 0.0))
    assert not isomorphic(m, changed) and isomorphic(m, changed, rewards=False)
    # a different structure of the same size
    other = RewardMachine.from_transitions(
        {("u0", "A"): "u1", ("u1", "B"): "u2", ("u2", "C"): "u3", ("u3", "D"): ("u1", 1.0)}, "ABCD"
    )
    assert not isomorphic(m, other)


def test_isomorphic_with_unreachable_nodes():
    a = RewardMachine.from_transitions({("u0", "A"): "u1", ("x", "A"): "u0"}, "AB", nodes=["u0", "u1", "x"])
    b = RewardMachine.from_transitions(
        {("v0", "A"): "v1", ("y", "A"): "v0"}, "AB", nodes=["y", "v0", "v1"], initial="v0"
    )
    c = RewardMachine.from_transitions({("u0", "A"): "u1", ("x", "B"): "u0"}, "AB", nodes=["u0", "u1", "x"])
    assert isomorphic(a, b) and not isomorphic(a, c)


def test_canonical_and_minimize():
    m = patrol().renamed([2, 0, 3, 1])
    c = m.canonical()
    assert c.nodes == ("u0", "u1", "u2", "u3") and c.initial == 0
    assert np.array_equal(c.delta_u, patrol().delta_u)
    # two copies of the same behaviour collapse
    dup = RewardMachine.from_transitions(
        {("u0", "A"): ("u1", 0.0), ("u1", "A"): ("u2", 1.0), ("u2", "A"): ("u1", 1.0)}, "AB"
    )
    small = dup.minimize()
    assert small.n_nodes == 2 and small.run("AAAA") == [0, 1, 1, 1, 1]
    same = RewardMachine.from_transitions({("u0", "A"): ("u1", 1.0), ("u1", "A"): ("u0", 1.0)}, "AB")
    assert same.minimize().n_nodes == 1
    assert patrol().minimize().n_nodes == 4


@pytest.mark.parametrize(
    "kwargs,pattern",
    [
        (dict(delta_u=[[0, 5]]), r"goes to an unknown node"),
        (dict(delta_u=[[0]]), r"delta_u has shape \(1, 1\), expected \(1, 2\)"),
        (dict(delta_r=[[0.0, np.inf]]), r"rewards must be finite"),
        (dict(nodes=["u", "u"], delta_u=[[0, 0], [1, 1]], delta_r=np.zeros((2, 2))), r"duplicate node name 'u'"),
        (dict(initial=3), r"initial node index 3 out of range"),
    ],
)
def test_machine_validation(kwargs, pattern):
    base = dict(nodes=["u"], alphabet=["A", "B"], delta_u=[[0, 0]], delta_r=[[0.0, 0.0]])
    base.update(kwargs)
    with pytest.raises(ModelError, match=pattern):
        RewardMachine(**base)


def test_from_transitions_errors():
    with pytest.raises(ModelError, match="letter 'Z' is not in the alphabet"):
        RewardMachine.from_transitions({("u0", "Z"): "u0"}, "AB")
    with pytest.raises(ModelError, match="unknown initial node 'q'"):
        RewardMachine.from_transitions({}, "AB", nodes=["u0"], initial="q")


def test_mdp_queries():
    mdp = two_state_mdp(initial=[1.0, 0.0])
    assert mdp.n_states == 2 and mdp.successors("s0", 0) == [(0, 0.5), (1, 0.5)]
    assert mdp.label("s1") == "B" and list(mdp.start_states) == [0]
    assert np.array_equal(mdp.P, np.array([[[0.5, 0.5], [0.0, 1.0]]]))
    assert mdp.successor_matrix().toarray().tolist() == [[True, True], [False, True]]
    assert LabeledMDP.from_dict(mdp.to_dict()) == mdp
    assert mdp.transitions.data.flags.writeable is False


@pytest.mark.parametrize(
    "change,pattern",
    [
        (dict(P=np.array([[[0.5, 0.4], [0.0, 1.0]]])), r"state 's0', action 'a0' sum to 0.9, expected 1"),
        (dict(P=np.array([[[1.5, -0.5], [0.0, 1.0]]])), r"negative or non-finite probability at state 's0'"),
        (dict(labels=["A", "C"]), r"label 'C' is not in the alphabet"),
        (dict(initial=[0.7, 0.7]), r"initial distribution sums to 1.4"),
        (dict(gamma=1.0), r"discount gamma=1.0 must lie in \[0, 1\)"),
        (dict(states=["x", "x"]), r"duplicate state name 'x'"),
    ],
)
def test_mdp_validation(change, pattern):
    kw = dict(P=np.array([[[0.5, 0.5], [0.0, 1.0]]]), labels=["A", "B"], propositions=["A", "B"])
    kw.update(change)
    with pytest.raises(ModelError, match=pattern):
        LabeledMDP.from_dense(kw.pop("P"), kw.pop("labels"), **kw)


def test_mdp_rejects_wrong_shapes():
    with pytest.raises(ModelError, match=r"expected \(2·1, 2\)"):
        LabeledMDP(
            states=["a", "b"],
            actions=["x"],
            transitions=sp.csr_array(np.eye(3)),
            labels=[0, 0],
            propositions=["P"],
            initial=[0.5, 0.5],
        )


def test_task_checks_alphabet_and_settings():
    mdp = two_state_mdp()
    m = RewardMachine.from_transitions({("u0", "A"): "u1"}, ["A"])
    with pytest.raises(ModelError, match="has no transitions on 'B', which mdp 'mdp' produces"):
        Task(mdp, m)
    m2 = RewardMachine.from_transitions({("u0", "A"): "u1"}, ["B", "A", "C"])
    t = Task(mdp, m2, lam=2.0)
    assert t.discount == mdp.gamma and list(t.letter_of_proposition) == [1, 0]
    with pytest.raises(ModelError, match="lambda=0.0 must be a positive number"):
        Task(mdp, m2, lam=0.0)
