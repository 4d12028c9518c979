"""A program split per statement: the patterns that fit a column kernel run column-wise over a
batch while the rest of the program — other patterns, data-window statements, patterns over
derived events, rules — runs per event, fed the kernel patterns' matches in the order and with
the ids the per-event engine gives them (docs/architecture.md, "The program split").

The kernel patterns (``Engine._split``: the pair kernel's shapes — single stages, pairs with or
without a key and with guards on the first stage's fields, keyed chains — and the restart
kernel's ``every (a -> b)`` if its select list cannot fail, the and, consecutive and each
(kernels.each) kernels', and the chain kernel's VEPL chains, with or without a window
(kernels.chain.plan_chain), whose output only planned patterns read, reading input types no
statement produces) are planned over the whole batch first (kernels.pair, kernels.restart: the rows
that open instances, which complete where, with their complex events) — nothing changes yet,
and a filter, guard or select list failing on a row declines the batch.
Then the engine steps, one by one, only the rows something else must see: a row of a type
another pattern, a window statement or a rule reads, a row where a kernel pattern completes a
match something reads (the others are recorded in bulk, in order, with their ids), and a row
before which a timer or window instant is due. There the kernel pattern's step is a
replay (Engine.replaying): it takes the next token id if the row opens one of its instances,
and emits the matches planned at that row with the next match ids. The rows in between are
numbered, counted and, where they open instances, given token ids in one step each. Last, the
kernel patterns keep their open instances (as the pair kernel leaves them) with the token ids
the replay gave, and their timers. Their own timers do nothing during the batch: an Esper
pair's deadline only ends instances, which the plan did.

Window statements over the input of the forms kernels.window_block covers are planned over the
batch too (their rows and boundaries, and their runner's state at the end), and so are the
single-stage patterns over their rows and the time batches over those (kernels.cascade): during
the loop each stands in for its runner or its matcher's cascade step (Engine.replaying), so
only their boundaries, and rows something unplanned reads, are stepped — and not even the
boundaries of a time batch nothing reads: its rows are recorded in bulk with the matches
nothing reads, before the row at which the engine would close them (a row stepped for another
reason closes its own through the engine: WindowBlock.expose).
Esper pairs and chains and VEPL chains over the kernel patterns' matches are planned over the
derived stream (kernels.cascade.plan_higher), so neither those matches' rows nor their own input
rows are stepped; their instances take token ids in the engine's order at a row (input step,
then cascade: _Replay's ``keys``). So are windows over a kernel pattern's matches
(kernels.cascade.plan_windows_over); their rows, and the matches of a pattern whose last stage
reads a kernel pattern's output (alone or beside input types: those at that match), come in
that match's cascade: ranked per match (``subs``).

The batch is a list of events (:func:`process_split`) or any column source
(:func:`split_columns`, Engine.process_columns: the file job's Arrow batches), of which events
are made only for the rows stepped, the rows of the kernels' matches and the instances left
open; such a source is numbered before the plans make its events.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Sequence
from functools import partial
from itertools import chain, repeat
from operator import attrgetter
from typing import Any

import numpy as np

from cepflow.compiler.evaluator import EvaluationError, can_fail
from cepflow.events.event import ComplexEvent, Event
from cepflow.runtime.collector import gc_paused
from cepflow.runtime.kernels.cascade import (
    Derived,
    Higher,
    Over,
    cascade_fits,
    higher_candidates,
    plan_cascade,
    plan_higher,
    plan_windows_over,
    planned_readers,
    rows_candidates,
)
from cepflow.runtime.kernels.chain import drop_passed_timers, plan_chain, split_chain
from cepflow.runtime.kernels.column_blocks import ColumnBlocks, Deferred
from cepflow.runtime.kernels.conj import plan_and
from cepflow.runtime.kernels.consec import plan_consec
from cepflow.runtime.kernels.each import plan_each
from cepflow.runtime.kernels.frame import Declined, check_order, declined_on_failure
from cepflow.runtime.kernels.pair import (
    leave_open,
    one_stage_matches,
    pair_matches,
    pair_rows,
    reschedule,
    split_pair,
)
from cepflow.runtime.kernels.restart import Plan, plan_restart
from cepflow.runtime.kernels.restarted_and import plan_restarted_and
from cepflow.runtime.kernels.timer_end import SplitTimers, SplitTimerSet, TimerEnd, plan_split
from cepflow.runtime.kernels.whole import plan_whole
from cepflow.runtime.kernels.window_block import WindowBlock, plan_window, window_kernels
from cepflow.runtime.rows import (
    EventRows,
    MatchTable,
    Rows,
    TypeColumns,
    distinct,
    number_events,
)
from cepflow.runtime.shapes import esper_each_of, esper_whole_of
from cepflow.runtime.timers import fired_before
from cepflow.runtime.tokens import PendingRows

_SEQ = attrgetter("seq")


def split_kernels(engine: Any) -> list[Any] | None:
    """The patterns of ``engine`` a split batch runs column-wise (see the module docstring),
    in engine order, or None when the split does not apply: no such pattern, or something
    couples every event to the per-event order (patterns that see every event, rule actions,
    which may emit events of any type)."""
    program = engine.program
    if engine.noise or any(r.action for r in program.rules):
        return None
    produced = {a.name for a in program.automata} | {w.name for w in program.windows}
    # (a pair's select list is evaluated when the batch is planned, and a failure there
    # declines the batch: _plan_pair)
    chosen = [m for m in engine.matchers
              if (split_pair(m) is not None or m.pattern.restart is not None
                  or m.pattern.consec is not None or m.pattern.esper_and is not None
                  or split_chain(m) is not None or esper_each_of(m.pattern) is not None
                  or esper_whole_of(m.pattern) is not None)
              and not m.pattern.types & produced
              and (m.pattern.pair is not None
                   or not any(can_fail(f) for f in m.pattern.auto.select or ()))]
    # (EPL's guard restarted with the and, kernels.restarted_and: its instances take token ids
    # at its clock's restarts, between rows — ahead of the ids taken at the next row, where
    # nothing else takes one as time passes: _restarts_alone)
    chosen = [m for m in chosen if not _clocked(m) or (_restarts_alone(engine, m)
                                                      and not _all_stepped(engine, m, chosen))]
    chosen = _chains_read_in_plan(engine, chosen)
    chosen = _with_timer_end(engine, chosen, produced)
    if chosen:
        return chosen
    # window statements over the input split on their own (kernels.window_block) where that
    # spares per-event steps: a window whose rows come at its arrivals (a length window,
    # a length batch, a time window with a row per event), or whose rows
    # nothing reads (on expiry too, recorded in bulk: 2.6-3.2x on Engine.run alone,
    # benchmarks/README.md "pattern_shapes.py"), or a time batch whose rows nothing reads (its
    # boundaries are recorded in bulk), whose type nothing but such statements reads (the
    # instants of a time batch or expiry something reads are stepped rows, which cost more than
    # the adds when a batch holds few rows: left per event)
    # — or whose rows only patterns planned over them read (kernels.cascade.rows_candidates:
    # then none of its rows or instants is stepped for them)
    blocks = [engine.windows[i] for i in window_kernels(engine)]
    ids = {id(r) for r in blocks}
    over = {id(m) for m in rows_candidates(engine, set(), {r.statement.name for r in blocks})}
    alone = [r for r in blocks
             if (r.statement.window.kind in ("length", "length_batch")
                 or (r.statement.window.kind == "time" and r.plan.mode == "event")
                 or not engine.consumed(r.statement.name)
                 or _read_in_plan(engine, r.statement.name, over))
             and not engine.subs_input.get(r.statement.input_type)
             and not engine.host.rules.triggers(r.statement.input_type)
             and all(id(o) in ids for o in engine._window_subs.get(r.statement.input_type, ()))]
    return [] if alone else None


def _restarted(m: Any) -> bool:
    """Is ``m`` EPL's and under a guard restarted with it (kernels.restarted_and)?"""
    sh = m.pattern.esper_and
    return sh is not None and sh.clocked is not None


