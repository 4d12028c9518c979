"""Sliding-window aggregates benchmark: ``cepflow.windows`` over 1,000,000 events.

Workload: ``Reading(sensor, temp)`` events, one per millisecond (``ts = i``), each from a
uniformly random one of K sensors, temperature uniform in 20-100 with one decimal
(``random.Random(20261121)``). Statements (docs/windows.md):

* ``avg``    — ``select sensor, count(*) as n, sum(temp) as total, avg(temp) as mean
  from Reading#time(10 sec) group by sensor`` (the column-wise fast path applies);
* ``minmax`` — ``select sensor, min(temp) as lo, max(temp) as hi from Reading#time(10 sec)
  group by sensor`` (monotonic deques; event by event only).

Paths: ``events`` — ``WindowRunner.process`` per event, each output row a ``ComplexEvent``;
``batch`` — ``WindowRunner.process_batch`` over 65,536-event batches (column-wise inside,
``ComplexEvent`` rows out); ``columns`` — ``SlidingAggregate.process`` over numpy arrays,
rows out as arrays (no event objects at all). Every input event makes one row when it arrives
and one when it leaves the window 10 s later (Esper's insert stream), so ~2 rows per event.

Each (statement, path, keys) runs in its own forked process; only the processing is timed
(data generated before). Every run is checked: the number of rows must be the arrivals plus
the expiries by the last timestamp, and all paths of a statement must agree on the rows'
checksum; a mismatch aborts the benchmark (exit code 1).

    .venv/bin/python benchmarks/windows_aggregate.py          # 1M events, 64 and 10,000 keys
    .venv/bin/python benchmarks/windows_aggregate.py --quick  # 100,000 events, seconds
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
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
from rich.console import Console

from cepflow.events.event import Event, EventType, ParamSpec
from cepflow.windows import SlidingAggregate, WindowRunner, WindowSpec, WindowStatement, parse

DEFAULT_JSON = ROOT / "benchmarks" / "results" / "windows_aggregate.json"
DEFAULT_EVENTS = 1_000_000
DEFAULT_KEYS = (64, 10_000)
QUICK_EVENTS = 100_000
WINDOW_MS = 10_000
BATCH = 65_536
#: events of the separate, untimed tracemalloc run
TRACE_EVENTS = 100_000
SEED = 20261121
#: Esper's classic throughput claim, > 500,000 events/s (EsperTech; docs/references.md)
ESPER_CLAIM = 500_000

SCHEMAS = {"Reading": EventType("Reading", (ParamSpec("sensor", "str"),
                                            ParamSpec("temp", "float")))}
STATEMENTS = {
    "avg": (["sensor", ("count(*)", "n"), ("sum(temp)", "total"), ("avg(temp)", "mean")],
            ("events", "batch", "columns")),
    "minmax": (["sensor", ("min(temp)", "lo"), ("max(temp)", "hi")], ("events",)),
}


def statement(name: str) -> WindowStatement:
    select = [(parse(s), None) if isinstance(s, str) else (parse(s[0]), s[1])
              for s in STATEMENTS[name][0]]
    return WindowStatement(f"Sensor_{name}", "Reading", WindowSpec.time(WINDOW_MS), select,
                           group_by=[parse("sensor")])


def make_columns(n: int, keys: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Timestamps, sensor names (object array) and temperatures of the workload."""
    rng = random.Random(SEED)
    names = [f"s{i}" for i in range(keys)]
    sensors = np.empty(n, object)
    sensors[:] = [names[rng.randrange(keys)] for _ in range(n)]
    temps = np.array([round(rng.uniform(20, 100), 1) for _ in range(n)])
    return np.arange(n, dtype=np.int64), sensors, temps


def make_events(ts: np.ndarray, sensors: np.ndarray, temps: np.ndarray) -> list[Event]:
    return [Event("Reading", (s, t), i) for i, s, t in
            zip(ts.tolist(), sensors.tolist(), temps.tolist(), strict=True)]


def expected_rows(ts: np.ndarray) -> int:
    """One row per arrival, one per expiry by the last timestamp (timestamps are distinct, so
    every expiry is its own instant)."""
    return len(ts) + int(np.count_nonzero(ts + WINDOW_MS <= ts[-1]))


def checksum(name: str, params: Sequence[tuple[Any, ...]]) -> float:
    """A fingerprint of the rows: sum of counts (avg) or of lo + hi (minmax), nulls as 0."""
    if name == "avg":
        return float(sum(p[1] for p in params))
    return round(sum((p[1] or 0) + (p[2] or 0) for p in params), 3)


