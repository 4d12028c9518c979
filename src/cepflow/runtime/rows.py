"""A batch of events as columns (Rows: the interface the kernels read; EventRows: over
Event objects — Arrow batches have their own, runtime.arrow_rows) and the kernels' result
as columns (blocks of a MatchTable: ChainMatches from the chain kernel, StageMatches and
ObjectMatches from the pair kernel), made into complex events only on demand."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import chain, repeat
from operator import attrgetter, itemgetter
from typing import Any

import numpy as np

from cepflow.events.event import ComplexEvent, Event
from cepflow.runtime.collector import gc_paused
from cepflow.runtime.errors import EngineError

_SEQ, _TS, _TYPE, _PARAMS = (attrgetter(a) for a in ("seq", "ts", "type", "params"))



class Rows:
    """A time-ordered batch as the kernel reads it: ``ts`` (float64) and ``codes`` (the type of
    each row, an index into ``type_names``) as columns; parameter values and events on demand.

    :class:`EventRows` wraps a list of events. A column source (Arrow batches of the file job
    and the Spark path, :class:`cepflow.runtime.arrow_rows.ArrowRows`) subclasses this and
    makes Python objects only for the rows that end up in complex events or partial matches.
    """

    n: int
    ts: np.ndarray
    codes: np.ndarray
    type_names: list[str]

    def last_ts(self) -> Any:
        """The timestamp of the last row as the event has it (an int stays an int)."""
        return self.time_at(self.n - 1)

    def time_at(self, row: int) -> Any:
        """The timestamp of ``row`` as its event has it (an int stays an int)."""
        raise NotImplementedError

    def times(self, rows: np.ndarray) -> list[Any]:
        """The timestamps of ``rows`` as their events have them (:meth:`time_at` of each)."""
        return [self.time_at(r) for r in rows.tolist()]

    def values(self, param: int, rows: np.ndarray) -> tuple[np.ndarray, list[Any]]:
        """Parameter ``param`` of ``rows``: per row an index into the returned list of values
        (equal values may or may not share an entry)."""
        raise NotImplementedError

    def column(self, param: int, rows: np.ndarray) -> np.ndarray:
        """Parameter ``param`` of ``rows`` as one numpy column (object for mixed values)."""
        local, uniq = self.values(param, rows)
        return as_column(uniq)[np.asarray(local, dtype=np.int64)]

    def lookup(self, rows: np.ndarray) -> Mapping[int, Event] | Sequence[Event]:
        """The events of ``rows`` (in any order, repeats allowed), indexable by row number."""
        raise NotImplementedError

    def number(self, engine: Any) -> None:
        """Give rows without a sequence number the engine's next ones; advance its counter."""
        raise NotImplementedError

    def check(self, engine: Any) -> None:
        """Raise EngineError for a row the engine cannot take (beyond the time order)."""

    def unnumber(self) -> None:
        """Undo what :meth:`number` changed in events the caller holds (a declined batch)."""



