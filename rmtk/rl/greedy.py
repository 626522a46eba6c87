"""How well a Q-learning agent does its task, measured exactly on a deterministic labeled MDP:
:class:`GreedyRollouts` plays the greedy policy of a Q-table (one row per observation of the
agent: product states ``state·n + node``, or states alone) from every start state at once,
and counts the episodes that earn the *true* machine's reward; :func:`q_table` reads a DQN's
Q-values at every observation in one forward pass; :func:`hide_node` is the product with its
node hidden (the agent trained with no machine: the reward the machine's, the observation
the environment's).

The world and the greedy policy are deterministic, so one episode per start state is the
policy's whole behaviour: the success rate is exact, with no sampling.
"""

from __future__ import annotations

import attrs
import numpy as np

from ..errors import ModelError
from ..gym.wrapper import terminal_nodes
from ..machine.model import RewardMachine
from ..mdp.model import LabeledMDP


@attrs.frozen
class GreedyRollouts:
    """Greedy episodes of ``horizon`` steps from every start state of a deterministic labeled
    MDP (``succ[s, a]``), the agent's node driven by ``machine``, success judged by ``truth``
    (it pays a positive reward). ``node``: the agent observes ``state·n + node`` (else the
    state alone). Ties among Q-values go to the first action, as in ``argmax`` (Stable-Baselines3's
    ``predict``)."""

    machine: RewardMachine
    truth: RewardMachine
    horizon: int
    node: bool
    succ: np.ndarray = attrs.field(eq=False, repr=False)
    letters: np.ndarray = attrs.field(eq=False, repr=False)  # (2, S): each state's letter in machine, truth
    starts: np.ndarray = attrs.field(eq=False, repr=False)

    @classmethod
    def of(
        cls, mdp: LabeledMDP, machine: RewardMachine, truth: RewardMachine, horizon: int, *, node: bool = True
    ) -> GreedyRollouts:
        S, A = mdp.n_states, mdp.n_actions
        kernel = mdp.kernel.toarray().reshape(S, A, S)
        if not np.all(kernel.max(axis=2) == 1.0):
            raise ModelError(f"greedy rollouts need a deterministic MDP; {mdp.name!r} has random moves")
        props = [mdp.propositions[i] for i in mdp.labels]
        letters = np.array([[m.letter_index(p) for p in props] for m in (machine, truth)])
        starts = np.flatnonzero(np.asarray(mdp.initial) > 0)
        return cls(machine, truth, int(horizon), bool(node), kernel.argmax(axis=2), letters, starts)

    def rate(self, q: np.ndarray) -> float:
        """Share of the start states whose greedy episode under ``q`` earns the truth's reward."""
        m, t = self.machine, self.truth
        n = m.n_nodes if self.node else 1
        q = np.asarray(q)
        if q.shape != (len(self.succ) * n, self.succ.shape[1]):
            raise ModelError(f"expected Q-values of shape {(len(self.succ) * n, self.succ.shape[1])}, got {q.shape}")
        ends = terminal_nodes(m)
        s = self.starts
        u = m.delta_u[m.initial, self.letters[0, s]]
        v = t.delta_u[t.initial, self.letters[1, s]]
        won = np.zeros(len(s), dtype=bool)
        live = ~ends[u]
        act = q.argmax(axis=1)
        for _ in range(self.horizon):
            s = np.where(live, self.succ[s, act[s * n + u if self.node else s]], s)
            k, kt = self.letters[0, s], self.letters[1, s]
            won |= live & (t.delta_r[v, kt] > 0)
            u, v = np.where(live, m.delta_u[u, k], u), np.where(live, t.delta_u[v, kt], v)
            live &= ~ends[u] & ~won
        return float(won.mean())


def q_table(model) -> np.ndarray:
    """A DQN's Q-values at every observation of its ``Discrete`` observation space (one
    forward pass), as float64."""
    import torch

    n = int(model.observation_space.n)
    model.policy.set_training_mode(False)
    with torch.no_grad():
        return model.q_net(torch.arange(n)).cpu().numpy().astype(float)


def hide_node(env):
    """``env`` (a :class:`~rmtk.gym.RewardMachineEnv` with ``observation="flat"`` over a
    ``Discrete`` environment) observed without its node: the agent sees the state, the
    machine only pays the reward."""
    import gymnasium
    from gymnasium import spaces

    n = env.get_wrapper_attr("machine").n_nodes
    if env.get_wrapper_attr("mode") != "flat" or not isinstance(env.observation_space, spaces.Discrete):
        raise ModelError("hide_node needs RewardMachineEnv(..., observation='flat') over a Discrete environment")

    class NodeHidden(gymnasium.ObservationWrapper):
        """The product with its node hidden: the agent sees the environment's state."""

        def __init__(self, env):
            super().__init__(env)
            self.observation_space = spaces.Discrete(int(env.observation_space.n) // n)

        def observation(self, observation):
            return int(observation) // n

    return NodeHidden(env)


__all__ = ["GreedyRollouts", "hide_node", "q_table"]
