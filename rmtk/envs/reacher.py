"""The discretised 2-link reacher of the paper (section 6.3, appendix C.2), with a scripted
expert, streamed straight into empirical counts.

Optional: needs ``gymnasium[mujoco]`` (``pip install rmtk[reacher]``); gymnasium and mujoco
are imported only when a simulation starts, so the rest of the module (discretiser, labels,
expert) is plain numpy.

**Physics.** Gymnasium's ``Reacher-v5`` MuJoCo model (two links of 0.1 and 0.11 m, RK4,
timestep 0.01 s, ``frame_skip`` 2, so one step is 0.02 s), stepped in batches of thousands of
arms at once with :func:`mujoco.rollout.rollout` (one C call per step for the whole batch;
it reproduces ``env.step`` exactly). The episode horizon is 160 steps.

**Actions.** Torques ``{−1, −0.5, 0, 0.5, 1}`` per joint: action ``5·i + j`` applies
``(TORQUES[i], TORQUES[j])`` to (shoulder, elbow).

**Initial state.** Shoulder angle uniform in [−π, π]; elbow angle uniform in its joint range
[−3, 3] rad (the model limits the elbow to ±3 rad, so ±π would start inside the limit
constraint); both joint velocities uniform in [−5, 5] rad/s.

**Targets and labels.** Three fixed discs of radius 0.02 m: b (0.1, −0.11), y (−0.1, 0.11),
r (0.1, 0.11), to be reached in the order b → y → r. The label of a step is the disc the
fingertip is in at that step — whichever disc, active or not (a label is a property of the
physical state, as in a labelled MDP; the discs do not overlap) — else ``i``. The fingertip
position is the exact forward kinematics of the continuous joint angles, so labels are *not*
a function of the discretised cell: they are recorded per step and passed to the counter.

**Task progress.** The expert's active goal is the node of the true machine
``u0 -b-> u1 -y-> u2 -r-> u3`` (all other letters self-loop) after reading the labels so far,
the step's own label included (section 2's prefix convention): it switches as soon as the
previous target is reached. In ``u3`` (task done) the expert goes back to b and holds there
(``Expert.done``; ``"home"`` would instead send it to both joint angles 0, fingertip
(0.21, 0), in no disc). Holding at b makes u3 hover for the rest of the episode where u1
leaves b for y, which yields most of the negative examples; u3 has the same policy as u0
(goal b) and is told apart from it by what follows a b (u0 leaves for y, u3 stays). The
model's target body (slide joints ``target_x``, ``target_y``) is placed on the active goal
at every step, so the Gymnasium observation would be consistent; it has no contacts and
does not influence the arm.

**Discretisation** (appendix C.2): joint angles wrapped to [−π, π) in 36 bins of 10°; joint
velocities clipped to [−14, 14] rad/s (a fast arm exceeds it: clipped into the edge bins) in
112 bins of 0.25 rad/s. State index, mixed radix:
``((a1·36 + a2)·112 + v1)·112 + v2``, so ``36·36·112·112 = 16,257,024`` cells. (The paper
says ≈17.4M without giving the exact bin rule; e.g. 36²·116² = 17.44M or 37²·113² = 17.48M
would round to it. Only a tiny fraction of cells is ever visited, so this does not matter.)

**Expert.** A scripted controller that sees only the *centre* of the current cell and the
active goal, so that the expert is a function of (cell, machine node) — the paper samples its
PPO policy at the cell centre for the same reason. Two-link inverse kinematics gives the goal
joint angles (elbow-up branch, elbow +90° at every target: the three targets are all at
0.1487 m from the shoulder; ``Expert.elbow``), a velocity-command law
``ω* = clip(kp·e, ±w_max)`` (kp = 12 /s, w_max = 8 rad/s; shoulder error wrapped) is turned
into the torque level that brings each joint velocity closest to ω* in one step (about
2 rad/s per 0.5 of torque), clipped to the 5 levels. With probability ``epsilon`` (default
0.1) the action is instead uniform over the 25 actions (so the greedy action has probability
1 − ε + ε/25 = 0.904): two nodes' policies at a cell then differ by a total-variation
distance of 0.9 (or 0), detectable from ≈60 visits of each (word, cell) pair at α = 10⁻³.
The expert completes b → y → r in all of 100,000 seeded episodes (mean 53 steps).
"""
from __future__ import annotations

