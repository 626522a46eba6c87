"""rmtk.io.rmtext: the text format of the reward_machines research code (read without eval,
written back exactly)."""

from __future__ import annotations

import numpy as np
import pytest
from example_machines import machine, patrol, tiny
from hypothesis import given, settings
from hypothesis import strategies as st

from rmtk import DataError, ModelError, RewardMachine, isomorphic
from rmtk.io.dot import to_dot
from rmtk.io.rmtext import TERMINAL, read_rm_text, write_rm_text

# ---------------------------------------------------------------------------- reward_machines text format
EXAMPLE = """\
0 # initial state
[2] # terminal state
(0,0,'!e&!n',ConstantRewardFunction(0))
(0,1,'e&!g&!n',ConstantRewardFunction(0))
(0,2,'e&g&!n',ConstantRewardFunction(1))
(1,1,'!g&!n',ConstantRewardFunction(0))
(1,2,'g&!n',ConstantRewardFunction(1))
"""


def test_read_the_official_example():
    m = read_rm_text(EXAMPLE)
    assert m.alphabet == ("e", "g", "n")
    assert m.nodes == ("u0", "u1", TERMINAL) and m.initial == 0
    # each letter alone: 'e&g&!n' never holds, uncovered pairs fall into the terminal node
    assert sorted(m.transitions()) == sorted(
        [
            ("u0", "e", "u1", 0.0),
            ("u0", "g", "u0", 0.0),
            ("u0", "n", TERMINAL, 0.0),
            ("u1", "e", "u1", 0.0),
            ("u1", "g", TERMINAL, 1.0),
            ("u1", "n", TERMINAL, 0.0),
            ("terminal", "e", TERMINAL, 0.0),
            ("terminal", "g", TERMINAL, 0.0),
            ("terminal", "n", TERMINAL, 0.0),
        ]
    )


def test_read_from_a_path_with_an_alphabet(tmp_path):
    (tmp_path / "tasks").mkdir()
    f = tmp_path / "tasks" / "t1.txt"
    f.write_text(EXAMPLE)
    for source in (f, str(f)):
        m = read_rm_text(source, alphabet=["n", "g", "e", "x"], name="office")
        assert m.name == "office" and m.alphabet == ("n", "g", "e", "x")
        # with only x true, '!e&!n' holds: u0 stays; n matches nothing: terminal
        assert m.step("u0", "x") == 0 and m.step("u0", "n") == m.node_index(TERMINAL)
    with pytest.raises(DataError, match=r"t1\.txt:3: the formula '!e&!n' uses 'e', which is not in the alphabet"):
        read_rm_text(f, alphabet=["n", "g"])


def test_read_semantics_terminal_nodes_true_false_parentheses_and_comments():
    text = """
# a comment line, then blank lines

3   # initial
[1, 7]
(3, 3, '!(a | b) & True', ConstantRewardFunction(0))   # stay
(3, 5, 'a', ConstantRewardFunction(-0.5))
(3, 1, 'b', ConstantRewardFunction(+2))
(5, 5, '!!(False | c) & NOTSc', ConstantRewardFunction(0))
(5, 7, 'a|b', ConstantRewardFunction(1e-3))
(1, 3, 'True', ConstantRewardFunction(5))
(7, 7, 'True', ConstantRewardFunction(9))
""".replace("NOTS", "!" * 2000)
    m = read_rm_text(text)
    assert m.nodes == ("u3", "u5", TERMINAL) and m.initial == 0 and m.alphabet == ("a", "b", "c")
    assert dict(((u, a), (v, r)) for u, a, v, r in m.transitions()) == {
        ("u3", "a"): ("u5", -0.5),
        ("u3", "b"): (TERMINAL, 2.0),
        ("u3", "c"): ("u3", 0.0),
        ("u5", "a"): (TERMINAL, 0.001),
        ("u5", "b"): (TERMINAL, 0.001),
        ("u5", "c"): ("u5", 0.0),
        (TERMINAL, "a"): (TERMINAL, 0.0),
        (TERMINAL, "b"): (TERMINAL, 0.0),
        (TERMINAL, "c"): (TERMINAL, 0.0),
    }
    # every pair covered and no terminal target: no terminal node is added
    full = read_rm_text(
        "0\n[]\n(0,1,'a',ConstantRewardFunction(0))\n(0,0,'!a',ConstantRewardFunction(0))\n"
        "(1,1,'True',ConstantRewardFunction(1))\n",
        alphabet=["a", "b"],
    )
    assert full.nodes == ("u0", "u1") and full.reward("u1", "b") == 1.0
    # an initial terminal node is the absorbing node
    assert read_rm_text("2\n[2]\n(2,0,'a',ConstantRewardFunction(1))\n").nodes == (TERMINAL,)


