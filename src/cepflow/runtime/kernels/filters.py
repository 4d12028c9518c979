"""Event-only filters over a batch's rows: column-wise when runtime.vector_expr decides
them, else the compiled closure per row, declining the batch when one fails (the per-event
engine then reports each failure as it would)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from itertools import count, islice
from typing import Any

import numpy as np

from cepflow.runtime.kernels.frame import declined_on_failure
from cepflow.runtime.rows import Rows, TypeColumns

_NOB: dict[str, Any] = {}  # the bindings given to a filter that reads only its event



def filter_rows(pos: Any, src: Rows, idx: np.ndarray, schemas: Any,
                 cols: dict[tuple[str, int], np.ndarray]) -> np.ndarray | None:
    """Which rows ``idx`` (all of the position's type) pass the position's filter
    (:func:`filter_mask`; None: it has none). ``cols`` caches the columns read (per type and
    field) for the other stages."""
    if pos.filter is None:
        return None
    t = pos.type

    def column(k: int) -> np.ndarray:
        c = cols.get((t, k))
        if c is None:
            c = cols[t, k] = src.column(k, idx)
        return c

    fields = {name: i for i, name in enumerate(schemas[t].param_names)}
    return filter_mask(pos, idx, fields, column, src.lookup)



def filter_mask(pos: Any, rows: np.ndarray, fields: Mapping[str, int],
                 column: Any, lookup: Any, codes: Any = None) -> np.ndarray | None:
    """Mask over ``rows`` (event positions) of the events passing ``pos``'s filter, which reads
    only its event (None: no filter): column-wise when runtime.vector_expr can decide it
    (``column(k)``: parameter ``k`` of those rows; ``codes(k)``: the same as dictionary codes
    when its values are texts, TypeColumns.codes), else the compiled closure per event
    (``lookup(rows)[i]``: the event at position ``i``)."""
    from cepflow.runtime.vector_expr import filter_mask

    if pos.filter is None:
        return None
    mask = (filter_mask(pos.where, fields, column, codes=codes)
            if pos.where is not None and len(rows) else None)
    if mask is None:
        ev, flt = lookup(rows), pos.filter
        # (the per-event engine evaluates a filter only where a partial match could take the
        # event: to report the same failures, the batch goes event by event)
        with declined_on_failure(f"a filter failed on {len(rows)} row(s)"):
            mask = np.fromiter((bool(flt(ev[i], _NOB)) for i in rows.tolist()), dtype=bool,
                               count=len(rows))
    return mask



def type_mask(pos: Any, cols: TypeColumns) -> np.ndarray | None:
    """:func:`filter_mask` over every row of ``pos``'s type in ``cols``, computed once per
    batch for equal filters (every1 and every2 of examples/every both test ``id = "A"``): the
    same expression over the same events has the same truth, and a failure declines the
    batch whichever pattern meets it first."""
    t = pos.type
    key = (t, pos.where)
    try:
        mask = cols.masks.get(key) if pos.where is not None else None
    except TypeError:  # (an expression holding something unhashable: not shared)
        key = None
    if mask is None:
        mask = filter_mask(pos, cols.rows(t), cols.fields(t), lambda k: cols.column(t, k),
                           cols.events, lambda k: cols.made_codes(t, k))
        if key is not None and pos.where is not None and mask is not None:
            cols.masks[key] = mask
    return mask



def passing(edge: Any, cols: TypeColumns) -> np.ndarray:
    """Indices (into ``cols.rows(type)``) of the events that pass the edge's event-only
    filter (:func:`filter_mask`)."""
    mask = type_mask(edge.position, cols)
    return (np.arange(len(cols.rows(edge.position.type)), dtype=np.int64) if mask is None
            else np.flatnonzero(mask))



def key_codes(table: dict[Any, int], uniq: list[Any], local: np.ndarray) -> np.ndarray:
    """Per row (``local``: its index into ``uniq``, Rows.values) its key's code in ``table``
    (extended here; equal codes: equal as dict keys), the codes given in the order values
    first come, as one setdefault per value gives them: in one C-level pass, a dict whose
    missing keys take the next code (``defaultdict`` of a counter: gesture's keys, 0.6x the
    time of finding the distinct values first and looking every value up then)."""
    grown: defaultdict[Any, int] = defaultdict(count(len(table)).__next__, table)
    remap = np.fromiter(map(grown.__getitem__, uniq), dtype=np.int64, count=len(uniq))
    if len(grown) > len(table):  # (the new values, in the order of their codes)
        table.update(islice(grown.items(), len(table), None))
    return remap[local] if len(remap) else np.zeros(0, np.int64)



def nan_codes(table: dict[Any, int]) -> np.ndarray:
    """Per code of :func:`key_codes`' table whether its value is NaN (a value is NaN iff its
    code's: a NaN unifies with nothing)."""
    return np.fromiter((v != v for v in table), dtype=bool, count=len(table))



def chain_rows(c: Any, src: Rows, type_code: Mapping[str, int], values: list[Any], schemas: Any,
               cols: dict[tuple[str, int], np.ndarray], every_row: bool = False
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[Any, int]]:
    """The rows of a batch a keyed chain (runtime.shapes.Chain) reads, type by type: their
    positions, per row a bit mask of the stages whose type and filter it passes, its key's
    code (equal codes: equal as dict keys) and the index of its key value in ``values``
    (extended here), and the codes' table. A filter reading variables (Chain.cross) drops
    no row here. A NaN key unifies with nothing (Algorithm 1
    compares values), so at a stage after the first a NaN row takes nothing. Rows that pass
    no stage's filter are left out, unless ``every_row`` (they may be noise)."""
    codes = src.codes
    table: dict[Any, int] = {}
    pos_parts, bits_parts, key_parts, vidx_parts = [], [], [], []
    for t in c.types:
        code = type_code.get(t)
        if code is None:
            continue
        idx = np.flatnonzero(codes == code)
        sts = [st for st, alts in enumerate(c.stages) if t in alts]
        # (a filter reading variables, Chain.cross, is tried row by row with a partial
        # match's bindings: kernels.chain._cross_tests)
        passes = [filter_rows(pos, src, idx, schemas, cols) if pos.local else None
                  for pos in (c.stages[st][t].position for st in sts)]
        if not every_row and any(p is not None for p in passes):
            keep = np.zeros(len(idx), dtype=bool)
            for p in passes:
                keep |= True if p is None else p
            idx = idx[keep]
            passes = [None if p is None else p[keep] for p in passes]
        if c.var is None:  # (unkeyed: every row of one key, None)
            local, uniq = np.zeros(len(idx), np.int64), [None] if len(idx) else []
        else:
            local, uniq = src.values(c.key_param[t], idx)
        local = np.asarray(local, dtype=np.int64)
        key = key_codes(table, uniq, local)
        nan = None
        if len(uniq) and (every_row or sts[-1] > 0):
            nan = nan_codes(table)[key]
        bits = np.zeros(len(idx), dtype=np.int64)
        for st, p in zip(sts, passes, strict=True):
            if p is None and (nan is None or not st):
                bits |= 1 << st
                continue
            take = np.ones(len(idx), dtype=bool) if p is None else p
            if st and nan is not None:
                take = take & ~nan
            bits |= take.astype(np.int64) << st
        key_parts.append(key)
        vidx_parts.append(local + len(values))
        values.extend(uniq)
        pos_parts.append(idx)
        bits_parts.append(bits)
    empty = np.zeros(0, np.int64)
    positions, bits, key, vidx = (np.concatenate(p) if p else empty
                                  for p in (pos_parts, bits_parts, key_parts, vidx_parts))
    return positions, bits, key, vidx, table



def forbid_rows(c: Any, src: Rows, type_code: Mapping[str, int], table: dict[Any, int],
                schemas: Any, cols: dict[tuple[str, int], np.ndarray]
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The rows of a batch a keyed chain's NOTs (runtime.shapes.Chain.forbids) forbid: their
    positions, per row a bit mask of the stages whose waiting partial matches of its key it
    traps (a NOT's filter holding: of several NOTs of its type at a stage, any), its key's
    code in ``table`` (:func:`chain_rows`' codes, extended here; 0 for a type no keyed NOT
    or stage reads a key of), and a bit mask of the stages whose partial matches of every
    key it traps (a NOT of any key, Chain.every_key). A NaN key unifies with nothing, so it
    forbids nothing of its key (Matcher._forbidden); a NOT of any key binds no key, so its
    row traps whatever the row's key."""
    codes = src.codes
    by_type: dict[str, list[tuple[int, Any, bool]]] = {}
    for m, at in enumerate(c.forbids):
        for t, poss in at.items():
            every = c.every_key(m, t)
            by_type.setdefault(t, []).extend((m, p, every) for p in poss)
    pos_parts, bits_parts, key_parts, all_parts = [], [], [], []
    for t, hits in by_type.items():
        code = type_code.get(t)
        if code is None:
            continue
        idx = np.flatnonzero(codes == code)
        bits = np.zeros(len(idx), dtype=np.int64)
        every_bits = np.zeros(len(idx), dtype=np.int64)
        for m, p, every in hits:
            mask = filter_rows(p, src, idx, schemas, cols)
            hit = np.int64(1 << m) if mask is None else mask.astype(np.int64) << m
            if every:
                every_bits |= hit
            else:
                bits |= hit
        if c.var is None:  # (unkeyed: one key, None)
            key = np.full(len(idx), table.setdefault(None, len(table)), dtype=np.int64)
        elif t not in c.key_param:  # (only NOTs of any key read it: no key)
            key = np.zeros(len(idx), dtype=np.int64)
        else:
            local, uniq = src.values(c.key_param[t], idx)
            key = key_codes(table, uniq, np.asarray(local, dtype=np.int64))
            if len(uniq):
                bits[nan_codes(table)[key]] = 0
        keep = (bits | every_bits) != 0
        pos_parts.append(idx[keep])
        bits_parts.append(bits[keep])
        key_parts.append(key[keep])
        all_parts.append(every_bits[keep])
    empty = np.zeros(0, np.int64)
    return tuple(np.concatenate(p) if p else empty  # type: ignore[return-value]
                 for p in (pos_parts, bits_parts, key_parts, all_parts))
