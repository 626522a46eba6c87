"""The documentation site (docs/), what can be checked without building it (.ci/run builds it,
with warnings as errors): every Python block of the guide and of getting started runs on its own
in a fresh namespace, as a reader copies it, and asserts what its comments claim; the fast
``rmtk`` commands of their shell blocks run; every picture's command is printed beside it;
every relative link of the markdown pages resolves, anchors included; the README's picture is
up to date; and, where a browser and a built site are at hand, the site opens without a console
error."""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rmtk import _deprecated
from rmtk.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS / "_tools"))
import pictures  # noqa: E402  (docs/_tools/pictures.py: the guide's pictures and their commands)
import readme_picture  # noqa: E402

GUIDE = sorted(p for p in (DOCS / "guide").glob("*.md") if p.name != "index.md") + [DOCS / "getting-started.md"]
#: Markdown pages whose links are checked: the site's own (not the generated gallery) and the README.
PAGES = sorted(
    p for p in DOCS.rglob("*.md") if not {"_build", "gallery", "_generated"} & set(p.relative_to(DOCS).parts)
) + [ROOT / "README.md", ROOT / "tutorials" / "README.md"]
#: What a block needs beyond the core, and the import that tells whether it is installed.
EXTRAS = {
    "rmtk.engines.dask": "distributed",
    "rmtk.gym": "gymnasium",
    "rmtk.data": None,
    "rmtk.rl": "stable_baselines3",
    "stable_baselines3": "stable_baselines3",
}


