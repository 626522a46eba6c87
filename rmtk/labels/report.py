"""Learned (labeling, machine) pairs as `.rm` text and pictures: each pair is written as an MDP
with the learned labels (a grid world keeps its generator form, its map carrying the learned
propositions; any other MDP is written explicitly with ``label`` lines), its machine and a task
binding them, with the search and the verdicts as ``#`` comment lines, so that the output loads
back with :func:`rmtk.dsl.loads` (what ``rmtk learn --learn-labels`` prints). The report of
machines learned with the labels given is ``rmtk.learner.report``."""

from __future__ import annotations

import re
import sys

import attrs
import numpy as np

from .. import dsl
from ..mdp.model import GeneratorCall, LabeledMDP
from ..task import Task
from .result import LabelLearnResult


def learned_mdp(result: LabelLearnResult, i: int, name: str | None = None) -> LabeledMDP:
    """The MDP of ``result`` with solution ``i``'s labels. A grid world stays a grid world
    (its map rewritten with the learned propositions, so it prints and draws as one)."""
    mdp = result.mdp
    name = name or f"{mdp.name}_labels_{i + 1}"
    labels = np.maximum(result.solutions[i].labels, 0)
    props = result.propositions
    src = mdp.source
    if src is not None and src.generator == "gridworld":
        from ..dsl.generators import SYNTAX
        from ..io.draw import grid_cells

        kw = src.kwargs()
        rows = [list(r) for r in kw["rows"]]
        for s, (r, c) in enumerate(grid_cells(mdp)):
            rows[r][c] = props[labels[s]]
        kw.update(rows=tuple(tuple(r) for r in rows), propositions=None)
        rebuilt = SYNTAX["gridworld"].generator()(**kw, name=name)
        if rebuilt.states == mdp.states:
            return attrs.evolve(rebuilt, source=GeneratorCall("gridworld", tuple(sorted(kw.items()))))
    used = sorted(set(labels.tolist()))
    dense = {p: j for j, p in enumerate(used)}
    return attrs.evolve(
        mdp, labels=[dense[p] for p in labels], propositions=[props[p] for p in used], name=name, source=None
    )


def learned_tasks(result: LabelLearnResult, base: Task | None = None) -> list[Task]:
    """One task per solution: its learned MDP and machine (λ, γ of ``base`` when given)."""
    out = []
    for i in range(len(result.solutions)):
        mdp = learned_mdp(result, i)
        m = result.machine(i)
        keep = [m.alphabet.index(p) for p in mdp.propositions]
        m = attrs.evolve(
            m,
            alphabet=mdp.propositions,
            delta_u=m.delta_u[:, keep],
            delta_r=m.delta_r[:, keep],
            name=f"learned_{i + 1}",
        )
        out.append(
            Task(
                mdp,
                m,
                gamma=None if base is None else base.gamma,
                lam=1.0 if base is None else base.lam,
                name=f"learned_{i + 1}",
            )
        )
    return out


