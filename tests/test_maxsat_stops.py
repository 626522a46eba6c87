"""A time limit holds inside RC2 (rmtk/sat/solver.py rc2_class, maxsat_compute): an interrupt
stops the oracle call under way, and the stratified levels' pure-Python steps between calls
check it too, so a noisy-reward MaxSAT search with weights from evidence counts (hundreds of
levels) ends at its limit, flagged, rather than seconds to minutes after it."""

import time

import numpy as np
import pytest
from pysat.formula import WCNF

from rmtk import Learner, dsl
from rmtk.encoders import NoisyRewardEncoder
from rmtk.sat.solver import _Stopped, rc2_class
from rmtk.simulate import simulate
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
