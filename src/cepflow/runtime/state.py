"""Saving and restoring engine state — a documented, versioned JSON format (no pickle).

Format ``cepflow.engine-state`` version 1 (see docs/state-format.md)::

    {"format": "cepflow.engine-state", "version": 1, "program": "<fingerprint>",
     "time": <ms or null>, "counters": {"token": n, "match": n, "input": n},
     "patterns": {"<name>": [{"id": n, "part": <key or null>, "created": <ms>,
                              "threads": [{"state": n, "bindings": {...},
                                           "zones": {"<zone id>": <entry ms>},
                                           "events": [<event>, ...]}]}]}}

``<event>`` is ``{"type", "params": [...], "ts", "id", "seq"}`` for an atomic event and
``{"type", "params", "ts", "bindings", "match", "parts": [<event>, ...]}`` for a complex one.
Timers are not stored: they are derived from the zone entry times of the restored threads.
"""

from __future__ import annotations

import json
import math
from typing import Any

from cepflow.events.model import ComplexEvent, Event
from cepflow.runtime.engine import Engine
from cepflow.runtime.tokens import Thread, Token

FORMAT = "cepflow.engine-state"
VERSION = 1


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


def _num(x: float) -> float | None:
    return None if x is None or math.isinf(x) else x


def _refuse_windows(engine: Engine) -> None:
    """Data-window state (window contents, aggregates, batch boundaries) is not part of
    format version 1: refuse instead of saving a state that would lose it."""
    if getattr(engine, "windows", None):
        names = ", ".join(r.statement.name for r in engine.windows)
        raise StateError(f"engine state with data-window statements ({names}) cannot be saved "
                         "or restored yet (format version 1 holds pattern state only)")


def save_state(engine: Engine) -> dict[str, Any]:
    """The engine's partial matches and clocks as a JSON-compatible dict."""
    _refuse_windows(engine)
    patterns: dict[str, list[dict[str, Any]]] = {}
    for m in engine.matchers:
        toks = []
        for tok in m.all_tokens():
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
    }
    esper = {m.name: {"done": m.done, "seen": [[list(k), t] for k, t in m.seen.items()]}
             for m in engine.matchers if m.context == "esper" and (m.done or m.seen)}
    if esper:  # optional: Esper start policies (once) and every-distinct keys
        state["esper"] = esper
    try:
        json.dumps(state, allow_nan=False)
    except (TypeError, ValueError) as err:
        raise StateError(f"engine state holds a value JSON cannot represent: {err}") from None
    return state


def restore_state(engine: Engine, state: dict[str, Any]) -> Engine:
    """Load ``state`` (from :func:`save_state`) into a fresh engine for the same program."""
    _refuse_windows(engine)
    if state.get("format") != FORMAT:
        raise StateError(f"not a cepflow engine state (format {state.get('format')!r})")
    if state.get("version") != VERSION:
        raise StateError(f"engine state version {state.get('version')} is not supported "
                         f"(this cepflow reads version {VERSION})")
    if state.get("program") != engine.program.fingerprint:
        raise StateError("engine state was saved for different patterns "
                         f"({state.get('program')} != {engine.program.fingerprint})")
    if any(m.count() for m in engine.matchers):
        raise StateError("restore into a fresh engine")
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
    return engine
