"""Active reward machine learning: ask the expert for the data that separates the survivors
(docs/design.md, section 12).

The loop starts from the data there is (possibly none) and repeats:

1. learn the survivors, the smallest machines consistent with everything the expert showed
   (:class:`~rmtk.active.survivors.Survivors`: a lazy search on solvers kept between rounds);
2. if several survive, ask the questions a :class:`~rmtk.active.questions.QueryStrategy` picks (by
   default the witnesses that split the most surviving pairs per unit of cost) and fold the
   answers into the knowledge;
3. once no question is left, run the sampled equivalence check
   (:class:`~rmtk.active.questions.ExpertWalks`): if what it shows refutes a survivor, go on; if not,
   stop —

or until a :class:`Budget` (queries, environment steps, seconds) is spent, in which case the
survivors so far are returned, flagged. The loop learns from the expert's answers only; when
the target is a task, verdicts against its machine are computed afterwards, as the
:class:`~rmtk.learner.Learner` does.
"""

from __future__ import annotations

import time
from typing import Any

import attrs
import numpy as np

from ..encoders import SatEncoder
from ..errors import RmtkError
from ..learner import LearnResult, _machines, _verdicts
from ..mdp import LabeledMDP
from ..negatives import NegativePairs, PolicyClasses
from ..progress import Progress, Recorder
from ..ptp import PrefixTree, Trie
from ..task import Task
from ..validators import positive
from .experts import Expert, QueryError
from .questions import EquivalenceCheck, ExpertWalks, ProductCheck, Query, QueryStrategy, SplitMostPairs
from .survivors import Knowledge, Survivors


@attrs.frozen
class Budget:
    """What the loop may spend: expert ``queries`` (an action query or a walk each),
    environment ``steps`` (actions drawn or walked), wall-clock ``seconds``; ``None``: no bound."""

    queries: int | None = attrs.field(default=None, validator=positive(optional=True, prefix="budget"))
    steps: int | None = attrs.field(default=None, validator=positive(optional=True, prefix="budget"))
    seconds: float | None = attrs.field(default=None, validator=positive(optional=True, prefix="budget"))

    def spent(self, queries: int, steps: int, t0: float, more_steps: int = 0) -> str | None:
        """Which bound is reached (``"seconds"``, ``"queries"``, ``"steps"``) after ``queries``
        and ``steps`` since ``t0`` (``time.perf_counter``), or would be by ``more_steps`` more;
        ``None``: none."""
        if self.seconds is not None and time.perf_counter() - t0 >= self.seconds:
            return "seconds"
        if self.queries is not None and queries >= self.queries:
            return "queries"
        if self.steps is not None and (steps >= self.steps or (more_steps and steps + more_steps > self.steps)):
            return "steps"
        return None


def _count(n: int, one: str, many: str | None = None) -> str:
    """``n`` and the noun, singular for one (``1 query``, ``2 queries``)."""
    return f"{n} {one if n == 1 else (many or one + 's')}"


@attrs.frozen
class Round:
    """One round of the loop: what was ``asked`` before it (``reason``: ``"start"``,
    ``"queries"`` or ``"equivalence"``), the survivors found after folding the answers in
    (``survivors`` machines of ``nodes`` nodes), and the totals spent so far. ``"tests"``:
    questions where the survivors disagree with machines of one node more."""

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

    def __str__(self) -> str:
        asked = _count(len(self.asked), "query", "queries")
        what = {
            "start": "from the data there is",
            "queries": asked,
            "tests": f"{asked} testing the survivors against larger machines",
            "free": f"{asked} using free transitions of the survivors",
            "transitions": f"{asked} testing each transition of the survivor",
            "equivalence": f"equivalence check, {_count(self.walks, 'walk')}"
            if self.walks
            else "exact equivalence check (the synchronised product with the expert's policy)",
        }[self.reason]
        survive = (
            f"{_count(self.survivors, 'machine')} of {_count(self.nodes, 'node')} "
            f"{'survives' if self.survivors == 1 else 'survive'}"
            if self.nodes is not None
            else "no machine survives"
        )
        return (
            f"round {self.index}: {what}, {_count(self.new_pairs, 'new (word, state) pair')}; {survive}; "
            f"spent {_count(self.queries, 'query', 'queries')}, {_count(self.steps, 'step')}, "
            f"{_count(self.known, 'pair')} known, {self.seconds:.2f} s" + ("; solvers rebuilt" if self.rebuilt else "")
        )


