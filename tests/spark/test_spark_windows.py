"""Window statements on Spark: how they are grouped, and that the result is the in-process one.

Most of the proof runs without Spark: :func:`partitioned` replays what the batch pipeline does
with a plan (each group's event types, partitions by the key's hash — several keys per
partition —, (ts, seq) order, one engine per partition advanced to the input's last timestamp)
and a hypothesis property compares it with the in-process engine for keyed and one-partition
window groups (among them a window and a pattern deadline that wait for time together). A few
tiny Spark tests then check the real batch and streaming pipelines and the command line on the
same kind of program.
"""

from __future__ import annotations

import dataclasses
import json
import random
import warnings
import zlib
from collections import Counter
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from cepflow.events.event import Event, SideChannel
from cepflow.inputs import read_events as read_local
from cepflow.loader import load
from cepflow.runtime.engine import Engine
from cepflow.spark.partitioning import Group, plan, subprogram
from cepflow.windows import WindowSpec

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
HEAD = "atomicEvent R(k: String, v: Integer)\natomicEvent S(k: String)\n"
SCHEMAS = load(HEAD).schemas

#: one program, three window groups: keyed (a sliding window per k feeding a pattern), one
#: partition on R (a time batch starts at the stream's first R), keyed again (a window and a
#: pattern deadline both wait for time)
MIXED = HEAD + """
complexEvent Recent { from r = R window time(5) select r.k as k, count(*) as n group by r.k }
complexEvent Busy(k: String) { as Recent(k, n) -> S(k) where n > 1 }
complexEvent Batch { from r = R window time_batch(10) select r.k as k, count(*) as n,
                     sum(r.v) as s group by r.k }
complexEvent Seen { from s = S window time(4) select s.k as k, count(*) as n group by s.k }
complexEvent Gap(k: String) { as (R(k, _) -> NOT Seen(k, _))[3] }
"""

#: keyed: per-group length windows, a time batch with a reference point, a chain of statements
KEYED = HEAD + """
complexEvent Last { from r = R window length(2) per group select r.k as k, sum(r.v) as s
                    group by r.k }
complexEvent Lots { from r = R window length_batch(3) per group select r.k as k, r.v as v,
                    count(*) as n group by r.k }
complexEvent Top { from l = Last window time(6) select l.k as k, max(l.s) as top group by l.k }
complexEvent Hot(k: String) { as Top(k, t) -> S(k) where t > 3 }
complexEvent Daily { from r = R window time_batch(4) select r.k as k, count(*) as n
                     group by r.k }
"""

#: statements whose windows span keys: one partition each, on their own event types
SPANNING = HEAD + """
complexEvent L { from r = R window length(3) select r.k as k, count(*) as n group by r.k }
complexEvent LB { from r = R window length_batch(2) select r.k as k, max(r.v) as m
                  group by r.k }
complexEvent T { from r = R window time(5) select count(*) as n, sum(r.v) as s }
"""


def keyed_program():
    """KEYED with Daily's time batch anchored at a reference point (only the API has one)."""
    program = load(KEYED)
    windows = [dataclasses.replace(w, window=WindowSpec.time_batch(4, -1))
               if w.name == "Daily" else w for w in program.windows]
    return dataclasses.replace(program, windows=windows)


def out_key(m: Any) -> tuple[Any, ...]:
    return (m.type, float(m.ts), json.dumps(m.bindings_for_output(), sort_keys=True),
            tuple(str(r) for r in m.event_refs))


def copies(events: list[Event]) -> list[Event]:
    return [Event(e.type, e.params, e.ts, e.id, e.seq) for e in events]


def in_process(program, events: list[Event], close: bool = False) -> Counter:
    engine = Engine(program)
    out = [m for e in copies(events) for m in engine.process(e)]
    return Counter(map(out_key, out + engine.finish(close_windows=close)))


def partitioned(program, events: list[Event], close: bool, partitions: int,
                groups: list[Group] | None = None) -> Counter:
    """What the Spark batch pipeline computes with ``plan(program)`` (see module docstring)."""
    horizon = max(e.ts for e in events)
    out: list = []
    for g in groups or plan(program):
        sub = subprogram(program, g)
        parts: dict[int, list[Event]] = {}
        for e in events:
            if g.types is not None and e.type not in g.types:
                continue
            key = json.dumps(e.params[g.key[e.type]]) if g.key else ""
            parts.setdefault(zlib.crc32(key.encode()) % partitions, []).append(e)
        for evs in parts.values():
            engine = Engine(sub)
            out += [m for e in copies(evs) for m in engine.process(e)]
            out += engine.advance_to(horizon) + engine.finish(close_windows=close)
    return Counter(map(out_key, out))


