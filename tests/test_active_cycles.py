"""The active loop ends by itself: a round whose machines the equivalence check already found
nothing against, under the same knowledge, in this round or any earlier one, lists the
survivors instead of checking again (rmtk/active/cycles.py, docs/design/active-cycles.md).

The two instances (tests/data/active-livelock/) have more survivors than a round holds, all
policy-equivalent to the expert: from round 8 the lazy search handed over sets of machines in
turn, each checked with nothing found, until the rounds bound (500 rounds, flagged)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rmtk import ExactPTP, Learner, dsl
from rmtk.active.cycles import Verdicts
from rmtk.active.experts import TaskExpert
from rmtk.active.knowledge import Knowledge
from rmtk.active.loop import ActiveLearner
from rmtk.cli.main import main
from rmtk.sat.search import canonical_partial

LIVELOCK = Path(__file__).resolve().parent / "data" / "active-livelock"


def keys(solutions) -> set:
    return {canonical_partial(np.asarray(s.delta_u), np.asarray(s.used))[0] for s in solutions}


@pytest.mark.parametrize("name, survivors", [("big-28", 30), ("large-4", 10)])
def test_alternating_hypotheses_end_in_the_exact_answer_unflagged(name, survivors):
    task = dsl.load(LIVELOCK / f"{name}.rm").tasks["t"]
    # a bound well above what the loop needs, well below where it was stopped before
    active = ActiveLearner(max_nodes=6, max_rounds=40).fit(task, TaskExpert(task, source="distinct"))
    every = Learner(ExactPTP(None, source="distinct"), max_nodes=6, irl=None).fit(task)
    assert not active.flagged and active.exhausted is None, active.stopped
    assert "no counterexample" in active.stopped
    assert len(active.rounds) <= 15 and active.queries <= 60
    r = active.result
    assert r.search.complete and len(r.solutions) == survivors
    assert (r.n_nodes, r.distinct_count, r.raw_count) == (every.n_nodes, every.distinct_count, every.raw_count)
    assert keys(r.solutions) == keys(every.solutions)
    assert all(v.consistent for v in r.verdicts) and sum(r.isomorphic_to_truth()) == sum(every.isomorphic_to_truth())


def test_the_command_line_ends_in_a_few_rounds(capsys):
    code = main(["learn", str(LIVELOCK / "large-4.rm"), "--active", "--policy", "distinct", "-q", "--max-nodes", "6"])
    out = capsys.readouterr().out
    assert code == 0
    head = out.splitlines()[0]
    rounds = int(head.split(": ")[1].split(" rounds")[0])
    assert rounds <= 15, head
    assert "stopped: 10 machines survive that no question left tells apart" in out
    assert "rounds bound" not in out and "budget spent" not in out


def test_verdicts_hold_for_the_knowledge_they_were_checked_against():
    task = dsl.load(LIVELOCK / "large-4.rm").tasks["t"]
    know = Knowledge(task.mdp, exact=True)
    seen = Verdicts(know)
    assert not seen.covers(("a",))
    seen.checked(("a", "b"))
    seen.checked(("c",))  # nothing learned in between: the checks add up
    assert seen.covers(("a",)) and seen.covers(("c", "b")) and not seen.covers(("a", "d"))
    know.add(TaskExpert(task, source="distinct").act((0,), 0))
    assert not seen.covers(("a",))  # the knowledge changed: checked again
    seen.keep()  # ... unless what changed leaves the verdicts standing
    assert seen.covers(("a", "b", "c"))
    seen.checked(("d",))
    know.add(TaskExpert(task, source="distinct").act((0, 3), 5))
    seen.checked(("e",))
    assert seen.covers(("e",)) and not seen.covers(("d",))
