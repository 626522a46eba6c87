"""Comparisons of two sampled action distributions (rmtk/negatives/statistics.py): the resolution a
comparison claims is detected in at least 1 − α of seeded simulated runs, equal distributions
are declared separated in at most α of runs even when the test looks after every draw, and
sequential sampling stops early on clear differences and keeps going on faint ones."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest

from rmtk.errors import ModelError
from rmtk.negatives.statistics import (
    Mixture,
    Sequential,
    Weissman,
    compare,
    compare_counts,
    draws_to_resolve,
    evidence,
    growth_to_resolve,
    resolution,
    total_variation,
)

BOUNDS = [Weissman(), Mixture()]


def _apart(p: np.ndarray, tv: float) -> np.ndarray:
    """A distribution at total variation exactly ``tv`` from ``p``: mass moved onto p's least likely action."""
    j = int(np.argmin(p))
    lam = tv / (1 - p[j])
    assert 0 <= lam <= 1
    q = (1 - lam) * p
    q[j] += lam
    assert abs(0.5 * np.abs(p - q).sum() - tv) < 1e-12
    return q


@pytest.mark.parametrize("bound", BOUNDS, ids=lambda b: type(b).__name__)
def test_the_claimed_resolution_is_detected_in_at_least_1_minus_alpha_of_runs(bound):
    rng = np.random.default_rng(7)
    runs = 400
    for A, n1, n2, alpha in [(4, 300, 300, 0.05), (4, 2000, 150, 0.05), (6, 800, 900, 0.1), (3, 5000, 5000, 0.01)]:
        d = float(resolution(n1, n2, A, alpha=alpha, bound=bound))
        assert 0 < d < 0.9
        p = rng.dirichlet(np.full(A, 3.0))
        q = _apart(p, d)
        a, b = rng.multinomial(n1, p, size=runs), rng.multinomial(n2, q, size=runs)
        c = compare(a, b, alpha=alpha, bound=bound)
        assert c.separated.mean() >= 1 - alpha
        # and the interval holds the truth in as many runs
        assert ((c.lower <= d) & (d <= c.upper)).mean() >= 1 - alpha
        # not vacuous: equal distributions at these counts are not separated
        same = compare(rng.multinomial(n1, p, size=runs), rng.multinomial(n2, p, size=runs), alpha=alpha, bound=bound)
        assert same.separated.mean() <= alpha


def test_equal_distributions_are_separated_in_at_most_alpha_of_runs_even_looking_after_every_draw():
    """The anytime-valid bound: 300 runs of 3,000 draws a side, the test read after each draw."""
    rng = np.random.default_rng(11)
    runs, draws, A = 300, 3000, 4
    for alpha in (0.05, 0.3):
        p = rng.dirichlet(np.ones(A))
        a = rng.multinomial(1, p, size=(runs, draws)).cumsum(axis=1).reshape(-1, A)
        b = rng.multinomial(1, p, size=(runs, draws)).cumsum(axis=1).reshape(-1, A)
        c = compare(a, b, alpha=alpha, bound=Mixture())
        ever = c.separated.reshape(runs, draws).any(axis=1)
        assert ever.mean() <= alpha
        # the interval of the true total variation (0) holds at every draw in as many runs
        assert (c.lower.reshape(runs, draws) > 0).any(axis=1).mean() <= alpha


def test_the_paper_rule_is_the_confidence_miners():
    """Weissman's threshold is the smallest total variation with δ1 + δ2 ≤ α (eq. 18-19)."""
    rng = np.random.default_rng(3)
    n1, n2 = rng.integers(1, 5000, 200).astype(float), rng.integers(1, 5000, 200).astype(float)
    for A, alpha in [(2, 0.05), (4, 0.05), (25, 1e-3)]:
        t = Weissman().threshold(n1, n2, A, alpha)
        c = math.log(2.0**A - 2)

        def log_delta(t, c=c):
            return np.logaddexp(c - n1 * t**2 / 2, c - n2 * t**2 / 2)

        assert (log_delta(t) <= math.log(alpha) + 1e-9).all()
        assert (log_delta(t * (1 - 1e-6)) > math.log(alpha)).all()


def test_radii_shrink_and_the_anytime_one_costs_a_log():
    n = np.array([1, 5, 20, 100, 1000, 10**4, 10**5, 10**6], float)
    w, m = Weissman().radius(n, 4, 0.025), Mixture().radius(n, 4, 0.025)
    assert (np.diff(w) < 0).all() and (np.diff(m) < 0).all()
    ratio = m[2:7] / w[2:7]  # 20 to 10^5 draws
    assert (ratio > 1).all() and (ratio < 1.35).all()
    assert np.isinf(Weissman().radius(np.array([0.0]), 4, 0.05)).all()