def _blocks(page: Path, lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", page.read_text(), flags=re.S | re.M)


def _shell_lines(block: str) -> list[str]:
    """A shell block's lines as the shell reads them: a line ending in a backslash continues."""
    return [" ".join(ln.split()) for ln in re.sub(r" *\\\n *", " ", block).splitlines()]


def _python_blocks():
    for page in GUIDE:
        for i, block in enumerate(_blocks(page, "python")):
            yield pytest.param(page, block, id=f"{page.stem}-{i + 1}")


@pytest.fixture
def copied_dir(tmp_path, monkeypatch):
    """A fresh folder anywhere, where a reader pastes a block: the Python blocks load the shipped
    models by name (``dsl.load_model``), never from a ``models/`` folder beside them. It holds
    tests/ alone: a page says where it reads a test instance of the repository."""
    monkeypatch.chdir(tmp_path)
    os.symlink(ROOT / "tests", tmp_path / "tests")
    # as in a fresh process: the deprecated paths not yet imported nor warned of (docs/guide/13-upgrading.md)
    monkeypatch.setattr(_deprecated, "_warned", set())
    for old in _deprecated.MODULES:
        monkeypatch.delitem(sys.modules, old, raising=False)
    return tmp_path


@pytest.fixture
def reader_dir(copied_dir):
    """The repository root as a reader's shell sees it: the commands name models/ files."""
    os.symlink(ROOT / "models", copied_dir / "models")
    return copied_dir


def test_every_guide_page_has_python_blocks_or_commands():
    assert len(GUIDE) >= 10
    for page in GUIDE:
        assert _blocks(page, "python") or _blocks(page, "bash"), page.name


@pytest.mark.parametrize(("page", "block"), list(_python_blocks()))
def test_guide_python_block_runs_alone(page, block, copied_dir):
    for module, package in EXTRAS.items():
        imports = re.search(rf"^(from {re.escape(module)}(\.\w+)* import|import {re.escape(module)}\b)", block, re.M)
        if package and imports and importlib.util.find_spec(package) is None:
            pytest.skip(f"{page.name}: this block needs {package} (an extra), not installed")
    namespace = {"__name__": "__main__"}  # a script run as a reader runs it (Dask's guard included)
    exec(compile(block, str(page.relative_to(ROOT)), "exec"), namespace)


#: Shell lines of the guide not run here, and why (the site build runs the picture commands).
SLOW = {
    "-n 10000000": "simulates 10^7 trajectories",
    "--scheduler": "needs a Dask cluster",
    "--engine dask": "starts a Dask cluster (the Python block of the same page runs one)",
    "--data": "needs the mice data, which rmtk does not ship",
    "reproduce office": "trains agents for a minute; the site build runs it for its picture",
    "reproduce sensitivity": "runs for half a minute; the site build runs it for its picture",
    "reproduce online": "trains four agents for 4,000 steps each; tests/test_online_sb3.py runs two for 1,500",
    "models/craft.rm": "the Craft World at every depth takes minutes",
}


def _shell_commands():
    for page in GUIDE:
        for block in _blocks(page, "bash"):
            lines = [ln for ln in _shell_lines(block) if ln.startswith("rmtk ")]
            if lines:
                yield pytest.param(page, lines, id=f"{page.stem}-{lines[0].split()[1]}")


@pytest.mark.parametrize(("page", "lines"), list(_shell_commands()))
def test_guide_shell_commands_run(page, lines, reader_dir, capsys):
    ran = 0
    for line in lines:
        if any(key in line for key in SLOW):
            continue
        argv = shlex.split(line)[1:]
        assert main(argv) == 0, (line, capsys.readouterr().err)
        ran += 1
    if not ran:
        pytest.skip(f"{page.name}: " + "; ".join(why for key, why in SLOW.items() if any(key in ln for ln in lines)))


def test_every_picture_is_made_by_the_command_printed_beside_it():
    """docs/_tools/pictures.py runs, for each picture, the commands a page prints next to it."""
    texts = {p: p.read_text() for p in [*GUIDE, DOCS / "index.md"]}
    for picture, commands in pictures.PICTURES.items():
        showing = [p for p, t in texts.items() if f"_generated/{picture}" in t]
        assert showing, f"no page shows {picture}"
        for page in showing:
            shown = [ln.strip() for block in _blocks(page, "bash") for ln in _shell_lines(block)]
            for command in commands:
                # the line itself, or its end after `pip install . &&` (the README's main command)
                assert any(ln == command or ln.endswith(f"&& {command}") for ln in shown), (page.name, command)


def test_the_readme_is_a_front_page():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) < 150
    # .ci/run reads the test command from the line after '# Run the tests'
    assert "# Run the main job (learn the patrol machine from the expert's exact policy)\n" in text
    assert "\n    pip install . && rmtk learn models/patrol.rm --png patrol.png --force\n" in text
    assert "# Run the tests\n    pip install '.[test]' && python -m pytest -q\n" in text
    assert len(_blocks(ROOT / "README.md", "python")) == 3  # the tour; a deep RL agent; the online loop (rl extra)
    assert text.count("![") == 1 and "(docs/images/patrol.svg)" in text


def test_the_readme_picture_is_up_to_date(tmp_path):
    """docs/images/patrol.svg is what docs/_tools/readme_picture.py draws now."""
    committed = readme_picture.PICTURE.read_text()
    import matplotlib

    drawn_with = re.search(r"Matplotlib v([\d.]+)", committed)
    if drawn_with is None or drawn_with.group(1) != matplotlib.__version__:
        pytest.skip(f"the picture was drawn with matplotlib {drawn_with and drawn_with.group(1)}, not this one")
    readme_picture.draw(tmp_path / "patrol.svg")
    assert (tmp_path / "patrol.svg").read_text() == committed, "run python docs/_tools/readme_picture.py"


def _slug(heading: str) -> str:
    """MyST's heading anchor (myst_heading_anchors): GitHub's slug of the heading text."""
    text = re.sub(r"[`*]|\{[^}]*\}", "", heading.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.S | re.M)
    return {_slug(h) for h in re.findall(r"^#{1,3} (.+)$", text, flags=re.M)}


