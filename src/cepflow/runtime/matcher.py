"""Token-based execution of one automaton under an event processing context (000 §4.4, §5).

Per event, the matcher (1) finds the partial match the event contributes to — the *oldest* one
that can take it (chronicle: ``e ↦ min_τstart(P)``), else a new token from the initial state;
(2) applies negative transitions, trapping every token whose gap forbids the event; (3) under
``immediate`` and ``strict`` disposes every partial match when the event contributed to none
(noise); ``strict`` also allows one partial match at a time. The ``unrestricted`` context
(Carlson & Lisper's, a cepflow extension) gives the event to every partial match that can take
it and also starts a new one.
Tokens are indexed by state and by the value of a unification variable, so finding the token an
event belongs to costs the same whatever the number of keys (bodies, vehicles) in the stream.
Three Esper shapes are stepped directly (``pair``: ``every a = A(f) -> b = B(g, key) [within Δ]``,
``single``: ``every e = T(f)``; the missing event: runtime.absence) with the general path's
result (tests/esper/test_esper_kernel.py, test_esper_absence.py); ``fast_path=False`` turns
these and the chronicle fast path off.
What is fixed for the pattern is its CompiledPattern (runtime.compiled); the matcher holds the
run state. Esper's own steps: runtime.esper_steps; the ``timer:interval`` clock:
runtime.interval_clock.
"""

from __future__ import annotations

from bisect import insort
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from operator import itemgetter
from typing import Any

from cepflow.automaton.automaton import (
    FINAL,
    INITIAL,
    LOOP,
    TAKEN,
    TIMER,
    TRAP,
    Edge,
    Forbid,
)
from cepflow.events.event import ComplexEvent, Event
from cepflow.runtime.absence import AbsenceSteps
from cepflow.runtime.binding import NO_BINDINGS, bind, collect_run, spread
from cepflow.runtime.collected import Collected, Trail, compare, extend
from cepflow.runtime.compiled import CompiledPattern, CrossStep, ForbidStep, RowStep
from cepflow.runtime.esper_steps import EsperSteps
from cepflow.runtime.interval_clock import CLOCK_TOKEN, IntervalClock
from cepflow.runtime.timers import IDLE_TOKEN
from cepflow.runtime.tokens import KeyedRows, PairRows, PendingRows, Thread, Token
from cepflow.timefmt import duration_text as _ms

NOPART = object()  # the event belongs to no partition of a partitioned pattern


