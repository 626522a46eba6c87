"""The recorded labels believed wrong, by trajectory and step (docs/design/15-label-noise.md).

Once each state's letter is believed, a recorded label that differs from it is a *correction*:
the learner reads the step with the believed letter instead. :func:`corrections` lists them, the
most likely first: a correction at a state whose letter the data decide by a larger likelihood
ratio is more certain (the order is by that ratio, then by trajectory and step).
"""

from __future__ import annotations

import attrs
import numpy as np

from .._arrays import array_eq, float_array, int_array
from ..data import Demonstrations
from .evidence import LabelBeliefs, step_letters


@attrs.frozen
class Corrections:
    """Steps whose recorded label the learner disbelieves, most likely first.

    Attributes:
        trajectory: ``(m,)`` the trajectory of each one.
        step: ``(m,)`` its step.
        state: ``(m,)`` its state.
        recorded: ``(m,)`` the letter recorded there (a detector's most likely one).
        believed: ``(m,)`` the letter the learner reads instead.
        margin: ``(m,)`` the log-likelihood ratio by which the believed letter beats the
            recorded one at that state (nats; larger is more certain).
        steps: steps read in all.
    """

    trajectory: np.ndarray = attrs.field(converter=int_array, eq=array_eq, repr=False)
    step: np.ndarray = attrs.field(converter=int_array, eq=array_eq, repr=False)
    state: np.ndarray = attrs.field(converter=int_array, eq=array_eq, repr=False)
    recorded: np.ndarray = attrs.field(converter=int_array, eq=array_eq, repr=False)
    believed: np.ndarray = attrs.field(converter=int_array, eq=array_eq, repr=False)
    margin: np.ndarray = attrs.field(converter=float_array, eq=array_eq, repr=False)
    steps: int = 0

    def __len__(self) -> int:
        return len(self.trajectory)

    def pairs(self) -> set[tuple[int, int]]:
        """The ``(trajectory, step)`` of every correction."""
        return set(zip(self.trajectory.tolist(), self.step.tolist()))

    def line(self, mdp, shown: int = 5) -> str:
        """``corrections: m of N recorded labels believed wrong (...)``, the first ``shown``."""
        props = mdp.propositions
        head = f"corrections: {len(self):,} of {self.steps:,} recorded labels believed wrong"
        if not len(self):
            return head
        listed = "; ".join(
            f"trajectory {int(i)} step {int(t)} {mdp.states[int(s)]}: {props[int(r)]}→{props[int(b)]}"
            for i, t, s, r, b in zip(
                self.trajectory[:shown],
                self.step[:shown],
                self.state[:shown],
                self.recorded[:shown],
                self.believed[:shown],
            )
        )
        more = f"; and {len(self) - shown:,} more" if len(self) > shown else ""
        return f"{head}, the most likely first: {listed}{more}"


def corrections(data: Demonstrations, labels: np.ndarray, beliefs: LabelBeliefs) -> Corrections:
    """The steps of ``data`` whose recorded label differs from ``labels`` (the believed letter of
    each state), most likely first."""
    letters, _ = step_letters(data, beliefs.log_post.shape[1])
    labels = np.asarray(labels, np.int64)
    inside = letters >= 0
    believed = np.where(inside, labels[np.where(inside, data.states, 0)], -1)
    wrong = inside & (letters != believed)
    ii, tt = np.nonzero(wrong)
    s = data.states[ii, tt].astype(np.int64)
    rec, bel = letters[ii, tt].astype(np.int64), believed[ii, tt]
    lp = beliefs.log_post
    with np.errstate(invalid="ignore"):
        margin = lp[s, bel] - lp[s, rec]
    margin = np.where(np.isfinite(margin), margin, np.inf)
    order = np.lexsort((tt, ii, -np.round(margin, 6)))
    return Corrections(ii[order], tt[order], s[order], rec[order], bel[order], margin[order], int(inside.sum()))
