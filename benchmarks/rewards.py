"""Benchmark: reward machines from reward traces (docs/benchmarks/rewards.md).

1. **Exact rewards.** For each task (Office World's four, Craft t1–t10) the explorer of
   rmtk/traces/explorers.py (the scripted shortest-path expert mixed with ``ε`` of random actions;
   ``ε = 1`` is a random walk) records episodes with rewards, and
   ``Learner(ptp=None, rewards=TraceRewards(demos), encoder=SimplestEncoder())`` learns from them.
   The episode count doubles from ``--start`` until the answer is *the truth alone* twice in a row
   (the budget ``n`` and ``2n``); ``n`` is reported. *The truth alone*: one machine, the search
   complete, and it is the task's machine up to renaming on what the traces exercise — along the
   observed steps the learned nodes and the truth's non-end nodes correspond one to one, every
   non-end node is reached, every transition of the truth that moves between non-end nodes or pays
   a reward is exercised, and the learned rewards are the truth's there. The other transitions are
   free (reported; the end node is never told apart: no trace goes on after it).
2. **Side by side** (``--jirp SRC --jirp-python PY``): the traces of the ``n`` found in 1 are
   written in JIRP's format and given to the inference of the public repository
   corazza/stochastic-reward-machines (JIRP's ``sat_hyp``, Xu et al., ICAPS 2020; with
   ``--sjirp`` also S-JIRP's SMT ``smt_noise_cpp``, Corazza, Gavran and Neider, AAAI 2022), run
   unchanged in its own environment by benchmarks/rewards_jirp.py, killed after ``--jirp-limit``
   seconds. Its machine is checked the same way; ``speed-up`` is its inference time over rmtk's.
3. **Noisy rewards** (``--noise``): each recorded reward replaced with probability ``ε`` by
   another of the machine's values (so ``ε`` is the true share of wrong rewards);
   ``SimplestNoisyRewardEncoder`` at the truth's size; the estimate and its 95% interval.

4. **Random subgoals** (``--explorer subgoals``): the same doubling with the explorer
   :class:`rmtk.traces.explorers.RandomSubgoals` (walks to a target proposition drawn uniformly by the
   MDP's shortest paths, redraws on arrival; :data:`SUBGOALS`), by default on the tasks the
   ε-greedy expert never identifies (:data:`HARD`). ``--fit-limit`` bounds each fit;
   ``--horizon`` and ``--goals task`` (:func:`task_goals`: subgoals among the propositions the
   task's machine reads) change the explorer (Craft t10: docs/benchmarks/rewards.md, section 5).
   ``--fit-limit`` is wall seconds; ``--fit-cpu-limit`` CPU seconds of this process (on a shared
   machine a fit's share of a core may be small). The log gives each fit's CPU seconds.

Timing: rmtk's whole ``Learner.fit`` and the peer's whole search are each run ``--repeat``
times on the same traces (the peer's only when one run took under ``--repeat-under`` CPU
seconds); the medians of wall and CPU seconds are reported, and the ratios in CPU seconds (the
machine may be shared). A peer run is limited to ``--jirp-limit`` CPU seconds.

References of the same run: ``python -c "import numpy"`` in a child, and rmtk learning the
same task from the expert's exact policy (``Learner(irl=None).fit(task)``, the paper's setting).

    PYTHONPATH=. python benchmarks/rewards.py --seed 0 [--quick] [--tasks coffee t1]
        [--jirp /tmp/srm/src --jirp-python /tmp/srm-venv/bin/python [--sjirp]] [--noise] [--markdown]
        [--explorer subgoals --budget 6400 --fit-limit 300 [--goals task --horizon 200]] [--repeat 5]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _table import render  # the script's folder is on sys.path

OFFICE = ("coffee", "mail", "coffee_mail", "patrol")
CRAFT = tuple(f"t{i}" for i in range(1, 11))
#: world: (model, proposition of unmarked cells, explorer ε, episode horizon)
WORLDS = {"office": ("office", "i", 1.0, 100), "craft": ("craft", "o", 0.3, 300)}
#: task: (explorer ε, horizon) where the world's do not suit: a random walk in the Office World
#: steps on a decoration within ~35 steps, and fetches coffee and mail in both orders too rarely
EXPLORER = {"coffee_mail": (0.5, 100)}
#: world: (ε, horizon, propositions walked around) of the random-subgoal explorer (``--explorer subgoals``)
SUBGOALS = {"office": (0.1, 100, ("n",)), "craft": (0.1, 100, ())}
#: the tasks the ε-greedy expert's traces never identify (section 1 of docs/benchmarks/rewards.md)
HARD = ("patrol", "t5", "t6", "t7", "t9", "t10")
NOISE_TASKS = ("coffee", "t1")
#: machines rmtk's plain SatEncoder lists at most (beside the simplest)
PLAIN_LISTED = 100
NOISE_LEVELS = (0.01, 0.05, 0.1)


def world_of(name: str) -> str:
    return "office" if name in OFFICE else "craft"


def explorer(name: str) -> tuple[float, int]:
    """The explorer's ε and horizon on task ``name``."""
    return EXPLORER.get(name, WORLDS[world_of(name)][2:])