def _clocked(m: Any) -> bool:
    """Does the kernel pattern ``m`` take token ids as time passes, its clock's (kernels.
    restarted_and, kernels.whole)?"""
    return _restarted(m) or esper_whole_of(m.pattern) is not None


def _ahead(m: Any, plan: Plan) -> bool | np.ndarray:
    """Which of kernel pattern ``m``'s plan's instances take their ids ahead of their rows
    (_Replay's ``ahead``): all of a restarted and's, a whole guard's beginning (the first,
    at its first row, when it begins in the batch: kernels.whole's commit says so)."""
    if _restarted(m):
        return True
    return getattr(plan[3], "ahead", False)


def _restarts_alone(engine: Any, m: Any) -> bool:
    """Whether the clocked kernel pattern ``m`` (kernels.restarted_and, kernels.whole) is the
    only part of the program that takes token ids or keeps saved timers as time passes, so
    that its clock's ids go
    right before the ids of the row after them (_Replay's ``ahead``). **Decision:** then every
    other pattern takes its ids at input rows and in their cascades only: none has a clock
    or a timer that completes a match (Matcher.timers_saved: their timers' order with the
    restarts', which the saved queue keeps, is lost where the kernel asks for its timers at the
    batch's end) or a timer in its middle, and none reads complex events that may come out
    while time passes (transitively: of such patterns, of ``A -> (X or not Y)``'s reports,
    of windows other than length windows). Otherwise the pattern runs per event."""
    others = [o for o in engine.matchers if o is not m]
    if any(o.timers_saved or o.pattern.timer_steps for o in others):
        return False
    timed = {o.name for o in others if o.pattern.auto.reports}
    timed |= {r.statement.name for r in engine.windows
              if r.statement.window.kind not in ("length", "length_batch")}
    while True:  # (what reads such events may put them out as time passes too)
        more = ({o.name for o in others if o.pattern.types & timed}
                | {r.statement.name for r in engine.windows if r.statement.input_type in timed})
        if more <= timed:
            break
        timed |= more
    return not any(o.pattern.types & timed for o in others)


def _all_stepped(engine: Any, m: Any, chosen: list[Any]) -> bool:
    """Whether every input type kernel pattern ``m`` reads is read by a part of the program
    the split leaves per event (a pattern not among the candidates ``chosen``, a window
    statement, a rule), so that each of its rows would be stepped anyway. **Decision:** a
    clocked kernel (kernels.restarted_and, kernels.whole) is not taken then — the replay
    costs more than its per-event step spares (benchmarks/pattern_shapes.py
    ``split_and_all``: 0.8x per event with it)."""
    mine = {id(k) for k in chosen}
    return all(any(id(o) not in mine for o in engine.subs_input.get(t, ()))
               or engine._window_subs.get(t) or engine.host.rules.triggers(t)
               for t in m.pattern.types)


def timer_end_shape(engine: Any, m: Any) -> TimerEnd | None:
    """The timer-end shape (kernels.timer_end) of matcher ``m`` of ``engine``, or None."""
    shapes = engine._timer_end_shapes
    return shapes[m.slot] if shapes else None


def _with_timer_end(engine: Any, chosen: list[Any], produced: set[str]) -> list[Any]:
    """``chosen`` with the program's timer-end patterns (Esper's missing event, the intervals
    after ``b`` and right after ``a``: kernels.timer_end) in engine order, when their plans are
    exact beside the rest: their timers' matches come between rows, so **decision — taken only
    when nothing but the output reads their matches** (no pattern, window statement or rule:
    they are recorded in bulk, or fired by the engine at a stepped row) **and when no pattern
    the split leaves per event has timers** (a window or deadline: its timers' scheduling
    order with these patterns' would be lost — those of the kernel patterns only end
    instances, and the window statements' instants are ordered by time, which the records
    keep). Several timer-end patterns are taken together (since session 36, branch
    ``etimer2``): their timers interleave in the engine's order, (deadline, scheduling order)
    across statements (timer_end.SplitTimerSet); one the split cannot take (read, over a
    produced type) runs per event and has timers, so then none is taken."""
    ends = [m for m in engine.matchers if timer_end_shape(engine, m) is not None]
    if not ends or any(m.pattern.pair is not None for m in ends):
        return chosen
    mine = {id(k) for k in chosen} | {id(m) for m in ends}
    if (any(m.pattern.types & produced or engine.consumed(m.name) for m in ends)
            or any(id(o) not in mine and (o.pattern.auto.zones or o.pattern.clock is not None)
                   for o in engine.matchers)):
        return chosen
    return [k for k in engine.matchers if id(k) in mine]


def _read_in_plan(engine: Any, name: str, planned: set[int]) -> bool:
    """Whether only patterns a batch plans (their ids ``planned``) read the complex events
    ``name`` (no rule, no window statement)."""
    return (engine._readers is not None and not engine.host.rules.triggers(name)
            and not engine._window_subs.get(name)
            and all(id(m) in planned for m in engine.subs_complex.get(name, ())))


def _chains_read_in_plan(engine: Any, chosen: list[Any]) -> list[Any]:
    """``chosen`` without the chain patterns (kernels.chain.split_chain) whose matches a
    pattern reads that the batch does not plan over them (kernels.cascade.higher_candidates)
    or a window statement reads. **Decision:** such a reader's rows and the chain's
    completions would be stepped, and a chain's own per-event step (the row step) is fast
    enough that the kernel does not pay for them (ho_or, ``Q: P(x) OR C(x, _)`` per event
    over P's output, before Q was planned: 164k events/s split against 304k per event) — the
    chain stays per event then. Dropping one may make a reader of another unplanned: repeated
    until none changes."""
    while True:
        planned = {id(m) for m in higher_candidates(engine, chosen)}
        drop = {id(m) for m in chosen if split_chain(m) is not None and (
            engine._window_subs.get(m.name)
            or any(id(r) not in planned for r in engine.subs_complex.get(m.name, ())))}
        if not drop:
            return chosen
        chosen = [m for m in chosen if id(m) not in drop]



def process_split(engine: Any, kernels: list[Any], events: Sequence[Event]
                  ) -> list[ComplexEvent] | None:
    """Feed ``events`` (time-ordered) to ``engine``, the patterns ``kernels`` column-wise and
    everything else per event; the complex events in detection order. None, having changed
    nothing, when the kernel patterns cannot take the batch (a key they cannot code, a filter
    failing on a row): feed it event by event then."""
    with gc_paused():
        found = _split(engine, kernels, EventRows(events), columns=False)
        return None if found is None else found[0]


