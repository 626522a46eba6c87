"""Progress lines: a rate is printed only once its clock has run long enough to mean something."""

import io
import time

from rmtk.progress import MIN_RATE_SECONDS, StderrProgress


def test_a_count_first_seen_mid_way_prints_no_absurd_rate():
    out = io.StringIO()
    p = StderrProgress(out, every=0.0)
    p.count(16, None, "counterexamples")  # the clock starts here: no rate yet
    assert out.getvalue().strip() == "rmtk: counterexamples: 16"


def test_a_rate_once_the_clock_has_run():
    out = io.StringIO()
    p = StderrProgress(out, every=0.0)
    p.count(0, 100, "trajectories")
    time.sleep(2 * MIN_RATE_SECONDS)
    p.count(50, 100, "trajectories")
    line = out.getvalue().strip()
    rate = float(line.split("(")[1].split("/s")[0].replace(",", ""))
    assert "50/100" in line and 0 < rate <= 50 / (2 * MIN_RATE_SECONDS) * 1.01


def test_solution_counts_agree_in_number():
    """One solution is '1 solution', not '1 solutions'; thousands are separated."""
    out = io.StringIO()
    p = StderrProgress(out, every=0.0)
    p.solution(1, 1)
    p.solution(1200, 3)
    assert out.getvalue().splitlines() == [
        "rmtk: 1 solution enumerated, 1 distinct up to renaming",
        "rmtk: 1,200 solutions enumerated, 3 distinct up to renaming",
    ]
