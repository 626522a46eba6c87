"""What every experiment shares: its settings (:class:`Setting`), the options of a run
(:class:`Options`) and what it returns (:class:`Report`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import attrs

from .. import output
from ..errors import RmtkError
from ..progress import Progress


@attrs.frozen
class Domain:
    """Which values a setting accepts: numbers in a range (``low``/``high``, each bound open
    or closed) or one of ``choices``; :meth:`why_not` says what is wrong with a value."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple = ()

    def why_not(self, value) -> str | None:
        if self.choices:
            return None if value in self.choices else f"one of {', '.join(map(str, self.choices))}"
        below = self.low is not None and (value <= self.low if self.low_open else value < self.low)
        above = self.high is not None and (value >= self.high if self.high_open else value > self.high)
        if not (below or above or value != value):
            return None
        if self.high is None:
            return f"a number {'above' if self.low_open else 'at least'} {self.low:g}"
        left, right = "(" if self.low_open else "[", ")" if self.high_open else "]"
        return f"a number in {left}{self.low:g}, {self.high:g}{right}"


#: Whole counts of at least 1 (trajectories, episodes, depths, runs, ...).
COUNT = Domain(low=1)
#: Numbers above 0 (temperatures, concentrations, rewards).
POSITIVE = Domain(low=0, low_open=True)
#: Probabilities of an event, 0 and 1 included.
PROBABILITY = Domain(low=0, high=1)
#: Confidence levels α: strictly between 0 and 1.
LEVEL = Domain(low=0, high=1, low_open=True, high_open=True)


@attrs.frozen
class Setting:
    """A setting an experiment reads (``rmtk reproduce NAME --set KEY=VALUE``): its default,
    what it means, its default in ``--quick`` runs (``None``: the same) and the values it
    accepts (``domain``; every number an experiment reads declares one, so that a bad value
    is refused under the key the user typed, before any work)."""

    default: object
    help: str
    quick: object = None
    domain: Domain | None = None

    def value(self, quick: bool):
        return self.quick if quick and self.quick is not None else self.default

    def check(self, key: str, value):
        """``value`` if this setting accepts it, else an error naming ``key``."""
        why = None if self.domain is None or value is None else self.domain.why_not(value)
        if why is not None:
            raise RmtkError(f"setting {key}: expected {why}, got {value!r}")
        return value


@attrs.frozen
class MemoryEstimate:
    """What a run will need at its peak, said before it starts: ``gb``, the largest resident
    memory of any one of its processes (GB of 2^30 bytes), and ``detail``, what that is made of
    and what it grows with. An estimate from measured runs (docs/benchmarks), not a bound."""

    gb: float
    detail: str

    def __str__(self) -> str:
        return f"memory estimate: about {self.gb:.1f} GB at the peak ({self.detail})"


#: The memory a run may be estimated to need without the user asking for more (GB): every
#: shipped experiment's default run stays below it.
MAX_MEMORY = 2.0


@attrs.define
class Report:
    """An experiment's outcome: titled tables (header + rows), notes, written figures."""

    title: str
    tables: list = attrs.field(factory=list)  # (caption, header, rows)
    notes: list = attrs.field(factory=list)
    figures: list = attrs.field(factory=list)
    seconds: float = 0.0

    def text(self) -> str:
        out = [f"== {self.title} =="]
        for caption, header, rows in self.tables:
            out.append("")
            out.append(caption)
            cells = [list(map(str, header))] + [[_fmt(c) for c in r] for r in rows]
            widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
            for k, r in enumerate(cells):
                out.append("  ".join(c.rjust(w) for c, w in zip(r, widths)))
                if k == 0:
                    out.append("  ".join("-" * w for w in widths))
        for note in self.notes:
            out.append(f"note: {note}")
        for fig in self.figures:
            out.append(f"figure: {fig}")
        out.append(f"time: {self.seconds:.1f} s")
        return "\n".join(out)


def _fmt(c) -> str:
    if isinstance(c, float):
        return f"{c:.3g}" if abs(c) < 1e4 else f"{c:.0f}"
    return "-" if c is None else str(c)


def _convert(value, default, key: str):
    """``value`` (a string from the command line, or a Python value) as the type of ``default``."""
    if default is None or isinstance(value, type(default)) and not isinstance(value, bool):
        return value
    try:
        if isinstance(default, bool):
            if str(value).lower() in ("1", "true", "yes", "on"):
                return True
            if str(value).lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError
        if isinstance(default, int):
            number = float(value)
            if not number.is_integer():
                raise ValueError
            return int(number)
        return type(default)(value)
    except (TypeError, ValueError):
        raise RmtkError(f"setting {key}: expected {type(default).__name__}, got {value!r}") from None


@attrs.frozen
class Options:
    """Settings of a run: ``quick`` (small version), ``seed``, ``figure_dir`` (``None``: no
    figures), ``force`` (overwrite figures), ``progress`` (notes go to its ``note`` hook),
    ``overrides`` of the experiment's settings (``--set KEY=VALUE``) and ``max_memory``, the
    GB a run may be estimated to need (:class:`MemoryEstimate`; a larger one is refused before
    it starts)."""

    quick: bool = False
    seed: int = 0
    figure_dir: Path | None = None
    progress: Progress = attrs.field(factory=Progress)
    overrides: dict = attrs.field(factory=dict)
    force: bool = False
    settings: dict = attrs.field(factory=dict, repr=False)
    max_memory: float = attrs.field(default=MAX_MEMORY)

    @max_memory.validator
    def _check_memory(self, attribute, value):
        if not (isinstance(value, (int, float)) and value > 0 and value == value):
            raise RmtkError(f"Options(max_memory={value!r}): a number of GB above 0 expected")

    def say(self, msg: str) -> None:
        self.progress.note(msg)

    def get(self, key: str):
        """The value of setting ``key``: the override, else its (quick) default."""
        setting = self.settings[key]
        default = setting.value(self.quick)
        if key in self.overrides:
            value = _convert(self.overrides[key], default if default is not None else setting.default, key)
            return setting.check(key, value)
        return default

    def figure(
        self,
        report: Report,
        name: str,
        draw: Callable,
        layout: str | None = "constrained",
        size: tuple[float, float] = (7, 4.2),
    ) -> None:
        """Draw with ``draw(fig)`` into ``figure_dir/name`` (never overwriting unless ``force``)."""
        if self.figure_dir is None:
            return
        path = Path(self.figure_dir) / name
        output.check(path, overwrite=self.force)
        import logging

        from matplotlib.figure import Figure

        from ..io.draw import save_figure

        fig = Figure(figsize=size, layout=layout)
        quiet = logging.getLogger("matplotlib")
        level = quiet.level
        quiet.setLevel(logging.ERROR)  # aspect-ratio chatter of machine drawings
        try:
            draw(fig)
            save_figure(fig, path, dpi=150, overwrite=self.force)
        finally:
            quiet.setLevel(level)
        report.figures.append(str(path))
