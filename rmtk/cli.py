"""The ``rmtk`` command: a thin layer over the Python API.

Bad input never shows a traceback: every :class:`~rmtk.errors.RmtkError` is printed as its
message on stderr and the exit code is 1 (2 for command-line usage errors).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

from . import dsl
from .errors import DslError, RmtkError
from .machine import RewardMachine
from .mdp import LabeledMDP
from .task import Task


def _pick(doc: dsl.RmFile, name: str | None):
    """The object called ``name``, or the whole file when no name is given."""
    return doc if name is None else doc.get(name)


def _pick_machine(doc: dsl.RmFile, name: str | None) -> RewardMachine:
    """A machine for pictures: the named machine/task's machine, or the file's only one."""
    if name is not None:
        obj = doc.get(name)
        if isinstance(obj, Task):
            return obj.machine
        if isinstance(obj, RewardMachine):
            return obj
        raise RmtkError(f"{name!r} is an mdp; name a machine or a task to draw a machine")
    if len(doc.machines) == 1:
        return next(iter(doc.machines.values()))
    if len(doc.tasks) == 1:
        return next(iter(doc.tasks.values())).machine
    raise RmtkError(f"the file holds several machines ({', '.join(doc.machines)}); name the one to show")


def _writable(path: Path, force: bool) -> Path:
    """``path``, checked before the work to be writable (:func:`rmtk.output.check`)."""
    from . import output

    return output.check(path, overwrite=force)


def cmd_check(args) -> int:
    """Validate files and summarise each block."""
    failed = 0
    for file in args.files:
        try:
            doc = dsl.load(file)
        except RmtkError as err:
            print(err, file=sys.stderr)
            failed += 1
            continue
        print(f"{file}: ok, {len(doc)} block{'s' if len(doc) != 1 else ''}")
        for obj in doc:
            print("  " + obj.summary())
    return 1 if failed else 0


def cmd_show(args) -> int:
    """Print a file or one block as .rm text, DOT or JSON; draw it with --png."""
    doc = dsl.load(args.file)
    if args.png:
        from . import draw

        out = _writable(Path(args.png), args.force)
        draw.picture_format(out)
        obj = doc.get(args.name) if args.name else None
        fig = draw.draw_grid(obj) if isinstance(obj, LabeledMDP) else draw.draw_machine(_pick_machine(doc, args.name))
        draw.save_picture(fig, out, overwrite=args.force)
        print(f"wrote {out}", file=sys.stderr)
        if args.format is None:
            return 0
    fmt = args.format or "rm"
    if fmt == "rm":
        sys.stdout.write(dsl.dumps(_pick(doc, args.name)))
    elif fmt == "dot":
        from .io import dot

        sys.stdout.write(dot.to_dot(_pick_machine(doc, args.name)))
    else:
        obj = _pick(doc, args.name)
        data = _to_json(obj)
        json.dump(data, sys.stdout, indent=2)
        sys.stdout.write("\n")
    return 0


def _to_json(obj):
    if isinstance(obj, dsl.RmFile):
        return {
            "mdps": {k: v.to_dict() for k, v in obj.mdps.items()},
            "machines": {k: v.to_dict() for k, v in obj.machines.items()},
            "tasks": {k: _to_json(v) for k, v in obj.tasks.items()},
        }
    if isinstance(obj, Task):
        return {
            "name": obj.name,
            "mdp": obj.mdp.name,
            "machine": obj.machine.name,
            "gamma": obj.discount,
            "lambda": obj.lam,
            "depth": obj.depth,
            "max_nodes": obj.max_nodes,
        }
    return obj.to_dict()


def _load_task(file: str, name: str | None) -> Task:
    doc = dsl.load(file)
    if name is not None:
        return doc.get(name, "task")
    return doc.only("task")


def learner_from_args(args, task: Task | None = None):
    """The :class:`~rmtk.learner.Learner` the command-line options describe (the same
    strategies a Python user composes)."""
    from .encoders import MaxSatEncoder, SatEncoder
    from .learner import EmpiricalPTP, ExactMiner, ExactPTP, Learner
    from .maxent import MaxEntIRL
    from .negatives import ConfidenceMiner
    from .progress import Progress, StderrProgress

    progress = Progress() if args.quiet else StderrProgress()
    compress = not args.no_compress
    if args.stuttering and compress:
        raise RmtkError("--stuttering needs --no-compress: a tree keyed by compressed words assumes a "
                        "non-stuttering machine")
    engine = _engine_from_args(args)
    if args.demos:
        import os

        from .data import format_of, load

        if not os.path.exists(args.demos):
            raise RmtkError(f"{args.demos}: no such file or directory (--demos)")
        if args.depth == INF:
            raise RmtkError("--depth inf applies to the exact policy; demonstrations are counted whole by default")
        data = args.demos  # a Parquet dataset is counted partition by partition, never loaded whole
        if format_of(args.demos) != "parquet":
            data = load(args.demos, task.mdp)
            progress.note(f"loaded {args.demos}: {data.summary()}")
        ptp = EmpiricalPTP(data, depth=args.depth, compress=compress, engine=engine)
        miner = ConfidenceMiner(alpha=0.05 if args.alpha is None else args.alpha)
    else:
        if args.engine != "local":
            raise RmtkError("--engine applies to learning from demonstrations (--demos)")
        for flag, value in (("--alpha", args.alpha), ("--weights", args.weights)):
            if value is not None and not (flag == "--weights" and args.maxsat):
                raise RmtkError(f"{flag} applies to learning from demonstrations (--demos FILE)")
        depth = None if args.depth == INF else (args.depth or "task")
        ptp = ExactPTP(depth=depth, source=args.policy, compress=compress)
        miner = ExactMiner()
    common = dict(non_stuttering=not args.stuttering, symmetry_breaking=not args.no_symmetry_breaking,
                  solver=args.solver)
    if args.maxsat:
        encoder = MaxSatEncoder(weights=args.weights or "unit", **common)
    else:
        if args.weights is not None:
            raise RmtkError("--weights applies to MaxSAT (--maxsat)")
        encoder = SatEncoder(negatives=args.negatives, **common)
    return Learner(ptp=ptp, miner=miner, encoder=encoder, irl=None if args.no_rewards else MaxEntIRL(),
                   max_nodes=args.max_nodes, nodes=args.nodes, max_solutions=args.max_solutions,
                   time_limit=args.time_limit, progress=progress)


def _figure_paths(path: str, count: int) -> list[Path]:
    p = Path(path)
    if count == 1:
        return [p]
    return [p.with_name(f"{p.stem}_{i + 1}{p.suffix}") for i in range(count)]


def _engine_from_args(args):
    """The engine of ``--engine``, ``--scheduler``, ``--workers`` (:mod:`rmtk.engines`)."""
    from .engines import as_engine

    if args.engine != "dask" and (args.scheduler or args.workers):
        raise RmtkError("--scheduler and --workers choose the Dask cluster; add --engine dask")
    if args.scheduler and args.workers:
        raise RmtkError("--scheduler connects to a running cluster and --workers starts a local one; give one of them")
    if args.engine != "dask" and args.dask_timeout is not None:
        raise RmtkError("--dask-timeout bounds a Dask run; add --engine dask")
    engine = as_engine(args.engine, scheduler=args.scheduler, workers=args.workers)
    if args.dask_timeout is not None:
        import attrs

        engine = attrs.evolve(engine, timeout=args.dask_timeout)
    return engine


def _add_engine_options(parser, what: str) -> None:
    from .engines import ENGINES

    parser.add_argument("--engine", choices=ENGINES, default="local",
                        help=f"where the {what} runs: this process (default) or a Dask cluster (pip install 'rmtk[dask]')")
    parser.add_argument("--scheduler", metavar="ADDRESS", help="with --engine dask: a running scheduler (tcp://host:8786)")
    parser.add_argument("--workers", type=_positive_int, metavar="N",
                        help="with --engine dask: start a local cluster of N worker processes (default: one per CPU)")
    parser.add_argument("--dask-timeout", type=_positive_float, metavar="S",
                        help="with --engine dask: stop when no piece of work has finished for S seconds (default 600)")


def cmd_simulate(args) -> int:
    """Sample demonstrations from a task's soft-optimal product policy."""
    from .data import format_of, save
    from .progress import Progress, StderrProgress
    from .simulate import simulate, simulate_dataset, simulate_sharded

    task = _load_task(args.file, args.task)
    fmt = format_of(args.output, args.format)
    engine = _engine_from_args(args)
    if args.partition_size is not None and fmt != "parquet":
        raise RmtkError("--partition-size applies to Parquet output (--format parquet)")
    if args.lam is not None:
        import attrs

        task = attrs.evolve(task, lam=args.lam)
    progress = Progress() if args.quiet else StderrProgress()
    if fmt == "parquet":  # streamed: one partition per shard, written where it was simulated
        w = simulate_dataset(task, args.n, args.horizon, args.output, seed=args.seed,
                             partition_size=args.partition_size, overwrite=args.force, engine=engine, progress=progress)
        print(f"wrote {args.output}: {w.trajectories} trajectories ({w.steps} steps) in {w.files} Parquet "
              f"file{'s' if w.files != 1 else ''}, {w.bytes / 2**20:.1f} MiB, seed {args.seed}", file=sys.stderr)
        return 0
    out = _writable(Path(args.output), args.force)
    if args.engine == "local":
        demos = simulate(task, args.n, args.horizon, seed=args.seed, progress=progress)
    else:
        demos = simulate_sharded(task, args.n, args.horizon, seed=args.seed, engine=engine, progress=progress)
    save(demos, out, task.mdp, overwrite=args.force, format=fmt)
    print(f"wrote {out}: {demos.summary()}, seed {args.seed}", file=sys.stderr)
    return 0


