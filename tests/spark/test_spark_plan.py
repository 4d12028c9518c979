"""How pattern sets are split for Spark (pure Python, no Spark needed)."""

from hypothesis import example, given, settings
from hypothesis import strategies as st

from cepflow.loader import load
from cepflow.spark.partitioning import plan

BASE = """
atomicEvent A(k: Integer, v: Integer)
atomicEvent B(k: Integer)
atomicEvent C(x: Integer, k: Integer)
"""


def test_shared_variable_is_the_key_at_each_types_position() -> None:
    prog = load(BASE + "complexEvent P(k: Integer) { as A(k, _) -> B(k) -> C(_, k) }")
    (g,) = plan(prog)
    assert g.key == {"A": 0, "B": 0, "C": 1} and g.types == {"A", "B", "C"}


def test_no_shared_variable_runs_as_one_partition() -> None:
    prog = load(BASE + "complexEvent P() { as A(k, _) -> B(j) }")
    (g,) = plan(prog)
    assert g.key is None and "cannot be split by key" in g.reason


def test_immediate_needs_the_whole_stream_unless_partitioned() -> None:
    prog = load(BASE + "complexEvent P(k: Integer) { as A(k, _) -> B(k) context immediate }")
    (g,) = plan(prog)
    assert g.key is None and g.types is None and "partition by" in g.reason
    prog = load(BASE + "complexEvent P(k: Integer) { as A(k, _) -> B(k) context immediate "
                       "partition by k }")
    (g,) = plan(prog)
    assert g.key == {"A": 0, "B": 0}


def test_higher_order_patterns_share_a_group_and_its_key() -> None:
    prog = load(BASE + "complexEvent P(k: Integer) { as A(k, _) -> B(k) }\n"
                       "complexEvent Q(k: Integer) { as P(k) -> C(_, k) }\n"
                       "complexEvent R(z: Integer) { as B(z) -> B(z) }")
    groups = plan(prog)
    assert [g.patterns for g in groups] == [["P", "Q"], ["R"]]
    assert groups[0].key == {"A": 0, "B": 0, "P": 0, "C": 1}


def test_rules_go_where_their_trigger_is_detected_once() -> None:
    prog = load(BASE + "complexEvent P(k: Integer) { as A(k, _) -> B(k) }\n"
                       "complexEvent R(x: Integer) { as C(x, _) -> C(x, _) }\n"
                       "rule r on P, R, B action log\nrule s on A action log\n"
                       "rule t on C action log")
    groups = plan(prog)
    by = {tuple(g.patterns): [(r.name, [x.name for x in r.on]) for r in g.rules]
          for g in groups}
    assert by[("P",)] == [("r", ["P", "B"]), ("s", ["A"])]
    # C is read (and keyed) by R: t goes with R's group, so each C fires it once
    assert by[("R",)] == [("r", ["R"]), ("t", ["C"])]


def test_only_the_actions_the_rules_name_are_shipped() -> None:
    from cepflow.spark.dataframes import actions_for

    prog = load(BASE + "complexEvent P(k: Integer) { as A(k, _) -> B(k) }\n"
                       "rule r on P action mine.act")
    mine, other = (lambda act: None), (lambda act: None)
    assert actions_for(prog, {"mine.act": mine, "other.act": other}) == {"mine.act": mine}


