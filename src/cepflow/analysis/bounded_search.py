"""Bounded search for a witness (003 §V.E, Listing 35; properties as patterns, §V.C).

Breadth first over every input sequence of at most ``max_events`` events drawn from a finite
:class:`~cepflow.analysis.domain.Domain`, each event ``step`` ms after the one before (the
first at the domain's start), within ``horizon`` ms of the first. Each sequence is run by the
real engine — the compiled program, the same :class:`~cepflow.runtime.engine.Engine` that
``cepflow run`` uses — and two sequences that leave the engine in the same state (the
fingerprint of its saved state, analysis/fingerprint.py) are merged: only the first one found
is extended. The first sequence whose last event makes the engine emit the target event type
is a shortest witness (fewest events; breadth first). A state is expanded by forking its
engine for each candidate event (analysis/fork.py: the run-time state copied on write, the
compiled program shared); ``copy="state"`` instead restores the engine's saved state into a
fresh engine each time (runtime/state.py) — slower, the reference the fork is tested against.
The states of the last level are not fingerprinted (nothing extends them), so only whether the
target is emitted matters there: each state of the last frontier has its path replayed on an
engine of the target's cone (analysis/cone.py: the patterns and statements the target depends
on), which is forked per candidate. A state's own engine takes its last move (it is not
needed after). At most ``max_kept`` states of a level keep their engine (a fork holds up to
about 35 KB of its own); the others keep only their path and are replayed from the initial
state when their turn comes, so memory stays bounded by the visited fingerprints (16 bytes
each) and the paths, at the cost of replaying ``depth`` events per such state.

**Parallel search** (``jobs`` > 1, where processes can be forked): worker processes, forked
once with the compiled program, each hold part of a level's states (their engines, or their
paths to replay). Per level every worker expands its states and reports the new states it
reached — fingerprint, parent, move, whether it keeps the engine — and its first move that
emits the target; the parent merges the reports in the serial search's order (parent number,
then move), keeps the first of equal states and hands the kept states out again: a state stays
with the worker holding its engine while that worker has less than its share, the others go,
as paths, to the workers with room. So the states, the levels and the witness are the serial
search's; only the number of moves tried before a witness can differ (each worker stops at its
own first hit).

What it does not do: rule actions are not run (their events are not part of the search);
time passes only with events (a target that a deadline completes is found with the event
that moves the clock past it, as ``cepflow run`` without ``--close-windows`` would).
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing as mp
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from cepflow.analysis.cone import cone_program
from cepflow.analysis.domain import Domain
from cepflow.analysis.fingerprint import fingerprint
from cepflow.analysis.fork import Forker, state_key
from cepflow.compiler.program import Program
from cepflow.events.event import Event
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
    #: states explored: candidate events tried, one engine step each (on the last level, a
    #: step of the target's cone: analysis/cone.py)
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


#: a state waiting to be expanded: its engine (None: not kept, replayed from its path), the
#: time of its last event (None: the initial state), its number, and its path when the
#: expander cannot compute it (a worker holds no parent pointers)
Node = tuple[object, float | None, int, list[Event] | None]


class _Expander:
    """What expanding a state takes — the engine copies, the candidate moves, the fingerprint
    — shared by the serial loop and the workers of a parallel search."""

    def __init__(self, program: Program, target: str, domain: Domain,
                 horizon: float | None, copy: str) -> None:
        self.target = target
        self.domain = domain
        self.events = domain.events
        self.limit = horizon if horizon is not None else float("inf")
        root = _engine(program)
        self.clone: Callable[[object], Engine]
        self.key: Callable[[Engine], tuple[bytes, object]]
        if copy == "fork":
            forker = Forker(program, _engine(program))
            self.clone = forker.fork  # type: ignore[assignment]
            self.key = lambda eng: (state_key(eng), eng)
        else:
            self.clone = lambda node: restore_state(_engine(program), node)  # type: ignore[arg-type]
            self.key = fingerprint
        #: whether an expanded state's own engine may take its last move (a fork's may; a
        #: saved state is a document)
        self.consumable = copy == "fork"
        self.k0, self.node0 = self.key(root)
        #: the last level runs only the target's cone (analysis/cone.py): its engine, the
        #: state's path replayed on it, forked per move (None: the cone is everything)
        reduced = cone_program(program, target, root) if copy == "fork" else None
        self.cone: tuple[Engine, Callable[[Engine], Engine]] | None = None
        if reduced is not None:
            self.cone = (_engine(reduced), Forker(reduced, _engine(reduced)).fork)

    def moves(self, last: float | None) -> list[tuple[float, int]]:
        """The moves from a state whose last event was at ``last``: (time, candidate index),
        time-major — the order that makes a witness the first found."""
        d = self.domain
        if last is None:
            times = [_whole(d.start)]
        else:
            times = sorted({_whole(last + s) for s in d.steps
                            if last + s - d.start <= self.limit})
        return [(ts, ei) for ts in times for ei in range(len(self.events))]

    def children(self, node: object, last: float | None, path: Callable[[], list[Event]],
                 last_level: bool = False) -> Iterator[tuple[int, int, float, Engine, bool]]:
        """For each move from the state: (move index, candidate index, time, the engine
        after it, whether it emitted the target). The state's own engine takes the last move
        when it may (it is not needed after), saving one copy. On the ``last_level`` (its
        children are not extended) only the target's cone runs, on the state's path replayed
        (analysis/cone.py): the engines yielded are then the cone's."""
        clone = self.clone
        if last_level and self.cone is not None:
            start, clone = self.cone
            node = _replay(clone(start), path())
        elif node is None:  # not kept (memory): replay its path from the initial state
            node = _replay(clone(self.node0), path())
        own = self.consumable and node is not self.node0
        moves = self.moves(last)
        final = len(moves) - 1
        target, events = self.target, self.events
        for m, (ts, ei) in enumerate(moves):
            eng = node if own and m == final else clone(node)
            etype, params = events[ei]
            out = eng.process(Event(etype, params, ts))
            yield m, ei, ts, eng, any(c.type == target for c in out)  # type: ignore[union-attr]