def active_from_args(args, task: Task):
    """The :class:`~rmtk.active.ActiveLearner` and the expert of ``learn --active``: the task's
    exact policy, or (``--expert simulated``) its soft-optimal policy run on the task's MDP,
    ``--samples`` actions per question; ``--demos`` are the data recorded before."""
    from .active import ActiveLearner, Budget
    from .encoders import SatEncoder
    from .expert import SimulatedExpert, TaskExpert
    from .progress import Progress, StderrProgress
    from .queries import ExpertWalks, SplitMostPairs

    for flag, value in (("--maxsat", args.maxsat), ("--depth", args.depth), ("--nodes", args.nodes),
                        ("--weights", args.weights), ("--no-compress", args.no_compress)):
        if value:
            raise RmtkError(f"{flag} does not apply to active learning (--active)")
    if args.engine != "local":
        raise RmtkError("--engine applies to learning from demonstrations without --active")
    expert_kind = args.expert or ("simulated" if args.demos else "exact")
    if expert_kind == "exact" and args.demos:
        raise RmtkError("--demos are counts: with --active they go with --expert simulated, not the exact expert")
    data = None
    if args.demos:
        from .data import format_of, load

        data = args.demos if format_of(args.demos) == "parquet" else load(args.demos, task.mdp)
    if args.lam is not None:
        import attrs

        task = attrs.evolve(task, lam=args.lam)
    make = TaskExpert if expert_kind == "exact" else SimulatedExpert
    expert = make(task, source=args.policy, seed=args.seed, recorded=data)
    budget = Budget(queries=args.budget_queries, steps=args.budget_steps, seconds=args.budget_seconds)
    walks = ExpertWalks(walks=args.walks or 5, length=args.walk_length or 40)
    learner = ActiveLearner(strategy=SplitMostPairs(samples=args.samples or 200), check=walks,
                            encoder=SatEncoder(non_stuttering=not args.stuttering, solver=args.solver,
                                               symmetry_breaking=not args.no_symmetry_breaking),
                            budget=budget, max_nodes=args.max_nodes, max_solutions=args.max_solutions,
                            alpha=0.05 if args.alpha is None else args.alpha,
                            progress=Progress() if args.quiet else StderrProgress())
    return learner, expert


