"""Which column kernel fits a compiled pattern: the shapes the kernels recognise in an
automaton (Chain: a keyed sequence under chronicle, for kernels.chain; EsperPair: Esper's
``every a = A(f) -> b = B(g, key) [within Δ]``, its chains and a last stage of alternatives
``-> (b = B(g) or c = C(h) …)``, for kernels.pair; EsperRestart: Esper's
``every (a = A(f) -> b = B(g[, key]))``, for kernels.restart). Facts of the compiled pattern,
computed once (runtime.compiled)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from cepflow.automaton.automaton import FINAL, INITIAL, TRAP
from cepflow.automaton.context import Context
from cepflow.compiler.evaluator import can_fail
from cepflow.language.tags import index_name
from cepflow.runtime.reach import Reach, reach_of


@dataclass
class Chain:
    """A compiled pattern whose automaton is a keyed sequence of stages (see :func:`chain_of`):
    at each stage one of its alternatives, single events of distinct types."""

    #: per stage, its alternatives: event type -> the edge it takes (``A -> (B OR C)``: two
    #: alternatives at stage 1); a type may recur at several stages, with the same key field
    stages: tuple[dict[str, Any], ...]
    #: per event type, the param holding the key (-1: an unkeyed chain, ``var`` None)
    key_param: dict[str, int]
    #: the key variable every position binds, or None: an unkeyed chain (``A -> (B OR C)``),
    #: whose partial matches all wait on one key, None (the token path's one bucket)
    var: str | None
    #: waits[m]: the states where partial matches wait for stage m (``waits[0]`` is the
    #: initial state; a stage after alternatives is waited for at one state per alternative)
    waits: tuple[tuple[int, ...], ...]
    #: the window ``[Δ]`` over the whole sequence (ms) and its zone, or None
    window: float | None = None
    zone: int | None = None
    #: the variables the stages bind besides the key (each bound at one stage: no
    #: unification; read by filters — a later stage's only in a :attr:`cross` chain — and
    #: the complex event's parameters): per stage and type, ``(param, variable)``
    #: — the first stage's with the key, in the position's order — so a partial match's
    #: bindings are made from its events (:meth:`bindings`); empty when there are none (an
    #: unkeyed chain has it always: its bindings are not ``{var: key}``)
    extra: tuple[dict[str, tuple[tuple[int, str], ...]], ...] = ()
    #: NOTs between the stages (``A(x) -> NOT C(x) -> B(x)``): per stage m, the event types
    #: forbidden while a partial match waits for it, each with its forbidding positions in
    #: the automaton's order (each reads only its event and binds the key alone — or nothing:
    #: in an unkeyed chain, and a NOT of any key, ``NOT C(_, _)``, :meth:`every_key` — and
    #: leads to the trap); () when there are none. The key fields of the keyed ones are in
    #: ``key_param``
    forbids: tuple[dict[str, tuple[Any, ...]], ...] = ()
    #: a tree, not a line (``A(x) AND B(x)``: runtime.shapes._tree): per stage — here one
    #: waiting state each, its edges leading to different stages — the events a partial
    #: match waiting for it holds; () for a linear chain, whose stage m holds m
    depths: tuple[int, ...] = ()
    #: a stage's filter reads variables, not only its event's fields (``B(x, w) where w <
    #: u``, ``u`` bound at an earlier stage; docs/architecture.md "Filters that read earlier
    #: stages"): it is tried row by row, with each partial match's bindings
    #: (Matcher._cross_step); the column kernels do not take such a chain
    cross: bool = False

    @property
    def length(self) -> int:
        """The events of a match."""
        return max(self.depths) + 1 if self.depths else len(self.stages)

    def held(self, m: int) -> int:
        """The events a partial match waiting for stage ``m`` holds."""
        return self.depths[m] if self.depths else m

    def after(self, m: int, t: str) -> int:
        """The stage a partial match waits for after an event of type ``t`` at stage ``m``
        (``len(stages)``: it completes)."""
        e = self.stages[m][t]
        if e.final:
            return len(self.stages)
        return m + 1 if not self.depths else self.stage_of()[e.target]

    @property
    def own(self) -> bool:
        """Whether a stage binds a variable besides the key (the bindings are not the key's
        alone, nor empty for an unkeyed chain)."""
        return any(v != self.var for alts in self.extra for binds in alts.values()
                   for _, v in binds)

    @property
    def columnar(self) -> bool:
        """Whether the chain kernel takes it: not a :attr:`cross` chain, or one whose stages
        are each one type, at no other stage — each stage then waits at one state, whose
        partial matches the kernel tries oldest first as the token path's _find tries them
        (kernels.queues.step_chain's ``cross``); else the row step, per event."""
        return not self.cross or (all(len(alts) == 1 for alts in self.stages)
                                  and len(self.types) == len(self.stages))

    @property
    def types(self) -> tuple[str, ...]:
        """The event types of the stages, each once, in the order they first come."""
        return tuple(dict.fromkeys(t for alts in self.stages for t in alts))

    def every_key(self, m: int, t: str) -> bool:
        """Whether the NOTs of type ``t`` at stage ``m`` trap the partial matches of every
        key (a keyed chain's NOT that binds nothing, ``NOT C(_, _)``), not only of the event's
        (an unkeyed chain's partial matches are all of one key, None)."""
        return self.var is not None and not self.forbids[m][t][0].binds

    @property
    def queued(self) -> bool:
        """Whether the numpy queue kernel (:func:`run_chain`) applies: each type at one stage
        and no window (filters only drop rows; a NOT's rows clear a queue, run_chain's
        ``clears``); else :func:`step_chain` steps the rows."""
        n = sum(len(alts) for alts in self.stages)
        return self.window is None and len(self.types) == n and not self.depths

    def stage_of(self) -> dict[int, int]:
        """The stage a partial match waiting at a state waits for."""
        return {s: m for m, ss in enumerate(self.waits) for s in ss}

    def binding_fields(self) -> tuple[tuple[str, ...], tuple[tuple[int, int], ...]] | None:
        """Where a match's bindings (:meth:`bindings`) are, whatever path it took (one
        alternative per stage): their names in the token path's order and per name
        ``(stage, k)``, field k of its event at that stage, or ``(-1, 0)`` the key value;
        None when a stage has alternatives (the names would depend on the path) or the chain
        is a tree."""
        if self.depths or any(len(alts) != 1 for alts in self.stages):
            return None
        where: dict[str, tuple[int, int]] = {}
        for m, alts in enumerate(self.stages if self.extra else ()):  # (none: the key only)
            for t in alts:
                for i, v in self.extra[m].get(t, ()):
                    where.setdefault(v, (-1, 0) if v == self.var else (m, i))
        if self.var is not None and self.var not in where:
            where = {self.var: (-1, 0), **where}
        return tuple(where), tuple(where.values())

    def bindings(self, key: Any, events: Any) -> dict[str, Any]:
        """The bindings of a partial match or match that took ``events`` (its first with key
        value ``key``): the key, then the extra variables in the order the token path binds
        them (runtime.binding.bind: stage by stage, each position's in its order)."""
        extra = self.extra
        if not extra:
            return {self.var: key}
        out: dict[str, Any] = {}
        var = self.var
        for m, e in enumerate(events):
            for i, v in extra[m].get(e.type, ()):
                out[v] = key if v == var else e.params[i]
        if var is not None and var not in out:  # (events not the chain's: a hand-written
            out = {var: key, **out}  # state)
        return out



#: the most stages the chain kernel takes: an event's stages are a bit mask in an int64
MAX_CHAIN = 62



def chain_of(pattern: Any) -> Chain | None:
    """The chain shape of a compiled pattern (runtime.compiled), or None if its automaton is
    not a keyed sequence under chronicle: stages of alternatives — per stage one edge per
    event type, every waiting state of a stage with the same edges, all of a stage's
    alternatives final or none — each binding the one key variable (a type may recur at
    several stages with the same key field), or no variable all of them bind (unkeyed: one
    key, None), and possibly variables of its own (each bound at one stage) that filters and
    the complex event's parameters may read — the key at any place among them, or none —,
    and at most one ``within`` window around the whole sequence; no other zone; NOTs between
    stages that forbid events of the key (:func:`_forbids`). Or, not a line, a tree of such
    steps (:func:`_tree`: ``A(x) AND B(x)``, a stage per waiting state). One edge per state
    and type keeps a partial match one run (no thread forks: ``B OR B where …`` is not
    taken), so under chronicle an event goes to the oldest partial match of its key waiting
    for one of its stages whose filter it passes — with a filter reading variables
    (:attr:`Chain.cross`; no NOT, no tree) the oldest whose bindings let it pass."""
    if pattern.context is not Context.CHRONICLE or pattern.partitioned:
        return None
    return _keyed_sequence(pattern)


def _keyed_sequence(pattern: Any) -> Chain | None:
    """:func:`chain_of` whatever the pattern's context and partitioning."""
    auto = pattern.auto
    if (len(auto.zones) > 1 or auto.distinct or auto.select is not None
            or pattern.clock is not None):
        return None
    zone = auto.zones[0] if auto.zones else None
    if zone is not None and (zone.kind != "within" or zone.timer_accept or zone.after
                             or zone.whole):
        return None
    zid = () if zone is None else (zone.id,)
    walked = _stages(auto, zid) or _tree(auto, zid)
    if walked is None:
        return None
    stages, waits, seen, depths = walked
    # the key: the one variable every position binds, wherever it is among the complex
    # event's parameters, or none of them (``P(x, y) { as A(x, y) -> B(y, _) }``: y;
    # ``P(y) { as A(x, y) -> B(x, _) }``: x) — chronicle unifies an event with the oldest
    # partial match binding its value, whatever the parameters; the others are a stage's own
    common = set.intersection(*({v for _, v in e.position.binds}
                                for alts in stages for e in alts.values()))
    if len(common) > 1:
        # (several: of more stages a unification, declined below; a one-stage chain's key is
        # the first parameter among them, else the first its first position binds)
        first = [v for alts in stages[:1] for e in alts.values() for _, v in e.position.binds]
        common = {next(v for v in (*auto.params, *first) if v in common)}
    var = next(iter(common), None)  # (None: no variable every position binds, unkeyed)
    key_param: dict[str, int] = {}
    extra: list[dict[str, tuple[tuple[int, str], ...]]] = []
    owner: dict[str, int] = {}  # extra variable -> the stage that binds it
    for m, alts in enumerate(stages):
        own = {}
        for t, e in alts.items():
            i = next((i for i, v in e.position.binds if v == var), -1)
            if key_param.setdefault(t, i) != i:
                return None
            binds = tuple((i, v) for i, v in e.position.binds if v != var)
            for _, v in binds:
                if owner.setdefault(v, m) != m:
                    return None  # (bound at two stages: a unification, not the stage's own)
            if binds or m == 0:
                own[t] = tuple(e.position.binds) if m == 0 else binds
        extra.append(own)
    if any(p != var and p not in owner for p in auto.params):
        return None  # (a parameter no stage binds for itself: a unification, or none)
    if not owner and var is not None:
        extra = []
    cross = any(e.position.filter is not None and not e.position.local
                for alts in stages for e in alts.values())
    if depths and (owner or cross):
        return None  # (a tree's bindings would not follow its stages: not done)
    if zone is not None and zone.last & seen:
        return None
    forbids = _forbids(auto, waits, var, key_param)
    if forbids is None or (cross and forbids):
        return None  # (a NOT beside a filter reading bindings: Matcher._cross_step has none)
    return Chain(tuple(stages), key_param, var, tuple(waits),
                 None if zone is None else float(zone.length),
                 None if zone is None else zone.id,
                 tuple(extra), forbids, depths, cross)


def _plain(e: Any, zid: tuple[int, ...], first: bool) -> bool:
    """Whether an edge is a chain's: a plain VEPL step (no Esper every, tag, and, or) inside
    the window ``zid`` (entered by the first step, left by the final one), binding each
    variable once. Its filter may read variables (Chain.cross: tried with the bindings)."""
    pos = e.position
    return not (pos.every or pos.collect is not None or pos.conj is not None
                or pos.track is not None or pos.zones != zid
                or e.enters != (zid if first else ()) or e.exits != (zid if e.final else ())
                or len({v for _, v in pos.binds}) != len(pos.binds))


def _stages(auto: Any, zid: tuple[int, ...]) -> tuple[Any, ...] | None:
    """A linear chain's stages, the states waiting for each, the states met and () (its
    depths are its stage numbers), or None."""
    stages: list[dict[str, Any]] = []
    waits: list[tuple[int, ...]] = [(INITIAL,)]
    seen = {INITIAL}
    while True:
        group = waits[-1]
        out = auto.edges.get(group[0], {})
        if not out or any(_signature(auto.edges.get(s, {})) != _signature(out)
                          for s in group[1:]):
            return None
        alts: dict[str, Any] = {}
        for t, es in out.items():
            if len(es) != 1 or not _plain(es[0], zid, len(stages) == 0):
                return None
            alts[t] = es[0]
        if len({e.final for e in alts.values()}) != 1:
            return None
        stages.append(alts)
        if len(stages) > MAX_CHAIN:
            return None  # (the stages of an event are bits of an int64)
        if next(iter(alts.values())).final:
            break
        nxt = tuple(dict.fromkeys(e.target for e in alts.values()))
        if seen & set(nxt):
            return None
        seen.update(nxt)
        waits.append(nxt)
    return stages, waits, seen, ()


def _tree(auto: Any, zid: tuple[int, ...]) -> tuple[Any, ...] | None:
    """A keyed automaton that is not a linear chain but a tree (``A(x) AND B(x)``: after
    ``A`` it waits for ``B``, after ``B`` for ``A``): every waiting state its own stage
    (breadth first from the initial state), entered by one edge only — so a state's partial
    matches arrive oldest first, as they leave the one state before it — one edge per type
    out of each, and every match as long (the final edges at one depth). Its stages, the
    states waiting for each, the states met and per stage the events a partial match waiting
    there holds; or None."""
    stages: list[dict[str, Any]] = []
    order = [INITIAL]
    depth = {INITIAL: 0}
    length = None
    for s in order:  # (grows as the states are met)
        out = auto.edges.get(s, {})
        if not out:
            return None
        alts: dict[str, Any] = {}
        for t, es in out.items():
            e = es[0]
            if len(es) != 1 or not _plain(e, zid, s == INITIAL):
                return None
            alts[t] = e
            if e.final:
                if length not in (None, depth[s] + 1):
                    return None
                length = depth[s] + 1
            elif e.target in depth:
                return None  # (entered twice, or a loop)
            else:
                depth[e.target] = depth[s] + 1
                order.append(e.target)
        stages.append(alts)
        if len(stages) > MAX_CHAIN:
            return None
    if not set(auto.edges) <= depth.keys():
        return None
    return stages, [(s,) for s in order], set(order), tuple(depth[s] for s in order)


def _forbids(auto: Any, waits: list[tuple[int, ...]], var: str | None,
             key_param: dict[str, int]) -> tuple[dict[str, tuple[Any, ...]], ...] | None:
    """:attr:`Chain.forbids` of a keyed sequence whose stages wait at ``waits`` (() without a
    NOT), or None when a NOT is not of the form the row step and the kernel mirror: at a
    state a partial match waits in (every state of a stage with the same NOTs), leading to
    the trap (not to a restricted copy), reading only its event, unifying with the key alone
    (an unkeyed chain: binding nothing) at the field its type's key is read from elsewhere —
    or, in a keyed chain, binding nothing (``NOT C(_, _)``: of any key, Chain.every_key), when
    every NOT of its type at the state does. What the token path does with such a NOT
    (Matcher._negatives): an event it forbids traps every partial match of its key (of any
    key: no variable indexes the state for the type, so _groups gives every bucket, and the
    NOT unifies with every partial match) waiting at the state, but the one that has just
    taken the event. A keyed NOT's key field is added to ``key_param``."""
    if not auto.forbids:
        return ()
    if not set(auto.forbids) <= {s for ss in waits[1:] for s in ss}:
        return None
    out: list[dict[str, tuple[Any, ...]]] = []
    for group in waits:
        sigs = {tuple((t, tuple((f.position.id, f.target) for f in fs))
                      for t, fs in auto.forbids.get(s, {}).items()) for s in group}
        if len(sigs) != 1:
            return None
        at = auto.forbids.get(group[0], {})
        for t, fs in at.items():
            if var is not None and len({not f.position.binds for f in fs}) > 1:
                return None  # (of any key and of the key: the token path tries them by thread)
            for f in fs:
                pos = f.position
                if (f.target != TRAP or pos.every or pos.collect is not None
                        or pos.conj is not None or pos.track is not None
                        or (pos.filter is not None and not pos.local)):
                    return None
                if var is not None and not pos.binds:
                    continue  # (of any key: it reads no key field)
                if var is None:
                    if pos.binds:
                        return None
                    i = -1
                elif len(pos.binds) != 1 or pos.binds[0][1] != var:
                    return None  # (no key, or another variable too: not the key's NOT)
                else:
                    i = pos.binds[0][0]
                if key_param.setdefault(t, i) != i:
                    return None
        out.append({t: tuple(f.position for f in fs) for t, fs in at.items()})
    return tuple(out)


def _signature(out: dict[str, list[Any]]) -> dict[str, tuple[Any, ...]]:
    """What a state's edges do (per type: each edge's position and target): the waiting
    states of one stage must agree on it."""
    return {t: tuple((e.position.id, e.target, e.final) for e in es) for t, es in out.items()}



def context_chain_of(pattern: Any) -> Chain | None:
    """The keyed sequence of a pattern under immediate or strict (docs/architecture.md, "Keyed
    sequences under immediate and strict"): :func:`chain_of`'s shape of two stages or more,
    one type per stage, no window, no variable besides the key and no filter reading one,
    not partitioned or
    partitioned by its key variable; or None (the token path)."""
    if pattern.context not in (Context.IMMEDIATE, Context.STRICT):
        return None
    c = _keyed_sequence(pattern)
    if (c is None or c.extra or c.forbids or c.depths or c.cross or len(c.stages) < 2
            or (pattern.partitioned and tuple(pattern.auto.partition_by) != (c.var,))):
        return None
    return c



def unrestricted_chain_of(pattern: Any) -> Chain | None:
    """A keyed sequence under unrestricted (docs/architecture.md, "Keyed sequences under
    unrestricted"): two stages or more, one type per stage binding the one key variable and no
    other, each type at one stage after the first at most (it may also start one: ``A(x) ->
    A(x)``), filters reading only their event, no NOT; windows either only around the last
    atom (entered and left by its one event, so never exceeded: ``A(x) -> B(x)[5 s]``) or one
    ``within`` around the whole sequence (``(A(x) -> B(x) -> C(x))[5 s]``, :attr:`Chain.zone`);
    not partitioned or partitioned by the key. A partial match then holds a thread at every
    state it reached, each with the first events of the deepest one (the token path merges the
    later runs into them), so a row of its deepest events models it; or None (the token
    path)."""
    auto = pattern.auto
    if (pattern.context is not Context.UNRESTRICTED or auto.forbids or auto.distinct
            or auto.select is not None or pattern.clock is not None
            or any(z.kind != "within" or z.timer_accept for z in auto.zones)):
        return None
    stages: list[dict[str, Any]] = []
    waits: list[tuple[int, ...]] = [(INITIAL,)]
    key_param: dict[str, int] = {}
    var: str | None = None
    edges = []
    while True:
        out = auto.edges.get(waits[-1][0], {})
        if len(out) != 1 or len(next(iter(out.values()))) != 1:
            return None
        (t, (e,)), = out.items()
        pos = e.position
        if (len(pos.binds) != 1 or pos.every or pos.collect is not None or pos.track is not None
                or pos.conj is not None or (pos.filter is not None and not pos.local)):
            return None
        i, v = pos.binds[0]
        if (var is not None and v != var) or key_param.setdefault(t, i) != i:
            return None
        var = v
        stages.append({t: e})
        edges.append(e)
        if e.final:
            break
        if e.target in {s for ss in waits for s in ss} or len(stages) > MAX_CHAIN:
            return None
        waits.append((e.target,))
    later = [t for alts in stages[1:] for t in alts]
    if (len(stages) < 2 or len(set(later)) != len(later)
            or any(p != var for p in auto.params)
            or (pattern.partitioned and tuple(auto.partition_by) != (var,))):
        return None
    zone = _whole_window(auto, edges, waits)
    if zone is False:
        return None
    return Chain(tuple(stages), key_param, var, tuple(waits),
                 None if zone is None else float(zone.length),
                 None if zone is None else zone.id)


def _whole_window(auto: Any, edges: list[Any], waits: list[tuple[int, ...]]) -> Any:
    """The ``within`` zone around a whole unrestricted sequence (entered by its first edge,
    left by its last, every position inside, no waiting state among the zone's last), None
    when its zones are only around the last atom (each entered and left by that one event,
    never exceeded), else False."""
    last = edges[-1]
    if all(not e.enters and not e.exits and not e.position.zones for e in edges[:-1]) and (
            last.enters == last.exits == last.position.zones
            and not any(z.exceeded(0) for z in auto.zones)):
        return None
    if len(auto.zones) != 1:
        return False
    z = auto.zones[0]
    zid = (z.id,)
    if (z.open_end or any(e.position.zones != zid for e in edges)
            or edges[0].enters != zid or last.exits != zid
            or any(e.enters or e.exits for e in edges[1:-1])
            or (len(edges) > 1 and edges[0].exits) or last.enters
            or z.last & {s for ss in waits for s in ss}):
        return False
    return z



@dataclass
class EsperPair:
    """A compiled pattern whose automaton is Esper's ``every a = A(f) -> b = B(g)`` (compiler.esper:
    start policy *spawn*), ``B`` unified with ``a`` on one key, optionally in ``within Δ``;
    ``f`` reads only its own event — or the longer chain ``every a = A(f) -> b = B(g) -> c =
    C(h) …`` whose later stages each unify with ``a`` on that key and read only their own
    event — or a single stage ``every a = A(f)`` (no key: each ``A`` passing ``f`` is a
    match). Each ``A`` passing ``f`` opens an instance; it takes the first later event of the
    next stage's type and key passing that stage's filter, and completes at the last stage no
    later than Δ after the ``A`` (Esper: events are not consumed, so instances do not compete),
    else it expires."""

    first: Any  # Edge from the initial state
    second: Any  # final Edge
    state: int  # where instances wait for the second stage
    key_a: int  # param of A binding the key variable
    key_b: int  # param of B unified with it
    window: float  # Δ in ms (inf without a within zone)
    zone: int | None
    key_var: str | None  # the key variable (bound by A, unified by B; None: a pair without)
    #: B's other bindings (param, variable): the ones it adds to A's
    b_new: tuple[tuple[int, str], ...]
    #: ``g`` reads only B's own fields, so the column kernel applies (else ``g`` also reads
    #: ``a``'s fields and only the matcher's per-event step does)
    columnar: bool = True
    #: every stage's edge, ``first`` to ``second`` (two for a pair)
    stages: tuple[Any, ...] = ()
    #: ``states[j]``: where instances wait for stage ``j + 1`` (``states[0]`` is ``state``)
    states: tuple[int, ...] = ()
    #: per stage, the param of its event holding the key (``keys[0]`` is ``key_a``)
    keys: tuple[int, ...] = ()
    #: per stage, the bindings (param, variable) it adds to the earlier stages'
    new: tuple[tuple[tuple[int, str], ...], ...] = ()
    #: two stages on a key (or ``a`` and alternatives on a key): the matcher's direct
    #: per-event step (Matcher._pair_step) applies (a field, not a property: Matcher.process
    #: reads it per event)
    is_pair: bool = True
    #: a pair's guard conjunct ``x - a.y <= k`` (runtime.reach): which waiting instances an
    #: event can still reach, for the matcher's index and the kernel's cut-off; or None
    reach: Reach | None = None
    #: a last stage of alternatives, ``every a = A(f) -> (b = B(g) or c = C(h) …)``: per
    #: alternative, in the order that wins a tie (:func:`_preference`), the chain ending with
    #: it (``stages`` above are the stages before them); () when the last stage is one event
    alts: tuple[EsperPair, ...] = ()
    #: per type of an alternative, its alternatives in the automaton's order (the order the
    #: token path evaluates their filters), each with its place in ``alts``
    by_type: dict[str, tuple[tuple[int, EsperPair], ...]] = field(default_factory=dict)
    #: the stage whose event opens the ``within`` window (:func:`_guard`): 0, ``a``'s, for a
    #: window around everything after ``a``; later for a guard on the later stages alone —
    #: an instance's deadline is then that stage's event's time plus Δ, and the stages up
    #: to it wait without one
    zone_at: int = 0
    #: the last stage inside the window (:func:`_guard`): None, the last stage (or the
    #: alternatives); earlier for a window around middle stages (``every a = A -> (b = B(…)
    #: where timer:within(Δ)) -> c = C(…)``), which the next stage's edge leaves — the
    #: stages after it have no deadline, and the deadline leaves an instance waiting for
    #: that next stage alone (the zone's ``last``)
    zone_to: int | None = None
    #: an Esper ``or`` some of whose operands are sequences (compiler.conjunction's product,
    #: :func:`_with_product`): the hidden variable recording which operands took each event
    #: (``matcher._or_step``); ``alts`` are then the operands' chains in operand order (an
    #: event completing several completes the lowest), and ``product`` maps (the operand bit
    #: mask of the step an instance took last, per operand the events it took) to the state
    #: where the instance waits. None otherwise
    track: str | None = None
    product: dict[tuple[int, tuple[int, ...]], int] = field(default_factory=dict)
    #: an Esper ``and`` of chains after the stages (:func:`_with_product`): ``alts`` and
    #: ``product`` as for an or of sequences, but an instance completes when every operand
    #: has, at the latest of their rows, and its match holds every operand's events (one
    #: per row, in time order) and bindings; no hidden variable (``track`` None)
    conj: bool = False
    #: Esper's ``every`` on the last stage, ``every a = A(f) -> every b = B(g, key) [within
    #: Δ]`` (:func:`_fork`): an instance takes *every* later event of its key passing ``g``
    #: within Δ, each a match of its own (the token path forks it: Matcher._spawn, a token
    #: id per match), and keeps waiting until its deadline. A pair otherwise (two stages, no
    #: alternatives); only the pair kernel takes it — not the split, not over derived events
    fork: bool = False
    #: per stage, Esper's repeated tag it collects (``every a = A(f) -> [n] b = B(g, key)``,
    #: :func:`esper_collect_of`: the stages ``B`` … ``B`` each with the tag's ``Collect``),
    #: else None; () when no stage collects. A collecting stage's ``new`` are the indexed
    #: names its event assigns (``b[k].<field>``: what a select list reads); its bindings are
    #: made by runtime.binding.collect, as the token path makes them
    collects: tuple[Any, ...] = ()
    #: alternatives before more stages, ``every a = A(f) [-> b …] -> (x = X(g) or y = Y(h)
    #: …) -> d = D(k)`` (:func:`_with_branch`) — or from the start, ``every (x = X(g) or y =
    #: Y(h) …) -> d = D(k)`` (:func:`_leading_branch`, ``branch`` 0) —: the stage of the
    #: alternatives and per alternative, in the order that wins a tie (:func:`_preference`),
    #: the whole chain through it (``paths[0]`` is this chain itself; none: no such
    #: alternatives). An instance takes the first later row of any alternative, then the
    #: rest of the chain from there (kernels.branch: the token path keeps a thread per
    #: alternative event it saw)
    branch: int = 0
    paths: tuple[EsperPair, ...] = ()
    #: Esper's ``until`` after a stage, ``every a = A(f) -> ([m:n] b = B(g, key) until c =
    #: C(h, key)) [where timer:within(Δ)]`` (:func:`esper_until_of`): how its instances
    #: count, trap and complete; this shape is then the chain of its shortest match (``a``,
    #: ``m`` times ``b``, ``c``), only the pair kernel takes it (kernels.until) and per event
    #: the token path steps it. None otherwise
    until: EsperUntil | None = None

    @property
    def operands(self) -> bool:
        """Whether the last stage is a product of operands side by side (an or of sequences
        or an and: kernels.orseq)."""
        return self.conj or self.track is not None

    @property
    def first_zone(self) -> int | None:
        """The zone the instances waiting for their second stage are in (the kernel's
        pending rows, runtime.tokens.PendingRows): None when the window opens later."""
        return self.zone if self.zone_at == 0 else None



def esper_pair_of(pattern: Any) -> EsperPair | None:
    """The pair (or chain) shape of a compiled pattern, or None if its automaton is not of that
    shape. A chain of more than two stages is taken only when every filter reads only its own
    event (the column kernel's case); a pair also when ``g`` reads ``a``'s fields. Its last
    stage may be alternatives of one event each (:func:`_with_alternatives`)."""
    auto = pattern.auto
    a = auto.spawn_edge()  # (context esper, spawn, not partitioned, no clock, one first edge)
    if a is not None and a.final:  # a single stage, every e = T(f): each event passing f
        return _single_stage(auto, a)
    if a is None:
        return _first_alternatives(auto) or _leading_branch(pattern)
    if a is None or a.exits:
        return None
    if a.position.filter is not None and not a.position.local:
        return None
    stages, states = [a], [a.target]
    alts: list[Any] = []
    while True:
        e = _only_edge(auto, states[-1])
        if e is None:  # (a last stage of alternatives, each a final edge)
            alts = _alternatives(auto, states[-1])
            if not alts:  # (alternatives before one more stage; an or of sequences: its
                # product)
                return (_with_branch(pattern, stages, states)
                        or _with_product(pattern, stages, states))
            break
        if e.position.every:  # (an inner every: the fork after a alone, else where a
            # window may open: _guard)
            return _fork(pattern, stages, states, e)
        stages.append(e)
        if e.final:
            break
        if e.target in states or e.target == INITIAL:  # (a window's exit: _guard)
            return None
        states.append(e.target)
    if set(auto.edges) != {INITIAL, *states}:
        return None
    if alts:
        return _with_alternatives(pattern, stages, states, alts)
    return _stages_shape(pattern, stages, states)


def _fork(pattern: Any, stages: list[Any], states: list[int], e: Any) -> EsperPair | None:
    """The shape ``every a = A(f) -> every b = B(g, key) [within Δ]`` (:attr:`EsperPair.fork`):
    ``e``, the edge after ``a`` alone, is the inner every's and completes the pattern, ``g``
    reads only its event, the window (if any) opens at ``a``; else None. ``is_pair`` is off:
    per event the token path forks the instances (Matcher._process_esper)."""
    pos = e.position
    if (len(stages) != 1 or not e.final or pos.collect is not None or pos.conj is not None
            or pos.track is not None or set(pattern.auto.edges) != {INITIAL, *states}):
        return None
    view = _stages_shape(pattern, [*stages, e], states)
    if view is None or not view.columnar or view.zone_at or view.zone_to is not None:
        return None
    return replace(view, fork=True, is_pair=False)


def esper_collect_of(pattern: Any) -> EsperPair | None:
    """The chain shape of ``every a = A(f) -> [n] b = B(g, key) [-> …] [where
    timer:within(Δ)]`` (:attr:`EsperPair.collects`): the compiler unrolls ``[n] b`` to ``n``
    stages of ``B`` that collect the tag ``b``; an instance takes them as a chain's stages
    (the first later row of its key passing ``g``, each), and only its bindings differ — each
    collecting stage assigns ``b[k].<field>`` (k: the collecting stages of ``b`` before it),
    the current event's variables and the count. Taken when the pattern is otherwise a plain
    chain on one key whose later stages read only their own event (no alternatives, no
    product, no inner every, no distinct keys) and a collecting stage binds nothing but the
    key; else None. ``is_pair`` is off: per event the token path steps it."""
    shape = esper_pair_of(pattern)  # (None under every-distinct: Automaton.spawn_edge)
    if (shape is None or shape.alts or shape.operands or shape.fork or shape.key_var is None
            or shape.reach is not None or len(shape.stages) < 2
            or not all(e.position.filter is None or e.position.local
                       for e in shape.stages[1:])):
        return None
    if shape.stages[0].position.collect is not None or not any(
            e.position.collect for e in shape.stages):
        return None
    return _collected(shape)


def _collected(shape: EsperPair) -> EsperPair | None:
    """``shape`` (a chain) with its collecting stages' bindings named as a select list reads
    them (:attr:`EsperPair.collects`): the k-th collecting stage of tag ``b`` gives
    ``b[k].<field>``; None when such a stage binds more than the key."""
    collects = tuple(e.position.collect for e in shape.stages)
    new = list(shape.new)
    taken: dict[str, int] = {}
    for j, c in enumerate(collects):
        if c is None:
            continue
        if new[j]:  # (a repeated tag assigns its fields; it unifies only the key)
            return None
        k = taken.get(c.count, 0)
        taken[c.count] = k + 1
        head = index_name(c.alias, k)
        new[j] = tuple((i, f"{head}.{f}") for i, f in enumerate(c.fields))
    return replace(shape, collects=collects, new=tuple(new), is_pair=False)


@dataclass
class EsperUntil:
    """Esper's ``[m:n] b = B(g, key) until c = C(h, key)`` after ``every a = A(f)``
    (compiler.esper lowers it to ``m`` times ``B`` with ``NOT C`` in every gap, then up to
    ``n - m`` more ``B`` or ``C``; ``[n] b until c``: ``n`` times ``B`` with ``NOT C`` in every
    gap, completing at the n-th). Per event the token path keeps one thread per instance,
    Esper's one until instance (CompiledPattern.greedy: a state whose edges are all the
    until's takes each ``B`` without keeping a run that skipped it, Matcher._try_edges), and a
    ``C`` completes it with the first ``min(count, n)`` of its key's ``b`` or, below ``m``,
    traps it (the ``NOT C``)."""

    low: int  # m
    high: int | None  # n (None: no bound)
    #: a ``C`` completes the instance (else ``[n] b until c``: the n-th ``b`` does)
    closes: bool
    #: where an instance holding k ``b`` waits (k past the end: the last, a ``B`` loop)
    states: tuple[int, ...]
    b_edge: Any  # the first ``B`` edge (type, key, filter: every ``B`` edge's alike)
    #: a ``C`` edge completing, or (``[n] b until c``) the ``NOT C`` trapping (a Forbid):
    #: its position's type, key and filter are every ``C``'s
    c_at: Any
    c_key: int  # the param of ``C`` holding the key
    #: per count k (from 0), the chain of a match holding k ``b`` (``a``, ``b`` … , ``c``)
    views: dict[int, EsperPair] = field(default_factory=dict, compare=False, repr=False)
    #: makes a view (:func:`_until_view`)
    make: Any = field(default=None, compare=False, repr=False)

    def view(self, k: int) -> EsperPair:
        """The chain of a match holding ``k`` ``b`` (made once)."""
        v = self.views.get(k)
        if v is None:
            v = self.views[k] = self.make(k)
        return v


def esper_until_of(pattern: Any) -> EsperPair | None:
    """The shape of ``every a = A(f) -> ([m:n] b = B(g, key) until c = C(h, key)) [where
    timer:within(Δ)]`` (also ``[m:]``, ``[:n]``, none, and ``[n] … until``): ``f``, ``g``,
    ``h`` read only their own event, ``B`` and ``C`` unify with ``a`` on one key, ``b``
    binds nothing else, a window (if any) opens at ``a`` and closes with the match. Returned
    as the chain of its shortest match with :attr:`EsperPair.until` set, ``is_pair`` off;
    else None."""
    auto = pattern.auto
    if (not auto.context.esper or auto.start != "spawn" or auto.distinct or auto.partition_by
            or auto.clock is not None or auto.restricted or auto.group):
        return None
    init = auto.edges.get(INITIAL, {})
    if len(init) != 1 or len(next(iter(init.values()))) != 1:
        return None
    (a,) = next(iter(init.values()))
    if a.final or a.exits or a.position.every or (
            a.position.filter is not None and not a.position.local):
        return None
    states: list[int] = []
    bs: list[Any] = []  # per state, its B edge (None: none)
    cs: list[Any] = []  # per state, its C edge
    fs: list[Any] = []  # per state, its NOT C
    s = a.target
    while s not in states and s != FINAL:
        edges = [e for es in auto.edges.get(s, {}).values() for e in es]
        forbids = [f for fl in auto.forbids.get(s, {}).values() for f in fl]
        b = [e for e in edges if e.position.collect is not None]
        c = [e for e in edges if e.position.collect is None]
        if (len(b) > 1 or len(c) > 1 or len(forbids) > 1 or bool(c) == bool(forbids)
                or (c and not c[0].final) or (forbids and forbids[0].target != TRAP)):
            return None
        states.append(s)
        bs.append(b[0] if b else None)
        cs.append(c[0] if c else None)
        fs.append(forbids[0] if forbids else None)
        if not b:
            break
        s = b[0].target
    loop = bs[-1] is not None and s in states
    if loop and s != states[-1]:  # (only a B looping on the last state: [m:] … until)
        return None
    low = sum(f is not None for f in fs)
    if any(f is None for f in fs[:low]) or not bs[0]:
        return None
    closes = cs[-1] is not None
    if closes:
        high = None if loop else len(states) - 1
        if any(c is None for c in cs[low:]) or (not loop and bs[-1] is not None):
            return None
    else:  # ([n] b until c: the n-th B completes)
        if loop or not bs[-1].final or low != len(states):
            return None
        high = low
    b_edges = [e for e in bs if e is not None]
    c_like = [x for x in [*cs, *fs] if x is not None]
    b0, c0 = b_edges[0].position, c_like[0].position
    if (len({(e.position.type, e.position.binds, e.position.filter_src, repr(e.position.collect))
             for e in b_edges}) != 1
            or len({(x.position.type, x.position.filter_src) for x in c_like}) != 1
            or any(e.enters or (e.exits and not e.final) for e in b_edges)
            or (b0.filter is not None and not b0.local)
            or (c0.filter is not None and not c0.local)
            or any(f.position.where != c0.where for f in fs if f is not None)):
        return None

    def make(k: int) -> EsperPair | None:
        return _until_view(pattern, a, states, bs, cs, k, closes)

    shortest = make(low)
    if shortest is None or len(b0.binds) != 1 or shortest.key_var is None:
        return None
    key = shortest.key_var
    c_key = [i for i, v in c0.binds if v == key]
    if (b0.binds[0][1] != key or len(c_key) != 1
            or any(f.position.binds != ((c_key[0], key),) for f in fs if f is not None)):
        return None
    views = {low: shortest}
    for k in range(low + 1, (high if high is not None else len(states)) + 1):
        v = make(k)  # (every view with a bound; the loop's first two without)
        if v is None or v.window != shortest.window or v.zone != shortest.zone:
            return None
        views[k] = v
    if shortest.zone_at or shortest.zone_to is not None:
        return None
    until = EsperUntil(low, high, closes, tuple(states), b_edges[0], c_like[0], c_key[0], views,
                  make)
    return replace(shortest, until=until, is_pair=False)


def _until_view(pattern: Any, a: Any, states: list[int], bs: list[Any], cs: list[Any], k: int,
                closes: bool) -> EsperPair | None:
    """The chain of a match holding ``k`` ``b`` (:class:`EsperUntil`): ``a``, the ``B`` edges
    from each state in turn, then the ``C`` edge of the state reached (``[n] b until c``:
    the n-th ``B`` edge, final); its collecting stages named by :func:`_collected`."""
    last = len(states) - 1
    stages, waits = [a], []
    for j in range(k):
        s = min(j, last)
        stages.append(bs[s])
        waits.append(states[s])
    s = min(k, last)
    if closes:
        waits.append(states[s])
        stages.append(cs[s])
    shape = _stages_shape(pattern, stages, waits)
    return None if shape is None else _collected(shape)


def esper_distinct_pair_of(pattern: Any) -> EsperPair | None:
    """:func:`esper_pair_of` for ``every-distinct(keys[, Δ]) a = A(f) -> …`` (the spawn
    form): the shape of the pattern without its distinct keys — the pair kernel then opens
    instances only at the rows runtime.distinct.distinct_openings keeps (kernels.pair) —,
    or None: another start, alternatives from the initial state, or a key that can fail
    (the failures' records would come in another order). ``is_pair`` is off: per event the
    token path starts the instances (Matcher._start checks the keys)."""
    auto = pattern.auto
    if not auto.distinct or auto.start != "spawn" or any(can_fail(f) for f in auto.distinct):
        return None
    shape = esper_pair_of(_Undistinct(pattern, replace(auto, distinct=())))
    if shape is None or not shape.stages or shape.fork or shape.paths:  # (not proved with
        # them)
        return None
    return replace(shape, is_pair=False)


class _Undistinct:
    """A compiled pattern seen with another automaton (its other facts its own)."""

    def __init__(self, pattern: Any, auto: Any) -> None:
        self._pattern, self.auto = pattern, auto

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pattern, name)


