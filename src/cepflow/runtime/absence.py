"""Esper's missing event, ``every a = A(f) -> (timer:interval(Δ) and not B(g, key))``, stepped
directly per event (docs/esper.md): its shape (:class:`EsperAbsence`, read off the compiled
automaton) and the Matcher's two steps for it (:class:`AbsenceSteps`).

The token path (Matcher._process_esper) runs this shape as: an ``A`` passing ``f`` starts an
instance waiting at one state inside the interval's zone, its deadline an engine timer of its
own (Matcher.schedule_zones; not the pair's queue — the deadline *gives* a match, so its order
among the other statements' timers of its instant must stay the engine's); a ``B`` that fires
the NOT for an instance of its key traps it (Matcher._negatives, _forbid, _observe); the timer
completes the instances still waiting (Matcher._deadline, unchanged). The direct steps do the
same with the same token ids, bindings, timers and registrations, without planning — nothing
else of the token path applies to a single-thread instance at that state. Equality with the
token path: tests/esper/test_esper_absence.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cepflow.automaton.automaton import INITIAL, TRAP, Forbid, Position
from cepflow.events.event import ComplexEvent, Event
from cepflow.runtime.binding import NO_BINDINGS, bind
from cepflow.runtime.tokens import Thread, Token


@dataclass(frozen=True)
class EsperAbsence:
    """The missing-event shape: ``first`` the ``A`` position (its edge from the initial state
    to ``state``, entering ``zone`` of length ``window`` whose timer accepts at ``state``);
    ``forbids`` the NOT's negative transitions at ``state`` on the type ``forbid_type``, each
    to the trap, in the automaton's order (Matcher._forbidden reads them so)."""

    first: Position
    state: int
    zone: int
    window: float
    forbid_type: str
    forbids: tuple[Forbid, ...]


def esper_absence_of(pat: Any) -> EsperAbsence | None:
    """The missing-event shape of a CompiledPattern ``pat``, or None when any part of it is
    something the direct steps do not do as the token path does (then it runs the token
    path): Esper's spawning ``every`` with no distinct keys and no leading interval clock, one
    edge from the initial state (not final, entering the one zone, no inner every, and, or,
    collected tag), that zone a window whose timer accepts at the edge's target, and
    at that state only negative transitions of one other type, every one to the trap."""
    auto = pat.auto
    if (not pat.context.esper or auto.start != "spawn" or auto.distinct or pat.clock is not None
            or pat.timer_steps or set(auto.edges) != {INITIAL} or len(auto.zones) != 1):
        return None
    starts = auto.edges[INITIAL]
    if len(starts) != 1:
        return None
    (a_type, edges), = starts.items()
    if len(edges) != 1:
        return None
    edge = edges[0]
    pos = edge.position
    zone = auto.zones[0]
    if (edge.final or edge.exits or edge.enters != (zone.id,) or pos.every
            or pos.conj is not None or pos.track is not None or pos.collect is not None
            or pos.settle is not None or pos.type != a_type
            or zone.kind != "within" or zone.timer_accept != frozenset({edge.target})):
        return None
    state = edge.target
    if set(auto.forbids) != {state} or len(auto.forbids[state]) != 1:
        return None
    (b_type, fbs), = auto.forbids[state].items()
    if b_type == a_type or not fbs or any(
            f.target != TRAP or f.source != state or f.position.collect is not None
            for f in fbs):
        return None
    return EsperAbsence(pos, state, zone.id, zone.length, b_type, tuple(fbs))


class AbsenceSteps:
    """The direct steps of :class:`EsperAbsence` (mixed into runtime.matcher.Matcher, whose run
    state and general steps they use; CompiledPattern.absence says the pattern has the shape)."""

    pattern: Any
    host: Any
    pending: Any
    materialize: Callable[[], None]
    register_newest: Callable[[Token], None]
    unregister: Callable[[Token], None]
    _groups: Callable[[int, Event], tuple[dict[int, Token], ...]]
    _forbidden: Callable[..., Forbid | None]

    def _absence_step(self, e: Event, emit: Callable[[ComplexEvent], None]) -> None:
        """Matcher.process for the shape: the ``A`` or the ``B`` step by the event's type
        (another type: the pattern does nothing with it)."""
        ab = self.pattern.absence
        if e.type == ab.first.type:
            self._absence_open(e, emit)
        elif e.type == ab.forbid_type:
            self._absence_close(e, emit)

    def _absence_open(self, e: Event, emit: Callable[[ComplexEvent], None]) -> None:
        """An ``A`` passing ``f`` starts an instance (Matcher._start: the filter and the
        binding in _try_edges' order, the zone entered at its time, its deadline an engine
        timer asked for before the instance is registered)."""
        if self.pending is not None:
            self.materialize()
        ab = self.pattern.absence
        pos = ab.first
        flt = pos.filter
        if flt is not None and pos.local:  # (reads only e: checked before binding)
            if not flt(e, NO_BINDINGS):
                return
            nb = bind(pos, e.params, {})
            if nb is None:
                return
        else:
            nb = bind(pos, e.params, {})
            if nb is None or (flt is not None and not flt(e, nb)):
                return
        ts = e.ts
        z = ab.zone
        tok = Token(self.host.counters.next_token(), None, ts,
                    [Thread(ab.state, nb, [e], {z: ts}, e)])
        self.host.schedule(ts + ab.window, self, tok.id, z, ts)
        self.register_newest(tok)  # (the new instance is the youngest)

    def _absence_close(self, e: Event, emit: Callable[[ComplexEvent], None]) -> None:
        """A ``B`` traps every instance its NOT fires for (Matcher._negatives: the key's group
        when the state is indexed by the NOT's key, else every group; an instance is one
        thread at the state, which never took a ``B``, so _observe's only way is the trap)."""
        if self.pending is not None:
            self.materialize()
        ab = self.pattern.absence
        fbs = ab.forbids
        for tok in [tok for g in self._groups(ab.state, e) for tok in g.values()]:
            if self._forbidden(tok.threads[0], fbs, e) is not None:
                self.unregister(tok)