def split_columns(engine: Any, kernels: list[Any], rows: Rows) -> MatchTable | None:
    """:func:`process_split` over a column source (:meth:`Engine.process_columns`, such as an
    Arrow batch of the file job): Python events are made only for the rows the per-event part
    steps, the rows of the kernels' matches and the instances left open; the complex events
    as the pair and chain plans' column blocks and one
    :class:`~cepflow.runtime.rows.ObjectMatches` block of the others
    (kernels.column_blocks). None, having changed nothing, when the kernel patterns cannot
    take the batch."""
    program = engine.program
    # (the kernel patterns and window statements whose output only the output reads)
    names = [m.name for m in kernels] + [engine.windows[i].statement.name
                                         for i in window_kernels(engine)]
    blocks = ColumnBlocks(rows, {a.name for a in program.automata}
                          | {w.name for w in program.windows},
                          frozenset(n for n in names if not engine.consumed(n)),
                          planned_readers(engine, window_kernels(engine)))
    with gc_paused():
        found = _split(engine, kernels, rows, columns=True, blocks=blocks)
    if found is None:
        return None
    return blocks.table(*found, rows)


def _split(engine: Any, kernels: list[Any], src: Rows, columns: bool,
           blocks: ColumnBlocks | None = None
           ) -> tuple[list[ComplexEvent], list[int]] | None:
    """The split of one batch: its complex events and the row each was detected at. With
    ``columns`` the rows are numbered before the plans make events of them (a column source
    makes its events with their numbers; ``Rows.number``), else one step at a time as the
    per-event engine numbers them. ``blocks`` collects the pair plans' matches as column
    blocks (kernels.column_blocks)."""
    if not src.n:
        return [], []
    check_order(engine, src)
    src.check(engine)
    counters = engine.host.counters
    before = counters.snapshot()
    if columns:
        src.number(engine)
    cols = TypeColumns(src, engine.program.schemas)
    plan_pair = _plan_pair if blocks is None else partial(_plan_pair, blocks=blocks)
    timers: list[tuple[int, SplitTimers]] = []
    try:
        plans = []
        for m in kernels:
            sh = timer_end_shape(engine, m)
            if sh is not None and m.pattern.pair is None:
                te = plan_split(m, sh, cols, engine.host)
                if te is not None:
                    timers.append((len(plans), te))
                plans.append(None if te is None else te.plan)
                continue
            plans.append(plan_pair(m, cols, engine.host.arity) if m.pattern.pair is not None
                         else plan_chain(m, src, engine.program.schemas, blocks=blocks)
                         if split_chain(m) is not None
                         else plan_restart(m, cols) if m.pattern.restart is not None
                         else plan_restarted_and(m, cols) if _restarted(m)
                         else plan_each(m, each, cols)
                         if (each := esper_each_of(m.pattern)) is not None
                         else plan_whole(m, whole, cols)
                         if (whole := esper_whole_of(m.pattern)) is not None
                         else plan_and(m, cols) if m.pattern.esper_and is not None
                         else plan_consec(m, cols))
    except Declined:
        plans = [None]
    timer_set = (SplitTimerSet([te for _k, te in timers], engine.host)
                 if timers and not any(p is None for p in plans) else None)
    windows: dict[int, WindowBlock] = {}
    if not any(p is None for p in plans):
        for i in window_kernels(engine):
            b = plan_window(engine, engine.windows[i], cols, src, unread=blocks is not None
                            and blocks.unmade_rows(engine.windows[i].statement.name))
            if b is not None:
                windows[i] = b
                if blocks is not None:
                    blocks.add_window(b, src)
    if any(p is None for p in plans) or not (plans or windows):
        if columns:
            counters.rewind(before)
            src.unnumber()
        return None
    derived = plan_cascade(engine, windows, src.ts, src.last_ts(), plan_pair, src)
    higher = plan_higher(engine, kernels, plans, src, cols, plan_pair, windows, blocks)
    over = plan_windows_over(engine, kernels, plans, src, {**windows, **derived.batches})
    if not cascade_fits(engine, src.n, over, higher):  # (left per event: the engine stops)
        over, higher = [], [h for h in higher if h.last is None]
    return _run(engine, kernels, plans, src, columns, windows, derived,  # type: ignore[arg-type]
                higher, over, timer_set)


def _plan_pair(m: Any, cols: TypeColumns, arity: dict[str, int], eager: bool = False,
               end: tuple[float, int] | None = None, blocks: ColumnBlocks | None = None,
               read_as_columns: bool = False) -> Plan | None:
    """The pair kernel's plan of ``m`` over the batch (kernels.pair), as the split takes it;
    with ``eager`` a single stage's matches are made with their parameters (a consumer reads
    them all: kernels.pair.one_stage_matches); ``end`` as kernels.pair.pair_rows takes it
    (rows that are a derived stream: kernels.cascade.plan_higher); ``blocks`` collects its
    matches as column blocks too (kernels.column_blocks); ``read_as_columns``: its only
    readers read its matches' parameters as columns (kernels.cascade.plan_cascade), so over
    a window block's rows not made its matches are not made either
    (kernels.column_blocks.ColumnBlocks.defer)."""
    pr = m.pattern.pair
    p = pair_rows(m, pr, cols, end)
    if p is None:
        return None
    # (an inner every's matches: one per fork, kernels.inner_every.match_plan)
    made = p if p.get("forked") is None else p["forked"]
    inst = np.flatnonzero(made["match"])
    at = made["end_row"][inst]
    o = np.lexsort((made["age"][inst], at))
    inst, at = inst[o], at[o]

    def rows_of(q: np.ndarray) -> np.ndarray:  # (the rows of instances q's events)
        used = distinct(made["taken"][:, q].ravel())
        return used[used >= 0]

    def events_of(rows: np.ndarray) -> Any:  # (a window block's rows not made: in one go)
        ev = cols.events(rows)
        return ev.made_at(rows) if isinstance(ev, Deferred) else ev

    # (matches nothing reads, one block of rows: not made — kernels.column_blocks.Deferred)
    out: Any = None if blocks is None or eager or made is not p else blocks.defer(
        m, made, inst, cols, lambda i: pair_matches(m, made, inst[i],
                                                        events_of(rows_of(inst[i])), arity),
        read_as_columns)
    if isinstance(cols.src, EventRows):
        events: Any = cols.src.events
        if isinstance(events, Deferred) and out is None:
            want = distinct(np.concatenate([made["taken"][:, made["match"]].ravel(),
                                            p["taken"][:, p["alive"]].ravel()]))
            events = events_of(want[want >= 0])
    else:  # (a column source: the events of the matches and of the instances left open)
        used = distinct(np.concatenate([made["taken"][:, made["match"]].ravel()
                                        if out is None else np.zeros(0, np.int64),
                                        p["taken"][:, p["alive"]].ravel()]))
        events = cols.events(used[used >= 0])
    declined = "a select list failed on a match: event by event"
    try:
        with declined_on_failure(declined):
            deferred = out is not None
            if out is None and eager:
                out = one_stage_matches(m, made["end_row"][inst], cols, arity)
            if out is None:
                out = pair_matches(m, made, inst, events, arity)
    except EvaluationError:  # (no sink installed)
        raise Declined(declined) from None
    if blocks is not None and len(inst) and not deferred:
        blocks.add(m, made, inst, out, cols)
    id_rows, opens = forks_and_starts(None if made is p else at, p["new_rows"])

    def commit(token_ids: np.ndarray) -> None:
        if len(inst):
            m.done = True
        open_ids, open_events = leave_open(m, pr, p, token_ids[opens], events)
        m.pending = PendingRows(open_ids, open_events, pr.first_zone) if open_ids else None

    return id_rows, at, out, commit