def _stages_shape(pattern: Any, stages: list[Any], states: list[int], unindexed: bool = False,
                  loose: bool = False) -> EsperPair | None:
    """:func:`esper_pair_of` for the chain of ``stages`` (edges, the first from the initial
    state, the last final) waiting at ``states``: the key, the bindings, the window.
    ``unindexed``: a pair's second stage unified with ``a`` on one variable is on that key
    even when the compiler indexes its type by none (an alternative of a type that has an
    alternative on no key beside it: :func:`_with_alternatives`). ``loose``: so is any
    stage of a longer chain, and a stage on no key may come anywhere (an operand of an or of
    sequences after ``a`` alone, :func:`_with_product`: the kernel codes the instances and
    such a stage's rows alike)."""
    auto = pattern.auto
    a = stages[0]
    b = stages[-1]
    bound = [v for _, v in a.position.binds]
    if len(set(bound)) != len(bound):
        return None
    key_var: str | None = None
    keys = [0]
    new: list[tuple[tuple[int, str], ...]] = [tuple(a.position.binds)]
    for s, e in zip(states, stages[1:], strict=True):
        vs = [v for _, v in e.position.binds]
        if len(set(vs)) != len(vs):
            return None
        shared = [(i, v) for i, v in e.position.binds if v in bound]
        kt = auto.key_index.get(s, {}).get(e.position.type)
        if kt is None and ((unindexed and len(stages) == 2) or loose) and len(shared) == 1:
            kt = shared[0]
        if not shared and kt is None and (len(stages) == 2 or loose):  # (a stage on no key)
            keys.append(-1)
            new.append(tuple(e.position.binds))
            bound += [v for _, v in new[-1]]
            continue
        if len(shared) != 1 or kt is None or shared[0] != kt or kt[1] not in dict(
                (v, i) for i, v in a.position.binds):
            return None
        if key_var is None:
            key_var = kt[1]
        elif kt[1] != key_var:
            return None
        keys.append(kt[0])
        new.append(tuple((i, v) for i, v in e.position.binds if v != key_var))
        bound += [v for _, v in new[-1]]
    keys[0] = next((i for i, v in a.position.binds if v == key_var), -1)
    timed = _guard(auto, stages, tuple(states))
    if timed is None:
        return None
    window, zone, zone_at, zone_to = timed
    local = [e.position.filter is None or e.position.local for e in stages[1:]]
    if len(stages) > 2 and not all(local):
        return None
    reach = None
    if len(stages) == 2 and not local[-1]:
        pos = b.position
        reach = reach_of(pos.where, {f: i for i, f in enumerate(pos.fields)},
                         frozenset(bound) - {v for _, v in new[1]})
    return EsperPair(a, b, states[0], keys[0], keys[1], window, zone, key_var, new[1],
                     local[-1], tuple(stages), tuple(states), tuple(keys), tuple(new),
                     len(stages) == 2 and key_var is not None, reach, zone_at=zone_at,
                     zone_to=None if zone_to == len(stages) - 1 else zone_to)



