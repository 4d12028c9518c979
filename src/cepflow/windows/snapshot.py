"""A window statement's state as JSON-compatible data, and back (``cepflow.engine-state`` v2+).

:func:`save_runner` writes everything a :class:`~cepflow.windows.runner.WindowRunner` needs
to go on exactly as if it had never stopped (docs/state-format.md, "Window statements"):

* ``time``, ``seq`` (records accepted so far), ``finished``;
* ``records`` — every record the state refers to, once: ``[seq, ts, <event>]``, by seq. A
  record's group key and aggregate arguments are not stored: they are evaluated again from the
  event on restore, by the same compiled expressions (:meth:`StatementPlan.record`);
* ``window`` — the window's own state: the seqs it holds (sliding windows, per group for
  ``#groupwin``), or the batch counters, reference point and next boundary index (batches);
* ``groups`` — the aggregate state of every group with events in the window, as it is (in the
  groups' order): ``[key, n, first seq or null, cnt, total, lo, hi, …]``, a sliding min/max as
  its monotonic deque ``[[seq, value], …]``. **Decision:** stored, not recomputed from the
  contents: a sliding float sum is a running sum (added on enter, subtracted on leave), which
  a sum of the remaining values does not reproduce to the last bit, and a batch's group
  aggregates exist only as state (the batch's events are not kept for per-group rows);
* ``last`` — per-group statements over batches: the representative record of every group of
  the previous batch (the count-0 rows); ``batch`` / ``batches`` — per-event statements over
  batches: the current batch's records (per group for ``#groupwin``).

A group key is ``[]`` without ``group by``, the value for one expression, a list for several.
Events are encoded by the caller's ``encode``/``decode`` (the engine state's event form), so
this module knows nothing of the surrounding format. A runner whose state lives in the
column-wise fast path is moved to the event-by-event state first (what its next single event
would do); the rows that follow are the same either way.
"""

from __future__ import annotations

import itertools
import math
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from cepflow.events.event import Event
from cepflow.windows.aggregates import CNT, FIRST, TOTAL, Aggregation, N
from cepflow.windows.base import WindowView
from cepflow.windows.held import EVENT, KEY, SEQ, TS, VALS, Record
from cepflow.windows.processor import PerEventRows, PerGroupRows
from cepflow.windows.runner import WindowRunner
from cepflow.windows.sliding import GroupLengthWindow, LengthWindow, TimeWindow
from cepflow.windows.statement import WindowError
from cepflow.windows.tumbling import GroupLengthBatchWindow, LengthBatchWindow, TimeBatchWindow

Encode = Callable[[Event], dict[str, Any]]
Decode = Callable[[dict[str, Any]], Event]


def _num(x: float) -> float | None:
    return None if math.isinf(x) else x


class _Saver:
    """Collects the records a runner's state refers to while its parts are written."""

    def __init__(self, runner: WindowRunner, encode: Encode) -> None:
        self.encode = encode
        self.records: dict[int, Record] = {}
        self.n_keys = len(runner.plan.group_exprs)

    def ref(self, rec: Record) -> int:
        self.records.setdefault(rec[SEQ], rec)
        return rec[SEQ]

    def refs(self, recs: Iterable[Record]) -> list[int]:
        return [self.ref(r) for r in recs]

    def key(self, key: Any) -> Any:
        return list(key) if self.n_keys != 1 else key

    def table(self) -> list[list[Any]]:
        return [[seq, rec[TS], self.encode(rec[EVENT])]
                for seq, rec in sorted(self.records.items())]


def save_runner(runner: WindowRunner, encode: Encode) -> dict[str, Any]:
    """The runner's state as a JSON-compatible dict (see the module docstring)."""
    runner._to_event_state()  # a columnar state becomes records (same rows afterwards)
    s = _Saver(runner, encode)
    window = runner.window
    proc = window.proc  # type: ignore[attr-defined]
    agg: Aggregation = proc.agg
    state: dict[str, Any] = {"time": _num(runner.time), "seq": runner._seq,
                             "finished": runner.finished, "window": _save_window(window, s)}
    groups = []
    for key, st in agg.groups.items():
        row = [s.key(key)]
        for i, v in enumerate(st):
            if i == FIRST:
                v = None if agg.retract else s.ref(v)  # read only when a batch closes
            elif isinstance(v, deque):
                v = [[seq, x] for seq, x in v]
            row.append(v)
        groups.append(row)
    state["groups"] = groups
    if isinstance(proc, PerGroupRows) and proc.last:
        state["last"] = [[s.key(k), s.ref(r)] for k, r in proc.last.items()]
    if isinstance(proc, PerEventRows):
        if proc.batch:
            state["batch"] = s.refs(proc.batch)
        if proc.batches:
            state["batches"] = [[s.key(k), s.refs(rs)] for k, rs in proc.batches.items()]
    state["records"] = s.table()
    return state


