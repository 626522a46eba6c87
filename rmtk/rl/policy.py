"""An agent on product observations as a :func:`~rmtk.gym.collect` policy: :func:`agent_policy`.

The agent's node is driven by the true machine along the labels collect reads (the prefix
convention of :class:`~rmtk.gym.NodePolicy`: the reset's label already moves it); the agent
sees the environment's own observations with that node, a whole vector environment's batch in
one :meth:`~rmtk.rl.agents.Agent.sample` call, every draw from collect's seeded generator. The
machine and the labeler only drive the agent: the learner sees the labels and the actions.

The policy is also a :class:`~rmtk.gym.NodePolicy` (``choose(states, nodes, rng)``), so the
Gymnasium experts (:class:`~rmtk.gym.GymExpert`, :class:`~rmtk.gym.ReplayExpert`) ask it at a
discretised state, the agent seeing ``observe(states)`` (by default the state index itself).

What is checked before a step is played: the agent observes the product of the environment's
observation space (``env=``, else the states a :class:`~rmtk.gym.StateLabels` labels) with the
machine's nodes; it acts in the environment's ``Discrete`` actions (what collect records); and
at every step, that the observations are the environment's (:meth:`ProductEncoding.encode
<rmtk.rl.encoding.ProductEncoding.encode>`). An exact agent's policy classes are what verdicts
against a task compare with (:meth:`AgentPolicy.expert_classes`; a recording made with this
policy carries them to :class:`~rmtk.ptp.empirical.EmpiricalPTP`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import numpy as np
from gymnasium import spaces

from ..errors import ModelError
from ..gym.labels import StateLabels
from ..gym.policies import Context, NodePolicy, same_machine
from ..gym.wrapper import check_machine
from ..learner.summary import node_count
from ..machine.model import RewardMachine
from .agents import check_agent
from .encoding import ProductEncoding


def state_index(states) -> np.ndarray:
    """The default ``observe``: a state index is the environment's observation (``Discrete``)."""
    return np.asarray(states, dtype=np.int64)


@attrs.frozen
class AgentChoice:
    """``choose(states, nodes, rng)`` of an agent: ``observe(states)`` at ``nodes``, encoded."""

    agent: Any
    encoding: ProductEncoding
    observe: Callable

    def __call__(self, states, nodes, rng):
        return self.agent.sample(self.encoding.encode(self.observe(np.asarray(states)), nodes), rng)


@attrs.define
class AgentPolicy(NodePolicy):
    """See the module docstring; made by :func:`agent_policy`."""

    encoding: ProductEncoding | None = attrs.field(default=None, kw_only=True)

    def expert_classes(self, task) -> np.ndarray | None:
        """``(S, n)`` policy classes of the agent on ``task``'s product (its exact distribution
        at every state, seen through ``observe``, and node, one batched forward pass), when
        the agent is exact and ``task``'s machine is the one driving its node; else ``None``."""
        from ..machine.equivalence import policy_class_table
        from .agents import AgentCapabilities

        agent = self.choose.agent  # type: ignore[attr-defined]
        caps = AgentCapabilities.of(agent)
        if not caps.exact or not same_machine(self.machine, task.machine):
            return None
        S, n = task.mdp.n_states, self.machine.n_nodes
        states, nodes = np.repeat(np.arange(S), n), np.tile(np.arange(n), S)
        p = caps.probabilities(self.choose.encoding.encode(self.choose.observe(states), nodes))  # type: ignore[attr-defined]
        return policy_class_table(p.reshape(S, n, -1))

    def source_name(self) -> str:
        return "the recorded agent"

    def __call__(self, obs, ctx: Context):
        state, live = self.advance(ctx)
        nodes, enc = self.nodes, self.encoding
        assert nodes is not None and enc is not None
        agent = self.choose.agent  # type: ignore[attr-defined]
        vector = np.ndim(ctx.state) > 0
        rows = np.asarray(obs) if vector else np.asarray(obs)[None]
        actions = np.zeros(len(state), dtype=np.int64)
        if live.any():
            take = np.flatnonzero(live)
            drawn = np.asarray(agent.sample(enc.encode(rows[take], nodes[take]), ctx.rng))
            actions = actions.astype(drawn.dtype)
            actions[take] = drawn
        return actions if vector else actions[0]


