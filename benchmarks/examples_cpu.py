"""``Engine.run`` over every program in ``examples/`` in CPU time, and where the time goes per
statement (issue 21's target: ``Engine.run`` ≥ 1M events/s for every pattern in examples/).

Each program reads a stream made by its example's own generator where there is one
(examples/motorbike/generate.py, examples/air_quality/generate.py, the temperature simulation
model, examples/gesture/events.py); for the examples that ship only a handful of events
(contractions, every, cps) a seeded stream of their event types is drawn here (see
``streams``). The events are read into memory first (written as JSON Lines and read back with
``cepflow.inputs.read_events``), then ``Engine.run`` + ``finish`` is timed in CPU time
(``time.process_time``), best and median of ``--repeat``, the load average beside it.

Beside it, the column route (``--routes run,columns``, the default; issue 21 item 1): the same
stream as Arrow batches of the event layout (``cepflow.inputs.columnar.encode``, cut where
``Engine.run`` cuts its batches), each fed to ``Engine.process_columns`` as an ``ArrowRows`` (the
file job's route: Python events only for the rows in matches or partial matches), then
``finish`` — timed the same way; a batch the engine gives back (``Declined``) goes through
``Engine.run`` as the file job does, and is counted. ``columns+objects`` also asks each
``MatchTable`` for its ``complex_events()`` (what a caller wanting objects pays on top). The
matches must be as many as ``Engine.run``'s, else the run stops.

``--profile`` adds, per program, one more run in which every statement's work is timed: the
steps its pattern takes (per input event, per cascaded complex event, per deadline) or its
window statement's ``process``/``advance_to``, the kernels' planning of a batch in the program
split (their replayed steps count as the engine's), with rule firing and the engine's own share
(the rest: routing, numbering, the cascade's bookkeeping, the batch's columns) apart. The
timing wrapper costs about a tenth of a microsecond per call, so the shares, not the sums, are
the figures.

    python benchmarks/examples_cpu.py                     # all programs, 200,000 events each
    python benchmarks/examples_cpu.py --profile --programs motorbike,temperature
    python benchmarks/examples_cpu.py --routes run,columns,columns+objects --programs air_quality
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from common import ROOT, console, make_table, metadata, positive_int, run_isolated, write_json

DEFAULT_JSON = ROOT / "benchmarks" / "results" / "examples_cpu.json"
EX = ROOT / "examples"
SEED = 20261126


# -- the streams ------------------------------------------------------------------------------
def motorbike_records(n: int) -> Iterator[dict[str, Any]]:
    sys.path.insert(0, str(EX / "motorbike"))
    import generate as motorbike

    sys.path.pop(0)
    del sys.modules["generate"]
    # the generator's defaults scaled to n events (1M events: 10,000 bikes, 10 days)
    scale = n / 1_000_000
    out, _ = motorbike.generate(n, bikes=max(10, int(10_000 * scale)), days=max(0.1, 10 * scale),
                                accidents=max(1, int(300 * scale)),
                                crashes=max(1, int(3000 * scale)))
    yield from out


def air_quality_records(n: int) -> Iterator[dict[str, Any]]:
    sys.path.insert(0, str(EX / "air_quality"))
    import generate as air

    sys.path.pop(0)
    del sys.modules["generate"]
    days = max(1, -(-n // (61 * 6 * 144)))
    for i, r in enumerate(air.readings(days=days)):
        if i >= n:
            return
        yield r


def temperature_records(n: int) -> Iterator[dict[str, Any]]:
    from cepflow.simulation.generator import generate
    from cepflow.simulation.simulation_model import load_model

    model = load_model(EX / "temperature" / "model.toml")
    run = generate(model, None, SEED, limit=n)
    (src,) = run.sources
    temps, times = src.columns["temperature"], src.columns["timeOfReading"]
    for i, ts in enumerate(run.ts[src.positions].tolist()):
        yield {"type": "TemperatureEvent", "ts": ts, "temperature": int(temps[i]),
               "timeOfReading": int(times[i])}


def contractions_records(n: int) -> Iterator[dict[str, Any]]:
    """Patients report a contraction duration (s) every minute: 50 patients, durations uniform
    in 0..60 (about 40 % over 35 s, Duration's threshold); ``ts`` in minutes as the example."""
    rng = random.Random(SEED)
    patients = [f"P{i:02d}" for i in range(50)]
    for i in range(n):
        minute = i // len(patients)
        yield {"type": "Patient", "ts": minute * 60_000, "params": [
            minute, patients[i % len(patients)], rng.randrange(0, 61)]}


def every_records(n: int) -> Iterator[dict[str, Any]]:
    """ME events, id A/B/C uniformly, one a second."""
    rng = random.Random(SEED)
    for i in range(n):
        yield {"type": "ME", "ts": i * 1000, "params": [rng.choice("ABC"), i]}


def gesture_records(n: int) -> Iterator[dict[str, Any]]:
    sys.path.insert(0, str(ROOT))
    from examples.gesture.events import EVENTS_PER_CYCLE, gesture_events

    bodies = 24
    for e in gesture_events(bodies, max(1, n // (EVENTS_PER_CYCLE * bodies))):
        yield {"type": e.type, "ts": e.ts, "params": list(e.params)}


def cps_records(n: int) -> Iterator[dict[str, Any]]:
    """The query events of cps.vepl: per host, invalidModel at random, validModel now and
    then (100 hosts, one event a second)."""
    rng = random.Random(SEED)
    for i in range(n):
        yield {"type": "invalidModel" if rng.random() < 0.8 else "validModel", "ts": i * 1000,
               "params": [f"h{rng.randrange(100)}"]}


#: program name -> (pattern files, stream)
PROGRAMS: dict[str, tuple[tuple[Path, ...], Callable[[int], Iterator[dict[str, Any]]]]] = {
    "motorbike": ((EX / "motorbike" / "motorbike.epl",), motorbike_records),
    "motorbike+properties": ((EX / "motorbike" / "motorbike.epl",
                              EX / "motorbike" / "properties.epl"), motorbike_records),
    "temperature": ((EX / "temperature" / "temperature.epl", EX / "temperature" / "alerts.epl"),
                    temperature_records),
    "air_quality": ((EX / "air_quality" / "air_quality.epl",), air_quality_records),
    "contractions": ((EX / "contractions" / "contractions.epl",), contractions_records),
    "every": ((EX / "every" / "every.epl",), every_records),
    "gesture": ((EX / "gesture" / "gesture.vepl",), gesture_records),
    "cps": ((EX / "cps" / "cps.vepl",), cps_records),
}


def load_program(files: Sequence[Path]) -> Any:
    """The files as one program; a schema a later file declares again (each temperature file
    declares TemperatureEvent to stand alone) is taken once."""
    from cepflow.language.epl import parse_epl
    from cepflow.loader import load_module

    seen: set[str] = set()
    texts = []
    for f in files:
        text = f.read_text()
        for m in re.finditer(r"create\s+schema\s+(\w+)\s*\([^)]*\)\s*;", text):
            if m.group(1) in seen:
                text = text.replace(m.group(0), "")
            seen.add(m.group(1))
        texts.append(text)
    if files[0].suffix == ".epl":
        return load_module(parse_epl("\n".join(texts), str(files[0])))
    from cepflow.loader import load

    return load("\n".join(texts) + "\n" if len(files) > 1 else files[0])


def read_stream(name: str, n: int, program: Any, tmp: Path) -> list[Any]:
    from cepflow.inputs import read_events

    path = tmp / f"{name}.jsonl"
    if not path.exists():
        with open(path, "w") as f:
            for r in PROGRAMS[name][1](n):
                f.write(json.dumps(r) + "\n")
    return list(read_events(str(path), program.schemas))


# -- the measurement --------------------------------------------------------------------------
#: the routes measured (module docstring)
ROUTES = ("run", "columns", "columns+objects")
#: Engine.run's default batch size: the column route cuts its Arrow batches there too
BATCH = 1 << 18


def measure(name: str, n: int, repeat: int, tmp: str) -> dict[str, Any]:
    """``Engine.run`` + ``finish`` over the program's stream, ``repeat`` times (CPU time)."""
    from cepflow.runtime.engine import Engine

    program = load_program(PROGRAMS[name][0])
    runs, matches = [], 0
    for _ in range(repeat):
        events = read_stream(name, n, program, Path(tmp))
        gc.collect()
        load = os.getloadavg()[0]
        engine = Engine(program, strict_actions=False)
        c0 = time.process_time()
        matches = sum(1 for _ in engine.run(events)) + len(engine.finish(close_windows=True))
        runs.append({"cpu_s": time.process_time() - c0, "load": load})
    return {"program": name, "events": len(events), "matches": matches,
            "statements": len(program.automata) + len(program.windows),
            "kernel": _kernel_use(engine), **_summary(runs)}


def _summary(runs: list[dict[str, float]]) -> dict[str, Any]:
    """The runs, their best and median CPU seconds and the highest load among them."""
    cpus = [r["cpu_s"] for r in runs]
    return {"runs": runs, "best_cpu_s": min(cpus), "median_cpu_s": statistics.median(cpus),
            "load": max(r["load"] for r in runs)}


def measure_columns(name: str, n: int, repeat: int, tmp: str, objects: bool
                    ) -> dict[str, Any] | None:
    """``Engine.process_columns`` over the program's stream as Arrow batches + ``finish``,
    ``repeat`` times (CPU time; module docstring); with ``objects`` each table's
    ``complex_events()`` too. None when the engine takes no columns (``Engine.columnar``)."""
    from cepflow.inputs.columnar import arity_of, decode, encode
    from cepflow.runtime.arrow_rows import ArrowRows
    from cepflow.runtime.engine import Engine
    from cepflow.runtime.kernels import Declined

    program = load_program(PROGRAMS[name][0])
    if not Engine(program, strict_actions=False).columnar:
        return None
    events = read_stream(name, n, program, Path(tmp))
    arity = arity_of(program.schemas)
    cuts = [events[i:i + BATCH] for i in range(0, len(events), BATCH)]
    batches = [encode(c, arity, [None] * len(c), [None] * len(c)) for c in cuts]
    del events, cuts
    runs, matches, declined = [], 0, 0
    for _ in range(repeat):
        gc.collect()
        load = os.getloadavg()[0]
        engine = Engine(program, strict_actions=False)
        arities = engine.host.arity
        matches = declined = 0
        c0 = time.process_time()
        for b in batches:
            try:
                table = engine.process_columns(ArrowRows(b, arities, arity))
            except Declined:  # (as the file job: the batch as events)
                declined += 1
                matches += sum(1 for _ in engine.run(decode(b, arities, arity)))
                continue
            matches += len(table.complex_events()) if objects else table.count
        matches += len(engine.finish(close_windows=True))
        runs.append({"cpu_s": time.process_time() - c0, "load": load})
    return {"matches": matches, "declined_batches": declined, **_summary(runs)}


def _kernel_use(engine: Any) -> str:
    """Which kernels the engine's batches take: all patterns, some (the program split), none."""
    if engine._chains is not None or engine._pairs is not None:
        return "whole batch"
    split = getattr(engine, "_split", None)  # (a baseline checkout may have no split)
    if split is None:
        return "per event"
    try:  # (the window statements planned column-wise; none in a baseline without them)
        from cepflow.runtime.kernels.window_block import window_kernels
        windows = [engine.windows[i].statement.name for i in window_kernels(engine)]
    except ImportError:
        windows = []
    parts = [m.name for m in split] + [f"{n} (window)" for n in windows]
    return f"split: {', '.join(parts)}" if parts else "per event"


def profile(name: str, n: int, tmp: str) -> dict[str, float]:
    """One run with every statement's calls timed: seconds per statement, rules, engine."""
    from cepflow.runtime.engine import Engine

    program = load_program(PROGRAMS[name][0])
    events = read_stream(name, n, program, Path(tmp))
    engine = Engine(program, strict_actions=False)
    spent: dict[str, float] = {}
    clock = time.perf_counter
    depth = [0]

    def timed(key: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kw: Any) -> Any:
            if depth[0]:  # (a step calling another timed method: the outer one counts)
                return fn(*args, **kw)
            depth[0] = 1
            t0 = clock()
            try:
                return fn(*args, **kw)
            finally:
                depth[0] = 0
                spent[key] = spent.get(key, 0.0) + clock() - t0
        return call

    for m in engine.matchers:
        key = f"pattern {m.name}"
        step_for = m.step_for
        m.step_for = (lambda t, f=step_for, k=key: timed(k, f(t)))  # type: ignore[method-assign]
        m.process = timed(key, m.process)  # type: ignore[method-assign]
        m.on_deadline = timed(key, m.on_deadline)  # type: ignore[method-assign]
    for r in engine.windows:
        key = f"window {r.statement.name}"
        r.process = timed(key, r.process)  # type: ignore[method-assign]
        r.advance_to = timed(key, r.advance_to)  # type: ignore[method-assign]
    try:  # the program split's kernels: planning a batch (their replay is the engine's)
        from cepflow.runtime.kernels import split
    except ImportError:  # (a baseline without the split)
        pass
    else:
        split.plan_restart = timed("kernels: plan every (a -> b)", split.plan_restart)
        split._plan_pair = timed("kernels: plan pairs and single events", split._plan_pair)
        if hasattr(split, "plan_consec"):  # (a baseline without the consecutive kernel)
            split.plan_consec = timed("kernels: plan consecutive chains (and not)",
                                      split.plan_consec)
        if hasattr(split, "plan_window"):  # (a baseline without window blocks)
            split.plan_window = timed("kernels: plan window blocks (their rows made)",
                                      split.plan_window)
            split.plan_cascade = timed("kernels: plan the cascade over window blocks",
                                       split.plan_cascade)
    host = engine.host
    host.fire = timed("rules", host.fire)  # type: ignore[method-assign]
    host.fire_one = timed("rules", host.fire_one)  # type: ignore[method-assign]
    engine.index_routes()
    gc.collect()
    t0 = clock()
    for _ in engine.run(events):
        pass
    engine.finish(close_windows=True)
    total = clock() - t0
    spent["engine (routing, numbering, cascade, timers)"] = total - sum(spent.values())
    return {"total_s": total, **spent}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=positive_int, default=200_000)
    ap.add_argument("--repeat", type=positive_int, default=3)
    ap.add_argument("--programs", default=",".join(PROGRAMS))
    ap.add_argument("--profile", action="store_true", help="also the per-statement shares")
    ap.add_argument("--routes", default="run,columns",
                    help="comma-separated: run (Engine.run), columns (process_columns over "
                         "Arrow batches), columns+objects (and each table's complex_events())")
    ap.add_argument("--json", type=Path, default=DEFAULT_JSON)
    return ap.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    con = console()
    names = args.programs.split(",")
    unknown = [n for n in names if n not in PROGRAMS]
    if unknown:
        con.print(f"unknown program(s) {', '.join(unknown)}; known: {', '.join(PROGRAMS)}")
        return 2
    routes = args.routes.split(",")
    if set(routes) - set(ROUTES) or "run" not in routes:
        con.print(f"--routes: some of {', '.join(ROUTES)}, run among them")
        return 2
    rows = []
    with tempfile.TemporaryDirectory(prefix="cepflow-examples-") as tmp:
        for name in names:
            row = run_isolated(measure, name, args.events, args.repeat, tmp)
            for route in routes[1:] if routes[0] == "run" else routes:
                if route == "run":
                    continue
                got = run_isolated(measure_columns, name, args.events, args.repeat, tmp,
                                   route == "columns+objects")
                if got is not None and got["matches"] != row["matches"]:
                    raise SystemExit(f"{name}: {route} found {got['matches']:,} matches, "
                                     f"Engine.run {row['matches']:,}")
                row[route] = got
            if args.profile:
                row["profile"] = run_isolated(profile, name, args.events, tmp)
            rows.append(row)
    table = make_table(f"The examples by route (CPU time, best / median of {args.repeat})",
                       ["program", "statements", "kernel", "events", "matches", "route",
                        "CPU s", ("events / CPU s", "right"), "load"])
    for r in rows:
        for route in routes:
            m = r if route == "run" else r.get(route)
            shown = [r["program"], str(r["statements"]), r["kernel"], f"{r['events']:,}",
                     f"{r['matches']:,}"] if route == routes[0] else [""] * 5
            if m is None:  # (Engine.columnar does not hold)
                table.add_row(*shown, route, "—", "no column route", "")
                continue
            note = f" ({m['declined_batches']} declined)" if m.get("declined_batches") else ""
            table.add_row(*shown, route + note,
                          f"{m['best_cpu_s']:.2f} / {m['median_cpu_s']:.2f}",
                          f"{r['events'] / m['best_cpu_s'] / 1000:,.0f}k / "
                          f"{r['events'] / m['median_cpu_s'] / 1000:,.0f}k", f"{m['load']:.1f}")
    con.print(table)
    for r in rows:
        if "profile" in r:
            p = dict(r["profile"])
            total = p.pop("total_s")
            t = make_table(f"{r['program']}: where the time goes ({total:.2f} s timed)",
                           ["part", ("s", "right"), ("share", "right")])
            for k, v in sorted(p.items(), key=lambda kv: -kv[1]):
                t.add_row(k, f"{v:.3f}", f"{v / total:.0%}")
            con.print(t)
    path = write_json(args.json, {**metadata("examples_cpu", {"events": args.events,
                                                               "repeat": args.repeat,
                                                               "routes": routes}),
                                  "rows": rows})
    con.print(f"[dim]written {path}[/dim]")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
