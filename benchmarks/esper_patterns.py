"""Esper-style pattern benchmark: the motorbike ``Crash`` pattern (filter + followed-by +
within, seed 003 Listing 5) over 1,000,000 events.

Workload: ``Motorbike(timestamp, motorbikeId, location, speed, tire1, tire2, seat)`` events;
each of K bikes reports once a second (``ts = i * 1000 // K`` ms, bike uniformly random), so
the work per event does not depend on K; speed is 0 with probability 0.1, else uniform in
1-129 (``random.Random(20261122)``). The statement is examples/motorbike/motorbike.epl's:

    every a1 = Motorbike(a1.speed >= 50)
      -> a2 = Motorbike(a2.speed = 0 and a1.motorbikeId = a2.motorbikeId)
    where timer:within(3 seconds)

read from EPL, lowered to the engine's automaton (context esper: a new instance at every fast
reading, the bike id unified through the key index) and run in process two ways: ``run`` —
``Engine.run`` over the stream, which takes the column kernel of runtime/batch.py for this
shape (batches of 2^18 events) — and ``process`` — ``Engine.process`` event by event (the token
path, with the matcher's direct step for this shape). Each key count and path runs in its own
forked process; only the processing is timed (events built before). Every run is checked
against an independent oracle — for every reading at >= 50 km/h, the first later stop of the
same bike, if less than 3 s later — and aborts (exit code 1) on any difference in the number of
matches or their checksum.

    .venv/bin/python benchmarks/esper_patterns.py          # 1M events, 10,000 and 100 keys
    .venv/bin/python benchmarks/esper_patterns.py --quick  # 100,000 events
    .venv/bin/python benchmarks/esper_patterns.py --paths run   # the column kernel only
"""

from __future__ import annotations

import argparse
import bisect
import gc
import random
import sys
import time
from collections.abc import Sequence
from typing import Any

from common import (
    ROOT,
    BenchmarkFailure,
    console,
    fmt_bytes,
    fmt_int,
    int_list,
    machine_line,
    make_table,
    metadata,
    peak_rss_kib,
    positive_int,
    run_isolated,
    write_json,
)

from cepflow.events.event import Event
from cepflow.language.epl import parse_epl
from cepflow.loader import load_module, parse_path
from cepflow.runtime.engine import Engine

DEFAULT_JSON = ROOT / "benchmarks" / "results" / "esper_patterns.json"
DEFAULT_EVENTS = 1_000_000
QUICK_EVENTS = 100_000
DEFAULT_KEYS = (10_000, 100)
SEED = 20261122
WITHIN_MS = 3000
#: the issue's target for the in-process engine
TARGET = 1_000_000


