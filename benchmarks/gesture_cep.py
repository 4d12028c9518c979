"""Gesture CEP benchmark: the CEP part of 000 §7.4 (Table 3) on cepflow's engine.

Per body, every 12-frame arm cycle yields ForwardStartFound, ForwardStartLost, ForwardEndFound,
ForwardEndLost and two noise events (RightHandAboveHead found/lost); bodies are interleaved frame
by frame (``examples/gesture/events.py``). The pattern is ``ForwardGesture(B)`` of 002 Listing 4
(``examples/gesture/gesture.vepl``), whose rule fires a counting action per detected gesture.

For every body count, ``cycles = max(1, N // (6 * bodies))`` cycles are generated into a list
first; only ``engine.process`` over that list is timed. Every run is checked: exactly one
gesture per body and cycle, each body exactly ``cycles`` of them, one rule firing per gesture.
Each body count is measured in its own forked process (fresh heap and peak-RSS counter).

    .venv/bin/python benchmarks/gesture_cep.py            # 1,000,000 events per body count
    .venv/bin/python benchmarks/gesture_cep.py --quick    # smoke run, a few seconds
    .venv/bin/python benchmarks/gesture_cep.py --profile  # where the time goes (24 bodies)
    .venv/bin/python benchmarks/gesture_cep.py --profile --mode batch --bodies 1,10000
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import importlib
import math
import pstats
import sys
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
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
    peak_rss_kib,
    positive_int,
    run_isolated,
    write_json,
)
from rich.console import Console

from cepflow.compiler.program import Program, compile_module
from cepflow.events.event import Event
from cepflow.language.parser import parse_file
from cepflow.runtime.actions import Activation
from cepflow.runtime.engine import Engine

GESTURE_DIR = ROOT / "examples" / "gesture"
PATTERN_FILE = GESTURE_DIR / "gesture.vepl"
ACTION = "gesture.next_slide"
PATTERN = "ForwardGesture"
DEFAULT_JSON = ROOT / "benchmarks" / "results" / "gesture_cep.json"

DEFAULT_EVENTS = 1_000_000
DEFAULT_BODIES = (1, 2, 4, 8, 16, 24, 25, 100, 1000, 10000)
QUICK_EVENTS = 60_000
QUICK_BODIES = (1, 24, 1000)
#: atomic events of the separate, untimed tracemalloc run (at most ``--events``)
TRACE_EVENTS = 60_000
PROFILE_BODIES = 24

EVENTS_PER_CYCLE = 6  # 4 gesture events + 2 noise events per body and arm cycle
FRAMES_PER_CYCLE = 12
FPS = 25
#: atomic events one body produces per second at 25 FPS: 6 per 12 frames
EVENTS_PER_BODY_SECOND = EVENTS_PER_CYCLE * FPS / FRAMES_PER_CYCLE  # 12.5
#: 000 Table 3 prints "processing speed" = atomic ev/s / (6 * bodies) with a decimal comma:
#: 145,322 / 144 = 1,009 at 24 bodies, read in the text as "25 x 1.009 FPS". The paper's
#: real-time criterion "speed >= 1" is therefore this value >= 1,000.
SEED_SPEED_UNIT = 1000
TARGET_ATOMIC_PER_S = 1_000_000
FLATNESS_TOLERANCE = 0.20

#: VIATRA-CEP, 000 Table 3 (2.9 GHz CPU): bodies -> (complex ev/s, atomic ev/s)
VIATRA_TABLE3: dict[int, tuple[int, int]] = {
    1: (69_041, 414_248),
    2: (63_458, 380_749),
    4: (66_094, 396_562),
    8: (41_907, 251_442),
    16: (35_003, 210_017),
    24: (24_220, 145_322),
    25: (20_611, 123_664),
}
VIATRA_REALTIME_BODIES = 24  # "our approach scales up to 24 bodies" (000 §7.4.2)

Generator = Callable[[int, int], Iterator[Event]]


# -- the project's pieces ---------------------------------------------------------------------
MODE_TITLES = {
    "events": "engine.process, one event at a time",
    "batch": "engine.run, column-wise batches of 262,144 events",
}


def load_generator() -> Generator:
    """``gesture_events(bodies, cycles)`` of ``examples/gesture/events.py``."""
    folder = str(GESTURE_DIR)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    module = importlib.import_module("events")
    if Path(module.__file__ or "").resolve() != (GESTURE_DIR / "events.py").resolve():
        raise RuntimeError(f"'import events' found {module.__file__}, not the gesture example")
    if module.EVENTS_PER_CYCLE != EVENTS_PER_CYCLE:
        raise RuntimeError(f"the gesture generator makes {module.EVENTS_PER_CYCLE} events per "
                           f"cycle; this benchmark (and 000 Table 3) assumes {EVENTS_PER_CYCLE}")
    return module.gesture_events


def load_program() -> Program:
    """The gesture patterns, parsed and compiled like ``cepflow`` does."""
    return compile_module(parse_file(PATTERN_FILE))


def bodies_text(n: int) -> str:
    """``1 body``, ``24 bodies``."""
    return f"{n:,} body" if n == 1 else f"{n:,} bodies"


def cycles_for(total_events: int, bodies: int) -> int:
    """Arm cycles per body so that all bodies together make about ``total_events`` events."""
    return max(1, total_events // (EVENTS_PER_CYCLE * bodies))


def make_events(gen: Generator, bodies: int, cycles: int) -> list[Event]:
    """The whole stream as a list (generated before, never inside, a timed region)."""
    events = list(gen(bodies, cycles))
    expected = EVENTS_PER_CYCLE * bodies * cycles
    if len(events) != expected:
        raise BenchmarkFailure(f"the generator made {len(events):,} events for {bodies} bodies "
                               f"x {cycles} cycles, expected {expected:,}")
    return events


def counting_action(counts: Counter[Any]) -> Callable[[Activation], None]:
    """The rule's action: count the gesture for its body (the ``B`` parameter)."""

    def next_slide(activation: Activation) -> None:
        counts[activation.event.params[0]] += 1

    return next_slide


