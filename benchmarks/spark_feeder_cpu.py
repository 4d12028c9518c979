"""The Python side of the Spark replay in CPU time, without Spark: what a worker runs per group
(``spark.dataframes.Feeder`` over an ``Engine`` with ``on_error="skip"``, fed Arrow batches of
65,536 rows of the pipeline's layout, built with ``spark.columns.encode``).

For comparing commits on a busy machine, where ``spark_pipeline.py``'s wall times move with
the load (the JVM's share is the same on both sides of such a comparison): run it in a checkout
of each, alternating, and compare the medians (benchmarks/README.md, issue 20 and 21).

    python benchmarks/spark_feeder_cpu.py            # 250,000 events per workload, best of 3
    python benchmarks/spark_feeder_cpu.py --quick    # 40,000 events, best of 2
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Sequence
from typing import Any

import esper_patterns
import gesture_cep
from common import console, fmt_int, make_table, metadata, write_json

from cepflow.events.event import Event
from cepflow.runtime.engine import Engine
from cepflow.spark.columns import encode, event_schema
from cepflow.spark.dataframes import Feeder

DEFAULT_JSON = gesture_cep.ROOT / "benchmarks" / "results" / "spark_feeder_cpu.json"
BATCH_ROWS = 65_536


def batches(events: list[Event], arity: int) -> list[Any]:
    """The events as the replay's runners receive them (no file or key column)."""
    names = [f.name for f in event_schema(arity) if f.name not in ("file", "key")]
    batch = encode(events, arity, [None] * len(events), [None] * len(events)).select(names)
    return [batch.slice(i, BATCH_ROWS) for i in range(0, batch.num_rows, BATCH_ROWS)]


def cpu_rate(program: Any, events: list[Event], repeat: int) -> tuple[float, int]:
    """(events per CPU second of the fastest of ``repeat`` runs, match rows written)."""
    arities = {t: len(s.params) for t, s in program.schemas.items()}
    arity = max(arities.values())
    parts = batches(events, arity)
    best, rows = float("inf"), 0
    for _ in range(repeat):
        gc.collect()
        t0 = time.process_time()
        feeder = Feeder(Engine(program, strict_actions=False), arities, arity)
        rows = sum(out.num_rows for b in parts for out in feeder.add(b))
        rows += sum(out.num_rows for out in feeder.end(None, close_windows=False))
        best = min(best, time.process_time() - t0)
    return len(events) / best, rows


def workloads(n: int, repeat: int) -> list[dict[str, Any]]:
    out = []
    gen, gesture = gesture_cep.load_generator(), gesture_cep.load_program()
    for bodies in (64, 10_000):
        evs = gesture_cep.make_events(gen, bodies, gesture_cep.cycles_for(n, bodies))
        rate, rows = cpu_rate(gesture, evs, repeat)
        out.append({"workload": f"gesture, {bodies:,} bodies", "events": len(evs),
                    "matches": rows, "events_per_cpu_s": rate})
    for label, program, evs in [
            ("Esper Crash, 10,000 bikes", esper_patterns.crash_program(),
             esper_patterns.make_events(n, 10_000)),
            ("Esper three-event chain, 16 keys", esper_patterns.chain_program(),
             esper_patterns.chain_events(n))]:
        rate, rows = cpu_rate(program, evs, repeat)
        out.append({"workload": label, "events": len(evs), "matches": rows,
                    "events_per_cpu_s": rate})
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=250_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="40,000 events, 2 repeats")
    ap.add_argument("--json", default=str(DEFAULT_JSON))
    args = ap.parse_args(argv)
    n, repeat = (40_000, 2) if args.quick else (args.events, args.repeat)
    rows = workloads(n, repeat)
    table = make_table("the Spark replay's Python side per CPU second",
                       ["workload", "events", "matches", ("events / CPU s", "right")])
    for r in rows:
        table.add_row(r["workload"], fmt_int(r["events"]), fmt_int(r["matches"]),
                      fmt_int(r["events_per_cpu_s"]))
    console().print(table)
    path = write_json(args.json, {**metadata("spark_feeder_cpu", {"events": n,
                                                                   "repeat": repeat}),
                                  "rows": rows})
    console().print(f"Results written to {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
