"""An agent on product observations as a :func:`~rmtk.gym.collect` policy: :func:`agent_policy`.

The agent's node is driven by the true machine along the labels collect reads (the prefix
convention of :class:`~rmtk.gym.NodePolicy`: the reset's label already moves it); the agent
sees the environment's own observations with that node, a whole vector environment's batch in
one :meth:`~rmtk.rl.agents.Agent.sample` call, every draw from collect's seeded generator. The
machine and the labeler only drive the agent: the learner sees the labels and the actions.

The policy is also a :class:`~rmtk.gym.NodePolicy` (``choose(states, nodes, rng)``), so the
Gymnasium experts (:class:`~rmtk.gym.GymExpert`, :class:`~rmtk.gym.ReplayExpert`) ask it at a
discretised state, the agent seeing ``observe(states)`` (by default the state index itself).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from ..errors import ModelError
from ..gym.policies import Context, NodePolicy
from ..gym.wrapper import check_machine
from ..machine import RewardMachine
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


def agent_policy(agent, machine: RewardMachine, labeler=None, *, env=None, observe: Callable | None = None):
    """``agent`` (an :class:`~rmtk.rl.agents.Agent`, or a Stable-Baselines3 model) as a
    :func:`~rmtk.gym.collect` policy whose node ``machine`` drives (see the module docstring).

    Args:
        agent: the agent, trained on the product of the environment with ``machine``.
        machine: the machine that drives its node (the true one; the learner never sees it).
        labeler: the labeler collect uses; when it lists its ``propositions``, each must be a
            letter of ``machine`` (checked here).
        env: the environment (or its observation space), to check the agent's observation
            space is the product of this environment's with the machine.
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
    inner = getattr(env, "single_observation_space", None) or getattr(env, "observation_space", env)
    encoding = ProductEncoding.of(agent.observation_space, machine.n_nodes, inner)
    choice = AgentChoice(agent, encoding, observe or state_index)
    return AgentPolicy(machine, choice, encoding=encoding)


__all__ = ["AgentChoice", "AgentPolicy", "agent_policy", "check_reads", "state_index"]