class EventRows(Rows):
    """A list of events as kernel rows."""

    #: whether the events are made as asked for (:meth:`lookup`; kernels.cascade.StreamRows),
    #: not read from :attr:`events` row by row
    lazy = False

    def __init__(self, events: Sequence[Event],
                 types: tuple[list[str], np.ndarray] | None = None,
                 ts: np.ndarray | None = None, inputs: np.ndarray | None = None) -> None:
        """``types``: the type names and each event's code, ``ts`` their times as float64,
        when the caller knows them (the derived rows of a split batch, kernels.cascade: each
        at its input row's time); ``inputs``: such a derived stream's input row of each row."""
        self.events = events
        self.n = len(events)
        #: per row, the batch's input row it came at (a derived stream), else None
        self.inputs = inputs
        #: per declared type, its number of parameters once :meth:`check` found every row of
        #: it to have that many (TypeColumns then reads its columns from one flat list)
        self.checked: dict[str, int] = {}
        #: events number() shifted after a restore, with their reader's numbers
        self._shifted: list[tuple[Event, int]] = []
        self._params: list[tuple] | None = None
        #: parameter k of every row, a value per row, when the caller knows it without the
        #: events (kernels.window_block.batch_columns: what each ``params[k]`` holds): read
        #: from here instead of the events
        self.given: dict[int, list[Any]] = {}
        #: parameter k of every row as dictionary codes (TypeColumns.codes), likewise
        self.given_codes: dict[int, tuple[np.ndarray, list[str]]] = {}
        self.ts = (np.fromiter(map(_TS, events), dtype=np.float64, count=self.n) if ts is None
                   else ts)
        if types is not None:
            self.type_names, self.codes = types
            return
        names = list(map(_TYPE, events))
        # (one type: an identity test per event when they share its name, as the readers'
        # and a program's events do — no hash per event)
        if names and names.count(names[0]) == self.n:
            self.type_names = names[:1]
            self.codes = np.zeros(self.n, dtype=np.int64)
            return
        type_code = {t: i for i, t in enumerate(dict.fromkeys(names))}
        self.type_names = list(type_code)
        self.codes = (np.zeros(self.n, dtype=np.int64) if len(type_code) == 1 else
                      np.fromiter(map(type_code.__getitem__, names), dtype=np.int64,
                                  count=self.n))

    def time_at(self, row: int) -> Any:
        return self.events[row].ts

    def all_params(self) -> list[tuple]:
        """Every row's parameter tuple (read once)."""
        if self._params is None:
            self._params = list(map(_PARAMS, self.events))
        return self._params

    def values(self, param: int, rows: np.ndarray) -> tuple[np.ndarray, list[Any]]:
        """(A value per row, in the rows' order: the indices are 0, 1, ….)"""
        local = np.arange(len(rows), dtype=np.int64)
        if len(rows) == self.n and (self.n < 2 or bool((np.diff(rows) > 0).all())):
            # every row in order (a union's window over the derived rows): one C-level pass
            given = self.given.get(param)
            return local, (list(map(itemgetter(param), self.all_params())) if given is None
                           else given)
        # (else a row's tuple, then its value: two C-level passes)
        params = self.all_params()
        return local, list(map(itemgetter(param), map(params.__getitem__, rows.tolist())))

    def times(self, rows: np.ndarray) -> list[Any]:
        return list(map(attrgetter("ts"), map(self.events.__getitem__, rows.tolist())))

    def lookup(self, rows: np.ndarray) -> Sequence[Event]:
        return self.events

    def number(self, engine: Any) -> None:
        self._shifted = number_events(engine.host.counters, self.events)

    def unnumber(self) -> None:
        for e, seq in self._shifted:
            e.seq = seq
        self._shifted = []

    def check(self, engine: Any) -> None:
        if not self.n:
            return
        arities = engine.host.arity
        arity = np.array([arities.get(t, -1) for t in self.type_names], dtype=np.int64)
        one = int(arity[0]) if len(set(arity.tolist())) == 1 else -1
        if one >= 0 and list(map(len, self.all_params())).count(one) == self.n:
            wrong: Any = ()  # (every row of the declared types' one arity: a count of ints)
        else:
            want = arity[self.codes]
            lens = np.fromiter(map(len, self.all_params()), dtype=np.int64, count=self.n)
            wrong = np.flatnonzero((want >= 0) & (want != lens))
        if len(wrong):
            e = self.events[int(wrong[0])]
            raise EngineError(f"event {e!r} has {len(e.params)} parameter(s), type "
                              f"'{e.type}' declares {arities[e.type]}")
        self.checked = {t: int(a) for t, a in zip(self.type_names, arity.tolist(), strict=True)
                        if a >= 0}



class LazyBindings(ComplexEvent):
    """A complex event whose bindings (its parameters by name) are made when first read: a
    kernel's matches and a window block's rows, the bulk of which no one asks that of; it
    pickles and copies as the plain complex event it stands for."""

    __slots__ = ("_bindings", "_names")

    def __init__(self, type: str, params: tuple[Any, ...], ts: Any, names: Sequence[str],
                 parts: tuple[Event, ...], match_id: int = -1) -> None:
        self.type, self.params, self.ts, self.parts = type, params, ts, parts
        self._names, self.match_id = names, match_id
        self.id, self.seq = None, -1
        self._bindings: dict[str, Any] | None = None

    @property  # type: ignore[override]
    def bindings(self) -> dict[str, Any]:
        d = self._bindings
        if d is None:  # (a marker, not an AttributeError caught: a raise costs ≈ 1 µs)
            d = self._bindings = dict(zip(self._names, self.params, strict=False))
        return d

    def output_columns(self) -> tuple[Sequence[str], tuple[Any, ...]] | None:
        return (self._names, self.params) if self._bindings is None else None

    def __reduce__(self) -> tuple[Any, ...]:
        return (ComplexEvent, (self.type, self.params, self.ts, self.bindings, self.parts,
                               self.match_id), (None, {"id": self.id, "seq": self.seq}))



#: the kinds made by :func:`kind_of`, by key (bounded: a program has a few)
_KINDS: dict[Any, type] = {}


