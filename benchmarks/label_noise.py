"""Benchmark: labels from a detector that errs (docs/benchmarks/24-label-noise.md,
docs/design/15-label-noise.md).

A detector of confidence ``c`` records each label right with probability ``c`` and replaces it
otherwise by another letter drawn uniformly (``LabelNoise.uniform(props, 1 − c)``, what
``rmtk simulate --label-noise 1-c`` writes; Prob-IRM's range is c = 0.9 to 0.99).

1. **The paper's setting** (``paper``): Office coffee, 10⁴ demonstrations of 40 steps of the
   scripted shortest-path expert (ε = 0.1, starting in every cell), 10 % of the labels flipped.
   Rows: the noise-free data with ``SimplestEncoder`` (the same-run reference) and ``SatEncoder``;
   the flipped labels read as they are (what rmtk did before) with both; ``NoisyLabels`` around
   both. Each row is a fresh process; CPU s is the fit's ``time.process_time`` (median of
   ``--repeat``), ``process`` the child's whole CPU (``os.wait4``). Target: the truth alone at no
   more than 3× the noise-free CPU.
2. **Episodes needed** (``grid``): for each task (Office coffee and patrol, Craft t1-t4,
   CliffWalking patrol), each evidence (``rewards``: the rewards of explorer traces, JIRP's
   setting; ``demos``: the expert's demonstrations, the paper's) and each confidence (1 = the
   noise-free reference, 0.99, 0.95, 0.9, 0.8), the episodes double from the start until the
   answer is the truth alone at ``n`` and ``2n`` (or the budget); reported: ``n``, the fit's CPU
   there, whether the estimated flip rate's 95 % interval holds ``1 − c``, and the doubtful states.
   *The truth alone*: from rewards, benchmarks/rewards.py's check (one machine, complete, the truth
   up to renaming on what the traces exercise, judged on the world's labels); from demonstrations,
   one machine, complete, policy-equivalent to the expert at every depth. One process per cell,
   ``--cpu-limit`` CPU seconds each.
3. **Belief against the naive use** (``belief``): Office coffee and mail with their true
   machines, tabular Q-learning with CRM through a detector of confidence 0.9 and 0.8 (and 1,
   exact labels: the same-run reference)
   (``BeliefQLearning``: the Bayes filter vs the most likely label; ``--belief-trackers`` adds
   ``PooledStateLetters`` around either, each state's detections pooled), ``--runs`` seeds of
   ``--steps`` steps each; the success rate of 50 greedy episodes per run (the world's machine
   pays within 100 steps), one process per cell.

4. **The noise model and its intervals** (``coverage``): Office coffee, 300 uniform walks of 40
   steps per seed, the labels recorded through a uniform noise or a detector's (``--seeds``
   seeds, each its own walks and draws); ``estimate`` with ``auto`` (the uniform model against a
   detector's, by BIC): how often each model is chosen, how often every state's letter is
   believed right, and how often each reported 95 % interval holds its true rate. CPU: the fit of
   ``auto`` beside the uniform model's alone (the same-run reference), in one process.

6. **The machines demonstrations identify** (``class``): for each ``--class-tasks`` task,
   ``--class-n`` demonstrations of the scripted expert, the machines the noise-free labels give
   (nodes, count, whether the truth is among them or alone) beside those of the same episodes
   recorded at each ``--levels`` confidence, and whether they are the same machines.

5. **Deep agents and the online learner** (``deep``): Office coffee with a Stable-Baselines3
   DQN (rmtk reproduce online's coffee settings), the steps to 90 % greedy success (evaluated
   every ``--deep-every`` steps, at most ``--deep-steps``, ``--deep-seeds`` seeds): the true
   machine with exact labels (the same-run reference), through a detector of each
   ``--deep-levels`` confidence with the belief observation (the Bayes filter, read by the
   network or acted on by QMDP; the most likely label), on each state's believed letter
   (``StateBeliefLabels``), and the online learner on those letters (its kept traces as read or
   read anew, its replay buffer's letters as read or as believed; ``--deep-arms`` picks some).
   One process per run.

    PYTHONPATH=. python benchmarks/label_noise.py --sections paper grid belief coverage --markdown
    PYTHONPATH=. python benchmarks/label_noise.py --sections deep --deep-levels 0.9 --markdown
    PYTHONPATH=. python benchmarks/label_noise.py --quick          # small sizes (a smoke test)
    PYTHONPATH=. python benchmarks/label_noise.py --sections grid --tasks coffee t1 --levels 1 0.9
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from _table import render  # the script's folder is on sys.path

ROOT = Path(__file__).resolve().parent.parent
MARK = "@@label-noise@@ "
TASKS = ("coffee", "patrol", "t1", "t2", "t3", "t4", "cliff")
LEVELS = (1.0, 0.99, 0.95, 0.9, 0.8)
#: world: demonstrations (start, budget, horizon); rewards (start, budget, explorer ε, horizon)
WORLDS = {
    "office": dict(demos=(500, 16_000, 40), rewards=(100, 6400, 1.0, 100)),
    "craft": dict(demos=(250, 8000, 150), rewards=(100, 3200, 0.3, 300)),
    "cliff": dict(demos=(100, 3200, 60), rewards=(100, 3200, 0.3, 100)),
}
#: tasks whose rewards come from the random-subgoal explorer (the ε-greedy expert's traces never
#: identify them: docs/benchmarks/rewards.md)
SUBGOALS = ("patrol", "cliff")


def world_of(name: str) -> str:
    return "cliff" if name == "cliff" else "craft" if name.startswith("t") else "office"


# ---------------------------------------------------------------------- tasks and data
def cliff_task():
    """CliffWalking-v1 (Gymnasium's 4 x 12 grid; the cliff along the bottom row sends back to the
    start) as a labeled MDP whose episodes start in every cell but the cliff and the goal (as the
    Office World's demonstrations do: one start cell shows each node only along one route), and
    a patrol: the top-left corner a, then the top-right corner b, then the goal g, reward 1 (``o``
    elsewhere)."""
    import gymnasium

    from rmtk.gym import StateLabels, tabular_mdp
    from rmtk.machine.model import RewardMachine
    from rmtk.task import Task

    env = gymnasium.make("CliffWalking-v1")
    marks = {0: 0, 11: 1, 47: 2}  # a, b, g
    labels = StateLabels("a b g o", [marks.get(s, 3) for s in range(48)])
    starts = np.array([s not in range(37, 48) for s in range(48)], dtype=float)  # every cell but the cliff, the goal
    mdp = tabular_mdp(env, labels, initial=starts / starts.sum(), gamma=0.95, name="cliff")
    machine = RewardMachine.from_transitions(
        {("u0", "a"): "u1", ("u1", "b"): "u2", ("u2", "g"): ("end", 1.0)},
        mdp.propositions,
        nodes=["u0", "u1", "u2", "end"],
    )
    return Task(mdp, machine, lam=0.05, max_nodes=4, name="cliff")


def load(name: str):
    if name == "cliff":
        return cliff_task()
    from rmtk import dsl

    return dsl.load_model("craft" if name.startswith("t") else "office").tasks[name]


def true_labels(task, demos) -> np.ndarray:
    inside = demos.mask()
    return np.where(inside, task.mdp.labels[np.where(inside, demos.states, 0)], -1)


def recorded(task, demos, confidence: float, seed: int):
    """``demos`` with the labels a detector of ``confidence`` records (uniform replacement)."""
    from rmtk.label_noise import LabelNoise
    from rmtk.label_noise.evidence import recorded_by

    noise = LabelNoise.uniform(task.mdp.propositions, round(1.0 - confidence, 12))
    return recorded_by(noise, demos, task.mdp, seed=seed)


def demonstrations(task, n: int, seed: int):
    """``n`` episodes of the scripted shortest-path expert (ε = 0.1) and its table."""
    from rmtk.product.simulate import simulate
    from rmtk.ptp.exact import shortest_path_table

    table = shortest_path_table(task, 0.1)
    horizon = WORLDS[world_of(task.name)]["demos"][2]
    return simulate(task, n, horizon, seed=seed, policy=table.transpose(1, 0, 2)), table


def reward_traces(name: str, task, n: int, seed: int):
    """``n`` explorer traces with the machine's rewards (benchmarks/rewards.py's explorers)."""
    from rmtk.traces.explorers import RandomSubgoals, explore

    _, _, eps, horizon = WORLDS[world_of(name)]["rewards"]
    if name in SUBGOALS:
        avoid = ("n",) if world_of(name) == "office" else ()  # the Office World's decorations end the task
        return explore(task, n, horizon, seed=seed, explorer=RandomSubgoals(epsilon=0.1, avoid=avoid))
    return explore(task, n, horizon, seed=seed, epsilon=eps)


def learner(task, data, evidence: str, encoder=None, table=None, labels=None):
    """rmtk's learner of ``evidence`` on ``data`` (``labels``: read these per-step labels as
    they are, instead of the MDP's)."""
    from rmtk import ConfidenceMiner, EmpiricalPTP, Learner, NodePolicyTable
    from rmtk.sat.encoders import SimplestEncoder
    from rmtk.traces.evidence import TraceRewards

    if evidence == "rewards":
        return Learner(
            ptp=None,
            rewards=TraceRewards(EmpiricalPTP(data, labels=labels)),
            encoder=encoder or SimplestEncoder(),
            irl=None,
        )
    return Learner(
        EmpiricalPTP(data, expert=NodePolicyTable(table), labels=labels),
        miner=ConfidenceMiner(0.05),
        encoder=encoder or SimplestEncoder(negatives="pairs"),
        irl=None,
        max_nodes=task.max_nodes,
    )