KEY_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**62), max_value=2**62),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=4))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("AB"), KEY_VALUES), min_size=1, max_size=12))
@example([("A", "\x7f"), ("A", "é"), ("B", "x"), ("A", -0.0), ("A", True), ("A", 1)])
def test_key_column_equals_key_json_per_event(rows) -> None:
    """The column-wise partition keys are the definition (key_json) of each keyed event."""
    from cepflow.events.event import Event
    from cepflow.spark.columns import encode, key_column, key_json

    events = [Event(t, (v,), i) for i, (t, v) in enumerate(rows)]
    batch = encode(events, 1, [None] * len(events), [None] * len(events))
    got = key_column(batch, {"A": 0}).to_pylist()
    assert got == [key_json(e.params[0]) if e.type == "A" else None for e in events]


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_parquet_columns_cover_what_the_parse_fills(data) -> None:
    """Every layout column the replay's parse (fast path or located reader) fills from a
    Parquet file is among parquet_columns of the file's schema: a narrower set would lose
    values (the replay's guard would stop the job)."""
    import io
    from datetime import UTC, datetime

    import pyarrow as pa
    import pyarrow.parquet as pq

    from cepflow.events.event import EventType, ParamSpec
    from cepflow.inputs import READERS
    from cepflow.inputs.columnar import arity_of, parquet_columns
    from cepflow.spark.dataframes import _file_events

    schemas = {
        "Temp": EventType("Temp", (ParamSpec("sensor", "str", "String"),
                                   ParamSpec("value", "float", "Double"),
                                   ParamSpec("count", "int", "Integer"))),
        "Door": EventType("Door", (ParamSpec("room", "any", "Room"),)),
    }
    arity = arity_of(schemas)
    kinds = {
        "string": (pa.string(), st.text(max_size=3)),
        "int": (pa.int64(), st.integers(-5, 5)),
        "double": (pa.float64(), st.floats(-4, 4).map(lambda x: round(x, 1))),
        "bool": (pa.bool_(), st.booleans()),
        "time": (pa.timestamp("ms"), st.integers(0, 10).map(
            lambda s: datetime.fromtimestamp(s, UTC))),
    }
    n = data.draw(st.integers(1, 6))
    cols: dict[str, pa.Array] = {
        "type": pa.array(data.draw(st.lists(st.sampled_from(["Temp", "Door"]),
                                            min_size=n, max_size=n))),
        "ts": pa.array(list(range(n)), pa.int64())}
    for name in ("sensor", "value", "count", "room", "id"):
        kind = data.draw(st.sampled_from([None, *kinds]))
        if kind is None:
            continue
        typ, values = kinds[kind]
        cols[name] = pa.array(data.draw(st.lists(st.one_of(st.none(), values),
                                                 min_size=n, max_size=n)), typ)
    table = pa.table(cols)
    buf = io.BytesIO()
    pq.write_table(table, buf)
    batches, _ = _file_events(buf.getvalue(), "f.parquet", ".parquet", READERS[".parquet"],
                              schemas, arity, {}, False)
    filled = {f for b in batches for f, c in zip(b.schema.names, b.columns, strict=True)
              if c.null_count < len(c)}
    allowed = parquet_columns(table.schema, schemas, {"Temp", "Door"}, arity)
    assert filled - {"type", "ts", "seq", "file", "at"} <= allowed  # (at: never travels)


def test_feeder_holds_batches_until_enough_rows(monkeypatch) -> None:
    """Feeder feeds FEED_ROWS rows at once (not Spark's batch size) and the rest on flush; the
    complex events are those of one engine fed everything."""
    from cepflow.events.event import Event
    from cepflow.runtime.engine import Engine
    from cepflow.spark import dataframes as spark_batch
    from cepflow.spark.columns import encode

    prog = load(BASE + "complexEvent P(k: Integer) { as A(k, _) -> B(k) }")
    events = [Event("A" if i % 3 else "B", (i % 4, 0) if i % 3 else (i % 4,), float(i), None, i)
              for i in range(40)]
    arities = {t: len(s.params) for t, s in prog.schemas.items()}
    rows = encode(events, 2, [None] * 40, [None] * 40)
    monkeypatch.setattr(spark_batch, "FEED_ROWS", 16)
    fed: list[int] = []
    feeder = spark_batch.Feeder(Engine(prog), arities, 2)
    real = spark_batch.feed
    monkeypatch.setattr(spark_batch, "feed", lambda e, c, b, a, n: fed.append(b.num_rows)
                        or real(e, c, b, a, n))
    out = [m for i in range(0, 40, 5) for m in feeder.add(rows.slice(i, 5))]
    out += list(feeder.flush())
    assert fed == [20, 20]
    whole = real(Engine(prog), Engine(prog).columnar, rows, arities, 2)
    got = sorted(repr(r) for b in out for r in b.to_pylist())
    assert got == sorted(repr(r) for r in whole.to_pylist()) and len(got) > 0
