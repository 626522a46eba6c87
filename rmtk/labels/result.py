"""What a :class:`~rmtk.labels.learner.LabelLearner` found: :class:`LabelLearnResult`, its
:class:`SurvivorSummary` for survivors too many to read, and what the data could resolve
(docs/design/13-learning-labels.md)."""

from __future__ import annotations

import attrs
import numpy as np

from ..errors import RmtkError
from ..machine.model import RewardMachine
from ..mdp.model import LabeledMDP
from ..mdp.space import Space
from ..ptp.tree import PrefixTreePolicy
from .evidence import AskedEvidence, SampleEvidence, closest_merges
from .knowledge import state_names
from .pairs import LabelSolution
from .search import LabelSearchResult
from .verdicts import LabelVerdict


@attrs.frozen
class SurvivorSummary:
    """What the listed pairs have in common, for when they are too many to read.

    Attributes:
        found: pairs listed.
        capped: the enumeration stopped before the end (``max_solutions`` or a time limit):
            there are at least ``found`` survivors.
        cap: the ``max_solutions`` in force (``None``: none).
        fixed: ``{state: proposition}`` of the states that move the machine by the same column
            δ(·, L(s)) in every listed pair (nodes in canonical BFS numbering), with their
            label in the first pair.
        varies: the other states no history misses.
        truth_survives: as in :class:`LabelLearnResult`.
    """

    found: int
    capped: bool
    cap: int | None
    fixed: dict[str, str]
    varies: tuple[str, ...]
    truth_survives: bool | None = None

    @property
    def count(self) -> str:
        """The number of survivors, ``"≥N"`` when the enumeration was capped."""
        return f"≥{self.found}" if self.capped else str(self.found)

    def lines(self) -> list[str]:
        """The summary as text lines."""
        why = f"enumeration capped at {self.cap} pairs" if self.cap is not None else "enumeration stopped early"
        out = [f"survivors: {self.count}" + (f" ({why})" if self.capped else "")]
        out.append(
            f"states with the same label in every listed pair: {len(self.fixed)}; varying: {len(self.varies)}"
            + (f" ({', '.join(self.varies[:20])}{', …' if len(self.varies) > 20 else ''})" if self.varies else "")
        )
        if self.truth_survives is not None:
            out.append(f"truth survives: {'yes' if self.truth_survives else 'no'}")
        return out


