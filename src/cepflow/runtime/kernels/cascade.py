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

Patterns over the kernel patterns' matches (:func:`plan_higher`: Esper pairs and keyed chains
and VEPL chains reading a kernel pattern's output) run in the pair or the chain kernel over the
derived stream merged with the input rows they read, in the engine's order: at one input row
the event itself, then the matches it made, by pattern in engine order. Window statements over
one kernel pattern's output (:func:`plan_windows_over`) are window blocks over its planned
matches. Where a pattern's last stage reads a kernel pattern's output (alone or as an
alternative beside input types), the matches completing at that output come in the cascade of
the match they read, as a window's rows do: ranked per match (split._Replay's ``subs``); those
completing at an input row come at its input step (:class:`Higher`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

import numpy as np

from cepflow.compiler.evaluator import can_fail
from cepflow.events.event import ComplexEvent
from cepflow.runtime.kernels.chain import plan_chain, split_chain
from cepflow.runtime.kernels.frame import Declined
from cepflow.runtime.kernels.pair import fill_params
from cepflow.runtime.kernels.window_block import (
    WindowBlock,
    batch_fits,
    plan_window,
    single_fits,
)
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



@dataclass
class Higher:
    """A pattern over kernel patterns' matches planned over the derived stream
    (:func:`plan_higher`): its matcher, its plan in input rows (the rows opening its instances,
    the rows its matches complete at, the matches, the commit), and per instance opened its
    place in the engine's order at its row — input step (phase 0) or the cascade of a match
    (phase 1, ``cp``: that match's place among the row's matches, ``objs``: the match). A
    pattern whose last stage (or one of its alternatives) reads a kernel pattern's output
    completes in the cascade of that pattern's matches: ``last`` is that kernel pattern's slot
    and ``sub`` per match the place, among that pattern's matches at its row, of the one it
    completes at — -1 for a match an input row's step completes (a last stage mixing that
    output with input types: ho_or's ``P(x) OR C(x, _)``); ``last`` None: every match
    completes at input steps."""

    m: Any
    plan: Any
    phase: np.ndarray
    cp: np.ndarray
    objs: list[Any]
    last: int | None = None
    sub: np.ndarray | None = None

    def at_input(self) -> Any:
        """The plan of the matches completing at input steps — ranked like a kernel pattern's,
        by the pattern's slot — with every instance the pattern opens and its commit (all of
        the plan when ``last`` is None)."""
        if self.sub is None:
            return self.plan
        return _picked(self.plan, self.sub < 0, self.plan[0], self.plan[3])

    def in_cascade(self) -> tuple[Any, np.ndarray]:
        """The plan of the matches completing in the cascade of kernel pattern ``last``'s
        matches — opening no instance, nothing to commit: :meth:`at_input`'s plan does — and
        per match its place among that pattern's matches at its row (split._Replay's
        ``subs``); rows ascending, as the plan's."""
        assert self.sub is not None
        mine = self.sub >= 0
        return _picked(self.plan, mine, np.zeros(0, np.int64), _no_commit), self.sub[mine]


def _picked(plan: Any, mask: np.ndarray, new_rows: np.ndarray, commit: Callable[..., None]
            ) -> Any:
    """``plan``'s matches where ``mask`` holds (in their order), with ``new_rows`` and
    ``commit``."""
    if bool(mask.all()):
        return new_rows, plan[1], plan[2], commit
    return (new_rows, np.asarray(plan[1], np.int64)[mask],
            [plan[2][i] for i in np.flatnonzero(mask).tolist()], commit)


def _no_commit(_token_ids: np.ndarray) -> None:
    """Nothing to leave: the part of a plan that opens no instance (:meth:`Higher.in_cascade`)."""


def higher_candidates(engine: Any, kernels: list[Any]) -> list[Any]:
    """The patterns a split batch plans over its kernel patterns' matches (docs/architecture.md,
    "The program split"): Esper pair shapes (``CompiledPattern.pair``) that are no kernel
    pattern, reading the output of kernel patterns, and only input types no statement produces
    at the others, whose last stage (and its alternatives) reads input types or one kernel
    pattern's output; and VEPL chains without a window (kernels.chain.split_chain) reading it
    — whose last stage (alternatives, final edges) reads input types or one kernel pattern's
    output, or mixes the two (ho_or's ``P(x) OR C(x, _)``); in engine order."""
    if engine._readers is None:  # (max_cascade < 1: the first cascade stops the engine)
        return []
    program = engine.program
    produced = {a.name for a in program.automata} | {w.name for w in program.windows}
    mine = {id(m) for m in kernels}
    outs = {m.name for m in kernels}
    chosen = []
    for m in engine.matchers:
        pr, c = m.pattern.pair, split_chain(m)
        if (pr is None and c is None) or id(m) in mine:
            continue
        types = m.pattern.types
        derived = types & outs
        if not derived or (types - derived) & produced:
            continue
        # (its matches complete at input steps, or in the cascade of one kernel pattern's
        # matches, or both: a rank per match, Higher.sub)
        if len(_finals(m) & derived) > 1 or (
                pr is not None and len(pr.stages) + bool(pr.alts) < 2):
            continue
        chosen.append(m)
    return chosen


def _finals(m: Any) -> set[str]:
    """The types the matches of ``m`` (a pair shape or a VEPL chain: higher_candidates)
    complete at: a pair shape's last stage's, or its alternatives', a chain's final edges'."""
    pr = m.pattern.pair
    if pr is not None:
        return {e.position.type
                for e in ([v.stages[-1] for v in pr.alts] if pr.alts else pr.stages[-1:])}
    return {t for st in split_chain(m).stages for t, e in st.items() if e.final}


def kernel_outputs(kernels: list[Any], plans: list[Any]
                   ) -> dict[str, tuple[np.ndarray, list[Any], np.ndarray]]:
    """Per kernel pattern (by name): its planned matches ascending by row (as split._Replay
    orders them), the rows, and the place of each in the cascade's order at its row (1 + the
    matches before it in engine order: the kernels are in engine order, and each one's
    matches at a row keep theirs) — the derived stream the patterns and windows over their
    output read."""
    by_name: dict[str, tuple[np.ndarray, list[Any], np.ndarray]] = {}
    offset = 1
    for m, plan in zip(kernels, plans, strict=True):
        at = np.asarray(plan[1], np.int64)
        found = plan[2]
        if len(at) > 1 and bool((at[1:] < at[:-1]).any()):
            o = np.argsort(at, kind="stable")
            at, found = at[o], list(map(found.__getitem__, o.tolist()))
        by_name[m.name] = (at, found, offset + np.arange(len(at), dtype=np.int64))
        offset += len(at)
    return by_name


@dataclass
class Over:
    """A window statement over a kernel pattern's output planned over that pattern's planned
    matches (:func:`plan_windows_over`): its position in ``engine.windows``, the kernel
    pattern's slot, its block (``at``: the input row of each of its rows) and per row the
    place, among the kernel pattern's matches at that input row, of the match that made it
    (the engine's cascade: a match, then its window rows, then the next match)."""

    index: int
    slot: int
    block: WindowBlock
    sub: np.ndarray


def plan_windows_over(engine: Any, kernels: list[Any], plans: list[Any], src: Any,
                      skip: Any) -> list[Over]:
    """Plan the window statements over one kernel pattern's output (of the forms a block
    takes: window_block.single_fits; not at positions ``skip``, blocks already) over that
    pattern's planned matches, each at its input row's time, the batch's last instant the
    input's. Per event such a row comes in the cascade of the match it reads: its id after
    every id the input step gives at that row, and out right after that match (split._Replay
    ranks them per match). A window whose plan declines runs per event (and every one when a
    match's cascade would pass ``max_cascade``: :func:`cascade_fits`)."""
    names = {m.name for m in kernels}
    if engine._readers is None or not any(  # (max_cascade < 1: the first cascade stops it)
            r.statement.input_type in names for r in engine.windows):
        return []
    by_name = kernel_outputs(kernels, plans)
    slots = {m.name: m.slot for m in kernels}
    t_end = src.time_at(src.n - 1)
    schemas = engine.program.schemas
    out: list[Over] = []
    cols: dict[str, tuple[EventRows, TypeColumns]] = {}
    for i, r in enumerate(engine.windows):
        t = r.statement.input_type
        if i in skip or t not in by_name or not single_fits(r):
            continue
        at, found, _cp = by_name[t]
        if t not in cols:  # (a kernel pattern's matches as rows, read once per window)
            rows = EventRows(found, ([t], np.zeros(len(found), np.int64)), src.ts[at])
            cols[t] = (rows, TypeColumns(rows, schemas))
        b = plan_window(engine, r, cols[t][1], cols[t][0], t_end)
        if b is None:
            continue
        d = np.asarray(b.at, np.int64)
        b.at = at[d]  # (the derived rows' input rows)
        within = np.arange(len(at), dtype=np.int64) - np.searchsorted(at, at, side="left")
        out.append(Over(i, slots[t], b, within[d]))
    return out


def cascade_fits(engine: Any, n: int, over: list[Over], higher: list[Higher]) -> bool:
    """Whether every kernel pattern's match, with the window rows (``over``) and the matches
    of the patterns completing in its cascade (``higher`` whose ``last`` is set) it makes,
    stays within ``max_cascade`` (per event they are one cascade: 1 + those; over the limit
    the engine stops there, so the batch leaves them per event) — in a batch of ``n`` rows."""
    width = n + 1
    parts = [(o.slot, o.block.at, o.sub) for o in over] + [
        (h.last, np.asarray(h.plan[1], np.int64)[h.sub >= 0], h.sub[h.sub >= 0])
        for h in higher if h.last is not None and h.sub is not None]
    if not parts:
        return True
    key = np.concatenate([(s * width + np.asarray(at, np.int64)) * width + sub
                          for s, at, sub in parts])
    if not len(key):
        return True
    key.sort()
    ends = np.flatnonzero(np.diff(key)) + 1
    most = int(np.diff(np.concatenate([[0], ends, [len(key)]])).max())
    return engine.host.max_cascade >= 1 + most


def plan_higher(engine: Any, kernels: list[Any], plans: list[Any], src: Any,
                cols: TypeColumns, plan_pair: Callable[..., Any]) -> list[Higher]:
    """Plan the :func:`higher_candidates` over the batch's derived stream: per pattern, its
    input rows of the types it reads and the kernel patterns' planned matches of the types it
    reads, in the per-event engine's order — at one input row the event itself (the input
    step) first, then the matches that row emitted, by the emitting pattern's place in engine
    order and their order there (the cascade) — each derived row at its input row's time. A
    pattern whose plan declines (a filter or select list failing, a key not coded) is left
    out: it runs per event."""
    cands = higher_candidates(engine, kernels)
    if not cands:
        return []
    slots = {m.name: m.slot for m in kernels}
    n = src.n
    by_name = kernel_outputs(kernels, plans)
    top = 1 + sum(len(v[0]) for v in by_name.values())
    schemas, arity = engine.program.schemas, engine.host.arity
    # (the rows the batch's last event brings begin at the first entry of its row)
    last_ts = float(src.ts[-1])
    out = []
    for m in cands:
        types = m.pattern.types
        derived = sorted(types & set(by_name), key=list(by_name).index)
        code = np.array([t in types and t not in by_name for t in src.type_names], bool)
        own = np.flatnonzero(code[src.codes]) if len(code) else np.zeros(0, np.int64)
        rows = [own, *(by_name[t][0] for t in derived)]
        cps = [np.zeros(len(own), np.int64), *(by_name[t][2] for t in derived)]
        r_all = np.concatenate(rows)
        cp_all = np.concatenate(cps)
        key = r_all * (top + 1) + cp_all
        if n * (top + 1) < 1 << 62:
            o = np.argsort(key, kind="stable")
        else:
            o = np.lexsort((cp_all, r_all))
        evs_in = cols.events(own) if len(own) else []
        objs = np.empty(len(r_all), dtype=object)
        objs[:len(own)] = [evs_in[i] for i in own.tolist()]
        at = len(own)
        for t in derived:
            found = by_name[t][1]
            objs[at:at + len(found)] = found
            at += len(found)
        names = [t for t in src.type_names if t in types and t not in by_name] + derived
        of_src = np.array([names.index(t) if t in names else -1 for t in src.type_names],
                          np.int64)
        tcode = np.concatenate([of_src[src.codes[own]], *(
            np.full(len(by_name[t][0]), names.index(t), np.int64) for t in derived)])
        r_m, cp_m = r_all[o], cp_all[o]
        merged = EventRows(objs[o].tolist(), (names, tcode[o]), src.ts[r_m])
        first_last = int(np.searchsorted(r_m, n - 1, side="left"))
        try:
            plan = (plan_pair(m, TypeColumns(merged, schemas), arity, end=(last_ts, first_last))
                    if m.pattern.pair is not None else plan_chain(m, merged, schemas))
        except Declined:
            plan = None
        if plan is None:
            continue
        new_rows, ends, matches, commit = plan
        new_rows = np.asarray(new_rows, np.int64)
        ends = np.asarray(ends, np.int64)
        phase = (cp_m[new_rows] > 0).astype(np.int64)
        starts = merged.events
        last = sub = None
        end = _finals(m) & set(by_name)  # (one at most: higher_candidates)
        if end:  # (a match at a derived row completes in the cascade of that kernel pattern's
            # match: its place among that pattern's matches at its row, which the pattern's
            # ranks follow; one at an input row, at its input step: -1)
            (t,) = end
            at_k, _f, cps = by_name[t]
            e_cp = cp_m[ends]
            casc = e_cp > 0
            idx = e_cp[casc] - (int(cps[0]) if len(cps) else 0)
            sub = np.full(len(ends), -1, np.int64)
            sub[casc] = idx - np.searchsorted(at_k, at_k[idx], side="left")
            last = slots[t]
        out.append(Higher(m, (r_m[new_rows], r_m[ends], matches, commit),
                          phase, cp_m[new_rows],
                          [starts[i] if p else None
                           for i, p in zip(new_rows.tolist(), phase.tolist(), strict=True)],
                          last, sub))
    return out