def _save_window(window: WindowView, s: _Saver) -> dict[str, Any]:
    if isinstance(window, TimeWindow | LengthWindow):
        return {"items": s.refs(window.items)}
    if isinstance(window, GroupLengthWindow):
        return {"items": [s.refs(items) for items in window.items.values()]}
    if isinstance(window, TimeBatchWindow):
        return {"reference": window.reference, "k": window.k, "current": window.current,
                "previous": window.previous}
    if isinstance(window, LengthBatchWindow):
        return {"current": window.current}
    if isinstance(window, GroupLengthBatchWindow):
        return {"current": [[s.key(k), n] for k, n in window.current.items()]}
    raise WindowError(f"cannot save a window of kind {type(window).__name__}")


class _Loader:
    """Rebuilds the records of a saved state and resolves references to them."""

    def __init__(self, runner: WindowRunner, state: dict[str, Any], decode: Decode) -> None:
        plan = runner.plan
        self.n_keys = len(plan.group_exprs)
        self.records: dict[int, Record] = {}
        for seq, ts, ev in state["records"]:
            self.records[int(seq)] = plan.record(decode(ev), int(seq), ts)

    def rec(self, seq: int) -> Record:
        return self.records[seq]

    def recs(self, seqs: Iterable[int]) -> list[Record]:
        return [self.records[q] for q in seqs]

    def key(self, key: Any) -> Any:
        if self.n_keys == 1:
            return key
        return tuple(key)


def load_runner(runner: WindowRunner, state: dict[str, Any], decode: Decode) -> None:
    """Load ``state`` (from :func:`save_runner`) into a fresh ``runner`` of the same statement.

    Raises :class:`WindowError` when the runner is not fresh, and KeyError, TypeError,
    ValueError or IndexError when the state is malformed (the caller reports both)."""
    if runner.time != -math.inf or runner._seq or runner._in_fast or len(runner.window):
        raise WindowError(f"statement '{runner.statement.name}': restore into a fresh runner")
    ld = _Loader(runner, state, decode)
    window = runner.window
    proc = window.proc  # type: ignore[attr-defined]
    agg: Aggregation = proc.agg
    _load_window(window, state["window"], ld)
    deques = set(agg._deques)
    groups: dict[Any, list[Any]] = {}
    for row in state["groups"]:
        st = list(row[1:])
        if len(st) != agg._width:
            raise ValueError(f"a group state of {len(st)} slots, not {agg._width}")
        st[FIRST] = None if st[FIRST] is None else ld.rec(st[FIRST])
        for i in deques:
            st[i] = deque((int(q), v) for q, v in st[i])
        groups[ld.key(row[0])] = st
    agg.groups = groups
    if isinstance(proc, PerGroupRows):
        proc.last = {ld.key(k): ld.rec(q) for k, q in state.get("last", ())}
    if isinstance(proc, PerEventRows):
        proc.batch = ld.recs(state.get("batch", ()))
        proc.batches = {ld.key(k): ld.recs(qs) for k, qs in state.get("batches", ())}
    runner.time = -math.inf if state["time"] is None else state["time"]
    runner._seq = int(state["seq"])
    runner.finished = bool(state["finished"])
    _check_loaded(runner, ld)


