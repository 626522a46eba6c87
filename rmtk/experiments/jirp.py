"""Learning while exploring (the loop of JIRP, Xu et al., ICAPS 2020): an agent that does not
know the reward machine explores with tabular Q-learning on the product of the MDP and its
current hypothesis; whenever the hypothesis pays otherwise than the environment on an
episode, that episode is a counterexample, and the hypothesis is inferred again from every
counterexample so far, from the rewards alone (rmtk's :class:`~rmtk.learner.pipeline.Learner` with
:class:`~rmtk.traces.evidence.TraceRewards`, docs/design/rewards-evidence.md). The loop ends
when ``patience`` episodes in a row raise no counterexample (the machine stopped changing) or
the episode budget is spent (flagged).

The environment is the task: its MDP, and its machine paying the rewards (the prefix
convention of docs/design/02-conventions.md: action ``a_t`` earns ``δ_r(u_t, L(s_{t+1}))``); an episode ends
when the machine enters its end node (:func:`rmtk.traces.explorers.end_nodes`), as in the Office World.
Every draw comes from one seeded generator: the same seed gives the same rounds.
"""

from __future__ import annotations

import time

import attrs
import numpy as np

from .. import dsl, ties
from ..data import Demonstrations
from ..machine.model import RewardMachine
from ..task import Task
from ._report import COUNT, PROBABILITY, Options, Report, Setting

#: The tasks explored: the Office World's coffee and patrol, and the rooms patrol of models/patrol.rm.
TASKS = "office:coffee,patrol:patrol,office:patrol"
SETTINGS = {
    "tasks": Setting(TASKS, "MODEL:TASK pairs of shipped models (comma-separated)", quick=TASKS.rpartition(",")[0]),
    "episodes": Setting(20_000, "episode budget per task", quick=3_000, domain=COUNT),
    "horizon": Setting(200, "steps per episode at most", quick=100, domain=COUNT),
    "patience": Setting(2_000, "episodes in a row without a counterexample that end the loop", quick=500, domain=COUNT),
    "epsilon": Setting(0.3, "exploration rate of the ε-greedy Q-learner", domain=PROBABILITY),
}


def trivial(propositions) -> RewardMachine:
    """The first hypothesis: one node that pays nothing."""
    K = len(propositions)
    return RewardMachine(["u0"], propositions, np.zeros((1, K), np.int64), np.zeros((1, K)), name="hypothesis")


@attrs.frozen
class Round:
    """One re-inference: the episode whose rewards disagreed, the step, what the hypothesis
    would have paid there and what the environment paid, and the machine inferred after it."""

    episode: int
    step: int
    word: tuple[str, ...]
    letter: str
    expected: float
    paid: float
    machine: RewardMachine

    def line(self) -> str:
        tail = " ".join(self.word[-6:])
        more = "... " if len(self.word) > 6 else ""
        return (
            f"episode {self.episode}: after {more}{tail} then {self.letter}, the hypothesis pays {self.expected:g}, "
            f"the environment {self.paid:g} -> {self.machine.n_nodes} node(s)"
        )


@attrs.frozen
class Exploration:
    """The outcome of :func:`learn_while_exploring`: the rounds, the final machine, every
    episode run (with its rewards) and the counterexamples, and how the loop ended."""

    rounds: tuple[Round, ...]
    machine: RewardMachine
    episodes: Demonstrations = attrs.field(repr=False)
    counterexamples: Demonstrations = attrs.field(repr=False)
    converged: bool
    seconds: float


def _demonstrations(rows: list[tuple[list[int], list[int], list[float]]]) -> Demonstrations:
    """Episodes ``(states, actions, rewards)`` as padded demonstrations (the last row's reward
    NaN: no next state)."""
    T = max(len(s) for s, _, _ in rows)
    states = np.full((len(rows), T), -1, np.int64)
    actions = np.full((len(rows), T), -1, np.int64)
    rewards = np.full((len(rows), T), np.nan)
    for i, (s, a, r) in enumerate(rows):
        states[i, : len(s)], actions[i, : len(a)], rewards[i, : len(r)] = s, a, r
    return Demonstrations(states, actions, np.array([len(s) for s, _, _ in rows]), rewards=rewards)


def infer(task: Task, counterexamples: Demonstrations) -> RewardMachine:
    """The simplest smallest machine that pays every reward of the counterexamples (rewards
    alone; the first of :class:`~rmtk.sat.encoders.SimplestEncoder`'s machines), its rewards the
    observed ones (free ones 0)."""
    from ..learner.pipeline import Learner
    from ..sat.encoders import SimplestEncoder
    from ..traces.evidence import TraceRewards

    result = Learner(
        ptp=None, rewards=TraceRewards(counterexamples), encoder=SimplestEncoder(), max_solutions=1, max_nodes=8
    ).fit(task.mdp)
    if result.n_nodes is None:
        raise AssertionError(f"no machine pays the counterexamples: {result.search.message}")
    return attrs.evolve(result.machines[0], name="hypothesis")


