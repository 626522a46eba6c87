"""Family-wise negative examples of a sampled run (rmtk.negatives.anytime.FamilyWise,
rmtk.active.family; docs/design/14-sampled-experts.md, section 14.1)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rmtk.active import ActiveLearner, Budget, ExpertWalks
from rmtk.negatives.anytime import Adaptive, FamilyWise, row_weights

gymnasium = pytest.importorskip("gymnasium")

from test_gym_expert import a_then_g, lake  # noqa: E402

from rmtk.gym.experts import GymExpert  # noqa: E402


def test_row_weights_sum_to_at_most_one_and_fall():
    w = row_weights(np.arange(10**6))
    assert w.sum() <= 1.0
    assert np.all(np.diff(w) < 0)
    # the sum's tail beyond 10^6 rows is below its integral, 1/ln(10^6 + 1): every row ever asked fits
    assert w.sum() + 1.0 / (math.log(10**6 + 1) * 2.109) > 0.99


def test_firm_separates_clear_differences_early_and_pays_for_late_rows():
    f, each = FamilyWise(), Adaptive()
    a, b = np.array([[20, 0, 0, 0]]), np.array([[0, 20, 0, 0]])  # two opposite sharp experts, 20 draws a side
    assert each.compare(a, b, alpha=0.05).separated[0]
    assert f.firm(a, b, [0], [1])[0]  # the first rows asked pay little for the whole run
    assert not f.firm(a, b, [10**5], [10**5 + 1])[0]  # the 100,000th pays about log r more
    assert f.firm(2 * a, 2 * b, [10**5], [10**5 + 1])[0]  # 40 a side do


def _looks(rows: int, p, looks: int, batch: int, seed: int):
    """``rows`` histories at one state, all with the action distribution ``p``, sampled in
    batches; after each batch every pair is compared. Whether any pair was ever separated
    family-wise, and at level α each."""
    rng = np.random.default_rng(seed)
    counts = np.zeros((rows, len(p)))
    i, j = np.triu_indices(rows, 1)
    f, per = FamilyWise(alpha=0.05), Adaptive()
    any_firm = any_each = False
    for _ in range(looks):
        counts += rng.multinomial(batch, p, size=rows)
        any_firm |= bool(f.prepare(counts, np.arange(rows)).firm(i, j).any())
        any_each |= bool(per.prepare(counts, 0.05).compare(i, j).separated.any())
    return any_firm, any_each


def test_no_false_negative_example_in_a_whole_run_in_at_least_1_minus_alpha_of_runs():
    # 100 equal histories (4,950 pairs), looked at after each of 6 batches, 40 seeded runs: a
    # false negative example anywhere in a run happens in at most α of runs family-wise
    runs = [_looks(100, [0.4, 0.3, 0.2, 0.1], 6, 12, seed) for seed in range(40)]
    firm_runs = sum(r[0] for r in runs)
    each_runs = sum(r[1] for r in runs)
    assert firm_runs <= 0.05 * len(runs)
    assert each_runs >= firm_runs  # the per-comparison test is never the stricter one


def _lake_run(**kw):
    env, mdp = lake(False)
    task, _, policy = a_then_g(mdp)
    return ActiveLearner(check=ExpertWalks(30, 30), **kw).fit(task, GymExpert(env, mdp, policy, seed=1))


def test_the_loop_makes_the_negative_examples_the_answer_rests_on_firm():
    run = _lake_run()
    f = run.firmness
    assert f is not None and f.holds and f.firm == f.negatives >= 1
    firm_rounds = [r for r in run.rounds if r.reason == "firm"]
    assert firm_rounds and all(q.samples > 0 for r in firm_rounds for q in r.asked)
    assert "the answer holds family-wise" in run.log()
    assert run.result.n_nodes == 2  # as before: the firm negative example still forces a second node


def test_a_budget_that_ends_before_they_are_firm_is_said():
    full = _lake_run()
    first = next(k for k, r in enumerate(full.rounds) if r.reason == "firm")
    run = _lake_run(budget=Budget(draws=full.rounds[first - 1].draws))  # all but the draws that made it firm
    f = run.firmness
    assert run.flagged and f is not None and not f.holds
    assert f.firm == 0 and f.nodes == 1  # with no firm negative example one node would do
    assert "rests on comparisons at level 0.05 each" in run.log()


def test_a_history_is_ranked_by_its_first_answer_and_judged_on_its_answers_alone():
    """Recorded counts at a history were seen before it was first asked, so the family-wise
    test reads its answers only (rmtk.active.knowledge.Knowledge.places)."""
    from rmtk import dsl
    from rmtk.active import ExpertCapabilities, SimulatedExpert
    from rmtk.active.asking import Asker
    from rmtk.active.knowledge import Knowledge
    from rmtk.negatives.statistics import Sequential
    from rmtk.product.simulate import simulate

    task = dsl.load_model("stack_avoid").tasks["stack_avoid"]
    demos = simulate(task, 200, 20, seed=0)
    expert = SimulatedExpert(task, seed=0, recorded=demos)
    caps = ExpertCapabilities.of(expert)
    test = Sequential(alpha=0.05, epsilon=0.3, bound=Adaptive(), growth=1.5)
    know = Knowledge(task.mdp, exact=False, compressed=caps.compressed, recorded=demos, test=test)
    ptp = know.ptp()
    rows = [(tuple(ptp.trie.word(int(n))), int(st)) for n, st in zip(ptp.tree.pair_node, ptp.tree.pair_state)]
    (word, state), other = rows[-1], rows[-2]
    recorded = know.rows([(word, state)])[0]
    assert recorded.sum() > 0
    know.add(Asker(expert, caps, Budget()).act(word, state, 7))
    place, own = know.places([(word, state), other])
    assert place.tolist() == [0, -1]  # the first history asked; one only recorded
    assert own[0].sum() == 7 and own[1].sum() == 0  # its answers alone
    assert (know.rows([(word, state)])[0] == recorded + own[0]).all()  # the miner reads both