def verify(engine: Engine, events: Sequence[Event], bodies: int, cycles: int,
           complex_events: int, counts: Counter[Any]) -> None:
    """Abort unless every body made exactly ``cycles`` gestures, each firing the rule once."""
    expected = bodies * cycles
    problems: list[str] = []
    if complex_events != expected:
        problems.append(f"{complex_events:,} complex events, expected {expected:,}")
    by_pattern = dict(engine.stats.by_pattern)
    if by_pattern != {PATTERN: expected}:
        problems.append(f"complex events by pattern {by_pattern}, expected {{{PATTERN!r}: "
                        f"{expected}}}")
    firings = sum(counts.values())
    if firings != complex_events:
        problems.append(f"{firings:,} rule firings for {complex_events:,} complex events")
    names = {e.params[0] for e in events}
    if len(names) != bodies:
        problems.append(f"the stream has {len(names)} bodies, expected {bodies}")
    wrong = sorted((str(b), counts.get(b, 0)) for b in names | set(counts)
                   if b not in names or counts.get(b, 0) != cycles)
    if wrong:
        shown = ", ".join(f"{b}: {n}" for b, n in wrong[:5])
        more = f" and {len(wrong) - 5} more" if len(wrong) > 5 else ""
        problems.append(f"bodies with a gesture count other than {cycles}: {shown}{more}")
    if problems:
        raise BenchmarkFailure(f"wrong result for {bodies} bodies x {cycles} cycles: "
                               + "; ".join(problems))


