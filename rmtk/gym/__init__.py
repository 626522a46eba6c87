"""rmtk and Gymnasium (the optional extra ``pip install '.[gym]'``; docs/gym.md).

* **Record** what a policy does in any Gymnasium environment, straight into empirical prefix
  tree counts: :func:`collect` with a labeler (:class:`StateLabels`, :class:`InfoLabel`, any
  ``labeler(obs, info) -> str``) and a discretiser (:class:`Identity`, :class:`Bins`, any
  ``obs -> int``); it returns a :class:`Recording`, which
  :class:`~rmtk.ptp.empirical.EmpiricalPTP` takes as it is.
* **Model** a tabular environment: :func:`tabular_mdp` (its ``P`` as a labeled MDP) or
  :func:`estimate_mdp` (a maximum-likelihood model of recorded steps).
* **Use** a machine in RL: :class:`RewardMachineEnv` (the product environment),
  :class:`RewardMachineVectorEnv` (the product of a vector environment, batched CRM),
  :func:`counterfactual_experiences` (CRM), :class:`QLearning`; through a detector that errs,
  ``RewardMachineEnv(observation="belief", detector=...)`` with :class:`SimulatedDetector` and
  :class:`BeliefQLearning` (docs/design/15-label-noise.md).
* **Ask** an expert acting in an environment (active learning, :class:`rmtk.active.loop.ActiveLearner`):
  :class:`GymExpert` (restores or replays a history, any single environment whose observations
  are the states of a labeled MDP), :class:`ReplayExpert` (at the histories of episodes recorded
  with :func:`rmtk.gym.experts.record`); the reacher's ``ReacherExpert`` is in
  :mod:`rmtk.gym.reacher` (it needs MuJoCo).
* **Environments**: any labeled MDP (:class:`MdpEnv`, :class:`MdpVectorEnv`) and the Office
  World (:func:`office_env`, ``gymnasium.make("rmtk/OfficeWorld-v0")``).

The core package never imports Gymnasium; this one does.
"""

from ..label_noise.filter import Detector
from ..ptp.exact import shortest_path_table
from .belief import BeliefQLearning, SimulatedDetector
from .collect import SHARD, CollectJob, collect, collect_shard
from .discretize import Bins, Identity
from .experts import GymExpert, ReplayExpert
from .labels import Alphabet, InfoLabel, StateLabels
from .mdp_env import OFFICE_ID, MdpEnv, MdpVectorEnv, office_env, office_vector_env, register
from .policies import Context, NodePolicy
from .qlearning import Episode, QLearning, Training, greedy_episode
from .recording import Recording
from .tabular import Estimate, estimate_mdp, tabular_mdp
from .vector_product import RewardMachineVectorEnv, Transitions
from .wrapper import CrmTables, Experiences, RewardMachineEnv, counterfactual_experiences, terminal_nodes

register()

__all__ = [
    "collect",
    "collect_shard",
    "CollectJob",
    "SHARD",
    "Recording",
    "tabular_mdp",
    "estimate_mdp",
    "Estimate",
    "Identity",
    "Bins",
    "StateLabels",
    "InfoLabel",
    "Alphabet",
    "Context",
    "NodePolicy",
    "shortest_path_table",
    "RewardMachineEnv",
    "Experiences",
    "counterfactual_experiences",
    "terminal_nodes",
    "CrmTables",
    "RewardMachineVectorEnv",
    "Transitions",
    "QLearning",
    "Training",
    "Episode",
    "greedy_episode",
    "MdpEnv",
    "MdpVectorEnv",
    "office_env",
    "office_vector_env",
    "OFFICE_ID",
    "register",
    "GymExpert",
    "ReplayExpert",
    "BeliefQLearning",
    "Detector",
    "SimulatedDetector",
]
