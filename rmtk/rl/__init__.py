"""rmtk and deep RL agents (the optional extra ``pip install '.[rl]'`` in rmtk's checkout: Stable-Baselines3,
with torch; docs/guide/12-deep-rl.md).

* **Agents** nobody here wrote, behind one protocol (:class:`Agent`: samples actions at product
  observations; an exact one also gives its distribution): :func:`sb3_agent` adapts a
  Stable-Baselines3 model (DQN's Q-values, PPO/A2C's distribution, continuous actions sampled);
  :class:`ProbabilityAgent`, :class:`QValueAgent`, :class:`PredictAgent` adapt anything else.
* **Learn the machine of an agent**: :func:`agent_policy` (a :func:`~rmtk.gym.collect`
  policy whose node the true machine drives) and :class:`AgentExpert` (an expert for
  :class:`~rmtk.active.loop.ActiveLearner`: exact distributions, one forward pass a question).
* **Train an agent with a machine**: :func:`crm` (counterfactual experiences in an off-policy
  algorithm's replay buffer, the class :func:`~rmtk.rl.crm.counterfactual_replay_buffer`
  makes; from a detector's belief, ``observation="belief"``, the buffer of
  :mod:`rmtk.rl.belief_crm`; acting on the belief as the tabular learner does, QMDP:
  :func:`qmdp_policy` with :func:`qmdp_kwargs`); on-policy
  algorithms (PPO, A2C) train on :class:`~rmtk.gym.RewardMachineEnv` as it is.
* **Learn the machine while the agent trains** (JIRP's loop, :mod:`rmtk.rl.online`):
  :class:`OnlineLearner` on an environment that pays a non-Markovian reward and a labeler; for a
  training loop of one's own, :class:`OnlineEnv`, :func:`online_replay` and
  :func:`OnlineMachineCallback`.
* **Measure it**: :class:`GreedyRollouts` (the exact success rate of a Q-table's greedy policy
  on a deterministic labeled MDP), :func:`q_table` (a DQN's Q-values at every observation),
  :func:`hide_node` (the product without its node: training with no machine).
* **Train quietly**: :func:`no_log_folder` (Stable-Baselines3's logger without the empty folder
  it leaves in the temporary directory at every ``learn``).

Importing this package imports neither torch nor Stable-Baselines3: they are imported when a
model is adapted or a buffer made.
"""

from .agents import Agent, AgentCapabilities, PredictAgent, ProbabilityAgent, QValueAgent, greedy
from .crm import Counterfactuals, counterfactual_replay_buffer, crm
from .encoding import ProductEncoding
from .expert import AgentExpert
from .greedy import GreedyRollouts, hide_node, q_table
from .online import OnlineEnv, OnlineLearner, OnlineMachineCallback, online_replay
from .policy import AgentPolicy, agent_policy
from .qmdp import qmdp_kwargs, qmdp_policy
from .sb3 import as_agent, no_log_folder, sb3_agent

__all__ = [
    "Agent",
    "AgentCapabilities",
    "AgentExpert",
    "AgentPolicy",
    "Counterfactuals",
    "GreedyRollouts",
    "OnlineEnv",
    "OnlineLearner",
    "OnlineMachineCallback",
    "PredictAgent",
    "ProbabilityAgent",
    "ProductEncoding",
    "QValueAgent",
    "agent_policy",
    "as_agent",
    "counterfactual_replay_buffer",
    "crm",
    "greedy",
    "hide_node",
    "no_log_folder",
    "online_replay",
    "q_table",
    "qmdp_kwargs",
    "qmdp_policy",
    "sb3_agent",
]
