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
from functools import partial
from itertools import chain
from typing import Any

import numpy as np

from cepflow.compiler.evaluator import can_fail
from cepflow.events.event import ComplexEvent
from cepflow.runtime.kernels.chain import plan_chain, split_chain
from cepflow.runtime.kernels.column_blocks import Deferred
from cepflow.runtime.kernels.frame import Declined
from cepflow.runtime.kernels.pair import fill_params, planned_pair
from cepflow.runtime.kernels.window_block import (
    WindowBlock,
    batch_codes,
    batch_columns,
    batch_fits,
    batch_reads,
    block_column,
    match_column,
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
    #: per pattern, the place of each instance it opens among the blocks' arrival rows
    #: (:func:`arrival_offsets`: the cascade's order at an input row, which its token ids
    #: follow, beside the patterns over the blocks' rows planned by :func:`plan_higher`)
    opens: list[np.ndarray] = field(default_factory=list)


def _one_stage(m: Any) -> bool:
    """Whether pattern ``m`` is a single stage over one type whose select list cannot fail
    (``every e = W(f)``): what :func:`plan_cascade` plans over a window block's rows."""
    pr, types = m.pattern.pair, m.pattern.types
    return (pr is not None and len(pr.stages) == 1 and not pr.alts and len(types) == 1
            and not any(can_fail(f) for f in m.pattern.auto.select or ()))


def _only_readers(engine: Any, name: str, patterns: Callable[[Any], bool],
                  windows: Callable[[Any], bool]) -> bool:
    """Whether the complex events ``name`` go nowhere but the output, patterns for which
    ``patterns`` holds and window statements for which ``windows`` holds (no rule)."""
    return (engine._readers is not None and not engine.host.rules.triggers(name)
            and all(patterns(m) for m in engine.subs_complex.get(name, ()))
            and all(windows(r) for r in engine._window_subs.get(name, ())))


def planned_readers(engine: Any, positions: list[int]) -> frozenset[str]:
    """The window statements at ``positions`` (of ``engine.windows``: those a split batch
    plans) whose rows come one per arriving event (``#time``, a row per event) and which only
    single-stage patterns read (:func:`_one_stage`: :func:`plan_cascade` plans them over the
    rows' columns) — their rows need not be made for those patterns
    (kernels.column_blocks.ColumnBlocks.unmade_rows); a pattern the batch leaves per event
    makes the rows its stepped rows read."""
    out = []
    for i in positions:
        r = engine.windows[i]
        name = r.statement.name
        if (r.statement.window.kind == "time" and r.plan.mode == "event"
                and engine.consumed(name)
                and _only_readers(engine, name, _one_stage, lambda _r: False)):
            out.append(name)
    return frozenset(out)


def plan_cascade(engine: Any, blocks: dict[int, WindowBlock], src_ts: np.ndarray, t_end: Any,
                 plan_pair: Callable[..., Any], src: Any = None) -> Derived:
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
    found: list[tuple[int, int, Any, Any, list[ComplexEvent], np.ndarray]] = []
    offsets = arrival_offsets(blocks)
    # (the block's rows as columns, read once for every pattern over it)
    cols: dict[int, TypeColumns] = {}
    at_of: dict[int, np.ndarray] = {}
    # (the time batches over derived rows that read their rows' parameters as columns)
    by_columns = {id(r) for r in engine.windows if batch_fits(r)}
    for m in engine.matchers:
        if not _one_stage(m):
            continue
        (t,) = m.pattern.types
        if t not in by_type:
            continue
        pos, _i, b = by_type[t]
        # (a time batch reading them reads every match's parameters: made column-wise now)
        # (unless it reads them as columns: batch_columns)
        eager = any(m.name in r.statement.input_types and batch_fits(r) and not all(
            match_column(m, b, np.zeros(0, np.int64), k) is not None for k in batch_reads(r))
            for r in engine.windows)
        # (only such time batches read its matches, as columns: they need not be made — but
        # for the rows a batch's groups keep, made as the batch asks, kernels.column_blocks)
        as_columns = not eager and _only_readers(engine, m.name, lambda _m: False,
                                                 lambda r: id(r) in by_columns)
        try:
            if pos not in cols:  # (a block's rows, all of its type)
                cols[pos] = TypeColumns(block_rows(b, src_ts), schemas)
            plan = plan_pair(m, cols[pos], arity, eager, read_as_columns=as_columns)
        except Declined:
            plan = None
        if plan is None:
            continue
        if pos not in at_of:  # (the block's input rows, once per block)
            at_of[pos] = np.asarray(b.at, np.int64)
        at = at_of[pos]
        new_rows, rows, matches, commit = plan
        found.append((pos, m.slot, m, (at[new_rows], at[np.asarray(rows, np.int64)].tolist(),
                                       matches, commit), eager,
                      offsets[pos] + np.asarray(new_rows, np.int64),
                      np.asarray(rows, np.int64)))
    found.sort(key=lambda f: (f[0], f[1]))
    out.patterns = [(m, plan, pos) for pos, _s, m, plan, _e, _o, _r in found]
    out.opens = [f[5] for f in found]
    made = [f[4] for f in found]  # (with their parameters: eager)
    block_of = list(blocks.values())
    # (per part of the derived stream: its parameter k as a column, or None: batch_columns)
    part_cols = [partial(block_column, b) for b in block_of if b.name in by_type]
    part_cols += [partial(match_column, f[2], block_of[f[0]], f[6]) for f in found]
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
        o = np.lexsort((j, sub, pos, at))
        reads = [c for c, p in zip(part_cols, parts, strict=True) if p[0] in st.input_types]
        given = batch_columns(r, reads, o)
        for p in mine:  # (the batch reads every match's parameters: those not made yet)
            if p[3] and not p[5] and given is None:
                fill_params(p[4] if not isinstance(p[4], Deferred) else list(p[4]))
        # (each part's rows of its statement's type: their codes known, not read per row)
        names = list(dict.fromkeys(p[0] for p in mine))
        code = np.repeat(np.array([names.index(p[0]) for p in mine], np.int64), lens)
        if given is not None and src is not None:
            # (the batch reads the rows' parameters as columns: it asks only for the events
            # its groups keep — matches not made are made then —, StreamRows.lookup)
            rows: EventRows = StreamRows([p[4] for p in mine], lens, o, (names, code[o]),
                                         src_ts[at[o]], src, at[o])
        else:
            evs = np.fromiter(chain.from_iterable(p[4] for p in mine), dtype=object,
                              count=len(at))
            rows = EventRows(evs[o].tolist(), (names, code[o]), src_ts[at[o]])
        if given is not None:
            rows.given, rows.given_codes = given, batch_codes(r, reads, o)
        try:
            out.batches[i] = WindowBlock(engine, r, TypeColumns(rows, schemas), rows,
                                         t_end=t_end)
        except Declined:
            continue
    return out



class _Stream:
    """The derived rows of several parts (each a list of complex events or a
    :class:`~cepflow.runtime.kernels.column_blocks.Deferred`) in an order (``o``, over the
    parts concatenated), indexable by row: a part's deferred match made when read."""

    def __init__(self, parts: list[Any], lens: list[int], o: np.ndarray) -> None:
        self.parts = parts
        ends = np.cumsum([0, *lens])
        flat_part = np.repeat(np.arange(len(parts), dtype=np.int64), lens)
        #: per row, its part and place there
        self.part = flat_part[o]
        self.place = (np.arange(int(ends[-1]), dtype=np.int64) - ends[:-1][flat_part])[o]
        self.n = int(ends[-1])

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, row: int) -> Any:
        return self.parts[int(self.part[row])][int(self.place[row])]

    def __iter__(self) -> Any:
        return iter(self.fetch(np.arange(self.n, dtype=np.int64)))

    def fetch(self, rows: np.ndarray) -> list[Any]:
        """The objects of ``rows``, each part's made in one go."""
        rows = np.asarray(rows, np.int64)
        part, place = self.part[rows], self.place[rows]
        out = np.empty(len(rows), dtype=object)
        for k in np.unique(part).tolist():
            w = np.flatnonzero(part == k)
            p = self.parts[k]
            out[w] = (p[place[w]] if isinstance(p, Deferred)
                      else list(map(p.__getitem__, place[w].tolist())))
        return out.tolist()


