"""Use a reward machine in RL: :class:`RewardMachineEnv`, the product of a Gymnasium
environment with a machine, and the counterfactual experiences of CRM (Toro Icarte et al.,
reward machines for RL: every transition of the environment is also a transition of the
product from *every* node of the machine).

The machine follows section 2's prefix convention: the label of the reset observation already
moves it (without reward), and a step into an observation labelled ℓ moves node u to
δ_u(u, ℓ) and pays δ_r(u, ℓ). An episode terminates at a *terminal* node: by default the
absorbing nodes whose every transition is a 0-reward self-loop (nothing can happen there any
more), such as the ``terminal`` node of the RM literature's files.

With ``observation="belief"`` the agent sees the labels through a detector that errs
(docs/design/15-label-noise.md): the world's labels still move the world's machine, pay its
rewards and end its episodes, but the observation carries a distribution over the nodes that a
:class:`~rmtk.label_noise.filter.NodeTracker` keeps from the detections (the Bayes filter, or the
naive most likely label), and CRM weighs each letter as the tracker says
(:meth:`RewardMachineEnv.belief_experiences`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import attrs
import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.vector import VectorEnv

from ..errors import DataError, ModelError
from ..machine.model import RewardMachine
from .labels import check_labeler, one_name_hint, quoted

OBSERVATIONS = ("dict", "flat", "belief")
TERMINAL = ("absorbing", "loops")


def check_machine(machine) -> RewardMachine:
    """``machine`` itself if it is a :class:`~rmtk.machine.model.RewardMachine`, else a clear error."""
    if not isinstance(machine, RewardMachine):
        hint = (
            " (a name: load the machine first, e.g. rmtk.dsl.load(path).machines[name])"
            if isinstance(machine, str)
            else ""
        )
        raise ModelError(f"machine must be a RewardMachine, not {machine!r} ({type(machine).__name__}){hint}")
    return machine


def terminal_nodes(machine: RewardMachine, terminal="absorbing") -> np.ndarray:
    """``(n,)`` mask of the terminal nodes: ``"absorbing"`` (every transition a 0-reward
    self-loop), ``"loops"`` (every transition a self-loop), or an iterable of node names or
    indices (empty: none)."""
    loops = (machine.delta_u == np.arange(machine.n_nodes)[:, None]).all(axis=1)
    if isinstance(terminal, str):
        if terminal == "absorbing":
            return loops & (machine.delta_r == 0).all(axis=1)
        if terminal == "loops":
            return loops
    if isinstance(terminal, (str, bytes)) or not isinstance(terminal, Iterable):
        raise ModelError(
            f"terminal must be {' or '.join(map(repr, TERMINAL))}, or a list of node names or indices, not {terminal!r}"
        )
    mask = np.zeros(machine.n_nodes, dtype=bool)
    for node in terminal:
        mask[machine.node_index(node)] = True
    return mask


def product_space(inner: spaces.Space, n_nodes: int, observation: str) -> spaces.Space:
    """The observation space of one copy of the product (see :class:`RewardMachineEnv`)."""
    if observation not in OBSERVATIONS:
        raise ModelError(f"observation must be one of {', '.join(map(repr, OBSERVATIONS))}, not {observation!r}")
    if observation == "dict":
        return spaces.Dict({"obs": inner, "node": spaces.Discrete(n_nodes)})
    if observation == "belief":
        return spaces.Dict({"obs": inner, "belief": spaces.Box(0.0, 1.0, (n_nodes,), dtype=np.float64)})
    if isinstance(inner, spaces.Discrete):
        return spaces.Discrete(int(inner.n) * n_nodes)
    if isinstance(inner, spaces.Box):
        low = np.concatenate([inner.low.ravel(), np.zeros(n_nodes)]).astype(inner.dtype)
        high = np.concatenate([inner.high.ravel(), np.ones(n_nodes)]).astype(inner.dtype)
        return spaces.Box(low, high, dtype=inner.dtype)
    raise ModelError(
        f"observation='flat' needs a Discrete or Box observation space, not {inner}; use observation='dict'"
    )


@attrs.frozen
class Experiences:
    """The product transitions of one environment transition, one per non-terminal node
    ``node[i]``: it moves to ``next_node[i]``, earns ``reward[i]``, and ends the episode
    when ``terminated[i]``."""

    node: np.ndarray
    next_node: np.ndarray
    reward: np.ndarray
    terminated: np.ndarray


@attrs.frozen
class BeliefExperiences:
    """CRM from a detection: one row per non-terminal node ``node[i]`` and letter the tracker
    weighs, moving to ``next_node[i]`` and earning ``reward[i]`` (ending the episode when
    ``terminated[i]``) with probability ``weight[i]``; a node's weights sum to 1."""

    node: np.ndarray
    next_node: np.ndarray
    reward: np.ndarray
    terminated: np.ndarray
    weight: np.ndarray