def label_report(task: Task, result: LabelLearnResult, *, out=None, explain: bool = False) -> None:
    """Print the learned pairs as loadable .rm text with '#' comments; with ``explain``, the
    free states of every pair."""
    out = out or sys.stdout

    def w(line=""):
        print(line, file=out)

    s = result.search
    w(f"# labels learned from task {task.name}: state histories only (the file's labels are not used)")
    if s.histories_from == "product":
        w(f"# the expert at every depth, encoded on the product with the true machine: {s.rounds} solver calls")
    elif s.histories_from == "tree":
        w(f"# the tree of {s.histories - 1} state histories encoded whole: {s.rounds} solver calls")
    else:
        w(
            f"# counterexamples: {s.counterexamples} in {s.rounds} candidate checks; {s.histories - 1} state histories "
            f"in play; longest {s.longest} states"
        )
    if s.tried:
        w(
            f"# sizes tried (nodes, propositions): {', '.join(_sizes(s.tried))}; fewer than {s.lower_bound} nodes "
            "ruled out by the policy classes at one state"
        )
    w("# timings (s): " + ", ".join(f"{k} {v:.4f}" for k, v in result.timings.items()))
    if result.evidence is not None:
        for line in result.evidence.lines():
            w(f"# {line}")
    if result.unfinished:
        w("# not finished: " + "; ".join(result.unfinished))
    if result.n_nodes is None:
        w(f"# no solution: {s.message}")
        return
    w(
        f"# solutions: {len(s.solutions)} (labeling, machine) pair{'s' if len(s.solutions) != 1 else ''} with "
        f"{result.n_nodes} nodes and {result.n_props} propositions, up to renaming of nodes and propositions"
        + ("" if s.complete else f"; {s.message}")
    )
    for line in result.summary().lines():
        w(f"# {line}")
    if result.verdicts is not None:
        judged = [v for v in result.verdicts if v is not None]
        equal = sum(v.equal for v in judged)
        ok = sum(v.consistent for v in judged)
        left = len(result.verdicts) - len(judged)
        w(
            f"# verdict: {ok} of {len(result.verdicts)} policy-equivalent to the truth at every depth; "
            f"{equal} equal to the truth up to both renamings (truth: {result.truth_size[0]} nodes, "
            f"{result.truth_size[1]} propositions)" + (f"; {left} not judged (time limit)" if left else "")
        )
        if result.unseen:
            w(
                f"# {result.unseen} states the MDP reaches are on no history: their labels are not learned, so no "
                "pair equals the truth (whether the truth survives is read on the states the histories reach)"
            )
        larger = result.truth_size_line()
        if larger is not None:
            w(f"# {larger}")
    if explain and len(result.solutions) > 1:
        for line in result.explain():
            w(f"# {line}")
    tasks = learned_tasks(result, task)
    for i, t in enumerate(tasks):
        w()
        free = result.free(i)
        if free is None:
            w(f"# pair {i + 1}: free states not computed")
        else:
            w(
                f"# pair {i + 1}: {len(free)} free state{'s' if len(free) != 1 else ''}"
                + (
                    " (labels that could change alone): " + "; ".join(f"{st} -> {'|'.join(ps)}" for st, ps in free)
                    if free and explain
                    else ""
                )
            )
        v = None if result.verdicts is None else result.verdicts[i]
        if v is None and result.verdicts is not None:
            w("# verdict: not computed (time limit)")
        elif v is not None:
            merged = ", its labels merge true propositions only" if v.merges_truth and not v.equal else ""
            w(
                f"# verdict: {'consistent at every depth' if v.consistent else 'inconsistent'}"
                f"{', equal to the truth up to renaming' if v.equal else ''}{merged}"
            )
        out.write(dsl.dumps(dsl.RmFile.of(t)))


def _sizes(tried) -> list[str]:
    """``(n, k): outcome`` per size tried, runs of consecutive k with one outcome at one n
    written as a range (``(4, 1-41): unsat``)."""
    word = {True: "sat", False: "unsat", None: "interrupted"}
    runs: list[list] = []
    for n, k, ok in tried:
        if runs and runs[-1][0] == n and runs[-1][3] is ok and runs[-1][2] == k - 1:
            runs[-1][2] = k
        else:
            runs.append([n, k, k, ok])
    return [f"({n}, {a if a == b else f'{a}-{b}'}): {word[ok]}" for n, a, b, ok in runs]


def label_map(result: LabelLearnResult, i: int) -> LabeledMDP | None:
    """Solution ``i``'s labels as a grid world to draw: the learned MDP when it is a grid world,
    else a map built from state names ``r<row>c<column>`` (the Office World's); ``None`` when
    the states are not cells."""
    mdp = learned_mdp(result, i)
    if mdp.source is not None and mdp.source.generator == "gridworld":
        return mdp
    cells = [re.fullmatch(r"r(\d+)c(\d+)", s) for s in result.mdp.states]
    if not all(cells):
        return None
    rc = [(int(m.group(1)), int(m.group(2))) for m in cells]
    H, W = max(r for r, _ in rc) + 1, max(c for _, c in rc) + 1
    rows: list[list[str | None]] = [[None] * W for _ in range(H)]
    for s, (r, c) in enumerate(rc):
        p = result.solutions[i].labels[s]
        rows[r][c] = result.propositions[p] if p >= 0 else None
    from ..envs import gridworld

    return gridworld(rows, name=f"{result.mdp.name}_labels_{i + 1}")


def draw_labels(result: LabelLearnResult, i: int, path=None, *, ax=None, title: str | None = None):
    """Solution ``i``'s learned labels on the map, cells coloured by proposition (a grid world,
    or states named ``r<row>c<column>``)."""
    from ..errors import ModelError
    from ..io.draw import draw_grid

    grid = label_map(result, i)
    if grid is None:
        raise ModelError(f"mdp {result.mdp.name!r} is not a grid of cells: its learned labels have no map to draw")
    return draw_grid(grid, path, ax=ax, title=title or f"learned labels, pair {i + 1}")
