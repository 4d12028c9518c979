"""Pattern shapes beyond the examples: how fast each route runs a shape of the pattern algebra
(issue 21 item 2, "a general kernel for every automaton").

The examples' statements all have kernels; this measures the shapes a user writes next — OR,
AND, NOT, multiplicity, windows, filters on bound variables, every context, ``partition by``,
Esper's forms outside the kernels, and window statements alone (``win_*``) — over one seeded
stream (types A/B/C at 0.3/0.3/0.4, 16 keys ``k``, a value ``v`` in 0..9, an event every 10
ms). Per shape and route, events per CPU second (``time.process_time``, the threads of the file
job included), best and median of ``--repeat``:

* ``process``: ``Engine.process`` one event at a time (the reference route);
* ``run``: ``Engine.run`` over the events already in memory;
* ``file``: ``cepflow.replay.replay`` from a Parquet file to JSON Lines, in this process (the
  work of ``cepflow run`` without the process's start).

Every route must find the same number of complex events, else the benchmark stops. The table
says which route took the shape (a kernel, the program split, a fast per-event step or the
general token path, ``route``), so a shape's gain can be traced to the code that made it.

    python benchmarks/pattern_shapes.py                       # all shapes, 100,000 events
    python benchmarks/pattern_shapes.py --shapes or,not --events 200000 --repeat 5
"""

from __future__ import annotations

import argparse
import gc
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from common import (
    ROOT,
    BenchmarkFailure,
    console,
    fmt_int,
    make_table,
    metadata,
    positive_int,
    run_isolated,
    write_json,
)

import cepflow
from cepflow.events.event import Event
from cepflow.language.epl import parse_epl
from cepflow.replay import replay

DEFAULT_JSON = ROOT / "benchmarks" / "results" / "pattern_shapes.json"
SEED = 20261127

VEPL = ("atomicEvent A(k: Integer, v: Integer)\natomicEvent B(k: Integer, v: Integer)\n"
        "atomicEvent C(k: Integer, v: Integer)\n")
EPL = ("create schema A(k int, v int);\ncreate schema B(k int, v int);\n"
       "create schema C(k int, v int);\n")

