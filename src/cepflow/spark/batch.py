"""Batch replay on Spark: the same compiled patterns and engine, partitioned by key.

Files are read by cepflow's own readers inside the executors (one task per file, through
Spark's ``binaryFile`` source), so a record is accepted or rejected — with file, line/row and
field — exactly as in-process. Events are then split into the groups of
:mod:`cepflow.spark.plan`, repartitioned by the group's key, ordered by (timestamp, input
position) within each partition and fed through Arrow (``mapInArrow``) to one engine per
partition, which uses its column-wise batch path where it applies. No semantics are
re-implemented here: every match comes from :class:`cepflow.runtime.engine.Engine`.
"""

from __future__ import annotations

import json
import os
import tempfile
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from cepflow.compiler.program import Program
from cepflow.events.model import Event, Rejected, SideChannel
from cepflow.inputs import READERS, RecordConverter, RecordError, options_for
from cepflow.runtime.engine import Engine
from cepflow.spark.columns import (
    MATCH_SCHEMA,
    decode,
    encode,
    encode_matches,
    event_schema,
    key_json,
    spark_ddl,
)
from cepflow.spark.plan import Group, plan, subprogram

REJECTED_SCHEMA = pa.schema([
    pa.field("source", pa.string()), pa.field("location", pa.string()),
    pa.field("reason", pa.string()), pa.field("field", pa.string()),
    pa.field("record", pa.string()),
])


class PartitionWarning(UserWarning):
    """A pattern group runs as one partition; the message says why."""


@dataclass
class Prepared:
    """Events in cepflow's column layout, and the records that were not events."""

    events: DataFrame
    rejected: DataFrame
    arity: int
    groups: list[Group]


def _arity(program: Program) -> int:
    return max([len(t.params) for t in program.schemas.values()] or [0])


def _keys(groups: list[Group], e: Event) -> list[str | None]:
    out = []
    for g in groups:
        i = g.key.get(e.type) if g.key is not None else None
        out.append(key_json(e.params[i]) if i is not None and i < len(e.params) else None)
    return out


def _with_keys(batch: pa.RecordBatch, events: list[Event], groups: list[Group]
               ) -> pa.RecordBatch:
    keys = [_keys(groups, e) for e in events]
    cols = [batch.column(i) for i in range(batch.num_columns)]
    names = list(batch.schema.names)
    for gi in range(len(groups)):
        cols.append(pa.array([k[gi] for k in keys], pa.string()))
        names.append(f"k{gi}")
    cols.append(pa.array(["event"] * batch.num_rows, pa.string()))
    names.append("kind")
    for f in REJECTED_SCHEMA:
        cols.append(pa.nulls(batch.num_rows, f.type))
        names.append(f.name)
    return pa.RecordBatch.from_arrays(cols, names=names)


def _prepared_schema(arity: int, groups: list[Group]) -> pa.Schema:
    fields = list(event_schema(arity))
    fields += [pa.field(f"k{gi}", pa.string()) for gi in range(len(groups))]
    fields.append(pa.field("kind", pa.string()))
    fields += list(REJECTED_SCHEMA)
    return pa.schema(fields)


def _rejected_batch(rows: list[Rejected], schema: pa.Schema) -> pa.RecordBatch:
    from cepflow.outputs.jsonl import dumps

    data: dict[str, list[Any]] = {f.name: [None] * len(rows) for f in schema}
    data["kind"] = ["rejected"] * len(rows)
    data["source"] = [r.source for r in rows]
    data["location"] = [r.location for r in rows]
    data["reason"] = [r.reason for r in rows]
    data["field"] = [r.field for r in rows]
    data["record"] = [r.record if isinstance(r.record, str) or r.record is None
                      else dumps(r.record) for r in rows]
    return pa.RecordBatch.from_pydict(data, schema=schema)


