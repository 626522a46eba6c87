"""The README's Python block runs as written, and so do the design notes' and the Gymnasium
page's (the guide's blocks: tests/test_site.py)."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_readme_python_blocks_run(tmp_path, monkeypatch):
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)
    assert len(blocks) == 3  # the tour of the Python API; Stable-Baselines3 and the online loop (below)
    blocks = blocks[:1]
    monkeypatch.chdir(tmp_path)  # anywhere: the blocks load the shipped models by name (dsl.load_model)
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, "README.md", "exec"), namespace)
    assert namespace["result"].distinct_count == 1 and (tmp_path / "patrol.png").exists()


def test_readme_sb3_block_runs(tmp_path, monkeypatch):
    """The README's deep RL block, where the rl extra is installed."""
    pytest.importorskip("stable_baselines3", reason="needs the rl extra: pip install '.[rl]'")
    import torch

    torch.set_num_threads(1)
    block = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)[1]
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(compile(block, "README.md", "exec"), namespace)
    assert namespace["run"].draws == 0


def test_readme_online_block_runs(tmp_path, monkeypatch):
    """The README's online block (the machine learned while DQN trains), where the rl extra is installed."""
    pytest.importorskip("stable_baselines3", reason="needs the rl extra: pip install '.[rl]'")
    import torch

    torch.set_num_threads(1)
    block = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)[2]
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(compile(block, "README.md", "exec"), namespace)
    assert namespace["learner"].final.swaps == 4


def test_docs_python_blocks_run(capsys):
    """The design notes, benchmarks and the Gymnasium page: every Python block runs as written
    (each file in its own namespace; the guide's blocks run one by one in tests/test_guide.py)."""
    pages = [*(ROOT / "docs" / "design").glob("*.md"), *(ROOT / "docs" / "benchmarks").glob("*.md")]
    for doc in sorted([*pages, ROOT / "docs" / "gym.md"]):
        namespace: dict = {}
        for block in re.findall(r"```python\n(.*?)```", doc.read_text(), flags=re.S):
            exec(compile(block, str(doc.relative_to(ROOT)), "exec"), namespace)
    assert "18" in capsys.readouterr().out  # docs/design/05-strategies.md: a user's miner drops a state's negatives
