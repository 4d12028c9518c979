"""Window statements over the input planned column-wise over a batch of the program split
(runtime/kernels/split.py; docs/architecture.md, "The program split"; docs/windows.md, "In
the program split").

A statement of a form covered here (:func:`window_kernels`) — ``#time(Δ)`` with one row per
arriving event (Esper's aggregated-ungrouped and aggregated-grouped queries) or one row per
group at every arrival and expiry instant (fully aggregated queries), ``#length(n)`` and
``#groupwin(k)#length(n)`` (rows at every arrival: also the row of the group a push-out
leaves), ``#time_batch(Δ[, r])``, ``#length_batch(n)`` and ``#groupwin(k)#length_batch(n)`` of
either query kind; count/sum/avg/min/max of fields; any ``having`` (a mask over the rows:
:meth:`WindowBlock._having`); at most one ``group by`` field; select items that are
aggregates, fields or ``current_timestamp()``; reading one input type no statement produces —
is planned over the whole batch before the per-event part runs (:func:`plan_window`): which
rows it outputs at which input row (a sliding window's arrival rows, a length batch's closing
row) or at which instant (a time batch's closes, a fully aggregated sliding window's expiry
instants), with their values, and the state the runner has at the batch's end. During the
batch the split puts the :class:`WindowBlock` in the runner's place (Engine.replaying): a
stepped row or instant gets its planned rows with the next match ids, as the runner would have
made them, and the rows nothing reads are recorded in bulk (split._Replay) — also a time
batch's rows, when nothing reads them: its boundaries are then hidden from the engine but at
rows stepped for another reason (:meth:`WindowBlock.hide`, :meth:`WindowBlock.expose`). Last,
:meth:`WindowBlock.commit` leaves the runner's window, aggregates, clock and numbering as
event-by-event feeding would have left them.

**Exactness.** The values are the per-event runner's to the last bit: every group's running
sum is added one value at a time in the order the runner adds and subtracts them (arrivals and
expiries merged in time order, expiries first at one instant; a length window's arrival before
the record it pushes out; reset when the group empties),
by numpy's sequential ``cumsum`` (:func:`running_sums`), never by differences of prefix sums;
integers only while every sum stays below 2**53 (where int64 and float64 division agree with
Python's), and a batch whose values mix types, hold nulls, booleans or text, whose keys hold a
NaN, whose min/max values hold a NaN or -0.0, or whose filter or ``having`` fails on a row
declines the statement for that batch: its runner then takes the batch's rows per event, as
before.
"""

from __future__ import annotations

import itertools
import math
from bisect import bisect_left
from collections import deque
from functools import partial
from itertools import repeat
from operator import attrgetter, itemgetter
from types import SimpleNamespace
from typing import Any

import numpy as np

from cepflow.compiler.evaluator import EvaluationError
from cepflow.events.event import ComplexEvent, Event
from cepflow.language.walk import strip_alias
from cepflow.runtime.kernels.column_blocks import Deferred
from cepflow.runtime.kernels.filters import filter_mask
from cepflow.runtime.kernels.frame import Declined, declined_on_failure
from cepflow.runtime.rows import (
    EventRows,
    LazyBindings,
    Rows,
    Triggers,
    TypeColumns,
    kind_of,
    lazy_kind,
    triggered_kind,
)
from cepflow.runtime.vector_expr import filter_mask as vector_mask
from cepflow.windows.aggregates import FIRST, N
from cepflow.windows.expressions import NOW
from cepflow.windows.held import EVENT, KEY, SEQ, TS, VALS
from cepflow.windows.output_rows import placeholder
from cepflow.windows.tumbling import TimeBatchWindow

_TS = attrgetter("ts")
#: below this every integer and float64 operation the plan does is exact
_EXACT = 2.0 ** 53
#: segments longer than this are summed by one cumsum each, shorter ones side by side
_LONG = 64


#: the slot a complex event keeps its parts in (read and filled past :class:`_Arrived`'s
#: property)
_PARTS = ComplexEvent.__dict__["parts"]


class _Arrived(LazyBindings):
    """A window block's row made by one event — an arrival row, or the row of the group a
    push-out leaves —, whose ``parts`` are ``(that event,)``: the tuple made when first read
    (most rows nobody asks for their parts; a one-tuple per row is a fifth of making it).
    Made by :func:`arrived_kind`'s constructor ``(params, ts, event)``."""

    __slots__ = ("_by",)

    def __init__(self, params: tuple[Any, ...], ts: Any, by: Event, match_id: int = -1
                 ) -> None:
        self.params, self.ts, self._by, self.match_id = params, ts, by, match_id
        self.id = self._bindings = None
        self.seq = -1

    @property  # type: ignore[override]
    def parts(self) -> tuple[Event, ...]:
        if self._by is not None:  # (first read: kept by the setter)
            self.parts = (self._by,)
        return _PARTS.__get__(self, type(self))

    @parts.setter
    def parts(self, value: Any) -> None:
        _PARTS.__set__(self, tuple(value))
        self._by = None


def arrived_kind(type_name: str, names: tuple[str, ...]) -> Any:
    """The constructor ``(params, ts, event)`` of :class:`_Arrived` rows of one statement
    (its type name and parameter names class attributes: rows.kind_of)."""
    return kind_of(_Arrived, (type_name, names), {"type": type_name, "_names": names})


def window_kernels(engine: Any) -> list[int]:
    """The positions in ``engine.windows`` of the statements a split batch plans column-wise
    (see the module docstring)."""
    produced = {a.name for a in engine.program.automata} | {
        w.name for w in engine.program.windows}
    return [i for i, r in enumerate(engine.windows) if _fits(r, produced)]


def _fits(runner: Any, produced: set[str]) -> bool:
    return runner.statement.input_type not in produced and single_fits(runner)


def single_fits(runner: Any) -> bool:
    """Whether a window statement over one type is of a form a block takes, whatever its
    input (the input, or a kernel pattern's output: kernels.cascade.plan_windows_over)."""
    st = runner.statement
    kind = st.window.kind
    return (not st.more_inputs and kind in ("time", "time_batch", "length", "length_batch")
            and _shape(runner))


def batch_fits(runner: Any) -> bool:
    """Whether a time batch over derived rows (kernels.cascade) is of a form a block takes
    (a union of types only without a filter)."""
    st = runner.statement
    return (st.window.kind == "time_batch" and (not st.more_inputs or st.filter is None)
            and _shape(runner))


def batch_reads(runner: Any) -> list[int]:
    """The parameters of its input type a time batch over derived rows reads for every row
    (its group key and its aggregates' arguments: WindowBlock.__init__'s ``per_row``; the
    rest — select items, ``having`` — only of some rows, or read from the rows' events)."""
    plan = runner.plan
    ks = [plan.fields[plan.group_exprs[0].name]] if plan.group_exprs else []
    return ks + [plan.fields[a.name] for a in plan.args]


def block_column(b: WindowBlock, k: int) -> tuple[np.ndarray, Any] | None:
    """Parameter ``k`` of the rows of window block ``b`` (over the input) as an object column,
    a value per row of ``b.found``, when the rows are its arrival rows (one per input row it
    takes, ``b.arrivals``) and item ``k`` of its select list is a field of the arriving event:
    that event's own value (the input's column, TypeColumns.objects), which the row's
    ``params[k]`` holds — with its dictionary codes when the input's column has them
    (TypeColumns.codes, read already: the block's group key), else None. None otherwise
    (the rows' objects tell)."""
    made = b.given_columns
    if k in made:  # (read once per block: every pattern over it reads the same)
        return made[k]
    st = b.statement
    kind, a = b.plan.items[k]
    if kind != "field" or st.more_inputs or not b.arrivals or len(b.found) != len(b.rows):
        made[k] = None
        return None
    t = st.input_type
    of_type = b._cols.rows(t)
    objs = b._cols.objects(t, a)
    coded = b._cols.made_codes(t, a)
    if len(of_type) != len(b.rows):
        among = np.searchsorted(of_type, b.rows)
        objs, coded = objs[among], None if coded is None else (coded[0][among], coded[1])
    made[k] = objs, coded
    return made[k]


def match_column(m: Any, b: WindowBlock, rows: np.ndarray, k: int
                 ) -> tuple[np.ndarray, Any] | None:
    """Parameter ``k`` of the matches of the single-stage pattern ``m`` (``every a = W(f)``,
    the pair kernel's) at the rows ``rows`` of window block ``b`` as an object column — a
    literal of its select list, a null, or a field of ``a`` that is a field of the input
    (:func:`block_column`) — the values the lazy match's ``params[k]`` gives
    (kernels.pair._PairMatch: the same select list positions); None for anything else (its
    time, an aggregate of ``b``: read from the matches)."""
    from cepflow.runtime.kernels.pair import _select_fields, select_consts
    from cepflow.runtime.rows import CONST

    pr = m.pattern.pair
    fields = _select_fields(m, pr) if pr is not None else None
    if fields is None or k >= len(fields):
        return None
    f = fields[k]
    if f is None or f[0] == CONST:
        value = None if f is None else select_consts(m)[f[1]]
        col = np.empty(len(rows), dtype=object)
        col[:] = [value] * len(rows)
        return col, None
    if f[0] != 0:
        return None
    of_block = block_column(b, f[1])
    if of_block is None:
        return None
    objs, coded = of_block
    return objs[rows], None if coded is None else (coded[0][rows], coded[1])


def batch_columns(runner: Any, parts: list[Any], order: np.ndarray
                  ) -> dict[int, list[Any]] | None:
    """The parameters a time batch over derived rows reads of every row (:func:`batch_reads`)
    as columns, a value per row of the derived stream in its order — the parts'
    (``parts``: per part, in the stream's part order, its column of parameter ``k``, or None:
    :func:`block_column`, :func:`match_column`) concatenated and taken in ``order`` — so that
    neither the rows' parameters are read nor the matches' made (kernels.cascade:
    air quality's AirQualityLevel over the 36 grade patterns' matches reads their station
    and grade as columns). None when a part cannot give one (the batch reads the objects)."""
    if not parts:
        return None
    out: dict[int, list[Any]] = {}
    for k in batch_reads(runner):
        cols = [part(k) for part in parts]
        if any(c is None for c in cols):
            return None
        out[k] = np.concatenate([c[0] for c in cols])[order].tolist()
    return out


