"""A compiled pattern: what the runtime derives once from an automaton (indexes by state and
event type, the key variable of each state, the fast paths and the column kernel's shape) —
immutable, so one serves every run of the pattern (Flink CEP's ``NFA`` beside its
``NFAState``). The run state (tokens, rows, clocks) lives in the Matcher that holds it."""

from __future__ import annotations

from typing import Any

from cepflow.automaton.automaton import (
    FINAL,
    INITIAL,
    SIDE_ANCHOR,
    SIDE_DONE,
    TIMER,
    Automaton,
    Edge,
    Zone,
    alternative_states,
)
from cepflow.automaton.context import Context
from cepflow.runtime.absence import EsperAbsence, esper_absence_of
from cepflow.runtime.shapes import (
    Chain,
    EsperAnd,
    EsperConsec,
    EsperPair,
    EsperRestart,
    chain_of,
    context_chain_of,
    esper_and_of,
    esper_collect_of,
    esper_consec_of,
    esper_distinct_pair_of,
    esper_pair_of,
    esper_restart_of,
    esper_until_of,
    restarted_pair_of,
    unrestricted_chain_of,
)

#: a type's entry of CompiledPattern.row_plan (see _row_plan)
RowStep = tuple[int, tuple[tuple[int, int, Any], ...], int | None, Any, Zone | None, Any]
#: a type's entry of CompiledPattern.row_cross: per move of its RowStep, and for the start,
#: whether the filter reads variables (tried with a partial match's bindings)
CrossStep = tuple[tuple[bool, ...], bool]
#: a type's entry of CompiledPattern.row_forbids: per state it is forbidden at (the token
#: path's order), ``(state, key param, filters)`` — key param None when the NOT traps every
#: key (Chain.every_key), filters None when the first NOT has none
ForbidStep = tuple[tuple[int, int | None, tuple[Any, ...] | None], ...]


