"""The in-process CEP engine: many automata over one merged, time-ordered stream.

Every event goes to the patterns whose alphabet contains its type (and, under the immediate
and strict contexts, to the patterns for which it may be noise). Detected complex events re-enter
the stream at once, before the next input event, so higher-order patterns see them (002 §3.2);
patterns are visited in program order: priority (higher first), then dependency order, then
position in the file (compiler/program.py). After an input event and all it caused, rules fire in
a deterministic order — higher priority first, then detection order — and get the bindings.

Data-window statements (``Program.windows``, docs/windows.md) run in the same engine, on the
same clock, and their rows are complex events like pattern matches (they re-enter the stream,
trigger rules and feed patterns and other statements). Order (docs/windows.md, "In the
engine"): time passes first — pattern deadlines and window expiries/batch closes up to an
event's timestamp are processed in time order (deadlines strictly before it, window instants up
to and including it; at one instant pattern deadlines first) — then the event goes to the
patterns, then to the window statements, each in dependency order; every complex event a
pattern or statement produces is delivered breadth first, again patterns before statements.

**Statement start** (docs/esper.md): Esper starts a pattern when its statement starts, which
matters to the patterns that begin with ``timer:interval``. The engine's statements start at
``start`` when it is given, else at the timestamp of the first event it processes (the replayed
stream's beginning): their clocks begin then, and their timers fire in time order with every
other timer. At ``advance_to(inf)`` (``finish(close_windows=True)``) the intervals under way
end, and no new one begins: the statement stops with its input.

**Input a statement cannot take** (a value an aggregate cannot aggregate, an unhashable group
key) is, with a :class:`~cepflow.events.event.SideChannel` given as ``side``, put there with
its reason (statement, field, value) while the statement's state stays as it was and the event
goes on to every other pattern and statement; without one it stops the run with an
:class:`EngineError`, as before.

**Evaluation errors** (docs/semantics.md, "Evaluation errors"): an expression that fails on a
value (``sqrt(-4)``, ``floor(NaN)``, a text over the size limit, a registered function that
raises) and a rule action that raises never abort the run. A failing condition is false for
that evaluation and a failing value (select list, distinct key) is null — nothing else about
the engine's state changes — and each (event, expression) failure becomes one record of kind
``error`` in :attr:`Engine.errors` (the side channel's ``errors`` when one is given). With
``on_error="fail"`` the engine raises :class:`EvaluationFailed` once the event that failed has
been processed; the column kernels are then not used, so it stops at that very event.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from itertools import chain, islice
from threading import get_ident
from typing import Any

import numpy as np

from cepflow.compiler.evaluator import SINKS, can_fail, install_sink
from cepflow.compiler.program import Program
from cepflow.events.event import ComplexEvent, Event, Rejected, SideChannel
from cepflow.runtime.actions import registered
from cepflow.runtime.collector import gc_paused
from cepflow.runtime.compiled import CompiledPattern
from cepflow.runtime.errors import EngineError, EvaluationFailed, PartialMatchLimit, RunStopped
from cepflow.runtime.host import Action, EngineStats, Host, Trace
from cepflow.runtime.interval_clock import CLOCK_TOKEN
from cepflow.runtime.kernels import (
    Declined,
    process_batch,
    process_columns,
    process_esper_batch,
    process_esper_columns,
)
from cepflow.runtime.kernels.over import EVERY, ending, skip_over
from cepflow.runtime.kernels.split import process_split, split_columns, split_kernels
from cepflow.runtime.kernels.timer_end import (
    process_timer_end_batch,
    process_timer_end_columns,
    timer_end_of,
)
from cepflow.runtime.matcher import Matcher
from cepflow.runtime.rows import MatchTable, Rows
from cepflow.runtime.timers import BEFORE_EVENTS
from cepflow.windows.runner import WindowRunner
from cepflow.windows.statement import WindowError

#: what an evaluation error does (docs/semantics.md, "Evaluation errors")
ON_ERROR = ("skip", "fail")
#: Engine._next_check without a limit: more tokens than any run makes (an int: comparing the
#: token counter with it per event costs less than with an infinite float)
_NEVER = 1 << 62


class Engine:
    """Runs a compiled :class:`Program` over events fed in timestamp order."""

    def __init__(
        self,
        program: Program,
        actions: Mapping[str, Action] | None = None,
        trace: bool | Trace = False,
        max_cascade: int = 100_000,
        strict_actions: bool = True,
        fast_path: bool = True,
        start: float | None = None,
        side: SideChannel | None = None,
        on_error: str = "skip",
        max_partial_matches: int | None = None,
    ) -> None:
        if on_error not in ON_ERROR:
            raise EngineError(f"on_error must be one of {', '.join(ON_ERROR)}, not {on_error!r}")
        if max_partial_matches is not None and (type(max_partial_matches) is not int
                                                or max_partial_matches < 1):
            raise EngineError("max_partial_matches must be a positive integer, not "
                              f"{max_partial_matches!r}")
        #: the most partial matches held at once (None: no limit); more stop the run
        #: (PartialMatchLimit). Checked when enough tokens were made since the last count
        #: for the limit to be passed (_next_check), so unlimited engines pay one comparison.
        self.max_partial_matches = max_partial_matches
        self._next_check: int = -1 if max_partial_matches is not None else _NEVER
        self.program = program
        #: where input a window statement cannot take goes (None: it is an EngineError)
        self.side = side
        #: skip (record evaluation errors, go on) or fail (record, then raise EvaluationFailed)
        self.on_error = on_error
        #: the error records (kind ``error``): the side channel's when one is given
        self.errors: list[Rejected] = side.errors if side is not None else []
        self._evaluates = _has_expressions(program)
        #: the clock, numbering, timers, trace, statistics, rule firing and emitted events
        #: every path shares (runtime/host.py); the trace records every token's moves
        #: (``trace=True``, or a Trace of one's own that keeps what it wants:
        #: cepflow.reports.record), None when not tracing
        self.host = host = Host(self, program, registered() if actions is None else actions,
                                trace if isinstance(trace, Trace) else Trace() if trace
                                else None, max_cascade)
        self.matchers = [Matcher(CompiledPattern(a, fast_path), host) for a in program.automata]
        for i, m in enumerate(self.matchers):
            m.slot = i
        #: the matchers whose pair queues its instances' deadlines (Matcher.skipped)
        self._skipping = [m for m in self.matchers
                          if (m.pattern.pair is not None and m.pattern.pair.zone is not None)
                          or (m.pattern.esper_and is not None
                              and m.pattern.esper_and.zone is not None)
                          or (m.pattern.consec is not None
                              and m.pattern.consec.zone is not None)]
        #: one runner per data-window statement, in dependency order, numbering rows with
        #: the engine's match ids
        self.windows = [WindowRunner(w, program.schemas, program.functions,
                                     match_ids=host.counters.next_match)
                        for w in program.windows]
        self._window_subs: dict[str, list[WindowRunner]] = {}
        for r in self.windows:
            for t in r.statement.input_types:
                self._window_subs.setdefault(t, []).append(r)
        #: the time the statements started (None: not yet; see the module docstring)
        self.statement_start: float | None = None
        self._clocks = [m for m in self.matchers if m.pattern.clock is not None]
        #: a pattern reads the statement's start: a clock, or Esper's guard at the top of the
        #: pattern whose window runs from it (Zone.whole); saved state carries the start then
        self.reads_start = bool(self._clocks) or any(m.pattern.whole_zones
                                                     for m in self.matchers)
        self._emitted: list[ComplexEvent] = []
        self._emit = self._emitted.append
        #: per event type, how many patterns an event of it can start a partial match of
        #: (a kernel's batch bound for max_partial_matches)
        self._starts: dict[str, int] = {}
        for m in self.matchers:
            for t in m.pattern.initial:
                self._starts[t] = self._starts.get(t, 0) + 1
        self._index_matchers()
        #: the complex event types a pattern or a statement reads (the others need no
        #: cascade); None: every one cascades (max_cascade < 1 refuses the first)
        self._readers: frozenset[str] | None = (
            frozenset([*self.subs_complex, *self._window_subs]) if max_cascade >= 1 else None)
        # the column kernels need independent patterns: no noise, no data windows, and no
        # pattern reading another's output
        coupled = bool(self.windows) or any(a.name in self.subs_complex
                                            for a in program.automata)
        plain = not self.noise and not coupled
        #: the matchers, when the chain kernel takes them all (every one a keyed sequence:
        #: CompiledPattern.chain, one under immediate or strict, whose noise the kernel
        #: decides: CompiledPattern.context_chain, or one under unrestricted:
        #: CompiledPattern.unrestricted_chain, kernels/every.py), else None
        self._chains = (self.matchers if not coupled and all(
            (m.pattern.chain is not None and m.pattern.chain.columnar)
            or m.pattern.context_chain is not None
            or m.pattern.unrestricted_chain is not None for m in self.matchers) else None)
        # Esper's `every a = A(f) -> b = B(g, key) [within Δ]` patterns: their column kernel
        # (CompiledPattern.pair is None without fast_path)
        self._pairs = (self.matchers if plain and self._chains is None and self.matchers
                       and all(m.pattern.pair is not None for m in self.matchers) else None)
        #: the matchers, when every pattern is Esper's missing event or interval (after b,
        #: right after a) of the forms the batch route takes (runtime/kernels/timer_end.py:
        #: their timers are the engine's only ones), with their shapes (per matcher, None for
        #: the others: the program split plans them too, kernels.split.split_kernels)
        self._timer_end_shapes = ([timer_end_of(m.pattern) for m in self.matchers]
                                  if self._chains is None and self._pairs is None
                                  and fast_path else [])
        self._timer_ends = (self.matchers if plain and self._timer_end_shapes and all(
            sh is not None for sh in self._timer_end_shapes) else None)
        #: the patterns a batch runs column-wise while the rest of the program runs per event
        #: (runtime/kernels/split.py), when no whole-batch kernel takes the program
        self._split = (split_kernels(self) if self._chains is None and self._pairs is None
                       and self._timer_ends is None else None)
        for rule in program.rules:
            if rule.action is not None and rule.action not in host.actions and strict_actions:
                known = ", ".join(sorted(host.actions)) or "none registered"
                raise EngineError(f"rule '{rule.name}': action '{rule.action}' is not "
                                  f"registered (registered: {known})")
        if start is not None:
            self.start_statements(start)

    def start_statements(self, t: float) -> None:
        """Start the statements at ``t``: the clocks of patterns that begin with
        ``timer:interval`` (at most once; the first event does it when nobody did). The start
        is kept as a float whoever gave it (an event's integer time, the split's column of
        times): saved state reads the same on every route."""
        if self.statement_start is not None:
            return
        t = float(t)
        self.statement_start = t
        for m in self._clocks:
            m.start_clock(t)

    def _index_matchers(self) -> None:
        # patterns that see every input event (its type may be noise to them); Esper's never
        # dispose partial matches on noise, so they get only the types they name
        self.noise = [m for m in self.matchers if m.pattern.context.sees_every_event]
        by_type: dict[str, list[Matcher]] = {}
        for m in self.matchers:
            for t in m.pattern.types:
                by_type.setdefault(t, []).append(m)
        order = {id(m): i for i, m in enumerate(self.matchers)}
        self.subs_complex = by_type
        self.subs_input: dict[str, list[Matcher]] = {}
        for t, ms in by_type.items():
            merged = {id(m): m for m in [*ms, *self.noise]}
            self.subs_input[t] = sorted(merged.values(), key=lambda m: order[id(m)])
        self.index_routes()

    def index_routes(self) -> None:
        """Per event type of the program, what :meth:`step` needs to take an event of it, looked
        up once per event (a fork of the engine, cepflow.analysis.fork, builds it again over
        its own matchers)."""
        host = self.host
        types = {*host.arity, *self.subs_input, *self._window_subs, *host.rules.by_type}
        self._routes: dict[str, tuple[int, tuple, tuple, bool]] = {
            t: self._route(t) for t in types}
        #: Esper's patterns that may end for good: the per-event route skips them once over
        self._ending = ending(self)
        #: per complex event type, the steps of the matchers that read it (as for an input
        #: event: Matcher.step_for, so a derived event takes the fast steps too), in order
        self._derived: dict[str, tuple[Callable, ...]] = {
            t: tuple(m.step_for(t) for m in ms) for t, ms in self.subs_complex.items()}

    def _route(self, t: str) -> tuple[int, tuple[Callable, ...], tuple[WindowRunner, ...], bool]:
        """How an input event of type ``t`` is taken: its declared number of parameters (-1:
        not declared), the steps of the matchers that read it (Matcher.step_for; every pattern
        for which it may be noise, when none names it), in order, the window statements that
        read it, and whether a rule triggers on it."""
        n = self.host.arity.get(t)
        return (-1 if n is None else n,
                tuple(m.step_for(t) for m in self.subs_input.get(t, self.noise)),
                tuple(self._window_subs.get(t, ())), self.host.rules.triggers(t))

    @contextmanager
    def replaying(self, steps: Mapping[int, Callable[[Event, Any], None]],
                  types: Iterable[str], windows: Mapping[int, Any] | None = None,
                  cascades: Mapping[int, Callable[[Event, Any], None]] | None = None
                  ) -> Iterator[frozenset[str]]:
        """Within the block, the input step of each matcher whose slot ``steps`` names is that
        callable (the program split's replay of a kernel's plan, runtime/kernels/split.py), and
        that matcher's timers do nothing (its plan ended its instances); yields which of
        ``types`` something else reads — a matcher not replaced, a window statement, a rule —
        so that its events must go through :meth:`process`. ``windows`` puts stand-ins in
        the place of window statements' runners (by position in :attr:`windows`: the split's
        window blocks, runtime/kernels/window_block.py), which then read no type either, also
        where derived events cascade; ``cascades`` replaces the step of the matchers it names
        (by slot) for the derived events they read (Matcher.process: runtime/kernels/cascade.py).
        """
        saved = dict(self._routes)
        saved_derived = dict(self._derived)
        saved_windows = list(self.windows)
        saved_subs = {t: list(rs) for t, rs in self._window_subs.items()}
        swap = {id(self.windows[i]): b for i, b in (windows or {}).items()}
        cascades = cascades or {}
        replaced = [self.matchers[k] for k in {*steps, *cascades}]
        # (an instance attribute of its own, such as a profiler's wrapper, comes back after)
        own = [m.__dict__.get("on_deadline") for m in replaced]
        own_process = {k: self.matchers[k].__dict__.get("process") for k in cascades}
        read = set()
        try:
            for t in {*types, *self._routes}:
                n, old, runners, triggers = self._routes.get(t) or self._route(t)
                ms = self.subs_input.get(t, self.noise)
                self._routes[t] = (n, tuple(steps.get(m.slot, s)
                                            for m, s in zip(ms, old, strict=True)),
                                   tuple(swap.get(id(r), r) for r in runners), triggers)
                if (triggers or any(id(r) not in swap for r in runners)
                        or any(m.slot not in steps for m in ms)):
                    read.add(t)
            for m in replaced:
                m.on_deadline = _no_deadline  # type: ignore[method-assign]
            for i, b in (windows or {}).items():
                self.windows[i] = b
            for rs in self._window_subs.values():
                rs[:] = [swap.get(id(r), r) for r in rs]
            for k, fn in cascades.items():
                self.matchers[k].process = fn  # type: ignore[method-assign]
            for t, ms in self.subs_complex.items():
                if any(m.slot in cascades for m in ms):
                    self._derived[t] = tuple(cascades.get(m.slot, s)
                                             for m, s in zip(ms, saved_derived[t], strict=True))
            yield frozenset(read)
        finally:
            self.windows[:] = saved_windows
            for t, rs in saved_subs.items():
                self._window_subs[t][:] = rs
            for k, before_p in own_process.items():
                if before_p is None:
                    self.matchers[k].__dict__.pop("process", None)
                else:
                    self.matchers[k].process = before_p  # type: ignore[method-assign]
            self._routes.clear()
            self._routes.update(saved)
            self._derived.clear()
            self._derived.update(saved_derived)
            for m, before in zip(replaced, own, strict=True):
                if before is None:
                    del m.on_deadline
                else:
                    m.on_deadline = before  # type: ignore[method-assign]

    def consumed(self, t: str) -> bool:
        """Whether complex events of type ``t`` go anywhere but the output: a pattern or window
        statement reads them, or a rule triggers on them (else recording them is all the
        engine does with them)."""
        return self._readers is None or t in self._readers or self.host.rules.triggers(t)

    def next_due(self) -> tuple[float, bool]:
        """The earliest instant at which time passing does something — a pattern timer, a
        window's expiry or batch close — and whether that happens before the events of that
        instant (else only before later ones); ``inf`` when nothing is due."""
        heap = self.host.timers.heap
        due, before = (heap[0][0], heap[0][1] == BEFORE_EVENTS) if heap else (float("inf"),
                                                                               True)
        if self.windows:
            w = self._window_due()
            if w <= due:
                due, before = w, True
        return due, before

    # -- what the host holds, as the engine's users read it ----------------------------------
    @property
    def time(self) -> float:
        """The engine's clock: the last event's time, or the time it advanced to."""
        return self.host.time

    @property
    def stats(self) -> EngineStats:
        return self.host.stats

    @property
    def trace(self) -> Trace | None:
        return self.host.trace

    @property
    def actions(self) -> dict[str, Action]:
        return self.host.actions

    @property
    def stopped(self) -> bool:
        """The input has ended (advance_to(inf)): no pattern clock starts any more."""
        return self.host.stopped

    # -- feeding --------------------------------------------------------------------------
    def emit(self, event: Event) -> None:
        """Publish an event into the stream (processed after the current one)."""
        self.host.emit(event)

    def process(self, event: Event, out: list[ComplexEvent] | None = None
                ) -> list[ComplexEvent]:
        """Feed one input event; returns the complex events it caused, in detection order
        (including those caused by events that rule actions emitted in response).

        With ``out`` (the engine's own calls, :meth:`step`) it is one step: time passes to the
        event, the patterns and statements take it, complex events cascade, rules fire — the
        complex events go to ``out``, and the events rule actions emit and the failures are
        left to the caller. (One method for both: the per-event path pays one call.)"""
        if out is None:
            out = []
            if self._evaluates:  # (no expression that can fail: no sink to install)
                return self._guarded(event, out)
            top = True
        else:
            top = False
        host = self.host
        ts = event.ts
        if ts < host.time:
            raise EngineError(
                f"event {event!r} at {ts} is older than the engine clock {host.time}; "
                "order the input (cepflow.inputs.reorder) before feeding the engine")
        t = event.type
        route = self._routes.get(t) or self._route(t)
        n, steps, runners, triggers = route
        if len(event.params) != n and n >= 0:  # (n = -1: the type is not declared)
            raise EngineError(f"event {event!r} has {len(event.params)} parameter(s), "
                              f"type '{t}' declares {n}")
        if self.statement_start is None:
            self.start_statements(ts)
        heap = host.timers.heap  # (TimerQueue.due_before, inlined)
        if ((heap and (d := heap[0][0]) <= ts and (d < ts or heap[0][1] == BEFORE_EVENTS))
                or (self.windows and self._window_due() <= ts)):
            self._advance(ts, out)
        host.time = ts
        counters = host.counters
        seq = event.seq
        if seq < 0:  # (Counters.number, inlined but for a restored stream's renumbering)
            event.seq = seq = counters.input
            counters.input = seq + 1
        elif counters.renumber:
            event.seq = counters.number(seq)
        elif seq >= counters.input:
            counters.input = seq + 1
        stats = host.stats
        stats.events += 1
        if steps or runners or triggers:  # (else nothing reads it)
            emit = self._emit
            for take in steps:
                take(event, emit)
            emitted = self._emitted
            for r in runners:
                emitted.extend(self._window_rows(r, event))
            if emitted:
                start = len(out)
                readers = self._readers
                by_pattern = stats.by_pattern
                try:  # (the cascade's matchers emit into lists of their own, not this one)
                    for ce in emitted:
                        out.append(ce)  # (_record, inlined)
                        stats.complex_events += 1
                        by_pattern[ce.type] = by_pattern.get(ce.type, 0) + 1
                        if readers is None or ce.type in readers:
                            self._cascade(ce, out)
                finally:
                    emitted.clear()
                if host.rules.by_type:
                    if len(out) == start + 1 and not triggers:  # (Host.fire's common case)
                        host.fire_one(out[start])
                    else:
                        host.fire(event, out[start:])
            elif triggers:
                host.fire(event, [])
        if counters.token > self._next_check:  # (also after an event nothing reads: a
            self._bound(event, out)  # restored state is counted at the next event)
        if top and (host.pending or host.failures):
            self._settle(out)
        return out

    def step(self, event: Event, out: list[ComplexEvent]) -> None:
        """One event and everything it causes, its complex events appended to ``out`` (the
        host's drain feeds emitted events here): :meth:`process` with ``out``."""
        self.process(event, out)

    def _settle(self, out: list[ComplexEvent]) -> None:
        """After an input event: the events rule actions emitted, then the failures' error
        records."""
        host = self.host
        if host.pending:
            host.drain(out)
        if host.failures:
            self._report(out)

    def _guarded(self, event: Event, out: list[ComplexEvent]) -> list[ComplexEvent]:
        """:meth:`process` with this engine's failure sink installed (install_sink, inlined:
        this runs once per event)."""
        host = self.host
        sinks, ident = SINKS, get_ident()
        before = sinks.get(ident)
        sinks[ident] = host.failures
        try:
            self.process(event, out)
            if host.pending or host.failures:
                self._settle(out)
        finally:
            sinks[ident] = before
        return out

    def _feed(self, event: Event, out: list[ComplexEvent]) -> None:
        """:meth:`process` with the failure sink installed by the caller."""
        host = self.host
        self.process(event, out)
        if host.pending or host.failures:
            self._settle(out)

    def _one_by_one(self, events: Sequence[Event], out: list[ComplexEvent]) -> None:
        """A batch no kernel takes (or that declined), event by event under the caller's
        failure sink — one method, so that tests can tell it from the split's stepped rows."""
        if not self._ending:
            for e in events:
                self._feed(e, out)
            return
        for i in range(0, len(events), EVERY):  # (kernels.over: patterns that ended, skipped)
            skip_over(self)
            for e in events[i:i + EVERY]:
                self._feed(e, out)

    def _report(self, out: list[ComplexEvent]) -> None:
        """The failures collected since the last report as error records, one per (event,
        expression); with ``on_error="fail"`` raise :class:`EvaluationFailed` after them."""
        failures = self.host.failures[:]
        self.host.failures.clear()
        source = self.program.module.source
        seen: set[tuple[int, int, str | None]] = set()
        records = []
        for f in failures:
            key = (id(f.event), id(f.expr), f.origin)
            if key in seen:
                continue
            seen.add(key)
            records.append(Rejected(f.origin or "expression", _event_location(f.event, self.time),
                                    f.describe(source, origin=False), f.event, f.text))
        self.errors.extend(records)
        self.stats.errors += len(records)
        if self.on_error == "fail":
            first = records[0]
            raise EvaluationFailed(f"{first.source}, {first.location}: {first.reason}",
                                   records, out)

    def recount(self) -> None:
        """Count the partial matches held at the next step (after partial matches were made
        other than one token at a time: a restored state)."""
        if self.max_partial_matches is not None:
            self._next_check = -1

    def _bound(self, event: Event | None, out: list[ComplexEvent]) -> None:
        """Count the partial matches held (tokens were made since the last count): raise
        :class:`PartialMatchLimit` above ``max_partial_matches``, else note how many tokens
        may be made before the limit can be passed."""
        limit = self.max_partial_matches
        if limit is None:  # (no limit, and a restored token counter beyond _NEVER: check no
            self._next_check = self.host.counters.token + _NEVER  # more; stop 28)
            return
        held = self.partial_matches()
        total = sum(held.values())
        if total <= limit:
            self._next_check = self.host.counters.token + (limit - total)
            return
        where = f"event {event.ref} at {event.ts:g}" if event is not None else (
            f"time {self.time:g}")
        top = ", ".join(f"{n} {k:,}" for n, k in sorted(held.items(), key=lambda x: -x[1]) if k)
        raise PartialMatchLimit(
            f"{total:,} partial matches held at {where}, more than max_partial_matches "
            f"{limit:,} ({top}): bound them with a window or raise the limit", held, out)

    def _room_for(self, starts: int) -> bool:
        """Whether a batch in which at most ``starts`` partial matches can start keeps
        within ``max_partial_matches`` (always without a limit): else it goes event by event,
        which stops at the very event that passes the limit."""
        limit = self.max_partial_matches
        if limit is None:
            return True
        self._next_check = -1  # (the kernels make tokens in bulk: count again after them)
        return sum(self.partial_matches().values()) + starts <= limit

    def _window_due(self) -> float:
        """The earliest instant at which a data window expires events or closes a batch
        (a plain loop: called at every event and timer, where a generator's set-up shows)."""
        due = float("inf")
        for r in self.windows:
            d = r.window.due
            if d < due:
                due = d
        return due

    def _window_rows(self, runner: WindowRunner, event: Event) -> list[ComplexEvent]:
        try:
            return runner.process(event)
        except WindowError as e:
            # only input a statement refuses (it names itself) is bad data; anything else
            # (time going back, input after finish) is the engine driven wrongly
            if self.side is None or e.statement is None:
                raise EngineError(str(e)) from None
            self.reject(runner.statement.name, event, e)
            return []

    def reject(self, statement: str, event: Event, error: WindowError) -> None:
        """Put ``event``, which ``statement`` could not take, on the side channel."""
        assert self.side is not None
        self.stats.rejected += 1
        self.side.malformed.append(Rejected(
            f"statement {statement}", f"event {event.ref} at {event.ts:g}", str(error),
            event, error.field))

    def advance_to(self, ts: float, out: list[ComplexEvent] | None = None) -> list[ComplexEvent]:
        """Let time pass up to ``ts`` (before any event at ``ts``): fire the pattern timers
        due before such an event (``TimerQueue.due_before``: VEPL deadlines < ts, Esper timers
        <= ts) and process data-window expiries and batch closes at instants <= ts, in time
        order; at one instant the window updates first, then Esper's timers, then (after the
        events of that instant) VEPL deadlines (docs/windows.md), so the order never depends
        on whether an event arrives then."""
        out = [] if out is None else out
        before = install_sink(self.host.failures)
        try:
            self._advance(ts, out)
            if self.host.failures:
                self._report(out)
        finally:
            install_sink(before)
        return out

    def _advance(self, ts: float, out: list[ComplexEvent]) -> None:
        """:meth:`advance_to` (the failure sink installed by the caller)."""
        host = self.host
        if ts == float("inf"):
            host.stopped = True  # the input has ended: pattern clocks do not start again
        timers = host.timers
        windows = self.windows
        while True:
            due = self._window_due() if windows else float("inf")
            if timers.due_before(ts) and timers.first() < due:  # type: ignore[operator]
                deadline, _, _, mi, token, zone, start = timers.pop()
                host.time = max(host.time, deadline)
                first = len(out)
                emitted: list[ComplexEvent] = []
                self.matchers[mi].on_deadline(token, zone, start, emitted.append)
            elif due <= ts and due != float("inf"):
                host.time = max(host.time, due)
                first = len(out)
                emitted = []
                for r in windows:  # (each at its own instant: equal dues may be 15 and
                    if r.window.due == due:  # 15.0, and a window's clock keeps its own)
                        emitted.extend(r.advance_to(r.window.due))
            else:
                break
            for ce in emitted:
                self._record(ce, out)
                self._cascade(ce, out)
            host.fire(None, out[first:])
            if host.pending:
                host.drain(out)
            if host.counters.token > self._next_check:  # (a pattern's clock starts instances)
                self._bound(None, out)
        for m in self._skipping:  # (idle timers of pairs' completed instances: the clock)
            sk = m.skipped
            if sk and sk[0] <= ts:  # (Esper's: due at their instant, before its events)
                last = sk.popleft()
                while sk and sk[0] <= ts:
                    last = sk.popleft()
                host.time = max(host.time, last)

    def _record(self, ce: ComplexEvent, out: list[ComplexEvent]) -> None:
        out.append(ce)
        stats = self.host.stats
        stats.complex_events += 1
        by = stats.by_pattern
        by[ce.type] = by.get(ce.type, 0) + 1

    def _cascade(self, first: ComplexEvent, out: list[ComplexEvent]) -> None:
        queue = deque([first])
        n = 0
        while queue:
            ce = queue.popleft()
            n += 1
            if n > self.host.max_cascade:
                raise EngineError(f"more than {self.host.max_cascade} complex events from one "
                                  "event")
            emitted: list[ComplexEvent] = []
            for take in self._derived.get(ce.type, ()):
                take(ce, emitted.append)
            for r in self._window_subs.get(ce.type, ()):
                emitted.extend(self._window_rows(r, ce))
            for nxt in emitted:
                self._record(nxt, out)
                queue.append(nxt)

    def process_batch(self, events: Sequence[Event]) -> list[ComplexEvent]:
        """Feed many time-ordered events at once; the same result as ``process`` on each.

        When every pattern is a keyed sequence under chronicle (the gesture pattern; also with
        filters on the events' own fields, a type at several stages and a window over the
        whole sequence, runtime.shapes.chain_of), under immediate or strict
        (runtime.shapes.context_chain_of) or under unrestricted
        (runtime.shapes.unrestricted_chain_of), or every pattern is Esper's
        ``every a = A(f) -> b = B(g, key) [within Δ]`` (the motorbike Crash), the batch is
        matched column-wise (cepflow.runtime.kernels); otherwise the events are processed one by
        one. Rules fire in the same order as with ``process``; events that rule actions emit
        are processed after the batch. A batch in which a filter fails on some row goes event
        by event, as does every batch with ``on_error="fail"`` (see the module docstring).
        """
        out: list[ComplexEvent] = []
        if self._ending:  # (kernels.over: the patterns that ended, skipped by stepped rows)
            skip_over(self)
        before = install_sink(self.host.failures)
        try:
            starts = self._starts
            kernels = (self.trace is None and self.on_error != "fail"
                       and self._room_for(sum(starts.get(e.type, 0) for e in events)
                                          if self.max_partial_matches is not None else 0))
            if self._pairs is not None and kernels:
                found = process_esper_batch(self, self._pairs, events)
                if found is not None:
                    if self.host.failures:
                        self._report(found)
                    return found
            if self._timer_ends is not None and kernels:
                found = process_timer_end_batch(self, self._timer_ends, events)
                if found is not None:
                    if self.host.failures:  # (of events rule actions emitted)
                        self._report(found)
                    return found
            if self._chains is not None and kernels:
                try:
                    out = process_batch(self, self._chains, events)
                except Declined:
                    pass
                else:
                    if self.host.failures:
                        self._report(out)
                    return out
            if (self._split is not None and kernels and not self.host.pending
                    and self.max_partial_matches is None):
                found = process_split(self, self._split, events)
                if found is not None:
                    return found
            self._one_by_one(events, out)
            return out
        finally:
            install_sink(before)

    @property
    def columnar(self) -> bool:
        """Whether :meth:`process_columns` applies: every pattern is a keyed sequence
        (the batch path, runtime.shapes.chain_of), every pattern is Esper's pair or chain
        (runtime.shapes.esper_pair_of), or the program splits (runtime/kernels/split.py: no
        rule has an action, no max_partial_matches); no trace is kept and no rule has a
        registered action (a rule then only counts its firings, so no complex event needs to
        be handed to one)."""
        return ((self._chains is not None or self._pairs is not None
                 or self._timer_ends is not None
                 or (self._split is not None and self.max_partial_matches is None))
                and self.trace is None and self.on_error != "fail"
                and not any(r.action in self.actions for r in self.program.rules if r.action))

    def process_columns(self, rows: Rows) -> MatchTable:
        """Feed a time-ordered batch of columns (a :class:`cepflow.runtime.rows.Rows`, such
        as the Spark pipeline's Arrow batches) when :attr:`columnar` holds. The complex events
        come back column-wise (:class:`cepflow.runtime.rows.MatchTable`; ``complex_events()``
        makes the objects); Python events are made only for the rows in complex events or
        partial matches. The same matches, ids, state and statistics as :meth:`process`.
        Raises :class:`~cepflow.runtime.kernels.Declined`, having changed nothing, when a filter
        fails on some row or (Esper pairs) a key value cannot be coded exactly: feed the batch
        as events then (:meth:`process_batch`)."""
        if not self.columnar:
            raise EngineError("process_columns needs keyed sequences, Esper pairs or a split "
                              "program, no trace, no registered rule action and on_error=skip "
                              "(see Engine.columnar)")
        if self.max_partial_matches is not None:
            per_code = np.array([self._starts.get(t, 0) for t in rows.type_names], np.int64)
            if not self._room_for(int(per_code[rows.codes].sum()) if rows.n else 0):
                raise Declined("the batch could pass max_partial_matches: event by event")
        if self._ending:  # (kernels.over)
            skip_over(self)
        before = install_sink(self.host.failures)
        try:
            if self._split is not None:
                table = (None if self.host.pending
                         else split_columns(self, self._split, rows))
                if table is None:
                    raise Declined("a batch the split's kernels cannot take: event by event")
                return table
            if self._pairs is not None:
                table = process_esper_columns(self, self._pairs, rows)
                if table is None:
                    raise Declined("a key value the pair kernel cannot code: event by event")
                return table
            if self._timer_ends is not None:
                table = process_timer_end_columns(self, self._timer_ends, rows)
                if table is None:
                    raise Declined("a batch the timer-end route declines: event by event")
                return table
            return process_columns(self, self._chains, rows)  # type: ignore[arg-type]
        finally:
            install_sink(before)

    def run(self, events: Iterable[Event], batch_size: int = 1 << 18) -> Iterator[ComplexEvent]:
        """Process a time-ordered stream lazily, yielding complex events as they are detected
        (in batches of ``batch_size`` events when the batch path applies)."""
        # (a batch's matches handed out by one C-level iterator over its list, not resumed
        # generator by generator: a large batch hands out 100,000 of them)
        return chain.from_iterable(self._detected(events, batch_size))

    def _detected(self, events: Iterable[Event], batch_size: int
                  ) -> Iterator[list[ComplexEvent]]:
        """:meth:`run`'s complex events, a list per batch (lazily: nothing runs before the
        first is asked for)."""
        if ((self._chains is None and self._pairs is None and self._split is None
             and self._timer_ends is None)
                or self.trace is not None or self.on_error == "fail"):
            it = iter(events)
            while True:
                chunk_out: list[ComplexEvent] = []
                failed: RunStopped | None = None
                with gc_paused():
                    n = 0
                    before = install_sink(self.host.failures)
                    try:
                        for e in it:
                            if not n % EVERY and self._ending:  # (kernels.over)
                                skip_over(self)
                            self._feed(e, chunk_out)
                            n += 1
                            if n >= batch_size:
                                break
                    except RunStopped as err:
                        failed = err
                    finally:
                        install_sink(before)
                yield chunk_out  # (what was detected up to a failure, then the failure)
                if failed is not None:
                    failed.complex_events = []  # (delivered)
                    raise failed
                if n < batch_size:
                    return
        it = iter(events)
        while True:
            with gc_paused():  # (a reader making the batch's events: see gc_paused)
                chunk = list(islice(it, batch_size))
            if not chunk:
                return
            yield self.process_batch(chunk)
            if len(chunk) < batch_size:
                return

    def finish(self, close_windows: bool = False) -> list[ComplexEvent]:
        """End of input. With ``close_windows`` time runs out: pending timers fire."""
        return self.advance_to(float("inf")) if close_windows else []

    def next_deadline(self) -> float | None:
        """The earliest pending window deadline (it may have become moot), or None."""
        return self.host.timers.first()

    def missing_actions(self) -> list[tuple[str, str]]:
        """(rule, action) pairs whose action is not registered (they fire without effect)."""
        return [(r.name, r.action) for r in self.program.rules
                if r.action is not None and r.action not in self.actions]

    def partial_matches(self) -> dict[str, int]:
        return {m.name: m.count() for m in self.matchers}

    def clock_state(self) -> dict[str, Any] | None:
        """The statement start and the intervals under way of the patterns that begin with
        ``timer:interval``, as JSON data (None without such patterns or one with Esper's
        guard at its top: Engine.reads_start); see restore_clocks."""
        if not self.reads_start:
            return None
        return {"start": self.statement_start, "stopped": self.stopped,
                "intervals": {m.name: m.clock_start for m in self._clocks}}

    def restore_clocks(self, state: Mapping[str, Any] | None) -> None:
        """Resume the clocks saved by :meth:`clock_state` (a fresh engine, same program):
        an interval under way gets its timer again."""
        if not state:
            return
        # the saved intervals replace any an explicit start began
        self.host.timers.keep(lambda h: h[4] != CLOCK_TOKEN)
        for m in self._clocks:
            m.clock_start = None
        self.statement_start = state.get("start")
        by_name = {m.name: m for m in self._clocks}
        for name, begun in state.get("intervals", {}).items():
            m = by_name.get(name)
            if m is None:
                raise EngineError(f"saved clock state names an unknown pattern '{name}'")
            if begun is not None:
                m.start_clock(begun)
        # (a state saved after the input ended has no interval under way)
        self.host.stopped = bool(state.get("stopped"))


def _no_deadline(token_id: int, z: int, start: float, emit: Any) -> None:
    """A replayed matcher's timer (Engine.replaying): its plan already ended its instances."""



def _has_expressions(program: Program) -> bool:
    """Whether ``program`` has compiled expressions that can fail (filters, select lists,
    distinct keys, window statements), which report failures to the sink the engine installs;
    a select list of variables (``select a.key as key``) cannot fail and needs none."""
    if program.windows:
        return True
    for a in program.automata:
        forbidden = [f.position for m in a.forbids.values() for fs in m.values() for f in fs]
        clock = a.clock.forbids if a.clock is not None else []
        exprs = [*(a.select or ()), *(a.distinct or ()),
                 *(p.filter for p in [*a.positions, *forbidden, *clock] if p.filter is not None)]
        if any(can_fail(f) for f in exprs):
            return True
    return False


def _event_location(event: Event | None, now: float) -> str:
    """Where an error record's event is: ``event <ref> at <ts>``, a complex event by its match
    number, or the engine's time when the expression read no event."""
    if event is None:
        return f"at {now:g}"
    if isinstance(event, ComplexEvent):
        return f"match {event.match_id} of {event.type} at {event.ts:g}"
    return f"event {event.ref} at {event.ts:g}"


def run_patterns(program: Program, events: Iterable[Event], **kw: Any) -> list[ComplexEvent]:
    """Convenience: all complex events of ``program`` over ``events``."""
    eng = Engine(program, **kw)
    out = list(eng.run(events))
    out.extend(eng.finish())
    return out