import math
import time
from typing import Callable, Sequence

import attrs
import numpy as np

#: The propositions, in label-index order.
PROPOSITIONS = ("i", "b", "y", "r")
#: Target centres (x, y) of b, y, r (labels 1, 2, 3), and their radius.
TARGETS = np.array([[0.1, -0.11], [-0.1, 0.11], [0.1, 0.11]])
RADIUS = 0.02
#: Link lengths of Reacher-v5 (shoulder to elbow, elbow to fingertip).
LINKS = (0.1, 0.11)
#: Joint angles of the home pose (the goal in u3 with ``Expert(done="home")``) and its fingertip.
HOME = np.array([0.0, 0.0])
HOME_TIP = np.array([0.21, 0.0])
#: Torque levels per joint; action 5·i + j is (TORQUES[i], TORQUES[j]).
TORQUES = np.array([-1.0, -0.5, 0.0, 0.5, 1.0])
N_ACTIONS = 25
HORIZON = 160
ELBOW_LIMIT = 3.0
INITIAL_VELOCITY = 5.0
EPSILON = 0.1


@attrs.frozen
class Space:
    """What the counter needs to know (``n_states``, ``n_actions``, ``n_propositions``):
    the reacher has no transition model, and its labels come per step."""

    n_states: int
    n_actions: int = N_ACTIONS
    propositions: tuple = PROPOSITIONS

    @property
    def n_propositions(self) -> int:
        return len(self.propositions)


# ====================================================================== discretiser
@attrs.frozen
class Discretiser:
    """Joint angles and velocities → cell index (mixed radix ``a1, a2, v1, v2``)."""

    angle_bins: int = 36
    velocity_bins: int = 112
    velocity_limit: float = 14.0

    @property
    def angle_width(self) -> float:
        return 2 * math.pi / self.angle_bins

    @property
    def velocity_width(self) -> float:
        return 2 * self.velocity_limit / self.velocity_bins

    @property
    def n_states(self) -> int:
        return self.angle_bins**2 * self.velocity_bins**2

    def space(self) -> Space:
        return Space(self.n_states)

    def bins(self, angles, velocities) -> np.ndarray:
        """``(N, 4)`` bin indices ``(a1, a2, v1, v2)`` of ``(N, 2)`` angles and velocities."""
        angles = np.asarray(angles, dtype=float)
        velocities = np.asarray(velocities, dtype=float)
        wrapped = np.mod(angles + math.pi, 2 * math.pi)  # [0, 2π)
        a = np.floor(wrapped / self.angle_width).astype(np.int64)
        np.clip(a, 0, self.angle_bins - 1, out=a)  # float rounding at 2π
        v = np.floor((np.clip(velocities, -self.velocity_limit, self.velocity_limit) + self.velocity_limit)
                     / self.velocity_width).astype(np.int64)
        np.clip(v, 0, self.velocity_bins - 1, out=v)  # +limit falls in the last bin
        return np.concatenate([a, v], axis=-1)

    def index_of_bins(self, b) -> np.ndarray:
        b = np.asarray(b, dtype=np.int64)
        A, V = self.angle_bins, self.velocity_bins
        return ((b[..., 0] * A + b[..., 1]) * V + b[..., 2]) * V + b[..., 3]

    def index(self, angles, velocities) -> np.ndarray:
        """Cell indices (int64) of ``(N, 2)`` angles and velocities."""
        return self.index_of_bins(self.bins(angles, velocities))

    def decode(self, index) -> np.ndarray:
        """``(N, 4)`` bins of cell indices."""
        index = np.asarray(index, dtype=np.int64)
        A, V = self.angle_bins, self.velocity_bins
        v2, rest = index % V, index // V
        v1, rest = rest % V, rest // V
        a2, a1 = rest % A, rest // A
        return np.stack([a1, a2, v1, v2], axis=-1)

    def centre_of_bins(self, b) -> tuple[np.ndarray, np.ndarray]:
        b = np.asarray(b, dtype=np.int64)
        angles = -math.pi + (b[..., :2] + 0.5) * self.angle_width
        velocities = -self.velocity_limit + (b[..., 2:] + 0.5) * self.velocity_width
        return angles, velocities

    def centre(self, index) -> tuple[np.ndarray, np.ndarray]:
        """``(angles, velocities)`` at the centre of the cells ``index``."""
        return self.centre_of_bins(self.decode(index))