def _single_stage(auto: Any, a: Any) -> EsperPair | None:
    """``every e = T(f)`` (``a`` its one edge, final): each event passing ``f`` is a match;
    else None."""
    bound = [v for _, v in a.position.binds]
    if (auto.zones or a.enters or a.exits or a.position.every
            or set(auto.edges) != {INITIAL} or len(set(bound)) != len(bound)
            or (a.position.filter is not None and not a.position.local)):
        return None
    return EsperPair(a, a, INITIAL, -1, -1, float("inf"), None, "", (), True, (a,), (), (),
                     (tuple(a.position.binds),), False)


def _first_alternatives(auto: Any) -> EsperPair | None:
    """``every (a = A(f) or b = B(g) …)`` (spawn, alternatives of one event each from the
    initial state, no window): each event passing the filter of an alternative of its type
    is a match, by the alternative that wins (:func:`_preference`); the pattern has no stage
    before them (``stages`` empty), each alternative is a single stage (``alts``)."""
    if (not auto.context.esper or auto.start != "spawn" or auto.distinct or auto.forbids
            or auto.partition_by or auto.clock is not None or set(auto.edges) != {INITIAL}):
        return None  # (as Automaton.spawn_edge asks)
    es = _alternatives(auto, INITIAL)
    if not es:
        return None
    ordered = _preference(es)
    views = [_single_stage(auto, e) for e in ordered]
    if any(v is None for v in views):
        return None
    by_type: dict[str, list[tuple[int, EsperPair]]] = {}
    for e in es:
        rank = next(i for i, x in enumerate(ordered) if x is e)
        by_type.setdefault(e.position.type, []).append((rank, views[rank]))  # type: ignore
    first = ordered[0]
    return EsperPair(first, first, INITIAL, -1, -1, float("inf"), None, "", (), True, (), (),
                     (), (), False, None, tuple(views),  # type: ignore[arg-type]
                     {t: tuple(v) for t, v in by_type.items()})