def kind_of(base: type, key: Any, attrs: dict[str, Any]) -> type:
    """The subclass of ``base`` (a :class:`LazyBindings` of a kernel's, without instance
    attributes of its own) whose class attributes are ``attrs`` — what all the complex events
    of one pattern share, such as their type name, stored once instead of in each (a kernel
    makes one per match: every store counts) — made once per ``key``. Such shared attributes
    read as before and cannot be set on an instance (nothing sets a complex event's type)."""
    try:
        kind = _KINDS.get((base, key))
    except TypeError:  # (an unhashable key: a kind of its own)
        return type(base.__name__, (base,), {"__slots__": (), **attrs})
    if kind is None:
        kind = type(base.__name__, (base,), {"__slots__": (), **attrs})
        if len(_KINDS) < 4096:
            _KINDS[base, key] = kind
    return kind



class _OneKind(LazyBindings):
    """:class:`LazyBindings` of one pattern: its type name and parameter names are class
    attributes of its kind (:func:`lazy_kind`), the rest made in one call of four arguments."""

    __slots__ = ()

    def __init__(self, params: tuple[Any, ...], ts: Any, parts: tuple[Event, ...],
                 match_id: int = -1) -> None:
        self.params, self.ts, self.parts, self.match_id = params, ts, parts, match_id
        self.id = self._bindings = None
        self.seq = -1



class _Picked(LazyBindings):
    """:class:`LazyBindings` of one pattern whose parameters are some of its bindings (a
    chain binding variables besides its parameters, ``P(y) { as A(x, y) -> B(x, _) }``): the
    bindings' values kept as a tuple, named by the kind's ``_names``, made a dict when read."""

    __slots__ = ("_values",)

    def __init__(self, params: tuple[Any, ...], ts: Any, parts: tuple[Event, ...],
                 match_id: int, values: tuple[Any, ...]) -> None:
        self.params, self.ts, self.parts, self.match_id = params, ts, parts, match_id
        self._values = values
        self.id = self._bindings = None
        self.seq = -1

    @property  # type: ignore[override]
    def bindings(self) -> dict[str, Any]:
        d = self._bindings
        if d is None:
            d = self._bindings = dict(zip(self._names, self._values, strict=True))
        return d

    def output_columns(self) -> tuple[Sequence[str], tuple[Any, ...]] | None:
        return (self._names, self._values) if self._bindings is None else None



class Triggers:
    """The events of some rows of a column source, made together (one ``lookup``) when the
    first of them is asked for: the triggers of a window block's arrival rows
    (:func:`triggered_kind`), which only a reader of those rows' ``parts`` needs — the file
    job writes the rows from columns, so over a column source they are never made there."""

    __slots__ = ("_made", "_rows", "_src")

    def __init__(self, src: Rows, rows: np.ndarray) -> None:
        self._src, self._rows = src, rows
        self._made: Mapping[int, Event] | Sequence[Event] | None = None

    def event(self, row: int) -> Event:
        """The event of ``row`` (one of the rows given): the source's own object."""
        made = self._made
        if made is None:
            made = self._made = self._src.lookup(self._rows)
            self._src = self._rows = None  # type: ignore[assignment]
        return made[row]



#: the slot a complex event keeps its parts in (filled and read past :class:`_Triggered`'s
#: property, which has no setter: nothing sets a row's parts)
_PARTS = ComplexEvent.__dict__["parts"]


class _Triggered(LazyBindings):
    """:class:`_OneKind` whose ``parts`` are the trigger of one row of a column source, made
    when first read (:class:`Triggers`): a window block's arrival row, ``(its event,)``."""

    __slots__ = ("_at", "_row")

    def __init__(self, params: tuple[Any, ...], ts: Any, at: Triggers, row: int,
                 match_id: int = -1) -> None:
        self.params, self.ts, self.match_id = params, ts, match_id
        self._at, self._row = at, row
        self.id = self._bindings = None
        self.seq = -1

    @property  # type: ignore[override]
    def parts(self) -> tuple[Event, ...]:
        at = self._at
        if at is not None:
            _PARTS.__set__(self, (at.event(self._row),))
            self._at = None
        return _PARTS.__get__(self, type(self))


def triggered_kind(type_name: str, names: tuple[str, ...]) -> Any:
    """The constructor ``(params, ts, triggers, row)`` of :class:`lazy_kind`'s complex events
    whose parts are ``(the event of row,)``, made when first read (:class:`_Triggered`)."""
    return kind_of(_Triggered, (type_name, names), {"type": type_name, "_names": names})



