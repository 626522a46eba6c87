"""What a learning run leaves to say beside its machines (docs/design/08-progress-and-limits.md and
docs/design/09-beyond-the-paper.md):
:class:`Stop`, which phase the run's deadline stopped and what it left undone, and
:class:`MachineSummary`, the surviving machines in brief, for when they are too many to read
(how many survive, what the listed ones agree on, how they stand against the truth).

:class:`Phases` is how :meth:`rmtk.learner.pipeline.Learner.fit` keeps the run's
:class:`~rmtk.limits.Deadline` between its phases: a phase that finds it passed does not start,
a phase it stopped says what it left undone, and the result carries the first of them.
"""

from __future__ import annotations

import attrs
import numpy as np

from ..limits import Deadline


def node_count(n: int | None) -> str:
    """``n`` nodes, singular for one (``1 node``, ``3 nodes``)."""
    return f"{n} node{'' if n == 1 else 's'}"


def single_action(ptp) -> bool:
    """Whether the counted data show one action only at every (word, state) pair they saw (a
    deterministic policy, such as a greedy agent); ``False`` without counts."""
    counts = None if ptp is None else ptp.counts
    return counts is not None and len(counts) > 0 and bool(((np.asarray(counts) > 0).sum(axis=1) <= 1).all())


def single_action_note(negatives: int | None) -> str:
    """Why data with one action at every history say little (paper section 5: a negative
    example is two words at one state with different action distributions, each seen often
    enough for the confidence bound)."""
    where = ", and here they never do" if negatives == 0 else ""
    return (
        "every recorded history shows a single action (a deterministic policy, such as a greedy agent): it is "
        "seen only along its own paths, and two words reaching one state with different actions (a negative "
        f"example) appear only where those paths meet in different nodes{where}; record it with exploration "
        "(every action with some probability, as an epsilon-greedy agent or a soft-optimal expert acts) for "
        "episodes that reach the histories telling its nodes apart"
    )


#: The phases of a passive run, in order, and how a report names them.
PHASES = {
    "tree": "building the prefix tree policy",
    "mine": "mining negative examples",
    "search": "searching for the smallest size",
    "enumerate": "listing the machines",
    "verdict": "deciding the verdicts",
    "rewards": "recovering the rewards",
}


@attrs.frozen
class Stop:
    """Why a run ended before all its work was done: ``reason`` (as
    :meth:`~rmtk.limits.Deadline.reason` says: ``"time limit"``, ``"interrupted"``,
    ``"terminated"``) ended ``phase`` (a key of :data:`PHASES`); ``unfinished`` says what that
    phase left undone (empty: it did not start) and ``skipped`` the later phases that did not
    run. What the result holds was found before the stop."""

    phase: str
    reason: str
    unfinished: str = ""
    skipped: tuple[str, ...] = ()

    def __str__(self) -> str:
        words = PHASES.get(self.phase, self.phase)
        text = f"stopped ({self.reason}) " + (
            f"while {words}: {self.unfinished}" if self.unfinished else f"before {words}"
        )
        if self.skipped:
            text += "; not run: " + ", ".join(PHASES.get(p, p) for p in self.skipped)
        return text


class Phases:
    """The run's deadline seen phase by phase: :meth:`starts` before a phase, :meth:`cut` when
    the deadline stopped one midway; :meth:`stop` is the :class:`Stop` of the first of them."""

    def __init__(self, deadline: Deadline):
        self.deadline = deadline
        self.phase: str | None = None
        self.unfinished = ""
        self.skipped: list[str] = []

    def starts(self, phase: str) -> bool:
        """Whether ``phase`` may run: ``False`` (and the phase recorded as not run) once the
        deadline has passed."""
        if not self.deadline.expired():
            return True
        if self.phase is None:
            self.phase = phase
        elif phase != self.phase and phase not in self.skipped:
            self.skipped.append(phase)
        return False

    def cut(self, phase: str, unfinished: str) -> None:
        """The deadline stopped ``phase`` with ``unfinished`` left undone."""
        if self.phase is None:
            self.phase, self.unfinished = phase, unfinished

    def skip_rest(self, *phases: str) -> None:
        """``phases`` will not run (the run ends after a stopped phase)."""
        for phase in phases:
            self.starts(phase)

    def after_search(self, res, listed: int | None) -> None:
        """Record what the deadline stopped in a search (a :class:`~rmtk.sat.search.SearchResult`):
        the size search (no machine found yet), or the listing (fewer than ``listed`` machines)."""
        if res.complete or not self.deadline.expired():
            return
        if res.n_nodes is None:
            ruled = [n for n, ok in res.tried if ok is False]
            undecided = [n for n, ok in res.tried if ok is None]
            text = f"{node_count(undecided[0])} undecided" if undecided else "no size decided"
            self.cut("search", text + (f", {', '.join(map(str, ruled))} ruled out" if ruled else ""))
            self.skip_rest("verdict", "rewards")
        elif listed is None or len(res.solutions) < listed:
            n = len(res.solutions)
            self.cut("enumerate", f"{n} machine{'s' if n != 1 else ''} listed, more may survive")

    def stop(self) -> Stop | None:
        """The :class:`Stop` of the first phase the deadline stopped (``None``: none)."""
        if self.phase is None:
            return None
        return Stop(self.phase, self.deadline.reason() or "time limit", self.unfinished, tuple(self.skipped))