class CompiledPattern:
    """The run-independent facts of one automaton (see the module docstring). Read-only: an
    attempt to set an attribute after construction raises AttributeError."""

    __slots__ = (
        "_sealed",
        "absence",
        "alternatives",
        "auto",
        "chain",
        "clock",
        "clock_types",
        "conj_degree",
        "consec",
        "context",
        "context_chain",
        "context_plan",
        "each",
        "esper_and",
        "exact",
        "fast",
        "fast_start",
        "greedy",
        "groups",
        "initial",
        "key_index",
        "key_var",
        "limit_at",
        "loose",
        "name",
        "neg_states",
        "out_degree",
        "pair",
        "partitioned",
        "pos_states",
        "restart",
        "row_cross",
        "row_forbids",
        "row_plan",
        "select_copy",
        "side_done",
        "side_states",
        "single",
        "skips",
        "synthetic",
        "timed_zones",
        "timer_steps",
        "timers_first",
        "types",
        "unrestricted_chain",
        "unrestricted_later",
        "whole_zone",
        "whole_zones",
        "zone_by_id",
    )

    def __init__(self, auto: Automaton, fast_path: bool = True) -> None:
        self.auto = auto
        self.name = auto.name
        #: the event processing context, with the behaviours the runtime asks it about
        self.context: Context = auto.context
        self.partitioned = bool(auto.partition_by)
        #: a partial match is the sequence of events it took (000 §4.4, Def. 8), and its
        #: threads are the runs of the automaton over exactly those events — except under
        #: unrestricted, which follows every run: a thread may also skip an event it takes
        #: (docs/semantics.md, "Decision — a partial match is the events it took")
        self.skips = self.context.follows_every_run
        #: Esper's timers fire before the events of their instant (its windows exclude their
        #: end: span < Δ); VEPL's windows include it (span ≤ Δ) — see Zone.open_end
        self.timers_first = self.context.timers_first
        self.exact = self.context.exact
        self.zone_by_id: dict[int, Zone] = {z.id: z for z in auto.zones}
        self.timed_zones = {z.id for z in auto.zones if z.kind == "within" or z.timer_accept}
        #: Esper's guard at the top of the pattern (Zone.whole): a run enters these zones at
        #: the statement's start (Matcher._zones)
        self.whole_zones = frozenset(z.id for z in auto.zones if z.whole)
        #: the shortest of them: when it has passed the pattern is over (nothing begins)
        self.whole_zone = min((z for z in auto.zones if z.whole), key=lambda z: z.length,
                              default=None)
        # event type -> states with positive / negative transitions on it
        pos_states: dict[str, list[int]] = {}
        neg_states: dict[str, list[int]] = {}
        for s, m in auto.edges.items():
            if s == INITIAL:
                continue
            for t in m:
                pos_states.setdefault(t, []).append(s)
        for s, m in auto.forbids.items():
            for t in m:
                neg_states.setdefault(t, []).append(s)
        self.pos_states = pos_states
        self.neg_states = neg_states
        self.initial: dict[str, list[Edge]] = auto.edges.get(INITIAL, {})
        #: Esper's every X or every Y whose operands one event can both fit (Position.each):
        #: per event type, its initial edges grouped by operand, in the operands' order
        each: dict[str, list[list[Edge]]] = {}
        for t, es in self.initial.items():
            if any(e.position.each for e in es):
                by = {}
                for e in es:
                    by.setdefault(e.position.each, []).append(e)
                each[t] = [by[k] for k in sorted(by)]
        self.each = each
        types = set(pos_states) | set(neg_states) | set(self.initial)
        #: a pattern that starts with timer:interval (compiler.esper): its clock and the event
        #: types that end the interval under way early
        self.clock = auto.clock
        self.clock_types: set[str] = set()
        if self.clock is not None:
            self.clock_types = {p.type for p in self.clock.forbids}
            types = (types | self.clock_types) - {self.clock.type}
        #: an Esper pattern with a timer:interval in its middle (A -> timer:interval(Δ) ->
        #: B): the end of the interval steps its instance by the synthetic TIMER event
        self.timer_steps = any(TIMER in m for m in auto.edges.values())
        types.discard(TIMER)
        #: the event types the pattern reads
        self.types = types
        #: the synthetic event types of the clock and the timers: no part of a match
        self.synthetic = frozenset(
            ([self.clock.type] if self.clock is not None else [])
            + ([TIMER] if self.timer_steps else []))
        # the direct steps below know neither clocks, timers in the middle nor collected
        # (repeated) tags; of the latter the pair kernel takes ``every a -> [n] b``
        # (runtime.shapes.esper_collect_of)
        # (Esper's A -> (X or not Y) reports where a run arrives, Automaton.reports: only the
        # token path does, so such a pattern runs there)
        # (and Esper's -[n]> after every, Automaton.limits, which the token path counts, and
        # the results of timer:withinmax, Position.most, which it counts too; and Esper's
        # guard begun where a step of several events completed, Zone.after, and the guard
        # at the top of the pattern, Zone.whole, which no kernel plan reads; and Esper's every
        # X or every Y whose operands one event can both fit, Position.each, an instance per
        # operand it fits: Matcher._start)
        # (and Esper's every on a group inside a pattern, Position.loop_in, whose runs go
        # back where they entered it: the token path only)
        looped = any(p.loop_in for p in auto.positions)
        fast_path = fast_path and not looped
        clocked = (self.clock is not None or self.timer_steps or bool(auto.reports)
                   or bool(auto.limits) or any(p.most is not None for p in auto.positions)
                   or any(z.after or z.whole for z in auto.zones) or self.each)
        #: state -> the acting -[n]> whose right-hand sides wait there: (n, its states)
        self.limit_at: dict[int, tuple[int, frozenset[int]]] = {
            s: lim for lim in auto.limits for s in lim[1]}
        collecting = fast_path and not clocked and any(
            p.collect is not None for p in auto.positions)
        # (a tag collected without bound under select *, Automaton.spread: its match carries
        # as many a[k] as it took, which no kernel makes — such a pattern runs per event)
        kernel = collecting and not auto.spread
        # (EPL's every ((a and b) where timer:within(Δ)): a clock and nothing else of the above
        # — the restarted and kernel's shape, runtime.shapes.esper_and_of)
        restarted = (fast_path and self.clock is not None and not collecting
                     and not (self.timer_steps or auto.reports or auto.limits
                              or any(p.most is not None for p in auto.positions)
                              or any(z.after for z in auto.zones)))
        fast_path = fast_path and not clocked and not collecting
        self.key_index = auto.key_index
        self.out_degree = {s: sum(len(es) for es in m.values()) for s, m in auto.edges.items()}
        #: per state, how many of its edges are steps of each Esper and (by the and's id)
        conj_degree: dict[int, dict[int, int]] = {}
        for s, m in auto.edges.items():
            for es in m.values():
                for edge in es:
                    if edge.position.conj is not None:
                        c = edge.position.conj[0]
                        d = conj_degree.setdefault(s, {})
                        d[c] = d.get(c, 0) + 1
        self.conj_degree = conj_degree
        #: states whose every edge is a step of one Esper until with a single-event operand
        #: (Position.until): such an until is one instance that takes each operand event
        #: (EvalMatchUntilStateNode), so a thread there that takes an event does not also
        #: stay behind as a run that skipped it (Matcher._try_edges) — one thread per
        #: instance, where keeping both made one per subset of the events taken. The
        #: synthetic TIMER step of an until ending at timer:interval with more pattern after
        #: it (compiler.esper until_timer) is its end, taken at the deadline only: not counted
        self.greedy = frozenset(s for s, m in auto.edges.items() if s != INITIAL and len(
            {edge.position.until for es in m.values() for edge in es} - {0}) == 1 and all(
            edge.position.until for t, es in m.items() if t != TIMER for edge in es))
        #: states whose edges are the alternatives of one Esper or of single events
        #: (Position.alt): the or quits when one of them reports (EvalOrStateNode), so an
        #: event takes the first alternative that fits (the lowest operand: edges are in
        #: writing order), and a run there that takes it does not also stay waiting for the
        #: others (Matcher._try_edges; an or of longer operands is a product, Position.track,
        #: whose operands do wait)
        self.alternatives = alternative_states(auto)
        #: Esper's ors run as alternatives (Position.side): per edge completing one —
        #: (source, type, target) — (the or, the alternative, whether the filter that takes
        #: the event started with the alternative: at its start event or a fresh step of an
        #: and, Position.fresh), and per or the states of its alternatives (Matcher._sides)
        self.side_done: dict[tuple[int, str, int], tuple[int, int, bool]] = {}
        self.side_states: dict[int, frozenset[int]] = {}
        anchors = {p.id for p in auto.positions if p.side and p.side[2] & SIDE_ANCHOR}
        for s, m in auto.edges.items():
            for t, es in m.items():
                for edge in es:
                    side = edge.position.side
                    if side is not None and side[2] & SIDE_DONE:
                        self.side_done[s, t, edge.target] = (
                            side[0], side[1], s in anchors or edge.position.fresh)
        for p in auto.positions:
            if p.side is not None:
                self.side_states[p.side[0]] = self.side_states.get(p.side[0], frozenset()) | {
                    p.id}
        #: the untils over a group (Position.group) whose states each state is one of: a run
        #: that leaves one's states ends its one instance for every run (Matcher._apply)
        self.groups = {s: g for s, m in auto.edges.items() if (g := frozenset(
            gid for es in m.values() for edge in es for gid in edge.position.group))}
        #: name prefixes of the variables of collected tags (loose_prefixes): of two threads
        #: of a partial match at one state that differ only in those, the one of the oldest
        #: events is Esper's one repetition instance (it took every operand result) and the
        #: other a run Esper does not have: Matcher._apply drops it (an until over a group,
        #: [k] P or a nested until, keeps one thread per state, not one per subset of its
        #: events; where nothing but the select list reads the tags it could never win)
        self.loose = loose_prefixes(auto)
        self.key_var = {s: next(iter(m.values()))[1] for s, m in self.key_index.items() if m}
        #: event types whose every transition is a plain keyed step (see _fast_paths)
        self.fast = self._fast_paths() if fast_path else {}
        #: Esper's ``every a = A(f) -> b = B(g, key) [within Δ]`` (runtime.shapes.EsperPair):
        #: stepped directly (Matcher._pair_step) and by the pair kernel
        self.pair: EsperPair | None = (esper_pair_of(self) or esper_distinct_pair_of(self)
                                       if fast_path else (esper_collect_of(self)
                                                          or esper_until_of(self)) if kernel
                                       else None)
        #: Esper's ``every (a = A(f) -> b = B(g[, key]))`` (runtime.shapes.EsperRestart): the
        #: restart kernel's shape (kernels/restart.py, in the program split)
        self.restart: EsperRestart | None = esper_restart_of(self) if fast_path else None
        #: Esper's spawned chain with ``and not`` (runtime.shapes.EsperConsec, temperature's
        #: Warning and Critical): the consecutive kernel's shape (kernels/consec.py, in the
        #: program split)
        self.consec: EsperConsec | None = (esper_consec_of(self) if fast_path
                                           and self.pair is None else None)
        #: Esper's ``every (a = A(f) and b = B(g[, key])) [within Δ]``
        #: (runtime.shapes.EsperAnd): the and kernel's shape (kernels/conj.py, in the split)
        #: (with a clock: EPL's guard restarted with the instance, kernels/restarted_and.py)
        #: (and EPL's every ((a -> b) where timer:within(Δ)): the same walk, EsperAnd.followed)
        self.esper_and: EsperAnd | None = (esper_and_of(self) if fast_path
                                           else esper_and_of(self) or restarted_pair_of(self)
                                           if restarted else None)
        #: Esper's missing event ``every a = A(f) -> (timer:interval(Δ) and not B(g, key))``
        #: (runtime.absence.EsperAbsence): stepped directly (Matcher._absence_step)
        self.absence: EsperAbsence | None = esper_absence_of(self) if fast_path else None
        #: Esper's ``every e = T(f)`` (one event per match): completed directly, inline in
        #: Matcher.process
        self.single = self._single_edge() if fast_path else None
        #: initial edges a plain keyed step starts (Matcher._fast_begin)
        self.fast_start = {
            t: es[0] for t, es in self.initial.items()
            if t in self.fast and len(es) == 1 and not es[0].final and es[0].position.filter
            is None and not es[0].enters and not es[0].position.zones
            and len({v for _, v in es[0].position.binds}) == len(es[0].position.binds)
            and es[0].target in self.key_var}
        #: Esper's select list when every item copies a variable (not ``@ts``, the match's
        #: time): their names, read from the bindings without evaluating (Matcher.result)
        svars = auto.select_vars if auto.select is not None else None
        self.select_copy: tuple[str, ...] | None = (
            tuple(v for v in svars if v is not None) if svars is not None
            and all(v is not None and v != "@ts" for v in svars) else None)
        #: the keyed-sequence shape of the chain kernel (runtime.shapes.Chain), or None
        self.chain: Chain | None = chain_of(self)
        #: a keyed chain of two stages or more steps its partial matches as rows
        #: (Matcher._row_step); per event type: its key's param, the stages it moves
        #: ``(state, target, filter)`` (``target`` FINAL: it completes) and the state a partial
        #: match it starts waits in (None: it starts none) with its filter, the window and the
        #: bindings (_row_plan). None: the token path
        self.row_plan: dict[str, RowStep] | None = (
            _row_plan(self.chain, pos_states, self.zone_by_id) if fast_path else None)
        #: a rowed chain whose filters read variables (runtime.shapes.Chain.cross): per
        #: event type, which of its moves' filters, and its start's, read them (Matcher.
        #: _cross_step); None: not such a chain
        self.row_cross: dict[str, CrossStep] | None = (
            _row_cross(self.chain, self.row_plan)
            if self.row_plan is not None and self.chain.cross else None)
        #: a rowed chain's NOTs (runtime.shapes.Chain.forbids) per event type they forbid: the
        #: states whose rows of its key it traps, with the type's key param and the NOT's
        #: filters (None: one without) — in the token path's order of states (Matcher.
        #: _forbid_step); None when the chain has no NOT or is not rowed
        self.row_forbids: dict[str, ForbidStep] | None = (
            _row_forbids(self.chain, neg_states) if self.row_plan is not None else None)
        #: a keyed sequence under immediate or strict (partitioned by its key or not): its
        #: shape (runtime.shapes.context_chain_of), stepped as rows with the noise disposal
        #: (Matcher._context_step) and by the chain kernel (kernels.noise); None: the token path
        self.context_chain: Chain | None = (context_chain_of(self)
                                            if fast_path and self.clock is None else None)
        #: a keyed sequence under unrestricted (runtime.shapes.unrestricted_chain_of):
        #: stepped as rows, every one of the key waiting for an event's stage taking it
        #: (Matcher._every_step) and by the chain kernel (kernels.every); None: the token path
        self.unrestricted_chain: Chain | None = (unrestricted_chain_of(self)
                                                 if fast_path and self.clock is None else None)
        #: of an unrestricted chain, per waiting state the states after it: a row waiting
        #: there holds a thread at that state too (the token path evaluates its filters)
        uc = self.unrestricted_chain
        self.unrestricted_later: dict[int, tuple[int, ...]] = (
            {} if uc is None else {ss[0]: tuple(x[0] for x in uc.waits[m + 1:])
                                   for m, ss in enumerate(uc.waits) if m})
        #: the plan of either per event type, as row_plan's (their entries' bindings maker is
        #: None: the key alone; an unrestricted chain's window is its entries' zone)
        self.context_plan: dict[str, RowStep] | None = (
            _row_plan(self.context_chain or self.unrestricted_chain, pos_states,
                      self.zone_by_id))
        self._sealed = True

    def __setattr__(self, name: str, value: Any) -> None:
        if getattr(self, "_sealed", False):
            raise AttributeError(f"a compiled pattern is read-only (setting {name})")
        object.__setattr__(self, name, value)

    def _fast_paths(self) -> dict[str, list[tuple[int, int, Edge]]]:
        """Event types whose every transition is a plain keyed step (the common case of a
        sequence unifying on one key under chronicle): no filter, zone, NOT, fork or new
        binding. For them a single-thread token moves in place without planning; the general
        path gives the same result (tests/runtime/test_fast_path.py checks one against the
        other)."""
        auto = self.auto
        if self.context is not Context.CHRONICLE or self.partitioned:
            return {}
        zones = {p.id: p.zones for p in auto.positions}
        zones.update({c: zones[s] for c, s in auto.restricted.items()})
        out: dict[str, list[tuple[int, int, Edge]]] = {}
        for t in [*self.pos_states, *(t for t in self.initial if t not in self.pos_states)]:
            if t in self.neg_states:
                continue
            entries = []
            for s in self.pos_states.get(t, ()):
                es = auto.edges[s][t]
                kt = self.key_index.get(s, {}).get(t)
                if len(es) != 1 or kt is None or self.out_degree[s] != 1:
                    break
                edge = es[0]
                if (edge.position.filter is not None or edge.enters or edge.exits
                        or s in auto.forbids or zones.get(s)
                        or edge.position.zones
                        or any(v != kt[1] for _, v in edge.position.binds)
                        # (the token moves in place, kept in its key's bucket: the target
                        # must wait on that same variable — `(b(x) -> a(y)){2}` waits on y
                        # after its second b)
                        or (not edge.final and self.key_var.get(edge.target) != kt[1])):
                    break
                entries.append((s, kt[0], edge))
            else:
                out[t] = entries
        return out

    def _single_edge(self) -> Edge | None:
        """The edge of ``every e = T(f)`` under Esper (spawn, one final step, ``f`` reading
        only ``e``, no window), whose every event passing ``f`` is a match; else None."""
        auto = self.auto
        edge = auto.spawn_edge()
        if edge is None or auto.zones or set(auto.edges) != {INITIAL}:
            return None
        pos = edge.position
        if (not edge.final or edge.enters or edge.exits or pos.every
                or (pos.filter is not None and not pos.local)
                or len({v for _, v in pos.binds}) != len(pos.binds)):
            return None
        return edge