def lazy_kind(type_name: str, names: tuple[str, ...],
              params: tuple[str, ...] | None = None) -> Any:
    """The constructor ``(params, ts, parts, match_id)`` of :class:`LazyBindings` of type
    ``type_name`` whose parameters are named ``names``: the same complex events, made for
    about two thirds of the cost (:func:`kind_of`). With ``params`` other than ``names``
    (bindings beyond the parameters): ``(params, ts, parts, match_id, values)``, the bindings
    ``names`` with ``values`` (:class:`_Picked`)."""
    if params is None or params == names:
        return kind_of(_OneKind, (type_name, names), {"type": type_name, "_names": names})
    return kind_of(_Picked, (type_name, names), {"type": type_name, "_names": names})



def field_values(events: Sequence[Event], k: int) -> list[Any]:
    """Field ``k`` of each of ``events`` (a lazy match's binding column; a comprehension: in
    Python 3.11 faster than ``map(itemgetter(k), map(attrgetter("params"), …))``)."""
    return [e.params[k] for e in events]



def field_matches(type_name: str, names: tuple[str, ...], params: tuple[str, ...],
                  columns: Sequence[Sequence[Any]], ts: Iterable[Any],
                  parts: Iterable[tuple[Event, ...]], ids: Iterable[int]) -> Iterator[Any]:
    """The lazy complex events (:func:`lazy_kind`) of matches whose bindings ``names`` are,
    per match, the values of ``columns`` (one per name, a value per match: fields of the
    match's events, gathered column by column) and whose parameters ``params`` are the
    bindings of those names (None for a parameter nothing binds), with the times ``ts``, the
    events ``parts`` and the match ids ``ids``: the shared lazy form of the kernels' matches
    whose values are fields of their rows (the chain kernel, the timer-end kernel)."""
    values: Iterable[tuple[Any, ...]] = zip(*columns, strict=True) if columns else repeat(())
    kind = lazy_kind(type_name, names, params)
    if params == names:
        return map(kind, values, ts, parts, ids)
    at = {n: i for i, n in enumerate(names)}
    picked_params = (zip(*(repeat(None) if p not in at else columns[at[p]] for p in params),
                         strict=False)
                     if params else repeat(()))
    return map(kind, picked_params, ts, parts, ids, values)



@dataclass
class ChainMatches:
    """The complex events of one chain pattern in a batch, column-wise."""

    pattern: str
    var: str | None  # (None: an unkeyed chain, whose ``bindings`` are given)
    params: tuple[str, ...]
    #: batch row of the completing event, per match (ascending)
    at: np.ndarray
    #: place of each match in the batch's detection order (0-based)
    rank: np.ndarray
    #: (chain length, matches): batch row of each contributing event; -1 for the events of a
    #: partial match from an earlier batch, which are in ``old``
    rows: np.ndarray
    old: dict[int, list[Event]]
    #: per match, the index of its key value in :attr:`MatchTable.values`
    value: np.ndarray
    #: the bindings of a match from its key value and events, when the chain binds more than
    #: its key (runtime.shapes.Chain.bindings); None: only the key
    bindings: Any = None
    #: when the bindings (those, or the key alone when it is not the one parameter) are
    #: fields of the match's events whatever its path (one type per stage,
    #: runtime.shapes.Chain.binding_fields): per binding (named in :attr:`bound`)
    #: ``(stage, k)``, field k of the event the match took at that stage, or ``(-1, 0)`` the
    #: key — the matches are then made lazily (rows.field_matches) and written column by
    #: column; None: made with :attr:`bindings`
    fields: tuple[tuple[int, int], ...] | None = None
    #: the complex events themselves when a kernel made them already (as
    #: :attr:`StageMatches.events`); None: made on demand
    events: list[ComplexEvent] | None = None
    #: the names of the bindings :attr:`fields` locates, in the token path's order (the
    #: parameters are those of them :attr:`params` names); None with ``fields`` None
    bound: tuple[str, ...] | None = None

    def params_of(self, value: Any) -> tuple[Any, ...]:
        """The complex event's parameters (the pattern's formal parameters) for a key value,
        when the chain binds nothing but its key (else they are read from :attr:`bindings`)."""
        return tuple(value if p == self.var else None for p in self.params)



#: in :attr:`StageMatches.fields`, the stage of a select list's literal: ``(CONST, i)`` is
#: ``consts[i]``
CONST = -2
#: in :attr:`StageMatches.fields`, the stage of a value given per match: ``(VALUE, i)`` is
#: ``values[i][j]`` for the block's ``j``-th match (a window row's aggregate, computed by
#: the block, not a field of any row)
VALUE = -3