def task_goals(task) -> tuple[str, ...]:
    """The propositions the task's machine reads: the letters of its transitions that move a
    node or pay (``--goals task``; this explorer then knows which objects matter, not their order)."""
    m = task.machine
    moves = (m.delta_u != np.arange(m.n_nodes)[:, None]) | (m.delta_r != 0)
    letters = set(np.flatnonzero(moves.any(axis=0)).tolist())
    props = task.mdp.propositions
    return tuple(p for k, p in enumerate(props) if int(task.letter_of_proposition[k]) in letters)


def traces(name: str, task, n: int, seed: int, kind: str, noise: float = 0.0, horizon=None, goals=None):
    """``n`` episodes of the ``kind`` explorer (``expert``: the ε-greedy expert of
    :func:`explorer`; ``subgoals``: :class:`rmtk.traces.explorers.RandomSubgoals` with :data:`SUBGOALS`,
    its horizon replaced by ``horizon`` and its goals by ``goals`` — ``"task"``: :func:`task_goals` —
    when given) and its label for the table."""
    from rmtk.traces.explorers import RandomSubgoals, explore

    if kind == "subgoals":
        eps, T, avoid = SUBGOALS[world_of(name)]
        T = horizon or T
        chosen = task_goals(task) if goals == "task" else None
        label = f"subgoals ε={eps:g}, T={T}" + (f", avoid {','.join(avoid)}" if avoid else "")
        label += f", goals {','.join(chosen)}" if chosen else ""
        sub = RandomSubgoals(epsilon=eps, goals=chosen, avoid=avoid)
        return explore(task, n, T, seed=seed, noise=noise, explorer=sub), label
    eps, T = explorer(name)
    return explore(task, n, T, seed=seed, epsilon=eps, noise=noise), f"ε={eps:g}, T={T}"


def load(name: str):
    from rmtk import dsl

    return dsl.load_model(WORLDS[world_of(name)][0]).tasks[name]


# ---------------------------------------------------------------------- checks
def observed(demos) -> np.ndarray:
    """``(N, T)``: the steps whose reward is evidence (recorded, not NaN)."""
    return ~np.isnan(demos.rewards)


