"""The search on a sample of the words grown by counterexamples (rmtk/sat/grown.py) gives the
answer of the search on every word: the same sizes ruled out, the same machines with the same
counts, the same flags, on both machine classes and both encoders, listings cut by
``max_solutions`` included. Tiny samples force several rounds."""

import pytest

from rmtk import dsl
from rmtk.limits import SearchLimits
from rmtk.sat import grown
from rmtk.sat.encoders import SatEncoder, SimplestEncoder
from rmtk.sat.encoding import Problem
from rmtk.sat.search import canonical_partial
from rmtk.traces.evidence import observed_part
from rmtk.traces.explorers import RandomSubgoals, explore
from rmtk.traces.rewards import reward_traces


def answer(res):
    machines = sorted((canonical_partial(s.delta_u, s.used)[0], s.raw_count, s.completions) for s in res.solutions)
    return res.n_nodes, res.tried, res.complete, res.more, res.cost, machines


@pytest.fixture(scope="module")
def problems():
    """Reward traces of three tasks, as problems over compressed and over raw words."""
    office, craft = dsl.load_model("office"), dsl.load_model("craft")
    runs = [
        (office.get("coffee_mail", "task"), explore(office.get("coffee_mail", "task"), 60, 60, seed=3, epsilon=0.5)),
        (craft.get("t8", "task"), explore(craft.get("t8", "task"), 20, 120, seed=1, epsilon=0.3)),
        (
            office.get("patrol", "task"),
            explore(office.get("patrol", "task"), 40, 60, seed=2, explorer=RandomSubgoals(epsilon=0.1, avoid=("n",))),
        ),
    ]
    out = []
    for task, demos in runs:
        for compress in (True, False):
            obs = observed_part(reward_traces(demos, task.mdp, compress=compress))
            out.append((task.name, compress, Problem(obs.trie, task.mdp.n_propositions, rewards=obs)))
    return out


@pytest.mark.parametrize("kind", [SimplestEncoder, SatEncoder])
@pytest.mark.parametrize("listed", [None, 2])
def test_the_sample_gives_the_whole_answer(problems, monkeypatch, kind, listed):
    monkeypatch.setattr(grown, "FIRST_SAMPLE", 5)  # a few observations first: several rounds
    monkeypatch.setattr(grown, "GIVE_UP", 10.0)  # never the whole trie instead
    rounds = []
    for name, compress, problem in problems:
        encoder = kind(non_stuttering=compress)
        whole = encoder._fewest if kind is SimplestEncoder else encoder._smallest
        limits = SearchLimits(max_nodes=5, max_solutions=listed)

        floors: list = []

        def counted(sub, lim, whole=whole, floors=floors):
            rounds.append(sub.trie.n_nodes)
            floors.append(lim.fewest_floor)
            return whole(sub, lim)

        assert answer(grown.grown_search(counted, problem, limits)) == answer(whole(problem, limits)), (name, compress)
        assert floors[0] is None
        if kind is SimplestEncoder:  # each round starts from the last sample's fewest moving transitions
            assert all(f is not None for f in floors[1:]), (name, compress)
    assert len(rounds) > 2 * len(problems)  # the samples grew: more than one round per problem


def test_a_valid_floor_leaves_the_fewest_moving_transitions(problems):
    """``SearchLimits.fewest_floor`` at any lower bound (none, below, at the optimum) gives the
    same machines and count; at another size it is not read."""
    for name, compress, problem in problems:
        encoder = SimplestEncoder(non_stuttering=compress)
        limits = SearchLimits(max_nodes=5)
        plain = encoder._fewest(problem, limits)
        n, best = plain.n_nodes, plain.cost
        for floor in {(n, 1), (n, max(best - 1, 1)), (n, best), (n + 1, best + 3)}:
            res = encoder._fewest(problem, limits.evolve(fewest_floor=floor))
            assert answer(res) == answer(plain), (name, compress, floor)


def test_a_large_trie_is_searched_on_a_sample(problems, monkeypatch):
    """Past ``SMALL_TRIE`` words (``SMALL_FOLDED`` folded ones for SimplestEncoder, which
    encodes them folded), the encoders' own search goes through the sample."""
    monkeypatch.setattr(grown, "SMALL_TRIE", 1)
    monkeypatch.setattr(grown, "SMALL_FOLDED", 1)
    calls = []
    real = grown.grown_search
    monkeypatch.setattr(grown, "grown_search", lambda *a: calls.append(1) or real(*a))
    _, _, problem = problems[0]
    SimplestEncoder().search(problem, SearchLimits(max_nodes=5))
    SatEncoder().search(problem, SearchLimits(max_nodes=5, max_solutions=3))
    assert len(calls) == 2
    monkeypatch.setattr(grown, "SMALL_FOLDED", problem.folded().n_nodes + 1)
    SimplestEncoder().search(problem, SearchLimits(max_nodes=5))
    assert len(calls) == 2  # its folded words are fewer: every word at once
    SatEncoder().search(problem, SearchLimits(max_nodes=5, max_solutions=3))
    assert len(calls) == 3


def test_giving_up_on_the_sample_searches_the_whole_trie(problems, monkeypatch):
    """Once the samples searched hold more than ``GIVE_UP`` of the words, the whole trie is
    searched, the sizes already ruled out skipped: the same answer."""
    monkeypatch.setattr(grown, "FIRST_SAMPLE", 5)
    monkeypatch.setattr(grown, "GIVE_UP", 0.01)
    for _, compress, problem in problems:
        encoder = SimplestEncoder(non_stuttering=compress)
        limits = SearchLimits(max_nodes=5)
        whole = answer(encoder._fewest(problem, limits))
        assert answer(grown.grown_search(encoder._fewest, problem, limits)) == whole