# -- one measurement (in a forked child) -------------------------------------------------------
def timed(name: str, path: str, ts: np.ndarray, sensors: np.ndarray, temps: np.ndarray,
          events: list[Event]) -> tuple[float, int, float, int, int]:
    """Process the whole stream once: seconds, rows, checksum, window events, groups."""
    stmt = statement(name)
    gc.collect()
    if path == "columns":
        agg = SlidingAggregate.from_statement(stmt, SCHEMAS)
        rows, total = 0, 0.0
        t0 = time.perf_counter()
        for i in range(0, len(ts), BATCH):
            out = agg.process(ts[i:i + BATCH], {"sensor": sensors[i:i + BATCH],
                                                "temp": temps[i:i + BATCH]})
            rows += len(out)
            total += float(out.columns["n"].sum())
        elapsed = time.perf_counter() - t0
        return elapsed, rows, total, len(agg), len(set(agg.keys.tolist()))
    runner = WindowRunner(stmt, SCHEMAS)
    rows, params = 0, []
    t0 = time.perf_counter()
    if path == "batch":
        for i in range(0, len(events), BATCH):
            out = runner.process_batch(events[i:i + BATCH])
            rows += len(out)
            params.append(checksum(name, [e.params for e in out]))
    else:
        process = runner.process
        for e in events:
            out = process(e)
            if out:
                rows += len(out)
                params.append(checksum(name, [r.params for r in out]))
    elapsed = time.perf_counter() - t0
    return elapsed, rows, round(sum(params), 3), runner.window_size, runner.group_count


def traced(name: str, path: str, n: int, keys: int) -> dict[str, int]:
    """Peak and retained Python allocation (tracemalloc) of the statement's state over a
    smaller stream; rows are counted and dropped, inputs allocated before tracing."""
    ts, sensors, temps = make_columns(n, keys)
    events = make_events(ts, sensors, temps) if path != "columns" else []
    stmt = statement(name)
    gc.collect()
    tracemalloc.start()
    try:
        if path == "columns":
            agg: Any = SlidingAggregate.from_statement(stmt, SCHEMAS)
            for i in range(0, n, BATCH):
                agg.process(ts[i:i + BATCH], {"sensor": sensors[i:i + BATCH],
                                              "temp": temps[i:i + BATCH]})
        else:
            agg = WindowRunner(stmt, SCHEMAS)
            if path == "batch":
                for i in range(0, n, BATCH):
                    agg.process_batch(events[i:i + BATCH])
            else:
                for e in events:
                    agg.process(e)
        retained, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return {"events": n, "peak_bytes": peak, "retained_bytes": retained}


def measure(name: str, path: str, n: int, keys: int, repeat: int,
            trace_events: int) -> dict[str, Any]:
    ts, sensors, temps = make_columns(n, keys)
    events = make_events(ts, sensors, temps) if path != "columns" else []
    gc.collect()
    rss_before = peak_rss_kib()
    runs = [timed(name, path, ts, sensors, temps, events) for _ in range(repeat)]
    rss_increase = peak_rss_kib() - rss_before
    seconds = min(r[0] for r in runs)
    _, rows, check, window, groups = runs[0]
    want = expected_rows(ts)
    if rows != want:
        raise BenchmarkFailure(f"{name}/{path}/{keys} keys: {rows:,} rows, expected {want:,}")
    return {
        "statement": name, "path": path, "keys": keys, "events": n, "rows": rows,
        "checksum": check, "seconds": seconds, "seconds_all": [r[0] for r in runs],
        "events_per_s": n / seconds, "rows_per_s": rows / seconds,
        "window_events_at_end": window, "groups_at_end": groups,
        "peak_rss_increase_kib": rss_increase,
        "tracemalloc": traced(name, path, min(n, trace_events), keys),
    }


# -- report -----------------------------------------------------------------------------------
PATH_TITLES = {
    "events": "process() per event -> ComplexEvents",
    "batch": f"process_batch({BATCH:,} events) -> ComplexEvents",
    "columns": "SlidingAggregate on numpy arrays -> arrays",
}


