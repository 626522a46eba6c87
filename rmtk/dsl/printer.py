"""The canonical printer of `.rm` text: ``loads(dumps(x)) == x``.

Blocks come in a fixed order (MDPs, machines, tasks, each sorted by name); inside a block
every collection is written in the object's own order, so printing is deterministic and
stable under diff. Comments are not kept.
"""

from __future__ import annotations

from functools import singledispatch

import numpy as np

from ..machine.model import RewardMachine
from ..mdp.model import LabeledMDP
from ..task import Task
from .document import RmFile
from .format import fmt_ident, fmt_number

INDENT = "  "
WRAP = 16  # names per line in long lists (settings may repeat to continue a list)


def _block(header: str, lines: list[str]) -> str:
    return header + " {\n" + "".join(INDENT + line + "\n" for line in lines) + "}\n"


def _wrapped(key: str, names) -> list[str]:
    return _lines(key, [fmt_ident(n) for n in names])


def _lines(key: str, spelled: list[str]) -> list[str]:
    """``key`` then the already spelled names, :data:`WRAP` per line."""
    return [f"{key} " + " ".join(spelled[i : i + WRAP]) for i in range(0, len(spelled), WRAP)] or []


@singledispatch
def dumps(obj) -> str:
    """`.rm` text of an MDP, a machine, a task (with its MDP and machine) or a whole file."""
    raise TypeError(f"cannot print a {type(obj).__name__} as .rm text")


@dumps.register
def _(m: RewardMachine) -> str:
    return machine_block(m)


@dumps.register
def _(mdp: LabeledMDP) -> str:
    return mdp_block(mdp)


@dumps.register
def _(task: Task) -> str:
    return dumps(RmFile.of(task))


@dumps.register
def _(f: RmFile) -> str:
    f = RmFile.of(f)  # pulls in MDPs and machines of tasks
    parts = [mdp_block(f.mdps[k]) for k in sorted(f.mdps)]
    parts += [machine_block(f.machines[k]) for k in sorted(f.machines)]
    parts += [task_block(f.tasks[k]) for k in sorted(f.tasks)]
    return "\n".join(parts)


def machine_block(m: RewardMachine) -> str:
    """``machine NAME { ... }``: alphabet, nodes, initial, then non-default transitions
    grouped per (source, target, reward) in node then letter order."""
    # names spelled once and the tables read as Python numbers once: a stopped listing prints
    # thousands of machines (docs/benchmarks/21-stopped-runs.md)
    nodes, letters = [fmt_ident(x) for x in m.nodes], [fmt_ident(a) for a in m.alphabet]
    lines = _lines("alphabet", letters) + _lines("nodes", nodes)
    lines.append(f"initial {nodes[m.initial]}")
    delta_u, delta_r = m.delta_u.tolist(), m.delta_r.tolist()
    for u in range(m.n_nodes):
        groups: dict[tuple[int, float], list[str]] = {}
        for letter, v, r in zip(letters, delta_u[u], delta_r[u]):
            if v != u or r != 0.0:
                groups.setdefault((v, r), []).append(letter)
        for (v, r), guard in groups.items():
            line = f"{nodes[u]} -> {nodes[v]} on {' | '.join(guard)}"
            if r != 0.0:
                line += f" reward {fmt_number(r)}"
            lines.append(line)
    return _block(f"machine {fmt_ident(m.name)}", lines)


def _generated_lines(mdp: LabeledMDP) -> list[str] | None:
    """Generator settings when ``mdp.source`` still rebuilds exactly ``mdp``."""
    from .generators import SYNTAX

    src = mdp.source
    if src is None or src.generator not in SYNTAX:
        return None
    syntax = SYNTAX[src.generator]
    try:
        rebuilt = syntax.generator()(**src.kwargs(), name=mdp.name)
    except Exception:  # a stale or hand-made source: fall back to the explicit form
        return None
    if rebuilt != mdp:
        return None
    return syntax.format(src.kwargs())


def mdp_block(mdp: LabeledMDP) -> str:
    """``mdp NAME = GENERATOR { ... }`` for generated MDPs, else the explicit form."""
    gen = _generated_lines(mdp)
    if gen is not None:
        return _block(f"mdp {fmt_ident(mdp.name)} = {mdp.source.generator}", gen)
    lines = _wrapped("states", mdp.states) + _wrapped("actions", mdp.actions)
    lines += _wrapped("propositions", mdp.propositions)
    for k, p in enumerate(mdp.propositions):
        carriers = [mdp.states[s] for s in np.flatnonzero(mdp.labels == k)]
        for i in range(0, len(carriers), WRAP):
            lines.append(f"label {fmt_ident(p)} " + " ".join(fmt_ident(s) for s in carriers[i : i + WRAP]))
    support = mdp.start_states
    weights = mdp.initial[support]
    if np.array_equal(weights, np.full(len(support), 1.0 / len(support))):
        lines.append("start " + " ".join(fmt_ident(mdp.states[s]) for s in support))
    else:
        lines.append(
            "start " + " ".join(f"{fmt_ident(mdp.states[s])} {fmt_number(w)}" for s, w in zip(support, weights))
        )
    lines.append(f"gamma {fmt_number(mdp.gamma)}")
    for s in range(mdp.n_states):
        for a in range(mdp.n_actions):
            succ = mdp.successors(s, a)
            head = f"{fmt_ident(mdp.states[s])} {fmt_ident(mdp.actions[a])} -> "
            if len(succ) == 1 and succ[0][1] == 1.0:
                lines.append(head + fmt_ident(mdp.states[succ[0][0]]))
            else:
                lines.append(head + ", ".join(f"{fmt_ident(mdp.states[j])} {fmt_number(p)}" for j, p in succ))
    return _block(f"mdp {fmt_ident(mdp.name)}", lines)


def task_block(task: Task) -> str:
    lines = [f"mdp {fmt_ident(task.mdp.name)}"]
    if task.machine is not None:  # a task without one leaves the line out, as it was written
        lines.append(f"machine {fmt_ident(task.machine.name)}")
    if task.gamma is not None:
        lines.append(f"gamma {fmt_number(task.gamma)}")
    lines.append(f"lambda {fmt_number(task.lam)}")
    if task.depth is not None:
        lines.append(f"depth {task.depth}")
    if task.max_nodes is not None:
        lines.append(f"max_nodes {task.max_nodes}")
    return _block(f"task {fmt_ident(task.name)}", lines)
