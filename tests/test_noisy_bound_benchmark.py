"""benchmarks/rewards_noisy_bound.py: its branch and bound finds the least noise that weighted
MaxSAT (NoisyRewardEncoder) finds, on small noisy Office traces (docs/benchmarks/rewards.md,
section 3)."""

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "rewards_noisy_bound.py"


@pytest.fixture(scope="module")
def bound():
    spec = importlib.util.spec_from_file_location("rewards_noisy_bound", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("case", [1])
def test_the_optimum_is_maxsat_s(bound, case):
    """Case 1 (mail, ε = 0.1, 3 nodes) failed while the possible nodes of an undecided
    transition were only those numbered so far: a bound above the optimum (51 against 50)."""
    pairs = bound.check_case(case)
    assert [m for m, _ in pairs] == [b for _, b in pairs]


def test_a_budget_stops_with_a_proven_lower_bound(bound):
    """A search stopped by its budget keeps a lower bound at most the optimum."""
    from rmtk import dsl
    from rmtk.traces.evidence import TraceRewards
    from rmtk.traces.explorers import explore

    task = dsl.load_model("office").tasks["mail"]
    demos = explore(task, 40, 30, seed=1, epsilon=1.0, noise=0.1)
    traces = TraceRewards(demos).observe(task.mdp, None, compress=True)
    full = bound.BranchAndBound(traces, 3)
    assert full.search()
    stopped = bound.BranchAndBound(traces, 3, budget=5)
    assert not stopped.search()
    assert stopped.lower_bound() <= full.best
