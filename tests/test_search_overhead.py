"""What the searches around the solver do, made lighter without changing an answer: the WCNF
built by whole lists (rmtk.sat.search.weighted_cnf), SimplestEncoder's first pass, which only
decides the smallest size (SatEncoder.smallest(decide_only=True)), and its optimum, found on
that pass's solver (rmtk.sat.fewest.fewest_search)."""

from pathlib import Path

import numpy as np
import pytest
from pysat.formula import WCNF

from rmtk import Learner, dsl
from rmtk.limits import SearchLimits
from rmtk.sat.encoders import SatEncoder, SimplestEncoder
from rmtk.sat.encoding import Problem
from rmtk.sat.fewest import canonical_order
from rmtk.sat.search import canonical_partial, maxsat_search, weighted_cnf
from rmtk.traces.evidence import TraceRewards
from rmtk.traces.explorers import explore
from rmtk.traces.rewards import reward_traces

MODELS = Path(__file__).resolve().parents[1] / "models"


def test_weighted_cnf_is_what_append_builds():
    rng = np.random.default_rng(0)
    hard = [rng.choice([-1, 1], size=int(m)) * rng.integers(1, 40, size=int(m)) for m in rng.integers(1, 5, size=60)]
    hard = [[int(v) for v in c] for c in hard]
    relax = np.arange(41, 51, dtype=np.int64)
    weights = np.array([1, 3, 0, 2, 2, 0, 7, 1, 1, 5], np.int64)  # a weight of 0 makes the clause hard
    old = WCNF()
    old.extend(hard)
    for b, w in zip(relax.tolist(), weights.tolist()):
        old.append([-b], weight=int(w))
    new = weighted_cnf(hard, relax, weights)
    assert (new.hard, new.soft, new.wght, new.nv, new.topw) == (old.hard, old.soft, old.wght, old.nv, old.topw)
    assert len(hard) == 60  # the caller's clauses are not extended in place
    empty = weighted_cnf([[1, -2]], np.empty(0, np.int64), np.empty(0, np.int64))
    assert (empty.hard, empty.soft, empty.nv) == ([[1, -2]], [], 2)


def test_deciding_the_size_alone_matches_the_search():
    task = dsl.load(MODELS / "office.rm").tasks["coffee"]
    demos = explore(task, 200, 60, seed=3)
    traces = reward_traces(demos, task.mdp)
    problem = Problem(traces.trie, task.mdp.n_propositions, rewards=traces)
    limits = SearchLimits(max_nodes=4, min_nodes=1, max_solutions=20)
    full = SatEncoder().smallest(problem, limits)
    size = SatEncoder().smallest(problem, limits, decide_only=True)
    assert full.n_nodes == size.n_nodes is not None and full.solutions and not size.solutions
    assert size.tried == full.tried and size.complete
    # the simplest machines: a machine of the smallest size with the fewest moving transitions
    res = Learner(ptp=None, rewards=TraceRewards(demos), encoder=SimplestEncoder()).fit(task)
    assert res.n_nodes == full.n_nodes and res.search.tried == full.tried
    moving = [int((s.delta_u[s.used] != np.nonzero(s.used)[0]).sum()) for s in res.solutions]
    assert len(set(moving)) == 1
    assert min(int((s.delta_u[s.used] != np.nonzero(s.used)[0]).sum()) for s in full.solutions) >= moving[0]


def _coffee_mail() -> Problem:
    """The rewards of 120 episodes of the Office World's coffee_mail (ε = 0.5): a problem
    with several simplest machines."""
    task = dsl.load(MODELS / "office.rm").tasks["coffee_mail"]
    demos = explore(task, 120, 60, seed=1, epsilon=0.5)
    traces = reward_traces(demos, task.mdp)
    return Problem(traces.trie, task.mdp.n_propositions, rewards=traces)


def _key(solution):
    return canonical_partial(solution.delta_u, solution.used)[0]


def test_simplest_takes_over_the_formula_of_its_size():
    """SimplestEncoder weighs the moving transitions on the formula and the solver its first
    pass made at the smallest size, and lists the optima there: the same machines as MaxSAT
    on the formula made afresh, in their canonical order."""
    problem = _coffee_mail()
    enc = SimplestEncoder()
    res = enc.search(problem, SearchLimits(max_nodes=5, min_nodes=1, max_solutions=50))
    fresh = maxsat_search(enc.moves, problem, SearchLimits(nodes=res.n_nodes, max_solutions=50))
    assert res.n_nodes is not None and len(res.solutions) == len(fresh.solutions) >= 2  # an order to check
    assert res.complete and fresh.complete
    assert [_key(s) for s in res.solutions] == sorted(_key(s) for s in fresh.solutions)
    assert all(np.array_equal(a.delta_u, b.delta_u) for a, b in zip(res.solutions, canonical_order(fresh.solutions)))
    assert f"{fresh.cost} (node, letter) transitions" in res.message


@pytest.mark.parametrize("solver", ["cadical153", "glucose4", "minisat22"])
def test_the_simplest_machines_do_not_depend_on_the_backend(solver):
    """A complete listing of the simplest machines is the same list on every backend: the
    machines sorted by their canonical key, not in the order a solver found them."""
    problem = _coffee_mail()
    limits = SearchLimits(max_nodes=5, min_nodes=1, max_solutions=50)
    ours = SimplestEncoder(solver=solver).search(problem, limits)
    ref = maxsat_search(SimplestEncoder().moves, problem, SearchLimits(nodes=ours.n_nodes, max_solutions=50))
    assert ours.complete and ref.complete and len(ours.solutions) == len(ref.solutions) >= 2
    keys = [_key(s) for s in ours.solutions]
    assert keys == sorted(_key(s) for s in ref.solutions) and keys == sorted(keys)
    assert f"the simplest machines: {ref.cost} (node, letter)" in ours.message


def test_climbing_from_the_lower_bound_finds_the_same_simplest_machines(monkeypatch):
    """A descending call that spends ``DESCENT_CONFLICTS`` undecided turns the descent into a
    climb (at most the lower bound asked for, one more at a time): the same fewest moving
    transitions and the same machines as the halving descent."""
    import rmtk.sat.fewest as fewest

    problem = _coffee_mail()
    limits = SearchLimits(max_nodes=5, min_nodes=1, max_solutions=50)
    halving = SimplestEncoder(non_stuttering=False).search(problem, limits)
    calls, solve = [], fewest.solve

    def spied(solver, deadline, assumptions=(), conflicts=None):
        sat = solve(solver, deadline, assumptions, conflicts)
        calls.append((conflicts, sat))
        return sat

    monkeypatch.setattr(fewest, "solve", spied)
    monkeypatch.setattr(fewest, "DESCENT_CONFLICTS", 1)
    climbed = SimplestEncoder(non_stuttering=False).search(problem, limits)
    assert (1, None) in calls and calls[-1] == (None, True)  # a descent cut short, then a climb
    assert halving.complete and climbed.complete and len(halving.solutions) >= 1
    assert [_key(s) for s in climbed.solutions] == [_key(s) for s in halving.solutions]
    assert climbed.message == halving.message
