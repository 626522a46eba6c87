"""Active reward machine learning: one loop that asks the expert for the data that separates
the machines still possible (docs/design/12-active-learning.md).

:class:`ActiveLearner` runs every question strategy (:mod:`rmtk.active.questions`: asking on
the synchronised product of a model, :class:`~rmtk.active.questions.SplitMostPairs`; asking at
recorded histories without one, :class:`~rmtk.active.recorded.AtRecordedTriples`). It starts
from the data there is (possibly none) and repeats:

1. the strategy's inquiry finds the round's *hypotheses*: a smallest machine consistent with
   everything the expert showed and, beside it, some rivals (never the list of every survivor);
2. it asks the questions of the first kind the strategy offers that has any (split the
   hypotheses, free transitions, transition tests, alternatives; the last two only for a check
   that samples), and folds the answers into what is known;
3. once no question is left, the equivalence check (:mod:`rmtk.active.checks`) looks for a
   counterexample; once a round's hypotheses were all checked against what is known now (in it
   or an earlier round, :mod:`rmtk.active.cycles`), the survivors are listed, at most
   ``max_solutions`` (each checked again by an exact check, a refuted one sending the loop on) —

until the survivors are listed, or a :class:`~rmtk.active.asking.Budget`, the time limit, a stop
request or ``max_rounds`` ends the run (the survivors so far, flagged). Every question goes
through one :class:`~rmtk.active.asking.Asker`, so no bound is exceeded. The loop reads what the
expert, the strategy and the check declare (their capabilities), never probes them; it learns
from the expert's answers only, and verdicts against a task's machine are computed afterwards,
as the :class:`~rmtk.learner.pipeline.Learner` does.
"""

from __future__ import annotations

import time
from typing import Protocol, runtime_checkable

import attrs
import numpy as np

from ..errors import RmtkError
from ..learner.pipeline import LearnResult, expert_class_table, machines_of, verdicts_of
from ..limits import NEVER, Deadline, max_nodes_or_default
from ..mdp.model import LabeledMDP
from ..mdp.space import Space
from ..negatives.anytime import Adaptive
from ..negatives.miners import NegativePairs, PolicyClasses
from ..negatives.statistics import Sequential
from ..progress import Progress, Recorder, as_progress
from ..ptp.tree import PrefixTree, Trie
from ..sat.encoders import EncoderCapabilities, SatEncoder
from ..sat.search import SearchResult
from ..task import Task
from ..validators import (
    BOUND_WHY,
    MAX_NODES,
    implements,
    node_count,
    optional_positive_int,
    optional_seconds,
    positive_int,
    unit_interval,
    whole,
)
from .asking import Asker, Budget
from .checks import CheckCapabilities, EquivalenceCheck
from .conformance import SuiteCoverage
from .cycles import Verdicts
from .experts import Expert, ExpertCapabilities, check_expert
from .family import firm_up, judge
from .knowledge import Knowledge
from .questions import KINDS, Hypotheses, Query, QuestionStrategy, Setting, SplitMostPairs, StrategyCapabilities
from .recordings import recorded_only
from .result import ENDED_BY, ActiveResult, Round, found, machines
from .sampling import as_queries, resolved_stop, sample, standing, undecided_merges

__all__ = ["ActiveLearner", "ActiveResult", "Budget", "Round", "default_check", "RESOLUTION"]

#: The default target resolution of questions to an expert that is run (total variation).
RESOLUTION = 0.3

#: How much the less visited history of a comparison grows per batch (docs/design/14-sampled-experts.md).
GROWTH = 1.5


@runtime_checkable
class RewardRecovery(Protocol):
    """What an ``irl`` strategy offers (:class:`~rmtk.rewards.maxent.MaxEntIRL`,
    :class:`~rmtk.rewards.margin.MarginIRL`): rewards of the machines found."""

    def fit(self, mdp, machines, policy, *, gamma, lam, progress): ...