def run(delta_u: np.ndarray, initial: int, letters: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The node after each prefix ``letters[i, :t+1]`` of a machine over the MDP's propositions."""
    N, T = letters.shape
    out = np.full((N, T), -1, np.int64)
    u = np.full(N, initial, np.int64)
    for t in range(T):
        live = lengths > t
        u = np.where(live, delta_u[u, np.where(live, letters[:, t], 0)], u)
        out[:, t] = u
    return out


def exercised(task, demos) -> tuple[bool, list[str]]:
    """Whether the traces exercise every non-end node of the truth, each move between non-end
    nodes and each reward the truth pays (the truth's letters); the ones missing."""
    from rmtk.product.simulate import rollout_nodes
    from rmtk.traces.explorers import end_nodes

    m = task.machine
    letters = task.letter_of_proposition[task.mdp.labels[np.maximum(demos.states, 0)]]
    u, obs = rollout_nodes(task, demos).astype(np.int64), observed(demos)
    seen = np.zeros(m.delta_u.shape, bool)
    nxt_obs = np.zeros_like(obs)
    nxt_obs[:, :-1] = obs[:, 1:]
    rew_seen = np.zeros_like(seen)
    i, t = np.nonzero(obs)
    rew_seen[u[i, t], letters[i, t + 1]] = True  # the reward of (u_t, L(s_{t+1})) is observed
    i, t = np.nonzero(obs & nxt_obs)
    seen[u[i, t], letters[i, t + 1]] = True  # and where it leads is observed after it
    ends = set(end_nodes(task).tolist())
    missing = []
    for a in range(m.n_nodes):
        if a in ends:
            continue
        for k in range(len(m.alphabet)):
            b = int(m.delta_u[a, k])
            if b != a and b not in ends and not seen[a, k]:
                missing.append(f"{m.nodes[a]}-{m.alphabet[k]}->{m.nodes[b]}")
            elif m.delta_r[a, k] != 0 and not rew_seen[a, k]:
                missing.append(f"{m.nodes[a]}-{m.alphabet[k]}/{m.delta_r[a, k]:g}")
    return not missing, missing


def same_runs(demos, props, a: np.ndarray, b: np.ndarray) -> bool:
    """Two machines (over the MDP's propositions, initial node 0) are one up to renaming on the
    observed steps: their nodes there correspond one to one."""
    obs = observed(demos)
    x, y = run(a, 0, props, demos.lengths)[obs], run(b, 0, props, demos.lengths)[obs]
    pairs = set(zip(x.tolist(), y.tolist()))
    return len({p for p, _ in pairs}) == len(pairs) == len({q for _, q in pairs})


def agrees(task, demos, delta_u, delta_r, initial: int = 0, *, rtol: float = 1e-5, atol: float = 1e-8) -> bool:
    """A learned machine over the MDP's propositions is the truth up to renaming on the observed
    steps: a one-to-one node map onto the truth's non-end nodes, and the truth's reward paid on
    every observed step (``np.allclose`` with ``rtol``, ``atol``: within a tolerance for noisy
    rewards, benchmarks/rewards_mining.py)."""
    from rmtk.product.simulate import rollout_nodes
    from rmtk.traces.explorers import end_nodes

    m = task.machine
    props = task.mdp.labels[np.maximum(demos.states, 0)]
    learned = run(np.asarray(delta_u), initial, props, demos.lengths)
    true = rollout_nodes(task, demos).astype(np.int64)
    obs = observed(demos)
    pairs = set(zip(learned[obs].tolist(), true[obs].tolist()))
    one_to_one = len({a for a, _ in pairs}) == len(pairs) == len({b for _, b in pairs})
    reached = {b for _, b in pairs} == set(range(m.n_nodes)) - set(end_nodes(task).tolist())
    i, t = np.nonzero(obs)
    paid = np.asarray(delta_r)[learned[i, t], props[i, t + 1]]
    want = m.delta_r[true[i, t], task.letter_of_proposition[props[i, t + 1]]]
    return bool(one_to_one and reached and np.allclose(paid, want, rtol=rtol, atol=atol))


# ---------------------------------------------------------------------- rmtk
def learn(task, demos, *, noisy: bool = False, plain: bool = False, nodes: int | None = None, limit=None):
    """rmtk from the traces alone: the simplest machines (``SimplestEncoder``), every smallest
    machine (``plain``: ``SatEncoder``, up to :data:`PLAIN_LISTED`) or, ``noisy``, the simplest
    of the least noisy at ``nodes`` nodes."""
    from rmtk import Learner
    from rmtk.sat.encoders import SatEncoder, SimplestEncoder, SimplestNoisyRewardEncoder
    from rmtk.traces.evidence import TraceRewards

    encoder = SimplestNoisyRewardEncoder() if noisy else SatEncoder() if plain else SimplestEncoder()
    listed = PLAIN_LISTED if plain else None
    t0 = time.perf_counter()
    learner = Learner(
        ptp=None, rewards=TraceRewards(demos), encoder=encoder, nodes=nodes, max_solutions=listed, time_limit=limit
    )
    r = learner.fit(task)
    return r, time.perf_counter() - t0


@contextlib.contextmanager
def cpu_limit(seconds: float | None):
    """Stop a fit (:func:`rmtk.limits.request_stop`, as Ctrl-C does) once this process has spent
    ``seconds`` CPU seconds more (``None``: no limit); checked every 0.2 s by a thread. A
    shared machine gives a fit a small share of a core: a wall limit then gives it little CPU."""
    import threading

    from rmtk.limits import clear_stop, request_stop

    if seconds is None:
        yield
        return
    end, done = time.process_time() + seconds, threading.Event()

    def watch():
        while not done.wait(0.2):
            if time.process_time() >= end:
                request_stop("CPU limit")
                return

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
        clear_stop()


def refuted(r) -> str:
    """The sizes a fit proved to have no machine, as ``1-5`` (``none``)."""
    sizes = [n for n, sat in r.search.tried if sat is False]
    return f"{sizes[0]}-{sizes[-1]}" if len(sizes) > 1 else str(sizes[0]) if sizes else "none"


def timed(task, demos, repeat: int) -> tuple[float, float]:
    """The medians of ``repeat`` fits of :func:`learn` on ``demos`` (one process, after the
    doubling's fits, so no import is counted): wall seconds and CPU seconds."""
    wall, cpu = [], []
    for _ in range(repeat):
        c = time.process_time()
        wall.append(learn(task, demos)[1])
        cpu.append(time.process_time() - c)
    return statistics.median(wall), statistics.median(cpu)


def truth_alone(task, demos, r) -> bool:
    if len(r.machines) != 1 or not r.search.complete:
        return False
    return agrees(task, demos, r.solutions[0].delta_u, r.machines[0].delta_r)


def episodes_needed(
    name: str,
    seed: int,
    start: int,
    budget: int,
    log,
    kind: str = "expert",
    limit=None,
    cpu=None,
    **explorer_options,
) -> dict:
    """Double the episodes from ``start`` until the truth alone at ``n`` and ``2n`` (or the budget,
    or a fit stopped by the time ``limit``, wall seconds, or ``cpu``, CPU seconds: ``stopped`` is
    then its ``n``)."""
    task = load(name)
    n, hits, first = start, 0, None
    while n <= budget:
        demos, _ = traces(name, task, n, seed, kind, **explorer_options)
        c0 = time.process_time()
        with cpu_limit(cpu):
            r, secs = learn(task, demos, limit=limit)
        c1 = time.process_time() - c0
        if not r.search.complete and ((limit is not None and secs >= limit) or (cpu is not None and c1 >= cpu)):
            log(
                f"{name}: {n} episodes: stopped by the limit after {secs:.1f} s ({c1:.1f} CPU s): "
                f"sizes {refuted(r)} refuted, no machine found ({r.search.message})"
            )
            return dict(task=name, found=None, stays=False, last=n, stopped=n)
        ok = truth_alone(task, demos, r) and exercised(task, demos)[0]
        log(
            f"{name}: {n} episodes, {int(demos.lengths.sum())} steps: {r.n_nodes} nodes, "
            f"{len(r.machines)} machines, truth alone {ok}, {secs:.2f} s ({c1:.2f} CPU s)"
        )
        if ok:
            if first is None:
                first = dict(n=n, demos=demos, r=r, secs=secs)
            hits += 1
            if hits == 2:
                break
        else:
            first, hits = None, 0
        n *= 2
    return dict(task=name, found=first, stays=hits == 2, last=n, stopped=None)


# ---------------------------------------------------------------------- JIRP's format
def jirp_traces(task, demos, other: str) -> list:
    """Each episode as (labels, rewards, truncated) in the repository's format: the label after
    each step as a string of true propositions (``""`` for the unmarked cells), the reward of each
    step. rmtk's machine also reads the start state's label (docs/design/02-conventions.md,
    "The prefix convention"), so it is given as a first step with reward 0 (no task pays on its first letter).
    ``truncated``: the episode stopped at the horizon, not at the machine's end."""
    from rmtk.product.simulate import rollout_nodes
    from rmtk.traces.explorers import end_nodes

    names = [("" if p == other else p) for p in task.mdp.propositions]
    props = task.mdp.labels[np.maximum(demos.states, 0)]
    ended = np.isin(rollout_nodes(task, demos), end_nodes(task))
    out = []
    for i, length in enumerate(demos.lengths.tolist()):
        labels = [names[k] for k in props[i, :length].tolist()]
        rewards = [0.0] + demos.rewards[i, : length - 1].tolist()
        out.append([labels, rewards, not bool(ended[i, length - 1])])
    return out


def jirp_machine(task, record: dict, other: str):
    """The repository's machine as ``delta_u, delta_r`` over the MDP's propositions (its terminal
    state last; a letter its language lacks loops)."""
    n = record["states"]
    names = [("" if p == other else p) for p in task.mdp.propositions]
    K = len(names)
    delta_u = np.tile(np.arange(n + 1)[:, None], (1, K))
    delta_r = np.zeros((n + 1, K))
    for p, label, q, r in record["transitions"]:
        if label in names:
            k = names.index(label)
            delta_u[p % (n + 1), k] = q % (n + 1)
            delta_r[p % (n + 1), k] = r or 0.0
    return delta_u, delta_r


def children_cpu() -> float:
    """CPU seconds of this process's waited-for children (and theirs)."""
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


#: the peer's run is also stopped after this many times its CPU limit in wall seconds (the
#: machine is shared: its share of a core may be small)
WALL_GUARD = 8


def run_limited(cmd: list[str], env: dict, cpu_limit: float) -> tuple[int | None, str]:
    """Run ``cmd`` in its own session with ``cpu_limit`` CPU seconds per process (RLIMIT_CPU,
    so a busy machine does not cut it short), stopped with its whole group after
    :data:`WALL_GUARD` times that in wall seconds; its status (``None``: stopped or killed by
    the limit) and stdout."""
    import resource
    import signal

    def limit():
        resource.setrlimit(resource.RLIMIT_CPU, (int(cpu_limit) + 1, int(cpu_limit) + 2))

    proc = subprocess.Popen(
        cmd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        preexec_fn=limit,
        start_new_session=True,
    )
    try:
        stdout, _ = proc.communicate(timeout=cpu_limit * WALL_GUARD)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return None, ""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # a solver it started and left running
    if proc.returncode < 0:  # SIGXCPU / SIGKILL: the CPU limit
        return None, stdout
    return proc.returncode, stdout


def run_jirp(args, task, demos, method: str, plain, repeat: int = 1) -> dict:
    """The repository's inference on ``demos`` in a child, ``repeat`` times (medians), killed
    after ``--jirp-limit`` s a run; its machine checked against the truth and against rmtk's list
    ``plain`` (every machine)."""
    other = WORLDS[world_of(task.name)][1]
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"traces": jirp_traces(task, demos, other)}, f)
    cmd = [
        args.jirp_python,
        str(Path(__file__).with_name("rewards_jirp.py")),
        "--src",
        args.jirp,
        "--method",
        method,
        "--traces",
        f.name,
        "--max-states",
        str(plain.n_nodes + 1),
        "--seed",
        str(args.seed),
        "--repeat",
        str(repeat),
    ]
    limit = args.jirp_limit * repeat
    env = dict(os.environ, PYTHONHASHSEED=str(args.seed))  # its sets of traces iterate in hash order
    before = children_cpu()
    try:
        code, stdout = run_limited(cmd, env, limit)
    finally:
        Path(f.name).unlink()
    if code is None:
        spent = children_cpu() - before
        note = f"not done in {args.jirp_limit:g} CPU s ({spent:.0f} CPU s spent)"
        return dict(ok=None, secs=None, cpu=None, states=None, note=note)
    lines = [ln for ln in stdout.splitlines() if ln.startswith("@@jirp ")]
    if not lines:
        return dict(ok=None, secs=None, cpu=None, states=None, note=f"failed (status {code})")
    rec = json.loads(lines[-1][len("@@jirp ") :])
    if rec["states"] is None:
        return dict(ok=False, secs=rec["total"], cpu=rec["cpu"], states=None, note="no machine up to the size")
    delta_u, delta_r = jirp_machine(task, rec, other)
    ok = agrees(task, demos, delta_u, delta_r)
    props = task.mdp.labels[np.maximum(demos.states, 0)]
    listed = any(same_runs(demos, props, delta_u, s.delta_u) for s in plain.solutions)
    if not listed and not plain.search.complete:
        listed = None  # beyond the machines rmtk listed: not known
    runs = f"{rec['runs']} runs, same answer {rec['same']}"
    return dict(ok=ok, listed=listed, secs=rec["total"], cpu=rec["cpu"], states=rec["states"], note=runs)


