"""State-only data: the expert's behaviour keyed by *state histories* instead of label words,
for learning the labeling function together with the machine (docs/design/13-learning-labels.md)..

When the labels are unknown, the only thing a history of the expert shows is its sequence of
states. rmtk reuses the whole prefix-tree machinery for it by viewing an MDP as its *state
view*: every state is its own proposition (``L(s) = s``). A label word of the state view is a
state sequence, so

* :func:`state_mdp` is the MDP with identity labels;
* :func:`state_task` is the task seen the same way: the true machine over the state alphabet,
  ``δ_S(u, s) = δ(u, L(s))`` (same product, same expert policy);
* :class:`StateHistoryPTP` wraps a PTP strategy (:class:`~rmtk.ptp.exact.ExactPTP` for the exact
  expert, :class:`~rmtk.ptp.empirical.EmpiricalPTP` for demonstrations) and builds its prefix tree
  policy on the state view: a trie keyed by state sequences.

Compression: with unknown labels nothing collapses two *different* consecutive states, but a
repeated state repeats its label, so under non-stuttering the histories ``… s s …`` and
``… s …`` reach the same node: the state trie collapses runs of one state (what compression
of the state view's words does).
"""

from __future__ import annotations

import attrs
import numpy as np

from ..errors import DataError, RmtkError
from ..machine.model import RewardMachine
from ..mdp.model import LabeledMDP
from ..mdp.space import Space
from ..progress import Progress
from ..ptp.tree import PrefixTreePolicy, PTPCapabilities
from ..task import Task

_STATE_VIEWS: dict[int, tuple[LabeledMDP, LabeledMDP]] = {}


def state_mdp(mdp: LabeledMDP) -> LabeledMDP:
    """``mdp`` with every state its own proposition (labels = state indices); the result is
    cached per MDP object."""
    key = id(mdp)
    hit = _STATE_VIEWS.get(key)
    if hit is not None and hit[0] is mdp:
        return hit[1]
    view = attrs.evolve(mdp, labels=np.arange(mdp.n_states), propositions=mdp.states, name=f"{mdp.name}-states")
    if len(_STATE_VIEWS) > 32:
        _STATE_VIEWS.clear()
    _STATE_VIEWS[key] = (mdp, view)
    return view


def is_state_view(mdp: LabeledMDP) -> bool:
    """Whether ``mdp`` labels each state with its own proposition (a state view)."""
    return mdp.propositions == mdp.states and np.array_equal(mdp.labels, np.arange(mdp.n_states))


def state_machine(task: Task) -> RewardMachine:
    """The task's machine read over the state alphabet: ``δ_S(u, s) = δ(u, L(s))``, rewards
    likewise."""
    if not isinstance(task, Task):
        raise RmtkError(f"state_machine needs an rmtk.Task, not {type(task).__name__} {task!r}")
    m, mdp = task.require_machine("its machine read over states (the expert's memory)"), task.mdp
    letters = task.letter_of_proposition[mdp.labels]
    return RewardMachine(
        nodes=m.nodes,
        alphabet=mdp.states,
        delta_u=m.delta_u[:, letters],
        delta_r=m.delta_r[:, letters],
        initial=m.initial,
        name=m.name,
    )


def state_task(task: Task) -> Task:
    """The task on its state view: same expert, histories keyed by state sequences (no machine
    when the task has none; where it was written kept, for errors)."""
    if not isinstance(task, Task):
        raise RmtkError(
            f"state_task needs an rmtk.Task (the MDP and its machine), not {type(task).__name__} {task!r}"
            + ("; load one with rmtk.dsl.load_model(path).tasks[name]" if isinstance(task, str) else "")
        )
    return Task(
        state_mdp(task.mdp),
        None if task.machine is None else state_machine(task),
        gamma=task.gamma,
        lam=task.lam,
        depth=task.depth,
        max_nodes=task.max_nodes,
        name=task.name,
        origin=task.origin,
    )


def state_target(target):
    """The state view of a task or an MDP; a :class:`~rmtk.mdp.space.Space` recorded with one
    proposition per state (``collect(..., labeler=None)``) is one already."""
    if isinstance(target, Task):
        return state_task(target)
    if isinstance(target, LabeledMDP):
        return state_mdp(target)
    if isinstance(target, Space):
        if target.n_propositions != target.n_states:
            raise RmtkError(
                f"space {target.name!r} was recorded with labels ({target.n_propositions} propositions "
                f"for {target.n_states} states): to learn the labels, record state histories "
                "(rmtk.gym.collect with labeler=None)"
            )
        return target
    raise RmtkError(f"learning the labels needs a Task or a LabeledMDP (its states), not {type(target).__name__}")


