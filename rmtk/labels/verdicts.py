"""Learned pairs judged against the truth, when the target is a task (docs/design/13-learning-labels.md):
policy-equivalence at every depth, equality up to renaming of nodes and
propositions, and whether the truth is among the survivors.

The truth is read as a pair (:func:`truth_pair`) and keyed exactly as the learned pairs are
(:func:`rmtk.labels.pairs.canonical_pair` over the transitions the histories determine: the
exercised ones and those non-stuttering forces), so that a listed pair that is the truth is
marked equal. Equality is judged on every state the MDP reaches: a pair that leaves a reachable
state without a label (no history of the data passed through it) is not the truth, even when it
agrees with it elsewhere, so ``equal`` implies ``consistent``. Whether the truth *survives* is a
statement about the data: the truth, read on the states the histories reach, has the smallest
size found and passes every check of the data.
"""

from __future__ import annotations

import attrs
import numpy as np

from ..limits import Deadline
from ..machine.equivalence import consistency_many, exercised, sync_product
from ..sat.lazy import Oracle
from ..task import Task
from .histories import state_machine, state_mdp, state_task
from .pairs import LabelSolution, canonical_pair, determined, mdp_reachable, state_delta, used_by_label

#: Pairs checked in one search of the product (their machines stacked side by side).
CHUNK = 32


@attrs.frozen
class LabelVerdict:
    """The verdict of one (labeling, machine) pair against the truth: ``consistent`` (policy-
    equivalent at every depth, with a witness otherwise) and ``equal`` (the truth up to
    renaming of nodes and propositions; ``False`` when the sizes differ); ``merges_truth``: every
    learned proposition is a union of true ones (the labels differ from the truth's only by
    merging propositions the expert does not tell apart)."""

    consistent: bool
    equal: bool
    witness: tuple | None = None
    merges_truth: bool = False


def truth_pair(task: Task, reach: np.ndarray, non_stuttering: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The truth as a (labeling, machine) pair on ``reach``: labels numbered densely (−1 off
    ``reach``), the machine over them, and its determined transitions (exercised by some
    history, or forced by non-stuttering: :func:`rmtk.labels.pairs.determined`)."""
    mdp, m = task.mdp, task.require_machine("verdicts against the truth")
    used_props = np.unique(mdp.labels[reach])
    dense = np.full(mdp.n_propositions, -1, np.int64)
    dense[used_props] = np.arange(len(used_props))
    labels = np.full(mdp.n_states, -1, np.int64)
    labels[reach] = dense[mdp.labels[reach]]
    du = m.delta_u[:, task.letter_of_proposition[used_props]]
    if m.initial != 0:  # node 0 first, as learned machines have it
        perm = [m.initial] + [u for u in range(m.n_nodes) if u != m.initial]
        pos = np.empty(m.n_nodes, np.int64)
        pos[perm] = np.arange(m.n_nodes)
        du = pos[du[perm]]
    smdp = state_mdp(mdp)
    D = state_delta(du, labels)
    used = used_by_label(exercised(sync_product(smdp, D, D), smdp, D), labels, du.shape[1])
    return labels, du, determined(du, used, non_stuttering)


def truth_key(task: Task, non_stuttering: bool = True) -> tuple[tuple, tuple[int, int]]:
    """The truth's canonical key over the states the MDP reaches, and its size (nodes,
    propositions)."""
    reach = mdp_reachable(task.mdp)
    lab, du, used = truth_pair(task, reach, non_stuttering)
    return canonical_pair(lab, du, used, reach)[0], (int(du.shape[0]), int(du.shape[1]))


def equal_to_truth(sol: LabelSolution, key: tuple, reach: np.ndarray) -> bool:
    """The pair is the truth up to both renamings (keys over the states the MDP reaches)."""
    return canonical_pair(sol.labels, sol.delta_u, sol.used, reach)[0] == key


def verdicts(
    task: Task,
    expert_classes: np.ndarray | None,
    solutions: tuple[LabelSolution, ...],
    seen: np.ndarray,
    deadline: Deadline,
    non_stuttering: bool = True,
) -> tuple[tuple[LabelVerdict | None, ...], tuple[int, int]]:
    """Each pair against the truth (``None`` for the pairs the deadline left unjudged), and the
    truth's size (nodes, propositions) on the states ``seen`` (those the histories reach).
    ``expert_classes`` may be ``None`` only when ``deadline`` has expired (no pair is judged)."""
    st = state_task(task)
    true_D = state_machine(task).delta_u
    key = truth_key(task, non_stuttering)[0]
    reach = mdp_reachable(task.mdp)
    t_lab = truth_pair(task, reach, non_stuttering)[0]
    seen_du = truth_pair(task, np.asarray(seen, np.int64), non_stuttering)[1]
    size = (int(seen_du.shape[0]), int(seen_du.shape[1]))
    out: list[LabelVerdict | None] = []
    for lo in range(0, len(solutions), CHUNK):
        chunk = solutions[lo : lo + CHUNK]
        if deadline.expired():
            out += [None] * len(chunk)
            continue
        if expert_classes is None:
            raise ValueError("verdicts: the expert's classes are needed while the deadline has not expired")
        checks = consistency_many(
            st.mdp,
            true_D,
            expert_classes,
            [s.state_machine() for s in chunk],
            true_initial=task.require_machine("verdicts against the truth").initial,
        )
        for s, v in zip(chunk, checks):
            pairs = set(zip(t_lab[reach].tolist(), s.labels[reach].tolist()))
            merges = len({t for t, _ in pairs}) == len(pairs)  # each true proposition maps to one learned one
            out.append(LabelVerdict(v.consistent, equal_to_truth(s, key, reach), v.witness, merges))
    return tuple(out), size


def truth_survives(
    task: Task,
    checker: Oracle,
    seen: np.ndarray,
    size: tuple[int, int],
    found: tuple[int | None, int | None],
    deadline: Deadline,
) -> bool | None:
    """The truth, read on the states ``seen``, is a survivor: it has the smallest size found and
    no check of the data fails on it (``None`` when the deadline passed first)."""
    if size != found:
        return False
    if deadline.expired():
        return None
    lab, du, _ = truth_pair(task, np.asarray(seen, np.int64))
    return not checker.check(state_delta(du, lab))