def forks_and_starts(forks: np.ndarray | None, starts: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray | slice]:
    """The rows at which a pair plan's pattern takes token ids, ascending, and which of them
    open an instance (its plan's ``starts``; the others are an inner every's ``forks``, each
    taking an id as it completes at once: kernels.inner_every). At one row the pattern forks
    before it opens (Matcher._process_esper, EsperSteps._fork_step), so a fork's id comes
    first there; forks of one row take consecutive ids, which nothing keeps. Without forks
    (None): ``starts``, all of them opening."""
    if forks is None or not len(forks):
        return starts, slice(None)
    rows = np.concatenate([forks, starts]).astype(np.int64)
    kind = np.concatenate([np.zeros(len(forks), np.int64), np.ones(len(starts), np.int64)])
    o = np.argsort(rows * 2 + kind, kind="stable")
    return rows[o], kind[o] == 1


#: the keys _merged sorts as one int64 stay below this
_FITS = 1 << 62
#: a batch looks rows up in lists (_Replay.as_lists) when it steps more than _MANY_STEPS rows
#: and more than one in _STRETCH (the lists cost a pass over every instance opened: motorbike's
#: 420 stepped rows among 100,000 went 5 % slower with them), and then records stretches of up
#: to _SHORT loose matches one by one
_MANY_STEPS, _STRETCH, _SHORT = 64, 16, 32


def _objects(values: list[Any]) -> np.ndarray:
    """``values`` as an object column (to be taken in another order in one C-level pass)."""
    return np.fromiter(values, dtype=object, count=len(values))


def _merged(rows: np.ndarray, late: np.ndarray, when: list[np.ndarray], out_rank: np.ndarray,
            id_rank: np.ndarray, lens: list[int], sub: np.ndarray | None = None
            ) -> tuple[np.ndarray, np.ndarray]:
    """The order of the loose parts' entries (concatenated part after part, each part's
    entries in its own order, of ``lens``) by (row, late, when, out_rank, sub, then each
    part's order) — the output — and each entry's rank by (row, late, when, id_rank, sub,
    then each part's order) — the ids; ``late``, ``when`` (the instants of the parts after the
    first ``len(lens) - len(when)``, 0 for those) and the ranks per part; ``sub`` per entry
    (None: 0), the place of the kernel pattern's match a window row over its output comes
    after (kernels.cascade.plan_windows_over). The keys as one int64 (dense ranks of each),
    sorted stably, which keeps a part's own order among equal keys (as ``lexsort``'s last key
    did); every part's keys ascend, so the sort merges a few runs. ``lexsort`` when they
    would not fit in 63 bits."""
    if sub is None:
        sub = np.zeros(len(rows), np.int64)
    nsub = int(sub.max(initial=0)) + 1
    parts = np.repeat(np.arange(len(lens), dtype=np.int64), lens)
    lead = len(lens) - len(when)
    flat_when = np.concatenate([np.zeros(sum(lens[:lead]), np.float64), *when])
    ko = np.unique(out_rank, return_inverse=True)[1].reshape(-1)[parts]
    ki = np.unique(id_rank, return_inverse=True)[1].reshape(-1)[parts]
    w = np.zeros(len(rows), np.int64)
    if when:  # (the instants' ranks: only theirs tell entries of one row and lateness apart)
        w[sum(lens[:lead]):] = np.unique(flat_when[sum(lens[:lead]):],
                                         return_inverse=True)[1].reshape(-1)
    nw = int(w.max(initial=0)) + 1
    width = len(lens) + 1
    late_e = late[parts]
    rank = np.empty(len(rows), np.int64)
    if (int(rows.max(initial=0)) + 1) * 2 * nw * width * nsub < _FITS:
        base = ((rows * 2 + late_e) * nw + w) * width
        o = np.argsort((base + ko) * nsub + sub, kind="stable")
        if np.array_equal(ko, ki):  # (the ranks order the parts alike: the ids follow o)
            rank[o] = np.arange(len(rows))
        else:
            rank[np.argsort((base + ki) * nsub + sub, kind="stable")] = np.arange(len(rows))
        return o, rank
    j = np.concatenate([np.arange(n, dtype=np.int64) for n in lens])
    by_out, by_id = out_rank[parts], id_rank[parts]
    o = np.lexsort((j, parts, sub, by_out, flat_when, late_e, rows))
    rank[np.lexsort((j, parts, sub, by_id, flat_when, late_e, rows))] = np.arange(len(rows))
    return o, rank