class StreamRows(EventRows):
    """The derived rows a time batch reads (:func:`plan_cascade`) when some part's matches
    are not made (kernels.column_blocks.Deferred: the batch reads their parameters as columns,
    ``given``): the events of the rows it asks for (:meth:`lookup`: the first rows of its
    groups' batches) are made then, in one go per part; a row's time is its input row's, as
    its event has it."""

    def __init__(self, parts: list[Any], lens: list[int], o: np.ndarray,
                 types: tuple[list[str], np.ndarray], ts: np.ndarray, src: Any,
                 inputs: np.ndarray) -> None:
        super().__init__(_Stream(parts, lens, o), types, ts)
        self._src, self._inputs = src, inputs
        #: TypeColumns asks :meth:`lookup` for the events of some rows, not for them all
        self.lazy = True

    def time_at(self, row: int) -> Any:
        return self._src.time_at(int(self._inputs[row]))

    def times(self, rows: np.ndarray) -> list[Any]:
        return [self.time_at(r) for r in np.asarray(rows).tolist()]

    def lookup(self, rows: np.ndarray) -> dict[int, Any]:
        rows = np.asarray(rows, np.int64)
        return dict(zip(rows.tolist(), self.events.fetch(rows), strict=True))


def block_rows(b: WindowBlock, src_ts: np.ndarray) -> EventRows:
    """The rows of window block ``b`` over the input (``src_ts``: the input's times) as the
    stream the patterns over them read (:func:`plan_cascade`), each at its input row's time —
    with every parameter given as the block's column of that select item (its arrival rows'
    values: ``WindowBlock.item_columns``, the very objects each row's ``params`` holds), so
    that neither the filters nor the keys read the rows' tuples back; a text field's
    dictionary codes too (:func:`block_column`)."""
    rows = EventRows(b.found, ([b.name], np.zeros(len(b.found), np.int64)),
                     src_ts[np.asarray(b.at, np.int64)])
    items = b.item_columns
    if (items is not None and b.arrivals and len(b.found) == len(b.rows)
            and len(items) == len(b.plan.items)):
        rows.given = dict(enumerate(items))
        for k, (kind, _a) in enumerate(b.plan.items):
            got = block_column(b, k) if kind == "field" else None
            if got is not None and got[1] is not None:
                rows.given_codes[k] = got[1]
    return rows


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
    pattern's output; and VEPL chains (kernels.chain.split_chain; windows too) reading it
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
        pr, c = planned_pair(m), split_chain(m)
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


