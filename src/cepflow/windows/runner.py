"""Running window statements over events: :class:`WindowRunner` and :func:`run_statements`.

A runner executes one :class:`WindowStatement`. Time is event time: every event fed to
:meth:`WindowRunner.process` (of any type) moves the statement's clock to its timestamp, which
expires sliding-window events and closes time batches first; :meth:`advance_to` moves the clock
without an event; :meth:`finish` ends the input. Events must come in timestamp order (the
readers' ``reorder`` policy handles late input before this stage). Each output row is a
:class:`~cepflow.events.event.ComplexEvent` of the statement's output type (``insert into``),
so rows can re-enter the stream for higher-order patterns or further statements.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from cepflow.compiler.evaluator import current_sink
from cepflow.events.event import ComplexEvent, Event, EventType
from cepflow.runtime.collector import gc_paused
from cepflow.windows.aggregates import Aggregation
from cepflow.windows.base import WindowView
from cepflow.windows.plan import StatementPlan, compile_statement
from cepflow.windows.prefix_sums import Ineligible, SlidingAggregate, columnar_plan
from cepflow.windows.processor import PerEventRows, PerGroupRows, Processor
from cepflow.windows.sliding import GroupLengthWindow, LengthWindow, TimeWindow
from cepflow.windows.statement import WindowError, WindowStatement
from cepflow.windows.tumbling import GroupLengthBatchWindow, LengthBatchWindow, TimeBatchWindow

_NO_BINDINGS: dict[str, Any] = {}
Functions = Mapping[str, Callable[..., Any]]


def build_window(plan: StatementPlan, match_ids: Callable[[], int]) -> WindowView:
    """The window of ``plan`` wired to its processor and a fresh aggregation."""
    spec = plan.statement.window
    agg = Aggregation(plan.slots, plan.statement.name, retract=not spec.is_batch)
    cls = PerGroupRows if plan.mode == "group" else PerEventRows
    proc: Processor = cls(agg, plan.row_builder(match_ids), spec.per_group)
    if spec.kind == "time":
        return TimeWindow(spec.size, proc)
    if spec.kind == "length":
        n = int(spec.size)
        return GroupLengthWindow(n, proc) if spec.per_group else LengthWindow(n, proc)
    if spec.kind == "time_batch":
        return TimeBatchWindow(spec.size, proc, spec.reference_point)
    n = int(spec.size)
    return GroupLengthBatchWindow(n, proc) if spec.per_group else LengthBatchWindow(n, proc)


class WindowRunner:
    """Executes one window statement, event by event.

    ``schemas`` maps event type names to their :class:`EventType` (``Program.schemas``);
    ``functions`` are extra functions expressions may call (as for patterns); ``match_ids``
    numbers the output events (default: 1, 2, … per runner; pass the engine's counter to share
    its numbering). ``columnar`` lets :meth:`process_batch` use the column-wise fast path for
    batches of at least ``columnar_min_batch`` events when the statement has its form
    (:func:`~cepflow.windows.prefix_sums.columnar_plan`); the rows are the same either way.
    """

    def __init__(
        self,
        statement: WindowStatement,
        schemas: Mapping[str, EventType],
        functions: Functions | None = None,
        match_ids: Callable[[], int] | None = None,
        columnar: bool = True,
        columnar_min_batch: int = 256,
    ) -> None:
        self.statement = statement
        #: the event types it reads (one, or a union's)
        self._inputs = frozenset(statement.input_types)
        self.plan = compile_statement(statement, schemas, functions)
        self.output_schema: EventType = self.plan.output_schema
        self._match_ids = match_ids or itertools.count(1).__next__
        self.window = build_window(self.plan, self._match_ids)
        spec = columnar_plan(self.plan) if columnar else None
        self._fast = SlidingAggregate(spec) if spec is not None else None
        #: whether the window's state lives in the columnar fast path right now
        self._in_fast = False
        self.columnar_min_batch = columnar_min_batch
        self.time = float("-inf")
        self._seq = 0
        self.finished = False

    # -- state ------------------------------------------------------------------------------
    @property
    def columnar_eligible(self) -> bool:
        """Whether :meth:`process_batch` may take the column-wise fast path."""
        return self._fast is not None

    @property
    def window_size(self) -> int:
        """Events the window holds now (sliding: its contents; batch: the current batch)."""
        if self._in_fast:
            assert self._fast is not None
            return len(self._fast)
        return len(self.window)

    @property
    def group_count(self) -> int:
        """Groups with aggregate state now (0 or 1 without group by)."""
        self._to_event_state()
        return len(self.window.proc.agg.groups)  # type: ignore[attr-defined]

    def _to_event_state(self) -> None:
        """Move the window's contents from the columnar fast path back to the event-by-event
        state (after a columnar batch, before single events)."""
        if not self._in_fast:
            return
        assert self._fast is not None
        window = build_window(self.plan, self._match_ids)
        assert isinstance(window, TimeWindow)
        contents = self._fast.contents()
        window.load((ts, self._seq + i, key, vals, event)
                    for i, (ts, key, vals, event) in enumerate(contents))
        self._seq += len(contents)
        self.window = window
        self._fast = SlidingAggregate(self._fast.spec)
        self._in_fast = False

    def _to_fast_state(self) -> SlidingAggregate:
        assert self._fast is not None
        if not self._in_fast:
            assert isinstance(self.window, TimeWindow)
            self._fast.load(list(self.window.items))
            self._fast.time = self.time
            self.window = build_window(self.plan, self._match_ids)
            self._in_fast = True
        return self._fast

    # -- feeding ----------------------------------------------------------------------------
    def _clock(self, t: float) -> list[ComplexEvent]:
        if self.finished:
            raise WindowError(f"statement '{self.statement.name}': input after finish()")
        if t < self.time:
            raise WindowError(f"statement '{self.statement.name}': time went back from "
                              f"{self.time} to {t}; feed events in timestamp order "
                              "(cepflow.inputs.reorder)")
        self.time = t
        return self.window.advance(t) if t >= self.window.due else []

    def process(self, event: Event) -> list[ComplexEvent]:
        """Feed one event (any type: its timestamp moves the clock); returns the output rows
        it caused, in order: rows of expiries and batch closes up to its timestamp first, then
        the rows of its own arrival."""
        if self._in_fast:
            self._to_event_state()
        out = self._clock(event.ts)
        if event.type not in self._inputs:
            return out
        plan = self.plan
        if plan.filter is not None and not plan.filter(event, _NO_BINDINGS):
            return out
        seq = self._seq
        sink = current_sink()
        mark = len(sink) if sink is not None else 0
        record = plan.record(event, seq)
        if sink is not None and len(sink) > mark:
            # its group key or an aggregate argument failed (reported by the engine from the
            # sink): the statement does not take the event, as a failing filter
            return out
        try:  # (a value the statement cannot take is refused before any state changes)
            rows = self.window.insert(record)
        except TypeError as e:  # an unhashable group-by value, for one
            raise WindowError(f"statement '{self.statement.name}': cannot process {event!r}: "
                              f"{e}", statement=self.statement.name) from None
        self._seq = seq + 1
        if out:
            out.extend(rows)
            return out
        return rows

    def advance_to(self, t: float) -> list[ComplexEvent]:
        """Move the clock to ``t`` without an event: expire and close batches up to ``t``."""
        self._to_event_state()
        return self._clock(t)

    def process_batch(self, events: Sequence[Event]) -> list[ComplexEvent]:
        """Feed many events; the same rows as :meth:`process` on each in turn. Eligible
        statements (one ``#time`` window, count/sum/avg, at most one group key) take the
        column-wise fast path for batches of ``columnar_min_batch`` events or more. The
        cyclic garbage collector is paused meanwhile (rows form no reference cycles)."""
        with gc_paused():
            if self._fast is not None and len(events) >= self.columnar_min_batch:
                try:
                    return self._process_columnar(events)
                except Ineligible:
                    pass
            out: list[ComplexEvent] = []
            for e in events:
                out.extend(self.process(e))
            return out

    def _process_columnar(self, events: Sequence[Event]) -> list[ComplexEvent]:
        if self.finished:
            raise WindowError(f"statement '{self.statement.name}': input after finish()")
        plan, spec = self.plan, self._fast.spec  # type: ignore[union-attr]
        itypes, filt, prev = self._inputs, plan.filter, self.time
        accepted: list[Event] = []
        for e in events:
            if e.ts < prev:  # the event-by-event path processes up to it, then raises
                raise Ineligible("out of order")
            prev = e.ts
            if e.type in itypes and (filt is None or filt(e, _NO_BINDINGS)):
                accepted.append(e)
        columns: dict[str, np.ndarray] = {}
        for name in {*spec.arg_fields, *((spec.key_field,) if spec.key_field else ())}:
            i = plan.fields[name]
            col = np.empty(len(accepted), object)
            col[:] = [e.params[i] for e in accepted]
            columns[name] = col
        ts = np.array([e.ts for e in accepted])
        fast = self._to_fast_state()
        result = fast.process(ts, columns, accepted, until=prev)
        self.time = prev
        self._seq += len(accepted)
        return result.to_events(self._match_ids)

    def finish(self, flush_batches: bool = False) -> list[ComplexEvent]:
        """End of input. Nothing more happens by default (an incomplete batch is not output,
        as in Esper); ``flush_batches=True`` closes it: a time batch at its boundary, a length
        batch at the current time. No input is accepted afterwards."""
        out = [] if self.finished else self.window.finish(self.time, flush_batches)
        self.finished = True
        return out

    def run(self, events: Iterable[Event], finish: bool = True,
            flush_batches: bool = False) -> list[ComplexEvent]:
        """Process every event (then :meth:`finish`); all output rows in order."""
        out: list[ComplexEvent] = []
        with gc_paused():
            for e in events:
                out.extend(self.process(e))
            if finish:
                out.extend(self.finish(flush_batches))
        return out


def _order(statements: Sequence[WindowStatement]) -> list[int]:
    """Statements in dependency order (a statement after those whose output it reads),
    otherwise in the given order; a cycle is an error."""
    producers = {s.name: i for i, s in enumerate(statements)}
    done: list[int] = []
    state: dict[int, int] = {}

    def visit(i: int, path: list[str]) -> None:
        if state.get(i) == 2:
            return
        if state.get(i) == 1:
            raise WindowError("window statements read each other's output in a cycle: "
                              + " -> ".join([*path, statements[i].name]))
        state[i] = 1
        for t in statements[i].input_types:
            j = producers.get(t)
            if j is not None:
                visit(j, [*path, statements[i].name])
        state[i] = 2
        done.append(i)

    for i in range(len(statements)):
        visit(i, [])
    return done


def run_statements(
    statements: Sequence[WindowStatement],
    events: Iterable[Event],
    schemas: Mapping[str, EventType],
    functions: Functions | None = None,
    finish: bool = True,
    flush_batches: bool = False,
) -> list[ComplexEvent]:
    """Run several statements over one time-ordered stream; their rows re-enter the stream.

    Every statement sees every input event's timestamp. A statement whose input type is
    another statement's output type reads that statement's rows, each delivered as soon as it
    is made (depth first, in production order), so chains such as Accident -> AccidentsReport
    -> … work without a pattern engine. Returns every statement's rows in production order.
    """
    names = {s.name for s in statements}
    if len(names) != len(statements):
        raise WindowError("window statements need distinct output names")
    order = _order(statements)
    runners: list[WindowRunner] = []
    all_schemas = dict(schemas)
    counter = itertools.count(1).__next__
    for i in order:
        r = WindowRunner(statements[i], all_schemas, functions, counter)
        all_schemas[statements[i].name] = r.output_schema
        runners.append(r)
    consumers: dict[str, list[int]] = {}
    for pos, r in enumerate(runners):
        for t in r.statement.input_types:
            consumers.setdefault(t, []).append(pos)
    out: list[ComplexEvent] = []

    def deliver(pos: int, rows: list[ComplexEvent]) -> None:
        for row in rows:
            out.append(row)
            for c in consumers.get(row.type, ()):
                if c > pos:
                    deliver(c, runners[c].process(row))

    for event in events:
        for pos, r in enumerate(runners):
            deliver(pos, r.advance_to(event.ts))
        for pos in consumers.get(event.type, ()):
            deliver(pos, runners[pos].process(event))
    if finish:
        for pos, r in enumerate(runners):
            deliver(pos, r.finish(flush_batches))
    return out
