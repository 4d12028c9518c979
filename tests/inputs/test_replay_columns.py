"""The file job's column route (cepflow.inputs.batched → Engine.process_columns or Engine.run
→ column-wise match writing) equals its record route (the record readers, event by event):
the same matches in the same order, the same rejected and late records with their locations,
the same counts — over random small files in each format with bad records, NaN, ids repeated,
events out of order and late, folders merged by time, and parts cut anywhere."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from unittest import mock

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from cepflow.inputs import batched, columnar
from cepflow.language.epl import parse_epl
from cepflow.loader import load, load_module
from cepflow.replay import replay

CHAIN = """atomicEvent A(k : Integer, v : Double)
atomicEvent B(k : Integer, v : Double)
atomicEvent C(k : Integer, v : Double)
complexEvent P(K : Integer) {
  as A(K, _V) -> B(K, _W)
}
complexEvent Q(K : Integer) {
  as A(K, _V) -> B(K, _W) -> C(K, _X)
}
"""
ESPER = """create schema A(k int, v double);
create schema B(k int, v double);
create schema C(k int, v double);
@Name('P')
insert into P
select a.k as k, b.v as v from pattern [every a=A -> b=B(b.k = a.k) where timer:within(4 msec)];
"""
SEQUENCE = ESPER + """@Name('Q')
insert into Q
select a.k as k from pattern [every a=A -> (b=B(b.k=a.k) -> c=C(c.k=a.k))
                              where timer:within(6 msec)];
"""
# a split program (docs/architecture.md, "The program split"): the pair and the restart kernel
# beside a sliding window and a pattern over its rows, which run per event
SPLIT = ESPER + """@Name('W')
insert into W
select a.k as k, avg(a.v) as m from A.win:time(5 msec) as a group by a.k;
@Name('G')
insert into G
select w.k as k from pattern [every w = W(w.m > 0.6)];
@Name('R')
insert into R
select a.k as k from pattern [every (a=A -> b=B(b.k = a.k))];
"""
# split programs whose kernel patterns' matches are written as column blocks
# (kernels/column_blocks.py): patterns over the pair's output — a pair over it, one ending in
# it, alternatives mixing it with an input type, one reading its literal —, a window over it
HIGHER = ESPER.replace("b.v as v", "b.v as v, 'x' as tag") + """@Name('H1')
insert into H1
select p.k as k, p.tag as tag, c.v as cv from pattern [every p=P -> c=C(c.k = p.k)
                                                       where timer:within(5 msec)];
