"""What the active loop gives back (docs/design/12-active-learning.md): the log of its rounds
(:class:`Round`) and its result (:class:`ActiveResult`), whatever the question strategy.

From an expert that is run, every answer is a statement at a level, never a proof
(docs/design/14-sampled-experts.md): a round lists the comparisons it asked with what each resolved
(:class:`~rmtk.active.sampling.Compared`), the result says what resolved the merges of each
machine (:meth:`ActiveResult.resolution`, :meth:`ActiveResult.merges`) and what the
equivalence check covered (``coverage``)."""

from __future__ import annotations

import attrs
import numpy as np

from ..learner.pipeline import LearnResult
from ..words import plural
from .questions import Query

#: Words of the bounds that can end a run (the ``exhausted`` of an :class:`ActiveResult`).
ENDED_BY = {
    "queries": "the queries budget is spent",
    "steps": "the steps budget is spent",
    "seconds": "the seconds budget is spent",
    "draws": "the draws budget is spent",
    "rounds": "the rounds bound (max_rounds) is reached",
    "time limit": "the time limit is reached",
    "interrupted": "the run was interrupted",
    "terminated": "the run was terminated",
}


@attrs.frozen
class Round:
    """One round of the loop: what was asked before it (``reason``: ``"start"``, a kind of
    question, or ``"equivalence"``), the hypotheses found after folding the answers in
    (``survivors`` machines of ``nodes`` nodes; ``complete``: they are every survivor), and the
    totals spent so far (``steps``: environment steps, ``draws``: policy draws). ``negatives``
    and ``cost``: what the search used, when the strategy says. ``compared``: from an expert
    that is run, the comparisons asked before it and what each resolved
    (:class:`~rmtk.active.sampling.Compared`)."""

    index: int
    reason: str
    asked: tuple[Query, ...]
    walks: int
    new_pairs: int
    survivors: int
    nodes: int | None
    queries: int
    steps: int
    known: int
    seconds: float
    rebuilt: bool = False
    complete: bool = True
    negatives: int | None = None
    cost: int | None = None
    draws: int = 0
    compared: tuple = ()
    check: str = ""

    def __str__(self) -> str:
        asked = plural(len(self.asked), "query", "queries")
        what = {
            "start": "the data given",
            "split": asked,
            "alternatives": f"{asked} testing the survivors against larger machines",
            "free": f"{asked} using free transitions of the survivors",
            "tests": f"{asked} testing each transition of the survivor",
            "merges": f"{asked} resolving the comparisons behind the survivor's merges",
            "firm": f"{asked} making the negative examples the survivors rest on hold family-wise",
            "equivalence": f"equivalence check, {plural(self.walks, 'walk')}"
            if self.walks
            else (
                f"exact equivalence check (1 query: the synchronised product with the expert's policy), "
                f"{plural(len(self.asked), 'history', 'histories')} of its counterexamples asked"
                if self.check in ("", "exact")
                else f"equivalence check ({self.check})"
            ),
        }.get(self.reason, f"{asked} ({self.reason})")
        if self.nodes is None:
            survive = "no machine survives"
        else:
            k = f"{self.survivors}" if self.complete else f"at least {self.survivors}"
            verb = "survives" if self.survivors == 1 and self.complete else "survive"
            many = "s" if self.survivors != 1 or not self.complete else ""
            survive = f"{k} machine{many} of {plural(self.nodes, 'node')} {verb}"
        if self.negatives is not None:
            survive += f" (from {plural(self.negatives, 'negative example')}" + (
                f", cost {self.cost})" if self.cost is not None else ")"
            )
        return (
            f"round {self.index}: {what}, {plural(self.new_pairs, 'new (word, state) pair')}{self._compared()}; "
            f"{survive}; spent {plural(self.queries, 'query', 'queries')}, {plural(self.steps, 'step')}, "
            f"{plural(self.draws, 'draw')}, {plural(self.known, 'pair')} known, {self.seconds:.2f} s"
            + ("; solvers rebuilt" if self.rebuilt else "")
        )

    def _compared(self) -> str:
        """What the comparisons asked resolved: ``(3 differ, 2 alike to ≤ 0.10, 1 open at 0.31)``."""
        if not self.compared:
            return ""
        parts = []
        sep = [c for c in self.compared if c.status == "separated"]
        if sep:
            parts.append(f"{len(sep)} differ")
        for status, word in (("resolved", "alike"), ("capped", "capped"), ("open", "open")):
            some = [c.upper for c in self.compared if c.status == status]
            if some:
                parts.append(f"{len(some)} {word}, no difference ≥ {max(some):.2f}")
        return f" ({plural(len(self.compared), 'comparison')}: {'; '.join(parts)})"


