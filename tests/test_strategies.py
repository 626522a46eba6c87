"""The Learner composes four strategies (PTP, NegativeExampleMiner, SatEncoder, MaxEntIRL);
a user's own strategy plugs in without editing rmtk."""

from __future__ import annotations

from pathlib import Path

import attrs
import numpy as np
import pytest

import rmtk
from rmtk import (
    PTP,
    ConfidenceMiner,
    EmpiricalPTP,
    ExactMiner,
    ExactPTP,
    Learner,
    MaxEntIRL,
    MaxSatEncoder,
    NegativeExampleMiner,
    SatEncoder,
    dsl,
)
from rmtk.cli.main import main
from rmtk.errors import RmtkError
from rmtk.negatives.miners import PolicyClasses
from rmtk.product.simulate import simulate

MODELS = Path(__file__).resolve().parents[1] / "models"


@pytest.fixture(scope="module")
def patrol():
    return dsl.load_model("patrol").tasks["patrol"]


@pytest.fixture(scope="module")
def stack_avoid():
    return dsl.load_model("stack_avoid").tasks["stack_avoid"]


def test_the_four_strategy_names_are_exported():
    for name in ("PTP", "NegativeExampleMiner", "SatEncoder", "MaxEntIRL"):
        assert name in rmtk.__all__ and getattr(rmtk, name).__doc__
    assert isinstance(ExactPTP(), PTP) and isinstance(EmpiricalPTP(None), PTP)
    assert isinstance(ExactMiner(), NegativeExampleMiner) and isinstance(ConfidenceMiner(), NegativeExampleMiner)
    assert isinstance(MaxSatEncoder(), SatEncoder)


def test_default_learner_is_what_rmtk_learn_does(patrol, capsys):
    r = Learner().fit(patrol)
    assert r.tree.depth == patrol.depth and (r.raw_count, r.distinct_count) == (6, 1)
    assert r.verdicts[0].consistent and r.reward_fits[0].residual < 1e-9
    assert main(["learn", str(MODELS / "patrol.rm"), "-q"]) == 0
    printed = dsl.loads(capsys.readouterr().out).machines["learned"]
    assert printed == r.machines[0]


def test_demonstrations_composed_as_in_the_design(stack_avoid):
    demos = simulate(stack_avoid, 10_000, 20, seed=0)
    r = Learner(ptp=EmpiricalPTP(demos), miner=ConfidenceMiner(alpha=0.05), encoder=MaxSatEncoder()).fit(stack_avoid)
    assert r.n_nodes == stack_avoid.max_nodes  # MaxSAT solves at the bound
    assert len(r.negatives) == 142 and r.false_positive_rate == 0.0 and r.search.cost == 0
    # the default miner of an empirical policy is the confidence miner at alpha 0.05
    same = Learner(ptp=EmpiricalPTP(demos), encoder=MaxSatEncoder(), irl=None).fit(stack_avoid)
    assert np.array_equal(same.negatives.pairs, r.negatives.pairs) and same.raw_count == r.raw_count
    # learning needs no truth: a bare MDP gives no verdicts
    bare = Learner(ptp=EmpiricalPTP(demos), encoder=MaxSatEncoder(), irl=None, max_nodes=3).fit(stack_avoid.mdp)
    assert bare.verdicts is None and bare.raw_count == r.raw_count


@attrs.frozen
class DropState:
    """A user's miner: the exact policy classes, except that one state's negatives are dropped
    (all its classes merged into one)."""

    state: int
    inner: ExactMiner = ExactMiner()

    def mine(self, ptp):
        c = self.inner.mine(ptp)
        at_state = np.flatnonzero(c.class_state == self.state)
        pair_class = np.array(c.pair_class)
        if len(at_state) > 1:
            pair_class[np.isin(pair_class, at_state)] = at_state[0]
        kept, dense = np.unique(pair_class, return_inverse=True)
        return PolicyClasses(dense, np.asarray(c.class_state)[kept], c.pair_node)


def test_a_custom_miner_takes_effect(patrol):
    base = Learner(ExactPTP(5), irl=None).fit(patrol)
    mine = Learner(ExactPTP(5), miner=DropState(6), irl=None).fit(patrol)
    assert (base.raw_count, mine.raw_count) == (6, 18)  # fewer negatives: more machines fit
    assert mine.classes.n_classes < base.classes.n_classes
    assert mine.stats()["per_state_pairs"] == 267 < base.stats()["per_state_pairs"] == 320
    with pytest.raises(RmtkError, match="no mine method"):
        Learner(miner=object())


