"""The letters of doubtful states, chosen with the machine: the clause families of weighted
MaxSAT in which a disbelieved label costs its log-likelihood (docs/design/15-label-noise.md).

The words are counted on the MDP as the labels are believed (rmtk/label_noise/learner.py):
every state whose letter the data decide carries it, and each *doubtful* state ``s_d`` (its
recorded labels leave a rival letter within the ``doubt`` ratio) carries a letter of its own,
the *placeholder* ``K + d``. The prefix tree, its negative examples and its reward observations
are then those of an MDP of ``K + D`` letters, and the SAT core of rmtk/sat/encoding.py encodes
them unchanged over ``K + D`` letters. This module adds what makes a placeholder one of the
letters its state may carry:

* :func:`label_choices`: ``l[d,k]``, the state ``s_d`` carries letter ``k``, exactly one per
  doubtful state among its candidates;
* :func:`chosen_transitions`: ``l[d,k] ∧ t[i,k,j] → t[i,K+d,j]``: the placeholder moves the
  machine as the letter chosen (with determinism of the placeholder's column, the converse);
* :func:`chosen_rewards`: ``l[d,k] ∧ o[i,K+d,v] → o[i,k,v]``: a reward observed on the
  placeholder is paid on the letter chosen, and that letter pays one value per node;
* :func:`label_costs`: the soft units ``¬l[d,k]`` for every rival ``k`` of the most likely
  letter, of weight ``log P(data | most likely) − log P(data | k)``, the counts of its recorded
  labels times the log-likelihood ratio, in :data:`SCALE` units per nat.

The formula grows by ``n²·c`` clauses per doubtful state (``c`` candidates), whatever the
number of words through it: the words see the placeholder, and the choice is made once per state.
"""

from __future__ import annotations

import attrs
import numpy as np
from pysat.card import CardEnc, EncType

from .._arrays import array_eq, int_array
from ..errors import ModelError
from ..sat.encoding import Clauses, VarPool

#: The integer weight units of one nat of log-likelihood, since MaxSAT weighs integers. A cost
#: is rounded to 1/1000 of a nat, and a rival letter exactly as likely as the most likely one
#: costs 1 unit, so that equal letters are chosen in index order.
SCALE = 1000


@attrs.frozen
class Choices:
    """The doubtful states and the letters each may carry.

    Attributes:
        n_letters: ``K``, the MDP's letters; placeholder ``K + d`` stands for ``states[d]``.
        states: ``(D,)`` the doubtful states.
        letter: ``(D·c,)`` candidate letters, state by state (``start`` delimits them).
        cost: ``(D·c,)`` each candidate's cost in nats (0 for the most likely, first).
        start: ``(D + 1,)`` the candidates of state ``d`` are ``start[d] .. start[d + 1] − 1``.
    """

    n_letters: int
    states: np.ndarray = attrs.field(converter=int_array, eq=array_eq)
    letter: np.ndarray = attrs.field(converter=int_array, eq=array_eq)
    cost: np.ndarray = attrs.field(eq=array_eq)
    start: np.ndarray = attrs.field(converter=int_array, eq=array_eq)

    def __attrs_post_init__(self) -> None:
        if len(self.start) != len(self.states) + 1 or self.start[-1] != len(self.letter) != len(self.cost):
            raise ModelError("choices: states, candidate letters, costs and starts do not match")
        if len(self.letter) and (self.letter.min() < 0 or self.letter.max() >= self.n_letters):
            raise ModelError(f"choices: a candidate letter outside 0..{self.n_letters - 1}")

    @classmethod
    def of(cls, beliefs, among: np.ndarray | None = None) -> Choices:
        """The doubtful states of :class:`~rmtk.label_noise.evidence.LabelBeliefs` (those of the
        mask ``among`` alone, when given) and their candidates."""
        doubtful = beliefs.doubtful if among is None else beliefs.doubtful & np.asarray(among, bool)
        states = np.flatnonzero(doubtful)
        letters = [beliefs.candidates(int(s)) for s in states]
        costs = [beliefs.costs(int(s)) for s in states]
        start = np.concatenate([[0], np.cumsum([len(x) for x in letters])]).astype(np.int64)
        cat = lambda xs, dt: np.concatenate(xs).astype(dt) if xs else np.zeros(0, dt)  # noqa: E731
        return cls(beliefs.log_post.shape[1], states, cat(letters, np.int64), cat(costs, np.float64), start)

    @property
    def n_states(self) -> int:
        return len(self.states)

    def weights(self) -> np.ndarray:
        """Integer MaxSAT weights of the candidates (``SCALE`` per nat; at least 1 for a rival,
        0 for each state's most likely letter)."""
        w = np.rint(np.asarray(self.cost, np.float64) * SCALE).astype(np.int64)
        first = np.zeros(len(w), bool)
        first[self.start[:-1][np.diff(self.start) > 0]] = True
        return np.where(first, 0, np.maximum(w, 1))


