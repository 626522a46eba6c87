"""Reward traces encoded on their words folded, or cut to a tree of the deciding words
(rmtk/sat/folded.py, SimplestEncoder's formula from rewards alone: raw words, compressed words)
admit the same machines as on every word of the trie: the same sizes ruled out, fewest moving
transitions, machines and counts, in both machine classes, on small random instances
(explorers' words paid by random machines); and the folding numbers two words alike exactly
when their observed futures are the same (checked against a recursive computation)."""

import attrs
import numpy as np
import pytest

from rmtk import dsl
from rmtk.limits import SearchLimits
from rmtk.sat import folded as folded_module
from rmtk.sat.encoders import SimplestEncoder
from rmtk.sat.encoding import Problem, reward_outputs
from rmtk.sat.folded import contract_runs, deciding_rows, fold
from rmtk.sat.search import canonical_partial
from rmtk.traces.evidence import observed_part
from rmtk.traces.explorers import RandomSubgoals, explore
from rmtk.traces.rewards import reward_traces


@attrs.frozen
class UnfoldedSimplest(SimplestEncoder):
    """SimplestEncoder on every word of the trie (the formula before folding)."""

    def encode(self, problem, n):
        formula = self.encode_negatives(problem, n)
        formula.hard += reward_outputs(formula.pool, problem.rewards)
        return formula


def answer(res):
    machines = sorted((canonical_partial(s.delta_u, s.used)[0], s.raw_count, s.completions) for s in res.solutions)
    return res.n_nodes, res.tried, res.complete, res.more, res.cost, machines


def paid_by_a_random_machine(obs, seed: int):
    """``obs`` with each row's value replaced by what a random machine of 2 or 3 nodes pays
    there (0, 1 or 2 (node, letter)); non-stuttering for compressed words."""
    rng = np.random.default_rng(seed)
    n, K = int(rng.integers(2, 4)), int(obs.letter.max()) + 1
    delta = rng.integers(0, n, (n, K))
    if obs.trie.compressed:  # every target stays on its letter
        for k in range(K):
            targets = np.unique(delta[:, k])
            delta[targets, k] = targets
    pays = rng.choice([0.0, 0.0, 1.0, 2.0], (n, K))
    if seed % 2:  # the commonest letter (of nothing) pays 0 everywhere: its runs contract over raw words
        pays[:, np.bincount(obs.letter).argmax()] = 0.0
    node = obs.trie.run(delta, 0)
    return attrs.evolve(obs, value=pays[node[obs.node], obs.letter])


def instances():
    """Small random instances: the words of random walks and random subgoals in the Office
    World and Craft World, each paid by a random machine, compressed and raw."""
    office, craft = dsl.load_model("office"), dsl.load_model("craft")
    walks = [
        explore(office.get("coffee", "task"), 8, 25, seed=0, epsilon=1.0),
        explore(office.get("patrol", "task"), 6, 30, seed=1, explorer=RandomSubgoals(epsilon=0.1, avoid=("n",))),
        explore(craft.get("t5", "task"), 5, 30, seed=2, explorer=RandomSubgoals(epsilon=0.1)),
    ]
    tasks = [office.get("coffee", "task"), office.get("patrol", "task"), craft.get("t5", "task")]
    for i, (task, demos) in enumerate(zip(tasks, walks)):
        for compress in (True, False):
            words = reward_traces(demos, task.mdp, compress=compress)
            for seed in range(8):
                obs = observed_part(paid_by_a_random_machine(words, 10 * i + seed))
                yield f"{task.name}-{seed}", compress, Problem(obs.trie, task.mdp.n_propositions, rewards=obs)


@pytest.fixture(scope="module")
def problems():
    return list(instances())


@pytest.mark.parametrize("tree_from", [0, None])
@pytest.mark.parametrize("listed", [None, 1])
def test_folded_words_give_the_same_simplest_machines(problems, listed, tree_from, monkeypatch):
    """Also with compressed words as a tree (``TREE_FROM`` 0: every instance)."""
    if tree_from is not None:
        monkeypatch.setattr(folded_module, "TREE_FROM", tree_from)
    for name, compress, problem in problems:
        limits = SearchLimits(max_nodes=3, max_solutions=listed)
        folded = SimplestEncoder(non_stuttering=compress)._fewest(problem, limits)
        plain = UnfoldedSimplest(non_stuttering=compress)._fewest(problem, limits)
        if listed is None or plain.complete:
            assert answer(folded) == answer(plain), (name, compress)
        else:  # which of the machines a cut listing keeps is the solver's choice
            assert answer(folded)[:5] == answer(plain)[:5], (name, compress)
        if not compress or tree_from is None:  # a tree has more clauses, which propagate (rmtk.sat.folded.cut)
            assert folded.clauses <= plain.clauses


def futures(obs):
    """Each trie node's observed future as a nested tuple, built recursively (the words cut to
    those with a deciding row at or below them): the reference the folding is checked on."""
    trie = obs.trie
    keep = deciding_rows(obs)
    rows: dict = {}
    for p, k, v in zip(obs.node[keep].tolist(), obs.letter[keep].tolist(), obs.value[keep].tolist()):
        rows.setdefault(p, set()).add((k, v))
    kids: dict = {}
    for c in range(1, trie.n_nodes):
        kids.setdefault(int(trie.parent[c]), []).append(c)
    memo: dict = {}

    def future(p):
        if p not in memo:
            below = [(int(trie.letter[c]), future(c)) for c in kids.get(p, [])]
            memo[p] = (tuple(sorted(rows.get(p, ()))), tuple(sorted(b for b in below if b[1] is not None)))
            if p and not memo[p][0] and not memo[p][1]:
                memo[p] = None  # nothing deciding at or below: cut
        return memo[p]

    for level in trie.levels()[::-1]:  # deepest first: no deep recursion
        for p in level.tolist():
            future(p)
    return memo


