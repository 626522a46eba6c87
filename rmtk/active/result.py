"""What the active loop gives back (docs/design.md, section 12): the log of its rounds
(:class:`Round`) and its result (:class:`ActiveResult`), whatever the question strategy."""

from __future__ import annotations

import attrs

from ..learner import LearnResult
from .questions import Query


def plural(n: int, one: str, many: str | None = None) -> str:
    """``n`` and the noun, singular for one (``1 query``, ``2 queries``)."""
    return f"{n} {one if n == 1 else (many or one + 's')}"


#: Words of the bounds that can end a run (the ``exhausted`` of an :class:`ActiveResult`).
ENDED_BY = {
    "queries": "the queries budget is spent",
    "steps": "the steps budget is spent",
    "seconds": "the seconds budget is spent",
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
    totals spent so far. ``negatives`` and ``cost``: what the search used, when the strategy says."""

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

    def __str__(self) -> str:
        asked = plural(len(self.asked), "query", "queries")
        what = {
            "start": "the data given",
            "split": asked,
            "alternatives": f"{asked} testing the survivors against larger machines",
            "free": f"{asked} using free transitions of the survivors",
            "tests": f"{asked} testing each transition of the survivor",
            "equivalence": f"equivalence check, {plural(self.walks, 'walk')}"
            if self.walks
            else f"exact equivalence check, {asked} (the synchronised product with the expert's policy)",
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
            f"round {self.index}: {what}, {plural(self.new_pairs, 'new (word, state) pair')}; {survive}; "
            f"spent {plural(self.queries, 'query', 'queries')}, {plural(self.steps, 'step')}, "
            f"{plural(self.known, 'pair')} known, {self.seconds:.2f} s" + ("; solvers rebuilt" if self.rebuilt else "")
        )


@attrs.frozen
class ActiveResult:
    """What :meth:`ActiveLearner.fit` found: the :class:`~rmtk.learner.LearnResult` of the
    survivors (``result.search.complete`` is ``False`` when more survive than were listed), the
    log of ``rounds``, why it ``stopped`` and, when a bound ended it, which (``exhausted``: a
    key of :data:`ENDED_BY`; the survivors are those so far), the expert ``queries``, ``steps``
    and ``evaluations`` spent, the (word, state) pairs ``known``, the final count ``table`` of an
    expert that is run (``None`` for an exact one), and what the strategy says of the survivors
    (``separation``, :class:`~rmtk.active.recorded.Separation` when asking at recorded triples)."""

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

    @property
    def flagged(self) -> bool:
        """A bound ended the run before the loop could stop by itself."""
        return self.exhausted is not None

    @property
    def ended(self) -> str | None:
        """What ended the run early, as the command line says it (``budget spent (queries)``,
        ``time limit``, ``interrupted``, ...); ``None`` when it stopped by itself."""
        if self.exhausted in ("queries", "steps", "seconds"):
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
        if self.separation is not None:
            lines.append(str(self.separation))
        return "\n".join(lines)