def _encoder(instance, attribute, value) -> None:
    if value is not None and not isinstance(value, SatEncoder):
        raise RmtkError(f"encoder={value!r} is not a SatEncoder: the loop's searches use its clauses or search")


def _budget(instance, attribute, value) -> None:
    if not isinstance(value, Budget):
        raise RmtkError(f"budget must be a rmtk.active.Budget, not {type(value).__name__}")


def _resolution(instance, attribute, value) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= 1
    if not ok:
        raise RmtkError(
            f"resolution must lie in (0, 1], got {value!r} (ActiveLearner): the smallest difference in total "
            "variation between the expert's actions after two histories that a question to an expert that is run "
            "samples until it resolves"
        )


def _progress(value) -> Progress:
    try:
        return as_progress(value)
    except TypeError as exc:
        raise RmtkError(str(exc)) from exc


@attrs.frozen
class ActiveLearner:
    """Learn a reward machine by asking an expert (see the module docstring).

    Args:
        strategy: how questions are found (:class:`~rmtk.active.questions.QuestionStrategy`;
            default :class:`~rmtk.active.questions.SplitMostPairs`, which needs a model).
        check: the equivalence check (default: the strategy's for the expert, e.g. the exact
            :class:`~rmtk.active.checks.ProductCheck` for an expert that offers its product
            oracle, else :class:`~rmtk.active.checks.ExpertWalks`).
        encoder: the SAT side (default: the strategy's: a lazy
            :class:`~rmtk.sat.encoders.SatEncoder` on the product, weighted MaxSAT at recorded triples).
        budget: what may be spent (:class:`~rmtk.active.asking.Budget`); never exceeded.
        max_nodes: bound u_max (default: the task's, else 4).
        max_solutions: the survivors listed at the end, at most (``None``: all); beyond it the
            result says at least how many survive.
        test_rounds: rounds of questions that test unchanged survivors against machines of one
            node more (the ``alternatives`` kind) before the equivalence check.
        max_rounds: a bound on the rounds whatever the budget (the survivors are then
            returned, flagged ``exhausted="rounds"``).
        alpha: level of the tests of counts: negative examples from counts (the paper's eq. 18-19
            for recorded data alone; the anytime-valid bound of :mod:`rmtk.negatives.anytime` for counts the
            loop gathered while looking, docs/design/14-sampled-experts.md), and of what a resolution
            promises.
        resolution: the target resolution of questions to an expert that is run: two histories
            are sampled sequentially until the expert is seen to act differently after them, or
            until no difference as large as this (in total variation) remains at level ``alpha``,
            or the budget ends (docs/design/14-sampled-experts.md); the sampled equivalence check tests
            at it too.
        irl: reward recovery on the machines found, from what is known of the expert
            (:class:`~rmtk.rewards.maxent.MaxEntIRL`, :class:`~rmtk.rewards.margin.MarginIRL`; ``None``: none).
        time_limit: seconds for the whole run (with :meth:`fit`'s ``deadline``, the sooner).
        progress: a :class:`~rmtk.progress.Progress`; one note per round.
    """

    strategy: QuestionStrategy = attrs.field(
        factory=SplitMostPairs,
        validator=implements(
            "a question strategy",
            "start",
            example="SplitMostPairs(): its start begins a run's inquiry, whose choose picks each round's questions",
        ),
    )
    check: EquivalenceCheck | None = attrs.field(
        default=None, validator=implements("an equivalence check", "run", optional=True)
    )
    encoder: SatEncoder | None = attrs.field(default=None, validator=_encoder)
    budget: Budget = attrs.field(factory=Budget, validator=_budget)
    max_nodes: int | None = attrs.field(default=None, validator=node_count)
    max_solutions: int | None = attrs.field(default=1000, validator=optional_positive_int)
    test_rounds: int = attrs.field(default=2, validator=whole(0))
    max_rounds: int = attrs.field(default=500, validator=positive_int)
    alpha: float = attrs.field(default=0.05, validator=unit_interval(open_low=True, open_high=True))
    resolution: float = attrs.field(default=RESOLUTION, validator=_resolution)
    irl: RewardRecovery | None = attrs.field(
        default=None, validator=implements("a reward recovery", "fit", optional=True, example="MaxEntIRL()")
    )
    time_limit: float | None = attrs.field(default=None, validator=optional_seconds)
    progress: Progress = attrs.field(factory=Progress, converter=_progress)

    def fit(
        self, target: Task | LabeledMDP | Space, expert: Expert, *, data=None, deadline: Deadline | None = None
    ) -> ActiveResult:
        """Learn from ``expert`` on ``target``'s environment (a :class:`~rmtk.task.Task`, a
        :class:`~rmtk.mdp.model.LabeledMDP`, or a :class:`~rmtk.mdp.space.Space` without a model), starting
        from ``data`` (demonstrations, a path, a count table or a recording; default: the
        expert's recorded data, if any). A task target is used for the bound u_max and for
        verdicts after learning, never by the loop. ``deadline``: the run's
        (:class:`~rmtk.limits.Deadline`; a stop request ends it too)."""
        task = target if isinstance(target, Task) else None
        mdp = target.mdp if isinstance(target, Task) else target
        if not isinstance(mdp, (LabeledMDP, Space)):
            raise RmtkError(f"active learning needs a Task, a LabeledMDP or a Space, not {type(target).__name__}")
        if deadline is not None and not isinstance(deadline, Deadline):
            raise RmtkError(f"deadline must be a rmtk.limits.Deadline, not {type(deadline).__name__}")
        strategy = StrategyCapabilities.of(self.strategy)
        if strategy.needs_model and not isinstance(mdp, LabeledMDP):
            raise RmtkError(
                f"{type(self.strategy).__name__} needs a transition model, and {mdp.name!r} is a "
                f"{type(mdp).__name__}: ask at recorded histories instead (strategy=rmtk.active.AtRecordedTriples())"
            )
        caps = check_expert(mdp, expert)
        check = self.check if self.check is not None else strategy.default_check(caps)
        check_caps = CheckCapabilities.of(check) if check is not None else None
        if check_caps is not None and check_caps.needs_product_oracle and not caps.equivalence:
            raise RmtkError(
                f"the check {type(check).__name__} asks the expert's exact product oracle, and "
                f"{type(expert).__name__} offers none (ExpertCapabilities.equivalence): use ExpertWalks"
            )
        if self.encoder is not None and caps.compressed and not EncoderCapabilities.of(self.encoder).non_stuttering:
            raise RmtkError(
                "the expert's histories are compressed words, which assume a non-stuttering machine: "
                "use an encoder with non_stuttering=True, or an expert asked with uncompressed words"
            )
        max_nodes = max_nodes_or_default(self.max_nodes, task.max_nodes if task is not None else None)
        if max_nodes > MAX_NODES:
            raise RmtkError(
                f"task {target.name!r} suggests max_nodes {max_nodes}, above rmtk's bound of {MAX_NODES} nodes: "
                f"{BOUND_WHY}; pass a smaller max_nodes"
            )
        deadline = (deadline or NEVER).sooner(self.time_limit)
        rec = Recorder(self.progress)
        t0 = time.perf_counter()
        sampled = not caps.exact and caps.answers_queries  # counts gathered while looking at them
        knowledge = Knowledge(
            mdp,
            exact=caps.exact,
            compressed=caps.compressed,
            alpha=self.alpha,
            recorded=data if data is not None else caps.recorded,
            test=Sequential(alpha=self.alpha, epsilon=self.resolution, bound=Adaptive(), growth=GROWTH)
            if sampled
            else None,
        )
        asker = Asker(expert, caps, self.budget, deadline)
        beside = caps.evaluations_beside()
        setting = Setting(mdp, knowledge, self.encoder, max_nodes, self.max_solutions, caps.exact, deadline, rec)
        inquiry = self.strategy.start(setting)
        try:
            run = _Run(self, inquiry, check, check_caps, strategy, asker, knowledge, caps, rec, t0, max_nodes)
            res, _ = run.loop()
            known = inquiry.known()
            separation = inquiry.separation(res.solutions) if res.solutions else None
        finally:
            inquiry.close()
        result = self._result(task, mdp, caps, type(expert).__name__, res, known, rec, t0, deadline)
        if knowledge.test is not None:
            result = attrs.evolve(result, bound=knowledge.test.bound)
        out = ActiveResult(
            result,
            tuple(run.rounds),
            run.stopped,
            run.exhausted,
            asker.queries,
            asker.steps,
            len(knowledge),
            asker.evaluations + caps.evaluations_beside() - beside,
            None if caps.exact else knowledge.table,
            separation,
            draws=asker.draws,
            coverage=run.coverage,
            target=self.resolution if sampled else None,
            alpha=self.alpha,
            compared=standing(knowledge) if sampled else (),
            firmness=judge(
                knowledge, known[0], known[1], result, encoder=self.encoder, max_nodes=max_nodes, deadline=deadline
            )
            if sampled and isinstance(known[1], NegativePairs)
            else None,
        )
        if sampled and run.stopped and not run.proved:  # flagged or not, what the samples resolved
            out = attrs.evolve(out, stopped=resolved_stop(out, run.stopped, knowledge))
        return out

    # -- the result -------------------------------------------------------------------------
    def _result(self, task, mdp, caps, name: str, res: SearchResult, known, rec, t0, deadline) -> LearnResult:
        ptp, neg, oracle = known
        tree = ptp.tree if ptp is not None else PrefixTree(Trie.root(), np.empty(0), np.empty(0), 0)
        timings = dict(rec.timings)
        result = LearnResult(
            machines=machines_of(mdp, res) if res.n_nodes is not None else (),
            solutions=res.solutions,
            search=res,
            classes=neg if isinstance(neg, PolicyClasses) else None,
            tree=tree,
            mdp=mdp,
            verdicts=None,
            timings=timings,
            negatives=neg if isinstance(neg, NegativePairs) else None,
            ptp=ptp,
            oracle=oracle,
        )
        if task is not None and task.machine is not None:  # a truth to judge against
            result = attrs.evolve(result, truth=task.machine)
            if result.machines:
                result = self._judge(task, result, caps, name, rec, deadline)
        if self.irl is not None and result.machines and ptp is not None:
            if not isinstance(mdp, LabeledMDP):
                rec.note(f"no rewards: {mdp.name!r} has no transition model (pass irl=None to say so)")
            elif deadline.expired():
                rec.note(f"no rewards: {deadline.reason()} before the reward recovery")
            else:
                gamma = task.discount if task is not None else mdp.gamma
                lam = task.lam if task is not None else 1.0
                fits = tuple(self.irl.fit(mdp, result.machines, ptp, gamma=gamma, lam=lam, progress=rec))
                machines = tuple(f.machine for f in fits) + result.machines[len(fits) :]
                result = attrs.evolve(result, machines=machines, reward_fits=fits)
                timings.update(rec.timings)
        timings["total"] = time.perf_counter() - t0
        return result

    def _judge(
        self, task: Task, result: LearnResult, caps, name: str, rec: Recorder, deadline: Deadline
    ) -> LearnResult:
        """Verdicts against ``task`` from the policy classes the expert declares; without them,
        a warning and none (as the :class:`~rmtk.learner.pipeline.Learner`)."""
        if deadline.expired():
            rec.note(f"no verdicts: {deadline.reason()} before they were computed")
            return result
        table = expert_class_table(
            task,
            caps.expert_classes(task),
            f"the expert {name}'s expert_classes",
            f"the expert {name} does not say which policy it follows (give it expert_classes(task), "
            "rmtk.active.ExpertCapabilities)",
            rec,
        )
        if table is None:
            return result
        t = time.perf_counter()
        non_stuttering = EncoderCapabilities.of(self.encoder).non_stuttering if self.encoder is not None else True
        verdicts, some = verdicts_of(task, table, result.machines, result.solutions, non_stuttering)
        rec.stage("verdict", time.perf_counter() - t)
        return attrs.evolve(result, verdicts=verdicts, completion_consistent=some, expert_classes=table)