def truth_alone(task, data, evidence: str, r) -> bool:
    if len(r.machines) != 1 or not r.search.complete:
        return False
    if evidence == "rewards":
        import rewards as rw  # benchmarks/rewards.py: the truth on what the traces exercise

        return rw.agrees(task, data, r.solutions[0].delta_u, r.machines[0].delta_r) and rw.exercised(task, data)[0]
    return bool(r.verdicts) and r.verdicts[0].consistent


def fit(task, data, evidence: str, confidence: float, table=None, encoder=None, as_recorded: bool = False):
    """One fit and its CPU seconds: noise-free (``confidence`` 1), the labels read as recorded,
    or ``NoisyLabels`` (estimated noise)."""
    from rmtk.label_noise import NoisyLabels

    t0 = time.process_time()
    if confidence >= 1.0:
        r, noisy = learner(task, data, evidence, encoder, table).fit(task), None
    elif as_recorded:
        r, noisy = learner(task, data, evidence, encoder, table, labels=data.labels).fit(task), None
    else:
        noisy = NoisyLabels(learner(task, data, evidence, encoder, table)).fit(task)
        r = noisy.result
    return r, noisy, time.process_time() - t0


# ---------------------------------------------------------------------- the children
def one_paper(row: str, seed: int, n: int, repeat: int) -> dict:
    from rmtk.sat.encoders import SatEncoder, SimplestEncoder

    task = load("coffee")
    demos, table = demonstrations(task, n, seed)
    noisy = recorded(task, demos, 0.9, seed + 1)
    kind, encoder_name = row.split(":")
    encoder = SimplestEncoder(negatives="pairs") if encoder_name == "simplest" else SatEncoder(negatives="pairs")
    data = demos if kind == "clean" else noisy
    confidence = 1.0 if kind == "clean" else 0.9
    cpus, out = [], None
    for _ in range(repeat):
        r, res, cpu = fit(task, data, "demos", confidence, table, encoder, as_recorded=kind == "recorded")
        cpus.append(cpu)
        out = (r, res)
    r, res = out
    record = dict(
        row=row,
        cpu=statistics.median(cpus),
        nodes=r.n_nodes,
        machines=len(r.machines),
        more=not r.search.complete,
        alone=truth_alone(task, demos, "demos", r),
        consistent=sum(bool(v.consistent) for v in (r.verdicts or ())),
    )
    if res is not None:
        m = res.estimate.measure.flips
        found, flipped = res.corrections().pairs(), _flips(task, noisy)
        record.update(
            rate=m.value,
            low=m.low,
            high=m.high,
            corrections=len(found),
            flips=len(flipped),
            right=len(found & flipped),
        )
    return record


