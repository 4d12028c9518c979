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
Timers are not stored: they are derived from the zone entry times of the restored threads and
rows. ``windows`` holds each data-window statement's state (:mod:`cepflow.windows.snapshot`).
Versions 1 (without ``windows``) and 2 (without ``rows``) are still read. A NaN or infinite value
(JSON has no number for it) is saved as ``{"$float": "NaN"}`` and ``"nonfinite": true`` marks
such a state (:mod:`cepflow.events.jsonvalues`), so the state stays JSON and comes back exactly.
"""

from __future__ import annotations

import json
import math
from typing import Any

from cepflow.events.jsonvalues import tagged, untagged
from cepflow.events.model import ComplexEvent, Event
from cepflow.runtime.batch import gc_paused
from cepflow.runtime.engine import Engine
from cepflow.runtime.matcher import Matcher
from cepflow.runtime.tokens import PendingRows, Thread, Token
from cepflow.windows.snapshot import load_runner, save_runner
from cepflow.windows.statement import WindowError

FORMAT = "cepflow.engine-state"
VERSION = 3
#: the versions :func:`restore_state` reads (1: patterns only, before window statements;
#: 2: before chain rows)
READS = (1, 2, 3)


class StateError(Exception):
    """State that cannot be saved (non-JSON values) or restored (wrong format or program)."""


def _event(e: Event) -> dict[str, Any]:
    if isinstance(e, ComplexEvent):
        return {"type": e.type, "params": list(e.params), "ts": e.ts,
                "bindings": e.bindings, "match": e.match_id,
                "parts": [_event(p) for p in e.parts]}
    return {"type": e.type, "params": list(e.params), "ts": e.ts, "id": e.id, "seq": e.seq}


def _unevent(d: dict[str, Any]) -> Event:
    if "parts" in d:
        return ComplexEvent(d["type"], tuple(d["params"]), d["ts"], d["bindings"],
                            [_unevent(p) for p in d["parts"]], d.get("match", -1))
    return Event(d["type"], tuple(d["params"]), d["ts"], d.get("id"), d.get("seq", -1))


def _rows(rows: PendingRows) -> dict[str, Any]:
    """A chain's pending rows as saved (the ``rows`` entry of a pattern). An atomic event is
    the list ``[type, params, ts, id, seq]`` (no key names to write and read per event; made
    inline, 2x faster than a call per event), a complex one the dict of :func:`_event`."""
    return {"zone": rows.zone, "var": rows.var, "ids": list(rows.ids),
            "states": list(rows.states or ()), "keys": list(rows.keys or ()),
            "events": [[_event(e) if isinstance(e, ComplexEvent)
                        else [e.type, e.params, e.ts, e.id, e.seq] for e in evs]
                       for evs in rows.events]}


def _unrows(saved: list[list[Any]]) -> list[list[Event]]:
    """The events of saved rows (:func:`_rows`)."""
    return [[_unevent(d) if isinstance(d, dict) else Event(d[0], tuple(d[1]), d[2], d[3], d[4])
             for d in evs] for evs in saved]


def _num(x: float) -> float | None:
    return None if x is None or math.isinf(x) else x


def has_state(engine: Engine) -> bool:
    """Whether the engine holds anything a fresh engine lacks besides its clock and counters:
    partial matches, Esper start/every-distinct state, or a window statement that has taken an
    event (its contents, batches and reference point). Without it, a fresh engine given the
    same later events produces the same complex events (their match ids aside)."""
    return (any(m.count() for m in engine.matchers)
            or any(m.done or m.seen for m in engine.matchers if m.context == "esper")
            or any(r.time != float("-inf") for r in engine.windows)
            or (engine.statement_start is not None and bool(engine._clocks)))


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
        if held is not None and held.states is not None:
            # a chain's rows stay rows (a pair's become tokens: its deadline queue is built
            # from them, Matcher.materialize); its registered tokens are all older
            rows[m.name] = _rows(held)
            tokens = m.registered_tokens()
        else:
            tokens = m.all_tokens()
        toks = []
        for tok in tokens:
            toks.append({
                "id": tok.id, "part": tok.part, "created": tok.created,
                "threads": [{"state": th.state, "bindings": th.bindings,
                             "zones": {str(z): s for z, s in (th.zstart or {}).items()},
                             "events": [_event(e) for e in th.events]}
                            for th in tok.threads],
            })
        patterns[m.name] = toks
    state = {
        "format": FORMAT, "version": VERSION, "program": engine.program.fingerprint,
        "time": _num(engine.time),
        "counters": {"token": engine._token_id, "match": engine._match_id,
                     "input": engine._input_seq},
        "patterns": patterns,
        "windows": {r.statement.name: save_runner(r, _event) for r in engine.windows},
    }
    esper = {m.name: {"done": m.done, "seen": [[list(k), t] for k, t in m.seen.items()]}
             for m in engine.matchers if m.context == "esper" and (m.done or m.seen)}
    if rows:  # optional (version 3): partial matches a chain kernel holds as rows
        state["rows"] = rows
    if esper:  # optional: Esper start policies (once) and every-distinct keys
        state["esper"] = esper
    clocks = engine.clock_state()
    if clocks is not None:  # optional: patterns that start with timer:interval
        state["clocks"] = clocks
    return state


def restore_state(engine: Engine, state: dict[str, Any]) -> Engine:
    """Load ``state`` (from :func:`save_state`, version 1, 2 or 3) into a fresh engine for the
    same program."""
    with gc_paused():
        return _restore(engine, state)


def _restore(engine: Engine, state: dict[str, Any]) -> Engine:
    if isinstance(state, dict) and state.get("nonfinite"):
        state = untagged(state)
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        found = state.get("format") if isinstance(state, dict) else type(state).__name__
        raise StateError(f"not a cepflow engine state (format {found!r})")
    if state.get("version") not in READS:
        raise StateError(f"engine state version {state.get('version')} is not supported "
                         f"(this cepflow reads versions {', '.join(map(str, READS))})")
    if state.get("program") != engine.program.fingerprint:
        raise StateError("engine state was saved for different patterns "
                         f"({state.get('program')} != {engine.program.fingerprint})")
    if any(m.count() for m in engine.matchers) or engine.time != float("-inf"):
        raise StateError("restore into a fresh engine")
    _restore_windows(engine, state.get("windows", {}))
    by_name = {m.name: m for m in engine.matchers}
    engine.time = state["time"] if state["time"] is not None else float("-inf")
    c = state["counters"]
    engine._token_id, engine._match_id, engine._input_seq = c["token"], c["match"], c["input"]
    for name, extra in state.get("esper", {}).items():
        m = by_name.get(name)
        if m is None:
            raise StateError(f"engine state has unknown pattern '{name}'")
        m.done = bool(extra.get("done"))
        m.seen = {tuple(k): t for k, t in extra.get("seen", [])}
    for name, toks in state["patterns"].items():
        m = by_name.get(name)
        if m is None:
            raise StateError(f"engine state has unknown pattern '{name}'")
        for t in toks:
            threads = []
            for th in t["threads"]:
                evs = [_unevent(e) for e in th["events"]]
                zs = {int(z): s for z, s in th["zones"].items()} or None
                threads.append(Thread(th["state"], dict(th["bindings"]), evs, zs,
                                      evs[-1] if evs else None))
            tok = Token(t["id"], t["part"], t["created"], threads)
            m.register(tok)
            for th in threads:
                if th.zstart:
                    m._schedule(tok, th)
    for name, saved in state.get("rows", {}).items():
        m = by_name.get(name)
        if m is None:
            raise StateError(f"engine state has unknown pattern '{name}'")
        _restore_rows(m, saved)
    engine.restore_clocks(state.get("clocks"))
    return engine


def _restore_rows(m: Matcher, saved: dict[str, Any]) -> None:
    """A chain's saved rows as its pending rows again (younger than its restored tokens), with
    the window timer each partial match holds (Matcher._schedule of its token)."""
    ids, states, keys = list(saved["ids"]), list(saved["states"]), list(saved["keys"])
    events = _unrows(saved["events"])
    z = saved["zone"]
    if not (len(ids) == len(states) == len(keys) == len(events)) or not all(events):
        raise StateError(f"malformed rows of pattern '{m.name}'")
    if z is not None and z not in m.zone_by_id:
        raise StateError(f"rows of pattern '{m.name}' name an unknown zone {z}")
    if ids:
        m.pending = PendingRows(ids, events, z, states, keys, saved["var"])
    if z is not None and z in m.timed_zones:
        length = m.zone_by_id[z].length
        schedule = m.engine.schedule
        for tid, evs in zip(ids, events, strict=True):
            start = evs[0].ts
            schedule(start + length, m, tid, z, start)


def _restore_windows(engine: Engine, saved: dict[str, Any]) -> None:
    """Each window statement's state (all of them: the fingerprint says the program has the
    same statements, so a missing or extra one is a damaged state)."""
    names = {r.statement.name for r in engine.windows}
    if set(saved) != names:
        missing, extra = sorted(names - set(saved)), sorted(set(saved) - names)
        raise StateError("engine state does not match the window statements: "
                         + "; ".join([*(f"no state for '{n}'" for n in missing),
                                      *(f"unknown statement '{n}'" for n in extra)]))
    for r in engine.windows:
        try:
            load_runner(r, saved[r.statement.name], _unevent)
        except WindowError as e:
            raise StateError(str(e)) from None
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
            raise StateError(f"malformed state of window statement '{r.statement.name}': "
                             f"{type(e).__name__}: {e}") from None
