"""A time limit holds inside RC2 (rmtk/sat/solver.py rc2_class, maxsat_compute): an interrupt
stops the oracle call under way, and the stratified levels' pure-Python steps between calls
check it too, so a noisy-reward MaxSAT search with weights from evidence counts (hundreds of
levels) ends at its limit, flagged, rather than seconds to minutes after it. The run's deadline
(a time limit, or a stop requested by SIGINT or SIGTERM) is checked between oracle calls on
every backend, so a stopped search ends even on one no interrupt reaches."""

import io
import threading
import time

import numpy as np
import pytest
from pysat.formula import WCNF

from rmtk import Learner, dsl
from rmtk.learner.report import report
from rmtk.limits import clear_stop, request_stop
from rmtk.product.simulate import simulate
from rmtk.sat.encoders import NoisyRewardEncoder
from rmtk.sat.solver import _Stopped, maxsat_compute, rc2_class
from rmtk.traces import TraceRewards, replaced_rewards


def levels(n: int) -> WCNF:
    """n soft unit clauses of n distinct weights over a chain of hard exclusions: n levels."""
    wcnf = WCNF()
    for i in range(1, n + 1):
        wcnf.append([i], weight=i)
        if i > 1:
            wcnf.append([-(i - 1), -i])
    return wcnf


@pytest.mark.parametrize("stratified", [True, False])
def test_an_interrupted_rc2_ends_its_compute(stratified):
    with rc2_class(stratified)(levels(50), solver="glucose4") as rc2:
        assert rc2.compute() is not None  # uninterrupted: an optimum
    with rc2_class(stratified)(levels(50), solver="glucose4") as rc2:
        rc2.interrupt()
        with pytest.raises(_Stopped):
            rc2.compute()
        rc2.clear_interrupt()
        assert not rc2.stopped


def test_a_noisy_reward_search_stops_at_its_time_limit():
    coffee = dsl.load_model("office").get("coffee", "task")
    walks = simulate(coffee, 1_000, 100, seed=0, policy="uniform", rewards=True)
    noisy = replaced_rewards(walks, np.unique(coffee.machine.delta_r), 0.05, seed=1)
    learner = Learner(ptp=None, rewards=TraceRewards(noisy), encoder=NoisyRewardEncoder(), nodes=3, time_limit=2.0)
    t0 = time.perf_counter()
    result = learner.fit(coffee)
    spent = time.perf_counter() - t0
    assert result.stopped is not None and not result.machines and "time limit" in result.search.message
    assert spent < 2.0 + 6.0, spent  # the limit, and the encoding before the first check (was 30 s and more)


class _ExpiresLater:
    """A deadline that has not expired at its first ``calls`` checks and has after."""

    def __init__(self, calls: int):
        self.calls = calls
        self.at = None

    def expired(self) -> bool:
        self.calls -= 1
        return self.calls < 0


@pytest.mark.parametrize("backend", ["cadical153", "glucose4"])
@pytest.mark.parametrize("stratified", [True, False])
def test_rc2_checks_its_deadline_between_oracle_calls(backend, stratified):
    """Even on a backend no interrupt reaches (CaDiCaL), a deadline that expires during a
    compute ends it at the next level or core, reported as not decided."""
    with rc2_class(stratified)(levels(50), solver=backend) as rc2:
        model, decided = maxsat_compute(rc2, _ExpiresLater(1))
        assert model is None and not decided
    with rc2_class(stratified)(levels(50), solver=backend) as rc2:  # never expiring: the optimum
        model, decided = maxsat_compute(rc2, _ExpiresLater(10**9))
        assert decided and model is not None and rc2.cost == sum(range(1, 50, 2))  # the odd weights dropped


def test_a_stop_request_ends_a_noisy_search_without_a_time_limit():
    """SIGTERM / Ctrl-C (a stop request) during a weighted MaxSAT search with no time limit,
    on the default backend CaDiCaL, which cannot be interrupted: the search ends after the
    oracle call under way, flagged (it used to run to its end: more than 2 minutes here)."""
    coffee = dsl.load_model("office").get("coffee", "task")
    walks = simulate(coffee, 1_000, 100, seed=0, policy="uniform", rewards=True)
    noisy = replaced_rewards(walks, np.unique(coffee.machine.delta_r), 0.05, seed=1)
    learner = Learner(ptp=None, rewards=TraceRewards(noisy), encoder=NoisyRewardEncoder(), nodes=3)
    clear_stop()
    timer = threading.Timer(1.0, request_stop, args=("terminated",))
    timer.start()
    try:
        t0 = time.perf_counter()
        result = learner.fit(coffee)
        spent = time.perf_counter() - t0
    finally:
        timer.cancel()
        clear_stop()
    assert result.stopped is not None and "terminated while optimising at 3 nodes" in result.search.message
    assert not result.machines and spent < 30.0, spent
    text = io.StringIO()
    report(coffee, result, out=text)  # the size the stop left undecided, whatever stopped it
    assert "# SAT: nodes tried 3: undecided;" in text.getvalue()


