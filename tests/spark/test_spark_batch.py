"""Spark batch = in-process engine, on the same input: same complex events with the same
contributing events; same rejected records with the same locations. Few, small examples —
Spark tests are slow."""

import json
import warnings
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cepflow.events.event import SideChannel
from cepflow.inputs import read_events as read_local
from cepflow.loader import load
from cepflow.runtime.engine import Engine
from cepflow.spark import PartitionWarning, detect, detect_prepared, read_events, replay

PATTERNS = """
atomicEvent A(k: Integer)
atomicEvent B(k: Integer)
atomicEvent C(k: Integer)
atomicEvent D(k: Integer, label: String)
complexEvent G(k: Integer) { as A(k) -> B(k) -> C(k) }
complexEvent N(k: Integer) { as (A(k) -> NOT B(k) -> C(k))[5] }
complexEvent T(k: Integer) { as (A(k) -> NOT C(k))[4] }
complexEvent U() { as A(_) -> D(_, l) where l == "x" }
complexEvent I(k: Integer) { as A(k) -> B(k) context immediate partition by k }
complexEvent H(k: Integer) { as G(k) -> A(k) }
"""


def local_matches(program, path: Path, close: bool) -> Counter:
    engine = Engine(program, strict_actions=False)
    out = [m for e in read_local(path, program.schemas, SideChannel())
           for m in engine.process(e)]
    out += engine.finish(close_windows=close)
    return Counter((m.type, float(m.ts), json.dumps(m.bindings_for_output(), sort_keys=True),
                    tuple(str(r) for r in m.event_refs)) for m in out)


def spark_matches(df) -> Counter:
    return Counter((r["pattern"], r["ts"], json.dumps(json.loads(r["params"]), sort_keys=True),
                    tuple(r["events"])) for r in df.collect())


def replayed(spark, path: Path, program, close: bool = False) -> tuple[Counter, list, int]:
    """The one-job replay's matches, rejected records (source name, location, reason, field)
    and event count."""
    out = path.parent / f"{path.name}-replayed"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PartitionWarning)
        run = replay(spark, path, program, out, close_windows=close)
    matches = spark_matches(spark.read.parquet(str(out)))
    assert run.complex_events == sum(matches.values())
    rejected = []
    side = out.with_suffix(".rejected.jsonl")
    if side.exists():
        rejected = [json.loads(line) for line in side.read_text().splitlines()]
    assert run.rejected == len(rejected)
    return (matches, sorted((r["source"].split("/")[-1], r["location"], r["reason"], r["field"])
                            for r in rejected), run.events)


events = st.lists(st.tuples(st.sampled_from("ABCD"), st.integers(0, 3), st.integers(0, 2),
                            st.sampled_from(["x", "y"]), st.booleans()),
                  min_size=1, max_size=40)


@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck))
@given(events, st.booleans())
def test_spark_batch_equals_in_process(spark, tmp_path_factory, spec, close: bool) -> None:
    program = load(PATTERNS)
    path = tmp_path_factory.mktemp("ev") / "events.jsonl"
    ts = 0
    with path.open("w") as fh:
        for i, (t, k, dt, label, with_id) in enumerate(spec):
            ts += dt
            rec = {"type": t, "ts": ts, "k": k}
            if t == "D":
                rec["label"] = label
            if with_id:
                rec["id"] = f"e{i}"
            fh.write(json.dumps(rec) + "\n")
    expected = local_matches(program, path, close)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PartitionWarning)
        prepared = read_events(spark, path, program)
        got = spark_matches(detect_prepared(prepared, program, close_windows=close))
    assert got == expected
    assert replayed(spark, path, program, close) == (expected, [], len(spec))


