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


#: The README's Python blocks that need the rl extra: their index, and what each must leave.
RL_BLOCKS = {
    "sb3": (1, lambda ns: ns["run"].draws == 0),  # an SB3 agent learned back actively
    "online": (2, lambda ns: ns["learner"].final.swaps == 4),  # the machine learned while DQN trains
}


@pytest.mark.parametrize("name", list(RL_BLOCKS))
def test_readme_rl_block_runs(name, tmp_path, monkeypatch):
    """The README's deep RL blocks (an SB3 agent as an expert; the online learner), where the rl
    extra is installed."""
    pytest.importorskip("stable_baselines3", reason="needs the rl extra: pip install '.[rl]'")
    import torch

    torch.set_num_threads(1)
    index, check = RL_BLOCKS[name]
    block = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)[index]
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(compile(block, "README.md", "exec"), namespace)
    assert check(namespace)


def test_docs_python_blocks_run(capsys):
    """The design notes, benchmarks and the Gymnasium page: every Python block runs as written
    (each file in its own namespace; the guide's blocks run one by one in tests/test_guide.py)."""
    pages = [*(ROOT / "docs" / "design").glob("*.md"), *(ROOT / "docs" / "benchmarks").glob("*.md")]
    for doc in sorted([*pages, ROOT / "docs" / "gym.md"]):
        namespace: dict = {}
        for block in re.findall(r"```python\n(.*?)```", doc.read_text(), flags=re.S):
            exec(compile(block, str(doc.relative_to(ROOT)), "exec"), namespace)
    assert "18" in capsys.readouterr().out  # docs/design/05-strategies.md: a user's miner drops a state's negatives
