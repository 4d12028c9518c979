"""Petri-net simulation benchmark: pattern sets translated to PCPNs (cepflow.petri) and run to
the end of their input, checked against the engine.

Workloads (each run in its own forked process; data made before the clock starts):

* ``contractions`` — examples/contractions/contractions.epl (004 §IV: Duration, ``every a1 ->
  a2`` over 1,000 patients; Counter, a 10-minute sliding window), random Patient readings a
  minute or two apart;
* ``motorbike`` — examples/motorbike/motorbike.epl (003 §II: five patterns, two window
  statements), the stream of examples/motorbike/generate.py (1,000 bikes, crashes and
  accidents placed in it);
* ``air_quality`` — the two-pollutant subset of examples/air_quality (003 §V.F.2's
  comparison: 1,000 random events, 32 minutes for a Petri-net tool, 8 s for Maude; target
  under 1 s): the pollutants' aggregate statements and grade patterns and AirQualityLevel
  over their grades, cut from air_quality.epl (``--pollutants``, default NO2 and PM10: a
  1-hour window that readings leave during the run and a 24-hour one), and the first 1,000
  readings of those pollutants drawn from examples/air_quality/model.toml by
  cepflow.simulation, when the example's patterns are in the repository; otherwise the line
  says they are missing.

Measured: the translation (the net with the stream as its initial marking), then the run
(CPU time of ``Simulator.run`` with the deterministic ``first`` choice and no trace kept):
fired transitions per second and input events per second; the engine's time on the same
stream for scale. Every run is checked: the net's complex-event places must hold exactly the
engine's complex events (cepflow.petri.crossval's numbering) — a mismatch aborts (exit 1).

    .venv/bin/python benchmarks/petri.py            # 100,000 events (contractions, motorbike)
    .venv/bin/python benchmarks/petri.py --quick    # 5,000 events, seconds
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from common import (
    ROOT,
    BenchmarkFailure,
    console,
    fmt_int,
    machine_line,
    make_table,
    metadata,
    positive_int,
    run_isolated,
    write_json,
)

from cepflow.events.event import Event
from cepflow.language.epl import parse_epl
from cepflow.loader import load, load_module
from cepflow.petri.translate import engine_tokens, translate
from cepflow.runtime.engine import Engine
from cepflow.simulation import generate, load_model

DEFAULT_JSON = ROOT / "benchmarks" / "results" / "petri.json"
DEFAULT_EVENTS = 100_000
QUICK_EVENTS = 5_000
AIR_EVENTS = 1_000
SEED = 20261126
EXAMPLES = ROOT / "examples"


def contractions_stream(n: int, seed: int = SEED) -> list[Event]:
    """Patient readings: ``ts`` in minutes as the seed's type has it, the stream's time in
    ms; 1,000 patients, a reading every 0, 1 or 2 minutes, durations 5 to 50 s."""
    rng = random.Random(seed)
    t, out = 0, []
    for _ in range(n):
        t += rng.choice((0, 60_000, 60_000, 120_000))
        out.append(Event("Patient", (t // 60_000, f"p{rng.randrange(1000)}",
                                     rng.randint(5, 50)), t))
    return out


def motorbike_stream(n: int, seed: int = SEED) -> list[Event]:
    sys.path.insert(0, str(EXAMPLES / "motorbike"))
    from generate import generate  # examples/motorbike/generate.py

    rows, _ = generate(n, bikes=1000, days=max(1, n / 200_000), accidents=max(1, n // 3000),
                       crashes=max(1, n // 300), seed=seed % 1000)
    names = ("timestamp", "motorbikeId", "location", "speed", "tire1", "tire2", "seat")
    return [Event("Motorbike", tuple(r[k] for k in names), r["ts"]) for r in rows]


AIR = EXAMPLES / "air_quality"


def air_quality_subset(pollutants: tuple[str, ...]) -> str:
    """air_quality.epl cut to ``pollutants``: the schema, each pollutant's aggregate
    statement and grade patterns (named ``<P>…``), and AirQualityLevel, which then reads the
    union of the grades that are left."""
    text = (AIR / "air_quality.epl").read_text(encoding="utf-8")
    keep = []
    for stmt in re.split(r"(?<=;)\n", text):
        named = re.search(r"@Name\('(\w+)'\)", stmt)
        if named is None or named[1] == "AirQualityLevel" or any(
                re.fullmatch(f"{p}[A-Z]\\w*", named[1]) for p in pollutants):
            keep.append(stmt)
    return "\n".join(keep)


def air_quality_stream(pollutants: tuple[str, ...], n: int, schemas: Any,
                       seed: int = SEED) -> list[Event]:
    """The first ``n`` readings of ``pollutants`` drawn from the example's model."""
    model = load_model(AIR / "model.toml")
    model = replace(model, sources=[s for s in model.sources if s.kind in pollutants])
    return generate(model, None, seed, limit=n).events(schemas)


