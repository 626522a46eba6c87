"""Learning from demonstrations at scale (docs/design/08-progress-and-limits.md and
docs/design/09-beyond-the-paper.md): a default bound on
the machines listed with a summary of the survivors, and every phase of Learner.fit keeping the
run's deadline. Stops are requested from a progress hook (what SIGINT and SIGTERM do through
rmtk.limits.request_stop), so each phase is stopped exactly where the test says."""

import io
import time

import attrs
import numpy as np
import pytest

from rmtk import dsl
from rmtk.learner.pipeline import DEMOS_MAX_SOLUTIONS, ExactPTP, Learner, LearnResult
from rmtk.learner.report import report
from rmtk.limits import Deadline, clear_stop, request_stop
from rmtk.machine.equivalence import Fillings, consistency
from rmtk.mdp.model import LabeledMDP
from rmtk.negatives.miners import ConfidenceMiner, NegativePairs
from rmtk.product.simulate import simulate
from rmtk.progress import Progress
from rmtk.ptp.empirical import EmpiricalPTP
from rmtk.ptp.exact import SoftOptimal
from rmtk.rewards.margin import MarginIRL
from rmtk.rewards.maxent import MaxEntIRL
from rmtk.sat.encoders import MaxSatEncoder


@pytest.fixture(scope="module")
def stack_avoid():
    return dsl.load_model("stack_avoid").tasks["stack_avoid"]


@pytest.fixture(scope="module")
def demos(stack_avoid):
    return simulate(stack_avoid, 1000, 20, seed=0)  # 19 machines with 3 nodes survive these


@pytest.fixture(autouse=True)
def unstopped():
    clear_stop()
    yield
    clear_stop()


class StopAt(Progress):
    """Requests a stop (as the command line's SIGINT handler does) when a hook reports what it
    waits for: a finished ``stage``, ``done`` items of a count ``what``, or ``distinct`` machines."""

    def __init__(self, stage=None, what=None, done=None, distinct=None):
        self.at_stage, self.what, self.done, self.distinct = stage, what, done, distinct

    def stage(self, name, seconds, **info):
        if name == self.at_stage:
            request_stop("interrupted")

    def count(self, done, total, what="trajectories"):
        if what == self.what and done >= self.done:
            request_stop("interrupted")

    def solution(self, count, distinct):
        if self.distinct is not None and distinct >= self.distinct:
            request_stop("interrupted")


def keys(result):
    return {m.delta_u.tobytes() for m in result.machines}


# ------------------------------------------------------------------ the bound and the summary
def test_demonstrations_list_a_bounded_number_and_say_more_survive(stack_avoid, demos):
    every = Learner(EmpiricalPTP(demos), irl=None, max_solutions=1000).fit(stack_avoid)
    assert every.search.complete and every.distinct_count == 19 and every.search.more is None
    bounded = Learner(EmpiricalPTP(demos), irl=None).fit(stack_avoid)
    assert bounded.distinct_count == DEMOS_MAX_SOLUTIONS == 10 and bounded.max_solutions == 10
    assert bounded.search.more is True and not bounded.search.complete  # one more was found, not kept
    assert keys(bounded) < keys(every)
    assert bounded.summary().count == "more than 10"
    assert "listing stopped at 10 machines (max_solutions): more survive" in bounded.search.message
    exact = Learner(EmpiricalPTP(demos), irl=None, max_solutions=19).fit(stack_avoid)
    assert exact.search.complete and exact.search.more is False and keys(exact) == keys(every)
    assert exact.summary().count == "19"


def test_an_exact_policy_lists_every_machine_by_default(stack_avoid):
    r = Learner(ExactPTP(8), nodes=4, irl=None).fit(stack_avoid)
    assert r.distinct_count == 65 and r.search.complete and r.max_solutions is None


def test_rewards_only_for_the_machines_listed(stack_avoid, demos):
    r = Learner(EmpiricalPTP(demos), max_solutions=3).fit(stack_avoid)
    assert r.distinct_count == 3 and len(r.reward_fits) == 3
    assert all(m.delta_r.any() for m in r.machines)


