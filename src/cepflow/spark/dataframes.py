"""Batch replay on Spark: the same compiled patterns and engine, partitioned by key.

Files are read by cepflow's own readers inside the executors (one task per file, through
Spark's ``binaryFile`` source), so a record is accepted or rejected — with file, line/row and
field — exactly as in-process. Events are then split into the groups of
:mod:`cepflow.spark.partitioning`, repartitioned by the group's key, ordered by (timestamp, input
position) within each partition and fed through Arrow (``mapInArrow``) to one engine per
partition, which uses its column-wise batch path where it applies. No semantics are
re-implemented here: every match comes from :class:`cepflow.runtime.engine.Engine`.
From files to complex events and rejected records in one job: :mod:`cepflow.spark.replay`.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import tempfile
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from cepflow.compiler.program import Program
from cepflow.events.event import Event, Rejected, SideChannel
from cepflow.inputs import READERS, Cursor, RecordConverter, RecordError, options_for
from cepflow.inputs.columnar import arity_of, constant, read_columns
from cepflow.inputs.files import UNSUPPORTED, location_unit
from cepflow.outputs import MatchFile, match_batch, write_side_file
from cepflow.outputs.files import STDOUT
from cepflow.outputs.records import REJECTED_SCHEMA as SIDE_FILE_SCHEMA
from cepflow.outputs.records import record_text
from cepflow.runtime.engine import Engine, RunStopped
from cepflow.runtime.kernels import Declined
from cepflow.spark.columns import (
    MATCH_SCHEMA,
    ArrowRows,
    decode,
    encode,
    encode_match_table,
    event_schema,
    group_rows,
    key_column,
    partition_hash,
    spark_ddl,
    spark_type,
)
from cepflow.spark.partitioning import TIMED_WINDOWS, Group, plan, subprogram

#: a rejected record's fields besides its kind (:data:`cepflow.outputs.records.REJECTED_SCHEMA`:
#: the records of a file are all ``malformed``)
REJECTED_SCHEMA = pa.schema([f for f in SIDE_FILE_SCHEMA if f.name != "kind"])


#: rows per Arrow batch a file is cut into
_CHUNK = 1 << 18
#: rows an engine is fed at once (at least; Spark hands over 65,536): the partial matches
#: carried from one batch to the next cost the kernel per batch, so with many keys bigger is
#: faster — filter, 100,000 keys, 4M events in-process: 0.58M events/s at 2^18, 1.15M at
#: 2^20, 1.49M at 2^21; at 64 keys no change (docs/spark.md)
FEED_ROWS = 1 << 20
#: ... and at least this many rows per partial match carried after the last feed, up to
#: :data:`MAX_FEED_ROWS`: each carried partial match costs the kernel per batch (filter,
#: 100,000 keys, one engine: ~73,000 carried; in-process 0.76-0.86M -> 1.17-1.30M events/s)
CARRY_ROWS = 64
MAX_FEED_ROWS = 1 << 22


class PartitionWarning(UserWarning):
    """A pattern group runs as one partition; the message says why."""


@dataclass
class Prepared:
    """Events in cepflow's column layout, and the records that were not events."""

    events: DataFrame
    rejected: DataFrame
    arity: int
    groups: list[Group]
    #: the largest timestamp of the input, if summarised (``total`` known; else computed
    #: when needed)
    horizon: float | None = None
    #: the event columns that hold values (None: unknown); only these go to the engines
    columns: list[str] | None = None
    #: the number of events, when the input was summarised while it was read
    total: int | None = None

    def count_events(self) -> int:
        """The number of events (from the summary when there is one, else a Spark job)."""
        return self.total if self.total is not None else self.events.count()