def _flips(task, data) -> set:
    wrong = (data.labels != true_labels(task, data)) & data.mask()
    return set(zip(*(a.tolist() for a in np.nonzero(wrong))))


def one_grid(name: str, evidence: str, confidence: float, seed: int, budget_scale: float) -> dict:
    task = load(name)
    world = WORLDS[world_of(name)][evidence]
    start, budget = world[0], int(world[1] * budget_scale)
    n, hits, first, log = start, 0, None, []
    while n <= budget:
        if evidence == "rewards":
            clean, table = reward_traces(name, task, n, seed), None
        else:
            clean, table = demonstrations(task, n, seed)
        data = clean if confidence >= 1.0 else recorded(task, clean, confidence, seed + 1)
        r, res, cpu = fit(task, data, evidence, confidence, table)
        ok = truth_alone(task, clean, evidence, r)
        cell = dict(n=n, ok=ok, cpu=round(cpu, 3), nodes=r.n_nodes, machines=len(r.machines))
        if res is not None:
            m = res.estimate.measure.flips
            cell.update(low=m.low, high=m.high, covers=m.covers(1.0 - confidence), doubtful=res.choices.n_states)
        log.append(cell)
        if ok:
            first = first or cell
            hits += 1
            if hits == 2:
                break
        else:
            first, hits = None, 0
        n *= 2
    return dict(task=name, evidence=evidence, confidence=confidence, found=first if hits == 2 else None, log=log)


def one_belief(name: str, confidence: float, tracker: str, runs: int, steps: int) -> dict:
    from rmtk.gym import BeliefQLearning, RewardMachineEnv, SimulatedDetector, StateLabels, office_env
    from rmtk.label_noise import LabelNoise
    from rmtk.label_noise.filter import BayesFilter, MostLikelyLabel, PooledStateLetters

    if name == "cliff":  # the patrol of rmtk.rl.online.tasks (a, b, then g; no failing letter)
        import gymnasium

        from rmtk.rl.online.tasks import cliff_labels, cliff_machine

        machine, labeler = cliff_machine(), cliff_labels()

        def world():
            return gymnasium.make("CliffWalking-v1", max_episode_steps=100)
    else:
        machine = load(name).machine
        labeler = StateLabels.of(office_env().mdp)

        def world():
            return office_env(max_steps=100)

    noise = LabelNoise.uniform(machine.alphabet, round(1.0 - confidence, 12))
    kind = BayesFilter if tracker in ("belief", "pooled") else MostLikelyLabel
    agent = BeliefQLearning(alpha=0.1, gamma=0.9, epsilon=0.1, q_init=0.5)
    n_states = int(world().observation_space.n)

    def env(seed, track):
        detector = SimulatedDetector(labeler, machine, noise, seed=seed)
        return RewardMachineEnv(world(), machine, labeler, observation="belief", detector=detector, tracker=track)

    rates = []
    t0 = time.process_time()
    for run in range(runs):
        # the pooled trackers keep each state's detections: one per run, shared by training and evaluation
        track = PooledStateLetters(kind(machine), n_states) if tracker.startswith("pooled") else kind(machine)
        q, _ = agent.train(env(run, track), steps, seed=run)
        check = env(1000 + run, track)
        rates.append(float(np.mean([agent.episode(check, q, seed=e, max_steps=100) > 0 for e in range(50)])))
    return dict(
        task=name,
        confidence=confidence,
        tracker=tracker,
        rate=float(np.mean(rates)),
        rates=rates,
        cpu=time.process_time() - t0,
    )


