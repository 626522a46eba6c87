"""torch and Stable-Baselines3 belong to the rl extra alone: importing rmtk, its CLI,
rmtk.gym or even rmtk.rl (whose adapters import them when a model is adapted) imports neither."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "modules",
    ["rmtk", "rmtk.cli.main", "rmtk, rmtk.gym", "rmtk.gym, rmtk.rl", "rmtk.experiments.deep_rl, rmtk.experiments._dqn"],
)
def test_no_torch_after_import(modules):
    pytest.importorskip("gymnasium", reason="rmtk.gym needs gymnasium") if "gym" in modules else None
    probe = f"import sys, {modules}; print(sorted(m for m in ('torch', 'stable_baselines3') if m in sys.modules))"
    proc = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, check=False, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