def _with_keys(batch: pa.RecordBatch, groups: list[Group],
               columns: list[str] | None = None, keys: bool = True) -> pa.RecordBatch:
    """Events of the layout and their ``at`` (:func:`_file_events`; null if missing) as
    prepared rows: each group's partition key (``k{gi}``; null unless ``keys`` — only
    streaming shards by it, the batch job hashes the key slots in the JVM,
    :func:`~cepflow.spark.columns.partition_hash`), kind ``event`` and null rejection columns;
    with ``columns``, those event columns only (then ``fi`` is the file's number, see
    :func:`file_parser`)."""
    n = batch.num_rows
    if columns is not None:
        return pa.RecordBatch.from_arrays([batch.column(c) for c in columns], names=columns)
    if "at" not in batch.schema.names:
        batch = batch.append_column("at", pa.nulls(n, pa.int64()))
    kcols = [key_column(batch, g.key) if keys else pa.nulls(n, pa.string()) for g in groups]
    knames = [f"k{gi}" for gi in range(len(groups))]
    cols = list(batch.columns) + kcols
    names = list(batch.schema.names) + knames
    cols.append(constant("event", n))
    names.append("kind")
    for f in REJECTED_SCHEMA:
        cols.append(pa.nulls(n, f.type))
        names.append(f.name)
    return pa.RecordBatch.from_arrays(cols, names=names)


def _named_ids(events: pa.Table, name: str) -> pa.Table:
    """Ids ``NAME:N`` for the events without one, N their position in the file (a folder is
    not numbered across files: :mod:`cepflow.inputs.files`)."""
    missing = pc.and_(pc.is_null(events["id_s"]), pc.is_null(events["id_i"]))
    if not pc.any(missing).as_py():
        return events
    named = pc.binary_join_element_wise(name, events["seq"].cast(pa.string()), ":")
    return events.set_column(events.schema.get_field_index("id_s"), "id_s",
                             pc.if_else(missing, named, events["id_s"]))


def _prepared_schema(arity: int, groups: list[Group]) -> pa.Schema:
    """Parsed rows: an event's layout columns, ``at`` (the line or row of its record, for a
    late report) and its keys; kind ``event``, ``rejected`` (the record's columns filled) or,
    in a summary, ``file``."""
    fields = [*event_schema(arity), pa.field("at", pa.int64())]
    fields += [pa.field(f"k{gi}", pa.string()) for gi in range(len(groups))]
    fields.append(pa.field("kind", pa.string()))
    fields += list(REJECTED_SCHEMA)
    return pa.schema(fields)


def _rejected_batch(rows: list[Rejected], schema: pa.Schema) -> pa.RecordBatch:
    data: dict[str, list[Any]] = {f.name: [None] * len(rows) for f in schema}
    data["kind"] = ["rejected"] * len(rows)
    data["source"] = [r.source for r in rows]
    data["location"] = [r.location for r in rows]
    data["reason"] = [r.reason for r in rows]
    data["field"] = [r.field for r in rows]
    data["record"] = [record_text(r.record) for r in rows]
    return pa.RecordBatch.from_pydict(data, schema=schema)


def _file_events(content: bytes, local: str, suffix: str, reader: Callable[..., Any],
                 schemas: Any, arity: int, opts: dict[str, Any], named: bool = False,
                 shown: str | None = None) -> tuple[list[pa.RecordBatch], list[Rejected]]:
    """One file's events in the layout (columnar fast path, else the located reader), each
    with ``at``, the line or row of its record (a late event is reported where it was read),
    and its rejected records (named ``shown``, the file as the user named it; default
    ``local``). ``named``: events without an id get ``NAME:N``."""
    fast = read_columns(content, suffix, schemas, arity, local, **opts)
    if fast is not None:  # every record accepted: record N is line N + 1 (no blank line) / row N
        if named:
            fast = _named_ids(fast, Path(local).name)
        seq = fast.column("seq")
        fast = fast.append_column("at", pc.add(seq, 1) if location_unit(local) == "line"
                                  else seq)
        return fast.to_batches(max_chunksize=_CHUNK), []
    side = SideChannel()
    cursor = Cursor()
    events: list[Event] = []
    ats: list[int | None] = []
    with tempfile.NamedTemporaryFile(suffix=suffix) as tmp:
        tmp.write(content)
        tmp.flush()
        for e in reader(tmp.name, schemas, side, source=shown or local, cursor=cursor,
                        **opts):
            events.append(e)
            ats.append(cursor.at)
    if named:
        base = Path(local).name
        for e in events:
            if e.id is None:
                e.id = f"{base}:{e.seq}"
    batches = [encode(events[i:i + _CHUNK], arity, [None] * len(events[i:i + _CHUNK]),
                      [local] * len(events[i:i + _CHUNK]))
               .append_column("at", pa.array(ats[i:i + _CHUNK], pa.int64()))
               for i in range(0, len(events), _CHUNK)]
    return batches, side.malformed


