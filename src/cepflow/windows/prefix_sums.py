"""The column-wise fast path: one sliding time window, count/sum/avg, at most one group key.

For statements such as ``select sensor, count(*), avg(temp) from Reading#time(10 s) group by
sensor`` the rows of a whole batch of events follow from prefix sums. Every event contributes
an *arrival* entry at ``ts`` and, if it leaves before the batch's end time, an *expiry* entry
at ``ts + Δ``. Merging the two sorted sequences (expiries before arrivals at the same instant,
each in arrival order) gives the order a clock would visit them in; per-group cumulative sums
of +1/-1 (and ±value) in that order give every group's aggregates after every entry. The
output is then exactly the general path's (docs/windows.md): one row per arrival, and one row
per group and expiry instant, with the group's values after all its events leaving at that
instant; rows in time order, expiry rows of an instant (ordered by their first leaving event)
before arrival rows of that instant.

Every step is a numpy operation over the batch plus the window's previous contents (which the
state carries across batches), so the cost per event does not depend on the number of groups.
Counts and sums of integers are exact; float sums may differ from the event-by-event path in
the last bits (prefix sums round differently from running sums).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cepflow.events.event import ComplexEvent, Event, EventType
from cepflow.language import ast
from cepflow.windows.held import EVENT, KEY, TS, VALS, Record
from cepflow.windows.plan import StatementPlan, compile_statement
from cepflow.windows.statement import WindowError, WindowStatement

#: bound on |integer sums| kept in int64 (beyond it the batch is not eligible)
_INT_LIMIT = 2**62


@dataclass(frozen=True)
class ColumnarSpec:
    """What the fast path needs from an eligible statement."""

    name: str
    size: float
    key_field: str | None
    arg_fields: tuple[str, ...]
    #: per slot: (function, argument index or -1 for count(*))
    slots: tuple[tuple[str, int], ...]
    #: per select item: ("agg", slot) | ("key", None) | ("now", None)
    items: tuple[tuple[str, int | None], ...]
    aliases: tuple[str, ...]


def columnar_plan(plan: StatementPlan) -> ColumnarSpec | None:
    """The fast-path description of ``plan``, or None if the statement is not of the form
    ``select [key,] count/sum/avg … from T[(filter)]#time(Δ) [group by key]`` (no having)."""
    stmt = plan.statement
    if stmt.window.kind != "time" or plan.mode != "group" or stmt.having is not None:
        return None
    if len(plan.group_exprs) > 1:
        return None
    key_field = None
    if plan.group_exprs:
        g = plan.group_exprs[0]
        if not isinstance(g, ast.Name) or g.path:
            return None
        key_field = g.name
    if any(s.func not in ("count", "sum", "avg") for s in plan.slots):
        return None
    if any(not isinstance(a, ast.Name) or a.path for a in plan.args):
        return None
    key_index = plan.fields[key_field] if key_field is not None else None
    items: list[tuple[str, int | None]] = []
    for kind, arg in plan.items:
        if kind == "agg" or kind == "now":
            items.append((kind, arg))
        elif kind == "field" and arg == key_index:
            items.append(("key", None))
        else:
            return None
    return ColumnarSpec(stmt.name, stmt.window.size, key_field,
                        tuple(a.name for a in plan.args if isinstance(a, ast.Name)),
                        tuple((s.func, s.arg_index) for s in plan.slots), tuple(items),
                        plan.aliases)


@dataclass
class ColumnarOutput:
    """Output rows as columns: ``ts`` (row time), ``trigger`` (position in the batch's input
    of the event whose arrival made the row; -1 for an expiry row), one array per output name
    and, for columns with null values (sum/avg over no value), a mask of where they are."""

    ts: np.ndarray
    trigger: np.ndarray
    columns: dict[str, np.ndarray]
    nulls: dict[str, np.ndarray] = field(default_factory=dict)
    name: str = ""
    aliases: tuple[str, ...] = ()
    events: np.ndarray | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.ts)

    def values(self, alias: str) -> list[Any]:
        """One output column as Python values, None where null."""
        vals = self.columns[alias].tolist()
        null = self.nulls.get(alias)
        if null is not None:
            for i in np.flatnonzero(null).tolist():
                vals[i] = None
        return vals

    def to_events(self, match_ids: Callable[[], int]) -> list[ComplexEvent]:
        """The rows as :class:`ComplexEvent` s, exactly as the event-by-event path makes them
        (``parts`` is the triggering event when the input events were given)."""
        cols = [self.values(a) for a in self.aliases]
        events = self.events.tolist() if self.events is not None else None
        out: list[ComplexEvent] = []
        append = out.append
        name, aliases = self.name, self.aliases
        rows = zip(*cols, strict=True)
        for ts, trig, params in zip(self.ts.tolist(), self.trigger.tolist(), rows, strict=True):
            parts = (events[trig],) if trig >= 0 and events is not None else ()
            append(ComplexEvent(name, params, ts, dict(zip(aliases, params, strict=False)),
                                parts, match_ids()))
        return out


