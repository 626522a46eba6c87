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
        from . import export

        out = _writable(Path(args.png), args.force)
        obj = doc.get(args.name) if args.name else None
        if isinstance(obj, LabeledMDP):
            export.draw_grid(obj, out)
        else:
            export.draw_machine(_pick_machine(doc, args.name), out)
        print(f"wrote {out}", file=sys.stderr)
        if args.format is None:
            return 0
    fmt = args.format or "rm"
    if fmt == "rm":
        sys.stdout.write(dsl.dumps(_pick(doc, args.name)))
    elif fmt == "dot":
        from . import export

        sys.stdout.write(export.to_dot(_pick_machine(doc, args.name)))
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