def learn_while_exploring(
    task: Task, *, episodes: int, horizon: int, patience: int, epsilon: float, seed: int, gamma: float = 0.9
) -> Exploration:
    """The loop (module docstring) on ``task``: ε-greedy Q-learning (learning rate 1, the
    Office World is deterministic; optimistic initial values 1; ties to the lowest action,
    :func:`rmtk.ties.argbest`) on the product with the hypothesis, a counterexample whenever
    an episode's rewards disagree with it, then re-inference and fresh Q-values."""
    from ..traces.explorers import end_nodes

    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    mdp, truth = task.mdp, task.machine
    cdf = np.cumsum(mdp.P, axis=2)  # (A, S, S): a successor is drawn by one uniform number
    start = np.cumsum(mdp.initial)

    def draw(c: np.ndarray) -> int:
        return min(int(np.searchsorted(c, rng.random() * c[-1], side="right")), len(c) - 1)

    labels = mdp.labels
    to_truth = task.letter_of_proposition
    ends = set(end_nodes(task).tolist())
    hyp = trivial(mdp.propositions)
    q = np.ones((hyp.n_nodes, mdp.n_states, mdp.n_actions))
    run: list = []
    wrong: list = []
    rounds: list[Round] = []
    quiet = 0
    for e in range(episodes):
        s = draw(start)
        u = int(truth.delta_u[truth.initial, to_truth[labels[s]]])
        h = int(hyp.delta_u[hyp.initial, labels[s]])
        states, actions, rewards, word = [s], [], [], [labels[s]]
        miss = None
        for t in range(0 if u in ends else horizon):  # an episode that starts in the end node is over
            explore = rng.random() < epsilon
            a = int(rng.integers(mdp.n_actions)) if explore else int(ties.argbest(q[h, s]))
            s2 = draw(cdf[a, s])
            k = int(labels[s2])
            paid = float(truth.delta_r[u, to_truth[k]])
            u2, h2 = int(truth.delta_u[u, to_truth[k]]), int(hyp.delta_u[h, k])
            done = u2 in ends
            q[h, s, a] = paid + (0.0 if done else gamma * q[h2, s2].max())
            if miss is None and paid != hyp.delta_r[h, k]:
                seen = tuple(mdp.propositions[x] for x in word)
                miss = (t, seen, mdp.propositions[k], float(hyp.delta_r[h, k]), paid)
            actions.append(a)
            rewards.append(paid)
            states.append(s2)
            word.append(k)
            s, u, h = s2, u2, h2
            if done:
                break
        actions.append(0)  # the last state's action is never taken: its reward is unknown
        rewards.append(np.nan)
        run.append((states, actions, rewards))
        if miss is None:
            quiet += 1
            if quiet >= patience:
                break
            continue
        quiet = 0
        wrong.append(run[-1])
        hyp = infer(task, _demonstrations(wrong))
        q = np.ones((hyp.n_nodes, mdp.n_states, mdp.n_actions))
        rounds.append(Round(e, *miss, hyp))
    return Exploration(
        tuple(rounds),
        hyp,
        _demonstrations(run),
        _demonstrations(wrong) if wrong else _demonstrations(run[:0] or [([0], [0], [np.nan])]),
        quiet >= patience,
        time.perf_counter() - t0,
    )


def run(opts: Options) -> Report:
    """Learning while exploring on Office World tasks: the rounds, the counterexamples, the
    final machine, and whether it pays every reward of every episode run."""
    from ..traces.rewards import reward_traces

    t0 = time.perf_counter()
    report = Report("learning while exploring (JIRP's loop): Q-learning on the hypothesis, counterexamples")
    rows = []
    for pair in [p.strip() for p in str(opts.get("tasks")).split(",") if p.strip()]:
        model, _, name = pair.partition(":")
        task = dsl.load_model(model).get(name or model, "task")
        name = f"{model}:{task.name}"
        opts.say(f"exploring {name}")
        x = learn_while_exploring(
            task,
            episodes=opts.get("episodes"),
            horizon=opts.get("horizon"),
            patience=opts.get("patience"),
            epsilon=opts.get("epsilon"),
            seed=opts.seed,
        )
        traces = reward_traces(x.episodes, task.mdp)
        m = x.machine
        explained = traces.explains(m.delta_u, m.delta_r, m.initial)
        rewarded = int(np.count_nonzero(np.nan_to_num(x.episodes.rewards)))
        rows.append(
            (
                name,
                x.episodes.n_trajectories,
                rewarded,
                len(x.rounds),
                m.n_nodes,
                f"{int(explained.sum())}/{len(explained)}",
                "yes" if x.converged else "no (budget spent)",
                f"{x.seconds:.1f}",
            )
        )
        if not rewarded:
            report.notes.append(
                f"{name}: no step earned a reward, so the one-node machine that pays nothing explains all that was "
                "seen: undirected exploration did not find the task within the budget (nothing was learned)"
            )
        report.notes.append(f"{name}: " + ("; ".join(r.line() for r in x.rounds) or "no counterexample"))
        report.notes.append(f"{name}, final machine:\n" + dsl.dumps(m).rstrip())
    report.tables.append(
        (
            f"ε = {opts.get('epsilon'):g}, horizon {opts.get('horizon')}, patience "
            f"{opts.get('patience')} episodes, seed {opts.seed}; explained = (word, letter, reward) rows of every "
            "episode run that the final machine pays",
            ["task", "episodes", "rewarded steps", "rounds", "nodes", "explained", "stopped changing", "seconds"],
            rows,
        )
    )
    report.seconds = time.perf_counter() - t0
    return report