def _ends(pr: Any) -> set[str]:
    """The types a pair shape's matches complete at (its last stage's, or alternatives')."""
    return {e.position.type
            for e in ([v.stages[-1] for v in pr.alts] if pr.alts else pr.stages[-1:])}


def _finals(m: Any) -> set[str]:
    """The types the matches of ``m`` (a pair shape or a VEPL chain: higher_candidates)
    complete at: a pair shape's :func:`_ends`, a chain's final edges'."""
    pr = m.pattern.pair
    if pr is not None:
        return _ends(pr)
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


def arrival_offsets(blocks: dict[int, WindowBlock]) -> list[int]:
    """Per window block over the input (in ``blocks``' order, the engine's window order) where
    its rows at arrivals begin among all the blocks' such rows, block after block: at one
    input row the engine's cascade takes them in that order (the window runners' rows in
    statement order, each in its own), so a place in it orders the instances they open."""
    return np.cumsum([0, *(len(b.found) for b in blocks.values())])[:-1].tolist()


def window_rows(blocks: dict[int, WindowBlock], ts: np.ndarray, top: int
                ) -> dict[str, tuple[np.ndarray, list[Any], np.ndarray, np.ndarray]]:
    """The rows of the window blocks over the input as a derived stream for the patterns over
    them (:func:`plan_higher`), per statement name: each row's input row, the row, its place
    in the engine's order at that input row and its time. A row at an arrival comes in the
    cascade of its input row, after every kernel pattern's match's (place ``top`` + its place
    among the blocks' arrival rows: :func:`arrival_offsets`); a row of a boundary or an
    expiry instant (``WindowBlock.closes``) comes as time passes to that instant, before the
    first input row at or after it (Engine._advance: instant, then window order, then the
    block's order), at a negative place, at the instant's time."""
    offsets = arrival_offsets(blocks)
    parts: dict[str, list[tuple[np.ndarray, list[Any], np.ndarray, np.ndarray]]] = {}
    whens, found = [], []
    for pos, b in enumerate(blocks.values()):
        at = np.asarray(b.at, np.int64)
        parts.setdefault(b.name, []).append(
            (at, b.found, top + offsets[pos] + np.arange(len(at), dtype=np.int64), ts[at]))
        closes = b.closes()
        whens.append(np.repeat(np.array([float(t) for t, _r in closes], np.float64),
                               [len(r) for _t, r in closes]))
        found.append([ce for _t, r in closes for ce in r])
    lens = [len(w) for w in whens]
    when = np.concatenate([np.zeros(0, np.float64), *whens])
    # (by instant, then window: a stable sort keeps each block's order at an instant)
    o = np.lexsort((np.repeat(np.arange(len(lens), dtype=np.int64), lens), when))
    place = np.empty(len(o), np.int64)
    place[o] = np.arange(len(o), dtype=np.int64) - len(o)
    rows = np.searchsorted(ts, when, side="left")
    ends = np.cumsum([0, *lens])
    for pos, b in enumerate(blocks.values()):
        sl = slice(ends[pos], ends[pos + 1])
        if lens[pos]:
            parts[b.name].append((rows[sl], found[pos], place[sl], when[sl]))
    return {name: (np.concatenate([p[0] for p in ps]), [ce for p in ps for ce in p[1]],
                   np.concatenate([p[2] for p in ps]), np.concatenate([p[3] for p in ps]))
            for name, ps in parts.items()}