def test_draws_to_resolve_are_the_fewest():
    """Against a brute force over every split of the extra draws between the two sides."""
    for bound, (n1, n2, target) in itertools.product(BOUNDS, [(0, 0, 0.8), (50, 3, 0.6), (400, 10, 0.5), (7, 7, 0.9)]):
        m1, m2 = draws_to_resolve(np.array([n1]), np.array([n2]), np.array([target]), 4, alpha=0.05, bound=bound)
        m1, m2 = int(m1[0]), int(m2[0])
        assert resolution(n1 + m1, n2 + m2, 4, alpha=0.05, bound=bound) <= target
        x, y = np.meshgrid(np.arange(m1 + m2 + 1), np.arange(m1 + m2 + 1))
        ok = resolution(n1 + x, n2 + y, 4, alpha=0.05, bound=bound) <= target
        best = int((x + y)[ok].min())
        assert m1 + m2 <= best + 1  # within one draw (the common level is a whole number)
    m1, m2 = draws_to_resolve(np.array([10]), np.array([10]), np.array([0.0]), 4, alpha=0.05)
    assert np.isinf(m1).all() and np.isinf(m2).all()


@pytest.mark.parametrize("bound", BOUNDS, ids=lambda b: type(b).__name__)
def test_growth_to_resolve_meets_the_target_no_sooner(bound):
    n1, n2 = np.array([100.0, 20, 3000]), np.array([10.0, 20, 50])
    target = np.array([0.2, 0.3, 0.05])
    f = growth_to_resolve(n1, n2, target, 4, alpha=0.05, bound=bound)
    assert (f > 1).all()
    assert (resolution(f * n1, f * n2, 4, alpha=0.05, bound=bound) <= target * (1 + 1e-6)).all()
    assert (resolution(0.999 * f * n1, 0.999 * f * n2, 4, alpha=0.05, bound=bound) > target).all()
    assert np.isinf(growth_to_resolve(n1, n2, 0.0, 4, alpha=0.05, bound=bound)).all()


def test_comparison_reads_counts_and_flags_noise():
    a = np.array([[50, 50, 0, 0], [100, 0, 0, 0], [0, 0, 0, 0]])
    b = np.array([[48, 52, 0, 0], [0, 100, 0, 0], [5, 5, 0, 0]])
    np.testing.assert_allclose(total_variation(a, b), [0.02, 1.0, 0.0])
    c = compare(a, b, alpha=0.05)
    assert c.separated.tolist() == [False, True, False]
    assert c.consistent_with_zero.tolist() == [True, False, True]
    assert c.lower[0] == 0 and c.lower[1] > 0.4 and c.upper[1] == 1
    assert np.isinf(c.resolution[2])  # an unvisited side resolves nothing
    again = compare_counts(a.sum(1), b.sum(1), total_variation(a, b), 4, alpha=0.05)
    np.testing.assert_array_equal(again.margin, c.margin)
    np.testing.assert_array_equal(evidence(a.sum(1), b.sum(1), total_variation(a, b), 4, alpha=0.05), c.margin)
    assert (evidence(a.sum(1), b.sum(1), total_variation(a, b), 4, alpha=0.05) > 0).tolist() == [False, True, False]
    with pytest.raises(ModelError, match="alpha must lie in"):
        compare(a, b, alpha=1.5)


def _sampler(p, rng):
    return lambda m: rng.multinomial(m, p).astype(float)


def test_sequential_sampling_stops_early_on_clear_differences_and_keeps_going_on_faint_ones():
    rng = np.random.default_rng(5)
    p = np.array([0.4, 0.3, 0.2, 0.1])
    seq = Sequential(alpha=0.05, epsilon=0.1)
    # a clear difference: separated after a few dozen draws a side
    status, a, b, spent = seq.run(_sampler(p, rng), _sampler(_apart(p, 0.7), rng), 4)
    assert status == "separated" and spent < 150
    # a faint one (0.02, below the target resolution): sampled until resolved at 0.1, not before
    status, a, b, spent = seq.run(_sampler(p, rng), _sampler(_apart(p, 0.02), rng), 4)
    assert status == "resolved"
    assert resolution(a.sum(), b.sum(), 4, alpha=0.05) <= 0.1
    m1, m2 = draws_to_resolve(np.array([0]), np.array([0]), np.array([0.1]), 4, alpha=0.05)
    assert m1[0] + m2[0] <= spent <= 1.6 * (m1[0] + m2[0])  # batches overshoot by at most a growth step
    # in between: a difference above the target is found with fewer draws than resolving it takes
    status, a, b, spent2 = seq.run(_sampler(p, rng), _sampler(_apart(p, 0.2), rng), 4)
    assert status == "separated" and 150 < spent2 < spent
    # a budget ends it, flagged
    status, a, b, spent = seq.run(_sampler(p, rng), _sampler(p, rng), 4, budget=500)
    assert status == "budget" and spent <= 500