def test_rejected_records_are_located_like_in_process(spark, tmp_path: Path) -> None:
    program = load(PATTERNS)
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.jsonl").write_text(
        '{"type": "A", "ts": 0, "k": 1}\n'
        'not json\n'
        '{"type": "B", "ts": "yesterday", "k": 1}\n'
        '{"type": "C", "ts": 3, "k": "one"}\n')
    (folder / "b.csv").write_text("type,ts,k\nB,1,1\nC,x,2\nC,4,1\n")
    (folder / "notes.txt").write_text("hello\n")
    side = SideChannel()
    local = list(read_local(folder, program.schemas, side))
    want = sorted((r.source.split("/")[-1], r.location, r.reason, r.field)
                  for r in side.malformed)
    prepared = read_events(spark, folder, program)
    got = sorted((r["source"].split("/")[-1], r["location"], r["reason"], r["field"])
                 for r in prepared.rejected.collect())
    assert got == want and len(got) == 5
    assert prepared.events.count() == len(local)
    _, rejected, n = replayed(spark, folder, program)
    assert rejected == want and n == len(local)


def test_unkeyed_pattern_warns_and_still_matches(spark, tmp_path: Path) -> None:
    program = load("atomicEvent A(k: Integer)\natomicEvent B(j: Integer)\n"
                   "complexEvent P() { as A(_) -> B(_) }\n")
    path = tmp_path / "e.jsonl"
    path.write_text('{"type":"A","ts":0,"k":1}\n{"type":"B","ts":1,"j":2}\n')
    prepared = read_events(spark, path, program)
    with pytest.warns(PartitionWarning, match="one partition"):
        out = detect_prepared(prepared, program)
    assert [tuple(r["events"]) for r in out.collect()] == [("0", "1")]


def test_dataframe_transform(spark) -> None:
    program = load(PATTERNS)
    rows = [("A", 0, "a1", 1, None), ("B", 1, "b1", 1, None), ("C", 2, "c1", 1, None),
            ("D", 3, "d1", 1, "x")]
    schema = "type string, ts long, id string, k long, label string"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PartitionWarning)
        out = spark.createDataFrame(rows, schema).transform(detect(program)).collect()
        got = sorted((r["pattern"], tuple(r["events"])) for r in out)
        assert ("G", ("a1", "b1", "c1")) in got and ("U", ("a1", "d1")) in got
        bad = spark.createDataFrame([("A", 0, "a1", "one", None)],
                                    schema.replace("k long", "k string"))
        with pytest.raises(ValueError, match="field 'k'"):
            bad.transform(detect(program))


def test_window_deadlines_pass_with_global_time(spark, tmp_path: Path) -> None:
    """In-process, any later event lets a window close; every Spark partition must see the same
    end of time, not only its own last event."""
    program = load(PATTERNS)
    path = tmp_path / "e.jsonl"
    lines = [{"type": "A", "ts": 0, "k": k, "id": f"a{k}"} for k in range(8)]
    lines.append({"type": "B", "ts": 100, "k": 99, "id": "late-b"})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    expected = local_matches(program, path, close=False)
    assert sum(1 for m in expected if m[0] == "T") == 8
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PartitionWarning)
        got = spark_matches(detect_prepared(read_events(spark, path, program), program))
    assert got == expected
    assert replayed(spark, path, program)[0] == expected