def _row_plan(chain: Chain | None, pos_states: dict[str, list[int]], zones: dict[int, Zone]
              ) -> dict[str, RowStep] | None:
    """CompiledPattern.row_plan of a chain shape (None when it does not apply): per event
    type, its key's param (-1: unkeyed), the moves ``(state, target, filter)`` it may make —
    in the order the token path tries the states (``pos_states``), so filters are evaluated
    where it evaluates them — the state a partial match it starts waits in with that stage's
    filter (None: it starts none), the chain's window zone (or None) and how its matches'
    bindings are made (Chain.bindings, or None: the key's alone) — the constants of the row
    step, read from one tuple."""
    if chain is None or len(chain.stages) < 2:
        return None
    stage_of = chain.stage_of()
    zone = None if chain.zone is None else zones[chain.zone]
    bind = chain.bindings if chain.extra else None
    plan = {}
    for t in chain.types:
        moves = []
        for s in pos_states.get(t, ()):
            e = chain.stages[stage_of[s]][t]
            moves.append((s, FINAL if e.final else e.target, e.position.filter))
        first = chain.stages[0].get(t)
        plan[t] = (chain.key_param[t], tuple(moves), None if first is None else first.target,
                   None if first is None else first.position.filter, zone, bind)
    return plan



def _row_cross(chain: Chain, plan: dict[str, RowStep]) -> dict[str, CrossStep]:
    """CompiledPattern.row_cross of a rowed chain whose filters read variables: per event
    type, per move and for the start, whether its filter does (its position is not
    ``local``)."""
    reading = {id(e.position.filter) for alts in chain.stages for e in alts.values()
               if e.position.filter is not None and not e.position.local}

    def reads(flt: Any) -> bool:
        return id(flt) in reading

    return {t: (tuple(reads(f) for _, _, f in moves), reads(bflt))
            for t, (_, moves, _, bflt, _, _) in plan.items()}