def search(program: Program, target: str, domain: Domain, max_events: int,
           horizon: float | None = None, max_states: int | None = None,
           progress: Callable[[SearchResult], None] | None = None,
           copy: str = "fork", max_kept: int = 5_000, jobs: int = 1) -> SearchResult:
    """Search breadth first for the shortest input sequence after which the engine has
    emitted an event of type ``target`` (see the module docstring). ``jobs`` > 1 expands
    each level in that many processes (where the platform can fork; module docstring,
    "Parallel search"): the same states, the same witness."""
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
    if type(jobs) is not int or jobs < 1:
        raise SearchError(f"jobs must be a positive integer, not {jobs!r}")
    t0 = time.perf_counter()
    result = SearchResult(None, target)
    exp = _Expander(program, target, domain, horizon, copy)
    result.states = 1
    if jobs > 1 and "fork" in mp.get_all_start_methods():
        _parallel(exp, result, max_events, max_states, max_kept, jobs, progress, t0)
        return _done(result, t0, program)
    with _young_collections():
        _serial(exp, result, max_events, max_states, max_kept, progress, t0)
    return _done(result, t0, program)


def _serial(exp: _Expander, result: SearchResult, max_events: int, max_states: int | None,
            max_kept: int, progress: Callable[[SearchResult], None] | None, t0: float) -> None:
    """The search of :func:`search` in this process."""
    visited = {exp.k0}
    parents: list[int] = [-1]
    moves: list[tuple[int, float]] = [(-1, 0.0)]
    events = exp.events
    frontier: list[Node] = [(exp.node0, None, 0, None)]
    swept = 0
    for depth in range(max_events):
        last_level = depth == max_events - 1
        if result.transitions - swept >= SWEEP_EVERY:  # (see _young_collections)
            gc.collect()
            swept = result.transitions
        nxt: list[Node] = []
        for node, last, nid, _ in frontier:
            for _m, ei, ts, eng, hit in exp.children(
                    node, last, lambda nid=nid: _path(parents, moves, nid, events),
                    last_level):
                result.transitions += 1
                if hit:
                    result.witness = [*_path(parents, moves, nid, events),
                                      Event(*events[ei], ts)]
                    result.depth = depth + 1
                    return
                if last_level:
                    continue
                k, kept = exp.key(eng)
                if k in visited:
                    continue
                visited.add(k)
                parents.append(nid)
                moves.append((ei, ts))
                nxt.append((kept if len(nxt) < max_kept else None, ts, len(parents) - 1, None))
                result.states += 1
                if max_states is not None and result.states >= max_states:
                    result.complete = False
                    result.depth = depth
                    return
        if not _level_done(result, depth, len(nxt), t0, progress) and not last_level:
            break
        frontier = nxt