BAD = [
    ("", None, r"<string>: expected the initial node .* empty text"),
    ("x = 1\n[]\n", 1, r"<string>:1: expected the initial node \(an integer\), got 'x = 1' \(not a Python literal\)"),
    ("'0'\n[]\n", 1, r"<string>:1: expected the initial node \(a non-negative integer\), got \"'0'\""),
    ("-1\n[]\n", 1, r"expected the initial node \(a non-negative integer\)"),
    ("True\n[]\n", 1, r"expected the initial node"),
    ("0\n", 2, r"<string>:2: expected the list of terminal nodes .* end of the text"),
    ("0\n2\n", 2, r"<string>:2: expected the list of terminal nodes, e.g. \[2\] or \[\], got '2'"),
    ("0\n[1, 'a']\n", 2, r"list of terminal nodes \(non-negative integers\)"),
    ("0\n[\n", 2, r"<string>:2: expected the list of terminal nodes.*not a Python literal"),
    (
        "0\n[]\n(0,1,'a')\n",
        3,
        r"<string>:3: expected \(u1, u2, 'formula', ConstantRewardFunction\(r\)\), got \"\(0,1,'a'\)\"",
    ),
    ("0\n[]\n(0,1,'a',ConstantRewardFunction(1)\n", 3, r"<string>:3: expected \(u1, u2, .*not a Python literal"),
    ("0\n[]\n(0,'x','a',ConstantRewardFunction(1))\n", 3, r"non-negative integer nodes"),
    ("0\n[]\n(0,1.5,'a',ConstantRewardFunction(1))\n", 3, r"non-negative integer nodes"),
    ("0\n[]\n(0,1,a,ConstantRewardFunction(1))\n", 3, r"formula as a quoted string"),
    ("0\n[]\n(0,1,'a',RewardControl())\n", 3, r"ConstantRewardFunction\(<number>\)"),
    ("0\n[]\n(0,1,'a',ConstantRewardFunction(x))\n", 3, r"a finite number r"),
    ("0\n[]\n(0,1,'a',ConstantRewardFunction(1e999))\n", 3, r"a finite number r"),
    ("0\n[]\n(0,1,'a',ConstantRewardFunction(r=1))\n", 3, r"ConstantRewardFunction\(<number>\)"),
    ("0\n[]\n(0,1,'a',ConstantRewardFunction(True))\n", 3, r"a finite number r"),
    (
        "0\n[]\n(0,1,'a&',ConstantRewardFunction(1))\n",
        3,
        r"<string>:3: bad formula 'a&': expected a proposition, 'True', 'False', '!' or '\(', got the end of the "
        r"formula",
    ),
    ("0\n[]\n(0,1,'a b',ConstantRewardFunction(1))\n", 3, r"bad formula 'a b': expected '&', '\|' or the end"),
    ("0\n[]\n(0,1,'a+b',ConstantRewardFunction(1))\n", 3, r"bad formula 'a\+b': unexpected character '\+'"),
    ("0\n[]\n(0,1,'(a|b',ConstantRewardFunction(1))\n", 3, r"expected '\)', got the end of the formula"),
    ("0\n[]\n(0,1,'',ConstantRewardFunction(1))\n", 3, r"bad formula ''"),
    (
        "0\n[]\n(0,1,'" + "(" * 60 + "a" + ")" * 60 + "',ConstantRewardFunction(1))\n",
        3,
        r"bad formula '\(\(\(.*\.\.\.': parentheses nested more than 50 deep \(at character 51 of the formula\)",
    ),
    (
        "0\n[]\n(0,1,'a',ConstantRewardFunction(1))\n(0,1,'b',ConstantRewardFunction(1))\n",
        4,
        r"<string>:4: a second edge from node 0 to node 1 \(the first is at line 3\)",
    ),
    (
        "0\n[2, 3]\n(0,2,'a',ConstantRewardFunction(1))\n\n(0,3,'b',ConstantRewardFunction(1))\n",
        5,
        r"a second edge from node 0 to the terminal state",
    ),
    (
        "0\n[]\n(0,1,'a|b',ConstantRewardFunction(0))\n# note\n(0,2,'b',ConstantRewardFunction(0))\n",
        5,
        r"<string>:5: letter 'b' from node 0 matches this edge and the edge at line 3",
    ),
    ("0\n[]\n(0,0,'True',ConstantRewardFunction(0))\n", None, r"no proposition appears in the formulas"),
    ("0\n[]\n__import__('os').system('echo hi')\n", 3, r"<string>:3: expected \(u1, u2, 'formula'"),
]


