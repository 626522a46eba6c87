"""Nothing written is silently dropped: a setting written twice is an error wherever it takes one
value, list declarations may continue over several lines, a missing ``start`` means every state
(documented), ``loads`` refuses what is not text, a depth too large to build is a message."""

import numpy as np
import pytest

from rmtk import dsl
from rmtk.cli.main import main
from rmtk.errors import DslMeaningError, RmtkError
from rmtk.mdp.model import LabeledMDP
from rmtk.ptp.tree import MAX_TREE_LEVELS, build_prefix_tree

MDP = """mdp m {{
  states s t
  actions go
  label A s
  label B t
  s go -> t
  t go -> s
{extra}}}
"""


@pytest.mark.parametrize(
    "extra,line",
    [
        ("  gamma 0.9\n  gamma 0.5\n", 9),
        ("  start s\n  start t\n", 9),
        ("  propositions A B\n  propositions A B\n", 9),
    ],
)
def test_a_one_value_setting_written_twice_is_a_located_error(extra, line):
    with pytest.raises(DslMeaningError) as err:
        dsl.loads(MDP.format(extra=extra), file="twice.rm")
    key = extra.split()[0]
    assert f"mdp 'm' sets '{key}' twice (first at line {line - 1})" in str(err.value)
    assert f"twice.rm:{line}:3" in str(err.value)


@pytest.mark.parametrize(
    "text,key",
    [
        ("mdp g = gridworld {\n map {\n A B\n }\n gamma 0.9\n gamma 0.5\n}\n", "gamma"),
        ("machine r { alphabet A; initial u0; initial u1 }\n", "initial"),
    ],
)
def test_other_blocks_refuse_repeats_too(text, key):
    with pytest.raises(DslMeaningError, match=f"'{key}'"):
        dsl.loads(text)


def test_list_declarations_continue_over_lines():
    doc = dsl.loads("mdp m {\n states s\n states t\n actions go\n label A s\n label B t\n s go -> t\n t go -> s\n}\n")
    assert doc.mdps["m"].n_states == 2


def test_without_start_every_state_starts_with_equal_probability():
    mdp = dsl.loads(MDP.format(extra="")).mdps["m"]
    assert np.allclose(mdp.initial, [0.5, 0.5])


@pytest.mark.parametrize("value,hint", [(None, "NoneType"), (b"mdp", "decode bytes first"), (3, "int")])
def test_loads_refuses_what_is_not_text(value, hint):
    with pytest.raises(RmtkError, match="loads expects the text of an .rm file") as err:
        dsl.loads(value)
    assert hint in str(err.value)


def test_a_tree_too_deep_to_build_is_a_message_not_a_hang():
    cycle = np.zeros((1, 2, 2))
    cycle[0, 0, 1] = cycle[0, 1, 0] = 1  # A B A B ...: one new pair per level, for ever
    mdp = LabeledMDP.from_dense(cycle, labels=[0, 1], propositions=["A", "B"])
    assert build_prefix_tree(mdp, 50).n_pairs == 2 * 50  # from either start state, one word of each length
    with pytest.raises(RmtkError, match=f"too large to build: at depth {MAX_TREE_LEVELS} .*depth inf"):
        build_prefix_tree(mdp, 10**30)


def test_cli_stuttering_alone_names_the_flag(capsys, models_dir):
    assert main(["learn", str(models_dir / "patrol.rm"), "--stuttering", "-q"]) == 2
    err = capsys.readouterr().err
    assert "--stuttering needs --no-compress" in err and "compress=False" not in err