def _target(page: Path, link: str) -> Path | None:
    """The file a relative link names; a gallery page is the tutorial it is made from."""
    path = (page.parent / link).resolve()
    if path.suffix == ".rst" and DOCS / "gallery" in path.parents:
        name = "GALLERY_HEADER.txt" if path.stem == "index" else f"{path.stem}.py"
        return ROOT / "tutorials" / name
    return path if path.exists() else None


def test_every_relative_link_resolves():
    broken = []
    for page in PAGES:
        text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.S | re.M)
        for link in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", link):
                continue  # an absolute address: not checked offline
            file, _, anchor = link.partition("#")
            target = _target(page, file) if file else page
            if target is None or not target.exists():
                broken.append(f"{page.relative_to(ROOT)}: {link}")
            elif anchor and target.suffix == ".md" and anchor not in _anchors(target):
                broken.append(f"{page.relative_to(ROOT)}: {link} (no such heading)")
    assert broken == []


def test_every_folder_of_pages_is_a_glob():
    """A page added to docs/guide, docs/design or docs/benchmarks appears without an edit."""
    for folder in ("guide", "design", "benchmarks"):
        index = (DOCS / folder / "index.md").read_text()
        assert re.search(r"```\{toctree\}\n:glob:\n(?:.*\n)*?\*\n```", index), folder
    front = (DOCS / "index.md").read_text()
    for entry in ("getting-started", "guide/index", "gallery/index", "design/index", "benchmarks/index", "api/index"):
        assert f"\n{entry}\n" in front


def _browser() -> str | None:
    return next((b for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)


@pytest.mark.parametrize(
    "page",
    ["index.html", "getting-started.html", "guide/02-exact-policy.html", "gallery/06_draw.html", "search.html"],
)
def test_the_built_site_opens_without_console_errors(page, tmp_path):
    """Where .ci/run has built the site (docs/_build/html) and a Chromium is installed."""
    html = Path(os.environ.get("RMTK_SITE", DOCS / "_build" / "html"))
    browser = _browser()
    if browser is None:
        pytest.skip("no chromium / chromium-browser / google-chrome on PATH")
    if not (html / "index.html").is_file():
        pytest.skip(f"no built site at {html} (.ci/run builds it there)")
    run = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            f"--user-data-dir={tmp_path}",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=3000",
            "--dump-dom",
            (html / page).as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "</html>" in run.stdout and 'role="main"' in run.stdout  # the page rendered
    # Chromium logs every console message, of any level, as ":CONSOLE" (an uncaught exception
    # too); the site writes none, so any one is a failure.
    console = [ln for ln in run.stderr.splitlines() if ":CONSOLE" in ln or "Uncaught" in ln]
    assert console == []


#: Folders that hold no page of ours: generated by the build, tools' caches, the VCS.
_NOT_OURS = {".git", "_build", "_generated", "gallery", "build", "dist", "__pycache__", ".mypy_cache", ".ruff_cache"}
#: Generated by the site's build from the tutorials and the guide's commands.
_BUILT = ("docs/_build", "docs/_generated", "docs/gallery", "docs/sg_execution_times.rst")


def _our_text_files() -> list[Path]:
    """Every source, page and configuration file of the repository, CHANGELOG.md aside (it
    records what each version said, paths of that time included)."""
    suffixes = {".py", ".md", ".rst", ".txt", ".cfg", ".toml", ".lark", ".rm", ".yml", ".yaml"}
    files = [ROOT / ".ci" / "run"]
    for folder, dirs, names in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in _NOT_OURS and not d.endswith(".egg-info")]
        files += [Path(folder, n) for n in names if Path(n).suffix in suffixes and n != "CHANGELOG.md"]
    return files