@pytest.mark.slow  # several CPU seconds: CI runs it apart (setup.cfg)
def test_sequential_decisions_are_right_in_1_minus_alpha_of_runs():
    """At a true difference above ε, "resolved" (alike to ε) is wrong: at most α of runs say it;
    at zero difference, "separated" is wrong: at most α of runs say it."""
    seq = Sequential(alpha=0.1, epsilon=0.3)
    p = np.array([0.5, 0.3, 0.2])
    for tv, wrong in ((0.0, "separated"), (0.35, "resolved")):
        rng = np.random.default_rng(int(tv * 100))
        outcomes = [seq.run(_sampler(p, rng), _sampler(_apart(p, tv), rng), 3)[0] for _ in range(120)]
        assert outcomes.count(wrong) <= 0.1 * len(outcomes)


def test_sequential_plan_is_vectorised():
    seq = Sequential(alpha=0.05, epsilon=0.2, first=10)
    a = np.array([[0, 0, 0], [400, 0, 0], [30, 30, 30], [5000, 5000, 5000]])
    b = np.array([[0, 0, 0], [0, 400, 0], [10, 10, 10], [5000, 5000, 5000]])
    plan = seq.plan(a, b)
    assert plan.status.tolist() == ["open", "separated", "open", "resolved"]
    assert (plan.draw1[0], plan.draw2[0]) == (10, 10)
    assert plan.draw1[1] == plan.draw2[1] == plan.draw1[3] == 0
    assert plan.draw1[2] == 0 < plan.draw2[2]  # the lagging side catches up first, alone
    with pytest.raises(ModelError, match="anytime-valid"):
        Sequential(bound=Weissman())


def test_merge_resolution_of_a_passive_result_against_a_brute_force(tmp_path, capsys):
    """Patrol's soft expert (λ = 1), 3,000 episodes: one machine, no negative example. The
    resolution summary compares, at every state, the two most visited words (the 1-node machine
    merges all), recomputed here with the paper's rule by bisection; the report says it."""
    from rmtk import EmpiricalPTP, Learner, dsl
    from rmtk.cli.main import main
    from rmtk.data import save
    from rmtk.product.simulate import simulate

    patrol = dsl.load_model("patrol").tasks["patrol"]
    demos = simulate(patrol, 3000, 20, seed=1)
    r = Learner(EmpiricalPTP(demos), irl=None).fit(patrol)
    assert r.n_nodes == 1 and len(r.negatives) == 0
    summary = r.resolution()
    counts = np.asarray(r.ptp.counts, float)
    n, state = counts.sum(axis=1), np.asarray(r.ptp.tree.pair_state)
    c = math.log(2.0**4 - 2)
    found, others, groups = [], 0, 0
    for s in np.unique(state):
        at = np.flatnonzero(state == s)
        if len(at) < 2:
            continue
        groups += 1
        others += len(at) - 2
        a, b = at[np.argsort(-n[at], kind="stable")[:2]]
        lo, hi = 0.0, 50.0
        for _ in range(100):  # the paper's rule: smallest t with δ(n_a, t) + δ(n_b, t) ≤ α
            mid = (lo + hi) / 2
            ok = np.logaddexp(c - n[a] * mid**2 / 2, c - n[b] * mid**2 / 2) <= math.log(0.05)
            hi, lo = (mid, lo) if ok else (hi, mid)
        width = sum(math.sqrt(2 * (c - math.log(0.025)) / m) for m in (n[a], n[b])) / 2
        found.append(hi + width)
    found = np.array(found)
    done = found[found < 1]
    assert (summary.groups, summary.decided, summary.undecided, summary.others) == (
        groups,
        len(done),
        groups - len(done),
        others,
    )
    np.testing.assert_allclose([summary.worst, summary.median, summary.best], [done.max(), np.median(done), done.min()])
    text = str(summary)
    assert text.startswith(f"resolution (total variation, alpha 0.05): no difference ≥ {done.max():.2f} found at the ")
    assert "no negative example" in text
    # an exact policy proves its answer: no resolution
    from rmtk import ExactPTP

    assert Learner(ExactPTP(3), irl=None).fit(patrol).resolution() is None
    path = tmp_path / "soft.npz"
    save(demos, path, patrol.mdp)
    model = Path(__file__).resolve().parents[1] / "models" / "patrol.rm"
    assert main(["learn", str(model), "--demos", str(path), "-q", "--no-rewards"]) == 0
    assert f"# {text}" in capsys.readouterr().out