def _alternatives(auto: Any, state: int) -> list[Any]:
    """The edges out of ``state`` when they are two or more single-event alternatives that
    each complete the pattern (``-> (b = B(g) or c = C(h) …)``: final, entering no zone, no
    inner every, no step of an ``and``/``or`` product, no repeated tag), else []."""
    es = [e for lst in auto.edges.get(state, {}).values() for e in lst]
    if len(es) < 2 or any(
            not e.final or e.enters or e.position.every or e.position.conj is not None
            or e.position.track is not None or e.position.collect is not None for e in es):
        return []
    return es


def _preference(alts: list[Any]) -> list[Any]:
    """``alts`` in the order that wins when one event fits several: Esper's or quits when
    its first operand reports, and the per-event engine takes the alternative written first
    (Position.alt: the lowest position id) and drops the others (Matcher._try_edges)."""
    return sorted(alts, key=lambda e: e.position.id)


def _with_alternatives(pattern: Any, stages: list[Any], states: list[int], alts: list[Any]
                       ) -> EsperPair | None:
    """The shape ``every a = A(f) [-> b = B(g) …] -> (x = X(h) or y = Y(k) …) [within Δ]``
    (stages before the alternatives, a chain of :func:`esper_pair_of`'s): each alternative
    the last stage of a chain of its own (:attr:`EsperPair.alts`), every one on the same key
    as the stages before (or, after ``a`` alone, some or all on none), every filter reading only
    its own event — but an alternative's after ``a`` alone, which may read ``a``'s fields (a
    guard, as a pair's: checked per candidate) —, one ``within`` around all; else None."""
    ordered = _preference(alts)
    views = []
    for e in ordered:  # (a guard after a alone; there also a type with alternatives on the
        # key and on none, which the compiler indexes by no key)
        view = _stages_shape(pattern, [*stages, e], states, len(stages) == 1)
        if view is None:
            return None
        views.append(view)
    # (after a alone, some alternatives may be on the key and others on none)
    keys = {v.key_var for v in views}
    if (len(keys - {None}) > 1 or any(v.zone_to is not None for v in views)
            or len({(v.window, v.zone, v.zone_at) for v in views}) != 1
            or (None in keys and len(stages) > 1)):
        return None
    v0 = next((v for v in views if v.key_var is not None), views[0])
    n = len(stages)
    by_type: dict[str, list[tuple[int, EsperPair]]] = {}
    for e in alts:
        rank = next(i for i, x in enumerate(ordered) if x is e)
        by_type.setdefault(e.position.type, []).append((rank, views[rank]))
    # (after a alone, on a key, no guard: the matcher's direct per-event step,
    # Matcher._pair_step)
    return EsperPair(stages[0], stages[-1], states[0], v0.key_a, v0.keys[1] if n > 1 else -1,
                     v0.window, v0.zone, v0.key_var, v0.new[1] if n > 1 else (), True,
                     tuple(stages), tuple(states), v0.keys[:n], v0.new[:n],
                     n == 1 and None not in keys and all(v.columnar for v in views),
                     None, tuple(views),
                     {t: tuple(v) for t, v in by_type.items()}, v0.zone_at)


