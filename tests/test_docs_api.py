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
    assert headings[:2] == ["Version policy", "Unreleased"]
    assert re.fullmatch(rf"{re.escape(rmtk.__version__)}( — \d{{4}}-\d\d-\d\d)?", headings[2])


def _attrs_classes():
    """Every attrs class the API reference documents (the modules its pages list)."""
    import importlib
    import importlib.util
    import inspect

    import attrs

    modules = set()
    for page in API.glob("*.rst"):
        modules |= set(re.findall(r"^\.\. automodule:: (\S+)\n   :members:", page.read_text(), flags=re.M))
    for name in sorted(modules):
        if name.startswith("rmtk.rl") or name == "rmtk.gym" or name.startswith("rmtk.gym."):
            if importlib.util.find_spec("gymnasium") is None:
                continue
        module = importlib.import_module(name)
        for value in vars(module).values():
            if inspect.isclass(value) and attrs.has(value) and value.__module__ == name:
                yield module, value


def test_attrs_signatures_show_the_defaults_their_classes_write():
    """The reference's signature of an attrs class (docs/_tools/attrs_signatures.py) shows each
    default as its class body writes it, never attrs' generated ``attr_dict['x'].default`` or
    ``NOTHING``: evaluated in the class's module, each shown default is the field's default
    (a factory's: what it makes; one that reads ``self`` is shown as written)."""
    import sys

    import attrs
    import numpy as np

    sys.path.insert(0, str(ROOT / "docs" / "_tools"))
    import attrs_signatures

    checked = 0
    for module, cls in _attrs_classes():
        sig = attrs_signatures.signature(cls.__init__)
        assert sig is not None, cls
        assert "attr_dict" not in str(sig) and "NOTHING" not in str(sig), (cls, str(sig))
        shown = {p.name: repr(p.default) for p in sig.parameters.values() if p.default is not p.empty}
        for field in attrs.fields(cls):
            if not field.init or field.default is attrs.NOTHING:
                assert field.alias not in shown, (cls, field.name)
                continue
            text = shown[field.alias]
            if isinstance(field.default, attrs.Factory):  # type: ignore[arg-type]
                if field.default.takes_self:
                    continue
                want = field.default.factory()
            else:
                want = field.default
            got = eval(text, vars(module))  # noqa: S307  (the text of our own source)
            if isinstance(want, np.ndarray):
                assert np.array_equal(got, want) and got.dtype == want.dtype, (cls, field.name, text)
            elif type(want).__eq__ is object.__eq__:  # no value equality: the same kind of object
                assert type(got) is type(want), (cls, field.name, text)
            else:
                assert got == want and type(got) is type(want), (cls, field.name, text)
            checked += 1
    assert checked > 300
    learner = str(attrs_signatures.signature(rmtk.Learner.__init__))
    assert "ptp: 'PTP | None' = ExactPTP()" in learner and "max_nodes: 'int | None' = None" in learner


def test_the_built_reference_shows_no_generated_defaults():
    """Where the site is built (.ci/run builds it before the tests), no API page shows attrs'
    generated defaults."""
    import os

    html = Path(os.environ.get("RMTK_SITE", ROOT / "docs" / "_build" / "html")) / "api"
    pages = sorted(html.glob("*.html"))
    if not pages:
        pytest.skip(f"no built API reference at {html} (.ci/run builds it)")
    shown = {p.name: len(re.findall(r"attr_dict|NOTHING", p.read_text())) for p in pages}
    assert {name: n for name, n in shown.items() if n} == {}


#: What the site's build imports in its own process: Sphinx's extensions (docs/conf.py), the
#: build's tools (docs/_tools) and every module the API reference documents; the tutorials it
#: runs add their imports (below).
_BUILD_IMPORTS = """
import sys
before = set(sys.modules)
sys.path[:0] = [{root!r}, {tools!r}]
import importlib
for name in {modules!r}:
    importlib.import_module(name)
print(" ".join(sorted({{m.split(".")[0] for m in set(sys.modules) - before}})))
"""


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _closure(requirements: list[str]) -> set[str]:
    """The distributions these requirements install, with everything they require in turn
    (read from the installed distributions' metadata, extras and markers evaluated)."""
    from importlib import metadata

    from packaging.requirements import Requirement

    wanted: dict[str, set[str]] = {}
    todo = [Requirement(r) for r in requirements]
    while todo:
        req = todo.pop()
        name = _normal(req.name)
        extras = set(req.extras)
        if name in wanted and extras <= wanted[name]:
            continue
        wanted.setdefault(name, set()).update(extras)
        try:
            requires = metadata.distribution(name).requires or []
        except metadata.PackageNotFoundError:
            continue
        for line in requires:
            sub = Requirement(line)
            if sub.marker is None or any(sub.marker.evaluate({"extra": e}) for e in wanted[name] | {""}):
                todo.append(sub)
    return set(wanted)


def test_the_docs_extra_installs_what_the_build_imports():
    """`pip install '.[docs]'` alone builds the site (README, getting started): every
    third-party distribution the build imports (its extensions, the modules of the API
    reference, the tutorials it runs) is required by rmtk or its docs extra, directly or
    through them. Tutorials needing another extra are not run by such a build
    (docs/conf.py, NEEDS_EXTRA)."""
    import ast
    import configparser
    import subprocess
    import sys
    from importlib import metadata

    pytest.importorskip("sphinx")
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    lines = cfg["options"]["install_requires"].split("\n") + cfg["options.extras_require"]["docs"].split("\n")
    installed = _closure([ln.strip() for ln in lines if ln.strip()])

    conf = (ROOT / "docs" / "conf.py").read_text()
    extensions = ast.literal_eval(re.search(r"^extensions = (\[.*\])$", conf, flags=re.M).group(1))
    documented = sorted({m for page in API.glob("*.rst") for m in re.findall(r"automodule:: (\S+)", page.read_text())})
    needs_extra = re.search(r"^NEEDS_EXTRA = \{(.*)\}$", conf, flags=re.M).group(1)
    tutorials = [p for p in sorted((ROOT / "tutorials").glob("[0-9][0-9]_*.py")) if p.name not in needs_extra]
    imported = set()
    for script in tutorials:
        for node in ast.walk(ast.parse(script.read_text())):
            if isinstance(node, ast.Import):
                imported |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module)
    tools = ["_gallery", "pictures", "attrs_signatures"]
    modules = [*extensions, "furo", *documented, *sorted(imported), *tools]
    code = _BUILD_IMPORTS.format(root=str(ROOT), tools=str(ROOT / "docs" / "_tools"), modules=modules)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    owners = metadata.packages_distributions()
    missing = {
        top: owners[top]
        for top in run.stdout.split()
        if top in owners and top != "rmtk" and not {_normal(d) for d in owners[top]} & installed
    }
    assert missing == {}