# -- measurements -----------------------------------------------------------------------------
#: the clock of the timed runs: wall time (``perf_counter``), or the process's CPU time
#: (``process_time``: on a shared machine, what the engine itself spent — ``--clock cpu``)
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def detect(engine: Engine, events: list[Event], mode: str) -> int:
    """Feed ``events`` to ``engine``: ``engine.run`` ("batch") or ``engine.process`` per event
    ("events"); returns the number of complex events."""
    if mode == "batch":
        return sum(1 for _ in engine.run(events))
    complex_events = 0
    process = engine.process
    for e in events:
        out = process(e)
        if out:
            complex_events += len(out)
    return complex_events


def timed_run(program: Program, events: list[Event], bodies: int,
              cycles: int, mode: str = "events", clock: str = "wall") -> tuple[float, Engine, int]:
    """Feed ``events`` to a fresh engine; returns the detection time, the engine and the
    number of rule firings (counted by the action). ``mode`` "events" calls
    ``engine.process`` per event; "batch" calls ``engine.run`` (batches of 262,144 events,
    column-wise when every pattern is a plain keyed sequence)."""
    for e in events:  # the engine numbers input events; start every repeat from scratch
        e.seq = -1
    counts: Counter[Any] = Counter()
    engine = Engine(program, actions={ACTION: counting_action(counts)})
    gc.collect()
    now = CLOCKS[clock]
    t0 = now()
    complex_events = detect(engine, events, mode)
    elapsed = now() - t0
    verify(engine, events, bodies, cycles, complex_events, counts)
    return elapsed, engine, sum(counts.values())


def traced_run(program: Program, gen: Generator, bodies: int,
               total_events: int) -> dict[str, int]:
    """Peak and retained Python allocation (tracemalloc) of a fresh engine over a smaller
    stream; the events and the harness are allocated before tracing starts."""
    cycles = cycles_for(total_events, bodies)
    events = make_events(gen, bodies, cycles)
    for i, e in enumerate(events):  # numbered up front: the seq ints are the events', not state
        e.seq = i
    counts: Counter[Any] = Counter({e.params[0]: 0 for e in events})
    action = counting_action(counts)
    complex_events = 0
    gc.collect()
    tracemalloc.start()
    try:
        engine = Engine(program, actions={ACTION: action})
        for e in events:
            out = engine.process(e)
            if out:
                complex_events += len(out)
        retained, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    verify(engine, events, bodies, cycles, complex_events, counts)
    return {"events": len(events), "cycles": cycles, "peak_bytes": peak,
            "retained_bytes": retained}


def measure(program: Program, gen: Generator, bodies: int, total_events: int, repeat: int,
            trace_events: int, mode: str = "events", clock: str = "wall") -> dict[str, Any]:
    """One body count (run in a forked child): best-of-``repeat`` detection time, peak-RSS
    increase over the timed runs, partial matches left, and the tracemalloc figures."""
    cycles = cycles_for(total_events, bodies)
    events = make_events(gen, bodies, cycles)
    # The engine writes a sequence number into every input event; those ints belong to the
    # stream, not to the engine state, so they are in place before the RSS baseline is taken
    # (timed_run resets them to -1 and the engine numbers the events again in the same memory).
    for i, e in enumerate(events):
        e.seq = i
    gc.collect()
    rss_before = peak_rss_kib()
    times: list[float] = []
    partial: dict[str, int] = {}
    firings = 0
    for _ in range(repeat):
        elapsed, engine, firings = timed_run(program, events, bodies, cycles, mode, clock)
        times.append(elapsed)
        partial = engine.partial_matches()
        del engine
    rss_increase = peak_rss_kib() - rss_before
    del events
    gc.collect()
    return {
        "mode": mode,
        "clock": clock,
        "bodies": bodies,
        "cycles": cycles,
        "atomic_events": EVENTS_PER_CYCLE * bodies * cycles,
        "complex_events": bodies * cycles,
        "rule_firings": firings,
        "seconds": min(times),
        "seconds_all": times,
        "peak_rss_increase_kib": rss_increase,
        "partial_matches_left": partial,
        "tracemalloc": traced_run(program, gen, bodies, trace_events),
    }


