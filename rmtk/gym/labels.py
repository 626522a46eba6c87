"""Labelers: what an environment's observation means to a reward machine. Each state carries
exactly one atomic proposition (paper section 2), so a labeler maps ``(obs, info)`` to one
proposition name.

A labeler is any callable ``labeler(obs, info) -> str``. rmtk's own (:class:`StateLabels`,
:class:`InfoLabel`) also know their alphabet (``propositions``) and label a whole batch of a
vector environment at once (``batch(obs, infos)`` → proposition indices). :class:`Alphabet`
turns what a labeler returned into indices, with an error naming the episode and step when it
is not a proposition.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
import numpy as np

from ..errors import DataError, ModelError
from ..mdp.model import LabeledMDP, _check_unique, _names


def names(value) -> tuple[str, ...]:
    """Proposition names from a sequence of names or one string of whitespace-separated
    names (``"a b c o"``: four propositions, as the `.rm` language writes an alphabet; ``"abco"``
    is one proposition named ``abco``)."""
    if isinstance(value, str):
        return tuple(value.split())
    return _names(value)


def check_labeler(labeler, where: str = "labeler"):
    """``labeler``, once it is known to be called as ``labeler(obs, info)``: a callable whose
    signature takes two positional arguments; otherwise a :class:`~rmtk.errors.ModelError`
    saying what a labeler is (a one-argument ``lambda obs: ...`` would fail deep inside a run)."""
    import inspect

    if not callable(labeler):
        raise ModelError(f"{where} must be a function labeler(obs, info) -> proposition name, not {labeler!r}")
    try:
        signature = inspect.signature(labeler)
    except (TypeError, ValueError):  # a builtin without a signature: called as it is
        return labeler
    try:
        signature.bind(None, None)
    except TypeError:
        name = getattr(labeler, "__name__", type(labeler).__name__)
        raise ModelError(
            f"{where} {name}{signature} cannot be called as labeler(obs, info): a labeler takes the "
            "observation and the step's info dict (write def label(obs, info): ... even if info is unused)"
        ) from None
    return labeler


def quoted(props) -> str:
    """Names as messages list them, each quoted: ``'a', 'b', 'c'`` (so that one name ``'abco'``
    does not read as four letters)."""
    return ", ".join(repr(str(p)) for p in props)


def one_name_hint(props, label) -> str:
    """When the alphabet is one name of several characters and ``label`` is one of them: the
    user probably meant a name per character, and is told how to write it."""
    if len(props) == 1 and isinstance(label, str) and len(props[0]) > 1 and label and label in props[0]:
        return (
            f" (propositions={props[0]!r} is one proposition named {props[0]!r}; names are separated by "
            f"whitespace: {' '.join(props[0])!r}, or given as a list)"
        )
    return ""


@attrs.frozen
class StateLabels:
    """Labels of state-index observations: ``propositions[labels[obs]]`` (a labeled MDP's
    labelling, ``StateLabels.of(mdp)``)."""

    propositions: tuple[str, ...] = attrs.field(converter=names)
    labels: tuple[int, ...] = attrs.field(converter=lambda v: tuple(int(x) for x in v))

    def __attrs_post_init__(self):
        bad = [x for x in self.labels if not 0 <= x < len(self.propositions)]
        if bad:
            raise ModelError(
                f"StateLabels: label index {bad[0]} is not a proposition index 0..{len(self.propositions) - 1}"
            )

    @classmethod
    def of(cls, mdp: LabeledMDP) -> StateLabels:
        return cls(mdp.propositions, mdp.labels.tolist())

    def __call__(self, obs, info=None) -> str:
        return self.propositions[self.labels[int(obs)]]

    def batch(self, obs, infos=None) -> np.ndarray:
        return np.asarray(self.labels, dtype=np.int64)[np.asarray(obs, dtype=np.int64)]


@attrs.frozen
class InfoLabel:
    """The label an environment reports itself, as ``info[key]`` (a proposition name)."""

    propositions: tuple[str, ...] = attrs.field(converter=names)
    key: str = "label"

    def __call__(self, obs, info) -> str:
        try:
            return info[self.key]
        except (KeyError, TypeError):
            raise DataError(f"the environment's info has no {self.key!r} entry to read the label from") from None


@attrs.frozen
class Alphabet:
    """Proposition names ↔ indices, checking what labelers return."""

    propositions: tuple[str, ...] = attrs.field(converter=names)
    _index: dict = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self):
        if not self.propositions:
            raise ModelError("the alphabet of propositions is empty")
        _check_unique("proposition", self.propositions)
        object.__setattr__(self, "_index", {p: i for i, p in enumerate(self.propositions)})

    def index(self, label, where: str) -> int:
        """The index of one label; ``where`` (e.g. ``"episode 3, step 7"``) starts the error."""
        if not isinstance(label, str):
            raise DataError(
                f"{where}: the labeler returned {label!r} ({type(label).__name__}); it must return one "
                f"proposition name (a string) of {quoted(self.propositions)}"
            )
        k = self._index.get(label)
        if k is None:
            raise DataError(
                f"{where}: the labeler returned {label!r}, which is not a proposition; the alphabet is "
                f"{quoted(self.propositions)}{one_name_hint(self.propositions, label)}"
            )
        return k

    @property
    def mapping(self) -> dict:
        """Proposition name → index (read only by convention)."""
        return self._index

    def check(self, indices, where: Callable[[int], str]) -> np.ndarray:
        """Indices returned by a batch labeler, checked; ``where(i)`` names entry ``i``."""
        indices = np.asarray(indices)
        if not np.issubdtype(indices.dtype, np.integer):
            raise DataError(
                f"{where(0)}: the labeler's batch returned {indices.dtype} values; it must return "
                "proposition indices (integers)"
            )
        bad = np.flatnonzero((indices < 0) | (indices >= len(self.propositions)))
        if bad.size:
            i = int(bad[0])
            raise DataError(
                f"{where(i)}: the labeler returned a label that is not a proposition "
                f"(index {indices[i]}); the alphabet is {quoted(self.propositions)}"
            )
        return indices.astype(np.int64)
