"""Simulating demonstrations of a product policy (paper appendix "Constructing the
Prefix-Tree Policy via Simulation").

A trajectory of ``horizon`` steps is drawn as in section 2 of the paper (docs/design/02-conventions.md,
"The prefix convention": the first label already moves the machine)::

    s_0 ~ μ0                        u_0     = δ_u(u_I, L(s_0))
    a_t ~ π(· | s_t, u_t)           s_{t+1} ~ P(· | s_t, a_t)
                                    u_{t+1} = δ_u(u_t, L(s_{t+1}))

(The appendix's pseudo-code applies δ_u one label later; section 2 is followed here.)

With ``rewards=True`` each step also records the machine's reward for it,
``r_t = δ_r(u_t, L(s_{t+1}))`` (the convention of :mod:`rmtk.data.rewards`); the last step's
next state is not drawn, so its reward is NaN (unknown). ``policy="uniform"`` and
``epsilon`` (an ε-mixture with the uniform policy) give exploration traces.

Everything is vectorised across trajectories; the only Python loops are over chunks of
trajectories and time steps. Every categorical draw is an inverse-CDF lookup with one
uniform number: the rows of all distributions of one kind (the policy's ``(s, u)`` rows, the
MDP's ``(s, a)`` rows) are stored as one increasing array of keys ``row + F_row(j)``
(``F_row`` the row's cumulative distribution), so a single :func:`numpy.searchsorted` of
``row + U`` samples every trajectory at once (:class:`RowSampler`).

Reproducibility: one ``numpy.random.default_rng(seed)`` stream is read trajectory by
trajectory, ``2·horizon`` uniforms each (start state, then an action and a successor per
step). Trajectory ``i`` therefore depends only on ``(seed, horizon, i)``: the result does not
depend on ``chunk``, and ``simulate(n=m)`` is the first ``m`` trajectories of
``simulate(n=M)`` for ``m ≤ M``. It may change if the policy, the MDP or numpy's generator
changes.
"""

from __future__ import annotations

import operator

import attrs
import numpy as np

from ..data import PAD, Demonstrations
from ..engines.local import as_engine
from ..engines.shards import Shard, plan_shards
from ..errors import DataError, ModelError
from ..progress import Progress, as_progress
from ..task import Task

#: Tolerance on the rows of a user-given policy summing to 1.
POLICY_TOL = 1e-6

__all__ = [
    "simulate",
    "simulate_sharded",
    "simulate_dataset",
    "SimulationJob",
    "Written",
    "rollout_nodes",
    "sample_categorical",
    "RowSampler",
    "node_table",
    "reward_table",
]


