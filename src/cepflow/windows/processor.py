"""Turning window updates into output rows, as Esper's result-set processors do.

A window reports four kinds of update to its processor:

* ``arrive(rec, removed)`` — sliding windows: an event entered (a length window may push its
  oldest event(s) out in the same update);
* ``expire(now, removed)`` — a sliding time window: events left because time passed;
* ``add(rec)`` — batch windows: an event joined the current batch (no output yet);
* ``flush(now, trigger, key)`` — batch windows: the batch closed (``key``: only that group's
  batch, for per-group windows).

Like Esper (docs/windows.md), every update first applies the entering and leaving events to
the aggregates, then produces the insert-stream rows:

* :class:`PerGroupRows` — one row per group the update touched (groups of entering events in
  arrival order, then groups only leaving events touched, in their order); a batch closes with
  one row per group of the batch, then one per group that only the previous batch had (with
  count 0 and null aggregates). Without ``group by`` there is one group, ``()``.
* :class:`PerEventRows` — one row per entering event (for a batch, per event of the batch, with
  the aggregates of the whole batch); leaving events produce no insert-stream rows.

A group's state is dropped as soon as the window holds none of its events.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cepflow.events.event import ComplexEvent, Event
from cepflow.windows.aggregates import FIRST, Aggregation, N
from cepflow.windows.held import EVENT, KEY, SEQ, VALS, Record
from cepflow.windows.output_rows import RowBuilder

Rows = list[ComplexEvent]


class Processor:
    """Common state: the aggregation of the window's events and the row builder."""

    def __init__(self, agg: Aggregation, rows: RowBuilder, per_group: bool = False) -> None:
        self.agg = agg
        self.rows = rows
        #: batch windows: one batch per group (``flush`` then closes the batch of ``key``)
        self.per_group = per_group

    def _leave_all(self, removed: Sequence[Record]) -> dict[Any, Record]:
        """Apply leaving records; their groups in order of first appearance (with the first
        leaving record of each, the representative of an expiry row)."""
        touched: dict[Any, Record] = {}
        leave = self.agg.leave
        for r in removed:
            leave(r[KEY], r[VALS], r[SEQ])
            touched.setdefault(r[KEY], r)
        return touched

    def arrive(self, rec: Record, removed: Sequence[Record], now: float) -> Rows:
        raise NotImplementedError

    def expire(self, now: float, removed: Sequence[Record]) -> Rows:
        raise NotImplementedError

    def add(self, rec: Record) -> None:
        raise NotImplementedError

    def flush(self, now: float, trigger: Event | None, key: Any = None) -> Rows:
        raise NotImplementedError


class PerGroupRows(Processor):
    """One row per group (Esper's fully aggregated queries, grouped or not)."""

    def __init__(self, agg: Aggregation, rows: RowBuilder, per_group: bool = False) -> None:
        super().__init__(agg, rows, per_group)
        #: batch windows: the representative record of each group of the previous batch
        self.last: dict[Any, Record] = {}

    def _rows_for(self, touched: dict[Any, Record], now: float, trigger: Event | None) -> Rows:
        out: Rows = []
        groups, values, row = self.agg.groups, self.agg.values, self.rows.row
        for key, rep in touched.items():
            st = groups.get(key)
            r = row(rep[EVENT], values(st), now, trigger)
            if r is not None:
                out.append(r)
            if st is not None and st[N] == 0:
                self.agg.drop(key)
        return out

    def arrive(self, rec: Record, removed: Sequence[Record], now: float) -> Rows:
        st = self.agg.enter(rec[KEY], rec[VALS], rec[SEQ], rec)
        if not removed:
            r = self.rows.row(rec[EVENT], self.agg.values(st), now, rec[EVENT])
            return [] if r is None else [r]
        touched = {rec[KEY]: rec}
        for key, rep in self._leave_all(removed).items():
            touched.setdefault(key, rep)
        return self._rows_for(touched, now, rec[EVENT])

    def expire(self, now: float, removed: Sequence[Record]) -> Rows:
        if len(removed) == 1:
            r0 = removed[0]
            agg = self.agg
            st = agg.leave(r0[KEY], r0[VALS], r0[SEQ])
            r = self.rows.row(r0[EVENT], agg.values(st), now, None)
            if st[N] == 0:
                del agg.groups[r0[KEY]]
            return [] if r is None else [r]
        return self._rows_for(self._leave_all(removed), now, None)

    def add(self, rec: Record) -> None:
        self.agg.enter(rec[KEY], rec[VALS], rec[SEQ], rec)

    def flush(self, now: float, trigger: Event | None, key: Any = None) -> Rows:
        agg, row = self.agg, self.rows.row
        out: Rows = []
        if self.per_group:
            st = agg.groups.pop(key)
            r = row(st[FIRST][EVENT], agg.values(st), now, trigger)
            return [] if r is None else [r]
        groups = agg.groups
        for st in groups.values():
            r = row(st[FIRST][EVENT], agg.values(st), now, trigger)
            if r is not None:
                out.append(r)
        empty = agg.empty_values
        for k, rep in self.last.items():
            if k not in groups:
                r = row(rep[EVENT], empty, now, trigger)
                if r is not None:
                    out.append(r)
        self.last = {k: st[FIRST] for k, st in groups.items()}
        agg.clear()
        return out


class PerEventRows(Processor):
    """One row per entering event (Esper's un-aggregated queries and aggregated queries with
    fields outside ``group by``)."""

    def __init__(self, agg: Aggregation, rows: RowBuilder, per_group: bool = False) -> None:
        super().__init__(agg, rows, per_group)
        #: batch windows: the current batch's records (per group for per-group windows)
        self.batch: list[Record] = []
        self.batches: dict[Any, list[Record]] = {}

    def _drop_empty(self, keys: Any) -> None:
        groups = self.agg.groups
        for k in keys:
            st = groups.get(k)
            if st is not None and st[N] == 0:
                self.agg.drop(k)

    def arrive(self, rec: Record, removed: Sequence[Record], now: float) -> Rows:
        st = self.agg.enter(rec[KEY], rec[VALS], rec[SEQ], rec)
        if removed:
            self._drop_empty(self._leave_all(removed))
        r = self.rows.row(rec[EVENT], self.agg.values(st), now, rec[EVENT])
        return [] if r is None else [r]

    def expire(self, now: float, removed: Sequence[Record]) -> Rows:
        self._drop_empty(self._leave_all(removed))
        return []

    def add(self, rec: Record) -> None:
        self.agg.enter(rec[KEY], rec[VALS], rec[SEQ], rec)
        if self.per_group:
            self.batches.setdefault(rec[KEY], []).append(rec)
        else:
            self.batch.append(rec)

    def flush(self, now: float, trigger: Event | None, key: Any = None) -> Rows:
        agg, row = self.agg, self.rows.row
        if self.per_group:
            recs = self.batches.pop(key)
            vals = agg.values(agg.groups.pop(key))
            return [r for r in (row(rec[EVENT], vals, now, trigger) for rec in recs)
                    if r is not None]
        recs, self.batch = self.batch, []
        cache: dict[Any, tuple[Any, ...]] = {}
        out: Rows = []
        for rec in recs:
            k = rec[KEY]
            vals = cache.get(k)
            if vals is None:
                vals = cache[k] = agg.values(agg.groups[k])
            r = row(rec[EVENT], vals, now, trigger)
            if r is not None:
                out.append(r)
        agg.clear()
        return out
