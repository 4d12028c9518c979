"""Saving and restoring engine state — a documented, versioned JSON format (no pickle).

Format ``cepflow.engine-state`` version 3 (see docs/state-format.md)::

    {"format": "cepflow.engine-state", "version": 3, "program": "<fingerprint>",
     "time": <ms or null>, "counters": {"token": n, "match": n, "input": n},
     "patterns": {"<name>": [{"id": n, "part": <key or null>, "created": <ms>,
                              "threads": [{"state": n, "bindings": {...},
                                           "zones": {"<zone id>": <entry ms>},
                                           "events": [<event>, ...]}]}]},
     "rows": {"<name>": {"zone": <zone id or null>, "var": "<key variable>",
                         "ids": [n, ...], "states": [n, ...], "keys": [<key>, ...],
                         "events": [[<row event>, ...], ...]}},
     "windows": {"<statement>": {...}}}

``<event>`` is ``{"type", "params": [...], "ts", "id", "seq"}`` for an atomic event and
``{"type", "params", "ts", "bindings", "match", "parts": [<event>, ...]}`` for a complex one;
``<row event>`` is ``[type, [params], ts, id, seq]`` for an atomic event, else ``<event>``.
``rows`` (optional) holds the partial matches a chain kernel left as rows
(:class:`~cepflow.runtime.tokens.PendingRows`): they are restored as rows, so the column path
continues from them without making a token of each (docs/state-format.md, "Rows").
``timers`` (optional) holds the pending timers of the patterns whose timer can complete a
match, in firing order (``Matcher.timers_saved``); the other timers are derived from the zone entry
times of the restored threads and rows. ``windows`` holds each data-window statement's state
(:mod:`cepflow.windows.snapshot`).
Versions 1 (without ``windows``) and 2 (without ``rows``) are still read. A NaN or infinite value
(JSON has no number for it) is saved as ``{"$float": "NaN"}`` and ``"nonfinite": true`` marks
such a state (:mod:`cepflow.events.jsonvalues`), so the state stays JSON and comes back exactly.
"""

from __future__ import annotations

import itertools
import json
import math
import reprlib
from collections import deque
from typing import Any

from cepflow.compiler.evaluator import EvaluationError
from cepflow.events.event import ComplexEvent, Event
from cepflow.events.jsonvalues import tagged, untagged
from cepflow.runtime.collector import gc_paused
from cepflow.runtime.engine import Engine
from cepflow.runtime.interval_clock import CLOCK_TOKEN
from cepflow.runtime.matcher import Matcher
from cepflow.runtime.timers import IDLE_TOKEN
from cepflow.runtime.tokens import KeyedRows, PendingRows, Thread, Token
from cepflow.windows.snapshot import load_runner, save_runner
from cepflow.windows.statement import WindowError

FORMAT = "cepflow.engine-state"
VERSION = 3
#: the versions :func:`restore_state` reads (1: patterns only, before window statements;
#: 2: before chain rows)
READS = (1, 2, 3)



def _fired(zone: Any, deadline: float, now: float) -> bool:
    """Has the deadline of ``zone`` at ``deadline`` fired by the engine's time ``now``? Then a
    state saved with its timers lacks it, and a partial match still in the zone sits at one of
    its last states (the timer fired idle for it): a deadline before ``now``, or at ``now`` for
    Esper's windows, whose timers come before the events of their instant (Zone.open_end; a
    zero length aside: such a zone is entered and due at one instant). Asking for it again
    would fire it once more (a pattern that begins at the statement's start and left its
    guard's zone: every ((…) where timer:within(Δ)) -> R, session 41)."""
    return deadline < now or (deadline == now and zone.open_end and zone.length > 0)

class StateError(Exception):
    """State that cannot be saved (non-JSON values) or restored (wrong format or program)."""


def _event(e: Event) -> dict[str, Any]:
    if isinstance(e, ComplexEvent):
        return {"type": e.type, "params": list(e.params), "ts": e.ts,
                "bindings": e.bindings, "match": e.match_id,
                "parts": [_event(p) for p in e.parts]}
    return {"type": e.type, "params": list(e.params), "ts": e.ts, "id": e.id, "seq": e.seq}


def _rows(rows: PendingRows) -> dict[str, Any]:
    """A chain's pending rows as saved (the ``rows`` entry of a pattern). An atomic event is
    the list ``[type, params, ts, id, seq]`` (no key names to write and read per event; made
    inline, 2x faster than a call per event), a complex one the dict of :func:`_event`."""
    return {"zone": rows.zone, "var": rows.var, "ids": list(rows.ids),
            "states": list(rows.states or ()), "keys": list(rows.keys or ()),
            "events": [[_event(e) if isinstance(e, ComplexEvent)
                        else [e.type, list(e.params), e.ts, e.id, e.seq] for e in evs]
                       for evs in rows.events]}


def _num(x: float) -> float | None:
    return None if x is None or math.isinf(x) else x


def has_state(engine: Engine) -> bool:
    """Whether the engine holds anything a fresh engine lacks besides its clock and counters:
    partial matches, Esper start/every-distinct state, or a window statement that has taken an
    event (its contents, batches and reference point). Without it, a fresh engine given the
    same later events produces the same complex events (their match ids aside)."""
    return (any(m.count() for m in engine.matchers)
            or any(m.done or m.seen for m in engine.matchers if m.pattern.context.esper)
            or any(r.time != float("-inf") for r in engine.windows)
            or (engine.statement_start is not None and engine.reads_start))


# Saving and restoring make objects per saved event: the cyclic garbage collector is paused
# meanwhile (it would walk them all again and again; nothing here makes a reference cycle) —
# 2 to 4x faster with 50,000 partial matches (docs/spark.md, streaming state).
def save_state(engine: Engine) -> dict[str, Any]:
    """The engine's partial matches, window statements' state and clocks as a
    JSON-compatible dict."""
    with gc_paused():
        return _encoded(_saved(engine))[0]


