"""Event-only filters over a batch's rows: column-wise when runtime.vector_expr decides
them, else the compiled closure per row, declining the batch when one fails (the per-event
engine then reports each failure as it would)."""

from __future__ import annotations

from collections.abc import Mapping
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