def cmd_learn(args) -> int:
    """Learn the smallest machine from a task's exact prefix tree policy or from demonstrations."""
    task = _load_task(args.file, args.task)
    if args.learn_labels is not None:
        return _learn_labels(args, task, learner_from_args(args, task))
    from .report import report

    if args.dot:
        _writable(Path(args.dot), args.force)  # before the work: a bad path fails now, not after the search
    if args.png:
        from .draw import picture_format

        picture_format(_writable(Path(args.png), args.force))
    if args.active:
        learner, expert = active_from_args(args, task)
        active = learner.fit(task, expert)
        result = active.result
        kind = "exact policy" if expert.exact else f"runs of its policy (seed {args.seed})"
        print(f"# active learning from the expert's {kind}: {len(active.rounds)} rounds, {active.queries} queries, "
              f"{active.steps} environment steps asked, {active.known} (word, state) pairs known")
        for line in active.log().splitlines():
            print(f"#   {line}")
        if active.flagged:
            print(f"# budget spent ({active.exhausted}): the machines below are the survivors so far")
    else:
        for flag, value in (("--budget-steps", args.budget_steps), ("--budget-queries", args.budget_queries),
                            ("--budget-seconds", args.budget_seconds), ("--expert", args.expert),
                            ("--samples", args.samples), ("--walks", args.walks), ("--walk-length", args.walk_length)):
            if value is not None:
                raise RmtkError(f"{flag} applies to active learning (--active)")
        result = learner_from_args(args, task).fit(task)
    report(task, result, count_pairs=args.count_pairs, explain=args.explain)
    if result.n_nodes is None:
        return 1

    def write_dot(m, p):
        from . import output
        from .io import dot

        with output.replacing(p, overwrite=args.force, text=True) as f:
            f.write(dot.to_dot(m))

    def write_png(m, p):
        from . import draw

        draw.save_picture(draw.draw_machine(m), p, overwrite=args.force)

    for opt, write in (("dot", write_dot), ("png", write_png)):
        target = getattr(args, opt)
        if target:
            paths = _figure_paths(target, len(result.machines))
            for p in paths:
                _writable(p, args.force)
            for m, p in zip(result.machines, paths):
                write(m, p)
                print(f"wrote {p}", file=sys.stderr)
    return 0


