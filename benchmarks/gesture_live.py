"""Gesture benchmark on the live pipeline: 000 §7.4 end to end (model → queries → CEP → rule).

N bodies replay the recorded arm rotation of ``examples/gesture_live`` (12 frames per cycle,
20 joints, 2 coordinates each per frame = 40 elementary model changes per body and frame,
one transaction per sensor frame covering every body — applied and its queries maintained in
bulk, docs/models.md "Frames"; ``--per-body``: one transaction per body and frame, change by
change) through one :class:`cepflow.live.LiveSession`: the
incremental posture queries with 3-frame moving averages, their found/lost query events
(4 gesture + 2 noise per cycle), ``ForwardGesture`` and the rule that advances the body's
slide. The replay runs as fast as it can; a body count keeps up with the Kinect when the
sensor frames (all bodies) processed per second reach 25 — VIATRA-CEP did so up to 24 bodies
(000 §7.4.2, Table 3).

Every run is checked (one gesture per cycle and body, one rule firing each, each body's slide
= cycles) and measured in its own forked process (fresh heap and peak-RSS counter); the
model is built before timing (its first frame, where bodies appear, is timed with the rest).

    .venv/bin/python benchmarks/gesture_live.py                  # 1, 10, 100, 240, 1000 bodies
    .venv/bin/python benchmarks/gesture_live.py --quick          # smoke run, a few seconds
    .venv/bin/python benchmarks/gesture_live.py --profile        # where the time goes (240,
                                                                 # steady state; or --bodies N)
    .venv/bin/python benchmarks/gesture_live.py --per-body       # a transaction per body
    .venv/bin/python benchmarks/gesture_live.py --spark 240      # also per body on Spark
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import pstats
import sys
import time
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
    peak_rss_kib,
    positive_int,
    run_isolated,
    write_json,
)

sys.path.insert(0, str(ROOT / "examples"))

from gesture_live import pipeline
from gesture_live.recording import (
    FRAMES_PER_CYCLE,
)

DEFAULT_JSON = ROOT / "benchmarks" / "results" / "gesture_live.json"
DEFAULT_BODIES = (1, 10, 100, 240, 1000)
QUICK_BODIES = (1, 24, 240)
#: body-frames (transactions) per measurement: cycles = max(MIN_CYCLES, this // (12 N))
DEFAULT_WORK = 30_000
QUICK_WORK = 3_000
MIN_CYCLES = 2
FPS = 25
TARGET_BODIES = 240  # 10x VIATRA
VIATRA_REALTIME_BODIES = 24  # 000 §7.4.2: "scales up to 24 bodies" at 25 x 1.009 FPS


def cycles_for(work: int, bodies: int) -> int:
    """Arm cycles per body so that a run makes about ``work`` body-frames."""
    return max(MIN_CYCLES, work // (FRAMES_PER_CYCLE * bodies))


def verify(run: pipeline.GestureRun) -> None:
    """Abort unless every arm cycle of every body gave exactly one gesture and rule firing."""
    b, c = run.bodies, run.cycles
    problems = []
    if run.gestures != b * c or run.rule_firings != b * c:
        problems.append(f"{run.gestures} gestures / {run.rule_firings} firings, expected {b * c}")
    if run.query_events != 6 * b * c:
        problems.append(f"{run.query_events} query events, expected {6 * b * c}")
    wrong = {k: v for k, v in run.per_body.items() if v != c}
    if wrong or len(run.per_body) != b:
        shown = dict(list(wrong.items())[:5])
        problems.append(f"bodies with a gesture count other than {c}: {shown}")
    if set(run.slides.values()) - {c}:
        problems.append("some body's slide is not the number of cycles")
    if problems:
        raise BenchmarkFailure(f"{b} bodies x {c} cycles: " + "; ".join(problems))


def measure(bodies: int, cycles: int, per_body: bool = False) -> dict[str, Any]:
    """One verified in-process run (call it in a child process): rates and peak memory.
    (``frame_transactions`` is passed only for ``per_body``: this file also measures a
    checkout from before the frame path, where the default was a transaction per body.)"""
    gc.collect()
    base = peak_rss_kib()
    marks: list[float] = []  # CPU time after each sensor frame
    cpu0 = time.process_time()
    run = pipeline.run_local(bodies, cycles, on_frame=lambda g: marks.append(time.process_time()),
                             **({"frame_transactions": False} if per_body else {}))
    cpu = time.process_time() - cpu0
    verify(run)
    steady = marks[-1] - marks[0] if len(marks) > 1 else 0.0
    return {**_rates(run), "cpu_s": cpu, "setup_s": run.setup,
            # per CPU second (setup included): what an unshared core would sustain
            "cpu_body_frames_per_s": run.body_frames / cpu,
            # per CPU second after the first sensor frame (where every body appears)
            "cpu_steady_body_frames_per_s":
                bodies * (len(marks) - 1) / steady if steady else 0.0,
            "peak_rss_kib": peak_rss_kib(), "peak_rss_rise_kib": peak_rss_kib() - base}


def measure_spark(bodies: int, cycles: int) -> dict[str, Any]:
    """The same replay per body on Spark (session start and the cached frame records
    excluded: ``pipeline.run_spark``); checked against the expected counts."""
    from pyspark.sql import SparkSession

    run = pipeline.run_spark(bodies, cycles)
    if run.gestures != bodies * cycles or any(run.per_body[b] != cycles for b in run.per_body) \
            or len(run.per_body) != bodies:
        raise BenchmarkFailure(f"Spark: {run.gestures} gestures for {bodies} x {cycles}")
    spark = SparkSession.getActiveSession()
    return {**_rates(run), "cores": spark.sparkContext.defaultParallelism if spark else None}


def _rates(run: pipeline.GestureRun) -> dict[str, Any]:
    """A result row's sizes and rates (per second of replay)."""
    el = run.elapsed
    return {"bodies": run.bodies, "cycles": run.cycles, "frames": run.frames,
            "body_frames": run.body_frames, "changes": run.changes,
            "query_events": run.query_events, "gestures": run.gestures, "elapsed_s": el,
            "frames_per_s": run.frames / el, "body_frames_per_s": run.body_frames / el,
            "changes_per_s": run.changes / el, "query_events_per_s": run.query_events / el,
            "gestures_per_s": run.gestures / el, "realtime_x25fps": run.frames / el / FPS}


