"""The consecutive kernel: Esper's spawned chains with ``and not`` over a batch
(runtime.shapes.EsperConsec; temperature's Warning ``every a = T(f) -> (b = T(g) and not
T(not g))`` and Critical, its four-stage form whose filters read the earlier stages' fields).

Events are not consumed and instances do not meet, so each one is a walk of its own: at each
later row of a type its stage reads, a forbidden event of the stage ends it (Esper starts the
``not`` first: the ending wins a tie, docs/esper.md), else the stage's event moves it on, else
it waits; a row at or after its ``within`` deadline finds it gone (Esper's timer fires before
the events of its instant). The batch is walked stage by stage for all instances at once: per
stage, the rows that may decide (those an event-only filter passes, and every row a filter
reading earlier fields must look at) are sorted once — by key first when every later stage and
forbidden event unifies with ``a`` on one key (kernels.pair.key_codes) —; each instance looks at
its next one (of its key), and the instances that row leaves undecided look at the one after,
round after round. Event-only
filters are numpy masks (kernels.filters); the others are evaluated per (instance, row) —
column-wise by runtime.vector_expr over the instances' bound values where it can decide them,
else by the compiled closure with the bindings the per-event step gives it — over exactly the
pairs the per-event engine evaluates (or more); a failure declines the batch, as does more work
than four times the batch's length. It runs in the program split (kernels.split), which gives
the token and match ids; tests/esper/test_split.py checks it against the per-event engine.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cepflow.events.event import ComplexEvent
from cepflow.runtime.kernels.filters import passing, type_mask
from cepflow.runtime.kernels.frame import Declined, declined_on_failure
from cepflow.runtime.kernels.pair import Uncodable, key_codes, skip_idle
from cepflow.runtime.kernels.restart import Plan
from cepflow.runtime.rows import TypeColumns, as_column, distinct
from cepflow.runtime.timers import fired_before
from cepflow.runtime.tokens import Thread, Token
from cepflow.runtime.vector_expr import pairs_mask


def plan_consec(m: Any, cols: TypeColumns) -> Plan | None:
    """The consecutive pattern ``m`` over the batch ``cols`` (see the module docstring); None
    when it holds partial matches it cannot read (a column kernel's rows, several threads),
    Declined when a filter fails on a row or the walk would cost more than stepping."""
    if m.pending is not None:
        return None
    old = m.registered_tokens()
    if any(len(t.threads) != 1 for t in old):
        return None
    try:
        return _Walk(m, cols, old).plan()
    except Uncodable:  # (a key that unifies with nothing, NaN: event by event)
        return None


class _Unvectorized(Exception):
    """A filter runtime.vector_expr cannot take for these pairs: the closure decides."""


class _Walk:
    """One pattern's instances over one batch: those from before it (``old`` tokens, oldest
    first), then one per row passing the first stage's filter; per instance the stage it waits
    for, the row it took at each stage (-1: before the batch) and whether it ended."""

    def __init__(self, m: Any, cols: TypeColumns, old: list[Token]) -> None:
        cs = m.pattern.consec
        self.m, self.cs, self.cols, self.old = m, cs, cols, old
        src = cols.src
        self.ts = src.ts
        first = cs.stages[0]
        self.new_rows = cols.rows(first.position.type)[passing(first, cols)]
        n_old = self.n_old = len(old)
        n_inst = n_old + len(self.new_rows)
        where = {s: j + 1 for j, s in enumerate(cs.states)}  # waiting state -> its stage
        self.stage0 = np.concatenate([np.array([where[t.threads[0].state] for t in old],
                                               np.int64), np.ones(len(self.new_rows), np.int64)])
        self.stage = self.stage0.copy()
        self.taken = np.full((len(cs.stages), n_inst), -1, np.int64)
        self.taken[0, n_old:] = self.new_rows
        self.last = self.taken[0].copy()  # each instance's last row (-1: before the batch)
        z = cs.zone
        self.start = np.concatenate([np.array(
            [t.threads[0].zstart[z] if z is not None else t.created for t in old], np.float64),
            self.ts[self.new_rows]])
        self.ended = np.zeros(n_inst, bool)  # a forbidden event ended it, or its deadline
        #: per variable, the stage binding it and the parameter
        self.bound_at = {v: (j, i) for j, new in enumerate(cs.new) for i, v in new}
        self._where = np.full(src.n, -1, np.int64)  # row -> its index among its type's rows
        self._indexed: set[str] = set()
        self._bindings: dict[tuple[int, int], dict[str, Any]] = {}
        self.budget = 4 * src.n + 1000

    # -- the walk -------------------------------------------------------------------------
    def plan(self) -> Plan:
        for j in range(1, len(self.cs.stages)):
            self._stage(j)
        return self._result()

    def _index(self, t: str) -> np.ndarray:
        """Row -> index among the rows of its type (filled for ``t``)."""
        if t not in self._indexed:
            rows = self.cols.rows(t)
            self._where[rows] = np.arange(len(rows))
            self._indexed.add(t)
        return self._where

    def _local(self, pos: Any, cand: np.ndarray, of_type: np.ndarray) -> np.ndarray:
        """Over ``cand``: the rows of ``pos``'s type that pass its event-only filter."""
        t = pos.type
        out = of_type.copy()
        mask = type_mask(pos, self.cols)
        if mask is not None:
            out[of_type] = mask[self._index(t)[cand[of_type]]]
        return out

    def _stage(self, j: int) -> None:
        """The instances waiting for stage ``j``: each ends, moves on or waits to the end."""
        sel = np.flatnonzero((self.stage == j) & ~self.ended)
        if not len(sel):
            return
        cs, cols, src = self.cs, self.cols, self.cols.src
        edge = cs.stages[j].position
        forbids = cs.forbids[j - 1]
        types = {edge.type, *(f.type for f in forbids)}
        # (each row has one type: the union of the types' rows, sorted, has no repeats)
        cand = (cols.rows(edge.type) if len(types) == 1
                else np.sort(np.concatenate([cols.rows(t) for t in types])))
        code = {t: cols.type_code.get(t, -1) for t in types}
        codes = src.codes[cand]
        reads = [p.filter is not None and not p.local for p in (edge, *forbids)]
        # what event-only filters decide column-wise; the others per (instance, row)
        is_edge = codes == code[edge.type]
        fwd = (is_edge if reads[0] else self._local(edge, cand, is_edge))
        forb = np.zeros(len(cand), bool)
        paired: list[tuple[Any, np.ndarray]] = []
        for f, guarded in zip(forbids, reads[1:], strict=True):
            of_type = codes == code[f.type]
            if guarded:
                paired.append((f, of_type))
            else:
                forb |= self._local(f, cand, of_type)
        may = fwd | forb
        for _, of_type in paired:
            may |= of_type
        keep = np.flatnonzero(may)
        keyed = cs.key_var is not None
        if keyed:  # (the rows by key, then row: an instance looks at the rows of its key)
            i_code, c_code = self._key_codes(j, sel, cand[keep])
            span = src.n + 2
            order = np.argsort(c_code * span + cand[keep], kind="stable")
            keep, c_code = keep[order], c_code[order]
            inst_code = np.zeros(len(self.stage), np.int64)
            inst_code[sel] = i_code
        cand, fwd, forb, is_edge = cand[keep], fwd[keep], forb[keep], is_edge[keep]
        paired = [(f, of_type[keep]) for f, of_type in paired]
        q = (np.searchsorted(c_code * span + cand, i_code * span + self.last[sel], side="right")
             if keyed else np.searchsorted(cand, self.last[sel], side="right"))
        window = cs.window
        while len(sel):
            has = q < len(cand)
            if keyed:
                has[has] = c_code[q[has]] == inst_code[sel[has]]
            sel, q = sel[has], q[has]  # (no row left: it waits past the batch)
            if not len(sel):
                break
            self.budget -= len(sel)
            if self.budget < 0:
                raise Declined("too many rows for a consecutive chain: event by event")
            rows = cand[q]
            if window < np.inf:
                late = self.ts[rows] - self.start[sel] >= window
                if late.any():  # (its timer fired before this row)
                    self.ended[sel[late]] = True
                    sel, q, rows = sel[~late], q[~late], rows[~late]
            ends = forb[q]
            for f, of_type in paired:
                # (on every pair of its type: the per-event engine tries a state's forbidden
                # events in its own order until one holds, so these are all it may evaluate)
                look = of_type[q]
                if look.any():
                    ends[look] |= self._truth(f, sel[look], rows[look], j)
            moves = ~ends & fwd[q]
            if reads[0] and moves.any():
                moves[moves] = self._truth(edge, sel[moves], rows[moves], j)
            self.ended[sel[ends]] = True
            went = sel[moves]
            self.taken[j, went] = rows[moves]
            self.last[went] = rows[moves]
            self.stage[went] = j + 1
            wait = ~ends & ~moves
            sel, q = sel[wait], q[wait] + 1

    def _key_codes(self, j: int, sel: np.ndarray, cand: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
        """Codes of the key of the instances ``sel`` (``a``'s value) and of the rows ``cand``
        (their events' key fields for stage ``j``), equal iff the values unify
        (kernels.pair.key_codes; Uncodable for a NaN)."""
        cs, cols = self.cs, self.cols
        codes = cols.src.codes[cand]
        parts, where = [], []
        for t, p in cs.keys[j - 1].items():
            of = np.flatnonzero(codes == cols.type_code.get(t, -1))
            parts.append(cols.column(t, p)[self._index(t)[cand[of]]])
            where.append(of)
        if len({c.dtype.kind for c in parts}) > 1:
            parts = [c.astype(object) for c in parts]
        values = np.concatenate(parts)[np.argsort(np.concatenate(where), kind="stable")]
        a = cs.stages[0].position
        t = a.type
        fresh = sel[sel >= self.n_old]  # (sel is sorted: the old instances first)
        ka = next(i for i, v in a.binds if v == cs.key_var)
        a_keys = cols.column(t, ka)[self._index(t)[self.taken[0, fresh]]]
        old = [self.old[q].threads[0].bindings.get(cs.key_var)
               for q in sel[sel < self.n_old].tolist()]
        return key_codes(a_keys, values, old, cols.src.n + 2)

    # -- filters on (instance, row) pairs ---------------------------------------------------
    def _truth(self, pos: Any, inst: np.ndarray, rows: np.ndarray, j: int) -> np.ndarray:
        """``pos``'s filter on each pair (instance waiting for stage ``j``, row)."""
        try:
            return self._vector(pos, inst, rows, j)
        except _Unvectorized:
            return self._closure(pos, inst, rows, j)

    def _vector(self, pos: Any, inst: np.ndarray, rows: np.ndarray, j: int) -> np.ndarray:
        """runtime.vector_expr over the pairs: the row's fields and the instances' values of
        the variables the filter reads, each a column."""
        if pos.where is None:
            raise _Unvectorized

        def column(kind: str, what: Any) -> np.ndarray:
            if kind == "own":
                return self.cols.column(pos.type, what)[self._index(pos.type)[rows]]
            stage, i = self.bound_at[what]
            t = self.cs.stages[stage].position.type
            at = self.taken[stage, inst]
            col = self.cols.column(t, i)
            ok = at >= 0
            if ok.all():
                return col[self._index(t)[at]]
            # (instances from before the batch: the values they hold)
            vals = [None if r >= 0 else self.old[q].threads[0].bindings.get(what)
                    for q, r in zip(inst.tolist(), at.tolist(), strict=True)]
            if ok.any():
                for k, v in zip(np.flatnonzero(ok).tolist(),
                                col[self._index(t)[at[ok]]].tolist(), strict=True):
                    vals[k] = v
            return as_column(vals)

        own = {v: i for i, v in pos.binds if v != self.cs.key_var}
        earlier = {v for v, (stage, _i) in self.bound_at.items() if stage < j}
        mask = pairs_mask(pos.where, self.cols.fields(pos.type), own, earlier, column)
        if mask is None:
            raise _Unvectorized
        return mask

    def _closure(self, pos: Any, inst: np.ndarray, rows: np.ndarray, j: int) -> np.ndarray:
        """The compiled closure per pair, with the bindings the per-event step gives it (the
        instance's, then the row's new ones); a failure declines the batch."""
        flt = pos.filter
        events = self.cols.events(rows)
        out = np.zeros(len(inst), bool)
        new = [(i, v) for i, v in pos.binds if v != self.cs.key_var]  # (the key is a's)
        with declined_on_failure("a filter failed on a row: event by event"):
            for k, (q, r) in enumerate(zip(inst.tolist(), rows.tolist(), strict=True)):
                e = events[r]
                b = self._bound(q, j)
                if new:
                    b = dict(b)
                    for i, v in new:
                        b[v] = e.params[i]
                out[k] = bool(flt(e, b))
        return out

    def _bound(self, q: int, j: int) -> dict[str, Any]:
        """What instance ``q`` has bound before stage ``j``."""
        b = self._bindings.get((q, j))
        if b is None:
            b = self._bindings[q, j] = self._held(q, j, self.cols.events)[1]
        return b

    def _held(self, q: int, j: int, events: Any) -> tuple[list[Any], dict[str, Any]]:
        """Instance ``q``'s events and bindings once it took stages before ``j`` (``events``:
        rows -> their events)."""
        if q < self.n_old:
            th = self.old[q].threads[0]
            evs, full = list(th.events), dict(th.bindings)
            first = int(self.stage0[q])
        else:
            evs, full, first = [], {}, 0
        rows = self.taken[first:j, q]
        got = events(rows) if len(rows) else {}
        for s, r in enumerate(rows.tolist(), first):
            e = got[r]
            evs.append(e)
            for i, v in self.cs.new[s]:
                full[v] = e.params[i]
        return evs, full

    # -- the plan -------------------------------------------------------------------------
    def _result(self) -> Plan:
        m, cs, n_old = self.m, self.cs, self.n_old
        n_stages = len(cs.stages)
        ts = self.ts
        n = len(ts)
        last_ts = float(ts[-1])
        match = self.stage == n_stages
        deadline = self.start + cs.window
        # gone at the end: ended, or its deadline passed before a row after its start
        gone = self.ended | ((deadline <= last_ts) & (self.taken[0] != n - 1))
        alive = ~match & ~gone
        done = np.flatnonzero(match)
        end_rows = self.taken[n_stages - 1, done]
        order = np.lexsort((done, end_rows))
        done, end_rows = done[order], end_rows[order]
        live = np.flatnonzero(alive)
        used = self.taken[:, np.concatenate([done, live])].ravel()
        used = distinct(used[used >= 0])
        evs = self.cols.events(used) if len(used) else {}

        def lookup(_: np.ndarray) -> Any:
            return evs

        found = []
        for q in done.tolist():
            held, full = self._held(q, n_stages, lookup)
            last = held[-1]
            params, bindings = m.result(full, last.ts, last)
            found.append(ComplexEvent(m.name, params, last.ts, bindings, held, 0))
        old, stage, stage0 = self.old, self.stage, self.stage0

        def commit(token_ids: np.ndarray) -> None:
            if len(done):
                m.done = True
            for q in range(n_old):
                tok = old[q]
                if not alive[q] or stage[q] != stage0[q]:
                    m.unregister(tok)
                if alive[q] and stage[q] != stage0[q]:
                    th = tok.threads[0]
                    held, full = self._held(q, int(stage[q]), lookup)
                    tok.threads = [Thread(cs.states[int(stage[q]) - 1], full, held,
                                          dict(th.zstart) if th.zstart else th.zstart,
                                          held[-1])]
                    m.register(tok)
            z = cs.zone
            if z is not None:  # (the timers the per-event engine ran before the last row)
                m.host.timers.keep(lambda h: h[3] != m.slot or not fired_before(h, last_ts))
                # the later ones of the instances it began and ended (completed, or by the
                # NOT) fire idle, moving the clock (Matcher.skipped, kernels.pair.skip_idle)
                due = deadline[n_old:][~alive[n_old:]]
                skip_idle(m, np.sort(due[due > last_ts]).tolist(), last_ts)
            for q in live[live >= n_old].tolist():
                held, full = self._held(q, int(stage[q]), lookup)
                start = held[0].ts
                th = Thread(cs.states[int(stage[q]) - 1], full, held,
                            None if z is None else {z: start}, held[-1])
                tok = Token(int(token_ids[q - n_old]), None, start, [th])
                m.register_newest(tok)
                if z is not None:
                    m.schedule_zones(tok, th)

        return self.new_rows, end_rows.tolist(), found, commit
