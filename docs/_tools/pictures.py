"""The guide's pictures, drawn at build time by the very commands the pages show.

Each entry of :data:`PICTURES` is a picture file and the ``rmtk`` command line(s) that make
it, exactly as a page of the site prints them; :func:`draw_all` runs them (as
``python -m rmtk ...`` with this checkout's rmtk) in ``docs/_generated``, next to a copy of
``models/``, before Sphinx reads the pages. ``tests/test_guide.py`` checks that every command
here is printed on a page, beside the picture it makes. No picture is committed.

A local rebuild may keep the pictures already drawn: ``RMTK_DOCS_KEEP_PICTURES=1``, with
``-D plot_gallery=0`` to skip running the tutorials too.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1]
ROOT = DOCS.parent
OUT = DOCS / "_generated"

#: picture file -> the commands that draw it, run in order from a folder holding models/.
PICTURES: dict[str, list[str]] = {
    "patrol.png": ["rmtk learn models/patrol.rm --png patrol.png --force"],
    "rooms.png": ["rmtk show models/patrol.rm rooms --png rooms.png --force"],
    "stack_avoid.png": [
        "rmtk simulate models/stack_avoid.rm -n 10000 -T 20 --seed 0 -o demos.npz --force",
        "rmtk learn models/stack_avoid.rm --demos demos.npz --maxsat --nodes 3 --png stack_avoid.png --force",
    ],
    "active.png": ["rmtk learn models/patrol.rm --active --png active.png --force"],
    "labels.png": ["rmtk learn models/patrol.rm --learn-labels --png labels.png --force"],
    "office.png": ["rmtk reproduce office --quick --figures . --force"],
    "sensitivity.png": ["rmtk reproduce sensitivity --quick --figures . --force"],
    "suboptimal.png": ["rmtk reproduce suboptimal --quick --figures . --force"],
}


def draw_all(out: Path = OUT) -> None:
    """Run every picture's commands in ``out``; a failing command stops the build with its output."""
    out.mkdir(exist_ok=True)
    shutil.copytree(ROOT / "models", out / "models", dirs_exist_ok=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    keep = os.environ.get("RMTK_DOCS_KEEP_PICTURES") == "1"  # a local rebuild: keep what is there
    for picture, commands in PICTURES.items():
        if keep and (out / picture).is_file():
            continue
        start = time.perf_counter()
        for command in commands:
            argv = shlex.split(command)
            assert argv[0] == "rmtk", command
            run = subprocess.run(
                [sys.executable, "-m", "rmtk", *argv[1:]], cwd=out, env=env, capture_output=True, text=True
            )
            if run.returncode != 0:
                raise RuntimeError(f"{command!r} exited with {run.returncode}:\n{run.stdout}\n{run.stderr}")
        if not (out / picture).is_file():
            raise RuntimeError(f"{commands} made no {picture}")
        print(f"docs picture {picture}: {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    draw_all()
