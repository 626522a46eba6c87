"""The expert as something to ask: its actions at a history the learner chooses, and
trajectory extensions from there (docs/design/12-active-learning.md).

A *history* is a label word (proposition indices, compressed when the learner's trie is) and
the state it ends in; following the prefix convention (docs/design/02-conventions.md) the word's
last letter is the label of that state. An :class:`Expert` answers with
:class:`Observations`: one row per (word, state) it acted at, holding either the exact action
distribution (an expert whose policy is known) or action counts (an expert that can only be
run). The expert's memory is driven along the history's labels, never reset at its end.

What an expert can do beyond :meth:`Expert.act` and :meth:`Expert.extend` it *declares*
(:class:`ExpertCapabilities`): whether its answers are exact, whether it answers at all, whether
its words are compressed, what an answer costs in environment steps, which policy its verdicts
may be judged against, and whether it offers an exact product oracle (an equivalence query).
The loop reads these declarations and never probes; an expert that declares nothing is read
with the safe defaults (answers are counts, no verdicts, no exact check).

* :class:`TaskExpert`: the exact product policy of a task at any history (one policy
  evaluation per (history, state));
* :class:`SimulatedExpert`: a labeled MDP and a policy with memory, run: a history is
  realised by restoring the MDP state and driving the expert's node along the word; an
  action query draws ``m`` actions there, an extension ``m`` continuations of ``k`` steps,
  each with fresh seeded randomness;
* :class:`RecordedExpert`: recorded data only, no new queries (passive learning through the
  same loop as active learning).

Experts of a Gymnasium environment (run in the environment, its state restored or replayed)
are in :mod:`rmtk.gym.experts`; they answer through the same :class:`Expert` protocol.

The learner never looks inside an expert: a task's machine serves the expert's memory, and
verdicts against it are computed after learning, as for any learner.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import attrs
import numpy as np

from ..errors import RmtkError
from ..learner.capabilities import Capabilities
from ..machine.model import RewardMachine
from ..mdp.model import LabeledMDP
from ..mdp.space import Space
from ..task import Task
from ..validators import whole


class QueryError(RmtkError):
    """A query an expert cannot answer: a history it cannot realise, a memory it cannot drive,
    or an answer that is not one (the message names the question)."""


@attrs.frozen
class Observations:
    """Answers of an expert: the (word, state) pairs it acted at, with, per pair, the exact
    action distribution (``exact``) or the number of times each action was drawn (``draws``:
    the policy draws the answer shows). ``steps``: environment steps spent, every reset or
    restore of the environment counted as one beside every step taken (replayed to reach the
    history, or asked); ``evaluations``: policy evaluations (exact experts); ``ends``: for an
    extension, the (word, state) each continuation ended in, in order (rmtk's experts give them;
    a check continues a long walk from there in pieces)."""

    words: tuple[tuple[int, ...], ...]
    states: np.ndarray
    values: np.ndarray
    exact: bool
    steps: int = 0
    evaluations: int = 0
    ends: tuple = ()

    def __len__(self) -> int:
        return len(self.words)

    @property
    def draws(self) -> int:
        """The actions counted, the policy draws (0 for exact distributions, which draw nothing)."""
        return 0 if self.exact else int(round(float(np.asarray(self.values, dtype=float).sum())))


@runtime_checkable
class Expert(Protocol):
    """Answers queries about its behaviour (see the module docstring). ``mdp``: the
    environment (states, actions, propositions; a :class:`~rmtk.mdp.space.Space` for one known only
    through data, as the reacher's :class:`~rmtk.gym.reacher.ReacherExpert`). What else it can do
    it declares through :class:`ExpertCapabilities`."""

    @property
    def mdp(self) -> LabeledMDP | Space: ...

    def act(self, word: tuple[int, ...], state: int, m: int) -> Observations:
        """The expert's action distribution (exact) or ``m`` actions drawn after ``word`` at ``state``."""

    def extend(
        self, word: tuple[int, ...] | None, state: int | None, k: int, m: int, explore: float = 0.0
    ) -> Observations:
        """``m`` continuations of ``k`` steps from the history (``None``: from the start);
        with probability ``explore`` a step moves by a uniform action (the expert's own
        action at that step is still what is recorded)."""


class ExpertCapabilities(Capabilities):
    """What an expert can do beyond :class:`Expert`'s methods, with the safe defaults of one
    that does not say (docs/design/12-active-learning.md). rmtk's experts inherit it; a user's may, or
    stay structural and be read with these defaults (:meth:`~rmtk.learner.capabilities.Capabilities.of`)."""

    __slots__ = ()

    #: Answers are exact action distributions (one policy evaluation each), not counts of
    #: actions drawn. Default: ``False`` (counts, judged with a confidence bound).
    exact: bool = False

    #: :meth:`Expert.act` and :meth:`Expert.extend` may be called. Default: ``True``.
    answers_queries: bool = True

    #: Its histories are compressed words (runs of a label collapsed; the memory must be
    #: non-stuttering). Default: ``True``, rmtk's convention.
    compressed: bool = True

    #: It answers exact equivalence queries (:meth:`product_oracle` gives its product policy,
    #: which the exact check asks). Default: ``False``.
    equivalence: bool = False

    #: Data recorded before learning (demonstrations, a path, a count table or a
    #: :class:`~rmtk.gym.Recording`), or ``None``. Default: ``None``.
    recorded: object = None

    def act_steps(self, word: tuple[int, ...], state: int, m: int) -> int:
        """At most how many environment steps (resets and restores, steps replayed to reach the
        history, steps taken) :meth:`Expert.act` spends there to draw ``m`` actions: what a step
        budget is checked against before asking (the draws are ``m``). Default: ``m`` (one per
        action drawn), 0 for an exact expert."""
        return 0 if self.exact else int(m)

    def extend_steps(self, word: tuple[int, ...] | None, state: int | None, k: int, m: int) -> int:
        """At most how many environment steps :meth:`Expert.extend` spends (its draws are at
        most ``k * m``). Default: ``k * m`` (a reset and ``k − 1`` moves per run)."""
        return int(k) * int(m)

    def expert_classes(self, task: Task) -> np.ndarray | None:
        """``(S, n)`` policy class of each (state, node of ``task``'s machine) under this expert's
        policy: verdicts against the task compare with it. ``None`` (the default): unknown, so
        no verdicts (a guess could be wrong) and a warning says why."""
        return None

    def evaluations_beside(self) -> int:
        """Policy evaluations the expert has spent beside its answers, so far (an agent's whole
        product table, made once for the exact check and the verdicts): a run's
        ``evaluations`` count those it caused. Default: 0."""
        return 0

    def product_oracle(self, limit: int = 1):
        """The expert's product policy as an oracle (:class:`~rmtk.sat.lazy.ProductOracle`): an
        exact equivalence query on the synchronised product, which the exact check
        (:class:`~rmtk.active.checks.ProductCheck`) asks. ``None`` (the default): it offers none."""
        return None


def compress(word) -> tuple[int, ...]:
    """Runs of a repeated letter collapsed (``AAB`` → ``AB``)."""
    return tuple(int(k) for i, k in enumerate(word) if i == 0 or k != word[i - 1])


def realisable(mdp: LabeledMDP, word: tuple[int, ...], compressed: bool = True) -> np.ndarray:
    """``(S,)`` mask of the states some path from a start state ends in while producing
    ``word`` (compressed: runs of a label may last any number of steps)."""
    succ = mdp.successor_matrix()
    indptr, lab = np.asarray(succ.indptr), mdp.labels
    S = mdp.n_states
    rows, cols = np.repeat(np.arange(S), np.diff(indptr)), np.asarray(succ.indices)

    def step(mask):
        out = np.zeros(S, dtype=bool)
        out[cols[mask[rows]]] = True
        return out

    if not word:
        return np.zeros(S, dtype=bool)
    here = np.zeros(S, dtype=bool)
    here[mdp.start_states] = True
    here &= lab == word[0]
    for i, k in enumerate(word):
        if compressed:  # stay within the run of letter k as long as wanted
            while True:
                more = here | (step(here) & (lab == k))
                if (more == here).all():
                    break
                here = more
        if i + 1 < len(word):
            here = step(here) & (lab == word[i + 1])
    return here


def history_text(mdp, word, state) -> str:
    """A history as a person reads it: ``'A B' ending in state 's3'`` (names where the
    environment has them)."""
    props = mdp.propositions
    names = " ".join(str(props[k]) if 0 <= int(k) < len(props) else str(k) for k in word)
    named = isinstance(mdp, LabeledMDP) and 0 <= int(state) < mdp.n_states  # a Space has no state names
    where = repr(mdp.states[int(state)]) if named else str(state)
    return f"{names!r} ending in state {where}"


def check_history(mdp: LabeledMDP, word, state: int, compressed: bool) -> tuple[int, ...]:
    """``word`` as a tuple of proposition indices, after checking that ``mdp`` can produce the
    history (a non-empty word of its propositions, a state of it, a path from a start state
    with these labels ending there); a :class:`QueryError` naming it otherwise."""
    word = tuple(int(k) for k in word)
    K, S = mdp.n_propositions, mdp.n_states
    if not 0 <= int(state) < S:
        raise QueryError(f"state {state} is not a state of mdp {mdp.name!r} (0..{S - 1})")
    if not word or any(not 0 <= k < K for k in word):
        raise QueryError(f"history {word}: a non-empty word of proposition indices 0..{K - 1} is expected")
    if not realisable(mdp, word, compressed)[int(state)]:
        raise QueryError(
            f"mdp {mdp.name!r} cannot realise the history {history_text(mdp, word, state)}: "
            "no path from a start state produces these labels there"
        )
    return word


#: The most actions one question may draw (numpy's draws index with 32-bit counts, and each
#: draw costs 16 bytes on the way).
MAX_DRAWS = 2**31 - 1


def check_count(expert, value, what: str, minimum: int = 1) -> int:
    """``value`` as an int, after checking it is a whole number from ``minimum`` to
    :data:`MAX_DRAWS`; a :class:`QueryError` naming the expert and the argument otherwise."""
    ok = isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
    if not ok or not minimum <= value <= MAX_DRAWS:
        raise QueryError(
            f"{type(expert).__name__}: {what} must be a whole number from {minimum} to {MAX_DRAWS:,}, got {value!r}"
        )
    return int(value)


@attrs.define
class Draws:
    """Fresh randomness for each call of an expert, a function of its ``seed`` and of the
    call's number only: the same seed gives the same answers in the same order."""

    seed: int = attrs.field(default=0, validator=whole(0))
    calls: int = attrs.field(default=0, init=False)

    def next(self) -> np.random.Generator:
        """The generator of the next call."""
        self.calls += 1
        return np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=(self.calls,)))