def make_events(n: int, keys: int) -> list[Event]:
    rng = random.Random(SEED)
    out = []
    for i in range(n):
        bike = rng.randrange(keys)
        speed = 0 if rng.random() < 0.1 else rng.randrange(1, 130)
        ts = i * 1000 // keys
        out.append(Event("Motorbike", (ts // 1000, bike, "Cadiz", speed, 2.5, 2.5, True), ts,
                         None, i))
    return out


def oracle(events: list[Event]) -> tuple[int, int]:
    """(matches, checksum): each fast reading with the first stop of its bike, if that stop
    comes less than 3 s later."""
    stops: dict[int, list[tuple[float, int]]] = {}
    for e in events:
        if e.params[3] == 0:
            stops.setdefault(e.params[1], []).append((e.ts, e.seq))
    count = checksum = 0
    for e in events:
        if e.params[3] < 50:
            continue
        lst = stops.get(e.params[1], [])
        j = bisect.bisect_right(lst, (e.ts, e.seq))
        # (Esper's timer:within fires before an event at its deadline: a stop exactly 3 s
        # later is too late — docs/esper.md, "One instant")
        if j < len(lst) and lst[j][0] - e.ts < WITHIN_MS:
            count += 1
            checksum = (checksum + e.seq * 1_000_003 + lst[j][1]) % (1 << 61)
    return count, checksum


def crash_program() -> Any:
    module = parse_path(ROOT / "examples" / "motorbike" / "motorbike.epl")
    crash = next(d for d in module.decls if getattr(d, "name", None) == "Crash")
    schema = [d for d in module.decls if getattr(d, "name", None) == "Motorbike"]
    return load_module(type(module)((*schema, crash), source=module.source))


#: issue 21's three-event sequence (a chain for the column kernel since issue 21)
CHAIN_EPL = """create schema A(key integer, v double);
create schema B(key integer, v double);
create schema C(key integer, v double);
@Name('Three')
insert into Three
select a.key as key, a.v as av, c.v as cv
from pattern [every a=A -> (b=B(b.key = a.key) -> c=C(c.key = a.key))
              where timer:within(10 sec)];
"""
CHAIN_WITHIN_MS = 10_000


def chain_events(n: int, keys: int = 16, per_second: int = 100) -> list[Event]:
    """Issue 21's workload: types A/B/C at 0.3/0.3/0.4, ``keys`` keys, timestamps in whole
    seconds (``per_second`` events each)."""
    rng = random.Random(SEED)
    out = []
    for i in range(n):
        r = rng.random()
        t = "A" if r < 0.3 else "B" if r < 0.6 else "C"
        out.append(Event(t, (rng.randrange(keys), rng.random()), (i // per_second) * 1000,
                         None, i))
    return out


#: issue 21's pair pattern, over the same stream
PAIR_EPL = """create schema A(key integer, v double);
create schema B(key integer, v double);
create schema C(key integer, v double);
@Name('Pair')
insert into Pair
select a.key as key
from pattern [every a=A -> b=B(b.key = a.key) where timer:within(10 sec)];
"""


def chain_oracle(events: list[Event], stages: tuple[str, ...] = ("B", "C")) -> int:
    """Matches of the chain: each A with the first later B of its key, then the first C of
    its key after that B, the C less than 10 s after the A (``stages=("B",)``: the pair)."""
    rows: dict[tuple[str, int], list[int]] = {}
    for i, e in enumerate(events):
        rows.setdefault((e.type, e.params[0]), []).append(i)
    count = 0
    for i, e in enumerate(events):
        if e.type != "A":
            continue
        j = i
        for t in stages:
            lst = rows.get((t, e.params[0]), [])
            k = bisect.bisect_right(lst, j)
            j = lst[k] if k < len(lst) else -1
            if j < 0 or events[j].ts - e.ts >= CHAIN_WITHIN_MS:
                break
        else:
            count += 1
    return count


def chain_program() -> Any:
    return load_module(parse_epl(CHAIN_EPL))


def pair_program() -> Any:
    return load_module(parse_epl(PAIR_EPL))


PATHS = ("run", "process")
PATH_LABEL = {"run": "Engine.run (column kernel)", "process": "Engine.process (per event)"}


def measure(n: int, keys: int, repeat: int, path: str = "process") -> dict[str, Any]:
    events = make_events(n, keys)
    expected = oracle(events)
    program = crash_program()
    gc.collect()
    rss_before = peak_rss_kib()
    best = float("inf")
    got = (0, 0)
    for _ in range(repeat):
        engine = Engine(program)
        t0 = time.perf_counter()
        if path == "run":
            out = list(engine.run(events))
        else:
            out = []
            for e in events:
                out.extend(engine.process(e))
        dt = time.perf_counter() - t0
        best = min(best, dt)
        checksum = 0
        for m in out:
            a1, a2 = m.parts
            checksum = (checksum + a1.seq * 1_000_003 + a2.seq) % (1 << 61)
        got = (len(out), checksum)
        partial = engine.partial_matches()["Crash"]
        del engine, out
    if got != expected:
        raise BenchmarkFailure(f"{keys} keys, {path}: engine gave {got[0]:,} matches (checksum "
                               f"{got[1]}), the oracle {expected[0]:,} ({expected[1]})")
    return {"events": n, "keys": keys, "path": path, "seconds": best, "events_per_s": n / best,
            "matches": got[0], "partial_matches_at_end": partial,
            "peak_rss_increase_kib": peak_rss_kib() - rss_before}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=positive_int, default=None)
    ap.add_argument("--keys", type=int_list, default=list(DEFAULT_KEYS))
    ap.add_argument("--repeat", type=positive_int, default=1)
    ap.add_argument("--paths", default=",".join(PATHS),
                    help="comma-separated: run (Engine.run, column kernel), process (per event)")
    ap.add_argument("--quick", action="store_true", help=f"{QUICK_EVENTS:,} events")
    ap.add_argument("--json", default=str(DEFAULT_JSON))
    args = ap.parse_args(argv)
    if args.events is None:
        args.events = QUICK_EVENTS if args.quick else DEFAULT_EVENTS
    args.paths = [p.strip() for p in args.paths.split(",") if p.strip()]
    if not args.paths or any(p not in PATHS for p in args.paths):
        ap.error(f"--paths: choose from {', '.join(PATHS)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    con, log = console(), console(stderr=True)
    rows = []
    for path in args.paths:
        for keys in args.keys:
            log.print(f"[dim]Crash / {path} / {keys:,} keys, {args.events:,} events ...[/dim]")
            try:
                rows.append(run_isolated(measure, args.events, keys, args.repeat, path))
            except BenchmarkFailure as e:
                log.print(f"[bold red]ABORTED[/bold red]: {e}")
                return 1
    meta = metadata("esper_patterns", {"events": args.events, "keys": args.keys,
                                       "paths": args.paths, "repeat": args.repeat,
                                       "quick": args.quick, "within_ms": WITHIN_MS,
                                       "seed": SEED})
    table = make_table(f"Crash pattern (every a1 -> a2 within 3 s), {fmt_int(args.events)} "
                       "events, in process", ["path", "keys", "events/s", "vs 1M/s target",
                                              "matches", "open at end", "peak RSS Δ"])
    for r in rows:
        table.add_row(PATH_LABEL[r["path"]], fmt_int(r["keys"]), fmt_int(r["events_per_s"]),
                      f"{r['events_per_s'] / TARGET:.2f}x", fmt_int(r["matches"]),
                      fmt_int(r["partial_matches_at_end"]),
                      fmt_bytes(r["peak_rss_increase_kib"] * 1024))
    con.print(table)
    flat = {}
    for p in args.paths:
        rates = [r["events_per_s"] for r in rows if r["path"] == p]
        flat[p] = max(rates) / min(rates) if rates else 1.0
        con.print(f"[bold]Flatness[/bold] of {PATH_LABEL[p]} (max/min events/s over key "
                  f"counts): {flat[p]:.2f}")
    con.print(machine_line(meta["machine"]))
    path = write_json(args.json, {**meta, "rows": rows,
                                  "summary": {"max_over_min": flat, "target": TARGET}})
    con.print(f"[dim]Results written to {path}[/dim]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