@dataclass
class StageMatches:
    """The complex events of one Esper pair or chain pattern in a batch whose every event is a
    row of the batch and whose select list names only fields of those events, column-wise
    (the pair kernel, :func:`~cepflow.runtime.kernels.pair.process_esper_columns`; the
    timer-end kernel's, at their deadlines: :attr:`delay`), made into lazy complex events
    (:func:`field_matches`) only when read."""

    pattern: str
    #: the pattern's parameters (its select list's names), in order
    names: tuple[str, ...]
    #: per parameter, where its value is: ``(stage, k)`` parameter ``k`` of the event the match
    #: took at ``stage``, ``(-1, 0)`` the match's time, ``(CONST, i)`` the literal
    #: ``consts[i]``, ``(VALUE, i)`` the match's own entry of ``values[i]``, None no value
    #: (None)
    fields: tuple[tuple[int, int] | None, ...]
    #: batch row of the completing event, per match
    at: np.ndarray
    #: place of each match in the batch's detection order (0-based)
    rank: np.ndarray
    #: (stages, matches): batch row of the event each match took at each stage
    rows: np.ndarray
    #: the select list's literals, by item (what a ``(CONST, i)`` field reads)
    consts: tuple[Any, ...] = ()
    #: the complex events themselves when a kernel made them already (the program split's
    #: blocks, kernels.column_blocks: :meth:`MatchTable.complex_events` gives those very
    #: objects), in the block's order; None: made on demand
    events: list[ComplexEvent] | None = None
    #: a timer's Δ: each match is at its last event's time plus this (the timer-end kernel's
    #: matches, at their deadlines: such a block has no ``(-1, 0)`` field); None: at its
    #: last event's time
    delay: Any = None
    #: per ``(VALUE, i)`` field, its values, one per match in the block's order (the very
    #: objects the complex events hold)
    values: tuple[list[Any], ...] = ()

    def taken(self, places: np.ndarray) -> StageMatches:
        """The block of its matches at ``places`` (its rows and values narrowed; ``at`` and
        ``rank`` as they were: the caller sets them)."""
        return replace(self, rows=self.rows[:, places],
                       values=tuple(list(map(v.__getitem__, places.tolist()))
                                    for v in self.values))

    def column(self, f: tuple[int, int] | None, n: int, ts: list[Any],
               stages: list[Sequence[Event]]) -> list[Any]:
        """The values of parameter at ``f`` (:attr:`fields`) of the block's ``n`` matches,
        their times ``ts`` and their events per stage ``stages``."""
        if f is None:
            return [None] * n
        if f[0] == CONST:
            return [self.consts[f[1]]] * n
        if f[0] == VALUE:
            return self.values[f[1]]
        return ts if f[0] < 0 else field_values(stages[f[0]], f[1])



@dataclass
class ObjectMatches:
    """Complex events a kernel made as objects (the Esper pair kernel: its select lists and
    bindings are the token path's), with where each was detected."""

    #: batch row of the completing event, per match
    at: np.ndarray
    #: place of each match in the batch's detection order (0-based)
    rank: np.ndarray
    events: list[ComplexEvent]