def derive(raw: dict[str, Any]) -> dict[str, Any]:
    """Add the rates, the speed figures and the comparison with VIATRA-CEP to a raw row."""
    row = dict(raw)
    bodies = row["bodies"]
    atomic = row["atomic_events"] / row["seconds"]
    row["atomic_per_s"] = atomic
    row["complex_per_s"] = row["complex_events"] / row["seconds"]
    row["speed_seed"] = atomic / (EVENTS_PER_CYCLE * bodies)
    row["realtime_factor"] = atomic / (EVENTS_PER_BODY_SECOND * bodies)
    left = sum(row["partial_matches_left"].values())
    row["partial_matches_per_body"] = left / bodies
    seed = VIATRA_TABLE3.get(bodies)
    if seed is None:
        row["viatra"] = None
        row["ratio_vs_viatra"] = None
    else:
        complex_s, atomic_s = seed
        row["viatra"] = {"complex_per_s": complex_s, "atomic_per_s": atomic_s,
                         "speed_seed": atomic_s / (EVENTS_PER_CYCLE * bodies)}
        row["ratio_vs_viatra"] = atomic / atomic_s
    return row


# -- summary ----------------------------------------------------------------------------------
def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Flatness over body counts, the 1M ev/s target, and real-time capacity at 25 FPS."""
    rates = {r["bodies"]: r["atomic_per_s"] for r in rows}
    lo_b = min(rates, key=rates.__getitem__)
    hi_b = max(rates, key=rates.__getitem__)
    ref_b = 1 if 1 in rates else min(rates)
    ref = rates[ref_b]
    outside = [b for b, r in rates.items()
               if not (1 - FLATNESS_TOLERANCE) * ref <= r <= (1 + FLATNESS_TOLERANCE) * ref]
    met = [b for b, r in rates.items() if r >= TARGET_ATOMIC_PER_S]
    realtime = [r["bodies"] for r in rows if r["realtime_factor"] >= 1]
    seed_rt = [r["bodies"] for r in rows if r["speed_seed"] >= SEED_SPEED_UNIT]
    return {
        "flatness": {
            "max_over_min": rates[hi_b] / rates[lo_b],
            "min": {"bodies": lo_b, "atomic_per_s": rates[lo_b]},
            "max": {"bodies": hi_b, "atomic_per_s": rates[hi_b]},
            "reference_bodies": ref_b,
            "tolerance": FLATNESS_TOLERANCE,
            "within_tolerance": not outside,
            "bodies_outside": outside,
        },
        "target": {
            "atomic_per_s": TARGET_ATOMIC_PER_S,
            "met_everywhere": len(met) == len(rates),
            "bodies_meeting": met,
            "worst_fraction_of_target": rates[lo_b] / TARGET_ATOMIC_PER_S,
            "best_fraction_of_target": rates[hi_b] / TARGET_ATOMIC_PER_S,
        },
        "realtime_25fps": {
            "events_per_body_second": EVENTS_PER_BODY_SECOND,
            "largest_measured_bodies": max(realtime, default=None),
            "extrapolated_bodies": math.floor(rates[lo_b] / EVENTS_PER_BODY_SECOND),
            "extrapolated_from": "slowest measured atomic ev/s / 12.5",
        },
        "realtime_seed_convention": {
            "criterion": "atomic ev/s / (6 x bodies) >= 1000 (000 Table 3 'speed >= 1')",
            "largest_measured_bodies": max(seed_rt, default=None),
            "extrapolated_bodies": math.floor(rates[lo_b] / (EVENTS_PER_CYCLE
                                                             * SEED_SPEED_UNIT)),
            "viatra_bodies": VIATRA_REALTIME_BODIES,
        },
    }


def print_table(con: Console, rows: list[dict[str, Any]], total_events: int,
                trace_events: int, repeat: int) -> None:
    """The result table, with VIATRA-CEP's Table 3 figures next to the rows it has."""
    best = f"best of {repeat}" if repeat > 1 else "1 run"
    if rows and rows[0].get("clock") == "cpu":
        best += ", CPU time"
    table = make_table(
        f"Gesture CEP, ForwardGesture(B): ~{total_events:,} atomic events per body count "
        f"({best})",
        ["bodies", "atomic events", "complex events", "time s", "atomic ev/s", "complex ev/s",
         "speed (seed)", "peak RSS Δ", "tracemalloc peak", "partial/body",
         "VIATRA atomic/s", "VIATRA complex/s", "VIATRA speed", "ours/VIATRA"])
    for r in rows:
        v = r["viatra"]
        table.add_row(
            fmt_int(r["bodies"]), fmt_int(r["atomic_events"]), fmt_int(r["complex_events"]),
            fmt_float(r["seconds"], 3), fmt_int(r["atomic_per_s"]),
            fmt_int(r["complex_per_s"]), fmt_int(r["speed_seed"]),
            fmt_bytes(r["peak_rss_increase_kib"] * 1024),
            fmt_bytes(r["tracemalloc"]["peak_bytes"]),
            fmt_float(r["partial_matches_per_body"], 2),
            fmt_int(v["atomic_per_s"]) if v else "—",
            fmt_int(v["complex_per_s"]) if v else "—",
            fmt_int(v["speed_seed"]) if v else "—",
            f"{r['ratio_vs_viatra']:.2f}x" if v else "—",
        )
    con.print(table)
    con.print(
        "speed (seed) = atomic ev/s ÷ (6 x bodies), 000 Table 3's 'processing speed "
        "[x 25 FPS]' (printed there with a decimal comma: 1,009 at 24 bodies = '25 x 1.009 "
        "FPS'). peak RSS Δ = rise of the process's peak RSS (getrusage ru_maxrss) over the "
        "timed runs, in a fresh forked process after the events were generated and numbered. "
        "tracemalloc peak = peak Python allocation of the engine (construction to end of "
        f"input) in a separate untimed run over ~{trace_events:,} events. partial/body = "
        "partial matches left at the end ÷ bodies. VIATRA-CEP: 000 Table 3 (2.9 GHz CPU).",
        style="dim", markup=False)