@attrs.frozen
class Resolved:
    """What the questions to an expert that is run resolved behind a machine's merges: the
    ``comparisons`` (two histories the machine merges, asked until the test resolved them, or
    capped, or the run ended) over ``histories`` distinct histories; ``worst``, ``median``,
    ``best``: the resolution of those that resolved anything (``worst`` is the weakest merge the
    answer rests on: no difference that large was found at any of them, at level ``alpha``);
    ``undecided``: comparisons that resolved nothing; ``negatives``: the negative examples the
    answer rests on; ``options``: further witnesses, asked only as options and left open (the
    loop settles the comparisons the merges need, not those: ``options_best`` is the firmest of
    them). A statement at a level, never a proof (docs/design/14-sampled-experts.md)."""

    comparisons: int
    histories: int
    worst: float
    median: float
    best: float
    undecided: int
    negatives: int
    alpha: float
    options: int = 0
    options_best: float = 1.0

    def __str__(self) -> str:
        head = f"resolution (total variation, alpha {self.alpha:g}): "
        if not self.comparisons:
            text = f"{head}no comparison behind the merges was settled"
        elif self.undecided == self.comparisons:
            text = f"{head}none of the {self.comparisons:,} comparisons behind the merges resolved any difference"
        else:
            text = (
                f"{head}no difference ≥ {self.worst:.2f} found at the {self.histories:,} histories that decide the "
                "merges "
                f"({plural(self.comparisons - self.undecided, 'comparison')} the expert was asked; median "
                f"{self.median:.2f}, firmest {self.best:.2f})"
            )
            if self.undecided:
                text += f"; {plural(self.undecided, 'more comparison')} resolved nothing"
        if self.options:
            one = self.options == 1
            text += (
                f"; {plural(self.options, 'further witness', 'further witnesses')}, asked only as "
                f"{'an option, was' if one else 'options, were'} left open (no difference ≥ "
                f"{self.options_best:.2f}{'' if one else ' at the firmest'})"
            )
        return f"{text}; {plural(self.negatives, 'negative example')}"


