"""Bounded search for a witness (003 §V.E, Listing 35; properties as patterns, §V.C).

Breadth first over every input sequence of at most ``max_events`` events drawn from a finite
:class:`~cepflow.analysis.domain.Domain`, each event ``step`` ms after the one before (the
first at the domain's start), within ``horizon`` ms of the first. Each sequence is run by the
real engine — the compiled program, the same :class:`~cepflow.runtime.engine.Engine` that
``cepflow run`` uses — and two sequences that leave the engine in the same state (the
fingerprint of its saved state, analysis/fingerprint.py) are merged: only the first one found
is extended. The first sequence whose last event makes the engine emit the target event type
is a shortest witness (fewest events; breadth first). A state is expanded by forking its
engine for each candidate event (analysis/fork.py: the run-time state copied, the compiled
program shared); ``copy="state"`` instead restores the engine's saved state into a fresh
engine each time (runtime/state.py) — slower, the reference the fork is tested against. The
states of the last level are not fingerprinted (nothing extends them). At most ``max_kept``
states of a level keep their engine (a fork holds about 35 KB); the others keep only their
path and are replayed from the initial state when their turn comes, so memory stays bounded
by the visited fingerprints (16 bytes each) and the paths, at the cost of replaying
``depth`` events per such state.

What it does not do: rule actions are not run (their events are not part of the search);
time passes only with events (a target that a deadline completes is found with the event
that moves the clock past it, as ``cepflow run`` without ``--close-windows`` would).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from cepflow.analysis.domain import Domain
from cepflow.analysis.fingerprint import fingerprint
from cepflow.analysis.fork import Forker, state_key
from cepflow.compiler.program import Program
from cepflow.events.model import Event
from cepflow.runtime.engine import Engine, run_patterns
from cepflow.runtime.state import restore_state


class SearchError(ValueError):
    """A search that cannot run (an unknown target type, an empty domain)."""


@dataclass
class SearchResult:
    """The outcome: a shortest witness (None: none within the bound) and what was explored."""

    witness: list[Event] | None
    target: str
    #: distinct engine states kept for extending (the initial one included; the last level's
    #: states are explored but not fingerprinted)
    states: int = 0
    #: states explored: candidate events tried, one engine step each
    transitions: int = 0
    #: the sequence length explored completely
    depth: int = 0
    #: False when the state limit stopped the search before the bound
    complete: bool = True
    seconds: float = 0.0
    #: the largest frontier (states waiting to be expanded at one level)
    peak_frontier: int = 0
    levels: list[tuple[int, int]] = field(default_factory=list)

    @property
    def found(self) -> bool:
        return self.witness is not None


def _engine(program: Program) -> Engine:
    return Engine(program, actions={}, strict_actions=False)


def search(program: Program, target: str, domain: Domain, max_events: int,
           horizon: float | None = None, max_states: int | None = None,
           progress: Callable[[SearchResult], None] | None = None,
           copy: str = "fork", max_kept: int = 5_000) -> SearchResult:
    """Search breadth first for the shortest input sequence after which the engine has
    emitted an event of type ``target`` (see the module docstring)."""
    if target not in program.schemas:
        raise SearchError(f"unknown event type '{target}' (types: "
                          f"{', '.join(program.schemas)})")
    produced = {a.name for a in program.automata} | {w.name for w in program.windows}
    if target not in produced:
        raise SearchError(f"'{target}' is an input event type; the target is a complex event "
                          f"or window statement ({', '.join(sorted(produced)) or 'none'})")
    if not domain.events:
        raise SearchError("the domain has no event to generate")
    if copy not in ("fork", "state"):
        raise SearchError(f"copy must be 'fork' or 'state', not {copy!r}")
    t0 = time.perf_counter()
    result = SearchResult(None, target)
    root = _engine(program)
    if copy == "fork":
        forker = Forker(program, _engine(program))

        def clone(node: object) -> Engine:
            return forker.fork(node)  # type: ignore[arg-type]

        def key(eng: Engine) -> tuple[bytes, object]:
            return state_key(eng), eng
    else:
        def clone(node: object) -> Engine:
            return restore_state(_engine(program), node)  # type: ignore[arg-type]

        def key(eng: Engine) -> tuple[bytes, object]:
            return fingerprint(eng)

    k0, node0 = key(root)
    visited = {k0}
    parents: list[int] = [-1]
    moves: list[tuple[int, float]] = [(-1, 0.0)]
    frontier: list[tuple[object, float | None, int]] = [(node0, None, 0)]
    result.states = 1
    events = domain.events
    limit = horizon if horizon is not None else float("inf")
    for depth in range(max_events):
        last_level = depth == max_events - 1
        nxt: list[tuple[object, float | None, int]] = []
        for node, last, nid in frontier:
            if node is None:  # not kept (memory): replay its path from the initial state
                node = _replay(clone(node0), _path(parents, moves, nid, events))
            if last is None:
                times = [_whole(domain.start)]
            else:
                times = sorted({_whole(last + s) for s in domain.steps
                                if last + s - domain.start <= limit})
            for ts in times:
                for ei, (etype, params) in enumerate(events):
                    eng = clone(node)
                    out = eng.process(Event(etype, params, ts))
                    result.transitions += 1
                    if any(c.type == target for c in out):
                        result.witness = [*_path(parents, moves, nid, events),
                                          Event(etype, params, ts)]
                        result.depth = depth + 1
                        return _done(result, t0, program)
                    if last_level:
                        continue
                    k, kept = key(eng)
                    if k in visited:
                        continue
                    visited.add(k)
                    parents.append(nid)
                    moves.append((ei, ts))
                    nxt.append((kept if len(nxt) < max_kept else None, ts, len(parents) - 1))
                    result.states += 1
                    if max_states is not None and result.states >= max_states:
                        result.complete = False
                        result.depth = depth
                        return _done(result, t0, program)
        result.depth = depth + 1
        result.levels.append((depth + 1, len(nxt)))
        result.peak_frontier = max(result.peak_frontier, len(nxt))
        frontier = nxt
        if progress is not None:
            result.seconds = time.perf_counter() - t0
            progress(result)
        if not frontier and not last_level:
            break
    return _done(result, t0, program)


def _replay(engine: Engine, path: list[Event]) -> Engine:
    """``engine`` after the events of ``path`` (a state that was not kept)."""
    for e in path:
        engine.process(Event(e.type, e.params, e.ts))
    return engine


def _whole(t: float) -> float:
    """A timestamp as an int when it is whole (witness files read ``0``, not ``0.0``)."""
    return int(t) if float(t).is_integer() else t


def _path(parents: list[int], moves: list[tuple[int, float]], nid: int,
          events: list[tuple[str, tuple]]) -> list[Event]:
    out = []
    while nid > 0:
        ei, ts = moves[nid]
        etype, params = events[ei]
        out.append(Event(etype, params, ts))
        nid = parents[nid]
    return out[::-1]


def _done(result: SearchResult, t0: float, program: Program) -> SearchResult:
    result.seconds = time.perf_counter() - t0
    if result.witness is not None:  # a witness is checked by a fresh run, as cepflow run does
        fresh = [Event(e.type, e.params, e.ts) for e in result.witness]
        if not any(c.type == result.target for c in run_patterns(program, fresh,
                                                                  strict_actions=False)):
            raise AssertionError("the witness does not reproduce the target")  # pragma: no cover
    return result
