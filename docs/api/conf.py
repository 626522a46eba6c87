"""Sphinx configuration of rmtk's API reference (built by .ci/run; see index.rst)."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # document this checkout, not an installed copy

import rmtk  # noqa: E402

project = "rmtk"
version = release = rmtk.__version__
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon"]
exclude_patterns = ["_build"]
html_theme = "alabaster"
html_static_path: list[str] = []

# Google-style docstrings ("Attributes:", "Args:", "Returns:").
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_ivar = True

autodoc_member_order = "bysource"
# Document each object once, in the module that defines it (a package's __all__ re-exports).
autodoc_default_options = {"ignore-module-all": True}
autodoc_typehints = "signature"
autodoc_preserve_defaults = True
# Every cross-reference to rmtk must resolve, so that a renamed or removed symbol breaks the
# build (sphinx-build -W -n). The build is offline (no intersphinx): references into other
# libraries cannot be resolved and are not checked.
nitpicky = True
nitpick_ignore = [("py:class", "rmtk.engines.shards.T")]  # a type variable, not a documented object
nitpick_ignore_regex = [
    (
        r"py:.*",
        r"(numpy|np|scipy|matplotlib|networkx|nx|gymnasium|gym|dask|distributed|pyarrow|pysat|lark|attrs|"
        r"threadpoolctl|mujoco|collections\.abc|os|pathlib|io|concurrent|json|ast|itertools|functools|typing)(\..*)?",
    ),
    (r"py:.*", r"(rmtk\..*\.)?_\w+"),  # private names are not documented
    (r"py:.*", r"(ndarray|NDArray|Figure|Axes|PathLike|Path|SeedSequence|Generator|Client|Env|VectorEnv|Space)"),
]
# Members that override a third-party method without a docstring (Gymnasium's step, reset)
# would otherwise show that library's docstring, which is not ours to keep valid.
autodoc_inherit_docstrings = False


def _resolve_short_name(app, env, node, contnode):
    """Resolve an rmtk name written short when exactly one documented object fits it: ``Task``
    or ``LocalEngine.map_reduce`` (any documented rmtk object ending so), ``rmtk.gym.Bins`` (a
    name a package re-exports from one of its modules), and annotations of names imported under
    ``TYPE_CHECKING``. Anything else stays unresolved, and -n -W fail the build on it."""
    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"].lstrip("~.")
    domain = env.get_domain("py")
    package, rest = "rmtk", target
    if target.startswith("rmtk."):  # the longest documented module the target starts with, and the rest
        parts = target.split(".")
        cut = max(i for i in range(1, len(parts)) if ".".join(parts[:i]) in domain.modules or i == 1)
        package, rest = ".".join(parts[:cut]), ".".join(parts[cut:])

    def fits(full: str) -> bool:
        return full.startswith(package + ".") and full.endswith("." + rest)

    kinds = set(domain.objtypes_for_role(node["reftype"]) or ())
    matches = [
        full
        for full, entry in domain.objects.items()
        if fits(full) and entry.objtype in kinds and not getattr(entry, "aliased", False)
    ]
    if len(matches) != 1:
        return None
    return domain.resolve_xref(env, node["refdoc"], app.builder, node["reftype"], matches[0], node, contnode)


def setup(app):
    app.connect("missing-reference", _resolve_short_name)
