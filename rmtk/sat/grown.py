"""The search on a sample of the words, grown by counterexamples until its answer holds on
all of them (docs/design/rewards-evidence.md, "Solving on a sample").

Learning from reward traces alone, the formula grows with the trie (every word's run), while
the answer usually rests on a few hundred of its words. So the encoder's own search runs on
the words of a sample of the observations (at first the shortest words'), and each machine
it lists is checked on every observation by running the whole trie (numpy, no solver):

* a machine that pays two values on one (node, letter) of the whole trie is no answer: for
  each such pair of values the shortest words observing them join the sample;
* a machine whose run on the whole trie uses a transition the sample's words do not (the
  sample leaves it free, the whole trie does not: one of the sample's machines would be
  several) has the shortest word using it join the sample.

When every machine listed passes both checks, the answer is the whole trie's, the same
machines with the same counts: a size with no machine on the sample has none on more words;
a machine that pays every observation on its size is a smallest one; and the machines
(fewest moving transitions, for :class:`~rmtk.sat.encoders.SimplestEncoder`) of the whole trie
are among the sample's, each one of them, since their used transitions are the same.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
import numpy as np

from ..limits import SearchLimits
from ..progress import Progress
from .encoding import Problem
from .search import SearchResult, stopped_while, used_transitions

#: Observations in the first sample, those of the shortest words (a handful of the traces'
#: rows decide most machines; counterexamples add the rest).
FIRST_SAMPLE = 200
#: Below this many trie nodes the whole trie is searched at once (the sample saves nothing).
SMALL_TRIE = 2_000
#: The same bound on the nodes of the folded words (:mod:`rmtk.sat.folded`), for an encoder
#: that encodes them: their formula is a fraction of the trie's, and the fewest moving
#: transitions cost more on a sample, which leaves many machines, than on every word (Craft t9
#: from 400 episodes over raw words, 4,801 folded nodes: 0.3 CPU s on every word, 3 s on samples;
#: from 1,600 episodes, 13,799: 3.0 s against 2.0 s).
SMALL_FOLDED = 10_000
#: Machines listed on a sample until they hold, before every machine is listed (eight a round
#: brought counterexamples faster but cost more than they saved on Craft t9 over raw words).
FIRST_LISTED = 1
#: Per (node, letter) two values meet on, this many of the shortest words observing each
#: value join the sample.
PER_CONFLICT = 8
#: Once the samples searched amount to this share of the whole trie at the size reached (their
#: words times their size squared in all, as the runs' clauses grow), the whole trie is
#: searched instead (the sizes found unsatisfiable skipped): where many machines differ on
#: rare words (Craft t9 over raw words: each sample leaves machines that fail), the rounds
#: would cost more than the whole search. So the sample costs at most about this share more.
GIVE_UP = 0.5


def applies(problem: Problem, folded: bool = False) -> bool:
    """Whether a search on a sample applies: reward traces alone (no negative examples, no
    oracle) on a trie large enough to gain from it (``folded``: the words folded, as the
    encoder encodes them, at least :data:`SMALL_FOLDED` nodes)."""
    if problem.rewards is None or problem.negatives is not None or problem.oracle is not None:
        return False
    return problem.folded().n_nodes >= SMALL_FOLDED if folded else problem.trie.n_nodes >= SMALL_TRIE


def grown_search(
    search: Callable[[Problem, SearchLimits], SearchResult], problem: Problem, limits: SearchLimits
) -> SearchResult:
    """``search`` (an encoder's own search, listing every machine up to
    ``limits.max_solutions``) run on a sample of the reward observations grown by
    counterexamples until each machine it lists pays every observation of ``problem`` and
    uses the same transitions on the whole trie: the answer ``search`` gives on the whole
    problem. The sizes found unsatisfiable on a sample are not tried again. A stop (the
    deadline) keeps the machines already checked, flagged."""
    from ..traces.evidence import observed_part

    obs = problem.rewards
    assert obs is not None, "a search on a sample of reward observations"
    below = _shortest_below(obs)
    sample = np.zeros(obs.n_rows, bool)
    sample[np.lexsort((obs.node, obs.trie.length[obs.node]))[:FIRST_SAMPLE]] = True
    listed = limits.max_solutions
    full = None if listed is None else listed + 1  # one more than asked for: whether more survive
    inner = limits.evolve(progress=Progress(), max_solutions=FIRST_LISTED)  # first a few that hold, then all
    unsat: list[int] = []
    times = np.zeros(3)
    searched = 0
    while True:
        rows = {f: getattr(obs, f)[sample] for f in ("node", "letter", "value", "count")}
        part = observed_part(attrs.evolve(obs, **rows))
        if unsat and limits.nodes is None:
            inner = inner.evolve(min_nodes=min(max(unsat) + 1, limits.max_nodes))
        size = inner.nodes or inner.min_nodes
        searched += part.trie.n_nodes * size**2
        if searched > GIVE_UP * obs.trie.n_nodes * size**2:  # the whole trie, the sizes ruled out skipped
            res = search(problem, inner.evolve(progress=Progress(), max_solutions=listed))
            times += (res.time_encode, res.time_solve, res.time_enumerate)
            return _answer(res, unsat, limits, times, None)
        res = search(Problem(part.trie, problem.n_letters, rewards=part), inner)
        times += (res.time_encode, res.time_solve, res.time_enumerate)
        if res.n_nodes is not None and res.cost is not None:
            # more words only remove machines: the sample's fewest moving transitions bound the next
            inner = inner.evolve(fewest_floor=(res.n_nodes, res.cost))
        unsat += [n for n, sat in res.tried if sat is False and n not in unsat]
        if res.n_nodes is None:  # no machine up to the bound on the sample, so none on all; or stopped
            return _answer(res, unsat, limits, times, listed)
        fails = [_counterexamples(obs, below, s.delta_u, s.used, problem.n_letters) for s in res.solutions]
        if not res.complete and res.more is not True:  # the deadline cut the listing: the checked ones
            kept = tuple(s for s, f in zip(res.solutions, fails) if not f.any())
            return _answer(attrs.evolve(res, solutions=kept), unsat, limits, times, listed)
        grow = np.logical_or.reduce(fails) if fails else np.zeros(obs.n_rows, bool)
        if not grow.any() and inner.max_solutions != full:  # these machines hold: now every one
            inner = inner.evolve(max_solutions=full)
            continue
        if not grow.any():
            return _answer(res, unsat, limits, times, listed)
        if limits.deadline.expired():
            why = stopped_while(limits.deadline, f"checking the machines of {res.n_nodes} nodes on every word")
            return _answer(
                attrs.evolve(res, n_nodes=None, solutions=(), complete=False, message=why), unsat, limits, times, listed
            )
        sample |= grow


def _shortest_below(obs) -> np.ndarray:
    """For each trie node, the observation of the shortest observed word at or below it (ties:
    the first row); every node of an observed part has one (:func:`observed_part`)."""
    trie = obs.trie
    n_rows = max(obs.n_rows, 1)
    big = np.iinfo(np.int64).max
    key = np.full(trie.n_nodes, big, np.int64)
    np.minimum.at(key, obs.node, trie.length[obs.node] * n_rows + np.arange(obs.n_rows))
    for level in trie.levels()[:0:-1]:
        np.minimum.at(key, trie.parent[level], key[level])
    return np.where(key < big, key % n_rows, -1)


def _counterexamples(obs, below: np.ndarray, delta_u: np.ndarray, used: np.ndarray, n_letters: int) -> np.ndarray:
    """The observations a machine (``delta_u``, the sample's ``used`` transitions) fails on the
    whole trie, as a mask of rows: for each (node, letter) paid two values, the
    :data:`PER_CONFLICT` shortest words of each value; for each transition used on the whole
    trie but not on the sample, the shortest observed word at or below the shortest word
    taking it."""
    trie = obs.trie
    node = trie.run(delta_u, 0)
    length = trie.length
    values, value = np.unique(obs.value, return_inverse=True)
    group = node[obs.node] * n_letters + obs.letter
    keyed = np.unique(group * len(values) + value)
    twice = keyed[1:][np.diff(keyed // len(values)) == 0] // len(values)
    out = np.zeros(obs.n_rows, bool)
    if len(twice):
        rows = np.flatnonzero(np.isin(group, twice))
        key = group[rows] * len(values) + value[rows]
        order = np.lexsort((obs.node[rows], length[obs.node[rows]], key))
        rows, key = rows[order], key[order]
        first = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
        rank = np.arange(len(rows)) - np.repeat(first, np.diff(np.r_[first, len(rows)]))
        out[rows[rank < PER_CONFLICT]] = True
    whole, _ = used_transitions(trie, delta_u)
    missing = whole & ~used
    if missing.any():
        parent, kid = trie.children()
        kids = kid[missing[node[parent], trie.letter[kid]]]
        key = node[trie.parent[kids]] * n_letters + trie.letter[kids]
        order = np.lexsort((kids, length[kids], key))
        kids, key = kids[order], key[order]
        out[below[kids[np.r_[True, key[1:] != key[:-1]]]]] = True
    return out


def _answer(res: SearchResult, unsat, limits: SearchLimits, times, listed) -> SearchResult:
    """The last sample's result as the whole trie's: every size found unsatisfiable on a
    sample in ``tried``, the listing cut back to ``listed`` machines (one more was asked for,
    to tell whether more survive, as the whole search does), the sizes replayed to the
    progress."""
    ruled_out = sorted(set(unsat) | {n for n, sat in res.tried if sat is False})
    tried = tuple((n, False) for n in ruled_out) + tuple(t for t in res.tried if t[1] is not False)
    for n, sat in tried:
        limits.progress.size(n, sat, 0.0)
    solutions, more, complete, message = res.solutions, res.more, res.complete, res.message
    if listed is not None and res.n_nodes is not None and (complete or more):
        if len(solutions) > listed:  # one more than asked for survives
            solutions, more, complete = solutions[:listed], True, False
            stops = ("listing stopped", "enumeration stopped")
            kept = [m for m in message.split("; ") if m and not m.startswith(stops)]
            message = "; ".join(kept + [f"listing stopped at {listed} machines (max_solutions): more survive"])
        elif len(solutions) == listed:  # exactly the bound, and no other
            more, complete = False, True
    if solutions:
        limits.progress.solution(len(solutions), len(solutions))
    return attrs.evolve(
        res,
        tried=tried,
        solutions=solutions,
        complete=complete,
        more=more,
        message=message,
        time_encode=float(times[0]),
        time_solve=float(times[1]),
        time_enumerate=float(times[2]),
    )