@attrs.frozen
class Forbid:
    """A user's encoder wrapper: any encoder's formula plus a clause forbidding δ(u_i, k) = u_j."""

    inner: SatEncoder
    transition: tuple[int, int, int]
    calls: list = attrs.field(factory=list, eq=False)

    def encode(self, problem, n):
        self.calls.append(n)
        formula = self.inner.encode(problem, n)
        i, k, j = self.transition
        return formula.extend([[-int(formula.pool.t(i, k, j))]]) if max(i, j) < n else formula

    def search(self, problem, limits):
        from rmtk.sat.search import search

        return search(self.encode, problem, limits, solver=self.inner.solver, non_stuttering=self.inner.non_stuttering)


def test_a_custom_encoder_wrapper_takes_effect(patrol):
    # canonical numbering of the truth: u0 -A-> u1 -B-> u2 -C-> u3 -D-> u0
    plain = Learner(ExactPTP(6), irl=None).fit(patrol)
    assert plain.machines[0].delta_u[3, patrol.mdp.propositions.index("D")] == 0
    wrapper = Forbid(SatEncoder(), (3, 3, 0))  # forbid u3 -D-> u0
    r = Learner(ExactPTP(6), encoder=wrapper, irl=None).fit(patrol)
    assert wrapper.calls == [3, 4]  # the wrapper's encode built every formula
    assert r.n_nodes is None and "no machine" in r.search.message  # the patrol cannot close: no 4-node machine
    # forbidding a transition the answer does not use changes nothing
    unused = Learner(ExactPTP(6), encoder=Forbid(SatEncoder(), (0, 1, 2)), irl=None).fit(patrol)
    assert (unused.raw_count, unused.distinct_count) == (plain.raw_count, plain.distinct_count)
    with pytest.raises(RmtkError, match="no encode or search method"):
        Learner(encoder=object())


def test_subclassing_an_encoder_overrides_its_formula(patrol):
    @attrs.frozen
    class NoSelfLoopOnA(SatEncoder):
        def encode(self, problem, n):
            f = super().encode(problem, n)
            return f.extend([[-int(f.pool.t(0, 0, 0))]])  # u0 must leave on A

    r = Learner(ExactPTP(6), encoder=NoSelfLoopOnA(), irl=None).fit(patrol)
    assert r.raw_count == 6 and r.machines[0].delta_u[0, 0] != 0


def test_irl_none_skips_rewards_and_the_strategy_rounds(patrol, stack_avoid):
    r = Learner(irl=None).fit(patrol)
    assert r.reward_fits is None and not r.machines[0].delta_r.any()
    demos = simulate(stack_avoid, 3000, 20, seed=1)
    r = Learner(EmpiricalPTP(demos), encoder=MaxSatEncoder(), irl=MaxEntIRL(digits=3), nodes=3).fit(stack_avoid)
    fit = r.reward_fits[0]
    assert np.array_equal(r.machines[0].delta_r, np.array([[float(f"{v:.3g}") for v in row] for row in fit.delta_r]))
    text = dsl.dumps(r.machines[0])
    assert dsl.loads(text).machines[r.machines[0].name] == r.machines[0]  # what is printed loads back exactly


def test_learner_settings_are_validated(patrol):
    for kw, match in [
        ({"time_limit": -1}, "positive number of seconds"),
        ({"time_limit": 0}, "positive"),
        ({"nodes": 0}, "at least 1"),
        ({"max_solutions": 1.5}, "whole number"),
        ({"max_nodes": True}, "whole number"),
    ]:
        with pytest.raises(RmtkError, match=match):
            Learner(**kw)
    with pytest.raises(RmtkError, match="depth must be"):
        ExactPTP(0)
    with pytest.raises(RmtkError, match="non-stuttering"):
        Learner(encoder=SatEncoder(non_stuttering=False))
    with pytest.raises(RmtkError, match="negatives must be one of"):
        SatEncoder(negatives="lots")
    with pytest.raises(RmtkError, match="needs a task"):
        Learner().fit(patrol.mdp)
    with pytest.raises(RmtkError, match="Task or a LabeledMDP"):
        Learner().fit("patrol")