def shown_names(source: str | os.PathLike[str]) -> Callable[[str], str]:
    """How a file of ``source`` (as Spark lists it: :func:`_local_path`) is named in reports:
    as the in-process reader names it — the path given, joined with the file's path inside it
    (Spark lists absolute paths); other file systems' paths as they are."""
    scheme = urlsplit(os.fspath(source)).scheme
    if len(scheme) > 1 and scheme != "file":
        return str
    return _Shown(Path(_local_path(os.fspath(source))))


class _Shown:
    """:func:`shown_names` of a local ``given`` path (a picklable function)."""

    def __init__(self, given: Path) -> None:
        self.given, self.absolute = given, os.path.abspath(given)

    def __call__(self, local: str) -> str:
        inside = os.path.relpath(local, self.absolute)
        if inside == ".":
            return os.fspath(self.given)
        return local if inside.startswith("..") else os.fspath(self.given / inside)


def file_rows(files: DataFrame, source: str | os.PathLike[str]) -> DataFrame:
    """The ``binaryFile`` rows of ``source`` that :func:`file_parser` needs: without the
    ``content`` column when ``source`` is a local folder or file, so each task reads its files
    itself instead of Spark reading them and shipping the bytes through Arrow (67 MB: 0.70 s →
    0.22 s, docs/spark.md); Spark's ``binaryFile`` source then skips the contents. Other
    file systems (``hdfs:``, ``s3a://``, ``dbfs:/``, …) keep Spark's reader."""
    scheme = urlsplit(os.fspath(source)).scheme
    if len(scheme) > 1 and scheme != "file":  # (one letter: a Windows drive)
        return files
    return files.select("path")


def _local_path(fpath: str) -> str:
    """The file name a ``binaryFile`` path stands for, as the in-process reader reports it."""
    local = fpath[len("file:"):] if fpath.startswith("file:") else fpath
    while local.startswith("//"):
        local = local[1:]
    return local