def test_every_docs_path_named_exists():
    """A file that names a page of docs/ (a docstring, an error message, a comment, a page)
    names one that exists: the single pages of design notes and benchmarks were split into
    numbered pages, and a reader sent to an old name finds nothing."""
    broken = []
    for file in _our_text_files():
        text = file.read_text(encoding="utf-8", errors="replace")
        where = file.relative_to(ROOT)
        for match in re.finditer(r"(?<![\w./-])docs/[\w./*-]*[\w*/]", text):
            name = match.group().rstrip("/")
            if name.startswith(_BUILT):
                continue
            found = list(ROOT.glob(name)) if "*" in name else [ROOT / name] if (ROOT / name).exists() else []
            if not found:
                broken.append(f"{where}: {name}")
        # the old single pages, named without their folder
        for match in re.finditer(r"(?<![\w/.-])(design|benchmarks)\.md\b", text):
            broken.append(f"{where}: {match.group()}")
    assert broken == []


def test_a_guide_page_says_which_way_to_learn():
    """One guide page starts from what a user has and points to the entry point and the page
    for each (docs/guide/00-choosing.md); the README and the guide's index link it."""
    (chooser,) = (DOCS / "guide").glob("*choos*.md")
    text = chooser.read_text()
    for page in ("02-exact-policy", "03-demonstrations", "04-active", "05-labels", "11-learning-from-rewards"):
        assert f"]({page}.md" in text, page
    assert "](12-deep-rl.md" in text and "](06-gymnasium.md" in text
    for entry in ("Learner", "fit_demonstrations", "ActiveLearner", "LabelLearner", "TraceRewards", "AgentExpert"):
        assert entry in text, entry
    for flag in ("--demos", "--active", "--learn-labels", "--from rewards", "--rewards"):
        assert flag in text, flag
    assert f"(docs/guide/{chooser.name})" in (ROOT / "README.md").read_text()
    assert f"({chooser.name})" in (DOCS / "guide" / "index.md").read_text()


def _matches(shown: str, printed: str) -> bool:
    """A line as a page shows it, ``…`` standing for any text (a time), against a printed one."""
    return re.fullmatch(".*?".join(re.escape(piece) for piece in shown.split("…")), printed) is not None


def test_getting_started_shows_what_the_main_command_prints(reader_dir):
    """Getting started quotes the main command's output (standard error and output, as a
    terminal interleaves them) line for line, in order, and describes its parts in that order;
    every output line its prose quotes is one the command prints."""
    page = (DOCS / "getting-started.md").read_text()
    section = page[page.index("## What came out") : page.index("The same in Python")]
    (transcript,) = _blocks(DOCS / "getting-started.md", "text")
    command, *shown = transcript.splitlines()
    assert command == "$ " + pictures.PICTURES["patrol.png"][0]  # the README's main command
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    run = subprocess.run(
        [sys.executable, "-u", "-m", "rmtk", *shlex.split(command)[2:]],
        cwd=reader_dir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=120,
    )
    printed = run.stdout.splitlines()
    assert run.returncode == 0 and len(shown) == len(printed), run.stdout
    for line, out in zip(shown, printed):
        assert _matches(line, out), (line, out)
    # the parts, described in the order they come
    parts = ["rmtk:", "# prefix tree:", "# verdict:", "# rewards", "machine learned {", "wrote patrol.png"]
    described = re.findall(r"^\d\. \*\*(.+?)\*\*", section, flags=re.M)
    assert described == ["Progress", "The counts", "The verdict", "The reward fit", "The machine", "The picture"]
    assert [next(i for i, ln in enumerate(printed) if ln.startswith(p)) for p in parts] == sorted(
        next(i for i, ln in enumerate(printed) if ln.startswith(p)) for p in parts
    )
    prose = re.sub(r"^```.*?^```", "", section, flags=re.S | re.M)
    for quoted in re.findall(r"`([^`\n]+)`", prose):
        if not re.search(r"[ ,:]", quoted) or quoted.startswith(("rmtk ", "-")):
            continue  # a word, a command, a flag
        assert any(_matches(f"…{quoted.replace('...', '…')}…", out) for out in printed), quoted


