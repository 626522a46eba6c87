"""The habits CI checks: the API reference covers the public API, mypy checks it, and the
changelog has the current version."""

import re
from pathlib import Path

import pytest

import rmtk

ROOT = Path(__file__).resolve().parents[1]
API = ROOT / "docs" / "api"
#: Public-API modules not yet type-checked (each one named in the comment above pyproject.toml's [tool.mypy]).
MYPY_PENDING: set[str] = set()


def _module_of(name: str) -> str:
    return getattr(rmtk, name).__module__


def test_every_exported_name_is_in_the_reference():
    documented = set()
    for page in API.glob("*.rst"):
        documented |= set(re.findall(r"^\.\. automodule:: (\S+)\n   :members:", page.read_text(), flags=re.M))
    missing = [n for n in rmtk.__all__ if _module_of(n) not in documented]
    assert missing == []
    undocumented = [n for n in rmtk.__all__ if not (getattr(rmtk, n).__doc__ or "").strip()]
    assert undocumented == []


def test_docs_build_is_strict_and_offline():
    conf = (ROOT / "docs" / "conf.py").read_text()
    assert "nitpicky = True" in conf and "sphinx.ext.intersphinx" not in conf
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"sphinx .*-n -W .* docs docs/_build/html\n", ci)  # the whole site
    for check in ("ruff check .", "ruff format --check .", "run mypy mypy"):
        assert check in ci


def test_mypy_checks_the_public_api():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11 and later
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    files = set(config["files"])
    modules = {_module_of(n).replace(".", "/") + ".py" for n in rmtk.__all__} | {"rmtk/__init__.py"}
    assert modules - files == MYPY_PENDING
    assert all((ROOT / f).is_file() for f in files)
    assert (ROOT / "rmtk" / "py.typed").is_file()


def test_changelog_has_the_version_and_the_policy():
    text = (ROOT / "CHANGELOG.md").read_text()
    headings = re.findall(r"^## (.+)$", text, flags=re.M)
    assert headings[:3] == ["Version policy", "Unreleased", rmtk.__version__]
