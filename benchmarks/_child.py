"""Shared by the benchmark scripts: sizes on the command line, and rows measured in a fresh
interpreter (the script itself with ``--one ...``) that prints its record as a marked JSON line."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def size(text: str) -> int:
    """A positive whole number, also written as 1e6."""
    v = float(text)
    if v < 1 or v != int(v):
        raise argparse.ArgumentTypeError(f"not a positive whole number: {text}")
    return int(v)


def run_child(script: str, args: list[str], mark: str, what: str, timeout: float | None = None) -> dict:
    """Run ``script --one ARGS`` with the repository first on the path; the record it prints
    after ``mark``. ``timeout``: seconds after which the child is killed
    (:class:`subprocess.TimeoutExpired` is raised)."""
    cmd = [sys.executable, str(Path(script).resolve()), "--one", *args]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True, timeout=timeout)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(mark)]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"{what}: child exited with status {proc.returncode}\n{proc.stdout}")
    return json.loads(lines[-1][len(mark) :])