# ====================================================================== labels
def fingertip(angles) -> np.ndarray:
    """``(N, 2)`` fingertip positions of ``(N, 2)`` joint angles (forward kinematics)."""
    angles = np.asarray(angles, dtype=float)
    t1, t12 = angles[..., 0], angles[..., 0] + angles[..., 1]
    return np.stack([LINKS[0] * np.cos(t1) + LINKS[1] * np.cos(t12),
                     LINKS[0] * np.sin(t1) + LINKS[1] * np.sin(t12)], axis=-1)


def label(tip) -> np.ndarray:
    """Label index of fingertip positions: 1 + k inside target disc k (b, y, r), else 0 (i)."""
    tip = np.asarray(tip, dtype=float)
    d2 = ((tip[..., None, :] - TARGETS) ** 2).sum(axis=-1)
    inside = d2 <= RADIUS**2
    return np.where(inside.any(axis=-1), 1 + np.argmax(inside, axis=-1), 0).astype(np.int64)


def advance(node, labels) -> np.ndarray:
    """The true machine: ``u_k`` moves to ``u_{k+1}`` on the (k+1)-th target's label."""
    node = np.asarray(node)
    return np.where((node < 3) & (labels == node + 1), node + 1, node)


def true_machine():
    """``u0 -b-> u1 -y-> u2 -r-> u3``, every other letter a self-loop (rewards 0)."""
    from ..machine import RewardMachine

    return RewardMachine.from_transitions(
        {("u0", "b"): "u1", ("u1", "y"): "u2", ("u2", "r"): "u3"}, PROPOSITIONS,
        nodes=["u0", "u1", "u2", "u3"], name="reacher",
    )


# ====================================================================== expert
def inverse_kinematics(goal, elbow_sign) -> np.ndarray:
    """Joint angles putting the fingertip on ``goal`` (``(N, 2)``), elbow branch ``±1``."""
    goal = np.asarray(goal, dtype=float)
    l1, l2 = LINKS
    x, y = goal[..., 0], goal[..., 1]
    c2 = np.clip((x * x + y * y - l1 * l1 - l2 * l2) / (2 * l1 * l2), -1.0, 1.0)
    t2 = np.where(elbow_sign >= 0, 1.0, -1.0) * np.arccos(c2)
    t1 = np.arctan2(y, x) - np.arctan2(l2 * np.sin(t2), l1 + l2 * np.cos(t2))
    return np.stack([t1, t2], axis=-1)