def stream(spec: list[tuple[str, str, int, int]]) -> list[Event]:
    ts, out = 0, []
    for i, (t, k, v, dt) in enumerate(spec):
        ts += dt
        out.append(Event(t, (k, v) if t == "R" else (k,), ts, f"e{i}", i))
    return out


STREAMS = st.lists(st.tuples(st.sampled_from("RRS"), st.sampled_from("abcd"),
                             st.integers(0, 3), st.integers(0, 3)), min_size=1, max_size=40)


def shape(groups: list[Group]) -> list[tuple[list[str], str]]:
    return [(g.patterns, "keyed" if g.partitioned else
             "every event" if g.types is None else "one partition") for g in groups]


def test_the_plan_of_window_statements() -> None:
    assert shape(plan(load(MIXED))) == [
        (["Busy", "Recent"], "keyed"), (["Gap", "Seen"], "keyed"),
        (["Batch"], "one partition")]
    recent, gap, batch = plan(load(MIXED))
    assert recent.key == {"R": 0, "S": 0, "Recent": 0} and recent.types == {"R", "S", "Recent"}
    assert gap.key == {"R": 0, "S": 0, "Seen": 0} and gap.types == {"R", "S", "Seen"}
    assert "first event of the whole stream" in batch.reason and batch.types == {"R"}
    groups = plan(keyed_program())
    assert shape(groups) == [(["Hot", "Last", "Top"], "keyed"), (["Lots"], "keyed"),
                             (["Daily"], "keyed")]
    assert groups[0].key == {"R": 0, "S": 0, "Last": 0, "Top": 0}
    assert shape(plan(load(KEYED)))[2] == (["Daily"], "one partition")


def test_why_a_statement_is_not_split_by_key() -> None:
    def reason(body: str) -> str:
        (g,) = plan(load(HEAD + body))
        assert not g.partitioned
        return g.reason

    assert "without group by" in reason(
        "complexEvent X { from r = R window time(5) select count(*) as n }")
    assert "#length(3) counts the events of every key" in reason(
        "complexEvent X { from r = R window length(3) select r.k as k, count(*) as n "
        "group by r.k }")
    assert "does not pass its key 'k'" in reason(
        "complexEvent X { from r = R window time(5) select count(*) as n group by r.k }\n"
        "complexEvent Y(n: Integer) { as X(n) -> X(n) }")
    assert "groups R by another parameter" in reason(
        "complexEvent X { from r = R window time(5) select count(*) as n, r.k as k "
        "group by r.k }\ncomplexEvent Z(v: Integer) { as R(_, v) -> X(v, _) }")


def test_rules_on_statement_rows_go_with_the_statement() -> None:
    program = load(MIXED + "rule r on Batch action log\nrule s on Recent action log\n")
    by = {tuple(g.patterns): [r.name for r in g.rules] for g in plan(program)}
    assert by[("Batch",)] == ["r"] and by[("Busy", "Recent")] == ["s"]


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["mixed", "keyed", "spanning"]), STREAMS, st.integers(1, 3),
       st.booleans())
def test_the_plan_gives_the_in_process_result(which: str, spec: list, partitions: int,
                                              close: bool) -> None:
    program = {"mixed": lambda: load(MIXED), "keyed": keyed_program,
               "spanning": lambda: load(SPANNING)}[which]()
    events = stream(spec)
    assert partitioned(program, events, close, partitions) == in_process(program, events, close)


def test_a_window_update_and_a_deadline_at_one_instant_need_no_other_event() -> None:
    """Seen's expiry of S(a) and Gap's deadline for R(a) both fall at 4. At one instant window
    updates come before pattern deadlines, as before an event arriving then (docs/windows.md),
    so the expiry row cancels the gap whether or not an unrelated event arrives at 4 — and the
    group can be split by key (before, the deadline came first unless such an event arrived,
    and the group had to see every event of the stream)."""
    program = load(MIXED)
    base = [Event("S", ("a",), 0, "s0", 0), Event("R", ("a", 1), 1, "r0", 1)]
    with_other = [*base, Event("R", ("c", 0), 4, "r1", 2), Event("S", ("d",), 6, "s1", 3)]
    without = [*base, Event("S", ("d",), 6, "s1", 2)]
    for events in (with_other, without):
        assert [k for k in in_process(program, events) if k[0] == "Gap"] == []
        # with 4 partitions, keys "a" and "c" land in different ones
        assert partitioned(program, events, False, 4) == in_process(program, events)
    # a gap the expiry does not cancel (S(a) left at 4, R(a) at 5 waits until 8) stays
    later = [*base, Event("R", ("a", 2), 5, "r1", 2), Event("S", ("d",), 9, "s1", 3)]
    assert [k for k in in_process(program, later) if k[0] == "Gap"] == [
        ("Gap", 8.0, '{"k": "a"}', ("r1",))]
    assert partitioned(program, later, False, 4) == in_process(program, later)


