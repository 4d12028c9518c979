"""When are two engine states the same? A fingerprint of the engine's saved state
(runtime/state.py, docs/state-format.md) with what only names things removed.

Two runs that reach the same partial matches, window contents, Esper start and
every-distinct state and clocks, at the same time, continue alike: every later event gives the
same complex events. What differs between such runs is only numbering — token ids, the input
sequence numbers of the events held, match ids, a window statement's record numbers, the
counters — so the fingerprint keeps their *order* (a token's age, which held event is older)
and drops their values. A held complex event counts by its type, parameters and time: the
input events it stands for (``parts``) and its output bindings are provenance that no later
step reads (patterns read parameters; rule actions do not run in a search). Times are kept as
they are (absolute), so states at different times are never merged: that keeps the
fingerprint sound for everything that reads the clock (batch boundaries, the statement start)
at the price of some merging a time shift would allow.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from cepflow.runtime.engine import Engine
from cepflow.runtime.state import save_state
from cepflow.windows.aggregates import FIRST


def _seqs(ev: dict[str, Any], out: list[int]) -> None:
    if "parts" not in ev and ev.get("seq") is not None:
        out.append(ev["seq"])


def _event(ev: dict[str, Any], rank: dict[int, int]) -> list[Any]:
    if "parts" in ev:  # a complex event: what later steps read (not the events it stands for)
        return [ev["type"], ev["params"], ev["ts"]]
    return [ev["type"], ev["params"], ev["ts"], rank.get(ev.get("seq"), -1)]


def _runner(doc: dict[str, Any], rank: dict[int, int]) -> dict[str, Any]:
    """A window statement's saved state with its record numbers replaced by their order."""
    local = {seq: i for i, seq in enumerate(sorted(int(r[0]) for r in doc["records"]))}

    def seq(x: Any) -> Any:
        return local.get(x, x) if isinstance(x, int) else x

    def seqs(xs: Any) -> Any:
        return [seqs(x) if isinstance(x, list) else seq(x) for x in xs]

    window = dict(doc["window"])
    if "items" in window:
        window["items"] = seqs(window["items"])
    groups = []
    for row in doc["groups"]:
        row = list(row)
        i = 1 + FIRST
        if i < len(row) and row[i] is not None:
            row[i] = seq(row[i])
        for j, v in enumerate(row[1:], 1):
            if j != i and isinstance(v, list) and v and isinstance(v[0], list):
                row[j] = [[seq(s), x] for s, x in v]  # a sliding min/max deque
        groups.append(row)
    out = {"time": doc["time"], "finished": doc["finished"], "window": window,
           "groups": groups,
           "records": [[local[int(r[0])], r[1], _event(r[2], rank)] for r in doc["records"]]}
    if "last" in doc:
        out["last"] = [[k, seq(s)] for k, s in doc["last"]]
    if "batch" in doc:
        out["batch"] = seqs(doc["batch"])
    if "batches" in doc:
        out["batches"] = [[k, seqs(ss)] for k, ss in doc["batches"]]
    return out


def canonical(doc: dict[str, Any]) -> dict[str, Any]:
    """The saved state ``doc`` without numbering (see the module docstring)."""
    held: list[int] = []
    for toks in doc["patterns"].values():
        for tok in toks:
            for th in tok["threads"]:
                for ev in th["events"]:
                    _seqs(ev, held)
    for w in doc.get("windows", {}).values():
        for r in w["records"]:
            _seqs(r[2], held)
    rank = {s: i for i, s in enumerate(sorted(set(held)))}
    patterns = {}
    for name, toks in doc["patterns"].items():
        patterns[name] = [
            [tok["part"], tok["created"],
             [[th["state"], sorted(th["bindings"].items()), sorted(th["zones"].items()),
               [_event(ev, rank) for ev in th["events"]]] for th in tok["threads"]]]
            for tok in sorted(toks, key=lambda t: t["id"])]
    out: dict[str, Any] = {"time": doc["time"], "patterns": patterns,
                           "windows": {n: _runner(w, rank)
                                       for n, w in doc.get("windows", {}).items()}}
    for key in ("esper", "clocks"):
        if key in doc:
            out[key] = doc[key]
    if doc.get("rows"):
        out["rows"] = doc["rows"]  # (the search feeds events one by one: none expected)
    return out


def fingerprint(engine: Engine) -> tuple[bytes, dict[str, Any]]:
    """(a 16-byte digest of the engine's canonical state, its saved state)."""
    doc = save_state(engine)
    text = json.dumps(canonical(doc), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.blake2b(text.encode(), digest_size=16).digest(), doc
