"""``rmtk reproduce NAME --set KEY=VALUE``: every number an experiment reads declares the values
it accepts, and a bad value is refused under the key the user typed, before any work."""

import subprocess
import sys

import pytest

from rmtk.errors import RmtkError
from rmtk.experiments import EXPERIMENTS, Options, Setting, run
from rmtk.experiments._report import COUNT, LEVEL, POSITIVE, Domain


def _settings():
    for name, exp in EXPERIMENTS.items():
        for key, setting in exp.settings.items():
            yield name, key, setting


@pytest.mark.parametrize("name,key,setting", list(_settings()), ids=lambda v: v if isinstance(v, str) else "")
def test_every_number_declares_its_domain_and_its_defaults_lie_in_it(name, key, setting):
    if isinstance(setting.default, (int, float)) and not isinstance(setting.default, bool):
        assert setting.domain is not None, f"{name}: setting {key} reads a number but declares no domain"
    for value in (setting.default, setting.quick):
        if value is not None:
            assert setting.check(key, value) == value


@pytest.mark.parametrize(
    "experiment,assignment,expected",
    [
        ("suboptimal", "concentration=-1", "setting concentration: expected a number above 0, got -1.0"),
        ("suboptimal", "concentration=0", "setting concentration: expected a number above 0, got 0.0"),
        ("office", "runs=0", "setting runs: expected a number at least 1, got 0"),
        ("office", "every=0", "setting every: expected a number at least 1, got 0"),
        ("office", "horizon=0", "setting horizon: expected a number at least 1, got 0"),
        ("office", "episodes=-5", "setting episodes: expected a number at least 1, got -5"),
        ("office", "epsilon=1.5", "setting epsilon: expected a number in [0, 1], got 1.5"),
        ("sensitivity", "ptp_depth=0", "setting ptp_depth: expected a number at least 1, got 0"),
        ("transfer", "test_length=0", "setting test_length: expected a number at least 1, got 0"),
        ("transfer", "test_trajectories=-1", "setting test_trajectories: expected a number at least 1, got -1"),
        ("mice", "alpha=1", "setting alpha: expected a number in (0, 1), got 1.0"),
        ("tables", "stack_lambda=0", "setting stack_lambda: expected a number above 0, got 0.0"),
        ("reacher", "integrator=midpoint", "setting integrator: expected one of rk4, euler, got 'midpoint'"),
        ("reacher", "workers=0", "setting workers: expected a number at least 1, got 0"),
    ],
)
def test_a_bad_setting_is_refused_under_its_key_before_any_work(experiment, assignment, expected):
    key, value = assignment.split("=")
    with pytest.raises(RmtkError) as err:
        run(experiment, Options(overrides={key: value}))
    assert str(err.value) == expected


def test_the_command_line_says_the_same_without_a_traceback():
    proc = subprocess.run(
        [sys.executable, "-m", "rmtk", "reproduce", "office", "--set", "runs=0"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "setting runs: expected a number at least 1, got 0" in proc.stderr


def test_domains_name_their_bounds():
    assert COUNT.why_not(1) is None and COUNT.why_not(0) == "a number at least 1"
    assert POSITIVE.why_not(1e-9) is None and POSITIVE.why_not(0.0) == "a number above 0"
    assert LEVEL.why_not(0.5) is None and LEVEL.why_not(0.0) == "a number in (0, 1)"
    assert Domain(low=0, high=1, high_open=True).why_not(1.0) == "a number in [0, 1)"
    assert COUNT.why_not(float("nan")) == "a number at least 1"
    assert Setting(3, "x", domain=COUNT).check("x", 3) == 3
