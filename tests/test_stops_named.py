"""Loose ends of the active and label surfaces: a backend without preferred phases gives the
same answer, a huge depth is refused before any work, a stop is named for what stopped it, a
missing bound has a default, a node bound that is the reason a search fails says so, and an
empty recording is refused."""

from __future__ import annotations

import time
from pathlib import Path

import attrs
import pytest

from rmtk import dsl
from rmtk.cli.main import main
from rmtk.errors import ModelError, RmtkError
from rmtk.labels.learner import LabelLearner
from rmtk.labels.search import SmallestPairs
from rmtk.sat.solver import SOLVERS, takes_phases

MODELS = Path(__file__).resolve().parents[1] / "models"


def patrol():
    return dsl.load_model("patrol").tasks["patrol"]


# ------------------------------------------------------------- a solver without phases
def test_which_backends_take_preferred_phases():
    assert not takes_phases("cadical103")
    assert takes_phases("cadical153") and takes_phases("glucose4")
    with pytest.raises(RmtkError, match="kissat404"):
        takes_phases("kissat404")
    assert {s for s in SOLVERS if not takes_phases(s)} == {"cadical103"}


def test_labels_learned_with_a_backend_without_phases_are_the_same():
    def learned(solver):
        res = LabelLearner(search=SmallestPairs(solver=solver)).fit(patrol())
        return (res.n_nodes, res.n_props, sorted(tuple(s.labels.tolist()) for s in res.solutions))

    assert learned("cadical103") == learned("cadical153")


