"""Saving and restoring engine state: size and time, with the saved timers and without them.

One command (``python benchmarks/engine_state.py``): for each program, an engine is fed a
stream that leaves many partial matches open (every A opens one, a window of 100 s), then its
state is saved as JSON text (``state_text``) and restored into a fresh engine (``restore_text``)
— once as saved, and once with the optional ``"timers"`` key removed, which is how states were
restored before timers were saved (docs/state-format.md, "Timers"): the ratio of the two is
what saving the timers costs. Each measurement runs ``--repeat`` times in its own process; the
table shows the median and the best CPU time; the JSON keeps every run.

Programs: ``within`` (a windowed pair: only the instants of its idle timers are saved, its
partial matches' timers are derived again) and ``absence`` (Esper's missing event: every
timer is saved, in firing order).
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path
from typing import Any

from common import (
    ROOT,
    console,
    fmt_bytes,
    fmt_int,
    machine_line,
    make_table,
    metadata,
    positive_int,
    run_isolated,
    write_json,
)

DEFAULT_JSON = ROOT / "benchmarks" / "results" / "engine_state.json"

SCHEMA = "create schema A(k int); create schema B(k int);\n"
PROGRAMS = {
    "within": "@Name('W') insert into W from pattern [every a=A -> b=B(b.k = a.k) "
              "where timer:within(100 sec)];",
    "absence": "@Name('M') insert into M from pattern [every a=A -> "
               "(timer:interval(100 sec) and not B(k = a.k))];",
}


def measure(name: str, events: int, fast_path: bool) -> dict[str, Any]:
    """Feed ``events`` events (4 A to 1 B, keys drawn from a million, one per ms), then time
    ``state_text`` and ``restore_text`` with and without the saved timers (CPU seconds)."""
    from cepflow.events.event import Event
    from cepflow.language.epl import parse_epl
    from cepflow.loader import load_module
    from cepflow.runtime.engine import Engine
    from cepflow.runtime.state import restore_text, state_text

    prog = load_module(parse_epl(SCHEMA + PROGRAMS[name]))
    rng = random.Random(1)
    engine = Engine(prog, fast_path=fast_path)
    for i in range(events):
        engine.process(Event("A" if i % 5 else "B", (rng.randrange(10**6),), i, f"e{i}"))
    t0 = time.process_time()
    text = state_text(engine)
    t1 = time.process_time()
    restore_text(Engine(prog, fast_path=fast_path), text)
    t2 = time.process_time()
    doc = json.loads(text)
    had = doc.pop("timers", None) is not None
    old = json.dumps(doc)
    t3 = time.process_time()
    restore_text(Engine(prog, fast_path=fast_path), old)
    t4 = time.process_time()
    return {"program": name, "fast_path": fast_path, "events": events,
            "partial": sum(engine.partial_matches().values()), "timers": had,
            "bytes": len(text), "bytes_without": len(old), "save_s": t1 - t0,
            "restore_s": t2 - t1, "restore_without_s": t4 - t3}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--programs", default=",".join(PROGRAMS), help="comma-separated programs")
    ap.add_argument("--events", type=positive_int, default=60_000)
    ap.add_argument("--repeat", type=positive_int, default=3,
                    help="runs per row, each in its own process")
    ap.add_argument("--json", type=Path, default=DEFAULT_JSON)
    args = ap.parse_args(argv)
    out = console()
    meta = metadata("engine_state", vars(args) | {"json": str(args.json)})
    out.print(machine_line(meta["machine"]))
    table = make_table("engine state: saved and restored (CPU s, median / best)",
                       [("program", "left"), "path", "partial matches", "state",
                        "without timers", "save", "restore", "restore without timers",
                        "ratio (median)"])
    rows = []
    for name in args.programs.split(","):
        for fast_path in (False, True):
            runs = [run_isolated(measure, name, args.events, fast_path)
                    for _ in range(args.repeat)]

            def med_best(key: str, runs: list[dict[str, Any]] = runs) -> tuple[float, float]:
                xs = sorted(r[key] for r in runs)
                return xs[(len(xs) - 1) // 2], xs[0]

            (save, save_b), (rest, rest_b), (old, old_b) = (
                med_best(k) for k in ("save_s", "restore_s", "restore_without_s"))
            first = runs[0]
            rows.append({**first, "runs": runs, "median": {"save_s": save, "restore_s": rest,
                                                           "restore_without_s": old}})
            table.add_row(name, "fast" if fast_path else "token", fmt_int(first["partial"]),
                          fmt_bytes(first["bytes"]), fmt_bytes(first["bytes_without"]),
                          f"{save:.2f} / {save_b:.2f}", f"{rest:.2f} / {rest_b:.2f}",
                          f"{old:.2f} / {old_b:.2f}", f"{rest / old:.2f}")
    out.print(table)
    path = write_json(args.json, {"meta": meta, "rows": rows})
    out.print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
