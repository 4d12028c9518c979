"""Batch replay of event files in one Spark job: files in, complex events and rejected
records out (what ``cepflow run --engine spark`` and the benchmark do).

:func:`cepflow.spark.dataframes.read_events` +
:func:`~cepflow.spark.dataframes.detect_prepared` need two jobs when events are numbered
across files or windows need the input's last timestamp: a summary job reads every file for its
event count and largest timestamp, then the detection job reads them again. Here the files are
parsed once, inside the job that writes the complex events (docs/spark.md, "One job"):

* Each map task parses its files (:func:`cepflow.spark.dataframes.parsed_files`) and emits every
  event once per pattern group that reads its type (``g``, with several groups), its ``seq``
  packing its file's number (files by name, as in-process) and its position in the file
  (:data:`FILE_SHIFT`). The columns that travel are those the groups' event types can fill
  (:func:`cepflow.spark.partitioning.fillable_columns`).
* It ends with *summary rows* — per file it read, its event count and largest timestamp, as
  JSON in ``type`` — sent to every partition. They have a null ``ts``, so they sort before the
  events; their ``seq`` is the target partition, mapped to a value Spark's hash partitioning
  sends there (:func:`cepflow.spark.columns.route_values`).
* Events are partitioned by a JVM hash of the group's key (:func:`cepflow.spark.columns.
  partition_hash`) and sorted by (ts, seq) — the in-process order. Each partition's runner
  first reads all summary rows, so it knows every file's offset in the input numbering and the
  input's last timestamp (the horizon windows see pass) before it feeds its first event.
* The driver learns each file's event count and rejected records through an accumulator keyed
  by file (:class:`_Merged`): a re-run task adds the same entries again, so the result is the
  same under retries. Nothing is cached: caching the job's result for a second look (measured:
  gesture, 10M events) made the sort spill 0.9 GB and cost more than the summary job it saved.

The input, its events' names (``NAME:N`` in a folder), the rejected records and the outputs are
those of the in-process job, :func:`cepflow.replay.replay`, which returns the same
:class:`~cepflow.replay.Replayed` (docs/formats.md).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark import TaskContext
from pyspark.accumulators import Accumulator, AccumulatorParam
from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F

from cepflow.compiler.program import Program
from cepflow.events.event import SideChannel
from cepflow.inputs.columnar import arity_of, parquet_columns
from cepflow.inputs.files import check_options, input_files
from cepflow.outputs.files import check_writable, write_side_file
from cepflow.outputs.records import record_text
from cepflow.replay import Replayed, side_path
from cepflow.runtime.engine import Engine
from cepflow.spark.columns import (
    MATCH_SCHEMA,
    event_fields,
    group_selector,
    partition_hash,
    route_values,
    routed_to,
    spark_ddl,
)
from cepflow.spark.dataframes import (
    REJECTED_SCHEMA,
    SIDE_FILE_SCHEMA,
    Feeder,
    _local_path,
    actions_for,
    error_rows,
    file_rows,
    fill,
    longs,
    parsed_files,
    shown_names,
    warn_unpartitioned,
    write_matches,
)
from cepflow.spark.partitioning import Group, fillable_columns, plan, read_types, subprogram

#: ``g`` of a file's summary row (events have their group's number)
SUMMARY = -1
#: event columns every row carries (the engine's order and clock: every event has them)
ALWAYS = ("type", "ts", "seq")
#: ``seq`` in the shuffle is ``file number << FILE_SHIFT | position in the file``: sorting by
#: (ts, seq) is the in-process order, and no file column travels
FILE_SHIFT = 40


class _Merged(AccumulatorParam):
    """A dict accumulator merged by key (per file ``[events, rejected records]``, per output
    partition its complex events by pattern): entries a re-run task adds again change
    nothing."""

    def zero(self, value: dict[str, Any]) -> dict[str, Any]:
        return {}

    def addInPlace(self, value1: dict[str, Any], value2: dict[str, Any]) -> dict[str, Any]:
        value1.update(value2)
        return value1


def _row_fields(arity: int, columns: list[str], groups: int) -> list[pa.Field]:
    """What the parse sends through the shuffle: the group number ``g`` (with several groups)
    and the event ``columns`` (in layout order). A summary row has a null ``ts``, its text in
    ``type`` and its target partition in ``seq``."""
    return [*([pa.field("g", pa.int64())] if groups > 1 else []),
            *[f for f in event_fields(arity) if f.name in columns]]


def _routed(program: Program, groups: list[Group], arity: int, columns: list[str],
            numbers: Mapping[str, int], partitions: int, by_file: Accumulator[dict[str, Any]],
            reader_options: Mapping[str, Any] | None = None, named: bool = False,
            shown: Callable[[str], str] = str
            ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The mapInArrow function over ``binaryFile`` rows: events per group that reads them, then
    the task's summary rows to every partition; counts and rejected records to ``by_file``.
    ``named``, ``shown``: :func:`cepflow.spark.dataframes.file_parser`'s."""
    schema = pa.schema(_row_fields(arity, columns, len(groups)))
    by_group = group_selector([g.types for g in groups])
    several = len(groups) > 1
    # the layout's other value columns: a value there would be lost, so the task stops
    left_out = [f.name for f in event_fields(arity)
                if f.name not in columns and f.name not in ("file", "key")]

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        summary: list[list[Any]] = []
        for local, events, bad in parsed_files(batches, program, arity, reader_options or {},
                                               named, shown):
            n, top = 0, None
            for b in events or []:
                if not b.num_rows:
                    continue
                n += b.num_rows
                lost = [c for c in left_out if b.column(c).null_count < b.num_rows]
                if lost:
                    raise RuntimeError(f"{local}: values in column(s) {', '.join(lost)}, which "
                                       "the replay did not expect from the files' schemas")
                m = pc.max(b.column("ts")).as_py()
                top = m if top is None else max(top, m)
                b = b.set_column(b.schema.get_field_index("seq"), "seq", pc.add(
                    b.column("seq"), numbers[local] << FILE_SHIFT))
                for gi, sel in by_group(b):
                    cols: dict[str, Any] = {c: sel.column(c) for c in columns}
                    if several:
                        cols["g"] = longs(gi, sel.num_rows)
                    yield fill(schema, sel.num_rows, cols)
            if events is not None:
                summary.append([numbers[local], n, top])
            by_file.add({local: [n, [[r.source, r.location, r.reason, r.field,
                                      record_text(r.record)] for r in bad]]})
        if summary:
            text = json.dumps(summary)
            cols = {"type": [text] * partitions,
                    "seq": pa.array(np.arange(partitions, dtype=np.int64))}
            if several:
                cols["g"] = longs(SUMMARY, partitions)
            yield fill(schema, partitions, cols)

    return run


