"""A learning result as text: the learned machines as `.rm` text, with the counts, timings,
verdicts and rewards as ``#`` comment lines, so that the output loads back with
:func:`rmtk.dsl.loads` (what ``rmtk learn`` prints)."""

from __future__ import annotations

import sys

import numpy as np

from .. import dsl
from ..task import Task
from .pipeline import LearnResult
from .summary import MachineSummary, single_action, single_action_note

#: Machines whose resolution (what the samples could resolve behind their merges) is printed:
#: the first ones, as the rewards (each costs a pass over the counted pairs, 17 ms at the Craft
#: World's size, so that a listing of thousands would print for minutes).
RESOLVED = 10

#: Distinct word pairs are listed (to be counted) only below this many per-state pairs, unless
#: asked for: listing them costs time and memory in proportion (about 3 s at 5·10⁶).
PAIR_COUNT_LIMIT = 200_000


def report(
    task: Task,
    result: LearnResult,
    *,
    out=None,
    count_pairs: bool = False,
    explain: bool = False,
    asked: str | None = None,
    evidence: list[str] | None = None,
) -> None:
    """Print a learning result as .rm text with '#' comment lines (the output stays loadable);
    with ``explain``, what would separate the surviving machines (:meth:`LearnResult.explain`).
    ``asked``: the result is an active loop's (:class:`~rmtk.active.loop.ActiveResult`), whose
    expert is described so; no tree was built: what is known is what the expert was asked.
    ``evidence``: lines saying which evidence decided what
    (:meth:`rmtk.traces.compare.EvidenceComparison.lines`), printed before the machines."""
    out = out or sys.stdout
    st = result.stats()
    t = result.timings
    w = lambda line="": print(line, file=out)  # noqa: E731
    words = "compressed" if result.tree.trie.compressed else "uncompressed"
    lazy = result.search.lazy
    if asked is not None:
        _report_asked(task, result, w, words, count_pairs, asked)
    elif result.rewards is not None and result.ptp is None:  # rewards alone: no policy, no tree
        w(f"# learned from task {task.name}: the rewards of the data alone (no policy), {words} words")
    elif result.ptp is None and result.oracle is None:  # stopped before any tree or oracle
        w(f"# learned from task {task.name}: nothing (the run was stopped before its prefix tree policy)")
    elif result.ptp is None:  # tree-free: the expert checked on the synchronised product
        depth = result.oracle.depth
        where = "at every depth" if depth is None else f"of depth {depth}"
        w(
            f"# learned from task {task.name}: exact prefix tree policy {where}, {words} words, checked on the "
            "synchronised product (no prefix tree built)"
        )
        bound = task.mdp.n_states * (result.n_nodes or max(n for n, _ in result.search.tried)) ** 2
        w(
            f"# counterexamples: {lazy.counterexamples} in {lazy.rounds} candidate checks; {lazy.trie.n_nodes - 1} "
            f"words in play; longest {lazy.longest} labels (Theorem 1 depth |S|·n² = {bound})"
        )
    elif result.classes is not None:
        w(f"# learned from task {task.name}: exact prefix tree policy of depth {result.tree.depth}, {words} words")
        pairs = st["per_state_pairs"]
        distinct = (
            f"{len(result.classes.distinct_pairs())} distinct word pairs"
            if count_pairs or pairs <= PAIR_COUNT_LIMIT
            else "distinct pairs not counted (--count-pairs)"
        )
        w(
            f"# prefix tree: {st['trie_nodes'] - 1} words, {st['pairs']} (word, state) pairs, {st['classes']} policy "
            "classes"
        )
        w(f"# negative examples: {pairs} per-state pairs, {distinct}")
    else:
        w(f"# learned from task {task.name}: empirical prefix tree policy, {words} words")
        w(f"# empirical prefix tree: {st['trie_nodes'] - 1} words, {st['pairs']} (word, state) pairs")
        report_demos(result, out=out)
    if result.rewards is not None:
        w(f"# {result.rewards.summary()}")
    if lazy is not None and result.ptp is not None and asked is None:
        w(
            f"# lazy negatives: {lazy.counterexamples} added in {lazy.rounds} candidate checks, "
            f"{lazy.trie.n_nodes - 1} words in play"
        )
    if result.search.unproven is not None:  # the least noisy machine found, not proven (rmtk/sat/anytime.py)
        for line in result.search.unproven.lines():
            w(f"# {line}")
    elif result.search.cost is not None and result.noise is not None:
        w(f"# MaxSAT: the optimum calls {result.search.cost} observed step(s) noisy")
    elif result.search.cost is not None:
        w(f"# MaxSAT: optimum drops {result.search.cost} negative example(s)")
    tried = ", ".join(
        f"{n}: {'sat' if ok else 'unsat' if ok is False else 'undecided'}" for n, ok in result.search.tried
    )
    bound = f" (lower bound {st['lower_bound']})" if "lower_bound" in st else ""
    if result.search.tried:
        w(f"# SAT: nodes tried {tried}{bound}; {st['clauses']} clauses, {st['variables']} variables")
    w("# timings (s): " + ", ".join(f"{k} {v:.4f}" for k, v in t.items()))
    if result.stopped is not None:
        w(f"# {result.stopped}" + ("; what was found before is below" if result.machines else ""))
    if result.n_nodes is None:
        w(f"# no solution: {result.search.message}")
        return
    w(
        f"# solutions: {result.distinct_count} machine{'s' if result.distinct_count != 1 else ''} up to renaming, "
        f"{result.raw_count} raw assignments (node 0 fixed, the paper's count)"
        + (
            ""
            if result.search.complete
            else "; not proven least noisy (above)"
            if result.search.unproven is not None
            else f"; {result.search.message}"
        )
    )
    fits = result.reward_fits
    if fits is not None and len(fits) < result.distinct_count:
        w(
            f"# rewards recovered for the first {len(fits)} of {result.distinct_count} machines "
            "(the IRL strategy's limit sets how many; --no-rewards skips the recovery)"
        )
    iso = result.isomorphic_to_truth()
    summary = MachineSummary.of(result, iso=iso)
    if summary.listed > 1 or not summary.complete or summary.truth_merges is not None:
        for line in summary.lines(hint=not explain):
            w(f"# {line}")
    if result.ptp is not None and result.ptp.counts is not None and len(result.machines) > RESOLVED:
        w(f"# what the samples resolve is given for the first {RESOLVED} of the {len(result.machines)} machines")
    if result.noise is not None:
        w(f"# {result.noise} (under the first machine)")
    for line in evidence or ():
        w(f"# {line}")
    if explain:
        for line in str(result.explain()).splitlines():
            w(f"# {line}")
    for i, m in enumerate(result.machines):
        lines = [""]  # each machine's lines written at once: a stopped listing has thousands
        add = lines.append
        free = result.unconstrained(i)
        if free:
            add("# unconstrained by the data (written as self-loops): " + ", ".join(f"{u} on {a}" for u, a in free))
        if result.decoded is not None:
            for line in observed_rewards(m, result.decoded[i]):
                add(f"# {line}")
        resolved = result.resolution(i) if i < RESOLVED else None  # from counted data: what the samples resolve
        if resolved is not None:
            add(f"# {resolved}")
        if result.verdicts is not None and i < len(result.verdicts):
            verdict, truth = result.verdicts[i], result.truth
            same = iso and iso[i] and verdict.consistent and truth is not None
            add(f"# verdict: {verdict}" + (f"; isomorphic to the true machine '{truth.name}'" if same else ""))
        elif result.stopped is not None and result.truth is not None:
            add("# verdict: not decided (the run was stopped)")
        if result.reward_fits is not None and i < len(result.reward_fits):
            f = result.reward_fits[i]
            add("# " + (f.summary() if hasattr(f, "summary") else f"rewards ({type(f).__name__})"))
        if result.negatives is not None and result.solutions[i].dropped:
            shown = result.dropped(i)[:5]
            more = f" and {len(result.solutions[i].dropped) - 5} more" if len(result.solutions[i].dropped) > 5 else ""
            add(
                "# violates the negative examples: "
                + "; ".join(f"{' '.join(a)} / {' '.join(b)}" for a, b in shown)
                + more
            )
        out.write("\n".join(lines) + "\n" + dsl.dumps(m))