def _with_branch(pattern: Any, stages: list[Any], states: list[int]) -> EsperPair | None:
    """The shape ``every a = A(f) [-> b = B(g) …] -> (x = X(h) or y = Y(k) …) -> d = D(l)
    [-> e = E(m) …] [within Δ]`` (:attr:`EsperPair.branch`): two or more alternatives of
    one event each out of the state after ``stages``, each into a state of its own, from
    which one chain of atoms goes on to the end — the same positions after every
    alternative, meeting at one state after the first of them —, every stage on ``a``'s key
    and reading only its own event, no window or one around everything after ``a``; else
    None. ``is_pair`` is off: per event the token path steps it, a thread per alternative
    event (docs/esper.md, "Alternatives before more stages")."""
    auto = pattern.auto
    es = [e for lst in auto.edges.get(states[-1], {}).values() for e in lst]
    if len(es) < 2 or any(
            e.final or e.enters or e.exits or e.position.every or e.position.conj is not None
            or e.position.track is not None or e.position.collect is not None for e in es):
        return None
    targets = [e.target for e in es]
    if len(set(targets)) != len(targets) or set(targets) & {INITIAL, *states}:
        return None
    rests: dict[int, list[Any]] = {}
    for t in targets:  # (each alternative's chain to the end)
        rest, at = [], t
        while (d := _only_edge(auto, at)) is not None and len(rest) <= len(auto.positions):
            rest.append(d)
            if d.final:
                break
            at = d.target
        if not rest or not rest[-1].final:
            return None
        rests[t] = rest
    rest0 = rests[targets[0]]
    later = {d.target for d in rest0[:-1]}
    if (any(len(r) != len(rest0) or any(d.position is not d0.position or d.target != d0.target
                                        for d, d0 in zip(r, rest0, strict=True))
            for r in rests.values())
            or later & {INITIAL, *states, *targets}
            or set(auto.edges) != {INITIAL, *states, *targets, *later}):
        return None
    ordered = _preference(es)
    paths = [_stages_shape(pattern, [*stages, e, *rests[e.target]],
                           [*states, e.target, *(d.target for d in rest0[:-1])])
             for e in ordered]
    if any(v is None or v.key_var is None or not v.columnar or v.zone_at
           or v.zone_to is not None for v in paths):
        return None
    if len({(v.key_var, v.window, v.zone) for v in paths}) != 1:  # type: ignore[union-attr]
        return None
    return replace(paths[0], is_pair=False, branch=len(stages),  # type: ignore[arg-type]
                   paths=tuple(paths))  # type: ignore[arg-type]


