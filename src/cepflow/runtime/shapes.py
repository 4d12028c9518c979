"""Which column kernel fits a compiled pattern: the shapes the kernels recognise in an
automaton (Chain: a keyed sequence under chronicle, for kernels.chain; EsperPair: Esper's
``every a = A(f) -> b = B(g, key) [within Δ]``, for kernels.pair). Facts of the compiled
pattern, computed once (runtime.compiled)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cepflow.automaton.automaton import INITIAL
from cepflow.automaton.context import Context


@dataclass
class Chain:
    """A compiled pattern whose automaton is a keyed sequence (see :func:`chain_of`)."""

    types: tuple[str, ...]
    key_param: dict[str, int]
    var: str
    states: tuple[int, ...]  # states[m]: waiting for types[m] (states[0] is the initial state)
    #: per stage, the position whose filter (reading only its event) an event must pass
    positions: tuple[Any, ...] = ()
    #: the window ``[Δ]`` over the whole sequence (ms) and its zone, or None
    window: float | None = None
    zone: int | None = None

    @property
    def queued(self) -> bool:
        """Whether the numpy queue kernel (:func:`run_chain`) applies: distinct types and no
        window (filters only drop rows); else :func:`step_chain` steps the rows."""
        return self.window is None and len(set(self.types)) == len(self.types)



#: the most stages the chain kernel takes: an event's stages are a bit mask in an int64
MAX_CHAIN = 62



def chain_of(pattern: Any) -> Chain | None:
    """The chain shape of a compiled pattern (runtime.compiled), or None if its automaton is
    not a keyed sequence under chronicle: one event type per stage binding the one key
    variable (a type may recur at several stages with the same key field), each stage's filter
    reading only its event, and at most one ``within`` window around the whole sequence; no
    NOT, no other zone."""
    auto = pattern.auto
    if (pattern.context is not Context.CHRONICLE or pattern.partitioned or auto.forbids
            or len(auto.zones) > 1
            or auto.distinct or auto.select is not None or pattern.clock is not None):
        return None
    zone = auto.zones[0] if auto.zones else None
    if zone is not None and (zone.kind != "within" or zone.timer_accept):
        return None
    zid = () if zone is None else (zone.id,)
    types: list[str] = []
    states = [INITIAL]
    positions: list[Any] = []
    key_param: dict[str, int] = {}
    var: str | None = None
    state = INITIAL
    while True:
        out = auto.edges.get(state, {})
        if len(out) != 1:
            return None
        (t, es), = out.items()
        if len(es) != 1:
            return None
        e = es[0]
        pos = e.position
        first = state == INITIAL
        if (len(pos.binds) != 1 or pos.every or pos.collect is not None
                or (pos.filter is not None and not pos.local) or pos.zones != zid
                or e.enters != (zid if first else ()) or e.exits != (zid if e.final else ())):
            return None
        i, v = pos.binds[0]
        if var is None:
            var = v
        elif v != var:
            return None
        if key_param.setdefault(t, i) != i:
            return None
        types.append(t)
        positions.append(pos)
        if len(types) > MAX_CHAIN:
            return None  # (the stages of an event are bits of an int64)
        if e.final:
            break
        state = e.target
        if state in states:
            return None
        states.append(state)
    if var is None or any(p != var for p in auto.params):
        return None
    if zone is not None and zone.last & set(states):
        return None
    return Chain(tuple(types), key_param, var, tuple(states), tuple(positions),
                 None if zone is None else float(zone.length),
                 None if zone is None else zone.id)



@dataclass
class EsperPair:
    """A compiled pattern whose automaton is Esper's ``every a = A(f) -> b = B(g)`` (compiler.esper:
    start policy *spawn*), ``B`` unified with ``a`` on one key, optionally in ``within Δ``;
    ``f`` reads only its own event. Each ``A`` passing ``f`` opens an instance; it
    completes at the first later ``B`` of its key passing ``g`` no later than Δ after the ``A``
    (Esper: events are not consumed, so instances do not compete), else it expires."""

    first: Any  # Edge from the initial state
    second: Any  # final Edge
    state: int  # where instances wait
    key_a: int  # param of A binding the key variable
    key_b: int  # param of B unified with it
    window: float  # Δ in ms (inf without a within zone)
    zone: int | None
    key_var: str  # the key variable (bound by A, unified by B)
    #: B's other bindings (param, variable): the ones it adds to A's
    b_new: tuple[tuple[int, str], ...]
    #: ``g`` reads only B's own fields, so the column kernel applies (else ``g`` also reads
    #: ``a``'s fields and only the matcher's per-event step does)
    columnar: bool = True



def esper_pair_of(pattern: Any) -> EsperPair | None:
    """The pair shape of a compiled pattern, or None if its automaton is not of that shape."""
    auto = pattern.auto
    a = auto.spawn_edge()  # (context esper, spawn, not partitioned, no clock, one first edge)
    if a is None:
        return None
    s = a.target
    if a.final or a.exits or set(auto.edges) != {INITIAL, s}:
        return None
    out = auto.edges[s]
    if len(out) != 1:
        return None
    ((tb, es),) = out.items()
    if len(es) != 1:
        return None
    b = es[0]
    if not b.final or b.enters or b.position.every:
        return None
    if a.position.filter is not None and not a.position.local:
        return None
    a_vars = [v for _, v in a.position.binds]
    b_vars = [v for _, v in b.position.binds]
    if len(set(a_vars)) != len(a_vars) or len(set(b_vars)) != len(b_vars):
        return None
    shared = [(i, v) for i, v in b.position.binds if v in a_vars]
    kt = auto.key_index.get(s, {}).get(tb)
    if len(shared) != 1 or kt is None or shared[0] != kt:
        return None
    key_var = kt[1]
    key_a = next(i for i, v in a.position.binds if v == key_var)
    if auto.zones:
        if len(auto.zones) != 1:
            return None
        z = auto.zones[0]
        if (z.kind != "within" or z.timer_accept or a.enters != (z.id,) or b.exits != (z.id,)
                or a.position.zones != (z.id,) or b.position.zones != (z.id,)):
            return None
        window, zone = float(z.length), z.id
    else:
        if a.enters or b.exits:
            return None
        window, zone = float("inf"), None
    columnar = b.position.filter is None or b.position.local
    b_new = tuple((i, v) for i, v in b.position.binds if v != key_var)
    return EsperPair(a, b, s, key_a, kt[0], window, zone, key_var, b_new, columnar)