# ---------------------------------------------------------------------- references
def numpy_import_seconds() -> tuple[float, float]:
    """Wall and CPU seconds of ``python -c "import numpy"`` in a child."""
    import resource

    def cpu():
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        return r.ru_utime + r.ru_stime

    t0, c0 = time.perf_counter(), cpu()
    subprocess.run([sys.executable, "-c", "import numpy"], check=True)
    return time.perf_counter() - t0, cpu() - c0


def policy_seconds(name: str) -> float:
    from rmtk import Learner

    t0 = time.perf_counter()
    Learner(irl=None).fit(load(name))
    return time.perf_counter() - t0


# ---------------------------------------------------------------------- noise
def noisy_row(name: str, eps: float, n: int, seed: int) -> dict:
    from rmtk.traces.explorers import end_nodes, explore

    task = load(name)
    e, horizon = explorer(name)
    demos = explore(task, n, horizon, seed=seed, epsilon=e, noise=eps)
    size = task.machine.n_nodes - len(end_nodes(task))
    r, secs = learn(task, demos, noisy=True, nodes=size)
    clean = explore(task, n, horizon, seed=seed, epsilon=e)  # same episodes, the rewards the machine paid
    ok = len(r.machines) == 1 and agrees(task, clean, r.solutions[0].delta_u, r.machines[0].delta_r)
    est = r.noise
    return {
        "task": name,
        "ε": eps,
        "episodes": n,
        "steps": int(demos.lengths.sum()),
        "truth alone": ok,
        "estimate": f"{est.rate:.4f}",
        "95% interval": f"{est.low:.4f}–{est.high:.4f}",
        "ε inside": est.low <= eps <= est.high,
        "rmtk s": f"{secs:.2f}",
    }