@attrs.define
class _Product:
    """An expert policy with memory on a labeled MDP: ``pi[s, u, a]`` and the node table."""

    task: Task
    pi: np.ndarray
    compressed: bool
    machine: RewardMachine

    @classmethod
    def of(cls, task: Task, source, compressed: bool) -> _Product:
        machine = task.require_machine("asking the task's expert (its policy is computed from the machine)")
        if compressed and not machine.is_non_stuttering():
            raise QueryError(
                f"the expert's memory (machine {machine.name!r}) stutters: a compressed history "
                "does not determine its node; ask with uncompressed words (compress=False)"
            )
        from ..ptp.exact import policy_source

        pi = np.asarray(policy_source(source).policy(task), dtype=float)
        return cls(task, pi, compressed, machine)

    def node(self, word) -> int:
        """The expert's node after reading ``word`` from its initial node."""
        letter = self.task.letter_of_proposition
        u = self.machine.initial
        for k in word:
            u = int(self.machine.delta_u[u, letter[k]])
        return u

    def rollouts(
        self, rng, word, state, k: int, m: int, explore: float, exact: bool, node: int | None = None
    ) -> tuple[Observations, dict]:
        """``m`` runs of ``k`` steps; per visited (word, state) the distribution or counts
        (``node``: the expert's node after ``word``, when known), and the node each run ended in
        by its (word, state)."""
        mdp, task = self.task.mdp, self.task
        T, A, lab = mdp.kernel, mdp.n_actions, mdp.labels
        letter, delta = task.letter_of_proposition, self.machine.delta_u
        found: dict[tuple[tuple[int, ...], int], int] = {}
        rows: list[np.ndarray] = []
        ends = []
        for _ in range(m):
            w: tuple[int, ...]
            if word is None:
                s = int(rng.choice(mdp.n_states, p=mdp.initial))
                w = (int(lab[s]),)
                u = int(delta[self.machine.initial, letter[lab[s]]])
            else:
                s, w, u = int(state), tuple(word), (self.node(word) if node is None else node)
            for t in range(k):
                key = (w, s)
                a = int(rng.choice(A, p=self.pi[s, u]))
                if key not in found:
                    found[key] = len(rows)
                    rows.append(self.pi[s, u].copy() if exact else np.zeros(A))
                if not exact:
                    rows[found[key]][a] += 1
                if t + 1 == k:
                    break
                move = int(rng.integers(A)) if explore and rng.random() < explore else a
                lo, hi = T.indptr[s * A + move], T.indptr[s * A + move + 1]
                s = int(T.indices[lo + rng.choice(hi - lo, p=T.data[lo:hi] / T.data[lo:hi].sum())])
                if not (self.compressed and lab[s] == w[-1]):
                    w = w + (int(lab[s]),)
                u = int(delta[u, letter[lab[s]]])
            ends.append((w, s, u))
        values = np.array(rows).reshape(len(rows), A)
        return Observations(
            tuple(key[0] for key in found),
            np.array([key[1] for key in found], np.int64),
            values,
            exact,
            steps=m * k,
            evaluations=len(rows) if exact else 0,
            ends=tuple((w, s) for w, s, _ in ends),
        ), {(w, s): u for w, s, u in ends}


