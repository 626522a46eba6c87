"""The verdict on a machine learned from rewards (docs/design/rewards-evidence.md): whether it
pays what the true machine pays after every word the MDP produces.

A step's reward is ``δ_r(u_t, L(s_{t+1}))`` (:mod:`rmtk.data.rewards`), so two machines pay
the same everywhere exactly when, at every triple (state, true node, learned node) of the
synchronised product that a word reaches (:func:`rmtk.machine.equivalence.sync_product`), both pay the
same on the label of every state the MDP can move to next. The search is exact and at every
depth; a difference comes with the shortest word that shows it, and whether the learned
machine's part of it is one the traces never observed (a free transition or reward, written as
a self-loop or 0: the data could not have decided it).
"""

from __future__ import annotations

from typing import ClassVar

import attrs
import numpy as np

from ..data.rewards import round_rewards
from ..machine.equivalence import stacked, sync_product
from ..mdp.model import LabeledMDP
from .tolerance import NoiseWidth


@attrs.frozen
class RewardVerdict:
    """Whether a learned machine pays what the true machine pays after every word the MDP produces.

    Attributes:
        consistent: it does (reward-equivalent at every depth).
        witness: otherwise ``(word, letter, paid, true_paid, state)``: after ``word`` (labels,
            reaching ``state``) the step into a state labeled ``letter`` pays ``paid`` under the
            learned machine and ``true_paid`` under the true one; the shortest such word.
        triples: reachable (state, true node, learned node) triples examined.
        unobserved: the witness runs through a transition, or ends on a reward, that no trace
            observes (free in the learned machine: the data could not decide it).
    """

    #: How a summary counts the machines judged equivalent (:class:`rmtk.learner.summary.MachineSummary`).
    equivalence: ClassVar[str] = "reward-equivalent"

    consistent: bool
    witness: tuple[tuple[str, ...], str, float, float, str] | None
    triples: int
    unobserved: bool = False

    def __str__(self) -> str:
        if self.consistent:
            return (
                f"pays what the true machine pays after every word, at every depth ({self.triples} synchronised "
                "product states checked)"
            )
        assert self.witness is not None, "an inconsistent verdict has its witness"
        word, letter, paid, true_paid, state = self.witness
        free = "; the data leave that part of the learned machine free" if self.unobserved else ""
        return (
            f"pays otherwise: after the word {' '.join(word)} (at state {state}), the next label {letter} pays "
            f"{paid:g} here and {true_paid:g} under the true machine{free}"
        )


def reward_consistency(
    mdp: LabeledMDP,
    true_delta_u: np.ndarray,
    true_delta_r: np.ndarray,
    machines: list[tuple[np.ndarray, np.ndarray]],
    *,
    true_initial: int = 0,
    tolerance: float = 0.0,
    used: list[np.ndarray] | None = None,
    observed: list[np.ndarray] | None = None,
) -> list[RewardVerdict]:
    """The :class:`RewardVerdict` of each learned machine ``(delta_u, delta_r)`` (initial node
    0) against the true one, all ``(n, K)`` over the MDP's propositions, in one search of the
    product with the machines side by side. Rewards are equal after rounding
    (:func:`~rmtk.data.rewards.round_rewards`), or within ``tolerance`` when it is positive
    (outputs of a tolerance fit are the centers of the values observed). ``used`` and
    ``observed``: per machine, the transitions and rewards the data decide (for
    ``RewardVerdict.unobserved``)."""
    if not machines:
        return []
    big, inits, width = stacked([du for du, _ in machines])
    big_r = np.zeros(big.shape)
    for m, (du, dr) in enumerate(machines):
        big_r[m * width : m * width + len(du)] = dr
    prod = sync_product(mdp, true_delta_u, big, init_a=true_initial, init_b=inits)
    succ = mdp.successor_matrix()
    nxt = np.zeros((mdp.n_states, mdp.n_propositions), bool)  # the letters a step from each state can pay on
    rows = np.repeat(np.arange(mdp.n_states), np.diff(np.asarray(succ.indptr)))
    nxt[rows, mdp.labels[np.asarray(succ.indices)]] = True
    states, a, b = prod.states, prod.a, prod.b
    true_r, here = np.asarray(true_delta_r, float)[a], big_r[b]
    if tolerance > 0:
        differ = np.abs(true_r - here) > tolerance + 1e-9
    else:
        differ = round_rewards(true_r) != round_rewards(here)
    differ &= nxt[states]
    machine = b // width
    sizes = np.bincount(machine, minlength=len(machines))
    bad = np.flatnonzero(differ.any(axis=1))  # breadth-first: the shortest words first
    first: dict[int, int] = {}
    for i in bad.tolist():
        first.setdefault(int(machine[i]), i)
    names = mdp.propositions
    out = []
    for m in range(len(machines)):
        if m not in first:
            out.append(RewardVerdict(True, None, int(sizes[m])))
            continue
        i = first[m]
        k = int(np.flatnonzero(differ[i])[0])
        word = prod.word(i, mdp.labels)
        node = int(b[i]) - m * width
        witness = (tuple(names[x] for x in word), names[k], float(here[i, k]), float(true_r[i, k]))
        free = False
        if used is not None and observed is not None:
            free = not observed[m][node, k] or not _decided(machines[m][0], used[m], word)
        out.append(RewardVerdict(False, (*witness, mdp.states[int(states[i])]), int(sizes[m]), free))
    return out


def _decided(delta_u: np.ndarray, used: np.ndarray, word: list[int]) -> bool:
    """Whether every transition ``word`` takes in the machine from node 0 is decided by the data."""
    u = 0
    for k in word:
        if not used[u, k]:
            return False
        u = int(delta_u[u, k])
    return True


def judge_rewards(task, result):
    """``result`` (learned from rewards alone) with a :class:`RewardVerdict` per machine against
    ``task``'s machine (its rewards, in the MDP's proposition order); unchanged without one."""
    if task is None or task.machine is None or not result.machines:
        return result
    truth = task.machine
    letter = task.letter_of_proposition
    tolerance = result.noise.delta if isinstance(result.noise, NoiseWidth) else 0.0
    decoded = result.decoded or ()
    verdicts = reward_consistency(
        task.mdp,
        truth.delta_u[:, letter],
        truth.delta_r[:, letter],
        [(m.delta_u, m.delta_r) for m in result.machines],
        true_initial=truth.initial,
        tolerance=tolerance,
        used=[s.used for s in result.solutions],
        observed=[d.observed for d in decoded] if len(decoded) == len(result.machines) else None,
    )
    return attrs.evolve(result, verdicts=tuple(verdicts))
