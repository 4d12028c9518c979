"""Races and non-confluence (003 §V.A.2): pairs of patterns whose result can depend on their
order at one instant, and what cepflow's engine does there.

The seed's critical pairs come from a rule engine that may apply dependent rules in any order
at one moment. cepflow's engine fixes an order (runtime/engine.py, docs/semantics.md
"Higher-order patterns and rules", docs/windows.md "Decision — order of outputs",
docs/esper.md "One instant"): at an instant, window updates come first, then Esper timers,
then the events in stream order, then VEPL deadlines; an event goes to the patterns that read
its type in program order (priority, then dependency order, then file position), then to the
statements, and each complex event produced re-enters the stream right after the event that
completed it, before the next one. Three kinds of pair are reported:

* ``siblings`` — two patterns that can emit on one and the same event, read by a consumer
  that takes their events in a sequence: the consumer sees them in program order, which the
  file decides unless priorities do (the only kind whose result in cepflow changes with the
  order of the patterns);
* ``boundary`` — a time window statement reading what a pattern emits: at an instant where
  the window closes a batch or lets an event go and the pattern emits, the window's update
  comes first;
* ``derived`` — a consumer reading a type and a type derived from it: it receives each event
  before what that event causes.

A pair is *resolved* when the pattern set's priorities order it as the fix does (producer
above consumer; for siblings, the one the consumer takes first above the other).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import combinations

from cepflow.analysis.behaviour import Behaviour, behaviours, same_event
from cepflow.analysis.findings import Location
from cepflow.analysis.graph import DependencyGraph
from cepflow.compiler.program import Program
from cepflow.language import ast
from cepflow.language.printer import format_duration, format_expr


@dataclass(frozen=True)
class Race:
    """One pair of patterns (or statements) whose order at one instant matters."""

    kind: str
    patterns: tuple[str, str]
    types: tuple[str, ...]
    consumer: str
    instant: str
    engine: str
    why: str
    #: whether cepflow's result changes with the order of the two (siblings only)
    order_dependent: bool
    location: Location
    #: the order the fix gives: (higher priority, lower priority)
    wants: tuple[str, str]
    fix: str = ""
    #: the fix cannot be expressed by priorities (say why)
    unfixable: str = ""

    def to_json(self) -> dict[str, object]:
        return {"patterns": list(self.patterns), "types": list(self.types), "why": self.why,
                "fix": self.fix, "kind": self.kind, "consumer": self.consumer,
                "instant": self.instant, "engine": self.engine,
                "order_dependent": self.order_dependent, "location": str(self.location)}


@dataclass
class RaceAnalysis:
    races: list[Race] = field(default_factory=list)
    #: pairs the pattern set's priorities already order (not races any more)
    resolved: list[Race] = field(default_factory=list)
    behaviours: dict[str, Behaviour] = field(default_factory=dict)


def priority_of(graph: DependencyGraph, name: str) -> int:
    d = graph.decls.get(name)
    return int(getattr(d, "priority", 0) or 0)


def article(word: str) -> str:
    """``a`` or ``an`` before ``word`` (by its first letter)."""
    return "an" if word[:1].lower() in "aeiou" else "a"


def _where(b: Behaviour, t: str, step_where: ast.Expr | None) -> str:
    return f"{b.name} completes on {article(t)} {t}" + (
        f" with {format_expr(step_where)}" if step_where is not None else "")


def _loc(graph: DependencyGraph, name: str) -> Location:
    n = graph.nodes[name]
    return Location(n.file, n.line, n.col)


def find(graph: DependencyGraph, program: Program) -> RaceAnalysis:
    """Every race of a compiled, acyclic pattern set."""
    bs = behaviours(program)
    out = RaceAnalysis(behaviours=bs)
    schemas = program.schemas
    producers = {n for n, node in graph.nodes.items() if node.produces}
    for c in graph.nodes:
        if c not in bs:
            continue
        reads = [p for p in graph.reads(c) if p in producers and p in bs]
        _siblings(graph, bs, schemas, c, reads, out)
        _boundary(graph, bs, c, reads, out)
        _derived(graph, bs, c, out)
    return out


def _add(graph: DependencyGraph, out: RaceAnalysis, race: Race) -> None:
    first, second = race.wants
    if priority_of(graph, first) > priority_of(graph, second):
        out.resolved.append(race)
    else:
        out.races.append(race)


def _siblings(graph: DependencyGraph, bs: Mapping[str, Behaviour], schemas, c: str,
              reads: list[str], out: RaceAnalysis) -> None:
    cb = bs[c]
    for p, q in combinations(sorted(reads, key=lambda n: bs[n].order), 2):
        pairs = same_event(bs[p], bs[q], schemas)
        if not pairs:
            continue
        if cb.kind == "pattern":
            pq, qp = (p, q) in cb.sequence, (q, p) in cb.sequence
            if not pq and not qp:
                continue  # the consumer never takes one after the other
        else:
            if cb.window == "time_batch":
                continue  # a batch is the same whatever the order of its events
            pq = qp = True
        # engine order: patterns before statements, then program order
        first, second = (p, q) if bs[p].order < bs[q].order else (q, p)
        if pq and not qp:
            wants = (p, q)
        elif qp and not pq:
            wants = (q, p)
        else:
            wants = (first, second)
        sa, sb = pairs[0]
        t = sa.type
        a_first = _where(bs[p], t, sa.where)
        b_first = _where(bs[q], t, sb.where)
        if cb.kind == "pattern":
            takes = f"{c} takes {wants[0]} before {wants[1]}"
            outcome = ("as it needs — but only because of the file's order"
                       if first == wants[0] else
                       f"so it does not take them as {wants[0]} then {wants[1]} and misses "
                       "that match")
        else:
            takes = f"{c}'s {cb.window} window holds them in arrival order"
            outcome = "and its rows at that instant follow that order"
        engine = (f"{a_first} and {b_first}; both can hold of one {t} event. The engine lets "
                  f"the patterns that take an event do so in program order (priority, then "
                  f"dependency order, then position in the file; patterns before statements): "
                  f"{first} runs first, so {c} receives {first} before {second} at that "
                  f"instant, {outcome}.")
        unfixable = ""
        if bs[wants[0]].kind == "statement" and bs[wants[1]].kind == "pattern":
            unfixable = (f"{wants[0]} is a window statement: the engine gives an event to "
                         "the patterns before the statements, whatever the priorities")
        _add(graph, out, Race(
            "siblings", (p, q), (t, p, q), c,
            f"{article(t)} {t} event on which both {p} and {q} emit", engine,
            f"{c} reads {p} and {q}, which can both come from one {t} event; {takes}, but "
            "nothing in the pattern set orders the two.",
            True, _loc(graph, c), wants, unfixable=unfixable))


def _boundary(graph: DependencyGraph, bs: Mapping[str, Behaviour], c: str,
              reads: list[str], out: RaceAnalysis) -> None:
    cb = bs[c]
    if cb.kind != "statement" or cb.window not in ("time", "time_batch"):
        return
    decl = graph.decls.get(c)
    size = format_duration(decl.window.size) if isinstance(decl, ast.WindowDecl) else "Δ"
    for p in reads:
        if cb.window == "time_batch":
            instant = (f"a boundary of {c}'s batches (every {size} from its first event) at "
                       f"which {p} emits")
            effect = (f"the batch closing then holds the {p} events before that instant, and "
                      f"{article(p)} {p} emitted at it belongs to the next batch")
        else:
            instant = (f"an instant at which {article(p)} {p} leaves {c}'s window ({size} after "
                       f"it came) and {p} emits again")
            effect = (f"the row for the leaving {p} comes first, and the {p} emitted at that "
                      "instant enters the window after it")
        engine = (f"At one instant the engine processes the window updates due then (batch "
                  f"closes, expiries) before the instant's events and what they cause "
                  f"(docs/windows.md, 'Decision — order of outputs'): {effect}. This does not "
                  "depend on the order of the patterns: cepflow's result is the same whatever "
                  "their priorities.")
        _add(graph, out, Race(
            "boundary", (p, c), (p,), c, instant, engine,
            f"{c} aggregates {p} over a time window; a window update and {article(p)} {p} can "
            f"fall on "
            f"one instant, where a rule engine without an order may run {c} before {p} "
            "(003 §V.A.2, §V.F.2).",
            False, _loc(graph, c), (p, c)))


def _derived(graph: DependencyGraph, bs: Mapping[str, Behaviour], c: str,
             out: RaceAnalysis) -> None:
    reads = graph.reads(c)
    for y in reads:
        if y not in bs:
            continue
        anc = graph.ancestors(y)
        for t in reads:
            if t == y or t not in anc:
                continue
            engine = (f"{c} receives each {t} event before the {y} events it causes: the "
                      f"engine delivers a complex event right after the event that completed "
                      f"it has reached every pattern (docs/semantics.md, 'Higher-order "
                      f"patterns and rules'), whatever the priorities.")
            _add(graph, out, Race(
                "derived", (y, c), (t, y), c,
                f"{article(t)} {t} event that makes {y} emit", engine,
                f"{c} reads {t} and {y}, which is derived from {t}; a rule engine without an "
                f"order may run {c} before {y} at that instant (003 §V.A.2).",
                False, _loc(graph, c), (y, c)))
