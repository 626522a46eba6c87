"""The ``rmtk`` command: a thin layer over the Python API.

Bad input never shows a traceback: every :class:`~rmtk.errors.RmtkError` is printed as its
message on stderr and the exit code is 1 (2 for command-line usage errors).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path

from .. import dsl
from ..errors import DslError, RmtkError, UsageError
from ..limits import stop_requested
from ..machine.model import RewardMachine
from ..mdp.model import LabeledMDP
from ..task import Task
from . import stopping
from .args import (
    RESOLUTION_HELP,
    _add_engine_options,
    _depth,
    _epsilon,
    _positive_float,
    _positive_int,
    _probability,
    _resolution,
    _seed,
    tolerance,
)
from .learn import cmd_learn, writable
from .simulate import cmd_simulate


def _pick(doc: dsl.RmFile, name: str | None):
    """The object called ``name``, or the whole file when no name is given."""
    return doc if name is None else doc.get(name)


def _pick_machine(doc: dsl.RmFile, name: str | None) -> RewardMachine:
    """A machine for pictures: the named machine/task's machine, or the file's only one."""
    if name is not None:
        obj = doc.get(name)
        if isinstance(obj, Task):
            return obj.require_machine("drawing its machine")
        if isinstance(obj, RewardMachine):
            return obj
        raise RmtkError(f"{name!r} is an mdp; name a machine or a task to draw a machine")
    if len(doc.machines) == 1:
        return next(iter(doc.machines.values()))
    if len(doc.tasks) == 1:
        return next(iter(doc.tasks.values())).require_machine("drawing its machine")
    raise RmtkError(f"the file holds several machines ({', '.join(doc.machines)}); name the one to show")


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
    if args.force and not args.png:
        raise UsageError("--force needs --png: it lets the picture replace an existing file")
    doc = dsl.load(args.file)
    if args.png:
        from ..io import draw

        out = writable(Path(args.png), args.force)
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
        from ..io import dot

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
            "machine": None if obj.machine is None else obj.machine.name,
            "gamma": obj.discount,
            "lambda": obj.lam,
            "depth": obj.depth,
            "max_nodes": obj.max_nodes,
        }
    return obj.to_dict()


def _reward_noise(text: str) -> tuple[str, float]:
    """``--reward-noise KIND:LEVEL``: ``replace:E`` with E in [0, 1] or ``uniform:W`` with W ≥ 0."""
    kind, sep, level = text.partition(":")
    try:
        value = float(level)
    except ValueError:
        value = math.nan
    if not sep or kind not in ("replace", "uniform") or math.isnan(value):
        raise argparse.ArgumentTypeError(
            f"expected replace:E or uniform:W (e.g. replace:0.05, uniform:0.1), got {text!r}"
        )
    if kind == "replace" and not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"replace:E needs E in [0, 1], got {level}")
    if kind == "uniform" and not (0 <= value < math.inf):
        raise argparse.ArgumentTypeError(f"uniform:W needs a finite W >= 0, got {level}")
    return kind, value


def cmd_reproduce(args) -> int:
    """Run one of the paper's experiments and print our numbers beside the paper's."""
    from ..experiments import EXPERIMENTS, Options, check_overrides, run
    from ..progress import Progress, StderrProgress

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
    if args.no_figures and (args.force or args.figures is not None):
        flag = "--force" if args.force else "--figures"
        raise UsageError(f"{flag} does not apply with --no-figures: no figure is written")
    figdir = None if args.no_figures else Path(args.figures or ".")
    if figdir is not None and not figdir.is_dir():
        raise RmtkError(f"{figdir}: no such directory")
    opts = Options(
        quick=args.quick,
        seed=args.seed,
        figure_dir=figdir,
        overrides=overrides,
        force=args.force,
        progress=Progress() if args.quiet else StderrProgress(),
        max_memory=args.max_memory,
    )
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


#: Subcommands whose run needs neither ``reproduce``'s options nor its list of experiments.
WITHOUT_EXPERIMENTS = ("check", "show", "learn", "simulate")
REPRODUCE_HELP = "run one of the paper's experiments (ours beside the paper's numbers)"


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``rmtk`` command's parser. ``command``: the subcommand asked for, when known; one
    of :data:`WITHOUT_EXPERIMENTS` leaves ``reproduce`` bare, so its experiments' modules are
    not imported (the start-up of ``rmtk learn``, docs/benchmarks/25-start-up.md)."""
    p = argparse.ArgumentParser(prog="rmtk", description=__doc__.splitlines()[0])
    from .. import __version__

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
    ln.add_argument(
        "--depth",
        type=_depth,
        metavar="L|inf",
        help="prefix tree depth l (default: the task's depth, else 6); inf: every depth, learned from "
        "counterexamples on the synchronised product",
    )
    ln.add_argument("--max-nodes", type=_positive_int, help="bound u_max on the nodes (default: the task's, else 4)")
    ln.add_argument(
        "--nodes", type=_positive_int, help="solve for exactly this many nodes (the paper solves at n = u_max)"
    )
    ln.add_argument(
        "--policy",
        choices=("soft-optimal", "distinct"),
        help="the policy computed from the task: soft-optimal (default), its MaxEnt policy; distinct: one policy "
        "per node (the paper's counts)",
    )
    ln.add_argument("--no-compress", action="store_true", help="key the tree by uncompressed words")
    ln.add_argument(
        "--stuttering", action="store_true", help="drop the non-stuttering constraint (needs --no-compress)"
    )
    ln.add_argument("--no-symmetry-breaking", action="store_true", help="enumerate without BFS symmetry breaking")
    ln.add_argument(
        "--negatives",
        choices=("classes", "pairs", "lazy"),
        help="encode negative examples grouped by policy class (default from an exact policy), pair by pair "
        "(default from demonstrations), or lazily: only "
        "those a candidate machine violates (no prefix tree is built from an exact policy)",
    )
    from ..sat.solver import DEFAULT_SOLVER, SOLVERS

    ln.add_argument(
        "--solver",
        choices=SOLVERS,
        metavar="NAME",
        help=f"SAT solver of python-sat (default {DEFAULT_SOLVER}; with --simplest, minisat22)",
    )
    ln.add_argument(
        "--demos",
        metavar="FILE",
        help="learn from demonstrations (.npz, .csv, or a Parquet dataset directory) instead of the exact policy",
    )
    ln.add_argument(
        "--from",
        dest="evidence",
        choices=("rewards", "policy", "both"),
        help="with --demos: learn from the rewards they record, the policy they show, or both (default: both "
        "when they hold a reward column, else the policy); the report says which evidence split which nodes",
    )
    ln.add_argument(
        "--noisy",
        action="store_true",
        help="with --from rewards|both: recorded rewards may be wrong; weighted MaxSAT at --nodes (else "
        "--max-nodes) calls the fewest steps noisy and reports the noise level; past its budget of work, the "
        "least noisy machine a local search finds, flagged NOT PROVEN with a lower bound and the gap",
    )
    ln.add_argument(
        "--noisy-moves",
        type=_positive_int,
        metavar="N",
        help="with --noisy: machines the local search evaluates once the exact search's budget is spent "
        "(default 20000)",
    )
    ln.add_argument(
        "--noisy-exact",
        action="store_true",
        help="with --noisy: the exact search alone, however long (its answer is proven least noisy)",
    )
    ln.add_argument(
        "--tolerance",
        type=tolerance,
        metavar="DELTA",
        help="with --from rewards|both: each recorded reward lies within ±DELTA of the machine's output "
        "(continuous noise, e.g. the Mining task's 1 ± 0.1); 'auto' estimates DELTA; the report gives the "
        "outputs and the noise half-width's interval (docs/guide/11-learning-from-rewards.md)",
    )
    ln.add_argument(
        "--label-noise",
        metavar="auto|RATES",
        help="with --demos: the labels were recorded by a detector that errs (they may disagree with the model's): "
        "'auto' estimates the noise, RATES states it ('0.1': each label wrong with probability 0.1; "
        "'miss=M,false-alarm=F[,plain=o]' a detector's rates, per event as miss.p=M); the report gives the noise "
        "with its interval and the labels believed wrong (docs/guide/15-noisy-labels.md)",
    )
    ln.add_argument(
        "--simplest",
        action="store_true",
        help="among the smallest machines, keep those in which the fewest letters move a node",
    )
    _add_engine_options(ln, "counting of --demos")
    ln.add_argument("--alpha", type=_probability, help="confidence level of the negative examples (default 0.05)")
    ln.add_argument("--maxsat", action="store_true", help="weighted MaxSAT: robust to false positive negative examples")
    ln.add_argument(
        "--weights",
        choices=("unit", "evidence"),
        help="MaxSAT weight of a negative example: 1 (default), or growing with its evidence",
    )
    ln.add_argument(
        "--active",
        action="store_true",
        help="ask the expert for the data that separates the surviving machines (active learning)",
    )
    ln.add_argument(
        "--expert",
        choices=("exact", "simulated"),
        help="with --active: the task's exact policy (default) or runs of it on the task's MDP "
        "(the default with --demos)",
    )
    ln.add_argument(
        "--budget-steps", type=_positive_int, metavar="N", help="with --active: at most N environment steps"
    )
    ln.add_argument("--budget-queries", type=_positive_int, metavar="N", help="with --active: at most N expert queries")
    ln.add_argument("--budget-seconds", type=_positive_float, metavar="S", help="with --active: at most S seconds")
    ln.add_argument("--budget-draws", type=_positive_int, metavar="N", help="with --active: at most N expert draws")
    ln.add_argument(
        "--samples",
        type=_positive_int,
        metavar="M",
        help="with --active --expert simulated: at most M draws at a history (default: --resolution decides)",
    )
    ln.add_argument("--resolution", type=_resolution, metavar="R", help=RESOLUTION_HELP)
    ln.add_argument(
        "--walks",
        type=_positive_int,
        metavar="N",
        help="with --active: expert walks of the equivalence check (default 5; the exact expert's "
        "check is exact, on the synchronised product, unless walks are asked for)",
    )
    ln.add_argument("--walk-length", type=_positive_int, metavar="L", help="with --active: steps per walk (default 40)")
    ln.add_argument(
        "--seed",
        type=_seed,
        help="with --active --expert simulated, or --walks: seed of the expert's randomness (default 0)",
    )
    ln.add_argument(
        "--lambda",
        dest="lam",
        type=_positive_float,
        help="the temperature of the policy computed from the task (default: the task's); not with --demos "
        "(except --active --expert simulated)",
    )
    ln.add_argument(
        "--learn-labels",
        nargs="?",
        const=0,
        type=_positive_int,
        metavar="K",
        help="learn the labeling function too, from state histories only (the file's labels serve only "
        "for the verdict): the fewest nodes, then the fewest propositions, or exactly K",
    )
    ln.add_argument(
        "--max-solutions",
        type=_positive_int,
        help="list at most this many machines (default: all from the exact policy, 10 from --demos); "
        "a summary says how many survive",
    )
    ln.add_argument(
        "--time-limit",
        type=_positive_float,
        metavar="S",
        help="seconds for the whole run: every phase stops then and what was found is printed, flagged",
    )
    ln.add_argument(
        "--explain",
        action="store_true",
        help="when several machines survive: witnesses that would tell them apart (and, from "
        "demonstrations, the rarely seen word pairs they disagree on)",
    )
    ln.add_argument(
        "--count-pairs",
        action="store_true",
        help="count distinct negative word pairs even above 200,000 per-state pairs (slow)",
    )
    ln.add_argument(
        "--no-rewards", action="store_true", help="skip the reward recovery (MaxEnt IRL) of the learned machines"
    )
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
    sm.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="PATH",
        help="output file (.npz or .csv) or Parquet dataset directory (a .parquet name or --format parquet)",
    )
    sm.add_argument("--format", choices=("npz", "csv", "parquet"), help="output format (default: from PATH)")
    sm.add_argument(
        "--partition-size", type=_positive_int, metavar="N", help="Parquet: trajectories per file (default 500,000)"
    )
    _add_engine_options(sm, "simulation")
    sm.add_argument("--lambda", dest="lam", type=_positive_float, help="expert temperature λ (default: the task's)")
    sm.add_argument(
        "--policy",
        choices=("soft-optimal", "uniform"),
        default="soft-optimal",
        help="the policy drawn from: the task's soft-optimal one (default) or uniform (exploration traces)",
    )
    sm.add_argument(
        "--epsilon",
        type=_epsilon,
        metavar="E",
        help="mix the policy with the uniform one: (1 - E)·policy + E·uniform (E in [0, 1])",
    )
    sm.add_argument(
        "--rewards",
        action="store_true",
        help="write a reward column: the task's machine's reward of each step (the last step's: unknown)",
    )
    sm.add_argument(
        "--reward-noise",
        type=_reward_noise,
        metavar="KIND:LEVEL",
        help="with --rewards: noisy rewards, 'replace:E' (each reward another of the machine's values with "
        "probability E) or 'uniform:W' (each paid reward plus a uniform draw from [-W, W]); seed --seed + 1",
    )
    sm.add_argument(
        "--label-noise",
        metavar="RATES",
        help="write labels recorded by a detector that errs: 'P' (each label replaced by another letter with "
        "probability P), or 'miss=M,false-alarm=F[,plain=o]' (per event: miss.p=M, false-alarm.p=F); seed --seed + 2",
    )
    sm.add_argument("--force", action="store_true", help="overwrite PATH if it exists")
    sm.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    sm.set_defaults(func=cmd_simulate)

    if command in WITHOUT_EXPERIMENTS:
        sub.add_parser("reproduce", help=REPRODUCE_HELP)
        return p
    from ..experiments import EXPERIMENTS

    listing = "; ".join(f"{e.name} ({e.paper}): {e.what}" for e in EXPERIMENTS.values())
    rp = sub.add_parser("reproduce", help=REPRODUCE_HELP, description=f"Experiments: {listing}.")
    rp.add_argument(
        "name",
        choices=sorted(EXPERIMENTS) + ["all"],
        metavar="NAME",
        help=f"one of: {', '.join(sorted(EXPERIMENTS))}, or all",
    )
    rp.add_argument("--quick", action="store_true", help="a small version (seconds)")
    rp.add_argument("--data", metavar="PATH", help="trajectories for the mice experiment (.npz with states, actions)")
    rp.add_argument(
        "--trajectories", type=_positive_int, help="number of trajectories to simulate (experiments that simulate)"
    )
    rp.add_argument("--seed", type=_seed, default=0, help="random seed (default 0)")
    rp.add_argument("--set", action="append", metavar="KEY=VALUE", help="override an experiment setting")
    rp.add_argument("--figures", metavar="DIR", help="directory for the figures (default: .)")
    rp.add_argument("--no-figures", action="store_true", help="write no figure")
    rp.add_argument("--force", action="store_true", help="overwrite existing figures")
    rp.add_argument(
        "--max-memory",
        type=_positive_float,
        default=2.0,
        metavar="GB",
        help="the memory a run may be estimated to need (GB, default 2): the estimate is said before the run "
        "starts, and a larger run is refused unless this is raised",
    )
    rp.add_argument("-q", "--quiet", action="store_true")
    rp.set_defaults(func=cmd_reproduce)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """The ``rmtk`` command; ``argv`` default: the process's arguments. Exit status 0, 1 on an
    error (one line), 2 on a usage error, 130 / 143 when stopped by SIGINT / SIGTERM
    (:mod:`rmtk.cli.stopping`)."""
    status = 0
    with stopping.installed(program=argv is None) as stops:  # from here on, no signal is Python's own
        given = sys.argv[1:] if argv is None else list(argv)
        args = build_parser(given[0] if given else None).parse_args(argv)
        if stops is not None:
            stops.time_limit = getattr(args, "time_limit", None)
        try:
            status = args.func(args)
        except RmtkError as err:
            status = 2 if isinstance(err, UsageError) else 1
            if stops is not None:
                stops.ending = True
            if not stop_requested():  # else the stop is the cause: the line below says it
                print(err if isinstance(err, DslError) else f"rmtk: error: {err}", file=sys.stderr)
        except KeyboardInterrupt:
            status = stopping.STATUS["interrupted"]
        except stopping.Terminated:
            status = stopping.STATUS["terminated"]
        except stopping.TimeUp:
            status = 1
            print(
                f"rmtk: error: the run went on {stopping.GRACE_SECONDS:g} s past its time limit and the stop "
                "then asked for; ended without an answer",
                file=sys.stderr,
            )
        except BrokenPipeError:
            status = 0
        finally:
            if stops is not None:
                stops.close()  # from here on, signals are ignored
            why = stop_requested()
            if why in stopping.STATUS and status in (0, 1):
                status = stopping.STATUS[why]
            for reason, code in stopping.STATUS.items():
                if status == code:
                    print(f"rmtk: {reason}", file=sys.stderr)
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