@attrs.frozen
class CrmTables:
    """What every letter does from every non-terminal node, computed once so that a CRM call
    is a few lookups: ``next_node[k, i]``, ``reward[k, i]`` and ``ends[k, i]`` (the next node
    is terminal) for node ``node[i]`` reading letter ``k``; ``rows[k]`` holds the same as
    Python tuples ``(node, next_node, reward, ends)``."""

    node: np.ndarray
    next_node: np.ndarray
    reward: np.ndarray
    ends: np.ndarray
    rows: tuple = attrs.field(eq=False, repr=False)

    @classmethod
    def of(cls, machine: RewardMachine, terminal: np.ndarray) -> CrmTables:
        node = np.flatnonzero(~terminal)
        nxt = np.ascontiguousarray(machine.delta_u[node].T)
        reward = np.ascontiguousarray(machine.delta_r[node].T, dtype=float)
        ends = terminal[nxt]
        rows = tuple(
            tuple(zip(node.tolist(), nxt[k].tolist(), reward[k].tolist(), ends[k].tolist()))
            for k in range(len(machine.alphabet))
        )
        return cls(node, nxt, reward, ends, rows)


def counterfactual_experiences(
    machine: RewardMachine, label: str, *, terminal="absorbing", env_reward: float = 0.0, env_terminated: bool = False
) -> Experiences:
    """CRM: what reading ``label`` does from every non-terminal node of ``machine``
    (``env_reward`` is added to every reward, ``env_terminated`` ends every experience);
    ``terminal`` as for :func:`terminal_nodes`, or its mask."""
    k = check_machine(machine).letter_index(label)
    end = terminal if isinstance(terminal, np.ndarray) else terminal_nodes(machine, terminal)
    nodes = np.flatnonzero(~end)
    nxt = machine.delta_u[nodes, k]
    return Experiences(nodes, nxt, machine.delta_r[nodes, k] + env_reward, end[nxt] | bool(env_terminated))


