"""The least noisy machine *found*: an anytime search for noisy reward traces where the exact
weighted MaxSAT (:class:`~rmtk.sat.encoders.NoisyRewardEncoder`) does not prove its optimum in
time (docs/benchmarks/rewards.md, section 3, "Uniform walks that go on after the end").

A machine's noise on reward traces is, per (node, letter) *cell*, the observed steps that
differ from the value observed most often there: given the transitions, the outputs are the
cells' majorities, so a machine is searched over its transitions alone. :class:`NoiseLandscape`
runs many machines at once on the trie of words with numpy and counts each cell's values.

:func:`local_search` climbs from several starts, one transition changed at a time (with
non-stuttering, the letter's column kept idempotent). It climbs first on the cells' *spread*
(Σ over cells of count × entropy of its values), then on the noise itself. The noise is flat
almost everywhere — on Office coffee's 2 × 10⁵ noisy steps every 3-node machine is within 23
noisy steps of the one-node machine, and a cell gains only once its majority flips — while the
spread falls as soon as a cell gathers a larger share of one value, so a climb is led towards
the cells that will flip (the reason decision trees split on entropy, not on errors). The
first start is the machine of one node, the others are drawn from ``seed``. A budget of
machines evaluated bounds it; a deadline only stops it.

:class:`AnytimeNoisyRewardEncoder` is the strategy: the exact search first, within a budget of
work (its stop checks, placed by the solver's work, so the same on every machine), whose
answer is kept when it proves it; else the local search's least noisy machine, flagged *not
proven least noisy* with a proven lower bound and the gap, and what the samples resolve (the
likelihood ratio of the machine against the runner-up found and against the machine of one node).
"""

from __future__ import annotations

import math
import time
from typing import ClassVar

import attrs
import numpy as np

from ..errors import RmtkError
from ..limits import NEVER, Deadline, SearchLimits
from ..traces.evidence import value_classes
from .encoders import NoisyRewardEncoder, SimplestNoisyRewardEncoder
from .encoding import Problem
from .search import (
    SearchResult,
    Solution,
    WorkBudget,
    _renumber,
    canonical_partial,
    count_completions,
    used_transitions,
)

#: Trie words × machines evaluated in one numpy pass at most (8 bytes each, a few times over).
BATCH_CELLS = 4_000_000
#: Relative tolerance under which two spreads are equal (then the order of the moves decides).
SPREAD_TOLERANCE = 1e-9


