"""Monte Carlo runs of the motorbike application (seed 003 §V.B, Table 1): wall time of N runs
of D simulated days, locally (one process per core) and on Spark, beside Maude's.

Workload: ``examples/motorbike/motorbike.epl`` (the application of Table 1's
``accidents.maude``: five patterns and two window statements) over the events of
``examples/motorbike/model.toml`` (three motorbikes, about 4,320 readings a day), each run
generated from its own seed as ``cepflow simulate`` does (``Simulation.run``). A cell of the
grid is ``runs`` runs of ``days`` days; its wall time includes forking the worker processes
(locally) or the Spark job (the session's start is timed once, apart), not Python's start or
compiling the patterns. Every cell runs in its own forked process (``common.run_isolated``) so
its peak memory is its own. Spark's counts are checked against the local ones, run by run,
for every cell both engines ran (the benchmark aborts on a difference).

    .venv/bin/python benchmarks/montecarlo.py                 # Table 1's grid, local and Spark
    .venv/bin/python benchmarks/montecarlo.py --quick         # 1-2 days x 1-16 runs
    .venv/bin/python benchmarks/montecarlo.py --days 1 --runs 256 --engines local
    .venv/bin/python benchmarks/montecarlo.py --days 16 --runs 384 --engines local,spark
    .venv/bin/python benchmarks/montecarlo.py --profile       # where one run's time goes
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import resource
import sys
import time
from collections import deque
from collections.abc import Sequence
from typing import Any

from common import (
    ROOT,
    BenchmarkFailure,
    console,
    fmt_bytes,
    fmt_float,
    fmt_int,
    int_list,
    machine_line,
    make_table,
    metadata,
    run_isolated,
    write_json,
)

from cepflow.loader import load
from cepflow.runtime.engine import Engine
from cepflow.simulation import Simulation, generate, load_model, parse_model
from cepflow.simulation.monte_carlo import LocalRunner, RunResult, usable_cores
from cepflow.simulation.stats import stats_csv, summarise

DEFAULT_JSON = ROOT / "benchmarks" / "results" / "montecarlo.json"
PATTERNS = ROOT / "examples" / "motorbike" / "motorbike.epl"
MODEL = ROOT / "examples" / "motorbike" / "model.toml"
DAY = 86_400_000

#: seed 003 Table 1: seconds for N executions of D days (24 cores, 2.67 GHz, Ubuntu 14.04)
MAUDE_RUNS = (1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384)
MAUDE = {
    1: (14, 15, 15, 14, 14, 17, 22, 28, 42, 56, 84, 115, 166, 225, 318),
    2: (22, 23, 23, 24, 25, 29, 38, 50, 73, 97, 145, 204, 305, 401, 622),
    4: (45, 46, 48, 49, 51, 56, 74, 99, 144, 192, 285, 382, 583, 777, 1164),
    8: (95, 95, 95, 100, 100, 116, 150, 195, 289, 387, 567, 756, 1164, 1541, 2317),
    16: (204, 189, 192, 194, 203, 228, 301, 383, 564, 757, 1139, 1515, 2303, 3063, 4616),
}
#: seed 003 Listing 31 (256 runs of one day)
LISTING_31 = """Event,Min,Max,Median,Mean,Std.Dev
Motorbike,2834,4570,4320,4207.64,301.152
DriverLeftSeat,0,2,0,0.269531,0.516911
GhostRider,0,3,0,0.371094,0.648755
BlowOutTire,0,2,0,0.246094,0.498028
Crash,0,3,0,0.292969,0.621953
Accident,0,3,2,1.62305,1.42127
AccidentsReport,3,3,3,3,0
Duration,178,225,217,213.492,8.85737
"""
#: the motorbike model with 1,000 motorbikes: initial values drawn per motorbike
FLEET_INITIAL = """[source.initial]
location = { dist = "choice", values = ["Cadiz", "Malaga", "Sevilla"] }
speed = { dist = "uniform", low = 40, high = 120, type = "int" }
tire1 = { dist = "uniform", low = 2.5, high = 3.2, digits = 2 }
tire2 = { dist = "uniform", low = 2.5, high = 3.2, digits = 2 }
seat = true
"""
#: the issue's targets on a 2-core machine: (days, runs) -> seconds
TARGETS = {(1, 256): 10.0, (16, 384): 300.0}


def maude(days: int, runs: int) -> int | None:
    row = MAUDE.get(days)
    return row[MAUDE_RUNS.index(runs)] if row and runs in MAUDE_RUNS else None


def simulation(days: int, seed: int) -> Simulation:
    return Simulation(load(PATTERNS), load_model(MODEL), days * DAY, seed)


def _cell_result(sim: Simulation, results: list[RunResult], wall: float) -> dict[str, Any]:
    results.sort(key=lambda r: r.run)
    events = sum(r.counts["Motorbike"] for r in results)
    gen = sum(r.generate_seconds for r in results)
    det = sum(r.detect_seconds for r in results)
    return {"wall_seconds": wall, "events": events, "generate_seconds": gen,
            "detect_seconds": det, "generate_share": gen / (gen + det),
            "cpu_seconds": sum(r.cpu_seconds for r in results),
            "detect_events_per_s": events / det if det else 0.0,
            "counts": [r.counts for r in results],
            "stats_csv": stats_csv(summarise(sim.event_types, results))}


def local_cell(days: int, runs: int, seed: int, workers: int) -> dict[str, Any]:
    """One cell on this machine (in a forked child: its workers' memory is its own)."""
    sim = simulation(days, seed)
    t0 = time.perf_counter()
    with LocalRunner(sim, min(workers, runs)) as pool:
        results = list(pool.map(list(range(runs))))
    wall = time.perf_counter() - t0
    out = _cell_result(sim, results, wall)
    out["peak_rss_kib"] = {
        "main": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        "largest_worker": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}
    return out


def spark_cell(spark: Any, days: int, runs: int, seed: int) -> dict[str, Any]:
    from cepflow.spark.simulation import run_spark

    sim = simulation(days, seed)
    t0 = time.perf_counter()
    results = run_spark(spark, sim, range(runs))
    return _cell_result(sim, results, time.perf_counter() - t0)


def generation_rate(seed: int) -> dict[str, Any]:
    """Events generated per second for a large run (1,000 motorbikes, 2 days, about 2.9M
    events), as numpy columns and as Python Event objects (best of three)."""
    text = MODEL.read_text(encoding="utf-8")
    head, rest = text.split("[source.initial]", 1)
    fleet = head.replace("instances = 3", "instances = 1000") + FLEET_INITIAL + rest[
        rest.index("[source.attributes]"):]
    model = parse_model(fleet, "fleet")
    generate(model, DAY, seed)  # (warm-up)
    best_cols = best_objects = 0.0
    n = 0
    for run in range(3):  # best of three: the machine is shared
        t0 = time.perf_counter()
        ev = generate(model, 2 * DAY, seed, run)
        t1 = time.perf_counter()
        objects = ev.events()
        t2 = time.perf_counter()
        n = len(ev)
        best_cols = max(best_cols, n / (t1 - t0))
        best_objects = max(best_objects, len(objects) / (t2 - t0))
    return {"events": n, "columns_per_s": best_cols, "objects_per_s": best_objects}


def profile(days: int, seed: int) -> str:
    """cProfile of one run's detection, and the split of a run's time."""
    sim = simulation(days, seed)
    sim.run(0)
    r = sim.run(1)
    events = generate(sim.model, sim.duration_ms, seed, 1).events(sim.program.schemas)
    engine = Engine(sim.program, strict_actions=False, start=sim.model.start_ms)
    prof = cProfile.Profile()
    prof.enable()
    deque(engine.run(events), maxlen=0)
    prof.disable()
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(20)
    return (f"one run of {days} day(s): {r.seconds:.3f} s — generating {r.generate_seconds:.3f} s "
            f"(numpy draws and Event objects), detecting {r.detect_seconds:.3f} s "
            f"({r.counts['Motorbike'] / r.detect_seconds:,.0f} events/s)\n" + buf.getvalue())


def _cpu_wall(cell: dict[str, Any], runs: int, workers: int) -> float:
    """The runs' CPU seconds spread over the processes that ran them: the wall time the
    cell's runs would take with every core to themselves (the machine is shared)."""
    return cell["cpu_seconds"] / max(1, min(runs, workers))


def linear_fit(rows: list[dict[str, Any]], key: str, cores: int, cpu: bool = False
               ) -> dict[str, float] | None:
    """wall = a + b · days · runs over the cells with at least as many runs as cores; R².
    With ``cpu``, the runs' CPU time per core instead of the wall time."""
    pts = [(r["days"] * r["runs"], _cpu_wall(r[key], r["runs"], cores) if cpu
            else r[key]["wall_seconds"]) for r in rows if r.get(key) and r["runs"] >= cores]
    if len(pts) < 3:
        return None
    n = len(pts)
    mx = sum(x for x, _ in pts) / n
    my = sum(y for _, y in pts) / n
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    b = sum((x - mx) * (y - my) for x, y in pts) / sxx
    a = my - b * mx
    ss_res = sum((y - a - b * x) ** 2 for x, y in pts)
    ss_tot = sum((y - my) ** 2 for _, y in pts)
    return {"intercept_s": a, "seconds_per_run_day": b,
            "r2": 1 - ss_res / ss_tot if ss_tot else 1.0, "cells": n}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--days", type=int_list, default=None, help="default 1,2,4,8,16")
    ap.add_argument("--runs", type=int_list, default=None, help="default Table 1's columns")
    ap.add_argument("--engines", default="local,spark", help="local,spark (default both)")
    ap.add_argument("--master", default=None, help="Spark master (default local[*])")
    ap.add_argument("--workers", type=int, default=usable_cores())
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="days 1,2 x runs 1,2,4,8,16")
    ap.add_argument("--profile", action="store_true", help="profile one run and exit")
    ap.add_argument("--json", default=str(DEFAULT_JSON))
    args = ap.parse_args(argv)
    args.days = args.days or ([1, 2] if args.quick else list(MAUDE))
    args.runs = args.runs or ([1, 2, 4, 8, 16] if args.quick else list(MAUDE_RUNS))
    args.engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    if not set(args.engines) <= {"local", "spark"}:
        ap.error("--engines: local and/or spark")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    con, log = console(), console(stderr=True)
    if args.profile:
        con.print(profile(args.days[0], args.seed), markup=False, highlight=False)
        return 0
    cells = [(d, n) for d in args.days for n in args.runs]
    rows: list[dict[str, Any]] = [{"days": d, "runs": n, "maude_seconds": maude(d, n)}
                                  for d, n in cells]
    if "local" in args.engines:
        for row in rows:
            log.print(f"[dim]local: {row['runs']} run(s) of {row['days']} day(s) ...[/dim]")
            row["local"] = run_isolated(local_cell, row["days"], row["runs"], args.seed,
                                        args.workers)
    spark_start = None
    if "spark" in args.engines:
        from cepflow.spark import spark_session

        t0 = time.perf_counter()
        spark = spark_session(args.master, app_name="cepflow-montecarlo")
        spark.range(1).collect()
        spark_start = time.perf_counter() - t0
        for row in rows:
            log.print(f"[dim]spark: {row['runs']} run(s) of {row['days']} day(s) ...[/dim]")
            row["spark"] = spark_cell(spark, row["days"], row["runs"], args.seed)
            if "local" in row and row["local"]["counts"] != row["spark"]["counts"]:
                log.print(f"[bold red]ABORTED[/bold red]: Spark's counts differ from the local "
                          f"ones ({row['days']} d x {row['runs']} runs)")
                return 1
    gen = generation_rate(args.seed)

    meta = metadata("montecarlo", {k: v for k, v in vars(args).items()})
    table = make_table("Monte Carlo runs of motorbike.epl: wall seconds (ours beside Maude's, "
                       "seed 003 Table 1)",
                       ["days", "runs", "events", "local s", "local CPU s / cores", "spark s",
                        "Maude s",
                        "Maude / local", "generation share", "detect ev/s (local)",
                        "peak RSS (a process)"])
    for r in rows:
        loc, spk = r.get("local"), r.get("spark")
        table.add_row(str(r["days"]), str(r["runs"]),
                      fmt_int((loc or spk)["events"]) if (loc or spk) else "",
                      fmt_float(loc["wall_seconds"]) if loc else "",
                      fmt_float(_cpu_wall(loc, r["runs"], args.workers)) if loc else "",
                      fmt_float(spk["wall_seconds"]) if spk else "",
                      str(r["maude_seconds"] or ""),
                      (f"{r['maude_seconds'] / loc['wall_seconds']:,.0f}x"
                       if loc and r["maude_seconds"] else ""),
                      f"{(loc or spk)['generate_share']:.0%}" if (loc or spk) else "",
                      fmt_int(loc["detect_events_per_s"]) if loc else "",
                      fmt_bytes(max(loc["peak_rss_kib"].values()) * 1024) if loc else "")
    con.print(table)
    if spark_start is not None:
        con.print(f"Spark session start (not in the cells): {spark_start:.1f} s")
    summary: dict[str, Any] = {"generation": gen, "spark_start_seconds": spark_start,
                               "targets": {}, "fits": {}}
    con.print(f"[bold]Generation[/bold]: {fmt_int(gen['columns_per_s'])} events/s as columns, "
              f"{fmt_int(gen['objects_per_s'])} events/s as Event objects "
              f"({fmt_int(gen['events'])} events; target 5,000,000/s as columns: "
              f"{'met' if gen['columns_per_s'] >= 5e6 else 'MISSED'})")
    for key in ("local", "spark"):
        for cpu in (False, True):
            fit = linear_fit(rows, key, args.workers, cpu)
            if fit:
                what = f"{key}, {'CPU time per core' if cpu else 'wall time'}"
                summary["fits"][f"{key}_{'cpu' if cpu else 'wall'}"] = fit
                con.print(f"[bold]Linear in days x runs[/bold] ({what}, cells with runs >= "
                          f"cores): {fit['intercept_s']:.2f} s + "
                          f"{fit['seconds_per_run_day']:.4f} s per run-day, "
                          f"R² = {fit['r2']:.4f} over {fit['cells']} cells")
    for (days, runs), limit in TARGETS.items():
        for r in rows:
            if (r["days"], r["runs"]) == (days, runs):
                for key in ("local", "spark"):
                    if r.get(key):
                        s = r[key]["wall_seconds"]
                        cpu = _cpu_wall(r[key], runs, args.workers)
                        verdict = "met" if s < limit else "MISSED"
                        summary["targets"][f"{days}d x {runs} {key}"] = {
                            "seconds": s, "cpu_seconds_per_core": cpu, "limit": limit,
                            "met": s < limit}
                        con.print(f"[bold]Target[/bold] {runs} runs of {days} day(s) under "
                                  f"{limit:g} s ({key}): {s:.1f} s — {verdict} (the runs' "
                                  f"CPU time per core: {cpu:.1f} s)")
    for r in rows:
        if (r["days"], r["runs"]) == (1, 256) and r.get("local"):
            ours = r["local"]["stats_csv"].splitlines()
            theirs = LISTING_31.splitlines()
            width = max(len(x) for x in ours) + 4
            con.print("[bold]256 runs of one day[/bold]: ours (local) beside Listing 31")
            for i in range(max(len(ours), len(theirs))):
                left = ours[i] if i < len(ours) else ""
                right = theirs[i] if i < len(theirs) else ""
                con.print(f"{left:<{width}}{right}", markup=False, highlight=False)
    con.print(machine_line(meta["machine"]))
    for r in rows:
        for key in ("local", "spark"):
            if r.get(key):
                r[key] = {k: v for k, v in r[key].items() if k != "counts"}
    path = write_json(args.json, {**meta, "rows": rows, "summary": summary,
                                  "maude": {"runs": MAUDE_RUNS, "seconds": MAUDE}})
    con.print(f"[dim]Results written to {path}[/dim]")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchmarkFailure as e:
        print(f"ABORTED: {e}", file=sys.stderr)
        sys.exit(1)