def test_folder_of_fast_and_located_files_numbers_events_like_in_process(spark, tmp_path: Path
                                                                         ) -> None:
    """Several files — read by the columnar fast path (JSON Lines, Parquet) or, for the file
    with a bad record, by the located reader — events without ids (named by their number across
    files), windows (the input's last timestamp passes in every partition)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    program = load(PATTERNS)
    folder = tmp_path / "in"
    folder.mkdir()
    rows = [("A", 0, 1), ("B", 1, 1), ("A", 2, 2), ("C", 3, 1), ("A", 4, 3)]
    (folder / "a.jsonl").write_text("".join(
        json.dumps({"type": t, "ts": ts, "k": k}) + "\n" for t, ts, k in rows))
    (folder / "b.jsonl").write_text('{"type": "C", "ts": 5, "k": 2}\nnot json\n'
                                    '{"type": "B", "ts": 6, "k": 3}\n')
    pq.write_table(pa.table({"type": ["C", "A", "C"], "ts": [7, 8, 20], "k": [3, 4, 4]}),
                   folder / "c.parquet")
    side = SideChannel()
    local = list(read_local(folder, program.schemas, side))
    expected = local_matches(program, folder, close=False)
    assert any(m[0] == "T" for m in expected)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PartitionWarning)
        prepared = read_events(spark, folder, program)
        got = spark_matches(detect_prepared(prepared, program))
    assert got == expected
    assert sorted(r["seq"] for r in prepared.events.collect()) == [e.seq for e in local]
    assert {r["file"].split("/")[-1] for r in prepared.events.collect()} == {
        "a.jsonl", "b.jsonl", "c.parquet"}
    assert [(r["location"], r["reason"]) for r in prepared.rejected.collect()] == [
        (r.location, r.reason) for r in side.malformed]
    matches, rejected, n = replayed(spark, folder, program)
    assert matches == expected and n == len(local)
    assert [(r[1], r[2]) for r in rejected] == [(r.location, r.reason) for r in side.malformed]


def test_partition_hash_keeps_equal_keys_together(spark) -> None:
    """Rows whose keys are equal (key_json) get the same JVM-side partition hash, whatever slot
    the value sits in; rows of types without the key get null; distinct keys spread out."""
    import random

    from pyspark.sql import functions as F

    from cepflow.events.event import Event
    from cepflow.spark.columns import encode, key_column, partition_hash, spark_ddl

    rnd = random.Random(7)
    values = [None, True, False, 0, 1, -1, 2**40, 0.5, -2.25, 1e300, "", "a", "b", "é", "1"]
    # A and C hold the key at different positions; B has no key
    events = []
    for i in range(300):
        t = rnd.choice("ABC")
        v = rnd.choice(values)
        params = (v, "pad") if t != "C" else ("pad", v)
        events.append(Event(t, params, float(i), None, i))
    batch = encode(events, 2, [None] * len(events), [None] * len(events))
    key = {"A": 0, "C": 1}
    keys = key_column(batch, key).to_pylist()
    df = spark.createDataFrame(batch.to_pandas(), spark_ddl(batch.schema))
    hashes = [r["h"] for r in df.select(partition_hash(key, df.columns).alias("h"),
                                        F.col("seq")).orderBy("seq").collect()]
    by_key: dict[str, set[int]] = {}
    for k, h, e in zip(keys, hashes, events, strict=True):
        if e.type == "B":
            assert h is None
        else:
            by_key.setdefault(k, set()).add(h)
    assert all(len(hs) == 1 for hs in by_key.values()), by_key
    assert len({next(iter(hs)) for hs in by_key.values()}) == len(by_key)
    # told the rows' types, the hash skips the type test only where that cannot change it
    for types in ({"A"}, {"C"}, {"A", "C"}, {"A", "B"}):
        rows = df.where(F.col("type").isin(sorted(types)))
        told = [r["h"] for r in rows.select(partition_hash(key, df.columns, types).alias("h"),
                                            F.col("seq")).orderBy("seq").collect()]
        assert told == [h for h, e in zip(hashes, events, strict=True) if e.type in types]


@pytest.mark.parametrize("n", [2, 3, 4])
def test_routed_rows_land_in_the_partition_chosen(spark, n: int) -> None:
    """route_values/routed_to send a row to the partition its code names (hashing the
    partition numbers themselves would leave some partitions empty for n = 3 and 4)."""
    from pyspark.sql import functions as F

    from cepflow.spark.columns import route_values, routed_to

    target = F.pmod(F.col("id") * 7, F.lit(n))
    rows = (spark.range(40).repartition(n, routed_to(target, route_values(spark, n)))
            .select(target.alias("t"), F.spark_partition_id().alias("p")).collect())
    assert all(r["t"] == r["p"] for r in rows) and {r["p"] for r in rows} == set(range(n))


def test_parquet_folder_ships_only_the_slots_the_files_fill(spark, tmp_path: Path) -> None:
    """Parquet in: the replay reads the files' footers and ships one slot for an untyped
    parameter; same matches as in-process."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from cepflow.spark.partitioning import plan
    from cepflow.spark.replay import _travelling

    program = load("atomicEvent A(b: Thing)\natomicEvent B(b: Thing)\n"
                   "complexEvent P(b: Thing) { as (A(b) -> B(b))[5] }\n")
    folder = tmp_path / "in"
    folder.mkdir()
    pq.write_table(pa.table({"type": ["A", "A", "B"], "ts": [0, 1, 2], "b": ["x", "y", "x"]}),
                   folder / "a.parquet")
    pq.write_table(pa.table({"type": ["B", "A", "B"], "ts": [3, 9, 20], "b": ["y", "x", "x"]}),
                   folder / "b.parquet")
    names = sorted(str(p) for p in folder.iterdir())
    assert _travelling(names, program, plan(program), 1) == {"tsi", "s0"}
    expected = local_matches(program, folder, close=False)
    assert len(expected) == 2
    assert replayed(spark, folder, program) == (expected, [], 6)