@dataclass
class MatchTable:
    """The complex events of one batch, column-wise (:func:`process_columns`)."""

    blocks: list[ChainMatches | StageMatches | ObjectMatches]
    values: list[Any]
    first_id: int  # match id of the first complex event in detection order
    count: int
    source: Rows

    def positions(self) -> list[int]:
        """Batch row of the completing event of each complex event, in detection order."""
        at = np.zeros(self.count, dtype=np.int64)
        for b in self.blocks:
            at[b.rank] = b.at
        return at.tolist()

    def complex_events(self) -> list[ComplexEvent]:
        """The complex events as objects, in detection order (made with the cyclic collector
        paused, as a batch makes them: a block of matches the split did not make,
        kernels.column_blocks.Deferred, made with it running took 1.5x the split's time)."""
        with gc_paused():
            return self._complex_events()

    def _complex_events(self) -> list[ComplexEvent]:
        out: list[Any] = [None] * self.count
        values = self.values
        for b in self.blocks:
            if b.events is not None:  # (made already: those objects)
                deque(map(out.__setitem__, b.rank.tolist(), b.events), maxlen=0)
                continue
            if isinstance(b, StageMatches):  # (lazy: its values are fields of its rows)
                ev = self.source.lookup(b.rows.ravel())
                stages = [picked(ev, r) for r in b.rows.tolist()]
                ts = list(map(_TS, stages[-1]))
                if b.delay is not None:
                    ts = [t + b.delay for t in ts]
                n = len(ts)
                made = field_matches(b.pattern, b.names, b.names, [
                    b.column(f, n, ts, stages) for f in b.fields], ts, zip(*stages, strict=True),
                    (self.first_id + b.rank).tolist())
                deque(map(out.__setitem__, b.rank.tolist(), made), maxlen=0)
                continue
            ev = self.source.lookup(b.rows[b.rows >= 0])
            old = b.old
            name, var, first_id = b.pattern, b.var, self.first_id
            only_key = b.params == (var,)
            ranks, vis = b.rank.tolist(), b.value.tolist()
            todo: Any = range(len(ranks))
            bind = b.bindings
            fields = b.fields
            lazy = ((only_key or var is None) and bind is None) or fields is not None
            if lazy and isinstance(self.source, EventRows):
                # (one parameter, the key — or none, unkeyed —, or bindings that are fields
                # of the events, the parameters some of them: its bindings made when read,
                # the parts from
                # the events' rows stage by stage — all but the matches continuing a partial
                # match from before the batch, made below)
                fresh = [r for r in range(len(ranks)) if r not in old] if old else todo
                rows = b.rows[:, fresh] if old else b.rows
                stages = [picked(ev, r) for r in rows.tolist()]
                at = b.rank[fresh] if old else b.rank
                keys = (None if var is None else
                        list(map(values.__getitem__, b.value[fresh].tolist() if old else vis)))
                made = field_matches(
                    name, b.params if fields is None else b.bound or (), b.params,
                    ([] if var is None else [keys]) if fields is None else [
                        keys if m < 0 else field_values(stages[m], k) for m, k in fields],
                    map(_TS, stages[-1]), zip(*stages, strict=True), (first_id + at).tolist())
                if (not old and len(self.blocks) == 1 and len(at) == self.count
                        and bool((at[1:] > at[:-1]).all())):
                    return list(made)  # (the batch's only block, in detection order)
                deque(map(out.__setitem__, at.tolist(), made), maxlen=0)
                todo = sorted(old)
            for r in todo:
                path = b.rows[:, r].tolist()
                if r in old:
                    parts = [*old[r], *(ev[q] for q in path if q >= 0)]
                else:
                    parts = [ev[q] for q in path]
                value = values[vis[r]]
                rank = ranks[r]
                if bind is None:
                    params, bound = ((value,) if only_key else b.params_of(value),
                                     {} if var is None else {var: value})
                else:  # (a parameter may be a stage's own variable: from the bindings)
                    bound = bind(value, parts)
                    params = tuple(map(bound.get, b.params))
                out[rank] = ComplexEvent(name, params, parts[-1].ts, bound, parts,
                                         first_id + rank)
        return out



