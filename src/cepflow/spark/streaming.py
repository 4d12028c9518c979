"""Structured Streaming: the same patterns and engine over an unbounded folder of event files.

``source folder (binaryFile, new files per micro-batch)`` → cepflow's readers (as in batch) →
per pattern group ``groupBy(key).applyInPandasWithState``: for each key the engine's state
(:mod:`cepflow.runtime.state`, versioned JSON) lives in Spark's state store between
micro-batches; the key's events of the batch are ordered by (timestamp, file, position) and fed
to the engine; an event older than the key's engine clock is *late* and goes to the side output
with the reason. (Known bug: rows at or before the watermark are discarded by Spark's operator
before this code sees them — see docs/spark.md.) Window deadlines fire when the event-time
watermark passes them (event-time timeouts). Every micro-batch is written by ``foreachBatch``
into folders named by batch id with overwrite — Spark re-runs an uncommitted batch with the
same id after a crash, so the output holds every complex event exactly once.

Output folders under ``sink``: ``matches/batch=N`` (pattern, ts, params, events) and
``rejected/batch=N`` (kind late|malformed, source, location, reason, field, record).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery
from pyspark.sql.streaming.state import GroupState, GroupStateTimeout

from cepflow.compiler.program import Program
from cepflow.events.model import Event
from cepflow.runtime.engine import Engine
from cepflow.runtime.state import restore_state, save_state
from cepflow.spark.batch import (
    REJECTED_SCHEMA,
    _arity,
    _prepared_schema,
    event_from_json,
    file_parser,
)
from cepflow.spark.columns import spark_ddl
from cepflow.spark.plan import plan, subprogram

OUT_DDL = ("kind string, pattern string, ts double, params string, events array<string>, "
           "source string, location string, reason string, field string, record string")
STATE_DDL = "engine string"
_OUT_COLS = ["kind", "pattern", "ts", "params", "events", *REJECTED_SCHEMA.names]


def _rows(matches: list, late: list[tuple[Event, str]]) -> pd.DataFrame:
    from cepflow.outputs.jsonl import dumps

    empty = dict.fromkeys(_OUT_COLS)
    rows = [{**empty, "kind": "match", "pattern": m.type, "ts": float(m.ts),
             "params": dumps(m.bindings_for_output()),
             "events": [str(r) for r in m.event_refs]} for m in matches]
    rows += [{**empty, "kind": "late", "ts": float(e.ts), "source": "<stream>",
              "location": f"event {e.ref}", "reason": why, "field": "ts",
              "record": dumps(e.to_dict())} for e, why in late]
    frame = pd.DataFrame(rows, columns=_OUT_COLS, dtype=object)
    frame["ts"] = frame["ts"].astype("float64")
    return frame


def stream_query(
    spark: SparkSession,
    program: Program,
    source: str | os.PathLike[str],
    sink: str | os.PathLike[str],
    checkpoint: str | os.PathLike[str],
    *,
    lateness_ms: float = 0,
    files_per_trigger: int | None = None,
    actions: Mapping[str, Callable[..., Any]] | None = None,
    available_now: bool = False,
    processing_time: str | None = None,
    on_batch: Callable[[int], None] | None = None,
) -> StreamingQuery:
    """Start the streaming detection of ``program`` from ``source`` into ``sink``."""
    groups = plan(program)
    arity = _arity(program)
    schema = _prepared_schema(arity, groups, event_json=True)
    reader = spark.readStream.format("binaryFile").schema(
        "path string, modificationTime timestamp, length long, content binary")
    if files_per_trigger:
        reader = reader.option("maxFilesPerTrigger", files_per_trigger)
    files = reader.load(str(source))
    parsed = files.mapInArrow(file_parser(program, groups, arity, {}, streaming=True),
                              spark_ddl(schema))
    malformed = parsed.where(F.col("kind") == "rejected").select(
        F.lit("malformed").alias("kind"), F.lit(None).cast("string").alias("pattern"),
        F.lit(None).cast("double").alias("ts"), F.lit(None).cast("string").alias("params"),
        F.lit(None).cast("array<string>").alias("events"), *REJECTED_SCHEMA.names)
    events = (parsed.where(F.col("kind") == "event")
              .withColumn("event_time", F.timestamp_millis(F.col("ts").cast("long")))
              .withWatermark("event_time", f"{int(lateness_ms)} milliseconds"))
    acts = dict(actions or {})
    subs = [subprogram(program, g) for g in groups]
    # one stateful operator for all groups (Spark allows one per query): state key (group, key)
    keyed: DataFrame | None = None
    for gi, group in enumerate(groups):
        ev = events
        if group.types is not None:
            ev = ev.where(F.col("type").isin(sorted(group.types)))
        key = F.col(f"k{gi}") if group.partitioned else F.lit("*")
        ev = ev.select(F.lit(gi).alias("g"), key.alias("key"), F.col("ts"), F.col("file"),
                       F.col("seq"), F.col("event_time"), F.col("ev"))
        keyed = ev if keyed is None else keyed.unionByName(ev)

    def step(key: tuple, pdfs: Iterator[pd.DataFrame], state: GroupState
             ) -> Iterator[pd.DataFrame]:
        engine = Engine(subs[int(key[0])], actions=acts, strict_actions=False)
        if state.exists:
            restore_state(engine, json.loads(state.get[0]))
        late: list[tuple[Event, str]] = []
        if state.hasTimedOut:
            found = engine.advance_to(float(state.getCurrentWatermarkMs()))
        else:
            pdf = pd.concat(list(pdfs), ignore_index=True).sort_values(
                ["ts", "file", "seq"], kind="stable")
            found = []
            for text in pdf["ev"].tolist():
                e = event_from_json(text)
                if e.ts < engine.time:
                    late.append((e, f"late: {e.ts:g} is before {engine.time:g}, the time "
                                    "this key's partial matches have reached"))
                    continue
                found.extend(engine.process(e))
        if any(engine.partial_matches().values()):
            state.update((json.dumps(save_state(engine)),))
            deadline = engine.next_deadline()
            if deadline is not None:
                wm = state.getCurrentWatermarkMs()
                state.setTimeoutTimestamp(int(max(deadline + 1, wm + 1)))
        elif state.exists:
            state.remove()
        if found or late:
            yield _rows(found, late)

    outputs: list[DataFrame] = [malformed]
    if keyed is not None:
        outputs.append(keyed.groupBy("g", "key").applyInPandasWithState(
            step, OUT_DDL, STATE_DDL, "append", GroupStateTimeout.EventTimeTimeout))
    out = outputs[0]
    for o in outputs[1:]:
        out = out.unionByName(o)
    sink_path = Path(sink)

    def write(batch: DataFrame, batch_id: int) -> None:
        batch = batch.persist()
        try:
            name = f"batch={batch_id:09d}"
            m = batch.where(F.col("kind") == "match").select("pattern", "ts", "params",
                                                              "events")
            m.write.mode("overwrite").json(str(sink_path / "matches" / name))
            if on_batch is not None:
                on_batch(batch_id)  # (tests: fail between the two writes)
            r = batch.where(F.col("kind") != "match").select("kind", *REJECTED_SCHEMA.names)
            r.write.mode("overwrite").json(str(sink_path / "rejected" / name))
        finally:
            batch.unpersist()

    writer = out.writeStream.foreachBatch(write).option("checkpointLocation", str(checkpoint))
    if available_now:
        writer = writer.trigger(availableNow=True)
    elif processing_time:
        writer = writer.trigger(processingTime=processing_time)
    return writer.start()


def read_sink(spark: SparkSession, sink: str | os.PathLike[str]) -> tuple[DataFrame, DataFrame]:
    """The matches and the side output written by :func:`stream_query` (complete batches)."""
    base = Path(sink)
    m = spark.read.schema("pattern string, ts double, params string, events array<string>") \
        .json(str(base / "matches"))
    r = spark.read.schema("kind string, source string, location string, reason string, "
                          "field string, record string").json(str(base / "rejected"))
    return m, r
