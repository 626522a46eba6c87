"""The mice experiment: synthetic trajectories always; the real data when the file is present."""

from pathlib import Path

import numpy as np
import pytest

from rmtk import RewardMachine, isomorphic
from rmtk.data import Demonstrations, load, save
from rmtk.dsl import load_model as model
from rmtk.errors import DataError
from rmtk.experiments import Options, run
from rmtk.product.simulate import simulate

REAL = Path(__file__).resolve().parents[2] / "shared" / "data" / "mice_water_restricted.npz"
WATER = RewardMachine.from_transitions({("u0", "w"): "u1"}, ["h", "i", "w"])


def table(report, i):
    caption, header, rows = report.tables[i]
    return {r[0]: dict(zip(header, r)) for r in rows}


def learned_machine(report):
    from rmtk import dsl

    text = next(n for n in report.notes if "machine learned" in n)
    return dsl.loads(text[text.index("machine learned") :]).machines["learned"]


def directed_policy(mdp, water=100, eps=0.1):
    """(S, 2, A): at node u0 head for the water along the tree, at u1 head home; else random."""
    S, A = mdp.n_states, mdp.n_actions
    ancestors = {water}
    s = water
    while s:
        s = (s - 1) // 2
        ancestors.add(s)
    pi = np.full((S, 2, A), eps / A)
    for s in range(S):
        if s == water:
            go = 3  # stay
        elif s in ancestors:
            go = 0 if 2 * s + 1 in ancestors else 1  # left or right, towards the water
        else:
            go = 2  # reverse, up towards the path
        pi[s, 0, go] += 1 - eps
        pi[s, 1, 2 if s else 3] += 1 - eps  # home: reverse until the root, then stay
    return pi


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    """Mouse-like trajectories (22 steps from home): to the water, then home, 10% random."""
    task = model("labyrinth").tasks["water"]
    demos = simulate(task, 200, 22, seed=5, policy=directed_policy(task.mdp))
    path = tmp_path_factory.mktemp("mice") / "synthetic.npz"
    save(demos, path, task.mdp)
    return path


@pytest.mark.slow  # about ten CPU seconds: CI runs it apart (setup.cfg)
def test_mice_pipeline_on_synthetic_trajectories(synthetic, tmp_path):
    report = run("mice", Options(figure_dir=tmp_path, overrides={"data": str(synthetic)}))
    learned = learned_machine(report)
    assert isomorphic(learned, WATER, rewards=False)
    ll = {k: v["avg log-likelihood"] for k, v in table(report, 1).items()}
    assert ll["learned RM (product policy)"] > max(ll["D-IRL"], ll["F-IRL"], ll["uniform"])
    assert ll["uniform"] == pytest.approx(-22 * np.log(4))
    assert (tmp_path / "mice.png").read_bytes()[:4] == b"\x89PNG"


def test_mice_requires_data_and_reports_bad_steps(tmp_path):
    with pytest.raises(Exception, match="--data PATH"):
        run("mice", Options(figure_dir=None))
    bad = tmp_path / "bad.npz"
    np.savez(bad, states=np.array([[0, 1, 5]], dtype=np.int8), actions=np.array([[0, 0, 3]], dtype=np.int8))
    with pytest.raises(DataError, match=r"trajectory 0, step 1"):
        run("mice", Options(figure_dir=None, overrides={"data": str(bad)}))
    import tracemalloc

    assert not tracemalloc.is_tracing()  # the experiment's measurement ends with it (it had slowed later code 25x)


@pytest.mark.skipif(not REAL.exists(), reason="the mice data file is not present")
def test_mice_real_data(tmp_path):
    report = run("mice", Options(figure_dir=None, overrides={"data": str(REAL)}))
    learned = learned_machine(report)
    assert isomorphic(learned, WATER, rewards=False)  # water first, then a switch
    overall = table(report, 0)["all"]
    assert overall["machines"] == 1 and overall["raw"] == 1  # unique
    ll = {k: v["avg log-likelihood"] for k, v in table(report, 1).items()}
    best_baseline = max(ll["D-IRL"], ll["F-IRL"], ll["uniform"])
    assert ll["learned RM (product policy)"] > best_baseline + 10  # a wide margin (paper: -9.81 vs -28.57)
    assert ll["uniform"] == pytest.approx(-22 * np.log(4))
    assert learned.reward("u1", "h") > learned.reward("u0", "h")  # after water, home becomes attractive
    demos = load(REAL, model("labyrinth").mdps["maze"])
    assert isinstance(demos, Demonstrations) and demos.n_trajectories == 200