class TypeColumns:
    """Per event type of a batch (any :class:`Rows`): its rows, and parameter columns read
    once (the filters and keys of several patterns often read the same ones)."""

    def __init__(self, src: Rows, schemas: Any) -> None:
        self.src, self.schemas = src, schemas
        self.type_code = {t: i for i, t in enumerate(src.type_names)}
        self._rows: dict[str, np.ndarray] = {}
        self._cols: dict[tuple[str, int], np.ndarray] = {}
        self._params: dict[str, list[tuple]] = {}
        self._objs: dict[tuple[str, int], np.ndarray] = {}
        self._vals: dict[tuple[str, int], list[Any]] = {}
        self._codes: dict[tuple[str, int], tuple[np.ndarray, list[str]] | None] = {}
        self._flats: dict[str, list[Any]] = {}
        #: the event-only filters' masks over a type's rows, by (type, filter expression)
        #: (kernels.filters.type_mask)
        self.masks: dict[tuple[str, Any], np.ndarray] = {}

    def rows(self, t: str) -> np.ndarray:
        r = self._rows.get(t)
        if r is None:
            code = self.type_code.get(t)
            r = (np.flatnonzero(self.src.codes == code) if code is not None
                 else np.zeros(0, np.int64))
            self._rows[t] = r
        return r

    def params(self, t: str) -> list[tuple]:
        """The parameter tuples of the type's rows (of an :class:`EventRows` source)."""
        p = self._params.get(t)
        if p is None:
            src = self.src
            assert isinstance(src, EventRows)
            ev, rows = src.events, self.rows(t)
            p = self._params[t] = (src.all_params() if len(rows) == len(ev)
                                   else [ev[i].params for i in rows.tolist()])
        return p

    def column(self, t: str, k: int) -> np.ndarray:
        """Parameter ``k`` of the type's rows as numpy infers it (object for mixed values)."""
        c = self._cols.get((t, k))
        if c is None:
            if isinstance(self.src, EventRows):
                vals = self._vals.get((t, k))
                if vals is None and k in self.src.given:  # (known without the events)
                    vals = self._values(t, k)
                c = as_column(vals) if vals is not None else read_column(self.params(t), k)
            else:  # (a column source: its values, without an event per row)
                c = self.src.column(k, self.rows(t))
            self._cols[t, k] = c
        return c

    def objects(self, t: str, k: int) -> np.ndarray:
        """Parameter ``k`` of the type's rows as the Python values themselves (an object
        column: indexing it by the rows a statement takes is one C-level pass)."""
        c = self._objs.get((t, k))
        if c is None:
            if isinstance(self.src, EventRows):
                vals: Any = self._values(t, k)
                p = vals
            else:
                local, uniq = self.src.values(k, self.rows(t))
                p, vals = local, map(uniq.__getitem__, local.tolist())
            c = self._objs[t, k] = np.fromiter(vals, dtype=object, count=len(p))
        return c

    def _values(self, t: str, k: int) -> list[Any]:
        """Parameter ``k`` of the type's rows of an :class:`EventRows` source, read from the
        events' tuples once for both :meth:`column` and :meth:`objects`."""
        v = self._vals.get((t, k))
        given = self.src.given.get(k) if isinstance(self.src, EventRows) else None
        if v is None and given is not None and len(self.rows(t)) == self.src.n:
            v = self._vals[t, k] = given  # (every row's, known without the events)
        if v is None:  # (a second parameter of t: a slice of one flat list, _flat)
            flat = self._flat(t)
            v = self._vals[t, k] = (flat[k::len(self.schemas[t].params)] if flat is not None
                                    else list(map(itemgetter(k), self.params(t))))
        return v

    def pick(self, t: str, k: int, rows: np.ndarray) -> list[Any]:
        """Parameter ``k`` of the batch rows ``rows`` (all of type ``t``), the values
        themselves, gathered from :meth:`objects` (contiguous memory, where reading each
        event's tuple visits every event again)."""
        of_type = self.rows(t)
        return self.objects(t, k)[rows if len(of_type) == self.src.n else
                                  np.searchsorted(of_type, rows)].tolist()

    def codes(self, t: str, k: int) -> tuple[np.ndarray, list[str]] | None:
        """Parameter ``k`` of the type's rows as dictionary codes — per row the index of its
        value in the returned list of distinct values — when
        every value is a ``str`` (whose equality is the text's: comparing the distinct values
        once decides every row, and rows of equal codes are one group of a ``group by``);
        None otherwise."""
        key = (t, k)
        if key in self._codes:
            return self._codes[key]
        if isinstance(self.src, EventRows):  # (the values read from the events' tuples)
            local, col = None, self._values(t, k)
        else:  # (a column source's values come coded already, equal ones maybe apart)
            local, col = self.src.values(k, self.rows(t))
        out = None
        if len(col) and set(map(type, col)) == {str}:
            first = dict.fromkeys(col)  # (the distinct texts, by first appearance)
            uniq = list(first)
            first.update(zip(uniq, range(len(uniq)), strict=True))
            c = np.fromiter(map(first.__getitem__, col), dtype=np.int64, count=len(col))
            out = (c if local is None else c[np.asarray(local, dtype=np.int64)], uniq)
        self._codes[key] = out
        return out

    def made_codes(self, t: str, k: int) -> tuple[np.ndarray, list[str]] | None:
        """:meth:`codes` when something made them already (a group key), else None: a text
        filter alone compares the column with numpy's object loop, fewer passes than coding
        it (vector_expr)."""
        return self._codes.get((t, k))

    def _flat(self, t: str) -> list[Any] | None:
        """Every parameter of the type's rows in one list, row after row (a column is then a
        slice: one pass over the events' tuples for all of their columns, not one each), when
        the batch's check found each row of ``t`` to hold as many as its schema declares and
        a second column of ``t`` is read; None otherwise (the first column, a type of one
        parameter: nothing to share)."""
        flat = self._flats.get(t)
        if flat is None:
            src = self.src
            w = src.checked.get(t) if isinstance(src, EventRows) else None
            if (not w or w < 2 or t not in self.schemas or len(self.schemas[t].params) != w
                    or not any(u == t for u, _ in self._vals)):
                # (the first column of t: a second one shares the pass)
                return None
            flat = self._flats[t] = list(chain.from_iterable(self.params(t)))
        return flat

    def events(self, rows: np.ndarray) -> Mapping[int, Event] | Sequence[Event]:
        """The events of ``rows``, indexable by row (made only for those of a column source)."""
        src = self.src
        return src.events if isinstance(src, EventRows) and not src.lazy else src.lookup(rows)

    def fields(self, t: str) -> dict[str, int]:
        return {name: i for i, name in enumerate(self.schemas[t].param_names)}



