"""The report of a run (``cepflow run --report``, ``cepflow report``): one page with the summary,
the matches per pattern over time, a zoomable timeline of the events per key with each match
drawn over its events, a step-through of any match or partial match on its automaton, and the
records that were rejected (docs/reports.md, "The run report"). What it shows of a large input
is bounded by :class:`~cepflow.reports.record.Limits`."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from cepflow.automaton.automaton import FINAL, INITIAL, TRAP, Automaton, Zone
from cepflow.automaton.dot import RenderError, to_dot, to_svg
from cepflow.events.event import Event, EventType
from cepflow.replay import Replayed
from cepflow.reports import charts
from cepflow.reports.page import Page
from cepflow.reports.record import RunRecord, reason_class
from cepflow.runtime.explain import TokenStory
from cepflow.timefmt import EPOCH_FROM_MS, duration_text, instant_text

#: bins of the chart of matches over time
CHART_BINS = 300
#: rows of match bands under a timeline row's events, at most
SLOTS = 6
#: the longest record text a rejected-records table shows
RECORD_TEXT = 200


def run_page(record: RunRecord, result: Replayed, title: str,
             inputs: Sequence[str | Path] = (), elapsed: float | None = None) -> Page:
    """The report page of a run that ``record`` watched and that returned ``result``."""
    t0, t1 = _span(record)
    where = ", ".join(str(p) for p in inputs)
    when = (f"{instant_text(t0)} to {instant_text(t1)} ({duration_text(t1 - t0)})"
            if record.event_count else "no event")
    page = Page(title, f"{where} · {when}" if where else when)
    page.style = _STYLE
    _summary(page, record, result, elapsed)
    _chart(page, record, t0, t1)
    shown = _Shown(record)
    _timeline(page, record, shown, t0, t1)
    _stepper(page, record, shown)
    _partials(page, record)
    _rejected(page, result, record.limits.rejected)
    page.add_data("run-data", {
        "epochFrom": EPOCH_FROM_MS, "t0": t0, "t1": t1,
        "timeline": shown.timeline, "stories": shown.stories})
    page.use_script("run.js")
    return page


def _span(record: RunRecord) -> tuple[float, float]:
    if not record.event_count:
        return 0.0, 0.0
    ts = np.frombuffer(record.ts, dtype=np.float64)
    ends = [float(ts.min()), float(ts.max())]
    for times in record.match_ts.values():  # (a timer may complete a match after the input)
        if len(times):
            ends.append(float(np.frombuffer(times, dtype=np.float64).max()))
    return ends[0], max(ends)


def _summary(page: Page, record: RunRecord, result: Replayed, elapsed: float | None) -> None:
    rows: list[tuple[str, Any]] = [("events processed", result.events)]
    for kind, n in sorted(result.by_kind.items()):
        rows.append((f"rejected: {kind}", n))
    for name, n in result.by_pattern.items():
        rows.append((f"complex events {name}", n))
    if not result.by_pattern:
        rows.append(("complex events", result.complex_events))
    for name, n in result.partial_matches.items():
        rows.append((f"partial matches left {name}", n))
    if result.rule_firings:
        rows.append(("rule firings", result.rule_firings))
    if elapsed:
        rows.append(("throughput (events/s, traced for this report)",
                     round(result.events / elapsed)))
        rows.append(("wall time", f"{elapsed:,.2f} s"))
    s = page.section("Summary")
    s.table(["what", "count"], rows, numeric=[1])
    for rule, action in result.missing_actions:
        s.text(f"rule {rule}: action '{action}' is not registered; its firings were only "
               "counted", css="warning")


def _axis(t0: float, t1: float) -> tuple[float, str]:
    """The unit the chart's time axis counts in (ms per unit, its name): the largest of ms, s,
    min, h, d in which the run lasts at least 2 units."""
    span = t1 - t0
    unit, name = 1.0, "ms"
    for ms, label in ((1000.0, "s"), (60_000.0, "min"), (3_600_000.0, "h"),
                      (86_400_000.0, "d")):
        if span >= 2 * ms:
            unit, name = ms, label
    return unit, name


def _chart(page: Page, record: RunRecord, t0: float, t1: float) -> None:
    s = page.section("Matches over time")
    if not record.match_ts:
        s.text("No complex event was detected.", css="muted")
        return
    unit, name = _axis(t0, t1)
    edges = np.linspace(t0, t1 if t1 > t0 else t0 + 1, CHART_BINS + 1)
    series = {}
    for pattern in sorted(record.match_ts):
        times = np.frombuffer(record.match_ts[pattern], dtype=np.float64)
        counts, _ = np.histogram(times, bins=edges)
        xs = np.concatenate([[edges[0]], edges[1:]])
        ys = np.concatenate([[0], np.cumsum(counts)])
        series[f"{pattern} ({len(times):,})"] = ((xs - t0) / unit, ys)
    fig = charts.steps(series, "complex events so far, per pattern",
                       f"time since {instant_text(t0)} ({name})", "complex events")
    s.svg(charts.svg(fig), caption=f"Counted in {CHART_BINS} steps over the run.")


class _Shown:
    """What the timeline and the step-through show: lanes, events, matches and stories, as
    the page's script reads them (``run-data``)."""

    def __init__(self, record: RunRecord) -> None:
        self.record = record
        limits = record.limits
        matches = record.kept_matches()
        stories: list[TokenStory] = [s for _, s in matches if s is not None]
        stories += record.died() + record.left
        # lanes: those with the matches' events first, then the busiest; the rest folded
        in_matches: dict[int, int] = {}
        for ce, _ in matches:
            for e in ce.leaves():
                n = record.lanes.get(_lane_key(record, e))
                if n is not None:
                    in_matches[n] = in_matches.get(n, 0) + 1
        order = sorted(range(len(record.lane_labels)),
                       key=lambda n: (-in_matches.get(n, 0), -record.lane_events[n], n))
        top = sorted(order[:limits.lanes])
        folded = order[limits.lanes:]
        row = {n: i for i, n in enumerate(top)}
        labels = [record.lane_labels[n] for n in top]
        if folded:
            for n in folded:
                row[n] = len(labels)
            labels.append(f"other ({len(folded):,} keys)")
        self.row = row
        # events: all of them for a small input, else those of the matches shown
        complete = record.complete
        events: list[Event] = list(record.first_events) if complete else []
        index = {id(e): i for i, e in enumerate(events)}
        for ce, _ in matches:
            for e in ce.leaves():
                if id(e) not in index:
                    index[id(e)] = len(events)
                    events.append(e)
        order_ev = sorted(range(len(events)), key=lambda i: (events[i].ts, i))
        pos = {old: new for new, old in enumerate(order_ev)}
        events = [events[i] for i in order_ev]
        index = {k: pos[v] for k, v in index.items()}
        types = sorted({e.type for e in events})
        type_no = {t: i for i, t in enumerate(types)}
        schemas = record.program.schemas
        story_of: dict[int, int] = {id(s): i for i, s in enumerate(stories)}
        match_rows = []
        for ce, story in matches:
            leaves = list(ce.leaves())
            rows = [row[self._lane(e)] for e in leaves] or [0]
            match_rows.append({
                "p": ce.type, "ts": ce.ts,
                "first": min([e.ts for e in leaves] or [ce.ts]),
                "last": max([e.ts for e in leaves] + [ce.ts]),
                "lo": min(rows), "hi": max(rows),
                "ev": [index[id(e)] for e in leaves],
                "story": story_of[id(story)] if story is not None else -1,
                "params": ce.bindings_for_output()})
        depth = _pack(match_rows, len(labels))
        match_of = {m["story"]: i for i, m in enumerate(match_rows) if m["story"] >= 0}
        self.timeline = {
            "lanes": labels, "depth": depth, "complete": complete,
            "events_total": record.event_count, "types": types,
            "fields": {t: list(schemas[t].param_names) if t in schemas else [] for t in types},
            "ev_ts": [e.ts for e in events],
            "ev_lane": [row[self._lane(e)] for e in events],
            "ev_type": [type_no[e.type] for e in events],
            "ev_id": [str(e.ref) for e in events],
            "ev_params": [list(e.params) for e in events],
            "bins": self._bins(len(labels)),
            "matches": match_rows,
            "matches_total": sum(len(t) for t in record.match_ts.values()),
        }
        self.stories = [_story_data(record.autos[s.pattern], schemas, s, match_of.get(i, -1))
                        for i, s in enumerate(stories)]
        self.patterns = sorted({s.pattern for s in stories})

    def _lane(self, e: Event) -> int:
        n = self.record.lanes.get(_lane_key(self.record, e))
        return n if n is not None else (self.record._folded or 0)

    def _bins(self, rows: int) -> dict[str, Any]:
        """Events per (lane row, bin) over the run, as parallel lists of the non-empty cells."""
        record = self.record
        nbins = record.limits.bins
        if not record.event_count:
            return {"n": nbins, "row": [], "bin": [], "count": []}
        ts = np.frombuffer(record.ts, dtype=np.float64)
        lane = np.frombuffer(record.lane_of, dtype=np.int64 if record.lane_of.itemsize == 8
                             else np.int32)
        t0, t1 = float(ts.min()), float(ts.max())
        b = np.zeros(len(ts), dtype=np.int64) if t1 == t0 else np.minimum(
            ((ts - t0) / (t1 - t0) * nbins).astype(np.int64), nbins - 1)
        to_row = np.array([self.row.get(n, rows - 1) for n in range(len(record.lane_labels))],
                          dtype=np.int64)
        cells = np.bincount(to_row[lane] * nbins + b, minlength=rows * nbins)
        nz = np.flatnonzero(cells)
        return {"n": nbins, "t0": t0, "t1": t1, "row": (nz // nbins).tolist(),
                "bin": (nz % nbins).tolist(), "count": cells[nz].tolist()}


def _pack(matches: list[dict[str, Any]], rows: int) -> list[int]:
    """Give each match a slot (``slot``) under the events of its rows so that matches whose
    times overlap do not cover each other (at most :data:`SLOTS`; past that they share);
    returns the slots each row needs."""
    ends: list[list[float]] = [[] for _ in range(rows)]
    for i in sorted(range(len(matches)), key=lambda i: (matches[i]["first"], matches[i]["last"])):
        m = matches[i]
        lanes = range(m["lo"], m["hi"] + 1)
        slot = next((k for k in range(SLOTS) if all(
            len(ends[r]) <= k or ends[r][k] < m["first"] for r in lanes)), i % SLOTS)
        for r in lanes:
            ends[r].extend([float("-inf")] * (slot + 1 - len(ends[r])))
            ends[r][slot] = max(ends[r][slot], m["last"])
        m["slot"] = slot
    return [len(e) for e in ends]


def _lane_key(record: RunRecord, e: Event) -> tuple[str, Any]:
    key = record.keys.get(e.type)
    if key is None:
        return ("type", e.type)
    value = e.params[key[0]] if key[0] < len(e.params) else None
    return ("key", value if value is None or isinstance(value, str | int | float | bool)
            else repr(value))


def _node(state: int) -> str:
    """A state's node name in the automaton's drawing (cepflow.automaton.dot.to_dot)."""
    return {INITIAL: "q0", FINAL: "f", TRAP: "x"}.get(state, f"q{state}")


def _zone_text(zone: Zone) -> str:
    kind = "within" if zone.kind == "within" else "holds-for"
    return f"z{zone.id}: {kind} {duration_text(zone.length)}"


def _story_data(auto: Automaton, schemas: Mapping[str, EventType], story: TokenStory,
                match: int) -> dict[str, Any]:
    """A story as the step-through reads it: each step's time as text, the event, the states
    (node names of the drawing), the bindings and the windows' deadlines after it."""
    zones = {z.id: z for z in auto.zones}
    steps = []
    for ent in story.steps:
        kind = ent["kind"]
        to = [_node(s) for s in ent.get("to", ())]
        if kind == "match":
            to = ["f"]
        elif kind == "trap":
            to = ["x"]
        threads = []
        for th in ent.get("threads", ()):
            threads.append({
                "bindings": th["bindings"],
                "deadlines": [{"zone": _zone_text(zones[z]), "ts": d, "text": instant_text(d),
                               "left": duration_text(d - ent["ts"])}
                              for z, d in th["deadlines"]]})
        if kind == "match":
            threads = [{"bindings": ent.get("bindings", {}), "deadlines": []}]
        event = None
        if ent.get("event") is not None:
            event = {"id": str(ent["event"]), "type": ent.get("event_type"),
                     "params": _named(schemas, ent.get("event_type"),
                                       ent.get("event_params"))}
        steps.append({"kind": kind, "ts": ent["ts"], "time": instant_text(ent["ts"]),
                      "frm": _node(ent["frm"]) if "frm" in ent else None, "to": to,
                      "event": event, "reason": ent.get("reason") or "", "threads": threads})
    return {"pattern": story.pattern, "token": story.token, "outcome": story.outcome,
            "reason": story.reason, "match": match, "steps": steps,
            "label": f"{story.pattern} token {story.token}: {story.outcome} at "
                     f"{instant_text(story.steps[-1]['ts'])}" if story.steps else story.pattern}


def _named(schemas: Mapping[str, EventType], type_: str | None, params: Any) -> Any:
    """An event's parameters by name (as a list when its type is not declared)."""
    if type_ is None or params is None:
        return None
    schema = schemas.get(type_)
    if schema is None or len(schema.params) != len(params):
        return list(params)
    return dict(zip(schema.param_names, params, strict=True))


def _stepper(page: Page, record: RunRecord, shown: _Shown) -> None:
    s = page.section("Step-through")
    if not shown.stories:
        s.text("No token of any pattern moved in this run.", css="muted")
        return
    s.html('<div id="stepper"><div class="controls"><label>match or partial match '
           '<select id="story"></select></label> '
           '<button id="back" type="button">◀ back</button>'
           '<button id="next" type="button">next ▶</button> '
           '<span id="step-no" class="muted"></span></div>'
           '<div class="stepper-body"><div id="automata">')
    for name in shown.patterns:
        auto = record.autos[name]
        dot = to_dot(auto)
        try:
            drawing = to_svg(dot)
            s.svg(drawing, attrs={"class": "automaton", "data-pattern": name, "hidden": ""})
        except RenderError as e:
            s.html(f'<div class="automaton" data-pattern="{html.escape(name)}" hidden>')
            s.text(str(e), css="warning")
            s.pre(dot)
            s.html("</div>")
    s.html('</div><div id="step"></div></div></div>')
    s.text("Pick a match (or click its span in the timeline) or a partial match; next and "
           "back walk its token through the automaton: the current state is filled, the "
           "states it went through are outlined, and the panel shows the event, the bindings "
           "and the windows' deadlines after each step.", css="muted")


def _timeline(page: Page, record: RunRecord, shown: _Shown, t0: float, t1: float) -> None:
    s = page.section("Timeline")
    tl = shown.timeline
    limits = record.limits
    if tl["complete"]:
        how = (f"All {record.event_count:,} events, one row per key; each match is a band over "
               "its events.")
    else:
        how = (f"{record.event_count:,} events: too many to draw one by one, so each row shows "
               f"how many events fall in each of {limits.bins:,} time bins, and the events of "
               "the matches shown are drawn on top.")
    total = tl["matches_total"]
    if len(tl["matches"]) < total:
        how += (f" {len(tl['matches']):,} of {total:,} matches are shown (at most "
                f"{limits.matches:,} per pattern, chosen uniformly over the run).")
    if len(tl["lanes"]) > limits.lanes:
        how += f" Rows past the {limits.lanes} busiest are folded into the last."
    s.text(how + " Drag to pan, scroll (or the buttons) to zoom, hover for an event's id and "
                 "parameters.", css="muted")
    s.html('<div class="controls"><button id="zoom-in" type="button">+</button>'
           '<button id="zoom-out" type="button">&minus;</button>'
           '<button id="zoom-reset" type="button">whole run</button>'
           '<span id="tl-range" class="muted"></span></div>'
           '<div id="run-timeline"></div><div id="tip" hidden></div>')


def _partials(page: Page, record: RunRecord) -> None:
    s = page.section("Partial matches")
    rows = [(p, outcome, why, n) for (p, outcome, why), n in sorted(
        record.died_reasons.items(), key=lambda kv: (kv[0][0], -kv[1]))]
    if rows:
        s.table(["pattern", "ended", "why", "count"], rows, numeric=[3],
                caption="Partial matches that died, by reason")
    left = [(p, n) for p, n in sorted(record.partial_counts.items())]
    if left:
        s.table(["pattern", "left at the end"], left, numeric=[1])
    if not rows and not left:
        s.text("No partial match died and none was left at the end.", css="muted")


def _rejected(page: Page, result: Replayed, first: int) -> None:
    s = page.section("Rejected records")
    side = result.side.to_pylist()
    if not side:
        s.text("Every record was read and processed.", css="ok")
        return
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in side:
        groups.setdefault((r["kind"], r["field"] or "", reason_class(r["reason"] or "")),
                          []).append(r)
    s.table(["kind", "field", "reason", "records"],
            [(k, f, why, len(rs)) for (k, f, why), rs in groups.items()], numeric=[3])
    for (kind, fld, why), rs in groups.items():
        more = f" (the first {first} of {len(rs):,})" if len(rs) > first else ""
        s.table(["file", "where", "reason", "record"],
                [(r["source"], r["location"], r["reason"], _clip(r["record"]))
                 for r in rs[:first]],
                caption=f"{kind}{f' · {fld}' if fld else ''} · {why}{more}")


def _clip(text: str | None) -> str:
    if text is None:
        return ""
    return text if len(text) <= RECORD_TEXT else text[:RECORD_TEXT] + "…"


_STYLE = """
#stepper .controls, section .controls { margin: 6px 0; }
#automata { overflow-x: auto; }
.automaton svg { max-width: 100%; height: auto; }
#step { display: flex; flex-wrap: wrap; gap: 4px 28px; align-items: flex-start; }
#step > div { min-width: 220px; }
#step h3 { flex-basis: 100%; margin: 4px 0 0; font-size: 15px; }
.automaton g.node.seen :is(ellipse, polygon, path) { stroke: #1f6feb; stroke-width: 2.5; }
.automaton g.node.current :is(ellipse, polygon, path) { fill: #ffd866; stroke: #b15c00;
  stroke-width: 3; }
.automaton g.edge.taken path { stroke: #b15c00; stroke-width: 2.5; }
.automaton g.edge.taken polygon { fill: #b15c00; stroke: #b15c00; }
#run-timeline { border: 1px solid var(--line); overflow: hidden; cursor: grab; user-select: none; }
#run-timeline svg { display: block; }
#run-timeline .span { fill-opacity: .55; stroke-width: 1; cursor: pointer; }
#run-timeline .span.multi { fill-opacity: .15; }
#run-timeline .span.sel { fill: #ffd866; fill-opacity: .9; stroke: #b15c00; stroke-width: 2; }
#run-timeline .ev.sel { stroke: #b15c00; stroke-width: 2.5; }
#run-timeline .ev { stroke: #fff; stroke-width: .5; }
#run-timeline .bin { fill: #9aa6b8; }
#run-timeline .lane-label { font-size: 11px; fill: #5b6677; }
#run-timeline .tick { font-size: 10px; fill: #5b6677; }
#tip { position: fixed; background: #1d2430; color: #fff; padding: 4px 8px; font-size: 12px;
  border-radius: 4px; pointer-events: none; max-width: 420px; z-index: 5; white-space: pre; }
"""