def print_summary(con: Console, summary: dict[str, Any], machine: dict[str, Any]) -> None:
    """Flatness, target, real-time capacity and the machine, below the table."""
    fl = summary["flatness"]
    verdict = ("every body count within" if fl["within_tolerance"] else
               f"NOT all within (outside: {', '.join(map(str, fl['bodies_outside']))} bodies)")
    con.print(
        f"[bold]Flatness[/bold]: max/min atomic ev/s = {fl['max_over_min']:.2f} "
        f"(min {fmt_int(fl['min']['atomic_per_s'])} at {bodies_text(fl['min']['bodies'])}, "
        f"max {fmt_int(fl['max']['atomic_per_s'])} at {bodies_text(fl['max']['bodies'])}); "
        f"{verdict} ±{fl['tolerance']:.0%} of the {fl['reference_bodies']}-body figure")
    tg = summary["target"]
    worst, best = tg["worst_fraction_of_target"], tg["best_fraction_of_target"]
    goal = f"≥ {TARGET_ATOMIC_PER_S:,} atomic ev/s"
    if tg["met_everywhere"]:
        con.print(f"[bold]Target[/bold] {goal}: [green]MET[/green] at every body count "
                  f"(worst {worst:.2f}x the target, +{worst - 1:.0%})")
    else:
        part = (f"met at {', '.join(map(str, tg['bodies_meeting']))} bodies only"
                if tg["bodies_meeting"] else "met at no body count")
        con.print(f"[bold]Target[/bold] {goal}: [red]MISSED[/red] — {part}; best "
                  f"{fmt_int(fl['max']['atomic_per_s'])} = {best:.1%} of the target "
                  f"(needs {1 / best:.2f}x speed-up), worst {fmt_int(fl['min']['atomic_per_s'])}"
                  f" = {worst:.1%} (needs {1 / worst:.2f}x)")
    rt = summary["realtime_25fps"]
    measured = rt["largest_measured_bodies"]
    con.print(
        "[bold]Real time at 25 FPS[/bold] (a body makes 6 events per 12 frames = 12.5 ev/s): "
        f"largest measured body count kept up with: {measured if measured else 'none'}; "
        f"extrapolated ≈ {rt['extrapolated_bodies']:,} bodies (slowest measured atomic ev/s "
        "÷ 12.5)")
    sc = summary["realtime_seed_convention"]
    measured = sc["largest_measured_bodies"]
    con.print(
        "[bold]Seed's criterion[/bold] (speed (seed) ≥ 1,000, i.e. the paper's '≥ 1 x 25 FPS'): "
        f"largest measured body count: {measured if measured else 'none'}; extrapolated ≈ "
        f"{sc['extrapolated_bodies']:,} bodies (slowest atomic ev/s ÷ 6,000); VIATRA-CEP: "
        f"{sc['viatra_bodies']} bodies")
    con.print(machine_line(machine))


