"""An analysis as text (for people), JSON (docs/analysis.md, "JSON": a public interface) and
DOT (the dependency graph by levels, top to bottom, races in colour)."""

from __future__ import annotations

import itertools
import json
from collections import Counter

from cepflow.analysis.analyzer import Analysis
from cepflow.automaton.dot import _label

#: colours of the drawing, by race kind (siblings are the races whose result changes)
RACE_COLOURS = {"siblings": "red3", "boundary": "darkorange2", "derived": "goldenrod3"}
#: races of one kind and consumer beyond this many are listed by name after the first
GROUP_AFTER = 3
#: a level with more nodes than this is drawn as columns under the node each one reads
WIDE_LEVEL = 12
#: node shapes by kind
SHAPES = {"atomic": "ellipse", "query": "ellipse", "pattern": "box", "statement": "box3d",
          "rule": "hexagon", "undeclared": "ellipse"}


def to_json_text(a: Analysis) -> str:
    return json.dumps(a.to_json(), indent=2, ensure_ascii=False) + "\n"


def _kinds(a: Analysis) -> str:
    c = Counter(n.kind for n in a.graph.nodes.values())
    names = {"atomic": "input", "query": "query event", "pattern": "pattern",
             "statement": "statement", "rule": "rule", "undeclared": "undeclared type"}
    return ", ".join(f"{k} {names[kind]}{'s' if k != 1 else ''}"
                     for kind, k in c.items())


def to_text(a: Analysis) -> str:
    g = a.graph
    out = [f"cepflow analyze — {', '.join(a.pset.files)}", ""]
    cyc = "no cycle" if not g.cycles else f"{len(g.cycles)} cycle(s)"
    kinds = f" ({_kinds(a)})" if g.nodes else ""
    out.append(f"dependency graph: {len(g.nodes)} nodes{kinds}, "
               f"{g.g.number_of_edges()} edges, {g.depth} levels, {cyc}")
    by_level: dict[int, list[str]] = {}
    for n, lv in g.levels.items():
        by_level.setdefault(lv, []).append(n)
    for lv in sorted(by_level):
        out.append(f"  level {lv}: {', '.join(by_level[lv])}")
    for c in g.cycles:
        ring = " -> ".join([*c.nodes, c.nodes[0]])
        out.append(f"  cycle {ring}: " + ("fires at one instant" if c.at_once
                                          else "only across time") + f" ({c.why})")
    out.append("")
    if a.pset.program is None:
        out.append("races: not analysed (the set has a cycle and does not compile)")
    else:
        out.append(f"races: {len(a.races)}" + (f" ({len(a.resolved)} more ordered by the "
                                                "set's priorities)" if a.resolved else ""))
    groups: dict[tuple[str, str], list] = {}
    for r in a.races:
        groups.setdefault((r.kind, r.consumer), []).append(r)
    i = 0
    for (kind, consumer), rs in groups.items():
        shown = rs if len(rs) <= GROUP_AFTER else rs[:1]
        for r in shown:
            i += 1
            out.append(f"  {i}. {r.kind}: {r.patterns[0]} / {r.patterns[1]} (read by "
                       f"{r.consumer}, types {', '.join(r.types)}) — {r.location}")
            out.append(f"     at: {r.instant}")
            out.append(f"     why: {r.why}")
            out.append(f"     cepflow: {r.engine}")
            out.append(f"     fix: {r.fix}")
        if len(rs) > GROUP_AFTER:
            others = [r.patterns[0] if r.patterns[1] == consumer else r.patterns[1]
                      for r in rs[1:]]
            out.append(f"     and {len(others)} more {kind} races of {consumer}, the same with "
                       f"{', '.join(others)}")
            i += len(others)
    out.append("")
    sev = Counter(f.severity for f in a.findings)
    out.append(f"findings: {len(a.findings)} ({sev['error']} errors, {sev['warning']} "
               f"warnings, {sev['info']} info)")
    for f in a.findings:
        out.append(f"  {f}")
        out.append(f"      fix: {f.fix}")
    if a.plan.priorities:
        out.append("")
        pr = sorted(a.plan.priorities.items(), key=lambda kv: (-kv[1], kv[0]))
        out.append("priorities by level (--fix): " + ", ".join(f"{n} {p}" for n, p in pr))
    return "\n".join(out) + "\n"


