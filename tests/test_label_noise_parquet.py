"""Labels from a detector that errs, in Parquet datasets (rmtk/data/parquet_io.py,
rmtk/data/parquet_partition.py, docs/design/15-label-noise.md): recorded labels and a detector's
``p_<proposition>`` columns written, loaded and counted partition by partition on any engine,
and the machine learned from them as from the same data in memory."""

from __future__ import annotations

from pathlib import Path

import attrs
import numpy as np
import pytest

from rmtk import EmpiricalPTP, Learner, dsl
from rmtk.cli.main import main
from rmtk.data import load, save
from rmtk.errors import DataError
from rmtk.label_noise import LabelNoise, NoisyLabels, count_evidence
from rmtk.label_noise.evidence import recorded_by
from rmtk.machine.model import isomorphic
from rmtk.product.simulate import simulate
from rmtk.traces.evidence import TraceRewards

pytest.importorskip("pyarrow")

from rmtk.data.parquet_dataset import ParquetDataset  # noqa: E402

MODELS = Path(__file__).resolve().parents[1] / "models"
PATROL = str(MODELS / "patrol.rm")


@pytest.fixture(scope="module")
def rooms():
    return dsl.load(MODELS / "patrol.rm").tasks["patrol"]


@pytest.fixture(scope="module")
def walks(rooms):
    """Uniform walks with their rewards, 10 % of the labels flipped (seeded)."""
    mdp = rooms.mdp
    clean = simulate(rooms, 300, 30, seed=1, policy="uniform", rewards=True)
    return clean, recorded_by(LabelNoise.uniform(mdp.propositions, 0.1), clean, mdp, seed=3)


def detected(clean, noisy, mdp):
    """``clean`` with the calibrated probabilities of a detector that recorded ``noisy``'s labels."""
    probs = LabelNoise.uniform(mdp.propositions, 0.1).posterior(noisy.labels)
    return attrs.evolve(clean, detections=np.where(clean.mask()[..., None], probs, np.nan))


def test_label_noise_parquet_keeps_recorded_labels_and_detections(rooms, walks, tmp_path):
    mdp = rooms.mdp
    clean, noisy = walks
    save(noisy, tmp_path / "l.parquet", mdp, partition_size=70)
    assert len(ParquetDataset.open(tmp_path / "l.parquet", mdp).partitions) == 5
    with pytest.raises(DataError, match=r"part-00000.parquet: row \d+: trajectory \d+, step \d+: label .* disagrees"):
        load(tmp_path / "l.parquet", mdp)
    back = load(tmp_path / "l.parquet", mdp, labels="keep")
    assert back == noisy  # states, actions, rewards and the recorded labels
    probs = detected(clean, noisy, mdp)
    save(probs, tmp_path / "p.parquet", mdp, partition_size=70)
    back = load(tmp_path / "p.parquet", mdp)
    assert back.labels is None and np.allclose(back.detections, probs.detections, equal_nan=True)
    names = ParquetDataset.open(tmp_path / "p.parquet", mdp).columns
    assert names[-4:] == tuple("p_" + p for p in mdp.propositions)
    ignored = ParquetDataset.open(tmp_path / "p.parquet", mdp).reading("ignore")
    assert next(ignored.chunks(mdp)).detections is None  # read without the detector's columns
    # a dataset whose detector's columns do not name the MDP's propositions is refused by file
    other = attrs.evolve(rooms.mdp, propositions=("A", "B", "C", "Z"))
    with pytest.raises(DataError, match=r"part-00000.parquet: column 'p_D' names no proposition"):
        ParquetDataset.open(tmp_path / "p.parquet", other)


def test_label_noise_parquet_bad_probability_names_its_row(rooms, walks, tmp_path):
    import pyarrow.parquet as pq

    mdp = rooms.mdp
    clean, noisy = walks
    save(detected(clean, noisy, mdp)[:3], tmp_path / "p.parquet", mdp)
    path = tmp_path / "p.parquet" / "part-00000.parquet"
    table = pq.read_table(path)
    column = table.column("p_B").to_numpy().copy()
    column[35] = 1.5
    pq.write_table(table.set_column(table.schema.get_field_index("p_B"), "p_B", [column]), path)
    with pytest.raises(DataError, match=r"row 35: trajectory 1, step 5: p_B = 1.5 is not a probability in \[0, 1\]"):
        load(tmp_path / "p.parquet", mdp)