# -- profiling --------------------------------------------------------------------------------
def profile(con: Console, program: Program, gen: Generator, total_events: int,
            bodies: int = PROFILE_BODIES, top: int = 20, mode: str = "events") -> None:
    """cProfile the detection over ``bodies`` bodies (``mode`` as in :func:`timed_run`);
    print the top functions by tottime."""
    cycles = cycles_for(total_events, bodies)
    events = make_events(gen, bodies, cycles)
    counts: Counter[Any] = Counter()
    engine = Engine(program, actions={ACTION: counting_action(counts)})
    prof = cProfile.Profile()
    gc.collect()
    t0 = time.perf_counter()
    prof.enable()
    complex_events = detect(engine, events, mode)
    prof.disable()
    elapsed = time.perf_counter() - t0
    verify(engine, events, bodies, cycles, complex_events, counts)
    con.print(f"[bold]cProfile[/bold] ({MODE_TITLES[mode]}): {bodies_text(bodies)} x "
              f"{cycles:,} cycles = {len(events):,} atomic events, {complex_events:,} complex "
              f"events; {len(events) / elapsed:,.0f} atomic ev/s under the profiler (slowed "
              f"by it). Top {top} functions by tottime:")
    sys.stdout.flush()
    pstats.Stats(prof, stream=sys.stdout).strip_dirs().sort_stats("tottime").print_stats(top)


