"""Each output module imports on its own, cheaply; things live in one place (no shim re-exporting
rmtk.io.dot, rmtk.io.rmtext and rmtk.io.draw under another name)."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_no_compatibility_shim():
    assert not (ROOT / "rmtk" / "export.py").exists()
    users = [
        p for p in (ROOT / "rmtk").rglob("*.py") if "rmtk.export" in p.read_text() or "from .export" in p.read_text()
    ]
    assert users == []


@pytest.mark.parametrize("module", ["rmtk.io.draw", "rmtk.io", "rmtk.io.dot", "rmtk.io.rmtext"])
def test_import_alone_is_cheap_and_acyclic(module):
    """Each module imports on its own in a fresh interpreter (no import cycle), without
    matplotlib or networkx."""
    probe = f"import sys, {module}; print(sorted(m for m in ('matplotlib', 'networkx') if m in sys.modules))"
    proc = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, check=False, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_learning_a_model_imports_no_counting_or_lazy_search_modules():
    """``rmtk learn models/patrol.rm`` (an exact prefix tree policy, no data) imports neither the
    counting of demonstrations and reward traces nor the lazy search nor the margin LP: they are
    imported where used, which keeps the command's start-up (benchmarks/startup.py)."""
    unused = ("rmtk.ptp.empirical", "rmtk.data", "rmtk.traces.rewards", "rmtk.traces.explorers", "rmtk.sat.lazy")
    unused += ("rmtk.rewards.margin", "numpy.ma", "rmtk.experiments")  # numpy.ma: np.unique imports it
    probe = (
        "import contextlib, io, sys\n"
        "from rmtk.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['learn', 'models/patrol.rm', '-q'])\n"
        f"print(sorted(m for m in {unused!r} if m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, check=False, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"