@pytest.mark.parametrize("text, line, pattern", BAD, ids=[f"bad{i}" for i in range(len(BAD))])
def test_read_malformed_lines(text, line, pattern):
    with pytest.raises(DataError, match=pattern) as info:
        read_rm_text(text)
    msg = str(info.value)
    assert msg.startswith(f"<string>:{line}: " if line is not None else "<string>: ")
    assert "Traceback" not in msg and "\n" not in msg


def test_read_names_the_file_in_messages(tmp_path):
    f = tmp_path / "t1.txt"
    f.write_text("0 # initial\n[2] # terminal\n(0,1,'a',ConstantRewardFunction(0))\n(0,1)\n")
    with pytest.raises(DataError) as info:
        read_rm_text(f)
    assert str(info.value) == (f"{f}:4: expected (u1, u2, 'formula', ConstantRewardFunction(r)), got '(0,1)'")
    with pytest.raises(DataError, match=r"not a UTF-8 text file"):
        (tmp_path / "bin.txt").write_bytes(b"\xff\xfe\x00")
        read_rm_text(tmp_path / "bin.txt")
    with pytest.raises(DataError, match=r"no such file"):
        read_rm_text(tmp_path / "missing.txt")
    with pytest.raises(DataError, match=r"no file of that name exists"):
        read_rm_text(str(tmp_path / "missing.txt"))


def test_read_never_executes_code(tmp_path, capfd):
    marker = tmp_path / "pwned"
    payloads = [
        f"__import__('pathlib').Path({str(marker)!r}).touch()\n[]\n",
        f"0\n__import__('pathlib').Path({str(marker)!r}).touch()\n",
        f"0\n[]\n(0,1,'a',ConstantRewardFunction(__import__('pathlib').Path({str(marker)!r}).touch()))\n",
        f"0\n[]\n(0,1,'a',__import__('pathlib').Path({str(marker)!r}).touch())\n",
        "0\n[]\n__import__('os').system('echo hi')\n",
        "0\n[]\n" + "(" * 500 + "0" + ")" * 500 + "\n",
    ]
    for text in payloads:
        with pytest.raises(DataError):
            read_rm_text(text)
    assert not marker.exists()
    assert "hi" not in capfd.readouterr().out


def test_write_patrol_exact_text():
    assert write_rm_text(patrol()) == (
        "0 # initial state\n"
        "[] # terminal states\n"
        "(0,0,'B|C|D',ConstantRewardFunction(0))\n"
        "(0,1,'A',ConstantRewardFunction(0))\n"
        "(1,1,'A|C|D',ConstantRewardFunction(0))\n"
        "(1,2,'B',ConstantRewardFunction(0))\n"
        "(2,2,'A|B|D',ConstantRewardFunction(0))\n"
        "(2,3,'C',ConstantRewardFunction(0))\n"
        "(3,0,'D',ConstantRewardFunction(1))\n"
        "(3,3,'A|B|C',ConstantRewardFunction(0))\n"
    )


def test_write_refuses_what_the_format_cannot_express():
    m = RewardMachine.from_transitions({("u0", "a"): ("u1", 1.0), ("u0", "b"): ("u1", 2.0)}, "ab")
    with pytest.raises(ModelError, match=r"from 'u0' to 'u1' carry different rewards \(a → 1, b → 2\)"):
        write_rm_text(m)
    with pytest.raises(ModelError, match=r"letter 'a-b' cannot be written"):
        write_rm_text(RewardMachine.from_transitions({}, ["a-b"], nodes=["u0"]))
    with pytest.raises(ModelError, match=r"letter 'True' cannot be written"):
        write_rm_text(RewardMachine.from_transitions({}, ["True"], nodes=["u0"]))


