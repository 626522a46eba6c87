"""Labels from a detector that errs (rmtk/label_noise/, docs/design/15-label-noise.md): the noise
model, the data that carry recorded labels, the noise estimated with intervals, the labels
believed wrong, and the machine learned under them, from demonstrations, rewards and the
command line."""

from __future__ import annotations

from pathlib import Path

import attrs
import numpy as np
import pytest

from rmtk import ConfidenceMiner, EmpiricalPTP, Learner, NodePolicyTable, dsl
from rmtk.cli.main import main
from rmtk.data import Demonstrations, load, save
from rmtk.envs import gridworld
from rmtk.errors import DataError, ModelError, RmtkError
from rmtk.label_noise import LabelNoise, NoisyLabels, count_evidence, estimate
from rmtk.label_noise.evidence import recorded_by
from rmtk.machine.model import RewardMachine, isomorphic
from rmtk.product.simulate import simulate
from rmtk.progress import Progress
from rmtk.ptp.exact import shortest_path_table
from rmtk.sat.encoders import SatEncoder, SimplestEncoder
from rmtk.task import Task
from rmtk.traces.evidence import TraceRewards

MODELS = Path(__file__).resolve().parents[1] / "models"


@pytest.fixture(scope="module")
def coffee():
    return dsl.load(MODELS / "office.rm").tasks["coffee"]


@pytest.fixture(scope="module")
def rooms():
    return dsl.load(MODELS / "patrol.rm").tasks["patrol"]


def recorded(demos: Demonstrations, mdp, noise: LabelNoise, seed: int) -> Demonstrations:
    """``demos`` with the labels ``noise`` records along them."""
    return recorded_by(noise, demos, mdp, seed=seed)


def flips(demos: Demonstrations, mdp) -> set[tuple[int, int]]:
    """The (trajectory, step) where the recorded label is not the MDP's."""
    inside = demos.mask()
    wrong = inside & (demos.labels != mdp.labels[np.where(inside, demos.states, 0)])
    return set(zip(*(a.tolist() for a in np.nonzero(wrong))))


# ---------------------------------------------------------------------- the model
def test_label_noise_model_rows_rates_and_errors():
    props = ("a", "b", "i", "n")
    u = LabelNoise.uniform(props, 0.2)
    assert np.allclose(u.confusion.sum(axis=1), 1) and np.allclose(np.diag(u.confusion), 0.8)
    assert u.flip_rate() == pytest.approx(0.2) and u.miss("a") == pytest.approx(0.2)
    assert u.false_alarm("a") == pytest.approx(0.2 / 3)
    d = LabelNoise.detector(props, "i", miss={"a": 0.3}, false_alarm=0.05)
    assert d.confusion[0, 2] == pytest.approx(0.3) and d.confusion[1, 1] == 1.0  # b is never missed
    assert d.confusion[2, 3] == pytest.approx(0.05) and d.confusion[2, 2] == pytest.approx(0.85)
    assert LabelNoise.from_text("miss.a=0.3,false-alarm=0.05", props, plain="i") == d
    assert LabelNoise.from_text("0.2", props) == u
    with pytest.raises(ModelError, match="row 'a' sums to 0.9"):
        LabelNoise(props, np.diag([0.9, 1, 1, 1]))
    with pytest.raises(ModelError, match="false_alarm names 'i', the plain letter"):
        LabelNoise.detector(props, "i", false_alarm={"i": 0.1})
    with pytest.raises(ModelError, match="unknown key 'rate'"):
        LabelNoise.from_text("rate=0.1", props)
    with pytest.raises(ModelError, match="rate must be a probability"):
        LabelNoise.uniform(props, 1.5)


def test_label_noise_corrupt_is_seeded_and_draws_at_its_rates():
    props = ("a", "b", "i", "n")
    true = np.tile(np.arange(4), (5000, 10))
    true[0, -3:] = -1  # padding stays
    d = LabelNoise.detector(props, "i", miss=0.2, false_alarm=0.1)
    once, again = d.corrupt(true, seed=3), d.corrupt(true, seed=3)
    assert np.array_equal(once, again) and not np.array_equal(once, d.corrupt(true, seed=4))
    assert np.array_equal(once[0, -3:], [-1, -1, -1])
    live = true >= 0
    for ell in range(4):
        got = np.bincount(once[live & (true == ell)], minlength=4) / (live & (true == ell)).sum()
        assert np.allclose(got, d.confusion[ell], atol=0.01), (ell, got)