def one_deep(arm: str, confidence: float, seed: int, steps: int, every: int, episodes: int) -> dict:
    """Office coffee, DQN (rmtk.experiments._online's coffee settings), until 90 % greedy success:
    ``true`` the true machine, exact labels, the flat product (CRM); ``belief``/``naive`` the true
    machine through a detector of ``confidence``, the belief observation (rmtk/rl/belief_crm.py;
    the Bayes filter or the most likely label; ``belief-qmdp`` the Bayes filter, acting on the
    belief-weighted Q-values of the nodes, rmtk/rl/qmdp.py; ``belief-pooled-qmdp`` the same on
    each state's pooled detections, PooledStateLetters, one tracker for training and checks),
    judged on ``episodes`` greedy episodes (seeded
    resets and detector draws) in which the world's machine pays within the horizon;
    ``true-state``/``online`` the true machine (CRM) or the online learner (rmtk.rl.online) on the
    letters each state is believed to carry from every detection there (StateBeliefLabels),
    judged exactly from every start state (GreedyRollouts; the agent's node follows the believed
    letters, the world's machine the true ones; a state never visited reads its true letter)."""
    import torch

    from rmtk.experiments._online import _slots
    from rmtk.experiments._online import task as online_task
    from rmtk.gym import RewardMachineEnv, SimulatedDetector
    from rmtk.label_noise import LabelNoise
    from rmtk.label_noise.filter import BayesFilter, MostLikelyLabel
    from rmtk.label_noise.online import StateBeliefLabels
    from rmtk.rl import GreedyRollouts, crm, q_table
    from rmtk.rl.sb3 import _require, one_thread, quiet_logger

    torch.set_num_threads(1)
    sb3 = _require()
    t = online_task("coffee")
    m = t.truth
    noise = LabelNoise.uniform(m.alphabet, round(1.0 - confidence, 12))
    at: list[int] = []
    ok: list[float] = []
    S = t.mdp.n_states
    exact = GreedyRollouts.of(t.mdp, m, m, t.horizon)
    true_letters = exact.letters[1]

    def record(n: int, rate: float) -> bool:
        at.append(n)
        ok.append(rate)
        return rate < 0.9

    def believed(labels: StateBeliefLabels, h) -> GreedyRollouts:
        got = labels.letters()
        mine = np.array([h.letter_index(m.alphabet[k if k >= 0 else true_letters[s]]) for s, k in enumerate(got)])
        return GreedyRollouts(h, m, t.horizon, True, exact.succ, np.array([mine, true_letters]), exact.starts)

    t0 = time.process_time()
    swaps: list[int] = []
    verdict = ""
    inference_cpu = 0.0
    if arm in ONLINE_ARMS or arm == "true-state":
        labels = StateBeliefLabels(SimulatedDetector(t.labels, m, noise, seed=seed), m.alphabet, S)
    if arm in ONLINE_ARMS:
        from rmtk.rl.online import AsBelieved, FilteredBelief, OnlineLearner, against_truth
        from rmtk.rl.online.labels import BelievedLabels

        inference = BelievedLabels(labels) if arm.startswith("online-believed") else None
        replay = AsBelieved(labels) if arm == "online-believed-replay" else None
        view = FilteredBelief(labels) if arm == "online-belief" else None
        learner = OnlineLearner(
            t.paying(seed),
            labels,
            sb3.DQN,
            seed=seed,
            max_nodes=t.max_nodes,
            inference=inference,
            view=view,
            replay=replay,
            **t.settings.kwargs(steps),
        )

        def online_rate(model) -> float:
            h = learner.env.machine
            if view is None:
                rate = believed(labels, h).rate(_slots(q_table(model), S, learner.env.max_nodes, h.n_nodes))
            else:
                rate = filtered_rate(model, h)
            record(model.num_timesteps, rate)
            return rate

        world, check = t.base(), SimulatedDetector(t.labels, m, noise, seed=10_000 + seed)

        def filtered_rate(model, h) -> float:
            """``episodes`` greedy episodes on the belief over ``h``'s nodes from a detector of
            its own (seeded resets and draws), won where the world's machine pays within the
            horizon (as the belief arm's evaluation)."""
            from rmtk.rl.online.views import Filtered

            env, f, wins = learner.env, BayesFilter(h), 0
            for e in range(episodes):
                obs, info = world.reset(seed=100_000 * (seed + 1) + e)
                check.reset(100_000 * (seed + 1) + e)
                b = f.start(check(obs, info))
                u = int(m.delta_u[m.initial, m.letter_index(t.labels(obs, info))])
                for _ in range(t.horizon):
                    x = env.view.encode(env.encoding, obs, 0, Filtered((), b))
                    obs, _, term, trunc, info = world.step(int(model.predict(x, deterministic=True)[0]))
                    k = m.letter_index(t.labels(obs, info))
                    paid, u = m.delta_r[u, k] > 0, int(m.delta_u[u, k])
                    b = f.step(b, check(obs, info))
                    if paid or term or trunc:
                        break
                wins += bool(paid)
            return wins / episodes

        learner.learn(steps, evaluate=online_rate, evaluate_every=every, target=0.9)
        swaps = [s.step for s in learner.hypotheses[1:]]
        inference_cpu = learner.env.loop.inference_cpu
        verdict = str(against_truth(learner.machine, m, learner.traces))
    else:
        if arm == "true":
            train = RewardMachineEnv(t.base(), m, t.labels, observation="flat")
        elif arm == "true-state":
            train = RewardMachineEnv(t.base(), m, labels, observation="flat")
        else:
            tracker = (MostLikelyLabel if arm == "naive" else BayesFilter)(m)
            if arm == "belief-pooled-qmdp":  # each state's detections pooled, one tracker for train and check
                from rmtk.label_noise.filter import PooledStateLetters

                tracker = PooledStateLetters(tracker, int(t.base().observation_space.n))

            def env(s):
                detector = SimulatedDetector(t.labels, m, noise, seed=s)
                return RewardMachineEnv(t.base(), m, t.labels, observation="belief", detector=detector, tracker=tracker)

            train, check = env(seed), env(10_000 + seed)

        def sampled(model) -> float:
            wins = 0
            for e in range(episodes):
                obs, _ = check.reset(seed=100_000 * (seed + 1) + e)
                for _ in range(t.horizon):
                    obs, _, term, trunc, info = check.step(model.predict(obs, deterministic=True)[0])
                    if info.get("rm_reward", 0.0) > 0 or term or trunc:
                        break
                wins += info.get("rm_reward", 0.0) > 0
            return wins / episodes

        def rate(model) -> float:
            if arm == "true":
                return exact.rate(q_table(model))
            if arm == "true-state":
                return believed(labels, m).rate(q_table(model))
            return sampled(model)

        class Evaluate(sb3.common.callbacks.BaseCallback):
            def _on_step(self) -> bool:
                return bool(self.num_timesteps % every) or record(self.num_timesteps, rate(self.model))

        policy = "MultiInputPolicy" if arm in ("belief", "naive") else "MlpPolicy"
        extra = crm(train, seed=seed) if arm in BELIEF_ARMS else crm(train)
        kwargs = t.settings.kwargs(steps)
        if arm in ("belief-qmdp", "belief-pooled-qmdp"):
            from rmtk.rl.qmdp import qmdp_kwargs, qmdp_policy

            policy = qmdp_policy()
            kwargs["policy_kwargs"] = dict(kwargs["policy_kwargs"], **qmdp_kwargs(train))
        model = sb3.DQN(policy, train, seed=seed, device="cpu", verbose=0, **kwargs, **extra)
        model.set_logger(quiet_logger())
        with one_thread():
            model.learn(steps, callback=Evaluate())
    reached = next((s for s, r in zip(at, ok) if r >= 0.9), None)
    cpu = time.process_time() - t0
    return dict(
        arm=arm,
        confidence=confidence,
        seed=seed,
        reached=reached,
        steps=at,
        success=ok,
        cpu=cpu,
        swaps=swaps,
        verdict=verdict,
        inference_cpu=inference_cpu,
    )


