"""The gesture case study on the live pipeline, wired (000 §7, Fig. 17; 002 Listings 1-5).

    model updates ─▶ incremental posture queries ─▶ query events ─▶ CEP ─▶ rule
    (body.mm, one      (gesture.vql, moving            (the queryEvent        (nextSlide:
     transaction per    averages)                       declarations of        Body.slide += 1)
     frame and body)                                    ../gesture/gesture.vepl)

The pattern file is the CEP-only example's ``examples/gesture/gesture.vepl``, unchanged: its
``queryEvent`` declarations name the queries of ``gesture.vql``, so
:class:`cepflow.live.LiveSession` publishes their found/lost events without a second list.
The rule ``nextSlide`` names the action ``gesture.next_slide``; here it is a streaming model
transformation — it advances the ``slide`` attribute of the body that made the gesture, in a
transaction of its own (000 Fig. 17 step 6) — passed to the session explicitly rather than
through the global action registry (the CEP-only example registers a counter under the same
name).

``run_local(bodies, cycles)`` replays the recorded arm rotation for N bodies at 25 frames per
second of event time, one transaction per sensor frame covering every body (``ts`` = the
frame's time; :meth:`FrameLayout.apply_frame`, which the query engine takes in bulk), and
returns counts and timings; ``frame_transactions=False`` makes one transaction per frame and
body instead (change by change, as before the bulk path). :func:`live_spec` describes the same
pipeline for :func:`cepflow.spark.live.detect_live`.
"""

from __future__ import annotations

import math
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cepflow.compiler.program import Program
from cepflow.events.event import ComplexEvent
from cepflow.live import LiveSession
from cepflow.loader import load
from cepflow.models import Metamodel, Model, read_metamodel
from cepflow.models.frames import FrameLayout
from cepflow.queries import FunctionRegistry, QuerySet, load_queries

from .recording import (
    FRAME_COLUMNS,
    FRAME_MS,
    FRAMES_PER_CYCLE,
    JOINTS,
    JointPosition,
    frame_records,
    read_recording,
    replay,
)

if TYPE_CHECKING:
    from cepflow.spark.live import LiveSpec

HERE = Path(__file__).parent
METAMODEL = HERE / "body.mm"
QUERIES = HERE / "gesture.vql"
PATTERNS = HERE.parent / "gesture" / "gesture.vepl"
ROOT = "Body"
ATTRIBUTES = ("x", "y", "z")
#: the posture query events of one arm cycle: the gesture's four and the two noise events
GESTURE_EVENTS = ("ForwardStartFound", "ForwardStartLost", "ForwardEndFound", "ForwardEndLost")


def joint_angle(ax: float, ay: float, bx: float, by: float, cx: float, cy: float) -> float:
    """The angle ABC at joint B, in degrees (0..180): ``jointAngle`` in gesture.vql."""
    d = abs(math.degrees(math.atan2(ay - by, ax - bx) - math.atan2(cy - by, cx - bx))) % 360
    return 360 - d if d > 180 else d


#: the plain functions the posture queries call (registered by name, never read from a file)
FUNCTIONS: dict[str, Callable[..., Any]] = {"jointAngle": joint_angle}


def next_slide(activation: Any) -> None:
    """The action of rule ``nextSlide`` (002 Listing 5): the body's presentation advances."""
    body = activation.bindings["B"]
    activation.model.set(body, "slide", activation.model[body]["slide"] + 1)


ACTIONS: dict[str, Callable[[Any], Any]] = {"gesture.next_slide": next_slide}


def load_case() -> tuple[Metamodel, QuerySet, Program]:
    """The metamodel, the compiled posture queries and the compiled pattern program."""
    metamodel = read_metamodel(METAMODEL)
    queries = load_queries(QUERIES, metamodel, functions=FunctionRegistry(FUNCTIONS))
    return metamodel, queries, load(PATTERNS)


@dataclass
class GestureRun:
    """What a replay did: sizes, the session's counters and the wall time of the replay."""

    bodies: int
    cycles: int
    frames: int  # sensor frames (each covering every body): cycles x 12
    body_frames: int  # transactions: bodies x frames
    changes: int  # elementary model changes committed (frames and rule actions)
    query_events: int
    gestures: int
    rule_firings: int
    elapsed: float  # seconds spent replaying (model, queries, CEP, rules)
    setup: float  # seconds to load, compile and build the session
    per_body: Counter = field(default_factory=Counter)  # body -> gestures
    slides: dict[str, int] = field(default_factory=dict)  # body -> its final slide

    def summary(self) -> dict[str, Any]:
        """The one-line JSON summary of ``cepflow demo gesture``."""
        el = max(self.elapsed, 1e-9)
        return {"bodies": self.bodies, "cycles": self.cycles, "frames": self.frames,
                "body_frames": self.body_frames, "changes": self.changes,
                "query_events": self.query_events, "gestures": self.gestures,
                "rule_firings": self.rule_firings, "elapsed": round(self.elapsed, 3),
                "frames_per_s": round(self.frames / el, 1),
                "body_frames_per_s": round(self.body_frames / el, 1),
                "changes_per_s": round(self.changes / el, 1),
                "realtime_x25fps": round(self.frames / el / 25, 3)}