def test_replay_parse_stops_rather_than_lose_a_value(tmp_path: Path) -> None:
    """A value in a column the replay does not ship stops the task with the file's name."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from cepflow.spark.partitioning import plan
    from cepflow.spark.replay import _routed

    program = load("atomicEvent A(b: Thing)\ncomplexEvent P(b: Thing) { as A(b) -> A(b) }\n")
    path = tmp_path / "a.parquet"
    pq.write_table(pa.table({"type": ["A"], "ts": [0], "b": [7]}), path)

    class Sink:
        def add(self, value) -> None:
            pass

    parse = _routed(program, plan(program), 1, ["type", "ts", "seq", "s0"], {str(path): 0}, 2,
                    Sink())
    with pytest.raises(RuntimeError, match=r"a\.parquet: values in column.*i0"):
        list(parse(iter([pa.RecordBatch.from_pydict({"path": [str(path)]})])))


def test_local_session_heap_follows_the_machine(spark) -> None:
    """local masters: the driver (also the executor) gets a quarter of the machine's memory,
    between 2 and 8 GiB (2 GiB made the detection sort spill on 10M events)."""
    from cepflow.spark.session import local_memory_mb

    mb = local_memory_mb()
    assert 2048 <= mb <= 8192
    assert spark.conf.get("spark.driver.memory") == f"{mb}m"


def test_arrow_batches_to_python_have_no_byte_limit(spark) -> None:
    """Spark's byte limit on Arrow batches sizes the batch after every row (a fifth of the
    replay's detection stage): the session turns it off; the row limit bounds a batch."""
    from cepflow.spark.session import ARROW_BATCH

    assert spark.conf.get("spark.sql.execution.arrow.maxBytesPerBatch") in (
        str(2**31 - 1), f"{2**31 - 1}b")
    assert spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch") == str(ARROW_BATCH)


def test_feeder_holds_more_rows_while_many_partial_matches_are_carried() -> None:
    """Each carried partial match costs the kernel per feed, so the Feeder waits for
    CARRY_ROWS rows per carried partial match (between FEED_ROWS and MAX_FEED_ROWS) — and the
    matches are those of one engine fed everything."""
    from cepflow.events.event import Event
    from cepflow.spark.columns import encode
    from cepflow.spark.dataframes import CARRY_ROWS, FEED_ROWS, MAX_FEED_ROWS, Feeder

    program = load("atomicEvent A(k: Integer)\natomicEvent B(k: Integer)\n"
                   "complexEvent G(k: Integer) { as A(k) -> B(k) }\n")
    arities = {"A": 1, "B": 1}
    n = FEED_ROWS // CARRY_ROWS + 1000  # open partial matches: above the plain feed size

    def batch(events: list[Event]):
        return encode(events, 1, [None] * len(events), [None] * len(events))

    starts = [Event("A", (i,), float(i), f"a{i}", i) for i in range(n)]
    ends = [Event("B", (i,), float(n + i), f"b{i}", n + i) for i in range(n)]
    feeder = Feeder(Engine(program, strict_actions=False), arities, 1)
    assert feeder.target == FEED_ROWS
    found = [*feeder.add(batch(starts)), *feeder.flush()]
    assert not found and feeder.target == min(MAX_FEED_ROWS, CARRY_ROWS * n) > FEED_ROWS
    found = [*feeder.add(batch(ends)), *feeder.flush()]
    assert feeder.target == FEED_ROWS  # nothing carried any more
    expected = list(Engine(program, strict_actions=False).run(starts + ends))
    assert sum(b.num_rows for b in found) == len(expected) == n