def distinct(a: np.ndarray) -> np.ndarray:
    """``np.unique(a)`` (sorted distinct values, flattened) for numbers without NaN — by a
    sort, since numpy's unique imports numpy.ma on its first call (≈ 9 ms of a process that
    runs one batch)."""
    a = np.sort(a, axis=None)
    return a[np.concatenate(([True], a[1:] != a[:-1]))] if len(a) > 1 else a



def picked(items: Any, at: list[int]) -> Sequence[Any]:
    """``[items[i] for i in at]`` in one C-level call (a tuple; ``items`` a list of events or
    a column source's mapping of them): half the time of a list comprehension or a map."""
    if len(at) > 1:
        return itemgetter(*at)(items)  # type: ignore[no-any-return]
    return [items[i] for i in at]



def number_events(counters: Any, events: Sequence[Event]) -> list[tuple[Event, int]]:
    """Number ``events`` as the per-event engine numbers them one by one
    (``Counters.number``), in one pass; returns the events a restore's numbering shifted, with
    their reader's numbers (to undo it)."""
    if not events:
        return []
    base = counters.input
    shifted: list[tuple[Event, int]] = []
    if counters.renumber:  # (after a restore: the saved stream's numbering goes on)
        shifted = [(e, e.seq) for e in events if e.seq >= 0]
        for e, seq in shifted:
            e.seq = counters.continued(seq)
    if len(events) <= 32:  # (a short stretch between a split's stepped rows: no numpy call)
        seqs: Any = list(map(_SEQ, events))
        low, high = min(seqs), max(seqs)
    else:
        seqs = np.fromiter(map(_SEQ, events), dtype=np.int64, count=len(events))
        low, high = int(seqs.min()), int(seqs.max())
    if low >= 0:  # numbered already (the usual case): only the counter moves
        counters.input = max(base, high + 1)
    elif high < 0:  # (none numbered: one C-level pass, half a Python loop's time)
        deque(map(setattr, events, repeat("seq"), range(base, base + len(events))), maxlen=0)
        counters.input = base + len(events)
    else:
        for e in events:
            if e.seq < 0:
                e.seq = counters.input
            if e.seq >= counters.input:
                counters.input = e.seq + 1
    return shifted



#: by the type of a column's first value: a C-level call that gives back a value of that
#: type (a subclass's as its base type) and raises TypeError for any other, and the dtype
#: numpy infers for such values (an int column may hold booleans: numpy makes them 0/1 too)
_STRICT: dict[type, tuple[Any, Any]] = {float: (float.__float__, np.float64),
                                        int: (int.__index__, np.int64)}


def read_column(params: Sequence[tuple], k: int) -> np.ndarray:
    """Parameter ``k`` of the tuples ``params`` as :func:`as_column` makes it — in one pass
    when every value is of its first value's type, a float or an int (each value read and
    converted while in the cache: reading the values of Python events is memory-bound, and
    numpy's inference reads each twice); else by :func:`as_column` (booleans too: its test of
    their types and one conversion cost less than a strict conversion value by value —
    motorbike's seat column, 200,000 values, 0.7x the time)."""
    n = len(params)
    strict = _STRICT.get(type(params[0][k])) if n else None
    if strict is not None:
        check, dtype = strict
        try:
            return np.fromiter(map(check, map(itemgetter(k), params)), dtype=dtype, count=n)
        except (TypeError, OverflowError):  # (another type, an int beyond int64)
            pass
    return as_column(list(map(itemgetter(k), params)))



def as_column(values: list[Any]) -> np.ndarray:
    """``values`` as a numpy column: numbers and booleans as numpy infers them, anything else
    (strings, None, mixed) as the Python objects themselves."""
    first = values[0] if values else 0
    # (a text or None first makes objects whatever follows: skip numpy's text array, several
    # times the cost; values numpy cannot stack, such as lists beside texts, are objects too)
    c = None
    if type(first) is bool and list(map(type, values)).count(bool) == len(values):
        # (booleans only: numpy's inference of them costs twice reading their types)
        return np.fromiter(values, dtype=bool, count=len(values))
    if type(first) is not str and first is not None:
        try:
            c = np.array(values)
        except (ValueError, TypeError):
            c = None
    if c is None or c.ndim != 1 or c.dtype.kind not in "biuf":
        c = np.empty(len(values), dtype=object)
        c[:] = values
    return c
