"""The grammar and shipped models are package data: they load from an installed copy."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

PROBE = """
import json, pathlib, rmtk
from importlib import resources
from rmtk import dsl
from rmtk.dsl.parser import grammar_text
doc = dsl.loads(resources.files("rmtk.models").joinpath("patrol.rm").read_text())
top = pathlib.Path(rmtk.__file__).parent
packages = sorted(str(p.parent.relative_to(top.parent)) for p in top.rglob("__init__.py"))
print(json.dumps({"file": rmtk.__file__, "grammar": len(grammar_text()),
                  "grammar_in_package": resources.files("rmtk.grammars").joinpath("rmtk.lark").is_file(),
                  "nodes": doc.machines["patrol"].n_nodes, "packages": packages}))
"""


def _source_packages():
    """Every package of the source tree (a folder of rmtk/ with an ``__init__.py``)."""
    return sorted(str(p.parent.relative_to(ROOT)) for p in (ROOT / "rmtk").rglob("__init__.py"))


def test_installed_copy_has_grammar_and_models(tmp_path):
    where = subprocess.run(
        [sys.executable, "-c", "import rmtk; print(rmtk.__file__)"], cwd=tmp_path, capture_output=True, text=True
    )
    if where.returncode != 0:
        pytest.skip("rmtk is not installed (only the source tree is importable)")
    if Path(where.stdout.strip()).resolve().is_relative_to(ROOT):
        pytest.skip("rmtk is installed in editable mode; CI checks the non-editable install")
    proc = subprocess.run([sys.executable, "-c", PROBE], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    assert info["grammar_in_package"] and info["grammar"] > 1000 and info["nodes"] == 4
    assert info["packages"] == _source_packages()


def test_build_ships_py_typed_grammar_and_models(tmp_path):
    """What setuptools puts in a wheel (its ``build_py`` step, no network or ``wheel`` package
    needed): the marker that tells type checkers rmtk's annotations are its API
    (``py.typed``), beside the grammar and the models."""
    import shutil

    src = tmp_path / "src"
    src.mkdir()
    for name in ("setup.cfg", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for name in ("rmtk", "grammars", "models"):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    build = [sys.executable, "-c", "import setuptools; setuptools.setup()", "-q", "build_py", "--build-lib", "lib"]
    proc = subprocess.run(build, cwd=src, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    files = {p.relative_to(src / "lib").as_posix() for p in (src / "lib").rglob("*") if p.is_file()}
    assert {"rmtk/py.typed", "rmtk/grammars/rmtk.lark", "rmtk/models/patrol.rm", "rmtk/io/display.py"} <= files
    # every module of the source tree is in the build: a folder missing from setup.cfg's
    # ``packages`` would install an rmtk that fails at its first use of that folder
    modules = {p.relative_to(ROOT).as_posix() for p in (ROOT / "rmtk").rglob("*.py")}
    assert sorted(modules - files) == []
