"""Conformance suites (rmtk/active/conformance.py) against an independent brute force on small
random models: when the expert's answers on the suite agree with the hypothesis, every memory
whose configuration machine is within the suite's bound, with any policy that reproduces the
answers, agrees with the hypothesis at every history; and the adaptive walks without a model
walk longer and more until the unseen share is small."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from rmtk import LabeledMDP, dsl
from rmtk.active.asking import Asker, Budget
from rmtk.active.checks import AdaptiveWalks
from rmtk.active.conformance import Configurations, ConformanceSuite
from rmtk.active.experts import SimulatedExpert, realisable
from rmtk.errors import RmtkError


def _idempotents(m: int) -> list[tuple[int, ...]]:
    """Maps f of {0..m-1} with f(f(u)) = f(u): one letter of a non-stuttering machine."""
    return [f for f in itertools.product(range(m), repeat=m) if all(f[f[u]] == f[u] for u in range(m))]


def _machines(m: int, K: int):
    """Every non-stuttering machine of m nodes over K letters, as ``(m, K)`` arrays."""
    for cols in itertools.product(_idempotents(m), repeat=K):
        yield np.array(cols, dtype=np.int64).T


def _mdp(rng, S: int, K: int) -> LabeledMDP:
    """A random labeled MDP of S states and 2 actions (deterministic moves to random states),
    labels mostly changing along the moves, so that the sets of states a label word can end in
    are many; every letter used."""
    while True:
        nxt = rng.integers(0, S, (S, 2))
        labels = rng.integers(0, K, S)
        for _ in range(3):  # recolour so that most moves change the label
            for s in range(S):
                used = set(labels[nxt[s]].tolist())
                free = [k for k in range(K) if k not in used]
                if free:
                    labels[s] = free[int(rng.integers(len(free)))]
        if len(set(labels.tolist())) == K:
            break
    P = np.zeros((2, S, S))
    for a in range(2):
        P[a, np.arange(S), nxt[:, a]] = 1
    init = np.zeros(S)
    init[rng.choice(S, size=2, replace=False)] = 0.5
    return LabeledMDP.from_dense(P, labels.tolist(), [f"p{k}" for k in range(K)], init, name="random")


def _random_machine(rng, m: int, K: int) -> np.ndarray:
    idem = _idempotents(m)
    return np.array([idem[int(rng.integers(len(idem)))] for _ in range(K)], dtype=np.int64).T


def _refine(rng, delta: np.ndarray) -> np.ndarray:
    """A machine of one node more that maps onto ``delta`` (a copy of a node some letters lead
    into): it splits histories ``delta`` merges, never the reverse, so it is consistent with
    every expert ``delta`` is consistent with."""
    n, K = delta.shape
    v = int(rng.integers(n))
    big = np.vstack([delta, delta[v : v + 1]])
    for u in range(n + 1):
        for k in range(K):
            if big[u, k] == v and rng.random() < 0.5 and big[v, k] != v:
                big[u, k] = n
    big[n] = np.where(big[n] == v, n, big[n])  # the copy stays itself where v stays v
    # keep it non-stuttering: after k into the copy, k again stays there
    for k in range(K):
        if big[v, k] == v:
            big[n, k] = n
    return big


def _triples(mdp, G, H) -> set:
    """Every (state, node of G, node of H) some history reaches: breadth first on the MDP's
    moves, both machines reading each new label (a repeated label is read once: compressed
    words)."""
    succ = mdp.successor_matrix()
    lab = mdp.labels
    todo = [(int(s), int(G[0, lab[s]]), int(H[0, lab[s]])) for s in mdp.start_states]
    seen = set(todo)
    while todo:
        s, g, h = todo.pop()
        for t in succ.indices[succ.indptr[s] : succ.indptr[s + 1]].tolist():
            k = lab[t]
            nxt = (t, g, h) if k == lab[s] else (t, int(G[g, k]), int(H[h, k]))
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def _label_automaton(mdp):
    """The sets of end states of label words (rmtk.active.experts.realisable, word by word) and
    their moves: ``firsts[k]`` and ``moves[(d, k)]``, sets as bytes of the state mask."""
    K = mdp.n_propositions
    firsts, moves = {}, {}
    todo, seen = [], set()
    for k in range(K):
        d = realisable(mdp, (k,))
        if d.any():
            firsts[k] = d.tobytes()
            if d.tobytes() not in seen:
                seen.add(d.tobytes())
                todo.append((k,))
    while todo:
        w = todo.pop()
        d = realisable(mdp, w).tobytes()
        for k in range(K):
            if k == w[-1]:
                continue
            d2 = realisable(mdp, w + (k,))
            if d2.any():
                moves[(d, k)] = d2.tobytes()
                if d2.tobytes() not in seen:
                    seen.add(d2.tobytes())
                    todo.append(w + (k,))
    return firsts, moves


def _configurations(G, firsts, moves) -> int:
    """How many (node, end states) configurations the memory G reaches with the model."""
    todo = [(int(G[0, k]), d) for k, d in firsts.items()]
    seen = set(todo)
    while todo:
        g, d = todo.pop()
        for k in range(G.shape[1]):
            d2 = moves.get((d, k))
            if d2 is not None and (int(G[g, k]), d2) not in seen:
                seen.add((int(G[g, k]), d2))
                todo.append((int(G[g, k]), d2))
    return len(seen)


def _final(delta, word):
    u = 0
    for k in word:
        u = int(delta[u, k])
    return u


def test_every_memory_within_the_bound_that_the_answers_do_not_refute_agrees_with_the_hypothesis():
    """On random models (3 letters, 6 to 9 states) with a random 3-node expert, the suite with
    k = 2 is built for the truth, a refinement of it and a random 2-node hypothesis. Whenever
    the expert's answers on the suite agree with the hypothesis, every non-stuttering memory of
    at most 3 nodes whose configurations number at most the suite's bound, with any policy that
    reproduces the answers, puts the expert's class at every (state, its node, hypothesis node)
    it reaches equal to the hypothesis's (no unanswered cell: else a policy could differ
    there); beyond the bound some memories do not, so the bound is what the suite promises."""
    checked = beyond = failed = 0
    for seed in range(6):
        rng = np.random.default_rng(seed)
        K = 3
        mdp = _mdp(rng, int(rng.integers(6, 10)), K)
        while True:  # a memory whose nodes the model reaches
            truth = _random_machine(rng, 3, K)
            if len({g for _, g, _ in _triples(mdp, truth, truth)}) >= 2:
                break
        cls = rng.integers(0, 3, (mdp.n_states, truth.shape[0]))

        def expert(word, s, truth=truth, cls=cls):  # the true expert's class after a history
            return int(cls[s, _final(truth, word)])

        firsts, moves = _label_automaton(mdp)
        memories = [(G, _configurations(G, firsts, moves)) for m in (1, 2, 3) for G in _machines(m, K)]
        for H in (truth, _refine(rng, truth), _random_machine(rng, 2, K)):
            rep = Configurations.of(mdp, H).representatives()
            node_class = {key: expert(*h) for key, h in rep.items()}
            suite = ConformanceSuite(extra=2).suite(mdp, H, lambda s, h, nc=node_class: nc[(s, h)])
            assert not suite.truncated and suite.complete_for == suite.minimal + 2
            assert suite.end_sets == len(set(firsts.values()) | set(moves.values()))
            asked = {h: expert(*h) for h in suite.histories + suite.partner}
            pairs = list(zip(suite.histories, suite.partner))
            if any(asked[h] != asked[p] for h, p in pairs):
                # a genuine counterexample: two histories H merges that the expert tells apart
                failed += 1
                (w1, s1), (w2, s2) = next((h, p) for h, p in pairs if asked[h] != asked[p])
                assert s1 == s2 and _final(H, w1) == _final(H, w2) and expert(w1, s1) != expert(w2, s2)
                continue
            for G, size in memories:
                pinned: dict = {}
                for (w, s), a in asked.items():  # the cells the answers pin; G cannot give one two classes
                    if pinned.setdefault((s, _final(G, w)), a) != a:
                        break
                else:
                    agrees = all(pinned.get((s, g)) == node_class[(s, h)] for s, g, h in _triples(mdp, G, H))
                    if size <= suite.complete_for:
                        checked += 1
                        assert agrees, (seed, G.tolist(), H.tolist())
                    elif not agrees:
                        beyond += 1
    assert checked > 1000 and beyond > 0 and failed > 0


def test_the_suite_asks_behind_a_long_label_word():
    """Patrol with a 1-node hypothesis: the truth's node after A B C sits behind a three-letter
    word; the suite for k = 3 asks there and finds the expert acting differently."""
    patrol = dsl.load_model("patrol").tasks["patrol"]
    from rmtk.machine.equivalence import policy_class_table
    from rmtk.ptp.exact import SoftOptimal

    table = policy_class_table(SoftOptimal().policy(patrol))
    mdp = patrol.mdp
    truth = patrol.machine.delta_u[:, patrol.letter_of_proposition]
    H = np.zeros((1, mdp.n_propositions), np.int64)
    rep = Configurations.of(mdp, H).representatives()
    node_class = {key: int(table[s, _final(truth, w)]) for key, (w, s) in rep.items()}
    suite = ConformanceSuite(extra=3).suite(mdp, H, lambda s, h: node_class[(s, h)])
    assert suite.extra == 3 and not suite.truncated
    differs = [
        (h, p)
        for h, p in zip(suite.histories, suite.partner)
        if table[h[1], _final(truth, h[0])] != table[p[1], _final(truth, p[0])]
    ]
    assert differs and max(len(h[0]) for h, _ in differs) >= 3
    text = str(suite)
    assert text.startswith(f"conformance suite of {len(suite)} histories, 3 extra letter(s): complete for every")
    with pytest.raises(RmtkError, match="without one, use AdaptiveWalks"):
        ConformanceSuite().suite(object(), H, lambda s, h: 0)


def test_a_budget_keeps_the_largest_complete_suite_and_says_so():
    patrol = dsl.load_model("patrol").tasks["patrol"]
    H = np.zeros((1, patrol.mdp.n_propositions), np.int64)
    full = ConformanceSuite(extra=2).suite(patrol.mdp, H, lambda s, h: 0)
    cut = ConformanceSuite(extra=6, max_histories=len(full)).suite(patrol.mdp, H, lambda s, h: 0)
    assert cut.truncated and cut.extra == 2 and len(cut) == len(full)
    assert "(the budget stopped it there)" in str(cut)


def test_adaptive_walks_walk_longer_and_more_until_little_is_unseen():
    """Patrol's expert, a 4-node hypothesis (the truth): the walks start too short to see the
    patrol's later nodes and lengthen until one more walk would rarely meet a new (state, node)
    pair; 200 held-out walks of the final length check the estimate."""
    patrol = dsl.load_model("patrol").tasks["patrol"]
    truth = patrol.machine.delta_u[:, patrol.letter_of_proposition]
    conf = Configurations.of(patrol.mdp, truth)
    reachable = {(s, conf.node[c]) for c in range(len(conf)) for s in conf.states[c]}
    for seed in range(3):
        expert = SimulatedExpert(patrol, seed=seed)
        asker = Asker(expert, expert, Budget())
        answers, walks, cov = AdaptiveWalks(walks=4, length=2, target=0.05).run(asker, None, [truth])
        assert cov.unseen < 0.05 and cov.walks == walks >= 60 and not cov.budget_spent
        assert cov.length > 2  # it walked longer than its first batch
        assert sum(a.steps for a in answers) == cov.steps == asker.steps and asker.queries == walks
        met = {(int(s), _final(truth, w)) for a in answers for w, s in zip(a.words, a.states.tolist())}
        assert len(met) == cov.pairs and len(met) >= len(reachable) - 2
        held = [SimulatedExpert(patrol, seed=1000 + i).extend(None, None, cov.length, 1, 0.3) for i in range(200)]
        new = [any((int(s), _final(truth, w)) not in met for w, s in zip(h.words, h.states.tolist())) for h in held]
        assert np.mean(new) <= 0.1
    expert = SimulatedExpert(patrol)
    answers, _, cov = AdaptiveWalks(walks=4, length=2, target=0.01, max_steps=100).run(
        Asker(expert, expert, Budget()), None, [truth]
    )
    assert cov.budget_spent and cov.steps <= 100 and "the budget stopped it" in str(cov)
    asker = Asker(expert, expert, Budget(steps=50))  # the run's budget holds inside the walks
    _, _, cov = AdaptiveWalks(walks=4, length=2, target=0.01).run(asker, None, [truth])
    assert cov.budget_spent and asker.steps <= 50 and cov.steps == asker.steps
