"""Learn the reward machine while a deep RL agent trains (docs/guide/14-online.md): the loop of
JIRP (Xu et al., ICAPS 2020) with a Stable-Baselines3 agent on a user's Gymnasium environment.

* :class:`OnlineLearner` (:mod:`~rmtk.rl.online.learner`): ``OnlineLearner(env, labeler, DQN,
  seed=0).learn(steps)``; its ``.machine``, ``.model``, ``.env``, ``.hypotheses``, ``.final``.
* For a training loop of one's own: :class:`OnlineEnv` (the product with the current hypothesis,
  where counterexamples are found and machines inferred), :func:`online_replay` (an off-policy
  algorithm's counterfactual replay buffer of the current hypothesis) and
  :func:`OnlineMachineCallback` (progress, stops, checkpoints).
* Strategies: :class:`SubgoalExploration` / :class:`AgentExploration` (who acts while the machine
  shows itself), :class:`ExactRewards` / :class:`~rmtk.rl.online.inference.TolerantRewards` / :class:`ReplacedRewards`
  (when the hypothesis is shown wrong, how the next machine is inferred; :class:`BelievedLabels`
  when the labels come through a detector that errs, read by
  :class:`~rmtk.label_noise.online.StateBeliefLabels`),
  :class:`KeepCounterexamples` (which traces are kept), :class:`HardNode` /
  :class:`FilteredBelief` (what the agent sees of the node: the belief a detector's detections
  give, under label noise), :class:`AsRead` / :class:`AsBelieved` (the letters the replay buffer
  replays its steps with: as read, or as the detections believe them now).
* What the run says: :class:`Swap` (the history), :class:`FinalMachine`, and
  :func:`against_truth` when the true machine is known.

Importing this package imports neither torch nor Stable-Baselines3: the buffer, the callback and
the learner's model import them when made.
"""

from .buffer import online_replay, online_replay_buffer
from .callback import OnlineMachineCallback, progress_line
from .env import OnlineEnv
from .exploration import AgentExploration, Exploration, ExplorationCapabilities, SubgoalExploration
from .hypothesis import Hypothesis
from .inference import ExactRewards, Inference, InferenceCapabilities, Inferred, ReplacedRewards, TolerantRewards
from .labels import BelievedLabels
from .learner import OnlineLearner
from .loop import LoopSettings, MarkovianRewardError, NodeBoundError, OnlineLoop, Swap
from .replay import AsBelieved, AsRead, ReplayLetters
from .traces import KeepCounterexamples, Trace, TraceKeeping
from .verdict import FinalMachine, Verdict, against_truth
from .views import FilteredBelief, HardNode, NodeView

__all__ = [
    "AgentExploration",
    "AsBelieved",
    "AsRead",
    "BelievedLabels",
    "ExactRewards",
    "Exploration",
    "ExplorationCapabilities",
    "FilteredBelief",
    "FinalMachine",
    "HardNode",
    "Hypothesis",
    "Inference",
    "InferenceCapabilities",
    "Inferred",
    "KeepCounterexamples",
    "LoopSettings",
    "MarkovianRewardError",
    "NodeView",
    "NodeBoundError",
    "OnlineEnv",
    "OnlineLearner",
    "OnlineLoop",
    "OnlineMachineCallback",
    "ReplacedRewards",
    "ReplayLetters",
    "SubgoalExploration",
    "Swap",
    "TolerantRewards",
    "Trace",
    "TraceKeeping",
    "Verdict",
    "against_truth",
    "online_replay",
    "online_replay_buffer",
    "progress_line",
]