def _leading_branch(pattern: Any) -> EsperPair | None:
    """The shape ``every (x = X(f) or y = Y(g) …) -> d = D(h)`` (:attr:`EsperPair.branch`
    0): spawn, two or more alternatives of one event each out of the initial state, each
    into a state of its own whose one edge is the same final atom ``d``, every filter
    reading only its own event, no key (the alternatives bind their own tags: ``d`` unifies
    with none of them), no window; else None. Each row passing an alternative's filter
    begins one instance — a thread per alternative it fits, in the automaton's order
    (Matcher._start) —, which completes at the first later row passing ``d``'s filter, by
    the alternative that wins a tie (:func:`_preference`). ``is_pair`` is off: per event the
    token path steps it."""
    auto = pattern.auto
    if (not auto.context.esper or auto.start != "spawn" or auto.distinct or auto.forbids
            or auto.partition_by or auto.clock is not None or auto.zones):
        return None  # (as Automaton.spawn_edge asks; and no window)
    es = [e for lst in auto.edges.get(INITIAL, {}).values() for e in lst]
    if len(es) < 2 or any(
            e.final or e.enters or e.exits or e.position.every or e.position.conj is not None
            or e.position.track is not None or e.position.collect is not None
            or (e.position.filter is not None and not e.position.local) for e in es):
        return None
    targets = [e.target for e in es]
    rest = [_only_edge(auto, t) for t in targets]
    if (len(set(targets)) != len(targets) or INITIAL in targets
            or any(d is None or not d.final or d.position is not rest[0].position
                   for d in rest)
            or set(auto.edges) != {INITIAL, *targets}):
        return None
    then = dict(zip(targets, rest, strict=True))
    ordered = _preference(es)
    paths = [_stages_shape(pattern, [e, then[e.target]], [e.target]) for e in ordered]
    if any(v is None or v.key_var is not None or not v.columnar or v.zone is not None
           for v in paths):
        return None
    return replace(paths[0], is_pair=False, branch=0,  # type: ignore[arg-type]
                   paths=tuple(paths))  # type: ignore[arg-type]


#: the most atoms an and's operands may have in the pair kernel: kernels.orseq.step_groups
#: codes the order of an instance's atoms (3 digits per atom, each below their number + 1)
#: as one int64 — 7 ** 19 fits, 8 ** 22 does not
MAX_AND_ATOMS = 6


def _with_product(pattern: Any, stages: list[Any], states: list[int]) -> EsperPair | None:
    """The shape ``every a = A(f) [-> b = B(g) …] -> ((x = X(h) -> y = Y(k) …) or z = Z(l) …)
    [within Δ]`` — or the same with ``and`` (:attr:`EsperPair.conj`: its operands may all be
    single events; the product ends at the step completing the last operand, it has no
    hidden variable and no settling operand) —: an Esper ``or`` some of whose operands are
    sequences after the chain
    ``stages`` (waiting at ``states``), compiled as the product of its operands
    (compiler.conjunction): a state per operand progress, a step per non-empty set of
    operands whose next atoms take one event (of those that fire, only the maximal one goes
    on: ``Position.conj``), ending at the first step completing an operand (the lowest of
    several, ``Position.settle``). Events are not consumed, so each operand takes, atom after
    atom, the first later event of its key passing its atom's filter — each operand a chain
    of its own after the stages before (:attr:`EsperPair.alts`, in operand order) — and the
    instance completes by the operand with the least (completing row, operand index). Taken
    when every operand is a chain (no alternatives or repetitions inside), every filter reads
    only its own event, every atom is on the key of the stages before (after ``a`` alone,
    on ``a``'s key or on none), one ``within`` around all, and the automaton's product
    states are exactly those of the per-operand progress (mapped in
    :attr:`EsperPair.product`); else None."""
    auto = pattern.auto
    s0 = states[-1]
    out = [e for lst in auto.edges.get(s0, {}).values() for e in lst]
    if not out or any(e.position.conj is None for e in out):
        return None
    track, cid = out[0].position.track, out[0].position.conj[0]
    conj = track is None  # (an and: no hidden variable, Glushkov's product of all operands)
    n_ops = 1 + max(i for e in out for i in e.position.conj[1])
    chains: list[list[Any]] = []  # per operand its edges alone, from s0
    for i in range(n_ops):
        chain, at = [], s0
        while True:
            own = [e for lst in auto.edges.get(at, {}).values() for e in lst
                   if e.position.conj is not None and e.position.conj[1] == {i}]
            if conj and not own and chain:  # (an and's operand done, the others waiting)
                break
            if len(own) != 1 or len(chain) > len(auto.edges):
                return None
            chain.append(own[0])
            if own[0].final:
                break
            at = own[0].target
        chains.append(chain)
    lens = tuple(map(len, chains))
    if n_ops < 2 or (not conj and max(lens) < 2) or (conj and sum(lens) > MAX_AND_ATOMS):
        return None  # (an or of single events: the plain alternatives')
    # every state of the product, walked from s0: (mask, counts) -> state
    product: dict[tuple[int, tuple[int, ...]], int] = {}
    ends: dict[int, Any] = {}  # (an and: per operand, a final edge completing it alone)
    counts_at = {s0: (0,) * n_ops}
    todo = [s0]
    zone = auto.zones[0] if auto.zones else None
    inside = () if zone is None else (zone.id,)
    while todo:
        at = todo.pop()
        c = counts_at[at]
        es = [e for lst in auto.edges.get(at, {}).values() for e in lst]
        nexts: dict[str, list[int]] = {}
        for i in range(n_ops):
            if c[i] < lens[i]:
                nexts.setdefault(chains[i][c[i]].position.type, []).append(i)
        want = {(t, mask) for t, ops in nexts.items()
                for mask in range(1, 1 << n_ops)
                if not mask & ~sum(1 << i for i in ops)}
        got = set()
        for e in es:
            pos = e.position
            if (pos.track != track or pos.conj is None or pos.conj[0] != cid or pos.every
                    or pos.collect is not None or not (pos.filter is None or pos.local)
                    or e.enters or e.position.zones != inside):
                return None
            moved = sorted(pos.conj[1])
            mask = sum(1 << i for i in moved)
            got.add((pos.type, mask))
            after = tuple(k + (1 if i in moved else 0) for i, k in enumerate(c))
            done = [i for i in moved if after[i] == lens[i]]
            if conj:  # (an and ends when its last operand completes; nothing settles)
                done = [] if after != lens else done
                if pos.settle is not None:
                    return None
            if bool(done) != e.final or e.exits != (inside if done else ()):
                return None
            if done:
                if not conj and (pos.settle is None or pos.settle[0] != done[0]):
                    return None
                if conj and len(moved) == 1:
                    ends.setdefault(moved[0], e)
                continue
            if product.setdefault((mask, after), e.target) != e.target or counts_at.setdefault(
                    e.target, after) != after:
                return None
            if len(counts_at) > len(auto.edges):  # (not a product of chains)
                return None
            if e.target not in todo:
                todo.append(e.target)
        if got != want or len(got) != len(es):
            return None
    if set(auto.edges) != {INITIAL, *states, *counts_at} or (zone is not None and (
            zone.last & set(counts_at))):
        return None
    views = []
    for i, chain in enumerate(chains):
        if conj:  # (its last atom as the final edge completing the and by it alone: the
            # window's exit, as an or's operand's own final edge)
            if i not in ends or ends[i].position.type != chain[-1].position.type:
                return None
            chain = [*chain[:-1], ends[i]]
        view = _stages_shape(pattern, [*stages, *chain],
                             [*states, *(e.target for e in chain[:-1])], loose=len(stages) == 1)
        if view is None or view.zone_to is not None or (
                len(stages) > 1 and -1 in view.keys):  # (after a chain: every atom keyed)
            return None
        views.append(view)
    own = [{v for new in view.new[len(stages):] for _, v in new} for view in views]
    if (len({v.key_var for v in views} - {None}) > 1
            or len({(v.window, v.zone, v.zone_at) for v in views}) != 1
            or any(own[i] & own[j] for i in range(n_ops) for j in range(i))):
        return None
    v0, n = next((v for v in views if v.key_var is not None), views[0]), len(stages)
    return EsperPair(stages[0], stages[-1], states[0], v0.key_a, v0.keys[1] if n > 1 else -1,
                     v0.window, v0.zone, v0.key_var, v0.new[1] if n > 1 else (), True,
                     tuple(stages), tuple(states), v0.keys[:n], v0.new[:n], False, None,
                     tuple(views), {}, v0.zone_at, track=track, product=product, conj=conj)


@dataclass
class EsperRestart:
    """A compiled pattern whose automaton is Esper's ``every (a = A(f) -> b = B(g))`` (start
    policy *restart*: one instance at a time; when it completes, the next begins with the
    events after), ``B`` optionally unified with ``a`` on one key, no window: the instance
    takes the first ``A`` passing ``f``, then the first later ``B`` of its key on which ``g``
    holds."""

    first: Any  # Edge from the initial state
    second: Any  # final Edge
    state: int  # where the instance waits for B
    key_b: int | None  # param of B unified with a's key variable (None: no key)
    key_var: str | None
    #: B's other bindings (param, variable): the ones it adds to A's
    b_new: tuple[tuple[int, str], ...]



def esper_restart_of(pattern: Any) -> EsperRestart | None:
    """The restart shape of a compiled pattern (see :class:`EsperRestart`), else None."""
    auto = pattern.auto
    if (not auto.context.esper or auto.start != "restart" or auto.distinct or auto.forbids
            or auto.partition_by or auto.clock is not None or auto.zones):
        return None
    a = _only_edge(auto, INITIAL)
    if a is None or a.final or set(auto.edges) != {INITIAL, a.target}:
        return None
    b = _only_edge(auto, a.target)
    if b is None or not b.final:
        return None
    if (a.position.every or b.position.every or a.enters or a.exits or b.enters or b.exits
            or (a.position.filter is not None and not a.position.local)):
        return None
    a_vars = [v for _, v in a.position.binds]
    b_vars = [v for _, v in b.position.binds]
    if len(set(a_vars)) != len(a_vars) or len(set(b_vars)) != len(b_vars):
        return None
    shared = [(i, v) for i, v in b.position.binds if v in a_vars]
    kt = auto.key_index.get(a.target, {}).get(b.position.type)
    if len(shared) > 1 or (shared and shared[0] != kt) or (kt is not None and not shared):
        return None
    key_b, key_var = (None, None) if kt is None else kt
    return EsperRestart(a, b, a.target, key_b, key_var,
                        tuple((i, v) for i, v in b.position.binds if v != key_var))