def profile(bodies: int, cycles: int, top: int = 25, frame_transactions: bool = True) -> str:
    """cProfile of one run from its second sensor frame on (the steady state: loading,
    compiling and the frame where the bodies appear are left out): the functions with the
    most own time."""
    prof = cProfile.Profile()
    started: list[int] = []

    def on_frame(g: int) -> None:
        if not started:
            started.append(g)
            prof.enable()

    pipeline.run_local(bodies, cycles, on_frame=on_frame, frame_transactions=frame_transactions)
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(top)
    return out.getvalue()


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bodies", type=int_list, default=None,
                    help="body counts, e.g. 1,10,100,240,1000")
    ap.add_argument("--work", type=positive_int, default=None,
                    help=f"body-frames per measurement (default {DEFAULT_WORK:,})")
    ap.add_argument("--quick", action="store_true", help="small smoke run")
    ap.add_argument("--profile", action="store_true", help="profile one run and stop")
    ap.add_argument("--per-body", action="store_true",
                    help="one transaction per body and frame (change by change) instead of "
                         "one per sensor frame (bulk)")
    ap.add_argument("--spark", type=int_list, default=None,
                    help="also run these body counts per body on Spark (local[*])")
    ap.add_argument("--json", default=str(DEFAULT_JSON), help="result file")
    args = ap.parse_args(argv)
    bodies = args.bodies or (QUICK_BODIES if args.quick else DEFAULT_BODIES)
    work = args.work or (QUICK_WORK if args.quick else DEFAULT_WORK)
    con = console()
    frame_transactions = not args.per_body
    meta = metadata("gesture_live", {"bodies": list(bodies), "work": work,
                                     "spark": args.spark,
                                     "transactions": "frame" if frame_transactions else "body"})
    con.print(machine_line(meta["machine"]))
    if args.profile:
        n = args.bodies[0] if args.bodies else TARGET_BODIES
        con.print(profile(n, cycles_for(work, n), frame_transactions=frame_transactions),
                  markup=False, highlight=False)
        return
    rows = []
    for n in bodies:
        rows.append(run_isolated(measure, n, cycles_for(work, n), not frame_transactions))
        r = rows[-1]
        con.print(f"{n:,} bodies: {fmt_float(r['frames_per_s'], 1)} frames/s "
                  f"({fmt_float(r['realtime_x25fps'])} x 25 FPS)")
    spark_rows = [measure_spark(n, cycles_for(work, n)) for n in args.spark or ()]
    table = make_table(
        "Gesture recognition on the live pipeline (model -> queries -> query events -> CEP -> "
        "rule), one process",
        ["bodies", "cycles", "frames/s", "x 25 FPS", "body-frames/s", "model changes/s",
         "query events/s", "gestures/s", "body-frames/CPU s", "steady, /CPU s",
         "CPU s / wall s", "peak RSS"])
    for r in rows:
        table.add_row(fmt_int(r["bodies"]), fmt_int(r["cycles"]),
                      fmt_float(r["frames_per_s"], 1), fmt_float(r["realtime_x25fps"]),
                      fmt_int(r["body_frames_per_s"]), fmt_int(r["changes_per_s"]),
                      fmt_int(r["query_events_per_s"]), fmt_int(r["gestures_per_s"]),
                      fmt_int(r["cpu_body_frames_per_s"]),
                      fmt_int(r["cpu_steady_body_frames_per_s"]),
                      f"{r['cpu_s']:.1f} / {r['elapsed_s'] + r['setup_s']:.1f}",
                      fmt_bytes(r["peak_rss_kib"] * 1024))
    for r in spark_rows:
        table.add_row(f"{fmt_int(r['bodies'])} (Spark, {r['cores']} cores)",
                      fmt_int(r["cycles"]), fmt_float(r["frames_per_s"], 1),
                      fmt_float(r["realtime_x25fps"]), fmt_int(r["body_frames_per_s"]),
                      fmt_int(r["changes_per_s"]), fmt_int(r["query_events_per_s"]),
                      fmt_int(r["gestures_per_s"]), "-", "-", "-", "-")
    con.print(table)
    realtime = [r["bodies"] for r in rows if r["frames_per_s"] >= FPS]
    largest = max(realtime, default=0)
    # bodies the measured per-body throughput sustains at 25 FPS (the rate is ~flat in N)
    at_scale = [r for r in rows if r["bodies"] >= 100] or rows
    sustained = min(r["body_frames_per_s"] for r in at_scale) / FPS
    sustained_cpu = min(r["cpu_body_frames_per_s"] for r in at_scale) / FPS
    verdict = "met" if largest >= TARGET_BODIES else "missed"
    con.print(f"Largest measured body count in real time (>= 25 FPS): {largest:,} "
              f"(VIATRA-CEP: {VIATRA_REALTIME_BODIES}, 000 §7.4); throughput at >= 100 bodies "
              f"sustains about {sustained:,.0f} bodies at 25 FPS by wall time, "
              f"{sustained_cpu:,.0f} per CPU core-second. Target {TARGET_BODIES}: {verdict}.")
    path = write_json(args.json, {**meta, "rows": rows, "spark_rows": spark_rows,
                                  "largest_realtime_bodies": largest,
                                  "sustained_bodies_at_25fps": sustained,
                                  "sustained_bodies_at_25fps_per_cpu": sustained_cpu,
                                  "viatra_realtime_bodies": VIATRA_REALTIME_BODIES,
                                  "target_bodies": TARGET_BODIES})
    con.print(f"Saved {path}")


if __name__ == "__main__":
    main()