def _learn_labels(args, task: Task, learner) -> int:
    """``rmtk learn FILE [TASK] --learn-labels [K]``: the command-line learner with a
    :class:`~rmtk.label_learner.LabelingEncoder`; from the exact expert, at every depth unless
    ``--depth`` says otherwise. ``--png`` draws each pair's labels on a grid world's map."""
    import attrs

    from .exact import ExactPTP
    from .label_learner import LabelingEncoder
    from .label_report import draw_labels, label_report

    if args.maxsat:
        raise RmtkError("--learn-labels searches with hard negative examples; --maxsat does not apply")
    ptp = learner.ptp
    if isinstance(ptp, ExactPTP) and args.depth is None:
        ptp = attrs.evolve(ptp, depth=None)
    encoder = LabelingEncoder(props=args.learn_labels or None, symmetry_breaking=not args.no_symmetry_breaking,
                              non_stuttering=not args.stuttering, solver=args.solver)
    result = attrs.evolve(learner, ptp=ptp, encoder=encoder, irl=None).fit(task)
    label_report(task, result, explain=args.explain)
    if result.n_nodes is None:
        return 1
    if args.png:
        paths = _figure_paths(args.png, len(result.solutions))
        for p in paths:
            _writable(p, args.force)
        for i, p in enumerate(paths):
            draw_labels(result, i, Path(p))
            print(f"wrote {p}", file=sys.stderr)
    return 0


