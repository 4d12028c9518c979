"""The in-process engine's throughput in CPU time, for comparing two commits on a busy machine.

Wall-clock benchmarks on a shared two-core machine vary several-fold between identical runs
when other processes compete; the CPU time the process itself spends does not count them. This
runs the engine's main paths — gesture (000 §7.4) one event at a time and through
``Engine.run`` (the chain kernel), Esper's Crash pattern (003 Listing 5), and issue 21's
three-event chain and pair pattern ``every a=A -> b=B(b.key = a.key) where timer:within(10
sec)`` (``--pair-events`` events of the same stream: whole-second timestamps, 16 keys, A/B/C at
0.3/0.3/0.4; both checked against a brute-force count) both ways — and reports events per CPU
second (best of ``--repeat``). To compare commits, run it in a checkout of each, alternating,
and compare the medians (issue 20's closing note did so):

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

from cepflow.events.event import Event
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


def both_paths(name: str, program: Any, evs: list[Event], repeat: int,
               actions: dict[str, Any] | None = None, process_repeat: int | None = None,
               expected: int | None = None) -> list[dict[str, Any]]:
    """Rows for ``evs`` through ``Engine.process`` one at a time and through ``Engine.run``
    (each run's number of matches checked when ``expected`` is given)."""

    def check(found: int) -> None:
        assert expected is None or found == expected, (name, found, expected)

    def per_event() -> None:
        engine = Engine(program, actions=actions)
        check(sum(len(engine.process(e)) for e in evs))

    def batched() -> None:
        check(sum(1 for _ in Engine(program, actions=actions).run(evs)))

    n = len(evs)
    return [{"workload": name, "path": "process", "events": n,
             "events_per_cpu_s": cpu_rate(n, per_event, process_repeat or repeat)},
            {"workload": name, "path": "run", "events": n,
             "events_per_cpu_s": cpu_rate(n, batched, repeat)}]


#: the workloads, by the name ``--only`` picks them with
WORKLOADS = ("gesture", "crash", "chain", "pair")


def workloads(events: int, pairs: int, repeat: int,
              only: Sequence[str] = WORKLOADS) -> list[dict[str, Any]]:
    rows = []
    if "gesture" in only:
        gen, program = gesture_cep.load_generator(), gesture_cep.load_program()
        for bodies in (24, 1000):
            evs = gesture_cep.make_events(gen, bodies, gesture_cep.cycles_for(events, bodies))
            actions = {gesture_cep.ACTION: gesture_cep.counting_action(Counter())}
            rows += both_paths(f"gesture, {bodies} bodies", program, evs, repeat, actions)
    half = max(1, repeat // 2)
    if "crash" in only:
        rows += both_paths("Esper Crash, 10,000 bikes", esper_patterns.crash_program(),
                           esper_patterns.make_events(events * 2, 10_000), repeat,
                           process_repeat=half)
    if "chain" in only:
        cevs = esper_patterns.chain_events(events * 2)
        rows += both_paths("Esper three-event chain, 16 keys", esper_patterns.chain_program(),
                           cevs, repeat, process_repeat=half,
                           expected=esper_patterns.chain_oracle(cevs))
    if "pair" in only:
        pevs = esper_patterns.chain_events(pairs)
        rows += both_paths("Esper pair every a -> b within 10 s, 16 keys",
                           esper_patterns.pair_program(), pevs, repeat,
                           expected=esper_patterns.chain_oracle(pevs, ("B",)))
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=120_000, help="gesture events per case "
                    "(Crash and the chain: twice as many)")
    ap.add_argument("--pair-events", type=int, default=1_000_000,
                    help="events of the pair pattern's stream")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="20,000 events (pair: 40,000), "
                    "2 repeats")
    ap.add_argument("--only", default=",".join(WORKLOADS),
                    help=f"comma-separated workloads to run (of {', '.join(WORKLOADS)}; "
                    "default all)")
    ap.add_argument("--json", default=str(DEFAULT_JSON))
    args = ap.parse_args(argv)
    only = [w.strip() for w in args.only.split(",") if w.strip()]
    unknown = sorted(set(only) - set(WORKLOADS))
    if unknown:
        ap.error(f"unknown workload(s) {', '.join(unknown)} (known: {', '.join(WORKLOADS)})")
    events, repeat = (20_000, 2) if args.quick else (args.events, args.repeat)
    pairs = 40_000 if args.quick else args.pair_events
    rows = workloads(events, pairs, repeat, only)
    table = make_table("engine throughput per CPU second", ["workload", "path", "events",
                                                            ("events / CPU s", "right")])
    for r in rows:
        table.add_row(r["workload"], r["path"], fmt_int(r["events"]),
                      fmt_int(r["events_per_cpu_s"]))
    console().print(table)
    path = write_json(args.json, {**metadata("engine_cpu", {"events": events,
                                                             "pair_events": pairs,
                                                             "repeat": repeat,
                                                             "only": only}), "rows": rows})
    console().print(f"Results written to {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