def batch_codes(runner: Any, parts: list[Any], order: np.ndarray
                ) -> dict[int, tuple[np.ndarray, list[str]]]:
    """The group key of a time batch over derived rows as dictionary codes (TypeColumns.codes:
    every value a text, per row the index of its value in one list of distinct texts), when
    every part's key is the same input column's text field (:func:`block_column`'s codes);
    else nothing (the keys are numbered one by one, window_block._group_codes)."""
    plan = runner.plan
    if not plan.group_exprs or not parts:
        return {}
    k = plan.fields[plan.group_exprs[0].name]
    cols = [part(k) for part in parts]
    if any(c is None or c[1] is None for c in cols) or len({id(c[1][1]) for c in cols}) != 1:
        return {}
    return {k: (np.concatenate([c[1][0] for c in cols])[order], cols[0][1][1])}


def _shape(runner: Any) -> bool:
    """At most one group-by field, aggregates count/sum/avg/min/max of fields, select items
    that are aggregates, fields or current_timestamp() (``having`` any condition: a mask over
    the rows, WindowBlock._having)."""
    st, plan = runner.statement, runner.plan
    if st.having is not None and plan.having_expr is None:
        return False
    if len(plan.group_exprs) > 1 or (plan.group_exprs and plan.key_from_params is None):
        return False
    if plan.args and plan.args_from_params is None:
        return False
    return (all(s.func in ("count", "sum", "avg", "min", "max") for s in plan.slots)
            and all(k != "expr" for k, _ in plan.items))


def running_sums(x: np.ndarray, starts: np.ndarray, init: np.ndarray) -> np.ndarray:
    """Per segment ``x[starts[s]:starts[s+1]]`` its running sums from ``init[s]``, each value
    added to the previous sum one at a time, as Python adds them (so float sums are the same
    to the last bit): numpy's ``cumsum`` is sequential; a long segment takes one call, short
    ones are advanced side by side, one position per step."""
    out = np.empty(len(x), x.dtype)
    if not len(x):
        return out
    lens = np.diff(np.append(starts, len(x)))
    for s in np.flatnonzero(lens > _LONG).tolist():
        a, b = int(starts[s]), int(starts[s]) + int(lens[s])
        out[a:b] = np.cumsum(np.concatenate([init[s:s + 1].astype(x.dtype), x[a:b]]))[1:]
    short = np.flatnonzero(lens <= _LONG)
    if len(short):
        short = short[np.argsort(-lens[short], kind="stable")]  # (longest first: prefixes)
        first, ln = starts[short], lens[short]
        acc = init[short].astype(x.dtype)
        for j in range(int(ln[0])):
            m = int(np.searchsorted(-ln, -j, side="left"))  # segments longer than j
            at = first[:m] + j
            acc[:m] = acc[:m] + x[at]
            out[at] = acc[:m]
    return out


def _instants(reference: Any, k: int, size: Any, t_end: Any, most: int) -> np.ndarray:
    """The boundaries ``reference + i·size`` from ``i = k`` up to ``t_end``, at most ``most``,
    computed as TimeBatchWindow.boundary computes each (int64 for integers, float64 for
    floats: the same values to the last bit below 2**53); Declined for other types."""
    kinds = {type(reference), type(size)}
    if not kinds <= {int, float} or max(abs(reference), abs(size)) >= _EXACT:
        raise Declined("a batch boundary not of exact ints or floats")
    est = math.floor((float(t_end) - float(reference)) / float(size)) - k + 2
    i = k + np.arange(max(0, min(most, est)), dtype=np.int64)
    b = (np.float64(reference) + i * np.float64(size) if float in kinds
         else np.int64(reference) + i * np.int64(size))
    return b[b <= t_end]


def _group_codes(keys: list[Any], prior: list[Any],
                 coded: tuple[np.ndarray, list[str]] | None = None
                 ) -> tuple[np.ndarray, list[Any]]:
    """Group numbers for ``keys`` by dict equality (as the runner's groups), the ``prior``
    groups numbered first; the key objects by number (each new group's first key). A float
    NaN key declines. ``coded``: the last ``len(coded[0])`` keys as dictionary codes of texts
    (TypeColumns.codes), numbered by their distinct values, in order of first appearance."""
    if prior in ([], [()]) and keys and keys[0] == () and keys.count(()) == len(keys):
        return np.zeros(len(keys), np.int64), [()]  # (no group by: one group)
    num: dict[Any, int] = {k: i for i, k in enumerate(prior)}
    objs = list(prior)
    out = []
    tail = len(keys) - len(coded[0]) if coded is not None else len(keys)
    for k in itertools.islice(keys, tail):
        if k.__class__ is float and k != k:
            raise Declined("a NaN group key")
        g = num.get(k)
        if g is None:
            g = num[k] = len(objs)
            objs.append(k)
        out.append(g)
    if coded is None:
        return np.array(out, np.int64), objs
    c = coded[0]
    seen, first = np.unique(c, return_index=True)
    lut = np.zeros(len(coded[1]), np.int64)
    for code, at in sorted(zip(seen.tolist(), first.tolist(), strict=True),
                           key=itemgetter(1)):
        k = keys[tail + at]  # (the group's first key, as the runner would keep it)
        g = num.get(k)
        if g is None:
            g = num[k] = len(objs)
            objs.append(k)
        lut[code] = g
    return np.concatenate([np.array(out, np.int64), lut[c]]), objs


def _numbers(values: list[Any], want: type | None, what: str,
             given: np.ndarray | None = None) -> tuple[np.ndarray, type | None]:
    """``values`` as an exact int64 or float64 column, all of one Python type (``want``, when
    the state already holds one); else Declined (mixed, null, boolean or text values, or
    numbers beyond 2**53). ``given``: the same values as a numpy column already (the input's,
    TypeColumns.column), taken when of that type's dtype."""
    kinds = set(map(type, values))
    if want is not None:
        kinds.add(want)
    if not kinds:
        return np.zeros(0, np.int64), None
    if given is not None and len(given) == len(values) and (
            (kinds == {int} and given.dtype == np.int64)
            or (kinds == {float} and given.dtype == np.float64)):
        return given, kinds.pop()
    if kinds == {int}:
        try:
            col = np.array(values, dtype=np.int64)
        except OverflowError:
            raise Declined(f"{what}: integers beyond 64 bits") from None
        return col, int
    if kinds == {float}:
        return np.array(values, dtype=np.float64), float
    raise Declined(f"{what}: values of type {', '.join(sorted(k.__name__ for k in kinds))}")


def _made_rows(kind: Any, cols: list[list[Any]], now: list[Any], rows: list[int], src: Rows,
               block_rows: np.ndarray, places: np.ndarray) -> list[ComplexEvent]:
    """The arrival rows at ``places`` of a block whose rows were not made (``unread``: a
    ``Deferred``'s objects): the same lazy rows ``WindowBlock._rows`` makes (``kind``, the
    items' columns ``cols``, the times ``now``, the input rows ``rows``), their triggers made
    together when one is read (rows.Triggers over those places' rows only)."""
    idx = places.tolist()
    picked = [list(map(c.__getitem__, idx)) for c in cols]
    params: Any = zip(*picked, strict=True) if picked else repeat((), len(idx))
    trig = Triggers(src, block_rows[places])
    return list(map(kind, params, map(now.__getitem__, idx), repeat(trig),
                    map(rows.__getitem__, idx)))


def _passed(at: list[int], found: Any, having: bool = True) -> tuple[list[int], Any]:
    """The rows ``having`` kept (the others are None) and their input rows (rows not made,
    a ``Deferred``, or of a statement without ``having``: all kept)."""
    if not having or isinstance(found, Deferred) or all(r is not None for r in found):
        return at, found
    keep = [i for i, r in enumerate(found) if r is not None]
    return [at[i] for i in keep], [found[i] for i in keep]


def _count_log(gcode: np.ndarray, by_group: np.ndarray, g_first: np.ndarray, m: int, n: int,
               size: int, lanes: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A length window's log over the batch: per arrival (positions ``m`` on, after the
    ``m`` held records) its entry, then the entry of the record it pushes out — the window's
    ``size``-th before it, or its group's (``lanes``: ``#groupwin``; records by group then
    arrival in ``by_group``, group ``g`` from ``g_first[g]``). The log's positions, which
    entries are arrivals, each arrival's entry and the position each pushes out (-1: none)."""
    a = m + np.arange(n)
    if lanes:
        rank = np.empty(m + n, np.int64)
        rank[by_group] = np.arange(m + n) - g_first[gcode[by_group]]
        back = rank[a] - size
        removed = np.where(back >= 0, by_group[np.maximum(g_first[gcode[a]] + back, 0)], -1)
    else:
        removed = np.where(a >= size, a - size, -1)
    out = removed >= 0
    k = 1 + out.astype(np.int64)
    start = np.cumsum(k) - k
    src = np.empty(int(k.sum()), np.int64)
    src[start] = a
    src[start[out] + 1] = removed[out]
    is_arr = np.zeros(len(src), bool)
    is_arr[start] = True
    return src, is_arr, start, removed