# ---------------------------------------------------------------------- the data
def test_label_noise_files_keep_recorded_labels_and_detections(coffee, tmp_path):
    mdp = coffee.mdp
    demos = simulate(coffee, 20, 15, seed=0)
    noise = LabelNoise.uniform(mdp.propositions, 0.3)
    noisy = recorded(demos, mdp, noise, seed=1)
    assert flips(noisy, mdp)
    for name in ("d.csv", "d.npz"):
        save(noisy, tmp_path / name, mdp)
        with pytest.raises(DataError, match="disagrees with the MDP.*labels='keep'"):
            load(tmp_path / name, mdp)
        back = load(tmp_path / name, mdp, labels="keep")
        assert np.array_equal(back.labels, noisy.labels) and np.array_equal(back.states, demos.states)
    probs = noise.posterior(noisy.labels).astype(np.float32)
    detected = attrs.evolve(demos, detections=probs)
    for name in ("p.csv", "p.npz"):
        save(detected, tmp_path / name, mdp)
        back = load(tmp_path / name, mdp)
        assert np.allclose(back.detections, probs) and back.labels is None
    header = (tmp_path / "p.csv").read_text().splitlines()[0]
    assert header.endswith(",".join("p_" + p for p in mdp.propositions))
    bad = (tmp_path / "p.csv").read_text().replace("p_n", "p_zz")
    (tmp_path / "q.csv").write_text(bad)
    with pytest.raises(DataError, match="column 'p_zz' names no proposition"):
        load(tmp_path / "q.csv", mdp)


def test_label_noise_evidence_is_the_same_for_any_chunking(coffee):
    mdp = coffee.mdp
    noisy = recorded(simulate(coffee, 300, 20, seed=0), mdp, LabelNoise.uniform(mdp.propositions, 0.2), seed=1)
    whole = count_evidence(mdp, noisy)
    parts = count_evidence(mdp, noisy, chunk=7)
    assert whole == parts and whole.n_steps == noisy.n_steps and whole.n_trajectories == 300
    assert np.array_equal(whole.counts.sum(axis=1), np.bincount(noisy.states.ravel(), minlength=mdp.n_states))


def test_label_noise_evidence_on_dask_equals_the_local_count(coffee, dask_client):
    pytest.importorskip("dask.distributed")
    from rmtk.engines.dask import DaskEngine

    mdp = coffee.mdp
    noisy = recorded(simulate(coffee, 400, 20, seed=0), mdp, LabelNoise.uniform(mdp.propositions, 0.2), seed=1)
    assert count_evidence(mdp, noisy, chunk=50, engine=DaskEngine(client=dask_client)) == count_evidence(mdp, noisy)


# ---------------------------------------------------------------------- the noise and the corrections
@pytest.mark.parametrize("rate", [0.05, 0.2])
def test_label_noise_estimate_covers_the_true_rate_and_finds_every_flip(coffee, rate):
    mdp = coffee.mdp
    noise = LabelNoise.uniform(mdp.propositions, rate)
    noisy = recorded(simulate(coffee, 300, 40, seed=0), mdp, noise, seed=11)
    est = estimate(count_evidence(mdp, noisy), mdp.propositions)
    m = est.measure
    assert m.flips.covers(rate) and m.flips.n == noisy.n_steps  # every state visited at least 10 times
    assert abs(est.noise.flip_rate() - rate) < 0.01
    assert all(r.covers(noise.miss(p)) for p, r in zip(mdp.propositions, m.miss) if r.n)
    assert np.array_equal(est.beliefs.letter, mdp.labels) and not est.beliefs.doubtful.any()
    from rmtk.label_noise import corrections

    found = corrections(noisy, est.beliefs.letter, est.beliefs)
    assert found.pairs() == flips(noisy, mdp) and found.steps == noisy.n_steps
    assert np.all(found.believed == mdp.labels[found.state])


def test_label_noise_hard_labels_under_a_stated_noise_that_forbids_them_are_refused(coffee):
    mdp = coffee.mdp
    noisy = recorded(simulate(coffee, 50, 20, seed=0), mdp, LabelNoise.uniform(mdp.propositions, 0.3), seed=1)
    never = LabelNoise.detector(mdp.propositions, "i", miss=0.1)  # a detector that only misses
    with pytest.raises(DataError, match="which no letter explains under the stated noise"):
        estimate(count_evidence(mdp, noisy), mdp.propositions, never)


# ---------------------------------------------------------------------- learning
def office_expert(coffee):
    return shortest_path_table(coffee, 0.1)


def demos_learner(coffee, data, table, encoder=None) -> Learner:
    return Learner(
        EmpiricalPTP(data, expert=NodePolicyTable(table)),
        miner=ConfidenceMiner(0.05),
        encoder=encoder or SimplestEncoder(negatives="pairs"),
        irl=None,
        max_nodes=coffee.max_nodes,
    )