#: the noises of the coverage section: name -> (kind, rates), true rates by the names the report gives
NOISES = {
    "uniform 0.1": ("uniform", 0.1),
    "uniform 0.2": ("uniform", 0.2),
    "detector miss 0.1, false alarm 0.02": ("detector", (0.1, 0.02)),
    "detector miss 0.6, false alarm 0.01": ("detector", (0.6, 0.01)),
}


def one_class(name: str, n: int, levels: list[float], seed: int) -> dict:
    """From ``n`` demonstrations: the machines the noise-free labels give, and whether the labels
    of each detector confidence give the same ones (pairwise isomorphic, rewards included)."""
    from rmtk.machine.model import isomorphic

    task = load(name)
    clean, table = demonstrations(task, n, seed)
    rows, base = [], None
    for c in levels:
        data = clean if c >= 1.0 else recorded(task, clean, c, seed + 1)
        r, res, cpu = fit(task, data, "demos", c, table)
        machines = list(r.machines)
        if base is None:
            base = machines
        same = len(machines) == len(base) and all(any(isomorphic(m, b) for b in base) for m in machines)
        rows.append(
            dict(
                confidence=c,
                nodes=r.n_nodes,
                machines=len(machines),
                complete=bool(r.search.complete),
                consistent=sum(bool(v.consistent) for v in (r.verdicts or ())),
                truth=any(isomorphic(m, task.machine) for m in machines),
                alone=truth_alone(task, clean, "demos", r),
                same=same,
                doubtful=None if res is None else res.choices.n_states,
                cpu=round(cpu, 3),
            )
        )
    return dict(task=name, n=n, rows=rows)


