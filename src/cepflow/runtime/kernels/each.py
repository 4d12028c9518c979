"""The kernel of Esper's ``every a = A(f) or every b = A(g) …`` whose operands one event can
both fit (runtime.shapes.EsperEach; ast.Or.each): each of Esper's every nodes under the or
reports the event on its own (EvalEveryStateNode, EvalOrStateNode), so an event is one match
per operand whose filter it passes, in the operands' order — per event one instance per
operand (Matcher._start), each complete at once: a token id, then its match.

Over a batch (in the program split, kernels.split): per operand the rows of its type passing
its filter (column-wise where runtime.vector_expr decides it: kernels.filters), merged by
(row, operand); the plan's rows that take token ids are the matches' own rows, one per
match. Nothing stays open and no timer is asked for."""

from __future__ import annotations

from typing import Any

import numpy as np

from cepflow.events.event import ComplexEvent
from cepflow.runtime.kernels.filters import passing
from cepflow.runtime.kernels.restart import Plan
from cepflow.runtime.rows import EventRows, TypeColumns, distinct


def plan_each(m: Any, sh: Any, cols: TypeColumns) -> Plan:
    """The plan of the pattern ``m`` of shape ``sh`` (runtime.shapes.EsperEach) over the batch
    ``cols``: per match (in detection order: by row, then operand) its row — where it takes
    its token id and completes —, the complex events, and a commit that marks the pattern
    done when it matched (Matcher._match). A filter failing on a row declines the batch
    (kernels.frame.Declined, from kernels.filters)."""
    rows_of, ops = [], []
    edges: list[Any] = []
    for t, es in sh.by_type.items():
        all_rows = cols.rows(t)
        for e in es:
            rows_of.append(all_rows[passing(e, cols)])
            ops.append(len(edges))
            edges.append(e)
    rows = np.concatenate([np.zeros(0, np.int64), *rows_of]).astype(np.int64)
    op = np.repeat(np.array(ops, np.int64), [len(r) for r in rows_of])
    # (the operands' order: their each index, the order Matcher._start takes them in)
    rank = np.array([e.position.each for e in edges] or [0], np.int64)
    o = np.lexsort((rank[op] if len(op) else op, rows))
    rows, op = rows[o], op[o]
    found = single_matches(m, edges, rows, op, cols)

    def commit(token_ids: np.ndarray) -> None:
        if found:
            m.done = True

    return rows, rows, found, commit


def single_matches(m: Any, edges: list[Any], rows: np.ndarray, op: np.ndarray,
                   cols: TypeColumns) -> list[ComplexEvent]:
    """The complex events of pattern ``m`` completed by one event each: at row ``rows[i]`` by
    the edge ``edges[op[i]]`` (its variables bound from the event alone, the select list
    evaluated on them), as Matcher._match makes them (ids given later; a column source makes
    the events of those rows only)."""
    src = cols.src
    evs: Any = (src.events if isinstance(src, EventRows) else
                src.lookup(distinct(rows)) if len(rows) else {})
    result, name = m.result, m.name
    found = []
    for r, k in zip(rows.tolist(), op.tolist(), strict=True):
        e = evs[r]
        params = e.params
        bindings = {v: params[i] for i, v in edges[k].position.binds}
        out_params, out = result(bindings, e.ts, e)
        found.append(ComplexEvent(name, out_params, e.ts, out, [e], 0))
    return found