def test_label_noise_demonstrations_give_the_truth_alone(coffee):
    """The paper's setting with 10% of the labels flipped: the machine learned from the believed
    labels is the truth alone, as from clean ones; the noisy labels read as they are give none."""
    table = office_expert(coffee)
    demos = simulate(coffee, 10_000, 40, seed=0, policy=table.transpose(1, 0, 2))
    noisy = recorded(demos, coffee.mdp, LabelNoise.uniform(coffee.mdp.propositions, 0.1), seed=1)
    clean = demos_learner(coffee, demos, table).fit(coffee)
    assert len(clean.machines) == 1 and clean.verdicts[0].consistent
    # read as recorded, the flipped labels make negative examples that the truth violates
    as_recorded = EmpiricalPTP(noisy, labels=noisy.labels).build(coffee, Progress())
    pairs = ConfidenceMiner(0.05).mine(as_recorded).pairs
    runs = as_recorded.trie.run(coffee.machine.delta_u, coffee.machine.initial, coffee.letter_of_proposition)
    assert (runs[pairs[:, 0]] == runs[pairs[:, 1]]).sum() > 100
    res = NoisyLabels(demos_learner(coffee, noisy, table)).fit(coffee)
    r = res.result
    assert len(r.machines) == 1 and r.verdicts[0].consistent and r.search.complete
    assert isomorphic(r.machines[0], clean.machines[0])
    assert res.estimate.measure.flips.covers(0.1)
    assert res.corrections().pairs() == flips(noisy, coffee.mdp)


def test_label_noise_rewards_give_the_truth(rooms):
    """JIRP's setting: uniform walks with their rewards, 10% of the labels flipped."""
    mdp = rooms.mdp
    walks = simulate(rooms, 300, 30, seed=1, policy="uniform", rewards=True)
    noisy = recorded(walks, mdp, LabelNoise.uniform(mdp.propositions, 0.1), seed=3)
    learner = Learner(ptp=None, rewards=TraceRewards(EmpiricalPTP(noisy)), irl=None)
    with pytest.raises(RmtkError, match="carry no recorded labels"):
        NoisyLabels(Learner(ptp=None, rewards=TraceRewards(EmpiricalPTP(walks)), irl=None)).fit(rooms)
    res = NoisyLabels(learner).fit(rooms)
    (m,) = res.machines
    assert isomorphic(m, rooms.machine, rewards=True)
    assert res.estimate.measure.flips.covers(0.1)
    read_as_recorded = Learner(ptp=None, rewards=TraceRewards(EmpiricalPTP(walks, labels=noisy.labels)), irl=None)
    assert read_as_recorded.fit(rooms).n_nodes is None  # the flipped labels contradict every machine of 4 nodes
    # the recorded labels given to the counting instead of the data: read as the detector's
    assert NoisyLabels(read_as_recorded).fit(rooms).machines == res.machines


def test_label_noise_both_evidences_under_a_stated_noise(rooms):
    mdp = rooms.mdp
    demos = simulate(rooms, 1000, 20, seed=2, rewards=True)
    noise = LabelNoise.uniform(mdp.propositions, 0.05)
    noisy = recorded(demos, mdp, noise, seed=5)
    ptp = EmpiricalPTP(noisy)
    res = NoisyLabels(Learner(ptp, rewards=TraceRewards(ptp), irl=None), noise=noise).fit(rooms)
    (m,) = res.machines
    assert isomorphic(m, rooms.machine, rewards=True) and res.estimate.given
    assert res.estimate.measure.flips.covers(0.05)


def corridor():
    """Two routes from r0c0 to b: through a (r0c1), paid 1 on b, and below it, paid 0."""
    mdp = gridworld(["o a o", "o o b"], slip=0.0, start=[(0, 0)])
    m = RewardMachine.from_transitions(
        {("u0", "a"): "u1", ("u1", "b"): ("u2", 1.0)}, mdp.propositions, nodes=["u0", "u1", "u2"]
    )
    S, A = mdp.state_index, mdp.action_index
    nan = float("nan")
    above = [(S("r0c0"), A("right"), 0.0), (S("r0c1"), A("right"), 0.0), (S("r0c2"), A("down"), 1.0)]
    below = [(S("r0c0"), A("down"), 0.0), (S("r1c0"), A("right"), 0.0), (S("r1c1"), A("right"), 0.0)]
    end = [(S("r1c2"), A("left"), nan)]
    return Task(mdp, m, name="ab"), Demonstrations.from_lists([above + end] * 3 + [below + end] * 6)