def _a_ptp(instance, attribute, value) -> None:
    if isinstance(value, StateHistoryPTP) or not callable(getattr(value, "build", None)):
        raise RmtkError(
            f"StateHistoryPTP wraps a PTP strategy (ExactPTP, EmpiricalPTP, or one with a build method), not "
            f"{type(value).__name__} {value!r}"
        )


@attrs.frozen
class StateHistoryPTP(PTPCapabilities):
    """A PTP strategy read over state histories: ``inner`` (e.g. ``ExactPTP(None)`` or
    ``EmpiricalPTP(demos)``) applied to the state view of the target (what
    :class:`~rmtk.labels.learner.LabelLearner` learns from). Its prefix tree policy is keyed by
    state sequences (the trie's letters are state indices); its capabilities are ``inner``'s,
    read on the state view. Its words are no label words: ``build`` and ``oracle``, what a
    label-given :class:`~rmtk.learner.pipeline.Learner` would call, refuse with an error that says so;
    the label learner calls :meth:`state_tree` and :meth:`state_oracle`."""

    inner: object = attrs.field(validator=_a_ptp)

    @property
    def _inner(self):
        return PTPCapabilities.of(self.inner)

    @property
    def compress(self) -> bool:  # type: ignore[override]
        return bool(self._inner.compress)

    @property
    def depth(self):
        return getattr(self.inner, "depth", None)

    def every_depth_for(self, target) -> bool:
        task = target if isinstance(target, Task) else None
        return bool(self._inner.every_depth_for(None if task is None else state_task(task)))

    def _refuse(self):
        raise RmtkError(
            "StateHistoryPTP gives state histories, not label words: learn the labels and the machine with "
            "rmtk.labels.LabelLearner(ptp=<the PTP it wraps>)"
        )

    def build(self, target, progress: Progress) -> PrefixTreePolicy:  # refused: see the class docstring
        self._refuse()

    def oracle(self, target):  # refused: see the class docstring
        self._refuse()

    def state_tree(self, target, progress: Progress) -> PrefixTreePolicy:
        """``inner``'s prefix tree policy on the state view of ``target``."""
        view = state_target(target)
        if not isinstance(view, Space):
            _check_states(getattr(self.inner, "data", None), view.mdp if isinstance(view, Task) else view)
        ptp = self.inner.build(view, progress)
        check_state_keyed(ptp)
        return ptp

    def state_oracle(self, target):
        """``inner``'s oracle on the state view of ``target`` (``None``: it has none)."""
        return self._inner.oracle(state_target(target))

    def expert_classes(self, task: Task):
        classes = self._inner.expert_classes(state_task(task))
        if classes is not None:
            return classes
        from ..ptp.exact import SoftOptimal

        return SoftOptimal().class_table(state_task(task))


def _check_states(data, mdp: LabeledMDP) -> None:
    """Demonstrations whose states exceed the MDP: an error naming the trajectory and step."""
    states = getattr(data, "states", None)
    lengths = getattr(data, "lengths", None)
    if states is None or lengths is None:
        return
    inside = np.arange(states.shape[1])[None, :] < np.asarray(lengths)[:, None]
    bad = inside & (np.asarray(states) >= mdp.n_states)
    if bad.any():
        i, t = np.argwhere(bad)[0]
        raise DataError(
            f"trajectory {i}, step {t}: state index {int(states[i, t])} is not a state of mdp "
            f"{mdp.name!r}, which has {mdp.n_states} states (0 to {mdp.n_states - 1})"
        )


def check_state_keyed(ptp: PrefixTreePolicy) -> None:
    """A prefix tree policy over state histories has, at every word, the state its last letter
    names; one keyed by label words does not (an error saying so)."""
    tree = ptp.tree
    letter = tree.trie.letter[tree.pair_node]
    if np.any(letter != tree.pair_state):
        raise RmtkError(
            "this prefix tree policy is keyed by label words, not by state histories: learning the "
            "labels needs a PTP strategy built on the state view (StateHistoryPTP)"
        )
