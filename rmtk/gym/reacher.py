"""The reacher of the paper (section 6.3, appendix C.2) as a Gymnasium vector environment,
with its labeler, discretiser and scripted expert for :func:`~rmtk.gym.collect`.

:class:`ReacherVectorEnv` steps thousands of Reacher-v5 arms at once (MuJoCo's batched
rollout: one C call per step for the whole batch, the same physics as ``env.step``), with 25
discrete actions (torque levels ``TORQUES`` per joint) and Reacher-v5's observation. The
task lives outside the environment: :func:`reacher_labels` says which target disc the
fingertip is in, :func:`reacher_bins` is the 36² × 112² grid over joint angles and
velocities (a :class:`~rmtk.gym.Bins`), and :func:`reacher_expert` is the scripted expert of
``rmtk.envs.reacher.Expert`` as a policy that follows the true machine. Needs
``gymnasium[mujoco]``; MuJoCo is imported when an environment is made.

:class:`ReacherExpert` is the same scripted expert as an :class:`~rmtk.active.experts.Expert`
that active learning asks (docs/design/12-active-learning.md, section 12.1). A history (compressed label word,
cell) is realised by *restoring* arms (MuJoCo's state, as ``set_state`` does) at points drawn
uniformly inside the cell's bins whose fingertip lies in the word's last label, and the
expert's node is driven along the word, never reset at its end. The restored observations are
discretised and labeled again and compared with the history: a point that does not land in the
cell or carry the label is a :class:`~rmtk.active.experts.QueryError`. A point inside the cell
realises the history because the expert is a function of (cell, node): it sees only the cell's
centre, as the paper samples its PPO policy at cell centres. Each action drawn is one
environment step.

The reacher at its three layers: the arm's model and its true machine in
``rmtk/envs/reacher.py``, the Gymnasium environment and its expert here, the paper's experiment
in ``rmtk/experiments/reacher.py``.
"""

from __future__ import annotations

import functools
import math

import attrs
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from ..active.experts import Draws, ExpertCapabilities, Observations, QueryError, compress
from ..envs.reacher import (
    ELBOW_LIMIT,
    HORIZON,
    INITIAL_VELOCITY,
    LINKS,
    N_ACTIONS,
    PROPOSITIONS,
    TORQUES,
    Expert,
    label,
    true_machine,
)
from ..errors import RmtkError
from ..mdp.space import Space
from ..validators import positive_int, whole
from .discretize import Bins
from .policies import NodePolicy


def joint_state(obs) -> np.ndarray:
    """``(N, 4)`` joint angles (wrapped to [−π, π)) and velocities of Reacher-v5 observations
    ``[cos q, sin q, target, q̇, fingertip − target]``."""
    obs = np.asarray(obs, dtype=float)
    angles = np.mod(np.arctan2(obs[:, 2:4], obs[:, 0:2]) + math.pi, 2 * math.pi) - math.pi
    return np.concatenate([angles, obs[:, 6:8]], axis=1)


def reacher_bins(angle_bins: int = 36, velocity_bins: int = 112, velocity_limit: float = 14.0) -> Bins:
    """Joint angles in ``angle_bins`` bins of [−π, π), velocities clipped to
    ±``velocity_limit`` in ``velocity_bins`` bins (a fast arm lands in the edge bins, and is
    counted as clipped): 36² · 112² = 16,257,024 cells by default."""
    lim = velocity_limit
    return Bins(
        (-math.pi, -math.pi, -lim, -lim),
        (math.pi, math.pi, lim, lim),
        (angle_bins, angle_bins, velocity_bins, velocity_bins),
        clip=True,
        features=joint_state,
    )


def observations(joints) -> np.ndarray:
    """``(N, 10)`` Reacher-v5 observations of ``(N, 4)`` joint angles and velocities, as
    :class:`ReacherVectorEnv` makes them (target body at the origin)."""
    joints = np.asarray(joints, dtype=float).reshape(-1, 4)
    q, v = joints[:, :2], joints[:, 2:]
    obs = np.concatenate([np.cos(q), np.sin(q), np.zeros_like(q), v, np.zeros_like(q)], axis=1)
    obs[:, 8:10] = ReacherLabels.tips(obs)
    return obs


