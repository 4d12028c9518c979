"""Esper's ``until`` as one instance: the cost of one instance as the repeated side grows.

Stop 37 kept one partial-match thread per subset of the events an ``until`` had taken (2^k);
since stop 38 an until is one instance (EvalMatchUntilStateNode), one thread per instance;
since session 39 its collection is shared by the runs that took the same events, not copied
at each step (runtime.collected), so an instance of k events costs O(k), not O(k²).
This feeds ``k`` events of the repeated side then the end to ``Engine.process`` (the token
path) and reports CPU seconds (median and best of ``--repeat``) and the threads held before
the end, per pattern and ``k``:

    python benchmarks/until_instance.py --k 14,1000,8000,64000 --repeat 3
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence

from common import ROOT, console, make_table, metadata, write_json

import cepflow
from cepflow.events.event import Event
from cepflow.language.epl import parse_epl

PATTERNS = ("a=A until d=D", "([2] a=A) until d=D")


def run_once(program: cepflow.Program, k: int) -> tuple[float, int, int]:
    """CPU seconds for ``k`` A's then one D, the threads held before D, the matches."""
    engine = cepflow.Engine(program, start=0)
    c0 = time.process_time()
    for i in range(k):
        engine.process(Event("A", (str(i),), i))
    threads = sum(len(t.threads) for t in engine.matchers[0].all_tokens())
    matches = len(engine.process(Event("D", ("d",), k)))
    return time.process_time() - c0, threads, matches


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--k", default="14,1000", help="events of the repeated side")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", default=str(ROOT / "benchmarks" / "results" / "until_instance.json"))
    args = ap.parse_args(argv)
    table = make_table("until: one instance (Engine.process, CPU s)",
                       [("pattern", "left"), "k", "median", "best", "threads", "matches"])
    rows = []
    for body in PATTERNS:
        program = cepflow.load_module(parse_epl(
            "create schema A(id string);\ncreate schema D(id string);\n"
            f"@Name('P') select * from pattern [{body}];"))
        for k in (int(x) for x in args.k.split(",")):
            runs = [run_once(program, k) for _ in range(args.repeat)]
            cpu = [r[0] for r in runs]
            row = {"pattern": body, "k": k, "median_cpu_s": statistics.median(cpu),
                   "best_cpu_s": min(cpu), "threads": runs[-1][1], "matches": runs[-1][2]}
            rows.append(row)
            table.add_row(body, str(k), f"{row['median_cpu_s']:.4f}", f"{row['best_cpu_s']:.4f}",
                          str(row["threads"]), str(row["matches"]))
    con = console()
    con.print(table)
    path = write_json(args.json, {**metadata("until_instance", vars(args)), "rows": rows})
    con.print(f"Results written to {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