@attrs.frozen
class ActiveResult:
    """What :meth:`ActiveLearner.fit` found: the :class:`~rmtk.learner.result.LearnResult` of the
    survivors (``result.search.complete`` is ``False`` when more survive than were listed), the
    log of ``rounds``, why it ``stopped`` and, when a bound ended it, which (``exhausted``: a
    key of :data:`ENDED_BY`; the survivors are those so far), the expert ``queries``, ``steps``
    and ``evaluations`` spent (policy evaluations: one per exact answer, and those an expert
    spent beside its answers, such as an agent's batched product table), the (word, state)
    pairs ``known``, the final count ``table`` of an expert that is run (``None`` for an exact
    one), and what the strategy says of the survivors (``separation``,
    :class:`~rmtk.active.recorded.Separation` when asking at recorded triples).
    ``draws``: policy draws (``steps`` are environment steps: resets and restores, replayed and
    asked steps); ``coverage``: what the last sampled equivalence check covered (a
    :class:`~rmtk.active.conformance.SuiteCoverage` or a :class:`~rmtk.active.checks.Coverage`),
    ``target``: the run's target resolution (``None`` for an exact expert) and ``alpha``;
    ``compared``: every comparison of two histories the run looked at, as it stands at the end
    (:class:`~rmtk.active.sampling.Compared`); ``firmness``: whether a sampled answer's negative
    examples hold for the whole run at once (:class:`~rmtk.active.family.Firmness`)."""

    result: LearnResult
    rounds: tuple[Round, ...]
    stopped: str
    exhausted: str | None
    queries: int
    steps: int
    known: int
    evaluations: int = 0
    table: object = None
    separation: object = None
    draws: int = 0
    coverage: object = None
    target: float | None = None
    alpha: float = 0.05
    compared: tuple = ()
    firmness: object = None

    @property
    def sampled(self) -> bool:
        """Whether the answers were drawn as counts, which makes the result a statement at level ``alpha``."""
        return self.table is not None

    def resolution(self, i: int = 0):
        """What resolved machine ``i``'s merges (``None`` for an exact expert, whose answer is a
        proof): from the comparisons the expert was asked (:class:`Resolved`, the weakest merge
        the answer rests on), else from the counts behind each merge, with the bound they were
        judged with (:class:`~rmtk.negatives.statistics.MergeResolution`)."""
        if not self.sampled or i >= len(self.result.machines):
            return None
        machine = self.result.machines[i]
        return self.resolution_of(self._over_propositions(machine), machine.initial)

    def resolution_of(self, delta: np.ndarray, initial: int = 0):
        """:meth:`resolution` of the machine ``delta`` over the asked MDP's propositions (e.g. a
        labeling and machine learned from the questions, read over states): ``None`` for an exact
        expert."""
        if not self.sampled:
            return None
        every = self.merges_of(delta, initial)
        if not every:
            return self.result.resolution_of(delta) if initial == 0 else None
        merged = [c for c in every if not (c.optional and c.status == "open")]
        extra = [c.upper for c in every if c.optional and c.status == "open"]
        res = np.array([c.upper for c in merged])
        decided = res < 1.0
        done = res[decided]
        negatives = len(self.result.negatives) if self.result.negatives is not None else 0
        return Resolved(
            len(merged),
            len({(c.word, c.state) for c in merged} | {(c.partner, c.state) for c in merged}),
            float(done.max()) if len(done) else 1.0,
            float(np.median(done)) if len(done) else 1.0,
            float(done.min()) if len(done) else 1.0,
            int((~decided).sum()),
            negatives,
            self.alpha,
            len(extra),
            min(extra) if extra else 1.0,
        )

    def merges(self, i: int = 0) -> list:
        """The comparisons the expert was asked whose two histories machine ``i`` merges (the
        "alike" pairs that decide its merges), as they stand at the end
        (:class:`~rmtk.active.sampling.Compared`), the weakest resolution first."""
        if i >= len(self.result.machines):
            return []
        machine = self.result.machines[i]
        return self.merges_of(self._over_propositions(machine), machine.initial)

    def _over_propositions(self, machine) -> np.ndarray:
        """``machine``'s transitions with the asked MDP's propositions as columns."""
        letter = np.array([machine.alphabet.index(p) for p in self.result.mdp.propositions])
        return machine.delta_u[:, letter]

    def merges_of(self, delta: np.ndarray, initial: int = 0) -> list:
        """:meth:`merges` of the machine ``delta`` over the asked MDP's propositions."""

        def final(word) -> int:
            u = initial
            for k in word:
                u = int(delta[u, k])
            return u

        out = [c for c in self.compared if c.status != "separated" and final(c.word) == final(c.partner)]
        return sorted(out, key=lambda c: (-c.upper, c.state, c.word, c.partner))

    @property
    def flagged(self) -> bool:
        """A bound ended the run before the loop could stop by itself."""
        return self.exhausted is not None

    @property
    def ended(self) -> str | None:
        """What ended the run early, as the command line says it (``budget spent (queries)``,
        ``time limit``, ``interrupted``, ...); ``None`` when it stopped by itself."""
        if self.exhausted in ("queries", "steps", "draws", "seconds"):
            return f"budget spent ({self.exhausted})"
        return self.exhausted

    @property
    def solutions(self) -> tuple:
        """The survivors listed (up to renaming)."""
        return self.result.solutions

    @property
    def negatives(self):
        """The negative examples of counted answers (``None`` for an exact expert)."""
        return self.result.negatives

    @property
    def listed_all(self) -> bool:
        """Every survivor is listed (the enumeration was not cut by ``max_solutions`` or a bound)."""
        return bool(self.result.search.complete)

    def log(self) -> str:
        lines = [str(r) for r in self.rounds]
        lines.append(f"stopped: {self.stopped}")
        if self.coverage is not None:
            lines.append(f"equivalence check: {self.coverage}")
        if self.firmness is not None:
            lines.append(f"negative examples: {self.firmness}")
        if self.separation is not None:
            lines.append(str(self.separation))
        return "\n".join(lines)


def machines(res) -> str:
    """``3 machines``, or ``at least 3 machines`` when the listing of search result ``res`` stopped."""
    k = len(res.solutions)
    return f"{k} machines" if res.complete else f"at least {k} machines"


def found(res, exact: bool, check: str, max_solutions: int | None, target: float | None = None) -> str:
    """Why a run stopped once its equivalence check (named ``check``) found nothing, with the
    survivors ``res``: a proof only for an ``exact`` check; a sampled check says what it looked
    for (a difference of the run's ``target`` resolution or more; the result adds what the
    samples resolved)."""
    more = "" if res.complete else f" (listing stopped at max_solutions={max_solutions}: at least that many)"
    if exact:
        if len(res.solutions) == 1 and res.complete:
            return "one machine survives and the equivalence check found no counterexample"
        return (
            f"{machines(res)} survive that no question left tells apart, and the equivalence check found no "
            f"counterexample{more}"
        )
    size = f" of {target:g} or more" if target is not None else ""
    check = f"the sampled equivalence check ({check}) found no difference{size}"
    if len(res.solutions) == 1 and res.complete:
        return f"one machine survives; {check}"
    return f"{machines(res)} survive that no question left tells apart; {check}{more}"
