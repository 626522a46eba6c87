"""Learning from what the world pays (docs/design/rewards-evidence.md): the
:class:`~rmtk.learner.pipeline.Learner`'s path from reward traces alone, the rewards of machines
learned with reward evidence, and which evidence decided what.

Three ways, one learner (rmtk/learner/pipeline.py): ``Learner(ptp=None, rewards=TraceRewards(data))`` learns from the
rewards alone (JIRP's setting); ``Learner(ptp=...)`` from the expert's policy alone (the
paper's); ``Learner(ptp=..., rewards=...)`` from both, the reward clauses and the negative
examples in one formula on one trie. :func:`compare_evidence` runs each evidence alone beside
both and says, node pair by node pair of the answer, which evidence separates it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs
import numpy as np

from ..learner.result import LearnResult
from ..ptp.tree import Trie
from .evidence import decode_rewards, noise_interval
from .rewards import RewardTraces

if TYPE_CHECKING:
    from ..learner.pipeline import Learner


def with_rewards(result: LearnResult, traces: RewardTraces) -> LearnResult:
    """``result`` with each machine's rewards read from ``traces`` (free ones 0), the
    decoded rewards and the noise level under the first machine (traces within a tolerance:
    their :class:`~rmtk.traces.tolerance.NoiseWidth`)."""
    decoded = tuple(decode_rewards(s.delta_u, traces) for s in result.solutions)
    machines = tuple(m.with_rewards(d.delta_r) for m, d in zip(result.machines, decoded))
    noise = traces.tolerance  # within a tolerance: the spread around the outputs, whatever the machine
    if noise is None and decoded and decoded[0].steps:
        noise = noise_interval(decoded[0].disagreements, decoded[0].steps)
    return attrs.evolve(result, machines=machines, decoded=decoded, rewards=traces, noise=noise)


def merged_pairs(answer: np.ndarray, other: np.ndarray, trie: Trie) -> set[tuple[int, int]]:
    """The node pairs ``(a, b)``, ``a < b``, of the machine ``answer`` that the machine
    ``other`` merges on the words of ``trie``: some word ending in ``a`` and some ending in
    ``b`` end in one node of ``other``."""
    a_node, o_node = trie.run(answer, 0), trie.run(other, 0)
    out: set[tuple[int, int]] = set()
    for u in np.unique(o_node):
        nodes = np.unique(a_node[o_node == u]).tolist()
        out.update((x, y) for i, x in enumerate(nodes) for y in nodes[i + 1 :])
    return out


@attrs.frozen
class PairVerdict:
    """One node pair of the answer: in how many survivors of each evidence alone it is merged,
    and in how many of the other survivors of both together (``merged_by_both`` of
    ``both_survivors``, the answer among them): a pair some survivor of both merges is split by
    no evidence, only by the answer's choice among them."""

    pair: tuple[int, int]
    merged_by_rewards: int
    merged_by_policy: int
    rewards_survivors: int
    policy_survivors: int
    merged_by_both: int = 0
    both_survivors: int = 1

    def say(self, names) -> str:
        a, b = names[self.pair[0]], names[self.pair[1]]
        rew = _alone("rewards alone", "merge", "split", self.merged_by_rewards, self.rewards_survivors)
        pol = _alone("the policy alone", "merges", "splits", self.merged_by_policy, self.policy_survivors)
        if self.merged_by_both:
            who = (
                f"split by no evidence: both together merge them in {self.merged_by_both} of the "
                f"{self.both_survivors} machines listed"
            )
        elif self.merged_by_rewards == 0 and self.merged_by_policy == 0:
            who = "split by either evidence alone"
        elif self.merged_by_rewards == 0:
            who = "split by the rewards"
        elif self.merged_by_policy == 0:
            who = "split by the policy"
        else:
            who = "split only by both together"
        return f"{a} and {b}: {who} ({rew}; {pol})"


def _alone(who: str, merge: str, split: str, merged: int, survivors: int) -> str:
    """``rewards alone merge them`` / ``... split them`` / ``... merge them in 1 of 2 machines``."""
    if merged == survivors:
        return f"{who} {merge} them"
    return f"{who} {split} them" if merged == 0 else f"{who} {merge} them in {merged} of {survivors} machines"


@attrs.frozen
class EvidenceComparison:
    """The answer from both evidences beside each alone: the three results and, per node
    pair of the first machine of ``both``, which evidence separates it."""

    both: LearnResult
    rewards: LearnResult
    policy: LearnResult
    pairs: tuple[PairVerdict, ...]

    def lines(self) -> list[str]:
        def size(r: LearnResult) -> str:
            more = "" if r.search.complete else "+"
            n, m = r.n_nodes, len(r.machines)
            return f"{n} node{'' if n == 1 else 's'}, {m}{more} machine{'' if m == 1 and not more else 's'}"

        out = [
            f"both: {size(self.both)}; rewards alone: {size(self.rewards)}; policy alone: {size(self.policy)}",
        ]
        if self.both.machines:
            names = self.both.machines[0].nodes
            out += [v.say(names) for v in self.pairs]
        return out


def compare_evidence(learner: Learner, target) -> EvidenceComparison:
    """Learn from both evidences of ``learner`` and from each alone (same limits), and compare:
    a node pair of the answer (the first machine from both) is *merged* by an evidence alone
    in each of its survivors that sends a word ending in one and a word ending in the other
    (among the words that evidence holds) to one node, and by both together in each other
    survivor of both that does so (then no evidence splits it); computed, not inferred."""
    if learner.ptp is None or learner.rewards is None:
        raise ValueError("compare_evidence needs a learner with both a ptp strategy and reward evidence")
    both = learner.fit(target)
    alone_r = attrs.evolve(learner, ptp=None).fit(target)
    alone_p = attrs.evolve(learner, rewards=None, irl=None).fit(target)
    pairs: list[PairVerdict] = []
    if both.machines:
        answer = both.solutions[0].delta_u
        r_trie, p_trie, b_trie = (_trie(r) for r in (alone_r, alone_p, both))
        r_merged = [merged_pairs(answer, s.delta_u, r_trie) for s in alone_r.solutions]
        p_merged = [merged_pairs(answer, s.delta_u, p_trie) for s in alone_p.solutions]
        b_merged = [merged_pairs(answer, s.delta_u, b_trie) for s in both.solutions[1:]]
        n = len(answer)
        for a in range(n):
            for b in range(a + 1, n):
                pairs.append(
                    PairVerdict(
                        (a, b),
                        sum((a, b) in m for m in r_merged),
                        sum((a, b) in m for m in p_merged),
                        len(r_merged),
                        len(p_merged),
                        sum((a, b) in m for m in b_merged),
                        len(both.solutions),
                    )
                )
    return EvidenceComparison(both, alone_r, alone_p, tuple(pairs))


def _trie(result: LearnResult) -> Trie:
    """The words a result was searched on: its reward traces' (which extend a prefix tree's), or its tree's."""
    return result.rewards.trie if isinstance(result.rewards, RewardTraces) else result.tree.trie
