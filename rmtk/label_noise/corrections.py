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


def corrections(data, labels: np.ndarray, beliefs: LabelBeliefs, *, mdp=None, chunk: int = 250_000) -> Corrections:
    """The steps of ``data`` whose recorded label differs from ``labels`` (the believed letter of
    each state), most likely first. ``data``: :class:`~rmtk.data.Demonstrations` (a correction's
    trajectory is its index), or a :class:`~rmtk.data.parquet_dataset.ParquetDataset` read with its
    recorded labels on ``mdp``, partition by partition (a correction's trajectory is its id in the
    files)."""
    if isinstance(data, Demonstrations):
        return _sorted(_found(data, labels, beliefs))
    dataset = data.reading("keep")
    found, steps = [], 0
    for part in dataset.partitions:
        read = dataset.read(part, mdp)
        for lo in range(0, read.n_trajectories, chunk):
            c = _found(read.demonstrations(mdp, lo, lo + chunk), labels, beliefs)
            found.append(attrs.evolve(c, trajectory=read.ids[lo + c.trajectory]))
            steps += c.steps
    columns = {f: np.concatenate([getattr(c, f) for c in found]) if found else np.zeros(0) for f in _COLUMNS}
    return _sorted(Corrections(**columns, steps=steps))


_COLUMNS = ("trajectory", "step", "state", "recorded", "believed", "margin")


def _sorted(c: Corrections) -> Corrections:
    """``c`` most certain first (the margin to 10⁻⁶ nats), then by trajectory and step."""
    order = np.lexsort((c.step, c.trajectory, -np.round(c.margin, 6)))
    return Corrections(**{f: getattr(c, f)[order] for f in _COLUMNS}, steps=c.steps)


def _found(data: Demonstrations, labels: np.ndarray, beliefs: LabelBeliefs) -> Corrections:
    """The corrections of ``data``, in step order."""
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
    return Corrections(ii, tt, s, rec, bel, margin, int(inside.sum()))
