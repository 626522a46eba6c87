"""rmtk.io.dot: edge groups and labels (rewards rounded for reading), DOT text, networkx graphs."""

from __future__ import annotations

import pytest
from example_machines import patrol, tiny

from rmtk import RewardMachine
from rmtk.io.dot import edge_groups, edge_label, format_reward, to_dot, to_networkx

# ---------------------------------------------------------------------------- DOT
TINY_DOT = """\
digraph "tiny" {
  rankdir=LR;
  node [shape=circle];
  "__start" [shape=point, style=invis];
  "u0";
  "u1";
  "__start" -> "u0";
  "u0" -> "u0" [label="b", color=gray50, fontcolor=gray50];
  "u0" -> "u1" [label="a"];
  "u1" -> "u0" [label="b / 1"];
  "u1" -> "u1" [label="a", color=gray50, fontcolor=gray50];
}
"""


def test_to_dot_exact_text_of_a_two_node_machine():
    assert to_dot(tiny()) == TINY_DOT


def test_to_dot_without_defaults_with_title_and_grouped_letters():
    m = RewardMachine.from_transitions(
        {("u0", "a"): "u1", ("u0", "b"): "u1", ("u0", "c"): ("u1", 0.5), ("u1", "a"): ("u1", -2.0)}, "abc", name="g"
    )
    assert to_dot(m, title="grouped", show_defaults=False) == (
        'digraph "g" {\n'
        "  rankdir=LR;\n"
        '  label="grouped";\n'
        "  labelloc=t;\n"
        "  node [shape=circle];\n"
        '  "__start" [shape=point, style=invis];\n'
        '  "u0";\n'
        '  "u1";\n'
        '  "__start" -> "u0";\n'
        '  "u0" -> "u1" [label="a | b"];\n'
        '  "u0" -> "u1" [label="c / 0.5"];\n'
        '  "u1" -> "u1" [label="a / -2"];\n'
        "}\n"
    )
    # a rewarded self-loop is not a default: it stays; the 0-reward loop on b, c goes
    assert [g for g in edge_groups(m, show_defaults=False) if g[0] == g[1]] == [(1, 1, -2.0, ("a",))]


def test_to_dot_quotes_names_and_avoids_the_start_node_name():
    m = RewardMachine.from_transitions(
        {('say "hi"', "a"): ("back\\slash", 1.0)}, ["a"], nodes=['say "hi"', "back\\slash", "__start"], name='q"m'
    )
    dot = to_dot(m)
    assert dot.startswith('digraph "q\\"m" {\n')
    assert '  "say \\"hi\\"" -> "back\\\\slash" [label="a / 1"];\n' in dot
    assert '  "__start_" [shape=point, style=invis];\n' in dot and '  "__start_" -> "say \\"hi\\"";\n' in dot
    assert dot == to_dot(m)  # deterministic


# ---------------------------------------------------------------------------- networkx
def test_to_networkx_one_edge_per_node_and_letter():
    g = to_networkx(patrol())
    assert sorted(g.nodes) == ["u0", "u1", "u2", "u3"]
    assert g.number_of_edges() == 16
    assert {u: d["initial"] for u, d in g.nodes(data=True)} == {"u0": True, "u1": False, "u2": False, "u3": False}
    assert g.edges["u3", "u0", "D"] == {"letter": "D", "reward": 1.0}
    assert g.edges["u0", "u1", "A"] == {"letter": "A", "reward": 0.0}
    assert sorted(k for _, _, k in g.out_edges("u0", keys=True)) == ["A", "B", "C", "D"]
    assert g.number_of_edges("u0", "u0") == 3
    assert sum(d["reward"] for _, _, d in g.edges(data=True)) == 1.0
    assert g.graph["name"] == "patrol" and g.graph["initial"] == "u0"


# ---------------------------------------------------------------------------- rewards for reading
@pytest.mark.parametrize(
    "x, text",
    [
        (1.0, "1"),
        (0.2, "0.2"),
        (-0.001999999999, "-0.002"),
        (98.7979798, "98.798"),
        (0.0, "0"),
        (-0.0, "0"),
        (-2.0, "-2"),
        (0.30000000000000004, "0.3"),
        (2 / 3, "0.666667"),
        (0.9999999999, "1"),
        (999999.9, "1000000"),
        (123456.25, "123456"),
        (1e-7, "1e-07"),
        (1234567.0, "1234567"),
        (float("inf"), "inf"),
    ],
)
def test_format_reward_six_significant_digits(x, text):
    assert format_reward(x) == text


def test_format_reward_with_fewer_digits():
    assert format_reward(-0.0123456, 3) == "-0.0123" and format_reward(1234.5, 3) == "1230"


def test_dot_labels_round_learned_rewards():
    m = RewardMachine.from_transitions(
        {("u0", "a"): ("u1", -0.001999999999), ("u1", "a"): ("u0", 98.7979798), ("u1", "b"): ("u1", 0.2)}, "ab"
    )
    assert edge_label(("a", "b"), 98.7979798) == "a | b / 98.798"
    dot = to_dot(m)
    assert '"u0" -> "u1" [label="a / -0.002"];' in dot
    assert '"u1" -> "u0" [label="a / 98.798"];' in dot
    assert '"u1" -> "u1" [label="b / 0.2"];' in dot
    # the groups themselves keep the exact rewards
    assert (1, 0, 98.7979798, ("a",)) in edge_groups(m)
    assert to_networkx(m).edges["u0", "u1", "a"]["reward"] == -0.001999999999