#: name -> (language, the statement); the VEPL ones declare ``P(x)`` over the key ``k``
SHAPES: dict[str, tuple[str, str]] = {
    "sequence": ("vepl", "complexEvent P(x: Integer) { as A(x, _) -> B(x, _) -> C(x, _) }"),
    "or": ("vepl", "complexEvent P(x: Integer) { as A(x, _) -> (B(x, _) OR C(x, _)) }"),
    "or_unkeyed": ("vepl", "complexEvent P { as A -> (B OR C) }"),
    "and": ("vepl", "complexEvent P(x: Integer) { as A(x, _) AND B(x, _) }"),
    "multiplicity": ("vepl", "complexEvent P(x: Integer) { as A(x, _){3} -> B(x, _) }"),
    "not": ("vepl", "complexEvent P(x: Integer) { as A(x, _) -> NOT C(x, _) -> B(x, _) }"),
    # (a C of any key traps every key's partial matches waiting in the gap)
    "not_any": ("vepl", "complexEvent P(x: Integer) { as A(x, _) -> NOT C(_, _) -> B(x, _) }"),
    "within": ("vepl", "complexEvent P(x: Integer) { as (A(x, _) -> B(x, _))[10 s] }"),
    "filter": ("vepl", "complexEvent P(x: Integer) { as A(x, v) where v > 5 -> B(x, _) }"),
    "cross_filter": ("vepl", "complexEvent P(x: Integer) { as A(x, u) where u > 5 -> "
                     "B(x, w) where w < u }"),
    "own_param": ("vepl", "complexEvent P(x: Integer, y: Integer) { as A(x, y) -> B(x, _) }"),
    # the key not the first parameter (A keyed on its second field), or no parameter
    "key_second": ("vepl", "complexEvent P(x: Integer, y: Integer) { as A(x, y) -> B(y, _) }"),
    "key_hidden": ("vepl", "complexEvent P(y: Integer) { as A(x, y) -> B(x, _) }"),
    "immediate": ("vepl", "complexEvent P(x: Integer) { as A(x, _) -> B(x, _) "
                          "context immediate }"),
    "strict": ("vepl", "complexEvent P(x: Integer) { as A(x, _) -> B(x, _) context strict }"),
    "partitioned": ("vepl", "complexEvent P(x: Integer) { as A(x, _) -> B(x, _) "
                            "context immediate partition by x }"),
    "unrestricted": ("vepl", "complexEvent P(x: Integer) { as (A(x, _) -> B(x, _))[5 s] "
                             "context unrestricted }"),
    "unrestricted_seq": ("vepl", "complexEvent P(x: Integer) { as (A(x, _) -> B(x, _) -> "
                                 "C(x, _))[5 s] context unrestricted }"),
    "unrestricted_open": ("vepl", "complexEvent P(x: Integer) { as A(x, _) -> B(x, _) where "
                                  "v > 2 -> C(x, _) context unrestricted partition by x }"),
    "immediate_or": ("vepl", "complexEvent P(x: Integer) { as A(x, _) -> (B(x, _) OR C(x, _)) "
                             "context immediate partition by x }"),
    "strict_window": ("vepl", "complexEvent P(x: Integer) { as (A(x, _) -> B(x, _))[100 ms] "
                              "context strict partition by x }"),
    "esper_pair": ("epl", "select a.k as k from pattern [every a=A -> b=B(b.k = a.k) "
                          "where timer:within(10 sec)];"),
    "esper_or": ("epl", "select a.k as k from pattern [every a=A -> (b=B(b.k = a.k) "
                        "or c=C(c.k = a.k)) where timer:within(10 sec)];"),
    "esper_and": ("epl", "select a.k as k from pattern [every (a=A and b=B(b.k = a.k)) "
                         "where timer:within(10 sec)];"),
    "esper_not": ("epl", "select a.k as k from pattern [every a=A -> (b=B(b.k = a.k) "
                         "and not C(k = a.k)) where timer:within(10 sec)];"),
    # (the guard binds to c alone: its window opens at b — per event, docs/esper.md)
    "esper_chain_guard": ("epl", "select a.k as k from pattern [every a=A -> b=B(b.k = a.k) "
                                 "-> c=C(c.k = a.k) where timer:within(10 sec)];"),
    "esper_or_seq": ("epl", "select a.k as k from pattern [every a=A -> ((b=B(b.k = a.k) -> "
                            "c=C(c.k = a.k)) or d=C(d.k = a.k, d.v > 5)) "
                            "where timer:within(10 sec)];"),
    # alternatives before one more stage: the first row of either, then the first C after it
    "esper_or_mid": ("epl", "select a.k as k from pattern [every a=A -> ((b=B(b.k = a.k) or "
                            "c=C(c.k = a.k, c.v > 5)) -> d=C(d.k = a.k)) "
                            "where timer:within(10 sec)];"),
    # alternatives from the start before one more stage (per event: kernels.branch takes
    # alternatives after a stage only; every waiting instance takes the next C passing c's filter)
    "esper_or_head": ("epl", "select c.k as k from pattern [every (a=A(a.v > 7) or b=B(b.v > 7)) "
                             "-> c=C(c.v > 7)];"),
    # Esper's and after a stage: complete when both operands have, at the later of their rows
    "esper_and_after": ("epl", "select a.k as k from pattern [every a=A -> (b=B(b.k = a.k) and "
                               "c=C(c.k = a.k)) where timer:within(10 sec)];"),
    # (the spawn form: an A opens an instance only if its key was not seen in the last second)
    "esper_distinct": ("epl", "select a.k as k from pattern [every-distinct(a.k, 1 sec) a=A -> "
                              "b=B(b.k = a.k) where timer:within(10 sec)];"),
    "esper_and_same": ("epl", "select a.k as k, b.v as v from pattern [every (a=A(a.v > 5) "
                              "and b=A(b.k = a.k, b.v < 7)) where timer:within(10 sec)];"),
    "esper_or_mixed": ("epl", "select a.k as k, c.v as v from pattern [every a=A -> "
                              "(b=B(b.k = a.k) or c=B(c.v > 7)) where timer:within(10 sec)];"),
    # the missing event: a match when the timer fires Δ after a with no B of its key before
    "esper_absence": ("epl", "select a.k as k from pattern [every a=A -> "
                             "(timer:interval(500 msec) and not B(k = a.k))];"),
    # a match Δ after b (the timer's instant, between rows)
    "esper_interval": ("epl", "select a.k as k, b.v as v from pattern [every a=A -> "
                              "b=B(b.k = a.k) -> timer:interval(10 sec)];"),
    # the interval right after a: each A passing its filter a match Δ later (session 36)
    "esper_interval_first": ("epl", "select a.k as k, a.v as v from pattern [every a=A(v > 2) "
                                    "-> timer:interval(500 msec)];"),
    # an inner every: each B of the key within 1 s of an A is a match of that A's instance
    # (1 s, not 10: about two open A per key, so the matches stay near the input's size)
    "esper_every_inner": ("epl", "select a.k as k, b.v as v from pattern [every a=A -> "
                                 "(every b=B(b.k = a.k)) where timer:within(1 sec)];"),
    # timer:withinmax counting the inner every's results: the first two B of the key within
    # 1 s of each A (per event on every route: the count is the waiting run's, docs/esper.md)
    "esper_withinmax": ("epl", "select a.k as k, b.v as v from pattern [every a=A -> "
                               "(every b=B(b.k = a.k)) where timer:withinmax(1 sec, 2)];"),
    # every in front of a group followed by more (start policy group: per event on every
    # route, docs/esper.md): one A -> B group at a time, each completion waiting for a C
    "esper_every_group": ("epl", "select a.k as k, c.v as v from pattern [every (a=A -> "
                                 "b=B(b.k = a.k)) where timer:within(1 sec) -> "
                                 "c=C(c.k = a.k)];"),
    # Esper's [n] after a stage: an instance takes the next two B of its key within 1 s (the
    # compiler's chain A -> B -> B whose B stages collect b; b[0], b[1] in the select list)
    "esper_count": ("epl", "select a.k as k, b[0].v as v0, b[1].v as v1 from pattern "
                           "[every a=A -> ([2] b=B(b.k = a.k)) where timer:within(1 sec)];"),
    # Esper's until after a stage: an instance counts its key's B up to its first C within
    # 1 s — fewer than 2: trapped; else a match with the first (up to 3) b (kernels.until) —
    # and with no bound and no window (every b before the first C; per event one thread per
    # instance since branch euntil2, one per subset of the b before)
    "esper_until": ("epl", "select a.k as k, b[0].v as v0, b[1].v as v1, b[2].v as v2 from "
                           "pattern [every a=A -> ([2:3] b=B(b.k = a.k) until c=C(c.k = a.k)) "
                           "where timer:within(1 sec)];"),
    "esper_until_any": ("epl", "select a.k as k, b[0].v as v0, b[1].v as v1 from pattern "
                               "[every a=A -> (b=B(b.k = a.k) until c=C(c.k = a.k))];"),
    # the inner every beside a consecutive chain: a split program (the fork planned in it
    # since session 35, per event before)
    "split_inner": ("epl", "insert into P select a.k as k, b.v as v from pattern [every a=A -> "
                           "(every b=B(b.k = a.k)) where timer:within(1 sec)];\n@Name('Q') "
                           "select a.k as k from pattern [every a=A -> (b=B(b.k = a.k) and not "
                           "C(k = a.k)) where timer:within(10 sec)];"),
    # the missing event, the interval after b, each beside a pair: split programs (the
    # timer-end pattern planned in the split since session 35, per event before)
    "split_absence": ("epl", "select a.k as k from pattern [every a=A -> "
                             "(timer:interval(500 msec) and not B(k = a.k))];\n@Name('Q') "
                             "select a.k as k from pattern [every a=A -> b=C(b.k = a.k) "
                             "where timer:within(10 sec)];"),
    "split_interval": ("epl", "select a.k as k, b.v as v from pattern [every a=A -> "
                              "b=B(b.k = a.k) -> timer:interval(10 sec)];\n@Name('Q') "
                              "select a.k as k from pattern [every a=A -> b=C(b.k = a.k) "
                              "where timer:within(10 sec)];"),
    # two timer-end patterns (the missing event, the interval right after a) beside a pair:
    # their timers interleaved across statements in the split since session 36 (per event
    # before: the split took a timer-end pattern only when it was the only one)
    "split_two_timers": ("epl", "select a.k as k from pattern [every a=A -> "
                                "(timer:interval(500 msec) and not B(k = a.k))];\n@Name('Q') "
                                "select c.k as k from pattern [every c=C(v > 5) -> "
                                "timer:interval(1 sec)];\n@Name('R') select a.k as k from "
                                "pattern [every a=A -> b=C(b.k = a.k) where "
                                "timer:within(10 sec)];"),
    # Esper's restarted and beside a per-event pattern: in the split since session 42 (its
    # restarts' token ids ahead of the row after them; per event before)
    "split_and_beside": ("epl", "select a.k as k from pattern [every (a=A and b=B(b.k = a.k)) "
                                "where timer:within(10 sec)];\n@Name('Q') select c.k as k from "
                                "pattern [every c=C(v > 7) -> d=C(d.k = c.k, d.v < 3) until "
                                "e=C(e.k = c.k, e.v > 6)];"),
    # the same beside a pattern per event reading all of its types: per event (each of its
    # rows would be stepped: split._all_stepped)
    "split_and_all": ("epl", "select a.k as k from pattern [every (a=A and b=B(b.k = a.k)) "
                             "where timer:within(10 sec)];\n@Name('Q') select c.k as k from "
                             "pattern [every c=C(v > 7) -> d=A(d.k = c.k) until "
                             "e=B(e.k = c.k)];"),
    # Esper's guard at the top: every A passing the filter in the first minute (kernels/whole.py
    # since session 42; per event before: Zone.whole)
    "esper_whole": ("epl", "select a.v as v from pattern [(every a=A(a.v > 4)) "
                           "where timer:within(1 min)];"),
    # every X or every Y of one type: a match per operand an event fits (kernels/each.py since
    # session 42; per event before: ast.Or.each)
    "esper_or_each": ("epl", "select a.v as av, b.v as bv from pattern [every a=A(a.v > 3) or "
                             "every b=A(b.v < 6)];"),
    # Esper's patterns of one life, the most frequent forms of the random generator left per
    # event (session 43): each ends at its first match (or its guard), and is skipped by the
    # per-event route from then on (kernels/over.py; stepped to the end of the stream before)
    "once_seq": ("epl", "select a.v as av, b.v as bv from pattern [a=A -> b=B(b.k = a.k)];"),
    "once_or": ("epl", "select a.v as av, b.v as bv from pattern [a=A(v > 8) or b=B(v > 8)];"),
    "once_and": ("epl", "select a.v as av, b.v as bv from pattern [a=A and b=B(b.k = 3)];"),
    "once_until": ("epl", "select b.v as bv from pattern [A until b=B(v > 8)];"),
    # the whole guard over a group and over an or (rak's left forms): over once it quits
    "whole_group": ("epl", "select a.v as av, b.v as bv from pattern [(every (a=A -> "
                           "b=B(b.k = a.k))) where timer:within(10 sec)];"),
    "whole_or": ("epl", "select a.v as av, b.v as bv from pattern [(every (a=A(v > 4) or "
                        "b=B(v > 4))) where timer:within(10 sec)];"),
    "win_time_group": ("epl", "select k, avg(v) as m from A#time(1 sec) group by k;"),
    "win_length": ("epl", "select avg(v) as m, max(v) as h from B#length(100);"),
    "win_groupwin": ("epl", "select k, sum(v) as s from C#groupwin(k)#length(5) group by k;"),
    "win_time_batch": ("epl", "select k, count(*) as n from A#time_batch(1 sec) group by k;"),
    "win_length_batch": ("epl", "select sum(v) as s from B#length_batch(50);"),
    "win_having": ("epl", "select k, count(*) as n from C#time(500 msec) group by k "
                          "having count(*) > 5;"),
    "win_filter": ("epl", "select count(*) as n from A(v > 5)#time(2 sec);"),
    "ho_chain": ("vepl", "complexEvent P(x: Integer) { as A(x, _) -> B(x, _) }\n"
                         "complexEvent Q(x: Integer) { as P(x) -> C(x, _) }"),
    "ho_or": ("vepl", "complexEvent P(x: Integer) { as A(x, _) -> B(x, _) }\n"
                      "complexEvent Q(x: Integer) { as P(x) OR C(x, _) }"),
    # ho_chain with a window on both: the windowed chains' timers planned in the split
    "ho_chain_win": ("vepl", "complexEvent P(x: Integer) { as (A(x, _) -> B(x, _))[10 s] }\n"
                             "complexEvent Q(x: Integer) { as (P(x) -> C(x, _))[10 s] }"),
    "ho_esper": ("epl", "insert into P select a.k as k from pattern [every a=A -> b=B(b.k = a.k) "
                        "where timer:within(10 sec)];\n@Name('Q') select p.k as k from pattern "
                        "[every p=P -> c=C(c.k = p.k) where timer:within(10 sec)];"),
    # a last stage of alternatives mixing P's output and an input type (ho_or's Esper twin)
    "ho_esper_or": ("epl", "insert into P select a.k as k from pattern [every a=A -> "
                           "b=B(b.k = a.k) where timer:within(10 sec)];\n@Name('Q') select "
                           "c.k as k from pattern [every c=C -> (p=P(p.k = c.k) or "
                           "d=C(d.k = c.k, d.v > 5)) where timer:within(10 sec)];"),
    "ho_win": ("epl", "insert into P select a.k as k from pattern [every a=A -> b=B(b.k = a.k) "
                      "where timer:within(10 sec)];\n@Name('Q') select k, count(*) as n from "
                      "P#time(1 sec) group by k;"),
    "ho_esper_win": ("epl", "insert into P select k, avg(v) as m from A#time(1 sec) group by k;\n"
                      "@Name('Q') select p.k as k from pattern [every p=P(m > 5) -> c=C(c.k = p.k) "
                      "where timer:within(10 sec)];"),
    # a kernel pattern beside a pattern per event reading C and its output (its matches come
    # in the cascade: not planned), so C's rows and P's completions are stepped (55 %)
    "split_steps": ("epl", "insert into P select a.k as k from pattern [every a=A -> "
                           "b=B(b.k = a.k) where timer:within(10 sec)];\n@Name('Q') select "
                           "c.v as v from pattern [every c=C -> p=P(p.k = c.k) "
                           "where timer:within(1 sec)];"),
}


