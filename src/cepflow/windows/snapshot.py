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

import math
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from cepflow.events.model import Event
from cepflow.windows.aggregates import FIRST, Aggregation
from cepflow.windows.base import Window
from cepflow.windows.batch import GroupLengthBatchWindow, LengthBatchWindow, TimeBatchWindow
from cepflow.windows.processor import EventRows, GroupRows
from cepflow.windows.records import EVENT, KEY, SEQ, TS, Record
from cepflow.windows.runner import WindowRunner
from cepflow.windows.sliding import GroupLengthWindow, LengthWindow, TimeWindow
from cepflow.windows.statement import WindowError

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
    if isinstance(proc, GroupRows) and proc.last:
        state["last"] = [[s.key(k), s.ref(r)] for k, r in proc.last.items()]
    if isinstance(proc, EventRows):
        if proc.batch:
            state["batch"] = s.refs(proc.batch)
        if proc.batches:
            state["batches"] = [[s.key(k), s.refs(rs)] for k, rs in proc.batches.items()]
    state["records"] = s.table()
    return state


def _save_window(window: Window, s: _Saver) -> dict[str, Any]:
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
    if isinstance(proc, GroupRows):
        proc.last = {ld.key(k): ld.rec(q) for k, q in state.get("last", ())}
    if isinstance(proc, EventRows):
        proc.batch = ld.recs(state.get("batch", ()))
        proc.batches = {ld.key(k): ld.recs(qs) for k, qs in state.get("batches", ())}
    runner.time = -math.inf if state["time"] is None else state["time"]
    runner._seq = int(state["seq"])
    runner.finished = bool(state["finished"])


def _load_window(window: Window, data: dict[str, Any], ld: _Loader) -> None:
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