def observed_rewards(machine, decoded) -> list[str]:
    """The rewards of ``machine`` as the traces observed them (``decoded``:
    :class:`~rmtk.traces.evidence.DecodedRewards`): the non-zero ones by name, how many pay 0,
    and which no trace observes (free, written as 0)."""
    paid, zero = [], 0
    for u, k in np.argwhere(decoded.observed):
        r = float(decoded.delta_r[u, k])
        if r == 0:
            zero += 1
        else:
            paid.append(f"{machine.nodes[u]} on {machine.alphabet[k]} pays {r:g}")
    out = [f"observed rewards: {', '.join(paid) or 'none other than 0'} ({zero} observed (node, letter) pay 0)"]
    free = decoded.free
    if free:
        names = ", ".join(f"{machine.nodes[u]} on {machine.alphabet[k]}" for u, k in free)
        out.append(f"rewards no trace observes (free, written as 0): {names}")
    return out


def _report_asked(task: Task, result: LearnResult, w, words: str, count_pairs: bool, asked: str) -> None:
    """The header of an active loop's result: what the expert's answers hold, no tree built."""
    st = result.stats()
    longest = result.tree.depth if result.ptp is not None else 0
    w(f"# learned from task {task.name}: active learning, questions to {asked}, {words} words (no tree built)")
    w(
        f"# asked: {st['trie_nodes'] - 1} words, {st['pairs']} (word, state) pairs known, the longest word "
        f"{longest} labels"
    )
    if result.classes is not None:
        pairs = st["per_state_pairs"]
        distinct = (
            f"{len(result.classes.distinct_pairs())} distinct word pairs"
            if count_pairs or pairs <= PAIR_COUNT_LIMIT
            else "distinct pairs not counted (--count-pairs)"
        )
        w(f"# negative examples from the answers: {st['classes']} policy classes, {pairs} per-state pairs, {distinct}")
    elif result.negatives is not None:
        neg = result.negatives
        w(f"# negative examples: {len(neg)} from the counted answers at alpha {neg.alpha:g}")
    lazy = result.search.lazy
    if lazy is not None:
        w(f"# last round: {lazy.counterexamples} counterexamples added in {lazy.rounds} candidate checks")


def report_demos(result, *, out=None) -> None:
    """The negative examples part of a report on learning from demonstrations."""
    out = out or sys.stdout
    neg = result.negatives
    if neg is None:
        print(
            f"# demonstrations: {result.ptp.n_trajectories or 0:,} trajectories counted, no negative examples mined",
            file=out,
        )
        return
    fpr = result.false_positive_rate
    extra = "" if fpr is None else f", false positive rate {100 * fpr:.2f}% against the true machine"
    examples = f"{len(neg)} negative example{'' if len(neg) == 1 else 's'}"
    print(f"# demonstrations: {examples} at alpha {neg.alpha:g}{extra}", file=out)
    if single_action(result.ptp):
        print(f"# {single_action_note(len(neg))}", file=out)