@dataclass
class EsperConsec:
    """A compiled pattern whose automaton is Esper's spawned chain with ``and not``: ``every
    a = A(f) -> (b = B(g) and not C(h) [and not …]) -> (c = …) … [where timer:within(Δ)]``
    (temperature's Warning and Critical, the "consecutive" idiom) — one edge out of each
    waiting state, any forbidden events there (each ending the instance: Forbid.target is the
    trap), filters that may read the earlier stages' fields, no unification but on one key that
    ``a`` binds and every later stage and forbidden event unifies with (no other variable bound
    twice, no tag on a forbidden event), optionally one Esper ``within`` around the stages
    after ``a``. Each ``A`` passing ``f`` opens an instance; at each later event it is ended by
    a forbidden one (the ending wins a tie, docs/esper.md), else moved on by the next stage's,
    else it waits (kernels/consec.py)."""

    stages: tuple[Any, ...]  # every stage's edge, the first (from the initial state) first
    states: tuple[int, ...]  # states[j]: where instances wait for stage j + 1
    #: per waiting state, the positions of its forbidden events
    forbids: tuple[tuple[Any, ...], ...]
    window: float  # Δ in ms (inf without a within zone)
    zone: int | None
    #: the variable ``a`` binds that every later stage and forbidden event unifies with (a
    #: key: ``b = B(b.k = a.k) and not C(k = a.k)``), or None (nothing unifies)
    key_var: str | None = None
    #: per waiting state, the param of each of its types' events holding the key
    keys: tuple[dict[str, int], ...] = ()
    #: per stage, the variables it binds (param, variable) but the key
    new: tuple[tuple[tuple[int, str], ...], ...] = ()



def esper_consec_of(pattern: Any) -> EsperConsec | None:
    """The consecutive-chain shape of a compiled pattern (see :class:`EsperConsec`), else
    None (asked only when the pair shape does not fit: that is the pair kernel's)."""
    from cepflow.automaton.automaton import FINAL, TRAP

    auto = pattern.auto
    if (not auto.context.esper or auto.start != "spawn" or auto.distinct or auto.partition_by
            or auto.clock is not None or pattern.exact or pattern.skips):
        return None
    a = _only_edge(auto, INITIAL)
    if a is None or a.final or a.exits:
        return None
    stages, states = [a], []
    while True:
        state = stages[-1].target
        if state in states or state in (INITIAL, FINAL, TRAP):
            return None
        states.append(state)
        e = _only_edge(auto, state)
        if e is None or e.enters:
            return None
        stages.append(e)
        if e.final:
            break
        if e.exits:
            return None
    if set(auto.edges) != {INITIAL, *states} or not set(auto.forbids) <= set(states):
        return None
    # the key: what every later stage's event unifies with (all of them, or none)
    first = {v for _, v in a.position.binds}
    keyed = {kv for s in states for _, kv in auto.key_index.get(s, {}).values()}
    if len(keyed) > 1 or not keyed <= first:
        return None
    key_var = next(iter(keyed), None)
    bound: set[str] = set()
    new = []
    for e in stages:
        pos = e.position
        vs = [v for _, v in pos.binds if v != key_var or e is a]
        if (pos.every or pos.collect is not None or pos.conj is not None
                or pos.track is not None or len(set(vs)) != len(vs) or bound & set(vs)):
            return None
        bound |= set(vs)
        new.append(tuple((i, v) for i, v in pos.binds if v != key_var or e is a))
    if a.position.filter is not None and not a.position.local:
        return None
    forbids, keys = [], []
    for s, e in zip(states, stages[1:], strict=True):
        fs = [f for t, lst in auto.forbids.get(s, {}).items() for f in lst]
        if any(f.target != TRAP or f.position.every or f.position.collect is not None
               or {v for _, v in f.position.binds} != ({key_var} if key_var else set())
               for f in fs):
            return None
        at = {t: i for t, (i, _) in auto.key_index.get(s, {}).items()}
        types = {e.position.type, *(f.position.type for f in fs)}
        if key_var is not None and (set(at) != types or any(
                (at[p.type], key_var) not in p.binds for p in (e.position, *(
                    f.position for f in fs)))):
            return None
        forbids.append(tuple(f.position for f in fs))
        keys.append(at)
    timed = _within(auto, stages)
    if timed is None or (auto.zones and (not auto.zones[0].open_end
                                         or auto.zones[0].last & set(states))):
        return None  # (an Esper window excludes its end: the walk's deadline test)
    return EsperConsec(tuple(stages), tuple(states), tuple(forbids), *timed, key_var,
                       tuple(keys), tuple(new))


def _within(auto: Any, stages: list[Any]) -> tuple[float, int | None] | None:
    """Δ (ms; inf without) and the zone of the one ``within`` window around the stages of an
    Esper chain — entered by the first, left by the last, every stage inside it — or None
    when its zones are otherwise."""
    timed = _guard(auto, stages)
    if timed is None or timed[2] or timed[3] != len(stages) - 1:
        return None
    return timed[0], timed[1]


def _guard(auto: Any, stages: list[Any], states: tuple[int, ...] = ()
           ) -> tuple[float, int | None, int, int] | None:
    """Δ (ms; inf without), the zone, the stage whose event opens it and the last stage
    inside it, of the one ``within`` window of an Esper chain: entered by stage ``at``'s
    edge, the stages ``at`` … ``to`` inside it, left by the last stage's edge or by the
    edge of the stage after ``to`` (outside it). ``at`` is 0 for a guard around everything
    after ``a`` (``every a = A -> (b -> c) where timer:within(Δ)``), later for a guard that
    binds to the later stages alone (``every a = A -> b = B -> c = C where
    timer:within(Δ)``: Esper's ``where`` binds tighter than ``->``, so the window opens at
    ``b``'s event, docs/esper.md); ``to`` is before the last stage for a window around
    middle stages (``every a = A -> (b = B where timer:within(Δ)) -> c = C``: ``c`` may come
    any time after ``b``). None when the zones are otherwise — also when a deadline would
    leave an instance waiting inside the window or expire one waiting after it (the zone's
    ``last``: the states of ``states``, where instances wait, at which it leaves them)."""
    if not auto.zones:
        if any(e.enters or e.exits or e.position.zones for e in stages):
            return None
        return float("inf"), None, 0, len(stages) - 1
    if len(auto.zones) != 1:
        return None
    z = auto.zones[0]
    inside = (z.id,)
    at = next((j for j, e in enumerate(stages) if e.enters), None)
    out = next((j for j, e in enumerate(stages) if e.exits), None)
    if at is None or out is None or z.kind != "within" or z.timer_accept:
        return None
    last = len(stages) - 1
    to = out if stages[out].position.zones == inside else out - 1
    waiting = set(states[at:to])  # (states[j]: instances wait there for stage j + 1)
    if (at > to or (at == to and last > 0) or to == out < last
            or any(e.enters != (inside if j == at else ()) for j, e in enumerate(stages))
            or any(e.exits != (inside if j == out else ()) for j, e in enumerate(stages))
            or any(e.position.zones != (inside if at <= j <= to else ())
                   for j, e in enumerate(stages))
            or z.last & waiting or (to < last and states[to:to + 1]
                                    and states[to] not in z.last)):
        return None
    return float(z.length), z.id, at, to


def _only_edge(auto: Any, state: int) -> Any:
    """The one edge out of ``state`` (one event type, one edge), else None."""
    out = auto.edges.get(state, {})
    if len(out) != 1:
        return None
    ((_, es),) = out.items()
    return es[0] if len(es) == 1 else None


@dataclass
class EsperAnd:
    """A compiled pattern whose automaton is Esper's ``every (a = A(f) and b = B(g[, key]))
    [where timer:within(Δ)]`` (start policy *restart*: one instance at a time; compiler/
    conjunction.py's product of two single events, of two types or one — then an event may
    be both at once, :attr:`merged`): the instance begins at
    the first event of either operand passing its filter, then takes the first later event
    of the other operand of its key passing that one's filter — within Δ of its first event —
    and completes; the next instance begins with the events after it, or after its
    deadline (kernels/conj.py)."""

    #: per operand that may come first: (its edge from the initial state, the final edge of
    #: the other operand after it)
    orders: tuple[tuple[Any, Any], ...]
    #: per order, the param of the first event holding the key and that of the second
    keys: tuple[tuple[int, int], ...]
    #: per order, the bindings (param, variable) the second event adds
    new: tuple[tuple[tuple[int, str], ...], ...]
    key_var: str | None
    window: float  # Δ in ms (inf without a within zone)
    zone: int | None
    #: operands of one type (``every (a = A(f) and b = A(g, b.k = a.k))``): the final edge
    #: from the initial state that takes both at once — an event passing ``f`` and ``g``
    #: completes an instance on its own (compiler/conjunction.py: the larger step wins) —
    #: else None
    merged: Any = None
    #: EPL's ``every ((a and b) where timer:within(Δ))``, whose guard restarts with the
    #: instance (compiler.esper ``_restarted_guard``: a zero ``timer:interval`` in front inside
    #: the guard, start policy restart, the pattern's clock): the clock's edge, which enters
    #: the window at the restart instant — the instance then takes its operands within Δ of
    #: that instant, not of its first event (kernels/restarted_and.py); else None
    clocked: Any = None
    #: with ``clocked``: EPL's ``every ((a = A(f) -> b = B(g[, key])) where
    #: timer:within(Δ))`` (:func:`restarted_pair_of`), one order — the same walk, ``a`` alone
    #: beginning an instance
    followed: bool = False


