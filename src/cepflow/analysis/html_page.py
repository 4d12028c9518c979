"""``cepflow analyze --format html``: the graph and the findings on one self-contained page
(built with cepflow.reports; docs/reports.md)."""

from __future__ import annotations

from cepflow.analysis.analyzer import Analysis
from cepflow.analysis.render import RACE_COLOURS, to_dot
from cepflow.automaton.dot import RenderError, to_svg
from cepflow.reports import Page


def page(a: Analysis) -> Page:
    """The analysis as a report page: summary, the drawn graph (DOT text when Graphviz is
    missing), races, findings, levels and the fix's priorities; the JSON form as page data."""
    g = a.graph
    files = ", ".join(a.pset.files)
    errors = sum(f.severity == "error" for f in a.findings)
    p = Page(f"cepflow analyze — {files}",
             f"{len(g.nodes)} nodes, {g.g.number_of_edges()} edges, {g.depth} levels, "
             f"{len(g.cycles)} cycle(s), {len(a.races)} race(s), {len(a.findings)} "
             f"finding(s) ({errors} error(s))")
    s = p.section("Dependency graph")
    dot = to_dot(a)
    try:
        s.svg(to_svg(dot), "levels top to bottom; races in colour: "
              + ", ".join(f"{k} {c}" for k, c in RACE_COLOURS.items()))
    except RenderError as e:
        s.text(str(e))
        s.pre(dot)
    levels: dict[int, list[str]] = {}
    for n, lv in g.levels.items():
        levels.setdefault(lv, []).append(n)
    s.table(["level", "nodes"], [(lv, ", ".join(ns)) for lv, ns in sorted(levels.items())],
            numeric=[0])
    if g.cycles:
        s.table(["cycle", "fires", "why"],
                [(" → ".join([*c.nodes, c.nodes[0]]),
                  "at one instant" if c.at_once else "across time", c.why) for c in g.cycles])
    r = p.section("Races")
    if a.pset.program is None:
        r.text("Not analysed: the set has a cycle and does not compile.")
    elif not a.races:
        r.text("No race." + (f" {len(a.resolved)} pair(s) are ordered by the set's priorities."
                             if a.resolved else ""))
    else:
        r.table(["kind", "pair", "read by", "at", "why", "what cepflow does", "fix"],
                [(x.kind, f"{x.patterns[0]} / {x.patterns[1]}", x.consumer, x.instant, x.why,
                  x.engine, x.fix) for x in a.races])
    f = p.section("Findings")
    if not a.findings:
        f.text("No finding.")
    else:
        f.table(["severity", "code", "location", "message", "fix"],
                [(x.severity, x.code, str(x.location), x.message, x.fix) for x in a.findings])
    if a.plan.priorities:
        q = p.section("Priorities by level (--fix)")
        q.table(["pattern or statement", "level", "priority"],
                sorted(((n, a.plan.levels.get(n), pr) for n, pr in a.plan.priorities.items()),
                       key=lambda row: (-row[2], row[0])), numeric=[1, 2])
    p.add_data("analysis", a.to_json())
    return p
