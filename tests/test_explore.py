"""The explorers of rmtk/traces/explorers.py: the ε-greedy expert and random subgoals."""

import numpy as np
import pytest

from rmtk import Learner, dsl
from rmtk.errors import ModelError
from rmtk.product.simulate import rollout_nodes
from rmtk.sat.encoders import SimplestEncoder
from rmtk.traces.evidence import TraceRewards
from rmtk.traces.explorers import RandomSubgoals, explore


@pytest.fixture(scope="module")
def patrol(models_dir):
    return dsl.load(models_dir / "office.rm").get("patrol", "task")


def test_random_subgoals_are_seeded_and_go_around_what_they_avoid(patrol):
    explorer = RandomSubgoals(epsilon=0.0, avoid=("n",))
    mdp = patrol.mdp
    assert [mdp.propositions[g] for g in explorer.targets(patrol)] == list("abcdefg")
    a = explore(patrol, 40, 60, seed=5, explorer=explorer)
    b = explore(patrol, 40, 60, seed=5, explorer=explorer)
    assert np.array_equal(a.states, b.states) and np.array_equal(a.rewards, b.rewards, equal_nan=True)
    labels = np.where(a.states >= 0, mdp.labels[np.maximum(a.states, 0)], -1)
    n = mdp.proposition_index("n")
    # no random action, decorations avoided: only an episode that starts on one sees one
    assert not (labels[:, 1:] == n).any()
    # goals are reached and replaced: an episode visits several of the marked cells
    marked = [len(set(row[row >= 0].tolist()) - {mdp.proposition_index("i")}) for row in labels]
    assert np.median(marked) >= 3


def test_random_subgoals_identify_patrol_from_rewards_alone(patrol):
    """The ε-greedy expert visits the marks in patrol's order; a smaller machine explains its
    rewards (docs/benchmarks/rewards.md). Random subgoals visit them in every order."""
    demos = explore(patrol, 200, 100, seed=0, explorer=RandomSubgoals(epsilon=0.1, avoid=("n",)))
    r = Learner(ptp=None, rewards=TraceRewards(demos), encoder=SimplestEncoder()).fit(patrol)
    assert r.n_nodes == 4 and len(r.machines) == 1 and r.search.complete
    # the learned nodes correspond one to one with the truth's non-end nodes along the episodes
    props = patrol.mdp.labels[np.maximum(demos.states, 0)]
    true = rollout_nodes(patrol, demos)
    learned = np.zeros_like(true)
    u = np.zeros(len(props), np.int64)
    for t in range(props.shape[1]):
        u = r.solutions[0].delta_u[u, props[:, t]]
        learned[:, t] = u
    live = np.arange(props.shape[1])[None, :] < demos.lengths[:, None] - 1
    pairs = set(zip(learned[live].tolist(), true[live].tolist()))
    assert len(pairs) == 4 == len({a for a, _ in pairs}) == len({b for _, b in pairs})


def test_explorer_and_epsilon_are_not_both_given(patrol):
    with pytest.raises(ModelError, match="give it to the explorer"):
        explore(patrol, 2, 5, seed=0, epsilon=0.5, explorer=RandomSubgoals())
    with pytest.raises(ModelError, match="two or more propositions"):
        RandomSubgoals(goals=("a",)).targets(patrol)
