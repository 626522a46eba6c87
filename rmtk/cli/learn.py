"""``rmtk learn``: the checks made before any work (:mod:`rmtk.cli.flags`, :mod:`rmtk.cli.sizes`,
the output paths), the :class:`~rmtk.cli.args.LearnPlan` run, its report, and the files
written (docs/design/11-faults.md)."""

from __future__ import annotations

import glob
import sys
import time
from pathlib import Path

from .. import dsl
from ..errors import RmtkError
from ..limits import stop_requested
from ..task import Task
from . import stopping


def load_task(file: str, name: str | None) -> Task:
    """The task ``name`` of ``file``, or its only task."""
    doc = dsl.load(file)
    task = doc.get(name, "task") if name is not None else doc.only("task")
    assert isinstance(task, Task), "dsl.RmFile.get and only return the kind asked for"
    return task


def writable(path: Path, force: bool) -> Path:
    """``path``, checked before the work to be writable (:func:`rmtk.output.check`)."""
    from .. import output

    return output.check(path, overwrite=force)


def figure_paths(path: str, count: int) -> list[Path]:
    """Where ``count`` machines are written: ``path``, or ``NAME_1.EXT``, ``NAME_2.EXT``, ..."""
    p = Path(path)
    if count == 1:
        return [p]
    return [p.with_name(f"{p.stem}_{i + 1}{p.suffix}") for i in range(count)]


def cmd_learn(args) -> int:
    """Learn the smallest machine: from a task's exact policy, demonstrations, or by asking its
    expert; with ``--learn-labels``, the labels too. Every flag is checked against the mode
    (:mod:`rmtk.cli.flags`), every size against what it allocates (:mod:`rmtk.cli.sizes`) and
    every output path before the work; a run stopped by a signal prints what it has, flagged,
    and writes no file."""
    plan = prepare_learn(args)
    with stopping.stoppable():
        printed = run_plan(plan)
    if stop_requested():
        named = [p for p in (plan.dot, plan.png) if p]
        if named:
            print(f"rmtk: the run was stopped: {' and '.join(named)} not written", file=sys.stderr)
        return 0 if printed is not None else 1
    if printed is None:
        return 1
    _write_outputs(plan, printed)
    return 0


def prepare_learn(args):
    """The :class:`~rmtk.cli.args.LearnPlan` of ``rmtk learn``'s parsed ``args``, after the checks
    that come before any work: the flags against the mode, the sizes against memory, the
    output paths."""
    from .args import plan_learn
    from .flags import learn_mode
    from .sizes import check_learn_sizes

    mode = learn_mode(args)
    task = load_task(args.file, args.task)
    check_learn_sizes(args, task, mode)
    _check_outputs(args)
    return plan_learn(args, task, mode)


def _check_outputs(args) -> None:
    """``--dot`` and ``--png``, checked before the work (:func:`rmtk.output.check`): the
    directory exists and takes files, the path is no directory, a picture's format is one
    matplotlib writes; without ``--force``, neither it nor the numbered files written when
    several machines are learned (``NAME_1.png``, ...) exist."""
    for target in (args.dot, args.png):
        if not target:
            continue
        path = writable(Path(target), args.force)
        if target == args.png:
            from ..io.draw import picture_format

            picture_format(path)
        if not args.force:
            numbered = sorted(path.parent.glob(f"{glob.escape(path.stem)}_[0-9]*{glob.escape(path.suffix)}"))
            numbered = [p for p in numbered if p.stem[len(path.stem) + 1 :].isdigit()]
            if numbered:
                raise RmtkError(
                    f"{numbered[0]}: already exists (several learned machines are written as {path.stem}_1"
                    f"{path.suffix}, {path.stem}_2{path.suffix}, ...); pass --force to replace it"
                )


def run_plan(plan):
    """Run a :class:`~rmtk.cli.args.LearnPlan` and print its report: the result (``None``
    when no machine was found)."""
    from .flags import ASKING, LABELS

    comparison = None
    lines: list[str] = []
    if plan.mode in ASKING:
        started = time.monotonic()
        if plan.label_noise is not None:  # the letters believed from --demos, then the loop on them
            noisy = plan.label_noise.fit(plan.view, plan.expert)
            active, lines = noisy.active, noisy.lines()
        else:
            active = plan.learner.fit(plan.view, plan.expert)
        _say_stopped()
        _active_header(plan, active)
        if plan.labels is None:
            result = active.result
        else:
            result = _labels_left(plan, time.monotonic() - started).fit_questions(active, plan.task)
    elif plan.label_noise is not None:  # the labels as believed, then the learner on them
        noisy = plan.label_noise.fit(plan.task)
        _say_stopped()
        result = noisy.result
        lines = noisy.lines()
    elif plan.mode == "both":  # each evidence alone beside both: which split what
        from ..traces.compare import compare_evidence

        comparison = compare_evidence(plan.learner, plan.task)
        result = comparison.both
        _say_stopped()
    else:
        result = plan.learner.fit(plan.task)
        _say_stopped()
    if plan.mode in LABELS:
        from ..labels.report import label_report

        label_report(plan.task, result, explain=plan.explain)
    else:
        from ..learner.report import report

        asked = None
        if plan.mode in ASKING:
            asked = f"the expert's {_kind(plan.expert)}"
        evidence = None
        if comparison is not None:
            evidence = ["which evidence decided what (each evidence alone, same limits):"]
            evidence += [f"  {line}" for line in comparison.lines()]
        for line in lines:
            print(f"# {line}")
        report(plan.task, result, count_pairs=plan.count_pairs, explain=plan.explain, asked=asked, evidence=evidence)
    if result.n_nodes is None and result.search.complete:  # proved none: said on stderr too, whatever -q says
        print(f"rmtk: no machine found: {result.search.message}", file=sys.stderr)
    return None if result.n_nodes is None else result


