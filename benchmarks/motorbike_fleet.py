"""Motorbike fleet benchmark: the whole of examples/motorbike/motorbike.epl (five Esper
patterns and the two window statements of seed 003 Listings 3-4) over a generated stream.

Workload: ``examples/motorbike/generate.py`` (deterministic seed): by default 1,000,000
``Motorbike`` readings over 10 days and 5 locations, with 300 accidents and 3,000 crashes at
known times and places, for 10,000 and 100 bikes (the work per event does not depend on the
number of bikes). The program is read from the EPL file and run by ``Engine.process`` event by
event (patterns and window statements in one engine, complex events re-entering). Each bike
count runs in its own forked process; only the processing is timed (events built before).
Every run is checked against the generator's expectation — the number of Crash events, the
Accident, AccidentsReport and DangerousLocation events computed from the placed scenarios alone
— and aborts (exit code 1) on any difference.

    .venv/bin/python benchmarks/motorbike_fleet.py          # 1M events, 10,000 and 100 bikes
    .venv/bin/python benchmarks/motorbike_fleet.py --quick  # 100,000 events
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
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
from cepflow.loader import load
from cepflow.runtime.engine import Engine

DEFAULT_JSON = ROOT / "benchmarks" / "results" / "motorbike_fleet.json"
DEFAULT_EVENTS = 1_000_000
QUICK_EVENTS = 100_000
DEFAULT_BIKES = (10_000, 100)
PROGRAM = ROOT / "examples" / "motorbike" / "motorbike.epl"
FIELDS = ("timestamp", "motorbikeId", "location", "speed", "tire1", "tire2", "seat")


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("motorbike_generate",
                                                  ROOT / "examples" / "motorbike" / "generate.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def measure(n: int, bikes: int, seed: int) -> dict[str, Any]:
    gen = _generator()
    scale = n / DEFAULT_EVENTS
    stream, info = gen.generate(n, bikes, 10, max(2, int(300 * scale)),
                                max(10, int(3000 * scale)), seed)
    exp = gen.expected(info)
    events = [Event("Motorbike", tuple(r[f] for f in FIELDS), r["ts"]) for r in stream]
    del stream
    program = load(PROGRAM)
    gc.collect()
    rss_before = peak_rss_kib()
    engine = Engine(program)
    t0 = time.perf_counter()
    out = []
    for e in events:
        out.extend(engine.process(e))
    dt = time.perf_counter() - t0
    by_type: dict[str, list[Any]] = {}
    for m in out:
        by_type.setdefault(m.type, []).append(m)

    def rows(name: str, *fields: str) -> list[tuple[Any, ...]]:
        return [(m.ts, *(m.bindings_for_output()[f] for f in fields))
                for m in by_type.get(name, [])]

    checks = {
        "Crash": (len(by_type.get("Crash", [])), exp["crashes"]),
        "Accident": (rows("Accident", "location"), [tuple(a) for a in exp["accidents"]]),
        "AccidentsReport": (sorted(rows("AccidentsReport", "location", "count")),
                            sorted(tuple(r) for r in exp["report"])),
        "DangerousLocation": (rows("DangerousLocation", "location"),
                              [tuple(d) for d in exp["dangerous"]]),
    }
    for name, (got, want) in checks.items():
        if got != want:
            raise BenchmarkFailure(f"{bikes} bikes: {name} differs from the generator's "
                                   f"expectation ({str(got)[:200]} != {str(want)[:200]})")
    return {"events": n, "bikes": bikes, "seconds": dt, "events_per_s": n / dt,
            "complex_events": {k: len(v) for k, v in sorted(by_type.items())},
            "window_events_held_at_end": sum(r.window_size for r in engine.windows),
            "partial_matches_at_end": sum(engine.partial_matches().values()),
            "peak_rss_increase_kib": peak_rss_kib() - rss_before}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=positive_int, default=None)
    ap.add_argument("--bikes", type=int_list, default=list(DEFAULT_BIKES))
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help=f"{QUICK_EVENTS:,} events")
    ap.add_argument("--json", default=str(DEFAULT_JSON))
    args = ap.parse_args(argv)
    if args.events is None:
        args.events = QUICK_EVENTS if args.quick else DEFAULT_EVENTS
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    con, log = console(), console(stderr=True)
    results = []
    for bikes in args.bikes:
        log.print(f"[dim]motorbike.epl / {bikes:,} bikes, {args.events:,} events ...[/dim]")
        try:
            results.append(run_isolated(measure, args.events, bikes, args.seed))
        except BenchmarkFailure as e:
            log.print(f"[bold red]ABORTED[/bold red]: {e}")
            return 1
    meta = metadata("motorbike_fleet", {"events": args.events, "bikes": args.bikes,
                                        "seed": args.seed, "quick": args.quick})
    table = make_table(f"motorbike.epl (5 patterns + 2 window statements), "
                       f"{fmt_int(args.events)} events, Engine.process",
                       ["bikes", "events/s", "Crash", "Accident", "AccidentsReport",
                        "DangerousLocation", "peak RSS Δ"])
    for r in results:
        ce = r["complex_events"]
        table.add_row(fmt_int(r["bikes"]), fmt_int(r["events_per_s"]),
                      *(fmt_int(ce.get(k, 0)) for k in ("Crash", "Accident", "AccidentsReport",
                                                        "DangerousLocation")),
                      fmt_bytes(r["peak_rss_increase_kib"] * 1024))
    con.print(table)
    rates = [r["events_per_s"] for r in results]
    flat = max(rates) / min(rates) if rates else 1.0
    con.print(f"[bold]Flatness[/bold] (max/min events/s over bike counts): {flat:.2f}")
    con.print(machine_line(meta["machine"]))
    path = write_json(args.json, {**meta, "rows": results, "summary": {"max_over_min": flat}})
    con.print(f"[dim]Results written to {path}[/dim]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