# -- command line -----------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Options; ``--quick`` sets the defaults of ``--events`` and ``--bodies`` not given."""
    ap = argparse.ArgumentParser(
        description="Gesture CEP benchmark (000 §7.4, Table 3) on cepflow's engine.")
    ap.add_argument("--events", type=positive_int, default=None,
                    help=f"atomic events per body count (default {DEFAULT_EVENTS:,}; "
                    f"--quick: {QUICK_EVENTS:,})")
    ap.add_argument("--bodies", type=int_list, default=None,
                    help="comma-separated body counts (default "
                    f"{','.join(map(str, DEFAULT_BODIES))}; --quick: "
                    f"{','.join(map(str, QUICK_BODIES))})")
    ap.add_argument("--quick", action="store_true", help="fast smoke run")
    ap.add_argument("--repeat", type=positive_int, default=1,
                    help="measure K times per body count, keep the fastest (default 1)")
    ap.add_argument("--json", type=Path, default=DEFAULT_JSON,
                    help=f"result file (default {DEFAULT_JSON.relative_to(ROOT)})")
    ap.add_argument("--mode", choices=("events", "batch", "both"), default="both",
                    help="engine.process per event, engine.run in column-wise batches, or "
                    "both (default)")
    ap.add_argument("--clock", choices=tuple(CLOCKS), default="wall",
                    help="time the runs by the wall clock (default) or by the process's CPU "
                    "time (a shared machine: what the engine spent, without waiting for "
                    "the cores)")
    ap.add_argument("--profile", action="store_true",
                    help="instead of the benchmark, cProfile each body count of --bodies "
                    f"(default {PROFILE_BODIES}) in each mode of --mode and print the top 20 "
                    "functions by tottime")
    args = ap.parse_args(argv)
    args.profile_bodies = args.bodies or [PROFILE_BODIES]
    if args.events is None:
        args.events = QUICK_EVENTS if args.quick else DEFAULT_EVENTS
    if args.bodies is None:
        args.bodies = list(QUICK_BODIES if args.quick else DEFAULT_BODIES)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark (or the profile); 1 if a run produced a wrong result."""
    args = parse_args(argv)
    con, log = console(), console(stderr=True)
    gen = load_generator()
    program = load_program()
    if args.profile:
        try:
            for mode in (["events", "batch"] if args.mode == "both" else [args.mode]):
                for bodies in args.profile_bodies:
                    profile(con, program, gen, args.events, bodies, mode=mode)
        except BenchmarkFailure as e:
            log.print(f"[bold red]ABORTED[/bold red]: {e}")
            return 1
        return 0
    trace_events = min(args.events, TRACE_EVENTS)
    modes = ["events", "batch"] if args.mode == "both" else [args.mode]
    results: dict[str, dict[str, Any]] = {}
    for mode in modes:
        rows: list[dict[str, Any]] = []
        for i, bodies in enumerate(args.bodies, 1):
            cycles = cycles_for(args.events, bodies)
            log.print(f"[dim][{mode} {i}/{len(args.bodies)}] {bodies_text(bodies)} x "
                      f"{cycles:,} cycles = {EVENTS_PER_CYCLE * bodies * cycles:,} events "
                      "...[/dim]")
            try:
                raw = run_isolated(measure, program, gen, bodies, args.events, args.repeat,
                                   trace_events, mode, args.clock)
            except BenchmarkFailure as e:
                log.print(f"[bold red]ABORTED[/bold red]: {e}")
                return 1
            row = derive(raw)
            rows.append(row)
            log.print(f"[dim]    {row['atomic_per_s']:,.0f} atomic ev/s, "
                      f"{row['complex_per_s']:,.0f} complex ev/s[/dim]")
        results[mode] = {"rows": rows, "summary": summarize(rows)}
    meta = metadata("gesture_cep", {
        "events": args.events, "bodies": args.bodies, "repeat": args.repeat,
        "quick": args.quick, "tracemalloc_events": trace_events, "modes": modes,
        "clock": args.clock,
        "pattern_file": str(PATTERN_FILE.relative_to(ROOT)),
    })
    for mode, res in results.items():
        con.print()
        con.print(f"[bold]Mode: {MODE_TITLES[mode]}[/bold]")
        print_table(con, res["rows"], args.events, trace_events, args.repeat)
        con.print()
        print_summary(con, res["summary"], meta["machine"])
    if len(results) == 2:
        ratio = [b["atomic_per_s"] / e["atomic_per_s"] for e, b in
                 zip(results["events"]["rows"], results["batch"]["rows"], strict=True)]
        con.print("\nbatch / per-event throughput: "
                  + ", ".join(f"{r['bodies']:,} bodies {x:.2f}x"
                              for r, x in zip(results["batch"]["rows"], ratio, strict=True)))
    path = write_json(args.json, {**meta, "seed": {"viatra_cep_table3": {
        str(b): {"complex_per_s": c, "atomic_per_s": a} for b, (c, a) in VIATRA_TABLE3.items()
    }}, "results": results})
    con.print(f"[dim]Results written to {path}[/dim]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