def one_coverage(name: str, seeds: int) -> dict:
    """``seeds`` seeded simulations of the noise ``name``: the model chosen, the letters, and how
    often each reported interval holds its true rate."""
    from rmtk.label_noise import LabelNoise, UniformModel, count_evidence, estimate
    from rmtk.label_noise.evidence import recorded_by
    from rmtk.product.simulate import simulate

    task = load("coffee")
    mdp = task.mdp
    kind, rates = NOISES[name]
    if kind == "uniform":
        noise = LabelNoise.uniform(mdp.propositions, rates)
    else:
        noise = LabelNoise.detector(mdp.propositions, "i", miss=rates[0], false_alarm=rates[1])
    chosen: dict = {}
    right, held, intervals, cpu, reference = 0, 0, 0, 0.0, 0.0
    for seed in range(seeds):
        walks = simulate(task, 300, 40, seed=1000 + seed, policy="uniform")
        evidence = count_evidence(mdp, recorded_by(noise, walks, mdp, seed=seed))
        t0 = time.process_time()
        est = estimate(evidence, mdp.propositions)
        t1 = time.process_time()
        estimate(evidence, mdp.propositions, models=(UniformModel(),))
        cpu, reference = cpu + t1 - t0, reference + time.process_time() - t1
        model = est.selection.best.model.describe(mdp.propositions)
        chosen[model] = chosen.get(model, 0) + 1
        right += bool(np.array_equal(est.beliefs.letter, mdp.labels))
        for label, rate in est.selection.rates():
            truth = rates if kind == "uniform" else rates[0] if label.endswith("miss") else rates[1]
            if model.startswith(kind):  # the rates of the true model's family
                held += rate.covers(truth)
                intervals += 1
    return dict(
        noise=name, seeds=seeds, chosen=chosen, right=right, held=held, intervals=intervals, cpu=cpu, ref=reference
    )


# ---------------------------------------------------------------------- the parent
def child(args: list[str], cpu_limit: float | None) -> dict | None:
    """Run this script with ``--one ARGS`` in a fresh interpreter, at most ``cpu_limit`` CPU
    seconds: its record (``None`` when the limit stopped it or it failed)."""
    import resource

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(Path(__file__).parent)] + [env.get("PYTHONPATH", "")])

    def limit():
        if cpu_limit is not None:
            resource.setrlimit(resource.RLIMIT_CPU, (int(cpu_limit), int(cpu_limit) + 5))

    proc = subprocess.run(
        [sys.executable, __file__, "--one", *args], env=env, stdout=subprocess.PIPE, text=True, preexec_fn=limit
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(MARK)]
    return json.loads(lines[-1][len(MARK) :]) if lines else None


def children_cpu() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def measured(args: list[str], cpu_limit: float | None) -> tuple[dict | None, float]:
    before = children_cpu()
    record = child(args, cpu_limit)
    return record, children_cpu() - before


def paper(opts) -> str:
    rows = []
    for row in ("clean:simplest", "clean:sat", "recorded:sat", "recorded:simplest", "noisy:simplest", "noisy:sat"):
        rec, cpu = measured(["paper", row, str(opts.seed), str(opts.paper_n), str(opts.repeat)], opts.cpu_limit)
        if rec is None:
            rows.append(dict(row=row, cpu="stopped"))
            continue
        rec["process"] = round(cpu, 2)
        rows.append(rec)
        print(f"paper {row}: {rec}", file=sys.stderr, flush=True)
    base = next(r["cpu"] for r in rows if r["row"] == "clean:simplest")
    table = []
    for r in rows:
        if "nodes" not in r:
            table.append({"labels, encoder": r["row"], "fit cpu s": r["cpu"]})
            continue
        interval = f"{r['rate']:.4f} [{r['low']:.4f}, {r['high']:.4f}]" if "rate" in r else "-"
        table.append(
            {
                "labels, encoder": r["row"].replace(":", ", "),
                "nodes": r["nodes"],
                "machines": f"{r['machines']}{'+' if r['more'] else ''}",
                "truth alone": "yes" if r["alone"] else "no",
                "fit cpu s": f"{r['cpu']:.2f}",
                "× noise-free": f"{r['cpu'] / base:.2f}",
                "process cpu s": r["process"],
                "flip rate [95 %]": interval,
                "corrections right / found / flips": (
                    f"{r['right']} / {r['corrections']} / {r['flips']}" if "rate" in r else "-"
                ),
            }
        )
    return render(table, opts.markdown, frozenset({"labels, encoder"}))


def grid(opts) -> str:
    table = []
    for name in opts.tasks:
        for evidence in opts.evidence:
            reference = None
            for c in opts.levels:
                args = ["grid", name, evidence, repr(c), str(opts.seed), repr(opts.budget_scale)]
                rec, cpu = measured(args, opts.cpu_limit)
                if rec is None:
                    table.append(dict(task=name, evidence=evidence, confidence=c, episodes="stopped (cpu limit)"))
                    continue
                print(f"grid {name} {evidence} {c}: {json.dumps(rec['log'])}", file=sys.stderr, flush=True)
                found = rec["found"]
                last = rec["log"][-1] if rec["log"] else {}
                at = found or last
                if c >= 1.0:
                    reference = found["n"] if found else None
                table.append(
                    {
                        "task": name,
                        "evidence": evidence,
                        "confidence": c,
                        "episodes": found["n"] if found else f"> {last.get('n', '-')}",
                        "× noise-free": (f"{found['n'] / reference:g}" if found and reference else "-"),
                        "fit cpu s": at.get("cpu", "-"),
                        "flip rate 95 % interval": (
                            f"[{at['low']:.4f}, {at['high']:.4f}] {'holds' if at['covers'] else 'misses'} {1 - c:g}"
                            if "low" in at
                            else "-"
                        ),
                        "doubtful states": at.get("doubtful", "-"),
                        "process cpu s": round(cpu, 1),
                    }
                )
    return render(table, opts.markdown, frozenset({"task", "evidence"}))