#: Seconds the label search of ``--learn-labels --active`` is given when the active loop spent
#: the whole ``--time-limit``: enough to report what it has, flagged unfinished.
LEAST_SECONDS = 0.1


def _labels_left(plan, spent: float):
    """The label learner of ``--learn-labels --active`` with what ``--time-limit`` leaves after
    the active loop (a little, flagged by the label learner, when the loop used it all)."""
    limit = plan.labels.time_limit
    if limit is None:
        return plan.labels
    import attrs

    return attrs.evolve(plan.labels, time_limit=max(limit - spent, LEAST_SECONDS))


def _say_stopped() -> None:
    """The line that flags a report as partial, once a stop was requested."""
    line = stopping.stopped_line()
    if line:
        print(line)


def _kind(expert) -> str:
    """The expert asked, as the report names it."""
    return "exact policy" if expert.exact else f"runs of its policy (seed {expert.seed})"


def _active_header(plan, active) -> None:
    from ..words import plural
    from .flags import LABELS

    if plan.mode in LABELS:
        print(
            f"# active learning on state histories: {plural(len(active.rounds), 'round')}, "
            f"{plural(active.queries, 'query', 'queries')}, {plural(active.known, '(history, state) pair')} known; "
            "labels and machine learned from them"
        )
        if active.flagged:
            print(f"# {active.ended}: the pairs below fit what was asked so far")
        if active.exhausted == "draws" and plan.default_draws is not None:
            print(
                f"# the draws budget was the default of --learn-labels --active --expert simulated, "
                f"{plan.default_draws:,} draws: raise it with --budget-draws N"
            )
        return
    kind = _kind(plan.expert)
    print(
        f"# active learning from the expert's {kind}: {plural(len(active.rounds), 'round')}, "
        f"{plural(active.queries, 'query', 'queries')}, {plural(active.steps, 'environment step')} asked, "
        f"{plural(active.draws, 'policy draw')}, {plural(active.known, '(word, state) pair')} known"
    )
    for line in active.log().splitlines():
        print(f"#   {line}")
    if active.flagged:
        print(f"# {active.ended}: the machines below are the survivors so far")


#: Files ``--dot`` / ``--png`` write at most once a time limit stopped the run (the first
#: machines; a listing stopped after thousands would otherwise write thousands of files, or draw
#: thousands of pictures, past the limit): the listing printed has every machine.
STOPPED_FILES = {"dot": 100, "png": 1}


def _write_outputs(plan, result) -> None:
    """``--dot`` and ``--png``: one file per learned machine (numbered when several), each
    written whole (:mod:`rmtk.output`); after a time limit, :data:`STOPPED_FILES` at most."""
    from .. import output
    from .flags import LABELS

    if plan.mode in LABELS:
        from ..labels.report import draw_labels, learned_tasks

        stopped = bool(result.unfinished)
        machines = [t.machine for t in learned_tasks(result, plan.task)]

        def draw(i, p):
            draw_labels(result, i, Path(p))
    else:
        stopped = result.stopped is not None
        machines = list(result.machines)

        def draw(i, p):
            from ..io import draw as pictures

            pictures.save_picture(pictures.draw_machine(machines[i]), p, overwrite=plan.force)

    def write_dot(i, p):
        from ..io import dot

        # one file per machine, thousands after a stopped listing: whole or absent, not synced
        with output.replacing(p, overwrite=plan.force, text=True, durable=False) as f:
            f.write(dot.to_dot(machines[i]))

    for kind, target, write in (("dot", plan.dot, write_dot), ("png", plan.png, draw)):
        if target:
            paths = figure_paths(target, len(machines))
            if stopped and len(paths) > STOPPED_FILES[kind]:
                paths = paths[: STOPPED_FILES[kind]]
                first = "the first machine" if len(paths) == 1 else f"the first {len(paths)}"
                print(
                    f"rmtk: the run was stopped: --{kind} is written for {first} of the {len(machines):,} "
                    "machines listed; `rmtk show LISTING learned_N --format dot` (or --png PATH) gives any other "
                    "from the listing saved as LISTING",
                    file=sys.stderr,
                )
            for i, p in enumerate(paths):  # all in one directory: probed once
                output.check(p, overwrite=plan.force, probe=i == 0)
            for i, p in enumerate(paths):
                write(i, p)
                print(f"wrote {p}", file=sys.stderr)