def _task(instance, attribute, value) -> None:
    if not isinstance(value, Task):
        raise RmtkError(
            f"{type(instance).__name__} answers from a task (an rmtk.Task: the MDP and the machine that is "
            f"the expert's memory), not {type(value).__name__} {value!r}; load one with "
            "rmtk.dsl.load_model(...).tasks[name]"
        )


def _flag(instance, attribute, value) -> None:
    if not isinstance(value, (bool, np.bool_)):
        raise RmtkError(f"{attribute.name} must be True or False, got {value!r} ({type(instance).__name__})")


@attrs.define
class _ProductExpert(ExpertCapabilities):
    """What the task's experts share: the task, the product policy of ``source`` on it, a seed
    for the draws (each call draws fresh numbers from it) and the compression of words."""

    task: Task = attrs.field(validator=_task)
    source: object = "soft-optimal"
    seed: int = attrs.field(default=0, validator=whole(0))
    compressed: bool = attrs.field(default=True, validator=_flag)
    recorded: object = None
    _product: _Product = attrs.field(init=False, repr=False)
    _draws: Draws = attrs.field(init=False, repr=False)
    _ends: dict = attrs.field(init=False, factory=dict, repr=False)

    def __attrs_post_init__(self):
        self._product = _Product.of(self.task, self.source, self.compressed)
        self._draws = Draws(self.seed)

    def act_steps(self, word, state, m: int) -> int:
        """One restore of the MDP state (no step: the actions are drawn there); 0 when exact."""
        return 0 if self.exact else 1

    def extend(self, word, state, k: int, m: int, explore: float = 0.0) -> Observations:
        k, m = check_count(self, k, "k (the steps of a run)"), check_count(self, m, "m (the runs)")
        node = None
        if word is not None:
            node = self._ends.get((tuple(word), int(state)))  # where its last runs ended: no need to check
            if node is None:
                word = check_history(self.mdp, word, state, self.compressed)
        obs, self._ends = self._product.rollouts(self._draws.next(), word, state, k, m, explore, False, node)
        return obs

    @property
    def mdp(self) -> LabeledMDP:
        return self.task.mdp

    def expert_classes(self, task: Task) -> np.ndarray:
        """The policy classes of this expert's ``source`` on ``task`` (the verdicts' truth)."""
        from ..ptp.exact import policy_source

        return policy_source(self.source).class_table(task)