@attrs.frozen
class ActiveResult:
    """What :meth:`ActiveLearner.fit` found: the :class:`~rmtk.learner.LearnResult` of the
    last round, the log of ``rounds``, why it ``stopped`` and, when a budget ran out, which
    (``exhausted``: ``"queries"``, ``"steps"``, ``"seconds"`` or ``"rounds"``; the survivors are
    those so far)."""

    result: LearnResult
    rounds: tuple[Round, ...]
    stopped: str
    exhausted: str | None
    queries: int
    steps: int
    known: int

    @property
    def flagged(self) -> bool:
        """The budget ran out before the loop could stop by itself."""
        return self.exhausted is not None

    def log(self) -> str:
        lines = [str(r) for r in self.rounds]
        lines.append(f"stopped: {self.stopped}")
        return "\n".join(lines)


def _keys(solutions) -> list:
    from ..sat.search import canonical_partial

    return sorted(canonical_partial(s.delta_u, s.used)[0] for s in solutions)


@attrs.frozen
class ActiveLearner:
    """Learn a reward machine by asking an expert (see the module docstring).

    Args:
        strategy: which questions to ask (:class:`~rmtk.active.questions.QueryStrategy`; default
            :class:`~rmtk.active.questions.SplitMostPairs`).
        check: the equivalence check (default: :class:`~rmtk.active.questions.ProductCheck`, exact, for
            an expert whose policy is known, one with a ``product_oracle``; else
            :class:`~rmtk.active.questions.ExpertWalks`).
        encoder: the SAT side; its ``structure`` clauses are used and counterexamples added
            lazily (default :class:`~rmtk.encoders.SatEncoder`).
        budget: what may be spent (:class:`Budget`).
        max_nodes: bound u_max (default: the task's, else 4).
        max_solutions: stop enumerating a round's survivors after this many.
        test_rounds: rounds of questions that test unchanged survivors against machines of one
            node more (the strategy's ``alternatives``) before the equivalence check.
        max_rounds: a bound on the rounds whatever the budget (the survivors are then
            returned, flagged ``exhausted="rounds"``).
        alpha: confidence level of negative examples from counts (eq. 18-19).
        irl: reward recovery on the machines found, from what is known of the expert
            (:class:`~rmtk.rewards.maxent.MaxEntIRL`, :class:`~rmtk.rewards.margin.MarginIRL`; ``None``: none).
        progress: a :class:`~rmtk.progress.Progress`; one note per round.
    """

    strategy: QueryStrategy = attrs.field(factory=SplitMostPairs)
    check: EquivalenceCheck | None = None
    encoder: SatEncoder = attrs.field(factory=SatEncoder)
    budget: Budget = attrs.field(factory=Budget)
    max_nodes: int | None = None
    max_solutions: int | None = 1000
    test_rounds: int = 2
    max_rounds: int = 500
    alpha: float = 0.05
    irl: Any = None
    progress: Progress = attrs.field(factory=Progress)

    def __attrs_post_init__(self):
        for name, value, method in (
            ("strategy", self.strategy, "choose"),
            ("check", self.check, "run"),
            ("encoder", self.encoder, "structure"),
        ):
            if value is None and name == "check":
                continue
            if not callable(getattr(value, method, None)):
                raise RmtkError(f"{name}={value!r} has no {method} method (see docs/design.md, section 12)")
        if not isinstance(self.budget, Budget):
            raise RmtkError(f"budget must be a rmtk.active.loop.Budget, not {type(self.budget).__name__}")

    def fit(self, target: Task | LabeledMDP, expert: Expert, *, data=None) -> ActiveResult:
        """Learn from ``expert`` on ``target``'s MDP, starting from ``data`` (demonstrations, a
        path or a count table; default: the expert's recorded data, if any). A task target is
        used for the bound u_max and for verdicts after learning, never by the loop."""
        task = target if isinstance(target, Task) else None
        mdp = target.mdp if isinstance(target, Task) else target
        if not isinstance(mdp, LabeledMDP):
            raise RmtkError(f"active learning needs a Task or a LabeledMDP, not {type(target).__name__}")
        _check_expert(mdp, expert)
        check = self.check if self.check is not None else default_check(expert)
        rec = Recorder(self.progress)
        t0 = time.perf_counter()
        compressed = bool(getattr(expert, "compressed", True))
        knowledge = Knowledge(
            mdp,
            exact=expert.exact,
            compressed=compressed,
            alpha=self.alpha,
            recorded=data if data is not None else expert.recorded,
        )
        max_nodes = self.max_nodes or (task.max_nodes if task is not None else None) or 4
        survivors = Survivors(self.encoder, mdp.n_propositions, max_nodes=max_nodes, compressed=compressed)
        spent = {"queries": 0, "steps": 0}
        rounds: list[Round] = []
        reason, walks, new = "start", 0, len(knowledge)
        asked: list[Query] = []
        checked: list | None = None  # survivors the last equivalence check was run on
        tests, last_keys = 0, None
        stopped, exhausted = "", None
        try:
            while True:
                ptp, neg, oracle = knowledge.oracle()
                found = survivors.search(oracle, max_solutions=self.max_solutions, lower_bound=oracle.lower_bound())
                res = found.search
                rounds.append(
                    Round(
                        len(rounds),
                        reason,
                        tuple(asked),
                        walks,
                        new,
                        len(res.solutions),
                        res.n_nodes,
                        spent["queries"],
                        spent["steps"],
                        len(knowledge),
                        time.perf_counter() - t0,
                        found.rebuilt,
                    )
                )
                rec.note(str(rounds[-1]))
                if res.n_nodes is None:
                    stopped = res.message
                    break
                if not expert.answers_queries:
                    stopped = "the expert answers no queries: the survivors of the recorded data"
                    break
                if checked is not None:
                    if (
                        checked[0] == res.n_nodes
                        and all(not oracle.check(d) for d in checked[1])
                        and len(checked[1]) == len(res.solutions)
                    ):
                        stopped = (
                            "one machine survives and the equivalence check found no counterexample"
                            if len(res.solutions) == 1
                            else f"{len(res.solutions)} machines survive that no question left tells apart, and "
                            "the equivalence check found no counterexample"
                        )
                        break
                    checked = None
                exhausted = self._exhausted(spent, t0) or ("rounds" if len(rounds) >= self.max_rounds else None)
                if exhausted:
                    stopped = f"the {exhausted} budget is spent: the survivors so far"
                    break
                deltas = [s.delta_u for s in res.solutions]
                queries = self.strategy.choose(mdp, deltas, knowledge, expert) if len(deltas) > 1 else []
                reason = "queries"
                keys = (res.n_nodes, len(deltas))
                tests = tests + 1 if keys == last_keys else 0
                last_keys = keys
                # an exact check finds counterexamples itself: testing the survivors is for a sampled one
                proof = bool(getattr(check, "exact", False))
                count = 0 if proof else getattr(self.strategy, "alternatives", 0)
                for kind in ("free",) if proof else ("free", "tests"):  # optional methods of a strategy
                    ask = getattr(self.strategy, kind, None)
                    if not queries and callable(ask):
                        queries = ask(mdp, res.solutions, knowledge)
                        reason = "free" if kind == "free" else "transitions"
                if not queries and count and tests < self.test_rounds:
                    alternatives = survivors.alternatives(oracle, count)
                    if alternatives:
                        queries = self.strategy.choose(mdp, deltas, knowledge, expert, alternatives)
                        reason = "tests"
                if queries:
                    asked, new = self._ask(expert, queries, knowledge, spent, t0)
                    walks = 0
                    if not asked:
                        exhausted = self._exhausted(spent, t0, queries[0]) or "queries"
                        stopped = f"the {exhausted} budget is spent: the survivors so far"
                        break
                    continue
                n_walks = self._walks_allowed(check, spent, t0)
                if n_walks == 0:
                    exhausted = self._exhausted(spent, t0) or "steps"
                    stopped = f"the {exhausted} budget is spent before the equivalence check: the survivors so far"
                    break
                answers, asked_n = check.run(expert, n_walks, knowledge, deltas)
                spent["queries"] += asked_n
                spent["steps"] += sum(obs.steps for obs in answers)
                new = knowledge.add(*answers)
                reason, asked, walks = "equivalence", [], n_walks if check.steps(1) else 0
                checked = [res.n_nodes, deltas]
        finally:
            survivors.close()
        result = self._result(task, mdp, expert, res, ptp, neg, oracle, rec, t0)
        return ActiveResult(result, tuple(rounds), stopped, exhausted, spent["queries"], spent["steps"], len(knowledge))

    # -- budget -----------------------------------------------------------------------------
    def _exhausted(self, spent, t0, query: Query | None = None) -> str | None:
        more = query.samples if query is not None else 0
        return self.budget.spent(spent["queries"], spent["steps"], t0, more)

    def _walks_allowed(self, check, spent, t0) -> int:
        b, n = self.budget, check.walks
        if b.seconds is not None and time.perf_counter() - t0 >= b.seconds:
            return 0
        if b.queries is not None:
            n = min(n, b.queries - spent["queries"])
        if b.steps is not None:
            per = max(1, check.steps(1)) if callable(getattr(check, "steps", None)) else 1
            n = min(n, (b.steps - spent["steps"]) // per)
        return max(0, int(n))

    def _ask(self, expert, queries, knowledge, spent, t0) -> tuple[list[Query], int]:
        asked, answers, b = [], [], self.budget
        for q in queries:
            if b.queries is not None and spent["queries"] + 1 > b.queries:
                break
            if b.steps is not None and not expert.exact and spent["steps"] + q.samples > b.steps:
                break
            if b.seconds is not None and time.perf_counter() - t0 >= b.seconds:
                break
            obs = expert.act(q.word, q.state, q.samples)
            spent["queries"] += 1
            spent["steps"] += obs.steps
            answers.append(obs)
            asked.append(q)
        return asked, knowledge.add(*answers)

    # -- the result -------------------------------------------------------------------------
    def _result(self, task, mdp, expert, res, ptp, neg, oracle, rec, t0) -> LearnResult:
        tree = ptp.tree if ptp is not None else PrefixTree(Trie.root(), np.empty(0), np.empty(0), 0)
        classes = neg if isinstance(neg, PolicyClasses) else None
        pairs = neg if isinstance(neg, NegativePairs) else None
        timings = dict(rec.timings)
        result = LearnResult(
            machines=_machines(mdp, res) if res.n_nodes is not None else (),
            solutions=res.solutions,
            search=res,
            classes=classes,
            tree=tree,
            mdp=mdp,
            verdicts=None,
            timings=timings,
            negatives=pairs,
            ptp=ptp,
            oracle=oracle,
        )
        if task is not None and result.machines:
            from ..exact import _source

            t = time.perf_counter()
            table = _source(getattr(expert, "source", "soft-optimal")).class_table(task)
            verdicts, some = _verdicts(task, table, result.machines, result.solutions, self.encoder.non_stuttering)
            timings["verdict"] = time.perf_counter() - t
            result = attrs.evolve(
                result, verdicts=verdicts, truth=task.machine, completion_consistent=some, expert_classes=table
            )
        if self.irl is not None and result.machines and ptp is not None:
            gamma = task.discount if task is not None else mdp.gamma
            fits = tuple(
                self.irl.fit(
                    mdp, result.machines, ptp, gamma=gamma, lam=task.lam if task is not None else 1.0, progress=rec
                )
            )
            machines = tuple(f.machine for f in fits) + result.machines[len(fits) :]
            result = attrs.evolve(result, machines=machines, reward_fits=fits)
            timings.update(rec.timings)
        timings["total"] = time.perf_counter() - t0
        return result


def default_check(expert) -> EquivalenceCheck:
    """The exact check for an expert whose policy is known, the sampled one otherwise."""
    return ProductCheck() if callable(getattr(expert, "product_oracle", None)) else ExpertWalks()


def _check_expert(mdp: LabeledMDP, expert) -> None:
    """The expert acts in the target's environment: same propositions, states and actions."""
    for attr in ("act", "extend"):
        if not callable(getattr(expert, attr, None)):
            raise RmtkError(f"expert {expert!r} has no {attr} method (see rmtk.active.experts.Expert)")
    emdp = getattr(expert, "mdp", None)
    if emdp is None:
        raise RmtkError(f"expert {type(expert).__name__} says nothing of its environment (no mdp attribute)")
    if tuple(emdp.propositions) != tuple(mdp.propositions):
        raise QueryError(
            f"the expert's alphabet ({', '.join(emdp.propositions)}) differs from the task's "
            f"({', '.join(mdp.propositions)}): its answers cannot be read as the task's words"
        )
    if (emdp.n_states, emdp.n_actions) != (mdp.n_states, mdp.n_actions):
        raise QueryError(
            f"the expert acts on {emdp.n_states} states and {emdp.n_actions} actions, the task's mdp "
            f"{mdp.name!r} has {mdp.n_states} and {mdp.n_actions}"
        )
