""":class:`OnlineEnv`: the product of a Gymnasium environment with the online loop's current
hypothesis (docs/guide/14-online.md), the environment an agent trains on while its machine is
learned.

The agent observes the environment's observation with the hypothesis' node in a *slot*: the
product of :class:`~rmtk.gym.RewardMachineEnv` with ``max_nodes`` nodes
(:class:`~rmtk.rl.encoding.ProductEncoding`: ``Discrete(S · max_nodes)`` index
``obs · max_nodes + node``, or a ``Box`` with a one-hot slot of ``max_nodes`` appended), so the
observation space, and the network reading it, stay the same when the hypothesis changes size.
The reward is the hypothesis' (the prefix convention of docs/design/rewards-evidence.md: the
reset observation's label moves it unpaid, a step into an observation labelled ℓ pays
``δ_r(u, ℓ)``); the episode ends when the environment ends it, never at a node of the
hypothesis, so that what the hypothesis got wrong keeps showing.

Each step records the label and the environment's own reward (and, on a ``Discrete`` observation
space, the observation's index: the trace's ``states``); when the episode ends, the trace
goes to the loop (:meth:`~rmtk.rl.online.loop.OnlineLoop.finished`), which may swap in a new
hypothesis before the next reset. ``info`` carries ``rm_node`` (the slot), ``rm_label``,
``rm_letter`` (its index), ``env_reward``, ``env_terminated`` and ``rm_action`` (the action
taken: the exploration walker's in the episodes it leads).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import gymnasium
from gymnasium.vector import VectorEnv

from ...errors import ModelError
from ...gym.labels import Alphabet, check_labeler
from .exploration import AgentExploration, Exploration, ExplorationCapabilities
from .hypothesis import Hypothesis
from .loop import LoopSettings, OnlineLoop, check_letter
from .traces import Trace
from .views import HardNode, NodeView


@runtime_checkable
class KnowsAlphabet(Protocol):
    """A labeler that knows its alphabet (rmtk's :class:`~rmtk.gym.StateLabels` and
    :class:`~rmtk.gym.InfoLabel` do)."""

    propositions: Sequence[str]


def alphabet_of(labeler, propositions) -> Alphabet:
    """The labeler's alphabet: ``propositions`` when given, else the labeler's own."""
    if propositions is None:
        if not isinstance(labeler, KnowsAlphabet):
            raise ModelError(
                "OnlineEnv needs the labeler's alphabet: pass propositions=['a', 'b', ...] (every name the "
                "labeler returns), or a labeler that knows it (rmtk.gym.StateLabels, rmtk.gym.InfoLabel)"
            )
        propositions = labeler.propositions
    return Alphabet(propositions)


class OnlineEnv(gymnasium.Wrapper):
    """The product of ``env`` with the current hypothesis (module docstring).

    Args:
        env: a Gymnasium environment whose reward is what the machine should explain.
        labeler: ``labeler(obs, info) -> proposition name``.
        propositions: the labeler's alphabet (default: the labeler's ``propositions``).
        max_nodes: the node slots, and the bound of every inference.
        observation: ``"flat"`` or ``"dict"`` (as :class:`~rmtk.gym.RewardMachineEnv`).
        exploration: the :class:`~rmtk.rl.online.exploration.Exploration` strategy.
        view: the :class:`~rmtk.rl.online.views.NodeView` strategy, what the agent sees of the
            node (default :class:`~rmtk.rl.online.views.HardNode`).
        settings: the loop's other settings (:class:`~rmtk.rl.online.loop.LoopSettings`; its
            ``max_nodes`` is replaced by this one's).
        seed: the seed of the loop's and the walker's draws.
    """

    def __init__(
        self,
        env: gymnasium.Env,
        labeler: Callable,
        *,
        propositions: Sequence[str] | None = None,
        max_nodes: int = 8,
        observation: str = "flat",
        exploration: Exploration | None = None,
        view: NodeView | None = None,
        settings: LoopSettings | None = None,
        seed: int = 0,
    ):
        if isinstance(env, VectorEnv):
            raise ModelError("OnlineEnv wraps one environment (the loop reads one episode at a time), not a vector")
        super().__init__(env)
        self.labeler = check_labeler(labeler)
        self.alphabet = alphabet_of(labeler, propositions)
        settings = settings or LoopSettings()
        import attrs

        self.loop = OnlineLoop(self.alphabet.propositions, attrs.evolve(settings, max_nodes=max_nodes, seed=seed))
        self.max_nodes, self.mode = int(max_nodes), observation
        self.view = view if view is not None else HardNode()
        if not isinstance(self.view, NodeView):
            raise ModelError(f"view must be a NodeView (HardNode, FilteredBelief), not {type(self.view).__name__}")
        self.view.reads(labeler)
        self.observation_space = self.view.space(env.observation_space, self.max_nodes, observation)
        self.encoding = self.view.encoding(self.observation_space, self.max_nodes, env.observation_space)
        #: the view's state of the current episode (:class:`~rmtk.rl.online.views.NodeView`)
        self.seen: Any = None
        self.exploration = exploration or AgentExploration()
        self.walker = self.exploration.walker(
            env.observation_space, env.action_space, len(self.alphabet.propositions), seed
        )
        self.replaces_actions = bool(ExplorationCapabilities.of(self.exploration).replaces_actions) and (
            self.walker is not None
        )
        self.node: int | None = None
        self.episode, self.steps, self.total_steps = -1, 0, 0
        self._letters: list[int] = []
        self._rewards: list[float] = []
        self._states: list[int] | None = [] if isinstance(env.observation_space, gymnasium.spaces.Discrete) else None
        self._obs: Any = None
        self.led = False

    # ------------------------------------------------------------------ the hypothesis
    @property
    def hypothesis(self) -> Hypothesis:
        return self.loop.hypothesis

    @property
    def machine(self):
        """The current hypothesis (a :class:`~rmtk.machine.model.RewardMachine`)."""
        return self.loop.machine

    def encode(self, obs, node: int):
        """The product observation of one environment observation at ``node`` (and the view's
        state of the episode)."""
        return self.view.encode(self.encoding, obs, node, self.seen)

    def _node_after(self, letters: list[int]) -> int:
        h = self.hypothesis
        u = h.start(letters[0])
        for k in letters[1:]:
            u = int(h.next[u, k])
        return u

    # ------------------------------------------------------------------ gymnasium
    def _letter(self, obs, info) -> int:
        return check_letter(self.alphabet, self.labeler(obs, info), self.episode, self.steps)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        self.episode, self.steps = self.episode + 1, 0
        k = self._letter(obs, info)
        self._letters, self._rewards = [k], []
        if self._states is not None:
            self._states = [int(obs)]
        self.node = self.hypothesis.start(k)
        self.seen = self.view.start(self.hypothesis, k)
        self._obs = obs
        self.led = bool(
            self.walker is not None and self.walker.begin(obs, k, self.node, self.hypothesis, self.loop.exercised)
        )
        label = self.alphabet.propositions[k]
        return self.encode(obs, self.node), dict(info, rm_node=self.node, rm_label=label, rm_letter=k)

    def step(self, action):
        if self.node is None:
            raise ModelError("call reset() before step()")
        if self.led:
            assert self.walker is not None, "an episode is led by the walker"
            action = self.walker.act(self._obs, self._letters[-1], self.node)
        obs, env_reward, terminated, truncated, info = self.env.step(action)
        self.steps += 1
        self.total_steps += 1
        k = self._letter(obs, info)
        u = self.node
        v = int(self.hypothesis.next[u, k])
        reward = float(self.hypothesis.reward[u, k])
        env_reward, terminated, truncated = float(env_reward), bool(terminated), bool(truncated)
        if self.walker is not None:
            self.walker.observe(self._obs, int(action), obs, k, v)
        self._letters.append(k)
        self._rewards.append(env_reward)
        if self._states is not None:
            self._states.append(int(obs))
        self._obs, self.node = obs, v
        self.seen = self.view.step(self.hypothesis, self.seen, k)
        info = dict(
            info,
            rm_node=v,
            rm_label=self.alphabet.propositions[k],
            rm_letter=k,
            rm_reward=reward,
            env_reward=env_reward,
            env_terminated=terminated,
            rm_action=action,
        )
        out = self.encode(obs, v)
        if terminated or truncated:
            trace = Trace(
                self._letters,
                self._rewards,
                self.episode,
                self.total_steps,
                explored=self.led,
                terminated=terminated,
                states=self._states,
            )
            if self.loop.finished(trace) is not None:
                self.node = self._node_after(self._letters)
                self.seen = self.view.swapped(self.hypothesis, self.seen)
        return out, reward, terminated, truncated, info


__all__ = ["KnowsAlphabet", "OnlineEnv", "alphabet_of"]