def rows_candidates(engine: Any, outs: set[str], rows_of: set[str]) -> list[Any]:
    """The patterns a split batch plans over the rows of window blocks over the input (their
    statements' names ``rows_of``; docs/architecture.md, "Patterns over a window statement's
    rows"): Esper pair shapes (``CompiledPattern.pair``) reading such rows at some stage but
    the last, and otherwise only input types no statement produces or kernel patterns' output
    (``outs``), whose last stage (and its alternatives) reads input types — their matches
    complete at input steps — and without a window of 0 (**declined**: whether a later row of
    the same instant traps an instance, at an expiry instant too, is not planned); in engine
    order."""
    if engine._readers is None or not rows_of:  # (max_cascade < 1)
        return []
    program = engine.program
    produced = {a.name for a in program.automata} | {w.name for w in program.windows}
    chosen = []
    for m in engine.matchers:
        pr = planned_pair(m)
        types = m.pattern.types
        if pr is None or not types & rows_of or (types - outs - rows_of) & produced:
            continue
        if (len(pr.stages) + bool(pr.alts) < 2 or _ends(pr) & produced
                or (pr.zone is not None and pr.window == 0)):
            continue
        chosen.append(m)
    return chosen


def merged_stream(src: Any, cols: TypeColumns, types: set[str],
                  sources: dict[str, tuple[np.ndarray, list[Any], np.ndarray, np.ndarray | None]]
                  ) -> tuple[EventRows, np.ndarray, np.ndarray]:
    """A pattern's derived stream: its input rows of ``types`` (no ``sources`` name) and the
    derived rows of ``sources`` (per type: input rows, rows, place at the input row, times or
    None for the input row's), in the per-event engine's order — by input row, then place:
    0 the input step, below 0 as time passes before it, above 0 the cascade — as rows, with
    each entry's input row and place."""
    derived = [t for t in sources if t in types]
    code = np.array([t in types and t not in sources for t in src.type_names], bool)
    own = np.flatnonzero(code[src.codes]) if len(code) else np.zeros(0, np.int64)
    r_all = np.concatenate([own, *(sources[t][0] for t in derived)])
    cp_all = np.concatenate([np.zeros(len(own), np.int64), *(sources[t][2] for t in derived)])
    lo = int(cp_all.min(initial=0))
    span = int(cp_all.max(initial=0)) - lo + 1
    if src.n * span < 1 << 62:
        o = np.argsort(r_all * span + (cp_all - lo), kind="stable")
    else:
        o = np.lexsort((cp_all, r_all))
    evs_in = cols.events(own) if len(own) else []
    objs = np.empty(len(r_all), dtype=object)
    objs[:len(own)] = [evs_in[i] for i in own.tolist()]
    at = len(own)
    for t in derived:
        found = sources[t][1]
        objs[at:at + len(found)] = found
        at += len(found)
    names = [t for t in src.type_names if t in types and t not in sources] + derived
    of_src = np.array([names.index(t) if t in names else -1 for t in src.type_names],
                      np.int64)
    tcode = np.concatenate([of_src[src.codes[own]], *(
        np.full(len(sources[t][0]), names.index(t), np.int64) for t in derived)])
    times = np.concatenate([src.ts[own].astype(np.float64), *(
        src.ts[sources[t][0]].astype(np.float64) if sources[t][3] is None else sources[t][3]
        for t in derived)])
    r_m, cp_m = r_all[o], cp_all[o]
    return EventRows(objs[o].tolist(), (names, tcode[o]), times[o], r_m), r_m, cp_m


