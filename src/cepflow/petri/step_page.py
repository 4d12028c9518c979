"""The step-through page of a net (``cepflow petri --html``), through ``cepflow.reports``:
the net drawn as SVG, and, step by step, the transition fired with its binding, the tokens it
took and added, and the tokens of every place — with back/next buttons and a slider
(``reports/petri.js``). Runs longer than :data:`MAX_STEPS` are cut there, and a place's
initial tokens past :data:`MAX_TOKENS` are counted, not listed (the page says so).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from cepflow.automaton.dot import RenderError, to_svg
from cepflow.petri.draw import net_to_dot
from cepflow.petri.multiset import cpn_multiset, cpn_value
from cepflow.petri.output import binding_text
from cepflow.petri.simulator import Firing, Simulator
from cepflow.petri.translate import Translation
from cepflow.reports import Page

#: the most steps a page carries, and the most tokens of one place it lists at the start
MAX_STEPS = 5000
MAX_TOKENS = 2000


def _tokens(net: Any, items: Iterable[tuple[str, Any, int]]) -> list[list[Any]]:
    return [[p, cpn_value(c, net.places[p].colours), n] for p, c, n in items]


def step_through_page(tr: Translation, sim: Simulator, source: str = "") -> Page:
    """The page for ``sim``'s run of ``tr`` (the simulator must have recorded its steps)."""
    net = tr.net
    steps: list[Firing] = sim.trace[:MAX_STEPS]
    page = Page(f"Petri net of {source or net.name}",
                f"{len(net.places)} places, {len(net.transitions)} transitions, "
                f"{len(tr.events)} input events, {sim.steps} steps fired")
    sec = page.section("Step through")
    sec.html(
        '<div class="pn-controls">'
        '<button type="button" id="pn-back">&#9664; back</button> '
        '<button type="button" id="pn-next">next &#9654;</button> '
        f'<input type="range" id="pn-slider" min="0" max="{len(steps)}" value="0" '
        'aria-label="step"> <span id="pn-step"></span></div>'
        '<p class="pn-fired"><b id="pn-fired"></b> <span id="pn-binding"></span></p>'
        '<p class="pn-moves">taken: <span id="pn-taken"></span><br>'
        'added: <span id="pn-added"></span></p>')
    if len(sim.trace) > MAX_STEPS:
        sec.text(f"The run fired {sim.steps} steps; this page shows the first {MAX_STEPS}.")
    big = [p for p, ms in net.initial.items() if len(ms.distinct()) > MAX_TOKENS]
    if big:
        sec.text(f"Places with more than {MAX_TOKENS:,} initial colours ({', '.join(big)}) "
                 "list their first ones and count the rest.")
    try:
        sec.svg(to_svg(net_to_dot(net)), "The net: places (ellipses), transitions (boxes, "
                "with their priority and guard), arcs with their expressions; dashed: read "
                "arcs. The current step's transition is highlighted, the numbers are the "
                "places' tokens.", css="figure pn-net")
    except RenderError as e:
        sec.text(str(e))
        sec.pre(net_to_dot(net))
    page.section("Tokens").html('<table class="data" id="pn-tokens"><thead><tr><th>place'
                                '</th><th>tokens (CPN Tools notation)</th></tr></thead>'
                                "<tbody></tbody></table>")
    final = page.section("Complex events at the end")
    final.table(["place", "tokens"], [
        [p, cpn_multiset(sim.marking[p], net.places[p].colours)]
        for p in tr.complex_places.values()])
    page.add_data("petri-run", {
        "places": list(net.places),
        # a place's first tokens by colour, and how many more it holds (a long input)
        "initial": {p: _tokens(net, ((p, c, n) for c, n in list(ms.items())[:MAX_TOKENS]))
                    for p, ms in net.initial.items() if ms},
        "more": {p: sum(n for _, n in list(ms.items())[MAX_TOKENS:])
                 for p, ms in net.initial.items() if len(ms.distinct()) > MAX_TOKENS},
        "steps": [{"t": s.transition, "b": binding_text(s.binding),
                   "take": _tokens(net, s.taken), "add": _tokens(net, s.added)}
                  for s in steps],
    })
    page.use_script("petri.js")
    page.style = (".pn-controls{margin:.5em 0}.pn-net svg{max-width:100%;height:auto}"
                  ".pn-net g.pn-fired polygon{fill:#ffd54f}"
                  ".pn-net g.pn-take ellipse{stroke:#c62828;stroke-width:3}"
                  ".pn-net g.pn-add ellipse{stroke:#2e7d32;stroke-width:3}"
                  ".pn-count{font:bold 11px sans-serif;fill:#1565c0}")
    return page