class Ineligible(WindowError):
    """A batch the fast path cannot take (the event-by-event path can)."""


def _numeric(col: np.ndarray, what: str) -> tuple[np.ndarray, np.ndarray]:
    """An aggregate argument column as (int64 or float64 values, null mask)."""
    if col.dtype.kind in "iu":
        return col.astype(np.int64, copy=False), np.zeros(len(col), bool)
    if col.dtype.kind == "f":
        return col.astype(np.float64, copy=False), np.zeros(len(col), bool)
    if col.dtype.kind != "O":
        raise Ineligible(f"{what}: column of dtype {col.dtype}")
    nulls = np.equal(col, None)
    present = col[~nulls]
    kinds = {type(v) for v in present.tolist()}
    if kinds <= {int}:
        try:
            vals = np.where(nulls, 0, col).astype(np.int64)
        except OverflowError:
            raise Ineligible(f"{what}: integers beyond 64 bits") from None
        return vals, nulls
    if kinds <= {int, float}:
        return np.where(nulls, 0.0, col).astype(np.float64), nulls
    raise Ineligible(f"{what}: values of type {', '.join(sorted(k.__name__ for k in kinds))}")


def _group_cumsum(values: np.ndarray, order: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Cumulative sums of ``values`` within groups: ``order`` sorts entries by group (stably),
    ``starts`` marks the first sorted entry of each group; result in the original order."""
    v = values[order]
    cs = np.cumsum(v)
    first = np.maximum.accumulate(np.where(starts, np.arange(len(v)), 0))
    offset = (cs - v)[first]  # the running sum before the group's first entry
    out = np.empty_like(cs)
    out[order] = cs - offset
    return out


class SlidingAggregate:
    """The fast path's state: the window's contents as columns, carried across batches."""

    def __init__(self, spec: ColumnarSpec) -> None:
        self.spec = spec
        self.time: float = float("-inf")
        self.ts = np.empty(0, np.float64)
        self.keys = np.empty(0, object)
        self.vals: list[np.ndarray] = [np.empty(0, np.int64) for _ in spec.arg_fields]
        self.nulls: list[np.ndarray] = [np.empty(0, bool) for _ in spec.arg_fields]
        self.events: np.ndarray | None = np.empty(0, object)

    @classmethod
    def from_statement(cls, statement: WindowStatement, schemas: Mapping[str, EventType]
                       ) -> SlidingAggregate:
        """The fast path for ``statement``; WindowError if it is not of the eligible form."""
        spec = columnar_plan(compile_statement(statement, schemas))
        if spec is None:
            raise WindowError(f"statement '{statement.name}' is not eligible for the columnar "
                              "path (one #time window, count/sum/avg of fields, at most one "
                              "group-by field, select of the key and aggregates, no having)")
        return cls(spec)

    def __len__(self) -> int:
        return len(self.ts)

    # -- conversion to and from the event-by-event state ------------------------------------
    def load(self, records: Sequence[Record]) -> None:
        """Take over the contents of an event-by-event time window (records in order)."""
        if not records:
            return
        self.ts = np.array([r[TS] for r in records])
        self.keys = np.empty(len(records), object)
        self.keys[:] = [r[KEY] for r in records]
        self.events = np.empty(len(records), object)
        self.events[:] = [r[EVENT] for r in records]
        for j in range(len(self.spec.arg_fields)):
            col = np.empty(len(records), object)
            col[:] = [r[VALS][j] for r in records]
            self.vals[j], self.nulls[j] = _numeric(col, self.spec.arg_fields[j])

    def contents(self) -> list[tuple[float, Any, tuple[Any, ...], Event | None]]:
        """The window's events as (ts, key, argument values, event), oldest first."""
        ts = self.ts.tolist()
        keys = self.keys.tolist() if self.spec.key_field is not None else [()] * len(ts)
        vals = [np.where(n, None, v.astype(object)).tolist()
                for v, n in zip(self.vals, self.nulls, strict=True)]
        events = self.events.tolist() if self.events is not None else [None] * len(ts)
        return [(ts[i], keys[i], tuple(v[i] for v in vals), events[i]) for i in range(len(ts))]

    # -- processing -------------------------------------------------------------------------
    def advance_to(self, t: float) -> ColumnarOutput:
        """Move the clock to ``t`` without events (expiry rows only)."""
        return self.process(np.empty(0, self.ts.dtype), {}, None, until=t)

    def process(self, ts: np.ndarray, columns: Mapping[str, np.ndarray],
                events: np.ndarray | Sequence[Event] | None = None,
                until: float | None = None) -> ColumnarOutput:
        """Process a batch of accepted events (filter already applied) given as columns:
        ``ts`` (nondecreasing), the key and argument fields by name; ``events`` (optional)
        become the rows' ``parts``. Time ends at ``until`` (default: the last timestamp)."""
        spec = self.spec
        n = len(ts)
        ts = np.asarray(ts)
        if n and (ts[0] < self.time or bool(np.any(np.diff(ts) < 0))):
            raise WindowError(f"statement '{spec.name}': timestamps must be nondecreasing and "
                              f"not before {self.time}")
        end = max(float(ts[-1]) if n else self.time, until if until is not None else self.time)
        if end < self.time:
            raise WindowError(f"statement '{spec.name}': time went back from {self.time} to "
                              f"{end}")
        m = len(self.ts)
        # the window's previous contents, then the batch
        all_ts = np.concatenate([self.ts, ts]) if m else ts
        keys = self._keys(columns, n)
        vals, nulls = [], []
        for j, f in enumerate(spec.arg_fields):
            v, nl = _numeric(np.asarray(columns[f]), f) if n else (
                np.empty(0, np.int64), np.empty(0, bool))
            if v.dtype.kind == "i" and float(np.abs(v).sum(dtype=np.float64)) + float(
                    np.abs(self.vals[j]).sum(dtype=np.float64)) >= _INT_LIMIT:
                raise Ineligible(f"{f}: integer sums beyond 64 bits")
            vals.append(np.concatenate([self.vals[j], v]))
            nulls.append(np.concatenate([self.nulls[j], nl]))
        all_events: np.ndarray | None = None
        if events is not None and self.events is not None:
            ev = np.empty(n, object)
            ev[:] = list(events)
            all_events = np.concatenate([self.events, ev])
        total = m + n
        import pandas as pd  # (here: importing pandas costs every command half a second)

        codes, uniques = (pd.factorize(keys, use_na_sentinel=False) if total else
                          (np.empty(0, np.int64), np.empty(0, object)))
        if spec.key_field is not None and _has_nan(uniques, keys):
            raise Ineligible(f"{spec.key_field}: NaN group keys")
        # small group codes sort in linear time (numpy's stable sort is a radix sort for
        # 16-bit integers)
        codes = codes.astype(np.int16 if len(uniques) < 2**15 else np.int64, copy=False)

        log = _Log(all_ts, spec.size, end)
        grp = codes[log.src]
        order = np.argsort(grp, kind="stable")
        gs = grp[order]
        starts = np.ones(log.size, bool)
        starts[1:] = gs[1:] != gs[:-1]
        count_star = _group_cumsum(log.sign, order, starts)
        counts, sums = [], []
        for j in range(len(spec.arg_fields)):
            present = ~nulls[j][log.src]
            counts.append(_group_cumsum(np.where(present, log.sign, 0), order, starts))
            sums.append(_group_cumsum(np.where(present, vals[j][log.src] * log.sign, 0),
                                      order, starts))

        # rows: the batch's arrivals; one per (group, expiry instant) at its first entry, with
        # the values after its last entry
        ts_s, exp_s = log.time[order], log.is_exp[order]
        same_prev = np.zeros(log.size, bool)
        same_prev[1:] = ~starts[1:] & exp_s[1:] & exp_s[:-1] & (ts_s[1:] == ts_s[:-1])
        same_next = np.zeros(log.size, bool)
        same_next[:-1] = same_prev[1:]
        value_at = np.full(log.size, -1, np.int64)
        arrivals = log.pos_arr[m:]
        value_at[arrivals] = arrivals
        value_at[order[exp_s & ~same_prev]] = order[exp_s & ~same_next]
        row_pos = np.flatnonzero(value_at >= 0)  # rows in log (= time) order
        at = value_at[row_pos]
        trigger = np.where(log.is_exp[row_pos], -1, log.src[row_pos] - m)
        row_ts = log.time[row_pos]

        columns_out: dict[str, np.ndarray] = {}
        nulls_out: dict[str, np.ndarray] = {}
        for alias, (kind, slot) in zip(spec.aliases, spec.items, strict=True):
            if kind == "key":
                columns_out[alias] = (uniques[grp[at]] if len(uniques)
                                      else np.empty(0, object))
            elif kind == "now":
                columns_out[alias] = row_ts
            else:
                assert slot is not None
                col, null = _aggregate(spec.slots[slot], at, count_star, counts, sums)
                columns_out[alias] = col
                if null is not None:
                    nulls_out[alias] = null
        # the window's contents after the batch: the events that have not left
        p = log.expired
        self.ts, self.keys = all_ts[p:], keys[p:]
        self.vals = [v[p:] for v in vals]
        self.nulls = [nl[p:] for nl in nulls]
        self.events = all_events[p:] if all_events is not None else None
        self.time = end
        return ColumnarOutput(row_ts, trigger, columns_out, nulls_out, spec.name, spec.aliases,
                              all_events[m:] if all_events is not None else None)

    def _keys(self, columns: Mapping[str, np.ndarray], n: int) -> np.ndarray:
        """The group keys of the contents and the batch (object array; zeros without key)."""
        if self.spec.key_field is None:
            return np.zeros(len(self.ts) + n, np.int8)
        new = np.asarray(columns[self.spec.key_field]) if n else np.empty(0, object)
        return np.concatenate([self.keys, new.astype(object, copy=False)])


class _Log:
    """The merged log of a batch: every event's arrival at ``ts`` and, if it leaves by
    ``end``, its expiry at ``ts + size``; expiries before arrivals at the same instant, each
    kind in arrival order (``all_ts`` is nondecreasing, so both sequences are sorted and a
    merge by ``searchsorted`` gives every entry's position)."""

    def __init__(self, all_ts: np.ndarray, size: float, end: float) -> None:
        total = len(all_ts)
        expiry = all_ts + size
        p = int(np.searchsorted(expiry, end, side="right"))  # events leaving by `end`
        e_t = expiry[:p]
        self.expired = p
        self.size = total + p
        self.pos_arr = np.arange(total) + np.searchsorted(e_t, all_ts, side="right")
        pos_exp = np.arange(p) + np.searchsorted(all_ts, e_t, side="left")
        #: the event of each entry (its index in contents + batch)
        self.src = np.empty(self.size, np.int64)
        self.src[self.pos_arr] = np.arange(total)
        self.src[pos_exp] = np.arange(p)
        self.is_exp = np.zeros(self.size, bool)
        self.is_exp[pos_exp] = True
        self.sign = np.where(self.is_exp, -1, 1)
        self.time = np.empty(self.size, np.result_type(all_ts.dtype, e_t.dtype))
        self.time[self.pos_arr] = all_ts
        self.time[pos_exp] = e_t


def _has_nan(uniques: np.ndarray, keys: np.ndarray) -> bool:
    """Whether a group key is a float NaN (pandas would merge it with None; dict keys do
    not). Only when a null-like key exists are the keys themselves checked."""
    import pandas as pd

    if not bool(np.any(pd.isna(uniques))):
        return False
    return bool(np.any(pd.isna(keys) & ~np.equal(keys, None)))


def _aggregate(slot: tuple[str, int], at: np.ndarray, count_star: np.ndarray,
               counts: list[np.ndarray], sums: list[np.ndarray]
               ) -> tuple[np.ndarray, np.ndarray | None]:
    """A slot's values at the rows ``at`` and where they are null (None: nowhere)."""
    func, j = slot
    if j < 0:
        return count_star[at], None
    c = counts[j][at]
    if func == "count":
        return c, None
    empty = c == 0
    s = sums[j][at]
    out = s / np.where(empty, 1, c) if func == "avg" else s
    return out, (empty if bool(empty.any()) else None)