def stream(n: int) -> pa.Table:
    """The seeded stream every shape reads."""
    rng = np.random.default_rng(SEED)
    types = np.array(["A", "B", "C"])[rng.choice(3, size=n, p=[0.3, 0.3, 0.4])]
    return pa.table({"type": types, "ts": np.arange(n, dtype=np.int64) * 10,
                     "k": rng.integers(0, 16, size=n), "v": rng.integers(0, 10, size=n)})


def events_of(table: pa.Table) -> list[Event]:
    cols = table.to_pydict()
    return [Event(t, (k, v), ts) for t, ts, k, v in zip(cols["type"], cols["ts"], cols["k"],
                                                        cols["v"], strict=True)]


def program_of(shape: str) -> Any:
    lang, text = SHAPES[shape]
    if lang == "vepl":
        return cepflow.load(VEPL + text)
    return cepflow.load_module(parse_epl(EPL + "@Name('P')\n" + text))


def route_of(engine: Any) -> str:
    """Which route ``Engine.run`` takes for the program: the chain, pair or timer-end
    kernels, the program split, else event by event (the fast per-event steps or the token path)."""
    if getattr(engine, "_chains", None) is not None:
        return "chain kernel"
    if getattr(engine, "_pairs", None) is not None:
        return "pair kernel"
    if getattr(engine, "_timer_ends", None) is not None:
        return "timer-end kernel"
    if getattr(engine, "_split", None) is not None:
        return "split"
    return "per event"


