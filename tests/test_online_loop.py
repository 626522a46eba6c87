"""The online loop without an agent (rmtk/rl/online/loop.py, traces.py, inference.py, verdict.py,
exploration.py): counterexamples found against the hypothesis, the next machine inferred from
the kept traces, the kept traces bounded, the clear errors, and the walker's paths. Only
gymnasium is needed (the rl extra's SB3 is not imported)."""

import numpy as np
import pytest

pytest.importorskip("gymnasium", reason="rmtk.rl needs gymnasium (pip install '.[gym]')")

from rmtk.errors import DataError, ModelError  # noqa: E402
from rmtk.machine.model import RewardMachine  # noqa: E402
from rmtk.rl.online import (  # noqa: E402
    KeepCounterexamples,
    LoopSettings,
    MarkovianRewardError,
    NodeBoundError,
    OnlineEnv,
    OnlineLoop,
    Trace,
    against_truth,
)
from rmtk.rl.online.exploration import FAR, distances  # noqa: E402
from rmtk.rl.online.hypothesis import aligned  # noqa: E402
from rmtk.rl.online.tasks import MachinePays, cliff_labels, cliff_machine, cliff_patrol  # noqa: E402

PROPS = ("a", "b", "c", "g", "o")


def patrol(word: str, episode: int = 0, terminated: bool = False) -> Trace:
    """A trace of ``word`` paid by the CliffWalking patrol's machine, computed here by hand:
    1 on the first c after b after a (then the episode ends, as the environment ends it)."""
    letters = [PROPS.index(x) for x in word.split()]
    stage, rewards = 0, []
    for k in letters[1:]:
        x = PROPS[k]
        paid = 0.0
        if (stage, x) in ((0, "a"), (1, "b")):
            stage += 1
        elif (stage, x) == (2, "c"):
            paid, stage = 1.0, 3
        rewards.append(paid)
    return Trace(letters, rewards, episode=episode, step=10 * (episode + 1), terminated=terminated)


def test_online_counterexample_swaps_the_hypothesis():
    loop = OnlineLoop(PROPS, LoopSettings(max_nodes=4))
    assert loop.finished(patrol("o c o b o a o", 0)) is None  # paid nothing: the trivial machine agrees
    new = loop.finished(patrol("o a o b o c", 1))
    assert new is not None and loop.swaps == 1
    swap = loop.history[1]
    # the first step the trivial machine pays otherwise: the c after a, b (position 4 of 5 steps)
    assert (swap.position, swap.expected, swap.paid, swap.step, swap.episode) == (4, 0.0, 1.0, 20, 1)
    assert swap.counterexample.counterexample and swap.traces == 2
    # the new hypothesis pays every kept trace as the environment did
    for t in loop.kept:
        assert np.array_equal(t.expected(loop.hypothesis), t.rewards)
    assert loop.finished(patrol("o a o b o c", 2)) is None  # agrees: no swap
    assert loop.swaps == 1


def test_online_loop_reaches_the_patrol_up_to_unexercised_pairs():
    words = ["o a o b o c", "o c o b o a o c o b", "o b o a o c o a o b o c", "o a o c o b o c", "o a o a o b o b o c"]
    words += ["o b o c o a o g", "o a o b o a o c", "o a o g"]
    loop = OnlineLoop(PROPS, LoopSettings(max_nodes=5, keeping=KeepCounterexamples(sampled=10)))
    for i, w in enumerate(words):
        loop.finished(patrol(w, i))
    verdict = against_truth(loop.machine, cliff_machine(), loop.kept)
    assert verdict.same and not verdict.complete, verdict
    assert verdict.never_left == ("end",)
    assert loop.machine.n_nodes == 3
    assert str(verdict).startswith("isomorphic to the true machine up to the ")
    assert str(verdict).endswith("the truth's end, which no episode leaves (episodes end there)")


def test_online_loop_learns_where_episodes_end():
    """Episodes the environment ended (at c after b after a, at g) give the machine an end node:
    with it the learned machine is the truth, end node included; an episode that goes on after
    it is a counterexample."""
    words = ["o a o b o c", "o c o b o a o b o c", "o b o a o c o a o b o c", "o a o c o b o c", "o a o a o b o c"]
    words += ["o b o c o a o g", "o a o b o g", "o g", "o a o b o a o b o c"]
    loop = OnlineLoop(PROPS, LoopSettings(max_nodes=5, keeping=KeepCounterexamples(sampled=10)))
    for i, w in enumerate(words):
        loop.finished(patrol(w, i, terminated=w.endswith(("c", "g"))))
    m = loop.machine
    assert m.n_nodes == 4 and m.nodes[loop.hypothesis.terminal.argmax()] == "end"
    verdict = against_truth(m, cliff_machine(), loop.kept)
    assert verdict.complete and str(verdict) == "isomorphic to the true machine"
    swaps = loop.swaps
    went_on = Trace([4, 3, 4, 0], [0.0, 0.0, 0.0], episode=99)  # o g o a: on after g, paid nothing
    assert went_on.disagreement(loop.hypothesis) == 1
    loop.finished(went_on)
    assert loop.swaps == swaps + 1 and "went on where the hypothesis had ended it" in loop.history[-1].line(PROPS)
    assert "end" not in loop.machine.nodes or loop.machine.step(loop.machine.initial, "g") != loop.machine.node_index(
        "end"
    )


