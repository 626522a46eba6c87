"""Bad input to the label learner gets a clear error before any work, naming what is wrong:
settings that cannot mean anything, sizes that would allocate without bound, strategies of the
wrong kind, data of another MDP."""

from __future__ import annotations

import pytest

from rmtk import ExactPTP, Learner, dsl
from rmtk.errors import DataError, RmtkError
from rmtk.labels import LabelLearner, SmallestPairs, StateHistoryPTP


@pytest.fixture(scope="module")
def patrol():
    return dsl.load_model("patrol").tasks["patrol"]


@pytest.mark.parametrize(
    "kw,match",
    [
        (dict(props=0), "at least 1"),
        (dict(max_props=-2), "at least 1"),
        (dict(props=3, max_props=2), "max_props=2 is below props=3"),
        (dict(max_nodes=0), "at least 1"),
        (dict(nodes=65), "above rmtk's bound of 64"),
        (dict(nodes=5, max_nodes=4), "nodes=5 contradicts max_nodes=4"),
        (dict(max_solutions=-1), "at least 1"),
        (dict(time_limit=0), "positive number of seconds"),
        (dict(known={"r0c0": ""}), "state 'r0c0'.*non-empty string, got ''"),
        (dict(known={"r0c0": None}), "state 'r0c0'.*non-empty string, got None"),
        (dict(known={"r0c0": 3}), "non-empty string, got 3"),
        (dict(known=["r0c0"]), "known must map states.*got list.*use shared="),
        (dict(known="r0c0"), "known must map states"),
        (dict(shared="r0c0"), "shared must be a list of groups"),
        (dict(shared=["r0c0"]), "a single name is not a group"),
        (dict(ptp="abc"), "not a PTP strategy"),
        (dict(miner=object()), "not a negative example miner"),
        (dict(search=object()), "not a pair search"),
        (dict(ptp=ExactPTP(None), search=SmallestPairs(non_stuttering=False)), "non-stuttering"),
    ],
)
def test_settings_that_cannot_mean_anything_are_refused(kw, match):
    with pytest.raises(RmtkError, match=match):
        LabelLearner(**kw)


def test_strategy_settings_are_checked():
    with pytest.raises(RmtkError, match="negatives must be one of"):
        SmallestPairs(negatives="pairs")
    with pytest.raises(RmtkError, match="unknown SAT solver"):
        SmallestPairs(solver="nosuch")
    with pytest.raises(RmtkError, match="small_k must be a whole number of at least 0"):
        SmallestPairs(small_k=-1)
    with pytest.raises(RmtkError, match="wraps a PTP strategy.*not str 'abc'"):
        StateHistoryPTP("abc")


def test_knowledge_that_contradicts_itself_or_the_mdp(patrol):
    with pytest.raises(RmtkError, match="contradicting partial labels"):
        LabelLearner(known={"r0c0": "A", "r0c1": "B"}, shared=[("r0c0", "r0c1")]).fit(patrol)
    with pytest.raises(RmtkError, match="known label: 'nowhere' is not a state of 'rooms'"):
        LabelLearner(known={"nowhere": "A"}).fit(patrol)
    with pytest.raises(RmtkError, match="shared label: 'r9c9' is not a state"):
        LabelLearner(shared=[("r0c0", "r9c9")]).fit(patrol)
    with pytest.raises(RmtkError, match="more than props"):
        LabelLearner(props=1, known={"r0c0": "A", "r2c0": "B"}).fit(patrol)


def test_a_named_proposition_never_collides_with_a_generated_one(patrol):
    res = LabelLearner(known={"r0c0": "p1"}).fit(patrol)
    assert res.propositions == ("p1", "p2", "p3", "p4")
    assert len(set(res.propositions)) == len(res.propositions)


def test_sizes_are_checked_against_what_they_allocate(patrol, capsys):
    from rmtk.cli.main import main

    with pytest.raises(RmtkError, match="props=1000000: only 16 states are reached"):
        LabelLearner(props=1_000_000).fit(patrol)
    assert main(["learn", "models/patrol.rm", "--learn-labels", "1000000", "-q"]) == 1
    assert "--learn-labels 1000000: more propositions than the 16 states" in capsys.readouterr().err
    office = dsl.load_model("office").tasks["patrol"]
    with pytest.raises(RmtkError, match="max_nodes=64 over .* states would build a formula of about"):
        LabelLearner(max_nodes=64, nodes=64).fit(office)


def test_bad_data_and_mismatched_strategies(patrol):
    from rmtk.data.demonstrations import Demonstrations
    from rmtk.ptp.empirical import EmpiricalPTP

    demos = Demonstrations.from_lists([[(0, 0), (3, 1)], [(2, 0), (20, 1)]])
    with pytest.raises(DataError, match="trajectory 1, step 1: state index 20 .* 16 states"):
        LabelLearner(EmpiricalPTP(demos)).fit(patrol)
    with pytest.raises(RmtkError, match="state histories, not label words"):
        Learner(StateHistoryPTP(ExactPTP(None)), irl=None).fit(patrol)
    with pytest.raises(RmtkError, match="state histories, not label words"):
        Learner(StateHistoryPTP(ExactPTP(3)), irl=None).fit(patrol)

    class LabelWords:  # a PTP that ignores the state view: label words
        def build(self, target, progress):
            return ExactPTP(3).build(patrol, progress)

    with pytest.raises(RmtkError, match="keyed by label words"):
        LabelLearner(LabelWords()).fit(patrol)
    with pytest.raises(RmtkError, match="needs a Task, a LabeledMDP or a Space"):
        LabelLearner().fit("patrol")


def test_questions_of_another_loop_are_refused(patrol):
    import types

    with pytest.raises(RmtkError, match="no questions and answers"):
        LabelLearner().fit_questions(types.SimpleNamespace(result=types.SimpleNamespace(oracle=None)), patrol)
    with pytest.raises(RmtkError, match="fit_questions needs the Task or the LabeledMDP"):
        LabelLearner().fit_questions(None, "patrol")
