"""Reward traces: learning a reward machine from the rewards the world pays.

The other half of the reward-machine literature (JIRP and its noisy-reward successors) learns
from what an environment pays rather than from what an expert does. This package holds that
side, beside the negative examples (:mod:`rmtk.negatives.miners`) that the policy side mines:

- :mod:`rmtk.traces.rewards`: the rewards observed per (label word, next letter), counted from
  demonstrations with a reward column on any engine (:func:`reward_traces`);
- :mod:`rmtk.traces.evidence`: the :class:`RewardEvidence` strategy a :class:`~rmtk.Learner`
  takes (:class:`TraceRewards`), the answer's decoded rewards and the noise estimate;
- :mod:`rmtk.traces.compare`: which evidence (policy, rewards) decided which node pair;
- :mod:`rmtk.traces.verdicts`: whether a machine learned from rewards pays what the true one pays;
- :mod:`rmtk.traces.unexplained`: why no machine pays the recorded rewards (a contradiction, by
  word and step, or the bound);
- :mod:`rmtk.traces.tolerance`: rewards within a tolerance of the machine's outputs
  (:class:`~rmtk.traces.tolerance.TolerantRewards`: continuous noise, the noise level as a :class:`NoiseWidth`);
- :mod:`rmtk.traces.explorers`: explorers that record reward traces (:func:`explore`).

docs/design/rewards-evidence.md gives the method; docs/guide/11-learning-from-rewards.md the use.
"""

from .._lazy import lazy_exports

#: Names imported from their modules on first use: ``import rmtk.traces.evidence`` (what a
#: :class:`~rmtk.Learner` reads) then costs one module, not the package's seven.
_LAZY = {
    "EvidenceComparison": "compare",
    "PairVerdict": "compare",
    "compare_evidence": "compare",
    "DecodedRewards": "evidence",
    "NoiseEstimate": "evidence",
    "RewardEvidence": "evidence",
    "TraceRewards": "evidence",
    "decode_rewards": "evidence",
    "noise_interval": "evidence",
    "ExpertMix": "explorers",
    "Explorer": "explorers",
    "RandomSubgoals": "explorers",
    "end_nodes": "explorers",
    "explore": "explorers",
    "replaced_rewards": "noise",
    "uniform_noise": "noise",
    "RewardTraces": "rewards",
    "reward_traces": "rewards",
    "NoiseWidth": "tolerance",
    "TolerantRewards": "tolerance",
    "fit_tolerance": "tolerance",
}

__getattr__, __dir__ = lazy_exports(__name__, _LAZY)


__all__ = [
    "DecodedRewards",
    "EvidenceComparison",
    "ExpertMix",
    "Explorer",
    "NoiseEstimate",
    "NoiseWidth",
    "PairVerdict",
    "RandomSubgoals",
    "RewardEvidence",
    "RewardTraces",
    "TolerantRewards",
    "TraceRewards",
    "compare_evidence",
    "decode_rewards",
    "end_nodes",
    "explore",
    "fit_tolerance",
    "noise_interval",
    "replaced_rewards",
    "reward_traces",
    "uniform_noise",
]