@pytest.mark.parametrize("m", [patrol(), tiny(), machine(3, seed=1, k=1)], ids=["patrol", "tiny", "m3"])
def test_round_trip_known_machines(m):
    back = read_rm_text(write_rm_text(m), alphabet=m.alphabet, name=m.name)
    assert isomorphic(back, m)
    assert np.array_equal(back.delta_u, m.delta_u) and np.array_equal(back.delta_r, m.delta_r)
    assert back.initial == m.initial and back.nodes == tuple(f"u{i}" for i in range(m.n_nodes))


def test_write_with_a_terminal_node():
    m = read_rm_text(EXAMPLE)
    # from u1, g (reward 1) and n (reward 0) both lead to the terminal node
    with pytest.raises(ModelError, match=r"from 'u1' to 'terminal' carry different rewards \(g → 1, n → 0\)"):
        write_rm_text(m)
    text = write_rm_text(m, terminal=TERMINAL)
    assert text == (
        "0 # initial state\n"
        "[2] # terminal states\n"
        "(0,0,'g',ConstantRewardFunction(0))\n"
        "(0,1,'e',ConstantRewardFunction(0))\n"
        "(0,2,'n',ConstantRewardFunction(0))\n"
        "(1,1,'e',ConstantRewardFunction(0))\n"
        "(1,2,'g',ConstantRewardFunction(1))\n"
    )
    back = read_rm_text(text)
    assert back == m
    with pytest.raises(ModelError, match=r"node 'u1' cannot be the terminal node"):
        write_rm_text(m, terminal="u1")


@st.composite
def expressible_machines(draw):
    n = draw(st.integers(1, 5))
    letters = draw(
        st.lists(st.sampled_from(["a", "b", "c", "d", "e", "go", "x_1", "Z"]), min_size=1, max_size=5, unique=True)
    )
    du = draw(
        st.lists(st.lists(st.integers(0, n - 1), min_size=len(letters), max_size=len(letters)), min_size=n, max_size=n)
    )
    values = st.sampled_from([0.0, 0.0, 1.0, -1.0, 0.5, 2 / 3, 1e-7, 123456.25])
    pair_reward = draw(st.dictionaries(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), values))
    dr = [[pair_reward.get((u, v), 0.0) for v in row] for u, row in enumerate(du)]
    names = draw(st.permutations([f"n{i}" for i in range(n)]))
    return RewardMachine(
        nodes=names, alphabet=letters, delta_u=du, delta_r=dr, initial=draw(st.integers(0, n - 1)), name="h"
    )


@settings(max_examples=150, deadline=None)
@given(expressible_machines())
def test_round_trip_generated_machines(m):
    text = write_rm_text(m)
    back = read_rm_text(text, alphabet=m.alphabet, name=m.name)
    assert isomorphic(back, m)
    assert np.array_equal(back.delta_u, m.delta_u) and np.array_equal(back.delta_r, m.delta_r)
    assert back.initial == m.initial
    # with the default (sorted) alphabet the machine is the same up to letter order
    assert isomorphic(read_rm_text(text), m)
    assert to_dot(back) == to_dot(m.renamed(range(m.n_nodes), [f"u{i}" for i in range(m.n_nodes)]))


def test_write_keeps_learned_rewards_exact():
    rewards = (-0.001999999999, 98.7979798, 2 / 3, 0.1 + 0.2)
    m = RewardMachine.from_transitions(
        {
            ("u0", "a"): ("u1", rewards[0]),
            ("u0", "b"): ("u0", rewards[1]),
            ("u1", "a"): ("u0", rewards[2]),
            ("u1", "b"): ("u1", rewards[3]),
        },
        "ab",
    )
    text = write_rm_text(m)
    assert "ConstantRewardFunction(-0.001999999999)" in text and "ConstantRewardFunction(98.7979798)" in text
    assert f"ConstantRewardFunction({2 / 3!r})" in text and "ConstantRewardFunction(0.30000000000000004)" in text
    back = read_rm_text(text, alphabet=m.alphabet)
    assert np.array_equal(back.delta_r, m.delta_r)