def test_online_verdict_names_what_the_traces_separate():
    one = RewardMachine.from_transitions({("u0", "c"): ("u0", 1.0)}, PROPS, nodes=["u0"])
    verdict = against_truth(one, cliff_machine(), [patrol("o c o a o b o c")])
    assert not verdict.same and "after o then c it pays 1, the truth 0" in verdict.reason


def test_online_kept_traces_are_bounded():
    keep = KeepCounterexamples(sampled=3)
    rng = np.random.default_rng(0)
    kept: tuple = ()
    cx = Trace([0, 1], [1.0], episode=99, counterexample=True)
    for i in range(40):
        kept = keep.keep(kept, Trace([4, 4], [0.0], episode=i), i + 1, rng)
        if i == 20:
            kept = keep.keep(kept, cx, i + 1, rng)
    assert sum(not t.counterexample for t in kept) == 3 and any(t is cx for t in kept)
    assert KeepCounterexamples(sampled=0).keep((), Trace([4, 4], [0.0]), 1, rng) == ()


def test_online_node_bound_too_small():
    loop = OnlineLoop(PROPS, LoopSettings(max_nodes=2))
    loop.finished(patrol("o c o b o a o", 0))
    loop.finished(patrol("o a o c", 1))  # unpaid: c needs b after a
    loop.finished(patrol("o b o c", 2))  # unpaid: and a before b, which two nodes cannot count
    with pytest.raises(NodeBoundError, match=r"max_nodes=2 .*4 traces kept.*raise max_nodes"):
        loop.finished(patrol("o a o b o c", 3))


def test_online_markovian_reward_is_named():
    loop = OnlineLoop(PROPS, LoopSettings(max_nodes=3, markov_after=3))

    def trace(word, i):
        letters = [PROPS.index(x) for x in word.split()]
        return Trace(letters, [1.0 if PROPS[k] == "a" else 0.0 for k in letters[1:]], episode=i)

    loop.finished(trace("o a o b a", 0))
    loop.finished(trace("o c a o", 1))
    with pytest.raises(MarkovianRewardError, match="Markovian in the labels.*a: 1.*no reward machine was needed"):
        loop.finished(trace("o b o a", 2))


def test_online_labeler_outside_the_alphabet():
    env, _, _ = cliff_patrol()
    online = OnlineEnv(env, lambda obs, info: "x" if obs == 36 else "o", propositions=PROPS)
    with pytest.raises(DataError, match=r"episode 0, reset: the labeler returned 'x', which is not a proposition"):
        online.reset(seed=0)
    with pytest.raises(ModelError, match="needs the labeler's alphabet"):
        OnlineEnv(env, lambda obs, info: "o")


def test_online_env_records_the_hypothesis_reward_and_the_trace():
    env, labels, truth = cliff_patrol()
    online = OnlineEnv(env, labels, max_nodes=4)
    truth_h = online.loop.assume(truth)  # the true machine as the hypothesis: no counterexample
    obs, info = online.reset(seed=0)
    assert obs == 36 * 4 + truth_h.start(PROPS.index("o"))
    route = [0, 0, 0, 1] + [1] * 9 + [2, 2] + [3] * 5  # up to a, right to b, down to row 2, left to c
    paid = []
    for a in route:
        obs, reward, terminated, truncated, info = online.step(a)
        paid.append((reward, info["env_reward"], obs % 4))
        if terminated:
            break
    assert terminated and paid[-1][:2] == (1.0, 1.0) and online.loop.episodes == 1
    assert online.loop.swaps == 1 and not online.loop.kept[0].counterexample  # assumed, not inferred


def test_online_slots_keep_nodes_in_place():
    old = cliff_machine().renamed([0, 1, 2, 3], ["u0", "u1", "u2", "u3"])
    new = old.renamed([2, 0, 3, 1])  # the same machine, nodes shuffled
    words = [np.array([PROPS.index(x) for x in w.split()]) for w in ("o a o b o c", "o a b g")]
    back = aligned(new, old, words)
    assert np.array_equal(back.delta_u, old.delta_u) and back.initial == old.initial