def belief(opts) -> str:
    table = []
    for name in opts.belief_tasks:
        for c in opts.belief_levels:
            row = {"task": name, "confidence": c}
            for tracker in opts.belief_trackers:
                if c >= 1.0 and tracker != opts.belief_trackers[0]:  # exact labels: the trackers are one
                    row[f"{tracker} success"], row[f"{tracker} cpu s"] = "(the same)", "-"
                    continue
                # exact labels: the Bayes filter is plain CRM (the pooled trackers differ by their floor alone)
                run = "belief" if c >= 1.0 else tracker
                args = ["belief", name, repr(c), run, str(opts.runs), str(opts.steps)]
                rec, cpu = measured(args, opts.cpu_limit)
                row[f"{tracker} success"] = "stopped" if rec is None else f"{rec['rate']:.3f}"
                row[f"{tracker} cpu s"] = round(cpu, 1)
                print(f"belief {name} {c} {run}: {rec}", file=sys.stderr, flush=True)
            table.append(row)
    return render(table, opts.markdown, frozenset({"task"}))


#: the tasks the belief section can run (their true machines, given): the Office World's and
#: CliffWalking's patrol (rmtk.rl.online.tasks)
BELIEF_TASKS = ("coffee", "mail", "patrol", "coffee_mail", "cliff")


#: the trackers of the belief section (one_belief)
BELIEF_TRACKERS = {
    "belief": "Bayes filter on each detection",
    "naive": "most likely label of each detection",
    "pooled": "Bayes filter on the state's pooled letter posterior (PooledStateLetters)",
    "pooled-naive": "most likely pooled letter of the state",
}

#: the deep section's agents on the belief observation (judged on sampled episodes)
BELIEF_ARMS = ("belief", "belief-qmdp", "belief-pooled-qmdp", "naive")

#: the agents of the deep section (one_deep)
DEEP_ARMS = {
    "true": "true machine, exact labels",
    "belief": "true machine, Bayes filter (belief observation)",
    "belief-qmdp": "true machine, Bayes filter, acting by QMDP (belief observation, QmdpPolicy)",
    "belief-pooled-qmdp": "true machine, each state's detections pooled (PooledStateLetters), acting by QMDP",
    "naive": "true machine, most likely label (belief observation)",
    "true-state": "true machine, each state's believed letter",
    "online": "online learner, each state's believed letter",
    "online-believed": "online learner, traces read anew, doubtful letters chosen (BelievedLabels)",
    "online-believed-replay": "online learner, BelievedLabels, replay buffer read anew (AsBelieved)",
    "online-belief": "online learner, Bayes filter's belief over its hypothesis' nodes (FilteredBelief)",
}
#: the online learner's arms
ONLINE_ARMS = ("online", "online-believed", "online-believed-replay", "online-belief")


def deep(opts) -> str:
    """The reference arms of the online target: steps to 90 % greedy success, per seed."""
    table = []
    arms = [(a, 1.0) for a in opts.deep_arms if a == "true"]
    arms += [(a, c) for c in opts.deep_levels for a in opts.deep_arms if a != "true"]
    for arm, c in arms:
        recs, cpus = [], []
        for seed in range(opts.deep_seeds):
            args = ["deep", arm, repr(c), str(seed), str(opts.deep_steps), str(opts.deep_every), "50"]
            rec, cpu = measured(args, opts.cpu_limit)
            print(f"deep {arm} {c} {seed}: {rec}", file=sys.stderr, flush=True)
            recs.append(rec)
            cpus.append(cpu)
        reached = [r["reached"] if r and r["reached"] is not None else None for r in recs]
        # a seed that did not reach 90 % counts as beyond the budget (not left out of the median)
        median = statistics.median([math.inf if x is None else x for x in reached]) if reached else math.inf
        table.append(
            {
                "agent": DEEP_ARMS[arm],
                "confidence": c,
                "steps to 90 % (median)": f"{median:,.0f}" if median < math.inf else f">{opts.deep_steps:,}",
                "per seed": ", ".join("-" if x is None else f"{x:,}" for x in reached),
                "best success (per seed)": ", ".join(
                    "stopped" if r is None else f"{max(r['success'] or [0]):.2f}" for r in recs
                ),
                "cpu s (per seed)": ", ".join(f"{x:.0f}" for x in cpus),
                "final machine (online)": "; ".join(r["verdict"] for r in recs if r and r.get("verdict")) or "-",
            }
        )
    return render(table, opts.markdown, frozenset({"agent"}))


def coverage(opts) -> str:
    table = []
    for name in NOISES:
        rec, cpu = measured(["coverage", name, str(opts.seeds)], opts.cpu_limit)
        print(f"coverage {name}: {rec}", file=sys.stderr, flush=True)
        if rec is None:
            table.append({"noise": name, "model chosen": "stopped"})
            continue
        table.append(
            {
                "noise": name,
                "model chosen (of seeds)": ", ".join(f"{m} {k}" for m, k in sorted(rec["chosen"].items())),
                "every letter right": f"{rec['right']} / {rec['seeds']}",
                "intervals holding the truth": f"{rec['held']} / {rec['intervals']}"
                + (f" ({rec['held'] / rec['intervals']:.3f})" if rec["intervals"] else ""),
                "auto cpu s per fit": f"{rec['cpu'] / rec['seeds']:.4f}",
                "uniform alone cpu s": f"{rec['ref'] / rec['seeds']:.4f}",
                "process cpu s": round(cpu, 1),
            }
        )
    return render(table, opts.markdown, frozenset({"noise"}))


