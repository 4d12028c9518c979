"""Bounded search benchmark: states explored per second and peak memory at growing bounds.

``cepflow.analysis.bounded_search`` explores, breadth first, every input sequence of at most
N events over a finite domain, running the real engine on each candidate event (a fork of the engine
at the state it extends) and merging equal states (docs/analysis.md, "Bounded search"). Cases
— each a search whose target has **no** witness within the bound, so the whole bounded space
is explored:

* ``motorbike`` — examples/motorbike/motorbike.epl (5 patterns, 2 window statements) and
  §V.C's TooHighTirePressure (:data:`PROPERTY`, as examples/motorbike/properties.epl states
  it), target TooHighTirePressure, domain examples/motorbike/search.toml (8 candidate events,
  steps 0 and 1 s): Listing 35's search;
* ``temperature`` — examples/temperature/alerts.epl (Warning, Critical), target Critical,
  derived domain (5 readings, same instant) — Critical needs 4 readings, so with at most 3
  there is none;
* ``chain`` — a keyed sequence of three patterns without windows, target never reachable
  (the engine's cheapest per-event work).

Measured per (case, bound, jobs), each in its own forked process: wall and CPU seconds of the
search alone (program compiled before; CPU of the worker processes included with ``jobs`` >
1), states explored (candidate events run), distinct states kept, explored per second (wall
and CPU), peak RSS (of the searching process; with workers, also the largest worker's, which
counts the pages it shares with its parent). Every run is checked: no witness, and the search
complete; a witness or an incomplete search aborts (exit code 1). The machine is shared: its
load average is printed and saved; CPU time is the fairer figure when it is above the cores.
States explored count the last level's candidates, which run on the target's cone
(analysis/cone.py; docs/analysis.md).

    .venv/bin/python benchmarks/search.py                  # bounds up to 6, jobs 1 and 2
    .venv/bin/python benchmarks/search.py --quick          # small bounds, seconds
    .venv/bin/python benchmarks/search.py --cases motorbike --bounds 6 --jobs 2
    .venv/bin/python benchmarks/search.py --cases motorbike --bounds 4,5,6 --jobs 1 --repeat 3

With ``--repeat N`` every row is run N times, each in its own process; the table shows the
median run (its CPU time, rates and memory) and the best CPU time beside it.
"""

from __future__ import annotations

import argparse
import itertools
import resource
import sys
import time
from pathlib import Path
from typing import Any

from common import (
    ROOT,
    BenchmarkFailure,
    console,
    fmt_bytes,
    fmt_int,
    machine_line,
    make_table,
    metadata,
    peak_rss_kib,
    positive_int,
    run_isolated,
    write_json,
)

DEFAULT_JSON = ROOT / "benchmarks" / "results" / "search.json"
MOTORBIKE = ROOT / "examples" / "motorbike"
#: the property of Listing 35's search (examples/motorbike/properties.epl holds it with §V.C's
#: other property; the benchmark keeps its own copy so that its program stays the same)
PROPERTY = """
@Name('TooHighTirePressure')
insert into TooHighTirePressure
select e.timestamp as timestamp, e.motorbikeId as motorbikeId, e.tire1 as tire1,
       e.tire2 as tire2
from pattern [every e = Motorbike(e.tire1 >= 4.0 or e.tire2 >= 4.0)];
"""
CHAIN = """atomicEvent A(k: Integer, v: Integer)
atomicEvent B(k: Integer, v: Integer)
complexEvent P(k: Integer) { as A(k, _) where v > 0 -> B(k, _) where v > 0 }
complexEvent Q(k: Integer) { as P(k) -> P(k) -> A(k, _) where v > 5 }
complexEvent Never(k: Integer) { as Q(k) -> B(k, _) where v > 1 and v < 1 }
"""
#: (case, target, bounds, quick bounds)
CASES: dict[str, tuple[str, list[int], list[int]]] = {
    "motorbike": ("TooHighTirePressure", [3, 4, 5, 6], [2, 3, 4]),
    "temperature": ("Critical", [2, 3], [2, 3]),
    "chain": ("Never", [3, 4, 5, 6], [2, 3, 4]),
}