def test_online_walker_distances():
    succ = np.array([[1, 0], [2, 0], [2, 1], [-1, -1]])  # a chain 0 -> 1 -> 2; state 3 unknown
    d = distances(succ, np.array([False, False, True, False]))
    assert d.tolist()[:3] == [2, 1, 0] and d[3] == FAR


def test_online_machine_pays_hides_the_machine():
    env, labels, truth = cliff_patrol()
    assert isinstance(env, MachinePays) and env.observation_space.n == 48
    assert cliff_labels()(1, {}) == "a" and truth.n_nodes == 4


def _office_traces(noise, n=600):
    """Random-subgoal episodes of the Office World's coffee task (decorations walked around), their
    rewards noisy by ``noise(demos)``, as traces."""
    from rmtk import dsl
    from rmtk.traces import RandomSubgoals, explore

    task = dsl.load_model("office").tasks["coffee"]
    demos = noise(explore(task, n, 100, seed=0, explorer=RandomSubgoals(epsilon=0.1, avoid=("n",))), task.machine)
    labels = task.mdp.labels
    traces = []
    for i in range(demos.n_trajectories):
        m = int(demos.lengths[i])
        traces.append(
            Trace(labels[demos.states[i, :m]], demos.rewards[i, : m - 1], i, 100 * (i + 1), terminated=m < 100)
        )
    return task, traces


def test_online_replaced_rewards_are_weighed_not_taken_as_counterexamples():
    from rmtk.rl.online import ReplacedRewards
    from rmtk.traces import replaced_rewards

    task, traces = _office_traces(lambda d, m: replaced_rewards(d, np.unique(m.delta_r), 0.05, seed=1))
    props = task.mdp.propositions
    loop = OnlineLoop(
        props, LoopSettings(max_nodes=5, inference=ReplacedRewards(0.05), keeping=KeepCounterexamples(300))
    )
    for t in traces:
        loop.finished(t)
    weighed = [h for h in loop.history if h.disagreeing is not None]
    assert weighed and all(h.counterexample is None and h.disagreeing > 0.05 * h.observed for h in weighed)
    assert not any(t.counterexample for t in loop.kept)  # no single noisy episode decided anything
    assert str(against_truth(loop.machine, task.machine.with_alphabet_order(props), loop.kept)) == (
        "isomorphic to the true machine"
    )
    assert "more than the noise explains" in weighed[-1].line(props)


def test_online_noise_bound_is_the_binomial_quantile():
    from scipy.stats import binom

    from rmtk.rl.online.inference import noise_bound

    for steps, eps in ((100, 0.05), (4944, 0.05), (7780, 0.1)):
        assert noise_bound(steps, eps, 0.99) == int(binom.ppf(0.99, steps, eps))


def test_online_tolerant_rewards_within_delta():
    from rmtk.rl.online import TolerantRewards
    from rmtk.traces import uniform_noise

    task, traces = _office_traces(lambda d, m: uniform_noise(d, 0.1, seed=1), n=200)
    props = task.mdp.propositions
    loop = OnlineLoop(props, LoopSettings(max_nodes=5, inference=TolerantRewards(0.1)))
    for t in traces:
        loop.finished(t)
    assert str(against_truth(loop.machine, task.machine.with_alphabet_order(props), loop.kept, 0.1)) == (
        "isomorphic to the true machine"
    )
    paid = loop.machine.delta_r[loop.machine.delta_r != 0]
    assert len(paid) == 1 and abs(paid[0] - 1.0) <= 0.1  # the center of the observed 1 ± 0.1


def test_online_inference_time_limit_stops_the_run_not_the_machine():
    """The inference's time limit is a safety stop: cut, it leaves the hypothesis as it was and
    stops the run, flagged; the same traces without it give a machine."""
    loop = OnlineLoop(PROPS, LoopSettings(max_nodes=4, time_limit=1e-9))
    assert loop.finished(patrol("o a o b o c", 0)) is None
    assert loop.stopped is not None and loop.stopped.startswith("inference at step 10 stopped (time limit)")
    assert loop.swaps == 0 and loop.machine.n_nodes == 1
    assert loop.finished(patrol("o a o b o c", 1)) is None and loop.episodes == 2  # nothing more is inferred
    free = OnlineLoop(PROPS, LoopSettings(max_nodes=4, time_limit=None))
    assert free.finished(patrol("o a o b o c", 0)) is not None