def cell_observations(states, bins: Bins | None = None) -> np.ndarray:
    """``(N, 10)`` Reacher-v5 observations at the centres of cells ``states`` of ``bins``
    (default :func:`reacher_bins`): what an agent that sees only its cell observes (the
    ``observe`` of :class:`~rmtk.rl.AgentExpert` and of the shipped agent, section 6.3's
    policy sampled at cell centres)."""
    return observations((bins or reacher_bins()).centres(np.asarray(states, dtype=np.int64).reshape(-1)))


@attrs.frozen
class ReacherLabels:
    """The target disc (b, y, r) the fingertip is in, else ``i``: from the observation's
    cosines and sines (forward kinematics), a whole batch at once."""

    propositions: tuple[str, ...] = PROPOSITIONS

    @staticmethod
    def tips(obs) -> np.ndarray:
        obs = np.asarray(obs, dtype=float)
        c1, c2, s1, s2 = obs[:, 0], obs[:, 1], obs[:, 2], obs[:, 3]
        l1, l2 = LINKS
        return np.stack([l1 * c1 + l2 * (c1 * c2 - s1 * s2), l1 * s1 + l2 * (s1 * c2 + c1 * s2)], axis=1)

    def batch(self, obs, infos=None) -> np.ndarray:
        return label(self.tips(obs))

    def __call__(self, obs, info=None) -> str:
        return self.propositions[int(self.batch(np.asarray(obs)[None])[0])]


def reacher_labels() -> ReacherLabels:
    """The labeler of the reacher: which target disc the fingertip is in."""
    return ReacherLabels()


@attrs.frozen
class _Greedy:
    """The expert's choice at cell centres: ε-greedy on :meth:`Expert.greedy_from`."""

    expert: Expert
    bins: Bins

    def __call__(self, states, nodes, rng):
        centre = self.bins.centres(states)
        greedy = self.expert.greedy_from(centre[:, :2], centre[:, 2:], nodes)
        explore = rng.random(len(greedy)) < self.expert.epsilon
        return np.where(explore, rng.integers(0, N_ACTIONS, size=len(greedy)), greedy)


def reacher_expert(expert: Expert | None = None, bins: Bins | None = None) -> NodePolicy:
    """The scripted expert as a :func:`~rmtk.gym.collect` policy: a function of (cell
    centre, node of the true machine ``u0 -b-> u1 -y-> u2 -r-> u3``), ε-greedy."""
    return NodePolicy(true_machine(), _Greedy(expert or Expert(), bins or reacher_bins()))


def _idle_stages(model) -> int:
    """MuJoCo's disable flags for the stages that compute nothing in Reacher-v5 (each
    checked on the model): no geom pair can collide (contype & conaffinity are 0), no
    equality constraint, no joint friction loss, no sensor, gravity along the hinge axes and
    across the slide axes (no generalised force), and controls within their range (the
    torque levels). Skipping them leaves every state bitwise the same and makes a step about
    1.5 times faster (tests/test_reacher.py compares)."""
    import mujoco

    D = mujoco.mjtDisableBit
    flags = 0
    geoms = model.geom_contype[:, None] & model.geom_conaffinity[None, :]
    if not geoms.any():
        flags |= int(D.mjDSBL_CONTACT) | int(D.mjDSBL_MIDPHASE) | int(D.mjDSBL_FILTERPARENT) | int(D.mjDSBL_NATIVECCD)
    if model.neq == 0:
        flags |= int(D.mjDSBL_EQUALITY)
    if not np.any(model.dof_frictionloss):
        flags |= int(D.mjDSBL_FRICTIONLOSS)
    if model.nsensor == 0:
        flags |= int(D.mjDSBL_SENSOR)
    g = np.asarray(model.opt.gravity) / max(np.linalg.norm(model.opt.gravity), 1e-300)
    hinge, slide = int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)
    along = np.abs(model.jnt_axis @ g)
    if (
        np.all((model.jnt_type != hinge) | (along > 1 - 1e-12))
        and np.all((model.jnt_type != slide) | (along < 1e-12))
        and np.all(np.isin(model.jnt_type, (hinge, slide)))
        and np.allclose(model.body_quat[:, 1:3], 0)
    ):
        flags |= int(D.mjDSBL_GRAVITY)
    lo, hi = model.actuator_ctrlrange[:, 0], model.actuator_ctrlrange[:, 1]
    if np.all(lo <= TORQUES.min()) and np.all(hi >= TORQUES.max()):
        flags |= int(D.mjDSBL_CLAMPCTRL)
    return flags


