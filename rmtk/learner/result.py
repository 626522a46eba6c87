"""What a learner found (:class:`LearnResult`): the machines, the search and what it rests on
(prefix tree, negative examples), the verdicts against a known truth, the rewards, the timings,
and what the data resolve and what would separate the survivors (docs/design/07-verdicts.md,
docs/design/09-beyond-the-paper.md and docs/design/14-sampled-experts.md). The passive
:class:`~rmtk.learner.pipeline.Learner` and the active loop both build it (the active loop wraps it
in rmtk/active/result.py's ``ActiveResult``; the label learner's result is
rmtk/labels/result.py's ``LabelLearnResult``).
"""

from __future__ import annotations

from typing import cast

import attrs
import numpy as np

from ..errors import RmtkError
from ..machine.equivalence import Verdict
from ..machine.model import RewardMachine, isomorphic
from ..mdp.model import LabeledMDP
from ..mdp.space import Space
from ..negatives.miners import NegativePairs, PolicyClasses
from ..ptp.tree import PrefixTree, PrefixTreePolicy
from ..sat.search import SearchResult, Solution
from .summary import MachineSummary, Stop

__all__ = ["LearnResult"]


@attrs.frozen(kw_only=True)
class LearnResult:
    """What :meth:`Learner.fit` found, built by keywords (``LearnResult(machines=...,
    search=..., ...)``): every field is named.

    Attributes:
        machines: the learned machine models, one per solution up to renaming, canonical
            node names ``u0 u1 ...``, alphabet = the MDP's propositions, rewards 0
            (unconstrained transitions are self-loops; see ``solutions``).
        solutions: the SAT solutions (transitions, which are determined, raw counts).
        search: the search outcome (sizes tried, clauses, solver timings, messages; for a
            lazy or every-depth search, ``search.lazy`` has the counterexamples used).
        classes: the policy classes (negative examples) used; for a tree-free search, those
            of the counterexample words.
        tree: the prefix tree; for a tree-free search, the counterexample words in play.
        mdp: the labeled MDP learned on (a :class:`~rmtk.mdp.space.Space` for data without a
            transition model).
        verdicts: exact consistency of each machine with the true policy (when known), its
            free transitions written as self-loops; for the first machines only when the run
            was stopped while deciding them (``stopped``).
        truth: the true machine (when known).
        negatives: the negative word pairs mined from demonstrations (confidence bound).
        false_positives: which of them are wrong under the truth (when known).
        completion_consistent: whether some filling of each machine's free transitions is
            consistent at every depth (the data cannot tell the fillings apart).
        reward_fits: per machine, the :class:`~rmtk.rewards.recovery.RewardFit` of its rewards (MaxEnt
            linear characterisation on the learned product policy); ``machines`` carry them.
        timings: seconds per stage: tree, policy (or count), mine, encode, solve, enumerate,
            verdict, rewards, total.
        ptp: the prefix tree policy learned from (``None`` for a tree-free search).
        oracle: the oracle of a lazy or every-depth search (:mod:`rmtk.sat.lazy`).
        expert_classes: ``(S, n_true)`` true policy classes (when the truth is known).
        bound: what the counts are judged with for :meth:`resolution` (``None``: the paper's
            fixed-sample bound of recorded data; an active learner's counts, gathered while
            looking at them: :class:`~rmtk.negatives.anytime.Adaptive`, docs/design/14-sampled-experts.md).
        truth_merges: how many negative examples mined from data the true machine violates
            (sends both words to one node); 0: it keeps them all (when the truth is known).
        max_solutions: the bound on the machines listed that the search ran with (``None``: none).
        stopped: what the run's deadline (a time limit, SIGINT, SIGTERM) stopped and left
            undone (:class:`~rmtk.learner.summary.Stop`); ``None``: the run finished.
        rewards: the reward traces learned from (:class:`~rmtk.traces.rewards.RewardTraces` on the
            trie searched), ``None`` when learned from the policy alone.
        decoded: per machine, its rewards read from the traces
            (:class:`~rmtk.traces.evidence.DecodedRewards`: which are free, the disagreements);
            ``machines`` carry them.
        noise: the noise level of the traces under the first machine, with its interval
            (:class:`~rmtk.traces.evidence.NoiseEstimate`; for a noisy-reward encoder).
    """

    machines: tuple[RewardMachine, ...]
    solutions: tuple[Solution, ...]
    search: SearchResult
    classes: PolicyClasses | None
    tree: PrefixTree
    mdp: LabeledMDP | Space
    verdicts: tuple[Verdict, ...] | None
    timings: dict
    truth: RewardMachine | None = None
    negatives: NegativePairs | None = None
    false_positives: np.ndarray | None = None
    completion_consistent: tuple[bool | None, ...] | None = None
    ptp: PrefixTreePolicy | None = attrs.field(default=None, repr=False)
    reward_fits: tuple | None = None
    oracle: object = attrs.field(default=None, repr=False)
    expert_classes: np.ndarray | None = attrs.field(default=None, eq=False, repr=False)
    bound: object = attrs.field(default=None, eq=False, repr=False)
    truth_merges: int | None = None
    max_solutions: int | None = None
    stopped: Stop | None = None
    rewards: object = attrs.field(default=None, repr=False)
    decoded: tuple | None = attrs.field(default=None, repr=False)
    noise: object = None

    @property
    def n_nodes(self) -> int | None:
        return self.search.n_nodes

    def _repr_html_(self) -> str:
        """The result as HTML, what Jupyter shows: its table and pictures (:func:`rmtk.io.display.result_html`)."""
        from ..io.display import result_html

        return result_html(self)

    @property
    def raw_count(self) -> int:
        """Satisfying assignments with node 0 fixed (the paper's solution count)."""
        return self.search.raw_count

    @property
    def distinct_count(self) -> int:
        return len(self.machines)

    def isomorphic_to_truth(self) -> tuple[bool, ...] | None:
        if self.truth is None:
            return None
        # isomorphic refuses other sizes and alphabets before it reorders a copy (thousands listed)
        return tuple(isomorphic(self.truth, m, rewards=False) for m in self.machines)

    def unconstrained(self, i: int) -> list[tuple[str, str]]:
        """``(node, letter)`` transitions of machine ``i`` that the data leave free."""
        m = self.machines[i]
        return [(m.nodes[u], m.alphabet[k]) for u, k in self.solutions[i].unconstrained]

    @property
    def false_positive_rate(self) -> float | None:
        """Share of mined negative examples that are wrong under the true machine."""
        if self.false_positives is None or not len(self.false_positives):
            return None
        return float(self.false_positives.mean())

    def dropped(self, i: int) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
        """The negative examples (as word pairs) that MaxSAT solution ``i`` violates: of the
        mined word pairs, or of the policy classes read as word pairs (what MaxSAT encodes)."""
        dropped = self.solutions[i].dropped
        if not dropped:
            return []
        if self.negatives is not None:
            pairs = self.negatives.pairs
        else:
            assert self.classes is not None, "a solution drops negative examples only when some were encoded"
            pairs = self.classes.distinct_pairs()
        trie, props = self.tree.trie, self.mdp.propositions
        word = lambda p: tuple(props[k] for k in trie.word(int(p)))  # noqa: E731
        return [(word(pairs[k, 0]), word(pairs[k, 1])) for k in dropped]

    def distinguish(self, i: int, j: int):
        """A shortest witness telling machines ``i`` and ``j`` apart: a state and two label words
        reaching it that one sends to the same node and the other to different nodes
        (:class:`~rmtk.machine.equivalence.Witness`; ``None`` if no observation can)."""
        from ..machine.equivalence import distinguish

        if isinstance(self.mdp, Space):
            raise RmtkError(
                f"{self.mdp.name!r} has no transition model, so no witness can be searched on the product; "
                "explain() gives witnesses from the demonstrations"
            )
        a, b = self.machines[i], self.machines[j]
        return distinguish(self.mdp, a.delta_u, b.delta_u, names=(a.name, b.name))

    def explain(self, *, limit: int = 10, confidence: float | None = None):
        """What would separate the surviving machines: a small cover of witnesses
        (:func:`rmtk.learner.explain.cover`) and, from demonstrations, the (word, word, state) triples
        that are not negative examples, those whose difference is beyond sampling noise at the
        planning ``confidence`` first, with the visits that would confirm it
        (:func:`rmtk.learner.explain.rare_triples`). With one machine from demonstrations: why nothing
        refutes it, and the triples it merges that would."""
        from .explain import PLANNING_CONFIDENCE, Explanation, cover, rare_triples

        deltas = [m.delta_u for m in self.machines]
        truth = None
        if self.truth is not None and self.expert_classes is not None:
            letter = np.array([self.truth.alphabet.index(p) for p in self.mdp.propositions])
            truth = (self.truth.delta_u[:, letter], self.expert_classes, self.truth.initial)
        confidence = PLANNING_CONFIDENCE if confidence is None else confidence
        rare, mined, alpha = None, None, None
        if self.negatives is not None and self.ptp is not None and self.ptp.counts is not None and deltas:
            mined, alpha = len(self.negatives), self.negatives.alpha
            rare = rare_triples(
                self.mdp,
                self.ptp,
                deltas,
                alpha=alpha,
                n_trajectories=self.ptp.n_trajectories,
                limit=limit,
                confidence=confidence,
            )
        names = [m.name for m in self.machines]
        found = cover(self.mdp, deltas, names, ptp=self.ptp, truth=truth)
        if rare is None:
            return Explanation(found, (), mined, alpha, confidence=confidence)
        return Explanation(found, rare.pairs, mined, alpha, rare.examined, rare.beyond_noise, confidence)

    def resolution(self, i: int = 0):
        """What the counted data resolved behind machine ``i``'s merges (a
        :class:`~rmtk.negatives.statistics.MergeResolution`: the weakest merge the answer rests on, the
        negative examples it rests on), or ``None`` for an exact policy, which proves its answer."""
        if i >= len(self.machines):
            return None
        return self.resolution_of(self.machines[i].delta_u)

    def resolution_of(self, delta_u: np.ndarray):
        """:meth:`resolution` of the machine ``delta_u`` over the MDP's propositions (initial node
        0; ``None`` for an exact policy): what the counts resolved behind its merges."""
        if self.ptp is None or self.ptp.counts is None or self.negatives is None:
            return None
        from ..negatives.statistics import FIXED, CountBound, Radius, merge_resolution

        return merge_resolution(
            self.ptp,
            delta_u,
            alpha=self.negatives.alpha,
            negatives=len(self.negatives),
            bound=FIXED if self.bound is None else cast(Radius | CountBound, self.bound),
        )

    def summary(self) -> MachineSummary:
        """The surviving machines in brief (:meth:`MachineSummary.of
        <rmtk.learner.summary.MachineSummary.of>`): how many survive, what the listed ones agree and
        differ on, how they and the truth stand; :meth:`explain` says what would separate them."""
        return MachineSummary.of(self)

    def stats(self) -> dict:
        out: dict[str, int | None] = {"trie_nodes": self.tree.trie.n_nodes, "pairs": self.tree.n_pairs}
        if self.classes is not None:
            out.update(
                classes=self.classes.n_classes,
                per_state_pairs=self.classes.per_state_pairs(),
                lower_bound=self.classes.lower_bound(),
            )
        if self.negatives is not None:
            out.update(negatives=len(self.negatives), cost=self.search.cost)
            if self.false_positives is not None:
                out.update(false_positives=int(self.false_positives.sum()))
        out.update(clauses=self.search.clauses, variables=self.search.variables)
        return out


# ---------------------------------------------------------------------- learner