def state_text(engine: Engine) -> str:
    """:func:`save_state` as JSON text, encoded once (the encoding is the JSON check)."""
    with gc_paused():
        return _encoded(_saved(engine))[1]


def restore_text(engine: Engine, text: str) -> Engine:
    """:func:`restore_state` from the JSON text of :func:`state_text`."""
    with gc_paused():
        try:
            state = json.loads(text)
        except ValueError as err:
            raise StateError(f"engine state is not JSON: {err}") from None
        except RecursionError:
            raise StateError("engine state is nested too deeply to be read") from None
        return restore_state(engine, state)


def _encoded(state: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The state as JSON data and as text: NaN and infinities tagged (module docstring)."""
    try:
        try:
            return state, json.dumps(state, allow_nan=False)
        except ValueError:  # a NaN or an infinity (rare: the state is walked only then)
            state = {**tagged(state), "nonfinite": True}
            return state, json.dumps(state, allow_nan=False)
    except (TypeError, ValueError) as err:
        raise StateError(f"engine state holds a value JSON cannot represent: {err}") from None


def _saved(engine: Engine) -> dict[str, Any]:
    """The state dict of :func:`save_state`, not yet checked for JSON."""
    patterns: dict[str, list[dict[str, Any]]] = {}
    rows: dict[str, dict[str, Any]] = {}
    for m in engine.matchers:
        held = m.pending
        chain = m.pattern.chain
        if (held.__class__ is PendingRows and held.states is not None
                and not (chain is not None and chain.extra)):
            # a chain's rows stay rows (a pair's become tokens: its deadline queue is built
            # from them, Matcher.materialize); its registered tokens are all older
            rows[m.name] = _rows(held)
            tokens = m.registered_tokens()
        elif held.__class__ is KeyedRows or (held.__class__ is PendingRows and held.states):
            # the per-event row step's rows, and a chain's whose stages bind more than the key
            # (the saved rows hold the key alone), are saved as the tokens they stand for
            # (what the token path saves), and stay rows
            tokens = [*m.registered_tokens(), *m.row_tokens()]
        else:
            tokens = m.all_tokens()
        toks = []
        for tok in tokens:
            saved = {
                "id": tok.id, "part": tok.part, "created": tok.created,
                "threads": [{"state": th.state, "bindings": (
                                 th.bindings if th.bindings.__class__ is dict
                                 else dict(th.bindings)),  # (runtime.collected: plain)
                             "zones": {str(z): s for z, s in (th.zstart or {}).items()},
                             "events": [_event(e) for e in th.events]}
                            for th in tok.threads],
            }
            if tok.mult != 1:  # optional: the instances it stands for (Token.mult)
                saved["mult"] = tok.mult
            toks.append(saved)
        patterns[m.name] = toks
    state = {
        "format": FORMAT, "version": VERSION, "program": engine.program.fingerprint,
        "time": _num(engine.time),
        "counters": {"token": engine.host.counters.token,
                     "match": engine.host.counters.match,
                     "input": engine.host.counters.input},
        "patterns": patterns,
        "windows": {r.statement.name: save_runner(r, _event) for r in engine.windows},
    }
    esper = {m.name: {"done": m.done, "seen": [[list(k), t] for k, t in m.seen.items()]}
             for m in engine.matchers if m.pattern.context.esper and (m.done or m.seen)}
    if rows:  # optional (version 3): partial matches a chain kernel holds as rows
        state["rows"] = rows
    if esper:  # optional: Esper start policies (once) and every-distinct keys
        state["esper"] = esper
    clocks = engine.clock_state()
    if clocks is not None:  # optional: patterns that start with timer:interval
        state["clocks"] = clocks
    timers = _timers(engine, patterns, rows)
    if timers:  # optional: the pending pattern timers, in firing order
        state["timers"] = timers
    return state


def _derived(m: Matcher, toks: Any, saved_rows: dict[str, Any] | None) -> set[float]:
    """The instants of the timers the saved partial matches of ``m`` get again on restore
    (:meth:`Matcher.schedule_zones`, :meth:`_Reader.rows`)."""
    zones, timed = m.pattern.zone_by_id, m.pattern.timed_zones
    out = {float(start + zones[int(z)].length) for tok in toks for th in tok["threads"]
           for z, start in th["zones"].items() if int(z) in timed}
    if saved_rows is not None and saved_rows["zone"] in timed:
        length = zones[saved_rows["zone"]].length
        out.update(float((evs[0][2] if type(evs[0]) is list else evs[0]["ts"]) + length)
                   for evs in saved_rows["events"])
    return out


def _timers(engine: Engine, patterns: dict[str, list[dict[str, Any]]],
            rows: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The pending timers of the patterns ``Matcher.timers_saved`` takes, as they stand: the
    timer queue's in firing order, each pair pattern's queued instance deadlines and the
    deadlines its completed instances skipped — the timers of ended instances too, which
    still move the clock when they come due; of the other patterns, the instants their
    pending timers are due at that no saved partial match's timer is (``idle``: when they
    come due, the clock moves there; the partial matches get theirs again on restore)."""
    names = [m.name for m in engine.matchers]
    saved = {m.slot for m in engine.matchers if m.timers_saved}
    out: dict[str, Any] = {}
    due: dict[int, set[float]] = {}
    for h in engine.host.timers.heap:
        if h[3] not in saved:
            due.setdefault(h[3], set()).add(float(h[0]))
    for m in engine.matchers:
        if m.slot not in saved and (m.deadlines or m.skipped):
            due.setdefault(m.slot, set()).update(
                [float(d[0]) for d in m.deadlines] + list(map(float, m.skipped)))
    idle = {}
    now = engine.time
    for slot, ds in sorted(due.items()):
        m = engine.matchers[slot]
        # (one not after the clock cannot move it)
        ds = {d for d in ds if d > now} - _derived(m, patterns.get(m.name, ()),
                                                   rows.get(m.name))
        if ds:
            idle[m.name] = sorted(ds)
    if idle:
        out["idle"] = idle
    if not saved:
        return out
    # (a timer asked for twice — by two threads of one partial match that entered its zone
    # together — fires once to effect: Matcher._deadline takes every such thread; the second
    # finds none. Saved once, so every route saves one state)
    heap, asked = [], set()
    for h in sorted(engine.host.timers.entries()):
        if h[3] in saved and h[3:] not in asked:
            asked.add(h[3:])
            heap.append(h)
    # (times as floats: a kernel's are, the token path's the events' own numbers — one state)
    if heap:
        out["queue"] = {"pattern": [names[h[3]] for h in heap], "token": [h[4] for h in heap],
                        "zone": [h[5] for h in heap], "start": [float(h[6]) for h in heap],
                        "deadline": [float(h[0]) for h in heap]}
    pairs = {m.name: {"token": [d[1] for d in m.deadlines], "zone": [d[2] for d in m.deadlines],
                      "start": [float(d[3]) for d in m.deadlines],
                      "deadline": [float(d[0]) for d in m.deadlines]}
             for m in engine.matchers if m.deadlines and m.slot in saved}
    if pairs:
        out["pairs"] = pairs
    skipped = {m.name: list(map(float, m.skipped)) for m in engine.matchers
               if m.skipped and m.slot in saved}
    if skipped:
        out["skipped"] = skipped
    return out


def restore_state(engine: Engine, state: dict[str, Any]) -> Engine:
    """Load ``state`` (from :func:`save_state`, version 1, 2 or 3) into a fresh engine for the
    same program. Every value is checked as it is read (:class:`_Reader`): a damaged or foreign
    state is a :class:`StateError` naming the bad field, and nothing else is raised."""
    with gc_paused():
        return _restore(engine, state)


#: the deepest nesting a saved value may have (a complex event's parts, a binding's value):
#: far beyond what patterns make (one level per higher-order pattern), and well within
#: Python's recursion limit
MAX_NESTING = 64


def _restore(engine: Engine, state: dict[str, Any]) -> Engine:
    if isinstance(state, dict) and state.get("nonfinite"):
        try:
            state = untagged(state)
        except RecursionError:
            raise StateError(f"engine state: nested more than {MAX_NESTING} levels deep"
                             ) from None
        except (KeyError, TypeError):  # ({"$float": <not a float's text>})
            raise StateError('engine state: a tagged number {"$float": …} that is not NaN, '
                             "Infinity or -Infinity") from None
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        found = state.get("format") if isinstance(state, dict) else type(state).__name__
        raise StateError(f"not a cepflow engine state (format {_show(found)})")
    if state.get("version") not in READS:
        raise StateError(f"engine state version {_show(state.get('version'))} is not supported "
                         f"(this cepflow reads versions {', '.join(map(str, READS))})")
    if state.get("program") != engine.program.fingerprint:
        raise StateError(_other_program(engine, state))
    if any(m.count() for m in engine.matchers) or engine.time != float("-inf"):
        raise StateError("restore into a fresh engine")
    _Reader(engine, state).restore()
    return engine


def _other_program(engine: Engine, state: dict[str, Any]) -> str:
    """Why ``state`` is not this program's, with the pattern and statement names of both."""
    def names(kind: str, saved: Any, have: list[str]) -> str | None:
        ours = ", ".join(have) or "none"
        if not isinstance(saved, dict):
            return None
        theirs = ", ".join(str(n) for n in saved) or "none"
        return None if theirs == ours else f"it has {kind} {theirs}, this program {ours}"

    ours = [m.name for m in engine.matchers]
    diffs = [d for d in (
        names("patterns", state.get("patterns"), ours),
        names("window statements", state.get("windows", {}),
              [r.statement.name for r in engine.windows])) if d]
    fp = (f"fingerprint {_show(state.get('program'))}, this program's "
          f"{engine.program.fingerprint}")
    if diffs:
        return f"engine state was saved for different patterns: {'; '.join(diffs)} ({fp})"
    return (f"engine state was saved for different patterns: the same names "
            f"({', '.join(ours) or 'none'}) but another version of them — pattern text, "
            f"context, partitioning or window statements differ ({fp})")


_SHORT = reprlib.Repr()
_SHORT.maxlevel, _SHORT.maxstring, _SHORT.maxother = 2, 40, 40


def _show(value: Any) -> str:
    """A value for a message, cut short (also one nested without end)."""
    return _SHORT.repr(value)


_NUMBER = (int, float)
_MISSING = object()
_LOW = -math.inf
_SCALAR = frozenset((str, int, float, bool, type(None)))


class _Reader:
    """Reads a saved state into a fresh engine, checking every value as it decodes it: types,
    ranges (counters, token ids, automaton states and zones of the pattern, event types and
    their arity, sequence and match numbers not beyond the saved counters, times not after
    the engine's clock) and nesting (:data:`MAX_NESTING`). The first bad value is a
    :class:`StateError` naming its place, e.g. ``patterns.P[0].threads[0].state``."""

    def __init__(self, engine: Engine, state: dict[str, Any]) -> None:
        self.engine, self.state = engine, state
        self.arity = {name: len(t.params) for name, t in engine.program.schemas.items()}
        for m in engine.matchers:  # the synthetic events of the clock and the timers
            for t in m.pattern.synthetic:
                self.arity.setdefault(t, 0)
        #: with saved timers, the timed zones of the restored partial matches (Reader.place)
        self.entered: list[tuple[Matcher, int, int, float]] | None = None
        #: per pattern, the automaton states a partial match can rest in
        self._states = {m.name: {p.id for p in m.pattern.auto.positions}
                        | set(m.pattern.auto.restricted) for m in engine.matchers}

    # -- values ---------------------------------------------------------------------------
    @staticmethod
    def bad(where: str, what: str, value: Any = None, show: bool = True) -> StateError:
        got = f", not {_show(value)}" if show else ""
        return StateError(f"engine state: {where}: {what}{got}")

    def field(self, d: Any, key: str, where: str) -> Any:
        if not isinstance(d, dict):
            raise self.bad(where, "expected an object", d)
        if key not in d:
            raise self.bad(f"{where}.{key}" if where else key, "missing", show=False)
        return d[key]

    def int_(self, v: Any, where: str, lo: int = 0, hi: int | None = None) -> int:
        if type(v) is not int or v < lo or (hi is not None and v > hi):
            rng = f"{lo}..{hi}" if hi is not None else f">= {lo}"
            raise self.bad(where, f"expected an integer {rng}", v)
        return v

    def time(self, v: Any, where: str, null: bool = False) -> float | None:
        if v is None and null:
            return None
        if type(v) not in (int, float) or not math.isfinite(v):
            raise self.bad(where, "expected a finite number (ms)" + (" or null" if null else ""),
                           v)
        return v

    def list_(self, v: Any, where: str, nonempty: bool = False) -> list[Any]:
        if not isinstance(v, list) or (nonempty and not v):
            raise self.bad(where, "expected a non-empty list" if nonempty else "expected a list",
                           v)
        return v

    def dict_(self, v: Any, where: str) -> dict[str, Any]:
        if not isinstance(v, dict):
            raise self.bad(where, "expected an object", v)
        return v

    def scalar(self, v: Any, where: str) -> Any:
        """A JSON scalar: what keys, partitions and ids may be (they index dicts)."""
        if v is not None and type(v) not in (str, int, float, bool):
            raise self.bad(where, "expected a string, number, boolean or null", v)
        return v

    def value(self, v: Any, where: str, depth: int = 0) -> Any:
        """Any JSON value (a parameter, a binding), nested at most :data:`MAX_NESTING` deep;
        lists stay lists (as JSON gives them)."""
        if v is None or type(v) in (str, int, float, bool):
            return v
        if depth >= MAX_NESTING:
            raise self.bad(where, f"nested more than {MAX_NESTING} levels deep", show=False)
        if isinstance(v, list):
            for i, x in enumerate(v):
                self.value(x, f"{where}[{i}]", depth + 1)
            return v
        if isinstance(v, dict):
            for k, x in v.items():
                if not isinstance(k, str):
                    raise self.bad(where, "expected text keys", k)
                self.value(x, f"{where}.{k}", depth + 1)
            return v
        raise self.bad(where, "expected a JSON value", v)

    def bindings(self, v: Any, where: str) -> dict[str, Any]:
        self.value(self.dict_(v, where), where)
        return dict(v)

    # -- events ---------------------------------------------------------------------------
    def params(self, v: Any, etype: str, where: str) -> tuple[Any, ...]:
        self.list_(v, where)
        if len(v) != self.arity[etype]:
            raise self.bad(where, f"type '{etype}' has {self.arity[etype]} parameter(s)",
                           len(v))
        self.value(v, where)
        return tuple(v)

    def etype(self, v: Any, where: str) -> str:
        if not isinstance(v, str) or v not in self.arity:
            raise self.bad(where, "expected an event type of the program", v)
        return v

    def seq(self, v: Any, where: str) -> int:
        return self.int_(v, where, -1, max(self.inputs - 1, -1))

    def event(self, d: Any, where: str, depth: int = 0) -> Event:
        """An ``<event>`` object: atomic, or complex with its parts."""
        if type(d) is dict and "parts" not in d:
            e = self.atomic(d.get("type"), d.get("params"), d.get("ts"), d.get("id"),
                            d.get("seq", -1))
            if e is not None:
                return e
        self.dict_(d, where)
        t = self.etype(self.field(d, "type", where), f"{where}.type")
        params = self.params(self.field(d, "params", where), t, f"{where}.params")
        ts = self.time(self.field(d, "ts", where), f"{where}.ts")
        if ts > self.clock:
            raise self.bad(f"{where}.ts", f"after the engine's time {self.clock:g}", ts)
        if "parts" not in d:
            return Event(t, params, ts, self.scalar(d.get("id"), f"{where}.id"),
                         self.seq(d.get("seq", -1), f"{where}.seq"))
        if depth >= MAX_NESTING:
            raise self.bad(where, f"complex events nested more than {MAX_NESTING} deep",
                           show=False)
        parts = self.list_(d["parts"], f"{where}.parts")  # (a window row may have none)
        return ComplexEvent(
            t, params, ts, self.bindings(self.field(d, "bindings", where), f"{where}.bindings"),
            [self.event(p, f"{where}.parts[{i}]", depth + 1) for i, p in enumerate(parts)],
            self.int_(d.get("match", -1), f"{where}.match", -1, self.matches))

    def atomic(self, t: Any, params: Any, ts: Any, ident: Any, seq: Any) -> Event | None:
        """The atomic event of these values when each is as it should be (flat parameters),
        else None: the caller then reads it again value by value, to say what is wrong. (Most
        saved events are of this kind: checking them this way halves the time to restore.)"""
        n = self.arity.get(t) if type(t) is str else None
        if (n is None or type(params) is not list or len(params) != n
                or type(ts) not in _NUMBER or not _LOW < ts <= self.clock
                or type(ident) not in _SCALAR or type(seq) is not int
                or not -1 <= seq < self.inputs):
            return None
        for x in params:
            if type(x) not in _SCALAR:
                return None
        return Event(t, tuple(params), ts, ident, seq)

    def plain_row(self, evs: Any) -> list[Event] | None:
        """The events of a saved row when all are ``[type, params, ts, id, seq]`` as they
        should be (:meth:`atomic`, inlined: this runs once per saved event), else None."""
        if type(evs) is not list or not evs:
            return None
        arity, clock, inputs, scalar, number = (self.arity, self.clock, self.inputs, _SCALAR,
                                                _NUMBER)
        out = []
        for d in evs:
            if type(d) is not list or len(d) != 5:
                return None
            t, params, ts, ident, seq = d
            n = arity.get(t) if type(t) is str else None
            if (n is None or type(params) is not list or len(params) != n
                    or type(ts) not in number or not _LOW < ts <= clock
                    or type(ident) not in scalar or type(seq) is not int
                    or not -1 <= seq < inputs):
                return None
            for x in params:
                if type(x) not in scalar:
                    return None
            out.append(Event(t, tuple(params), ts, ident, seq))
        return out

    def row_event(self, d: Any, where: str) -> Event:
        """A ``<row event>``: ``[type, params, ts, id, seq]``, or an ``<event>`` object."""
        if type(d) is list and len(d) == 5:
            e = self.atomic(*d)
            if e is not None:
                return e
        if isinstance(d, dict):
            return self.event(d, where)
        if not isinstance(d, list) or len(d) != 5:
            raise self.bad(where, "expected [type, params, ts, id, seq] or an event object", d)
        t = self.etype(d[0], f"{where}[0]")
        ts = self.time(d[2], f"{where}[2]")
        if ts > self.clock:
            raise self.bad(f"{where}[2]", f"after the engine's time {self.clock:g}", ts)
        return Event(t, self.params(d[1], t, f"{where}[1]"), ts, self.scalar(d[3], f"{where}[3]"),
                     self.seq(d[4], f"{where}[4]"))

    # -- partial matches ------------------------------------------------------------------

    def plain_token(self, m: Matcher, t: Any, ids: set[int]) -> Token | None:
        """The token of ``t`` when every value is as it should be and its events are atomic
        with flat parameters and bindings, else None: the caller then reads it again value by
        value (:meth:`token`), to say what is wrong. (Checking the usual token this way, with
        no message made, is most of what keeps a checked restore fast.)"""
        if type(t) is not dict:
            return None
        tid, part, created, raw = (t.get("id"), t.get("part", _MISSING), t.get("created"),
                                   t.get("threads"))
        if (type(tid) is not int or not 1 <= tid <= self.tokens or tid in ids
                or (part is not None and (not m.pattern.partitioned or type(part) not in _SCALAR))
                or type(created) not in _NUMBER or not math.isfinite(created)
                or type(raw) is not list or not raw):
            return None
        states, zones, atomic = self._states[m.name], m.pattern.zone_by_id, self.atomic
        threads = []
        for th in raw:
            if type(th) is not dict:
                return None
            state, bindings, zs, evs = (th.get("state"), th.get("bindings"), th.get("zones"),
                                        th.get("events"))
            if (type(state) is not int or state not in states or type(bindings) is not dict
                    or type(zs) is not dict or type(evs) is not list or not evs):
                return None
            for k, v in bindings.items():
                if type(k) is not str or type(v) not in _SCALAR:
                    return None
            entered = {}
            for z, start in zs.items():
                zid = int(z) if type(z) is str and z.isdigit() else None
                if zid not in zones or type(start) not in _NUMBER or not math.isfinite(start):
                    return None
                entered[zid] = start
            events = [atomic(e.get("type"), e.get("params"), e.get("ts"), e.get("id"),
                             e.get("seq", -1))
                      if type(e) is dict and "parts" not in e else None for e in evs]
            if any(e is None for e in events):
                return None
            threads.append(Thread(state, dict(bindings), events, entered or None, events[-1]))
        ids.add(tid)
        return Token(tid, part, created, threads)

    def token(self, m: Matcher, t: Any, where: str, ids: set[int]) -> Token:
        """A token read value by value (:meth:`plain_token` first)."""
        tok = self.plain_token(m, t, ids)
        if tok is not None:
            tok.mult = self.mult(m, t, where)
            return tok
        self.dict_(t, where)
        tid = self.int_(self.field(t, "id", where), f"{where}.id", 1, self.tokens)
        if tid in ids:
            raise self.bad(f"{where}.id", "a token id used twice", tid)
        ids.add(tid)
        part = self.scalar(self.field(t, "part", where), f"{where}.part")
        if part is not None and not m.pattern.partitioned:
            raise self.bad(f"{where}.part", f"pattern '{m.name}' is not partitioned: "
                           "expected null", part)
        created = self.time(self.field(t, "created", where), f"{where}.created")
        states = self._states[m.name]
        threads = []
        raw = self.list_(self.field(t, "threads", where), f"{where}.threads", nonempty=True)
        for i, th in enumerate(raw):
            at = f"{where}.threads[{i}]"
            self.dict_(th, at)
            state = self.field(th, "state", at)
            if type(state) is not int or state not in states:
                raise self.bad(f"{at}.state", f"expected a state of pattern '{m.name}' "
                               f"({', '.join(map(str, sorted(states)))})", state)
            bindings = self.bindings(self.field(th, "bindings", at), f"{at}.bindings")
            var = m.pattern.key_var.get(state)
            if var is not None:
                self.scalar(bindings.get(var), f"{at}.bindings.{var}")
            zs = {}
            for z, start in self.dict_(self.field(th, "zones", at), f"{at}.zones").items():
                zid = int(z) if isinstance(z, str) and z.lstrip("-").isdigit() else None
                if zid not in m.pattern.zone_by_id:
                    raise self.bad(f"{at}.zones", f"expected zone ids of pattern '{m.name}'", z)
                zs[zid] = self.time(start, f"{at}.zones.{z}")
            evs = [self.event(e, f"{at}.events[{j}]") for j, e in enumerate(
                self.list_(self.field(th, "events", at), f"{at}.events", nonempty=True))]
            threads.append(Thread(state, bindings, evs, zs or None, evs[-1]))
        return Token(tid, part, created, threads, self.mult(m, t, where))

    def mult(self, m: Matcher, t: dict[str, Any], where: str) -> int:
        """The optional ``mult`` of a saved token: the identical instances it stands for, only
        under the start policy "respawn" (Token.mult); 1 when absent."""
        if "mult" not in t:
            return 1
        if not m.pattern.auto.respawn:
            raise self.bad(f"{where}.mult", f"pattern '{m.name}' has no every around every: "
                           "expected no mult", t["mult"])
        return self.int_(t["mult"], f"{where}.mult", 1)

    def rows(self, m: Matcher, saved: Any, where: str, ids: set[int]) -> None:
        """A chain's saved rows as its pending rows again (younger than its restored tokens),
        with the window timer each partial match holds (Matcher.schedule_zones of its token)."""
        self.dict_(saved, where)
        z = self.field(saved, "zone", where)
        if z is not None and (type(z) is not int or z not in m.pattern.zone_by_id):
            raise self.bad(f"{where}.zone", f"expected a zone id of pattern '{m.name}' or null",
                           z)
        var = self.field(saved, "var", where)
        if not isinstance(var, str) or not var:
            raise self.bad(f"{where}.var", "expected a variable name", var)
        cols = [self.list_(self.field(saved, c, where), f"{where}.{c}")
                for c in ("ids", "states", "keys", "events")]
        if len({len(c) for c in cols}) != 1:
            raise self.bad(where, "ids, states, keys and events of different lengths",
                           [len(c) for c in cols])
        tids, states = cols[0], self._states[m.name]
        for i, (tid, st, key) in enumerate(zip(tids, cols[1], cols[2], strict=True)):
            # (messages are made only for a bad value: this runs once per partial match)
            if type(tid) is not int or not 1 <= tid <= self.tokens or tid in ids:
                self.int_(tid, f"{where}.ids[{i}]", 1, self.tokens)
                raise self.bad(f"{where}.ids[{i}]", "a token id used twice", tid)
            ids.add(tid)
            if type(st) is not int or st not in states:
                raise self.bad(f"{where}.states[{i}]", f"expected a state of pattern "
                               f"'{m.name}'", st)
            if type(key) not in _SCALAR:
                self.scalar(key, f"{where}.keys[{i}]")
        events = []
        plain = self.plain_row
        for i, evs in enumerate(cols[3]):
            row = plain(evs)
            if row is None:  # (something to say: read it again value by value)
                row = [self.row_event(e, f"{where}.events[{i}][{j}]") for j, e in enumerate(
                    self.list_(evs, f"{where}.events[{i}]", nonempty=True))]
            events.append(row)
        if tids:
            m.pending = PendingRows(list(tids), events, z, list(cols[1]), list(cols[2]), var)
        if z is not None and z in m.pattern.timed_zones:
            if self.entered is not None and m.slot in self.kept:  # (place checks them)
                self.entered.extend((m, tid, z, evs[0].ts)
                                    for tid, evs in zip(tids, events, strict=True))
                return
            length = m.pattern.zone_by_id[z].length
            schedule = m.host.schedule
            for tid, evs in zip(tids, events, strict=True):
                start = evs[0].ts
                schedule(start + length, m, tid, z, start)

    # -- the document ---------------------------------------------------------------------
    def restore(self) -> None:
        engine, state = self.engine, self.state
        by_name = {m.name: m for m in engine.matchers}
        c = self.dict_(self.field(state, "counters", ""), "counters")
        self.tokens = self.int_(self.field(c, "token", "counters"), "counters.token")
        self.matches = self.int_(self.field(c, "match", "counters"), "counters.match")
        self.inputs = self.int_(self.field(c, "input", "counters"), "counters.input")
        time = self.time(self.field(state, "time", ""), "time", null=True)
        self.clock = -math.inf if time is None else time
        patterns = self.dict_(self.field(state, "patterns", ""), "patterns")
        for name in [*patterns, *self.dict_(state.get("rows", {}), "rows")]:
            if name not in by_name:
                raise self.bad(f"patterns.{name}", "not a pattern of the program "
                               f"({', '.join(by_name) or 'none'})", show=False)
        self.windows(self.dict_(state.get("windows", {}), "windows"))
        host = engine.host
        host.time = self.clock
        counters = host.counters
        counters.token, counters.match, counters.input = self.tokens, self.matches, self.inputs
        counters.continue_numbering()
        engine.recount()  # (count the restored partial matches at the next step)
        for name, extra in self.dict_(state.get("esper", {}), "esper").items():
            m = by_name.get(name)
            if m is None or not m.pattern.context.esper:
                raise self.bad(f"esper.{name}", "not an Esper pattern of the program",
                               show=False)
            where = f"esper.{name}"
            self.dict_(extra, where)
            done = extra.get("done", False)
            if type(done) is not bool:
                raise self.bad(f"{where}.done", "expected true or false", done)
            m.done = done
            seen: dict[tuple, float] = {}
            for i, item in enumerate(self.list_(extra.get("seen", []), f"{where}.seen")):
                if not isinstance(item, list) or len(item) != 2:
                    raise self.bad(f"{where}.seen[{i}]", "expected [[key values], ms]", item)
                key = self.list_(item[0], f"{where}.seen[{i}][0]")
                for j, k in enumerate(key):
                    self.scalar(k, f"{where}.seen[{i}][0][{j}]")
                seen[tuple(key)] = self.time(item[1], f"{where}.seen[{i}][1]")
            m.seen = seen
        #: the patterns whose timers the state holds (timers_saved)
        self.kept = {m.slot for m in engine.matchers if m.timers_saved}
        timers = self.timers(state.get("timers"), by_name)
        self.entered = None if timers is None else []
        for name, toks in patterns.items():
            m, ids = by_name[name], set()
            for i, t in enumerate(self.list_(toks, f"patterns.{name}")):
                tok = self.token(m, t, f"patterns.{name}[{i}]", ids)
                m.register(tok)
                for th in tok.threads:
                    if th.zstart:
                        if timers is not None and m.slot in self.kept:
                            self.enter(m, tok.id, th.zstart)
                        else:
                            m.schedule_zones(tok, th)
            saved = state.get("rows", {}).get(name)
            if saved is not None:
                self.rows(m, saved, f"rows.{name}", ids)
            if ids and m.pattern.auto.start == "once":
                m.done = True  # (its one instance is under way; older states marked
                #               done only at the match)
        for name, saved in state.get("rows", {}).items():
            if name not in patterns:
                self.rows(by_name[name], saved, f"rows.{name}", set())
        self.clocks(state.get("clocks"))
        if timers is not None:
            self.place(timers)

    def enter(self, m: Matcher, tid: int, zstart: dict[int, float]) -> None:
        """Note the timed zones a restored partial match is in (for :meth:`place`)."""
        timed = m.pattern.timed_zones
        for z, start in zstart.items():
            if z in timed:
                self.entered.append((m, tid, z, start))  # type: ignore[union-attr]

    # -- timers ---------------------------------------------------------------------------
    def timer_columns(self, saved: Any, where: str, by_name: dict[str, Matcher] | None,
                      m: Matcher | None = None) -> list[tuple[Any, ...]]:
        """Saved timers as ``(matcher, deadline, token, zone, start)`` in their order, each
        checked: a pattern of the program, a token id (or -1, a pair's queue; -2, a clock),
        a timed zone of the pattern (-1 for a clock), finite times with the deadline not
        before the start."""
        self.dict_(saved, where)
        names = ("token", "zone", "start", "deadline") if m else (
            "pattern", "token", "zone", "start", "deadline")
        cols = [self.list_(self.field(saved, c, where), f"{where}.{c}") for c in names]
        if len({len(c) for c in cols}) != 1:
            raise self.bad(where, f"{', '.join(names)} of different lengths",
                           [len(c) for c in cols])
        if m is not None:
            cols.insert(0, [m.name] * len(cols[0]))
        out = []
        lo = 1 if m is not None else -2
        kept = self.kept
        for i, (name, token, zone, start, deadline) in enumerate(zip(*cols, strict=True)):
            at = f"{where}[{i}]"
            mi = m if m is not None else by_name.get(name) if isinstance(name, str) else None
            if mi is None or mi.slot not in kept:
                raise self.bad(f"{where}.pattern[{i}]" if m is None else where,
                               "expected a pattern of the program whose timers are saved "
                               "(a timer:interval, a missing event or a clock)", name)
            if type(token) is not int or not lo <= token <= self.tokens or token == 0:
                raise self.bad(f"{where}.token[{i}]", f"expected a token id up to "
                               f"{self.tokens}" + ("" if m else ", -1 or -2"), token)
            clock = token == -2
            if clock and (mi.pattern.clock is None or zone != -1):
                raise self.bad(at, f"a clock's timer (token -2, zone -1) of pattern "
                               f"'{mi.name}', which has no clock or another zone", zone)
            if not clock and (type(zone) is not int or zone not in mi.pattern.timed_zones):
                raise self.bad(f"{where}.zone[{i}]", f"expected a timed zone of pattern "
                               f"'{mi.name}'", zone)
            self.time(start, f"{where}.start[{i}]")
            if self.time(deadline, f"{where}.deadline[{i}]") < start:
                raise self.bad(f"{where}.deadline[{i}]", f"before its start {start:g}",
                               deadline)
            out.append((mi, deadline, token, zone, start))
        return out

    def timers(self, saved: Any, by_name: dict[str, Matcher]) -> dict[str, Any] | None:
        """The saved ``timers`` (docs/state-format.md, "Timers"), checked, or None."""
        if saved is None:
            return None
        self.dict_(saved, "timers")
        queue = self.timer_columns(saved.get("queue", {"pattern": [], "token": [], "zone": [],
                                                       "start": [], "deadline": []}),
                                   "timers.queue", by_name)
        pairs = {}
        for name, q in self.dict_(saved.get("pairs", {}), "timers.pairs").items():
            if name not in by_name or by_name[name].slot not in self.kept:
                raise self.bad(f"timers.pairs.{name}", "not a pattern of the program whose "
                               "timers are saved", show=False)
            entries = self.timer_columns(q, f"timers.pairs.{name}", None, by_name[name])
            if any(a[1] > b[1] for a, b in itertools.pairwise(entries)):
                raise self.bad(f"timers.pairs.{name}.deadline", "expected deadlines in time "
                               "order", [e[1] for e in entries])
            pairs[by_name[name]] = entries
        skipped = {}
        for name, ds in self.dict_(saved.get("skipped", {}), "timers.skipped").items():
            if name not in by_name or by_name[name].slot not in self.kept:
                raise self.bad(f"timers.skipped.{name}", "not a pattern of the program whose "
                               "timers are saved", show=False)
            where = f"timers.skipped.{name}"
            times = [self.time(d, f"{where}[{i}]")
                     for i, d in enumerate(self.list_(ds, where))]
            if times != sorted(times):
                raise self.bad(where, "expected deadlines in time order", times)
            skipped[by_name[name]] = times
        idle = {}
        for name, ds in self.dict_(saved.get("idle", {}), "timers.idle").items():
            if name not in by_name or by_name[name].slot in self.kept:
                raise self.bad(f"timers.idle.{name}", "not a pattern of the program whose "
                               "timers are derived", show=False)
            where = f"timers.idle.{name}"
            idle[by_name[name]] = [self.time(d, f"{where}[{i}]")
                                   for i, d in enumerate(self.list_(ds, where))]
        return {"queue": queue, "pairs": pairs, "skipped": skipped, "idle": idle}

    def place(self, timers: dict[str, Any]) -> None:
        """The saved timers in the engine, in their order (the restored clocks' and partial
        matches' timers replaced); a timer a partial match or a running clock needs that the
        state lacks is asked for after them, as a state without timers has it."""
        host = self.engine.host
        kept = self.kept
        host.timers.keep(lambda h: h[3] not in kept)  # (restore_clocks asked again for them)
        have = set()
        for m, deadline, token, zone, start in timers["queue"]:
            host.schedule(deadline, m, token, zone, start)
            have.add((m.slot, token, zone, start))
        for m, entries in timers["pairs"].items():
            m.deadlines = deque((d, t, z, s) for _, d, t, z, s in entries)
            have.update((m.slot, t, z, s) for _, _, t, z, s in entries)
        for m, times in timers["skipped"].items():
            m.skipped = deque(times)
        for m, times in timers["idle"].items():  # (the other patterns': they move the clock)
            for t in times:
                host.schedule(t, m, IDLE_TOKEN, -1, t)
        for m, tid, z, start in self.entered:  # type: ignore[union-attr]
            zone = m.pattern.zone_by_id[z]
            deadline = start + zone.length
            if (m.slot, tid, z, start) not in have and not _fired(zone, deadline, host.time):
                host.schedule(deadline, m, tid, z, start)
        for m in self.engine.matchers:
            if m.slot not in kept:
                continue
            clock = m.pattern.clock
            if (clock is not None and m.clock_start is not None
                    and clock.due(m.clock_start) != math.inf
                    and (m.slot, CLOCK_TOKEN, -1, m.clock_start) not in have):
                host.schedule(clock.due(m.clock_start), m, CLOCK_TOKEN, -1, m.clock_start)
            dl = m.deadlines
            if dl and not any(h[3] == m.slot and h[4] == -1 for h in host.timers.heap):
                host.schedule(dl[0][0], m, -1, dl[0][2], dl[0][3])

    def clocks(self, saved: Any) -> None:
        if saved is None:
            return
        self.dict_(saved, "clocks")
        self.time(saved.get("start"), "clocks.start", null=True)
        if type(saved.get("stopped", False)) is not bool:
            raise self.bad("clocks.stopped", "expected true or false", saved.get("stopped"))
        start = saved.get("start")
        clocked = {m.name: m.pattern.clock for m in self.engine.matchers
                   if m.pattern.clock is not None}
        for name, begun in self.dict_(saved.get("intervals", {}), "clocks.intervals").items():
            if name not in clocked:
                raise self.bad(f"clocks.intervals.{name}", "not a pattern that starts with "
                               "timer:interval or timer:at "
                               f"({', '.join(sorted(clocked)) or 'none'})",
                               show=False)
            if self.time(begun, f"clocks.intervals.{name}", null=True) is None:
                continue
            # an interval under way has not fired yet (its end is not before the engine's
            # time), and before any event only the statements' start can have begun it: else
            # the clock would fire every interval from then to now
            if clocked[name].due(begun) < self.clock or (
                    self.clock == -math.inf and begun != start):
                raise self.bad(f"clocks.intervals.{name}", "not an interval under way at the "
                               f"engine's time {self.clock:g} (start {start})", begun)
        self.engine.restore_clocks(saved)

    def windows(self, saved: dict[str, Any]) -> None:
        """Each window statement's state (all of them: the fingerprint says the program has
        the same statements, so a missing or extra one is a damaged state)."""
        engine = self.engine
        names = {r.statement.name for r in engine.windows}
        if set(saved) != names:
            missing, extra = sorted(names - set(saved)), sorted(set(saved) - names)
            raise StateError("engine state does not match the window statements: "
                             + "; ".join([*(f"no state for '{n}'" for n in missing),
                                          *(f"unknown statement '{n}'" for n in extra)]))
        for r in engine.windows:
            name = r.statement.name
            where = f"windows.{name}"
            def decode(d: Any, where: str = where, n: list[int] = [0]) -> Event:  # noqa: B006
                n[0] += 1  # (a fresh list per statement: the record's place in messages)
                return self.event(d, f"{where}.records[{n[0] - 1}]")

            if isinstance(saved[name], dict) and saved[name].get("finished") is not False:
                # (the engine never ends a statement's input: it goes on after a restore)
                raise self.bad(f"{where}.finished", "expected false", saved[name].get("finished"))
            try:
                self.value(saved[name], where)
                load_runner(r, saved[name], decode)
                if r.time > self.clock:  # (its next event would find the time going back)
                    raise self.bad(f"{where}.time", f"after the engine's time {self.clock:g}",
                                   r.time)
            except StateError:
                raise
            except WindowError as e:
                raise StateError(str(e)) from None
            except (KeyError, TypeError, ValueError, IndexError, AttributeError,
                    OverflowError, EvaluationError) as e:
                raise StateError(f"malformed state of window statement '{name}': "
                                 f"{type(e).__name__}: {e}") from None