def test_labels_asked_actively_with_a_backend_without_phases(capsys):
    args = ["learn", str(MODELS / "patrol.rm"), "--learn-labels", "--active", "--solver", "cadical103", "-q"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "with 4 nodes and 4 propositions" in out and "truth survives: yes" in out


# ------------------------------------------------------------- a huge depth
HUGE = "1000000000000000000000000000000"


def test_a_huge_depth_is_refused_at_its_line_before_any_work(tmp_path, capsys):
    text = (MODELS / "patrol.rm").read_text()
    line = next(i for i, x in enumerate(text.splitlines(), 1) if x.strip().startswith("depth"))
    path = tmp_path / "deep.rm"
    path.write_text(text.replace("depth 6 ", f"depth {HUGE} ", 1))
    with pytest.raises(RmtkError, match=rf"deep.rm:{line}:\d+: .*task 'patrol': depth {HUGE} is beyond the 5,000"):
        dsl.load(path)
    t0 = time.perf_counter()
    assert main(["learn", str(path)]) == 1
    assert time.perf_counter() - t0 < 10  # refused, not a tree built to depth 31 first
    err = capsys.readouterr().err
    assert f"deep.rm:{line}:" in err and "task 'patrol'" in err and "depth inf" in err


def test_a_huge_depth_is_refused_by_the_task_and_the_tree_strategy():
    from rmtk import ExactPTP

    with pytest.raises(ModelError, match="task 'patrol': depth .* beyond the 5,000 levels"):
        attrs.evolve(patrol(), depth=10**30)
    with pytest.raises(RmtkError, match="beyond the 5,000 levels"):
        ExactPTP(depth=10**30)
    assert attrs.evolve(patrol(), depth=5000).depth == 5000  # the bound itself is a depth a tree may reach


# ------------------------------------------------------------- the stop named
def test_a_budget_spent_before_any_answer_is_named_not_blamed_on_the_mdp(capsys):
    code = main(["learn", str(MODELS / "patrol.rm"), "--learn-labels", "--active", "--budget-queries", "1", "-q"])
    captured = capsys.readouterr()
    assert "no history reaches a state" not in captured.out + captured.err
    assert "# budget spent (queries)" in captured.out
    assert "# not finished: questions (budget spent (queries))" in captured.out
    assert "stopped (budget spent (queries)) before any history was answered" in captured.out
    assert code == 1  # nothing learned: no pair printed


def test_labels_from_a_stopped_loop_are_flagged_with_its_stop():
    from rmtk.active.asking import Budget
    from rmtk.active.experts import TaskExpert
    from rmtk.active.loop import ActiveLearner
    from rmtk.labels.histories import state_task

    st = state_task(patrol())
    for queries, pairs in ((1, False), (5, True)):
        active = ActiveLearner(budget=Budget(queries=queries), irl=None).fit(st, TaskExpert(st))
        res = LabelLearner().fit_questions(active, patrol())
        assert active.ended == "budget spent (queries)"
        assert res.unfinished[0] == "questions (budget spent (queries))" and not res.complete
        assert bool(res.solutions) == pairs


# ------------------------------------------------------------- nothing recorded
def test_an_expert_with_nothing_recorded_is_refused_not_answered():
    from rmtk.active.experts import RecordedExpert
    from rmtk.active.loop import ActiveLearner
    from rmtk.product.simulate import simulate

    t = patrol()
    with pytest.raises(RmtkError, match="RecordedExpert answers no queries and its recording holds no"):
        ActiveLearner().fit(t, RecordedExpert(t.mdp, None))
    demos = simulate(t, 50, 6, seed=0)
    given = ActiveLearner(max_nodes=3).fit(t.mdp, RecordedExpert(t.mdp, None), data=demos)  # the data given to fit
    assert given.stopped == "the expert answers no queries: the survivors of the recorded data" and given.known > 0


# ------------------------------------------------------------- the node bound named
def test_a_search_that_fails_within_the_default_bound_names_it():
    from rmtk import ExactPTP, Learner

    task = attrs.evolve(dsl.load_model("office").tasks["coffee_mail"], max_nodes=None)  # its machine has 5 nodes
    res = Learner(ExactPTP(None), irl=None).fit(task)
    msg = res.search.message
    assert res.n_nodes is None and msg.startswith("no machine with ")
    assert "the bound of 4 nodes is rmtk's default (no max_nodes given, none suggested by a task)" in msg
    assert "max_nodes=N (--max-nodes N)" in msg
    assert Learner(ExactPTP(None), irl=None, max_nodes=5).fit(task).n_nodes == 5  # raised, it is found


def test_a_bound_given_or_suggested_is_named_as_such():
    from rmtk import ExactPTP, Learner

    task = dsl.load(Path(__file__).resolve().parent / "data" / "active-livelock" / "large-4.rm").tasks["t"]
    given = Learner(ExactPTP(None, source="distinct"), irl=None, max_nodes=3).fit(task)
    assert "the bound of 3 nodes is the max_nodes given" in given.search.message
    suggested = Learner(ExactPTP(None, source="distinct"), irl=None).fit(attrs.evolve(task, max_nodes=2))
    assert "the bound of 2 nodes is the max_nodes of task 't'" in suggested.search.message


# ------------------------------------------------------------- labels from a sampled expert
def test_labels_asked_of_a_sampled_expert_have_a_default_bound(monkeypatch, capsys):
    import rmtk.cli.args as cli_args
    from rmtk.cli.learn import prepare_learn
    from rmtk.cli.main import build_parser

    base = ["learn", str(MODELS / "patrol.rm"), "--learn-labels", "--active", "--expert", "simulated"]
    plan = prepare_learn(build_parser().parse_args(base))
    assert plan.learner.budget.draws == cli_args.LABELS_SAMPLED_DRAWS == plan.default_draws
    assert plan.labels.max_solutions == cli_args.LABELS_ACTIVE_SOLUTIONS  # and the pairs listed
    given = prepare_learn(build_parser().parse_args([*base, "--budget-queries", "100"]))
    assert given.learner.budget.draws is None and given.default_draws is None  # the user's budget is the bound
    exact = prepare_learn(build_parser().parse_args(base[:-2]))
    assert exact.learner.budget.draws is None and exact.labels.max_solutions is None  # it ends by itself
    monkeypatch.setattr(cli_args, "LABELS_SAMPLED_DRAWS", 20_000)  # the default, at a small scale
    main([*base, "-q"])
    out = capsys.readouterr().out
    head = out.splitlines()[0]
    assert head.startswith("# active learning on state histories:")
    assert "# budget spent (draws): the pairs below fit what was asked so far" in out
    assert "the draws budget was the default of --learn-labels --active --expert simulated, 20,000 draws" in out
    assert "# not finished: questions (budget spent (draws))" in out
    assert out.count("\nmachine ") <= cli_args.LABELS_ACTIVE_SOLUTIONS