def _runner(subs: list[Program], actions: dict[str, Any], arities: dict[str, int], arity: int,
            columns: list[str], files: int, close_windows: bool,
            written: Accumulator[dict[int, Any]], options: dict[str, Any] | None = None
            ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The mapInArrow function of a partition sorted by (ts, seq): summary rows (null ts)
    first, then events; one engine per group present, each fed its events in order; complex
    events out. Added to ``written`` under the partition's index (so the output need not be
    read back to be counted): the complex events by pattern, the engines' error records and
    why an engine stopped the run (the engines' ``options``: ``on_error``,
    ``max_partial_matches``; docs/semantics.md)."""
    event_cols = [f.name for f in event_fields(arity) if f.name in columns]
    several = len(subs) > 1

    def counted(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        n: dict[str, int] = {}
        feeders: dict[int, Feeder] = {}
        for b in run(batches, feeders):
            for p in pc.value_counts(b.column("pattern")).to_pylist():
                n[p["values"]] = n.get(p["values"], 0) + p["counts"]
            yield b
        task = TaskContext.get()
        errors = [r for gi in sorted(feeders) for r in error_rows(feeders[gi].engine.errors)]
        stopped = [[type(f.failed).__name__, str(f.failed)] for f in feeders.values()
                   if f.failed is not None]
        written.add({task.partitionId() if task is not None else 0: [n, errors, stopped]})

    def run(batches: Iterator[pa.RecordBatch], feeders: dict[int, Feeder]
            ) -> Iterator[pa.RecordBatch]:
        """(``feeders``: per group present in the partition, filled here)"""
        counts = np.zeros(files, dtype=np.int64)
        horizon = -math.inf
        offsets: np.ndarray | None = None

        for batch in batches:
            if not batch.num_rows:
                continue
            meta = batch.column("ts").null_count  # summary rows (null ts) lead the partition
            if meta:
                for text in batch.column("type").slice(0, meta).to_pylist():
                    for fi, n, top in json.loads(text):
                        counts[fi] = n
                        if top is not None:
                            horizon = max(horizon, top)
                if meta == batch.num_rows:
                    continue
            events = batch.slice(meta)
            if offsets is None:  # every summary row came first: the input numbering is known
                offsets = np.cumsum(counts) - counts
            packed = events.column("seq").to_numpy()
            seq = pa.array(offsets[packed >> FILE_SHIFT] + (packed & ((1 << FILE_SHIFT) - 1)))
            eg = events.column("g").to_numpy() if several else None
            for gi in (np.unique(eg).tolist() if eg is not None else [0]):
                cols = [seq if c == "seq" else events.column(c) for c in event_cols]
                if eg is not None:
                    mask = pa.array(eg == gi)
                    cols = [pc.filter(c, mask) for c in cols]
                feeder = feeders.get(gi)
                if feeder is None:
                    feeder = feeders[gi] = Feeder(
                        Engine(subs[gi], actions=actions, strict_actions=False,
                               **(options or {})), arities, arity)
                yield from feeder.add(pa.RecordBatch.from_arrays(cols, names=event_cols))
        for gi in sorted(feeders):
            yield from feeders[gi].end(horizon, close_windows=close_windows)

    return counted


def replay(spark: SparkSession, path: str | os.PathLike[str], program: Program,
           output: str | os.PathLike[str], rejected: str | os.PathLike[str] | None = None, *,
           actions: Mapping[str, Callable[..., Any]] | None = None,
           close_windows: bool = False, partitions: int | None = None,
           reader_options: Mapping[str, Any] | None = None, on_error: str = "skip",
           max_partial_matches: int | None = None) -> Replayed:
    """Complex events of ``program`` over a file or folder of JSON Lines / CSV / Parquet event
    files, written to ``output`` (:func:`cepflow.spark.dataframes.write_matches`: ``.jsonl``,
    ``.csv``, ``-`` or a Parquet folder), and the rejected records to the side file
    ``rejected`` (:func:`cepflow.replay.side_path`; none, and an earlier one removed, when
    there are none), in one Spark job (module docstring). ``reader_options`` as for
    :func:`cepflow.inputs.read_events`. A missing input, an input file that is not an event
    file (:class:`~cepflow.inputs.InputError`) or a side file that cannot be written
    (:class:`~cepflow.outputs.OutputError`) is refused before the job. Evaluation errors are
    rejected records of kind ``error``; ``on_error="fail"`` stops each engine at its first,
    and ``max_partial_matches`` an engine holding more (docs/semantics.md; the engines that
    stopped are in :attr:`Replayed.stopped`)."""
    groups = plan(program)
    arity = arity_of(program.schemas)
    options = dict(reader_options or {})
    check_options(options)
    p = Path(path)
    input_files(p, SideChannel())  # (a folder's entries that are not event files: the job's)
    target = side_path(output, rejected)
    if target is not None:
        check_writable(target)
    n = partitions or int(spark.conf.get("spark.sql.shuffle.partitions") or 2)
    warn_unpartitioned(groups, stacklevel=3)
    files = file_rows(spark.read.format("binaryFile").load(str(p)), p)
    names = sorted(_local_path(f) for f in files.inputFiles())
    numbers = {f: i for i, f in enumerate(names)}
    if "content" not in files.columns and len(names) > n:
        # one parse task per core: Spark splits the path rows by file size (3 tasks for 40
        # files of 19 MB on 2 cores, the third alone); shuffling 40 paths costs nothing
        files = files.repartition(n)
    # (in a folder, events without an id get one: NAME:N)
    fillable = _travelling(names, program, groups, arity) | ({"id_s"} if p.is_dir() else set())
    columns = [f.name for f in event_fields(arity) if f.name in ALWAYS or f.name in fillable]
    by_file = spark.sparkContext.accumulator({}, _Merged())
    if len(names) >= 1 << (63 - FILE_SHIFT):
        raise ValueError(f"{path}: {len(names)} files; at most {(1 << (63 - FILE_SHIFT)) - 1}")
    router = _routed(program, groups, arity, columns, numbers, n, by_file, options, p.is_dir(),
                     shown_names(p))
    rows = files.mapInArrow(router, spark_ddl(pa.schema(_row_fields(arity, columns,
                                                                    len(groups)))))
    rows = rows.repartition(n, _route(groups, columns, n, route_values(spark, n)))
    subs = [subprogram(program, g) for g in groups]
    arities = {t: len(s.params) for t, s in program.schemas.items()}
    written = spark.sparkContext.accumulator({}, _Merged())
    runner = _runner(subs, actions_for(program, actions or {}), arities, arity, columns,
                     len(names), close_windows, written,
                     {"on_error": on_error, "max_partial_matches": max_partial_matches})
    matches = rows.sortWithinPartitions("ts", "seq").mapInArrow(
        runner, spark_ddl(MATCH_SCHEMA))
    n_out = write_matches(matches, output, written=lambda: sum(
        k for done in written.value.values() for k in done[0].values()))
    seen = by_file.value
    missing = [f for f in names if f not in seen and not Path(f).name.startswith(("_", "."))]
    if missing:  # (cannot happen: every file row is parsed by the job that wrote the output)
        raise RuntimeError(f"files not read by the replay job: {', '.join(missing[:5])}")
    done = written.value
    rows = [{"kind": "malformed", **dict(zip(REJECTED_SCHEMA.names, r, strict=True))}
            for f in sorted(seen) for r in seen[f][1]]
    n_bad = len(rows)
    rows += [{"kind": "error", **dict(zip(REJECTED_SCHEMA.names, r, strict=True))}
             for p in sorted(done) for r in done[p][1]]
    side = pa.RecordBatch.from_pylist(rows, schema=SIDE_FILE_SCHEMA)
    if target is not None:
        write_side_file(side, target)
    by_pattern: dict[str, int] = {}
    for counts, _, _ in done.values():
        for name, k in counts.items():
            by_pattern[name] = by_pattern.get(name, 0) + k
    by_kind = {k: n for k, n in (("malformed", n_bad), ("error", len(rows) - n_bad)) if n}
    return Replayed(sum(v[0] for v in seen.values()), n_out, len(rows), groups,
                    by_kind=by_kind, by_pattern=dict(sorted(by_pattern.items())), side=side,
                    side_file=target if target is not None and rows else None,
                    errors=len(rows) - n_bad,
                    stopped=[(k, m) for p in sorted(done) for k, m in done[p][2]])


def _travelling(names: list[str], program: Program, groups: list[Group],
                arity: int) -> set[str]:
    """The optional event columns that travel: those the groups' event types can fill
    (:func:`cepflow.spark.partitioning.fillable_columns`), narrowed, when every file is a local
    Parquet file (the source is local: :func:`replay` reads a local path), to those the
    files' column types can fill (their footers,
    :func:`cepflow.inputs.columnar.parquet_columns`): an untyped parameter then ships one slot
    column, not four (each costs in the Arrow conversions, the shuffle and the sort)."""
    fillable = fillable_columns(program, groups, arity)
    if not names or any(Path(f).suffix.lower() not in (".parquet", ".pq") for f in names):
        return fillable
    import pyarrow.parquet as pq

    reads = read_types(groups)
    used: set[str] = set()
    for f in names:
        try:
            schema = pq.read_schema(f)
        except (OSError, pa.ArrowException):
            return fillable  # (the job's reader reports the file)
        used |= parquet_columns(schema, program.schemas, reads, arity)
    return used & fillable


def _route(groups: list[Group], columns: list[str], n: int, routes: list[int]) -> Column:
    """The value a row is hash-partitioned by: its target partition's route value — for an
    event the hash of its group's key (partition 0 for a group without a key), for a summary
    row (null ts) its ``seq``."""
    def target(g: Group) -> Column:
        return (F.pmod(partition_hash(g.key, columns, g.types), F.lit(n)) if g.partitioned
                else F.lit(0))

    events: Column = target(groups[0]) if groups else F.lit(0)
    for gi in range(1, len(groups)):
        events = F.when(F.col("g") == gi, target(groups[gi])).otherwise(events)
    return routed_to(F.when(F.col("ts").isNull(), F.col("seq")).otherwise(events), routes)
