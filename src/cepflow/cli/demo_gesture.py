"""``cepflow demo gesture``: gesture recognition on the live pipeline (000 §7, 002).

N bodies replay the recorded arm rotation (``cepflow.examples.gesture_live``, the
repository's ``examples/gesture_live``) for M cycles at 25
frames per second of event time: model updates → posture queries → query events →
``ForwardGesture`` → rule ``nextSlide``. ``--engine spark`` runs the same pipeline per body on
Spark (:func:`cepflow.spark.live.detect_live`). The last line is a JSON summary; the exit code
is 1 unless every arm cycle of every body gave exactly one gesture.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any

import typer

from cepflow.cli.options import EngineName, need_spark


def load_case(folder: Path | None) -> ModuleType:
    """Import the case study's ``pipeline`` module: the shipped one, or that of the folder
    given with ``--dir`` (a Python package)."""
    if folder is None:
        return importlib.import_module("cepflow.examples.gesture_live.pipeline")
    if not (folder / "pipeline.py").is_file() or not (folder / "__init__.py").is_file():
        typer.echo(f"{folder}: not a gesture case folder (needs __init__.py and pipeline.py; "
                   "give it with --dir)", err=True)
        raise typer.Exit(2)
    parent = str(folder.resolve().parent)
    if parent not in sys.path:
        sys.path.insert(0, parent)
    return importlib.import_module(f"{folder.resolve().name}.pipeline")


def _run_spark(case: ModuleType, bodies: int, cycles: int, master: str | None,
               report: Any) -> dict[str, Any]:
    run = case.run_spark(bodies, cycles, master=master)
    for body, n in sorted(run.per_body.items())[:10]:
        report(f"ForwardGesture {body}: {n} gesture(s)")
    return {**run.summary(), "spark_start_s": round(run.setup, 3), "engine": "spark",
            "_per_body": run.per_body}


def gesture(
    bodies: Annotated[int, typer.Option("--bodies", min=0, help="Bodies in the model")] = 4,
    cycles: Annotated[int, typer.Option("--cycles", min=0,
                                        help="Arm cycles (12 frames each) per body")] = 5,
    engine: Annotated[EngineName, typer.Option(
        help="local (one in-process live session) or spark (one session per body on Spark; "
             "needs the spark extra)")] = EngineName.local,
    master: Annotated[str | None, typer.Option(
        help="Spark master (default: embedded local[*])")] = None,
    directory: Annotated[Path | None, typer.Option(
        "--dir", help="A copy of the case study's folder (default: the shipped one, "
        "cepflow demo path gesture_live)")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q",
                                        help="Print only the JSON summary")] = False,
) -> None:
    """Gesture recognition (000 §7): N bodies rotate the right arm M times; every cycle of
    every body must yield exactly one ForwardGesture (and advance that body's slide)."""
    if engine == "spark":
        need_spark("demo gesture --engine spark")
    case = load_case(directory)
    report = (lambda line: None) if quiet else typer.echo
    report(f"gesture recognition: {bodies} bodies x {cycles} arm cycles x 12 frames at 25 fps, "
           f"40 model changes per body and frame, engine {engine}")
    if engine == "spark":
        summary = _run_spark(case, bodies, cycles, master, report)
        per_body = summary.pop("_per_body")
    else:
        shown = [0]

        def on_gesture(ce: Any) -> None:
            if shown[0] < 10:
                report(f"ForwardGesture {ce.params[0]} at {ce.ts:.0f} ms "
                       f"(cycle {int(ce.ts) // (12 * 40) + 1})")
            shown[0] += 1

        run = case.run_local(bodies, cycles, on_gesture=on_gesture)
        summary = {**run.summary(), "engine": "local"}
        per_body = run.per_body
        if run.slides and set(run.slides.values()) != {cycles}:
            report(f"slides per body: {dict(Counter(run.slides.values()))}")
    ok = summary["gestures"] == bodies * cycles and all(
        per_body.get(f"body{b}", 0) == cycles for b in range(bodies))
    summary["one_gesture_per_cycle"] = ok
    typer.echo(json.dumps(summary, separators=(",", ":")))
    if not ok:
        raise typer.Exit(1)