class _Run:
    """The state of one :meth:`ActiveLearner.fit` loop (see the module docstring)."""

    def __init__(self, learner, inquiry, check, check_caps, strategy, asker, knowledge, caps, rec, t0, max_nodes):
        self.learner, self.inquiry, self.check, self.check_caps = learner, inquiry, check, check_caps
        self.max_nodes = max_nodes
        self.strategy, self.asker, self.knowledge = strategy, asker, knowledge
        self.caps, self.rec, self.t0 = caps, rec, t0
        self.rounds: list[Round] = []
        self.stopped, self.exhausted = "", None
        self.exact_check = bool(check_caps is not None and check_caps.exact)
        self.systematic = bool(check_caps is not None and check_caps.systematic)
        self._refuting: tuple[Query, ...] = ()
        self._new, self._reason = 0, "equivalence"
        self.coverage: object = None
        self._check_name = "exact" if self.exact_check else type(check).__name__ if check is not None else ""
        self.proved = False  # an exact check (or an exact expert) stated the answer
        self._compared: tuple = ()

    def _note(self, hyps: Hypotheses, reason: str, asked, walks: int, new: int) -> None:
        a = self.asker
        compared, self._compared = self._compared, ()
        self.rounds.append(
            Round(
                len(self.rounds),
                reason,
                tuple(asked),
                walks,
                new,
                len(hyps),
                hyps.nodes,
                a.queries,
                a.steps,
                len(self.knowledge),
                time.perf_counter() - self.t0,
                hyps.rebuilt,
                hyps.complete,
                hyps.negatives,
                hyps.cost,
                a.draws,
                compared,
                self._check_name if reason == "equivalence" else "",
            )
        )
        self.rec.note(str(self.rounds[-1]))

    def _end(self, why: str, text: str | None = None) -> None:
        self.exhausted = why
        self.stopped = f"{ENDED_BY.get(why, why)}: " + (text or "the survivors so far")

    def loop(self) -> tuple[SearchResult, Hypotheses | None]:
        learner, inquiry, knowledge, asker = self.learner, self.inquiry, self.knowledge, self.asker
        reason, walks, new = "start", 0, len(knowledge)
        asked: tuple[Query, ...] = ()
        verdicts, last_keys, same = Verdicts(knowledge), None, 0  # same: alternatives rounds since the keys changed
        last: Hypotheses | None = None
        while True:
            hyps = inquiry.round()
            self._note(hyps, reason, asked, walks, new)
            if hyps.nodes is None:
                why = asker.stopped()
                if why is not None:  # the deadline stopped the search: the last hypotheses, flagged
                    self._end(why)
                    break
                self.stopped = hyps.message
                return SearchResult(None, (), True, (), 0, 0, 0.0, 0.0, 0.0, hyps.message), None
            last = hyps
            if not self.caps.answers_queries:
                self.stopped = recorded_only(knowledge, type(asker.expert).__name__)  # refuses an empty one
                break
            why = asker.stopped() or ("rounds" if len(self.rounds) >= learner.max_rounds else None)
            if why is not None:
                self._end(why)
                break
            keys = hyps.keys
            if verdicts.covers(keys):  # checked against what is known now, in this round or an earlier one
                res, refuted = self._listed(hyps)
                if refuted:
                    if self._reason == "firm":  # draws that made negative examples firm: the verdicts stand
                        verdicts.keep()
                    reason, asked, walks, new = self._reason, self._refuting, 0, self._new
                    continue
                why = asker.exhausted or asker.stopped()  # a bound met while listing: the list is so far
                if why is not None:
                    self._end(why)
                else:
                    self.proved = self.exact_check
                    target = learner.resolution if knowledge.test is not None else None
                    self.stopped = found(
                        res, self.exact_check, type(self.check).__name__, learner.max_solutions, target
                    )
                return res, last
            same, last_keys = (same if keys == last_keys else 0), keys
            queries, kind = self._questions(hyps, same)
            same += kind == "alternatives"
            if queries:
                done, new = self._ask(queries)
                asked = tuple(done)
                if not asked:
                    self._end(asker.exhausted or "queries")
                    break
                reason, walks = kind, 0
                continue
            if self.check is None:
                res = self._final(hyps)
                self.stopped = (
                    "one machine survives"
                    if len(res.solutions) == 1 and res.complete
                    else f"{machines(res)} survive, and no {self.strategy.question} they disagree on is left to ask"
                )
                return res, last
            before = asker.queries, asker.steps, asker.draws
            known = len(knowledge)
            answers, walks = self._check_run([np.asarray(d) for d in hyps.machines])
            knowledge.add(*answers)
            new = len(knowledge) - known  # a check may fold long walks itself, piece by piece
            if (asker.queries, asker.steps, asker.draws) == before and asker.exhausted is not None:
                self._end(asker.exhausted, "the survivors so far, before the equivalence check")
                break
            reason, asked = "equivalence", tuple(as_queries(answers))
            verdicts.checked(keys)
        return self._final(last), last

    def _questions(self, hyps: Hypotheses, same: int) -> tuple[list[Query], str]:
        for kind in KINDS:
            if kind not in self.strategy.kinds:
                continue
            if kind in ("tests", "alternatives") and (self.exact_check or self.systematic):
                continue  # an exact or a systematic check covers them: these stand in for random walks
            if kind == "alternatives" and same >= self.learner.test_rounds:
                continue
            queries = list(self.inquiry.choose(kind, hyps))
            if queries:
                return queries, kind
        return [], ""

    def _ask(self, queries: list[Query]) -> tuple[list[Query], int]:
        """Ask ``queries`` while the budget allows; the questions asked and the (word, state)
        pairs new to the knowledge. An exact expert is asked once per history, in groups (the
        histories of one witness together, or none of them); an expert that is run, one
        comparison per witness, sampled sequentially until decided (:mod:`rmtk.active.sampling`),
        ending the round after the first batch that separates one."""
        asker, caps = self.asker, self.caps
        if not caps.exact:
            done = sample(asker, self.knowledge, queries, focus=self.strategy.focus)
            self._compared = self._compared + done.compared
            return list(done.asked), done.new
        groups: list[list[Query]] = []
        for q in queries:
            key = (q.state, frozenset((q.word, q.partner)))
            if (
                groups
                and groups[-1][0].partner
                and (groups[-1][0].state, frozenset((groups[-1][0].word, groups[-1][0].partner))) == key
            ):
                groups[-1].append(q)
            else:
                groups.append([q])
        asked, answers = [], []
        for group in groups:
            cost = sum(int(caps.act_steps(q.word, q.state, 1)) for q in group)
            if not asker.allows(len(group), cost):
                break
            for q in group:
                obs = asker.act(q.word, q.state, q.samples)
                if obs is None:
                    break
                answers.append(obs)
                asked.append(q)
        return asked, self.knowledge.add(*answers)

    def _check_run(self, machines) -> tuple[list, int]:
        """The check's answers and walks; what it covered is kept (a check may say, as a third
        value of its answer)."""
        out = self.check.run(self.asker, self.knowledge, machines)
        answers, walks = out[0], out[1]
        if len(out) > 2 and out[2] is not None:
            self.coverage = out[2]
            if isinstance(out[2], SuiteCoverage):
                self._compared = self._compared + out[2].compared
        return answers, walks

    def _listed(self, hyps: Hypotheses) -> tuple[SearchResult, bool]:
        """The survivors, at most ``max_solutions``, each judged by an exact check (a refuted
        one ends the listing: its counterexample is asked and the loop goes on). Without an
        exact check, a listing longer than the hypotheses is split once more: where questions
        tell its machines apart, they are asked and the loop goes on."""
        self._refuting, self._new, self._reason = (), 0, "equivalence"
        if not self.exact_check:
            res = self.inquiry.survivors(self.learner.max_solutions)
            if self._settle(res, hyps) or self._firm(res, hyps):
                return res, True
            if len(res.solutions) > len(hyps) and "split" in self.strategy.kinds and not self.asker.stopped():
                listing = Hypotheses(
                    res.n_nodes, tuple(s.delta_u for s in res.solutions), tuple(s.used for s in res.solutions)
                )
                queries = self.inquiry.choose("split", listing)
                if queries:
                    done, self._new = self._ask(queries)
                    if done:
                        self._refuting, self._reason = tuple(done), "split"
                        return res, True
            return res, False
        state = {"refuted": False}

        def judge(delta) -> bool:
            answers, _ = self._check_run([np.asarray(delta)])
            if answers:
                self._new = self.knowledge.add(*answers)
                self._refuting = tuple(as_queries(answers))
                state["refuted"] = True
                return False
            return True

        res = self.inquiry.survivors(self.learner.max_solutions, judge)
        return res, state["refuted"]

    def _settle(self, res: SearchResult, hyps: Hypotheses) -> bool:
        """From an expert that is run: the comparisons the first survivor merges that no batch
        decided (a round ended them at a separation elsewhere) are sampled until decided, so the
        answer's merges rest on the run's resolution; whether one was separated (the loop goes
        on). Logged as a round of its own when it asked anything."""
        if self.caps.exact or self.knowledge.test is None or not res.solutions or self.asker.stopped():
            return False
        pending = undecided_merges(self.knowledge, np.asarray(res.solutions[0].delta_u))
        if not pending:
            return False
        done = sample(self.asker, self.knowledge, pending)
        self._compared = self._compared + done.compared
        if done.separated and done.asked:
            self._refuting, self._new, self._reason = tuple(done.asked), done.new, "merges"
            return True
        if done.asked:
            self._note(hyps, "merges", done.asked, 0, done.new)
        return False

    def _firm(self, res: SearchResult, hyps: Hypotheses) -> bool:
        """From an expert that is run: :func:`~rmtk.active.family.firm_up`; whether it asked."""
        if self.caps.exact or self.knowledge.test is None or not res.solutions or self.asker.stopped():
            return False
        done = firm_up(self.asker, self.knowledge, res, encoder=self.learner.encoder, max_nodes=self.max_nodes)
        if done is None or not done.asked:
            return False
        self._refuting, self._new, self._reason = done.asked, done.new, "firm"
        return True

    def _final(self, hyps: Hypotheses | None) -> SearchResult:
        """The survivors when the run ends: listed (at most ``max_solutions``) while the
        deadline allows, else the last hypotheses."""
        res = (
            self.inquiry.survivors(self.learner.max_solutions)
            if hyps is not None and not self.asker.stopped()
            else None
        )
        if res is not None and res.n_nodes is not None and res.solutions:
            return res
        if hyps is None or hyps.nodes is None:
            return res if res is not None else SearchResult(None, (), True, (), 0, 0, 0.0, 0.0, 0.0, self.stopped)
        return hyps.as_result(self.knowledge.mdp.n_propositions)


def default_check(expert, strategy: QuestionStrategy | None = None):
    """The check a run uses when none is given: the strategy's for the expert's declared
    capabilities (for :class:`~rmtk.active.questions.SplitMostPairs`: the exact
    :class:`~rmtk.active.checks.ProductCheck` when the expert offers its product oracle, else
    :class:`~rmtk.active.checks.ExpertWalks`)."""
    strategy = strategy if strategy is not None else SplitMostPairs()
    return StrategyCapabilities.of(strategy).default_check(ExpertCapabilities.of(expert))