@attrs.frozen
class Expert:
    """The scripted expert: a function of (cell centre, node) plus ε-greedy noise.

    Attributes:
        kp: velocity command per radian of error (1/s).
        w_max: largest commanded joint speed (rad/s).
        gain: joint-velocity change per unit torque in one step (rad/s); about 4 in Reacher.
        epsilon: probability of a uniformly random action.
        elbow: inverse-kinematics branch: ``+1`` or ``−1`` (fixed), ``0`` the sign of the
            current elbow angle.
        done: the goal in u3 (task done): a target ``"b"``, ``"y"``, ``"r"`` (go there and
            hold; reaching it again changes nothing), or ``"home"``.
    """

    kp: float = 12.0
    w_max: float = 8.0
    gain: float = 4.0
    epsilon: float = EPSILON
    elbow: int = 1
    done: str = "b"
    discretiser: Discretiser = Discretiser()

    def __attrs_post_init__(self):
        if self.done not in ("b", "y", "r", "home"):
            raise ValueError(f"done must be 'b', 'y', 'r' or 'home', not {self.done!r}")
        if self.elbow not in (-1, 0, 1):
            raise ValueError(f"elbow must be -1, 0 or 1, not {self.elbow!r}")

    def goal_angles(self, angles, node) -> np.ndarray:
        """Goal joint angles per node: IK to b, y, r in u0, u1, u2, and to ``done`` in u3."""
        node = np.asarray(node)
        after = {"b": 0, "y": 1, "r": 2}.get(self.done, -1)
        goals = TARGETS[np.where(node == 3, max(after, 0), np.minimum(node, 2))]
        q = inverse_kinematics(goals, np.sign(angles[..., 1]) if self.elbow == 0 else self.elbow)
        return np.where((node == 3)[..., None], HOME, q) if after < 0 else q

    def greedy_from(self, angles, velocities, node) -> np.ndarray:
        """Greedy action indices at the given (cell-centre) angles and velocities."""
        q = self.goal_angles(angles, node)
        err = q - angles
        err[..., 0] = np.mod(err[..., 0] + math.pi, 2 * math.pi) - math.pi  # the shoulder turns freely
        w_star = np.clip(self.kp * err, -self.w_max, self.w_max)
        level = np.clip(np.rint(2 * (w_star - velocities) / self.gain), -2, 2).astype(np.int64) + 2
        return 5 * level[..., 0] + level[..., 1]

    def greedy(self, state, node) -> np.ndarray:
        """Greedy action of cells ``state`` (indices) in machine nodes ``node``."""
        angles, velocities = self.discretiser.centre(state)
        return self.greedy_from(angles, velocities, node)

    def policy(self, state, node) -> np.ndarray:
        """``(N, 25)`` action distributions."""
        g = np.asarray(self.greedy(state, node))
        p = np.full(g.shape + (N_ACTIONS,), self.epsilon / N_ACTIONS)
        np.put_along_axis(p, g[..., None], 1 - self.epsilon + self.epsilon / N_ACTIONS, axis=-1)
        return p

    def act(self, state, node, rng: np.random.Generator) -> np.ndarray:
        g = self.greedy(state, node)
        explore = rng.random(len(g)) < self.epsilon
        rand = rng.integers(0, N_ACTIONS, size=len(g))
        return np.where(explore, rand, g)


# ====================================================================== simulation
def load_model():
    """Reacher-v5's MuJoCo model (from gymnasium) and its ``frame_skip``."""
    import gymnasium as gym

    env = gym.make("Reacher-v5")
    try:
        u = env.unwrapped
        return u.model, int(u.frame_skip)
    finally:
        env.close()


@attrs.define
class Batch:
    """Trajectories of one simulated batch: ``(N, T)`` states, actions, labels (all steps
    valid: fixed horizon), and the step at which each completed b → y → r (−1: never)."""

    states: np.ndarray
    actions: np.ndarray
    labels: np.ndarray
    done_at: np.ndarray

    def demonstrations(self):
        from ..data import Demonstrations

        return Demonstrations.full(self.states, self.actions)


