"""The tutorials run: every ``tutorials/*.py`` script exits with 0, prints its key results,
writes its files only to the output directory it is given, and nothing to the current one."""

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TUTORIALS = ROOT / "tutorials"
SCRIPTS = sorted(TUTORIALS.glob("[0-9][0-9]_*.py"))

# Per tutorial: strings (or compiled patterns) that must appear in stdout, and the files
# it must write to the output directory.
EXPECTED = {
    "01_author_a_task.py": (
        [
            "successors('s1', 'right') = [(2, 0.8), (3, 0.2)]",
            "run('HABGHAG') = [0, 0, 1, 1, 0, 0, 1, 0]",
            "total reward of 'HABGHAG': 1.9",
            "  u1 -> u1 on H | A | B reward -0.1",  # the `else`, expanded by the printer
            "round trip: dsl.loads(dsl.dumps(doc)) == doc -> True",
            "(DslSyntaxError):",
            "syntax error: unexpected name A; expected 'on'",
            "unknown proposition 'Q'",
            "probabilities of this transition sum to 0.9",
            "a machine is deterministic",
            "mdp tiny = gridworld {",
            "mdp tiny (gridworld): 7 states, 4 actions",
        ],
        ["fetch.rm"],
    ),
    "02_learn_from_exact_policy.py": (
        [
            "6 raw solutions, 1 distinct machine(s) with 4 nodes",
            "verdict: consistent at every depth",
            "isomorphic to the true machine: True",
            "machine learned {\n  alphabet A B C D\n  nodes u0 u1 u2 u3\n  initial u0\n"
            "  u0 -> u1 on A\n  u1 -> u2 on B\n  u2 -> u3 on C\n  u3 -> u0 on D reward 1\n}",
            "timings (ms):",
            "8 raw solutions, 2 distinct machine(s) with 3 nodes",
            "verdict: inconsistent: words",
            "witness words: 'A B' and 'A B C B' at state r2c2",
        ],
        [],
    ),
    "03_learn_from_demonstrations.py": (
        [
            "simulated: 20,000 trajectories of 20 steps",
            "equal to the simulated data",
            "trajectory,step,state,action,label",
            re.compile(r"\|E-\| = \d+ negative examples"),
            "false positive rate: 0.000",
            "MaxSAT cost (negative examples dropped): 0",
            "1 distinct machine(s)",
            "unconstrained transitions: [('u1', 'D')]",
            "completion_consistent: (True,)",
            re.compile(r"== 500 trajectories.*\n.*MaxSAT cost 0, \d+ distinct machines"),
        ],
        ["stack_avoid_demos.npz", "stack_avoid_first3.csv"],
    ),
    "04_recover_rewards.py": (
        [
            "null space dimension 4 (4 shaping): identified up to potential shaping on the nodes",
            "canonical representative: minimum-norm rewards",
            "u3 --D--> u0  +1.000000  identified",
            "equal to the true rewards: True",
            "  u3 -> u0 on D reward 1\n}",
            re.compile(r"re-planned policy with the shaped rewards differs from the expert's by \d(\.\d+)?e-1[0-9]"),
        ],
        [],
    ),
    "05_compare_with_baselines.py": (
        [
            "train: 2,500 trajectories of 10 steps",
            "same structure as the truth: True",
            "product policy shape (states, nodes, actions): (16, 4, 4)",
            "D-IRL: MaxCausalEnt IRL (stationary",
            "== average return of 100-step rollouts",
            "F-IRL (reward per proposition)",
            "== held-out log-likelihood",
            "beats D-IRL, F-IRL and uniform",
        ],
        [],
    ),
    "06_draw.py": (
        [
            "wrote patrol.png",
            "wrote patrol.svg",
            "wrote rooms.png",
            "draw_grid on a block world: ModelError",
            'digraph "patrol" {',
            '"u3" -> "u0" [label="D / 1"];',
            "shortest path u0 -> u3: u0 -> u1 -> u2 -> u3 reading A B C",
            "(3,0,'D',ConstantRewardFunction(1))",
            "read back: equal to the original: True",
            "  nodes u0 u1 terminal",
            "refused:",
        ],
        ["patrol.png", "patrol.svg", "rooms.png", "patrol_and_rooms.png", "patrol.dot", "patrol.txt"],
    ),
    "07_gymnasium.py": (
        [
            "bins: 20 states; x = 4.3 is state 8",
            "recording Shuttle: 500 episodes (0 terminated, 500 truncated, 0 cut at max_steps), 30000 steps",
            re.compile(r"\d+ negative examples; 1 machine\(s\) with 2 nodes"),
            "the expert's machine, up to renaming: True",
            "random actions: 0.0 deliveries per episode",
            "the learned machine makes the agent deliver: True",
        ],
        [],
    ),
    "08_frozenlake.py": (
        [
            "mdp FrozenLake-v1 (explicit): 16 states, 4 actions",
            "as the labeled MDP: [(10, 0.33333333333333337), (14, 0.33333333333333337), (15, 0.3333333333333333)]",
            "a hole absorbs: [(5, 1.0)]",
            re.compile(
                r"\d+ machine\(s\) with 2 nodes; every one reproduces the expert's policy after every word: True"
            ),
            "u0 -> u1 on k",
            re.compile(r"re-planned policy differs from the expert's by \d\.\de-1[0-9]"),
            "check_env(RewardMachineEnv(gymnasium.make('FrozenLake-v1'), ...)): passed",
            "the learned machine's policy does the task: True",
            "(state, action) pairs never tried (self-loops): (s5, a0)",
        ],
        [],
    ),
    "09_deep_rl.py": (
        [
            re.compile(r"agent trained with the true machine and CRM: 90% success from 102 cells at \d+ steps"),
            re.compile(r"actively: 1 machine\(s\), draws 0, forward passes \d+"),
            "the learned machine is the truth, up to renaming: True",
            re.compile(r"learned, CRM +90% success at \d+ steps"),
        ],
        ["deep_rl.png"],
    ),
    "10_online.py": (
        [
            re.compile(r"step \d+ \(episode \d+\): after .* then c, the hypothesis paid 0, the environment 1"),
            "against the truth: isomorphic to the true machine",
            "  u2 -> end on c reward 1\n",
            re.compile(r"online, subgoals +greedy success at \d+ steps"),
            "online, ε-greedy  greedy success not within 4000 steps",
            "resumed: 4500 steps",
            "the same machine: True",
        ],
        ["online.png", "cliff.rm", "cliff_online.zip"],
    ),
}
#: Tutorials that need an extra: (module to find, what to install); skipped without it.
EXTRAS = {
    "09_deep_rl.py": ("stable_baselines3", "pip install '.[rl]'"),
    "10_online.py": ("stable_baselines3", "pip install '.[rl]'"),
}
#: Tutorials that take longer than a few seconds (they train agents): their time limit.
TIMEOUTS = {"09_deep_rl.py": 600, "10_online.py": 900}