def test_getting_started_caption_says_what_the_picture_draws(reader_dir, monkeypatch):
    """The caption of the main command's picture and the picture agree on the 0-reward
    self-loops: rmtk learn --png draws them (grey), labelled with their letters."""
    from rmtk.io import draw

    drawn = []
    save = draw.save_picture
    monkeypatch.setattr(draw, "save_picture", lambda fig, *a, **k: (drawn.append(fig), save(fig, *a, **k))[1])
    assert main(shlex.split(pictures.PICTURES["patrol.png"][0])[1:] + ["-q"]) == 0
    texts = {t.get_text() for ax in drawn[0].axes for t in ax.texts}
    loops = {"B | C | D", "A | C | D", "A | B | D", "A | B | C"}  # the letters each node stays on
    page = (DOCS / "getting-started.md").read_text()
    caption = re.search(r"```\{figure\} _generated/patrol.png\n(.*?)```", page, flags=re.S).group(1)
    if loops <= texts:
        assert "grey loops" in caption and "left out" not in caption
    else:
        assert not loops & texts and "left out" in caption


def test_install_lines_work_from_a_checkout():
    """rmtk is installed from its checkout, not from a package index: the pages, the tutorials
    the benchmarks' README and rmtk's own messages and docstrings say ``pip install '.[rl]'``,
    never ``pip install 'rmtk[rl]'``."""
    files = [
        *PAGES,
        *(DOCS / "api").glob("*.rst"),
        *(ROOT / "tutorials").iterdir(),
        ROOT / "benchmarks" / "README.md",
        *(ROOT / "rmtk").rglob("*.py"),
    ]
    wrong = [
        f"{file.relative_to(ROOT)}: {match.group()}"
        for file in files
        if file.suffix in {".md", ".rst", ".py", ".txt"}
        for match in re.finditer(r"pip install ['\"]?rmtk\b\S*|\brmtk\[[\w,]+\]", file.read_text(encoding="utf-8"))
    ]
    assert wrong == []


#: The longest code line a page shows whole: furo's content column at a 1280-pixel window
#: holds 93 characters of code; a line past it is cut (scrolled), and the cut part was
#: often the comment that states the result.
CODE_WIDTH = 88
#: Pages whose code blocks are not reflowed yet (their owner rewrites them).
REFLOW_PENDING: set[str] = set()


def test_code_lines_fit_the_page():
    """Every line of the Python and shell blocks of the README, getting started, the front
    page and the guide fits the content column (program output wraps: docs/_static/rmtk.css)."""
    pages = [ROOT / "README.md", DOCS / "index.md", *GUIDE]
    long = [
        f"{page.relative_to(ROOT)}: {len(line)}: {line}"
        for page in pages
        if page.name not in REFLOW_PENDING
        for lang in ("python", "bash")
        for block in _blocks(page, lang)
        for line in block.splitlines()
        if len(line) > CODE_WIDTH
    ]
    assert long == []
    css = (DOCS / "_static" / "rmtk.css").read_text()
    assert "div.highlight-console pre" in css and "pre-wrap" in css


# ------------------------------------------------------------------ the gallery
def test_a_figure_saved_into_the_output_folder_is_shown_once(tmp_path):
    """The gallery's scraper (docs/_tools/_gallery.py) shows a Figure the tutorial keeps in a
    variable and also saved into its output folder once, as the file; a Figure it did not
    save is shown as itself."""
    pytest.importorskip("sphinx_gallery")
    import _gallery
    from matplotlib.figure import Figure

    out, images = tmp_path / "out", tmp_path / "images"
    out.mkdir()
    images.mkdir()
    _gallery.reset({}, "tutorial.py")
    saved, kept = Figure(), Figure()
    saved.subplots().plot([0, 1])
    kept.subplots().plot([1, 0])
    saved.savefig(out / "saved.png")
    names = (str(images / f"image_{i}.png") for i in range(10))
    block_vars = {"example_globals": {"OUT": out, "saved": saved, "kept": kept}, "image_path_iterator": names}
    rst = _gallery.rmtk_figures(None, block_vars, {"src_dir": str(tmp_path)})
    assert sorted(p.name for p in images.iterdir()) == ["image_0.png", "image_1.png"]  # kept; saved.png
    assert rst.count(".. image-sg::") == 2