def test_node_counts_are_consistent_and_bounded(patrol):
    from rmtk.validators import MAX_NODES

    with pytest.raises(RmtkError, match="nodes=5 contradicts max_nodes=2"):
        Learner(nodes=5, max_nodes=2)
    for kw in ({"nodes": 1_000_000}, {"max_nodes": MAX_NODES + 1}):
        with pytest.raises(RmtkError, match=f"above rmtk's bound of {MAX_NODES} nodes: the SAT encoding"):
            Learner(**kw)
    huge = attrs.evolve(patrol, max_nodes=10**6)  # a task suggesting more is refused before any work ...
    with pytest.raises(RmtkError, match="task 'patrol' suggests max_nodes 1000000, above rmtk's bound"):
        Learner(irl=None).fit(huge)
    r = Learner(nodes=4, irl=None).fit(huge)  # ... unless the size is given
    assert r.n_nodes == 4 and r.raw_count == 6
    r = Learner(nodes=MAX_NODES, max_nodes=MAX_NODES, irl=None)  # the bound itself is allowed
    assert r.nodes == MAX_NODES


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--nodes", "5", "--max-nodes", "2"], "rmtk: error: nodes=5 contradicts max_nodes=2"),
        (["--nodes", "1000000"], "rmtk: error: nodes=1000000 is above rmtk's bound of 64 nodes"),
    ],
)
def test_cli_node_counts(flags, message):
    import os
    import subprocess
    import sys

    env = dict(os.environ, PYTHONPATH=str(MODELS.parent))
    proc = subprocess.run(
        [sys.executable, "-m", "rmtk", "learn", str(MODELS / "patrol.rm"), *flags, "-q"],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.startswith(message) and "Traceback" not in proc.stderr


def test_cli_rejects_bad_numbers_and_settings(capsys):
    patrol_file = str(MODELS / "patrol.rm")
    for argv in (["learn", patrol_file, "--time-limit", "-1"], ["learn", patrol_file, "--depth", "0"]):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2
    assert "expected a" in capsys.readouterr().err
    for argv in (
        ["simulate", patrol_file, "-n", "5", "-T", "3", "--seed", "-1", "-o", "x.npz"],
        ["reproduce", "tables", "--seed", "-2"],
    ):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2
        assert "--seed: expected a seed (a whole number) of at least 0, got -" in capsys.readouterr().err
    assert main(["reproduce", "tables", "--set", "nosuch=3", "--quick", "-q", "--no-figures"]) == 1
    err = capsys.readouterr().err
    assert "unknown setting nosuch for tables; known settings: explain (tables); stack_avoid_lambda (tables); " in err
    assert main(["reproduce", "suboptimal", "--set", "trajectories=many", "-q", "--no-figures"]) == 1
    assert "setting trajectories: expected int, got 'many'" in capsys.readouterr().err


def test_report_counts_distinct_pairs_only_when_cheap_or_asked(patrol, monkeypatch):
    import io

    from rmtk.learner import report as rep

    r = Learner(irl=None).fit(patrol)
    monkeypatch.setattr(rep, "PAIR_COUNT_LIMIT", 1000)  # patrol depth 6 has 1386 per-state pairs
    out = io.StringIO()
    rep.report(patrol, r, out=out)
    assert "1386 per-state pairs, distinct pairs not counted (--count-pairs)" in out.getvalue()
    out = io.StringIO()
    rep.report(patrol, r, out=out, count_pairs=True)
    assert "1386 per-state pairs, 891 distinct word pairs" in out.getvalue()


def test_report_says_when_rewards_cover_some_machines(stack_avoid):
    import io

    from rmtk.learner.report import report

    r = Learner(ExactPTP(8), nodes=4, irl=MaxEntIRL(limit=2)).fit(stack_avoid)
    assert len(r.reward_fits) == 2 and r.distinct_count == 65
    assert all(m.delta_r.any() for m in r.machines[:2]) and not any(m.delta_r.any() for m in r.machines[2:])
    out = io.StringIO()
    report(stack_avoid, r, out=out)
    assert "rewards recovered for the first 2 of 65 machines" in out.getvalue()