class Matcher(EsperSteps, AbsenceSteps, IntervalClock):
    """Run-time state of one compiled pattern."""

    def __init__(self, pattern: CompiledPattern, host: Any) -> None:
        #: what is fixed for the pattern (runtime.compiled), shared by every run of it
        self.pattern = pattern
        #: the engine's shared state and services (runtime/host.py)
        self.host = host
        self.name = pattern.name
        self.tokens: dict[Any, dict[int, Token]] = {}
        #: a match was completed; for Esper's patterns without every (start policy "once"):
        #: their one instance has begun — it ends by a match or by turning permanently false
        #: (a window expired, a not ended it), and nothing begins after it (EvalRootStateNode
        #: quits the pattern either way)
        self.done = False
        self.seen: dict[tuple, float] = {}  # every-distinct keys -> when first seen
        # Esper's inner every (Position.every): threads that leave their partial match waiting
        # and go on as new ones; collected by _try_edges, handed over per token by _plan
        self._forked: list[Thread] = []
        #: start policy "respawn": the fresh instances the results of the current step owe
        #: (begun after it: Matcher.respawn)
        self.due = 0
        #: Automaton.final: a match completed in the current step (only then does the next
        #: instance begin; IntervalClock._clock_idle reads and clears it at the step's end, so
        #: it is no state between steps)
        self.completed = False
        self._forks: dict[int, list[Thread]] = {}
        self.buckets: dict[int, dict[Any, dict[int, Token]]] = {}
        #: a pair with a reach (runtime.reach): per key, its waiting instances by value
        #: (EsperSteps._reachable); made again after a registration out of age order
        self.reach_index: dict[Any, list[Any]] = {}
        #: the start of the interval under way of a pattern that starts with timer:interval
        #: (None: none; CompiledPattern.clock)
        self.clock_start: float | None = None
        #: instance deadlines of a pair pattern, in time order (one engine timer at a time)
        self.deadlines: deque[tuple[float, int, int, float]] = deque()
        #: deadlines (in time order) of a pair's instances that completed before them, which
        #: the queue's timer skipped (_expire_queued) or a kernel's batch never queued: the
        #: token path's timers for them fire idle, moving only the clock, so time passing
        #: over them moves it as far (Engine._advance)
        self.skipped: deque[float] = deque()
        #: partial matches a column kernel left as rows, not tokens (see materialize)
        self.pending: PendingRows | None = None
        self.slot = -1  # index in the engine's matchers (set by the engine)
        #: a token the row step cannot hold as a row was met: the token path steps this
        #: pattern from then on (Matcher._keyed_rows)
        self.rowless = False

    def _fast_begin(self, edge: Edge, e: Event, emit: Any = None) -> None:
        """Start a token along a plain initial edge (see _fast_paths); the engine's step for a
        type that only starts partial matches (step_for)."""
        if self.pending is not None:
            self.materialize()
        params = e.params
        bindings = {}
        for i, v in edge.position.binds:
            bindings[v] = params[i]
        counters = self.host.counters
        tid = counters.token = counters.token + 1  # (Counters.next_token, inlined)
        tok = Token(tid, None, e.ts, [Thread(edge.target, bindings, [e], None, e)])
        if self.host.trace is not None:
            self.host.trace.add(kind="start", pattern=self.name, token=tok.id, event=e.ref,
                                ts=e.ts, to=[edge.target], threads=self.snapshot(tok.threads))
        self.register_newest(tok)

    def snapshot(self, threads: Iterable[Thread]) -> list[dict[str, Any]]:
        """What a trace keeps of threads after a move: their bindings (without internal
        names) and the deadlines of the timed zones they are in, ``[zone id, deadline]``."""
        zones = self.pattern.zone_by_id
        return [{"bindings": {k: v for k, v in th.bindings.items() if not k.startswith("_")},
                 "deadlines": sorted([z, start + zones[z].length]
                                     for z, start in (th.zstart or {}).items())}
                for th in threads]

    # -- registry -------------------------------------------------------------------------
    def count(self) -> int:
        rows = self.pending
        return sum(len(d) for d in self.tokens.values()) + (len(rows) if rows else 0)

    def all_tokens(self) -> list[Token]:
        self.materialize()
        return self.registered_tokens()

    def registered_tokens(self) -> list[Token]:
        """The tokens, oldest first, without the column kernel's pending instances."""
        out = [t for d in self.tokens.values() for t in d.values()]
        out.sort(key=lambda t: t.id)
        return out

    def _key(self, state: int, th: Thread) -> Any:
        var = self.pattern.key_var.get(state)
        return None if var is None else th.bindings.get(var)

    def register(self, tok: Token) -> None:
        if self.reach_index:
            self.reach_index.clear()
        self.tokens.setdefault(tok.part, {})[tok.id] = tok
        regs = []
        for th in tok.threads:
            k = (th.state, self._key(th.state, th))
            if k not in regs:
                regs.append(k)
                _insert(self.buckets.setdefault(k[0], {}).setdefault(k[1], {}), tok)
        tok.regs = regs

    def materialize(self) -> None:
        """Make tokens of the partial matches a column kernel or the row step left as rows
        (PendingRows, KeyedRows): the very tokens the token path would hold — same ids,
        threads and bucket order, each younger than every registered one. Everything that
        reads tokens calls this first."""
        rows = self.pending
        if rows is None:
            return
        toks = self.row_tokens()
        self.pending = None
        pr = self.pattern.pair
        chain = rows.states is not None
        z = rows.zone
        dl = self.deadlines
        queued = rows.__class__ is PairRows  # (the per-event rows' deadlines are queued)
        for tok in toks:
            if len(tok.threads) == 1:
                self.register_newest(tok)
            else:  # (an unrestricted chain's token: a thread per state it reached)
                self.register(tok)
            tid, ts = tok.id, tok.created
            if z is not None and not chain and not queued:
                # a pair queues its deadlines (the engine holds the timer of the first one
                # already); a chain's timers, one per token, are in the engine's heap
                deadline = ts + pr.window
                if not dl or dl[-1][0] <= deadline:
                    dl.append((deadline, tid, z, ts))
                else:
                    self.host.schedule(deadline, self, tid, z, ts)

    def row_tokens(self) -> list[Token]:
        """The tokens the pending rows stand for, oldest first, not registered
        (:meth:`materialize` registers them; analysis.fork.state_key reads them)."""
        rows = self.pending
        if rows is None:
            return []
        pr = self.pattern.pair
        chain = rows.states is not None
        extra = chain and self.pattern.chain is not None and self.pattern.chain.extra
        parted = self.pattern.partitioned  # (a keyed sequence partitioned by its key)
        z = rows.zone
        uc = self.pattern.unrestricted_chain
        every = None if uc is None else uc.waits
        out = []
        part = None
        for q, tid in enumerate(rows.ids):
            if chain:
                evs = rows.events[q]
                state = rows.states[q]
                bindings = (self.pattern.chain.bindings(rows.keys[q], evs) if extra
                            else {rows.var: rows.keys[q]})
                if parted:
                    part = rows.keys[q]
            else:  # a pair's instance: its A event
                e = rows.events[q]
                evs, state = [e], pr.state
                bindings = {v: e.params[i] for i, v in pr.first.position.binds}
            ts = evs[0].ts
            th = Thread(state, bindings, evs, None if z is None else {z: ts}, evs[-1])
            if every is not None and len(evs) > 1:
                # (an unrestricted chain's token: a thread at every state it reached, the
                # deepest first, each with the first events of the deepest)
                ths = [th, *(Thread(every[j][0], dict(bindings), evs[:j],
                                    None if z is None else {z: ts}, evs[j - 1])
                             for j in range(len(evs) - 1, 0, -1))]
            else:
                ths = [th]
            out.append(Token(tid, part, ts, ths))
        return out

    def register_newest(self, tok: Token) -> None:
        """register() for a single-thread token younger than every registered one (the column
        kernel's instances, a new token of a direct step): appending keeps the buckets in age
        order."""
        th = tok.threads[0]
        state = th.state
        var = self.pattern.key_var.get(state)  # (_key, inlined)
        key = None if var is None else th.bindings.get(var)
        part = self.tokens.get(tok.part)
        if part is None:
            part = self.tokens[tok.part] = {}
        part[tok.id] = tok
        bm = self.buckets.get(state)
        if bm is None:
            bm = self.buckets[state] = {}
        b = bm.get(key)
        if b is None:
            bm[key] = {tok.id: tok}
        else:
            b[tok.id] = tok
        tok.regs = [(state, key)]

    @property
    def timers_saved(self) -> bool:
        """Are this pattern's timers saved as they stand (docs/state-format.md, "Timers")?
        Those of a pattern whose timer can complete a match (Esper's ``timer:interval``, a
        missing event, a VEPL ``NOT`` at the end of a window) or start its clock's next
        interval: at one instant they fire in the order they were asked for, which the partial
        matches do not tell. Other patterns' timers only end partial matches, in any order:
        derived on restore (runtime.state)."""
        return self.pattern.clock is not None or any(
            z.timer_accept for z in self.pattern.auto.zones)

    def unregister(self, tok: Token) -> None:
        part = self.tokens.get(tok.part)
        if part is not None:
            part.pop(tok.id, None)
            if not part:
                del self.tokens[tok.part]
        for state, key in tok.regs:
            bm = self.buckets.get(state)
            if bm is None:
                continue
            b = bm.get(key)
            if b is not None:
                b.pop(tok.id, None)
                if not b:
                    del bm[key]
        tok.regs = []

    # -- stepping -------------------------------------------------------------------------
    def _try_edges(
        self, th: Thread, edges: list[Edge], e: Event
    ) -> tuple[list[Thread], str | None] | None:
        """Threads reached from ``th`` by ``e``; None if no edge's guard accepts ``e``.

        The second item is a trap reason when every accepting edge failed a time check.
        """
        out: list[Thread] = []
        reason: str | None = None
        params = e.params
        forked = False
        fired = 0
        keep = _KEEP  # (_COUNTED: an every's waiting run under timer:withinmax, counted)
        steps: list[tuple[tuple[int, frozenset[int]], Thread]] | None = None
        alt: tuple[int, Thread, list[Thread], Thread | None] | None = None  # (the or
        # alternative taken: Position.alt; the list it went to; its run back, Position.loop_out)
        # (Esper's until child takes e before its operand does: the threads of an until's
        # operand steps, dropped when a step of its end took e — Position.until_end)
        reps: list[tuple[int, Thread]] = []
        ended: list[int] = []
        for edge in edges:
            pos = edge.position
            flt = pos.filter
            if flt is not None and pos.local:  # reads only e: check it before binding
                if not flt(e, NO_BINDINGS):
                    continue
                nb = bind(pos, params, th.bindings)
                if nb is None:
                    continue
            else:
                nb = bind(pos, params, th.bindings)
                if nb is None or (flt is not None and not flt(e, nb)):
                    continue
            fired += 1
            if pos.collect is not None:  # a repeated tag: assign, not unify (one run's
                nb = collect_run(pos.collect, params, nb)  # collection, shared: collected)
            zs = th.zstart
            if edge.enters or edge.exits or (zs and edge.target != FINAL):
                zs, why = self._zones(th, edge, e)
                if why is not None:
                    if why:  # (a trap; "": the edge is not for this thread, see _zones)
                        reason = why
                    continue
            if pos.most is not None:  # Esper's timer:withinmax: the guard's next result
                if th.bindings.get(TAKEN, 0) >= pos.most:
                    # it passed its count: this result ends the guard's operand (its run here
                    # ends, TimerWithinOrMaxCountGuard.inspect), the result is dropped
                    return ([], "timer:withinmax: its count passed") if th.state != INITIAL \
                        else None
                if TAKEN in nb:  # (a result starts no count: its next guard's is its own)
                    nb = {k: v for k, v in nb.items() if k != TAKEN}
                keep = _COUNTED
            if pos.track is not None:  # a step of Esper's or (compiler.conjunction)
                nt = _or_step(pos, nb, th, e, edge.target, zs)
            else:
                evs = th.events
                nt = Thread(edge.target, nb, extend(evs, e) if (  # (shared with the tags)
                    nb.__class__ is Collected or evs.__class__ is Trail) else [*evs, e], zs, e)
            back = None
            if pos.loop_in:  # entering an inner every's group: note where the run was
                nt.bindings = {**nt.bindings, LOOP: _loop_mark(th)}
            elif pos.loop_out:  # its group completed: the completion goes on as a partial
                # match of its own (as an inner every's fork), the run goes back to wait for
                # the group's next instance (EvalEveryStateNode restarts its child)
                back, nt = _loop_back(nt, e)
            fork = pos.every and th.state != INITIAL  # Esper's inner every: th keeps waiting
            if pos.alt:  # of an or's alternatives that fit e, the lowest (written first) only
                if alt is not None:
                    if pos.id > alt[0]:
                        continue
                    _drop(alt[2], alt[1])
                    if alt[3] is not None:
                        _drop(out, alt[3])
                alt = (pos.id, nt, self._forked if fork or back else out, back)
            if back is not None:
                self._forked.append(nt)
                out.append(back)
                continue
            if fork:
                self._forked.append(nt)
                forked = True
                continue
            if pos.conj is not None:  # a step of Esper's and: see below
                if steps is None:
                    steps = []
                steps.append((pos.conj, nt))
                continue
            if pos.until:
                if pos.until_end:
                    ended.append(pos.until)
                else:
                    reps.append((pos.until, nt))
            out.append(nt)
        if ended and reps:
            gone = [nt for u, nt in reps if u in ended]
            out = [nt for nt in out if not any(nt is g for g in gone)]
        if steps is not None:
            # every operand of an and that can take e takes it: of its steps that fired, only
            # those moving a maximal set of operands go on (compiler.conjunction)
            out.extend(nt for (c, moved), nt in steps
                       if not any(c2 == c and moved < m2 for (c2, m2), _ in steps))
        if not out and reason is None and not forked:
            return None
        if th.state != INITIAL and (self.pattern.skips or (self.pattern.context.esper and (
                forked or (th.state not in self.pattern.greedy
                           and th.state not in self.pattern.alternatives
                           and self._others_wait(th.state, fired, steps))))):
            # unrestricted follows every run: the thread may also skip e. Under esper the
            # operands of an or run side by side: one that did not take e (another edge of
            # this state did) still waits, and so does an inner every's source — but not an
            # until's own edges (CompiledPattern.greedy): its one instance takes the event,
            # nor the other alternatives of an or of single events, which that event ended
            # (CompiledPattern.alternatives)
            out.append(keep)
        return out, reason

    def _others_wait(self, state: int, fired: int,
                     steps: list[tuple[tuple[int, frozenset[int]], Thread]] | None) -> bool:
        """Under esper: does an edge of ``state`` that did not fire belong to another operand
        of an or (not to an and one of whose steps fired: the and as a whole took e)?"""
        unfired = self.pattern.out_degree[state] - fired
        if steps and unfired:
            fired_in = {c for (c, _), _ in steps}
            for c, k in self.pattern.conj_degree.get(state, {}).items():
                if c in fired_in:
                    unfired -= k - sum(1 for (c2, _), _ in steps if c2 == c)
        return unfired > 0

    def _zones(
        self, th: Thread, edge: Edge, e: Event
    ) -> tuple[dict[int, float] | None, str | None]:
        zs = dict(th.zstart) if th.zstart else {}
        tau = e.ts
        whole = self.pattern.whole_zones
        for z in edge.exits:
            zone = self.pattern.zone_by_id[z]
            if z in zs:  # leaving a zone the thread is in: compare entry and last inside event
                start = zs[z]
                inside_now = edge.final and z in edge.position.zones and z not in edge.enters
                out = tau if inside_now else th.last_ts
            else:  # entered and left by this very event
                start = out = tau
                if z in whole:
                    start = self._origin(tau)
            span = out - start
            if zone.kind == "within" and zone.exceeded(span):
                return zs, f"window of {_ms(zone.length)} exceeded (span {_ms(span)})"
            if zone.kind == "holds_for" and span < zone.length:
                return zs, f"holds-for {_ms(zone.length)} not reached (span {_ms(span)})"
        for z in edge.exits:
            zs.pop(z, None)
        for z in edge.enters:
            zs[z] = self._origin(tau) if z in whole else tau
        if edge.target != FINAL:
            for z, start in zs.items():
                zone = self.pattern.zone_by_id[z]
                if zone.kind == "within" and (z not in edge.enters or z in whole) and (
                        zone.exceeded(tau - start)):
                    if th.state in zone.last:
                        # the thread may leave the zone as it is (its timer kept it): staying
                        # in it with e is a run the window excludes, so e is not for this
                        # thread — it does not trap it (000 §4.3.1: a match of the window is
                        # one whose span fits; the partial match without e still has those)
                        return zs, ""
                    return zs, f"window of {_ms(zone.length)} exceeded (span {_ms(tau - start)})"
        return (zs or None), None

    def _origin(self, tau: float) -> float:
        """Where a run entering a Zone.whole at ``tau`` enters it: the statement's start
        (the engine sets it at the latest with the first event; ``tau`` for a host without
        one)."""
        start = getattr(self.host.engine, "statement_start", None)
        return tau if start is None else start

    def quit(self, t: float) -> bool:
        """Has Esper's guard at the top of the pattern ended by ``t`` (Zone.whole)? Then the
        pattern is over — EvalGuardStateNode quit everything under it, the root's child is
        false for good —: no instance begins, no clock starts."""
        zone = self.pattern.whole_zone
        return zone is not None and zone.exceeded(t - self._origin(t))

    # -- processing -----------------------------------------------------------------------
    def partition_of(self, e: Event) -> Any:
        if not self.pattern.partitioned:
            return None
        i = self.pattern.auto.partition_index.get(e.type)
        if i is None:
            return NOPART
        return e.params[i]

    def step_for(self, t: str) -> Callable[[Event, Callable[[ComplexEvent], None]], None]:
        """The step the engine calls for an input event of type ``t`` (its routes,
        Engine.index_routes): the plain keyed step or Esper's pair step when the type takes
        one, else :meth:`process`. Each gives what :meth:`process` gives."""
        pat = self.pattern
        if pat.context_plan is not None and self.host.trace is None:
            if t in pat.context_plan:
                return self._context_step if pat.unrestricted_chain is None else self._every_step
            # (a type the sequence does not take: noise, but of no partition when partitioned
            # — and never under unrestricted)
            return (_ignored if pat.partitioned or pat.unrestricted_chain is not None
                    else self._context_noise)
        if pat.row_forbids is not None and t in pat.row_forbids and self.host.trace is None:
            return partial(Matcher._forbid_step, self, pat.row_plan.get(t),  # type: ignore
                           pat.row_forbids[t])
        if pat.row_plan is not None and t in pat.row_plan and self.host.trace is None:
            # (the type's plan bound in: no look-up per event)
            if pat.row_cross is not None:
                return partial(Matcher._cross_step, self, pat.row_plan[t],  # type: ignore
                               pat.row_cross[t])
            return partial(Matcher._row_step, self, pat.row_plan[t])
        if t in pat.fast:
            start = pat.fast_start.get(t)
            if start is not None and not pat.fast[t]:  # (no token waits for it)
                return partial(self._fast_begin, start)
            return self._keyed_step
        pr = pat.pair
        if pat.context.esper and pr is not None and pr.fork and self.host.trace is None:
            return self._fork_step
        if pat.context.esper and pr is not None and pr.is_pair and self.host.trace is None:
            opens = t == pr.first.position.type
            closes = t in pr.by_type if pr.alts else t == pr.second.position.type
            if pr.columnar:  # (the instances as rows: PairRows; alternatives' filters all
                # read only their event, as is_pair asks)
                return (self._pair_row_step if opens == closes else self._pair_start if opens
                        else self._alts_end if pr.alts else self._pair_end)
            return (self._pair_step if opens == closes else self._pair_open if opens
                    else self._alts_close if pr.alts else self._pair_close)
        ab = pat.absence
        if ab is not None and self.host.trace is None:
            if t == ab.first.type:
                return self._absence_open
            if t == ab.forbid_type:
                return self._absence_close
        return self.process

    def process(self, e: Event, emit: Callable[[ComplexEvent], None]) -> None:
        """Feed one event (already time-ordered) to this pattern."""
        pat = self.pattern
        if pat.context_plan is not None and self.host.trace is None:
            if pat.unrestricted_chain is None:
                self._context_step(e, emit)
            elif e.type in pat.context_plan:
                self._every_step(e, emit)
            return
        plan = self.pattern.row_plan
        if plan is not None and self.host.trace is None:
            fb = pat.row_forbids
            if fb is not None and e.type in fb:
                self._forbid_step(plan.get(e.type), fb[e.type], e, emit)
                return
            if e.type in plan:
                if pat.row_cross is None:
                    self._row_step(plan[e.type], e, emit)
                else:
                    self._cross_step(plan[e.type], pat.row_cross[e.type], e, emit)
                return
        if e.type in self.pattern.fast:
            self._keyed_step(e, emit)
            return
        if self.pending is not None:
            self.materialize()
        self._general(e, emit)

    def _row_step(self, step: RowStep, e: Event, emit: Callable[[ComplexEvent], None]) -> None:
        """An event of a keyed chain (``step``: its type's CompiledPattern.row_plan entry)
        with the partial matches kept
        as rows (runtime.tokens.KeyedRows): the oldest row waiting for it on its key at a
        stage whose filter it passes moves (or completes), else it starts one if the first
        stage's filter lets it — what the token path does to tokens, the same ids, order,
        matches and filter evaluations. In a window ``[Δ]`` a start sets the engine's timer
        for its token id (:meth:`on_deadline` expires the row), and a row whose span the event
        would take past Δ is trapped by it (Matcher._zones: the event starts none). Tokens a
        reader or a restored state made are taken back as rows first (:meth:`_keyed_rows`)."""
        rows = self.pending
        pat = self.pattern
        if rows.__class__ is not KeyedRows:
            rows = self._keyed_rows()
            if rows is None:
                if e.type in pat.fast:
                    self._keyed_step(e, emit)
                else:
                    self._general(e, emit)
                return
        ki, moves, begin, bflt, zone, bind = step
        key = e.params[ki] if ki >= 0 else None  # (-1: an unkeyed chain)
        queues = rows.queues
        best = None
        # (a NaN unifies with nothing, not even itself; a filter is tried, as by the token
        # path, where a partial match older than the best so far waits on the key)
        if not moves:  # (a type that only starts partial matches)
            pass
        elif len(moves) == 1:  # (a type at one stage: the common case)
            (bs, bt, flt), = moves
            bq = queues[bs].get(key)
            if bq and (flt is None or flt(e, NO_BINDINGS)) and key == key:
                best = bq[0]
        else:
            for s, target, flt in moves:
                q = queues[s].get(key)
                if q:
                    r = q[0]
                    if ((best is None or r[0] < best[0]) and (flt is None or flt(e, NO_BINDINGS))
                            and key == key):
                        best, bq, bs, bt = r, q, s, target
        rows._flat = None
        if best is None:
            if begin is not None and (bflt is None or bflt(e, NO_BINDINGS)):
                counters = self.host.counters
                tid = counters.token = counters.token + 1  # (Counters.next_token, inlined)
                if zone is None:
                    row = [tid, key, [e]]
                else:  # (Matcher.schedule_zones of the new token)
                    row = rows.alive[tid] = [tid, key, [e], begin]
                    ts = e.ts
                    self.host.schedule(ts + zone.length, self, tid, zone.id, ts)
                q = queues[begin].get(key)
                if q is None:
                    queues[begin][key] = [row]
                else:
                    q.append(row)
                rows.n += 1
            return
        del bq[0]
        evs = best[2]
        if zone is not None:
            alive = rows.alive
            if zone.exceeded(e.ts - evs[0].ts):
                # the window exceeded at this very event (its deadline is not before it:
                # float time): the partial match is trapped, and the event, taken by it,
                # starts none
                if not bq:
                    del queues[bs][key]
                rows.n -= 1
                del alive[best[0]]
                return
            if bt == FINAL:
                del alive[best[0]]
            else:
                best[3] = bt
        evs.append(e)
        if bt == FINAL:  # (_match of a chain, inlined: no select list, distinct or clock)
            if not bq:
                del queues[bs][key]
            rows.n -= 1
            self.done = True
            counters = self.host.counters
            mid = counters.match = counters.match + 1
            k = best[1]
            if bind is None:
                emit(ComplexEvent(self.name, (k,) * len(pat.auto.params), e.ts, {rows.var: k},
                                  evs, mid))
            else:  # (a parameter may be a stage's own variable)
                b = bind(k, evs)
                emit(ComplexEvent(self.name, _values(b, pat.auto.params), e.ts, b, evs, mid))
            return
        to = queues[bt]
        q = to.get(key)
        if q is not None:  # (rows reach a state in age order: a stage's rows leave it
            q.append(best)  # oldest first, docs/architecture.md)
        elif bq:
            to[key] = [best]
        else:  # (the emptied queue serves again)
            del queues[bs][key]
            bq.append(best)
            to[key] = bq

    def _cross_step(self, step: RowStep, cross: CrossStep, e: Event,
                    emit: Callable[[ComplexEvent], None]) -> None:
        """:meth:`_row_step` of a chain whose filters read variables (runtime.shapes.Chain.
        cross: ``A(x, u) -> B(x, w) where w < u``; ``cross``: per move, and for the start,
        whether its filter does). Such a filter is no longer the same for every row of the
        key: as the token path's _find, the rows at each state (in its order of states) are
        tried oldest first, up to the first whose bindings (:meth:`Chain.bindings` of its
        events and this one: what ``bind`` gives) pass it, none younger than the best so far
        — and not at all for a NaN key, which ``bind`` refuses before the filter. The
        filters evaluated, and so the failures reported, are the token path's. A younger row
        may now leave a state before an older one, so the row is inserted at its place in
        age order where it arrives (the token path's ``_insert``). Kept apart from
        :meth:`_row_step`, the hot step of the common chains, which compares queue heads."""
        rows = self.pending
        pat = self.pattern
        if rows.__class__ is not KeyedRows and (rows := self._keyed_rows()) is None:
            self._tokens_step(e, emit)
            return
        ki, moves, begin, bflt, zone, _bind = step
        key = e.params[ki] if ki >= 0 else None
        queues = rows.queues
        binds = pat.chain.bindings
        best = None
        for (s, target, flt), reads in zip(moves, cross[0], strict=True):
            q = queues[s].get(key)
            if not q:
                continue
            if not reads:  # (a filter of the event alone: tried once, on the oldest)
                r = q[0]
                if ((best is None or r[0] < best[0]) and (flt is None or flt(e, NO_BINDINGS))
                        and key == key):
                    best, bq, bi, bs, bt = r, q, 0, s, target
                continue
            if key != key:
                continue
            for i, r in enumerate(q):
                if best is not None and r[0] > best[0]:
                    break
                if flt(e, binds(r[1], [*r[2], e])):
                    best, bq, bi, bs, bt = r, q, i, s, target
                    break
        rows._flat = None
        if best is None:
            if begin is not None and (bflt is None or bflt(
                    e, binds(key, [e]) if cross[1] else NO_BINDINGS)):
                counters = self.host.counters
                tid = counters.token = counters.token + 1  # (Counters.next_token, inlined)
                rows.start(begin, tid, key, e)
                if zone is not None:  # (Matcher.schedule_zones of the new token)
                    self.host.schedule(e.ts + zone.length, self, tid, zone.id, e.ts)
            return
        del bq[bi]
        if not bq:
            del queues[bs][key]
        rows.n -= 1
        evs = best[2]
        if zone is not None:
            del rows.alive[best[0]]
            if zone.exceeded(e.ts - evs[0].ts):
                return  # (trapped at this very event, which starts none: _row_step)
        evs.append(e)
        if bt == FINAL:
            k = best[1]
            b = binds(k, evs)
            self.done = True
            counters = self.host.counters
            mid = counters.match = counters.match + 1
            emit(ComplexEvent(self.name, _values(b, pat.auto.params), e.ts, b, evs, mid))
            return
        if zone is not None:
            best[3] = bt
            rows.alive[best[0]] = best
        rows.n += 1
        dest = queues[bt].get(key)
        if dest is None:
            queues[bt][key] = [best]
        elif dest[-1][0] < best[0]:
            dest.append(best)
        else:  # (an older row stayed behind at the state before: its place by age)
            insort(dest, best, key=itemgetter(0))

    def _forbid_step(self, step: RowStep | None, forbids: ForbidStep, e: Event,
                     emit: Callable[[ComplexEvent], None]) -> None:
        """An event of a type a rowed chain's NOT forbids (``forbids``: its CompiledPattern.
        row_forbids entry; ``step``: its row_plan entry, None when no stage takes it): the row
        step first (:meth:`_row_step`: it may move, complete or start a row), then what the
        token path's _negatives does — at each state it is forbidden at, the rows of its key
        waiting there are trapped, but the one that has just taken it (its last event is
        this very one, as _forbid's ``th.last is not e``), if a NOT's filter lets it; the
        filter is tried only where such a row waits and the key unifies (not a NaN), as the
        token path tries it. A NOT of any key (key param None) traps the rows of every key
        there, its filter tried where a row of any key waits. A trapped row's timer, in a
        window, fires idle."""
        rows = self.pending
        if rows.__class__ is not KeyedRows and (rows := self._keyed_rows()) is None:
            self._tokens_step(e, emit)
            return
        if step is not None:
            self._row_step(step, e, emit)
        queues = rows.queues
        for s, ki, flts in forbids:
            by_key = queues[s]
            if ki is None:  # (of any key: every key's rows, a NaN's too — it binds nothing)
                hit = [(key, q, [r for r in q if r[2][-1] is e]) for key, q in by_key.items()]
                hit = [h for h in hit if len(h[2]) < len(h[1])]
                if not hit or (flts is not None and not any(
                        f is None or f(e, NO_BINDINGS) for f in flts)):
                    continue
                for key, q, keep in hit:
                    _trap_rows(rows, by_key, key, q, keep)
                continue
            key = e.params[ki] if ki >= 0 else None
            q = by_key.get(key)
            if not q or key != key:
                continue
            keep = [r for r in q if r[2][-1] is e]
            if len(keep) == len(q) or (flts is not None and not any(
                    f is None or f(e, NO_BINDINGS) for f in flts)):
                continue
            _trap_rows(rows, by_key, key, q, keep)

    def _context_step(self, e: Event, emit: Callable[[ComplexEvent], None]) -> None:
        """An event for a keyed sequence under immediate or strict (CompiledPattern.
        context_plan) with the partial matches kept as rows (runtime.tokens.KeyedRows): what
        :meth:`_general` does to its tokens — the oldest row waiting for it on its key at a
        stage whose filter it passes moves (or completes); else it starts one (strict: only
        when none is held, in its partition); else it is noise and disposes every row (of its
        key, when partitioned by it). The same ids, order, matches, and filters evaluated."""
        rows = self.pending
        if rows.__class__ is not KeyedRows and (rows := self._keyed_rows()) is None:
            self._tokens_step(e, emit)
            return
        pat = self.pattern
        plan = pat.context_plan.get(e.type)
        if plan is None:  # (a type the sequence does not take: process, from a cascade)
            if not pat.partitioned and rows.n:
                rows.dispose()
            return
        ki, moves, begin, bflt, zone, _bind = plan  # (the key alone)
        key = e.params[ki]
        queues = rows.queues
        best = None
        for s, target, flt in moves:  # (Matcher._find: a NaN key is looked up, never unified)
            q = queues[s].get(key)
            if q and (best is None or q[0][0] < best[0]) and (
                    flt is None or flt(e, NO_BINDINGS)) and key == key:
                best, bq, bs, bt = q[0], q, s, target
        if best is not None:
            del bq[0]
            evs = best[2]
            rows._flat = None
            if zone is not None:
                trapped = zone.exceeded(e.ts - evs[0].ts)
                if trapped or bt == FINAL:
                    del rows.alive[best[0]]
                if trapped:
                    # the window exceeded at this very event (its deadline is not before it:
                    # float time): the partial match is trapped, and the event, taken by it,
                    # is no noise and starts none (Matcher._zones)
                    if not bq:
                        del queues[bs][key]
                    rows.n -= 1
                    return
            evs.append(e)
            if bt != FINAL:
                rows.move(best, bq, bs, bt, key)
                return
            if not bq:
                del queues[bs][key]
            rows.n -= 1
            self._chain_match(best[1], evs, e.ts, rows.var, emit)
            return
        if begin is not None and not (pat.context.one_at_a_time and (
                any(key in by_key for by_key in queues.values()) if pat.partitioned
                else rows.n)) and (bflt is None or bflt(e, NO_BINDINGS)):
            counters = self.host.counters
            tid = counters.token = counters.token + 1  # (Counters.next_token, inlined)
            rows.start(begin, tid, key, e)
            if zone is not None:  # (Matcher.schedule_zones of the new token)
                ts = e.ts
                self.host.schedule(ts + zone.length, self, tid, zone.id, ts)
            return
        if rows.n:  # noise (Matcher._dispose_noise)
            rows.dispose(key, not pat.partitioned)

    def _every_step(self, e: Event, emit: Callable[[ComplexEvent], None]) -> None:
        """An event for a keyed sequence under unrestricted (CompiledPattern.
        unrestricted_chain) with the partial matches kept as rows, each of its deepest events
        (its threads at the states before hold their first events): every row of the event's
        key waiting for the event's stage takes it, oldest first, if it passes that stage's
        filter — completes, or waits at the next stage — then the event starts one if it
        passes the first stage's. What :meth:`_general` does to the tokens: each run that can
        take the event does (the runs that skip it stay, the later ones merged into the
        earlier), a token that completes ends, and a filter is evaluated where a token of the
        key holds a thread at the stage's state. In a window ``[Δ]`` a start sets the timer
        of its token id (:meth:`on_deadline` expires the row) and a row whose span the event
        would take past Δ stays as it is (float time: its deadline is not before the event)."""
        rows = self.pending
        if rows.__class__ is not KeyedRows and (rows := self._keyed_rows()) is None:
            self._tokens_step(e, emit)
            return
        pat = self.pattern
        ki, moves, begin, bflt, zone, _bind = pat.context_plan[e.type]
        key = e.params[ki]
        queues = rows.queues
        if moves:
            (s, target, flt), = moves  # (a type at one stage after the first at most)
            by_key = queues[s]
            q = by_key.get(key)
            if q is None:  # (a row at a later state holds a thread here too)
                held = any(key in queues[x] for x in pat.unrestricted_later[s])
            else:
                held = True
            if held and (flt is None or flt(e, NO_BINDINGS)) and key == key and q:
                ts = e.ts
                if zone is not None and zone.exceeded(ts - q[0][2][0].ts):
                    # (those whose span e would take past Δ stay: the oldest)
                    stay = [r for r in q if zone.exceeded(ts - r[2][0].ts)]
                    go = [r for r in q if not zone.exceeded(ts - r[2][0].ts)]
                    if go:
                        by_key[key] = stay
                else:
                    go, stay = q, None
                    del by_key[key]
                if not go:
                    go = ()
                rows.n -= len(go)
                rows._flat = None
                if target == FINAL:
                    alive = rows.alive
                    for row in go:
                        if alive is not None:
                            del alive[row[0]]
                        evs = row[2]
                        evs.append(e)
                        self._chain_match(row[1], evs, ts, rows.var, emit)
                elif go:
                    to = queues[target]
                    dest = to.get(key)
                    for row in go:
                        row[2].append(e)
                        if zone is not None:
                            row[3] = target
                    if dest is None:
                        to[key] = go
                    elif dest[-1][0] < go[0][0]:
                        dest.extend(go)
                    else:  # (a restored state's rows out of age order)
                        dest.extend(go)
                        dest.sort(key=itemgetter(0))
                    rows.n += len(go)
        if begin is not None and (bflt is None or bflt(e, NO_BINDINGS)):
            counters = self.host.counters
            tid = counters.token = counters.token + 1  # (Counters.next_token, inlined)
            rows.start(begin, tid, key, e)
            if zone is not None:  # (Matcher.schedule_zones of the new token)
                ts = e.ts
                self.host.schedule(ts + zone.length, self, tid, zone.id, ts)

    def _context_noise(self, e: Event, emit: Callable[[ComplexEvent], None]) -> None:
        """An input event of a type the keyed sequence under immediate or strict does not
        take (not partitioned): noise, which disposes every partial match."""
        rows = self.pending
        if rows.__class__ is not KeyedRows and (rows := self._keyed_rows()) is None:
            self._tokens_step(e, emit)
        elif rows.n:
            rows.dispose()

    def _chain_match(self, key: Any, evs: list[Event], ts: float, var: str,
                     emit: Callable[[ComplexEvent], None]) -> None:
        """The complex event of a keyed sequence's row that took ``evs`` (:meth:`_match` of
        its token: no select list, distinct, clock or variable besides the key)."""
        self.done = True
        counters = self.host.counters
        mid = counters.match = counters.match + 1  # (Counters.next_match, inlined)
        emit(ComplexEvent(self.name, (key,) * len(self.pattern.auto.params), ts, {var: key},
                          evs, mid))

    def _tokens_step(self, e: Event, emit: Callable[[ComplexEvent], None]) -> None:
        """The token path for a pattern whose partial matches cannot be rows (rowless)."""
        if self.pending is not None:
            self.materialize()
        self._general(e, emit)

    def _keyed_rows(self) -> KeyedRows | None:
        """The row step's rows (KeyedRows) made of what the matcher holds — a column kernel's
        rows, tokens a reader or a restored state made (each a chain's one thread: its state,
        its key, its events) — or None, and the token path steps from now on, when a token is
        not of that form."""
        if self.rowless:
            return None
        pat = self.pattern
        c = next(x for x in (pat.chain, pat.context_chain, pat.unrestricted_chain)
                 if x is not None)
        if self.tokens:
            self.materialize()
            toks = self.registered_tokens()
            ths = [t.threads[0] for t in toks]
            stage_of = c.stage_of()
            every = pat.unrestricted_chain is not None
            if any((not _runs(t.threads, c.waits) if every else len(t.threads) != 1)
                   or not _own_part(t, c.var, pat.partitioned)
                   for t in toks) or any(
                    th.zstart != (None if c.zone is None else {c.zone: th.events[0].ts})
                    or c.held(stage_of.get(th.state, 0)) != len(th.events) or not _same(
                        th.bindings, c.bindings(th.bindings.get(c.var), th.events))
                    for th in ths):
                self.rowless = True
                return None
            held = PendingRows([t.id for t in toks], [th.events for th in ths], c.zone,
                               [th.state for th in ths], [th.bindings.get(c.var) for th in ths],
                               c.var)
            self.tokens.clear()
            self.buckets.clear()
        else:
            held = self.pending
        rows = self.pending = KeyedRows.of(held, [s for ss in c.waits[1:] for s in ss], c.var,
                                           c.zone)
        return rows

    def _keyed_step(self, e: Event, emit: Callable[[ComplexEvent], None]) -> None:
        """An event of a type whose every transition is a plain keyed step (see _fast_paths):
        find the oldest token waiting on its key and move it in place; the general path
        takes what this cannot."""
        if self.pending is not None:
            self.materialize()
        t = e.type
        pat = self.pattern
        params = e.params
        buckets = self.buckets
        best = None
        for s, i, edge in pat.fast[t]:
            bm = buckets.get(s)
            if bm:
                v = params[i]
                b = bm.get(v)
                if b and v == v:  # (a NaN unifies with nothing, not even itself)
                    tok = next(iter(b.values()))
                    if best is None or tok.id < best.id:
                        best, hs, hb, he = tok, s, b, edge
        if best is None:
            start = pat.fast_start.get(t)
            if start is not None:
                self._fast_begin(start, e)
            elif t in pat.initial:
                self._start(e, None, emit)
            return
        regs = best.regs
        threads = best.threads
        if len(threads) != 1 or len(regs) != 1:
            self._general(e, emit)
            return
        th = threads[0]
        key = regs[0][1]
        del hb[best.id]
        if not hb:
            del buckets[hs][key]
        th.events.append(e)
        th.last = e
        trace = self.host.trace
        if trace is not None:
            trace.add(kind="step", pattern=self.name, token=best.id, event=e.ref, ts=e.ts,
                      frm=hs, to=[he.target], threads=self.snapshot([th]))
        if he.final:
            part = self.tokens[None]
            del part[best.id]
            if not part:
                del self.tokens[None]
            best.regs = []
            self._match(best, th.bindings, th.events, e, e.ts, emit)  # (_complete of th)
            return
        target = he.target
        th.state = target
        bm = buckets.get(target)
        if bm is None:
            bm = buckets[target] = {}
        b = bm.get(key)
        if b is None:
            if hb:
                bm[key] = {best.id: best}
            else:  # (the group it left, empty and unlinked, serves again)
                hb[best.id] = best
                bm[key] = hb
        else:
            _insert(b, best)
        regs[0] = (target, key)  # (the token's own list: forks copy it)

    def _general(self, e: Event, emit: Callable[[ComplexEvent], None]) -> None:
        """:meth:`process` without the keyed step: Esper's shapes and semantics, else the
        token path (find, apply, start, negatives, noise)."""
        t = e.type
        pat = self.pattern
        if pat.context.esper:
            if pat.pair is not None and pat.pair.is_pair and self.host.trace is None:
                self._pair_step(e, emit)
            elif pat.pair is not None and pat.pair.fork and self.host.trace is None:
                self._fork_step(e, emit)
            elif pat.single is not None and self.host.trace is None:
                pos = pat.single.position
                if pos.filter is None or pos.filter(e, NO_BINDINGS):
                    self._single_match(pos, e, emit)
            elif pat.pair is not None and not pat.pair.stages and self.host.trace is None:
                self._alts_single(e, emit)  # (every (a = A or b = B …))
            elif pat.absence is not None and self.host.trace is None:
                self._absence_step(e, emit)  # (every a = A -> (timer:interval and not B))
            else:
                self._process_esper(e, emit)
            return
        takers = self._find(e)
        shares = pat.context.shares_events
        part = self.partition_of(e) if pat.partitioned else None
        contributed = bool(takers)
        if takers:
            takers.sort(key=lambda tp: tp[0].id)
            for tok, plan in takers:
                self._apply(tok, plan, e, emit)
        # strict immediate tracks one partial match at a time (else e is noise)
        if ((not takers or shares) and t in pat.initial and part is not NOPART
                and not (pat.context.one_at_a_time and self.tokens.get(part))):
            contributed = self._start(e, part, emit) or contributed
        if t in pat.neg_states:
            self._negatives(e)
        if not contributed and pat.context.disposes_on_noise and part is not NOPART:
            self._dispose_noise(e, part)

    def _find(self, e: Event) -> list[tuple[Token, list]]:
        """The partial match(es) ``e`` goes to: the oldest that can take it (every one that can,
        under unrestricted). Buckets keep tokens in id order, so the scan of a bucket stops at
        the first token that can take ``e``, and at the first one younger than the best so far."""
        t = e.type
        unrestricted = self.pattern.context.shares_events
        takers: list[tuple[Token, list]] = []
        best: Token | None = None
        states = self.pattern.pos_states.get(t)
        if states:
            for s in states:
                for group in self._groups(s, e):
                    for tok in group.values():
                        if best is not None and tok.id > best.id:
                            break
                        if unrestricted and any(tok is x for x, _ in takers):
                            continue
                        plan = self._plan(tok, e)
                        if plan is None:
                            continue
                        if unrestricted:
                            takers.append((tok, plan))
                            continue
                        best = tok
                        takers = [(tok, plan)]
                        break
        return takers

    def _start(self, e: Event, part: Any, emit: Callable[[ComplexEvent], None],
               mult: int = 1) -> bool:
        """A new partial match from the initial state, if ``e`` can begin one (standing for
        ``mult`` identical instances: Token.mult)."""
        if self.pattern.whole_zone is not None and self.quit(e.ts):
            return False
        root = Thread(INITIAL, {}, [], None, None)
        each = self.pattern.each.get(e.type) if self.pattern.each else None
        if each is not None:  # every X or every Y: an instance per operand e fits
            began = [self._begin(root, group, e, part, emit, mult) for group in each]
            return any(began)
        return self._begin(root, self.pattern.initial[e.type], e, part, emit, mult)

    def _begin(self, root: Thread, edges: list[Edge], e: Event, part: Any,
               emit: Callable[[ComplexEvent], None], mult: int) -> bool:
        """:meth:`_start` over the initial ``edges``."""
        res = self._try_edges(root, edges, e)
        if res is None:
            return False
        if self.pattern.limit_at and all(self._full(th.state) for th in res[0]
                                         if th is not _KEEP):
            return False  # (every a=A -[n]> …: n right-hand sides under way; A starts none)
        if self.pattern.auto.distinct and self.pattern.auto.start == "spawn":
            first = next(th for th in res[0] if th is not _KEEP)
            if self._distinct_seen(first.bindings, e.ts):
                return False
        if self.pattern.auto.start == "once":
            self.done = True
        tok = Token(self.host.counters.next_token(), part, e.ts, [], mult)
        trace = self.host.trace
        if trace is not None:
            began = [th for th in res[0] if th is not _KEEP]
            trace.add(kind="start", pattern=self.name, token=tok.id, event=e.ref,
                      ts=e.ts, to=[th.state for th in began], threads=self.snapshot(began))
        self._apply(tok, [(root, res)], e, emit, new=True)
        return True

    def _plan(
        self, tok: Token, e: Event
    ) -> list[tuple[Thread, tuple[list[Thread], str | None] | None]] | None:
        plan = []
        any_move = False
        esper = self.pattern.context.esper
        for th in tok.threads:
            edges = self.pattern.auto.edges.get(th.state, {}).get(e.type)
            if edges and esper:
                # Esper: an event that ends the sub-pattern (not / until) ends it even when
                # it also fits the next step (until is started first)
                fb = self.pattern.auto.forbids.get(th.state, {}).get(e.type)
                if fb and self._forbidden(th, fb, e):
                    edges = None
            res = self._try_edges(th, edges, e) if edges else None
            if res is not None:
                any_move = True
            plan.append((th, res))
        if self._forked:
            self._forks[tok.id] = self._forked
            self._forked = []
        return plan if any_move else None

    def _apply(
        self,
        tok: Token,
        plan: list[tuple[Thread, tuple[list[Thread], str | None] | None]],
        e: Event,
        emit: Callable[[ComplexEvent], None],
        new: bool = False,
    ) -> None:
        trace = self.host.trace
        if not new:
            self.unregister(tok)
        threads: list[Thread] = []
        done: Thread | None = None
        reasons = []
        forbids = self.pattern.auto.forbids
        exact = self.pattern.exact and not new
        unused = self.pattern.auto.unused
        reports = self.pattern.auto.reports
        limit_at = self.pattern.limit_at
        groups = self.pattern.groups
        left: set[int] = set()  # the untils over a group a run left (their instance is over)
        won: set[int] | None = None  # Esper's ors run as alternatives that e completes: the
        drop: frozenset[int] = frozenset()  # threads that report first, their ors' states
        if self.pattern.side_done:
            won, drop = self._sides(plan, e)
        for th, res in plan:
            if drop and th.state in drop:  # (the or quits its alternatives: the winner only)
                if res is None or not (kept := [nt for nt in res[0] if id(nt) in won]):
                    continue
                res = (kept, res[1])
            if res is None:
                if exact:  # a run that cannot take e ends: the partial match took e
                    continue
                if th.state in forbids:
                    kept = self._observe(th, e, reasons, tok.id)
                    if kept is not None:
                        threads.append(kept)
                    continue
                threads.append(th)
                continue
            moved, why = res
            if why and not moved:
                reasons.append(why)
            for nt in moved:
                if nt is _KEEP or nt is _COUNTED:  # the source thread may also skip e (see
                    # _try_edges); under timer:withinmax it counts the result it gave
                    src = th if nt is _KEEP else _counted(th)
                    kept = self._observe(src, e, reasons, tok.id) if th.state in forbids else src
                    if kept is not None:
                        threads.append(kept)
                    continue
                if groups and th.state in groups:
                    left |= groups[th.state] - groups.get(nt.state, _NO_GROUPS)
                if nt.state == FINAL:
                    if done is None or _age(nt, unused) < _age(done, unused):
                        done = nt
                elif limit_at and th.state != nt.state and self._full(nt.state):
                    continue  # (-[n]>: the left side ended true, no right side starts)
                else:
                    threads.append(nt)
                    if nt.zstart:
                        self.schedule_zones(tok, nt)
                    if nt.state in reports:  # Esper's A -> (X or not Y): true at once
                        self._match(tok, nt.bindings, nt.events, nt.last, e.ts, emit)
            if trace is not None and not new:
                went = [m for m in moved if m is not _KEEP and m is not _COUNTED]
                trace.add(kind="step", pattern=self.name, token=tok.id, event=e.ref, ts=e.ts,
                          frm=th.state, to=[m.state for m in went], reason=why,
                          threads=self.snapshot(went))
        if done is not None:
            self._complete(tok, done, e.ts, emit)
            return
        if left:  # Esper's one until instance ended: its runs that skipped an event end too
            threads = [th for th in threads if not groups.get(th.state, _NO_GROUPS) & left]
        auto = self.pattern.auto
        if auto.group_end:  # every (G) -> R: did G complete?
            threads = self._group_end(tok, threads, new or any(
                th.state in auto.group for th, _ in plan), e.ts)
        if len(threads) > 1:
            threads = _dedupe(threads)
            if self.pattern.loose and len(threads) > 1:
                threads = _oldest(threads, self.pattern.loose, bool(self.pattern.zone_by_id))
        if not threads:
            if trace is not None:
                trace.add(kind="trap", pattern=self.name, token=tok.id, event=e.ref, ts=e.ts,
                          reason="; ".join(reasons) or "no thread left")
            return
        tok.threads = threads
        self.register(tok)

    def _sides(self, plan: list[tuple[Thread, tuple[list[Thread], str | None] | None]],
               e: Event) -> tuple[set[int], frozenset[int]]:
        """Esper's ors run as alternatives (Position.side) that ``e`` completes: of each, the
        thread whose alternative reports first — the one whose filter that took ``e`` started
        first (EvalOrStateNode takes the child that reports first; filters are served in the
        order they started) — and the states of those ors, whose other threads end (the or
        quits its other alternatives). A filter started at the alternative's start event, or
        with its ``and`` (Position.fresh), started first, and of several such the alternative
        written first; else it started at the thread's last event, and of two started at one
        event the one whose thread's earlier events started first (the events compared
        latest first). (In an ``and`` whose operand that completes it did not take the last
        event, its filter started earlier than that: read as the last event — not exact.)"""
        sides = self.pattern.side_done
        best: dict[int, tuple[tuple, Thread]] = {}
        for th, res in plan:
            if res is None:
                continue
            for nt in res[0]:
                if nt is _KEEP or nt is _COUNTED:
                    continue
                side = sides.get((th.state, e.type, nt.state))
                if side is None:
                    continue
                g, k, fresh = side
                key = (0, k) if fresh else (
                    1, tuple(_event_key(x) for x in reversed(th.events)), k)
                if g not in best or key < best[g][0]:
                    best[g] = (key, nt)
        states = self.pattern.side_states
        return ({id(nt) for _, nt in best.values()},
                frozenset().union(*(states[g] for g in best)))

    def _full(self, state: int) -> bool:
        """Esper's ``-[n]>`` (EvalFollowedByWithMaxStateNodeManaged): would a run entering
        ``state`` start a right-hand side while ``n`` are under way? They are the registered
        runs waiting in the limit's states (a run being stepped is not registered: the count
        falls as it leaves, before it is checked again, as Esper's does)."""
        lim = self.pattern.limit_at.get(state)
        if lim is None:
            return False
        most, states = lim
        buckets = self.buckets
        under_way = 0
        for s in states:
            bm = buckets.get(s)
            if bm:
                for group in bm.values():
                    under_way += len(group)
        return under_way >= most

    def _group_end(self, tok: Token, threads: list[Thread], inside: bool,
                   ts: float) -> list[Thread]:
        """every (G) -> R: the threads ``tok`` goes on with after a step. When a thread of an
        instance of G (``inside`` before the step) reached a state where G completed, G is
        true: it ends (its other threads go — Esper quits the group), and the instance goes on
        as the rest's with that thread — the oldest run by _age, as a match is chosen — unless
        every-distinct saw its keys (then nothing goes on; the group restarts all the same)."""
        auto = self.pattern.auto
        end = auto.group_end
        if not inside or not any(th.state in end for th in threads):
            return threads
        unused = auto.unused
        best = min((th for th in threads if th.state in end), key=lambda th: _age(th, unused))
        if auto.distinct and self._distinct_seen(best.bindings, ts):
            trace = self.host.trace
            if trace is not None:
                trace.add(kind="dispose", pattern=self.name, token=tok.id, event=None, ts=ts,
                          reason="every-distinct: keys seen")
            return []
        return [best]

    def result(self, bindings: dict[str, Any], ts: float, last: Event | None = None
               ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """A match's parameters and bindings, from the bindings of its final thread and its
        completion time (also used by runtime.kernels.pair._emit_pair). ``last``, the match's last
        event, is what a failing select expression is reported on (it reads only bindings)."""
        pat = self.pattern
        auto = pat.auto
        select = auto.select
        if select is None:
            return _values(bindings, auto.params), bindings
        # Esper's select list: the complex event carries what it selects
        copy = pat.select_copy
        if copy is not None:  # (variables only: what their evaluators would read)
            params = _values(bindings, copy)
            out = _named(auto.params, params)
        else:
            b = {**bindings, "@ts": ts}
            values = []  # (a loop, not a comprehension: no frame of its own per match)
            for f in select:
                values.append(f(last, b))
            params = tuple(values)
            out = dict(zip(auto.params, params, strict=True))
        if auto.spread:  # (select * over tags of any length: a[k].<field> as many as taken)
            out = spread(out, bindings, auto.spread)
        return params, out

    def _complete(self, tok: Token, th: Thread, ts: float, emit: Callable) -> None:
        """``tok`` completed with its thread ``th``: its match, once per instance it stands
        for; under the start policy "respawn" each result owes fresh instances (:meth:`respawn`)."""
        for _ in range(tok.mult):
            self._match(tok, th.bindings, th.events, th.last, ts, emit)
        if self.pattern.auto.respawn:
            self.due += tok.mult * self.pattern.auto.respawn

    def respawn(self, ts: float, emit: Callable) -> None:
        """Start policy "respawn" (compiler.esper._respawn): after a step, the fresh
        instances its results owe begin at ``ts`` — after the event, which they do not see —
        as one partial match at the clock's state standing for them all (Token.mult). The
        newest partial match, when it is still such a fresh one (at that state, nothing bound,
        in no zone: the same future), takes them instead: the count, not the number of
        partial matches, grows with the results (``every (every b=B)``: 2^(n-1) instances
        after n B's, one partial match)."""
        n, self.due = self.due, 0
        clock = self.pattern.clock
        assert clock is not None
        at = self.pattern.auto.edges[INITIAL][clock.type][0].target
        mine = self.tokens.get(None)
        if mine:
            newest = mine[max(mine)]
            if len(newest.threads) == 1:
                th = newest.threads[0]
                if th.state == at and not th.bindings and not th.zstart:
                    newest.mult += n
                    return
        self._start(Event(clock.type, (), ts, clock.type), None, emit, n)

    def _match(self, tok: Token | None, bindings: dict[str, Any], events: Sequence[Event],
               last: Event | None, ts: float, emit: Callable) -> None:
        """The complex event of ``tok``'s run that ended with ``bindings`` having taken
        ``events`` (the last one ``last``) at ``ts`` (:meth:`_complete` of its final thread;
        the pair's step calls it without making that thread)."""
        self.done = True
        pat = self.pattern
        auto = pat.auto
        if auto.final:  # (read and cleared at the end of the step: IntervalClock._clock_idle)
            self.completed = True
        host = self.host
        if auto.distinct and auto.start == "restart" and self._distinct_seen(bindings, ts):
            # every-distinct around a sequence: a match whose keys were seen is dropped (the
            # instance ended all the same, and the next one begins)
            if host.trace is not None:
                host.trace.add(kind="dispose", pattern=self.name, token=tok.id,
                               event=None, ts=ts, reason="every-distinct: keys seen")
            return
        if auto.select is None:  # (result(), inlined for the common cases)
            params = _values(bindings, auto.params)
        elif pat.select_copy is not None and not auto.spread:
            params = _values(bindings, pat.select_copy)
            bindings = _named(auto.params, params)
        else:
            params, bindings = self.result(bindings, ts, last)
        if pat.synthetic:  # the clock's and the timers' synthetic events are no part of it
            events = [x for x in events if x.type not in pat.synthetic]
        counters = host.counters
        mid = counters.match = counters.match + 1  # (Counters.next_match, inlined)
        ce = ComplexEvent(self.name, params, ts, bindings, events, mid)
        if host.trace is not None:
            host.trace.add(kind="match", pattern=self.name, token=tok.id, ts=ts,
                           events=ce.event_refs, bindings=ce.bindings_for_output(),
                           match=ce.match_id)
        emit(ce)

    def _groups(self, s: int, e: Event) -> tuple[dict[int, Token], ...]:
        """The token groups in state ``s`` that event ``e`` may concern: the group of its key
        when the state is indexed by a variable ``e`` binds, else every group."""
        bm = self.buckets.get(s)
        if not bm:
            return ()
        ki = self.pattern.key_index.get(s)
        kt = ki.get(e.type) if ki else None
        if kt is None:
            return tuple(bm.values())
        b = bm.get(e.params[kt[0]])
        return (b,) if b else ()

    def _negatives(self, e: Event) -> None:
        t = e.type
        for s in self.pattern.neg_states[t]:
            for tok in [tok for g in self._groups(s, e) for tok in g.values()]:
                self._forbid(tok, s, e)

    def _forbid(self, tok: Token, state: int, e: Event) -> None:
        """``e`` is forbidden at ``state`` for some thread of ``tok`` that rests there (not
        one that has just taken ``e``): such threads move to the trap or a restricted copy."""
        keep = []
        moved: list[Thread] | None = None
        reasons: list[str] = []
        for th in tok.threads:
            if th.state == state and th.last is not e:
                kept = self._observe(th, e, reasons, None)
                if kept is not th:
                    moved = moved or []
                    if kept is not None:
                        keep.append(kept)
                        moved.append(kept)
                    continue
            keep.append(th)
        if moved is None:
            return
        self.unregister(tok)
        if self.host.trace is not None:
            self.host.trace.add(kind="trap" if not keep else "step", pattern=self.name,
                                  token=tok.id, event=e.ref, ts=e.ts, frm=state,
                                  to=[th.state for th in moved],
                                  reason="; ".join(dict.fromkeys(reasons)),
                                  threads=self.snapshot(moved))
        if keep:
            tok.threads = _dedupe(keep) if len(keep) > 1 else keep
            self.register(tok)

    def _observe(self, th: Thread, e: Event, reasons: list[str],
                 traced: int | None) -> Thread | None:
        """``th`` after the event ``e`` it did not take: itself when no negative transition of
        its state forbids ``e``, else a thread at the restricted copy the forbidden event leads
        to (the operand before the NOT may go on, Forbid.target) or None (the trap). Copies
        have the negative transitions that restrict them further, so this follows them until
        none forbids ``e``. ``traced``: the token id, to trace a move to a copy."""
        forbids = self.pattern.auto.forbids
        state = th.state
        while True:
            fb = forbids.get(state, {}).get(e.type)
            hit = self._forbidden(th, fb, e) if fb else None
            if hit is None:
                break
            reasons.append(f"NOT {hit.position.label.lstrip('¬')} observed")
            state = hit.target
            if state == TRAP:
                return None
        if state == th.state:
            return th
        if th.zstart and self._outlived(state, th.zstart, e.ts, reasons):
            return None
        new = Thread(state, th.bindings, th.events, th.zstart, th.last)
        trace = self.host.trace
        if trace is not None and traced is not None:
            trace.add(kind="step", pattern=self.name, token=traced, event=e.ref, ts=e.ts,
                      frm=th.state, to=[state], reason=reasons[-1],
                      threads=self.snapshot([new]))
        return new

    def _outlived(self, copy: int, zstart: dict[int, float], now: float,
                  reasons: list[str]) -> bool:
        """Whether a thread moved to the restricted copy ``copy`` at ``now`` is already past a
        window it can neither leave from there (the copy is not among the zone's last states)
        nor complete at: every way on stays in the window, too late — the timer that would have
        ended it fired before it got there, so it ends now (else, left waiting, it would take
        and be trapped by a later event, which under chronicle would withhold that event from
        the partial matches that can use it)."""
        for z, start in zstart.items():
            zone = self.pattern.zone_by_id[z]
            if (zone.kind == "within" and zone.exceeded(now - start) and copy not in zone.last
                    and copy not in zone.timer_accept):
                reasons.append(f"window of {_ms(zone.length)} exceeded (span {_ms(now - start)})")
                return True
        return False

    @staticmethod
    def _forbidden(th: Thread, forbids: list[Forbid], e: Event) -> Forbid | None:
        """The first negative transition of ``forbids`` that ``e`` fires for ``th``, if any."""
        for f in forbids:
            pos = f.position
            nb = bind(pos, e.params, th.bindings)
            if nb is not None and (pos.filter is None or pos.filter(e, nb)):
                return f
        return None

    def _dispose_noise(self, e: Event, part: Any) -> None:
        if self.pattern.partitioned:
            victims = list(self.tokens.get(part, {}).values())
        else:
            victims = [t for d in self.tokens.values() for t in d.values()]
        for tok in victims:
            self.unregister(tok)
            if self.host.trace is not None:
                self.host.trace.add(kind="dispose", pattern=self.name, token=tok.id,
                                      event=e.ref, ts=e.ts,
                                      reason=f"noise under {self.pattern.context}: {e.type} "
                                             "contributes to no partial match")

    # -- time -----------------------------------------------------------------------------
    def _zones_hold(self, th: Thread, closing: int) -> bool:
        """At a timer completion, the other zones the thread is in are left: check them."""
        for z, start in (th.zstart or {}).items():
            if z == closing:
                continue
            zone = self.pattern.zone_by_id[z]
            span = th.last_ts - start
            if (zone.kind == "within" and zone.exceeded(span)) or (
                    zone.kind == "holds_for" and span < zone.length):
                return False
        return True

    def schedule_zones(self, tok: Token, th: Thread) -> None:
        """Ask for the deadline of each timed zone ``th`` is in (a pair's or chain's, in time
        order, queued behind one engine timer; else one engine timer each)."""
        for z, start in (th.zstart or {}).items():
            if z in self.pattern.timed_zones:
                zone = self.pattern.zone_by_id[z]
                deadline = start + zone.length
                dl = self.deadlines
                if self.pattern.pair is not None and (not dl or dl[-1][0] <= deadline):
                    # a pair's deadlines come in time order: queue them, the engine holds a
                    # timer for the first only (on_deadline with token -1)
                    if not dl:
                        self.host.schedule(deadline, self, -1, z, start)
                    dl.append((deadline, tok.id, z, start))
                else:
                    self.host.schedule(deadline, self, tok.id, z, start)

    def _expire_queued(self, now: float, emit: Callable) -> None:
        """The engine's timer for the first deadline, due at ``now``, fired: run every queued
        deadline up to it (they only expire instances), then ask for a timer for the next one.
        (``now``, not the queue's first deadline: after a batch the timer may be a pending
        row's, due before every queued one — Matcher.materialize gave that row a timer of its
        own, and the queued instances are still within their windows.)"""
        dl = self.deadlines
        clocked = self.pattern.clock is not None
        tokens = self.tokens
        rows = self.pending  # (None, or the per-event rows: PairRows — on_deadline made
        # the other kinds tokens already)
        alive = rows.alive if rows.__class__ is PairRows else ()
        skipped = self.skipped
        while skipped and skipped[0] <= now:  # (the clock is at now: passed)
            skipped.popleft()
        while dl and dl[0][0] <= now:
            _, token_id, z, start = dl.popleft()
            if token_id in alive:
                rows.expire(token_id)  # type: ignore[union-attr]
                continue
            for d in tokens.values():  # (an instance that completed has nothing to expire)
                if token_id in d:
                    self._deadline(token_id, z, start, emit)
                    break
            if clocked:
                self._clock_idle(start + self.pattern.zone_by_id[z].length)
        if not clocked:
            # the queued instances that completed since have nothing to expire: the next
            # timer is the first open one's (a pair's instances mostly complete within Δ —
            # else the engine stops once per instance begun, for nothing)
            while dl:
                tid = dl[0][1]
                if tid in alive or (tokens and any(tid in d for d in tokens.values())):
                    break
                skipped.append(dl.popleft()[0])
        if dl:
            deadline, _, z, start = dl[0]
            self.host.schedule(deadline, self, -1, z, start)

    def on_deadline(self, token_id: int, z: int, start: float, emit: Callable) -> None:
        """The deadline of zone ``z`` entered at ``start`` has passed for token ``token_id``."""
        if token_id == IDLE_TOKEN:  # (it moved the clock: all it does)
            return
        rows = self.pending
        if rows is not None:
            if rows.__class__ is KeyedRows and rows.alive is not None:
                rows.expire(token_id)  # (a windowed chain's row: _row_step)
                return
            if rows.__class__ is PairRows:  # (a pair's rows per event: _pair_start)
                if token_id != -1 and rows.expire(token_id):
                    return
            else:
                self.materialize()
        if token_id == -1:
            self._expire_queued(start + self.pattern.zone_by_id[z].length, emit)
            return
        if token_id == CLOCK_TOKEN:
            assert self.pattern.clock is not None
            self._clock_fired(start, emit)
            self._clock_idle(self.pattern.clock.due(start))
            return
        self._deadline(token_id, z, start, emit)
        if self.pattern.clock is not None:
            self._clock_idle(start + self.pattern.zone_by_id[z].length)

    def _deadline(self, token_id: int, z: int, start: float, emit: Callable) -> None:
        """on_deadline for one token's zone."""
        tok = None
        for d in self.tokens.values():
            tok = d.get(token_id)
            if tok is not None:
                break
        if tok is None:
            return
        zone = self.pattern.zone_by_id[z]
        deadline = start + zone.length
        keep = []
        fired: Thread | None = None
        expired = False
        for th in tok.threads:
            if not th.zstart or th.zstart.get(z) != start:
                keep.append(th)
                continue
            if th.state in zone.timer_accept:
                if self._zones_hold(th, z):
                    # of several runs completing at once, the one of the oldest events (as
                    # for an event that completes them, _apply)
                    unused = self.pattern.auto.unused
                    if fired is None or _age(th, unused) < _age(fired, unused):
                        fired = th
                else:
                    expired = True
                continue
            if (zone.kind == "within" or zone.timer_accept) and th.state not in zone.last:
                expired = True
                continue
            keep.append(th)
        if fired is None and not expired:
            return
        onward = None if fired is None else self.pattern.auto.edges.get(fired.state, {}).get(
            TIMER)
        if onward:
            # A -> timer:interval(Δ) -> …: the interval passed, the rest begins with the
            # synthetic event of its end (compiler.esper.TIMER); the other runs stay, the
            # expired ones go (_apply unregisters the token and registers what is left)
            end = Event(TIMER, (), deadline, TIMER)
            self._apply(tok, [(fired, self._try_edges(fired, onward, end)),
                              *((th, None) for th in keep)], end, emit)
            return
        self.unregister(tok)
        trace = self.host.trace
        if fired is not None:
            if trace is not None:
                trace.add(kind="step", pattern=self.name, token=tok.id, event=None,
                          ts=deadline, frm=fired.state, to=[FINAL],
                          reason=f"window of {_ms(zone.length)} closed with no forbidden event",
                          threads=self.snapshot([fired]))
            self._complete(tok, fired, deadline, emit)
            return
        if keep:
            tok.threads = keep
            self.register(tok)
        elif trace is not None:
            trace.add(kind="trap", pattern=self.name, token=tok.id, event=None, ts=deadline,
                      reason=f"window of {_ms(zone.length)} expired")


_INF = float("inf")
_NO_GROUPS: frozenset[int] = frozenset()  # (a state of no until over a group)
def _drop(threads: list[Thread], th: Thread) -> None:
    """Remove ``th`` itself (not an equal thread) from ``threads``."""
    del threads[next(i for i, x in enumerate(threads) if x is th)]


_KEEP = Thread(INITIAL, {}, [], None, None)  # marker: keep the source thread as well
#: marker: keep the source thread as well, one more result of its timer:withinmax counted
_COUNTED = Thread(INITIAL, {}, [], None, None)


def _counted(th: Thread) -> Thread:
    """``th`` waiting at an ``every`` under ``timer:withinmax`` after it gave one more result
    (Position.most: the count is its hidden binding TAKEN)."""
    return Thread(th.state, {**th.bindings, TAKEN: th.bindings.get(TAKEN, 0) + 1}, th.events,
                  th.zstart, th.last)


def _or_step(pos: Any, nb: dict[str, Any], th: Thread, e: Event, target: int,
             zs: dict[int, float] | None) -> Thread:
    """A step of Esper's ``or`` product: note which operands took ``e``; when the step completes
    an operand (``pos.settle``) the thread keeps only that operand's events of the product and
    drops the variables the others bound (their tags are null, as in Esper)."""
    assert pos.conj is not None
    # (a string of operand bit masks, one per step: hashable, and saved state keeps it as is)
    mask = sum(1 << i for i in pos.conj[1])
    before = nb.get(pos.track)
    track = f"{before},{mask}" if before else str(mask)
    events = [*th.events, e]
    if pos.settle is None:
        return Thread(target, {**nb, pos.track: track}, events, zs, e)
    done, drop = pos.settle
    masks = [int(m) for m in track.split(",")]
    n = len(masks)
    if pos.ties:  # several operands complete on e: the first to report wins
        done, drop = min(pos.ties, key=lambda t: _started(masks, t[0]))
    kept = [ev for ev, m in zip(events[-n:], masks, strict=True) if m >> done & 1]
    bindings = {k: v for k, v in nb.items() if k not in drop and k != pos.track}
    return Thread(target, bindings, [*events[:-n], *kept], zs, e)


def _loop_mark(th: Thread) -> str:
    """The hidden binding :data:`LOOP` of a run entering an inner every's group from ``th``
    (Position.loop_in): ``th``'s state, number of events and bound names."""
    return f"{th.state} {len(th.events)} " + "\x1f".join(th.bindings)


def _loop_back(nt: Thread, e: Event) -> tuple[Thread, Thread]:
    """A run ``nt`` that completed an inner every's group with ``e`` (Position.loop_out):
    the run back where it entered the group, with what it had then, and ``nt`` without the
    mark."""
    b = nt.bindings
    state, n, names = b[LOOP].split(" ", 2)
    back = Thread(int(state), {k: b[k] for k in names.split("\x1f")} if names else {},
                  list(nt.events)[:int(n)], nt.zstart, e)
    return back, Thread(nt.state, {k: v for k, v in b.items() if k != LOOP}, nt.events,
                        nt.zstart, nt.last)


def _started(masks: list[int], i: int) -> tuple[int, ...]:
    """When the filter of operand ``i`` of an or's product that took the last step started,
    as Esper's filters are served (in the order they started, EvalOrStateNode reporting its
    first child true): the steps (indexes into ``masks``, one operand bit mask per step)
    where it took its earlier events, latest first, then -1 for the or's start, then ``i``
    (at the or's start its operands start in writing order). Of two operands the one with the
    lesser key reports first: a later step started its filter later, and of two started at
    one step the one whose earlier filter started first took it first."""
    return (*(k for k in range(len(masks) - 2, -1, -1) if masks[k] >> i & 1), -1, i)


def _runs(threads: list[Thread], waits: tuple[tuple[int, ...], ...]) -> bool:
    """Whether an unrestricted chain's token holds a thread at every state it reached, the
    deepest first, each with the first events of the deepest (as the token path leaves them:
    Matcher._every_step's row stands for them); its first thread is checked by the caller."""
    deepest = threads[0].events
    j = len(deepest)
    return len(threads) == j and j < len(waits) and all(
        th.state == waits[j - i][0] and len(th.events) == j - i and th.last is th.events[-1]
        and th.zstart == threads[0].zstart and _same(th.bindings, threads[0].bindings)
        and all(x is y for x, y in zip(th.events, deepest, strict=False))
        for i, th in enumerate(threads))


def _trap_rows(rows: KeyedRows, by_key: dict[Any, list], key: Any, q: list, keep: list
               ) -> None:
    """A NOT's trap at a state (Matcher._forbid_step): the rows ``q`` of ``key`` waiting
    there (``by_key``) but ``keep`` (those that have just taken the event) leave the rows,
    and their windows' deadlines go (their timers fire idle)."""
    alive = rows.alive
    if alive is not None:
        kept = {id(r) for r in keep}
        for r in q:
            if id(r) not in kept:
                del alive[r[0]]
    rows.n -= len(q) - len(keep)
    rows._flat = None
    if keep:
        by_key[key] = keep
    else:
        del by_key[key]


def _ignored(e: Event, emit: Callable[[ComplexEvent], None]) -> None:
    """The step for an event that belongs to no partition of a keyed sequence partitioned by
    its key (Matcher.step_for): the token path does nothing with it either."""


def _own_part(tok: Token, var: str, partitioned: bool) -> bool:
    """Whether ``tok``'s partition is the one a row of its key stands for: none, or (a
    pattern partitioned by its key variable ``var``) its key's value."""
    if not partitioned:
        return tok.part is None
    key = tok.threads[0].bindings.get(var)
    return tok.part == key or (tok.part != tok.part and key != key)


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two bindings hold the same variables in the same order with the same values
    (a value equal to itself or the very same object: a NaN)."""
    return len(a) == len(b) and all(
        ka == kb and (va is vb or va == vb)
        for (ka, va), (kb, vb) in zip(a.items(), b.items(), strict=True))


def _values(bindings: dict[str, Any], names: tuple[str, ...]) -> tuple[Any, ...]:
    """The values of ``names`` in ``bindings`` (None when unbound): a match's parameters.
    (One name, the common case, without a map object: it costs several times more.)"""
    if len(names) == 1:
        return (bindings.get(names[0]),)
    return tuple(map(bindings.get, names))


def _named(names: tuple[str, ...], values: tuple[Any, ...]) -> dict[str, Any]:
    """``names`` bound to ``values`` (as many): a select list's bindings."""
    if len(names) == 1:
        return {names[0]: values[0]}
    return dict(zip(names, values, strict=True))


def _insert(bucket: dict[int, Token], tok: Token) -> None:
    """Add ``tok`` to a bucket keeping id (age) order; a token that reaches a state after a
    younger one (possible when several paths lead there: Esper's ``every a -> b -> timer``
    moves old instances to the state a younger one waits in) goes in before the younger ones,
    which are taken off the end and put back after it — the order a sort of the whole bucket
    gives, since every bucket is in id order (every writer goes through here or appends a
    youngest token: register_newest, _keyed_step), at the cost of the younger ones only."""
    if bucket and tok.id < next(reversed(bucket)):
        younger = []
        while bucket and next(reversed(bucket)) > tok.id:
            younger.append(bucket.popitem())
        bucket[tok.id] = tok
        for tid, x in reversed(younger):
            bucket[tid] = x
    else:
        bucket[tok.id] = tok


def _dedupe(threads: list[Thread]) -> list[Thread]:
    """Threads at the same state with the same bindings and zone entries have the same future:
    keep the one that consumed the earliest events (chronicle prefers older events)."""
    key_of = _RunKey if any(th.bindings.__class__ is Collected for th in threads) else _key_of
    seen: dict[Any, Thread] = {}
    keys = []
    for th in threads:
        key = key_of(th)
        keys.append(key)
        old = seen.get(key)
        if old is None or _older(th, old):
            seen[key] = th
    return [th for th, key in zip(threads, keys, strict=True) if seen[key] is th]


def _oldest(threads: list[Thread], loose: tuple[str, ...], timed: bool) -> list[Thread]:
    """Of threads at one state with the same bindings but the ``loose`` ones (collected
    tags: CompiledPattern.loose), the same zone entries and — in a timed pattern — the same
    last event time, those of the oldest events (Matcher._age's order of the events alone):
    Esper's repetition is one instance that takes every result of its operand, the run of the
    oldest events; the others skipped one. Where nothing but the select list reads the tags
    they take the same events from here on and lose every completion to it (an extension by
    the same events keeps that order); where a later filter reads them they could match where
    Esper does not. Threads with the very same events stay (their order falls to their
    bindings, which an extension may turn)."""
    keys = []
    best: dict[tuple, _Events] = {}
    for th in threads:
        b = th.bindings
        # (a shared collection's plain names: its tags' names all start with ``loose``)
        own = b._own if b.__class__ is Collected else b
        k = (th.state, tuple(sorted(((n, v) for n, v in own.items()
                                     if not n.startswith(loose)), key=itemgetter(0))),
             tuple(sorted((th.zstart or {}).items())), th.last_ts if timed else None)
        ev = _Events(th.events)
        keys.append((k, ev))
        old = best.get(k)
        if old is None or ev < old:
            best[k] = ev
    return [th for th, (k, ev) in zip(threads, keys, strict=True) if best[k] == ev]


def _event_key(e: Event) -> tuple:
    """An event's place in _age's order: its time, atomic before complex, then its seq
    (its match id)."""
    return (e.ts, 1, e.match_id) if isinstance(e, ComplexEvent) else (e.ts, 0, e.seq)


class _Events:
    """A thread's events in _age's order (its first item), compared without making the key
    of each event: runs sharing their events (runtime.collected.Trail) compare from where
    they part."""

    __slots__ = ("events",)

    def __init__(self, events: Sequence[Event]) -> None:
        self.events = events

    def __lt__(self, other: _Events) -> bool:
        return compare(self.events, other.events, _event_key) < 0

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Events) and compare(self.events, other.events,
                                                      _event_key) == 0

    __hash__ = None  # type: ignore[assignment]