def esper_and_of(pattern: Any) -> EsperAnd | None:
    """The shape of :class:`EsperAnd`, else None: two initial edges of distinct types (or of
    one type, beside the step of both, :func:`_merges`), each
    followed by the other's final edge, filters reading only their event, the second event
    unified with the first on one key or on none, optionally one Esper ``within`` around
    both."""
    auto = pattern.auto
    if (not auto.context.esper or auto.start != "restart" or auto.distinct or auto.forbids
            or auto.partition_by or pattern.exact or pattern.skips):
        return None
    clocked = _restart_clock(auto)
    if auto.clock is not None and clocked is None:
        return None
    init = auto.edges.get(clocked.target if clocked is not None else INITIAL, {})
    merged = None
    if len(init) == 1:  # (operands of one type: two edges of one operand each, and both)
        (es,) = init.values()
        finals = [e for e in es if e.final]
        if len(es) != 3 or len(finals) != 1:
            return None
        merged = finals[0]
        firsts = [e for e in es if not e.final]
    elif len(init) == 2 and all(len(es) == 1 for es in init.values()):
        firsts = [es[0] for es in init.values()]
    else:
        return None
    orders, keys, new, states, key_vars = [], [], [], [], set()
    for first, other in zip(firsts, firsts[::-1], strict=True):
        second = _only_edge(auto, first.target)
        if second is None or first.final or not second.final:
            return None
        if second.position.type != other.position.type or first.target in states:
            return None
        two = _two_operands(auto, first, second, True)
        if two is None:
            return None
        key_vars.add(two[0])
        orders.append((first, second))
        keys.append(two[1])
        new.append(two[2])
        states.append(first.target)
    head = () if clocked is None else (clocked,)
    if (len(key_vars) != 1 or set(auto.edges) != {INITIAL, *states, *(e.target for e in head)}
            or (clocked is not None and merged is not None)):
        return None  # (operands of one type under the restarted guard: per event)
    timed = [_within(auto, [*head, *o]) for o in orders]
    if any(t is None for t in timed) or len(set(timed)) != 1:
        return None
    window, zone = timed[0]  # type: ignore[misc]
    if auto.zones and (not auto.zones[0].open_end or auto.zones[0].last & set(states)):
        return None  # (an Esper window excludes its end)
    if merged is not None and not _merges(auto, merged, orders[0], keys[0], new[0],
                                          timed[0]):
        return None
    if clocked is not None and (zone is None or window <= 0):
        return None
    return EsperAnd(tuple(orders), tuple(keys), tuple(new), key_vars.pop(), window, zone,
                    merged, clocked)


def restarted_pair_of(pattern: Any) -> EsperAnd | None:
    """The shape of EPL's ``every ((a = A(f) -> b = B(g[, key])) where timer:within(Δ))``
    (:attr:`EsperAnd.followed`), else None: the restart clock's edge (:func:`_restart_clock`),
    then one edge ``a``, then one final edge ``b``, filters reading only their event, ``b``
    unified with ``a`` on one key or on none, the window entered by the clock's edge and left
    by ``b``'s (EvalFollowedByStateNode under EvalGuardStateNode, restarted by
    EvalEveryStateNode: kernels/restarted_and.py)."""
    auto = pattern.auto
    if (not auto.context.esper or auto.start != "restart" or auto.distinct or auto.forbids
            or auto.partition_by or pattern.exact or pattern.skips):
        return None
    clocked = _restart_clock(auto)
    first = None if clocked is None else _only_edge(auto, clocked.target)
    second = None if first is None or first.final else _only_edge(auto, first.target)
    if second is None or not second.final or set(auto.edges) != {INITIAL, clocked.target,
                                                                  first.target}:
        return None
    two = _two_operands(auto, first, second, False)
    timed = _within(auto, [clocked, first, second])
    if two is None or timed is None or timed[1] is None or timed[0] <= 0:
        return None
    if not auto.zones[0].open_end or auto.zones[0].last & {first.target}:
        return None  # (an Esper window excludes its end)
    return EsperAnd(((first, second),), (two[1],), (two[2],), two[0], timed[0], timed[1], None,
                    clocked, True)


def _two_operands(auto: Any, first: Any, second: Any, conj: bool
                  ) -> tuple[str | None, tuple[int, int], tuple[tuple[int, str], ...]] | None:
    """The edge ``first`` then ``second`` — operands of an Esper and (``conj``) or the steps of
    a followed-by —, else None: filters reading only their event, each variable bound once,
    ``second`` unified with ``first`` on one key or on none. Their key variable (None: no
    key), the params of the first and the second holding it ((-1, -1): none) and the
    bindings the second adds."""
    for e in (first, second):
        pos = e.position
        vs = [v for _, v in pos.binds]
        if ((pos.conj is None) == conj or pos.every or pos.collect is not None
                or pos.track is not None or len(set(vs)) != len(vs)
                or (pos.filter is not None and not pos.local)):
            return None
    bound = {v: i for i, v in first.position.binds}
    shared = [(i, v) for i, v in second.position.binds if v in bound]
    kt = auto.key_index.get(first.target, {}).get(second.position.type)
    if (shared and (len(shared) != 1 or shared[0] != kt)) or (not shared and kt is not None):
        return None
    key_var = shared[0][1] if shared else None
    return (key_var, (bound[key_var], shared[0][0]) if shared else (-1, -1),
            tuple((i, v) for i, v in second.position.binds if v != key_var))


def _restart_clock(auto: Any) -> Any:
    """The edge of the zero ``timer:interval`` that EPL's reader puts in front inside a guard
    restarted under ``every`` (compiler.esper ``_restarted_guard``): the clock of length 0 with
    no ``not`` ending it and no ``timer:at``, the one initial edge, binding nothing and not
    final — else None."""
    clock = auto.clock
    if (clock is None or clock.length != 0 or clock.forbids or clock.schedule is not None
            or set(auto.edges.get(INITIAL, {})) != {clock.type}):
        return None
    edge = _only_edge(auto, INITIAL)
    if edge is None or edge.final or edge.position.binds or edge.position.filter is not None:
        return None
    return edge


def _merges(auto: Any, merged: Any, order: tuple[Any, Any], keys: tuple[int, int],
            new: tuple[tuple[int, str], ...], timed: tuple[float, int | None]) -> bool:
    """Whether ``merged`` is the step of both operands at once of :func:`esper_and_of`'s
    operands of one type (``order``: the first operand's edge, then the second's): a final
    edge binding both operands' variables — the key from one field of the event, as both
    operands read it (``b.k = a.k``) — within the same window, a positive Δ (a step that
    enters and leaves a window of 0 is another case of the product); filters reading only
    the event."""
    pos = merged.position
    vs = [v for _, v in pos.binds]
    return (pos.conj is not None and len(pos.conj[1]) == 2 and not pos.every
            and pos.collect is None and pos.track is None and len(set(vs)) == len(vs)
            and (pos.filter is None or pos.local) and keys[0] == keys[1]
            and set(pos.binds) == {*order[0].position.binds, *new}
            and _within(auto, [merged]) == timed and timed[0] > 0)


@dataclass
class EsperEach:
    """Esper's ``every a = A(f) or every b = A(g) …`` with operands one event can both fit
    (ast.Or.each, Position.each): per event type, the final initial edge of each operand of
    that type, in the operands' order — an event is one match per operand whose filter it
    passes, in that order, each with its own token id (Matcher._start: an instance per
    operand, each complete at once). The kernel's shape (kernels/each.py, in the split)."""

    #: per event type, the operands' edges in the operands' order
    by_type: dict[str, tuple[Any, ...]]


def esper_each_of(pattern: Any) -> EsperEach | None:
    """The :class:`EsperEach` shape of ``pattern``: every edge leaves the initial state and
    completes the pattern, one per operand (``Position.each``), its filter reading only its
    event, its variables bound once, no window, clock, not, distinct, limit or repetition;
    else None."""
    auto = pattern.auto
    if (not pattern.each or not auto.context.esper or auto.partition_by
            or pattern.clock is not None or auto.zones or auto.forbids
            or auto.reports or auto.limits or auto.distinct or auto.respawn or auto.spread
            or auto.start != "spawn" or set(auto.edges) != {INITIAL}):
        return None
    by_type: dict[str, tuple[Any, ...]] = {}
    for t, es in pattern.initial.items():
        for e in es:
            pos = e.position
            vs = [v for _, v in pos.binds]
            if (not e.final or e.target != FINAL or not pos.each or e.enters or e.exits
                    or pos.zones or pos.every or pos.alt or pos.conj is not None
                    or pos.track is not None or pos.collect is not None or pos.side is not None
                    or pos.most is not None or pos.until or pos.group
                    or not (pos.filter is None or pos.local) or len(set(vs)) != len(vs)):
                return None
        groups = pattern.each.get(t, [es])
        if any(len(g) != 1 for g in groups):
            return None
        by_type[t] = tuple(g[0] for g in groups)
    return EsperEach(by_type)


@dataclass
class EsperWhole:
    """Esper's ``(every a = A(f) [or every b = B(g) …]) where timer:within(Δ)``: the guard at the
    top of the pattern (Zone.whole), one window for every instance from the statement's start.
    Compiled as a zero clock at the start (its edge ``clocked`` enters the zone ``zone``) to
    the state ``state``, whose edges — one per event type, each an ``every`` completing the
    pattern — fork a match per event passing the filter while the window is open
    (Matcher._spawn: a token id each); the clock's instance ends at the deadline, and with it
    the pattern (Matcher.quit). The kernel's shape (kernels/whole.py, in the split)."""

    clocked: Any  # the clock's edge from the initial state
    state: int
    zone: int
    window: float
    #: per event type, its edge from ``state``
    by_type: dict[str, Any]


def esper_whole_of(pattern: Any) -> EsperWhole | None:
    """The :class:`EsperWhole` shape of ``pattern`` (a zero clock without forbidden events,
    start policy once, one Zone.whole ``within`` window longer than 0 — of 0 the guard has
    ended as it starts: no instance, no token id —, every other edge a final ``every``
    of a single event whose filter reads only it, its variables bound once); else None."""
    auto, clock = pattern.auto, pattern.clock
    zone = pattern.whole_zone
    if (clock is None or clock.length != 0 or clock.schedule is not None or clock.forbids
            or zone is None or not zone.length > 0 or len(auto.zones) != 1
            or zone.kind != "within"
            or not zone.open_end or zone.timer_accept or auto.start != "once"
            or not auto.context.esper or auto.partition_by or auto.forbids or auto.reports
            or auto.limits or auto.distinct or auto.respawn or auto.spread or pattern.each
            or pattern.timer_steps):
        return None
    init = auto.edges.get(INITIAL, {})
    if list(init) != [clock.type] or len(init[clock.type]) != 1:
        return None
    clocked = init[clock.type][0]
    w = clocked.target
    if (clocked.final or clocked.enters != (zone.id,) or clocked.exits
            or set(auto.edges) != {INITIAL, w}):
        return None
    by_type = {}
    for t, es in auto.edges[w].items():
        if len(es) != 1:
            return None
        e = es[0]
        pos = e.position
        vs = [v for _, v in pos.binds]
        if (not e.final or e.target != FINAL or not pos.every or e.enters
                or pos.zones != (zone.id,) or pos.alt or pos.each or pos.conj is not None
                or pos.track is not None or pos.collect is not None or pos.side is not None
                or pos.most is not None or pos.until or pos.group
                or not (pos.filter is None or pos.local) or len(set(vs)) != len(vs)):
            return None
        by_type[t] = e
    return EsperWhole(clocked, w, zone.id, zone.length, by_type)
