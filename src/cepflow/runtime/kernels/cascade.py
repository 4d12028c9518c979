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
from itertools import chain
from typing import Any

import numpy as np

from cepflow.compiler.evaluator import can_fail
from cepflow.events.event import ComplexEvent
from cepflow.runtime.kernels.frame import Declined
from cepflow.runtime.kernels.pair import fill_params
from cepflow.runtime.kernels.window_block import WindowBlock, batch_fits
from cepflow.runtime.rows import EventRows, TypeColumns


@dataclass
class Derived:
    """What a batch plans beyond the input: per single-stage pattern over a block (in the
    cascade's order) its matcher, plan (rows of the input batch) and the block it reads, and
    the time batches over derived rows (position in ``engine.windows`` -> block)."""

    patterns: list[tuple[Any, Any, int]] = field(default_factory=list)
    batches: dict[int, WindowBlock] = field(default_factory=dict)


def plan_cascade(engine: Any, blocks: dict[int, WindowBlock], src_ts: np.ndarray, t_end: Any,
                 plan_pair: Callable[..., Any]) -> Derived:
    """Plan the patterns and time batches over the rows of ``blocks`` (the window blocks
    over the input of a batch whose rows are at ``src_ts``, the last at ``t_end``). A
    derived row has the time of the input row it comes at (a sliding window's row is its
    arriving event's, a single stage's match its row's)."""
    out = Derived()
    if not blocks:
        return out
    schemas, arity = engine.program.schemas, engine.host.arity
    # (a time batch's rows come at its boundaries, stepped rows, where they cascade per event;
    # so do a fully aggregated sliding window's rows on expiry: read per event, all its rows)
    by_type = {b.name: (pos, i, b) for pos, (i, b) in enumerate(blocks.items())
               if b.statement.window.kind == "time" and b.plan.mode == "event"}
    # (patterns in cascade order: by the block they read, then engine order)
    found: list[tuple[int, int, Any, Any, list[ComplexEvent]]] = []
    # (the block's rows as columns, read once for every pattern over it)
    cols: dict[int, TypeColumns] = {}
    at_of: dict[int, np.ndarray] = {}
    for m in engine.matchers:
        pr, types = m.pattern.pair, m.pattern.types
        if (pr is None or len(pr.stages) != 1 or pr.alts or len(types) != 1
                or any(can_fail(f) for f in m.pattern.auto.select or ())):
            continue
        (t,) = types
        if t not in by_type:
            continue
        pos, _i, b = by_type[t]
        # (a time batch reading them reads every match's parameters: made column-wise now)
        eager = any(m.name in r.statement.input_types and batch_fits(r)
                    for r in engine.windows)
        try:
            if pos not in cols:  # (a block's rows, all of its type)
                cols[pos] = TypeColumns(EventRows(b.found, ([b.name], np.zeros(
                    len(b.found), np.int64)), src_ts[np.asarray(b.at, np.int64)]), schemas)
            plan = plan_pair(m, cols[pos], arity, eager)
        except Declined:
            plan = None
        if plan is None:
            continue
        if pos not in at_of:  # (the block's input rows, once per block)
            at_of[pos] = np.asarray(b.at, np.int64)
        at = at_of[pos]
        new_rows, rows, matches, commit = plan
        found.append((pos, m.slot, m, (at[new_rows], at[np.asarray(rows, np.int64)].tolist(),
                                       matches, commit), eager))
    found.sort(key=lambda f: (f[0], f[1]))
    out.patterns = [(m, plan, pos) for pos, _s, m, plan, _e in found]
    made = [e for _p, _s, _m, _plan, e in found]  # (with their parameters: eager)
    planned = set(by_type) | {m.name for m, _p, _b in out.patterns}
    # the derived stream, in the cascade's order: (input row, block, 0 | 1 + pattern, j);
    # per part its type, rows, rank, complex events and whether their parameters are made
    parts = [(b.name, b.at, pos, 0, b.found, True) for pos, (_i, b) in enumerate(blocks.items())
             if b.name in by_type]
    parts += [(m.name, plan[1], pos, 1 + q, plan[2], made[q])
              for q, (m, plan, pos) in enumerate(out.patterns)]
    for i, r in enumerate(engine.windows):
        st = r.statement
        if i in blocks or not set(st.input_types) <= planned or not batch_fits(r):
            continue
        mine = [p for p in parts if p[0] in st.input_types]
        lens = [len(p[1]) for p in mine]
        at = np.concatenate([np.asarray(p[1], np.int64) for p in mine])
        j = np.concatenate([np.arange(n, dtype=np.int64) for n in lens])
        pos = np.repeat(np.array([p[2] for p in mine], np.int64), lens)
        sub = np.repeat(np.array([p[3] for p in mine], np.int64), lens)
        for p in mine:  # (the batch reads every match's parameters: those not made yet)
            if p[3] and not p[5]:
                fill_params(p[4])
        evs = np.fromiter(chain.from_iterable(p[4] for p in mine), dtype=object,
                          count=len(at))
        o = np.lexsort((j, sub, pos, at))
        # (each part's rows of its statement's type: their codes known, not read per row)
        names = list(dict.fromkeys(p[0] for p in mine))
        code = np.repeat(np.array([names.index(p[0]) for p in mine], np.int64), lens)
        rows = EventRows(evs[o].tolist(), (names, code[o]), src_ts[at[o]])
        try:
            out.batches[i] = WindowBlock(engine, r, TypeColumns(rows, schemas), rows,
                                         t_end=t_end)
        except Declined:
            continue
    return out