def _row_forbids(chain: Chain | None, neg_states: dict[str, list[int]]
                 ) -> dict[str, ForbidStep] | None:
    """CompiledPattern.row_forbids of a rowed chain (None without a NOT): per forbidden type,
    the states at which it traps the rows of its key, in ``neg_states``' order (the order the
    token path's _negatives visits them), each with the type's key param (-1: an unkeyed
    chain; None: a NOT of any key, which traps the rows of every key) and its NOTs'
    filters, tried in order until one holds (Matcher._forbidden; None for a NOT without a
    filter, which always holds) — the whole None when the first has none (every event of the
    type is forbidden, no filter tried)."""
    if chain is None or not chain.forbids:
        return None
    stage_of = chain.stage_of()
    out: dict[str, ForbidStep] = {}
    for t, states in neg_states.items():
        steps = []
        for s in states:
            m = stage_of[s]
            poss = chain.forbids[m][t]
            flts = None if poss[0].filter is None else tuple(p.filter for p in poss)
            steps.append((s, None if chain.every_key(m, t) else chain.key_param[t], flts))
        out[t] = tuple(steps)
    return out


def loose_prefixes(auto: Automaton) -> tuple[str, ...]:
    """The name prefixes (``a[``, ``_a.``, ``_a[``: the k-th events' fields, the current
    event's, the count) of each tag collected in a repetition. Empty without such tags, and
    under every-distinct (its keys read the bindings when an instance begins)."""
    tags = sorted({p.collect.alias for p in auto.positions if p.collect is not None})
    if not tags or auto.distinct:
        return ()
    return tuple(x for t in tags for x in (f"{t}[", f"_{t}.", f"_{t}["))