def pigeonhole(holes: int) -> list[list[int]]:
    """holes + 1 pigeons in ``holes`` holes: unsatisfiable, and hard for a CDCL solver."""
    v = lambda p, h: p * holes + h + 1  # noqa: E731
    clauses = [[v(p, h) for h in range(holes)] for p in range(holes + 1)]
    for h in range(holes):
        clauses += [[-v(p, h), -v(q, h)] for p in range(holes + 1) for q in range(p + 1, holes + 1)]
    return clauses


@pytest.mark.parametrize("backend", ["cadical153", "glucose4", "minisat22"])
def test_a_stop_ends_rc2_inside_one_oracle_call(backend):
    """One oracle call that needs tens of thousands of conflicts (the pigeonhole formula as the
    hard part): a deadline that expires after the call has started stops it within the call,
    after a few slices of conflicts, not when it ends (RC2's calls used to run whole, and on
    CaDiCaL nothing stopped them: the same compute ran to its end, 'decided')."""
    wcnf = WCNF()
    wcnf.extend(pigeonhole(8))
    wcnf.append([1], weight=1)
    with rc2_class(False)(wcnf, solver=backend) as rc2:  # never expiring: decided, no model
        assert maxsat_compute(rc2, _ExpiresLater(10**9)) == (None, True)
        whole = rc2.oracle.accum_stats()["conflicts"]
    with rc2_class(False)(wcnf, solver=backend) as rc2:
        model, decided = maxsat_compute(rc2, _ExpiresLater(4))  # compute, the call, two slices
        spent = rc2.oracle.accum_stats()["conflicts"]
    assert model is None and not decided
    assert spent < whole / 4, (spent, whole)  # CaDiCaL's terminator looks inside the first slice


def exclusive_pairs(n: int) -> WCNF:
    """n pairs of soft units, the two of each pair exclusive (RC2's ``adapt`` finds each pair
    an AtMost1 group), weights 1 to n: n levels, and 2n selectors for ``adapt_am1`` to
    propagate one by one."""
    wcnf = WCNF()
    for i in range(n):
        a, b = 2 * i + 1, 2 * i + 2
        wcnf.append([-a, -b])
        wcnf.append([a], weight=i + 1)
        wcnf.append([b], weight=i + 1)
    return wcnf


class _ExpiresAfterWork:
    """A deadline that expires once the oracle has made ``propagations`` calls of
    ``propagate``: time measured in the work of the phase under test, so that the limit
    passes inside it on any machine."""

    def __init__(self, propagations: int):
        self.left = propagations
        self.at = None

    def expired(self) -> bool:
        return self.left <= 0


@pytest.mark.parametrize("stratified", [True, False])
def test_a_deadline_that_passes_while_rc2_looks_for_atmost1_groups_stops_it(stratified):
    """RC2's ``adapt`` pass (the noisy-reward search's, Formula.exclusive_softs) propagates
    every selector of the level, in Python, before its first oracle call: at 10^6 noisy steps
    it did not look at the deadline for seconds, so the command's safety net, not the
    learner's limit, ended the run. A deadline that passes during the pass now stops it at
    the next propagation (it used to propagate all 2n selectors, then stop at the call)."""
    n = 40
    with rc2_class(stratified)(exclusive_pairs(n), solver="cadical153", adapt=True, exhaust=True) as rc2:
        model, decided = maxsat_compute(rc2, _ExpiresLater(10**9))
        assert decided and rc2.cost == sum(range(1, n + 1))  # one of each pair dropped
    deadline = _ExpiresAfterWork(3)
    calls = []
    with rc2_class(stratified)(exclusive_pairs(n), solver="cadical153", adapt=True, exhaust=True) as rc2:
        propagate = rc2.oracle.propagate

        def counted(*args, **kwargs):
            calls.append(args)
            deadline.left -= 1
            return propagate(*args, **kwargs)

        rc2.oracle.propagate = counted
        model, decided = maxsat_compute(rc2, deadline)
    assert model is None and not decided
    assert len(calls) == 3, len(calls)  # not one propagation after the deadline passed