def file_parser(program: Program, groups: list[Group], arity: int,
                reader_options: Mapping[str, Any],
                streaming: bool = False) -> Callable[[Iterator[pa.RecordBatch]],
                                                     Iterator[pa.RecordBatch]]:
    """The mapInArrow function that turns ``binaryFile`` rows (path, content) into events and
    rejected records with cepflow's readers. ``streaming``: events without an id get the id
    ``FILE:N`` (inputs are not numbered across files)."""
    schema = _prepared_schema(arity, groups)
    schemas = program.schemas

    def parse(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            paths = batch.column("path").to_pylist()
            contents = batch.column("content").to_pylist()
            for fpath, content in zip(paths, contents, strict=True):
                local = fpath[len("file:"):] if fpath.startswith("file:") else fpath
                while local.startswith("//"):
                    local = local[1:]
                suffix = Path(local).suffix.lower()
                if Path(local).name.startswith(("_", ".")):
                    continue
                side = SideChannel()
                reader = READERS.get(suffix)
                if reader is None:
                    yield _rejected_batch([Rejected(local, "file", (
                        "not a supported event file (expected one of "
                        f"{', '.join(sorted(READERS))})"))], schema)
                    continue
                with tempfile.NamedTemporaryFile(suffix=suffix) as tmp:
                    tmp.write(content)
                    tmp.flush()
                    events = list(reader(tmp.name, schemas, side, source=local,
                                         **options_for(reader, reader_options)))
                if streaming:
                    base = Path(local).name
                    for e in events:
                        if e.id is None:
                            e.id = f"{base}:{e.seq}"
                for start in range(0, len(events), 65_536):
                    chunk = events[start:start + 65_536]
                    enc = encode(chunk, arity, [None] * len(chunk), [local] * len(chunk))
                    yield _with_keys(enc, chunk, groups)
                if side.malformed:
                    yield _rejected_batch(side.malformed, schema)

    return parse


def read_events(spark: SparkSession, path: str | os.PathLike[str], program: Program,
                **reader_options: Any) -> Prepared:
    """Read a file or a folder of JSON Lines / CSV / Parquet event files, one task per file."""
    groups = plan(program)
    arity = _arity(program)
    schema = _prepared_schema(arity, groups)
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{path}: no such file or folder")
    files = spark.read.format("binaryFile").load(str(p))
    parse = file_parser(program, groups, arity, reader_options)
    parsed = files.mapInArrow(parse, spark_ddl(schema)).persist()
    events = parsed.where(F.col("kind") == "event")
    rejected = parsed.where(F.col("kind") == "rejected").select(*REJECTED_SCHEMA.names)
    # number the events across files as the in-process reader does: files by name, in order
    counts = sorted((r["file"], r["count"]) for r in events.groupBy("file").count().collect())
    offsets, total = {}, 0
    for f, n in counts:
        offsets[f] = total
        total += n
    if len(offsets) > 1:
        mapping = F.create_map(*[x for f, o in offsets.items() for x in (F.lit(f), F.lit(o))])
        events = events.withColumn("seq", F.col("seq") + mapping[F.col("file")])
    return Prepared(events, rejected, arity, groups)


def prepare(df: DataFrame, program: Program) -> Prepared:
    """Events from a DataFrame with columns ``type``, ``ts``, optional ``id`` and ``seq``, and
    one column per parameter name. Rows are checked by the same record rules as files; a row
    that breaks them goes to ``rejected`` with its reason. Without a ``seq`` column rows are
    numbered in the DataFrame's order (``monotonically_increasing_id``)."""
    groups = plan(program)
    arity = _arity(program)
    schema = _prepared_schema(arity, groups)
    if "seq" not in df.columns:
        df = df.withColumn("seq", F.monotonically_increasing_id())
    convert = RecordConverter(program.schemas, unknown_fields="reject")
    columns = [c for c in df.columns if c != "seq"]

    def conv(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            data = batch.to_pydict()
            seqs = data["seq"]
            events: list[Event] = []
            bad: list[Rejected] = []
            for r in range(batch.num_rows):
                etype = data["type"][r] if "type" in data else None
                schema_t = program.schemas.get(etype) if isinstance(etype, str) else None
                keep = set(schema_t.param_names) if schema_t is not None else set()
                record = {c: data[c][r] for c in columns
                          if data[c][r] is not None or c in keep}
                try:
                    events.append(convert(record, seqs[r]))
                except RecordError as exc:
                    from cepflow.outputs.jsonl import dumps

                    bad.append(Rejected("<dataframe>", f"row seq {seqs[r]}", exc.reason,
                                        dumps(record), exc.field))
            if events:
                enc = encode(events, arity, [None] * len(events), [None] * len(events))
                yield _with_keys(enc, events, groups)
            if bad:
                yield _rejected_batch(bad, schema)

    parsed = df.mapInArrow(conv, spark_ddl(schema))
    return Prepared(parsed.where(F.col("kind") == "event"),
                    parsed.where(F.col("kind") == "rejected").select(*REJECTED_SCHEMA.names),
                    arity, groups)


def detect_prepared(prepared: Prepared, program: Program, *,
                    actions: Mapping[str, Callable[..., Any]] | None = None,
                    close_windows: bool = False, partitions: int | None = None) -> DataFrame:
    """Complex events (pattern, ts, params JSON, events) of ``program`` over prepared events."""
    spark = prepared.events.sparkSession
    n = partitions or int(spark.conf.get("spark.sql.shuffle.partitions") or 2)
    # in-process, time is global: the last event of the stream lets every earlier window
    # deadline pass; each partition engine advances to that same time before it finishes
    horizon_row = prepared.events.agg(F.max("ts").alias("h")).collect()[0]
    horizon = horizon_row["h"]
    arities = {t: len(s.params) for t, s in program.schemas.items()}
    arity = prepared.arity
    outs: list[DataFrame] = []
    for gi, group in enumerate(prepared.groups):
        if not group.partitioned:
            warnings.warn(f"patterns {', '.join(group.patterns) or '(rules only)'} run as one "
                          f"partition: {group.reason}", PartitionWarning, stacklevel=2)
        sub = subprogram(program, group)
        events = prepared.events
        if group.types is not None:
            events = events.where(F.col("type").isin(sorted(group.types)))
        if group.partitioned:
            events = events.repartition(n, f"k{gi}")
        else:
            events = events.repartition(1)
        events = events.sortWithinPartitions("ts", "seq")
        acts = dict(actions or {})

        def run(batches: Iterator[pa.RecordBatch], sub: Program = sub,
                acts: dict = acts) -> Iterator[pa.RecordBatch]:
            engine = Engine(sub, actions=acts, strict_actions=False)
            for batch in batches:
                found = engine.process_batch(decode(batch, arities, arity))
                if found:
                    yield encode_matches(found)
            tail = engine.advance_to(horizon) if horizon is not None else []
            tail += engine.finish(close_windows=close_windows)
            if tail:
                yield encode_matches(tail)

        outs.append(events.mapInArrow(run, spark_ddl(MATCH_SCHEMA)))
    if not outs:
        return spark.createDataFrame([], spark_ddl(MATCH_SCHEMA))
    result = outs[0]
    for o in outs[1:]:
        result = result.unionByName(o)
    return result


def detect(program: Program, **kw: Any) -> Callable[[DataFrame], DataFrame]:
    """``df.transform(detect(program))``: the complex events of ``program`` over ``df``.

    ``df`` has columns ``type``, ``ts``, optional ``id``/``seq``, and the parameters by name. A
    row that is not a valid event makes the job fail with its reason (use :func:`prepare` to
    get such rows as a DataFrame instead).
    """
    def apply(df: DataFrame) -> DataFrame:
        prepared = prepare(df, program)
        bad = prepared.rejected.limit(1).collect()
        if bad:
            r = bad[0]
            raise ValueError(f"{r['location']}: {r['reason']}"
                             + (f" (field {r['field']!r})" if r["field"] else ""))
        return detect_prepared(prepared, program, **kw)

    return apply


def write_matches(matches: DataFrame, path: str | os.PathLike[str]) -> int:
    """Write complex events: ``.jsonl`` → one JSON Lines file (rows streamed to the driver in
    timestamp order); anything else → a Parquet folder. Returns the number written."""
    from cepflow.outputs.jsonl import dumps

    target = Path(path)
    if target.suffix.lower() in (".jsonl", ".ndjson", ".json"):
        target.parent.mkdir(parents=True, exist_ok=True)
        n = 0
        ordered = matches.orderBy("ts", "pattern", "events")
        with target.open("w", encoding="utf-8") as fh:
            for row in ordered.toLocalIterator():
                ts = row["ts"]
                fh.write(dumps({"pattern": row["pattern"],
                                "ts": int(ts) if float(ts).is_integer() else ts,
                                "params": json.loads(row["params"]),
                                "events": list(row["events"])}) + "\n")
                n += 1
        return n
    matches.write.mode("overwrite").parquet(str(target))
    return matches.sparkSession.read.parquet(str(target)).count()


def write_rejected(rejected: DataFrame, path: str | os.PathLike[str]) -> int:
    """The side channel as JSON Lines (one file), in source order."""
    from cepflow.outputs.jsonl import dumps

    rows = rejected.orderBy("source", "location").collect()
    if not rows:
        return 0
    with Path(path).open("w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(dumps({k: r[k] for k in REJECTED_SCHEMA.names}) + "\n")
    return len(rows)