@Name('H2')
insert into H2
select c.v as cv, p.v as pv from pattern [every c=C -> p=P(p.k = c.k) where timer:within(3 msec)];
@Name('H3')
insert into H3
select c.k as k from pattern [every c=C -> (p=P(p.k = c.k) or d=A(d.k = c.k))];
@Name('W')
insert into W
select p.k as k, count(*) as n from P.win:time(3 msec) as p group by p.k;
"""
# VEPL chains over a chain's output (benchmarks/pattern_shapes.py's ho_chain and ho_or)
HO_CHAIN = CHAIN + """complexEvent H(K : Integer) {
  as P(K) -> C(K, _X)
}
complexEvent O(K : Integer) {
  as P(K) OR C(K, _X)
}
"""
PROGRAMS = {"chain": lambda: load(CHAIN), "pair": lambda: load_module(parse_epl(ESPER)),
            "sequence": lambda: load_module(parse_epl(SEQUENCE)),
            "split": lambda: load_module(parse_epl(SPLIT)),
            "higher": lambda: load_module(parse_epl(HIGHER)), "ho_chain": lambda: load(HO_CHAIN)}

BAD = ["", "", "", "", "", "json", "missing", "text", "nan", "unknown"]

records = st.lists(st.tuples(
    st.sampled_from("AABBC"), st.sampled_from([0, 0, 1, 1, 2, 3, -1, -4]),
    st.integers(0, 2), st.sampled_from([0.5, 1.0, 2.25]), st.sampled_from(BAD),
    st.sampled_from([None, None, "id"])), max_size=40)


def _rows(spec: list, tag: str) -> list[dict]:
    ts, out = 100, []
    for i, (t, dt, k, v, bad, ident) in enumerate(spec):
        ts += dt
        r: dict = {"type": "D" if bad == "unknown" else t, "ts": ts, "k": k, "v": v}
        if ident:
            r["id"] = f"{tag}{i % 7}"  # (repeats: duplicate ids)
        if bad == "missing":
            del r["k"]
        elif bad == "text":
            r["k"] = "x"
        elif bad == "nan":
            r["v"] = math.nan
        r["_bad"] = bad
        out.append(r)
    return out


def _write(path: Path, rows: list[dict]) -> None:
    fields = ("type", "ts", "id", "k", "v")
    if path.suffix == ".jsonl":
        lines = []
        for r in rows:
            if r["_bad"] == "json":
                lines.append('{"type": "A", "ts": ')
                continue
            lines.append(json.dumps({f: r[f] for f in fields if f in r}))
        path.write_text("\n".join(lines) + "\n")
    elif path.suffix == ".csv":
        lines = [",".join(fields)]
        for r in rows:
            cells = ["" if r.get(f) is None else str(r[f]) for f in fields]
            lines.append(",".join(cells[:3]) if r["_bad"] == "json" else ",".join(cells))
        path.write_text("\n".join(lines) + "\n")
    else:
        cols = {f: [r.get(f) for r in rows] for f in fields}
        if any(r["_bad"] == "text" for r in rows):  # (a column has one type: all text)
            cols["k"] = [None if r.get("k") is None else str(r["k"]) for r in rows]
        pq.write_table(pa.table(cols), path)


def _outputs(tmp: Path, tag: str, inputs: list, program, fmt: str, **kw) -> tuple:
    out = tmp / f"{tag}.{fmt}"
    run = replay(inputs, program, out, **kw)
    if fmt == "parquet":
        text = pq.read_table(out).to_pylist() if out.exists() else None
    else:
        text = out.read_text()
    side = out.with_suffix(".rejected.jsonl")
    sides = side.read_text() if side.exists() else ""
    return (text, sides, run.events, run.complex_events, run.rejected, run.by_kind,
            run.by_pattern, run.partial_matches, run.stopped, run.rule_firings)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["jsonl", "csv", "parquet"]), records),
                min_size=1, max_size=3),
       st.sampled_from(sorted(PROGRAMS)), st.booleans(), st.sampled_from([0, 0, 2, 5]),
       st.sampled_from(["jsonl", "parquet", "csv"]),
       st.integers(1, 9), st.integers(1, 9), st.integers(16, 200),
       st.sampled_from([None, None, 3]))
def test_column_route_equals_record_route(tmp_path_factory, files, which, folder, lateness,
                                          fmt, rows_per_part, events_per_part, block,
                                          max_partial) -> None:
    tmp = tmp_path_factory.mktemp("cols")
    src = tmp / "in"
    src.mkdir()
    paths = []
    for i, (kind, spec) in enumerate(files):
        p = src / f"f{i}.{kind}"
        _write(p, _rows(spec, f"f{i}-"))
        paths.append(p)
    inputs = [src] if folder else paths[:1] if len(paths) == 1 else paths
    program = PROGRAMS[which]()
    kw = {"lateness": lateness, "max_partial_matches": max_partial}
    with mock.patch.object(batched, "BLOCK_BYTES", block), \
            mock.patch.object(batched, "RECORD_PART", events_per_part), \
            mock.patch.object(batched, "PARQUET_ROWS", rows_per_part):
        by_columns = _outputs(tmp, "cols", inputs, program, fmt, **kw)
        # reading ahead and writing behind on threads changes nothing, not even where a
        # stopped run's reading ends (cepflow.io_thread)
        serial = _outputs(tmp, "serial", inputs, program, fmt, threads=False, **kw)
    assert by_columns == serial
    by_records = _outputs(tmp, "recs", inputs, program, fmt, columns=False, **kw)
    if by_records[8]:
        # a run stopped at max_partial_matches: the record route has read the input up to
        # where it stopped, the column route up to the end of that part (docs/formats.md)
        keep = (0, 2, 3, 6, 7, 8, 9)
        by_columns, by_records = ([r[i] for i in keep] for r in (by_columns, by_records))
    assert by_columns[1:] == by_records[1:]
    assert by_columns[0] == by_records[0]


#: dense clean records (few keys, small steps): a pattern over a pattern's output completes
#: within one part
dense = st.lists(st.tuples(st.sampled_from("AABBCC"), st.sampled_from([0, 0, 1, 2]),
                           st.integers(0, 1), st.sampled_from([0.5, 1.0, 2.25]),
                           st.just(""), st.sampled_from([None, "id"])),
                 min_size=10, max_size=60)


#: A (k 1), then A, B, C of key 0, then B, C of key 1: P's matches and the chains and
#: patterns over them in one part (test below)
PINNED = [(t, 1, k, v, "", None) for t, k, v in (("A", 1, 0.5), ("A", 0, 1.0), ("B", 0, 2.25),
                                                  ("C", 0, 0.5), ("B", 1, 1.0), ("C", 1, 2.25))] * 2


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(dense, st.sampled_from(["higher", "ho_chain"]), st.sampled_from(["jsonl", "parquet"]),
       st.integers(8, 64))
# keys first seen in another order by the chain over the input and the chain over its output
# (their key values are one list in the match table); a pattern over P reading C's field
@example(spec=PINNED, which="ho_chain", fmt="jsonl", rows_per_part=16)
@example(spec=PINNED, which="higher", fmt="jsonl", rows_per_part=16)
def test_split_programs_column_route_equals_record_route(tmp_path_factory, spec, which, fmt,
                                                         rows_per_part) -> None:
    """The split programs whose kernel matches are column blocks (kernels/column_blocks.py:
    patterns and a window over a pair's output, chains over a chain's output) over dense
    Parquet files in parts of 8 to 64 rows: the column route writes what the record route
    writes."""
    tmp = tmp_path_factory.mktemp("blocks")
    path = tmp / "in.parquet"
    _write(path, _rows(spec, "e"))
    program = PROGRAMS[which]()
    with mock.patch.object(batched, "PARQUET_ROWS", rows_per_part):
        by_columns = _outputs(tmp, "cols", [path], program, fmt)
    assert by_columns == _outputs(tmp, "recs", [path], program, fmt, columns=False)


def test_a_clean_parquet_file_goes_column_wise(tmp_path: Path) -> None:
    """A clean file is read by the fast path and matched by process_columns (no event object
    per row): the chain program's matches come from the column kernel."""
    rows = [{"type": t, "ts": i, "k": k, "v": 1.0}
            for i, (t, k) in enumerate(zip("ABABCC", [0, 0, 1, 1, 0, 1], strict=True))]
    path = tmp_path / "e.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    program = load(CHAIN)
    layout = batched.Layout.of(program.schemas)
    parts = list(batched.ordered_parts([path], layout))
    assert [p.table is not None for p in parts] == [True]
    with mock.patch("cepflow.replay.Engine.run", side_effect=AssertionError("event route")):
        run = replay([path], program, tmp_path / "m.jsonl")
    assert run.complex_events == 4
    lines = (tmp_path / "m.jsonl").read_text().splitlines()
    assert json.loads(lines[0]) == {"pattern": "P", "ts": 1, "params": {"K": 0},
                                    "events": ["0", "1"]}