@attrs.frozen
class LabelLearnResult:
    """What :meth:`LabelLearner.fit <rmtk.labels.learner.LabelLearner.fit>` found.

    Attributes:
        search: the search (sizes tried, the ones ruled out, counterexamples, solutions).
        mdp: the labeled MDP learned on (its labels were not used), or the
            :class:`~rmtk.mdp.space.Space` of state histories.
        propositions: names of the learned propositions (the user's named ones first).
        verdicts: per solution, against the truth (when the target is a task; ``None`` for a
            pair the time limit left unjudged).
        truth_size: the truth's (nodes, propositions) on the states the histories reach.
        truth_survives: whether the truth is among the survivors: read on the states the
            histories reach, it has the smallest size found and passes every check of the data
            (every negative example mined, or the exact expert); ``None`` without a truth or
            when the time limit came first. Decided directly, so it holds even when the
            survivors are too many to enumerate (``max_solutions``).
        unseen: states the MDP reaches that no history passes through (their labels are not
            learned, and no pair is then equal to the truth).
        unfinished: the steps a limit stopped, in words (empty when every step finished).
        evidence: what sampled data (demonstrations, or a sampled expert's answers) could
            resolve (``None`` for an exact expert).
        timings: seconds per stage.
        ptp: the tree of state histories counted from demonstrations (``None`` otherwise), for
            :meth:`explain`.
    """

    search: LabelSearchResult
    mdp: LabeledMDP | Space
    propositions: tuple[str, ...]
    verdicts: tuple[LabelVerdict | None, ...] | None = None
    truth_size: tuple[int, int] | None = None
    truth_survives: bool | None = None
    unseen: int = 0
    unfinished: tuple[str, ...] = ()
    evidence: SampleEvidence | AskedEvidence | None = None
    timings: dict = attrs.field(factory=dict)
    ptp: PrefixTreePolicy | None = attrs.field(default=None, eq=False, repr=False)

    @property
    def solutions(self) -> tuple[LabelSolution, ...]:
        return self.search.solutions

    @property
    def n_nodes(self):
        return self.search.n_nodes

    @property
    def n_props(self):
        return self.search.n_props

    @property
    def complete(self) -> bool:
        """Whether every step finished (the search, the free states of every pair, every verdict)."""
        return self.search.complete and not self.unfinished

    def labeling(self, i: int) -> dict[str, str | None]:
        """``{state: learned proposition}`` of solution ``i`` (``None``: a state no history reaches)."""
        lab = self.solutions[i].labels
        return {s: (self.propositions[p] if p >= 0 else None) for s, p in zip(state_names(self.mdp), lab)}

    def free(self, i: int) -> list[tuple[str, tuple[str, ...]]] | None:
        """States of solution ``i`` whose label alone could change, with the propositions it
        could take (``None``: not computed)."""
        free = self.solutions[i].free
        if free is None:
            return None
        return [(state_names(self.mdp)[s], tuple(self.propositions[p] for p in ps)) for s, ps in free]

    def machine(self, i: int) -> RewardMachine:
        """Solution ``i``'s machine over the learned propositions (free transitions loop)."""
        s = self.solutions[i]
        return RewardMachine(
            nodes=[f"u{j}" for j in range(s.n_nodes)],
            alphabet=self.propositions,
            delta_u=s.delta_u,
            delta_r=np.zeros(s.delta_u.shape),
            initial=0,
            name="learned" if len(self.solutions) == 1 else f"learned_{i + 1}",
        )

    def relabeled_mdp(self, i: int) -> LabeledMDP:
        """The MDP with solution ``i``'s learned labels (unreached states get the first proposition)."""
        if isinstance(self.mdp, Space):
            raise RmtkError(
                f"{self.mdp.name!r} is a space of state histories without a transition model: there is no "
                "MDP to relabel (labeling(i) gives the learned labels)"
            )
        lab = np.maximum(self.solutions[i].labels, 0)
        return attrs.evolve(self.mdp, labels=lab, propositions=self.propositions, source=None)

    def summary(self) -> SurvivorSummary:
        """The survivors summarised: how many, and which states' labels the listed pairs agree on."""
        names = state_names(self.mdp)
        sols = self.solutions
        reach = np.flatnonzero(sols[0].labels >= 0) if sols else np.zeros(0, np.int64)
        cols = np.stack([s.state_machine()[:, reach] for s in sols]) if sols else None
        same = (cols == cols[:1]).all(axis=(0, 1)) if cols is not None else np.zeros(0, bool)
        fixed = {names[s]: self.propositions[sols[0].labels[s]] for s in reach[same]}
        return SurvivorSummary(
            len(sols),
            bool(sols) and not self.search.complete,
            self.search.cap,
            fixed,
            tuple(names[s] for s in reach[~same]),
            self.truth_survives,
        )

    def resolution(self, i: int = 0):
        """What the counted data resolved behind pair ``i``'s merges (a
        :class:`~rmtk.negatives.statistics.MergeResolution`: the weakest merge the answer rests on, the
        negative examples it rests on), or ``None`` for an exact expert, which proves its answer."""
        if self.ptp is None or not isinstance(self.evidence, SampleEvidence) or i >= len(self.solutions):
            return None
        from ..negatives.statistics import FIXED, merge_resolution

        ev = self.evidence
        return merge_resolution(
            self.ptp, self.solutions[i].state_machine(), alpha=ev.alpha, negatives=ev.negatives, bound=FIXED
        )

    @property
    def truth_is_smaller_or_equal(self) -> bool | None:
        """Whether the truth is among the smallest sizes (``None`` without a truth)."""
        if self.truth_size is None or self.n_nodes is None:
            return None
        return self.truth_size <= (self.n_nodes, self.n_props)

    def truth_size_line(self) -> str | None:
        """What a truth larger than the pairs found means (``None``: it is not larger, or no
        truth): from an exact expert, that fewer nodes or propositions match its behaviour (a
        proof); from sampled data, only that the samples did not show what needs its size."""
        if self.truth_is_smaller_or_equal is not False:
            return None
        if self.evidence is None:
            return (
                "the truth is not the smallest answer: the expert's behaviour is matched by fewer nodes or propositions"
            )
        n, k = self.truth_size or (0, 0)
        return (
            f"the truth ({n} nodes, {k} propositions) is larger than the pairs found: what the samples resolved "
            "(above) does not show what would need its other nodes or propositions; more samples may"
        )

    def explain(self, limit: int = 10) -> list[str]:
        """What would separate the survivors, as text lines. From sampled data first what the
        samples could resolve, and the pairs of histories the first pair merges that came
        closest to being told apart, with the visits they would need (:mod:`rmtk.labels.evidence`).
        Then, for pairs of listed solutions (at most ``limit``), a shortest witness on the state
        view — a state and two state histories reaching it that one pair sends to one node and
        the other to two (observing the expert there can refute one) — or that none exists."""
        from ..machine.equivalence import distinguish
        from .histories import state_mdp

        out = list(self.evidence.lines()) if self.evidence is not None else []
        sols = self.solutions
        names = state_names(self.mdp)
        if self.ptp is not None and isinstance(self.evidence, SampleEvidence) and sols:
            close = closest_merges(self.ptp, sols[0].state_machine(), self.evidence.alpha, limit=min(limit, 5))
            if close:
                out.append("histories the first pair merges that came closest to being told apart:")
            for c in close:
                h1, h2 = (" ".join(names[s] for s in h) for h in (c.history1, c.history2))
                more = (
                    f"{c.needed[0]:,} and {c.needed[1]:,} more visits would detect a difference that large, were it "
                    "real"
                    if c.needed[0] >= 0
                    else "no number of visits detects a difference that small"
                )
                out.append(
                    f"  at {names[c.state]}: [{h1}] and [{h2}] differ by {c.difference:.3g} (total variation) over "
                    f"{c.visits[0]} and {c.visits[1]} visits, below the {min(c.threshold, 1):.3g} the test needs "
                    f"there (consistent with no difference); {more}"
                )
        if len(sols) < 2:
            if sols:
                out.append("one pair survives: no other pair to separate it from")
            return out
        if isinstance(self.mdp, Space):
            return out + [
                f"{len(sols)} pairs survive; {self.mdp.name!r} has no transition model, so no witness can be searched "
                "on the product: more demonstrations through the states that vary would separate them"
            ]
        smdp = state_mdp(self.mdp)
        shown = 0
        for i in range(len(sols)):
            for j in range(i + 1, len(sols)):
                if shown >= limit:
                    return out + ["(more pairs not listed)"]
                wit = distinguish(
                    smdp, sols[i].state_machine(), sols[j].state_machine(), names=(f"pair {i + 1}", f"pair {j + 1}")
                )
                out.append(
                    f"pairs {i + 1} and {j + 1}: " + ("no state history separates them" if wit is None else str(wit))
                )
                shown += 1
        return out