class RewardMachineEnv(gymnasium.Wrapper, gymnasium.utils.RecordConstructorArgs):
    """The product of ``env`` with ``machine``: the observation carries the machine node,
    the reward is the machine's for the transition, episodes end at terminal nodes.

    Args:
        env: a Gymnasium environment (for a vector environment use
            :class:`~rmtk.gym.RewardMachineVectorEnv`).
        machine: the reward machine; its alphabet holds every label ``labeler`` returns.
        labeler: ``labeler(obs, info) -> proposition name``.
        observation: ``"dict"`` (``{"obs": …, "node": Discrete(n)}``), ``"flat"``
            (``Discrete(S·n)`` index ``obs·n + node`` for a ``Discrete(S)`` environment, the
            observation with a one-hot node appended for a ``Box``) or ``"belief"``
            (``{"obs": …, "belief": Box(0, 1, (n,))}``: the labels seen through ``detector``).
        env_reward: add the environment's own reward to the machine's.
        terminal: the terminal nodes (see :func:`terminal_nodes`).
        detector: with ``observation="belief"``: a
            :class:`~rmtk.label_noise.filter.Detector`, ``detector(obs, info)`` → the probability of each
            letter of the machine's alphabet (e.g. :class:`~rmtk.gym.belief.SimulatedDetector`).
        tracker: with ``observation="belief"``: the
            :class:`~rmtk.label_noise.filter.NodeTracker` (default the Bayes filter;
            :class:`~rmtk.label_noise.filter.MostLikelyLabel` for the naive use;
            :class:`~rmtk.label_noise.filter.PooledStateLetters` around either to read each
            step's letter from every detection of its state).

    ``info`` gets ``rm_node`` (index), ``rm_label``, ``rm_reward`` (the machine's part) and
    ``env_reward``, ``env_terminated``; with a belief also ``rm_detection`` (the detector's
    probabilities), ``rm_letters`` (the letter probabilities the tracker read: the detection,
    or its state's pooled posterior) and ``rm_belief``: ``rm_node`` and ``rm_label`` are then the world's, which an
    agent under noise does not see. The constructor's arguments are recorded, so
    ``gymnasium.make(env.spec)`` rebuilds the product of a ``gymnasium.make`` environment.
    """

    def __init__(
        self,
        env: gymnasium.Env,
        machine: RewardMachine,
        labeler: Callable,
        *,
        observation: str = "dict",
        env_reward: bool = False,
        terminal="absorbing",
        detector=None,
        tracker=None,
    ):
        if isinstance(env, VectorEnv):
            raise ModelError(
                "RewardMachineEnv wraps one environment; for a vector environment use "
                "RewardMachineVectorEnv(envs, machine, labeler) (rmtk.gym), which also gives batched CRM"
            )
        gymnasium.utils.RecordConstructorArgs.__init__(
            self,
            machine=machine,
            labeler=labeler,
            observation=observation,
            env_reward=env_reward,
            terminal=terminal,
            detector=detector,
            tracker=tracker,
        )
        super().__init__(env)
        self.machine, self.labeler, self.mode = check_machine(machine), labeler, observation
        check_labeler(labeler)
        self.observation_space = product_space(env.observation_space, machine.n_nodes, observation)
        self.add_env_reward = bool(env_reward)
        self.terminal = terminal_nodes(machine, terminal)
        self.tables = CrmTables.of(machine, self.terminal)
        self._letters = {p: i for i, p in enumerate(machine.alphabet)}
        inner = env.observation_space
        tabular = observation == "flat" and isinstance(inner, spaces.Discrete)
        self._flat_n = machine.n_nodes if tabular else 0
        self._flat_start = int(inner.start) if isinstance(inner, spaces.Discrete) else 0
        # Python copies of the machine's tables: a step reads single entries
        self._next, self._reward = machine.delta_u.tolist(), machine.delta_r.astype(float).tolist()
        self._terminal = self.terminal.tolist()
        self.node: int | None = None
        self.episode, self._steps = -1, 0
        self._obs: object = None
        self._last: tuple | None = None
        self.detector, self.tracker, self.belief = _belief_strategies(machine, observation, detector, tracker)

    # ------------------------------------------------------------------ encoding
    def encode(self, obs, node: int):
        """The product observation of an environment observation and a node."""
        inner = self.env.observation_space
        if self.mode == "dict":
            return {"obs": obs, "node": int(node)}
        if self.mode == "belief":
            belief = np.zeros(self.machine.n_nodes)
            belief[int(node)] = 1.0
            return {"obs": obs, "belief": belief}
        if isinstance(inner, spaces.Discrete):
            return int(obs - inner.start) * self.machine.n_nodes + int(node)
        onehot = np.zeros(self.machine.n_nodes, dtype=inner.dtype)
        onehot[node] = 1
        return np.concatenate([np.asarray(obs, dtype=inner.dtype).ravel(), onehot])

    def decode(self, obs):
        """``(environment observation, node)`` of a product observation."""
        inner = self.env.observation_space
        if self.mode == "dict":
            return obs["obs"], int(obs["node"])
        if self.mode == "belief":
            return obs["obs"], int(np.argmax(obs["belief"]))
        if isinstance(inner, spaces.Discrete):
            s, u = divmod(int(obs), self.machine.n_nodes)
            return s + int(inner.start), u
        assert isinstance(inner, spaces.Box), "a flat observation wraps a Discrete or a Box (product_space)"
        size = int(np.prod(inner.shape))
        return np.asarray(obs[:size]).reshape(inner.shape), int(np.argmax(obs[size:]))

    def _letter(self, obs, info) -> tuple[str, int]:
        label = self.labeler(obs, info)
        k = self._letters.get(label) if isinstance(label, str) else None
        if k is None:
            where = f"episode {self.episode}, " + (f"step {self._steps}" if self._steps else "reset")
            raise DataError(
                f"{where}: the labeler returned {label!r}, which is not a letter of machine "
                f"{self.machine.name!r} ({quoted(self.machine.alphabet)}){one_name_hint(self.machine.alphabet, label)}"
            )
        return label, k

    # ------------------------------------------------------------------ gymnasium
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        self.episode, self._steps, self._last = self.episode + 1, 0, None
        label, k = self._letter(obs, info)
        self.node = int(self.machine.delta_u[self.machine.initial, k])
        if self.tracker is not None:
            self.detector.reset(seed)
            q = self.detector(obs, info)
            read = self._read(obs, q)
            self.belief = self.tracker.start(read)
            self._obs = {"obs": obs, "belief": self.belief}
            return self._obs, dict(
                info, rm_node=self.node, rm_label=label, rm_detection=q, rm_letters=read, rm_belief=self.belief
            )
        self._obs = self.encode(obs, self.node)
        return self._obs, dict(info, rm_node=self.node, rm_label=label)

    def step(self, action):
        if self.node is None:
            raise ModelError("call reset() before step()")
        obs, env_reward, env_terminated, truncated, info = self.env.step(action)
        self._steps += 1
        label, k = self._letter(obs, info)
        u = self.node
        self.node = v = self._next[u][k]
        rm_reward = self._reward[u][k]
        env_reward, env_terminated = float(env_reward), bool(env_terminated)
        reward = rm_reward + env_reward if self.add_env_reward else rm_reward
        info = dict(
            info, rm_node=v, rm_label=label, rm_reward=rm_reward, env_reward=env_reward, env_terminated=env_terminated
        )
        before = self._obs
        if self.tracker is not None:
            q = self.detector(obs, info)
            read = self._read(obs, q)
            self.belief = self.tracker.step(self.belief, read)
            info.update(rm_detection=q, rm_letters=read, rm_belief=self.belief, rm_ended=bool(self._terminal[v]))
            self._obs = {"obs": obs, "belief": self.belief}
        else:
            self._obs = int(obs - self._flat_start) * self._flat_n + v if self._flat_n else self.encode(obs, v)
        self._last = (before, action, self._obs, info)
        return self._obs, reward, env_terminated or self._terminal[v], truncated, info

    def _read(self, obs, q) -> np.ndarray:
        """The letter probabilities the tracker reads at a step (its capability, with a default:
        the detection itself)."""
        from ..label_noise.filter import TrackerCapabilities

        return TrackerCapabilities.of(self.tracker).pool(obs, q)

    def counterfactual_experiences(self, obs, action, next_obs, info) -> list[tuple]:
        """CRM: ``(obs, action, reward, next_obs, terminated)`` for every non-terminal node,
        from one step: ``obs`` and ``next_obs`` are product observations (their node is
        ignored), ``info`` is what ``step`` returned. With a belief the letter is not known:
        :meth:`belief_experiences`."""
        if self.tracker is not None:
            raise ModelError(
                "with observation='belief' the step's letter is not known: its counterfactual experiences are "
                "belief_experiences(info), each letter weighed by the tracker"
            )
        rows = self.tables.rows[self._letters[info["rm_label"]]]
        extra = info.get("env_reward", 0.0) if self.add_env_reward else 0.0
        ended = info.get("env_terminated", False)
        n = self._flat_n
        if n:  # the tabular case, kept to integer arithmetic on precomputed rows
            base, base2 = obs - obs % n, next_obs - next_obs % n
            if not extra and not ended:
                return [(base + u, action, r, base2 + v, t) for u, v, r, t in rows]
            return [(base + u, action, r + extra, base2 + v, t or ended) for u, v, r, t in rows]
        before, after = self.decode(obs)[0], self.decode(next_obs)[0]
        return [(self.encode(before, u), action, r + extra, self.encode(after, v), t or ended) for u, v, r, t in rows]

    def belief_experiences(self, info) -> BeliefExperiences:
        """CRM from a detection (``observation="belief"``): for every non-terminal node and every
        letter the tracker weighs (:meth:`~rmtk.label_noise.filter.NodeTracker.letters` of
        ``info["rm_letters"]``: the detection itself for the Bayes filter, the most likely
        letter for the naive use, the state's pooled posterior with ``PooledStateLetters``),
        the node it leads to, its reward and whether it ends, with that weight. A learner that
        takes the weighted mean of the rows' targets per node makes the expected CRM update under
        the detection (:class:`~rmtk.gym.belief.BeliefQLearning`).
        A step that ends the world's episode (its machine at a terminal node, or the environment
        terminating) ends every row: the agent sees the episode end, and nothing follows it there."""
        if self.tracker is None:
            raise ModelError("belief_experiences needs observation='belief' (a detector and a tracker)")
        w = np.asarray(self.tracker.letters(read_letters(info)), dtype=np.float64)
        ks = np.flatnonzero(w > 0)
        tab = self.tables
        extra = info.get("env_reward", 0.0) if self.add_env_reward else 0.0
        ended = bool(info.get("env_terminated", False)) or bool(info.get("rm_ended", False))
        L = len(tab.node)
        return BeliefExperiences(
            np.tile(tab.node, len(ks)),
            tab.next_node[ks].ravel(),
            tab.reward[ks].ravel() + extra,
            tab.ends[ks].ravel() | ended,
            np.repeat(w[ks], L),
        )

    def last_experiences(self) -> list[tuple]:
        """CRM of the last ``step`` (empty after a reset): the route to CRM when the
        wrapper is applied inside a vector environment, ``envs.call("last_experiences")``."""
        return [] if self._last is None else self.counterfactual_experiences(*self._last)