CELLS = ["", "0", "-0", "7", "007", "+5", " 5", "5 ", "-12", "1.5", "1.", ".5", "-2.5e3",
         "1e5", "1E-3", "1e999", "nan", "inf", "true", "TRUE", "False", " true", "x", "é",
         "12345678901234567890", "-9223372036854775808", "9223372036854775807", "1.0e+2",
         "a,b", 'say "hi"', "two\nlines", '"', "x y"]
TYPED = """create schema T(i int, f double, s string, b boolean, o Object);
"""


#: per column, cells the record rules accept (mostly) and a few they reject or read otherwise
GOOD = {"i": ["", "0", "-0", "7", "007", "-12", "-9223372036854775808"],
        "f": ["", "0", "1.5", "-2.5e3", "1e5", "1E-3", "007", "12345678901234567890", "7"],
        "s": ["", "x", "é", "1.5", " 5", "true"],
        "b": ["", "true", "TRUE", "False"]}


def _cell(kind: str) -> st.SearchStrategy[str]:
    return st.sampled_from(GOOD[kind] * 4 + CELLS) if kind in GOOD else st.sampled_from(CELLS)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(_cell("i"), _cell("f"), _cell("s"), _cell("b"), _cell("o"),
                          st.sampled_from(["", "a", "7", "07", "x", "", ""])),
                min_size=1, max_size=8),
       st.booleans(), st.sampled_from(["reject", "keep"]),
       st.sampled_from([csv.QUOTE_MINIMAL, csv.QUOTE_NONNUMERIC, csv.QUOTE_ALL]),
       st.integers(20, 400), st.sampled_from([0.0, 1.0]))
