"""Active learning under label noise (rmtk/label_noise/active.py, docs/design/15-label-noise.md):
the loop runs on the MDP as the expert's recorded labels are believed; doubtful letters and data
without recorded labels are refused with the reason."""

from __future__ import annotations

from pathlib import Path

import attrs
import numpy as np
import pytest
from test_explain import _corner_grid

from rmtk.active import ActiveLearner, QueryError, SimulatedExpert
from rmtk.cli.main import main
from rmtk.errors import RmtkError
from rmtk.label_noise import LabelNoise
from rmtk.label_noise.active import NoisyActive
from rmtk.label_noise.evidence import recorded_by
from rmtk.mdp.space import Space
from rmtk.product.simulate import simulate

PATROL = str(Path(__file__).resolve().parents[1] / "models" / "patrol.rm")


@pytest.fixture(scope="module")
def corners():
    """The 3 × 3 corner grid (a top right, b bottom left, g bottom right; a, b, then paid at g),
    300 recorded episodes of its soft expert, and those episodes' labels as a detector of
    confidence 0.9 records them."""
    task = _corner_grid(3, 0.05)
    demos = simulate(task, 300, 20, seed=0)
    return task, demos, recorded_by(LabelNoise.uniform(task.mdp.propositions, 0.1), demos, task.mdp, seed=1)


def test_label_noise_active_believes_the_letters_the_model_gets_wrong(corners):
    """A model of the world whose a and b corners are swapped: the loop asks words the expert's
    world cannot realise. Believed from the detector's records, the letters are the world's, and
    the loop asks exactly what it asks knowing them, and learns the truth."""
    task, demos, noisy = corners
    mdp = task.mdp
    swapped = mdp.labels.copy()
    swapped[[2, 6]] = mdp.labels[[6, 2]]
    model = attrs.evolve(task, mdp=attrs.evolve(mdp, labels=swapped))
    with pytest.raises(QueryError, match="cannot realise the history"):
        ActiveLearner(irl=None).fit(model, SimulatedExpert(task, seed=0, recorded=noisy))
    known = ActiveLearner(irl=None).fit(task, SimulatedExpert(task, seed=0, recorded=demos))
    run = NoisyActive(ActiveLearner(irl=None)).fit(model, SimulatedExpert(task, seed=0, recorded=noisy))
    assert np.array_equal(run.labels.labels, mdp.labels)  # every visited cell believed right, the corners too
    assert run.active.result.isomorphic_to_truth() == (True,) and run.active.result.n_nodes == 3
    assert (run.active.queries, run.active.draws) == (known.queries, known.draws)
    assert run.labels.estimate.measure.flips.covers(0.1)
    flipped = noisy.labels != np.where(demos.mask(), mdp.labels[np.where(demos.mask(), demos.states, 0)], -1)
    assert run.labels.corrections().pairs() == set(zip(*(a.tolist() for a in np.nonzero(flipped))))
    assert "labels believed: 9 of 9 visited states decided by their labels" in run.lines()


def test_label_noise_active_refuses_doubtful_letters_and_data_without_labels(corners):
    task, demos, _ = corners
    few = recorded_by(LabelNoise.uniform(task.mdp.propositions, 0.3), simulate(task, 3, 5, seed=0), task.mdp, seed=1)
    with pytest.raises(RmtkError, match=r"visited states' letters are in doubt under the label noise \(s0, s1, s2"):
        NoisyActive(ActiveLearner(irl=None)).fit(task, SimulatedExpert(task, seed=0, recorded=few))
    with pytest.raises(RmtkError, match="it has Demonstrations without recorded labels"):
        NoisyActive(ActiveLearner(irl=None)).fit(task, SimulatedExpert(task, seed=0, recorded=demos))
    with pytest.raises(RmtkError, match="it has no recorded data"):
        NoisyActive(ActiveLearner(irl=None)).fit(task, SimulatedExpert(task, seed=0))
    space = Space(task.mdp.n_states, task.mdp.n_actions, task.mdp.propositions, name="corners")
    with pytest.raises(RmtkError, match="needs a Task or a LabeledMDP"):
        NoisyActive(ActiveLearner(irl=None)).fit(space, SimulatedExpert(task, seed=0, recorded=demos))


def test_label_noise_cli_active_reads_the_recorded_labels(tmp_path, capsys):
    out = str(tmp_path / "a.csv")
    argv = ["simulate", PATROL, "-n", "300", "-T", "20", "--seed", "1", "--label-noise", "0.1", "-o", out, "-q"]
    assert main(argv) == 0
    capsys.readouterr()
    active = ["learn", PATROL, "--active", "--demos", out, "-q", "--budget-queries", "30"]
    assert main(active) == 1
    assert "labels recorded by a detector that errs are read with labels='keep'" in capsys.readouterr().err
    assert main([*active, "--label-noise", "auto"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("# active learning from the expert's runs of its policy (seed 0): ")
    assert "# label noise: 0.1035 (95% interval 0.0959 to 0.1115) of recorded labels wrong" in text
    assert "# labels believed: 16 of 16 visited states decided by their labels" in text
    assert main(["learn", PATROL, "--active", "-q", "--label-noise", "auto"]) == 2
    assert "--label-noise needs --demos with --active" in capsys.readouterr().err