def _env(**extra) -> dict:
    """The environment of a tutorial run: the checkout's rmtk first, a headless backend."""
    env = dict(os.environ, MPLBACKEND="Agg", **extra)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def _run(script: Path, cwd: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(script), *args],
        cwd=cwd,
        env=env or _env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUTS.get(script.name, 120),
    )


def test_every_tutorial_is_checked():
    assert SCRIPTS, "no tutorials found"
    assert sorted(p.name for p in SCRIPTS) == sorted(EXPECTED)
    readme = (TUTORIALS / "README.md").read_text(encoding="utf-8")
    for script in SCRIPTS:
        assert f"({script.name})" in readme, f"{script.name} is not listed in tutorials/README.md"


#: Tutorials of tens of seconds: in the slow set that CI runs apart (setup.cfg).
SLOW = {"07_gymnasium.py"}


@pytest.mark.parametrize(
    "script", [pytest.param(s, marks=pytest.mark.slow) if s.name in SLOW else s for s in SCRIPTS], ids=lambda p: p.stem
)
def test_tutorial_runs(script, tmp_path):
    if script.name in EXTRAS and importlib.util.find_spec(EXTRAS[script.name][0]) is None:
        pytest.skip(f"{script.name} needs {EXTRAS[script.name][0]}: {EXTRAS[script.name][1]}")
    cwd, out = tmp_path / "cwd", tmp_path / "out"
    cwd.mkdir()
    proc = _run(script, cwd, str(out))
    assert proc.returncode == 0, f"{script.name} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    strings, files = EXPECTED[script.name]
    for expected in strings:
        if isinstance(expected, re.Pattern):
            assert expected.search(proc.stdout), f"{script.name}: no match for {expected.pattern!r} in\n{proc.stdout}"
        else:
            assert expected in proc.stdout, f"{script.name}: {expected!r} not in\n{proc.stdout}"
    for name in files:
        assert (out / name).is_file() and (out / name).stat().st_size > 0, f"{script.name} did not write {name}"
    if not files:  # the output directory is accepted, and left empty
        assert not out.exists() or not any(out.iterdir())
    assert not any(cwd.iterdir()), f"{script.name} wrote into the current directory: {list(cwd.iterdir())}"
    for name in files:
        if name.endswith(".png"):
            assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        if name.endswith(".svg"):
            assert "<svg" in (out / name).read_text(encoding="utf-8")


def test_default_output_directory_is_temporary(tmp_path):
    """Without an argument the files go to a fresh directory under the system's temp dir,
    removed when the tutorial ends; the output names no path of the machine it ran on (the
    site's gallery shows it)."""
    cwd, tmp = tmp_path / "cwd", tmp_path / "tmp"
    cwd.mkdir()
    tmp.mkdir()
    proc = _run(TUTORIALS / "01_author_a_task.py", cwd, env=_env(TMPDIR=str(tmp), TEMP=str(tmp), TMP=str(tmp)))
    assert proc.returncode == 0, proc.stderr
    assert "also through fetch.rm" in proc.stdout  # it wrote its file there and read it back ...
    assert list(tmp.iterdir()) == []  # ... and removed the directory at exit
    assert "output directory: a temporary one, removed at exit (give one" in proc.stdout
    assert str(tmp) not in proc.stdout and str(tmp_path) not in proc.stdout
    assert not any(cwd.iterdir())


def test_models_from_the_installed_package(tmp_path):
    """A tutorial copied out of the checkout finds the models in the installed package."""
    probe = subprocess.run(
        [sys.executable, "-c", "import importlib.util as u; print(u.find_spec('rmtk.models'))"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0 or probe.stdout.strip() == "None":
        pytest.skip("rmtk.models is not importable (rmtk is not installed, or installed in editable mode)")
    copy = tmp_path / "elsewhere" / "tutorials" / "04_recover_rewards.py"
    copy.parent.mkdir(parents=True)
    shutil.copy(TUTORIALS / "04_recover_rewards.py", copy)
    proc = subprocess.run(
        [sys.executable, str(copy), str(tmp_path / "out")], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert "equal to the true rewards: True" in proc.stdout
