"""Learning while exploring (rmtk/experiments/jirp.py, JIRP's loop): Q-learning on the current
hypothesis, counterexample episodes, re-inference from the rewards alone, until the machine
stops changing; the final machine pays, on what the episodes exercise, what the truth pays."""

import numpy as np
import pytest

from rmtk import dsl
from rmtk.cli.main import main
from rmtk.experiments.jirp import learn_while_exploring
from rmtk.machine.model import isomorphic
from rmtk.traces.rewards import reward_traces


def explore(model, name):
    task = dsl.load_model(model).get(name, "task")
    return task, learn_while_exploring(task, episodes=3000, horizon=100, patience=500, epsilon=0.3, seed=0)


def reward_equivalent_on_episodes(x, task):
    """The final machine pays on every (word, letter) the episodes observed what the truth
    pays (its own rewards, not only the recorded ones), and each node of the truth the words
    reach is one node of the final machine (which may merge nodes that pay alike there)."""
    traces = reward_traces(x.episodes, task.mdp)
    m, truth = x.machine, task.machine
    learned = traces.trie.run(m.delta_u, m.initial)[traces.node]
    true = traces.trie.run(truth.delta_u, truth.initial, task.letter_of_proposition)[traces.node]
    pairs = set(zip(learned.tolist(), true.tolist()))
    assert len(pairs) == len({b for _, b in pairs}), pairs
    paid = m.delta_r[learned, traces.letter]
    assert np.array_equal(paid, truth.delta_r[true, task.letter_of_proposition[traces.letter]])
    assert traces.explains(m.delta_u, m.delta_r, m.initial).all()
    return traces


@pytest.mark.parametrize(("model", "name", "rounds"), [("office", "coffee", 2), ("patrol", "patrol", 4)])
def test_the_loop_ends_reward_equivalent_to_the_truth(model, name, rounds):
    task, x = explore(model, name)
    assert x.converged and len(x.rounds) == rounds
    assert [r.machine.n_nodes for r in x.rounds][-1] == x.machine.n_nodes
    assert all(r.expected != r.paid for r in x.rounds)  # each round is a real counterexample
    assert x.counterexamples.n_trajectories == rounds
    reward_equivalent_on_episodes(x, task)
    if name == "patrol":  # the rooms patrol: the whole machine
        assert isomorphic(x.machine, task.machine, rewards=True)
    else:  # episodes end at the end node: the coffee machine but its end node
        assert x.machine.n_nodes == 2 and x.machine.reward("u1", "g") == 1.0


def test_reproduce_jirp_quick(capsys):
    assert main(["reproduce", "jirp", "--quick", "-q", "--no-figures", "--set", "tasks=patrol:patrol"]) == 0
    out = capsys.readouterr().out
    assert "patrol:patrol       514" in out and "u3 -> u0 on D reward 1" in out