def equivalence(opts) -> str:
    """The machines the noise-free demonstrations give, beside those of each noisy level."""
    table = []
    for name in opts.class_tasks:
        args = ["class", name, str(opts.class_n), ",".join(map(repr, opts.levels)), str(opts.seed)]
        rec, cpu = measured(args, opts.cpu_limit)
        print(f"class {name}: {rec}", file=sys.stderr, flush=True)
        if rec is None:
            table.append({"task": name, "confidence": "stopped"})
            continue
        for row in rec["rows"]:
            table.append(
                {
                    "task": name,
                    "episodes": rec["n"],
                    "confidence": row["confidence"],
                    "nodes": row["nodes"],
                    "machines": f"{row['machines']}" + ("" if row["complete"] else "+"),
                    "consistent with the expert": row["consistent"],
                    "truth among": "yes" if row["truth"] else "no",
                    "truth alone": "yes" if row["alone"] else "no",
                    "same as noise-free": "yes" if row["same"] else "no",
                    "doubtful states": "-" if row["doubtful"] is None else row["doubtful"],
                    "fit cpu s": row["cpu"],
                }
            )
    return render(table, opts.markdown, frozenset({"task"}))


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--one":
        kind, rest = argv[1], argv[2:]
        if kind == "paper":
            rec = one_paper(rest[0], int(rest[1]), int(rest[2]), int(rest[3]))
        elif kind == "grid":
            rec = one_grid(rest[0], rest[1], float(rest[2]), int(rest[3]), float(rest[4]))
        elif kind == "class":
            rec = one_class(rest[0], int(rest[1]), [float(c) for c in rest[2].split(",")], int(rest[3]))
        elif kind == "coverage":
            rec = one_coverage(rest[0], int(rest[1]))
        elif kind == "deep":
            rec = one_deep(rest[0], float(rest[1]), int(rest[2]), int(rest[3]), int(rest[4]), int(rest[5]))
        else:
            rec = one_belief(rest[0], float(rest[1]), rest[2], int(rest[3]), int(rest[4]))
        print(MARK + json.dumps(rec), flush=True)
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sections = ("paper", "grid", "belief", "coverage", "deep", "class")
    ap.add_argument("--sections", nargs="+", default=list(sections), choices=sections)
    ap.add_argument("--seeds", type=int, default=40, help="seeds of the coverage section")
    ap.add_argument("--tasks", nargs="+", default=list(TASKS), choices=TASKS)
    ap.add_argument("--evidence", nargs="+", default=["rewards", "demos"], choices=("rewards", "demos"))
    ap.add_argument("--levels", nargs="+", type=float, default=list(LEVELS))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--paper-n", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--budget-scale", type=float, default=1.0, help="scale the episode budgets of the grid")
    ap.add_argument("--class-tasks", nargs="+", default=["patrol"], choices=TASKS, help="tasks of class")
    ap.add_argument("--class-n", type=int, default=16_000, help="demonstrations of class")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument(
        "--belief-levels", nargs="+", type=float, default=[1.0, 0.9, 0.8], help="detector confidences of the belief"
    )
    ap.add_argument(
        "--belief-tasks", nargs="+", default=["coffee", "mail"], choices=BELIEF_TASKS, help="Office tasks of belief"
    )
    ap.add_argument(
        "--belief-trackers",
        nargs="+",
        default=["belief", "naive"],
        choices=BELIEF_TRACKERS,
        help="the trackers of belief (" + "; ".join(f"{k}: {v}" for k, v in BELIEF_TRACKERS.items()) + ")",
    )
    ap.add_argument("--steps", type=int, default=30_000)
    ap.add_argument("--deep-levels", nargs="+", type=float, default=[0.9], help="detector confidences of deep")
    ap.add_argument("--deep-seeds", type=int, default=3)
    ap.add_argument("--deep-arms", nargs="+", default=list(DEEP_ARMS), choices=tuple(DEEP_ARMS))
    ap.add_argument("--deep-steps", type=int, default=60_000)
    ap.add_argument("--deep-every", type=int, default=2_000)
    ap.add_argument("--cpu-limit", type=float, default=600.0, help="CPU seconds of each child")
    ap.add_argument("--quick", action="store_true", help="small sizes: a smoke test")
    ap.add_argument("--markdown", action="store_true")
    opts = ap.parse_args(argv)
    if opts.quick:
        opts.paper_n, opts.repeat, opts.budget_scale, opts.runs, opts.steps = 2000, 1, 0.125, 1, 5000
        opts.tasks, opts.levels, opts.seeds = ["coffee", "t1"], [1.0, 0.9], 3
    started = time.time()
    for section in opts.sections:
        run = {"paper": paper, "grid": grid, "belief": belief, "coverage": coverage, "deep": deep, "class": equivalence}
        text = run[section](opts)
        print(f"\n## {section}\n\n{text}", flush=True)
    print(f"\n{time.time() - started:.0f} s wall, {children_cpu():.0f} CPU s in the children", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