class _Replay:
    """The per-event step of the kernel patterns during a split batch: per pattern, the rows
    that open an instance (their token ids taken in order) and the matches planned per row."""

    def __init__(self, plans: list[Plan], consumed: list[bool],
                 ranks: list[tuple[Any, Any]] | None = None,
                 bounds: list[tuple[Any, ...]] | None = None,
                 keys: list[tuple[Any, Any, int, list[Any] | None]] | None = None,
                 subs: dict[int, np.ndarray] | None = None,
                 ahead: list[bool | np.ndarray] | None = None) -> None:
        self.row = -1
        #: every instance opened in the batch, by (row, pattern): its row, pattern, token id
        rows = np.concatenate([p[0] for p in plans] or [np.zeros(0, np.int64)])
        who = np.concatenate([np.full(len(p[0]), k, np.int64) for k, p in enumerate(plans)]
                             or [np.zeros(0, np.int64)])
        # ``ahead``, per plan: whether its instances take their ids before their row, as time
        # passes (the restarted and's restarts: kernels.restarted_and), or per instance (a
        # mask: kernels.whole's beginning) — at a row, before the instances steps open,
        # whatever the pattern (split_kernels: nothing else takes an id as time passes)
        ahead = ahead if ahead is not None and any(bool(np.any(a)) for a in ahead) else None
        late = (np.ones(len(rows), np.int64) if ahead is None else np.concatenate(
            [np.zeros(0, np.int64)]
            + [np.where(a, 0, 1).astype(np.int64) if isinstance(a, np.ndarray)
               else np.full(len(p[0]), 0 if a else 1, np.int64)
               for p, a in zip(plans, ahead, strict=True)]))
        #: per instance opened (in id order) that a match's cascade opens (``keys``), that
        #: match, by the instance's place (none there: the input step opens it) — only those
        #: places are listed (a list of every place costs a pass over the batch's instances:
        #: motorbike's 340,000 for its 60 Accident instances)
        self.start_obj: dict[int, Any] | None = None
        if keys is None:
            # (by row, then pattern: one stable sort merging the plans' ascending rows)
            order = np.argsort((rows * 2 + late) * max(len(plans), 1) + who, kind="stable")
        else:
            # ``keys``, per plan, where its instances open in the engine's order at a row:
            # (phase: 0 the input step, 1 the cascade; the place of the match whose cascade
            # opens it; the pattern's place in engine order; those matches): by row, phase,
            # match, pattern (patterns over the kernels' output: kernels.cascade.plan_higher)
            lens = [len(p[0]) for p in plans]
            phase, cp = ([np.broadcast_to(np.asarray(k[i], np.int64), (n,))
                          for k, n in zip(keys, lens, strict=True)] for i in (0, 1))
            slot = np.repeat(np.array([k[2] for k in keys], np.int64), lens)
            order = np.lexsort((slot, np.concatenate([np.zeros(0, np.int64), *cp]),
                                np.concatenate([np.zeros(0, np.int64), *phase]), late, rows))
            place = np.empty(len(order), np.int64)
            place[order] = np.arange(len(order), dtype=np.int64)
            ends = np.cumsum([0, *lens]).tolist()
            self.start_obj = {}
            for k, lo, hi in zip(keys, ends, ends[1:], strict=False):
                if k[3] is not None:
                    self.start_obj.update(zip(place[lo:hi].tolist(), k[3], strict=True))
        self.start_rows, self.start_who = rows[order], who[order]
        #: per instance (in id order) whether it takes its id ahead of its row (None: none)
        self.start_ahead = None if ahead is None else (late[order] == 0).tolist()
        self.n_starts = len(order)
        self.ids = np.zeros(len(order), np.int64)
        self.next = 0  # the first instance without an id
        #: per pattern: the rows its complex events complete at, ascending, and those events
        #: (ids to be given; a stepped row looks its own up)
        self.matches: list[tuple[np.ndarray, list[ComplexEvent]]] = []
        #: the same rows as lists, made for a pattern when a stepped row first looks (a batch
        #: that steps no row of 100,000 matches makes none)
        self.at_lists: list[list[int] | None] = [None] * len(plans)
        arrays = []
        #: ``subs``: per plan of a window over a kernel pattern's output, per row (a block's
        #: rows ascend: not sorted below) the place of the match it reads among its pattern's
        #: matches at its input row (kernels.cascade.plan_windows_over); a loose match of any
        #: other plan is ranked by its own place among its plan's at its row
        self.subs = subs or {}
        for _, at, found, _ in plans:
            a = np.asarray(at, np.int64)  # (the kernels' plans give their rows as arrays)
            if len(a) > 1 and bool((a[1:] < a[:-1]).any()):  # (in row order, else as given)
                o = np.argsort(a, kind="stable")
                a = a[o]
                found = list(map(found.__getitem__, o.tolist()))
            self.matches.append((a, found))
            arrays.append(a)
        #: the rows where a match something reads completes (they are stepped)
        self.match_rows = distinct(np.concatenate(
            [np.zeros(0, np.int64), *(a for a, c in zip(arrays, consumed, strict=True) if c)]))
        #: the matches nothing reads, in detection order (row, pattern, age): recorded in
        #: bulk for rows no per-event step sees, with their ids
        #: (the order of plans at one row: ``ranks`` per plan, for ids and for the output;
        #: they differ where a window block's row comes out before the matches of the
        #: patterns reading it, which take their ids after every block's row: kernels.cascade)
        #: ``bounds``: the rows of the time batches nothing reads, per block (its position in
        #: engine.windows, then per row the input row before which its boundary closes, the
        #: boundary's instant, the row): at a row they come before its matches (time passes
        #: first), by instant, then in window order (Engine._advance); the timer-end
        #: patterns' matches (kernels.timer_end.SplitTimerSet.bounds) one rank, a fifth entry
        #: ordering them at an instant
        ranks = ranks or [(k, k) for k in range(len(plans))]
        loose = [k for k, c in enumerate(consumed) if not c and len(plans[k][1])]
        bounds = [b for b in bounds or [] if len(b[3])]
        self.loose_rows = np.zeros(0, np.int64)
        self.loose: list[ComplexEvent | None] = []
        #: the deferred plans among the loose ones (kernels.column_blocks.Deferred) and, per
        #: loose match (in output order), ``(d, place)`` coded as ``d << 32 | place`` for a
        #: deferred plan's (None in ``loose``), -1 for the others
        self.deferred: list[Deferred] = []
        self.loose_ref = np.zeros(0, np.int64)
        #: per loose match (in output order) its part, and each part's type (the statistics)
        self.loose_part = np.zeros(0, np.int64)
        self.part_type: list[str] = []
        self.id_pos = np.zeros(0, np.int64)
        if loose or bounds:
            out_of = {key: i for i, key in enumerate(sorted({r[1] for r in ranks}))}
            id_of = {key: i for i, key in enumerate(sorted({r[0] for r in ranks}))}
            lens = [len(self.matches[k][0]) for k in loose] + [len(b[3]) for b in bounds]
            rows = np.concatenate([arrays[k] for k in loose] + [b[1] for b in bounds])
            # (a deferred plan's matches: None, each noted by its place — _unmade)
            parts_found = [self.matches[k][1] for k in loose]
            self.deferred = [f for f in parts_found if isinstance(f, Deferred)]
            flat = list(chain.from_iterable([*(repeat(None, len(f)) if isinstance(f, Deferred)
                                               else f for f in parts_found),
                                             *(b[3] for b in bounds)]))
            refs = self._refs(parts_found, sum(lens)) if self.deferred else None
            out_rank = np.array([out_of[ranks[k][1]] for k in loose]
                                + [b[0] for b in bounds], np.int64)
            id_rank = np.array([id_of[ranks[k][0]] for k in loose]
                               + [b[0] for b in bounds], np.int64)
            # (kernel plans alone, of distinct ranks, each ascending by row, the ranks for ids
            # ordering them as those for the output: a stable sort by (row, rank) merges them,
            # a plan's matches at one row keeping their order, and the ids follow that order)
            simple = (not bounds and len(set(out_rank.tolist())) == len(loose)
                      and len(set(id_rank.tolist())) == len(loose)
                      and np.argsort(out_rank).tolist() == np.argsort(id_rank).tolist())
            #: per loose match (in output order), its place in the order its ids are given
            self.id_pos = np.arange(len(rows), dtype=np.int64)
            part = np.repeat(np.arange(len(lens), dtype=np.int64), lens)
            self.part_type = [f.type if isinstance(f, Deferred) else f[0].type
                              for f in parts_found] + [b[3][0].type for b in bounds]
            o = None
            if simple and len(loose) == 1:
                self.loose_rows, self.loose = arrays[loose[0]], flat
                self.loose_part = part
            elif simple:
                o = np.argsort(rows * len(out_of) + out_rank[part], kind="stable")
                self.loose_rows = rows[o]
                self.loose = _objects(flat)[o].tolist()
                self.loose_part = part[o]
            else:
                late = np.array([1] * len(loose) + [0] * len(bounds), np.int64)
                sub = None
                # (a match's window rows come right after it: ranked per match; the timer-end
                # patterns' timers at one instant by their places among them, b[4])
                if self.subs or any(len(b) > 4 for b in bounds):
                    sub = np.concatenate([
                        np.zeros(len(arrays[k]), np.int64) if not self.subs
                        else self.subs[k] if k in self.subs
                        else np.arange(len(arrays[k]), dtype=np.int64)
                        - np.searchsorted(arrays[k], arrays[k], side="left") for k in loose]
                        + [b[4] if len(b) > 4 else np.zeros(len(b[3]), np.int64)
                           for b in bounds])
                o, rank = _merged(rows, late, [b[2] for b in bounds], out_rank, id_rank, lens,
                                  sub)
                self.loose_rows = rows[o]
                self.loose = _objects(flat)[o].tolist()
                self.id_pos = rank[o]
                self.loose_part = part[o]
            if refs is not None:
                self.loose_ref = refs if o is None else refs[o]
        self.next_loose = 0
        #: the loose matches' rows, id places and parts and the instances' rows as lists, for
        #: a batch that steps many rows (:meth:`as_lists`)
        self.lists: tuple[list[int], list[int], list[int], list[int]] | None = None

    @staticmethod
    def _refs(parts: list[Any], n: int) -> np.ndarray:
        """Per loose entry (the parts' matches, then the bounds' rows: ``n`` in all) its
        deferred plan and place, coded (``loose_ref``), or -1."""
        refs = np.full(n, -1, np.int64)
        at = d = 0
        for f in parts:
            if isinstance(f, Deferred):
                refs[at:at + len(f)] = (d << 32) + np.arange(len(f), dtype=np.int64)
                d += 1
            at += len(f)
        return refs

    def _note_unmade(self, j: int, k: int, ids: np.ndarray, at: int) -> list[Any]:
        """Note the deferred matches among loose entries ``j:k`` (ids ``ids``; the first at
        output place ``at``) with their plans; the others' ids, for them to be set."""
        ref = self.loose_ref[j:k]
        unmade = ref >= 0
        if not unmade.any():
            return ids.tolist()
        w = np.flatnonzero(unmade)
        # (by deferred plan — one stable sort, then a slice each —, in output order within)
        o = np.argsort(ref[w] >> 32, kind="stable")
        w = w[o]
        who, place = ref[w] >> 32, ref[w] & 0xFFFFFFFF
        cut = np.flatnonzero(np.diff(who)) + 1
        for lo, hi in zip([0, *cut.tolist()], [*cut.tolist(), len(w)], strict=True):
            self.deferred[int(who[lo])].record(place[lo:hi], ids[w[lo:hi]], at + w[lo:hi])
        return ids[~unmade].tolist()

    def as_lists(self) -> None:
        """Look the rows up in Python lists from now on: a batch stepping many rows records
        short stretches in between, where numpy's per-call cost was most of the split's time
        (a stepped row in five: 0.8x per event before)."""
        self.lists = (self.loose_rows.tolist(), self.id_pos.tolist(), self.loose_part.tolist(),
                      self.start_rows.tolist())

    def record_loose(self, row: int, host: Any, out: list[ComplexEvent],
                     at: list[int] | None) -> None:
        """Record the matches nothing reads of the rows before ``row`` not yet recorded, with
        the next match ids, as the per-event engine records a complex event (rows no per-event
        step sees: no other id is given there), in one go; their rows go to ``at`` (None: not
        wanted)."""
        j = self.next_loose
        rows = self.loose_rows
        if j == len(rows) or rows[j] >= row:
            return
        counters, stats = host.counters, host.stats
        if self.lists is not None and not self.deferred:
            # (many stepped rows: the stretches between are short)
            lr, ids, parts = self.lists[:3]
            k = bisect_left(lr, row, j)
            if k - j <= _SHORT:
                found = self.loose[j:k]
                base = counters.match + 1 - j
                for ce, i in zip(found, ids[j:k], strict=True):
                    ce.match_id = i + base
                counters.match += k - j
                out += found
                if at is not None:
                    at += lr[j:k]
                stats.complex_events += k - j
                by_pattern, types = stats.by_pattern, self.part_type
                for p in parts[j:k]:  # (the types in the order first seen, as below)
                    t = types[p]
                    by_pattern[t] = by_pattern.get(t, 0) + 1
                self.next_loose = k
                return
        else:
            k = j + int(np.searchsorted(rows[j:], row, side="left"))
        found = self.loose[j:k] if j or k < len(rows) else self.loose
        ids = self.id_pos[j:k] + (counters.match + 1 - j)
        if self.deferred:
            deque(map(setattr, [ce for ce in found if ce is not None], repeat("match_id"),
                      self._note_unmade(j, k, ids, len(out))), maxlen=0)
        else:
            deque(map(setattr, found, repeat("match_id"), ids.tolist()), maxlen=0)
        counters.match += k - j
        out += found
        if at is not None:
            at += rows[j:k].tolist()
        stats.complex_events += k - j
        by_pattern = stats.by_pattern
        # (counts per type, the types in the order first seen: reports list them so)
        part = self.loose_part[j:k]
        counts = np.bincount(part, minlength=len(self.part_type)).tolist()
        # (the parts present and where each is first: one comparison per part, not a sort)
        seen = np.flatnonzero(counts)
        first = [int(np.argmax(part == p)) for p in seen.tolist()]
        for p in seen[np.argsort(first, kind="stable")].tolist():
            t = self.part_type[p]
            by_pattern[t] = by_pattern.get(t, 0) + counts[p]
        self.next_loose = k

    def skip_loose(self, row: int) -> None:
        """The matches of a stepped row were emitted by its replay: pass over them."""
        j = self.next_loose
        rows = self.loose_rows
        if j < len(rows) and rows[j] <= row:
            self.next_loose = (bisect_right(self.lists[0], row, j) if self.lists is not None
                               else j + int(np.searchsorted(rows[j:], row, side="right")))

    def ids_before(self, row: int, counters: Any) -> None:
        """Token ids for the instances opened at rows before ``row`` (rows no per-event step
        sees: nothing else takes ids there)."""
        k = self.next
        q = (bisect_left(self.lists[3], row, k) if self.lists is not None
             else int(np.searchsorted(self.start_rows, row, side="left")))
        if q > k:
            self.ids[k:q] = np.arange(counters.token + 1, counters.token + 1 + q - k)
            counters.token += q - k
            self.next = q

    def ids_ahead(self, row: int, counters: Any) -> None:
        """Token ids for the instances that take theirs before ``row`` as time passes (the
        restarts that come before it: ``ahead``), ahead of the row's own step."""
        ahead = self.start_ahead
        if ahead is None:
            return
        j = self.next
        while j < self.n_starts and ahead[j] and int(self.start_rows[j]) == row:
            counters.token += 1
            self.ids[j] = counters.token
            j += 1
        self.next = j

    def _span(self, k: int) -> tuple[int, int]:
        """Where plan ``k``'s complex events at the current row are in its list."""
        at = self.at_lists[k]
        if at is None:
            at = self.at_lists[k] = self.matches[k][0].tolist()
        r = self.row
        lo = bisect_left(at, r)
        return (lo, bisect_right(at, r, lo)) if lo < len(at) and at[lo] == r else (lo, lo)

    def at_row(self, k: int) -> list[ComplexEvent]:
        """Plan ``k``'s complex events at the current row."""
        lo, hi = self._span(k)
        return self.matches[k][1][lo:hi] if hi > lo else []

    def step(self, k: int, counters: Any) -> Any:
        """Pattern ``k``'s step for the current row: the next token id if the row opens one of
        its instances, then its matches at the row with the next match ids."""

        def replay(e: Event, emit: Any) -> None:
            r = self.row
            j = self.next
            # (numpy scalars: only the stepped rows look, fewer than the starts to convert)
            # (an inner every may take several: its forks at the row, then its start)
            while (j < self.n_starts and self.start_rows[j] == r and self.start_who[j] == k
                    and (self.start_obj is None or self.start_obj.get(j) is None)):
                counters.token += 1
                self.ids[j] = counters.token
                j += 1
                self.next = j
            for ce in self.at_row(k):
                counters.match += 1
                ce.match_id = counters.match
                emit(ce)
        return replay

    def cascade_step(self, k: int, counters: Any, kk: int | None = None,
                     km: int | None = None) -> Any:
        """Pattern ``k``'s step for a kernel pattern's match in the cascade (a pattern over
        their output: kernels.cascade.plan_higher): the next token id if that match opens one
        of its instances, then — when some of its matches complete in the cascade of kernel
        plan ``kk``'s matches, plan ``km`` (kernels.cascade.Higher.in_cascade) — those
        completing at that match, with the next match ids."""

        def replay(e: Event, emit: Any) -> None:
            j = self.next
            if (j < self.n_starts and self.start_obj is not None and self.start_obj.get(j) is e
                    and self.start_who[j] == k):
                counters.token += 1
                self.ids[j] = counters.token
                self.next = j + 1
            if km is not None:
                for ce in self._made_by(km, kk, e, counters):
                    emit(ce)
        return replay

    def rows_at(self, k: int, counters: Any) -> list[ComplexEvent]:
        """Plan ``k``'s complex events at the current row, with the next match ids (a window
        block's rows: kernels.window_block)."""
        found = self.at_row(k)
        for ce in found:
            counters.match += 1
            ce.match_id = counters.match
        return found

    def _made_by(self, k: int, kk: int, e: Any, counters: Any) -> list[ComplexEvent]:
        """Plan ``k``'s complex events at the current row made in the cascade of kernel plan
        ``kk``'s match ``e`` (its place among ``kk``'s matches at the row: ``subs``), with the
        next match ids; none for ``e`` of another type (a pattern reading it at an earlier
        stage)."""
        klo, khi = self._span(kk)
        # (None for ``e`` of another type: no row is at it)
        place = next((i for i, m in enumerate(self.matches[kk][1][klo:khi]) if m is e), None)
        lo, hi = self._span(k)
        found = [ce for ce, s in zip(self.matches[k][1][lo:hi], self.subs[k][lo:hi].tolist(),
                                     strict=True) if s == place]
        for ce in found:
            counters.match += 1
            ce.match_id = counters.match
        return found

    def rows_for(self, k: int, kk: int, counters: Any) -> Any:
        """The cascade step of window block ``k`` over kernel plan ``kk``'s output: at the
        current row, the block's rows made by the match it is given, with the next match
        ids."""
        return lambda _b, e: self._made_by(k, kk, e, counters)

    def token_ids(self, k: int) -> np.ndarray:
        """Pattern ``k``'s token ids, in the order of its plan's rows that open instances."""
        return self.ids[self.start_who == k]


