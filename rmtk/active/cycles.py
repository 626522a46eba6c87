"""Rounds that come back (docs/design/active-cycles.md): what the active loop's equivalence
check found nothing against, and against which knowledge.

The lazy search hands each round a hypothesis and up to ``rivals`` more machines, the next
models of solvers kept between rounds. When more machines survive than a round holds, and every
one is equivalent to the expert, two rounds under the same knowledge can hand over different
sets (the solvers' phases and learned clauses move on): comparing a round with the last one
only, the loop would check the sets in turn for ever without learning anything. :class:`Verdicts`
remembers every machine the check was run on since the knowledge last changed, so a round whose
machines were all checked against the knowledge of now, in any earlier round, goes straight to
the listing of the survivors.
"""

from __future__ import annotations

__all__ = ["Verdicts"]


class Verdicts:
    """The machines (renaming-invariant keys, ``Hypotheses.keys``)
    the equivalence check was run on against one version of ``knowledge``
    (:attr:`~rmtk.active.knowledge.Knowledge.version`), its answers folded in."""

    def __init__(self, knowledge):
        self._knowledge = knowledge
        self._version = -1
        self._keys: set = set()

    def checked(self, keys) -> None:
        """The check ran on the machines ``keys`` and its answers are folded in: they stand
        for the knowledge now (those of an earlier version are forgotten)."""
        if self._knowledge.version != self._version:
            self._keys = set()
            self._version = self._knowledge.version
        self._keys.update(keys)

    def keep(self) -> None:
        """What changed the knowledge since the last check leaves its verdicts standing
        (draws that made the negative examples firm: the machines are the same)."""
        self._version = self._knowledge.version

    def covers(self, keys) -> bool:
        """Every machine of ``keys`` was checked against the knowledge of now."""
        return self._knowledge.version == self._version and set(keys) <= self._keys
