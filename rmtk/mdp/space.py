"""What learning from counted behaviour needs of an environment that has no transition
model: its numbers of (discretised) states and actions and its propositions, in the order of
the counts' label indices. A :class:`~rmtk.learner.pipeline.Learner` fits such a :class:`Space` in
place of a :class:`~rmtk.mdp.model.LabeledMDP` (machines, no rewards: those need the model)."""

from __future__ import annotations

import attrs

from ..errors import ModelError
from .model import _check_unique, _names


def _positive(instance, attribute, value) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ModelError(
            f"space {instance.name!r}: {attribute.name} must be a whole number of at least 1, got {value!r}"
        )


@attrs.frozen
class Space:
    """Sizes and propositions of an environment known only through data.

    Attributes:
        n_states: number of (discretised) states.
        n_actions: number of actions.
        propositions: the alphabet, in the order of the label indices of the counts.
        name: a name for messages and reports.
    """

    n_states: int = attrs.field(converter=int, validator=_positive)
    n_actions: int = attrs.field(converter=int, validator=_positive)
    propositions: tuple[str, ...] = attrs.field(converter=_names)
    name: str = attrs.field(default="space", converter=str)

    def __attrs_post_init__(self) -> None:
        if not self.propositions:
            raise ModelError(f"space {self.name!r}: empty proposition alphabet")
        _check_unique("proposition", self.propositions)

    @property
    def n_propositions(self) -> int:
        return len(self.propositions)

    def summary(self) -> str:
        return (
            f"space {self.name}: {self.n_states} states, {self.n_actions} actions, "
            f"propositions {' '.join(self.propositions)} (no transition model)"
        )