def test_summary_agrees_with_the_machines_and_says_why_the_truth_is_not_found(stack_avoid, demos):
    r = Learner(EmpiricalPTP(demos), irl=None).fit(stack_avoid)
    s = r.summary()
    du = np.stack([sol.delta_u for sol in r.solutions])
    used = np.stack([sol.used for sol in r.solutions])
    name = {u: i for i, u in enumerate(r.machines[0].nodes)}
    letter = {p: k for k, p in enumerate(r.machines[0].alphabet)}
    for u, p, target in s.agree:
        assert (du[:, name[u], letter[p]] == name[target]).all() and used[:, name[u], letter[p]].all()
    for u, p, targets in s.varies:
        col = du[:, name[u], letter[p]]
        assert len(set(col)) > 1 or not used[:, name[u], letter[p]].all()
        assert set(targets) == {r.machines[0].nodes[t] for t in col}
    for u, p in s.free:
        assert not used[:, name[u], letter[p]].any()
    assert len(s.agree) + len(s.varies) + len(s.free) == du[0].size
    assert s.consistent == sum(v.consistent for v in r.verdicts) == 0 and s.judged == 10
    # the truth (4 nodes) separates every pair of words mined, yet 3 nodes do too: the data do not show the 4th
    trie_nodes = r.ptp.trie.run(
        stack_avoid.machine.delta_u, stack_avoid.machine.initial, stack_avoid.letter_of_proposition
    )
    assert all(trie_nodes[p] != trie_nodes[q] for p, q in r.negatives.pairs)
    assert r.truth_merges == 0 and (s.truth_nodes, s.nodes) == (4, 3)
    text = "\n".join(s.lines())
    assert "survivors: more than 10 machines with 3 nodes" in text
    assert "the truth (4 nodes) keeps every one of the 35 negative examples, but 3 nodes suffice" in text


def run_word(machine, word, letter_of_proposition):
    u = machine.initial
    for k in word:
        u = int(machine.delta_u[u, letter_of_proposition[k]])
    return u


@attrs.frozen
class WithFalsePositives:
    """A miner: the confidence bound's pairs plus ``fake`` pairs of words the truth merges."""

    task: object
    fake: int

    def mine(self, ptp):
        neg = ConfidenceMiner().mine(ptp)
        nodes = ptp.trie.run(self.task.machine.delta_u, self.task.machine.initial, self.task.letter_of_proposition)
        words = np.flatnonzero(ptp.trie.length > 0)
        same = [(p, q) for i, p in enumerate(words) for q in words[i + 1 : i + 40] if nodes[p] == nodes[q]]
        fake = np.array(same[: self.fake])
        k = len(fake)
        return NegativePairs(
            np.concatenate([neg.pairs, fake]),
            np.concatenate([neg.state, np.full(k, -1)]),
            np.concatenate([neg.log_delta, np.zeros(k)]),
            neg.detections,
            neg.alpha,
        )


def test_the_truth_merging_false_positives_is_counted(stack_avoid, demos):
    r = Learner(
        EmpiricalPTP(demos), miner=WithFalsePositives(stack_avoid, 5), encoder=MaxSatEncoder(), nodes=4, irl=None
    ).fit(stack_avoid)
    merged = sum(
        run_word(stack_avoid.machine, r.tree.trie.word(p), stack_avoid.letter_of_proposition)
        == run_word(stack_avoid.machine, r.tree.trie.word(q), stack_avoid.letter_of_proposition)
        for p, q in r.negatives.pairs
    )
    assert r.truth_merges == merged == 5 and r.search.cost <= 5
    line = r.summary().lines()[-2]
    assert f"the truth (4 nodes) merges the two words of 5 of the {len(r.negatives)} negative examples" in line
    assert f"the optimum drops {r.search.cost}" in line


def test_learn_result_is_built_by_keywords_only(stack_avoid, demos):
    r = Learner(EmpiricalPTP(demos), irl=None, max_solutions=1).fit(stack_avoid)
    with pytest.raises(TypeError):
        LearnResult(r.machines, r.solutions, r.search, None, r.tree, r.mdp, None, {})  # positional: refused
    again = LearnResult(
        machines=r.machines,
        solutions=r.solutions,
        search=r.search,
        classes=None,
        tree=r.tree,
        mdp=r.mdp,
        verdicts=None,
        timings={},
    )
    assert again.machines == r.machines and again.stopped is None


# ------------------------------------------------------------------ deadlines, phase by phase
def test_a_stop_while_counting_keeps_the_trajectories_counted(stack_avoid, demos):
    r = Learner(EmpiricalPTP(demos, chunk=100), progress=StopAt(what="trajectories", done=100)).fit(stack_avoid)
    assert r.stopped.phase == "tree" and r.stopped.reason == "interrupted"
    assert r.stopped.unfinished == "100 of 1,000 trajectories counted"
    assert r.stopped.skipped == ("mine", "search", "verdict", "rewards")
    assert r.machines == () and r.n_nodes is None and not r.search.complete
    first = EmpiricalPTP(demos[:100]).build(stack_avoid, Progress())
    assert r.ptp.n_trajectories == 100 and np.array_equal(r.ptp.counts, first.counts)
    assert str(r.stopped).startswith("stopped (interrupted) while building the prefix tree policy: 100 of 1,000")


def test_a_stop_after_counting_skips_the_rest(stack_avoid, demos):
    r = Learner(EmpiricalPTP(demos), progress=StopAt(stage="count")).fit(stack_avoid)
    assert (r.stopped.phase, r.stopped.unfinished) == ("mine", "")
    assert r.stopped.skipped == ("search", "verdict", "rewards") and r.machines == ()
    assert "before mining negative examples; not run: searching" in str(r.stopped)