def _check_loaded(runner: WindowRunner, ld: _Loader) -> None:
    """Raise ValueError unless the loaded state is one a running statement can hold: record
    numbers below the next one, times not after the clock, a sliding window's items in
    arrival (and time) order within its length, and aggregates that agree with what it holds
    — for a sliding window the groups, counts and min/max deques its items give (a sum only
    by type: a running float sum is not a sum of the remaining values), for a batch window
    counts that add up to its batch. A state that passes cannot fail later for what it is."""
    window = runner.window
    proc = window.proc  # type: ignore[attr-defined]
    agg: Aggregation = proc.agg
    if type(runner._seq) is not int or runner._seq < 0 or not isinstance(runner.finished, bool):
        raise ValueError("seq must be a count and finished a boolean")
    if runner.time != -math.inf and (type(runner.time) not in (int, float)
                                     or not math.isfinite(runner.time)):
        raise ValueError(f"time {runner.time!r} is not a finite number")
    for seq, rec in ld.records.items():
        if not 0 <= seq < runner._seq:
            raise ValueError(f"record {seq} is not below the next record number {runner._seq}")
        if type(rec[TS]) not in (int, float) or not math.isfinite(rec[TS]) \
                or rec[TS] > runner.time:
            raise ValueError(f"record {seq}: time {rec[TS]!r} is not a time up to the "
                             f"statement's clock {runner.time}")
    if isinstance(window, TimeWindow | LengthWindow | GroupLengthWindow):
        lanes = (list(window.items.values()) if isinstance(window, GroupLengthWindow)
                 else [window.items])
        limit = getattr(window, "n", None)
        for items in lanes:
            if any(a[SEQ] >= b[SEQ] or a[TS] > b[TS] for a, b in itertools.pairwise(items)):
                raise ValueError("the window's items are not in arrival and time order")
            if limit is not None and len(items) > limit:
                raise ValueError(f"the window holds {len(items)} items, more than {limit}")
        if isinstance(window, GroupLengthWindow) and any(
                r[KEY] != k for k, items in window.items.items() for r in items):
            raise ValueError("a group's window holds records of another group")
        ref = Aggregation(agg.slots, agg.statement, agg.retract)
        for items in lanes:
            for r in items:
                ref.enter(r[KEY], r[VALS], r[SEQ], r)
        _same_aggregates(agg, ref)
        return
    total = sum(st[0] for st in agg.groups.values())
    for key, st in agg.groups.items():
        if type(st[0]) is not int or st[0] < 1:
            raise ValueError(f"group {key!r}: count {st[0]!r} is not a positive count")
        _check_slots(agg, key, st)
    if isinstance(window, GroupLengthBatchWindow):
        for key, n in window.current.items():
            if type(n) is not int or not 0 < n < window.n:
                raise ValueError(f"group {key!r}: {n!r} events in its batch of {window.n}")
        return
    if isinstance(window, LengthBatchWindow) and not 0 <= window.current < window.n:
        raise ValueError(f"{window.current} events in a batch of {window.n}")
    if window.current < 0 or getattr(window, "previous", 0) < 0:  # type: ignore[attr-defined]
        raise ValueError("a negative number of events in a batch")
    if agg.groups and total != window.current:  # type: ignore[attr-defined]
        raise ValueError(f"the groups count {total} events, the batch "
                         f"{window.current}")  # type: ignore[attr-defined]
    if isinstance(proc, PerEventRows) and len(proc.batch) != window.current:  # type: ignore[attr-defined]
        raise ValueError(f"{len(proc.batch)} records of the batch, which counts "
                         f"{window.current}")  # type: ignore[attr-defined]


def _same_aggregates(agg: Aggregation, ref: Aggregation) -> None:
    """A sliding window's loaded aggregates against those its items give (``ref``)."""
    if set(agg.groups) != set(ref.groups):
        raise ValueError("the groups differ from those of the window's items")
    counts = {N, *(b + CNT for _, b, *_ in agg._args)}
    sums = {b + TOTAL for _, b, *_ in agg._args}
    for key, st in agg.groups.items():
        want = ref.groups[key]
        if not isinstance(st, list) or len(st) != len(want):
            raise ValueError(f"group {key!r}: not the {len(want)} slots of its state")
        for i, (got, exp) in enumerate(zip(st, want, strict=True)):
            if i == FIRST:
                continue
            if i in counts:
                ok = type(got) is int and got == exp
            elif i in sums:  # (a running float sum drifts from a sum of the values)
                ok = type(got) in (int, float) and (type(got) is not int or type(exp) is not int
                                                    or got == exp)
            elif isinstance(exp, deque):
                ok = isinstance(got, deque) and list(got) == list(exp)
            else:
                ok = got == exp
            if not ok:
                raise ValueError(f"group {key!r}: {got!r} is not the window items' {exp!r}")


def _check_slots(agg: Aggregation, key: Any, st: list[Any]) -> None:
    """A batch window's group state: counts within the group's, numeric sums, extremes of
    one kind (they are compared with the next values)."""
    for j, b, _tot, _mn, _mx in agg._args:
        cnt, total = st[b], st[b + 1]
        if type(cnt) is not int or not 0 <= cnt <= st[0]:
            raise ValueError(f"group {key!r}: argument {j} count {cnt!r} is not within "
                             f"{st[0]}")
        if type(total) not in (int, float):
            raise ValueError(f"group {key!r}: sum {total!r} is not a number")
        for extreme in (st[b + 2], st[b + 3]):
            if extreme is not None and type(extreme) not in (int, float, str, bool):
                raise ValueError(f"group {key!r}: minimum/maximum {extreme!r} is not a value")


def _load_window(window: WindowView, data: dict[str, Any], ld: _Loader) -> None:
    if isinstance(window, TimeWindow | LengthWindow):
        window.items = deque(ld.recs(data["items"]))
        if isinstance(window, TimeWindow) and window.items:
            window.due = window.items[0][TS] + window.size
    elif isinstance(window, GroupLengthWindow):
        for seqs in data["items"]:
            items = deque(ld.recs(seqs))
            if items:
                window.items[items[0][KEY]] = items
    elif isinstance(window, TimeBatchWindow):
        window.reference = data["reference"]
        window.current, window.previous = int(data["current"]), int(data["previous"])
        window._set_k(None if data["k"] is None else int(data["k"]))
    elif isinstance(window, LengthBatchWindow):
        window.current = int(data["current"])
    elif isinstance(window, GroupLengthBatchWindow):
        window.current = {ld.key(k): int(n) for k, n in data["current"]}
    else:
        raise WindowError(f"cannot restore a window of kind {type(window).__name__}")