@attrs.frozen
class MachineSummary:
    """The surviving machines in brief (:meth:`rmtk.learner.result.LearnResult.summary`).

    Attributes:
        listed: machines listed (their verdicts and rewards computed).
        complete: every surviving machine is listed.
        more: once the listing reached ``cap``: another machine survives (``True``) or it is
            not known (``None``: the deadline stopped the listing, or the search does not look).
        cap: the ``max_solutions`` in force (``None``: none).
        nodes: their number of nodes.
        agree: ``(node, letter, target)`` transitions the same in every listed machine and
            determined by the data in each (nodes in canonical breadth-first numbering).
        varies: ``(node, letter, targets)`` transitions on which listed machines differ (or
            that the data fix in some and leave free in others).
        free: ``(node, letter)`` transitions the data leave free in every listed machine.
        consistent: listed machines equivalent to the truth at every depth, of ``judged``
            with a verdict (``None``: no truth, or no verdicts): policy-equivalent, or
            reward-equivalent for machines learned from rewards alone (``equivalence``).
        truth_nodes: the true machine's nodes (when known).
        truth_merges: mined negative examples whose two words the truth sends to one node
            (``None``: none were mined from data, or no truth); 0: the truth keeps them all.
        negatives: negative examples mined from data (``None``: an exact expert).
        cost: negative examples the MaxSAT optimum drops (``None``: hard negatives).
        smallest: every smaller size was tried and ruled out (``False``: one size was searched).
        truth_listed: the truth is among the listed machines, up to renaming.
        stopped: what stopped the run, when something did.
        single_action: the counted data show one action only at every history
            (:func:`single_action`: a deterministic policy, seen only along its own paths).
    """

    listed: int
    complete: bool
    more: bool | None
    cap: int | None
    nodes: int | None
    agree: tuple[tuple[str, str, str], ...] = ()
    varies: tuple[tuple[str, str, tuple[str, ...]], ...] = ()
    free: tuple[tuple[str, str], ...] = ()
    consistent: int | None = None
    judged: int = 0
    truth_nodes: int | None = None
    truth_merges: int | None = None
    negatives: int | None = None
    cost: int | None = None
    smallest: bool = True
    truth_listed: bool = False
    stopped: Stop | None = None
    equivalence: str = "policy-equivalent"
    single_action: bool = False
    #: the machines are the least noisy a local search found, not proven least noisy (rmtk/sat/anytime.py)
    unproven: bool = False

    @classmethod
    def of(cls, result, *, iso: tuple[bool, ...] | None = None) -> MachineSummary:
        """The summary of a :class:`~rmtk.learner.result.LearnResult`: the transitions compared in the
        machines' canonical numbering, where equal targets mean the same node (``iso``: the
        result's ``isomorphic_to_truth()`` when already computed)."""
        ms, sols = result.machines, result.solutions
        agree: list[tuple[str, str, str]] = []
        varies: list[tuple[str, str, tuple[str, ...]]] = []
        free: list[tuple[str, str]] = []
        if ms:
            du = np.stack([s.delta_u for s in sols])
            used = np.stack([s.used for s in sols])
            same = (du == du[:1]).all(axis=0) & used.all(axis=0)
            names, letters = ms[0].nodes, ms[0].alphabet
            for u, k in np.ndindex(*same.shape):
                if same[u, k]:
                    agree.append((names[u], letters[k], names[int(du[0, u, k])]))
                elif not used[:, u, k].any():
                    free.append((names[u], letters[k]))
                elif len(ms) > 1:
                    varies.append((names[u], letters[k], tuple(sorted({names[int(t)] for t in du[:, u, k]}))))
        verdicts = result.verdicts
        iso = result.isomorphic_to_truth() if iso is None else iso
        return cls(
            listed=len(ms),
            complete=result.search.complete,
            more=result.search.more,
            cap=result.max_solutions,
            nodes=result.n_nodes,
            agree=tuple(agree),
            varies=tuple(varies),
            free=tuple(free),
            consistent=None if verdicts is None else sum(v.consistent for v in verdicts),
            judged=0 if verdicts is None else len(verdicts),
            truth_nodes=None if result.truth is None else result.truth.n_nodes,
            truth_merges=result.truth_merges,
            negatives=None if result.negatives is None else len(result.negatives),
            cost=result.search.cost,
            smallest=result.search.cost is None and bool(result.search.tried) and result.search.tried[0][0] == 1,
            truth_listed=bool(iso and any(iso)),
            stopped=result.stopped,
            equivalence=verdicts[0].equivalence if verdicts else "policy-equivalent",
            single_action=result.negatives is not None and single_action(result.ptp),
            unproven=result.search.unproven is not None,
        )

    @property
    def count(self) -> str:
        """How many survive, in words, such as ``"12"``, ``"more than 10"`` or ``"≥7"``."""
        if self.complete:
            return str(self.listed)
        return f"more than {self.listed}" if self.more else f"≥{self.listed}"

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def lines(self, *, shown: int = 12, hint: bool = True) -> list[str]:
        """The summary as text lines (at most ``shown`` varying transitions named; ``hint``:
        end with where to see what would separate the machines)."""
        if self.complete:
            why = ""
        elif self.unproven:
            why = ": the least noisy a local search found, not proven; others may be as little noisy, or less"
        elif self.more:
            why = f": {self.listed} listed (max_solutions {self.cap})"
        elif self.stopped is not None and self.stopped.phase == "enumerate":
            why = f": the listing was stopped ({self.stopped.reason})"
        else:
            why = f": listing stopped at {self.listed} (max_solutions {self.cap}); whether more survive is not known"
        out = [f"survivors: {self.count} machine{'s' if self.count != '1' else ''} with {node_count(self.nodes)}{why}"]
        if self.listed > 1:
            total = len(self.agree) + len(self.varies) + len(self.free)
            text = f"the listed machines agree on {len(self.agree)} of {total} transitions"
            if self.free:
                text += f", {len(self.free)} {'is' if len(self.free) == 1 else 'are'} free in all"
            if self.varies:
                named = ", ".join(f"{u} on {k}" for u, k, _ in self.varies[:shown])
                text += f"; they differ on {named}" + (", …" if len(self.varies) > shown else "")
            out.append(text)
        if self.consistent is not None:
            out.append(
                f"{self.equivalence} to the truth at every depth: {self.consistent} of the {self.judged} listed"
                + ("" if self.judged == self.listed else f" with a verdict ({self.listed} listed)")
            )
        out.extend(self._truth_lines())
        if self.single_action:
            out.append(single_action_note(self.negatives))
        if hint and (self.listed > 1 or not self.complete or self.truth_merges is not None):
            out.append(
                "what would separate them, and the observations too rare to: rmtk learn --explain "
                "(LearnResult.explain())"
            )
        return out

    def _truth_lines(self) -> list[str]:
        """How the truth stands against the data mined (from demonstrations only)."""
        if self.truth_merges is None or self.truth_nodes is None or self.nodes is None:
            return []
        if self.truth_merges:
            merges = (
                f"the truth ({node_count(self.truth_nodes)}) merges the two words of {self.truth_merges} of the "
                f"{self.negatives} negative examples mined (false positives of the confidence bound)"
            )
            if self.cost is None:
                return [f"{merges}: it cannot survive; MaxSAT drops the fewest, a smaller alpha mines fewer"]
            worse = self.truth_merges > self.cost
            return [f"{merges}; the optimum drops {self.cost}" + (": the truth is not optimal" if worse else "")]
        if not self.negatives:
            if self.truth_nodes <= self.nodes:
                return []
            return [
                "no negative example was mined, so nothing in the data refutes a machine smaller than the truth "
                f"({node_count(self.truth_nodes)})"
            ]
        keeps = f"the truth ({node_count(self.truth_nodes)}) keeps every one of the {self.negatives} negative examples"
        if self.truth_nodes > self.nodes:
            if not self.smallest:
                return [f"{keeps}; the machines listed have the {node_count(self.nodes)} searched"]
            return [
                f"{keeps}, but {node_count(self.nodes)} suffice for them: the demonstrations do not show what "
                "would need its other nodes"
            ]
        if self.truth_listed:
            return [f"{keeps} and is listed"]
        if self.truth_nodes == self.nodes:
            return [
                f"{keeps} and has the {'smallest size' if self.smallest else 'size searched'}"
                + ("" if self.complete else "; it may be among the machines not listed")
            ]
        return [keeps]
