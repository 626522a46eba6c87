"""Recorded data checked against the environment it is to be read in (docs/design/12-active-learning.md): a
recording names the environment's propositions in its order, and every counted
(word, state) pair ends with its state's label; else a clear error names what does not fit."""

from __future__ import annotations

import attrs
import numpy as np

from ..errors import RmtkError
from ..mdp.model import LabeledMDP
from ..ptp.empirical import CountTable

__all__ = ["check_counts", "check_recording", "recorded_only"]


def check_recording(recorded, mdp) -> None:
    """A recording that names its propositions (:class:`~rmtk.gym.Recording`) names the
    environment's, in the same order: its label indices are read as the environment's."""
    names = attrs.asdict(recorded, recurse=False)["propositions"] if _named(recorded) else None
    if names is None:
        return
    ours = tuple(mdp.propositions)
    if tuple(names) == ours:
        return
    if set(names) == set(ours):
        raise RmtkError(
            f"the recording's propositions are {', '.join(map(repr, names))} and {mdp.name!r}'s are "
            f"{', '.join(map(repr, ours))}: the same names in another order, so its label indices would be read as "
            "other propositions; record with the environment's order (or reorder the MDP's propositions)"
        )
    raise RmtkError(
        f"the recording's propositions ({', '.join(map(repr, names))}) are not {mdp.name!r}'s "
        f"({', '.join(map(repr, ours))}): it was recorded in another environment"
    )


def _named(table: CountTable) -> bool:
    """A count table that carries its propositions' names (a Gymnasium recording), told
    without importing the extra."""
    return isinstance(table, CountTable) and "propositions" in attrs.fields_dict(type(table))


def check_counts(table: CountTable, mdp) -> None:
    """Every counted (word, state) pair ends with the label of its state (the prefix
    convention), when the environment has labels: else the counts were made on another MDP
    (or with its propositions in another order), and the first such pair is named."""
    if not isinstance(mdp, LabeledMDP) or not len(table.keys):
        return
    S, A = table.n_states, table.n_actions
    pair = table.keys // A  # sorted: the distinct pairs are where it changes
    pair = pair[np.r_[True, pair[1:] != pair[:-1]]]
    node, state = pair // S, pair % S
    bad = np.flatnonzero(table.trie.letter[node] != mdp.labels[state])
    if len(bad):
        p, s = int(node[bad[0]]), int(state[bad[0]])
        word = " ".join(mdp.propositions[k] for k in table.trie.word(p))
        raise RmtkError(
            f"the recorded counts do not fit mdp {mdp.name!r}: {len(bad)} (word, state) pair(s) end in a state with "
            f"another label, e.g. the word {word!r} at state {mdp.states[s]!r}, labeled "
            f"{mdp.propositions[int(mdp.labels[s])]!r}; the data were recorded on another MDP or with the "
            "propositions in another order"
        )


def recorded_only(knowledge, expert: str) -> str:
    """Why a run whose expert answers no queries stops after its first round (the survivors of
    the recorded data), or an error when nothing was recorded: with no data and no questions
    every machine of one node would be returned as if the data had chosen it."""
    if not len(knowledge):
        raise RmtkError(
            f"the expert {expert} answers no queries and its recording holds no (word, state) pair: there is "
            "nothing to learn from; give it the recorded data (demonstrations, a path, a count table or a "
            "recording), or pass them to fit(data=...)"
        )
    return "the expert answers no queries: the survivors of the recorded data"
