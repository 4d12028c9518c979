"""The program split's kernel matches handed over as column blocks (kernels.split.split_columns).

The split makes every match of a batch as a Python object (the per-event part and the replay
need them), but the file job writes them: as objects, each pays for its parameters and its
events' ids one by one (``outputs.records.match_batch``), as columns a few Arrow calls per
block (``arrow_rows.encode_match_table``). So, over a column source, each Esper pair plan of
the batch — a kernel pattern over the input or a pattern planned over the derived stream
(kernels.cascade.plan_higher) — also describes its matches the way the pair kernel's column
route does (kernels.pair.stage_blocks: instances begun in the batch, a select list of fields,
the time and literals: ``StageMatches``), and each VEPL chain's plan hands over the
``ChainMatches`` block it makes its objects from (kernels.chain.plan_chain);
:meth:`ColumnBlocks.table` places those blocks in the batch's detection order beside the other
matches, which stay an ``ObjectMatches`` block.

A block over a derived stream names rows of that stream; **decision — it is written in input
rows only**: each of its stages of an input type is that row's input row, each stage of a
kernel pattern's output the input rows of the match there (found by the object's identity among
that pattern's own block: a match held from an earlier batch, or made as an object, leaves the
match that reads it an object), and each select item reading such a match's parameter the item
of its own select list it is (its literals carried over; an item reading its time, which is
not a field of a row, or a chain's parameter, leaves the block to objects). A chain over a
derived stream is taken when its parameters are its key (or none: ho_chain's ``P(x) -> C(x,
_)``) and its match began in the batch (a partial match held from before may hold derived
events of an earlier batch). The events of a match are then its leaves' input rows in order,
as ``ComplexEvent.event_refs`` lists them, and its time that of the row it completed at, as
the match's last part's.

**Decision — the objects are the block's** (``StageMatches.events``, ``ChainMatches.events``):
``MatchTable.complex_events()`` gives the very objects the split emitted (ids, bindings,
parts, lazy kinds for the Python API), and a block's place in the detection order is where its
objects are in the split's output, by identity — a plan whose matches were not emitted (a
pattern the batch left per event after planning it) contributes nothing, and its matches are
objects there.

**Matches nothing reads are not made** (:meth:`ColumnBlocks.defer`, since session 38): a pair
plan over the batch of a pattern whose complex events go nowhere but the output
(``Engine.consumed`` false) and whose matches are all one ``StageMatches`` block (instances
begun in the batch, a select list of fields, the time and literals) hands the split a
:class:`Deferred` instead of its objects — a sequence that makes the objects of the matches
asked for only (those a row the per-event part steps emits: ``_Replay.at_row``), nor the
events of their rows. The matches recorded in bulk (``_Replay.record_loose``) stay unmade:
their place in the output and their match ids are noted (:meth:`Deferred.record`), and
:meth:`ColumnBlocks.table` places them as a block without objects —
``MatchTable.complex_events()`` makes them when asked, as the pair kernel's column route does
(lazy ``_OneKind`` complex events of the same type, parameters, bindings, time, parts and
ids). A match whose id is not the table's first id plus its place (the block's ids are so
given) is made as an object with its id instead (never seen so far: the ids of the loose
matches follow the output's order wherever a deferred plan's matches are among them).

**A select list computed column-wise is a value column** (since session 39;
kernels.pair.stage_blocks with the batch's columns): contractions' Duration (``a2.ts -
a1.ts``) is a block, so deferred when nothing reads it. **A window's rows at its arrivals and
the patterns over them are blocks with their objects** (:meth:`ColumnBlocks.add_window`,
:meth:`ColumnBlocks._through`): a sliding window's row per arriving event is a block over its
input rows (its aggregates ``(VALUE, i)`` columns of the rows' own values), a single-stage
pattern planned over those rows (kernels.cascade: air quality's grades) a block in the same
input rows; both keep the split's objects (the cascade reads them as events), so only the
writer reads them column-wise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from cepflow.events.event import ComplexEvent
from cepflow.runtime.kernels.pair import stage_blocks
from cepflow.runtime.rows import (
    CONST,
    VALUE,
    ChainMatches,
    EventRows,
    MatchTable,
    ObjectMatches,
    Rows,
    StageMatches,
    TypeColumns,
    field_values,
)

#: a kernel pattern's block by output type: its objects' ids sorted (those whose events are
#: all rows of the batch), the block's column of each, the block
_Registered = tuple[np.ndarray, np.ndarray, "StageMatches | ChainMatches"]
#: a block of the batch and the key values its ``value`` indexes (a chain's; None: none)
_Block = tuple["StageMatches | ChainMatches", "list[Any] | None"]


class Deferred:
    """The matches of one pair plan not made (module docstring): as long as the plan's list
    of complex events, each made only when asked for by place (``d[i]``, ``d[lo:hi]``; made
    once), and the places, ids and output places of those the split recorded unmade
    (:meth:`record`)."""

    def __init__(self, type_name: str, n: int, make: Callable[[np.ndarray], list[Any]]
                 ) -> None:
        #: the matches' type (the statistics count them by it)
        self.type = type_name
        self.n = n
        self._make = make  # (the objects of the matches at some places, in that order)
        self._made: dict[int, ComplexEvent] = {}
        #: per record: the matches' places in the plan, their match ids, their output places
        self.recorded: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        #: per place its recorded match id (-1: none yet), given to an object made after the
        #: record (a match another deferred match holds as a part, made when that one is)
        self._ids: np.ndarray | None = None
        #: whether the output's objects of these matches are this sequence's own (another
        #: plan's matches hold them as parts — a window row under a grade: the table's block
        #: gives them, :class:`Made`), not made anew from the rows
        self.shared = False

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int | slice | np.ndarray) -> Any:
        made = self._made
        if i.__class__ is int:  # (one place, made already: a lookup)
            ce = made.get(i)  # type: ignore[call-overload]
            if ce is not None:
                return ce
            if not 0 <= i < self.n:  # type: ignore[operator]
                raise IndexError(i)
        one = not isinstance(i, (slice, np.ndarray))
        places = (range(*i.indices(self.n)) if isinstance(i, slice)
                  else i.tolist() if isinstance(i, np.ndarray) else [i])
        new = [j for j in dict.fromkeys(places) if j not in made]
        if new:
            objs = self._make(np.array(new, np.int64))
            if self._ids is not None:  # (recorded already: their ids)
                ids = self._ids[new].tolist()
                for ce, k in zip(objs, ids, strict=True):
                    if k >= 0:
                        ce.match_id = k
            made.update(zip(new, objs, strict=True))
        got = [made[j] for j in places]
        return got[0] if one else got

    def __iter__(self) -> Any:
        return iter(self[0:self.n])

    def record(self, places: np.ndarray, ids: np.ndarray, at: np.ndarray) -> None:
        """Matches at ``places`` recorded unmade, with match ids ``ids``, at output places
        ``at`` (those made already take their ids now, the others when made)."""
        self.recorded.append((places, ids, at))
        if self._ids is None:
            self._ids = np.full(self.n, -1, np.int64)
        self._ids[places] = ids
        made = self._made
        if made:  # (a few made already, as another plan asked: by their places)
            at = np.fromiter(made, np.int64, count=len(made))
            got = self._ids[at]
            for j, k in zip(at[got >= 0].tolist(), got[got >= 0].tolist(), strict=True):
                made[j].match_id = k

    def made_at(self, rows: np.ndarray) -> Deferred:
        """Make the matches at places ``rows`` in one go (read one by one after: lookups)."""
        if len(rows):
            self[np.asarray(rows, np.int64)]
        return self


class Made:
    """The objects of a :class:`Deferred` at some places, made when the table's complex
    events are asked for (``StageMatches.events`` of a shared deferred block; their match
    ids the ones recorded, :meth:`Deferred.record`)."""

    def __init__(self, d: Deferred, places: np.ndarray) -> None:
        self._d, self._places = d, places

    def __len__(self) -> int:
        return len(self._places)

    def __iter__(self) -> Any:
        return iter(self._d[self._places])


def _ids(objects: Any, n: int) -> np.ndarray:
    """The identities of ``objects`` as an int64 column."""
    return np.fromiter(map(id, objects), np.int64, count=n)


class ColumnBlocks:
    """The column blocks of one split batch's plans (:meth:`add`, :meth:`add_chain`), and the
    batch's :class:`MatchTable` made of them and of the split's output (:meth:`table`)."""

    def __init__(self, batch: Rows, produced: set[str], unread: frozenset[str] = frozenset(),
                 planned_readers: frozenset[str] = frozenset()) -> None:
        #: the batch, whose rows the blocks name
        self.batch = batch
        #: the types some statement produces: a stage of any other type reads input rows
        self.produced = produced
        #: the kernel patterns whose complex events only the output reads (:meth:`defer`)
        self.unread = unread
        #: the window statements whose rows only patterns planned over them read
        #: (kernels.cascade.planned_readers): their rows too are left unmade where they can
        self.planned_readers = planned_readers
        #: the deferred plans' blocks (every match of the plan, ``rank`` its place there)
        self.deferred: list[tuple[StageMatches, Deferred]] = []
        #: every block, in input rows (``rank``: the place in its plan's matches)
        self.blocks: list[_Block] = []
        #: a kernel pattern's block over the input, by its output type (only when its
        #: matches are one block: a derived stage reads one layout of rows and fields)
        self.by_type: dict[str, _Registered] = {}
        #: a window block's arrival rows as a block (:meth:`add_window`), by the identity of
        #: its list of rows (what the patterns over them read as an ``EventRows``)
        self.window_rows: dict[int, StageMatches] = {}

    def _readable(self, src: Rows) -> bool:
        """Whether ``src`` is the batch or a derived stream of it (kernels.cascade), not
        another (a window block's rows, kernels.cascade.plan_cascade)."""
        return src is self.batch or (isinstance(src, EventRows) and src.inputs is not None)

    def add(self, m: Any, p: dict, inst: np.ndarray, found: list[ComplexEvent],
            cols: TypeColumns) -> None:
        """Describe the matches ``found`` of the pair plan ``p`` of pattern ``m`` (instances
        ``inst``, in the same order) over the rows of ``cols`` as blocks where they can be
        (kernels.pair.stage_blocks), in input rows when those are a derived stream
        (:meth:`_flat`) or a window block's rows (:meth:`_through`); none when they are
        another."""
        src = cols.src
        over = self.window_rows.get(id(getattr(src, "events", None)))
        if over is not None:  # (a pattern over a window block's rows: kernels.cascade)
            if isinstance(src.events, Deferred):  # type: ignore[attr-defined]
                src.events.shared = True  # type: ignore[attr-defined]  # (its rows, held)
            for b in stage_blocks(m, p, inst, cols):
                self._keep(m, self._through(b, over), None, found, False)
            return
        if not self._readable(src):
            return
        made = stage_blocks(m, p, inst, cols)
        if src is not self.batch:
            made = [b for b in (self._flat(b, src) for b in made)  # type: ignore[arg-type]
                    if b is not None]
        for b in made:
            self._keep(m, b, None, found, len(made) == 1)

    def unmade_rows(self, name: str) -> bool:
        """Whether the window statement ``name``'s block over the batch leaves its rows
        unmade where it can (``WindowBlock.unread``: only the output reads them; its rows
        then come to :meth:`add_window` as a :class:`Deferred`) — or only patterns planned
        over them (kernels.cascade.planned_readers), which read their columns and make the
        rows they hold only as they make their own matches (:meth:`defer`)."""
        return name in self.unread or name in self.planned_readers

    def add_window(self, w: Any, src: Rows) -> None:
        """Describe the rows of the window block ``w`` (kernels.window_block.WindowBlock)
        planned over the batch as a block, when each is the arrival row of its input row
        (``w.arrivals``: a sliding window's row per arriving event): a field item is that
        row's field, any other item (an aggregate) the row's own value, a ``(VALUE, i)``
        column of the rows' parameters; the rows of boundaries and expiries stay objects.
        Registered for the patterns over those rows (:meth:`add`, :meth:`_through`). Rows
        not made (``w.found`` a :class:`Deferred`: only the output reads them, ``w.unread``)
        are a deferred block, its values the block's item columns."""
        found = w.found
        unmade = isinstance(found, Deferred)
        if not unmade and (src is not self.batch or not w.arrivals or not found):
            return
        assert src is self.batch and w.arrivals  # (a Deferred only for the batch's arrivals)
        fields: list[tuple[int, int]] = []
        values: list[list[Any]] = []
        for i, (kind, a) in enumerate(w.plan.items):
            if kind == "field":
                fields.append((0, a))
            else:
                fields.append((VALUE, len(values)))
                values.append(w.item_columns[i] if w.item_columns is not None
                              else field_values(found, i))
        at = np.asarray(w.at, np.int64)
        b = StageMatches(w.name, tuple(w.plan.aliases), tuple(fields), at, np.arange(len(at)),
                         at[None, :], values=tuple(values))
        self.window_rows[id(found)] = b
        if unmade:  # (the patterns over them find it: :meth:`defer`)
            # (rows a pattern reads: the table gives the rows that pattern's matches hold,
            # the sequence's own — lazy rows whose parts are made when read, as made rows)
            found.shared = found.shared or w.name in self.planned_readers
            self.deferred.append((b, found))
            return
        b.events = found
        self.blocks.append((b, None))

    def _through(self, b: StageMatches, w: StageMatches) -> StageMatches:
        """Block ``b`` of a pattern over the rows of window block ``w`` (:meth:`add_window`:
        ``b``'s rows are places among ``w``'s matches) in input rows: each stage the input
        row of its window row, a field the window row's item it reads — that input row's
        field, or its value column gathered (a window block's items are no other: literals
        and expressions keep a window per event, window_block._shape)."""
        consts, values = b.consts, list(b.values)
        fields: list[tuple[int, int] | None] = []
        for f in b.fields:
            if f is None or f[0] < 0:  # (null, a literal, the match's own time, a value)
                fields.append(f)
                continue
            g = w.fields[f[1]]
            assert g is not None and (g[0] == 0 or g[0] == VALUE)
            if g[0] == 0:
                fields.append((f[0], g[1]))
            else:
                fields.append((VALUE, len(values)))
                values.append(list(map(w.values[g[1]].__getitem__, b.rows[f[0]].tolist())))
        return StageMatches(b.pattern, b.names, tuple(fields), w.at[b.at], b.rank,
                            w.rows[0][b.rows], consts, values=tuple(values))

    def defer(self, m: Any, p: dict, inst: np.ndarray, cols: TypeColumns,
              make: Callable[[np.ndarray], list[Any]], read_as_columns: bool = False
              ) -> Deferred | None:
        """A :class:`Deferred` for the matches of instances ``inst`` of the pair plan ``p``
        of pattern ``m`` over the rows of ``cols`` (``make``: their objects by place), when
        only the output reads ``m``'s complex events and they are all one block over the
        batch (kernels.pair.stage_blocks, a computed select list's values a column of the
        block); else None (they are made)."""
        src = cols.src
        over = self.window_rows.get(id(getattr(src, "events", None)))
        if isinstance(src, EventRows) and over is not None and isinstance(src.events, Deferred):
            # (a pattern over a window block's rows not made, whose only reader takes its
            # matches' columns: its block in input rows, _through; its matches and those
            # rows are one another's objects — shared)
            if not read_as_columns or not len(inst):
                return None
            made = [self._through(b, over) for b in stage_blocks(m, p, inst, cols)]
            src.events.shared = True
        elif m.name not in self.unread or src is not self.batch or not len(inst):
            return None
        else:
            made = stage_blocks(m, p, inst, cols)
        if len(made) != 1 or not np.array_equal(made[0].rank, np.arange(len(inst))):
            return None
        d = Deferred(m.name, len(inst), make)
        d.shared = over is not None
        self.deferred.append((made[0], d))
        return d

    def add_chain(self, m: Any, b: ChainMatches, values: list[Any],
                  found: list[ComplexEvent], src: Rows) -> None:
        """The block ``b`` of a chain's plan (kernels.chain.plan_chain: its matches ``found``
        in the block's order, key values ``values``) — over a derived stream in input rows,
        when its parameters are its key (or none) and the match began in the batch (a
        partial match held from before may hold derived events of an earlier batch)."""
        if not self._readable(src):
            return
        if src is not self.batch:
            if b.bindings is not None:  # (fields beyond the key: the derived stream's)
                return
            fresh = np.ones(len(b.at), bool)
            fresh[list(b.old)] = False
            got = self._leaves(b.rows, src, fresh)  # type: ignore[arg-type]
            if got is None:
                return
            leaves, _stages, keep = got
            if not keep.any():
                return
            assert src.inputs is not None  # type: ignore[attr-defined]
            b = replace(b, at=src.inputs[b.at][keep], rank=b.rank[keep],  # type: ignore[attr-defined]
                        rows=np.concatenate(leaves)[:, keep], old={}, value=b.value[keep])
        self._keep(m, b, values, found, True)

    def _keep(self, m: Any, b: StageMatches | ChainMatches, values: list[Any] | None,
              found: list[ComplexEvent], alone: bool) -> None:
        """Keep block ``b`` (its objects from ``found``, by rank) and, when it is the
        pattern's only one (``alone``) and the pattern's output is read, register it by type
        (its matches whose events are all rows of the batch)."""
        b.events = list(map(found.__getitem__, b.rank.tolist()))
        self.blocks.append((b, values))
        if alone and m.name in self.produced:
            whole = np.flatnonzero((b.rows >= 0).all(axis=0))
            ids = _ids(map(b.events.__getitem__, whole.tolist()), len(whole))
            o = np.argsort(ids, kind="stable")
            self.by_type[m.name] = (ids[o], whole[o], b)

    def _leaves(self, rows: np.ndarray, src: EventRows, keep: np.ndarray
                ) -> tuple[list[np.ndarray], list[tuple[int, Any]], np.ndarray] | None:
        """Per stage of a block over the derived stream ``src`` (its ``rows``), the input
        rows of its events (an input type's: the row's input row; a kernel pattern's output:
        its match's rows in that pattern's registered block) and where they begin among the
        match's with that block (None for an input row); ``keep`` narrowed to the matches
        whose every derived event is a registered block's match. None when a stage reads
        rows of several types or of an output not registered."""
        assert src.inputs is not None
        n = rows.shape[1]
        leaves: list[np.ndarray] = []
        stages: list[tuple[int, Any]] = []
        at = 0
        for r in rows:
            codes = src.codes[r]
            if bool((codes != codes[0]).any()):
                return None
            t = src.type_names[int(codes[0])]
            if t not in self.produced:
                stages.append((at, None))
                leaves.append(src.inputs[r][None, :])
                at += 1
                continue
            reg = self.by_type.get(t)
            if reg is None:
                return None
            ids, col, kb = reg
            want = _ids(map(src.events.__getitem__, r.tolist()), n)
            q = np.searchsorted(ids, want).clip(max=max(len(ids) - 1, 0))
            keep = keep & (ids[q] == want if len(ids) else np.zeros(n, bool))
            stages.append((at, kb))
            leaves.append(kb.rows[:, col[q]] if len(ids) else np.zeros((len(kb.rows), n),
                                                                      np.int64))
            at += len(kb.rows)
        return leaves, stages, keep

    def _flat(self, b: StageMatches, src: EventRows) -> StageMatches | None:
        """Block ``b`` over the derived stream ``src`` in input rows (module docstring): the
        matches whose every derived part is a registered block's match; None when none is,
        or a stage reads rows of several types or a layout not registered, or a select item
        reads a derived part's time or a chain's parameter."""
        got = self._leaves(b.rows, src, np.ones(b.rows.shape[1], bool))
        if got is None:
            return None
        leaves, stages, keep = got
        consts = list(b.consts)
        fields: list[tuple[int, int] | None] = []
        for f in b.fields:
            if f is None or f[0] < 0:  # (null, a literal, the match's own time, a value)
                fields.append(f)
                continue
            start, kb = stages[f[0]]
            if kb is None:
                fields.append((start, f[1]))
                continue
            if not isinstance(kb, StageMatches):  # (a chain's parameters: its key or bindings)
                return None
            g = kb.fields[f[1]]
            if g is not None and g[0] == CONST:
                fields.append((CONST, len(consts)))
                consts.append(kb.consts[g[1]])
            elif g is not None and g[0] < 0:  # (the derived part's time or a value given
                return None  # per match: not a row's field)
            else:
                fields.append(None if g is None else (start + g[0], g[1]))
        if not keep.any():
            return None
        assert src.inputs is not None
        kept = np.flatnonzero(keep).tolist()
        return StageMatches(b.pattern, b.names, tuple(fields), src.inputs[b.at][keep],
                            b.rank[keep], np.concatenate(leaves)[:, keep], tuple(consts),
                            values=tuple(list(map(v.__getitem__, kept)) for v in b.values))

    def table(self, out: list[ComplexEvent], at: list[int], src: Rows) -> MatchTable:
        """The batch's :class:`MatchTable`: the split's complex events ``out`` (in detection
        order, each detected at row ``at``) as the blocks of the matches they hold (placed
        where their objects are in ``out``; a chain's key values appended to the table's)
        and one ``ObjectMatches`` block of the others."""
        n = len(out)
        if not n:
            return MatchTable([], [], 0, 0, src)
        rows_at = np.array(at, np.int64)
        free = np.ones(n, bool)
        blocks: list[Any] = []
        values: list[Any] = []
        first = self._unmade(out, rows_at, free, blocks)
        ids = _ids(out, n)
        o = np.argsort(ids, kind="stable")
        sorted_ids = ids[o]
        for b, own in self.blocks:
            made: list[ComplexEvent] = b.events  # type: ignore[assignment]
            want = _ids(made, len(made))
            q = np.searchsorted(sorted_ids, want).clip(max=n - 1)
            pos = o[q]
            # (every planned match is emitted — a batch whose cascade would pass max_cascade
            # stops, as per event —, once; a block whose objects are not all where they should
            # be would stay objects)
            if not bool((sorted_ids[q] == want).all()) or not free[pos].all():
                continue
            free[pos] = False
            if isinstance(b, ChainMatches):
                blocks.append(replace(b, at=rows_at[pos], rank=pos,
                                      value=b.value + len(values)))
                values += own or []
            else:
                blocks.append(replace(b, at=rows_at[pos], rank=pos))
        rest = np.flatnonzero(free)
        if len(rest):
            blocks.append(ObjectMatches(rows_at[rest], rest,
                                        out if len(rest) == n else
                                        list(map(out.__getitem__, rest.tolist()))))
        return MatchTable(blocks, values, first, n, src)

    def _unmade(self, out: list[Any], rows_at: np.ndarray, free: np.ndarray,
                blocks: list[Any]) -> int:
        """The table's first match id; the deferred plans' matches recorded unmade (None in
        ``out``) placed as blocks (``blocks``; their places no longer ``free``), each at its
        output place — one whose id is not the first id plus that place made as an object
        with its id, in ``out``."""
        recs = [(b, d, *r) for b, d in self.deferred for r in d.recorded if len(r[0])]
        if out[0] is not None:
            first = out[0].match_id
        else:  # (the first match is a deferred one: its recorded id)
            first = next(int(ids[at == 0][0]) for _b, _d, _p, ids, at in recs
                         if bool((at == 0).any()))
        for b, d, places, ids, at in recs:
            ok = ids == first + at
            if not ok.all():
                bad = np.flatnonzero(~ok)
                for q, ce, i in zip(at[bad].tolist(), d[places[bad]], ids[bad].tolist(),
                                    strict=True):
                    ce.match_id = i
                    out[q] = ce
                places, at = places[ok], at[ok]
            if len(at):
                free[at] = False
                blocks.append(replace(b.taken(places), at=rows_at[at], rank=at,
                                      events=Made(d, places) if d.shared else None))
        return first
