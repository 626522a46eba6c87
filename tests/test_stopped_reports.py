"""What a stopped machine learner still computes for its report: nothing a skipped phase needs."""

from __future__ import annotations

import attrs
import pytest

from rmtk import dsl
from rmtk.limits import clear_stop, request_stop


@pytest.fixture(autouse=True)
def _no_stop_left():
    yield
    clear_stop()


def test_a_stopped_fit_from_demonstrations_does_not_plan_the_experts_policy(monkeypatch):
    """The machine learner too: after a stop the verdicts are not run, and the expert's policy
    classes (a soft Bellman solve of the task for demonstrations) are not computed for them."""
    from rmtk import Learner
    from rmtk.product.simulate import simulate
    from rmtk.ptp.empirical import EmpiricalPTP
    from rmtk.sat.encoders import SatEncoder

    @attrs.frozen
    class StopAfter(SatEncoder):
        def search(self, problem, limits):
            out = super().search(problem, limits)
            request_stop("interrupted")
            return out

    def refused(self, task):
        raise AssertionError("the expert's classes were computed after the stop")

    monkeypatch.setattr(EmpiricalPTP, "expert_classes", refused)
    task = dsl.load_model("patrol").tasks["patrol"]
    demos = simulate(task, 2000, 12, seed=0)
    res = Learner(ptp=EmpiricalPTP(demos), encoder=StopAfter(), irl=None).fit(task)
    assert res.machines and res.verdicts is None
    assert res.stopped is not None and "verdict" in (res.stopped.phase, *res.stopped.skipped)
