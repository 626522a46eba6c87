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
    if path.exists() and not force:
        raise RmtkError(f"{path}: already exists; pass --force to overwrite it")
    if not path.parent.exists():
        raise RmtkError(f"{path.parent}: no such directory")
    return path


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
        obj = doc.get(args.name) if args.name else None
        if isinstance(obj, LabeledMDP):
            draw.draw_grid(obj, out)
        else:
            draw.draw_machine(_pick_machine(doc, args.name), out)
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


def learner_from_args(args):
    """The :class:`~rmtk.learner.Learner` the command-line options describe."""
    from .learner import Learner
    from .solve import EncodingOptions, Progress, StderrProgress

    return Learner(
        depth=args.depth,
        max_nodes=args.max_nodes,
        nodes=args.nodes,
        source=args.policy,
        compress=not args.no_compress,
        encoding=EncodingOptions(
            non_stuttering=not args.stuttering,
            symmetry_breaking=not args.no_symmetry_breaking,
            negatives=args.negatives,
            solver=args.solver,
        ),
        max_solutions=args.max_solutions,
        time_limit=args.time_limit,
        progress=Progress() if args.quiet else StderrProgress(),
        alpha=args.alpha,
        maxsat=args.maxsat,
        weights=args.weights,
    )


PAIR_COUNT_LIMIT = 5_000_000


def report(task: Task, result, *, out=None) -> None:
    """Print a learning result as .rm text with '#' comment lines (the output stays loadable)."""
    out = out or sys.stdout
    st = result.stats()
    t = result.timings
    w = lambda line="": print(line, file=out)  # noqa: E731
    words = "compressed" if result.tree.trie.compressed else "uncompressed"
    if result.classes is not None:
        w(f"# learned from task {task.name}: exact prefix tree policy of depth {result.tree.depth}, {words} words")
        pairs = st["per_state_pairs"]
        distinct = (f"{len(result.classes.distinct_pairs())} distinct word pairs" if pairs <= PAIR_COUNT_LIMIT
                    else "distinct pairs not counted")
        w(f"# prefix tree: {st['trie_nodes'] - 1} words, {st['pairs']} (word, state) pairs, {st['classes']} policy classes")
        w(f"# negative examples: {pairs} per-state pairs, {distinct}")
    else:
        w(f"# learned from task {task.name}: empirical prefix tree policy, {words} words")
        w(f"# empirical prefix tree: {st['trie_nodes'] - 1} words, {st['pairs']} (word, state) pairs")
        report_demos(result, out=out)
    tried = ", ".join(f"{n}: {'sat' if ok else 'unsat' if ok is False else 'interrupted'}" for n, ok in result.search.tried)
    bound = f" (lower bound {st['lower_bound']})" if "lower_bound" in st else ""
    w(f"# SAT: nodes tried {tried}{bound}; {st['clauses']} clauses, {st['variables']} variables")
    w("# timings (s): " + ", ".join(f"{k} {v:.4f}" for k, v in t.items()))
    if result.n_nodes is None:
        w(f"# no solution: {result.search.message}")
        return
    w(f"# solutions: {result.distinct_count} machine{'s' if result.distinct_count != 1 else ''} up to renaming, "
      f"{result.raw_count} raw assignments (node 0 fixed, the paper's count)"
      + ("" if result.search.complete else f"; {result.search.message}"))
    iso = result.isomorphic_to_truth()
    for i, m in enumerate(result.machines):
        w()
        free = result.unconstrained(i)
        if free:
            w("# unconstrained by the data (written as self-loops): " + ", ".join(f"{u} on {a}" for u, a in free))
        if result.verdicts is not None:
            same = f"; isomorphic to the true machine '{task.machine.name}'" if iso and iso[i] else ""
            w(f"# verdict: {result.verdicts[i]}{same}")
        if result.reward_fits is not None and i < len(result.reward_fits):
            f = result.reward_fits[i]
            ident = ("identified up to potential shaping" if f.identified_up_to_shaping
                     else "identification not analysed" if f.null_dim is None
                     else f"{f.extra_null_dim} reward direction(s) not identified beyond shaping")
            replan = "" if f.replan_error is None else f", re-planned policy within {f.replan_error:.2g}"
            w(f"# rewards (MaxEnt, sparsest up to shaping): residual {f.residual:.2g}{replan}; {ident}")
        if result.negatives is not None and result.solutions[i].dropped:
            shown = result.dropped(i)[:5]
            more = f" and {len(result.solutions[i].dropped) - 5} more" if len(result.solutions[i].dropped) > 5 else ""
            w("# violates the negative examples: " + "; ".join(f"{' '.join(a)} / {' '.join(b)}" for a, b in shown) + more)
        out.write(dsl.dumps(m))