def to_dot(a: Analysis) -> str:
    """The dependency graph: one rank per level, top to bottom; nodes in a race and the
    races themselves (dashed, not constraining the layout) in colour."""
    g = a.graph
    colour: dict[str, str] = {}
    for r in a.races:
        for n in (*r.patterns, r.consumer):
            colour.setdefault(n, RACE_COLOURS[r.kind])
    lines = [f"digraph {_label('dependencies')} {{",
             "  rankdir=TB; newrank=true; nodesep=0.25; ranksep=0.6;",
             f"  label={_label('dependency graph — ' + ', '.join(a.pset.files))}; "
             "labelloc=t; fontsize=12;",
             "  node [fontsize=10, height=0.3]; edge [arrowsize=0.6, color=gray40];"]
    ids = {n: f"n{i}" for i, n in enumerate(g.nodes)}
    by_level: dict[int, list[str]] = {}
    for n, lv in g.levels.items():
        by_level.setdefault(lv, []).append(n)
    for n, node in g.nodes.items():
        attrs = [f"label={_label(node.name)}", f"shape={SHAPES.get(node.kind, 'box')}"]
        if node.kind in ("atomic", "query"):
            attrs.append("style=filled, fillcolor=gray92")
        if n in colour:
            attrs.append(f"color={colour[n]}, penwidth=2, fontcolor={colour[n]}")
        prio = getattr(g.decls.get(n), "priority", 0)
        if prio:
            attrs[0] = f"label={_label(node.name, f'priority {prio}')}"
        lines.append(f"  {ids[n]} [{', '.join(attrs)}];")
    for lv in sorted(by_level):
        if len(by_level[lv]) <= WIDE_LEVEL:
            members = " ".join(ids[n] for n in by_level[lv])
            lines.append(f"  {{ rank=same; {members} }}")
            continue
        # a wide level (the air quality grades: 36): a column under each node they read
        columns: dict[str, list[str]] = {}
        for n in by_level[lv]:
            reads = g.reads(n)
            columns.setdefault(reads[0] if reads else "", []).append(n)
        for col in columns.values():
            for u, v in itertools.pairwise(col):
                lines.append(f"  {ids[u]} -> {ids[v]} [style=invis, weight=10];")
    cyc_edges = {(c.nodes[i - 1], c.nodes[i]) for c in g.cycles for i in range(len(c.nodes))}
    # a race between a producer and its reader colours their edge; siblings get a line
    on_edge = {(r.patterns[0], r.patterns[1]): r for r in a.races
               if g.g.has_edge(r.patterns[0], r.patterns[1])}
    labelled: set[tuple[str, str]] = set()
    for u, v in g.edges():
        attrs = []
        if g.g.edges[u, v].get("negated"):
            attrs.append('style=dashed, label="NOT", fontsize=8')
        if (u, v) in cyc_edges:
            attrs.append("color=red3, penwidth=2")
        race = on_edge.get((u, v))
        if race is not None:
            c = RACE_COLOURS[race.kind]
            attrs.append(f"color={c}, penwidth=1.5")
            if (race.kind, race.consumer) not in labelled:  # one label per kind and reader
                labelled.add((race.kind, race.consumer))
                attrs.append(f"label={_label(race.kind)}, fontcolor={c}, fontsize=8")
        lines.append(f"  {ids[u]} -> {ids[v]}" + (f" [{', '.join(attrs)}]" if attrs else "")
                     + ";")
    for r in a.races:
        if (r.patterns[0], r.patterns[1]) in on_edge:
            continue
        c = RACE_COLOURS[r.kind]
        lines.append(f"  {ids[r.patterns[0]]} -> {ids[r.patterns[1]]} [dir=none, "
                     f"style=dashed, color={c}, constraint=false, "
                     f"label={_label(r.kind)}, fontcolor={c}, fontsize=8];")
    lines.append("}")
    return "\n".join(lines) + "\n"