class Simulator:
    """Steps many reacher arms in lockstep (one :func:`mujoco.rollout.rollout` call per step)."""

    def __init__(self, expert: Expert | None = None, horizon: int = HORIZON):
        import mujoco
        from mujoco import rollout

        self.expert = expert or Expert()
        self.horizon = horizon
        self.model, self.frame_skip = load_model()
        self._mujoco, self._rollout = mujoco, rollout
        self.data = mujoco.MjData(self.model)
        self.spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
        self.nstate = mujoco.mj_stateSize(self.model, self.spec)
        # state layout: time, qpos (shoulder, elbow, target_x, target_y), qvel (same order), ...
        self.qpos, self.qvel = slice(1, 5), slice(5, 9)

    def initial(self, n: int, rng: np.random.Generator) -> np.ndarray:
        state = np.zeros((n, self.nstate))
        template = np.zeros(self.nstate)
        self._mujoco.mj_getState(self.model, self.data, template, self.spec)
        state[:] = template
        state[:, 0] = 0.0
        state[:, 1] = rng.uniform(-math.pi, math.pi, n)
        state[:, 2] = rng.uniform(-ELBOW_LIMIT, ELBOW_LIMIT, n)
        state[:, 5:7] = rng.uniform(-INITIAL_VELOCITY, INITIAL_VELOCITY, (n, 2))
        state[:, 7:9] = 0.0
        return state

    def run(self, n: int, seed) -> Batch:
        """``n`` episodes from ``np.random.default_rng(seed)``."""
        rng = np.random.default_rng(seed)
        T, disc = self.horizon, self.expert.discretiser
        state = self.initial(n, rng)
        states = np.empty((n, T), dtype=np.int32)
        actions = np.empty((n, T), dtype=np.int32)
        labels = np.empty((n, T), dtype=np.int8)
        node = np.zeros(n, dtype=np.int64)
        done_at = np.full(n, -1, dtype=np.int64)
        out = np.empty((n, self.frame_skip, self.nstate))
        control = np.empty((n, self.frame_skip, 2))
        after = {"b": 0, "y": 1, "r": 2}.get(self.expert.done, -1)
        goal_tip = np.vstack([TARGETS, HOME_TIP if after < 0 else TARGETS[after]])
        for t in range(T):
            q, v = state[:, 1:3], state[:, 5:7]
            s = disc.index(q, v)
            lab = label(fingertip(q))
            node = advance(node, lab)
            done_at[(node == 3) & (done_at < 0)] = t
            a = self.expert.act(s, node, rng)
            states[:, t], actions[:, t], labels[:, t] = s, a, lab
            if t == T - 1:
                break
            control[:] = np.stack([TORQUES[a // 5], TORQUES[a % 5]], axis=-1)[:, None, :]
            state[:, 3:5] = goal_tip[node]  # the active goal in the model's target joints
            state[:, 7:9] = 0.0
            self._rollout.rollout(self.model, self.data, state, control, nstep=self.frame_skip, state=out)
            state = out[:, -1, :].copy()
        return Batch(states, actions, labels, done_at)


# ====================================================================== streamed counting
def chunk_seeds(seed: int, n_trajectories: int, chunk: int) -> list[tuple[int, np.random.SeedSequence]]:
    """(size, seed) of every chunk: fixed by ``seed`` alone, whatever the number of workers."""
    n_chunks = max(1, -(-n_trajectories // chunk))
    seqs = np.random.SeedSequence(seed).spawn(n_chunks)
    return [(min(chunk, n_trajectories - k * chunk), seqs[k]) for k in range(n_chunks) if n_trajectories - k * chunk > 0]


class _Reducer:
    """Merges count tables like a binary counter (tables of similar size are merged), so that
    the total merge work is O(N log N) instead of O(N²) for N chunks."""

    def __init__(self):
        self.stack: list[tuple[int, object]] = []

    def add(self, table) -> None:
        from ..empirical import merge_counts

        weight = 1
        while self.stack and self.stack[-1][0] <= weight:
            w, top = self.stack.pop()
            table, weight = merge_counts(top, table), weight + w
        self.stack.append((weight, table))

    def result(self):
        from ..empirical import merge_counts

        table = None
        for _, t in reversed(self.stack):
            table = t if table is None else merge_counts(t, table)
        return table


@attrs.define
class GenerationStats:
    trajectories: int = 0
    completed: int = 0
    done_steps: int = 0  # sum of completion steps of the completed ones
    seconds: float = 0.0
    simulate_seconds: float = 0.0
    count_seconds: float = 0.0

    def add(self, other: "GenerationStats") -> None:
        for f in ("trajectories", "completed", "done_steps", "simulate_seconds", "count_seconds"):
            setattr(self, f, getattr(self, f) + getattr(other, f))

    @property
    def completion_rate(self) -> float:
        return self.completed / max(1, self.trajectories)


def _count_chunks(jobs, expert: Expert, report: Callable[[int], None] | None):
    """Simulate and count ``jobs`` (a list of (size, seed)); returns (CountTable, stats)."""
    from ..empirical import count_chunk

    sim = Simulator(expert)
    space = expert.discretiser.space()
    reducer = _Reducer()
    stats = GenerationStats()
    for size, seq in jobs:
        t0 = time.perf_counter()
        batch = sim.run(size, seq)
        t1 = time.perf_counter()
        table = count_chunk(space, batch.demonstrations(), labels=batch.labels)
        reducer.add(table)
        t2 = time.perf_counter()
        stats.trajectories += size
        stats.completed += int((batch.done_at >= 0).sum())
        stats.done_steps += int(batch.done_at[batch.done_at >= 0].sum())
        stats.simulate_seconds += t1 - t0
        stats.count_seconds += t2 - t1
        del batch
        if report is not None:
            report(size)
    return reducer.result(), stats


def _worker(index, jobs, expert, queue):  # pragma: no cover - runs in a child process
    try:
        import tracemalloc

        if tracemalloc.is_tracing():  # inherited through fork: the parent measures itself only
            tracemalloc.stop()
        table, stats = _count_chunks(jobs, expert, lambda k: queue.put(("progress", k)))
        queue.put(("result", (index, table, stats)))
    except BaseException as e:  # report, do not hang the parent
        import traceback

        queue.put(("error", f"{type(e).__name__}: {e}\n{traceback.format_exc()}"))


def generate_counts(
    n_trajectories: int,
    *,
    seed: int = 0,
    workers: int = 2,
    chunk: int = 2000,
    expert: Expert | None = None,
    progress: Callable[[int, int], None] | None = None,
):
    """Simulate ``n_trajectories`` expert episodes and count them into a
    :class:`~rmtk.empirical.CountTable` (word = compressed label prefix).

    Chunks of ``chunk`` trajectories each have their own seed (from ``seed`` and the chunk
    number), so the counts do not depend on ``workers``. With ``workers > 1`` the chunks are
    dealt round-robin to that many processes; each simulates a chunk, counts it, merges it
    into its running table, and returns only its table (no trajectory is kept). Returns
    ``(table, stats)``; ``progress(done, total)`` is called as chunks finish.
    """
    from ..empirical import merge_counts

    expert = expert or Expert()
    jobs = chunk_seeds(seed, n_trajectories, chunk)
    t0 = time.perf_counter()
    done = 0

    def tick(k):
        nonlocal done
        done += k
        if progress is not None:
            progress(done, n_trajectories)

    workers = max(1, min(workers, len(jobs)))
    if workers == 1:
        table, stats = _count_chunks(jobs, expert, tick)
    else:
        import multiprocessing as mp

        ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
        queue = ctx.Queue()
        procs = [ctx.Process(target=_worker, args=(w, jobs[w::workers], expert, queue), daemon=True)
                 for w in range(workers)]
        for p in procs:
            p.start()
        results, error = [], None
        try:
            while len(results) < workers and error is None:
                kind, payload = queue.get()
                if kind == "progress":
                    tick(payload)
                elif kind == "result":
                    results.append(payload)
                else:
                    error = payload
        finally:
            for p in procs:
                if error is not None and p.is_alive():
                    p.terminate()
                p.join()
        if error is not None:
            raise RuntimeError(f"a reacher worker failed: {error}")
        table, stats = None, GenerationStats()
        for _, t, s in sorted(results, key=lambda r: r[0]):  # fixed merge order: deterministic ids
            table = t if table is None else merge_counts(table, t)
            stats.add(s)
    stats.seconds = time.perf_counter() - t0
    return table, stats


__all__: Sequence[str] = [
    "PROPOSITIONS", "TARGETS", "RADIUS", "HOME", "TORQUES", "HORIZON", "Space", "Discretiser", "Expert",
    "Simulator", "Batch", "fingertip", "label", "advance", "true_machine", "generate_counts", "GenerationStats",
]
