"""Notebook display: machines and grid worlds as SVG, learning results as HTML (rmtk.io.display)."""

import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import attrs
import pytest
from example_machines import patrol

from rmtk import ExactPTP, Learner, RewardMachine, dsl
from rmtk.envs import labyrinth
from rmtk.io import display as display_module

ROOT = Path(__file__).resolve().parents[1]
SVG = "{http://www.w3.org/2000/svg}"


def _texts(element: ET.Element) -> list[str]:
    return ["".join(t.itertext()) for t in element.iter(f"{SVG}text")]


@pytest.fixture(scope="module")
def patrol_task():
    return dsl.load(ROOT / "models" / "patrol.rm").tasks["patrol"]


def test_machine_svg_is_svg_with_its_nodes_and_letters():
    m = patrol()
    root = ET.fromstring(m._repr_svg_())
    assert root.tag == f"{SVG}svg"
    texts = _texts(root)
    assert set(m.nodes) <= set(texts)
    assert "patrol" in texts and "start" in texts  # the title and the start arrow
    letters = {p for t in texts for p in re.split(r" \| | / ", t)}
    assert set(m.alphabet) <= letters and "1" in letters  # the reward of u3 -D-> u0


def test_machine_svg_escapes_names():
    m = RewardMachine.from_transitions(
        {("<u0>", "a&b"): "u\"1'", ("u\"1'", "c"): ("<u0>", 2.0)}, ["a&b", "c"], name="x<y>"
    )
    text = m._repr_svg_()
    texts = _texts(ET.fromstring(text))  # well-formed XML although the names hold markup characters
    assert {"<u0>", "u\"1'", "x<y>"} <= set(texts)
    assert any(t.startswith("a&b") for t in texts)
    assert "<u0>" not in text  # written escaped


def test_grid_world_svg_shows_its_cells(patrol_task):
    mdp = patrol_task.mdp
    root = ET.fromstring(mdp._repr_svg_())
    assert root.tag == f"{SVG}svg"
    texts = _texts(root)
    assert mdp.name in texts
    assert sorted(t for t in texts if t in mdp.propositions) == sorted(mdp.label(s) for s in range(mdp.n_states))


def test_labyrinth_svg_and_no_picture_for_an_explicit_mdp():
    maze = labyrinth(depth=3, labels=(("h", (0,)), ("w", (10,))))
    texts = _texts(ET.fromstring(maze._repr_svg_()))
    assert maze.name in texts and any(t.startswith("w (") for t in texts)
    explicit = dsl.loads("mdp m { states s; actions a; label P s; start s; s a -> s }").mdps["m"]
    assert explicit._repr_svg_() is None  # Jupyter then shows the text form


def test_learn_result_html_table_and_pictures(patrol_task):
    r = Learner(ExactPTP(3), max_nodes=4).fit(patrol_task)
    assert r.distinct_count > 1
    html = r._repr_html_()
    root = ET.fromstring(html)  # a well-formed fragment
    rows = root.findall("./table/tbody/tr")
    assert len(rows) == r.distinct_count
    iso = r.isomorphic_to_truth()
    for i, row in enumerate(rows):
        cells = ["".join(td.itertext()) for td in row.findall("td")]
        assert cells[0] == f"#{i + 1}" and cells[1] == " ".join(r.machines[i].nodes)
        assert cells[3] == str(r.verdicts[i]) and cells[4] == ("yes" if iso[i] else "no")
    pictures = list(root.iter(f"{SVG}svg"))
    assert len(pictures) == min(r.distinct_count, display_module.MAX_PICTURES)
    for m, svg in zip(r.machines, pictures):
        assert set(m.nodes) <= set(_texts(svg))
    ids = [e.get("id") for e in root.iter() if e.get("id")]
    assert len(ids) == len(set(ids))  # several inlined pictures, unique ids
    refs = set(re.findall(r"url\(#([^)]+)\)", html))
    assert refs and refs <= set(ids)  # each picture's references point into its own ids


def test_learn_result_html_escapes_and_caps_pictures(patrol_task, monkeypatch):
    r = Learner(ExactPTP(3), max_nodes=4).fit(patrol_task)
    r = attrs.evolve(r, mdp=attrs.evolve(r.mdp, name="<rooms & co>"))
    monkeypatch.setattr(display_module, "MAX_PICTURES", 1)
    html = r._repr_html_()
    root = ET.fromstring(html)
    assert "<rooms & co>" in "".join(root.find("p").itertext()) and "<rooms" not in html
    assert len(list(root.iter(f"{SVG}svg"))) == 1
    assert f"pictures of the first 1 of {r.distinct_count} machines" in html


def test_learn_result_html_without_a_machine(patrol_task):
    r = Learner(ExactPTP(6), max_nodes=2).fit(patrol_task)
    root = ET.fromstring(r._repr_html_())
    assert "".join(root.find("p").itertext()).startswith("no machine found: ")
    assert root.find("table") is None and next(root.iter(f"{SVG}svg"), None) is None


def test_display_imports_no_matplotlib():
    probe = "import sys, rmtk, rmtk.io.display; print('matplotlib' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"
