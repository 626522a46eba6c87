"""The reacher's trained agent (paper section 6.3): a PPO policy (Stable-Baselines3) on the
product of the arm with the true machine b → y → r, trained by
``benchmarks/train_reacher_agent.py`` and shipped with rmtk (``rmtk/envs/data/reacher_ppo.zip``,
with a JSON file beside it recording the command, seed, steps, success rate and CPU minutes).

The agent observes Reacher-v5's 10 numbers at the *centre of the arm's cell*
(:func:`rmtk.gym.reacher.cell_observations`) with the machine's node one-hot, so it is a
function of (cell, node), as the paper samples its policy at cell centres:

* :func:`reacher_agent_policy`: the agent as a :func:`~rmtk.gym.collect` policy (a
  :class:`~rmtk.gym.NodePolicy` whose node the true machine drives), also usable by
  :class:`~rmtk.gym.reacher.ReacherExpert`;
* :func:`reacher_agent_expert`: an :class:`~rmtk.rl.AgentExpert` that answers a question at a
  (word, cell) history with the network's exact softmax (one forward pass, no draw).

Both take the agent's file (default: the shipped one). A policy holds the file's path, not the
network, when pickled (a Dask worker loads the file itself).
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces

from ..envs.reacher import N_ACTIONS, PROPOSITIONS, true_machine
from ..errors import ModelError, RmtkError
from ..gym.discretize import Bins
from ..gym.policies import NodePolicy
from ..gym.reacher import cell_observations, reacher_bins
from ..mdp.space import Space
from .agents import PredictAgent
from .encoding import ProductEncoding
from .expert import AgentExpert
from .sb3 import _require, sb3_agent

#: The shipped agent's file name in ``rmtk/envs/data``.
SHIPPED = "reacher_ppo.zip"


def shipped_agent() -> Path:
    """The path of the agent shipped with rmtk."""
    return Path(str(resources.files("rmtk.envs").joinpath("data").joinpath(SHIPPED)))


def agent_record(path=None) -> dict:
    """The JSON record beside an agent's file (command, seed, steps, success rates, CPU
    minutes, versions); a clear error when it is missing or not JSON."""
    record = Path(path or shipped_agent()).with_suffix(".json")
    try:
        return json.loads(record.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RmtkError(f"{record}: no record beside the agent's file") from None
    except json.JSONDecodeError as err:
        raise RmtkError(f"{record}: not JSON ({err.msg} at line {err.lineno}, column {err.colno})") from None


def load_agent(path=None):
    """The PPO model in ``path`` (default :func:`shipped_agent`), on the CPU; a clear error
    when the file is missing, is not a Stable-Baselines3 PPO file, or its observations are not
    the reacher's product (10 numbers with 4 nodes) or its actions not the 25 torque pairs."""
    sb3 = _require()
    path = Path(path or shipped_agent())
    if not path.is_file():
        raise RmtkError(f"{path}: no such agent file (train one with benchmarks/train_reacher_agent.py)")
    try:
        model = sb3.PPO.load(path, device="cpu")
    except Exception as err:  # SB3 raises what the zip or torch raise
        raise RmtkError(f"{path}: not a Stable-Baselines3 PPO file ({type(err).__name__}: {err})") from None
    check_reacher_agent(model, str(path))
    return model


def check_reacher_agent(model, what: str = "the agent") -> None:
    """A clear error unless ``model`` observes the reacher's product and acts with its 25 actions."""
    inner = spaces.Box(-np.inf, np.inf, (10,), np.float64)
    ProductEncoding.of(model.observation_space, true_machine().n_nodes, inner, what=what)
    if model.action_space != spaces.Discrete(N_ACTIONS):
        raise ModelError(f"{what}'s action space is {model.action_space}, not the reacher's Discrete({N_ACTIONS})")


class AgentAtCells:
    """``choose(states, nodes, rng)`` of the agent in ``path``: its draw at the cells' centre
    observations with the nodes; loaded on first use, pickled as its path and bins."""

    def __init__(self, path=None, bins: Bins | None = None):
        self.path, self.bins = Path(path or shipped_agent()), bins or reacher_bins()

    def __getstate__(self):
        return {"path": self.path, "bins": self.bins}

    def __setstate__(self, state):
        self.__dict__.update(state)

    @functools.cached_property
    def agent(self) -> Any:
        return sb3_agent(load_agent(self.path))

    @functools.cached_property
    def encoding(self) -> ProductEncoding:
        return ProductEncoding.of(self.agent.observation_space, true_machine().n_nodes)

    def observe(self, states) -> np.ndarray:
        return cell_observations(states, self.bins)

    def __call__(self, states, nodes, rng):
        return self.agent.sample(self.encoding.encode(self.observe(states), nodes), rng)


def reacher_agent_policy(path=None, bins: Bins | None = None) -> NodePolicy:
    """The agent in ``path`` (default: the shipped one) as a :func:`~rmtk.gym.collect` policy:
    a function of (cell of ``bins``, node of the true machine ``u0 -b-> u1 -y-> u2 -r-> u3``),
    drawing from its softmax. The file is checked here."""
    choice = AgentAtCells(path, bins)
    choice.agent  # noqa: B018 - load and check now, not at the first step
    return NodePolicy(true_machine(), choice)


def reacher_agent_softmax(states, nodes, path=None, bins: Bins | None = None, chunk: int = 100_000) -> np.ndarray:
    """``(N, 25)``: the agent's exact softmax at the centres of cells ``states`` with its node
    ``nodes`` (what :func:`reacher_agent_expert` answers at a history ending there in that
    node), ``chunk`` observations per forward pass."""
    choice = AgentAtCells(path, bins)
    states, nodes = np.asarray(states, dtype=np.int64), np.asarray(nodes, dtype=np.int64)
    out = np.empty((len(states), N_ACTIONS))
    for i in range(0, len(states), chunk):
        obs = choice.encoding.encode(choice.observe(states[i : i + chunk]), nodes[i : i + chunk])
        out[i : i + chunk] = choice.agent.probabilities(obs)
    return out


def reacher_agent_expert(path=None, bins: Bins | None = None, seed: int = 0, *, exact: bool = True) -> AgentExpert:
    """The agent in ``path`` (default: the shipped one) as an expert on the reacher's cells:
    its softmax at the history's cell centre and the node the true machine reaches on the
    history's word (questions at histories; no extensions). ``exact``: answers are the
    softmax itself; else actions drawn from it (a :class:`~rmtk.rl.agents.PredictAgent`, one
    forward pass per question), which is what active learning on top of recorded counts asks
    (:class:`~rmtk.active.recorded.AtRecordedTriples`: recorded counts and exact answers do
    not mix)."""
    choice = AgentAtCells(path, bins)
    space = Space(choice.bins.n_states, N_ACTIONS, PROPOSITIONS, name="reacher")
    agent = choice.agent
    if not exact:
        agent = PredictAgent(agent.sample, agent.observation_space, agent.action_space)
    return AgentExpert(agent, space, true_machine(), observe=choice.observe, seed=seed)


__all__ = [
    "SHIPPED",
    "AgentAtCells",
    "agent_record",
    "check_reacher_agent",
    "load_agent",
    "reacher_agent_expert",
    "reacher_agent_policy",
    "reacher_agent_softmax",
    "shipped_agent",
]