def test_label_noise_parquet_evidence_equals_the_in_memory_count(rooms, walks, tmp_path, dask_client):
    mdp = rooms.mdp
    clean, noisy = walks
    save(noisy, tmp_path / "l.parquet", mdp, partition_size=70)
    save(detected(clean, noisy, mdp), tmp_path / "p.parquet", mdp, partition_size=70)
    pytest.importorskip("dask.distributed")
    from rmtk.engines.dask import DaskEngine

    for name, data in (("l.parquet", noisy), ("p.parquet", detected(clean, noisy, mdp))):
        dataset = ParquetDataset.open(tmp_path / name, mdp)  # read with its recorded labels whatever it was opened with
        here = count_evidence(mdp, dataset, chunk=30)
        for other in (count_evidence(mdp, data), count_evidence(mdp, dataset, engine=DaskEngine(client=dask_client))):
            assert np.array_equal(other.counts, here.counts) and other.n_trajectories == here.n_trajectories == 300
            if name == "l.parquet":
                assert other == here and here.log_detections is None
            else:  # sums of logs in another order: equal to rounding
                assert np.allclose(other.log_detections, here.log_detections, rtol=1e-9, atol=1e-9)
        assert here.n_steps == noisy.n_steps


def test_label_noise_parquet_learns_what_memory_learns(rooms, walks, tmp_path):
    mdp = rooms.mdp
    clean, noisy = walks
    save(noisy, tmp_path / "l.parquet", mdp, partition_size=70)

    def learner(data):
        return Learner(ptp=None, rewards=TraceRewards(EmpiricalPTP(data)), irl=None)

    memory = NoisyLabels(learner(noisy)).fit(rooms)
    disk = NoisyLabels(learner(str(tmp_path / "l.parquet"))).fit(rooms)
    (m,) = disk.machines
    assert isomorphic(m, rooms.machine, rewards=True) and disk.machines == memory.machines
    assert disk.estimate == memory.estimate
    # a correction's trajectory is its id in the files (rmtk writes 0..N-1: the in-memory index)
    assert disk.corrections().pairs() == memory.corrections().pairs() and len(disk.corrections()) == 924
    save(clean, tmp_path / "c.parquet", mdp)
    with pytest.raises(Exception, match="no label column nor a detector's"):
        NoisyLabels(learner(str(tmp_path / "c.parquet"))).fit(rooms)


def test_label_noise_parquet_doubtful_letters_are_chosen_as_in_memory(tmp_path):
    """The corridor of tests/test_label_noise.py: a doubtful cell's letter chosen with the machine,
    the words counted from the dataset on the MDP with a placeholder letter."""
    from test_label_noise import corridor

    from rmtk.sat.encoders import SatEncoder

    task, demos = corridor()
    mdp = task.mdp
    labels = mdp.labels[np.where(demos.mask(), demos.states, 0)].copy()
    labels[0, 1] = labels[1, 1] = mdp.propositions.index("o")
    noisy = attrs.evolve(demos, labels=np.where(demos.mask(), labels, -1))
    save(noisy, tmp_path / "c.parquet", mdp, partition_size=4)
    noise = LabelNoise.uniform(mdp.propositions, 0.2)

    def fit(data):
        learner = Learner(ptp=None, rewards=TraceRewards(EmpiricalPTP(data)), encoder=SatEncoder(), irl=None)
        return NoisyLabels(attrs.evolve(learner, max_nodes=3), noise=noise).fit(task)

    disk, memory = fit(str(tmp_path / "c.parquet")), fit(noisy)
    assert disk.choices == memory.choices and disk.choices.n_states == 4  # the cells visited too few times to decide
    assert disk.labels[mdp.state_index("r0c1")] == mdp.propositions.index("a")
    assert disk.machines == memory.machines and disk.corrections().pairs() == {(0, 1), (1, 1)}


def test_label_noise_parquet_cli_simulates_and_learns(tmp_path, rooms, capsys):
    out = str(tmp_path / "walks.parquet")
    argv = ["simulate", PATROL, "-n", "300", "-T", "30", "--seed", "1", "-o", out, "-q", "--rewards"]
    assert main([*argv, "--policy", "uniform", "--label-noise", "0.1", "--partition-size", "100"]) == 0
    assert "each label wrong with probability 0.1 (seed 3 and each partition's index)" in capsys.readouterr().err
    walks = load(out, rooms.mdp, labels="keep")
    share = (walks.labels != rooms.mdp.labels[walks.states])[walks.mask()].mean()
    assert 0.08 < share < 0.12
    from test_label_noise import cli_learns_the_patrol

    cli_learns_the_patrol(out, rooms, capsys)