# -- Spark -----------------------------------------------------------------------------------------
def write_files(folder: Path, events: list[Event], files: int) -> None:
    """The events as JSON Lines files in time order (each a slice), arriving one after another."""
    import os

    folder.mkdir(parents=True)
    size = -(-len(events) // files)
    for f in range(files):
        chunk = events[f * size:(f + 1) * size]
        path = folder / f"part-{f:03d}.jsonl"
        path.write_text("".join(json.dumps(e.to_dict(SCHEMAS[e.type])) + "\n" for e in chunk))
        os.utime(path, (1_700_000_000 + f, 1_700_000_000 + f))


def sample(n: int = 60, seed: int = 5) -> list[Event]:
    rnd = random.Random(seed)
    return stream([(rnd.choice("RRS"), rnd.choice("abc"), rnd.randint(0, 3), rnd.randint(0, 2))
                   for _ in range(n)])


def local_files(program, folder: Path, close: bool = False) -> Counter:
    engine = Engine(program, strict_actions=False)
    out = [m for e in read_local(folder, program.schemas, SideChannel())
           for m in engine.process(e)]
    return Counter(map(out_key, out + engine.finish(close_windows=close)))


def spark_rows(rows: list) -> Counter:
    return Counter((r["pattern"], r["ts"], json.dumps(json.loads(r["params"]), sort_keys=True),
                    tuple(r["events"])) for r in rows)


def test_spark_batch_and_streaming_equal_in_process(spark, tmp_path: Path) -> None:
    from cepflow.spark import PartitionWarning, detect_prepared, read_events
    from cepflow.spark.streaming import read_sink, stream_query

    program = load(MIXED)
    write_files(tmp_path / "src", sample(), files=3)
    expected = local_files(program, tmp_path / "src")
    assert {k[0] for k in expected} == {"Recent", "Busy", "Batch", "Seen", "Gap"}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PartitionWarning)
        prepared = read_events(spark, tmp_path / "src", program)
        got = spark_rows(detect_prepared(prepared, program).collect())
        closed = spark_rows(detect_prepared(prepared, program, close_windows=True).collect())
    assert got == expected
    assert closed == local_files(program, tmp_path / "src", close=True) != expected
    warned = [str(w.message) for w in caught]
    assert any("Batch" in w for w in warned) and not any("Gap" in w for w in warned)
    q = stream_query(spark, program, tmp_path / "src", tmp_path / "sink", tmp_path / "ck",
                     files_per_trigger=1, available_now=True)
    q.awaitTermination()
    matches, _ = read_sink(spark, tmp_path / "sink")
    assert spark_rows(matches.collect()) == expected


def test_cli_runs_the_window_examples_on_spark(spark, tmp_path: Path) -> None:
    """`cepflow run --engine spark` (temperature: Monitor's batches, closed at the end) and
    `cepflow stream` (motorbike, with its AccidentsReport and DangerousLocation statements)
    give the in-process rows."""
    from typer.testing import CliRunner

    from cepflow.cli.main import app

    runner = CliRunner()
    temp = EXAMPLES / "temperature"
    local, on_spark = tmp_path / "local.jsonl", tmp_path / "spark.jsonl"
    for out, extra in [(local, []), (on_spark, ["--engine", "spark"])]:
        res = runner.invoke(app, ["run", str(temp / "temperature.epl"), "-i",
                                  str(temp / "events.jsonl"), "-o", str(out), "--no-progress",
                                  "--close-windows", *extra])
        assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in local.read_text().splitlines()]
    assert len(rows) == 8 and sorted(map(json.dumps, rows)) == sorted(
        map(json.dumps, (json.loads(line) for line in on_spark.read_text().splitlines())))

    bike = EXAMPLES / "motorbike"
    src = tmp_path / "bikes"
    src.mkdir()
    (src / "accident.jsonl").write_text((bike / "accident.jsonl").read_text())
    res = runner.invoke(app, ["stream", str(bike / "motorbike.vepl"), "--source", str(src),
                              "--sink", str(tmp_path / "sink"), "--checkpoint",
                              str(tmp_path / "ck"), "--once"])
    assert res.exit_code == 0, res.output
    program = load(bike / "motorbike.vepl")
    from cepflow.spark.streaming import read_sink

    matches, _ = read_sink(spark, tmp_path / "sink")
    got = spark_rows(matches.collect())
    assert got == local_files(program, src) and {"Accident", "Crash"} <= {k[0] for k in got}
