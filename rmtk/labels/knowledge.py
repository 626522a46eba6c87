"""What a user says about the labels, checked and turned into state indices (docs/design/13-learning-labels.md):
labels known by name (``known={state: proposition}``), states known to share a
label (``shared=[(s1, s2, …), …]``), and the number of propositions.

Everything a user can type is checked before any search: a proposition name must be a
non-empty string; ``known`` a mapping (a list of states says nothing of their labels); two named
labels in one shared group contradict each other; and the learned propositions' generated names
(``p0``, ``p1``, …) never repeat a name the user gave.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping

import numpy as np

from ..errors import RmtkError
from ..mdp.model import LabeledMDP
from ..mdp.space import Space
from .pairs import LabelKnowledge


def known_labels(value) -> dict:
    """attrs converter of ``known``: a mapping of states to non-empty proposition names."""
    if isinstance(value, Mapping):
        out = dict(value)
    elif value is None:
        out = {}
    else:
        raise RmtkError(
            f"known must map states to the names of their propositions, e.g. {{'r0c0': 'A'}}; got "
            f"{type(value).__name__} {value!r}"
            + (
                " (to say that states share a label, use shared=)"
                if isinstance(value, Iterable) and not isinstance(value, str)
                else ""
            )
        )
    for state, prop in out.items():
        if not isinstance(prop, str) or not prop.strip():
            raise RmtkError(
                f"known label of state {state!r}: a proposition name must be a non-empty string, got {prop!r}"
            )
    return out


def shared_groups(value) -> tuple[tuple, ...]:
    """attrs converter of ``shared``: groups (sequences, not strings) of states."""
    if value is None:
        return ()
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise RmtkError(f"shared must be a list of groups of states, e.g. [('r0c1', 'r0c2')]; got {value!r}")
    out = []
    for g in value:
        if isinstance(g, (str, bytes)) or not isinstance(g, Iterable):
            raise RmtkError(
                f"shared: each group is a sequence of states, e.g. ('r0c1', 'r0c2'); got {g!r}"
                + (" (a single name is not a group)" if isinstance(g, str) else "")
            )
        out.append(tuple(g))
    return tuple(out)


def state_names(mdp: LabeledMDP | Space) -> tuple[str, ...]:
    """The states' names (a Space of state histories names them by its propositions)."""
    return mdp.states if isinstance(mdp, LabeledMDP) else mdp.propositions


def state_index(mdp: LabeledMDP | Space, name, what: str) -> int:
    """The index of state ``name`` (a name, or an index), or an error naming ``what``."""
    if isinstance(name, (int, np.integer)) and not isinstance(name, bool):
        if 0 <= name < mdp.n_states:
            return int(name)
    elif name in state_names(mdp):
        return state_names(mdp).index(name)
    raise RmtkError(f"{what}: {name!r} is not a state of {mdp.name!r}")


def knowledge(
    mdp: LabeledMDP | Space, known: Mapping, shared: tuple, props: int | None, max_props: int | None
) -> tuple[LabelKnowledge, tuple[str, ...]]:
    """The user's knowledge as state indices, and the named propositions (first, in the order
    given)."""
    names: list[str] = []
    fixed: dict[int, int] = {}
    for state, prop in known.items():
        s = state_index(mdp, state, "known label")
        if prop not in names:
            names.append(prop)
        fixed[s] = names.index(prop)
    groups = tuple(tuple(state_index(mdp, s, "shared label") for s in g) for g in shared)
    parent = list(range(mdp.n_states))  # contradictions: two named labels in one shared group

    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for g in groups:
        for a, b in itertools.pairwise(g):
            parent[find(a)] = find(b)
    label_of_root: dict[int, tuple[int, int]] = {}
    for s, p in fixed.items():
        r = find(s)
        if r in label_of_root and label_of_root[r][1] != p:
            other = label_of_root[r][0]
            raise RmtkError(
                f"contradicting partial labels: states {state_names(mdp)[other]!r} and {state_names(mdp)[s]!r} "
                f"share a label but are known as {names[label_of_root[r][1]]!r} and {names[p]!r}"
            )
        label_of_root[r] = (s, p)
    if props is not None and len(names) > props:
        raise RmtkError(
            f"the known labels name {len(names)} propositions ({', '.join(map(repr, names))}), more than props={props}"
        )
    return LabelKnowledge(fixed, groups, len(names), props, max_props), tuple(names)


def proposition_names(named: tuple[str, ...], k: int) -> tuple[str, ...]:
    """The names of k learned propositions: the user's m named ones first, then ``p<m>``,
    ``p<m+1>``, … skipping any name the user gave."""
    out = list(named)
    j = len(named)
    while len(out) < k:
        name = f"p{j}"
        if name not in named:
            out.append(name)
        j += 1
    return tuple(out)
