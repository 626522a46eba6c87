"""Learning without a transition model (Space), the simplest machines among the smallest
(SimplestEncoder), margin IRL for a near-deterministic expert, and the scripted expert."""

from pathlib import Path

import numpy as np
import pytest

from rmtk import (
    ConfidenceMiner,
    EmpiricalPTP,
    ExactPTP,
    Learner,
    ModelError,
    NodePolicyTable,
    RmtkError,
    dsl,
    isomorphic,
)
from rmtk.mdp.space import Space
from rmtk.product.simulate import simulate
from rmtk.progress import Progress
from rmtk.ptp.empirical import count_stream
from rmtk.ptp.exact import shortest_path_table
from rmtk.rewards.margin import MarginIRL
from rmtk.sat.encoders import SimplestEncoder

MODELS = Path(__file__).resolve().parents[1] / "models"


@pytest.fixture(scope="module")
def office():
    return dsl.load(MODELS / "office.rm")


@pytest.fixture(scope="module")
def coffee_counts(office):
    task = office.tasks["coffee"]
    table = shortest_path_table(task, 0.1)
    demos = simulate(task, 10_000, 40, seed=0, policy=table.transpose(1, 0, 2))
    return task, table, count_stream(task.mdp, demos.chunks(5000))


def test_shortest_path_expert_by_hand(office):
    task = office.tasks["coffee"]
    table = shortest_path_table(task, 0.2)
    mdp, m = task.mdp, task.machine
    u1, end = m.node_index("u1"), m.node_index("terminal")
    s = mdp.state_index("r3c4")  # just above the office: in u1 go down, onto g
    assert np.allclose(table[u1, s], [0.05, 0.05, 0.85, 0.05])
    assert np.allclose(table[end, s], 0.25)  # nothing left to do: uniform
    s = mdp.state_index("r1c3")  # the only shortest way to the coffee at r2c3 goes down
    assert table[m.initial, s].argmax() == mdp.action_index("down")
    assert np.allclose(table.sum(axis=2), 1.0)
    with pytest.raises(ModelError, match="epsilon"):
        shortest_path_table(task, 1.5)


def test_space_validates_and_learner_fits_it(coffee_counts):
    task, table, counts = coffee_counts
    space = Space(task.mdp.n_states, task.mdp.n_actions, task.mdp.propositions, "office data")
    assert space.n_propositions == 9 and "no transition model" in space.summary()
    with pytest.raises(ModelError, match="at least 1"):
        Space(0, 4, ["a"])
    with pytest.raises(ModelError, match="duplicate proposition"):
        Space(3, 4, ["a", "a"])
    notes = []

    class Notes(Progress):
        def note(self, message):
            notes.append(message)

    res = Learner(
        EmpiricalPTP(counts), miner=ConfidenceMiner(0.05), encoder=SimplestEncoder(), max_nodes=4, progress=Notes()
    ).fit(space)
    assert len(res.machines) == 1 and res.verdicts is None and res.reward_fits is None
    assert isomorphic(res.machines[0], task.machine.with_alphabet_order(space.propositions), rewards=False)
    assert any("no transition model" in n for n in notes)
    with pytest.raises(RmtkError, match="Task or a LabeledMDP"):
        Learner().fit("office")


def test_simplest_encoder_picks_the_truth_among_many(coffee_counts):
    task, table, counts = coffee_counts
    common = dict(miner=ConfidenceMiner(0.05), irl=None, max_nodes=4)
    plain = Learner(EmpiricalPTP(counts, expert=NodePolicyTable(table)), max_solutions=40, **common).fit(task)
    simplest = Learner(EmpiricalPTP(counts, expert=NodePolicyTable(table)), encoder=SimplestEncoder(), **common).fit(
        task
    )
    assert plain.n_nodes == simplest.n_nodes == 3
    assert len(plain.machines) == 40 and not plain.search.complete  # rare words go anywhere
    assert len(simplest.machines) == 1 and simplest.search.complete
    assert simplest.isomorphic_to_truth() == (True,) and simplest.verdicts[0].consistent
    assert "4 (node, letter) transitions leave their node" in simplest.search.message
    assert simplest.search.cost is None and simplest.solutions[0].dropped == ()
    with pytest.raises(RmtkError, match="every-depth learning need SatEncoder"):
        Learner(ExactPTP(None, source=NodePolicyTable(table)), encoder=SimplestEncoder(), irl=None).fit(task)


@pytest.mark.parametrize(
    "name, rewarded",
    [
        ("coffee", {("u0", "f"), ("u1", "g")}),
        ("coffee_mail", {("u0", "e"), ("u0", "f"), ("u1", "f"), ("u2", "e"), ("u4", "g")}),
    ],
)
def test_margin_irl_rewards_progress(office, name, rewarded):
    task = office.tasks[name]
    table = shortest_path_table(task, 0.1)
    res = Learner(ExactPTP(None, source=NodePolicyTable(table)), irl=MarginIRL(), max_nodes=6).fit(task)
    m, truth = res.machines[0], task.machine
    assert res.isomorphic_to_truth() == (True,)
    # the learned nodes are named in breadth-first order like the truth's canonical form
    canon = truth.canonical().with_alphabet_order(m.alphabet)
    assert np.array_equal(canon.delta_u, m.delta_u)
    paid = {(m.nodes[u], m.alphabet[k]) for u, k in zip(*np.nonzero(m.delta_r > 0))}
    assert paid == rewarded
    assert (m.delta_r >= 0).all() and m.delta_r.max() == 1.0  # the step into the office pays the most
    loops = m.delta_u == np.arange(m.n_nodes)[:, None]
    assert (m.delta_r[loops] == 0).all()  # a letter that loops pays nothing
    assert res.reward_fits[0].states > 0 and res.reward_fits[0].margin > 0


def test_margin_irl_on_counts_agrees_with_exact(coffee_counts):
    task, table, counts = coffee_counts
    res = Learner(
        EmpiricalPTP(counts), miner=ConfidenceMiner(0.05), encoder=SimplestEncoder(), irl=MarginIRL(), max_nodes=4
    ).fit(task)
    m = res.machines[0]
    assert {(m.nodes[u], m.alphabet[k]) for u, k in zip(*np.nonzero(m.delta_r))} == {("u0", "f"), ("u1", "g")}
    with pytest.raises(RmtkError, match="a system of"):
        MarginIRL(max_states=10).fit(task.mdp, res.machines, res.ptp, gamma=0.9)


def test_report_prints_margin_fits(office):
    import io

    from rmtk.learner.report import report

    task = office.tasks["coffee"]
    res = Learner(
        ExactPTP(None, source=NodePolicyTable(shortest_path_table(task, 0.1))), irl=MarginIRL(), max_nodes=6
    ).fit(task)
    out = io.StringIO()
    report(task, res, out=out)
    f = res.reward_fits[0]
    assert f"# rewards (margin IRL): summed margin {f.margin:.6g} over {f.states} product states" in out.getvalue()
    back = dsl.loads(out.getvalue())  # the report still loads as a .rm file, rewards included
    assert np.array_equal(next(iter(back.machines.values())).delta_r, res.machines[0].delta_r)
