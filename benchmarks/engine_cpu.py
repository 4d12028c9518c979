"""The in-process engine's throughput in CPU time, for comparing two commits on a busy machine.

Wall-clock benchmarks on a shared two-core machine vary several-fold between identical runs
when other processes compete; the CPU time the process itself spends does not count them. This
runs the engine's main paths — gesture (000 §7.4) one event at a time and through
``Engine.run`` (the chain kernel), Esper's Crash pattern (003 Listing 5) and issue 21's
three-event chain (checked against a brute-force count) both ways — and
reports events per CPU second (best of ``--repeat``). To compare commits, run it in a checkout
of each, alternating, and compare the medians (issue 20's closing note did so):

    python benchmarks/engine_cpu.py --json old.json     # in the other checkout
    python benchmarks/engine_cpu.py --json new.json
"""

from __future__ import annotations

import argparse
import gc
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import esper_patterns
import gesture_cep
from common import console, fmt_int, make_table, metadata, write_json

from cepflow.runtime.engine import Engine

DEFAULT_JSON = gesture_cep.ROOT / "benchmarks" / "results" / "engine_cpu.json"


def cpu_rate(n: int, fn: Callable[[], Any], repeat: int) -> float:
    """Events per CPU second of the fastest of ``repeat`` calls of ``fn`` over ``n`` events."""
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return n / best if best > 0 else float("inf")


def workloads(events: int, repeat: int) -> list[dict[str, Any]]:
    rows = []
    gen, program = gesture_cep.load_generator(), gesture_cep.load_program()
    for bodies in (24, 1000):
        evs = gesture_cep.make_events(gen, bodies, gesture_cep.cycles_for(events, bodies))
        actions = {gesture_cep.ACTION: gesture_cep.counting_action(Counter())}

        def per_event(evs: list = evs, actions: dict = actions) -> None:
            engine = Engine(program, actions=actions)
            for e in evs:
                engine.process(e)

        def batched(evs: list = evs, actions: dict = actions) -> None:
            for _ in Engine(program, actions=actions).run(evs):
                pass

        rows.append({"workload": f"gesture, {bodies} bodies", "path": "process",
                     "events": len(evs), "events_per_cpu_s": cpu_rate(len(evs), per_event,
                                                                      repeat)})
        rows.append({"workload": f"gesture, {bodies} bodies", "path": "run",
                     "events": len(evs), "events_per_cpu_s": cpu_rate(len(evs), batched,
                                                                      repeat)})
    crash = esper_patterns.crash_program()
    evs = esper_patterns.make_events(events * 2, 10_000)

    def crash_per_event() -> None:
        engine = Engine(crash)
        for e in evs:
            engine.process(e)

    def crash_run() -> None:
        list(Engine(crash).run(evs))

    rows.append({"workload": "Esper Crash, 10,000 bikes", "path": "process", "events": len(evs),
                 "events_per_cpu_s": cpu_rate(len(evs), crash_per_event, max(1, repeat // 2))})
    rows.append({"workload": "Esper Crash, 10,000 bikes", "path": "run", "events": len(evs),
                 "events_per_cpu_s": cpu_rate(len(evs), crash_run, repeat)})
    chain = esper_patterns.chain_program()
    cevs = esper_patterns.chain_events(events * 2)
    expected = esper_patterns.chain_oracle(cevs)

    def chain_per_event() -> None:
        engine = Engine(chain)
        found = sum(len(engine.process(e)) for e in cevs)
        assert found == expected, (found, expected)

    def chain_run() -> None:
        found = sum(1 for _ in Engine(chain).run(cevs))
        assert found == expected, (found, expected)

    label = "Esper three-event chain, 16 keys"
    rows.append({"workload": label, "path": "process", "events": len(cevs),
                 "events_per_cpu_s": cpu_rate(len(cevs), chain_per_event, max(1, repeat // 2))})
    rows.append({"workload": label, "path": "run", "events": len(cevs),
                 "events_per_cpu_s": cpu_rate(len(cevs), chain_run, repeat)})
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=120_000, help="gesture events per case "
                    "(Crash: twice as many)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="20,000 events, 2 repeats")
    ap.add_argument("--json", default=str(DEFAULT_JSON))
    args = ap.parse_args(argv)
    events, repeat = (20_000, 2) if args.quick else (args.events, args.repeat)
    rows = workloads(events, repeat)
    table = make_table("engine throughput per CPU second", ["workload", "path", "events",
                                                            ("events / CPU s", "right")])
    for r in rows:
        table.add_row(r["workload"], r["path"], fmt_int(r["events"]),
                      fmt_int(r["events_per_cpu_s"]))
    console().print(table)
    path = write_json(args.json, {**metadata("engine_cpu", {"events": events,
                                                             "repeat": repeat}), "rows": rows})
    console().print(f"Results written to {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