def _figure_paths(path: str, count: int) -> list[Path]:
    p = Path(path)
    if count == 1:
        return [p]
    return [p.with_name(f"{p.stem}_{i + 1}{p.suffix}") for i in range(count)]


class ProgressBar:
    """A one-line progress bar on stderr (redrawn at most every 0.2 s)."""

    def __init__(self, label: str, total: int, stream=None):
        import time

        self.label, self.total, self.stream = label, total, stream or sys.stderr
        self._time = time.monotonic
        self._last = 0.0
        self._start = self._time()

    def __call__(self, done: int, total: int | None = None) -> None:
        now = self._time()
        total = total or self.total
        if now - self._last < 0.2 and done < total:
            return
        self._last = now
        width = 30
        fill = int(width * done / max(total, 1))
        rate = done / max(now - self._start, 1e-9)
        end = "\n" if done >= total else "\r"
        print(f"rmtk: {self.label} [{'#' * fill}{'.' * (width - fill)}] {done}/{total} ({rate:,.0f}/s)",
              end=end, file=self.stream, flush=True)


def cmd_simulate(args) -> int:
    """Sample demonstrations from a task's soft-optimal product policy."""
    from .data import save
    from .simulate import simulate

    task = _load_task(args.file, args.task)
    out = _writable(Path(args.output), args.force)
    if args.lam is not None:
        import attrs

        task = attrs.evolve(task, lam=args.lam)
    bar = None if args.quiet else ProgressBar("simulating", args.n)
    demos = simulate(task, args.n, args.horizon, seed=args.seed, progress=bar)
    save(demos, out, task.mdp, overwrite=True)
    print(f"wrote {out}: {demos.summary()}, seed {args.seed}", file=sys.stderr)
    return 0


def report_demos(result, *, out=None) -> None:
    """The negative examples part of a report on learning from demonstrations."""
    out = out or sys.stdout
    neg = result.negatives
    fpr = result.false_positive_rate
    extra = "" if fpr is None else f", false positive rate {100 * fpr:.2f}% against the true machine"
    print(f"# demonstrations: {len(neg)} negative examples at alpha {neg.alpha:g}{extra}", file=out)
    if result.search.cost is not None:
        print(f"# MaxSAT: optimum drops {result.search.cost} negative example(s)", file=out)


def cmd_learn(args) -> int:
    """Learn the smallest machine from a task's exact prefix tree policy or from demonstrations."""
    task = _load_task(args.file, args.task)
    learner = learner_from_args(args)
    if args.demos:
        from .data import load

        demos = load(args.demos, task.mdp)
        print(f"rmtk: loaded {args.demos}: {demos.summary()}", file=sys.stderr)
        result = learner.fit_demonstrations(task, demos)
    else:
        if args.maxsat:
            raise RmtkError("--maxsat applies to learning from demonstrations (--demos FILE)")
        result = learner.fit(task)
    report(task, result)
    if result.n_nodes is None:
        return 1
    from . import draw
    from .io import dot

    for opt, write in (("dot", lambda m, p: p.write_text(dot.to_dot(m))), ("png", draw.draw_machine)):
        target = getattr(args, opt)
        if target:
            paths = _figure_paths(target, len(result.machines))
            for p in paths:
                _writable(p, args.force)
            for m, p in zip(result.machines, paths):
                write(m, p)
                print(f"wrote {p}", file=sys.stderr)
    return 0