def _process(shape: str, evs: list[Event], parquet: Path, out: Path) -> int:
    engine = cepflow.Engine(program_of(shape))
    n = 0
    for e in evs:
        n += len(engine.process(e))
    return n + len(engine.finish())


def _run(shape: str, evs: list[Event], parquet: Path, out: Path) -> int:
    engine = cepflow.Engine(program_of(shape))
    return sum(1 for _ in engine.run(evs)) + len(engine.finish())


def _file(shape: str, evs: list[Event], parquet: Path, out: Path) -> int:
    return replay([parquet], program_of(shape), out).complex_events


ROUTES: dict[str, Callable[[str, list[Event], Path, Path], int]] = {
    "process": _process, "run": _run, "file": _file}


def measure(shape: str, n: int, repeat: int, tmp: Path) -> dict[str, Any]:
    """Every route over one shape, in a child process of its own (fresh memory)."""
    table = stream(n)
    parquet = tmp / "events.parquet"
    pq.write_table(table, parquet)
    evs = events_of(table)
    result: dict[str, Any] = {"shape": shape, "statement": SHAPES[shape][1], "events": n,
                              "route": route_of(cepflow.Engine(program_of(shape)))}
    counts = {}
    for name, fn in ROUTES.items():
        times = []
        for _ in range(repeat):
            gc.collect()
            t0 = time.process_time()
            counts[name] = fn(shape, evs, parquet, tmp / "out.jsonl")
            times.append(time.process_time() - t0)
        result[name] = {"best_s": min(times), "median_s": statistics.median(times),
                        "events_per_s": n / min(times),
                        "median_events_per_s": n / statistics.median(times)}
    if len(set(counts.values())) != 1:
        raise BenchmarkFailure(f"{shape}: the routes disagree on the matches: {counts}")
    result["matches"] = counts["process"]
    return result


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=positive_int, default=100_000)
    ap.add_argument("--repeat", type=positive_int, default=3)
    ap.add_argument("--shapes", default=",".join(SHAPES),
                    help="comma-separated, of: " + ", ".join(SHAPES))
    ap.add_argument("--json", default=str(DEFAULT_JSON))
    args = ap.parse_args(argv)
    shapes = [s for s in args.shapes.split(",") if s]
    unknown = [s for s in shapes if s not in SHAPES]
    if unknown:
        ap.error(f"unknown shapes: {', '.join(unknown)}")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for shape in shapes:
            results.append(run_isolated(measure, shape, args.events, args.repeat, Path(tmp)))
    table = make_table(f"Pattern shapes, {fmt_int(args.events)} events, events per CPU second "
                       f"(best / median of {args.repeat})",
                       [("shape", "left"), ("route", "left"), "matches", "process", "run",
                        "file (Parquet → JSONL)"])
    for r in results:
        table.add_row(r["shape"], r["route"], fmt_int(r["matches"]),
                      *(f"{fmt_int(r[k]['events_per_s'])} / {fmt_int(r[k]['median_events_per_s'])}"
                        for k in ROUTES))
    console().print(table)
    path = write_json(args.json, {"metadata": metadata("pattern_shapes", vars(args)),
                                  "results": results})
    console().print(f"saved {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