class RowSampler:
    """Inverse-CDF sampling from many categorical distributions stored CSR-style.

    Row ``r`` has probabilities ``data[indptr[r]:indptr[r+1]]`` (need not be normalised;
    every row must have a positive sum). :meth:`sample` returns *storage positions*: for
    row ``r`` and uniform ``U ∈ [0, 1)`` the position ``indptr[r] + j`` of the first entry ``j``
    whose cumulative probability exceeds ``U`` (entries of probability 0 are never returned).
    """

    def __init__(self, indptr, data):
        indptr = np.asarray(indptr, dtype=np.int64)
        data = np.asarray(data, dtype=float)
        n_rows = indptr.size - 1
        counts = np.diff(indptr)
        if n_rows < 1 or np.any(counts < 1):
            raise ModelError("every categorical row needs at least one entry")
        if not np.all(np.isfinite(data)) or (data.size and data.min() < 0):
            raise ModelError("probabilities must be finite and non-negative")
        row_of = np.repeat(np.arange(n_rows), counts)
        cs = np.cumsum(data)
        before = np.concatenate([[0.0], cs])[indptr[:-1]]  # cumulative mass before each row
        within = cs - before[row_of]
        total = within[indptr[1:] - 1]
        if np.any(~(total > 0)):
            raise ModelError(f"categorical row {int(np.flatnonzero(~(total > 0))[0])} has no probability mass")
        cdf = within / total[row_of]
        # the last entry of positive probability and everything after it: exactly 1
        pos = np.arange(data.size)
        last_pos = np.maximum.reduceat(np.where(data > 0, pos, -1), indptr[:-1])
        cdf[pos >= last_pos[row_of]] = 1.0
        # keys row + F(j) increase weakly; row r's last key is exactly r + 1
        self.keys = row_of + cdf
        self.last_pos = last_pos
        self.indptr = indptr
        self.n_rows = n_rows
        # rows with a single entry of positive probability need no search (same result)
        self.deterministic = bool(np.all(np.add.reduceat((data > 0).astype(np.int64), indptr[:-1]) == 1))

    def sample(self, rows: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Storage positions sampled from ``rows`` with uniforms ``u`` (same shape)."""
        if self.deterministic:
            return self.last_pos[rows]
        pos = np.searchsorted(self.keys, rows + u, side="right")
        # r + u may round up to r + 1 when u is within an ulp of 1: stay inside the row
        return np.minimum(pos, self.last_pos[rows])


def sample_categorical(cdf_rows: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Inverse-CDF draws from dense cumulative rows.

    ``cdf_rows`` is ``(m, K)`` with each row non-decreasing (its last entry is the row's total
    mass, normally 1); ``u`` is ``(m,)`` uniforms in ``[0, 1)``. Returns ``(m,)`` indices: the
    first ``j`` with ``u·total < cdf_rows[i, j]`` (never an entry of probability 0).
    """
    cdf_rows = np.asarray(cdf_rows, dtype=float)
    if cdf_rows.ndim != 2:
        raise ValueError(f"cdf_rows must be 2-D, got shape {cdf_rows.shape}")
    m, K = cdf_rows.shape
    probs = np.diff(cdf_rows, axis=1, prepend=0.0)
    sampler = RowSampler(np.arange(0, m * K + 1, K), probs.ravel())
    rows = np.arange(m)
    return sampler.sample(rows, np.asarray(u, dtype=float)) - rows * K


#: What needs a task's machine here, as an error says it (:meth:`rmtk.task.Task.require_machine`).
SIMULATING = "simulating its expert (whose memory is the machine)"


def node_table(task: Task) -> np.ndarray:
    """``(S, n)``: ``δ_u(u, L(s))``, the node after the machine in ``u`` reads the label of ``s``."""
    letter = task.letter_of_proposition[task.mdp.labels]
    return np.ascontiguousarray(task.require_machine(SIMULATING).delta_u[:, letter].T)


def reward_table(task: Task) -> np.ndarray:
    """``(S, n)``: ``δ_r(u, L(s))``, the machine's reward when it reads the label of ``s`` in ``u``."""
    letter = task.letter_of_proposition[task.mdp.labels]
    return np.ascontiguousarray(task.require_machine("the machine's rewards").delta_r[:, letter].T)


def _policy_table(task: Task, policy, epsilon: float = 0.0) -> np.ndarray:
    """The ``(S, n, A)`` policy of ``policy`` mixed with the uniform one: ``(1 − ε)·π + ε/A``."""
    eps = float(epsilon)
    if not 0.0 <= eps <= 1.0:
        raise ModelError(f"epsilon is a probability in [0, 1], got {epsilon!r}")
    pi = _base_policy(task, policy)
    return pi if eps == 0.0 else (1.0 - eps) * pi + eps / pi.shape[2]


def _base_policy(task: Task, policy) -> np.ndarray:
    machine = task.require_machine(SIMULATING)
    S, n, A = task.mdp.n_states, machine.n_nodes, task.mdp.n_actions
    if isinstance(policy, str):
        if policy != "uniform":
            raise ModelError(f"unknown policy {policy!r}; a named policy is 'uniform' (or give an array)")
        return np.full((S, n, A), 1.0 / A)
    if policy is None:
        from .planning import task_policy

        return np.asarray(task_policy(task).pi, dtype=float)
    if callable(getattr(policy, "policy", None)):  # a policy source (rmtk.ptp.exact): its policy on the task
        policy = policy.policy(task)
    pi = np.asarray(getattr(policy, "pi", policy), dtype=float)
    if pi.shape != (S, n, A):
        raise ModelError(f"policy must have shape (states, nodes, actions) = ({S}, {n}, {A}), got {pi.shape}")
    if not np.all(np.isfinite(pi)) or pi.min() < 0:
        raise ModelError("policy has a negative or non-finite probability")
    sums = pi.sum(axis=2)
    bad = np.argwhere(np.abs(sums - 1.0) > POLICY_TOL)
    if bad.size:
        s, u = bad[0]
        raise ModelError(
            f"policy probabilities at state {task.mdp.states[s]!r}, node {machine.nodes[u]!r} "
            f"sum to {sums[s, u]:.12g}, expected 1 (±{POLICY_TOL:g})"
        )
    return pi


def check_sizes(n, horizon, chunk, doing: str = "simulate", rewards: bool = False) -> tuple[int, int, int]:
    """``(n, horizon, chunk)`` as ints, each at least 1 (a :class:`DataError` otherwise); with
    ``rewards``, a horizon of at least 2: a step's reward is paid on the next state's label,
    so a trajectory of one step records no known reward (data that loading would refuse)."""
    n, horizon, chunk = int(n), int(horizon), int(chunk)
    if n < 1:
        raise DataError(f"cannot {doing} {n} trajectories")
    if horizon < 1:
        raise DataError(f"horizon must be at least 1, got {horizon}")
    if rewards and horizon < 2:
        raise DataError(
            "rewards need a horizon of at least 2: a step's reward is paid on the next state's label, "
            "which a trajectory of 1 step never draws (its reward would be unknown)"
        )
    if chunk < 1:
        raise DataError(f"chunk must be at least 1, got {chunk}")
    return n, horizon, chunk


class _Sampler:
    """The task's samplers (start, policy, successor) and the machine's node table, built
    once and used for any number of trajectories."""

    def __init__(self, task: Task, pi: np.ndarray):
        mdp = task.mdp
        S, A, n_nodes = mdp.n_states, mdp.n_actions, task.require_machine(SIMULATING).n_nodes
        T = mdp.kernel
        self.start = RowSampler([0, S], mdp.initial)
        self.moves = RowSampler(T.indptr, T.data)
        self.succ = np.asarray(T.indices, dtype=np.intp)
        self.acts = RowSampler(np.arange(0, S * n_nodes * A + 1, A), pi.reshape(-1))
        self.nxt = node_table(task).ravel().astype(np.intp)  # [s·n + u] -> δ_u(u, L(s))
        self.pay = reward_table(task).ravel()  # [s·n + u] -> δ_r(u, L(s))
        self.u_init, self.n_nodes, self.A = task.require_machine(SIMULATING).initial, n_nodes, A

    def draw(
        self, rng: np.random.Generator, n: int, horizon: int, chunk: int, report=lambda done: None, rewards=False
    ) -> Demonstrations:
        """``n`` trajectories from ``rng``, ``2·horizon`` uniforms each, in order (with the
        machine's rewards when ``rewards``; they draw nothing)."""
        states = np.empty((n, horizon), dtype=np.int32)
        actions = np.empty((n, horizon), dtype=np.int32)
        paid = np.full((n, horizon), np.nan) if rewards else None
        n_nodes, A, nxt = self.n_nodes, self.A, self.nxt
        W = 2 * horizon  # uniforms per trajectory: start, then (action, successor) per step
        for lo in range(0, n, chunk):
            hi = min(n, lo + chunk)
            m = hi - lo
            U = np.ascontiguousarray(rng.random((m, W)).T)  # (W, m); row k = k-th draw of each trajectory
            s = self.start.sample(np.zeros(m, dtype=np.intp), U[0])  # positions in the one row = states
            u = nxt[s * n_nodes + self.u_init]
            st = np.empty((horizon, m), dtype=np.int32)
            ac = np.empty((horizon, m), dtype=np.int32)
            rw = np.full((horizon, m), np.nan) if paid is not None else None
            for t in range(horizon):
                r = s * n_nodes + u
                a = self.acts.sample(r, U[2 * t + 1]) - r * A
                st[t] = s
                ac[t] = a
                if t + 1 < horizon:
                    s = self.succ[self.moves.sample(s * A + a, U[2 * t + 2])]
                    if rw is not None:
                        rw[t] = self.pay[s * n_nodes + u]
                    u = nxt[s * n_nodes + u]
            states[lo:hi] = st.T
            actions[lo:hi] = ac.T
            if paid is not None:
                paid[lo:hi] = rw.T
            del U, st, ac
            report(hi)
        return Demonstrations(states, actions, np.full(n, horizon, dtype=np.int64), rewards=paid)


def simulate(
    task: Task,
    n: int,
    horizon: int,
    *,
    seed,
    policy=None,
    epsilon: float = 0.0,
    rewards: bool = False,
    chunk: int = 100_000,
    progress: Progress | None = None,
) -> Demonstrations:
    """Sample ``n`` trajectories of exactly ``horizon`` steps of a product policy on ``task``.

    Args:
        task: the MDP (start distribution ``μ0``, kernel ``P``, labels) and the machine whose
            node the policy conditions on.
        n: number of trajectories (≥ 1).
        horizon: steps per trajectory (≥ 1); step ``t`` records ``(s_t, a_t)``.
        seed: seed of ``numpy.random.default_rng`` (an int, a ``SeedSequence``, or ``None``
            for fresh entropy). The data depend only on the seed, the task, the policy and
            ``horizon`` — not on ``chunk`` — and trajectory ``i`` is the same for every
            ``n > i``.
        policy: ``(S, n_nodes, A)`` array, ``policy[s, u, a] = π(a | s, u)`` (each row sums to
            1), or an object with such a ``.pi`` (a :class:`~rmtk.product.planning.SoftPolicy`).
            Default: the task's soft-optimal policy ``task_policy(task).pi``. Any stochastic
            per-node policy is allowed (the paper's sub-optimal experts); ``"uniform"`` is
            every action with probability ``1/A``.
        epsilon: the policy mixed with the uniform one, ``(1 − ε)·π + ε/A`` (exploration).
        rewards: record the machine's reward of every step (:mod:`rmtk.data.rewards`; the
            last step's is NaN: its next state is not drawn). The draws are the same.
        chunk: trajectories simulated at once (working memory ≈ ``chunk · horizon · 40`` bytes on
            top of the result); it only trades memory for speed.
        progress: a :class:`~rmtk.progress.Progress`; its ``count`` hook hears after each chunk.

    Returns:
        :class:`~rmtk.data.Demonstrations` with ``(n, horizon)`` int32 states and actions.
    """
    n, horizon, chunk = check_sizes(n, horizon, chunk, rewards=rewards)
    progress = as_progress(progress)
    sampler = _Sampler(task, _policy_table(task, policy, epsilon))
    return sampler.draw(
        np.random.default_rng(seed),
        n,
        horizon,
        chunk,
        lambda done: progress.count(done, n, "trajectories simulated"),
        rewards=rewards,
    )


# ---------------------------------------------------------------------- sharded simulation
@attrs.frozen
class Written:
    """What writing shards produced (added up by the reduce)."""

    trajectories: int = 0
    steps: int = 0
    bytes: int = 0
    files: int = 0

    def __add__(self, other: Written) -> Written:
        return Written(*(a + b for a, b in zip(attrs.astuple(self), attrs.astuple(other))))


@attrs.frozen
class SimulationJob:
    """Simulates one :class:`~rmtk.engines.shards.Shard`: trajectories ``start .. stop − 1`` of
    ``simulate(task, n, horizon, seed=seed)`` exactly — the run's random stream jumped ahead
    to the shard (:meth:`~rmtk.engines.shards.Shard.jumped_rng`), so the data do not depend on the
    shard size nor on the number of workers. Returns the :class:`Demonstrations`, or, with
    ``directory`` and ``schema``, writes them as Parquet partition ``shard.index`` there and
    returns a :class:`Written`. With ``label_noise`` (a
    :class:`~rmtk.label_noise.model.LabelNoise`), the labels a detector records are drawn too, from
    ``(noise_seed, shard.index)``. Picklable: it is what an engine sends to its workers."""

    task: Task
    policy: np.ndarray = attrs.field(eq=False, repr=False)
    horizon: int
    chunk: int = 100_000
    schema: object = None
    directory: str | None = None
    rewards: bool = False
    label_noise: object = None
    noise_seed: int = 0

    def __call__(self, shard: Shard):
        sampler = _Sampler(self.task, self.policy)
        rng = shard.jumped_rng(2 * self.horizon)
        demos = sampler.draw(rng, shard.size, self.horizon, self.chunk, rewards=self.rewards)
        if self.label_noise is not None:
            from ..label_noise.evidence import recorded_by

            demos = recorded_by(self.label_noise, demos, self.task.mdp, seed=(self.noise_seed, shard.index))
        if self.directory is None:
            return demos
        from ..data.parquet_io import partition_file

        size = self.schema.write(
            demos, partition_file(self.directory, shard.index), index=shard.index, first_id=shard.start
        )
        return Written(demos.n_trajectories, demos.n_steps, size, 1)


def simulate_sharded(
    task: Task,
    n: int,
    horizon: int,
    *,
    seed,
    shard_size: int = 100_000,
    policy=None,
    epsilon: float = 0.0,
    rewards: bool = False,
    engine="local",
    progress: Progress | None = None,
) -> Demonstrations:
    """:func:`simulate` cut into shards of ``shard_size`` trajectories run on ``engine``
    (``"local"``, ``"dask"`` or an engine object, :mod:`rmtk.engines.local`), gathered here:
    the same trajectories as ``simulate(task, n, horizon, seed=seed)`` (with the same
    ``policy``, ``epsilon`` and ``rewards``)."""
    n, horizon, shard_size = check_sizes(n, horizon, shard_size, rewards=rewards)
    pi = _policy_table(task, policy, epsilon)
    job = SimulationJob(task, pi, horizon, chunk=min(shard_size, 100_000), rewards=rewards)
    parts = as_engine(engine).map_reduce(
        job,
        plan_shards(n, shard_size, seed),
        sizes=lambda sh: sh.size,
        total=n,
        what="trajectories simulated",
        progress=progress,
    )
    if len(parts) == 1:
        return parts[0]
    return Demonstrations(
        np.concatenate([d.states for d in parts]),
        np.concatenate([d.actions for d in parts]),
        np.concatenate([d.lengths for d in parts]),
        rewards=np.concatenate([d.rewards for d in parts]) if rewards else None,
    )


def simulate_dataset(
    task: Task,
    n: int,
    horizon: int,
    path,
    *,
    seed,
    partition_size: int | None = None,
    policy=None,
    epsilon: float = 0.0,
    rewards: bool = False,
    labels: bool = False,
    label_noise=None,
    noise_seed: int = 0,
    overwrite: bool = False,
    engine="local",
    progress: Progress | None = None,
) -> Written:
    """Simulate straight to a Parquet dataset directory (:mod:`rmtk.data.parquet_io`): one
    shard of ``partition_size`` trajectories per file, written by whichever worker simulated
    it, so no process ever holds more than one partition (10⁷ trajectories need no more
    memory than 10⁵). The data are those of ``simulate(task, n, horizon, seed=seed)`` (with
    the same ``policy``, ``epsilon`` and ``rewards``: a reward column). With ``label_noise``
    (a :class:`~rmtk.label_noise.model.LabelNoise`) the label column holds what a detector
    records, each partition's draws from ``(noise_seed, partition index)``. The
    dataset appears at ``path`` only once every partition is written; an existing one is
    replaced only with ``overwrite``. With a Dask cluster, ``path`` must be on a filesystem
    the workers share."""
    from ..data.parquet_io import PARTITION_SIZE, PartitionSchema, Staging

    partition_size = PARTITION_SIZE if partition_size is None else partition_size
    n, horizon, partition_size = check_sizes(n, horizon, partition_size, rewards=rewards)
    schema = PartitionSchema.of(
        task.mdp,
        horizon=horizon,
        n_trajectories=n,
        partition_size=partition_size,
        labels=labels,
        rewards=rewards,
        recorded=label_noise is not None,
    )
    pi = _policy_table(task, policy, epsilon)
    with Staging(path, overwrite) as staging:
        job = SimulationJob(
            task,
            pi,
            horizon,
            chunk=min(partition_size, 100_000),
            schema=schema,
            directory=str(staging.tmp),
            rewards=rewards,
            label_noise=label_noise,
            noise_seed=int(noise_seed),
        )
        written = as_engine(engine).map_reduce(
            job,
            plan_shards(n, partition_size, seed),
            reduce=operator.add,
            sizes=lambda sh: sh.size,
            total=n,
            what="trajectories simulated",
            progress=progress,
        )
        staging.commit()
    return written


def rollout_nodes(task: Task, demos: Demonstrations) -> np.ndarray:
    """``(N, T)`` int32: the node ``u_t = δ_u*(u_I, L(s_0)…L(s_t))`` of the task's machine at
    every step of ``demos`` (the node the action ``a_t`` was drawn from), −1 in padding."""
    nxt = node_table(task).ravel().astype(np.intp)
    machine = task.require_machine("the nodes of its machine along the demonstrations")
    n_nodes = machine.n_nodes
    N, T = demos.states.shape
    if N and (demos.states.max() >= task.mdp.n_states):
        raise DataError(f"state index {int(demos.states.max())} outside the MDP's {task.mdp.n_states} states")
    out = np.full((N, T), PAD, dtype=np.int32)
    u = np.full(N, machine.initial, dtype=np.intp)
    for t in range(T):
        live = demos.lengths > t
        s = demos.states[:, t].astype(np.intp)
        u = np.where(live, nxt[np.where(live, s, 0) * n_nodes + u], u)
        out[live, t] = u[live]
    return out
