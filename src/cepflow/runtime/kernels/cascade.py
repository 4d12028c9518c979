"""The derived rows of a split batch planned without per-event steps (docs/architecture.md,
"The program split"): single-stage patterns ``every e = W(f)`` over a window block's rows
(kernels.window_block) run in the pair kernel over those rows, and time batches over the rows
of such blocks and patterns (a union of types, like air quality's AirQualityLevel over the 36
grade patterns) become window blocks of their own over the derived stream.

The derived stream of a batch is ordered as the per-event engine's cascade makes it: at one
input row, the window blocks' rows in statement order, each followed by the matches of the
patterns reading it (in engine order). A pattern or time batch the batch cannot plan (a filter
failing on a row, a value a sum cannot take) stays per event: its input rows are then read by
the per-event part and stepped (split._run), where the planned statements replay.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cepflow.compiler.evaluator import can_fail
from cepflow.events.event import ComplexEvent
from cepflow.runtime.kernels.frame import Declined
from cepflow.runtime.kernels.window_block import WindowBlock, batch_fits
from cepflow.runtime.rows import EventRows, TypeColumns


@dataclass
class Derived:
    """What a batch plans beyond the input: per single-stage pattern over a block (in the
    cascade's order) its matcher, plan (rows of the input batch) and the block it reads, and
    the time batches over derived rows (position in ``engine.windows`` -> block)."""

    patterns: list[tuple[Any, Any, int]] = field(default_factory=list)
    batches: dict[int, WindowBlock] = field(default_factory=dict)


def plan_cascade(engine: Any, blocks: dict[int, WindowBlock], src_n: int, t_end: Any,
                 plan_pair: Callable[..., Any]) -> Derived:
    """Plan the patterns and time batches over the rows of ``blocks`` (the window blocks
    over the input of a batch whose last row is at ``t_end``)."""
    out = Derived()
    if not blocks:
        return out
    schemas, arity = engine.program.schemas, engine.host.arity
    # (a time batch's rows come at its boundaries, stepped rows, where they cascade per event)
    by_type = {b.name: (pos, i, b) for pos, (i, b) in enumerate(blocks.items())
               if b.statement.window.kind == "time"}
    # (patterns in cascade order: by the block they read, then engine order)
    found: list[tuple[int, int, Any, Any, list[ComplexEvent]]] = []
    for m in engine.matchers:
        pr, types = m.pattern.pair, m.pattern.types
        if (pr is None or len(pr.stages) != 1 or len(types) != 1
                or any(can_fail(f) for f in m.pattern.auto.select or ())):
            continue
        (t,) = types
        if t not in by_type:
            continue
        pos, _i, b = by_type[t]
        try:
            plan = plan_pair(m, TypeColumns(EventRows(b.found), schemas), arity)
        except Declined:
            plan = None
        if plan is None:
            continue
        at = np.asarray(b.at, np.int64)
        new_rows, rows, matches, commit = plan
        found.append((pos, m.slot, m, (at[new_rows], at[np.asarray(rows, np.int64)].tolist(),
                                       matches, commit), matches))
    found.sort(key=lambda f: (f[0], f[1]))
    out.patterns = [(m, plan, pos) for pos, _s, m, plan, _f in found]
    # the derived stream, in the cascade's order: (input row, block, 0 | 1 + pattern)
    items: list[tuple[int, int, int, int, ComplexEvent]] = []
    for pos, (_i, b) in enumerate(blocks.items()):
        items += [(r, pos, 0, j, ce) for j, (r, ce) in enumerate(zip(b.at, b.found,
                                                                   strict=True))]
    for q, (_m, plan, pos) in enumerate(out.patterns):
        items += [(r, pos, 1 + q, j, ce) for j, (r, ce) in enumerate(zip(plan[1], plan[2],
                                                                        strict=True))]
    items.sort(key=lambda x: x[:4])
    planned = set(by_type) | {m.name for m, _p, _b in out.patterns}
    for i, r in enumerate(engine.windows):
        st = r.statement
        if i in blocks or not set(st.input_types) <= planned or not batch_fits(r):
            continue
        mine = [x for x in items if x[4].type in st.input_types]
        rows = EventRows([x[4] for x in mine])
        rows.input_rows = np.array([x[0] for x in mine], np.int64)  # type: ignore[attr-defined]
        try:
            out.batches[i] = WindowBlock(engine, r, TypeColumns(rows, schemas), rows,
                                         t_end=t_end)
        except Declined:
            continue
    return out