def _run(engine: Any, kernels: list[Any], plans: list[Plan], src: Rows, columns: bool,
         blocks: dict[int, WindowBlock], derived: Derived, higher: list[Higher],
         over: list[Over], timer_set: SplitTimerSet | None = None
         ) -> tuple[list[ComplexEvent], list[int]]:
    host = engine.host
    counters = host.counters
    ts = src.ts
    n = src.n
    # at a row: the kernel patterns' matches and those of the patterns over them that complete
    # at the input step (in engine order), the window blocks' rows (the engine visits
    # patterns before window statements), each followed by the matches of the patterns over
    # it (kernels.cascade), whose ids come after every block's row; the time batches over
    # derived rows output only at their boundaries (stepped rows)
    n_k, n_b, n_m = len(kernels), len(blocks), len(engine.matchers)
    later = list(derived.batches.values())
    # (the cascade's place of a block's rows at a row: after every kernel pattern's matches)
    top = 1 + sum(len(p[1]) for p in plans)
    # (the matches of the patterns over the kernel patterns' output that complete in the
    # cascade of one's matches: a part of their own, after the patterns' and before the
    # windows' over that output — per event the matchers take a match before the windows)
    in_casc = [h for h in higher if h.last is not None]
    casc = [h.in_cascade() for h in in_casc]
    plans = [*plans, *((b.new_rows, b.at, b.found, b.commit)
                       for b in [*blocks.values(), *later]),
             *(plan for _m, plan, _b in derived.patterns), *(h.at_input() for h in higher),
             *(plan for plan, _s in casc),
             *((o.block.new_rows, o.block.at, o.block.found, o.block.commit) for o in over)]
    # (windows over a kernel pattern's output, last: a row of theirs comes out right after
    # the match it reads, of the same output rank, ranked per match by ``subs``; its id comes
    # in that match's cascade, after the input step's and the window blocks' rows)
    ranks = ([((m.slot,), (m.slot,)) for m in kernels]
             + [((n_m + b,), (n_m + b, 0)) for b in range(n_b)]
             + [((n_m + n_b,), (1 << 30,))] * len(later)
             + [((n_m + n_b + 1 + q,), (n_m + b, 1 + q))
                for q, (_m, _p, b) in enumerate(derived.patterns)]
             + [((h.m.slot,), (h.m.slot,)) for h in higher]
             + [((n_m + n_b, 1 + h.last), (h.last,)) for h in in_casc]
             + [((n_m + n_b, 1 + o.slot), (o.slot,)) for o in over])
    keys = None if not higher else (
        [(0, 0, m.slot, None) for m in kernels] + [(0, 0, 0, None)] * (n_b + len(later))
        + [(1, top + o, m.slot, None)
           for (m, _p, _b), o in zip(derived.patterns, derived.opens, strict=True)]
        + [(h.phase, h.cp, h.m.slot, h.objs) for h in higher]
        + [(0, 0, 0, None)] * (len(casc) + len(over)))
    planned = ({id(b.runner) for b in later} | {id(o.block.runner) for o in over},
               {m.slot for m, _p, _b in derived.patterns} | {h.m.slot for h in higher})
    windows = {**blocks, **derived.batches, **{o.index: o.block for o in over}}

    def per_event(t: str) -> bool:  # (something the batch does not plan reads rows of t)
        return (engine._readers is None or host.rules.triggers(t)
                or any(m.slot not in planned[1] for m in engine.subs_complex.get(t, ()))
                or any(id(r) not in planned[0] for r in engine._window_subs.get(t, ())))

    # the time batches nothing reads: their boundaries are recorded in bulk, as loose rows
    # before the input row at which the engine would close them; a row stepped for another
    # reason closes its own (WindowBlock.expose), so the engine orders them there with its
    # timers and the other windows (docs/windows.md, "In the program split")
    # (also a fully aggregated sliding window's rows on expiry: closed as time passes too)
    quiet = [(i, b) for i, b in windows.items()
             if (b.statement.window.kind == "time_batch" or b.plan.mode == "group")
             and not per_event(b.name)]
    bounds = []
    close_rows: list[np.ndarray] = []
    for i, b in quiet:
        closes = b.closes()
        when = np.array([float(c[0]) for c in closes], np.float64)
        at_rows = np.searchsorted(ts, when, side="left")
        close_rows.append(at_rows)
        lens = [len(c[1]) for c in closes]
        bounds.append((i, np.repeat(at_rows, lens), np.repeat(when, lens),
                       [ce for c in closes for ce in c[1]]))
        b.hide()
    # the timer-end patterns' matches (kernels.timer_end.plan_split): as time passes before
    # their rows, after the window instants of their instant (Engine._advance fires a timer
    # before a window only when it is due earlier), in the engine's timer order across them
    timers = timer_set.members if timer_set is not None else []
    if timer_set is not None:
        bounds += timer_set.bounds(len(engine.windows))
    for te in timers:
        te.drop(host, float(ts[-1]))
    first2 = n_k + n_b + len(later)
    first3 = first2 + len(derived.patterns)
    first4 = first3 + len(higher)
    replay = _Replay(plans, [per_event(m.name) for m in kernels]
                     + [per_event(b.name) for b in blocks.values()] + [False] * len(later)
                     + [per_event(m.name) for m, _p, _b in derived.patterns]
                     + [per_event(h.m.name) for h in [*higher, *in_casc]]
                     + [per_event(o.block.name) for o in over], ranks, bounds, keys,
                     {**{first4 + q: sub for q, (_p, sub) in enumerate(casc)},
                      **{len(plans) - len(over) + q: o.sub for q, o in enumerate(over)}},
                     [_ahead(m, p) for m, p in zip(kernels, plans[:n_k], strict=True)]
                     + [False] * (len(plans) - n_k))
    for k, b in enumerate([*blocks.values(), *later], n_k):
        b.emit_at = lambda _b, _e, k=k: replay.rows_at(k, counters)
    kernel_of = {m.slot: k for k, m in enumerate(kernels)}
    for q, o in enumerate(over, len(plans) - len(over)):
        o.block.emit_at = replay.rows_for(q, kernel_of[o.slot], counters)
    cascades = {m.slot: replay.step(k, counters)
                for k, (m, _p, _b) in enumerate(derived.patterns, first2)}
    # (a pattern completing in a kernel pattern's matches' cascade emits those matches there,
    # each at the match it reads — its part ``casc`` —; its input step takes token ids and
    # emits the matches an input row completes)
    part = {id(h): k for k, h in enumerate(in_casc, first4)}
    cascades.update((h.m.slot, replay.cascade_step(k, counters, kernel_of.get(h.last),
                                                   part.get(id(h))))
                    for k, h in enumerate(higher, first3))
    steps = {m.slot: replay.step(k, counters) for k, m in enumerate(kernels)}
    steps.update((h.m.slot, replay.step(k, counters)) for k, h in enumerate(higher, first3))
    # (the planned windowed chains' timers due in the batch would only make rows stepped)
    drop_passed_timers(host, [*kernels, *(h.m for h in higher)], float(ts[-1]))
    restarted = {m.slot for m in kernels if _clocked(m)}  # (its commit asks for them again)
    if restarted:
        host.timers.keep(lambda h: h[3] not in restarted or not fired_before(h, float(ts[-1])))
    out: list[ComplexEvent] = []
    at: list[int] = []  # (the row each complex event was detected at)
    numbering = counters.renumber
    with engine.replaying(steps, src.type_names, windows, cascades) as read:
        for te in timers:  # (its timers due before a stepped row: fired by the engine)
            te.matcher.on_deadline = te.fire(counters)
        # the rows another part of the program reads, and those where a kernel's pattern
        # completes
        code = np.array([t in read for t in src.type_names], dtype=bool)
        visit = distinct(np.concatenate([np.flatnonzero(code[src.codes]),
                                             replay.match_rows]))
        if columns:  # (numbered already, their events made with their numbers: the steps
            counters.renumber = False  # must not shift them again after a restore)
            events: Any = src.lookup(visit)
        else:
            events = src.events  # type: ignore[attr-defined]
        visit = visit.tolist()
        visit.append(n)
        if len(visit) > _MANY_STEPS + n // _STRETCH:
            replay.as_lists()
        if engine.statement_start is None:
            engine.start_statements(src.time_at(0))  # (as its event has it: saved so)
        # (events numbered by their reader, as usual, and no restore's renumbering: the
        # counter goes past the largest number so far, read once for the whole batch)
        high = None
        if not columns and not numbering:
            seqs = np.fromiter(map(_SEQ, events), np.int64, count=n)
            if int(seqs.min()) >= 0:
                high = np.maximum.accumulate(seqs)
        # (the times as floats when many rows are stepped: numpy's scalars cost per look)
        times = ts.tolist() if replay.lists is not None else ts
        try:
            i = v = 0
            while i < n:
                nxt = visit[v]
                # a timer or window instant due before a row in between: that row is stepped
                due, before = engine.next_due()
                if nxt > i and due <= times[nxt - 1]:
                    nxt = min(nxt, i + int(np.searchsorted(ts[i:nxt], due,
                                                           side="left" if before else "right")))
                if nxt > i:  # rows no per-event step sees
                    if high is not None:
                        counters.input = max(counters.input, int(high[nxt - 1]) + 1)
                    elif not columns:
                        number_events(counters, events[i:nxt])
                    host.stats.events += nxt - i
                    host.time = src.time_at(nxt - 1)
                    replay.ids_before(nxt, counters)
                    replay.record_loose(nxt, host, out, at if columns else None)
                if nxt >= n:
                    break
                replay.row = nxt
                if columns and nxt not in events:  # (a row a timer made due)
                    events = src.lookup(np.array([nxt], np.int64))
                for (_i, b), at_rows in zip(quiet, close_rows, strict=True):
                    b.expose(int(np.searchsorted(at_rows, nxt, side="left")))
                if timer_set is not None:
                    timer_set.push(nxt, host)
                found = []  # (under the failure sink the caller installed)
                replay.ids_ahead(nxt, counters)  # (restarts due before the row: their ids)
                engine._feed(events[nxt], found)
                for _i, b in quiet:
                    b.hide()
                out += found
                if columns:
                    at += [nxt] * len(found)
                replay.skip_loose(nxt)
                if visit[v] == nxt:
                    v += 1
                i = nxt + 1
        finally:
            counters.renumber = numbering
        replay.ids_before(n, counters)
    for (_i, b), at_rows in zip(quiet, close_rows, strict=True):
        b.expose(len(at_rows))  # (every boundary was recorded or stepped)
    for k, plan in enumerate(plans):
        plan[3](replay.token_ids(k))
    reschedule(host, [m for m in kernels if m.pattern.pair is not None]
               + [m for m, _p, _b in derived.patterns]
               + [h.m for h in higher if h.m.pattern.pair is not None], float(ts[-1]))
    return out, at