def test_label_noise_a_doubtful_letter_is_chosen_with_the_machine():
    """Two of the three visits to the a cell were recorded o: the labels alone believe o there
    (8 times likelier at 20% noise), but then both routes read 'o b' and are paid 1 and 0: no
    machine pays both, so the choice disbelieves those two labels (log 8 nats) and reads a."""
    task, demos = corridor()
    mdp = task.mdp
    labels = mdp.labels[demos.states].copy()
    labels[0, 1] = labels[1, 1] = mdp.propositions.index("o")
    noisy = attrs.evolve(demos, labels=labels)
    noise = LabelNoise.uniform(mdp.propositions, 0.2)
    learner = Learner(ptp=None, rewards=TraceRewards(EmpiricalPTP(noisy)), encoder=SatEncoder(), irl=None, max_nodes=3)
    res = NoisyLabels(learner, noise=noise).fit(task)
    a_cell = mdp.state_index("r0c1")
    assert res.estimate.beliefs.letter[a_cell] == mdp.propositions.index("o")  # the labels alone
    assert res.labels[a_cell] == mdp.propositions.index("a")  # chosen with the machine
    assert res.chosen.result.search.cost == round(1000 * np.log(8))
    assert res.corrections().pairs() == {(0, 1), (1, 1)}
    (m,) = res.machines
    assert m.reward(m.step(m.nodes[0], "a"), "b") == 1.0 and m.reward(m.nodes[0], "b") == 0.0
    as_recorded = attrs.evolve(learner, rewards=TraceRewards(EmpiricalPTP(demos, labels=labels)))
    assert as_recorded.fit(task).n_nodes is None


def test_label_noise_a_doubtful_letter_is_chosen_under_rewards_within_a_tolerance():
    """The corridor's rewards off by up to 0.04: within ±0.05 the same choice of the a cell's
    letter; weighed as noisy (NoisyRewardEncoder) the choice is refused, the reason said."""
    from rmtk.sat.encoders import NoisyRewardEncoder
    from rmtk.traces.tolerance import TolerantRewards

    task, demos = corridor()
    mdp = task.mdp
    labels = mdp.labels[demos.states].copy()
    labels[0, 1] = labels[1, 1] = mdp.propositions.index("o")
    jitter = np.resize([0.03, -0.02, 0.04, -0.04, 0.01, -0.03], demos.rewards.shape)
    noisy = attrs.evolve(demos, labels=labels, rewards=demos.rewards + jitter)
    noise = LabelNoise.uniform(mdp.propositions, 0.2)
    within = TolerantRewards(EmpiricalPTP(noisy), delta=0.05)
    learner = Learner(ptp=None, rewards=within, encoder=SatEncoder(), irl=None, max_nodes=3)
    res = NoisyLabels(learner, noise=noise).fit(task)
    assert res.labels[mdp.state_index("r0c1")] == mdp.propositions.index("a")
    assert res.corrections().pairs() == {(0, 1), (1, 1)}
    (m,) = res.machines
    assert abs(m.reward(m.step(m.nodes[0], "a"), "b") - 1.0) <= 0.05 and m.reward(m.nodes[0], "b") == 0.0
    weighed = attrs.evolve(learner, rewards=TraceRewards(EmpiricalPTP(noisy)), encoder=NoisyRewardEncoder())
    with pytest.raises(RmtkError, match=r"doubtful after their labels: \d+ states?, .* would be a second objective"):
        NoisyLabels(weighed, noise=noise).fit(task)


def test_label_noise_detector_probabilities_weigh_the_labels(rooms):
    """A detector's probabilities instead of hard labels: the same beliefs and machine."""
    mdp = rooms.mdp
    walks = simulate(rooms, 300, 30, seed=1, policy="uniform", rewards=True)
    noise = LabelNoise.uniform(mdp.propositions, 0.1)
    noisy = recorded(walks, mdp, noise, seed=3)
    detected = attrs.evolve(walks, detections=np.where(walks.mask()[..., None], noise.posterior(noisy.labels), np.nan))
    res = NoisyLabels(Learner(ptp=None, rewards=TraceRewards(EmpiricalPTP(detected)), irl=None)).fit(rooms)
    (m,) = res.machines
    assert isomorphic(m, rooms.machine, rewards=True)
    assert res.estimate.measure.detected and res.estimate.measure.flips.covers(0.1)
    assert res.corrections().pairs() == flips(noisy, mdp)


# ---------------------------------------------------------------------- the command line
PATROL = str(MODELS / "patrol.rm")