def _older(th: Thread, other: Thread) -> bool:
    """``_age(th) < _age(other)``, the events compared first as _Events (the bindings only
    when the events are the same)."""
    c = compare(th.events, other.events, _event_key)
    return c < 0 if c else _age(th) < _age(other)


class _RunKey:
    """_key_of for threads some of whose bindings are a shared collection (runtime.collected):
    equal exactly when _key_of's are, hashed without reading the collections."""

    __slots__ = ("bindings", "hash", "state", "zones")

    def __init__(self, th: Thread) -> None:
        self.state = th.state
        self.bindings = th.bindings
        self.zones = tuple(sorted((th.zstart or {}).items()))
        self.hash = hash((self.state, self.zones, len(self.bindings)))

    def __hash__(self) -> int:
        return self.hash

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, _RunKey) and other.state == self.state
                and other.zones == self.zones and other.bindings == self.bindings)


def _age(th: Thread, unused: frozenset[str] = frozenset()) -> tuple:
    """Orders threads by the events they consumed: at the first difference the older event
    wins, and of two runs one of which extends the other the longer wins (greedy loops); then
    by their bindings, leaving out the ``unused`` variables (which decide nothing). When
    several alternatives complete or coincide at once this picks one whatever the order they
    were written in, so or/and stay commutative in the engine."""
    key = [_event_key(e) for e in th.events]
    key.append((_INF,))  # a longer run of the same events wins: loops are greedy
    items = th.bindings.items()
    if unused:
        items = [kv for kv in items if kv[0] not in unused]
    return tuple(key), tuple(sorted(items, key=repr))


def _key_of(th: Thread) -> tuple:
    return (th.state, tuple(sorted(th.bindings.items(), key=lambda kv: kv[0])),
            tuple(sorted((th.zstart or {}).items())))


