"""The Craft World (models/craft.rm): the map's dynamics and labels checked against its raw
text, the ten tasks against the reward_machines files they come from (read here by an
evaluator of their own, not rmtk.io.rmtext), t1 learned at every depth, the generator's errors,
and the quick reproduction."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from rmtk import ModelError, dsl
from rmtk.envs.craft import craftworld
from rmtk.experiments import Options, run
from rmtk.learner.pipeline import ExactPTP, Learner
from rmtk.task import EVERY_DEPTH

ROOT = Path(__file__).resolve().parents[1]
DATA = Path("/work/shared/data/craft")


@pytest.fixture(scope="module")
def doc():
    return dsl.load(ROOT / "models" / "craft.rm")


@pytest.fixture(scope="module")
def raw_map() -> list[str]:
    """The map's rows as written in models/craft.rm (the quoted lines), or the data file."""
    if (DATA / "map_0.txt").exists():
        return (DATA / "map_0.txt").read_text().splitlines()
    return re.findall(r'^\s*"([^"]*)"\s*$', (ROOT / "models" / "craft.rm").read_text(), flags=re.M)


def test_map_states_labels_and_start(doc, raw_map):
    mdp = doc.mdps["craft"]
    assert (len(raw_map), len(raw_map[0])) == (41, 41)
    assert mdp.n_states == 1521 and mdp.actions == ("up", "right", "down", "left")
    assert mdp.propositions == tuple("abcdefgh") + ("o",)
    # every free cell of the text is a state r{row}c{col} labeled by its letter ('o' when empty)
    cells = {f"r{r}c{c}": ch for r, row in enumerate(raw_map) for c, ch in enumerate(row) if ch != "X"}
    assert set(mdp.states) == set(cells)
    for s, name in enumerate(mdp.states):
        ch = cells[name]
        assert mdp.label(s) == (ch if ch.islower() else "o")
    counts = {p: sum(mdp.label(s) == p for s in range(mdp.n_states)) for p in mdp.propositions}
    objects = {p: sum(row.count(p) for row in raw_map) for p in "abcdefgh"}
    assert counts == objects | {"o": 1521 - sum(objects.values())}
    (start,) = mdp.start_states
    r, c = next((r, row.index("A")) for r, row in enumerate(raw_map) if "A" in row)
    assert mdp.states[start] == f"r{r}c{c}" and mdp.label(start) == "o" and mdp.gamma == 0.99


def test_moves_against_the_raw_text(doc, raw_map):
    mdp = doc.mdps["craft"]
    index = {name: s for s, name in enumerate(mdp.states)}
    steps = {"up": (-1, 0), "right": (0, 1), "down": (1, 0), "left": (0, -1)}
    for name in ("r20c20", "r1c1", "r39c39", "r1c20", "r25c27", "r36c1"):  # start, corners, walls, objects
        r, c = map(int, re.match(r"r(\d+)c(\d+)", name).groups())
        for a, (dr, dc) in steps.items():
            to = f"r{r + dr}c{c + dc}" if raw_map[r + dr][c + dc] != "X" else name  # a wall: stay
            assert dict(mdp.successors(index[name], mdp.actions.index(a))) == {index[to]: 1.0}, (name, a)


def _raw_task(path: Path):
    """(initial, terminal nodes, edges) of a reward_machines file, by this test's own reading."""
    lines = [ln.split("#")[0].strip() for ln in path.read_text().splitlines()]
    lines = [ln for ln in lines if ln]
    initial, terminal = int(lines[0]), {int(x) for x in re.findall(r"\d+", lines[1])}
    edge = re.compile(r"\((\d+),(\d+),'([^']*)',ConstantRewardFunction\(([-\d.]+)\)\)")
    edges = [(int(a), int(b), f, float(r)) for a, b, f, r in (edge.fullmatch(ln).groups() for ln in lines[2:])]
    return initial, terminal, edges


def _holds(formula: str, letter: str) -> bool:
    """The formula (a disjunction of conjunctions of literals, as these files write them) with
    ``letter`` the only true proposition."""
    literal = lambda x: (x.strip()[1:] != letter) if x.strip().startswith("!") else x.strip() == letter  # noqa: E731
    return any(all(literal(x) for x in conj.split("&")) for conj in formula.split("|"))