def check_reads(machine: RewardMachine, propositions, who: str = "the labeler produces") -> None:
    """A clear error unless ``machine`` reads every one of ``propositions`` (the labels that
    drive the agent's node)."""
    missing = [p for p in propositions if p not in machine.alphabet]
    if missing:
        raise ModelError(
            f"{who} {', '.join(map(repr, missing))}, which machine {machine.name!r} does not read "
            f"(its alphabet: {', '.join(map(repr, machine.alphabet))}): the machine cannot drive the agent's node "
            "on these labels; give the machine the agent was trained with and its labeler"
        )


def _product_env(env) -> bool:
    """Whether ``env`` is (or wraps) rmtk's product of an environment with a machine."""
    from ..gym.vector_product import RewardMachineVectorEnv
    from ..gym.wrapper import RewardMachineEnv

    while env is not None:
        if isinstance(env, (RewardMachineEnv, RewardMachineVectorEnv)):
            return True
        env = getattr(env, "env", None)
    return False


def _environment_space(env, labeler):
    """The environment's observation space: ``env``'s (an environment, a vector one, or a
    space), else the states a :class:`~rmtk.gym.StateLabels` labels, else ``None``."""
    if env is not None:
        space = getattr(env, "single_observation_space", None) or getattr(env, "observation_space", env)
        if not isinstance(space, spaces.Space):
            raise ModelError(f"env must be a Gymnasium environment or its observation space, not {env!r}")
        return space
    if isinstance(labeler, StateLabels):
        return spaces.Discrete(len(labeler.labels))
    return None


def _check_actions(agent, env) -> None:
    """A clear error unless the agent acts in ``Discrete`` actions, the environment's when given."""
    space = agent.action_space
    given = getattr(env, "single_action_space", None) or getattr(env, "action_space", None)
    expected = f"the environment's {given}" if given is not None else "Discrete actions"
    if not isinstance(space, spaces.Discrete):
        raise ModelError(
            f"agent_policy: the agent acts in {space}, and collect records {expected}: an agent with continuous "
            "actions is asked through AgentExpert(..., actions=Bins(...)) (its actions binned), or recorded in "
            "an environment wrapped to take its actions"
        )
    if isinstance(given, spaces.Discrete) and (int(space.n), int(space.start)) != (int(given.n), int(given.start)):
        raise ModelError(f"agent_policy: the agent acts in {space}, and the environment in {given}: expected {given}")


def agent_policy(agent, machine: RewardMachine, labeler=None, *, env=None, observe: Callable | None = None):
    """``agent`` (an :class:`~rmtk.rl.agents.Agent`, or a Stable-Baselines3 model) as a
    :func:`~rmtk.gym.collect` policy whose node ``machine`` drives (see the module docstring).

    Args:
        agent: the agent, trained on the product of the environment with ``machine``.
        machine: the machine that drives its node (the true one; the learner never sees it).
        labeler: the labeler collect uses; when it lists its ``propositions``, each must be a
            letter of ``machine`` (checked here).
        env: the environment recorded (or its observation space): the agent's observation
            space must be the product of this environment's with the machine, and its actions
            this environment's. Without it, the environment's space is read off a
            :class:`~rmtk.gym.StateLabels` labeler (its states); an agent observing a
            ``Discrete`` product needs one or the other (the agent's space alone does not say
            how many of its indices are nodes).
        observe: state indices → environment observations, for the Gymnasium experts
            (default: the state index itself).
    """
    from .sb3 import as_agent

    agent = as_agent(agent)
    check_agent(agent)
    check_machine(machine)
    props = getattr(labeler, "propositions", None)
    if props is not None:  # a plain labeler's labels are checked as collect reads them (NodePolicy.letters)
        check_reads(machine, props)
    if _product_env(env):
        raise ModelError(
            "agent_policy: env is already the product of an environment with a machine (a RewardMachineEnv): "
            "give, and record, the bare environment; the policy adds the agent's node itself"
        )
    _check_actions(agent, env)
    inner = _environment_space(env, labeler)
    encoding = ProductEncoding.of(agent.observation_space, machine.n_nodes, inner)
    if inner is None and encoding.mode == "flat" and isinstance(encoding.inner, spaces.Discrete):
        raise ModelError(
            f"agent_policy: the agent observes {agent.observation_space}, the product of {encoding.inner} with "
            f"the machine's {node_count(machine.n_nodes)} only if the environment has {encoding.inner.n} states, and "
            "nothing given says so (an agent trained with another machine observes another split of the same "
            "indices): give env= (the environment recorded, or its observation space) or a StateLabels labeler"
        )
    choice = AgentChoice(agent, encoding, observe or state_index)
    return AgentPolicy(machine, choice, encoding=encoding)


__all__ = ["AgentChoice", "AgentPolicy", "agent_policy", "check_reads", "state_index"]