@attrs.define
class TaskExpert(_ProductExpert):
    """The exact expert of a task: its product policy (``source``: ``"soft-optimal"``,
    ``"distinct"`` or a policy source such as :class:`~rmtk.ptp.exact.NodePolicyTable`) at any
    history, one evaluation per (history, state) asked. Its extensions are runs of that
    policy and show the actions drawn (counts); the learner asks :meth:`~rmtk.active.experts.Expert.act` where it wants
    the distribution. It offers the exact product oracle (:meth:`product_oracle`)."""

    exact: bool = attrs.field(default=True, init=False)
    equivalence: bool = attrs.field(default=True, init=False)

    def act(self, word, state, m: int = 1) -> Observations:
        word = check_history(self.mdp, word, state, self.compressed)
        pi = self._product.pi[int(state), self._product.node(word)]
        return Observations((word,), np.array([int(state)]), pi[None, :].copy(), True, 0, 1)

    def product_oracle(self, limit: int = 1):
        """The expert's product policy as an oracle (:class:`~rmtk.sat.lazy.ProductOracle`): its
        memory and, per (state, memory node), its policy class. A candidate is checked on the
        synchronised product at every depth; a counterexample is two histories the expert
        acts differently after that the candidate merges (an exact equivalence query)."""
        from ..machine.equivalence import policy_class_table
        from ..sat.lazy import ProductOracle

        machine = self._product.machine
        return ProductOracle(
            self.mdp,
            machine.delta_u[:, self.task.letter_of_proposition],
            policy_class_table(self._product.pi),
            compress=self.compressed,
            true_initial=machine.initial,
            limit=limit,
        )