class _Extremes:
    """Sliding min/max over a sliding log: at an entry, the extreme of its group's window — a
    run ``lo..hi`` of the records by group then arrival (``by_group``) —, read by a sparse
    table (the extreme of two overlapping power-of-two runs). Values of one type (ints or
    floats, _numbers), so the extreme is the value the runner's monotonic deque holds; a NaN
    or -0.0 declines (where which of equal values stays would tell)."""

    def __init__(self, agg: Any, args: list[tuple[np.ndarray, type | None]],
                 by_group: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> None:
        self.lo, self.hi, self.by_group = lo, hi, by_group
        self.n_args = len(args)
        #: per argument with min or max: its values by group then arrival, and which it needs
        self.cols: dict[int, tuple[np.ndarray, bool, bool]] = {}
        for (col, _kind), (j, _b, _tot, mn, mx) in zip(args, agg._args, strict=True):
            if not (mn or mx):
                continue
            x = col[by_group]
            if x.dtype.kind == "f" and bool(np.any(np.isnan(x) | ((x == 0) & np.signbit(x)))):
                raise Declined("a NaN or -0.0 under min/max")
            self.cols[j] = (x, mn, mx)
        self._tables: dict[tuple[int, bool], list[np.ndarray]] = {}

    def at(self, j: int, is_max: bool, idx: np.ndarray) -> list[Any]:
        """Argument ``j``'s minimum or maximum at the entries ``idx`` (anything where the
        window is empty: the caller puts the empty value there)."""
        x = self.cols[j][0]
        lo, hi = self.lo[idx], self.hi[idx]
        length = hi - lo + 1
        ok = length > 0
        out = np.zeros(len(idx), x.dtype)
        if not ok.any():
            return out.tolist()
        level = np.frexp(np.maximum(length, 1).astype(np.float64))[1] - 1  # floor(log2)
        table = self._tables.get((j, is_max))
        top = int(level[ok].max())
        pick = np.maximum if is_max else np.minimum
        if table is None:
            table = self._tables[(j, is_max)] = [x]
        while len(table) <= top:
            prev, half = table[-1], 1 << (len(table) - 1)
            table.append(pick(prev, prev[np.minimum(np.arange(len(prev)) + half,
                                                    len(prev) - 1)]))
        for k in np.unique(level[ok]).tolist():
            sel = ok & (level == k)
            t = table[k]
            out[sel] = pick(t[lo[sel]], t[hi[sel] - (1 << k) + 1])
        return out.tolist()

    def deques(self, e: int, seq_of: Any) -> list[Any] | None:
        """Per argument, the monotonic deques (min, max) of ``[(seq, value)]`` the runner's
        Aggregation holds for the window at entry ``e``: the values no later one reaches
        (strictly below, resp. above every later value)."""
        if not self.cols:
            return None
        lo, hi = int(self.lo[e]), int(self.hi[e])
        pos = self.by_group[lo:hi + 1].tolist()
        out: list[Any] = [(None, None)] * self.n_args
        for j, (x, mn, mx) in self.cols.items():
            vals = x[lo:hi + 1].tolist()
            out[j] = (_monotonic(pos, vals, seq_of, False) if mn else None,
                      _monotonic(pos, vals, seq_of, True) if mx else None)
        return out


def _monotonic(pos: list[int], vals: list[Any], seq_of: Any, is_max: bool) -> deque[Any]:
    """The deque of ``(seq, value)`` a sliding min (max) keeps over ``vals`` entered in
    order: each value strictly below (above) every later one."""
    kept: list[tuple[int, Any]] = []
    best = None
    for p, v in zip(reversed(pos), reversed(vals), strict=True):
        if best is None or (v > best if is_max else v < best):
            kept.append((seq_of(p), v))
            best = v
    kept.reverse()
    return deque(kept)


class WindowBlock:
    """One window statement's plan over one batch, standing in for its runner meanwhile
    (``due``, ``process``, ``advance_to``, ``window``, ``statement``: what the engine calls)."""

    def __init__(self, engine: Any, runner: Any, cols: TypeColumns, src: Rows,
                 t_end: Any = None, unread: bool = False) -> None:
        self.runner = runner
        self.statement = runner.statement
        self.name = runner.statement.name
        self.plan = plan = runner.plan
        self.match_ids = engine.host.counters.next_match
        self.due = float("inf")
        #: the rows that open no instance (the split's Plan shape), the arrival rows' input
        #: rows and their complex events (ids given when emitted)
        self.new_rows = np.zeros(0, np.int64)
        self.at: list[int] = []
        self.found: list[ComplexEvent] = []
        #: set by the split: who gives an emitted row's match id (split._Replay)
        self.emit_at: Any = None
        #: whether every row of :attr:`found` is the arrival row of its input row :attr:`at`
        #: (its fields that row's own: kernels.column_blocks describes them as a block)
        self.arrivals = False
        st = self.statement
        t = st.input_type
        rows = (cols.rows(t) if not st.more_inputs else
                np.sort(np.concatenate([cols.rows(u) for u in st.input_types])))
        #: the batch's last instant (the input's, also for a block over derived rows)
        self.t_end = src.time_at(src.n - 1) if t_end is None else t_end
        self.last_seen = src.time_at(int(rows[-1])) if len(rows) else None
        if float(np.abs(src.ts).max(initial=0.0)) >= _EXACT:
            raise Declined("timestamps beyond 2**53")
        mask = None
        if plan.filter is not None:
            assert not st.more_inputs
            where = strip_alias(st.filter, st.alias)
            mask = filter_mask(SimpleNamespace(filter=plan.filter, where=where), rows,
                               plan.fields, lambda k: cols.column(t, k), cols.events,
                               lambda k: cols.codes(t, k))
            rows = rows[mask]
        self.rows = rows
        #: the events of the rows, by row (a time batch of rows per batch or group reads only
        #: its batches' first rows: over a column source only those are made, _fetch)
        self._lazy = st.window.kind in ("time_batch", "length_batch") and plan.mode != "event"
        #: rows of the block whose events a lazy block makes besides its batches' first rows
        #: (a length batch's closing rows: its rows' trigger)
        self._want: list[int] = []
        self._cols, self._src = cols, src
        #: over a column source a time window's arrival rows are made without their events
        #: (their parts made when first read: rows.Triggers), and the events of the records
        #: the runner keeps when it keeps them (_records): the batch decodes only those
        #: (no having, which reads the events; a fully aggregated window's rows on expiry
        #: read the events of their groups' first leaving records: only those are made)
        self._on_demand = (st.window.kind == "time" and not st.window.per_group
                           and not isinstance(src, EventRows) and not st.more_inputs
                           and plan.having_expr is None)
        #: ``unread`` (only the output reads the rows, a column source: split_columns): the
        #: arrival rows made on demand are not made at all — :attr:`found` is a ``Deferred``
        #: (kernels.column_blocks) making those asked for, the file job writes the block
        #: from :attr:`item_columns` (ColumnBlocks.add_window)
        self.unread = unread and self._on_demand
        #: per select item, its value per arrival row (set when the rows are not made)
        self.item_columns: list[list[Any]] | None = None
        #: per select item, its column over the rows as block_column reads it (or None)
        self.given_columns: dict[int, tuple[np.ndarray, Any] | None] = {}
        self.events: Any = (cols.events(rows[:0] if self._lazy or self._on_demand else rows)
                            if len(rows) else [])
        n = len(rows)
        # group keys and aggregate arguments: Python values (the records') and columns
        own = not st.more_inputs  # (rows of one type: its columns, an event list's or not)
        sel = None if mask is None else np.flatnonzero(mask)  # (among the type's rows)

        def per_row(k: int) -> list[Any]:  # (parameter k of the rows, a value per row)
            if own:  # (the type's column, read once for every statement of the batch,
                col = cols.objects(t, k)  # TypeColumns.objects)
                return (col if sel is None else col[sel]).tolist()
            local, uniq = src.values(k, rows)
            if isinstance(src, EventRows):  # (a value per row already, in order)
                return uniq
            return [uniq[i] for i in local.tolist()]

        #: parameter k of the rows, the rows' own values (None: read from the events)
        self._own_values = per_row if own else None

        def own_column(k: int) -> np.ndarray:  # (parameter k of the rows as numpy infers it,
            col = cols.column(t, k)  # read once for every statement of the batch)
            return col if sel is None else col[sel]

        #: parameter k of the rows as a numpy column (None: not of one type's rows)
        self._own_column = own_column if own else None

        self.key_of: list[Any] = [()] * n
        #: the group keys as dictionary codes when they are texts (TypeColumns.codes)
        self.key_codes: tuple[np.ndarray, list[str]] | None = None
        if plan.group_exprs:
            kf = plan.fields[plan.group_exprs[0].name]
            self.key_of = per_row(kf)
            coded = cols.codes(t, kf) if own else None  # (texts: one number per distinct)
            if coded is None and isinstance(src, EventRows) and len(rows) == src.n:
                coded = src.given_codes.get(kf)  # (derived rows' texts: batch_columns)
            if coded is not None:
                self.key_codes = (coded[0] if sel is None else coded[0][sel], coded[1])
        self.arg_values: list[list[Any]] = [per_row(plan.fields[a.name]) for a in plan.args]
        self.ts = src.ts[rows]
        if st.window.kind in ("time", "length"):
            self._plan_sliding()
        else:
            self._plan_batches()

    # -- what the engine calls during the batch ---------------------------------------------
    @property
    def window(self) -> WindowBlock:
        return self

    def process(self, event: Event) -> list[ComplexEvent]:
        """The rows planned at the current (stepped) row for ``event`` (a block over the
        input: all of them; over a kernel pattern's matches: those ``event`` made), with the
        next match ids."""
        return self.emit_at(self, event)

    def advance_to(self, t: float) -> list[ComplexEvent]:
        """The rows of the batch boundary at ``t`` (the next planned close), with the next
        match ids."""
        b, found = self._closes[self._next]
        assert b == t
        self._next += 1
        self.due = self._closes[self._next][0] if self._next < len(self._closes) else self._due_end
        for ce in found:
            ce.match_id = self.match_ids()
        return found

    # -- a time batch nothing reads: its boundaries recorded in bulk (split._run) ------------
    def closes(self) -> list[tuple[Any, list[ComplexEvent]]]:
        """The batch's boundaries in time order: (instant, its rows, ids not yet given)."""
        return self._closes

    def hide(self) -> None:
        """No boundary is due to the engine: the split records them in bulk meanwhile."""
        self.due = float("inf")

    def expose(self, first: int) -> None:
        """Before a stepped row: the boundaries from the ``first``-th on (the earlier ones were
        recorded in bulk) are due to the engine again, which closes those up to the row."""
        self._next = first
        self.due = self._closes[first][0] if first < len(self._closes) else self._due_end

    def commit(self, token_ids: np.ndarray) -> None:
        """Leave the runner as event-by-event feeding would have left it, and drop the
        batch's plan: its closures refer back to the block, a cycle only the collector would
        free, after walking everything the plan holds."""
        self._commit()
        self.__dict__.clear()

    # -- values -----------------------------------------------------------------------------
    def _values(self, n: int, totals: list[Any], ext: list[Any] | None = None
                ) -> tuple[Any, ...]:
        """Every slot's value for a group of ``n`` events (none null) with ``totals`` (per
        argument; None where no sum is kept) and ``ext`` (per argument: (min, max), batch
        windows)."""
        return tuple(c[0] for c in self._slot_columns(
            [n], [[t] for t in totals], [ext] if ext is not None else []))

    def _row(self, ev: Event, vals: tuple[Any, ...], now: Any, trigger: Event | None,
             match_id: int) -> ComplexEvent | None:
        if self.plan.having_expr is not None and not self._having([ev], [[v] for v in vals],
                                                                  [now])[0]:
            return None
        params = tuple([vals[a] if k == "agg" else ev.params[a] if k == "field" else now
                        for k, a in self.plan.items])
        return ComplexEvent(self.name, params, now, dict(zip(self.plan.aliases, params,
                                                             strict=False)),
                            () if trigger is None else (trigger,), match_id)

    def _rows(self, evs: list[Event] | None,
              slot_cols: list[list[Any]] | list[tuple[Any, ...]],
              times: list[Any] | None = None, arrivals: list[Any] | None = None,
              triggers: list[Event] | None = None, rows: list[int] | None = None
              ) -> list[ComplexEvent]:
        """Rows column by column (ids given later): the arrival rows of ``evs`` (each its own
        trigger, at its time), or with ``times`` boundary rows (no trigger; the fields of
        ``evs``, the groups' representatives) at those instants, or with ``triggers`` rows
        of the representatives ``evs`` made by those arrivals (at ``arrivals``, their times).
        ``slot_cols`` holds every aggregate slot's value per row; ``arrivals``, when given,
        the times of the arrivals. With ``evs`` None (``_on_demand``): the arrival rows of
        all the block's rows ``rows`` (``arrivals`` their times), each its own trigger, made
        when first read (rows.Triggers)."""
        name, aliases = self.name, self.plan.aliases
        now: Any = (times if times is not None else arrivals if arrivals is not None
                    else list(map(_TS, evs or ())))
        # (an arrival row's fields are its own row's: the type's columns, per_row)
        values = self._own_values if times is None and triggers is None else None
        cols = [slot_cols[a] if k == "agg" else values(a) if k == "field" and values
                else [e.params[a] for e in evs or ()] if k == "field" else now
                for k, a in self.plan.items]
        if values is not None and self.plan.having_expr is None:
            self.item_columns = cols  # (arrival rows' items: read as columns, kernels.cascade)
        if not cols:
            params: Any = repeat((), len(now))
        else:
            params = zip(*cols, strict=True)
        if evs is None:
            assert rows is not None and values is not None and self.plan.having_expr is None
            kind = triggered_kind(name, aliases)
            if self.unread:  # (nothing but the output reads them: made when asked for)
                self.item_columns = cols
                return Deferred(name, len(rows), partial(_made_rows, kind, cols, now, rows,
                                                         self._src, self.rows))
            trig = Triggers(self._src, self.rows)
            return list(map(kind, params, now, repeat(trig), rows))
        # (a boundary's rows have no parts; a row made by an event has it as its parts)
        parts = (repeat(()) if times is not None else evs if triggers is None
                 else triggers)
        kind = (lazy_kind if times is not None else arrived_kind)(name, aliases)
        if self.plan.having_expr is None or not len(evs):
            return list(map(kind, params, now, parts))
        # (the rows having rejects are None: made only for those it keeps)
        keep = self._having(evs, slot_cols, now, values).tolist()
        return [kind(ps, t, pt) if k else None
                for ps, t, pt, k in zip(params, now, parts, keep, strict=False)]

    def _having(self, evs: list[Event], slot_cols: Any, now: list[Any],
                own: Any = None) -> np.ndarray:
        """``having`` of each row (its representative event ``evs[i]``, its slots' values,
        its time): column-wise where runtime.vector_expr decides it exactly, else the
        compiled closure per row, as the row builder calls it; a failure on a row declines
        the batch (the per-event runner then reports it in its place). ``own``: the fields
        of the block's own rows, when ``evs`` are they."""
        plan = self.plan
        nf, ns = len(plan.fields), len(plan.slots)
        names = {**plan.fields, **{placeholder(i): nf + i for i in range(ns)}, NOW: nf + ns}

        def column(i: int) -> Any:
            if i < nf:
                return own(i) if own is not None else [e.params[i] for e in evs]
            return slot_cols[i - nf] if i < nf + ns else now

        mask = vector_mask(plan.having_expr, names, column)
        if mask is not None:
            return mask
        having = self.runner.window.proc.rows.having
        holders = [placeholder(i) for i in range(ns)]
        declined = "having failed on a row: event by event"
        try:
            with declined_on_failure(declined):
                out = []
                for i, e in enumerate(evs):
                    bindings = dict(zip(holders, [c[i] for c in slot_cols], strict=True))
                    bindings[NOW] = now[i]
                    out.append(bool(having(e, bindings)))
        except EvaluationError:  # (no sink installed)
            raise Declined(declined) from None
        return np.array(out, bool)

    def _summed(self) -> list[tuple[int, int, bool]]:
        """Per argument (index, base slot in a group's state, whether sum/avg keep its total)."""
        agg = self.runner.window.proc.agg
        return [(j, b, tot) for j, b, tot, _mn, _mx in agg._args]

    def _state(self, n: int, first: Any, totals: list[Any], ext: list[Any] | None = None
               ) -> list[Any]:
        """A group's aggregate state list (aggregates.Aggregation's layout; a batch window's
        min/max as plain values)."""
        agg = self.runner.window.proc.agg
        st = agg._template.copy()
        st[N], st[FIRST] = n, first
        for j, b, tot, mn, mx in agg._args:
            st[b] = n
            if tot:
                st[b + 1] = totals[j]
            if mn:
                st[b + 2] = ext[j][0]  # type: ignore[index]
            if mx:
                st[b + 3] = ext[j][1]  # type: ignore[index]
        return st

    def _arg_columns(self, prior_vals: list[tuple[Any, ...]], prior_totals: list[list[Any]]
                     ) -> list[tuple[np.ndarray, type | None]]:
        """Per argument: the prior records' values then the batch's, as one exact column."""
        out = []
        for j, tot in [(j, tot) for j, _b, tot in self._summed()]:
            want = None
            if tot:
                kinds = {type(t[j]) for t in prior_totals}
                if len(kinds) > 1:
                    raise Declined("sums of several types")
                want = kinds.pop() if kinds else None
            vals = ([v[j] for v in prior_vals] + self.arg_values[j] if prior_vals
                    else self.arg_values[j])
            given = (self._own_column(self.plan.fields[self.plan.args[j].name])
                     if self._own_column is not None and not prior_vals else None)
            col, kind = _numbers(vals, want, self.plan.args[j].name, given)
            if tot and len(col) and kind is int and float(np.abs(col).sum(dtype=np.float64)) \
                    + sum(abs(t[j]) for t in prior_totals) >= _EXACT:
                raise Declined("integer sums beyond 2**53")
            out.append((col, kind))
        return out

    # -- #time(Δ) and #length(n) (also #groupwin(k)#length(n)): rows at every arrival --------
    def _plan_sliding(self) -> None:
        runner = self.runner
        win = runner.window
        spec = self.statement.window
        size, timed, lanes = spec.size, spec.kind == "time", spec.per_group
        # (the held records: a #groupwin window's lanes one after another, each in order)
        held = [r for d in win.items.values() for r in d] if lanes else list(win.items)
        groups = win.proc.agg.groups
        m, n = len(held), len(self.rows)
        g_prior = list(groups)
        gcode, objs = _group_codes([r[KEY] for r in held] + self.key_of, g_prior,
                                   self.key_codes)
        p_n = np.zeros(len(objs), np.int64)
        summed = self._summed()
        p_tot = [[0] * len(objs) for _ in summed]
        for g, st in enumerate(groups.values()):
            p_n[g] = st[N]
            for j, b, _tot in summed:
                p_tot[j][g] = st[b + 1]
        args = self._arg_columns([r[VALS] for r in held],
                                 [[st[b + 1] for _j, b, _t in summed] for st in groups.values()])
        # the records by group, then arrival (held first): a group's window is always a run
        # of them, as events leave in arrival order (read by #groupwin's lanes and min/max)
        minmax = any(mn or mx for *_, mn, mx in win.proc.agg._args)
        by_group = g_first = np.zeros(0, np.int64)
        if lanes or minmax:
            by_group = np.argsort(gcode, kind="stable")
            g_first = np.searchsorted(gcode[by_group], np.arange(len(objs)))
        # the log: every arrival of the batch and every record leaving by its end, in the
        # order the runner applies them — a time window's expiries first at one instant, a
        # length window's arrival then the record it pushes out (the same update)
        removed: np.ndarray | None = None
        if timed:
            all_ts = np.concatenate([np.array([r[TS] for r in held], np.float64), self.ts])
            expiry = all_ts + size
            p = int(np.searchsorted(expiry, float(self.t_end), side="right"))
            # (both kinds come in time order, each in arrival order: merged by their places
            # in each other — an expiry before the arrivals at its instant —, not sorted)
            arr_ts, exp_ts = all_ts[m:], expiry[:p]
            at_arr = np.arange(n) + np.searchsorted(exp_ts, arr_ts, side="right")
            at_exp = np.arange(p) + np.searchsorted(arr_ts, exp_ts, side="left")
            src = np.empty(n + p, np.int64)
            src[at_arr] = np.arange(m, m + n)
            src[at_exp] = np.arange(p)
            is_arr = np.zeros(n + p, bool)
            is_arr[at_arr] = True
        else:
            p = max(0, m + n - int(size))  # (an ungrouped length window: the first p leave)
            src, is_arr, at_arr, removed = _count_log(gcode, by_group, g_first, m, n,
                                                      int(size), lanes)
        sign = np.where(is_arr, 1, -1)
        grp = gcode[src]
        order = np.argsort(grp, kind="stable")  # by group, then log order
        gs, so = grp[order], src[order]
        first_of_group = np.ones(len(order), bool)
        first_of_group[1:] = gs[1:] != gs[:-1]
        counts = np.cumsum(sign[order])
        base = np.maximum.accumulate(np.where(first_of_group, np.arange(len(order)), 0))
        counts = counts - (counts - sign[order])[base] + p_n[gs]
        # a group empties where its count reaches 0: its sums start again from 0 after
        seg = first_of_group.copy()
        seg[1:] |= counts[:-1] == 0
        starts = np.flatnonzero(seg)
        fresh = ~first_of_group[starts] | (p_n[gs[starts]] == 0)
        totals: list[np.ndarray | None] = []
        for (col, kind), (j, _b, tot) in zip(args, summed, strict=True):
            if not tot:
                totals.append(None)
                continue
            x = col[so] * sign[order]
            prior = np.array(p_tot[j], dtype=np.float64 if kind is float else np.int64)
            init = np.where(fresh, 0, prior[gs[starts]]).astype(x.dtype)
            totals.append(running_sums(x, starts, init))
        extremes = None
        if minmax:  # (each log entry's window, as a run of its group's records)
            arrived = np.cumsum(is_arr[order])
            left = np.arange(1, len(order) + 1) - arrived
            arrived = arrived - (arrived - is_arr[order])[base]
            left = left - (left - ~is_arr[order])[base]
            lo = g_first[gs] + left
            hi = g_first[gs] + p_n[gs] + arrived - 1
            extremes = _Extremes(win.proc.agg, args, by_group, lo, hi)

        def values_at(idx: np.ndarray) -> list[list[Any]]:
            return self._slots_at(idx, counts, totals, extremes)

        # the arrival rows, in the batch's order (a length window's after the record its
        # arrival pushes out, when of its group)
        where = np.empty(len(order), np.int64)
        where[order] = np.arange(len(order))
        pos = where[at_arr]
        if removed is not None:
            out_ = removed >= 0
            same = np.zeros(n, bool)
            same[out_] = gcode[removed[out_]] == gcode[m + np.flatnonzero(out_)]
            pos = pos + same
        ev, rows = self.events, self.rows.tolist()
        # (on demand: timed, so no record pushes another out, and no rows on expiry — the
        # arrival rows' events are made when read)
        evs = None if self._on_demand else list(map(ev.__getitem__, rows))
        # (the arrivals' times: their rows', and the expiries')
        now = self._src.times(self.rows) if evs is None else list(map(_TS, evs))
        ev_of = [r[EVENT] for r in held] + evs if held and evs is not None else evs

        def events_of(pos: list[int]) -> list[Event]:  # (of held + batch positions pos)
            if ev_of is not None:
                return list(map(ev_of.__getitem__, pos))
            new = self.rows[np.array([k - m for k in pos if k >= m], np.int64)]
            made = self._cols.events(new) if len(new) else {}
            return [held[k][EVENT] if k < m else made[int(self.rows[k - m])] for k in pos]

        other = (np.flatnonzero(out_ & ~same) if removed is not None and not lanes
                 and self.plan.mode == "group" else np.zeros(0, np.int64))
        if not len(other):
            found = self._rows(evs, values_at(pos), arrivals=now, rows=rows)
            at = rows
            self.arrivals = True
        else:  # (and a row for the group of the record it pushed out, when another group)
            j = np.concatenate([np.arange(n), other])
            o = np.argsort(j, kind="stable")
            j_l = j[o].tolist()
            at_idx = np.concatenate([pos, where[at_arr[other] + 1]])[o]
            reps = [ev_of[k] for k in np.concatenate([np.arange(m, m + n),
                                                      removed[other]])[o].tolist()]
            found = self._rows(reps, values_at(at_idx), arrivals=[now[i] for i in j_l],
                               triggers=[evs[i] for i in j_l])
            at = [rows[i] for i in j_l]
        self.at, self.found = _passed(at, found, self.plan.having_expr is not None)
        self._closes: list[Any] = []
        self._next = 0
        self._due_end = float("inf")
        if timed and self.plan.mode == "group":  # (fully aggregated: rows on expiry too)
            ts_of = [r[TS] for r in held] + now if held else now
            self._plan_expiries(is_arr[order], gs, so, expiry, ts_of, events_of, p, size,
                                values_at)

        def commit() -> None:
            assert self._next == len(self._closes), "a planned expiry instant was not reached"
            seq0 = runner._seq
            made: dict[int, tuple[Any, ...]] = {}
            # (the records of the batch's rows still held, column by column: _record's)
            low = max(p - m, 0) if not lanes else n
            recs = self._records(low, n, seq0)

            def rec(k: int) -> tuple[Any, ...]:  # (the record of held + batch position k)
                if k < m:
                    return held[k]
                if k - m >= low:
                    return recs[k - m - low]
                r = made.get(k)
                if r is None:
                    r = made[k] = self._record(k - m, seq0 + k - m)
                return r

            # the groups left: those with events; one never emptied keeps its place, one
            # (re)created in the batch goes after them, in the order of its creating arrival
            last = np.ones(len(order), bool)
            last[:-1] = gs[1:] != gs[:-1]
            ends = np.flatnonzero(last)
            seg_of = np.searchsorted(starts, ends, side="right") - 1
            carried: dict[int, list[Any]] = {}
            created: list[tuple[int, Any, list[Any]]] = []
            for e_i, s in zip(ends.tolist(), seg_of.tolist(), strict=True):
                c = int(counts[e_i])
                if c == 0:
                    continue
                g, s_i = int(gs[e_i]), int(starts[s])
                tots = [t[e_i].item() if t is not None else 0 for t in totals]
                ext = (extremes.deques(e_i, lambda k: rec(k)[SEQ]) if extremes is not None
                       else None)
                if fresh[s]:  # (keyed by its creating arrival's key, as the runner's dict)
                    first = rec(int(so[s_i]))
                    created.append((int(order[s_i]), first[KEY],
                                    self._state(c, first, tots, ext)))
                else:
                    carried[g] = self._state(c, groups[objs[g]][FIRST], tots, ext)
            touched = set(np.unique(gs).tolist())
            out: dict[Any, list[Any]] = {}
            for g, (key, st) in enumerate(groups.items()):
                if g not in touched:
                    out[key] = st
                elif g in carried:
                    out[key] = carried[g]
            for _w, key, st in sorted(created, key=lambda x: x[0]):
                out[key] = st
            win.proc.agg.groups = out
            kept = [] if lanes else [*held[p:], *recs]
            if lanes:  # (each group's last n records; a lane keeps its key object)
                win.items = self._lanes(win.items, objs, gcode, by_group, g_first, int(size),
                                        touched, rec)
            else:
                win.items = deque(kept)
            if timed:
                win.due = kept[0][TS] + size if kept else float("inf")
                self._clock([rec(p - 1)[TS] + size] if p else [])
            else:
                self._clock([])
            runner._seq = seq0 + n

        self._commit = commit

    def _records(self, lo: int, hi: int, seq0: int) -> list[tuple[Any, ...]]:
        """The records of the batch's rows ``lo`` to ``hi``, column by column (:meth:`_record`
        's)."""
        rows = self.rows[lo:hi].tolist()
        ev = self._cols.events(self.rows[lo:hi]) if self._on_demand else self.events
        args = (zip(*(v[lo:hi] for v in self.arg_values), strict=True) if self.arg_values
                else repeat((), hi - lo))
        evs = list(map(ev.__getitem__, rows))
        return list(zip(map(_TS, evs), range(seq0 + lo, seq0 + hi), self.key_of[lo:hi], args,
                        evs, strict=True))

    @staticmethod
    def _lanes(items: dict[Any, deque[Any]], objs: list[Any], gcode: np.ndarray,
               by_group: np.ndarray, g_first: np.ndarray, size: int, touched: set[int],
               rec: Any) -> dict[Any, deque[Any]]:
        """A ``#groupwin`` window's lanes after the batch: each touched group's last ``size``
        records (held and batch, by group then arrival); the groups in the order they first
        came, a lane carried in keeping its key object (GroupLengthWindow.insert)."""
        ends = np.append(g_first[1:], len(gcode))
        num = {k: g for g, k in enumerate(objs)}  # (the lanes' keys: their groups by equality)
        out: dict[Any, deque[Any]] = {}
        for key in itertools.chain(items, objs[len(items):]):
            g = num[key]
            if g not in touched:
                out[key] = items[key]
                continue
            lo = max(int(g_first[g]), int(ends[g]) - size)
            out[key] = deque(map(rec, by_group[lo:int(ends[g])].tolist()))
        return out

    def _slots_at(self, idx: np.ndarray, counts: np.ndarray, totals: list[np.ndarray | None],
                  extremes: _Extremes | None) -> list[list[Any]]:
        """Every aggregate slot's value at the sliding log's entries ``idx`` (by group, then
        log order), as Aggregation.values reads the group's state there: count 0 and null
        aggregates for a group left empty."""
        n_at = counts[idx]
        empty = n_at == 0
        div = np.where(empty, 1, n_at)
        zero = empty.tolist() if empty.any() else None
        cols: list[list[Any]] = []
        for sl, e in zip(self.plan.slots, self.runner.window.proc.agg.empty_values,
                         strict=True):
            if sl.func == "count" or sl.arg is None:
                col = n_at.tolist()
            elif sl.func in ("sum", "avg"):
                t = totals[sl.arg_index][idx]  # type: ignore[index]
                col = (t if sl.func == "sum" else t / div).tolist()
            else:
                col = extremes.at(sl.arg_index, sl.func == "max", idx)  # type: ignore[union-attr]
            if zero is not None:
                col = [e if z else v for v, z in zip(col, zero, strict=True)]
            cols.append(col)
        return cols

    def _fetch(self, idx: list[int]) -> None:
        """Make the events of the block's rows ``idx`` (a lazy block's: see ``events``)."""
        idx = [*idx, *self._want]
        if self._lazy and idx:
            self.events = self._cols.events(self.rows[np.array(idx, np.int64)])

    def _plan_expiries(self, arrival: np.ndarray, gs: np.ndarray, so: np.ndarray,
                       expiry: np.ndarray, ts_of: list[Any], events_of: Any, p: int,
                       size: Any, values_at: Any) -> None:
        """The rows a fully aggregated ``#time`` statement outputs as time passes
        (processor.PerGroupRows.expire): at every expiry instant the batch reaches, one row per
        group that events leave, in the order of each group's first leaving event, with the
        group's values after all its events leaving then (count 0 and nulls for a group left
        empty), its first leaving event as the row's event, no trigger. ``arrival``, ``gs`` and
        ``so`` are the log by group (then log order) as :meth:`_plan_sliding` has it,
        ``values_at`` the slots' values at its entries; ``ts_of`` the held and batch records'
        times by position, ``events_of`` their events at a list of positions; ``p`` the
        expiries due by the batch's end."""
        self._due_end = ts_of[p] + size if p < len(ts_of) else float("inf")
        q = np.flatnonzero(~arrival)
        if not len(q):
            self.due = self._due_end
            return
        # one (group, instant) run is contiguous: a group's entries are in log order, where an
        # instant's expiries come before its arrivals
        eg, esrc = gs[q], so[q]
        et = expiry[esrc]
        brk = np.ones(len(q), bool)
        brk[1:] = (eg[1:] != eg[:-1]) | (et[1:] != et[:-1])
        first = np.flatnonzero(brk)
        last = q[np.append(first[1:], len(q)) - 1]
        rep = esrc[first]
        o = np.lexsort((rep, et[first]))  # by instant, then first leaving event
        rep, last, inst = rep[o].tolist(), last[o], et[first][o]
        vals = values_at(last)
        cut = [*np.flatnonzero(np.append(True, inst[1:] != inst[:-1])).tolist(), len(last)]
        # (the instant as the runner computes it: its first leaving record's time + Δ)
        instants = [ts_of[rep[lo]] + size for lo in cut[:-1]]
        now = np.repeat(np.array(instants, object), np.diff(cut)).tolist()
        rows = self._rows(events_of(rep), vals, now)
        kept = ((lambda lo, hi: rows[lo:hi]) if self.plan.having_expr is None else
                (lambda lo, hi: [r for r in rows[lo:hi] if r is not None]))
        self._closes = list(zip(instants, map(kept, cut[:-1], cut[1:]), strict=True))
        self.due = self._closes[0][0]

    def _record(self, i: int, seq: int) -> tuple[Any, ...]:
        """The record the runner keeps for the batch's accepted row ``i``."""
        ev = self._cols.events(self.rows[i:i + 1]) if self._on_demand else self.events
        e = ev[int(self.rows[i])]
        return (e.ts, seq, self.key_of[i], tuple(v[i] for v in self.arg_values), e)

    def _clock(self, instants: list[Any]) -> None:
        """The runner's clock after the batch: its input's last row or the last instant it
        processed, whichever is later."""
        r = self.runner
        # (of equal times the last the runner would have set — its input's last row after the
        # instants it processed, 2.0 after 2 — as the per-event runner keeps each event's)
        times = [t for t in [r.time, *instants, self.last_seen] if t is not None]
        r.time = max(reversed(times))

    # -- #time_batch(Δ[, r]) ----------------------------------------------------------------
    def _time_closes(self, ts_at: Any) -> tuple[Any, list[tuple[Any, int, int, bool]], int,
                                                 int]:
        """A time batch's boundaries over the batch, as TimeBatchWindow visits them: the
        simulated window after them, each boundary's (instant, first row, end row, posted),
        and the events of the current and previous batch after them."""
        win = self.runner.window
        size, n = self.statement.window.size, len(self.rows)
        sim = TimeBatchWindow(size, None, win.reference)  # type: ignore[arg-type]
        sim.k, current, previous = win.k, win.current, win.previous
        closes: list[tuple[Any, int, int, bool]] = []
        pos = 0
        t_end = self.t_end
        while True:
            if sim.k is None:
                if pos == n:
                    break
                if sim.reference is None:
                    sim.reference = ts_at(pos)
                sim._schedule_after(ts_at(pos))
            # the boundaries k, k+1, ... up to t_end in one go, to the first that posts
            # nothing (it unschedules them) — there is one among 2 (rows left + 1) + 1
            run = _instants(sim.reference, sim.k, size, t_end, 2 * (n - pos) + 3)
            if not len(run):
                break
            ends = np.searchsorted(self.ts, run.astype(np.float64), side="left")
            cur = np.diff(ends, prepend=pos)
            cur[0] += current
            prev = np.concatenate([[previous], cur[:-1]])
            posted = (cur > 0) | (prev > 0)
            stop = np.flatnonzero(~posted)
            m = int(stop[0]) + 1 if len(stop) else len(run)
            starts = np.concatenate([[pos], ends[:m - 1]])
            closes += zip(run[:m].tolist(), starts.tolist(), ends[:m].tolist(),
                          posted[:m].tolist(), strict=True)
            sim._set_k(None if len(stop) else sim.k + m)  # type: ignore[operator]
            previous, current, pos = int(cur[m - 1]), 0, int(ends[m - 1])
        if pos < n and sim.k is None:
            if sim.reference is None:
                sim.reference = ts_at(pos)
            sim._schedule_after(ts_at(pos))
        return sim, closes, current + n - pos, previous

    def _plan_batches(self) -> None:
        runner = self.runner
        win = runner.window
        proc = win.proc
        size = self.statement.window.size
        n = len(self.rows)
        src, rows = self._src, self.rows
        timed = self.statement.window.kind == "time_batch"

        def ts_at(i: int) -> Any:  # (a row's time as its event holds it)
            return src.time_at(int(rows[i]))

        groups = proc.agg.groups
        if any(st[b] != st[N] for st in groups.values() for _j, b, *_ in proc.agg._args):
            # (the plan counts every event of a group as a value of each argument — the
            # batch's own null values decline in _arg_columns; a group carried in with some
            # does here, not to be counted as values)
            raise Declined("a group carried in holds null arguments: event by event")
        g_prior = list(groups)
        gcode, objs = _group_codes(self.key_of, g_prior, self.key_codes)
        lanes = self.statement.window.per_group
        closes: list[tuple[Any, int, int, bool]] = []  # (instant, first row, end row, posted)
        if timed:
            sim, closes, current, previous = self._time_closes(ts_at)
            bounds = np.array([float(c[0]) for c in closes], np.float64)
            bidx = np.searchsorted(bounds, self.ts, side="right")
        elif lanes:  # (#groupwin(k)#length_batch(n): a batch per group, numbered per group)
            size = int(size)
            c_of = np.zeros(len(objs), np.int64)
            c_of[:len(g_prior)] = [st[N] for st in groups.values()]
            by_group = np.argsort(gcode, kind="stable")
            rank = np.empty(n, np.int64)
            rank[by_group] = np.arange(n) - np.searchsorted(gcode[by_group], gcode[by_group])
            bidx = (c_of[gcode] + rank) // size
        else:  # (#length_batch(n): the batch closes at its n-th row, which belongs to it)
            c0, size = win.current, int(size)
            shut = np.arange(size - 1 - c0, n, size)  # (the rows each batch closes at)
            self._want = shut.tolist()
            first = np.concatenate([[0], shut[:-1] + 1])[:len(shut)].tolist()
            closes = [(ts_at(r), lo, r + 1, True)
                      for lo, r in zip(first, self._want, strict=True)]
            current, previous = (c0 + n) % size, 0
            bidx = (c0 + np.arange(n)) // size
        # per (batch, group): counts and sums, in arrival order
        summed = self._summed()
        args = self._arg_columns([], [[st[b + 1] for _j, b, _t in summed]
                                      for st in groups.values()])
        order = np.lexsort((np.arange(n), gcode, bidx))
        bs, gs = bidx[order], gcode[order]
        seg = np.ones(n, bool)
        seg[1:] = (bs[1:] != bs[:-1]) | (gs[1:] != gs[:-1])
        starts = np.flatnonzero(seg)
        ends = np.append(starts[1:], n)[:len(starts)] - 1
        carried = (bs[starts] == 0) & (gs[starts] < len(g_prior))
        prior_n = np.array([st[N] for st in groups.values()] + [0], np.int64)
        seg_n = (ends - starts + 1) + np.where(carried, prior_n[np.minimum(gs[starts],
                                                                            len(g_prior))], 0)
        seg_tot: list[list[Any] | None] = []
        for (col, kind), (_j, b, tot) in zip(args, summed, strict=True):
            if not tot:
                seg_tot.append(None)
                continue
            x = col[order]
            prior = np.array([st[b + 1] for st in groups.values()] + [0],
                             dtype=np.float64 if kind is float else np.int64)
            init = np.where(carried, prior[np.minimum(gs[starts], len(g_prior))],
                            0).astype(x.dtype)
            seg_tot.append(running_sums(x, starts, init)[ends].tolist())
        # batch min/max: the extreme of the segment (with the carried state's), which is
        # the running value `v < lo` keeps; a NaN or a signed zero, where the first of equal
        # values would tell, declines
        # (one list for every segment, unchanged, when no argument has min or max)
        no_ext = [(None, None)] * len(args)
        seg_ext: list[list[Any]] = (
            [no_ext] * len(starts) if not any(mn or mx for *_, mn, mx in proc.agg._args)
            else [[(None, None)] * len(args) for _ in range(len(starts))])
        for (col, _kind), (j, b, _tot, mn, mx) in zip(args, proc.agg._args, strict=True):
            if not (mn or mx) or not n:
                continue
            x = col[order]
            if x.dtype.kind == "f" and bool(np.any(np.isnan(x) | ((x == 0) & np.signbit(x)))):
                raise Declined("a NaN or -0.0 under min/max")
            lo = np.minimum.reduceat(x, starts).tolist()
            hi = np.maximum.reduceat(x, starts).tolist()
            for s_i in np.flatnonzero(carried).tolist():
                st = groups[objs[int(gs[starts[s_i]])]]
                if mn and st[b + 2] is not None and not lo[s_i] < st[b + 2]:
                    lo[s_i] = st[b + 2]
                if mx and st[b + 3] is not None and not hi[s_i] > st[b + 3]:
                    hi[s_i] = st[b + 3]
            for s_i in range(len(starts)):
                seg_ext[s_i][j] = (lo[s_i], hi[s_i])
        seq0 = runner._seq
        per_event = self.plan.mode == "event"
        prior_batch = list(proc.batch) if per_event else []
        segs = (bs[starts].tolist(), gs[starts].tolist(), seg_n.tolist(), seg_tot, seg_ext,
                order[starts].tolist(), carried.tolist())
        if lanes:
            self._plan_lane_batches(segs, order, starts, ends, objs, g_prior, seq0, size)
            return
        if not per_event:
            self._closes, pending_grp, last = self._aggregated(closes, segs, objs, g_prior,
                                                               seq0)
            batches = {len(closes): pending_grp}
            state = {"last": last}
        else:
            self._closes, batches = self._per_event(closes, segs, objs, g_prior, seq0,
                                                    prior_batch)
            state = {}
        self._next = 0
        if timed:
            self._due_end = sim.boundary() if sim.k is not None else float("inf")
        else:  # (a length batch's rows come at its closing rows, each made by that row)
            self._due_end = float("inf")
            events = self.events
            for (_b, found), r in zip(self._closes, self._want, strict=True):
                trigger = (events[int(rows[r])],)
                for ce in found:
                    ce.parts = trigger
            self.at = [r for (_b, found), r in zip(self._closes, rows[self._want].tolist(),
                                                   strict=True) for _ in found]
            self.found = [ce for _b, found in self._closes for ce in found]
            self._closes = []
        self.due = self._closes[0][0] if self._closes else self._due_end
        pending = len(closes)

        def commit() -> None:
            assert self._next == len(self._closes), "a planned batch boundary was not reached"
            grp = batches.get(pending, [])
            proc.agg.groups = {key: self._state(c, first, tots, ext)
                               for key, c, first, tots, ext in grp}
            if per_event:
                lo = closes[-1][2] if closes else 0
                proc.batch = (prior_batch if not closes else []) + [
                    self._record(i, seq0 + i) for i in range(lo, n)]
            else:
                proc.last = state["last"]
            if timed:
                win.reference = sim.reference
                win._set_k(sim.k)
                win.current, win.previous = current, previous
                self._clock([closes[-1][0]] if closes else [])
            else:
                win.current = current
                self._clock([])
            runner._seq = seq0 + n

        self._commit = commit

    def _plan_lane_batches(self, segs: tuple[Any, ...], order: np.ndarray, starts: np.ndarray,
                           ends: np.ndarray, objs: list[Any], g_prior: list[Any], seq0: int,
                           size: int) -> None:
        """``#groupwin(k)#length_batch(n)``'s rows and state from its segments (a group's
        batch each, as :meth:`_plan_batches` makes them): a batch closes at its group's
        ``n``-th row (GroupLengthBatchWindow.insert), which is the rows' trigger and time —
        a row per group (its batch's values, its first record's event) or per event (each of
        the batch's records, the carried ones first); the batches left open become the
        runner's groups, counts and records, in the order the runner's dicts hold them (one
        carried in and never closed keeps its place, one opened in the batch comes after, in
        the order of its first row)."""
        seg_b, seg_g, seg_n, seg_tot, seg_ext, first_row, carried = segs
        runner, rows, src = self.runner, self.rows, self._src
        win = runner.window
        proc = win.proc
        groups = proc.agg.groups
        per_event = self.plan.mode == "event"
        last_row = order[ends].tolist()
        shut = sorted((r, s) for s, r in enumerate(last_row) if seg_n[s] == size)
        self._want = [r for r, _s in shut]
        self._fetch([r for r, c in zip(first_row, carried, strict=True) if not c])
        events = self.events
        tots = [t if t is not None else [0] * len(seg_b) for t in seg_tot]
        cols = self._slot_columns(seg_n, tots, seg_ext)

        def first_of(s: int) -> Any:  # (segment s's FIRST record)
            return (groups[objs[seg_g[s]]][FIRST] if carried[s]
                    else self._record(first_row[s], seq0 + first_row[s]))

        def records(s: int) -> list[Any]:  # (segment s's records, carried ones first)
            own = [self._record(int(i), seq0 + int(i))
                   for i in order[int(starts[s]):int(ends[s]) + 1].tolist()]
            return (proc.batches[objs[seg_g[s]]] if carried[s] else []) + own

        # the rows, column by column: per closing batch (by its row) its representatives
        at: list[int] = []
        out_s: list[int] = []
        reps: list[Event] = []
        row_of = rows.tolist()
        for r, s in shut:
            if per_event:
                carried_in = proc.batches[objs[seg_g[s]]] if carried[s] else []
                own = order[int(starts[s]):int(ends[s]) + 1].tolist()
                reps += [rec[EVENT] for rec in carried_in]
                reps += [events[row_of[i]] for i in own]
                k = len(carried_in) + len(own)
            else:
                reps.append(first_of(s)[EVENT])
                k = 1
            at += [row_of[r]] * k
            out_s += [s] * k
        trig = [events[i] for i in at]
        pick = (itemgetter(*out_s) if len(out_s) > 1
                else lambda c: tuple(c[s] for s in out_s))
        found = self._rows(reps, [pick(c) for c in cols],
                           arrivals=[src.time_at(i) for i in at], triggers=trig)
        self.at, self.found = _passed(at, found, self.plan.having_expr is not None)
        self._closes, self._next = [], 0
        self.due = self._due_end = float("inf")
        # the batches left open: a group's last segment, when it did not close
        still = {seg_g[s]: s for s in range(len(seg_b)) if seg_n[s] < size}
        closed = {seg_g[s] for s in range(len(seg_b)) if seg_n[s] == size and carried[s]}

        def commit() -> None:
            out: dict[Any, list[Any]] = {}
            current: dict[Any, int] = {}
            batches: dict[Any, list[Any]] = {}
            for g, key in enumerate(g_prior):  # (carried in and never closed: in place)
                if g in closed:
                    continue
                s = still.get(g)
                if s is None:
                    out[key], current[key] = groups[key], win.current[key]
                    if per_event:
                        batches[key] = proc.batches[key]
                    continue
                out[key] = self._state(seg_n[s], groups[key][FIRST],
                                       [t[s] for t in tots], seg_ext[s])
                current[key] = seg_n[s]
                if per_event:
                    batches[key] = records(s)
            for s in sorted((s for g, s in still.items() if not carried[s]),
                            key=lambda s: first_row[s]):
                key = self.key_of[first_row[s]]  # (the batch's first record's, as the dicts')
                out[key] = self._state(seg_n[s], first_of(s), [t[s] for t in tots],
                                       seg_ext[s])
                current[key] = seg_n[s]
                if per_event:
                    batches[key] = records(s)
            proc.agg.groups = out
            win.current = current
            if per_event:
                proc.batches = batches
            self._clock([])
            runner._seq = seq0 + len(rows)

        self._commit = commit

    def _aggregated(self, closes: list[tuple[Any, int, int, bool]], segs: tuple[Any, ...],
                    objs: list[Any], g_prior: list[Any], seq0: int
                    ) -> tuple[list[Any], list[Any], dict[Any, Any]]:
        """The boundaries' rows of an aggregated time batch (a row per group, or one without
        ``group by``: the group ``()``), column-wise: at each posted boundary a row per group
        of its batch — carried groups first, in the state's order, then by first arrival —
        with the batch's values, then a row of the empty values for each group posted at the
        last posted boundary and not now (processor.PerGroupRows). Also the pending batch's
        groups (key, n, FIRST record, totals, extremes) and the groups last posted with their
        representative records (the runner's ``last``). Records are made only for those."""
        seg_b, seg_g, seg_n, seg_tot, seg_ext, first_row, carried = segs
        proc = self.runner.window.proc
        groups = proc.agg.groups
        summed = self._summed()
        tots = [t if t is not None else [0] * len(seg_b) for t in seg_tot]
        key_of = self.key_of

        def key(s: int) -> Any:  # (item s's group key)
            # (a group carried in keeps its key; a batch's new group is keyed by its first
            # row's key, as the runner's dict, emptied at every boundary: 1 and 1.0 are one)
            return objs[seg_g[s]] if carried[s] else key_of[first_row[s]]

        # (carried groups without a new event in the first batch stay as they are: an item
        # of their own in batch 0, after the segments; segments are by batch, so batch 0's
        # are the first)
        in0 = set(map(key, range(bisect_left(seg_b, 1))))
        extra = [(g, k) for g, k in enumerate(g_prior) if k not in in0]
        if extra:
            sts = [groups[k] for _g, k in extra]
            seg_b, seg_g = [*seg_b, *[0] * len(extra)], [*seg_g, *(g for g, _k in extra)]
            carried, first_row = [*carried, *[True] * len(extra)], [*first_row,
                                                                    *[-1] * len(extra)]
            seg_n = [*seg_n, *(st[N] for st in sts)]
            tots = [[*t, *(st[b + 1] if tot else 0 for st in sts)]
                    for t, (_j, b, tot) in zip(tots, summed, strict=True)]
            seg_ext = [*seg_ext, *([(st[b + 2], st[b + 3]) for _j, b, _t in summed]
                                   for st in sts)]
        carried_a, first_a = np.array(carried, bool), np.array(first_row, np.int64)
        rank = np.where(carried_a, np.array(seg_g, np.int64), len(g_prior) + first_a)
        if self._lazy:
            self._fetch(first_a[~carried_a].tolist())
        evs = self.events
        # (a row's representative event: its batch's first row's, a carried group's FIRST's)
        item_ev = list(map(evs.__getitem__, self.rows[first_a[~carried_a]].tolist()))
        if len(item_ev) < len(carried):
            new = iter(item_ev)
            item_ev = [groups[objs[g]][FIRST][EVENT] if c else next(new)
                       for g, c in zip(seg_g, carried, strict=True)]

        def record(s: int) -> Any:  # (item s's FIRST record)
            return groups[key(s)][FIRST] if carried[s] else self._record(first_row[s],
                                                                          seq0 + first_row[s])

        # the items of each batch, in the groups' order
        n_c = len(closes)
        by_rank = np.lexsort((rank, np.array(seg_b, np.int64)))
        by_b = np.array(seg_b, np.int64)[by_rank]
        cut = np.searchsorted(by_b, np.arange(n_c + 2))
        order_l = by_rank.tolist()
        # the rows, column-wise: at each posted boundary its batch's items (a batch with
        # items is posted), then a row of the empty values per group of the last posted
        # boundary's batch (PerGroupRows' ``last``) not among them — an item's group gets it
        # at the next posted boundary whose batch has no item of that group
        posted = np.array([c[3] for c in closes], bool)
        p_at = np.flatnonzero(posted)
        shown = by_b < n_c  # (the items output; those of batch n_c are the pending batch's)
        q = np.flatnonzero(shown)
        g_of = np.array(seg_g, np.int64)[by_rank]
        nxt = np.append(p_at, n_c)[np.searchsorted(p_at, by_b[q], side="right")]
        n_g = int(g_of.max(initial=0)) + 1
        gone = nxt < n_c
        gone[gone] = ~np.isin(nxt[gone] * n_g + g_of[q][gone], by_b[q] * n_g + g_of[q])
        e_q = q[gone]
        # (the groups last posted before this block's first posted boundary: the runner's)
        first_p = int(p_at[0]) if len(p_at) else -1
        there = set() if first_p < 0 else {key(s) for s in order_l[cut[first_p]:
                                                                       cut[first_p + 1]]}
        before = [] if first_p < 0 else [r for k, r in proc.last.items() if k not in there]
        n_b0 = len(before)
        close_of = np.concatenate([np.full(n_b0, first_p, np.int64), by_b[q], nxt[gone]])
        part = np.concatenate([np.ones(n_b0, np.int64), np.zeros(len(q), np.int64),
                               np.ones(len(e_q), np.int64)])
        place = np.concatenate([np.arange(n_b0), q, e_q])
        o = np.lexsort((place, part, close_of))
        # (a row's representative: its item's event, or the runner's last representative's,
        # after the items' events)
        item = np.concatenate([len(item_ev) + np.arange(n_b0), by_rank[q], by_rank[e_q]])[o]
        out_s = np.where(part[o] == 1, -1, item).tolist()
        out_ev = list(map([*item_ev, *(r[EVENT] for r in before)].__getitem__, item.tolist()))
        out_c = close_of[o]
        bounds = [c[0] for c in closes]
        out_t = list(map(bounds.__getitem__, out_c.tolist()))
        # (each slot's column over the rows: its values per item, the empty value last)
        cols = self._slot_columns(seg_n, tots, seg_ext)
        if not n_b0 and not len(e_q) and bool((item == np.arange(len(item))).all()):
            slot_cols = [c[:len(item)] for c in cols]  # (the items in order, each once)
        else:
            pick = (itemgetter(*out_s) if len(out_s) > 1
                    else lambda c: tuple(c[s] for s in out_s))
            slot_cols = [pick([*c, e])
                         for c, e in zip(cols, proc.agg.empty_values, strict=True)]
        made = self._rows(out_ev, slot_cols, out_t)
        at = np.searchsorted(out_c, np.arange(n_c + 1)).tolist()
        kept = ((lambda lo, hi: made[lo:hi]) if self.plan.having_expr is None else
                (lambda lo, hi: [r for r in made[lo:hi] if r is not None]))
        per = list(map(kept, at[:-1], at[1:]))
        cut_l = cut.tolist()
        pending = [(key(s), seg_n[s], record(s), [t[s] for t in tots], seg_ext[s])
                   for s in order_l[cut_l[n_c]:cut_l[n_c + 1]]]
        if len(p_at):
            lp = int(p_at[-1])
            rep = {key(s): record(s) for s in order_l[cut_l[lp]:cut_l[lp + 1]]}
        else:
            rep = dict(proc.last)
        return list(zip(bounds, per, strict=True)), pending, rep

    def _slot_columns(self, seg_n: list[int], tots: list[list[Any]], seg_ext: list[Any]
                      ) -> list[list[Any]]:
        """Each aggregate slot's value per segment of ``seg_n`` events (none null) with the
        totals ``tots`` (per argument) and extremes ``seg_ext`` (per segment, per argument:
        (min, max)), as :meth:`_values` gives them, column by column."""
        cols: list[list[Any]] = []
        for sl in self.plan.slots:
            if sl.func == "count" or sl.arg is None:
                cols.append(seg_n)
            elif sl.func == "sum":
                cols.append(tots[sl.arg_index])
            elif sl.func == "avg":
                cols.append([t / c for t, c in zip(tots[sl.arg_index], seg_n, strict=True)])
            else:
                cols.append([e[sl.arg_index][sl.func == "max"] for e in seg_ext])
        return cols

    def _per_event(self, closes: list[tuple[Any, int, int, bool]], segs: tuple[Any, ...],
                   objs: list[Any], g_prior: list[Any], seq0: int, prior_batch: list[Any]
                   ) -> tuple[list[Any], dict[int, list[Any]]]:
        """The boundaries' rows of a time batch with a row per event, boundary by boundary
        (each event's row with its group's values): per batch index its groups (key, n,
        FIRST record, totals, extremes) in the groups' order (carried groups first, in the
        state's order; then by first arrival)."""
        seg_b, seg_g, n_l, seg_tot, seg_ext, first_row, carried = segs
        proc = self.runner.window.proc
        groups = proc.agg.groups
        summed = self._summed()
        per_batch: dict[int, list[tuple[int, Any]]] = {}
        self._fetch([r for r, c in zip(first_row, carried, strict=True) if not c])
        for s, (bi, g) in enumerate(zip(seg_b, seg_g, strict=True)):
            tots = [t[s] if t is not None else 0 for t in seg_tot]
            first = (groups[objs[g]][FIRST] if carried[s]
                     else self._record(first_row[s], seq0 + first_row[s]))
            rank = g if carried[s] else len(g_prior) + first_row[s]
            key = objs[g] if carried[s] else self.key_of[first_row[s]]  # (as _aggregated's)
            per_batch.setdefault(bi, []).append((rank, (key, n_l[s], first, tots,
                                                        seg_ext[s])))
        # carried groups without a new event in the first batch stay as they are
        if g_prior:
            in0 = {item[1][0] for item in per_batch.get(0, [])}
            for g, key in enumerate(g_prior):
                if key not in in0:
                    st = groups[key]
                    per_batch.setdefault(0, []).append(
                        (g, (key, st[N], st[FIRST], [st[b + 1] if tot else 0
                                                     for _j, b, tot in summed],
                             [(st[b + 2], st[b + 3]) for _j, b, _t in summed])))
        batches = {bi: [x for _r, x in sorted(items, key=lambda it: it[0])]
                   for bi, items in per_batch.items()}

        def close(bi: int, b: Any, lo: int, hi: int, posted: bool) -> list[ComplexEvent]:
            """The rows of boundary ``bi`` at ``b`` (their ids are given when emitted)."""
            if not posted:
                return []
            grp = batches.get(bi, [])
            vals = {key: self._values(c, tots, ext) for key, c, _f, tots, ext in grp}
            recs = (prior_batch if bi == 0 else []) + [
                self._record(i, seq0 + i) for i in range(lo, hi)]
            made = [self._row(rec[EVENT], vals[rec[KEY]], b, None, -1) for rec in recs]
            return [r for r in made if r is not None]

        made = [(b, close(bi, b, lo, hi, posted))
                for bi, (b, lo, hi, posted) in enumerate(closes)]
        return made, batches

def plan_window(engine: Any, runner: Any, cols: TypeColumns, src: Rows, t_end: Any = None,
                unread: bool = False) -> WindowBlock | None:
    """The block of ``runner``'s statement over the batch (``src``: the input, or a kernel
    pattern's planned matches ending at the input's last instant ``t_end``:
    kernels.cascade.plan_windows_over), or None when this batch declines it (its runner then
    takes the rows per event). ``unread``: only the output reads its rows (WindowBlock)."""
    if runner.finished or runner._in_fast:
        return None
    try:
        return WindowBlock(engine, runner, cols, src, t_end=t_end, unread=unread)
    except Declined:
        return None
