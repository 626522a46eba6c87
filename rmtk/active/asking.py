"""Asking the expert within a budget (docs/design/12-active-learning.md): the :class:`Budget` of a run
and the :class:`Asker`, the loop's one door to the expert.

Every question of a run, whichever strategy or check chose it, goes through the asker. Before
asking it checks what the question would cost against what is left: one query per action
question, per walk and per exact equivalence query; the policy draws (the actions asked for,
``k`` per run of ``k`` steps); and the environment steps the expert declares for it (resets and
restores, replayed and asked steps: :meth:`~rmtk.active.experts.ExpertCapabilities.act_steps`).
A question that would exceed a bound, or that comes after the run's deadline (its time limit,
the budget's seconds, a stop requested by SIGINT or SIGTERM), is not asked, and the asker says
which bound ended the run. A budget is therefore never exceeded, whatever asks.

An answer is checked before anything uses it: an :class:`~rmtk.active.experts.Observations` of
the question asked, with finite non-negative values of the right shape (distributions that sum
to 1 from an exact expert, whole counts of the actions drawn from one that is run), and no more
steps or draws than declared. An exception raised inside the expert is reported as a
:class:`~rmtk.active.experts.QueryError` naming the question, with the original chained.
"""

from __future__ import annotations

import time

import attrs
import numpy as np

from ..errors import RmtkError
from ..limits import NEVER, Deadline
from ..validators import is_whole, positive
from .experts import ExpertCapabilities, Observations, QueryError, history_text


def _count(instance, attribute, value) -> None:
    if value is not None and (not is_whole(value) or value < 1):
        raise RmtkError(
            f"budget {attribute.name} must be a positive number (a whole number of at least 1), got {value!r}"
        )


@attrs.frozen
class Budget:
    """What a run may spend: expert ``queries`` (an action question, a walk or an exact
    equivalence query each), environment ``steps`` (resets and restores, steps replayed to
    reach a history, steps taken by walks or by the expert's actions), policy ``draws`` (actions
    the expert drew), and wall-clock ``seconds`` from the start of
    :meth:`~rmtk.active.loop.ActiveLearner.fit`; ``None``: no bound. A bound is never exceeded:
    a question that would is not asked."""

    queries: int | None = attrs.field(default=None, validator=_count)
    steps: int | None = attrs.field(default=None, validator=_count)
    seconds: float | None = attrs.field(default=None, validator=positive(optional=True, prefix="budget"))
    draws: int | None = attrs.field(default=None, validator=_count)


#: Tolerance on the sum of an exact answer's distribution.
SUM_TOL = 1e-6