# ---------------------------------------------------------------------- main
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, required=True, help="decides every episode (and the noise: seed + 1)")
    ap.add_argument("--quick", action="store_true", help="Office and Craft t1-t4, small budget, no JIRP")
    ap.add_argument("--tasks", nargs="*", default=None)
    ap.add_argument("--start", type=int, default=25, help="first episode count (doubled)")
    ap.add_argument("--budget", type=int, default=25_600, help="largest episode count")
    ap.add_argument("--jirp", default=None, help="src folder of corazza/stochastic-reward-machines")
    ap.add_argument("--jirp-python", default=sys.executable, help="the python with that repository's dependencies")
    ap.add_argument("--jirp-limit", type=float, default=600.0, help="CPU seconds before the repository's run is killed")
    ap.add_argument("--sjirp", action="store_true", help="also S-JIRP's SMT inference (needs its compiled a.out)")
    ap.add_argument("--noise", action="store_true", help="the noisy-reward table")
    ap.add_argument("--noise-episodes", type=int, default=2000)
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument(
        "--fit-limit", type=float, default=None, help="wall seconds per fit; a stopped fit ends the doubling"
    )
    ap.add_argument(
        "--fit-cpu-limit", type=float, default=None, help="CPU seconds per fit; a stopped fit ends the doubling"
    )
    ap.add_argument(
        "--explorer",
        choices=("expert", "subgoals"),
        default="expert",
        help="the ε-greedy expert (default) or random subgoals (SUBGOALS; tasks default to HARD)",
    )
    ap.add_argument("--horizon", type=int, default=None, help="random subgoals: episode horizon (default SUBGOALS')")
    ap.add_argument("--goals", choices=("all", "task"), default="all", help="random subgoals: all objects, task_goals")
    ap.add_argument("--repeat", type=int, default=5, help="timed fits (and JIRP runs) per row: medians reported")
    ap.add_argument(
        "--repeat-under", type=float, default=60.0, help="repeat a peer's inference only under this many CPU s a run"
    )
    args = ap.parse_args(argv)
    tasks = args.tasks or (OFFICE + CRAFT[:4] if args.quick else OFFICE + CRAFT)
    if args.explorer == "subgoals" and not args.tasks:
        tasks = HARD
    if args.quick:
        args.budget = min(args.budget, 3200)
        args.jirp = None

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    ref = numpy_import_seconds()
    rows = []
    for name in tasks:
        options = dict(horizon=args.horizon, goals=args.goals)
        out = episodes_needed(
            name, args.seed, args.start, args.budget, log, args.explorer, args.fit_limit, args.fit_cpu_limit, **options
        )
        f = out["found"]
        row = {
            "task": name,
            "explorer": traces(name, load(name), 1, args.seed, args.explorer, **options)[1],
            "episodes": "—",
            "steps": "—",
            "nodes": "—",
            "raw": "—",
            "free": "—",
            "rmtk s": "—",
            "rmtk CPU s": "—",
            "machines": "—",
        }
        if f is not None and out["stays"]:
            r = f["r"]
            row.update(
                episodes=f["n"],
                steps=int(f["demos"].lengths.sum()),
                nodes=r.n_nodes,
                raw=r.raw_count,
                free=len(r.unconstrained(0)),
            )
            f["wall"], f["cpu"] = timed(load(name), f["demos"], args.repeat)
            row.update({"rmtk s": f"{f['wall']:.3f}", "rmtk CPU s": f"{f['cpu']:.3f}"})
        else:
            stopped = out["stopped"]
            over = f"{args.fit_limit:g} s" if args.fit_cpu_limit is None else f"{args.fit_cpu_limit:g} CPU s"
            row["episodes"] = f"> {args.budget}" if stopped is None else f"fit > {over} at {stopped}"
        if f is not None:
            plain, secs = learn(load(name), f["demos"], plain=True, limit=args.fit_limit)
            more = "" if plain.search.complete else "≥ "
            row["machines"] = f"{more}{len(plain.machines)}"
        if args.jirp:
            for method in ("sat", "smt") if args.sjirp else ("sat",):
                label = "JIRP" if method == "sat" else "S-JIRP"
                if f is None or "cpu" not in f or (method == "smt" and row.get("JIRP CPU s") == "—"):
                    row.update({f"{label} {c}": "—" for c in ("states", "s", "CPU s", "truth", "listed", "×")})
                    continue
                j = run_jirp(args, load(name), f["demos"], method, plain)
                if j.get("cpu") is not None and j["cpu"] < args.repeat_under and args.repeat > 1:
                    j = run_jirp(args, load(name), f["demos"], method, plain, repeat=args.repeat)
                log(f"{name}: {label} {j}")
                row[f"{label} states"] = j["states"] if j["states"] is not None else "—"
                row[f"{label} s"] = f"{j['secs']:.2f}" if j["secs"] is not None else j["note"]
                row[f"{label} CPU s"] = f"{j['cpu']:.2f}" if j.get("cpu") is not None else "—"
                row[f"{label} truth"] = j["ok"] if j["ok"] is not None else "—"
                listed = j.get("listed")
                row[f"{label} listed"] = "—" if listed is None else listed
                row[f"{label} ×"] = f"{j['cpu'] / f['cpu']:.0f}" if j.get("cpu") else "—"
        rows.append(row)
    policy = {n: policy_seconds(n) for n in ("coffee", "t1") if n in tasks}
    print(render(rows, args.markdown, frozenset({"task"})))
    print()
    print(
        f"same-run references: `python -c 'import numpy'` in a child {ref[0]:.2f} s (CPU {ref[1]:.2f} s); "
        "rmtk from the exact policy " + ", ".join(f"{n} {s:.2f} s" for n, s in policy.items())
    )
    if args.noise:
        noise_rows = [noisy_row(n, e, args.noise_episodes, args.seed) for n in NOISE_TASKS for e in NOISE_LEVELS]
        print()
        print(render(noise_rows, args.markdown, frozenset({"task"})))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
