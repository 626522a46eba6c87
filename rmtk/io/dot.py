"""Edges of a reward machine as a person reads them: grouped, labelled, as DOT or networkx.

Transitions are grouped by ``(source, target, reward)``; a group is labelled with its
letters in alphabet order joined by ``" | "``, followed by ``" / r"`` when the reward ``r``
is not zero (``"A | B / 1"``). Rewards in labels are rounded for reading (:func:`format_reward`);
learned rewards such as ``-0.001999999999`` would otherwise print in full. The 0-reward
self-loops (the *defaults* of an ``.rm`` machine) form one group per node; they can be left out
with ``show_defaults=False``. The pictures of :mod:`rmtk.io.draw` use the same groups and labels.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

from .. import ties

if TYPE_CHECKING:  # annotations only (a machine draws itself through rmtk.io.draw, which uses this module)
    from ..machine.model import RewardMachine

__all__ = ["edge_groups", "edge_label", "format_reward", "to_dot", "to_networkx"]


def format_reward(x: float, digits: int = 6) -> str:
    """``x`` for display: an integer in full (``1``, ``-2``, ``1234567``), any other number
    rounded to ``digits`` significant digits (``0.2``, ``-0.002``, ``98.798``), without a
    decimal point when it rounds to an integer (``0.9999999`` is ``1``)."""
    x = float(x)
    if not math.isfinite(x):
        return repr(x)
    rounded = x if x.is_integer() else float(f"{x:.{digits}g}")
    if rounded.is_integer() and abs(rounded) < 1e16:
        return str(int(rounded))
    return f"{rounded:.{digits}g}"


def edge_label(letters: Sequence[str], reward: float) -> str:
    """``"A | B"``, with ``" / r"`` appended when the reward ``r`` is not zero."""
    text = " | ".join(letters)
    return text if reward == 0 else f"{text} / {format_reward(reward)}"


def edge_groups(machine: RewardMachine, *, show_defaults: bool = True) -> list[tuple[int, int, float, tuple[str, ...]]]:
    """The transitions grouped by ``(source, target, reward)``, as
    ``(source index, target index, reward, letters)`` sorted by source, target and reward;
    letters in alphabet order. Rewards within :data:`rmtk.ties.TOL` are one reward (that of
    the group's first letter). 0-reward self-loops are dropped when ``show_defaults`` is false.
    """
    rank = cast(list, ties.ranks(machine.delta_r).tolist())  # (n, K): nested lists
    delta_u: list = machine.delta_u.tolist()
    delta_r: list = machine.delta_r.tolist()
    groups: dict[tuple[int, int, int], tuple[float, list[str]]] = {}
    for u in range(machine.n_nodes):
        for k, letter in enumerate(machine.alphabet):
            v, r = delta_u[u][k], delta_r[u][k]
            if not show_defaults and v == u and r == 0.0:
                continue
            groups.setdefault((u, v, rank[u][k]), (r + 0.0, []))[1].append(letter)  # + 0.0: -0.0 → 0.0
    return [(u, v, r, tuple(ls)) for (u, v, _), (r, ls) in sorted(groups.items(), key=lambda kv: kv[0])]


@functools.lru_cache(maxsize=4096)  # the same names and labels over thousands of machines
def _dot_quote(s: str) -> str:
    """A DOT double-quoted string: backslashes and quotes escaped, newlines as ``\\n``."""
    s = s.replace("\\", "\\\\").replace('"', '\\"').replace("\r", "").replace("\n", "\\n")
    return f'"{s}"'


def to_dot(machine: RewardMachine, *, title: str | None = None, show_defaults: bool = True) -> str:
    """Graphviz DOT text of ``machine``.

    One edge per ``(source, target, reward)`` group (see :func:`edge_groups`); the 0-reward
    self-loops of a node are one grey edge (left out with ``show_defaults=False``); the initial
    node is marked by an arrow from an invisible point node. The output is deterministic:
    nodes in index order, edges sorted by source, target and reward.
    """
    start = "__start"
    while start in machine.nodes:
        start += "_"
    q = _dot_quote
    lines = [f"digraph {q(machine.name)} {{", "  rankdir=LR;"]
    if title is not None:
        lines.append(f"  label={q(title)};")
        lines.append("  labelloc=t;")
    lines.append("  node [shape=circle];")
    lines.append(f"  {q(start)} [shape=point, style=invis];")
    for name in machine.nodes:
        lines.append(f"  {q(name)};")
    lines.append(f"  {q(start)} -> {q(machine.nodes[machine.initial])};")
    for u, v, r, letters in edge_groups(machine, show_defaults=show_defaults):
        attrs_ = [f"label={q(edge_label(letters, r))}"]
        if u == v and r == 0:
            attrs_ += ["color=gray50", "fontcolor=gray50"]
        lines.append(f"  {q(machine.nodes[u])} -> {q(machine.nodes[v])} [{', '.join(attrs_)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def to_networkx(machine: RewardMachine):
    """A :class:`networkx.MultiDiGraph` of ``machine``.

    Nodes are the node names, with attributes ``initial`` (bool) and ``index``; there is one
    edge per ``(node, letter)`` (defaults included), keyed by the letter, with attributes
    ``letter`` and ``reward`` (exact, not rounded). Graph attributes: ``name``, ``alphabet``,
    ``initial``.
    """
    import networkx as nx  # slow to import: only when a graph is asked for

    g = nx.MultiDiGraph(name=machine.name, alphabet=tuple(machine.alphabet), initial=machine.nodes[machine.initial])
    for i, name in enumerate(machine.nodes):
        g.add_node(name, initial=(i == machine.initial), index=i)
    for u, letter, v, r in machine.transitions(include_defaults=True):
        g.add_edge(u, v, key=letter, letter=letter, reward=r)
    return g