class Asker:
    """Asks ``expert`` (declaring ``caps``, :class:`~rmtk.active.experts.ExpertCapabilities`)
    within ``budget`` and before ``deadline`` (see the module docstring); counts what was spent.

    ``exhausted`` names the bound that stopped a question (``"queries"``, ``"steps"``,
    ``"draws"``, ``"seconds"``: the budget; ``"time limit"``, ``"interrupted"``, ``"terminated"``:
    the run's deadline), or is ``None``."""

    def __init__(self, expert, caps: ExpertCapabilities, budget: Budget, deadline: Deadline = NEVER):
        self.expert, self.caps, self.budget, self.deadline = expert, caps, budget, deadline
        self.mdp = expert.mdp
        self.started = time.monotonic()
        self.budget_deadline = Deadline(None if budget.seconds is None else self.started + budget.seconds)
        self.queries = self.steps = self.draws = self.evaluations = 0
        self.exhausted: str | None = None

    # -- what is left -------------------------------------------------------------------------
    def stopped(self) -> str | None:
        """Which time bound has passed: the run's deadline (its reason) or the budget's seconds."""
        if self.deadline.expired():
            return self.deadline.reason()
        if self.budget_deadline.expired():
            return "seconds"
        return None

    def allows(self, queries: int = 1, steps: int = 0, draws: int = 0) -> bool:
        """Whether ``queries`` more questions costing ``steps`` environment steps and ``draws``
        policy draws fit; when not, ``exhausted`` says which bound is in the way."""
        b = self.budget
        why = self.stopped()
        if why is None and b.queries is not None and self.queries + queries > b.queries:
            why = "queries"
        if why is None and b.steps is not None and self.steps + steps > b.steps:
            why = "steps"
        if why is None and b.draws is not None and self.draws + draws > b.draws:
            why = "draws"
        if why is not None:
            self.exhausted = self.exhausted or why
            return False
        return True

    def room(self, most: int, steps_each: int, draws_each: int = 0) -> int:
        """How many of ``most`` questions costing ``steps_each`` steps and ``draws_each`` draws
        each fit now (0 when a time bound has passed); nothing is spent or flagged."""
        if self.stopped() is not None:
            return 0
        b, n = self.budget, int(most)
        if b.queries is not None:
            n = min(n, b.queries - self.queries)
        if b.steps is not None and steps_each > 0:
            n = min(n, (b.steps - self.steps) // int(steps_each))
        if b.draws is not None and draws_each > 0:
            n = min(n, (b.draws - self.draws) // int(draws_each))
        return max(0, n)

    def draws_left(self) -> int | None:
        """How many policy draws the budget still allows, ``None`` for no bound."""
        return None if self.budget.draws is None else max(0, self.budget.draws - self.draws)

    # -- questions ----------------------------------------------------------------------------
    def act(self, word, state: int, samples: int = 1) -> Observations | None:
        """The expert's answer at the history (``samples`` actions drawn by one that is run, the
        distribution from an exact one), or ``None`` when the budget or deadline does not allow it."""
        word = tuple(int(k) for k in word)
        m = 1 if self.caps.exact else int(samples)
        cost = int(self.caps.act_steps(word, int(state), m))
        if not self.allows(1, cost, 0 if self.caps.exact else m):
            return None
        what = f"act at the history {history_text(self.mdp, word, state)} ({m} action{'s' if m != 1 else ''})"
        obs = self._call(what, self.expert.act, word, int(state), m)
        self._check(obs, what, cost, exact=self.caps.exact)
        if len(obs) != 1 or tuple(obs.words[0]) != word or int(obs.states[0]) != int(state):
            raise QueryError(f"the expert's answer to {what} is about other histories: {self._about(obs)}")
        if not self.caps.exact and not np.isclose(obs.values.sum(), m):
            raise QueryError(
                f"the expert's answer to {what} counts {obs.values.sum():g} actions where {m} were asked for"
            )
        self.queries += 1
        self.steps += int(obs.steps)
        self.draws += obs.draws
        self.evaluations += 1 if self.caps.exact else 0
        return obs

    def extend(self, word, state, k: int, m: int, explore: float = 0.0) -> Observations | None:
        """``m`` continuations of ``k`` steps from the history (``None``: from the start), one
        query each, or ``None`` when the budget or deadline does not allow them."""
        word = None if word is None else tuple(int(x) for x in word)
        cost = int(self.caps.extend_steps(word, state, int(k), int(m)))
        if not self.allows(int(m), cost, int(k) * int(m)):
            return None
        where = "the start" if word is None else f"the history {history_text(self.mdp, word, state)}"
        what = f"{m} run{'s' if m != 1 else ''} of {k} steps from {where}"
        obs = self._call(what, self.expert.extend, word, state, int(k), int(m), explore)
        self._check(obs, what, cost, exact=False, extension=True)
        if obs.draws > int(k) * int(m):
            raise QueryError(
                f"the expert's answer to {what} counts {obs.draws} actions drawn, more than the {int(k) * int(m)} "
                "its runs can draw: a draw budget could not hold"
            )
        self.queries += int(m)
        self.steps += int(obs.steps)
        self.draws += obs.draws
        return obs

    def equivalence(self, limit: int = 1):
        """The expert's exact product oracle (one query), or ``None`` when the budget or
        deadline does not allow it."""
        if not self.allows(1, 0):
            return None
        oracle = self._call("an exact equivalence query (its product oracle)", self.caps.product_oracle, limit)
        if oracle is None:
            raise RmtkError(
                f"the exact equivalence check asks an expert that offers an exact product oracle; "
                f"{type(self.expert).__name__} offers none (ExpertCapabilities.product_oracle): use ExpertWalks"
            )
        self.queries += 1
        return oracle

    # -- checking answers ---------------------------------------------------------------------
    def _call(self, what: str, fn, *args):
        try:
            return fn(*args)
        except RmtkError:
            raise
        except Exception as exc:
            raise QueryError(
                f"the expert {type(self.expert).__name__} failed to answer {what}: {type(exc).__name__}: {exc}"
            ) from exc

    def _about(self, obs: Observations) -> str:
        pairs = list(zip(obs.words, np.asarray(obs.states).tolist()))
        shown = ", ".join(f"({tuple(w)}, {s})" for w, s in pairs[:3])
        return shown + (f" and {len(pairs) - 3} more" if len(pairs) > 3 else "") if pairs else "none"

    def _check(self, obs, what: str, cost: int, *, exact: bool, extension: bool = False) -> None:
        """The answer is an :class:`Observations` that can be used as it is (else a
        :class:`QueryError` naming the question and what is wrong)."""
        if not isinstance(obs, Observations):
            raise QueryError(
                f"the expert's answer to {what} is {type(obs).__name__} {obs!r}, not rmtk.active.Observations"
            )
        A, S, K = self.mdp.n_actions, self.mdp.n_states, self.mdp.n_propositions
        values = np.asarray(obs.values)
        states = np.asarray(obs.states)
        bad = None
        if values.dtype == object or not np.issubdtype(values.dtype, np.number):
            bad = f"values of type {values.dtype}, not numbers"
        elif values.shape != (len(obs.words), A):
            bad = (
                f"values of shape {values.shape}; ({len(obs.words)}, {A}) expected (one row of {A} actions per history)"
            )
        elif states.shape != (len(obs.words),):
            bad = f"{states.size} states for {len(obs.words)} words"
        elif not np.isfinite(values).all():
            bad = "values that are not finite (NaN or infinite)"
        elif (values < 0).any():
            bad = "negative values"
        elif len(states) and (not np.issubdtype(states.dtype, np.integer) or states.min() < 0 or states.max() >= S):
            bad = f"states outside 0..{S - 1}"
        elif any(not len(w) or min(w) < 0 or max(w) >= K for w in obs.words):
            bad = f"words that are not non-empty words of proposition indices 0..{K - 1}"
        elif obs.exact != exact:
            bad = (
                "exact distributions where counts were expected"
                if obs.exact
                else "counts where exact distributions were expected"
            )
        elif exact and (np.abs(values.sum(axis=1) - 1) > SUM_TOL).any():
            bad = f"a row that is not a probability distribution (sums {values.sum(axis=1).tolist()})"
        elif not exact and (values != np.round(values)).any():
            bad = "counts that are not whole numbers"
        elif not isinstance(obs.steps, (int, np.integer)) or isinstance(obs.steps, bool) or obs.steps < 0:
            bad = f"steps {obs.steps!r}, not a whole number"
        elif obs.steps > cost:
            bad = (
                f"{obs.steps} environment steps spent, more than the {cost} the expert declares "
                f"({'extend_steps' if extension else 'act_steps'}): a step budget could not hold"
            )
        if bad is not None:
            raise QueryError(f"the expert's answer to {what} has {bad}; it is not used")
