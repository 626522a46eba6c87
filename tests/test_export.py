"""rmtk.export, kept for compatibility: it re-exports rmtk.io.dot, rmtk.io.rmtext and rmtk.draw,
and importing it (or any of them) loads neither matplotlib nor networkx."""
import subprocess
import sys
from pathlib import Path

import pytest

import rmtk.export
from rmtk import draw
from rmtk.io import dot, rmtext

ROOT = Path(__file__).resolve().parents[1]

OLD_NAMES = {
    dot: ["to_dot", "to_networkx", "edge_groups", "edge_label"],
    rmtext: ["read_rm_text", "write_rm_text", "parse_formula", "FormulaError", "TERMINAL", "MAX_FORMULA_DEPTH"],
    draw: ["draw_machine", "draw_grid", "draw_labyrinth", "grid_cells", "proposition_colours"],
}


def test_export_exposes_the_old_names():
    for module, names in OLD_NAMES.items():
        for name in names:
            assert getattr(rmtk.export, name) is getattr(module, name), name
    assert sorted(rmtk.export.__all__) == sorted(n for names in OLD_NAMES.values() for n in names)
    assert rmtk.export.write_rm_text(rmtk.export.read_rm_text("0\n[]\n(0,0,'a',ConstantRewardFunction(1))\n")) == (
        "0 # initial state\n[] # terminal states\n(0,0,'a',ConstantRewardFunction(1))\n"
    )


@pytest.mark.parametrize("module", ["rmtk.export", "rmtk.draw", "rmtk.io", "rmtk.io.dot", "rmtk.io.rmtext"])
def test_import_alone_is_cheap_and_acyclic(module):
    """Each module imports on its own in a fresh interpreter (no import cycle), without
    matplotlib or networkx."""
    probe = f"import sys, {module}; print(sorted(m for m in ('matplotlib', 'networkx') if m in sys.modules))"
    proc = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