def file_parser(program: Program, groups: list[Group], arity: int,
                reader_options: Mapping[str, Any],
                streaming: bool = False, *, output: str = "all",
                offsets: Mapping[str, int] | None = None, columns: list[str] | None = None,
                named: bool | None = None, shown: Callable[[str], str] = str
                ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The mapInArrow function that turns ``binaryFile`` rows (path, content) into events and
    rejected records with cepflow's readers (each file through the columnar fast path of
    :func:`cepflow.inputs.columnar.read_columns` when it can decide the file, else through the
    located reader). ``named`` (default: ``streaming``): events without an id get the id
    ``NAME:N`` (a folder is not numbered across files); ``shown`` names a file in the
    rejected records (:func:`shown_names`).

    ``output``: ``"all"`` — event rows (kind ``event``; the key columns ``k{gi}`` filled only
    when ``streaming``) and rejected rows (``rejected``);
    ``"events"`` — event rows only, their ``seq`` shifted by ``offsets[file]``, with just the
    event ``columns`` (``fi``: the file's place in ``offsets``), no keys;
    ``"summary"`` — per file one row of kind ``file`` (``file``, ``seq`` = its number of
    events, ``ts`` = its largest timestamp, ``record`` = the JSON list of the event columns
    that hold a value) and the rejected rows, no events."""
    schema = _prepared_schema(arity, groups)
    number_of = {f: i for i, f in enumerate(offsets or {})}  # a file's number (the fi column)

    def parse(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for local, events, bad in parsed_files(batches, program, arity, reader_options,
                                               streaming if named is None else named, shown):
            if output == "summary" and events is not None:
                n = sum(b.num_rows for b in events)
                top = max((pc.max(b.column("ts")).as_py() for b in events if b.num_rows),
                          default=None)
                used = sorted({f for b in events for f, c in zip(b.schema.names, b.columns,
                                                                  strict=True)
                               if c.null_count < len(c)})
                yield fill(schema, 1, {"kind": ["file"], "file": [local], "seq": [n],
                                       "ts": [top], "record": [json.dumps(used)]})
            elif events is not None:
                shift = (offsets or {}).get(local, 0)
                for b in events:
                    if shift:
                        b = b.set_column(b.schema.get_field_index("seq"), "seq",
                                         pc.add(b.column("seq"), shift))
                    if columns is not None and "fi" in columns:
                        fi = np.full(b.num_rows, number_of[local])
                        b = b.append_column("fi", pa.array(fi))
                    yield _with_keys(b, groups, columns, keys=streaming)
            if bad and output != "events":
                yield _rejected_batch(bad, schema)

    return parse


def parsed_files(batches: Iterator[pa.RecordBatch], program: Program, arity: int,
                 reader_options: Mapping[str, Any], named: bool = False,
                 shown: Callable[[str], str] = str
                 ) -> Iterator[tuple[str, list[pa.RecordBatch] | None, list[Rejected]]]:
    """Per ``binaryFile`` row (path, optional content) the file's local path, its events in the
    layout with ``at`` (None: not an event file; :func:`_file_events`) and its rejected records
    (the file named ``shown(path)``); files named ``_*`` or ``.*`` are skipped, as Spark's file
    sources do."""
    for batch in batches:
        paths = batch.column("path").to_pylist()
        contents = (batch.column("content").to_pylist()
                    if "content" in batch.schema.names else [None] * len(paths))
        for fpath, content in zip(paths, contents, strict=True):
            local = _local_path(fpath)
            suffix = Path(local).suffix.lower()
            if Path(local).name.startswith(("_", ".")):
                continue
            reader = READERS.get(suffix)
            if reader is None:
                yield local, None, [Rejected(shown(local), "file", UNSUPPORTED)]
                continue
            if content is None:  # a local file, read here rather than shipped by Spark
                content = Path(local).read_bytes()
            events, bad = _file_events(content, local, suffix, reader, program.schemas, arity,
                                       options_for(reader, reader_options), named,
                                       shown(local))
            yield local, events, bad


def fill(schema: pa.Schema, n: int, columns: Mapping[str, Any]) -> pa.RecordBatch:
    """A batch of ``schema`` with the given columns and nulls elsewhere."""
    arrays = []
    for f in schema:
        v = columns.get(f.name)
        if v is None:
            arrays.append(pa.nulls(n, f.type))
        elif isinstance(v, pa.Array | pa.ChunkedArray):
            arrays.append(v.cast(f.type) if v.type != f.type else v)
        else:
            arrays.append(pa.array(v, f.type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def longs(value: int, n: int) -> pa.Array:
    """An int64 column of ``n`` copies of ``value``."""
    return pa.array(np.full(n, value, dtype=np.int64))


def _has_timers(program: Program, groups: list[Group]) -> bool:
    """Whether a pattern of the groups has a window (timed zone), or a window statement a
    window that time moves: then the end of the input's time (the horizon) decides matches."""
    names = {n for g in groups for n in g.patterns}
    return any(a.zones for a in program.automata if a.name in names) or any(
        w.window.kind in TIMED_WINDOWS for w in program.windows if w.name in names)


def read_events(spark: SparkSession, path: str | os.PathLike[str], program: Program,
                **reader_options: Any) -> Prepared:
    """Read a file or a folder of JSON Lines / CSV / Parquet event files, one task per file.

    Events are numbered across files (files by name, in order; in a folder, events without an
    id are named ``NAME:N`` as in-process: :mod:`cepflow.inputs.files`) and the input's
    last timestamp is the time every window sees pass at the end: both need each file's event
    count and largest timestamp, so with several files, or patterns with windows, a first job
    reads the files for that summary and the rejected records (it returns no events, and the
    rejected records are kept on the driver); the events are read again, lazily, by the
    detection job. Otherwise nothing runs until the events are used."""
    groups = plan(program)
    arity = arity_of(program.schemas)
    ddl = spark_ddl(_prepared_schema(arity, groups))
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{path}: no such file or folder")
    files = file_rows(spark.read.format("binaryFile").load(str(p)), p)
    # a folder's events without an id are named NAME:N; files are named as given
    naming: dict[str, Any] = {"named": p.is_dir(), "shown": shown_names(p)}
    if len(files.inputFiles()) < 2 and not _has_timers(program, groups):
        parsed = files.mapInArrow(file_parser(program, groups, arity, reader_options,
                                              **naming), ddl)
        return Prepared(parsed.where(F.col("kind") == "event"),
                        parsed.where(F.col("kind") == "rejected").select(*REJECTED_SCHEMA.names),
                        arity, groups)
    rows = files.mapInArrow(file_parser(program, groups, arity, reader_options,
                                        output="summary", **naming), ddl).collect()
    offsets, total, horizon = {}, 0, None
    used: set[str] = {"type", "ts", "seq"}
    for r in sorted((r for r in rows if r["kind"] == "file"), key=lambda r: r["file"]):
        offsets[r["file"]] = total
        total += r["seq"]
        used.update(json.loads(r["record"]))
        if r["ts"] is not None and (horizon is None or r["ts"] > horizon):
            horizon = r["ts"]
    rejected = spark.createDataFrame(
        [tuple(r[c] for c in REJECTED_SCHEMA.names) for r in rows if r["kind"] == "rejected"],
        spark_ddl(REJECTED_SCHEMA))
    # only the columns that hold values travel; the file name is looked up by number
    layout = event_schema(arity)
    columns = [f.name for f in layout if f.name in used and f.name not in ("file", "key")]
    narrow = pa.schema([layout.field(c) for c in columns] + [pa.field("fi", pa.int64())])
    read = files.mapInArrow(file_parser(program, groups, arity, reader_options,
                                        output="events", offsets=offsets,
                                        columns=[*columns, "fi"], **naming), spark_ddl(narrow))
    names = F.array(*[F.lit(f) for f in offsets]) if offsets else F.array().cast("array<string>")
    full = {f.name: F.lit(None).cast(spark_type(f.type)) for f in layout}
    full.update({c: F.col(c) for c in columns})
    full["file"] = F.element_at(names, F.col("fi").cast("int") + 1)
    events = read.select(*[full[f.name].alias(f.name) for f in layout])
    return Prepared(events, rejected, arity, groups, horizon, columns=columns, total=total)


def prepare(df: DataFrame, program: Program, **reader_options: Any) -> Prepared:
    """Events from a DataFrame with columns ``type``, ``ts``, optional ``id`` and ``seq``, and
    one column per parameter name. Rows are checked by the same record rules as files
    (``reader_options`` as :class:`cepflow.inputs.RecordConverter`'s; ids are not checked
    for duplicates: a DataFrame is not a file); a row that breaks them goes to ``rejected``
    with its reason. Without a ``seq`` column rows are numbered in the DataFrame's order
    (``monotonically_increasing_id``)."""
    groups = plan(program)
    arity = arity_of(program.schemas)
    schema = _prepared_schema(arity, groups)
    if "seq" not in df.columns:
        df = df.withColumn("seq", F.monotonically_increasing_id())
    convert = RecordConverter(program.schemas, unique_ids=False, **reader_options)
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
                    bad.append(Rejected("<dataframe>", f"row seq {seqs[r]}", exc.reason,
                                        record, exc.field))
            if events:
                enc = encode(events, arity, [None] * len(events), [None] * len(events))
                yield _with_keys(enc, groups, keys=False)
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
    horizon = prepared.horizon
    if prepared.total is None and _has_timers(program, prepared.groups):
        horizon = prepared.events.agg(F.max("ts").alias("h")).collect()[0]["h"]
    arities = {t: len(s.params) for t, s in program.schemas.items()}
    arity = prepared.arity
    source = prepared.events
    if len(prepared.groups) > 1:  # read the input once for all groups
        source = source.persist()
    # the engine's columns only: the file name, free key and rejection columns stay behind
    columns = prepared.columns or [f.name for f in event_schema(arity)
                                   if f.name not in ("file", "key")]
    outs: list[DataFrame] = []
    warn_unpartitioned(prepared.groups, stacklevel=3)
    for group in prepared.groups:
        sub = subprogram(program, group)
        events = group_rows(source, group.types).select(*columns)
        if group.partitioned:  # hashed in the JVM: no key column travels
            events = events.repartition(n, partition_hash(group.key, columns, group.types))
        else:
            events = events.repartition(1)
        events = events.sortWithinPartitions("ts", "seq")
        run = match_runner(sub, actions_for(sub, actions or {}), arities, arity, horizon,
                           close_windows)
        outs.append(events.mapInArrow(run, spark_ddl(MATCH_SCHEMA)))
    if not outs:
        return spark.createDataFrame([], spark_ddl(MATCH_SCHEMA))
    result = outs[0]
    for o in outs[1:]:
        result = result.unionByName(o)
    return result


def warn_unpartitioned(groups: list[Group], stacklevel: int = 2) -> None:
    """A :class:`PartitionWarning` per group that runs as one partition, with the reason."""
    for group in groups:
        if not group.partitioned:
            warnings.warn(f"patterns {', '.join(group.patterns) or '(rules only)'} run as one "
                          f"partition: {group.reason}", PartitionWarning, stacklevel=stacklevel)


def actions_for(sub: Program, actions: Mapping[str, Any]) -> dict[str, Any]:
    """The actions ``sub``'s rules name: only those are shipped to the workers (an unrelated
    registered action may live in a module the workers cannot import)."""
    names = {r.action for r in sub.rules}
    return {n: f for n, f in actions.items() if n in names}


def match_runner(sub: Program, actions: dict[str, Any], arities: Mapping[str, int], arity: int,
                 horizon: float | None, close_windows: bool
                 ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The mapInArrow function of one pattern group: one engine over a partition's events in
    (ts, seq) order; complex events out. Column batches go straight to the engine's batch
    path when it applies (:attr:`Engine.columnar`), else they become events."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        # (a DataFrame of matches has no side output: an evaluation error fails the job with
        # its located message, as a malformed row does in detect(); replay() writes them)
        feeder = Feeder(Engine(sub, actions=actions, strict_actions=False, on_error="fail"),
                        arities, arity)
        for batch in batches:
            yield from feeder.add(batch)
        yield from feeder.end(horizon, close_windows=close_windows)
        if feeder.failed is not None:
            raise feeder.failed

    return run


def feed(engine: Engine, columnar: bool, batch: pa.RecordBatch, arities: Mapping[str, int],
         arity: int) -> pa.RecordBatch | None:
    """Feed a time-ordered batch of event rows to ``engine``: straight from the columns when
    ``columnar`` (:attr:`Engine.columnar`), else as events; the match rows found, if any."""
    if columnar:
        rows = ArrowRows(batch, arities, arity)
        try:
            table = engine.process_columns(rows)
        except Declined:  # (a filter failed on a row: the batch goes event by event)
            pass
        else:
            return encode_match_table(table, rows) if table.count else None
    found = engine.process_batch(decode(batch, arities, arity))
    return match_batch(found) if found else None


class Feeder:
    """An engine fed its time-ordered event batches :data:`FEED_ROWS` rows or more at a time
    (Spark hands over 65,536; the partial matches carried from one batch to the next cost the
    kernel per batch, so the feed grows with them: :data:`CARRY_ROWS`). :meth:`add` and
    :meth:`flush` yield the match rows found (MATCH_SCHEMA)."""

    def __init__(self, engine: Engine, arities: Mapping[str, int], arity: int) -> None:
        self.engine, self.arities, self.arity = engine, arities, arity
        self.held: list[pa.RecordBatch] = []
        self.rows = 0
        self.target = FEED_ROWS  # rows to hold before the next feed
        #: the engine stopped the run (an evaluation error under ``on_error="fail"``, more
        #: partial matches than ``max_partial_matches``): nothing more is fed
        self.failed: RunStopped | None = None

    def add(self, batch: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
        """Hold ``batch``; feed what is held once it reaches the target: :data:`FEED_ROWS`
        rows, more with many partial matches carried (:data:`CARRY_ROWS`)."""
        if batch.num_rows and self.failed is None:
            self.held.append(batch)
            self.rows += batch.num_rows
        if self.rows >= self.target:
            yield from self.flush()

    def flush(self) -> Iterator[pa.RecordBatch]:
        """Feed what is held (before the engine's time moves on by other means)."""
        if not self.held:
            return
        batch = pa.Table.from_batches(self.held).combine_chunks().to_batches()[0]
        self.held, self.rows = [], 0
        try:
            found = feed(self.engine, self.engine.columnar, batch, self.arities, self.arity)
        except RunStopped as err:
            yield from self._stopped(err)
            return
        carried = sum(self.engine.partial_matches().values())
        self.target = min(MAX_FEED_ROWS, max(FEED_ROWS, CARRY_ROWS * carried))
        if found is not None:
            yield found

    def _stopped(self, err: RunStopped) -> Iterator[pa.RecordBatch]:
        """The engine stopped the run: what it found until then, and no more."""
        self.failed = err
        self.held, self.rows = [], 0
        if err.complex_events:
            yield match_batch(err.complex_events)

    def end(self, until: float | None, *, finish: bool = True,
            close_windows: bool = False) -> Iterator[pa.RecordBatch]:
        """Feed what is held, move the engine's time to ``until`` (None or -inf: not at all;
        window deadlines before it fire) and, with ``finish``, end its input; the match rows
        found on the way."""
        yield from self.flush()
        if self.failed is not None:
            return
        engine = self.engine
        try:
            tail = engine.advance_to(until) if until is not None and until > -math.inf else []
            if finish:
                tail += engine.finish(close_windows=close_windows)
        except RunStopped as err:
            yield from self._stopped(err)
            return
        if tail:
            yield match_batch(tail)


def error_rows(records: list[Rejected]) -> list[list[Any]]:
    """Error records (kind ``error``) as rows of :data:`REJECTED_SCHEMA`, the event they
    failed on as JSON text; ``records`` is emptied."""
    rows = [[r.source, r.location, r.reason, r.field, record_text(r.record)] for r in records]
    records.clear()
    return rows


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


def write_matches(matches: DataFrame, path: str | os.PathLike[str], *,
                  written: Callable[[], int] | None = None, stdout: TextIO | None = None
                  ) -> int:
    """Write complex events in the format the extension of ``path`` names
    (:mod:`cepflow.outputs.files`): ``.jsonl`` or ``.csv`` (or ``-``, standard output) → one
    file, the rows streamed to the driver in timestamp order and written in the one encoding of
    :mod:`cepflow.outputs.records`; ``.parquet`` or a path without such an extension → a
    Parquet folder written by Spark. Returns the number written — for a Parquet folder
    ``written()`` once the write is done if given (an accumulator the job filled), else the
    folder read back."""
    target = os.fspath(path)
    suffix = Path(target).suffix.lower()
    if target == STDOUT or suffix in (".jsonl", ".ndjson", ".json", ".csv"):
        ordered = matches.orderBy("ts", "pattern", "events")
        with MatchFile(target, stdout=stdout) as out:
            rows = ordered.toLocalIterator()
            while chunk := [r.asDict() for r in itertools.islice(rows, 4096)]:
                out.write(pa.RecordBatch.from_pylist(chunk, schema=MATCH_SCHEMA))
        return out.count
    matches.write.mode("overwrite").parquet(target)
    if written is not None:
        return written()
    return matches.sparkSession.read.parquet(target).count()


def write_rejected(rejected: DataFrame, path: str | os.PathLike[str]) -> int:
    """The side channel (:attr:`Prepared.rejected`) as a side file (one JSON Lines file, in
    source order; none, and an earlier one removed, for no records)."""
    rows = rejected.orderBy("source", "location").collect()
    return write_rejected_rows([{k: r[k] for k in REJECTED_SCHEMA.names} for r in rows], path)


def write_rejected_rows(rows: list[dict[str, Any]], path: str | os.PathLike[str],
                        kind: str = "malformed") -> int:
    """Rejected records (dicts of :data:`REJECTED_SCHEMA`'s fields, all of one ``kind``) as the
    side file, in the order given (:func:`cepflow.outputs.write_side_file`: none, and an earlier
    one removed, for no records). Returns the number written."""
    batch = pa.RecordBatch.from_pylist([{"kind": kind, **r} for r in rows],
                                       schema=SIDE_FILE_SCHEMA)
    return write_side_file(batch, path)
