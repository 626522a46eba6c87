"""rmtk check and rmtk show: summaries and every output format."""

import json
from pathlib import Path

from rmtk import dsl
from rmtk.cli.main import main

MODELS = Path(__file__).resolve().parents[1] / "models"


def test_check_summarises_every_block(capsys):
    assert main(["check", *map(str, sorted(MODELS.glob("*.rm")))]) == 0
    out = capsys.readouterr().out
    assert "models/patrol.rm: ok, 3 blocks" in out.replace(str(MODELS.parent) + "/", "")
    assert "mdp rooms (gridworld): 16 states, 4 actions" in out
    assert "mdp blocks (blockworld): 60 states, 9 actions" in out
    assert "mdp maze (labyrinth): 127 states, 4 actions" in out
    assert "machine patrol: 4 nodes, initial u0, alphabet A B C D, 4 non-default transitions" in out


def test_show_rm_is_canonical_and_loads(capsys):
    assert main(["show", str(MODELS / "stack.rm")]) == 0
    text = capsys.readouterr().out
    assert dsl.loads(text) == dsl.load(MODELS / "stack.rm")
    assert main(["show", str(MODELS / "stack.rm"), "stack"]) == 0  # a task prints with its parts
    assert dsl.loads(capsys.readouterr().out).tasks["stack"] == dsl.load(MODELS / "stack.rm").tasks["stack"]


def test_show_dot_and_json(capsys):
    assert main(["show", str(MODELS / "patrol.rm"), "--format", "dot"]) == 0
    dot = capsys.readouterr().out
    assert dot.startswith('digraph "patrol"') and '"u3" -> "u0" [label="D / 1"]' in dot
    assert main(["show", str(MODELS / "patrol.rm"), "patrol", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data == {
        "name": "patrol",
        "mdp": "rooms",
        "machine": "patrol",
        "gamma": 0.99,
        "lambda": 1.0,
        "depth": 6,
        "max_nodes": 4,
    }
    assert main(["show", str(MODELS / "patrol.rm"), "--format", "json"]) == 0
    whole = json.loads(capsys.readouterr().out)
    assert whole["machines"]["patrol"]["initial"] == "u0" and len(whole["mdps"]["rooms"]["states"]) == 16


def test_show_png_of_machine_and_grid(tmp_path, capsys):
    png, grid = tmp_path / "m.png", tmp_path / "g.svg"
    assert main(["show", str(MODELS / "patrol.rm"), "--png", str(png)]) == 0
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert main(["show", str(MODELS / "patrol.rm"), "rooms", "--png", str(grid)]) == 0
    assert grid.read_text().lstrip().startswith("<?xml")
    assert main(["show", str(MODELS / "stack.rm"), "blocks", "--png", str(tmp_path / "b.png")]) == 1
    assert "not a grid world" in capsys.readouterr().err