#: states explored after which the next level starts with a full collection
SWEEP_EVERY = 20_000


@contextlib.contextmanager
def _young_collections() -> Iterator[None]:
    """No automatic collection of CPython's oldest generation during a search: the caller
    collects at the start of a level once :data:`SWEEP_EVERY` states were explored since the
    last time. A level keeps thousands of engines — many long-lived objects — while the forks
    of states already known die young, in reference cycles (an engine and its host), so the
    young generations must be collected; but the oldest one's automatic collections walk every
    kept engine again and again (a quarter of the search's time)."""
    g0, g1, g2 = gc.get_threshold()
    gc.set_threshold(g0, g1, 1 << 30)
    try:
        yield
    finally:
        gc.set_threshold(g0, g1, g2)


def _level_done(result: SearchResult, depth: int, kept: int, t0: float,
                progress: Callable[[SearchResult], None] | None) -> bool:
    """Record a finished level of ``kept`` new states; whether there is a next one."""
    result.depth = depth + 1
    result.levels.append((depth + 1, kept))
    result.peak_frontier = max(result.peak_frontier, kept)
    if progress is not None:
        result.seconds = time.perf_counter() - t0
        progress(result)
    return kept > 0


# ---------------------------------------------------------------- parallel search


def _parallel(exp: _Expander, result: SearchResult, max_events: int,
              max_states: int | None, max_kept: int, jobs: int,
              progress: Callable[[SearchResult], None] | None, t0: float) -> None:
    """The search of :func:`search` with each level's states spread over ``jobs`` forked
    worker processes (module docstring, "Parallel search")."""
    ctx = mp.get_context("fork")
    conns = []
    procs = []
    try:
        for w in range(jobs):
            here, there = ctx.Pipe()
            p = ctx.Process(target=_worker, args=(there, exp, max_kept, w == 0), daemon=True)
            p.start()
            there.close()
            conns.append(here)
            procs.append(p)
        _drive(conns, exp, result, max_events, max_states, progress, t0)
    finally:
        for c in conns:
            with contextlib.suppress(OSError):  # (a worker that died)
                c.send(("stop",))
        for p in procs:
            p.join(5)
            if p.is_alive():  # pragma: no cover
                p.terminate()
                p.join()