def test_the_folding_merges_exactly_the_words_with_one_future(problems):
    for name, compress, problem in problems[::2]:
        obs = problem.rewards
        folded = fold(obs)
        memo = futures(obs)
        distinct = {f for f in memo.values() if f is not None} | {memo[0]}
        assert folded.n_nodes == len(distinct), (name, compress)
        # the graph's edges and rows are those of the futures, each once
        assert len(folded.node) == len({(f, r) for f in distinct for r in f[0]})
        assert len(folded.edge_parent) == len({(f, e) for f in distinct for e in f[1]})
        assert set(np.unique(folded.letter).tolist()) <= set(obs.letter[deciding_rows(obs)].tolist())


def test_a_letter_paid_one_value_decides_nothing():
    office = dsl.load_model("office")
    task = office.get("coffee", "task")
    obs = observed_part(reward_traces(explore(task, 10, 30, seed=0), task.mdp, compress=True))
    keep = deciding_rows(obs)
    for k in np.unique(obs.letter).tolist():
        paid = np.unique(obs.value[obs.letter == k])
        assert keep[obs.letter == k].all() == (len(paid) > 1)
        assert not keep[obs.letter == k].any() or len(paid) > 1


def observed(words, delta: np.ndarray) -> set:
    """The (machine node, letter, value) the rows of a graph of words observe under the
    transitions ``delta``: each graph node's machine nodes propagated along its edges (an edge
    of power s applies δ_k 2^s times) until nothing changes."""
    reach = np.zeros((words.n_nodes, delta.shape[0]), bool)
    reach[0, 0] = True
    edges = list(zip(words.edge_parent.tolist(), words.edge_letter.tolist(), words.edge_child.tolist()))
    for _ in range(words.n_nodes):
        before = reach.copy()
        for (p, k, c), s in zip(edges, words.edge_power.tolist()):
            f = delta[:, k]
            for _ in range(s):
                f = f[f]
            reach[c, f[np.flatnonzero(reach[p])]] = True
        if np.array_equal(before, reach):
            break
    return {(u, k, v) for p, k, v in zip(words.node, words.letter, words.value) for u in np.flatnonzero(reach[p])}


def test_contracted_runs_observe_what_the_folded_words_do(problems):
    contracted = 0
    rng = np.random.default_rng(0)
    for name, compress, problem in problems:
        if compress:
            continue
        words = fold(problem.rewards)
        runs = contract_runs(words)
        contracted += words.n_nodes - runs.n_nodes
        for _ in range(5):
            delta = rng.integers(0, 3, (3, problem.n_letters))
            assert observed(runs, delta) == observed(words, delta), name
    assert contracted > 0


def test_letter_powers_are_the_powers_of_the_transitions():
    """Given every transition (units), the power variables are forced to δ_k^(2^s): their one
    model holds those and only those."""
    from pysat.solvers import Solver

    from rmtk.sat.encoding import VarPool, determinism, full_specification, letter_powers

    rng = np.random.default_rng(1)
    for n in (2, 3, 4):
        pool = VarPool(n, 3, 1, 0)
        step, clauses = letter_powers(pool, np.array([0, 2, 2]), np.array([3, 1, 2]))
        delta = rng.integers(0, n, (n, 3))
        units = [[int(pool.t(i, k, delta[i, k]))] for i in range(n) for k in range(3)]
        with Solver(
            name="minisat22", bootstrap_with=determinism(pool) + full_specification(pool) + clauses + units
        ) as s:
            assert s.solve()
            model = set(s.get_model())
            for k, top in ((0, 3), (2, 2)):
                f = delta[:, k]
                for p in range(1, top + 1):
                    f = f[f]
                    want = {int(step[k, p, i, f[i]]) for i in range(n)}
                    assert all(v in model for v in want)
                    others = {int(v) for v in step[k, p].ravel()} - want
                    assert not any(v in model for v in others)
                    assert not s.solve(assumptions=[int(step[k, p, 0, (f[0] + 1) % n])])
            assert not step[1, 1:].any()  # letter 1 has no power above 0


def test_sizes_decided_by_climbing_give_the_same_answers(problems, monkeypatch):
    """A size whose first call is undecided is decided by asking for few moving transitions,
    one more at a time (rmtk.sat.fewest.decide_size): with a budget of one conflict, so that
    every size climbs, the same sizes, fewest moving transitions and machines."""
    from rmtk.sat import fewest

    monkeypatch.setattr(folded_module, "TREE_FROM", 0)  # compressed words as a tree
    limits = SearchLimits(max_nodes=3)
    before = [answer(SimplestEncoder(non_stuttering=c)._fewest(p, limits)) for _, c, p in problems]
    monkeypatch.setattr(fewest, "DECIDE_CONFLICTS", 1)
    climbs = []
    decide = fewest.decide_size

    def counted(*args, **kwargs):
        sat, climbed = decide(*args, **kwargs)
        climbs.append(climbed is not None)
        return sat, climbed

    monkeypatch.setattr(fewest, "decide_size", counted)
    after = [answer(SimplestEncoder(non_stuttering=c)._fewest(p, limits)) for _, c, p in problems]
    assert after == before
    assert sum(climbs) >= 10, climbs  # the climb was taken