def cmd_reproduce(args) -> int:
    """Run one of the paper's experiments and print our numbers beside the paper's."""
    from .experiments import EXPERIMENTS, Options, check_overrides, run
    from .progress import Progress, StderrProgress

    names = sorted(EXPERIMENTS) if args.name == "all" else [args.name]
    overrides = {}
    for item in args.set or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise RmtkError(f"--set expects KEY=VALUE, got {item!r}")
        overrides[key] = value
    if args.data:
        overrides["data"] = args.data
    if args.trajectories:
        overrides["trajectories"] = args.trajectories
    check_overrides(names, overrides)
    figdir = None if args.no_figures else Path(args.figures)
    if figdir is not None and not figdir.is_dir():
        raise RmtkError(f"{figdir}: no such directory")
    opts = Options(quick=args.quick, seed=args.seed, figure_dir=figdir, overrides=overrides, force=args.force,
                   progress=Progress() if args.quiet else StderrProgress())
    status = 0
    for name in names:
        try:
            print(run(name, opts).text())
        except RmtkError as err:
            if len(names) == 1:
                raise
            print(f"== {name}: skipped: {err} ==")
            status = 1
    return status


def _number(kind, what: str, ok, bound: str):
    """An argparse type: ``kind(text)`` that must satisfy ``ok``, with a plain message."""
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if not ok(value):
            raise argparse.ArgumentTypeError(f"expected {what} {bound}, got {text}")
        return value
    return parse


_positive_int = _number(int, "a whole number", lambda v: v >= 1, "of at least 1")
_seed = _number(int, "a seed (a whole number)", lambda v: v >= 0, "of at least 0")
INF = "inf"


def _depth(text: str):
    """A depth: a whole number of at least 1, or ``inf`` (every depth)."""
    return INF if text.strip().lower() in ("inf", "infinity") else _positive_int(text)
_positive_float = _number(float, "a number", lambda v: 0 < v < float("inf"), "above 0")


