"""What a notebook shows: a reward machine and a grid world as SVG, a learning result as HTML.

Jupyter asks an object for ``_repr_svg_`` or ``_repr_html_``; those methods of
:class:`~rmtk.machine.model.RewardMachine`, :class:`~rmtk.mdp.model.LabeledMDP` and
:class:`~rmtk.learner.result.LearnResult` call the functions here, which draw with :mod:`rmtk.io.draw`
(matplotlib's SVG writer, no graphviz). Text stays text (``<text>`` elements, not outlines),
so the pictures are small and a page search finds node names and letters. matplotlib is
imported on the first picture, never by ``import rmtk`` or ``import rmtk.io.display``.
"""

from __future__ import annotations

import html
import io
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..learner.pipeline import LearnResult
    from ..machine.model import RewardMachine
    from ..mdp.model import LabeledMDP

__all__ = ["figure_svg", "machine_svg", "mdp_svg", "result_html", "MAX_PICTURES"]

#: A learning result draws at most this many of its machines (each picture takes a fraction
#: of a second; the table still lists every machine).
MAX_PICTURES = 6


def figure_svg(fig: Any) -> str:
    """The ``<svg>`` element of a matplotlib Figure (no XML declaration, so it can be inlined
    in HTML); text is written as text, and no date is stamped, so the same figure gives the
    same bytes except for matplotlib's random clip-path ids."""
    from matplotlib import rc_context

    buf = io.StringIO()
    with rc_context({"svg.fonttype": "none"}):
        fig.savefig(buf, format="svg", bbox_inches="tight", pad_inches=0.08, metadata={"Date": None})
    text = buf.getvalue()
    return text[text.index("<svg") :]


def machine_svg(machine: RewardMachine) -> str:
    """A reward machine drawn by :func:`rmtk.io.machine_picture.draw_machine`, as SVG text."""
    from .machine_picture import draw_machine

    return figure_svg(draw_machine(machine, title=machine.name))


def mdp_svg(mdp: LabeledMDP) -> str | None:
    """A grid world's map (:func:`rmtk.io.draw.draw_grid`) or the labyrinth's tree
    (:func:`rmtk.io.draw.draw_labyrinth`) as SVG text; ``None`` for an MDP that has no picture
    (an explicit MDP, another generator), so that a notebook shows its text form instead."""
    from .draw import draw_grid, draw_labyrinth

    generator = mdp.source.generator if mdp.source is not None else None
    if generator == "gridworld":
        return figure_svg(draw_grid(mdp))
    if generator == "labyrinth":
        return figure_svg(draw_labyrinth(mdp, title=mdp.name))
    return None


def _scoped(svg: str, prefix: str) -> str:
    """``svg`` with its ids (and the references to them) prefixed, so that several pictures
    inlined in one page keep their ids unique."""
    svg = re.sub(r'\bid="', f'id="{prefix}', svg)
    return svg.replace("url(#", f"url(#{prefix}").replace('href="#', f'href="#{prefix}')


def _cell(value: object, tag: str = "td") -> str:
    return f"<{tag}>{html.escape(str(value))}</{tag}>"


def result_html(result: LearnResult) -> str:
    """A learning result as an HTML fragment: one line on the search, a table with a row per
    machine (nodes, transitions the data leave free, verdict, whether it is the true machine up
    to renaming), the timings, and the pictures of the first :data:`MAX_PICTURES` machines.
    Every name is escaped; the fragment is well-formed XML."""
    e = html.escape
    search = result.search
    if result.n_nodes is None:
        head = f"no machine found: {search.message}"
    else:
        count = result.distinct_count
        head = (
            f"{count} machine{'s' if count != 1 else ''} of {result.n_nodes} node{'s' if result.n_nodes != 1 else ''} "
            f"up to renaming ({result.raw_count} raw assignments, node 0 fixed), learned on mdp {result.mdp.name}"
        )
        if not search.complete:
            head += f"; {search.message}"
    parts = ['<div class="rmtk-learn-result">', f"<p>{e(head)}</p>"]
    if result.machines:
        iso = result.isomorphic_to_truth()
        columns = ["machine", "nodes", "free transitions", "verdict", "the true machine"]
        parts.append("<table>")
        parts.append("<thead><tr>" + "".join(_cell(c, "th") for c in columns) + "</tr></thead><tbody>")
        for i, m in enumerate(result.machines):
            free = ", ".join(f"{u} on {a}" for u, a in result.unconstrained(i)) or "none"
            verdict = (
                "unknown (no truth)"
                if result.verdicts is None
                else str(result.verdicts[i])
                if i < len(result.verdicts)
                else "not decided (the run was stopped)"
            )
            same = "unknown" if iso is None else "yes" if iso[i] else "no"
            row = [f"#{i + 1}", " ".join(m.nodes), free, verdict, same]
            parts.append("<tr>" + "".join(_cell(v) for v in row) + "</tr>")
        parts.append("</tbody></table>")
    if result.timings:
        timings = ", ".join(f"{k} {v:.3g}" for k, v in result.timings.items())
        parts.append(f"<p>timings (s): {e(timings)}</p>")
    shown = result.machines[:MAX_PICTURES]
    if shown:
        parts.append('<div style="display:flex;flex-wrap:wrap;gap:1em">')
        for i, m in enumerate(shown):
            svg = _scoped(machine_svg(m), f"rmtk-m{i + 1}-")
            parts.append(f"<figure><figcaption>#{i + 1}</figcaption>{svg}</figure>")
        parts.append("</div>")
        if len(result.machines) > len(shown):
            parts.append(f"<p>pictures of the first {len(shown)} of {len(result.machines)} machines</p>")
    parts.append("</div>")
    return "\n".join(parts)