def _setup(case: str) -> tuple[Any, Any]:
    import cepflow
    from cepflow.analysis.domain import load_domain
    from cepflow.analysis.patternset import from_text

    if case == "motorbike":
        text = (MOTORBIKE / "motorbike.epl").read_text(encoding="utf-8") + PROPERTY
        program = from_text(text, str(MOTORBIKE / "motorbike.epl"), epl=True).program
        return program, load_domain(MOTORBIKE / "search.toml", program)
    if case == "temperature":
        program = cepflow.load(ROOT / "examples" / "temperature" / "alerts.epl")
        dom = load_domain(None, program)
        dom.steps = [0.0]
        return program, dom
    program = cepflow.load(CHAIN)
    dom = load_domain(None, program)
    return program, dom


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def measure(case: str, bound: int, jobs: int) -> dict[str, Any]:
    """One search, in a forked child (see the module docstring)."""
    from cepflow.analysis.bounded_search import search

    program, dom = _setup(case)
    target = CASES[case][0]
    rss0 = peak_rss_kib()
    c0, k0, t0 = time.process_time(), _children_cpu(), time.perf_counter()
    r = search(program, target, dom, bound, jobs=jobs)
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0 + _children_cpu() - k0
    workers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss if jobs > 1 else 0
    if r.witness is not None or not r.complete:
        raise BenchmarkFailure(f"{case} N={bound}: expected a complete search without "
                               f"witness, got {r.witness} (complete={r.complete})")
    return {"case": case, "target": target, "bound": bound, "jobs": jobs,
            "candidates": len(dom.events),
            "steps": list(dom.steps), "explored": r.transitions, "distinct": r.states,
            "wall_s": wall, "cpu_s": cpu, "per_s_wall": r.transitions / wall,
            "per_s_cpu": r.transitions / cpu if cpu else 0.0,
            "peak_rss_kib": peak_rss_kib(), "rss_growth_kib": peak_rss_kib() - rss0,
            "worker_peak_rss_kib": workers}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small bounds")
    ap.add_argument("--cases", default=",".join(CASES), help="comma-separated cases")
    ap.add_argument("--bounds", default=None,
                    help="comma-separated bounds (default: each case's own)")
    ap.add_argument("--jobs", default="1,2", help="comma-separated worker counts")
    ap.add_argument("--repeat", type=positive_int, default=1,
                    help="runs per row, each in its own process: the table shows the median "
                         "and the best CPU time (the JSON keeps every run)")
    ap.add_argument("--json", type=Path, default=DEFAULT_JSON)
    args = ap.parse_args(argv)
    out = console()
    meta = metadata("search", vars(args) | {"json": str(args.json)})
    out.print(machine_line(meta["machine"]))
    table = make_table("bounded search: states explored per second",
                       [("case", "left"), "N", "jobs", "explored", "distinct", "wall s",
                        "cpu s (median)", "cpu s (best)", "explored/s (wall)",
                        "explored/s (cpu)", "per minute (cpu)", "peak RSS", "worker RSS"])
    rows = []
    try:
        for case in args.cases.split(","):
            _, bounds, quick = CASES[case]
            chosen = ([int(b) for b in args.bounds.split(",")] if args.bounds
                      else quick if args.quick else bounds)
            for bound, jobs in itertools.product(chosen, [int(j) for j in
                                                          args.jobs.split(",")]):
                runs = [run_isolated(measure, case, bound, jobs) for _ in range(args.repeat)]
                runs.sort(key=lambda r: r["cpu_s"])
                row = dict(runs[(len(runs) - 1) // 2])  # (the median run; the lower of two)
                row["runs"] = runs
                rows.append(row)
                table.add_row(case, str(bound), str(jobs), fmt_int(row["explored"]),
                              fmt_int(row["distinct"]), f"{row['wall_s']:.1f}",
                              f"{row['cpu_s']:.2f}", f"{runs[0]['cpu_s']:.2f}",
                              fmt_int(row["per_s_wall"]),
                              fmt_int(row["per_s_cpu"]), fmt_int(row["per_s_cpu"] * 60),
                              fmt_bytes(row["peak_rss_kib"] * 1024),
                              fmt_bytes(row["worker_peak_rss_kib"] * 1024)
                              if jobs > 1 else "—")
    except BenchmarkFailure as e:
        out.print(f"[red]benchmark failed: {e}[/red]")
        return 1
    out.print(table)
    path = write_json(args.json, {"meta": meta, "rows": rows})
    out.print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