def plan_higher(engine: Any, kernels: list[Any], plans: list[Any], src: Any,
                cols: TypeColumns, plan_pair: Callable[..., Any],
                blocks: dict[int, WindowBlock] | None = None, columns: Any = None
                ) -> list[Higher]:
    """Plan the :func:`higher_candidates` over the batch's derived stream: per pattern, its
    input rows of the types it reads and the kernel patterns' planned matches of the types it
    reads, in the per-event engine's order — at one input row the event itself (the input
    step) first, then the matches that row emitted, by the emitting pattern's place in engine
    order and their order there (the cascade) — each derived row at its input row's time.
    Likewise the :func:`rows_candidates` over the rows of ``blocks`` (window blocks over the
    input, :func:`window_rows`), which may also read the kernel patterns' matches. A
    pattern whose plan declines (a filter or select list failing, a key not coded) is left
    out: it runs per event. ``columns``: where a VEPL chain's plan puts its matches' block
    (kernels.column_blocks; ``plan_pair`` does so for the pair's)."""
    blocks = blocks or {}
    over_rows = rows_candidates(engine, {m.name for m in kernels},
                                {b.name for b in blocks.values()})
    cands = sorted(higher_candidates(engine, kernels) + over_rows, key=lambda m: m.slot)
    if not cands:
        return []
    slots = {m.name: m.slot for m in kernels}
    n = src.n
    by_name = kernel_outputs(kernels, plans)
    top = 1 + sum(len(v[0]) for v in by_name.values())
    sources: dict[str, tuple[np.ndarray, list[Any], np.ndarray, np.ndarray | None]] = {
        t: (*v, None) for t, v in by_name.items()}
    if over_rows:  # (the blocks' rows as a derived stream: only when a pattern reads them)
        sources.update(window_rows(blocks, src.ts, top))
    schemas, arity = engine.program.schemas, engine.host.arity
    # (the rows the batch's last event brings begin at the first entry of its row after time
    # passed: its input step)
    last_ts = float(src.ts[-1])
    out = []
    for m in cands:
        merged, r_m, cp_m = merged_stream(src, cols, m.pattern.types, sources)
        first_last = int(np.count_nonzero((r_m < n - 1) | ((r_m == n - 1) & (cp_m < 0))))
        try:
            plan = (plan_pair(m, TypeColumns(merged, schemas), arity, end=(last_ts, first_last))
                    if m.pattern.pair is not None
                    else plan_chain(m, merged, schemas, last_ts, columns))
        except Declined:
            plan = None
        if plan is None:
            continue
        new_rows, ends, matches, commit = plan
        new_rows = np.asarray(new_rows, np.int64)
        ends = np.asarray(ends, np.int64)
        phase = np.sign(cp_m[new_rows])
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