def run_local(bodies: int, cycles: int, *, recording: list[JointPosition] | None = None,
              on_gesture: Callable[[ComplexEvent], Any] | None = None,
              on_frame: Callable[[int], Any] | None = None,
              frame_transactions: bool = True) -> GestureRun:
    """Replay ``cycles`` arm cycles of ``bodies`` bodies through one live session.

    ``on_gesture`` sees every ForwardGesture; ``on_frame(g)`` is called after each sensor frame
    (all bodies) — for progress bars. ``frame_transactions``: one transaction per sensor frame
    (all bodies, applied in bulk) rather than one per frame and body.
    """
    t0 = time.perf_counter()
    metamodel, queries, program = load_case()
    recording = read_recording() if recording is None else recording
    model = Model(metamodel)
    session = LiveSession(model, queries, program, actions=ACTIONS)
    layout = FrameLayout(metamodel, ROOT, ATTRIBUTES)
    per_body: Counter = Counter()

    def seen(ce: ComplexEvent) -> None:
        per_body[ce.params[0]] += 1
        if on_gesture is not None:
            on_gesture(ce)

    session.on_complex_event(seen)
    setup = time.perf_counter() - t0
    t1 = time.perf_counter()
    last = 0
    frame: list[tuple[str, list[Any]]] = []
    frame_ts = 0
    for body, g, ts, readings in replay(recording, bodies, cycles):
        if g != last:
            if frame:
                with session.transaction(ts=frame_ts):
                    layout.apply_frame(model, frame)
                frame = []
            if on_frame is not None:
                on_frame(last)
            last = g
        if frame_transactions:
            frame.append((body, readings))
            frame_ts = ts
            continue
        with session.transaction(ts=ts):
            layout.apply(model, body, readings)
    if frame:
        with session.transaction(ts=frame_ts):
            layout.apply_frame(model, frame)
    stats = session.finish()
    elapsed = time.perf_counter() - t1
    if on_frame is not None and bodies and cycles:
        on_frame(last)
    frames = cycles * FRAMES_PER_CYCLE
    slides = {o.id: o["slide"] for o in model.instances(ROOT)}
    return GestureRun(bodies, cycles, frames, frames * bodies, stats.changes,
                      stats.query_events, stats.complex_events, stats.rule_firings, elapsed,
                      setup, per_body, slides)


def run_spark(bodies: int, cycles: int, *, master: str | None = None,
              recording: list[JointPosition] | None = None) -> GestureRun:
    """The same replay with one live session per body on Spark
    (:func:`cepflow.spark.live.detect_live`). ``setup`` covers the session start and the
    frame records (built, then cached); ``elapsed`` the detection alone."""
    import pandas as pd
    from pyspark import cloudpickle

    import cepflow.spark.live as spark_live
    from cepflow.spark import spark_session

    # the actions and query functions run in the executors: ship this module by value
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    t0 = time.perf_counter()
    spark = spark_session(master)
    recording = read_recording() if recording is None else recording
    records = pd.DataFrame(list(frame_records(recording, bodies, cycles)),
                           columns=list(FRAME_COLUMNS))
    frames = spark.createDataFrame(records, "body string, frame long, ts long, joint string, "
                                            "x double, y double, z double").cache()
    frames.count()
    t1 = time.perf_counter()
    result = spark_live.detect_live(frames, live_spec()).cache()
    rows = spark_live.complex_rows(result)
    stats = spark_live.stats_by_key(result)
    elapsed = time.perf_counter() - t1
    result.unpersist()
    frames.unpersist()
    total = {k: sum(s[k] for s in stats.values()) for k in
             ("changes", "query_events", "complex_events", "rule_firings")}
    n = cycles * FRAMES_PER_CYCLE
    return GestureRun(bodies, cycles, n, n * bodies, total["changes"], total["query_events"],
                      len(rows), total["rule_firings"], elapsed, t1 - t0,
                      Counter(r[0] for r in rows))


def live_spec() -> LiveSpec:
    """The same pipeline for Spark workers (texts, not compiled objects: they travel)."""
    from cepflow.spark.live import LiveSpec

    return LiveSpec(metamodel=METAMODEL.read_text(encoding="utf-8"),
                    queries=QUERIES.read_text(encoding="utf-8"),
                    patterns=PATTERNS.read_text(encoding="utf-8"),
                    root=ROOT, attributes=ATTRIBUTES, actions=ACTIONS, functions=FUNCTIONS,
                    sources=(str(METAMODEL), str(QUERIES), str(PATTERNS)))


__all__ = ["ACTIONS", "FRAME_MS", "FUNCTIONS", "GESTURE_EVENTS", "JOINTS",
           "GestureRun", "joint_angle", "live_spec", "load_case", "next_slide", "run_local",
           "run_spark"]