@pytest.mark.skipif(not DATA.exists(), reason="the Craft World's task files are not present")
@pytest.mark.parametrize("i", range(1, 11))
def test_task_equals_its_reward_machines_file(doc, i):
    task = doc.tasks[f"t{i}"]
    m = task.machine
    assert (task.lam, task.discount, task.depth) == (0.01, 0.99, EVERY_DEPTH) and task.max_nodes == m.n_nodes
    initial, terminal, edges = _raw_task(DATA / f"t{i}.txt")
    assert m.nodes[m.initial] == f"u{initial}"
    name = lambda v: "terminal" if v in terminal else f"u{v}"  # noqa: E731
    for u in {e[0] for e in edges} - terminal:
        for letter in m.alphabet:
            hit = [(b, r) for a, b, f, r in edges if a == u and _holds(f, letter)]
            want = (name(hit[0][0]), hit[0][1]) if hit else ("terminal", 0.0)  # no edge holds: terminal
            got = m.step(f"u{u}", letter), m.reward(f"u{u}", letter)
            assert (m.nodes[got[0]], got[1]) == want, (i, u, letter)
    end = m.node_index("terminal")
    assert all(m.step(end, x) == end and m.reward(end, x) == 0 for x in m.alphabet)


def test_t1_learned_at_every_depth_is_the_truth(doc):
    r = Learner(ExactPTP(None)).fit(doc.tasks["t1"])
    assert r.n_nodes == 3 and r.isomorphic_to_truth() == (True,) and r.verdicts[0].consistent
    fit = r.reward_fits[0]
    # the representative pays 1 on the last transition only, and nothing on the absorbing end
    m = fit.machine
    paying = [(m.nodes[u], m.alphabet[k]) for u, k in zip(*np.nonzero(fit.delta_r))]
    assert len(paying) == 1 and fit.delta_r.max() == pytest.approx(1.0, abs=1e-9)
    assert fit.identified_up_to_shaping and fit.method == "eliminated" and fit.replan_error < 1e-6


def test_generator_errors_name_what_is_wrong():
    with pytest.raises(ModelError, match=r"row 1, column 2: unexpected character '\?'"):
        craftworld(["XXXX", "XA?X", "XXXX"])
    with pytest.raises(ModelError, match="row 1 has 3 characters, row 0 has 4"):
        craftworld(["XXXX", "XAX", "XXXX"])
    with pytest.raises(ModelError, match="0 agent cells 'A'"):
        craftworld(["XXXX", "X aX", "XXXX"])
    with pytest.raises(ModelError, match="other='a' is a character of the map"):
        craftworld(["XXXX", "XAaX", "XXXX"], other="a")
    with pytest.raises(ModelError, match="every cell of the map is a wall"):
        craftworld(["XX", "XX"], start=None)
    small = craftworld("XXXX\nXAbX\nXXXX\n")  # the file's text, trailing newline included
    assert small.n_states == 2 and small.propositions == ("b", "o") and small.source.kwargs()["start"] == "agent"
    text = dsl.dumps(small)
    assert '"XAbX"' in text and "start agent" in text and dsl.loads(text).mdps["craft"] == small


def test_quick_reproduction_runs_every_capability():
    rep = run("craft", Options(quick=True, overrides={"tasks": "t1"}))
    (caption, header, rows) = rep.tables[0]
    got = {row[1]: dict(zip(header, row)) for row in rows}
    assert set(got) == {"exact", "active", "labels", "demos"}
    assert got["exact"]["truth"] == "yes" and got["exact"]["flag"] == "-"
    assert got["active"]["truth"] == "yes" and got["active"]["nodes"] == 3
    assert got["labels"]["nodes"] == 3 and got["labels"]["truth"].startswith("1 policy-equivalent")
    assert got["demos"]["found"].startswith(">= ") and "max_solutions" in got["demos"]["flag"]
    assert "200 states" in caption


@pytest.mark.skipif(not DATA.exists(), reason="the Craft World's task files are not present")
def test_the_model_is_what_the_reader_gives_for_the_files(doc):
    """models/craft.rm holds exactly what rmtk.io.rmtext reads from the files (the model was
    written from it; this keeps the two from drifting apart)."""
    from rmtk.io.rmtext import read_rm_text

    letters = doc.mdps["craft"].propositions
    for i in range(1, 11):
        assert read_rm_text(DATA / f"t{i}.txt", alphabet=letters, name=f"t{i}") == doc.machines[f"t{i}"]
