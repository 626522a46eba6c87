"""Every step of the label learner checks the run's deadline (the search, the enumeration, the
free states, the verdicts): a run stopped by a time limit or a stop request returns what it
has, and names what it did not finish."""

from __future__ import annotations

import time

import attrs
import pytest

from rmtk import dsl
from rmtk.labels import LabelLearner, SmallestPairs
from rmtk.limits import clear_stop, request_stop


@pytest.fixture(autouse=True)
def _no_stop_left():
    yield
    clear_stop()


@attrs.frozen
class StopAfterSearch(SmallestPairs):
    """rmtk's pair search, then a stop request (as SIGINT would make one): every later step
    finds its deadline passed."""

    def search(self, *args):
        out = super().search(*args)
        request_stop("interrupted")
        return out


def test_a_stop_after_the_search_leaves_free_states_and_verdicts_undone_and_named():
    task = dsl.load_model("patrol").tasks["patrol"]
    res = LabelLearner(search=StopAfterSearch()).fit(task)
    assert (res.n_nodes, res.n_props, len(res.solutions)) == (4, 4, 1) and res.search.complete
    assert res.solutions[0].free is None and res.free(0) is None
    assert res.verdicts == (None,) and res.truth_survives is None
    assert not res.complete
    assert res.unfinished == (
        "verdicts of 1 of 1 pairs (interrupted)",
        "whether the truth survives (interrupted)",
        "free states of 1 of 1 pairs (interrupted)",
    )


def test_a_stopped_fit_does_not_solve_for_the_experts_classes(monkeypatch):
    """The expert's policy classes serve the verdicts only: after a stop no pair is judged, so
    the soft Bellman solve that gives them (half a second on the Craft World) is not made."""
    from rmtk.labels.histories import StateHistoryPTP

    def refused(self, task):
        raise AssertionError("the expert's classes were computed after the stop")

    monkeypatch.setattr(StateHistoryPTP, "expert_classes", refused)
    task = dsl.load_model("patrol").tasks["patrol"]
    res = LabelLearner(search=StopAfterSearch()).fit(task)
    assert res.verdicts == (None,) and res.truth_survives is None


def test_the_report_says_what_was_not_finished(capsys):
    from rmtk.labels.report import label_report

    task = dsl.load_model("patrol").tasks["patrol"]
    res = LabelLearner(search=StopAfterSearch()).fit(task)
    label_report(task, res)
    out = capsys.readouterr().out
    assert "# not finished: verdicts of 1 of 1 pairs (interrupted); whether the truth survives" in out
    assert "# pair 1: free states not computed" in out and "# verdict: not computed" in out
    assert dsl.loads(out).tasks["learned_1"].mdp.n_states == 16  # still loadable


def test_demonstrations_with_a_time_limit_return_in_time_flagged():
    """State-only demonstrations of a soft expert, enough for many survivors: with a time limit
    the whole fit (search, enumeration, free states, verdicts) returns within it and a little,
    and says what it did not finish."""
    from rmtk.product.simulate import simulate
    from rmtk.ptp.empirical import EmpiricalPTP

    task = dsl.load_model("patrol").tasks["patrol"]
    task = attrs.evolve(task, machine=task.machine.with_rewards(task.machine.delta_r * 10.0))
    demos = simulate(task, 10_000, 10, seed=0)
    t0 = time.monotonic()
    res = LabelLearner(EmpiricalPTP(demos), time_limit=1.0).fit(task)
    took = time.monotonic() - t0
    assert took < 1.0 + 2.0, took  # the tree of the demonstrations is built before the clock matters little
    assert not res.complete and res.unfinished
    assert res.n_nodes is None or len(res.solutions) >= 1


def test_an_enumeration_cut_by_the_time_limit_lists_what_it_found():
    """Exactly 6 nodes on patrol (two more than needed): the pairs are too many to list; a time
    limit ends the enumeration, the pairs found are listed, flagged, the summary says "≥N"."""
    task = dsl.load_model("patrol").tasks["patrol"]
    t0 = time.monotonic()
    res = LabelLearner(nodes=6, time_limit=2.0, freedom=False).fit(task)
    took = time.monotonic() - t0
    assert took < 2.0 + 2.0, took
    assert res.n_nodes == 6 and len(res.solutions) >= 1 and not res.search.complete
    assert res.search.stopped == "time limit" and "search (time limit)" in res.unfinished
    assert res.summary().count.startswith("≥")