def read_letters(info) -> np.ndarray:
    """The letter probabilities the tracker read at a step of a belief product: ``rm_letters``
    (the detection, or what the tracker pooled from it), else the detection ``rm_detection``."""
    return info["rm_letters"] if "rm_letters" in info else info["rm_detection"]


def _belief_strategies(machine: RewardMachine, observation: str, detector, tracker):
    """The detector, tracker and first belief of ``observation="belief"`` (``None`` otherwise),
    checked: a detector is needed there and nowhere else."""
    if observation != "belief":
        if detector is not None or tracker is not None:
            raise ModelError("detector and tracker apply with observation='belief'")
        return None, None, None
    from ..label_noise.filter import BayesFilter, Detector, NodeTracker

    if not isinstance(detector, Detector):
        raise ModelError(
            "observation='belief' needs a detector: detector(obs, info) -> the probability of each letter of the "
            "machine's alphabet, with reset(seed) (e.g. rmtk.gym.belief.SimulatedDetector)"
        )
    tracker = BayesFilter(machine) if tracker is None else tracker
    if not isinstance(tracker, NodeTracker):
        raise ModelError(f"tracker must be a NodeTracker (start, step, letters), not {type(tracker).__name__}")
    return detector, tracker, np.full(machine.n_nodes, 1.0 / machine.n_nodes)


__all__ = [
    "BeliefExperiences",
    "CrmTables",
    "Experiences",
    "RewardMachineEnv",
    "check_machine",
    "counterfactual_experiences",
    "product_space",
    "terminal_nodes",
]