def _probability(text: str) -> float:
    value = _positive_float(text)
    if not value < 1:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1), got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="rmtk", description=__doc__.splitlines()[0])
    from . import __version__

    p.add_argument("--version", action="version", version=f"rmtk {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    c = sub.add_parser("check", help="validate .rm files and summarise their blocks")
    c.add_argument("files", nargs="+", metavar="FILE")
    c.set_defaults(func=cmd_check)

    s = sub.add_parser("show", help="print a file or block as .rm text, DOT or JSON, or draw it")
    s.add_argument("file", metavar="FILE")
    s.add_argument("name", nargs="?", metavar="NAME", help="a block of the file (default: the whole file)")
    s.add_argument("--format", choices=("rm", "dot", "json"), help="output format (default rm)")
    s.add_argument("--png", metavar="PATH", help="draw the machine (or a grid world's map) to PATH (.png or .svg)")
    s.add_argument("--force", action="store_true", help="overwrite PATH if it exists")
    s.set_defaults(func=cmd_show)

    ln = sub.add_parser("learn", help="learn the smallest reward machine from a task's exact policy")
    ln.add_argument("file", metavar="FILE", help="a .rm file with a task")
    ln.add_argument("task", nargs="?", metavar="TASK", help="the task to learn (default: the file's only task)")
    ln.add_argument("--depth", type=_depth, metavar="L|inf",
                    help="prefix tree depth l (default: the task's depth, else 6); inf: every depth, learned from "
                         "counterexamples on the synchronised product")
    ln.add_argument("--max-nodes", type=_positive_int, help="bound u_max on the nodes (default: the task's, else 4)")
    ln.add_argument("--nodes", type=_positive_int, help="solve for exactly this many nodes (the paper solves at n = u_max)")
    ln.add_argument("--policy", choices=("soft-optimal", "distinct"), default="soft-optimal",
                    help="soft-optimal: the task's MaxEnt policy; distinct: one policy per node (the paper's counts)")
    ln.add_argument("--no-compress", action="store_true", help="key the tree by uncompressed words")
    ln.add_argument("--stuttering", action="store_true", help="drop the non-stuttering constraint (needs --no-compress)")
    ln.add_argument("--no-symmetry-breaking", action="store_true", help="enumerate without BFS symmetry breaking")
    ln.add_argument("--negatives", choices=("classes", "pairs", "lazy"), default="classes",
                    help="encode negative examples grouped by policy class (default), pair by pair, or lazily: only "
                         "those a candidate machine violates (no prefix tree is built from an exact policy)")
    from .solve import SOLVERS

    ln.add_argument("--solver", default="cadical153", choices=SOLVERS, metavar="NAME",
                    help="SAT solver of python-sat (default cadical153)")
    ln.add_argument("--demos", metavar="FILE",
                    help="learn from demonstrations (.npz, .csv, or a Parquet dataset directory) instead of the exact policy")
    _add_engine_options(ln, "counting of --demos")
    ln.add_argument("--alpha", type=_probability, help="confidence level of the negative examples (default 0.05)")
    ln.add_argument("--maxsat", action="store_true", help="weighted MaxSAT: robust to false positive negative examples")
    ln.add_argument("--weights", choices=("unit", "evidence"),
                    help="MaxSAT weight of a negative example: 1 (default), or growing with its evidence")
    ln.add_argument("--active", action="store_true",
                    help="ask the expert for the data that separates the surviving machines (active learning)")
    ln.add_argument("--expert", choices=("exact", "simulated"),
                    help="with --active: the task's exact policy (default) or runs of it on the task's MDP "
                         "(the default with --demos)")
    ln.add_argument("--budget-steps", type=_positive_int, metavar="N",
                    help="with --active: at most N environment steps")
    ln.add_argument("--budget-queries", type=_positive_int, metavar="N", help="with --active: at most N expert queries")
    ln.add_argument("--budget-seconds", type=_positive_float, metavar="S", help="with --active: at most S seconds")
    ln.add_argument("--samples", type=_positive_int, metavar="M",
                    help="with --active --expert simulated: actions drawn per question (default 200)")
    ln.add_argument("--walks", type=_positive_int, metavar="N", help="with --active: expert walks of the equivalence "
                    "check (default 5)")
    ln.add_argument("--walk-length", type=_positive_int, metavar="L", help="with --active: steps per walk (default 40)")
    ln.add_argument("--seed", type=_seed, default=0, help="with --active: seed of the expert's randomness (default 0)")
    ln.add_argument("--lambda", dest="lam", type=_positive_float,
                    help="with --active: the expert's temperature (default: the task's)")
    ln.add_argument("--learn-labels", nargs="?", const=0, type=_positive_int, metavar="K",
                    help="learn the labeling function too, from state histories only (the file's labels serve only "
                         "for the verdict): the fewest nodes, then the fewest propositions, or exactly K")
    ln.add_argument("--max-solutions", type=_positive_int, help="stop after this many machines")
    ln.add_argument("--time-limit", type=_positive_float, metavar="S",
                    help="seconds for the SAT search; what was found is reported")
    ln.add_argument("--explain", action="store_true",
                    help="when several machines survive: witnesses that would tell them apart (and, from "
                         "demonstrations, the rarely seen word pairs they disagree on)")
    ln.add_argument("--count-pairs", action="store_true",
                    help="count distinct negative word pairs even above 200,000 per-state pairs (slow)")
    ln.add_argument("--no-rewards", action="store_true",
                    help="skip the reward recovery (MaxEnt IRL) of the learned machines")
    ln.add_argument("--dot", metavar="PATH", help="write the learned machine(s) as DOT")
    ln.add_argument("--png", metavar="PATH", help="draw the learned machine(s) (.png or .svg)")
    ln.add_argument("--force", action="store_true", help="overwrite existing output files")
    ln.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    ln.set_defaults(func=cmd_learn)

    sm = sub.add_parser("simulate", help="sample demonstrations from a task's soft-optimal policy")
    sm.add_argument("file", metavar="FILE", help="a .rm file with a task")
    sm.add_argument("task", nargs="?", metavar="TASK")
    sm.add_argument("-n", type=_positive_int, required=True, help="number of trajectories")
    sm.add_argument("-T", "--horizon", type=_positive_int, required=True, help="steps per trajectory")
    sm.add_argument("--seed", type=_seed, required=True, help="random seed (results are reproducible)")
    sm.add_argument("-o", "--output", required=True, metavar="PATH",
                    help="output file (.npz or .csv) or Parquet dataset directory (a .parquet name or --format parquet)")
    sm.add_argument("--format", choices=("npz", "csv", "parquet"), help="output format (default: from PATH)")
    sm.add_argument("--partition-size", type=_positive_int, metavar="N",
                    help="Parquet: trajectories per file (default 500,000)")
    _add_engine_options(sm, "simulation")
    sm.add_argument("--lambda", dest="lam", type=_positive_float, help="expert temperature λ (default: the task's)")
    sm.add_argument("--force", action="store_true", help="overwrite PATH if it exists")
    sm.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    sm.set_defaults(func=cmd_simulate)

    from .experiments import EXPERIMENTS

    listing = "; ".join(f"{e.name} ({e.paper}): {e.what}" for e in EXPERIMENTS.values())
    rp = sub.add_parser("reproduce", help="run one of the paper's experiments (ours beside the paper's numbers)",
                        description=f"Experiments: {listing}.")
    rp.add_argument("name", choices=sorted(EXPERIMENTS) + ["all"], metavar="NAME",
                    help=f"one of: {', '.join(sorted(EXPERIMENTS))}, or all")
    rp.add_argument("--quick", action="store_true", help="a small version (seconds)")
    rp.add_argument("--data", metavar="PATH", help="trajectories for the mice experiment (.npz with states, actions)")
    rp.add_argument("--trajectories", type=_positive_int, help="number of trajectories to simulate (experiments that simulate)")
    rp.add_argument("--seed", type=_seed, default=0, help="random seed (default 0)")
    rp.add_argument("--set", action="append", metavar="KEY=VALUE", help="override an experiment setting")
    rp.add_argument("--figures", metavar="DIR", default=".", help="directory for the figures (default: .)")
    rp.add_argument("--no-figures", action="store_true", help="write no figure")
    rp.add_argument("--force", action="store_true", help="overwrite existing figures")
    rp.add_argument("-q", "--quiet", action="store_true")
    rp.set_defaults(func=cmd_reproduce)
    return p


class _Terminated(BaseException):
    """SIGTERM, raised like Ctrl-C so that files being written are cleaned up (rmtk/output.py)."""


def _terminate(signum, frame):
    raise _Terminated


def main(argv: Sequence[str] | None = None) -> int:
    import signal
    import threading

    args = build_parser().parse_args(argv)
    on_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if on_main else None
    try:
        return args.func(args)
    except RmtkError as err:
        print(err if isinstance(err, DslError) else f"rmtk: error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("rmtk: interrupted", file=sys.stderr)
        return 130
    except _Terminated:
        print("rmtk: terminated", file=sys.stderr)
        return 128 + signal.SIGTERM
    except BrokenPipeError:
        return 0
    finally:
        if on_main:
            signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