def _drive(conns: list, exp: _Expander, result: SearchResult, max_events: int,
           max_states: int | None, progress: Callable[[SearchResult], None] | None,
           t0: float) -> None:
    """The parent's side: per level, let every worker expand its states, merge their new
    states in the serial search's order (parent number, then move), keep the first of equal
    states, and hand the kept ones out again, balanced."""
    jobs = len(conns)
    visited = {exp.k0}
    parents: list[int] = [-1]
    moves: list[tuple[int, float]] = [(-1, 0.0)]
    events = exp.events
    for depth in range(max_events):
        last_level = depth == max_events - 1
        for c in conns:
            c.send(("expand", last_level))
        replies = [_receive(c) for c in conns]
        result.transitions += sum(r[0] for r in replies)
        hits = [r[1] for r in replies if r[1] is not None]
        hit = min(hits) if hits else None
        if last_level and hit is None:
            _level_done(result, depth, 0, t0, progress)
            return
        merged = sorted(((*c, w) for w, r in enumerate(replies) for c in r[2]),
                        key=lambda c: (c[0], c[1]))
        kept: list[tuple[int, float, int, tuple[int, int], bool]] = []
        new_keys = []
        for pnid, m, ei, ts, k, held, w in merged:
            if hit is not None and (pnid, m) > hit[:2]:
                break  # (the serial search stops at the hit: what it found before it counts)
            if k in visited:
                continue
            visited.add(k)
            parents.append(pnid)
            moves.append((ei, ts))
            new_keys.append(k)
            kept.append((len(parents) - 1, ts, w, (pnid, m), held))
            result.states += 1
            if max_states is not None and result.states >= max_states:
                result.complete = False
                result.depth = depth
                return
        if hit is not None:
            nid, _, ei, ts = hit
            result.witness = [*_path(parents, moves, nid, events), Event(*events[ei], ts)]
            result.depth = depth + 1
            return
        # balance: a state stays with the worker that holds its engine while that worker
        # has less than its share; the others go where there is room, with their path
        share = -(-len(kept) // jobs)
        assigned: list[list[tuple]] = [[] for _ in range(jobs)]
        rest = []
        # (the last level runs the target's cone on each state's path: _Expander.children)
        paths = exp.cone is not None and depth + 1 == max_events - 1
        for nid, ts, w, src, held in kept:
            if held and not paths and len(assigned[w]) < share:
                assigned[w].append((nid, ts, src, None))
            else:
                rest.append((nid, ts))
        for nid, ts in rest:
            w = min(range(jobs), key=lambda j: len(assigned[j]))
            assigned[w].append((nid, ts, None, [moves[i] for i in _lineage(parents, nid)]))
        for c, a in zip(conns, assigned, strict=True):
            a.sort()
            c.send(("keep", a, new_keys))
        if not _level_done(result, depth, len(kept), t0, progress):
            return


def _receive(conn: Any) -> Any:
    msg = conn.recv()
    if msg[0] == "error":
        raise RuntimeError(f"a search worker failed:\n{msg[1]}")
    return msg[1:]


def _worker(conn: Any, exp: _Expander, max_kept: int, first: bool) -> None:
    """A worker process: expands the states it is given, level by level, reporting the
    states it reached that it has not seen (fingerprint, parent, move, whether it keeps
    their engine) and the first move that reaches the target; then keeps those the parent
    assigns it."""
    try:
        with _young_collections():
            _work(conn, exp, max_kept, first)
    except Exception:  # reported to the parent, which raises
        import traceback

        conn.send(("error", traceback.format_exc()))


def _work(conn: Any, exp: _Expander, max_kept: int, first: bool) -> None:
    """The worker's loop (see :func:`_worker`)."""
    events = exp.events
    frontier: list[Node] = [(exp.node0, None, 0, None)] if first else []
    known: set[bytes] = {exp.k0}
    held: dict[tuple[int, int], object] = {}
    explored = swept = 0
    while True:
        msg = conn.recv()
        if msg[0] == "stop":
            return
        if msg[0] == "expand":
            last_level = msg[1]
            if explored - swept >= SWEEP_EVERY:  # (see _young_collections)
                gc.collect()
                swept = explored
            held = {}
            found: list[tuple] = []
            hit = None
            n = 0
            level: set[bytes] = set()
            for node, last, nid, path in frontier:
                for m, ei, ts, eng, is_hit in exp.children(
                        node, last, lambda path=path: path,  # type: ignore[misc]
                        last_level):
                    n += 1
                    if is_hit:
                        hit = (nid, m, ei, ts)
                        break
                    if last_level:
                        continue
                    k, state = exp.key(eng)
                    if k in known or k in level:
                        continue
                    level.add(k)
                    keep = len(held) < max_kept
                    if keep:
                        held[(nid, m)] = state
                    found.append((nid, m, ei, ts, k, keep))
                if hit is not None:
                    break
            frontier = []
            explored += n
            conn.send(("expanded", n, hit, found))
        else:  # keep
            _, assigned, new_keys = msg
            known.update(new_keys)
            frontier = [(None if src is None else held.pop(src), ts, nid,
                         None if lineage is None else
                         [Event(*events[ei], t) for ei, t in lineage])
                        for nid, ts, src, lineage in assigned]
            held = {}


def _lineage(parents: list[int], nid: int) -> list[int]:
    """The state numbers from the first event's state to ``nid``."""
    out = []
    while nid > 0:
        out.append(nid)
        nid = parents[nid]
    return out[::-1]


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