@attrs.define
class SimulatedExpert(_ProductExpert):
    """An expert that can only be run: a labeled MDP (the task's) and a policy with memory
    (the task's machine and ``source``'s product policy; any stochastic per-node policy).
    Answers are action counts: an action question restores the MDP state (one environment
    step) and draws its actions there; a run of ``k`` steps costs a reset and ``k − 1`` moves.
    ``seed`` makes every answer reproducible (each call draws fresh numbers from it)."""

    exact: bool = attrs.field(default=False, init=False)

    def act(self, word, state, m: int = 100) -> Observations:
        m = check_count(self, m, "m (the actions drawn)")
        word = check_history(self.mdp, word, state, self.compressed)
        rng = self._draws.next()
        pi = self._product.pi[int(state), self._product.node(word)]
        counts = np.bincount(rng.choice(len(pi), size=int(m), p=pi), minlength=len(pi)).astype(float)
        return Observations((word,), np.array([int(state)]), counts[None, :], False, steps=1)


def _mdp(instance, attribute, value) -> None:
    if not isinstance(value, (LabeledMDP, Space)):
        raise RmtkError(f"{type(instance).__name__}: mdp must be a LabeledMDP or a Space, not {type(value).__name__}")


@attrs.define
class RecordedExpert(ExpertCapabilities):
    """Recorded data only (demonstrations, a path, or a count table; see
    :class:`~rmtk.ptp.empirical.EmpiricalPTP`): learning from it asks nothing, so passive learning
    runs through the active loop and stops after its first round."""

    mdp: LabeledMDP | Space = attrs.field(validator=_mdp)
    recorded: object
    answers_queries: bool = attrs.field(default=False, init=False)

    def act(self, word, state, m: int = 1) -> Observations:
        raise QueryError("a recorded expert answers no queries: its data are all there is")

    def extend(self, word, state, k: int, m: int, explore: float = 0.0) -> Observations:
        raise QueryError("a recorded expert answers no queries: its data are all there is")


def check_expert(mdp, expert) -> ExpertCapabilities:
    """The expert acts in the target's environment (same propositions by name, same numbers of
    states and actions); its declared capabilities."""
    if not isinstance(expert, Expert):
        raise RmtkError(
            f"expert {expert!r} is not an rmtk.active.Expert: it needs an mdp (its environment) and the methods "
            "act and extend (see rmtk.active.experts)"
        )
    emdp = expert.mdp
    if not isinstance(emdp, (LabeledMDP, Space)):
        raise RmtkError(f"expert {type(expert).__name__} says nothing usable of its environment (its mdp is {emdp!r})")
    if tuple(emdp.propositions) != tuple(mdp.propositions):
        same = set(emdp.propositions) == set(mdp.propositions)
        raise QueryError(
            f"the expert's alphabet ({', '.join(map(repr, emdp.propositions))}) differs from the task's "
            f"({', '.join(map(repr, mdp.propositions))})"
            + (": the same propositions in another order" if same else "")
            + ": its answers cannot be read as the task's words"
        )
    if (emdp.n_states, emdp.n_actions) != (mdp.n_states, mdp.n_actions):
        raise QueryError(
            f"the expert acts on {emdp.n_states} states and {emdp.n_actions} actions, the task's mdp "
            f"{mdp.name!r} has {mdp.n_states} and {mdp.n_actions}"
        )
    return ExpertCapabilities.of(expert)