def test_csv_cells_read_column_wise_as_the_record_reader_reads_them(
        tmp_path_factory, rows, infer, ids, quoting, block, share) -> None:
    """Each cell of a typed CSV row converts column-wise to the value (and Python type) the
    record rules give, or the part takes the record reader: the same events and rejections —
    quoted or not, cells with a delimiter, a quote or a line break in them included; a column
    read row by row or by its distinct values (``share``: columnar.DISTINCT_SHARE) alike."""
    tmp = tmp_path_factory.mktemp("csv")
    path = tmp / "t.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        out = csv.writer(f, quoting=quoting, lineterminator="\n")
        out.writerow(["type", "ts", "id", "i", "f", "s", "b", "o"])
        for n, (*cells, ident) in enumerate(rows):
            out.writerow(["T", n, ident, *cells])
    schemas = load_module(parse_epl(TYPED)).schemas
    opts = {"infer_types": infer, "unique_ids": ids == "reject"}

    def typed(events) -> list:
        return [(e.type, e.ts, type(e.id), e.id, e.seq,
                 [(type(v).__name__, v) for v in e.params]) for e in events]

    from cepflow.events.event import SideChannel
    from cepflow.inputs import read_events

    side_a, side_b = SideChannel(), SideChannel()
    layout = batched.Layout.of(schemas)
    with (mock.patch.object(batched, "BLOCK_BYTES", block),
          mock.patch.object(columnar, "DISTINCT_SHARE", share)):
        got = [e for p in batched.ordered_parts([path], layout, side_a, **opts)
               for e in p.event_list(layout)]
    want = list(read_events(path, schemas, side_b, **opts))
    assert typed(got) == typed(want)
    assert side_a.items() == side_b.items()


PLAIN_ANY = ["", "1", "-3", "2.5", "1e3", "x", "true", "False", "é"]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(GOOD["i"]), st.sampled_from(GOOD["f"]),
                          st.sampled_from(GOOD["s"]), st.sampled_from(GOOD["b"]),
                          st.sampled_from(PLAIN_ANY), st.sampled_from(["", "a", "7", "x"])),
                min_size=1, max_size=40),
       st.booleans(), st.sampled_from([0.0, 1.0]))
def test_plain_csv_columns_read_as_the_record_reader_reads_them(
        tmp_path_factory, rows, infer, share) -> None:
    """Plain cells (no quote, delimiter or line break in them), so the column path decides
    most parts: every column read row by row or by its distinct values (``share``) gives the
    events and rejections of the record reader."""
    tmp = tmp_path_factory.mktemp("csv")
    path = tmp / "t.csv"
    lines = ["type,ts,id,i,f,s,b,o"] + [f"T,{n},{ident},{','.join(cells)}"
                                        for n, (*cells, ident) in enumerate(rows)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    schemas = load_module(parse_epl(TYPED)).schemas
    opts = {"infer_types": infer, "unique_ids": False}
    from cepflow.events.event import SideChannel
    from cepflow.inputs import read_events

    side_a, side_b = SideChannel(), SideChannel()
    layout = batched.Layout.of(schemas)
    with mock.patch.object(columnar, "DISTINCT_SHARE", share):
        parts = list(batched.ordered_parts([path], layout, side_a, **opts))
    got = [e for p in parts for e in p.event_list(layout)]
    want = list(read_events(path, schemas, side_b, **opts))
    assert [(e.type, e.ts, type(e.id), e.id, e.seq, [(type(v).__name__, v) for v in e.params])
            for e in got] == [(e.type, e.ts, type(e.id), e.id, e.seq,
                               [(type(v).__name__, v) for v in e.params]) for e in want]
    assert side_a.items() == side_b.items()


def test_a_clean_csv_file_is_one_table(tmp_path: Path) -> None:
    path = tmp_path / "e.csv"
    path.write_text("type,ts,k,v\n" + "".join(f"{t},{i},{i % 3},{i / 4}\n"
                                              for i, t in enumerate("ABCABC")))
    layout = batched.Layout.of(load(CHAIN).schemas)
    parts = list(batched.ordered_parts([path], layout))
    assert [p.table is not None for p in parts] == [True]
    assert [e.params for e in parts[0].event_list(layout)][:2] == [(0, 0.0), (1, 0.25)]
