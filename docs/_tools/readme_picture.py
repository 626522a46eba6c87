"""The README's one picture, ``docs/images/patrol.svg``: the machine the README's main command
learns, drawn with rmtk. Run ``python docs/_tools/readme_picture.py`` after changing the learner
or the drawing; ``tests/test_site.py`` redraws it and fails while the committed file differs.

The SVG is made reproducible: text kept as text (no glyph paths, which change with the fonts),
no date, a fixed id salt. It still names the matplotlib version that drew it, and the test
compares only when the same version is installed.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PICTURE = ROOT / "docs" / "images" / "patrol.svg"


def draw(path: Path = PICTURE) -> None:
    """Learn patrol as ``rmtk learn models/patrol.rm`` does and draw the machine to ``path``."""
    import matplotlib

    from rmtk import Learner, dsl
    from rmtk.io.draw import draw_machine

    task = dsl.load(ROOT / "models" / "patrol.rm").tasks["patrol"]
    machine = Learner().fit(task).machines[0]
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "rmtk"}):
        fig = draw_machine(machine)
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, format="svg", metadata={"Date": None}, bbox_inches="tight", pad_inches=0.08)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    draw()
    print(f"wrote {PICTURE}")
