"""Sphinx configuration of rmtk's documentation site (built by .ci/run, offline, warnings as errors).

The site: the front page (index.md), getting started, the user guide (guide/*.md), the gallery
(the tutorials/ scripts, executed by sphinx-gallery at build time, with the figures they draw),
the design notes (design/*.md), the benchmarks (benchmarks/*.md), the Gymnasium bridge
(gym.md), the changelog and the API reference (api/). Markdown pages go through MyST.
Every toctree of a folder is a glob, so a page added to guide/, design/ or benchmarks/ appears
without editing an index."""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # document this checkout, not an installed copy

import rmtk  # noqa: E402

project = "rmtk"
copyright = "the rmtk authors, MIT licence"
version = release = rmtk.__version__
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "myst_parser", "sphinx_gallery.gen_gallery"]
exclude_patterns = ["_build", "_tools", "_generated", "Thumbs.db", ".DS_Store"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
# furo: a readable theme whose assets ship in its wheel (no fonts or scripts fetched at view time).
html_theme = "furo"
html_title = f"rmtk {release}"
html_static_path = ["_static"]
html_css_files = ["rmtk.css"]  # program output wraps instead of being cut (docs/_static/rmtk.css)

# MyST: headings get anchors down to level 3 (links such as guide/active.md#the-log), and
# {py:class}`rmtk.Learner`-style roles reach the API reference.
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence", "deflist"]

#: Tutorials that need an extra beyond the docs build's: the module that tells whether it is
#: installed, and what installs it. Without it the tutorial is shown with its code, not run (no
#: output, no figure), and its page says so under its title.
_RL = ("stable_baselines3", "Stable-Baselines3 and torch (``pip install '.[rl]'``)")
NEEDS_EXTRA = {"09_deep_rl.py": _RL, "10_online.py": _RL}


def _not_run() -> dict[str, str]:
    """The tutorials this build cannot run, and what they need."""
    import importlib.util

    return {name: needs for name, (module, needs) in NEEDS_EXTRA.items() if importlib.util.find_spec(module) is None}


def _executed_pattern() -> str:
    """The tutorials sphinx-gallery runs: every tutorials/NN_*.py but those whose extra is missing."""
    missing = _not_run()
    return r"/(?!" + "|".join(re.escape(m) for m in missing) + r")\d\d_" if missing else r"/\d\d_"


def _stand_in_thumbnail() -> str | None:
    """The gallery card of a tutorial not run (it drew nothing): the machine it is about,
    drawn now, instead of sphinx-gallery's placeholder. None when every tutorial runs."""
    if not _not_run():
        return None
    from rmtk import dsl
    from rmtk.io.draw import draw_machine

    out = Path(__file__).resolve().parent / "_generated"
    out.mkdir(exist_ok=True)
    coffee = dsl.load_model("office").tasks["coffee"].machine
    draw_machine(coffee, out / "not_run.png", title="not run in this build")
    return str(out / "not_run.png")


# The gallery: every tutorials/NN_*.py runs at build time; its figures are what it draws.
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "tutorials"),
    "gallery_dirs": "gallery",
    "filename_pattern": _executed_pattern(),
    "within_subsection_order": "FileNameSortKey",  # tutorial 1, 2, ... in order
    "image_scrapers": ("matplotlib", "_gallery.rmtk_figures"),
    "reset_modules": ("matplotlib", "_gallery.reset"),
    "download_all_examples": False,
    "remove_config_comments": True,
    "show_memory": False,
    "min_reported_time": 1,
    "abort_on_example_error": True,
    # its timing pages load scripts from a CDN; this site is read offline (each page shows its time)
    "write_computation_times": False,
}
_stand_in = _stand_in_thumbnail()
if _stand_in is not None:
    sphinx_gallery_conf["default_thumb_file"] = _stand_in
sys.path.insert(0, str(Path(__file__).resolve().parent / "_tools"))

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


def _draw_pictures(app):
    """The guide's pictures, by the commands the pages print (docs/_tools/pictures.py)."""
    import pictures

    pictures.draw_all()


def _say_not_run(app, docname, source):
    """The page of a tutorial this build did not run says so, and what it needs, under its title."""
    import _gallery

    for name, needs in _not_run().items():
        if docname == f"gallery/{Path(name).stem}":
            source[0] = _gallery.with_note(
                source[0],
                f"This tutorial was not run when this site was built: it needs {needs}, which the\n"
                "build did not have, so the page shows its code without output or figure. Run it\n"
                f"yourself with ``python tutorials/{name}``.",
            )


def setup(app):
    app.connect("source-read", _say_not_run)
    import attrs_signatures  # docs/_tools: an attrs class's defaults as its body writes them

    app.connect("autodoc-before-process-signature", attrs_signatures.before_signature)
    app.connect("missing-reference", _resolve_short_name)
    app.connect("builder-inited", _draw_pictures)