def cli_learns_the_patrol(out: str, rooms, capsys) -> str:
    """``rmtk learn`` on the noisy walks at ``out``: refused as they are; with ``--label-noise
    auto`` the patrol, the flip rate's interval holding 0.1. The report."""
    assert main(["learn", PATROL, "--demos", out, "--from", "rewards", "-q"]) == 1
    assert "labels recorded by a detector that errs are read with labels='keep'" in capsys.readouterr().err
    assert main(["learn", PATROL, "--demos", out, "--from", "rewards", "-q", "--label-noise", "auto"]) == 0
    text = capsys.readouterr().out
    line = next(x for x in text.splitlines() if x.startswith("# label noise: "))
    low, high = (float(v) for v in line.split("interval ")[1].split(")")[0].split(" to "))
    assert low <= 0.1 <= high
    assert "# corrections: " in text and "recorded labels believed wrong" in text
    (m,) = dsl.loads(text).machines.values()
    assert isomorphic(m, rooms.machine, rewards=True)
    return text


def test_label_noise_cli_simulates_and_learns(tmp_path, rooms, capsys):
    out = str(tmp_path / "walks.csv")
    argv = ["simulate", PATROL, "-n", "300", "-T", "30", "--seed", "1", "-o", out, "-q", "--rewards"]
    assert main([*argv, "--policy", "uniform", "--label-noise", "0.1"]) == 0
    assert "label noise: each label wrong with probability 0.1 (seed 3)" in capsys.readouterr().err
    cli_learns_the_patrol(out, rooms, capsys)
    assert main(["learn", PATROL, "--demos", out, "--from", "rewards", "-q", "--label-noise", "0.1"]) == 0
    assert "# noise stated: label noise: each label wrong with probability 0.1" in capsys.readouterr().out


def simulated(tmp_path, *flags: str, name: str = "w.csv") -> str:
    """``rmtk simulate`` of the patrol, 300 trajectories of 30 steps with rewards and labels at
    confidence 0.9, and ``flags``: the file."""
    out = str(tmp_path / name)
    argv = ["simulate", PATROL, "-n", "300", "-T", "30", "--seed", "1", "-o", out, "-q", "--rewards"]
    assert main([*argv, "--label-noise", "0.1", *flags]) == 0
    return out


@pytest.mark.parametrize(
    ("simulate_flags", "learn_flags", "says"),
    [
        (
            ["--policy", "uniform", "--reward-noise", "uniform:0.1"],
            ["--from", "rewards", "--tolerance", "auto"],
            ("# rewards within ±", "outputs 0 (8613 steps, ±0), 0.9996 (87 steps, ±0.0995)"),
        ),
        (
            ["--policy", "uniform", "--reward-noise", "replace:0.02"],
            ["--from", "rewards", "--noisy"],
            ("# MaxSAT: the optimum calls 189 observed step(s) noisy",),
        ),
        ([], ["--from", "both"], ("# empirical prefix tree: ", "# reward traces: ")),
    ],
    ids=["tolerance", "noisy", "both"],
)
def test_label_noise_cli_with_noisy_rewards_or_both_evidences(
    tmp_path, rooms, capsys, simulate_flags, learn_flags, says
):
    """--label-noise with rewards within a tolerance, rewards weighed as noisy, or the policy and
    the rewards both: the patrol, the noise's interval holding 0.1."""
    out = simulated(tmp_path, *simulate_flags)
    capsys.readouterr()
    assert main(["learn", PATROL, "--demos", out, "-q", "--label-noise", "auto", *learn_flags]) == 0
    text = capsys.readouterr().out
    line = next(x for x in text.splitlines() if x.startswith("# label noise: "))
    low, high = (float(v) for v in line.split("interval ")[1].split(")")[0].split(" to "))
    assert low <= 0.1 <= high and all(x in text for x in says)
    (m,) = dsl.loads(text).machines.values()
    assert isomorphic(m, rooms.machine, rewards=False) and "isomorphic to the true machine 'patrol'" in text


def test_label_noise_cli_refuses_what_does_not_apply(tmp_path, capsys):
    assert main(["learn", PATROL, "-q", "--label-noise", "auto"]) == 2
    assert "--label-noise does not apply to learning from the task's exact policy" in capsys.readouterr().err
    out = str(tmp_path / "w.csv")
    few = ["simulate", PATROL, "-n", "5", "-T", "5", "--seed", "1", "-o", out, "-q", "--force"]
    assert main([*few, "--rewards", "--label-noise", "0.1"]) == 0
    assert main([*few, "--label-noise", "x=1"]) == 1
    assert "unknown key 'x'" in capsys.readouterr().err
