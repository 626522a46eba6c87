"""The online loop imports neither torch nor Stable-Baselines3 until a model, a buffer or a callback
is made: importing rmtk.rl.online, its experiment or its tasks does not (as tests/test_rl_imports.py
checks for rmtk.rl)."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "modules", ["rmtk.rl.online", "rmtk.rl.online.tasks, rmtk.rl.online.checkpoint", "rmtk.experiments.online"]
)
def test_online_imports_no_torch(modules):
    pytest.importorskip("gymnasium", reason="rmtk.rl needs gymnasium")
    probe = f"import sys, {modules}; print(sorted(m for m in ('torch', 'stable_baselines3') if m in sys.modules))"
    proc = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, check=False, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