def print_table(con: Console, rows: list[dict[str, Any]], n: int, repeat: int) -> None:
    best = f"best of {repeat}" if repeat > 1 else "1 run"
    table = make_table(
        f"Sliding-window aggregates, #time(10 sec) group by sensor, ~{n:,} events ({best})",
        [("statement", "left"), ("path", "left"), "keys", "events", "rows", "time s",
         "events/s", "rows/s", "vs Esper 500k/s", "peak RSS Δ", "tracemalloc peak",
         "window at end", "groups at end"])
    for r in rows:
        table.add_row(r["statement"], PATH_TITLES[r["path"]], fmt_int(r["keys"]),
                      fmt_int(r["events"]), fmt_int(r["rows"]), f"{r['seconds']:.3f}",
                      fmt_int(r["events_per_s"]), fmt_int(r["rows_per_s"]),
                      f"{r['events_per_s'] / ESPER_CLAIM:.2f}x",
                      fmt_bytes(r["peak_rss_increase_kib"] * 1024),
                      fmt_bytes(r["tracemalloc"]["peak_bytes"]),
                      fmt_int(r["window_events_at_end"]), fmt_int(r["groups_at_end"]))
    con.print(table)
    con.print(
        "rows = output rows (an arrival row per event and an expiry row per event leaving "
        "within the stream, as Esper's insert stream). peak RSS Δ = rise of the forked "
        "process's peak RSS over the timed runs, from a baseline after the input was built "
        "(includes the rows of one batch alive at once). tracemalloc peak = peak Python "
        f"allocation while processing ~{min(n, TRACE_EVENTS):,} events, rows dropped as they "
        "come: the statement's state — the window (10,000 events at 1 event/ms) and the groups "
        "in it, independent of stream length — plus, for process_batch and the arrays, one "
        "batch's rows and working arrays. Esper's >500,000 events/s is the classic claim "
        "EsperTech publishes (docs/references.md), not measured here.", style="dim", markup=False)


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Flatness over key counts per (statement, path)."""
    out: dict[str, Any] = {}
    for r in rows:
        out.setdefault(f"{r['statement']}/{r['path']}", {})[str(r["keys"])] = r["events_per_s"]
    return {k: {"events_per_s": v, "max_over_min": max(v.values()) / min(v.values())}
            for k, v in out.items()}


def verify_paths(rows: list[dict[str, Any]]) -> None:
    """All paths of a statement must produce the same rows (count and checksum)."""
    seen: dict[tuple[str, int], tuple[str, int, float]] = {}
    for r in rows:
        key = (r["statement"], r["keys"])
        if key in seen:
            path, count, check = seen[key]
            if (count, round(check, 3)) != (r["rows"], round(r["checksum"], 3)):
                raise BenchmarkFailure(
                    f"{r['statement']} with {r['keys']} keys: path {r['path']} made "
                    f"{r['rows']:,} rows (checksum {r['checksum']}), path {path} made "
                    f"{count:,} (checksum {check})")
        else:
            seen[key] = (r["path"], r["rows"], r["checksum"])


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description="Sliding-window aggregates of cepflow.windows.")
    ap.add_argument("--events", type=positive_int, default=None,
                    help=f"events per run (default {DEFAULT_EVENTS:,}; --quick: "
                    f"{QUICK_EVENTS:,})")
    ap.add_argument("--keys", type=int_list, default=list(DEFAULT_KEYS),
                    help="comma-separated sensor counts (default "
                    f"{','.join(map(str, DEFAULT_KEYS))})")
    ap.add_argument("--statements", default="avg,minmax",
                    help="comma-separated: avg, minmax (default both)")
    ap.add_argument("--paths", default="events,batch,columns",
                    help="comma-separated: events, batch, columns (default all; minmax runs "
                    "event by event only)")
    ap.add_argument("--repeat", type=positive_int, default=1,
                    help="measure K times, keep the fastest (default 1)")
    ap.add_argument("--quick", action="store_true", help="fast smoke run")
    ap.add_argument("--json", type=Path, default=DEFAULT_JSON,
                    help=f"result file (default {DEFAULT_JSON.relative_to(ROOT)})")
    args = ap.parse_args(argv)
    if args.events is None:
        args.events = QUICK_EVENTS if args.quick else DEFAULT_EVENTS
    args.statements = [s.strip() for s in args.statements.split(",") if s.strip()]
    args.paths = [p.strip() for p in args.paths.split(",") if p.strip()]
    unknown = ({*args.statements} - set(STATEMENTS)) | ({*args.paths} - set(PATH_TITLES))
    if unknown:
        ap.error(f"unknown statement or path: {', '.join(sorted(unknown))}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    con, log = console(), console(stderr=True)
    plan: list[tuple[str, str, int]] = [
        (s, p, k) for s in args.statements for p in STATEMENTS[s][1] if p in args.paths
        for k in args.keys]
    rows: list[dict[str, Any]] = []
    run: Callable[..., dict[str, Any]] = measure
    for i, (name, path, keys) in enumerate(plan, 1):
        log.print(f"[dim][{i}/{len(plan)}] {name} / {path} / {keys:,} keys, "
                  f"{args.events:,} events ...[/dim]")
        try:
            row = run_isolated(run, name, path, args.events, keys, args.repeat, TRACE_EVENTS)
        except BenchmarkFailure as e:
            log.print(f"[bold red]ABORTED[/bold red]: {e}")
            return 1
        rows.append(row)
        log.print(f"[dim]    {row['events_per_s']:,.0f} events/s, {row['rows']:,} rows[/dim]")
    try:
        verify_paths(rows)
    except BenchmarkFailure as e:
        log.print(f"[bold red]ABORTED[/bold red]: {e}")
        return 1
    meta = metadata("windows_aggregate", {
        "events": args.events, "keys": args.keys, "statements": args.statements,
        "paths": args.paths, "repeat": args.repeat, "quick": args.quick,
        "window_ms": WINDOW_MS, "batch": BATCH, "tracemalloc_events": TRACE_EVENTS,
    })
    print_table(con, rows, args.events, args.repeat)
    summary = summarize(rows)
    con.print("[bold]Flatness[/bold] (max/min events/s over key counts): " + ", ".join(
        f"{k} {v['max_over_min']:.2f}" for k, v in summary.items()))
    con.print(machine_line(meta["machine"]))
    path = write_json(args.json, {**meta, "rows": rows, "summary": summary})
    con.print(f"[dim]Results written to {path}[/dim]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
