"""A labeled MDP as a Gymnasium environment (:class:`MdpEnv`) and as a natively batched
vector environment (:class:`MdpVectorEnv`, numpy for thousands of copies at once), and the
Office World (:func:`office_env`, ids ``rmtk/OfficeWorld-v0``).

Observations are state indices (``Discrete(|S|)``), actions are action indices; the reward
is always 0 and episodes never terminate (a task is a reward machine over the labels: wrap
the environment in :class:`~rmtk.gym.RewardMachineEnv`); ``max_steps`` truncates them.
``info["label"]`` is the proposition of the state.
"""

from __future__ import annotations

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from ..errors import ModelError
from ..mdp.model import LabeledMDP


class _Sampler:
    """Samples initial states and successors of a labeled MDP for arrays of copies."""

    def __init__(self, mdp: LabeledMDP):
        kernel = mdp.kernel
        self.A = mdp.n_actions
        self.indptr, self.indices = kernel.indptr, kernel.indices
        self.cum = np.cumsum(kernel.data)
        self.before = np.concatenate([[0.0], self.cum])[kernel.indptr[:-1]]
        self.initial = np.cumsum(mdp.initial)

    def reset(self, rng: np.random.Generator, n: int) -> np.ndarray:
        u = rng.random(n) * self.initial[-1]
        return np.minimum(np.searchsorted(self.initial, u, side="right"), len(self.initial) - 1)

    def one(self, state: int, action: int, rng: np.random.Generator) -> int:
        """The successor of one copy (a deterministic row draws nothing)."""
        row = state * self.A + action
        lo, hi = self.indptr[row], self.indptr[row + 1]
        if hi - lo == 1:
            return int(self.indices[lo])
        return int(self.step(np.array([state]), np.array([action]), rng)[0])

    def step(self, states: np.ndarray, actions: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        rows = states * self.A + actions
        lo, hi = self.indptr[rows], self.indptr[rows + 1]
        total = self.cum[hi - 1] - self.before[rows]
        pos = np.searchsorted(self.cum, self.before[rows] + rng.random(len(rows)) * total, side="right")
        return self.indices[np.clip(pos, lo, hi - 1)]


def _max_steps(value) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1):
        raise ModelError(f"max_steps must be a whole number of at least 1 or None, got {value!r}")
    return None if value is None else int(value)


class MdpEnv(gymnasium.Env):
    """One copy of a labeled MDP: ``reset`` draws from its initial distribution, ``step``
    from its transitions (``self.np_random``, seeded by ``reset(seed=...)``)."""

    metadata = {"render_modes": []}

    def __init__(self, mdp: LabeledMDP, max_steps: int | None = None):
        if not isinstance(mdp, LabeledMDP):
            raise ModelError(f"MdpEnv needs a LabeledMDP, not {type(mdp).__name__}")
        self.mdp, self.max_steps = mdp, _max_steps(max_steps)
        self.observation_space = spaces.Discrete(mdp.n_states)
        self.action_space = spaces.Discrete(mdp.n_actions)
        self._sampler = _Sampler(mdp)
        self._state, self._t = None, 0

    def _info(self) -> dict:
        return {"label": self.mdp.propositions[self.mdp.labels[self._state]]}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self._state, self._t = int(self._sampler.reset(self.np_random, 1)[0]), 0
        return self._state, self._info()

    def step(self, action):
        if self._state is None:
            raise ModelError("call reset() before step()")
        if not self.action_space.contains(action):  # what the space accepts: int, numpy integer, 0-d array
            raise ModelError(f"action {action!r} is not in {self.action_space}")
        self._state = self._sampler.one(self._state, int(action), self.np_random)
        self._t += 1
        truncated = self.max_steps is not None and self._t >= self.max_steps
        return self._state, 0.0, False, truncated, self._info()


class MdpVectorEnv(VectorEnv):
    """``num_envs`` copies of a labeled MDP stepped together with numpy (autoreset on the
    next step, Gymnasium's default); ``info["label"]`` is an array of proposition names."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(self, mdp: LabeledMDP, num_envs: int, max_steps: int | None = None):
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ModelError(f"num_envs must be a whole number of at least 1, got {num_envs!r}")
        self.mdp, self.max_steps, self.num_envs = mdp, _max_steps(max_steps), int(num_envs)
        self.single_observation_space = spaces.Discrete(mdp.n_states)
        self.single_action_space = spaces.Discrete(mdp.n_actions)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._sampler = _Sampler(mdp)
        self._names = np.array(mdp.propositions, dtype=object)
        self._rng = np.random.default_rng()
        self._states = np.zeros(self.num_envs, dtype=np.int64)
        self._t = np.zeros(self.num_envs, dtype=np.int64)
        self._ended = np.zeros(self.num_envs, dtype=bool)

    def _info(self) -> dict:
        return {"label": self._names[self.mdp.labels[self._states]]}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        mask = (
            np.ones(self.num_envs, dtype=bool)
            if not options or "reset_mask" not in options
            else np.asarray(options["reset_mask"], dtype=bool).reshape(self.num_envs)
        )  # reset these copies only
        self._states = np.where(mask, self._sampler.reset(self._rng, self.num_envs), self._states)
        self._t[mask] = 0
        self._ended[mask] = False
        return self._states.copy(), self._info()

    def step(self, actions):
        actions = np.asarray(actions, dtype=np.int64).reshape(self.num_envs)
        if actions.min() < 0 or actions.max() >= self.mdp.n_actions:
            raise ModelError(f"actions must lie in 0..{self.mdp.n_actions - 1}")
        again = self._ended
        moved = self._sampler.step(self._states, actions, self._rng)
        fresh = self._sampler.reset(self._rng, self.num_envs)
        self._states = np.where(again, fresh, moved)
        self._t = np.where(again, 0, self._t + 1)
        truncated = np.zeros(self.num_envs, dtype=bool) if self.max_steps is None else (self._t >= self.max_steps)
        self._ended = truncated.copy()
        zeros = np.zeros(self.num_envs, dtype=bool)
        return self._states.copy(), np.zeros(self.num_envs), zeros, truncated, self._info()


# ---------------------------------------------------------------------- the Office World
def office_mdp(**generator) -> LabeledMDP:
    """The Office World as a labeled MDP (:func:`rmtk.envs.office.officeworld` arguments)."""
    from ..envs.office import officeworld

    return officeworld(**generator)


def office_env(max_steps: int | None = 100, **generator) -> MdpEnv:
    """The Office World (literature start cell, deterministic moves) as a Gymnasium
    environment; ``generator`` goes to :func:`rmtk.envs.office.officeworld`."""
    return MdpEnv(office_mdp(**generator), max_steps)


def office_vector_env(num_envs: int = 1, max_steps: int | None = 100, **generator) -> MdpVectorEnv:
    """``num_envs`` copies of the Office World, stepped together."""
    return MdpVectorEnv(office_mdp(**generator), num_envs, max_steps)


OFFICE_ID = "rmtk/OfficeWorld-v0"


def register() -> None:
    """Make ``gymnasium.make("rmtk/OfficeWorld-v0")`` (and ``make_vec``) build the Office World."""
    if OFFICE_ID not in gymnasium.registry:
        gymnasium.register(
            OFFICE_ID,
            entry_point="rmtk.gym.mdp_env:office_env",
            vector_entry_point="rmtk.gym.mdp_env:office_vector_env",
        )