def measure(patterns: str, events: list[Event], text: str | None = None) -> dict[str, Any]:
    prog = load(EXAMPLES / patterns) if text is None else load_module(parse_epl(text))
    t0 = time.process_time()
    tr = translate(prog, events)
    t1 = time.process_time()
    sim = tr.simulator(choice="first", record=False)
    sim.run()
    t2 = time.process_time()
    if not tr.finished(sim):
        raise BenchmarkFailure(f"{patterns}: the net stopped before the end of its input")
    net = tr.complex_events(sim)
    eng = Engine(prog)
    t3 = time.process_time()
    matches = [m for e in events for m in eng.process(e)]
    t4 = time.process_time()
    want = engine_tokens(events, matches)
    for x in set(net) | set(want):
        if net.get(x, []) != want.get(x, []):
            raise BenchmarkFailure(f"{patterns}: the net's {x} differ from the engine's")
    run = t2 - t1
    return {"patterns": patterns, "events": len(events), "places": len(tr.net.places),
            "transitions": len(tr.net.transitions), "translate_s": t1 - t0, "run_s": run,
            "fired": sim.steps, "fired_per_s": sim.steps / run if run else None,
            "events_per_s": len(events) / run if run else None, "engine_s": t4 - t3,
            "complex_events": sum(len(v) for v in net.values())}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=positive_int, default=None)
    ap.add_argument("--quick", action="store_true", help=f"{QUICK_EVENTS:,} events")
    ap.add_argument("--pollutants", default="NO2,PM10",
                    help="the air-quality subset's pollutants (default NO2,PM10)")
    ap.add_argument("--json", type=Path, default=DEFAULT_JSON)
    args = ap.parse_args()
    n = args.events or (QUICK_EVENTS if args.quick else DEFAULT_EVENTS)
    out = console()
    results: list[dict[str, Any]] = []
    left: list[str] = []
    cases: list[tuple[str, list[Event], str | None]] = [
        ("contractions/contractions.epl", contractions_stream(n), None),
        ("motorbike/motorbike.epl", motorbike_stream(n), None)]
    pollutants = tuple(p.strip() for p in args.pollutants.split(",") if p.strip())
    if (AIR / "air_quality.epl").is_file():
        text = air_quality_subset(pollutants)
        schemas = load_module(parse_epl(text)).schemas
        cases.append((f"air_quality/{'+'.join(pollutants)}",
                      air_quality_stream(pollutants, AIR_EVENTS, schemas), text))
    else:
        left.append("air_quality: examples/air_quality/air_quality.epl is not in this "
                    "repository yet (003 §V.F.2's two-pollutant subset, 1,000 events, target "
                    "under 1 s)")
    for patterns, events, text in cases:
        try:
            results.append(run_isolated(measure, patterns, events, text))
        except BenchmarkFailure as e:
            out.print(f"[red]{e}[/red]")
            return 1
    table = make_table(f"cepflow.petri — {machine_line(metadata('petri', {})['machine'])}",
                       [("workload", "left"), "events", "places", "transitions",
                        "translate s", "run s", "fired", "fired/s", "events/s", "engine s",
                        "complex events"])
    for r in results:
        table.add_row(r["patterns"].split("/")[0], fmt_int(r["events"]), str(r["places"]),
                      str(r["transitions"]), f"{r['translate_s']:.2f}", f"{r['run_s']:.2f}",
                      fmt_int(r["fired"]), fmt_int(r["fired_per_s"]),
                      fmt_int(r["events_per_s"]), f"{r['engine_s']:.2f}",
                      fmt_int(r["complex_events"]))
    out.print(table)
    for line in left:
        out.print(f"not measured: {line}")
    path = write_json(args.json, {**metadata("petri", {"events": n}), "results": results,
                                  "not_measured": left})
    out.print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