@attrs.frozen(eq=False)
class NoiseLandscape:
    """The reward traces in the form the local search evaluates: the trie's words level by
    level, and per observed (word, letter) pair the count of each value.

    ``parent`` and ``letter`` are the trie's arrays (node 0 the empty word); ``levels`` its
    words by length, the root's level left out; ``pair_word`` and ``pair_letter`` (``(P,)``) the
    observed (word, letter) pairs; ``counts`` (``(P, V)``) the steps observing each value
    (ascending values) on each pair.
    """

    parent: np.ndarray
    letter: np.ndarray
    levels: tuple
    pair_word: np.ndarray
    pair_letter: np.ndarray
    counts: np.ndarray
    n_letters: int

    @classmethod
    def of(cls, traces, n_letters: int) -> NoiseLandscape:
        """The landscape of :class:`~rmtk.traces.rewards.RewardTraces` over ``n_letters`` letters."""
        _, index = value_classes(traces)
        V = int(index.max(initial=0)) + 1
        keys, pair = np.unique(traces.node * n_letters + traces.letter, return_inverse=True)
        counts = np.zeros((len(keys), V), np.int64)
        np.add.at(counts, (pair.ravel(), index), traces.count)
        trie = traces.trie
        return cls(
            trie.parent, trie.letter, tuple(trie.levels()[1:]), keys // n_letters, keys % n_letters, counts, n_letters
        )

    @property
    def steps(self) -> int:
        """The observed steps."""
        return int(self.counts.sum())

    @property
    def n_values(self) -> int:
        return self.counts.shape[1]

    def floor(self) -> int:
        """A proven lower bound on any machine's noise: a (word, letter) pair observed with
        several values pays one of them on every machine, so its other steps are noisy."""
        return int((self.counts.sum(1) - self.counts.max(1, initial=0)).sum())

    def one_node(self) -> int:
        """The noise of the machine of one node (each letter pays its majority everywhere)."""
        per = np.zeros((self.n_letters, self.n_values), np.int64)
        np.add.at(per, self.pair_letter, self.counts)
        return int((per.sum(1) - per.max(1, initial=0)).sum())

    def score(self, machines: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(noise, spread) of each of ``machines`` (``(B, n, K)`` transitions, node 0 initial):
        the noisy steps, and Σ over cells of count × entropy of the cell's values (nats)."""
        B, n, K = machines.shape
        step = max(1, BATCH_CELLS // max(len(self.parent), len(self.pair_word), 1))
        noise, spread = np.empty(B, np.int64), np.empty(B, np.float64)
        for lo in range(0, B, step):
            noise[lo : lo + step], spread[lo : lo + step] = self._score(machines[lo : lo + step])
        return noise, spread

    def _score(self, machines: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        B, n, K = machines.shape
        flat = machines.reshape(-1)
        node = np.zeros((B, len(self.parent)), np.int64)
        offset = (np.arange(B, dtype=np.int64) * (n * K))[:, None]
        for level in self.levels:
            node[:, level] = flat[offset + node[:, self.parent[level]] * K + self.letter[level]]
        cell = (offset + node[:, self.pair_word] * K + self.pair_letter).ravel()
        P = len(self.pair_word)
        table = np.stack(
            [
                np.bincount(cell, weights=np.broadcast_to(self.counts[:, v], (B, P)).ravel(), minlength=B * n * K)
                for v in range(self.n_values)
            ],
            axis=-1,
        ).reshape(B, n * K, self.n_values)
        seen = table.sum(2)
        noise = np.rint(seen - table.max(2, initial=0)).astype(np.int64).sum(1)
        spread = (_xlogx(seen) - _xlogx(table).sum(2)).sum(1)
        return noise, spread


def _xlogx(x: np.ndarray) -> np.ndarray:
    return x * np.log(np.where(x > 0, x, 1.0))


def neighbours(machine: np.ndarray, non_stuttering: bool) -> np.ndarray:
    """The machines one transition away from ``machine`` (``(n, K)``), in a fixed order (letter,
    then node, then target). With ``non_stuttering`` each letter's column stays idempotent:
    sending node ``q`` to ``r`` makes ``r`` stay on the letter, and the nodes that went to ``q``
    follow it to ``r``."""
    n, K = machine.shape
    out: list[np.ndarray] = []
    seen: set[bytes] = set()
    for a in range(K):
        f = machine[:, a]
        for q in range(n):
            for r in range(n):
                if f[q] == r:
                    continue
                g = f.copy()
                g[q] = r
                if non_stuttering:
                    g[r] = r
                    g = g[g]
                    if not np.array_equal(g[g], g):
                        continue
                if np.array_equal(g, f):
                    continue
                m = machine.copy()
                m[:, a] = g
                key = m.tobytes()
                if key not in seen:
                    seen.add(key)
                    out.append(m)
    return np.stack(out) if out else np.empty((0, n, K), machine.dtype)


def random_machine(n: int, K: int, rng: np.random.Generator, non_stuttering: bool) -> np.ndarray:
    """A machine drawn from ``rng``: per letter, each node stays with probability ½ (node 0's
    choice forced when no node stays) and the others go to one of the nodes that stay."""
    machine = np.empty((n, K), np.int64)
    for a in range(K):
        if not non_stuttering:
            machine[:, a] = rng.integers(n, size=n)
            continue
        stays = rng.random(n) < 0.5
        stays[rng.integers(n)] = True
        fixed = np.flatnonzero(stays)
        machine[:, a] = np.where(stays, np.arange(n), fixed[rng.integers(len(fixed), size=n)])
    return machine


@attrs.frozen
class Found:
    """A machine the local search ended a climb on: its transitions and noise, and the noise of
    each of its :func:`neighbours` when the climb evaluated them last (``None``: it was stopped)."""

    delta_u: np.ndarray = attrs.field(eq=False)
    noise: int
    key: tuple  # renaming-invariant (canonical_partial) on the transitions the words use
    moving: int  # used transitions that leave their node
    around: np.ndarray | None = attrs.field(default=None, eq=False)


@attrs.frozen
class LocalRun:
    """What :func:`local_search` found: the distinct machines its climbs ended on, least noisy
    first (then fewest moving transitions, then their canonical key), the machines evaluated,
    the climbs started, and why it stopped early (``None``: its budget of moves was spent)."""

    found: tuple[Found, ...]
    evaluated: int
    starts: int
    stopped: str | None


def local_search(
    land: NoiseLandscape,
    n: int,
    *,
    non_stuttering: bool = True,
    seed: int = 0,
    moves: int = 20_000,
    deadline: Deadline = NEVER,
    trie=None,
) -> LocalRun:
    """Climbs from the machine of one node, then from machines drawn from ``seed``, until
    ``moves`` machines were evaluated (a climb under way when it is spent is finished within
    one neighbourhood of the budget); each climb goes down the spread (best move, the first
    in :func:`neighbours`' order among spreads equal within :data:`SPREAD_TOLERANCE`), then down
    the noise. ``deadline`` only stops. ``trie`` (the landscape's) keys the machines found."""
    if moves < 1:
        raise RmtkError(f"the local search's budget of moves must be at least 1, got {moves}")
    rng = np.random.default_rng(seed)
    K = land.n_letters
    found: dict[tuple, Found] = {}
    evaluated = starts = 0
    stopped = None
    while evaluated < moves:
        if deadline.expired():
            stopped = deadline.reason() or "time limit"
            break
        start = np.tile(np.arange(n)[:, None], (1, K)) if starts == 0 else random_machine(n, K, rng, non_stuttering)
        starts += 1
        machine, spent, halted, around = _climb(land, start, non_stuttering, moves - evaluated, deadline)
        evaluated += spent
        noise = int(land.score(machine[None])[0][0])
        evaluated += 1
        _file(found, machine, noise, trie, around)
        if halted:
            stopped = deadline.reason() or "time limit"
            break
    ordered = tuple(sorted(found.values(), key=lambda f: (f.noise, f.moving, f.key)))
    return LocalRun(ordered, evaluated, starts, stopped)


def _objective(land: NoiseLandscape, machines: np.ndarray, by: int) -> np.ndarray:
    """The spread (``by`` 1), or the noise then the moving transitions (``by`` 0: noise ×
    (n·K + 1) + transitions that leave their node, an order strict on the noise)."""
    noise, spread = land.score(machines)
    if by == 1:
        return spread
    _, n, K = machines.shape
    moving = (machines != np.arange(n)[None, :, None]).sum((1, 2))
    return noise * (n * K + 1) + moving


def _climb(land: NoiseLandscape, machine: np.ndarray, non_stuttering: bool, budget: int, deadline: Deadline):
    """Down the spread, then down the noise and the moving transitions, from ``machine``: (the
    machine, machines evaluated, whether the deadline stopped it, the noise of its neighbours
    when the last step evaluated them all and found none better, else ``None``)."""
    spent = 0
    around = None
    for by in (1, 0):  # spread, then noise
        current = _objective(land, machine[None], by)[0]
        spent += 1
        while spent < budget:
            if deadline.expired():
                return machine, spent, True, None
            nb = neighbours(machine, non_stuttering)
            if not len(nb):
                break
            values = _objective(land, nb, by)
            spent += len(nb)
            best = int(np.argmin(values))
            if by == 1:
                tol = SPREAD_TOLERANCE * max(abs(float(current)), 1.0)
                best = int(np.flatnonzero(values <= values[best] + tol)[0])
                if not values[best] < current - tol:
                    break
            elif not values[best] < current:
                _, n, K = nb.shape
                around = values // (n * K + 1)  # the noise: the moving transitions are at most n·K
                break
            machine, current = nb[best], values[best]
    return machine, spent, False, around


def _file(found: dict, machine: np.ndarray, noise: int, trie, around: np.ndarray | None = None) -> None:
    if trie is None:
        key: tuple = (machine.tobytes(),)
        moving = int((machine != np.arange(machine.shape[0])[:, None]).sum())
    else:
        used = used_transitions(trie, machine)[0]
        key = canonical_partial(machine, used)[0]
        moving = int((used & (machine != np.arange(machine.shape[0])[:, None])).sum())
    if key not in found:
        found[key] = Found(machine, noise, key, moving, around)


def log10_ratio(d: int, noise: int, steps: int, values: int) -> float:
    """log₁₀ of the likelihood ratio, under replacement noise at the estimated rate ``noise /
    steps`` (each step's value replaced with that probability by one of the ``values − 1``
    others), of a machine against one that calls ``d`` more steps noisy:
    ``d · log₁₀((1 − ε)(V − 1)/ε)``."""
    if d <= 0 or values < 2:
        return 0.0
    eps = min(max(noise / steps, 1.0 / (2 * steps)), 0.5)
    return d * math.log10((1 - eps) * (values - 1) / eps)


#: Likelihood ratios below this do not separate two machines (a rule of thumb, not a test).
SEPARATES = 100.0


@attrs.frozen
class Unproven:
    """A least noisy machine found, not proven least noisy: its noise, a proven lower bound on
    any machine's, the noise of the nearest other machine (one transition changed, the least
    noisy of those that change what the words do), of the runner-up among the climbs' ends and
    of the machine of one node, and the local search's work. :meth:`lines` says it, with what
    the samples resolve."""

    noise: int
    lower_bound: int
    steps: int
    values: int
    runner_up: int | None
    one_node: int
    rival: int | None
    rival_change: str
    #: the machines one transition away that the samples do not separate from it, as pairs
    #: (change, extra noise)
    unresolved: tuple[tuple[str, int], ...]
    evaluated: int
    starts: int
    seed: int
    stopped: str | None = None

    @property
    def gap(self) -> int:
        """Noisy steps between the machine found and the proven lower bound."""
        return self.noise - self.lower_bound

    def lines(self) -> list[str]:
        """The flag and the figures, as the report prints them."""
        how = f"local search, seed {self.seed}: {self.evaluated:,} machines evaluated in {self.starts} climbs"
        if self.stopped:
            how += f", stopped early ({self.stopped})"
        out = [
            f"NOT PROVEN least noisy: the least noisy machine found ({how}) calls {self.noise:,} observed steps "
            f"noisy; proven lower bound {self.lower_bound:,} (the (word, letter) pairs observed with several "
            f"values), gap {self.gap:,}",
        ]
        others = (
            (f"the nearest other machine ({self.rival_change})", None if self.unresolved else self.rival),
            ("the runner-up among the climbs' ends", self.runner_up),
            ("the machine of one node", self.one_node),
        )
        if self.unresolved:
            groups = []
            for d in sorted({d for _, d in self.unresolved}):
                changes = [c for c, e in self.unresolved if e == d]
                named = "; ".join(changes[:4]) + ("; …" if len(changes) > 4 else "")
                groups.append(f"{len(changes)} at +{d} ({named})")
            out.append(
                f"one transition away, {len(self.unresolved)} machine(s) the samples do not separate from it "
                f"(likelihood ratio under {SEPARATES:g}): " + ", ".join(groups)
            )
        for what, other in others:
            if other is None:
                continue
            d = other - self.noise
            lr = log10_ratio(d, self.noise, self.steps, self.values)
            verdict = "the samples separate them" if lr >= math.log10(SEPARATES) else "the samples do not separate them"
            out.append(
                f"{what} calls {other:,} noisy (+{d:,}): likelihood ratio 10^{lr:.1f} under replacement noise at "
                f"the estimated rate; {verdict}"
            )
        return out


@attrs.frozen
class AnytimeNoisyRewardEncoder(NoisyRewardEncoder):
    """:class:`~rmtk.sat.encoders.NoisyRewardEncoder` within a budget, then a local search: the
    exact weighted MaxSAT first, bounded by ``proof_work`` propagations of its oracle
    (:class:`~rmtk.sat.search.WorkBudget`: the same point on every machine); its answer when it
    proves the optimum (every optimal machine, as before). Otherwise :func:`local_search` with
    ``seed`` and a budget of ``moves`` machines evaluated, and the least noisy machines found
    (equal noise: fewest moving transitions, then their canonical order) are returned with
    ``SearchResult.unproven`` (:class:`Unproven`) set and ``complete`` false. A time limit or a
    stop only stops either phase. The local search weighs rewards alone: with negative examples
    (``--from both``) the exact answer or nothing is returned.

    Args:
        seed: the local search's random starts (its first start is the machine of one node).
        moves: machines the local search evaluates at most (at least 1).
        proof_work: the exact search's oracle propagations at most; ``None``: unbounded (the
            exact search alone, as :class:`~rmtk.sat.encoders.NoisyRewardEncoder`).
    """

    #: Propagations the exact search may make before the local search takes over.
    default_proof_work: ClassVar[int] = 10_000_000

    seed: int = attrs.field(default=0, validator=attrs.validators.instance_of(int))
    moves: int = attrs.field(default=20_000, validator=[attrs.validators.instance_of(int), attrs.validators.ge(1)])
    proof_work: int | None = attrs.field(
        default=attrs.Factory(lambda self: self.default_proof_work, takes_self=True),
        validator=attrs.validators.optional([attrs.validators.instance_of(int), attrs.validators.ge(0)]),
    )

    def search(self, problem: Problem, limits: SearchLimits) -> SearchResult:
        """The exact optimum when proven within ``proof_work``, else the least noisy found."""
        if self.proof_work is None:
            return super().search(problem, limits)
        budget = WorkBudget(limits.deadline.at, propagations=self.proof_work)
        exact = super().search(problem, limits.evolve(deadline=budget))
        if exact.n_nodes is not None or not budget.spent or problem.negatives is not None:
            return exact  # proven (or refused, or stopped by the run's deadline): the exact search's answer
        assert problem.rewards is not None, "NoisyRewardEncoder.encode refuses a problem without rewards"
        return self.local(problem, limits, exact)

    def local(self, problem: Problem, limits: SearchLimits, exact: SearchResult | None = None) -> SearchResult:
        """The local search's answer at ``limits.nodes`` (else ``max_nodes``) nodes; ``exact``: the
        exact search stopped by its budget (its sizes and times are kept)."""
        n = limits.nodes or limits.max_nodes
        t0 = time.perf_counter()
        land = NoiseLandscape.of(problem.rewards, problem.n_letters)
        run = local_search(
            land,
            n,
            non_stuttering=self.non_stuttering,
            seed=self.seed,
            moves=self.moves,
            deadline=limits.deadline,
            trie=problem.trie,
        )
        t1 = time.perf_counter()
        best = run.found[0].noise if run.found else None
        chosen = [f for f in run.found if f.noise == best][: limits.max_solutions]
        other = [f.noise for f in run.found if f.noise != best or f not in chosen]
        unproven = Unproven(
            int(best) if best is not None else 0,
            land.floor(),
            land.steps,
            land.n_values,
            other[0] if other else None,
            land.one_node(),
            *(_rival(land, chosen[0], problem, self.non_stuttering) if chosen else (None, "", ())),
            run.evaluated,
            run.starts,
            self.seed,
            run.stopped,
        )
        solutions = tuple(self._solution(problem, f.delta_u) for f in chosen)
        if solutions:
            limits.progress.solution(len(solutions), len(solutions))
        return SearchResult(
            n if solutions else None,
            solutions,
            False,
            ((n, True if solutions else None),),
            exact.clauses if exact is not None else 0,
            exact.variables if exact is not None else 0,
            exact.time_encode if exact is not None else 0.0,
            (exact.time_solve if exact is not None else 0.0) + t1 - t0,
            0.0,
            "; ".join(unproven.lines()),
            cost=best,
            unproven=unproven,
        )

    def _solution(self, problem: Problem, delta_u: np.ndarray) -> Solution:
        """``delta_u`` in canonical numbering, with its completions and the rows it calls noisy."""
        from ..traces.evidence import decode_rewards

        n = delta_u.shape[0]
        used = used_transitions(problem.trie, delta_u)[0]
        _, order = canonical_partial(delta_u, used)
        perm = order + [u for u in range(n) if u not in set(order)]
        du, canon_used = _renumber(delta_u, used, perm)
        comp, determined = count_completions(du, canon_used, self.non_stuttering)
        relabel = math.factorial(n - 1) // math.factorial(n - len(order))
        traces = problem.rewards
        decoded = decode_rewards(du, traces)
        at = problem.trie.run(du, 0)[traces.node]
        dropped = np.flatnonzero(decoded.delta_r[at, traces.letter] != traces.value)
        return Solution(du, determined, relabel * comp, comp, tuple(dropped.tolist()))


def _rival(land: NoiseLandscape, best: Found, problem: Problem, non_stuttering: bool) -> tuple:
    """The machines one transition away from ``best`` that change where some word ends: the
    least noisy one's noise and change (equal noise: the first in :func:`neighbours`' order), and
    every one the samples do not separate from ``best`` (likelihood ratio under
    :data:`SEPARATES`), with its change and extra noise, least noisy first."""
    nb = neighbours(best.delta_u, non_stuttering)
    if not len(nb):
        return None, "", ()
    order = canonical_partial(best.delta_u, used_transitions(problem.trie, best.delta_u)[0])[1]
    n = best.delta_u.shape[0]
    name = {u: f"u{r}" for r, u in enumerate(order + [u for u in range(n) if u not in set(order)])}  # as printed
    props = problem.rewards.propositions
    noise = best.around if best.around is not None else land.score(nb)[0]  # the climb's last look
    found: list[tuple[str, int]] = []
    seen = {best.key}
    for i in np.argsort(noise, kind="stable").tolist():
        d = int(noise[i]) - best.noise
        if found and log10_ratio(d, best.noise, land.steps, land.n_values) >= math.log10(SEPARATES):
            break
        key = canonical_partial(nb[i], used_transitions(problem.trie, nb[i])[0])[0]
        if key in seen:
            continue
        seen.add(key)
        changed = np.argwhere(nb[i] != best.delta_u).tolist()
        found.append((", ".join(f"{name[q]} on {props[a]} to {name[int(nb[i][q, a])]}" for q, a in changed), d))
    if not found:
        return None, "", ()
    unresolved = tuple(
        (c, d) for c, d in found if log10_ratio(d, best.noise, land.steps, land.n_values) < math.log10(SEPARATES)
    )
    return best.noise + found[0][1], found[0][0], unresolved


@attrs.frozen
class SimplestAnytimeNoisyRewardEncoder(AnytimeNoisyRewardEncoder, SimplestNoisyRewardEncoder):
    """:class:`AnytimeNoisyRewardEncoder` whose exact search is
    :class:`~rmtk.sat.encoders.SimplestNoisyRewardEncoder`'s (among the least noisy, the fewest
    moving transitions); the local search orders equally noisy machines the same way."""