#: Integrators of :class:`ReacherVectorEnv`: Reacher-v5's (RK4), or Euler — about 2.5 times
#: faster, a different (cruder) physics whose trajectories part from RK4's within a second.
INTEGRATORS = ("rk4", "euler")


class ReacherVectorEnv(VectorEnv):
    """``num_envs`` Reacher-v5 arms with 25 discrete actions, stepped together.

    Initial state: shoulder angle uniform in [−π, π], elbow uniform in its range
    [−3, 3] rad, both joint velocities uniform in [−5, 5] rad/s. Episodes last ``horizon``
    steps of 0.02 s (truncated; autoreset on the next step); the reward is 0 (the task is a
    reward machine over the labels). The model's target body stays at the origin: it has no
    contacts and does not move the arm. MuJoCo skips the stages that compute nothing here
    (:func:`_idle_stages`); ``integrator="euler"`` trades Reacher-v5's RK4 for speed.
    """

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(self, num_envs: int = 2000, horizon: int = HORIZON, integrator: str = "rk4"):
        import gymnasium
        import mujoco
        from mujoco import rollout

        made = gymnasium.make("Reacher-v5")
        try:
            self.model, self.frame_skip = made.unwrapped.model, int(made.unwrapped.frame_skip)
        finally:
            made.close()
        if integrator not in INTEGRATORS:
            raise ValueError(f"integrator must be one of {', '.join(INTEGRATORS)}, not {integrator!r}")
        self.model.opt.disableflags |= _idle_stages(self.model)
        if integrator == "euler":
            self.model.opt.integrator = int(mujoco.mjtIntegrator.mjINT_EULER)
        self._mujoco, self._rollout = mujoco, rollout
        self.data = mujoco.MjData(self.model)
        self.spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
        self.nstate = mujoco.mj_stateSize(self.model, self.spec)  # time, qpos (4), qvel (4), ...
        self.num_envs, self.horizon = int(num_envs), int(horizon)
        self.single_observation_space = spaces.Box(-np.inf, np.inf, (10,), np.float64)
        self.single_action_space = spaces.Discrete(N_ACTIONS)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._template = np.zeros(self.nstate)
        mujoco.mj_getState(self.model, self.data, self._template, self.spec)
        self._rng = np.random.default_rng()
        self._state = np.zeros((self.num_envs, self.nstate))
        self._t = np.zeros(self.num_envs, dtype=np.int64)
        self._ended = np.zeros(self.num_envs, dtype=bool)
        self._out = np.empty((self.num_envs, self.frame_skip, self.nstate))
        self._control = np.empty((self.num_envs, self.frame_skip, 2))

    def _initial(self, n: int) -> np.ndarray:
        state = np.tile(self._template, (n, 1))
        state[:, 0] = 0.0
        state[:, 1] = self._rng.uniform(-math.pi, math.pi, n)
        state[:, 2] = self._rng.uniform(-ELBOW_LIMIT, ELBOW_LIMIT, n)
        state[:, 3:5] = 0.0
        state[:, 5:7] = self._rng.uniform(-INITIAL_VELOCITY, INITIAL_VELOCITY, (n, 2))
        state[:, 7:9] = 0.0
        return state

    def _obs(self) -> np.ndarray:
        q, target, v = self._state[:, 1:3], self._state[:, 3:5], self._state[:, 5:7]
        obs = np.concatenate([np.cos(q), np.sin(q), target, v, np.zeros((self.num_envs, 2))], axis=1)
        obs[:, 8:10] = ReacherLabels.tips(obs) - target
        return obs

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self._state = self._initial(self.num_envs)
        self._t[:] = 0
        self._ended[:] = False
        return self._obs(), {}

    def restore(self, joints) -> np.ndarray:
        """Put every arm in the joint state given (``(num_envs, 4)``: angles, velocities), as
        MuJoCo's ``set_state`` does, at the start of an episode; returns the observations."""
        joints = np.asarray(joints, dtype=float)
        if joints.shape != (self.num_envs, 4):
            raise ValueError(f"restore takes ({self.num_envs}, 4) joint angles and velocities, not {joints.shape}")
        self._state = np.tile(self._template, (self.num_envs, 1))
        self._state[:, 0] = 0.0
        self._state[:, 1:3] = joints[:, :2]
        self._state[:, 5:7] = joints[:, 2:]
        self._t[:] = 0
        self._ended[:] = False
        return self._obs()

    def step(self, actions):
        a = np.asarray(actions, dtype=np.int64).reshape(self.num_envs)
        if a.min() < 0 or a.max() >= N_ACTIONS:
            raise ValueError(f"reacher actions lie in 0..{N_ACTIONS - 1}")
        self._control[:] = np.stack([TORQUES[a // 5], TORQUES[a % 5]], axis=-1)[:, None, :]
        self._rollout.rollout(self.model, self.data, self._state, self._control, nstep=self.frame_skip, state=self._out)
        self._state = self._out[:, -1, :].copy()
        self._t += 1
        again = self._ended
        if again.any():  # the copies that ended on the previous step start over
            self._state[again] = self._initial(int(again.sum()))
            self._t[again] = 0
        truncated = self._t >= self.horizon
        self._ended = truncated.copy()
        none = np.zeros(self.num_envs, dtype=bool)
        return self._obs(), np.zeros(self.num_envs), none, truncated, {}


# -- the reacher's expert, asked by active learning ----------------------------------------
def _integrator(instance, attribute, value):
    if value not in INTEGRATORS:
        raise RmtkError(f"integrator: one of {', '.join(INTEGRATORS)}, not {value!r}")


@attrs.define
class ReacherExpert(ExpertCapabilities):
    """See the module docstring. ``policy``: the expert (default the scripted one following
    the true machine); ``bins``: the discretiser of the cells; ``seed``: every answer draws
    fresh numbers from it; ``tries``: rounds of rejection sampling for points carrying the
    label; ``recorded``: data recorded before learning (a count table), or ``None``."""

    bins: Bins = attrs.field(factory=reacher_bins)
    policy: NodePolicy = attrs.field(default=None)
    seed: int = attrs.field(default=0, validator=whole(0))
    integrator: str = attrs.field(default="rk4", validator=_integrator)
    tries: int = attrs.field(default=50, validator=positive_int)
    recorded: object = None
    compressed: bool = attrs.field(default=True, init=False)
    exact: bool = attrs.field(default=False, init=False)
    answers_queries: bool = attrs.field(default=True, init=False)
    _draws: Draws = attrs.field(init=False, repr=False)
    _envs: dict = attrs.field(init=False, factory=dict, repr=False)
    _letters: np.ndarray = attrs.field(init=False, repr=False)

    def __attrs_post_init__(self):
        if self.policy is None:
            self.policy = reacher_expert(bins=self.bins)
        if not isinstance(self.policy, NodePolicy):
            raise RmtkError(f"policy must be a rmtk.gym.NodePolicy, not {type(self.policy).__name__} (ReacherExpert)")
        self._letters = self.policy.letters(PROPOSITIONS)
        self._draws = Draws(self.seed)

    @property
    def mdp(self) -> Space:
        """The arm as learning sees it (cells, actions and propositions; no transition model)."""
        return Space(self.bins.n_states, 25, PROPOSITIONS, name="reacher")

    @functools.cached_property
    def _labels(self) -> ReacherLabels:
        return ReacherLabels()

    def _env(self, m: int) -> ReacherVectorEnv:
        """An environment of ``m`` arms (made once per size: making one loads the MuJoCo model)."""
        if m not in self._envs:
            self._envs[m] = ReacherVectorEnv(m, horizon=HORIZON, integrator=self.integrator)
        return self._envs[m]

    # -- realising a history --------------------------------------------------------------------
    def _check(self, word, state) -> tuple[int, ...]:
        word = tuple(int(k) for k in word)
        S, K = self.bins.n_states, len(PROPOSITIONS)
        if not 0 <= int(state) < S:
            raise QueryError(f"cell {state} is not a cell of the reacher (0..{S - 1})")
        if not word or any(not 0 <= k < K for k in word):
            raise QueryError(f"history {word}: a non-empty word of proposition indices 0..{K - 1} is expected")
        if compress(word) != word:
            raise QueryError(f"history {word}: words are compressed (no letter repeated in a row)")
        return word

    def _node(self, word) -> int:
        return self.policy.node_after(word, PROPOSITIONS)

    def _points(self, rng, state: int, letter: int, m: int) -> np.ndarray:
        """``(m, 4)`` joint states drawn uniformly in the cell whose fingertip carries ``letter``."""
        low, high, n = (np.array(x, dtype=float) for x in (self.bins.low, self.bins.high, self.bins.n))
        width = (high - low) / n
        corner = low + self.bins.bins([state])[0] * width
        out = np.empty((0, 4))
        for _ in range(self.tries):
            x = corner + rng.random((max(4 * m, 64), 4)) * width
            x = x[label(_tips(x[:, :2])) == letter]
            out = np.concatenate([out, x])[:m]
            if len(out) == m:
                return out
        name = PROPOSITIONS[letter]
        raise QueryError(
            f"no point of cell {state} found with label {name!r} in {self.tries} rounds of sampling: "
            "the history cannot be realised there"
        )

    def _at(self, rng, word, state: int, m: int):
        """``m`` arms restored at the history; their environment and observations."""
        env = self._env(m)
        obs = env.restore(self._points(rng, state, word[-1], m))
        cells, _ = self.bins.batch(obs)
        labels = self._labels.batch(obs)
        bad = np.flatnonzero((cells != state) | (labels != word[-1]))
        if len(bad):
            i = int(bad[0])
            raise QueryError(
                f"restoring the arm in cell {state} with label {PROPOSITIONS[word[-1]]!r}: arm {i} was observed in "
                f"cell {int(cells[i])} with label {PROPOSITIONS[int(labels[i])]!r}; the restore does not reproduce "
                "the history"
            )
        return env, cells

    # -- the Expert protocol --------------------------------------------------------------------
    def act(self, word, state, m: int = 100) -> Observations:
        """``m`` actions of the expert after ``word`` in cell ``state``: ``m`` arms restored there
        each take one step (a restore and a step each: 2·``m`` environment steps, ``m`` draws)."""
        word = self._check(word, state)
        rng = self._draws.next()
        env, cells = self._at(rng, word, int(state), int(m))
        actions = np.asarray(self.policy.choose(cells, np.full(int(m), self._node(word)), rng))
        env.step(actions)
        counts = np.bincount(actions, minlength=25).astype(float)
        return Observations((word,), np.array([int(state)]), counts[None, :], False, steps=2 * int(m))

    def act_steps(self, word, state, m: int) -> int:
        """Each of the ``m`` arms restored, then stepped with its action: two environment steps."""
        return 2 * int(m)

    def extend(self, word, state, k: int, m: int, explore: float = 0.0) -> Observations:
        """``m`` arms restored at the history (or reset, ``word=None``) run ``k`` steps each;
        per (word, cell) reached, the actions the expert drew."""
        rng = self._draws.next()
        if word is None:
            env = self._env(int(m))
            obs, _ = env.reset(seed=int(rng.integers(2**31)))
            cells, _ = self.bins.batch(obs)
            labels = self._labels.batch(obs)
            words = [(int(x),) for x in labels]
        else:
            word = self._check(word, state)
            env, cells = self._at(rng, word, int(state), int(m))
            words = [word] * int(m)
        delta, letters = self.policy.machine.delta_u, self._letters
        nodes = np.array([self._node(w) for w in words])
        found: dict = {}
        for t in range(int(k)):
            actions = np.asarray(self.policy.choose(cells, nodes, rng))
            for w, c, a in zip(words, cells.tolist(), actions.tolist()):
                found.setdefault((w, c), np.zeros(25))[a] += 1
            if t + 1 == k:
                break
            moves = actions
            if explore:
                wild = rng.random(len(actions)) < explore
                moves = np.where(wild, rng.integers(0, 25, len(actions)), actions)
            obs = env.step(moves)[0]
            cells, _ = self.bins.batch(obs)
            labels = self._labels.batch(obs)
            words = [w if w[-1] == x else w + (int(x),) for w, x in zip(words, labels.tolist())]
            nodes = delta[nodes, letters[labels]]
        keys = list(found)
        values = np.array([found[key] for key in keys]).reshape(len(keys), 25)
        return Observations(
            tuple(key[0] for key in keys),
            np.array([key[1] for key in keys], np.int64),
            values,
            False,
            steps=int(m) * int(k),
        )


def _tips(angles) -> np.ndarray:
    from ..envs.reacher import fingertip

    return fingertip(angles)
