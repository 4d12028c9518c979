"""What every column kernel does around its batch: check the order and number the rows
(prepare), give the batch back unchanged when a filter fails (Declined, unprepare), pause the
cyclic collector, and fire rules as the per-event engine would (fire_rules) or, for a column
batch whose rules have no registered action, count their firings (count_rules)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from operator import attrgetter
from typing import Any

import numpy as np

from cepflow.compiler.evaluator import current_sink
from cepflow.events.event import ComplexEvent, Event
from cepflow.runtime.errors import EngineError
from cepflow.runtime.rows import MatchTable, ObjectMatches, Rows

_TYPE = attrgetter("type")


class Declined(Exception):
    """A column kernel gave a batch back, having changed nothing: a filter failed on some of
    its rows (docs/semantics.md, "Evaluation errors"), so the batch goes event by event, where
    the failures are reported exactly as for events fed one at a time."""


@contextmanager
def declined_on_failure(reason: str) -> Iterator[None]:
    """Evaluations in the block that report a failure to the installed sink decline the
    batch (:class:`Declined` with ``reason``), their reports taken back: the per-event engine
    then reports them in their place among the others'."""
    sink = current_sink()
    mark = len(sink) if sink is not None else 0
    yield
    if sink is not None and len(sink) > mark:
        del sink[mark:]
        raise Declined(reason)




def prepare(engine: Any, src: Rows) -> None:
    """Check order (and what the source checks), number the rows, move the clock."""
    check_order(engine, src)
    src.check(engine)
    src.number(engine)
    host = engine.host
    host.stats.events += src.n
    if src.n:
        host.time = src.last_ts()



def check_order(engine: Any, src: Rows) -> None:
    """Raise EngineError, as the per-event engine does at the first such event, when a row is
    older than the clock or than the row before it."""
    host = engine.host
    ts, n = src.ts, src.n
    if n and (ts[0] < host.time or bool((ts[1:] < ts[:-1]).any())):
        bad = 0 if ts[0] < host.time else int(np.flatnonzero(ts[1:] < ts[:-1])[0]) + 1
        prev = host.time if bad == 0 else ts[bad - 1]
        e = src.lookup(np.array([bad]))[bad]
        raise EngineError(f"event {e!r} at {e.ts} is older than {prev:g}; "
                          "order the input (cepflow.inputs.reorder) before feeding the engine")



def counters_before(engine: Any) -> tuple[Any, ...]:
    """What :func:`prepare` changes in the engine (for :func:`unprepare`)."""
    host = engine.host
    return host.time, host.stats.events, host.counters.snapshot()



def unprepare(engine: Any, before: tuple[Any, ...], src: Rows) -> None:
    """Undo :func:`prepare` when a kernel gives its batch back: the clock, counters and a
    restored stream's numbering as they were (the numbers given to unnumbered events stay:
    fed one by one they get the same ones)."""
    host = engine.host
    host.time, host.stats.events, numbering = before
    host.counters.rewind(numbering)
    src.unnumber()



def fire_rules(host: Any, events: Sequence[Event], out: list[ComplexEvent],
               out_pos: list[int]) -> None:
    """Fire rules as the per-event engine would: per input event, after its detections
    (``out_pos``: the batch row each complex event was detected at), through the host's one
    rule-firing implementation; then the events actions emitted."""
    by_type = host.rules.by_type
    detected = set(map(_TYPE, out))
    if any(t not in detected for t in by_type) and any(e.type in by_type for e in events):
        # input events trigger rules too: every such event and every detecting one, in order
        marks: dict[int, list[ComplexEvent]] = {}
        for ce, p in zip(out, out_pos, strict=True):
            marks.setdefault(p, []).append(ce)
        for i in sorted({i for i, e in enumerate(events) if e.type in by_type} | set(marks)):
            host.fire(events[i], marks.get(i, []))
    else:
        # only complex events trigger rules: one input event's detections are adjacent in out
        fire, fire_one = host.fire, host.fire_one
        n = len(out)
        if len(set(out_pos)) == n:  # (one each: every complex event fires alone, in order)
            host.fire_each(out)
            n = 0
        i = 0
        while i < n:
            p = out_pos[i]
            j = i + 1
            while j < n and out_pos[j] == p:
                j += 1
            if j - i == 1:
                fire_one(out[i])
            else:
                fire(events[p], out[i:j])
            i = j
    if host.pending:
        host.drain(out)



def fire_or_count(host: Any, table: MatchTable, out: list[ComplexEvent]) -> None:
    """Fire rules over an event batch whose complex events are ``out`` (``table``'s, as
    objects): as the per-event engine would (:func:`fire_rules`), or, when no rule has a
    registered action, only count the firings (:func:`count_rules`: no action can run, fail
    or emit, so the firings' order cannot show)."""
    if host.acting:
        fire_rules(host, table.source.events, out, table.positions())
    else:
        count_rules(host, table, table.source)



def count_rules(host: Any, table: MatchTable, rows: Rows) -> None:
    """Count the rule firings of a column batch (no rule of the engine has a registered
    action, so a firing only counts): per complex event of a triggering pattern and per input
    row of a triggering type, as the per-event engine counts them."""
    rules = host.rules
    if not rules:
        return
    counts: dict[str, int] = {}
    for b in table.blocks:
        if isinstance(b, ObjectMatches):
            for ce in b.events:
                counts[ce.type] = counts.get(ce.type, 0) + 1
        else:
            counts[b.pattern] = counts.get(b.pattern, 0) + len(b.at)
    for i, t in enumerate(rows.type_names):
        if rules.triggers(t):
            counts[t] = counts.get(t, 0) + int(np.count_nonzero(rows.codes == i))
    host.stats.rule_firings += rules.count(counts)
