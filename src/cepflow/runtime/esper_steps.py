"""The matching steps only Esper's semantics has (compiler.esper; docs/esper.md): every instance
that can take an event takes it, instances start as the start policy says, inner ``every``
forks, every-distinct keys, and the direct step of the pair shape — a part of the Matcher
(runtime.matcher), whose run state and general steps they use."""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Callable
from typing import Any

from cepflow.automaton.automaton import FINAL
from cepflow.events.event import ComplexEvent, Event
from cepflow.runtime.binding import NO_BINDINGS
from cepflow.runtime.distinct import seen_before
from cepflow.runtime.reach import Reach, whole
from cepflow.runtime.tokens import PairRows, Thread, Token

#: a key's waiting instances up to which a pair with a reach (runtime.reach) tests them all
#: rather than keep them in its index
REACH_SCAN = 16


class EsperSteps:
    """Esper's steps of a Matcher (mixed into runtime.matcher.Matcher)."""

    # (the Matcher's run state and general steps these use)
    pattern: Any
    host: Any
    name: str
    tokens: dict[Any, dict[int, Token]]
    buckets: dict[int, dict[Any, dict[int, Token]]]
    seen: dict[tuple, float]
    done: bool
    clock_start: float | None
    _forks: dict[int, list[Thread]]
    reach_index: dict[Any, list[Any]]
    deadlines: Any
    pending: Any
    register_newest: Callable[[Token], None]
    _match: Callable[..., None]
    _complete: Callable[..., None]
    respawn: Callable[..., None]
    due: int

    def _process_esper(self, e: Event, emit: Callable[[ComplexEvent], None]) -> None:
        """Esper's semantics (compiler.esper): the event goes to every instance that can take
        it — events are not consumed, each instance takes the first event that fits — and a new
        instance begins as the start policy says."""
        start = self.pattern.auto.start
        initial = e.type in self.pattern.initial
        # every (G) -> R: a new group begins at an event only when none was under way before
        # it (Esper restarts the group after the event that ended it: that event is not its)
        idle = start == "group" and initial and not self._group_alive()
        takers = self._find(e)
        if takers:
            takers.sort(key=lambda tp: tp[0].id)
            for tok, plan in takers:
                self._apply(tok, plan, e, emit)
                forks = self._forks.pop(tok.id, None)
                if forks:
                    self._spawn(tok, forks, e, emit)
        if initial and (start == "spawn" or idle or (
                start != "group" and not takers and not self.tokens
                and not (start == "once" and self.done))):
            self._start(e, None, emit)
        if e.type in self.pattern.neg_states:
            self._negatives(e)
        if self.pattern.clock is not None:
            if self.clock_start is not None and e.type in self.pattern.clock_types:
                self._clock_forbid(e)
            self._clock_idle(e.ts)
        if self.due:
            self.respawn(e.ts, emit)

    def _pair_step(self, e: Event, emit: Callable[[ComplexEvent], None]) -> None:
        """_process_esper for a pair pattern without planning: the ``B`` event completes every
        instance waiting on its key (in age order) within Δ, then an ``A`` passing ``f`` opens
        one. The same tokens, bindings and matches (tests/esper/test_esper_kernel.py)."""
        pr = self.pattern.pair
        t = e.type
        if pr.alts:
            if t in pr.by_type:
                self._alts_close(e, emit)
        elif t == pr.second.position.type:
            self._pair_close(e, emit)
        if t == pr.first.position.type:
            self._pair_open(e, emit)
        elif self.pending is not None:
            self.materialize()

    def _fork_step(self, e: Event, emit: Callable[[ComplexEvent], None]) -> None:
        """_process_esper for an inner every after one stage (EsperPair.fork) without
        planning: a ``B`` passing ``g`` forks every instance waiting on its key (in age order)
        within Δ — a token id and a match each, as _spawn —, the instances keep waiting; then
        an ``A`` passing ``f`` opens one. The same tokens, ids and matches
        (tests/esper/test_esper_inner_every.py)."""
        pr = self.pattern.pair
        t = e.type
        if t == pr.second.position.type:
            if self.pending is not None:
                self.materialize()
            bm = self.buckets.get(pr.state)
            group = (bm.get(None if pr.key_var is None else e.params[pr.key_b])
                     if bm else None)
            flt = pr.second.position.filter
            if group and (flt is None or flt(e, NO_BINDINGS)):
                self._fork(e, emit, pr, group)
        if t == pr.first.position.type:
            self._pair_open(e, emit)

    def _fork(self, e: Event, emit: Callable[[ComplexEvent], None], pr: Any,
              group: dict[int, Token]) -> None:
        """Fork the instances of ``group`` (one key's, in age order) that ``e`` — of the fork's
        stage, passing its filter — reaches: within Δ (Esper's timer fires before an event at
        the deadline) and unifying with the key (a NaN unifies with nothing)."""
        params = e.params
        ts = e.ts
        z, window, key = pr.zone, pr.window, pr.key_var
        kv = None if key is None else params[pr.key_b]
        b_new = pr.b_new
        counters = self.host.counters
        for tok in list(group.values()):
            th = tok.threads[0]
            b = th.bindings
            if (z is not None and ts - th.zstart[z] >= window) or (
                    key is not None and b.get(key) != kv):
                continue
            nb = dict(b)
            for i, v in b_new:
                nb[v] = params[i]
            counters.token += 1  # (the fork's token, Counters.next_token: it completes at once)
            self._match(None, nb, (*th.events, e), e, ts, emit)

    def _pair_close(self, e: Event, emit: Callable[[ComplexEvent], None]) -> None:
        """The ``B`` half of :meth:`_pair_step` (the engine's step for a type only ``B`` is):
        complete the instances waiting on its key."""
        if self.pending is not None:
            self.materialize()
        pr = self.pattern.pair
        params = e.params
        second = pr.second.position
        bm = self.buckets.get(pr.state)
        group = bm.get(params[pr.key_b]) if bm else None
        flt = second.filter
        if group and (flt is None or not pr.columnar or flt(e, NO_BINDINGS)):
            self._close(e, emit, pr, bm, group)

    def _alts_close(self, e: Event, emit: Callable[[ComplexEvent], None]) -> None:
        """:meth:`_pair_close` for a last stage of alternatives (``every a = A(f) -> (b =
        B(g, key) or c = C(h, key) …)``): the event completes the instances waiting on its
        key by the alternative that wins (the first in ``pr.alts`` whose filter it passes;
        every filter of its type evaluated, in the automaton's order, as the token path
        does when an instance waits on the key)."""
        if self.pending is not None:
            self.materialize()
        pr = self.pattern.pair
        alts = pr.by_type[e.type]
        bm = self.buckets.get(pr.state)
        group = bm.get(e.params[alts[0][1].key_b]) if bm else None
        if not group:
            return
        won = _winner(alts, e)
        if won is not None:
            self._close(e, emit, won, bm, group)

    def _single_match(self, pos: Any, e: Event, emit: Callable[[ComplexEvent], None]) -> None:
        """``e`` completes a pattern of one event at the position ``pos`` (its filter passed):
        _start + _complete of the general path, a token id, then the match."""
        params = e.params
        tok = Token(self.host.counters.next_token(), None, e.ts, [])
        th = Thread(FINAL, {v: params[i] for i, v in pos.binds}, [e], None, e)
        self._complete(tok, th, e.ts, emit)

    def _alts_single(self, e: Event, emit: Callable[[ComplexEvent], None]) -> None:
        """``every (a = A(f) or b = B(g) …)`` (EsperPair.alts with no stage before them):
        every filter of the event's type's alternatives evaluated in the automaton's order (as
        the token path's start does), and the event a match by the one that wins."""
        won: Any = None
        for rank, view in self.pattern.pair.by_type.get(e.type, ()):
            pos = view.first.position
            if ((pos.filter is None or pos.filter(e, NO_BINDINGS))
                    and (won is None or rank < won[0])):
                won = rank, pos
        if won is not None:
            self._single_match(won[1], e, emit)

    def _close(self, e: Event, emit: Callable[[ComplexEvent], None], pr: Any,
               bm: dict[Any, dict[int, Token]], group: dict[int, Token]) -> None:
        """Complete the instances of ``group`` (one key's, in age order) that ``e``, of the
        last stage of the pair ``pr``, completes (within Δ; ``g`` holding when it reads
        ``a``'s fields)."""
        params = e.params
        flt = pr.second.position.filter
        ts = e.ts
        z, window, key, kv = pr.zone, pr.window, pr.key_var, params[pr.key_b]
        pair_filter = flt if not pr.columnar else None  # g reads a's fields too
        b_new = pr.b_new
        # (with a select list the match's bindings are new: the instance's need no copy)
        shared = not b_new and self.pattern.auto.select is not None
        reach = pr.reach
        if reach is not None and len(group) > REACH_SCAN:
            x = params[reach.param]
            waiting = (self._reachable(group, kv, reach, reach.lowest(x)) if whole(x)
                       else list(group.values()))
        else:
            waiting = list(group.values())
        for tok in waiting:
            th = tok.threads[0]
            b = th.bindings
            if (z is not None and ts - th.zstart[z] >= window) or b.get(key) != kv:
                continue  # (expired at this very instant — Esper's timer fires before
                # the event — / NaN: unifies with nothing)
            if shared:
                nb = b
            else:
                nb = dict(b)
                for i, v in b_new:
                    nb[v] = params[i]
            if pair_filter is not None and not pair_filter(e, nb):
                continue
            # (unregister, inlined: the instance is in this group and partition None)
            del group[tok.id]
            if not group:
                del bm[kv]
            part = self.tokens[None]
            del part[tok.id]
            if not part:
                del self.tokens[None]
            tok.regs = []
            self._match(tok, nb, (*th.events, e), e, ts, emit)  # (a tuple: the match's
            # parts as they are)

    def _reachable(self, group: dict[int, Token], kv: Any, reach: Reach, lowest: int
                   ) -> list[Token]:
        """The instances of ``group`` (one key's, in age order) an event can reach: those
        whose ``reach.var`` is at least ``lowest``, and those whose value is not a whole number
        (tested as before) — runtime.reach. The key's index (``reach_index``: the group it
        was made for, its (value, id) pairs in value order, the other ids, the newest id it
        holds) takes the group's younger instances first; ids of instances gone since are
        skipped, and dropped when they are half of it."""
        index = self.reach_index.get(kv)
        if index is None or index[0] is not group:  # (an emptied group is made anew)
            index = self.reach_index[kv] = [group, [], [], 0]
        _, values, other, top = index
        if next(reversed(group)) > top:
            younger = []
            for tid in reversed(group):
                if tid <= top:
                    break
                younger.append(tid)
            var = reach.var
            for tid in reversed(younger):
                y = group[tid].threads[0].bindings.get(var)
                if not whole(y):
                    other.append(tid)
                elif not values or values[-1][0] <= y:
                    values.append((y, tid))
                else:
                    insort(values, (y, tid))
            index[3] = younger[0]
        if len(values) + len(other) > 2 * len(group) + REACH_SCAN:
            values[:] = [v for v in values if v[1] in group]
            other[:] = [t for t in other if t in group]
        ids = [t for _, t in values[bisect_left(values, (lowest,)):] if t in group]
        if other:
            ids += [t for t in other if t in group]
        ids.sort()  # (age order; already so when the values grow with age)
        return [group[t] for t in ids]

    def _pair_open(self, e: Event, emit: Callable[[ComplexEvent], None]) -> None:
        """The ``A`` half of :meth:`_pair_step` (the engine's step for a type only ``A`` is):
        an ``A`` passing ``f`` opens an instance."""
        if self.pending is not None:
            self.materialize()
        pat = self.pattern
        pr = pat.pair
        first = pr.first.position
        if first.filter is None or first.filter(e, NO_BINDINGS):
            params = e.params
            ts = e.ts
            z = pr.zone
            bindings = {}
            for i, v in first.binds:
                bindings[v] = params[i]
            th = Thread(pr.state, bindings, [e], None if z is None else {z: ts}, e)
            counters = self.host.counters
            tid = counters.token = counters.token + 1  # (Counters.next_token, inlined)
            tok = Token(tid, None, ts, [th])
            if z is not None:
                self._queue_deadline(ts + pr.window, tid, z, ts)
            self.register_newest(tok)  # (the new instance is the youngest)

    def _queue_deadline(self, deadline: float, tid: int, z: int, start: float) -> None:
        """Ask for the deadline of instance ``tid`` of a pair (its zone ``z`` entered at
        ``start``): queued behind the one engine timer of the first queued deadline when it
        comes in time order (Matcher._expire_queued), else an engine timer of its own."""
        dl = self.deadlines
        if not dl:
            self.host.schedule(deadline, self, -1, z, start)
            dl.append((deadline, tid, z, start))
        elif dl[-1][0] <= deadline:
            dl.append((deadline, tid, z, start))
        else:
            self.host.schedule(deadline, self, tid, z, start)

    # -- a keyed pair's instances as rows (PairRows) ----------------------------------------
    def _pair_rows(self) -> PairRows:
        """The pair's rows (runtime.tokens.PairRows) made of what the matcher holds as rows
        — a column kernel's pending instances, their deadlines queued as
        Matcher.materialize queues them; its registered tokens (all older) stay tokens."""
        held = self.pending
        pr = self.pattern.pair
        if held is not None and held.states is not None:  # (not a pair's: never so)
            self.materialize()
            held = None
        rows = PairRows(pr.zone)
        if held is not None:
            z, ka = pr.zone, pr.key_a
            for tid, e in zip(held.ids, held.events, strict=True):
                rows.start(tid, e.params[ka], e)
                if z is not None:
                    self._queue_deadline(e.ts + pr.window, tid, z, e.ts)
        self.pending = rows
        return rows

    def _pair_start(self, e: Event, emit: Callable[[ComplexEvent], None]) -> None:
        """:meth:`_pair_open` of a pair whose ``g`` reads only its event, the instance kept
        as a row (PairRows): the same token id, deadline and, when something reads tokens
        (Matcher.materialize), the same token."""
        rows = self.pending
        if rows.__class__ is not PairRows:
            rows = self._pair_rows()
        pr = self.pattern.pair
        first = pr.first.position
        if first.filter is None or first.filter(e, NO_BINDINGS):
            counters = self.host.counters
            tid = counters.token = counters.token + 1  # (Counters.next_token, inlined)
            z = pr.zone
            if z is not None:
                ts = e.ts
                self._queue_deadline(ts + pr.window, tid, z, ts)
            rows.start(tid, e.params[pr.key_a], e)  # type: ignore[union-attr]

    def _pair_end(self, e: Event, emit: Callable[[ComplexEvent], None]) -> None:
        """:meth:`_pair_close` with the instances as rows (:meth:`_pair_start`): the ``B``
        passing ``g`` completes the instances waiting on its key."""
        rows = self.pending
        if rows.__class__ is not PairRows:
            rows = self._pair_rows()
        pr = self.pattern.pair
        kv = e.params[pr.key_b]
        bm = self.buckets.get(pr.state)
        group = bm.get(kv) if bm else None
        q = rows.by_key.get(kv)  # type: ignore[union-attr]
        if not group and not q:
            return
        flt = pr.second.position.filter
        if flt is None or flt(e, NO_BINDINGS):
            self._end(e, emit, pr, kv, bm, group, rows, q)  # type: ignore[arg-type]

    def _alts_end(self, e: Event, emit: Callable[[ComplexEvent], None]) -> None:
        """:meth:`_alts_close` with the instances as rows: the event completes the
        instances waiting on its key by the alternative that wins."""
        rows = self.pending
        if rows.__class__ is not PairRows:
            rows = self._pair_rows()
        pr = self.pattern.pair
        alts = pr.by_type[e.type]
        kv = e.params[alts[0][1].key_b]
        bm = self.buckets.get(pr.state)
        group = bm.get(kv) if bm else None
        q = rows.by_key.get(kv)  # type: ignore[union-attr]
        if not group and not q:
            return
        won = _winner(alts, e)
        if won is not None:
            self._end(e, emit, won, kv, bm, group, rows, q)  # type: ignore[arg-type]

    def _end(self, e: Event, emit: Callable[[ComplexEvent], None], pr: Any, kv: Any,
             bm: dict[Any, dict[int, Token]], group: dict[int, Token] | None, rows: PairRows,
             q: list[list[Any]] | None) -> None:
        """``e``, of the last stage of the pair ``pr`` (an alternative's own, for
        alternatives) on key ``kv``, completes the instances waiting on it in age order —
        the registered tokens of the key (older: :meth:`_close`), then its rows — within Δ."""
        if group:
            self._close(e, emit, pr, bm, group)
        if not q:
            return
        params = e.params
        ts = e.ts
        z, window, ka = pr.zone, pr.window, pr.key_a
        binds, b_new = pr.first.position.binds, pr.b_new
        alive = rows.alive
        left = None
        for row in q:
            a = row[1]
            ap = a.params
            if (z is not None and ts - a.ts >= window) or ap[ka] != kv:
                # (expired at this very instant — Esper's timer fires before the event —
                # / NaN: unifies with nothing)
                if left is None:
                    left = []
                left.append(row)
                continue
            nb = {}
            for i, v in binds:
                nb[v] = ap[i]
            for i, v in b_new:
                nb[v] = params[i]
            del alive[row[0]]
            self._match(None, nb, (a, e), e, ts, emit)
        if left is None:
            del rows.by_key[kv]
        else:
            q[:] = left
        rows._flat = None

    def _pair_row_step(self, e: Event, emit: Callable[[ComplexEvent], None]) -> None:
        """:meth:`_pair_step` with the instances as rows: a type both ``A`` and of the last
        stage completes the instances of its key, then opens one."""
        pr = self.pattern.pair
        t = e.type
        if pr.alts:
            if t in pr.by_type:
                self._alts_end(e, emit)
        elif t == pr.second.position.type:
            self._pair_end(e, emit)
        if t == pr.first.position.type:
            self._pair_start(e, emit)

    def _spawn(self, tok: Token, forks: list[Thread], e: Event,
               emit: Callable[[ComplexEvent], None]) -> None:
        """Esper's inner every: each thread that went on from ``tok`` (which keeps waiting) is
        a partial match of its own, or a match when it completed the pattern."""
        trace = self.host.trace
        for th in forks:
            new = Token(self.host.counters.next_token(), tok.part, e.ts, [th], tok.mult)
            if trace is not None:
                trace.add(kind="start", pattern=self.name, token=new.id, event=e.ref, ts=e.ts,
                          to=[th.state], reason=f"every: forked from token {tok.id}",
                          threads=self.snapshot([th]))
            if th.state == FINAL:
                self._complete(new, th, e.ts, emit)
                continue
            self.register(new)
            if th.zstart:
                self.schedule_zones(new, th)

    def _group_alive(self) -> bool:
        """every (G) -> R: is an instance of the group under way (a token with a thread at a
        state inside it)? At most one is (the group restarts only when none is)."""
        buckets = self.buckets
        return any(buckets.get(s) for s in self.pattern.auto.group)

    def _distinct_seen(self, bindings: dict[str, Any], ts: float) -> bool:
        """every-distinct: were the start's key values seen (within the expiry)? Else note them
        (runtime.distinct.seen_before, which the batch filter shares)."""
        key = tuple(f(None, bindings) for f in self.pattern.auto.distinct)
        return seen_before(self.seen, key, ts, self.pattern.auto.distinct_expiry)


def _winner(alts: tuple[tuple[int, Any], ...], e: Event) -> Any:
    """Of a type's alternatives ``(rank, view)`` (EsperPair.by_type), the view of the one
    ``e`` completes by: every filter evaluated, in the automaton's order (as the token path
    does when an instance waits on the key), the lowest rank of those it passes; None."""
    won: Any = None
    for rank, view in alts:
        flt = view.second.position.filter
        if (flt is None or flt(e, NO_BINDINGS)) and (won is None or rank < won[0]):
            won = rank, view
    return None if won is None else won[1]