def label_choices(pool: VarPool, choices: Choices) -> tuple[Clauses, np.ndarray]:
    """``l[d,k]`` for every candidate (returned in the order of ``choices.letter``): exactly one
    per doubtful state."""
    ids = np.array(
        [pool.new(("l", int(d), int(k))) for d in range(choices.n_states) for k in _letters(choices, d)], np.int64
    )
    out: Clauses = []
    for d in range(choices.n_states):
        lits = ids[choices.start[d] : choices.start[d + 1]].tolist()
        out.append(lits)
        if len(lits) <= 6:
            out += [[-a, -b] for j, a in enumerate(lits) for b in lits[j + 1 :]]
        else:
            out += CardEnc.atmost(lits, bound=1, vpool=pool.aux, encoding=EncType.seqcounter).clauses
    return out, ids


def _letters(choices: Choices, d: int) -> list[int]:
    return choices.letter[choices.start[d] : choices.start[d + 1]].tolist()


def chosen_transitions(pool: VarPool, choices: Choices, ids: np.ndarray) -> Clauses:
    """``¬l[d,k] ∨ ¬t[i,k,j] ∨ t[i,K+d,j]`` for every doubtful state ``d``, candidate ``k`` and
    nodes ``i, j``: placeholder ``K + d`` moves the machine as the letter chosen."""
    K, n = choices.n_letters, pool.n
    if pool.K < K + choices.n_states:
        raise ModelError(f"the pool has {pool.K} letters; {K} and {choices.n_states} placeholders need more")
    d = np.repeat(np.arange(choices.n_states), np.diff(choices.start))
    grid = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    i, j = grid[0].ravel(), grid[1].ravel()
    cl = np.stack(
        [
            np.broadcast_to(-ids[:, None], (len(ids), n * n)),
            -pool.t(i[None, :], choices.letter[:, None], j[None, :]),
            pool.t(i[None, :], (K + d)[:, None], j[None, :]),
        ],
        axis=-1,
    ).reshape(-1, 3)
    return cl.tolist()


def chosen_rewards(pool: VarPool, choices: Choices, ids: np.ndarray, rewards) -> Clauses:
    """``¬l[d,k] ∨ ¬o[i,K+d,v] ∨ o[i,k,v]`` for every reward value ``v`` observed on placeholder
    ``K + d``: its reward is the chosen letter's; and at most one value per (node, letter) over
    the output variables this adds (those of rmtk/sat/encoding.py's ``reward_outputs``, named
    ``("o", i, k, v)`` in the pool, are shared)."""
    K, n = choices.n_letters, pool.n
    values, value = np.unique(rewards.value, return_inverse=True)
    seen: dict[int, set[int]] = {}
    for k, v in zip(rewards.letter.tolist(), value.tolist()):
        seen.setdefault(int(k), set()).add(int(v))
    out: Clauses = []
    added: dict[int, set[int]] = {}
    for d in range(choices.n_states):
        for v in sorted(seen.get(K + d, ())):
            for k in _letters(choices, d):
                lk = int(ids[choices.start[d] + _letters(choices, d).index(k)])
                for i in range(n):
                    out.append([-lk, -pool.new(("o", i, K + d, v)), pool.new(("o", i, k, v))])
                if v not in seen.get(k, set()):
                    added.setdefault(k, set()).add(v)
    for k, new in added.items():  # one value per (node, letter) among the outputs added and the observed ones
        every = sorted(seen.get(k, set()) | new)
        for i in range(n):
            for a_pos, a in enumerate(every):
                for b in every[a_pos + 1 :]:
                    if a in new or b in new:
                        out.append([-pool.new(("o", i, k, a)), -pool.new(("o", i, k, b))])
    return out


def label_costs(choices: Choices, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The soft units: ``(relax, weights)``, ``relax`` the ``l[d,k]`` of every rival of a state's
    most likely letter (true: that rival chosen), ``weights`` its cost (:meth:`Choices.weights`)."""
    w = choices.weights()
    rival = w > 0
    return ids[rival], w[rival]