def test_a_stop_while_listing_keeps_the_machines_found(stack_avoid):
    r = Learner(ExactPTP(8), nodes=4, progress=StopAt(distinct=5)).fit(stack_avoid)
    assert r.stopped.phase == "enumerate" and r.distinct_count == 5 and not r.search.complete
    assert r.stopped.unfinished == "5 machines listed, more may survive"
    assert r.stopped.skipped == ("verdict", "rewards") and r.verdicts is None and r.reward_fits is None
    assert r.summary().count == "≥5" and "enumeration stopped early (interrupted)" in r.search.message


def test_a_stop_while_judging_keeps_the_verdicts_decided(stack_avoid):
    r = Learner(ExactPTP(8), nodes=4, progress=StopAt(what="verdicts", done=16)).fit(stack_avoid)
    assert r.distinct_count == 65 and len(r.verdicts) == 16
    assert (r.stopped.phase, r.stopped.unfinished) == ("verdict", "verdicts for 16 of the 65 machines")
    assert r.stopped.skipped == ("rewards",) and r.reward_fits is None
    true_du = stack_avoid.machine.delta_u[:, stack_avoid.letter_of_proposition]
    table = SoftOptimal().class_table(stack_avoid)
    for m, v in zip(r.machines, r.verdicts):
        assert v.consistent == consistency(stack_avoid.mdp, true_du, table, m.delta_u).consistent
    out = io.StringIO()
    report(stack_avoid, r, out=out)
    text = out.getvalue()
    assert (
        text.count("# verdict: consistent") == 16 and text.count("# verdict: not decided (the run was stopped)") == 49
    )
    assert "# stopped (interrupted) while deciding the verdicts: verdicts for 16 of the 65 machines" in text
    assert "# survivors: 65 machines with 4 nodes" in text
    assert "policy-equivalent to the truth at every depth: 16 of the 16 listed with a verdict (65 listed)" in text


def test_a_stop_while_recovering_rewards_keeps_the_fits_done(stack_avoid):
    r = Learner(ExactPTP(8), nodes=4, irl=MaxEntIRL(limit=3), progress=StopAt(what="reward fits", done=1)).fit(
        stack_avoid
    )
    assert len(r.reward_fits) == 2 and r.verdicts is not None and len(r.verdicts) == 65
    assert (r.stopped.phase, r.stopped.skipped) == ("rewards", ())
    assert r.stopped.unfinished == "rewards recovered for 2 of the 3 machines they were asked for"
    assert all(m.delta_r.any() for m in r.machines[:2]) and not r.machines[2].delta_r.any()


def test_a_passed_time_limit_stops_before_the_first_phase(stack_avoid, demos):
    r = Learner(EmpiricalPTP(demos), time_limit=1e-9).fit(stack_avoid)
    assert r.stopped.reason == "time limit" and r.stopped.phase == "tree" and r.machines == ()


def test_reward_strategies_stop_between_machines(stack_avoid):
    r = Learner(ExactPTP(8), nodes=4, irl=None, max_solutions=2).fit(stack_avoid)
    passed = Deadline(time.monotonic() - 1)
    for irl in (MaxEntIRL(), MarginIRL()):
        fits, unfinished = irl.fit_within(
            stack_avoid.mdp, r.machines, r.ptp, gamma=0.99, lam=1.0, progress=Progress(), deadline=passed
        )
        assert fits == () and unfinished == "rewards recovered for 0 of the 2 machines they were asked for"


def test_fillings_pair_only_clashes_within_a_state():
    """The clash pairs of the filling check, computed state by state, are the pairs of all
    reachable (state, node) pairs that share a state and differ in class (brute force)."""
    rng = np.random.default_rng(5)
    for _ in range(20):
        S, A, K, n = int(rng.integers(3, 8)), 2, 2, int(rng.integers(2, 5))
        P = rng.dirichlet(np.ones(S), size=(A, S)) * (rng.random((A, S, S)) < 0.5)
        P[:, :, 0] += 1e-3
        P /= P.sum(axis=2, keepdims=True)
        initial = np.zeros(S)
        initial[0] = 1.0
        mdp = LabeledMDP.from_dense(P, labels=rng.integers(0, K, S), propositions=["a", "b"], initial=initial)
        delta = rng.integers(0, n, size=(n, K))
        table = rng.integers(0, 2, size=(S, n))
        f = Fillings(mdp, delta, table)
        s, u = f.pair_code // n, f.pair_code % n
        i, j = np.triu_indices(len(s), 1)
        keep = (s[i] == s[j]) & (table[s[i], u[i]] != table[s[j], u[j]])
        assert np.array_equal(f.clash.reshape(-1, 2), np.stack([i[keep], j[keep]], axis=1))
        f.close()