def cmd_reproduce(args) -> int:
    """Run one of the paper's experiments and print our numbers beside the paper's."""
    from .reproduce import EXPERIMENTS, Options, run

    names = sorted(EXPERIMENTS) if args.name == "all" else [args.name]
    overrides = {}
    for item in args.set or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise RmtkError(f"--set expects KEY=VALUE, got {item!r}")
        try:
            overrides[key] = float(value) if any(c in value for c in ".e") else int(value)
        except ValueError:
            overrides[key] = value
    if args.data:
        overrides["data"] = args.data
    if args.trajectories:
        overrides["trajectories"] = args.trajectories
    figdir = None if args.no_figures else Path(args.figures)
    if figdir is not None and not figdir.is_dir():
        raise RmtkError(f"{figdir}: no such directory")
    opts = Options(quick=args.quick, seed=args.seed, figure_dir=figdir, overrides=overrides, force=args.force,
                   progress=None if args.quiet else (lambda msg: print(f"rmtk: {msg}", file=sys.stderr)))
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
    ln.add_argument("--depth", type=int, help="prefix tree depth l (default: the task's depth, else 6)")
    ln.add_argument("--max-nodes", type=int, help="bound u_max on the nodes (default: the task's, else 4)")
    ln.add_argument("--nodes", type=int, help="solve for exactly this many nodes (the paper solves at n = u_max)")
    ln.add_argument("--policy", choices=("soft-optimal", "distinct"), default="soft-optimal",
                    help="soft-optimal: the task's MaxEnt policy; distinct: one policy per node (the paper's counts)")
    ln.add_argument("--no-compress", action="store_true", help="key the tree by uncompressed words")
    ln.add_argument("--stuttering", action="store_true", help="drop the non-stuttering constraint (needs --no-compress)")
    ln.add_argument("--no-symmetry-breaking", action="store_true", help="enumerate without BFS symmetry breaking")
    ln.add_argument("--negatives", choices=("classes", "pairs"), default="classes",
                    help="encode negative examples grouped by policy class (default) or pair by pair")
    from .solve import SOLVERS

    ln.add_argument("--solver", default="cadical153", choices=SOLVERS, metavar="NAME",
                    help="SAT solver of python-sat (default cadical153)")
    ln.add_argument("--demos", metavar="FILE", help="learn from demonstrations (.npz or .csv) instead of the exact policy")
    ln.add_argument("--alpha", type=float, default=0.05, help="confidence level of the negative examples (default 0.05)")
    ln.add_argument("--maxsat", action="store_true", help="weighted MaxSAT: robust to false positive negative examples")
    ln.add_argument("--weights", choices=("unit", "evidence"), default="unit",
                    help="MaxSAT weight of a negative example: 1, or growing with its evidence")
    ln.add_argument("--max-solutions", type=int, help="stop after this many machines")
    ln.add_argument("--time-limit", type=float, help="seconds for the SAT search; what was found is reported")
    ln.add_argument("--dot", metavar="PATH", help="write the learned machine(s) as DOT")
    ln.add_argument("--png", metavar="PATH", help="draw the learned machine(s) (.png or .svg)")
    ln.add_argument("--force", action="store_true", help="overwrite existing output files")
    ln.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    ln.set_defaults(func=cmd_learn)

    sm = sub.add_parser("simulate", help="sample demonstrations from a task's soft-optimal policy")
    sm.add_argument("file", metavar="FILE", help="a .rm file with a task")
    sm.add_argument("task", nargs="?", metavar="TASK")
    sm.add_argument("-n", type=int, required=True, help="number of trajectories")
    sm.add_argument("-T", "--horizon", type=int, required=True, help="steps per trajectory")
    sm.add_argument("--seed", type=int, required=True, help="random seed (results are reproducible)")
    sm.add_argument("-o", "--output", required=True, metavar="PATH", help="output file (.npz or .csv)")
    sm.add_argument("--lambda", dest="lam", type=float, help="expert temperature λ (default: the task's)")
    sm.add_argument("--force", action="store_true", help="overwrite PATH if it exists")
    sm.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    sm.set_defaults(func=cmd_simulate)

    from .reproduce import EXPERIMENTS

    rp = sub.add_parser("reproduce", help="run one of the paper's experiments (ours beside the paper's numbers)")
    rp.add_argument("name", choices=sorted(EXPERIMENTS) + ["all"], metavar="NAME",
                    help=f"one of: {', '.join(sorted(EXPERIMENTS))}, or all")
    rp.add_argument("--quick", action="store_true", help="a small version (seconds)")
    rp.add_argument("--data", metavar="PATH", help="trajectories for the mice experiment (.npz with states, actions)")
    rp.add_argument("--trajectories", type=int, help="number of trajectories to simulate (experiments that simulate)")
    rp.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    rp.add_argument("--set", action="append", metavar="KEY=VALUE", help="override an experiment setting")
    rp.add_argument("--figures", metavar="DIR", default=".", help="directory for the figures (default: .)")
    rp.add_argument("--no-figures", action="store_true", help="write no figure")
    rp.add_argument("--force", action="store_true", help="overwrite existing figures")
    rp.add_argument("-q", "--quiet", action="store_true")
    rp.set_defaults(func=cmd_reproduce)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except RmtkError as err:
        print(err if isinstance(err, DslError) else f"rmtk: error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("rmtk: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