def test_a_tutorial_not_run_says_so(monkeypatch):
    """The page of a tutorial the build cannot run (its extra is missing) says so under its
    title, with what it needs (docs/conf.py, NEEDS_EXTRA)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("rmtk_docs_conf", DOCS / "conf.py")
    conf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conf)
    monkeypatch.setattr(conf, "_not_run", lambda: {"09_deep_rl.py": "Stable-Baselines3 (``pip install '.[rl]'``)"})
    title = "Tutorial 9 — learn the reward machine of a deep RL agent"
    page = [f".. _sphx_glr_gallery_09_deep_rl.py:\n\n\n{title}\n{'=' * len(title)}\n\nGoal: ...\n"]
    conf._say_not_run(None, "gallery/09_deep_rl", page)
    head, note = page[0].split("=" * len(title) + "\n")
    assert head.endswith(title + "\n") and note.startswith("\n.. note::\n")
    assert "not run when this site was built" in note and "pip install '.[rl]'" in note
    other = ["Tutorial 8\n==========\n"]
    conf._say_not_run(None, "gallery/08_frozenlake", other)
    assert other == ["Tutorial 8\n==========\n"]


def _built_site() -> Path:
    html = Path(os.environ.get("RMTK_SITE", DOCS / "_build" / "html"))
    if not (html / "index.html").is_file():
        pytest.skip(f"no built site at {html} (.ci/run builds it there)")
    return html


def test_the_built_site_loads_nothing_from_the_network():
    """The site is read offline: no page loads a script or a style sheet from an address."""
    html = _built_site()
    remote = re.compile(r"<(?:script|link)\b[^>]*\b(?:src|href)=\"(?:https?:)?//[^\"]+\"[^>]*>")
    loading = {
        str(page.relative_to(html)): remote.findall(page.read_text(encoding="utf-8")) for page in html.rglob("*.html")
    }
    assert {page: tags for page, tags in loading.items() if tags} == {}


def test_the_built_gallery_shows_real_thumbnails_and_no_machine_paths(tmp_path):
    """No card of the gallery shows sphinx-gallery's placeholder picture, and no tutorial's
    output names a folder of the machine that built the site."""
    import tempfile

    html = _built_site()
    sphinx_gallery = pytest.importorskip("sphinx_gallery")
    from PIL import Image
    from sphinx_gallery.utils import scale_image

    placeholder = tmp_path / "placeholder.png"
    scale_image(Path(sphinx_gallery.__file__).parent / "_static" / "no_image.png", placeholder, 400, 280)
    stock = Image.open(placeholder).convert("RGB").tobytes()
    thumbs = sorted((html / "_images").glob("sphx_glr_*_thumb.png"))
    assert len(thumbs) >= 9
    assert [t.name for t in thumbs if Image.open(t).convert("RGB").tobytes() == stock] == []
    machine = {tempfile.gettempdir(), str(ROOT)}
    for page in (html / "gallery").glob("*.html"):
        text = page.read_text(encoding="utf-8")
        assert not [m for m in machine if m in text], page.name


def test_the_built_gallery_shows_each_picture_once():
    """Tutorial 6's figure of a machine and its map is shown once, alone in its cell (full
    width), not twice among the other pictures."""
    html = _built_site()
    page = (html / "gallery" / "06_draw.html").read_text(encoding="utf-8")
    images = re.findall(r'<img [^>]*src="\.\./_images/(sphx_glr_06_draw_\d+\.\w+)"[^>]*>', page)
    assert len(images) == len(set(images)) == 4  # patrol.png, patrol.svg, rooms.png, the pair
    single = re.findall(r'<img [^>]*class\s*=\s*"sphx-glr-single-img"[^>]*>', page)
    assert len(single) == 1 and images[-1] in single[0]
