"""Structured Streaming: the same patterns and engine over an unbounded folder of event files.

Design (docs/spark.md, "Streaming"): the file source and cepflow's readers run as a Spark
stream; each micro-batch is then processed by ``foreachBatch`` as a *batch job over the
batch's events plus the engine state left by the previous micro-batch*:

* **State** lives next to Spark's checkpoint, in ``CHECKPOINT/cepflow-state/batch=N``
  (Parquet): per pattern group and *shard* (a fixed hash partition of the group's key) one row
  with the engine's versioned JSON state (:mod:`cepflow.runtime.state`) and the events still
  held back for the allowed lateness. A small ``meta-N.json`` written last marks batch ``N``
  complete and carries the clocks. One engine serves all keys of a shard, so the cost of a
  micro-batch grows with its events and the live partial matches, not with the key count.
* **One job** when nothing is held back (lateness 0 now and in the previous batch): a single
  Python pass per map task parses the batch's files and routes each row once — an event to
  every pattern group that reads its type, a late event or a malformed record to the side
  output — and ends with *summary rows*, the task's largest timestamp, sent to every (group,
  shard) and to the side rows' shard, where they sort before the state and the events; each
  shard's runner so knows the batch's largest timestamp (the released time) before it feeds
  its engine. The runner of the side rows' shard returns one *clock row* (that timestamp and
  the number of side rows) to the driver. The files are parsed once, inside the detection job,
  and nothing but the (small) result is cached.
* **Narrow rows**: only the event columns that can hold a value travel through the shuffle to
  the engines and into the saved state. In one job: those the program's event types can fill
  (:func:`cepflow.inputs.columnar.slot_columns`, known before the files are read). Otherwise
  the batch's first job (over the cached parsed rows, which also takes the largest timestamp)
  counts them; the columns of the events held back in the state are listed in the meta file.
  A column that is null in every row costs in each Arrow ↔ row conversion and in the shuffle.
* **Time** is cepflow's own out-of-order policy (:func:`cepflow.inputs.reorder`) applied per
  micro-batch: the watermark is the largest timestamp seen so far minus the allowed lateness;
  events up to the watermark are released to the engines in (ts, file, position) order; later
  ones wait in the state; an event below the last released timestamp is *late* and written to
  ``rejected/`` with the reason. Window deadlines before the last released timestamp fire in
  every shard, idle or not — the global event time of the in-process engine. (Spark's own
  watermark is not used: its stateful operators drop rows behind the watermark before user
  code sees them, which would lose events silently.)
* **Exactly once**: batch ``N`` reads the state of the newest complete batch before ``N`` and
  overwrites its outputs ``matches/batch=N``, ``rejected/batch=N`` and state ``batch=N``; Spark
  re-runs an uncommitted batch with the same id and the same files, so a restart reproduces
  exactly the same output and state. The state read must be that of the batch Spark's commit
  log (``CHECKPOINT/commits``) committed last: a state behind it (files lost) or ahead of it
  stops the query with what is missing and how to recover (:class:`StreamStateError`), never
  a silent step back in time.

Output folders under ``sink``: ``matches/batch=N`` (pattern, ts, params, events) and
``rejected/batch=N`` (kind late|malformed|error, source, location, reason, field, record),
JSON Lines in Spark's part files, each line in the one encoding of every engine
(:mod:`cepflow.outputs.records`, docs/formats.md).
"""

from __future__ import annotations

import itertools
import json
import math
import os
import shutil
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from cepflow.compiler.program import Program
from cepflow.inputs.columnar import arity_of, constant
from cepflow.inputs.files import check_options, location_unit
from cepflow.inputs.ordering import late_reason
from cepflow.outputs.records import REJECTED_SCHEMA as SIDE_SCHEMA
from cepflow.outputs.records import match_lines, record_text, rejected_lines
from cepflow.runtime.engine import Engine
from cepflow.runtime.state import has_state, restore_text, state_text
from cepflow.spark.columns import (
    MATCH_SCHEMA,
    decode,
    event_fields,
    group_rows,
    group_selector,
    route_values,
    routed_to,
    spark_ddl,
    spark_type,
)
from cepflow.spark.dataframes import (
    REJECTED_SCHEMA,
    Feeder,
    _prepared_schema,
    actions_for,
    error_rows,
    file_parser,
    file_rows,
    fill,
    longs,
    shown_names,
)
from cepflow.spark.partitioning import Group, fillable_columns, plan, subprogram

STATE_DIR = "cepflow-state"
MATCH_COLS = ["pattern", "ts", "params", "events"]


#: the saved state's layout (``version`` in ``meta-N.json``): 2 — ``part`` an int code and only
#: the event columns the held-back events use (:data:`ALWAYS` and those listed as ``held``);
#: 1 — ``part`` the text "engine"/"event" and every column of the layout (read, and the next
#: state written as 2)
STATE_VERSION = 2
#: ``part`` of a shard's rows: its saved engine sorts before its events
ENGINE, EVENT = 0, 1
#: ``part`` of the rows only the one-job micro-batch has (never saved): a map task's largest
#: timestamp (sorts before a shard's state), a side-output row (its SIDE_SCHEMA record as JSON
#: in ``engine``) and the clock row the runner returns to the driver (ts, seq = side rows)
SUMMARY, SIDE, CLOCK = -1, 2, 3
#: the (group, shard) of the side rows and of the clock row: no engine runs there
SIDE_SHARD = (-1, 0)
#: event columns every shard row carries (the engine's order and clock: every event has them);
#: the others travel when an event uses them; ``key`` never travels (no engine reads it)
ALWAYS = ("type", "ts", "seq", "file")


def _layout_fields(arity: int, columns: list[str]) -> list[pa.Field]:
    """The fields of the event ``columns`` of the layout, in layout order."""
    return [f for f in event_fields(arity) if f.name in columns]


def _shard_fields(arity: int, columns: list[str]) -> list[pa.Field]:
    """Rows of the per-shard job: (group, shard, part, engine JSON) + the event ``columns``."""
    return [pa.field("g", pa.int64()), pa.field("pid", pa.int64()), pa.field("part", pa.int64()),
            pa.field("engine", pa.string()), *_layout_fields(arity, columns)]


def _out_schema(arity: int, columns: list[str]) -> pa.Schema:
    """What a shard returns: state rows (as :func:`_shard_fields`) and match rows (m_*)."""
    return pa.schema([*_shard_fields(arity, columns),
                      *[pa.field(f"m_{f.name}", f.type) for f in MATCH_SCHEMA]])


def _routed_schema(arity: int, columns: list[str]) -> pa.Schema:
    """What the one-job parse returns: shard rows (``pid`` null where Spark hashes ``k``, the
    row's key in its group) — events, side rows and summary rows."""
    return pa.schema([*_shard_fields(arity, columns), pa.field("k", pa.string())])


@dataclass(frozen=True)
class _Clock:
    """The stream's clocks after a micro-batch (None = no event yet)."""

    max_ts: float | None = None     # largest timestamp seen
    released: float | None = None   # largest timestamp released to the engines

    def watermark(self, lateness: float) -> float:
        return -math.inf if self.max_ts is None else self.max_ts - lateness

    def seen(self, top: float | None) -> _Clock:
        """The clocks once events up to ``top`` (None: none) arrived; released unchanged."""
        if top is None:
            return self
        return _Clock(top if self.max_ts is None else max(self.max_ts, top), self.released)


def _shard_runner(subs: list[Program], actions: dict[str, Any], arities: dict[str, int],
                  arity: int, columns: list[str], watermark: float, released: float,
                  options: dict[str, Any] | None = None
                  ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The mapInArrow function of one micro-batch: rows sorted by (g, pid, part, ts, file,
    seq) — per (group, shard) first its saved engine, then its events, with the event
    ``columns`` only (the others are null: :func:`cepflow.inputs.columnar.column`) — in;
    matches and the new state (the same columns) out.

    Summary rows (one job, lateness 0) sort first and raise ``watermark`` and ``released`` to
    the largest timestamp they carry; a shard with nothing but them gets no engine. The rows of
    :data:`SIDE_SHARD` are passed on, followed by one clock row. A shard whose engine recorded
    evaluation errors returns them as side rows (kind ``error``) and a clock row with a null
    ``ts``, their number in ``seq`` and, when the engine stopped the run (``options``:
    ``on_error="fail"``, ``max_partial_matches``), why in ``engine``."""
    schema = _out_schema(arity, columns)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        feeder: Feeder | None = None  # the current shard's engine, fed FEED_ROWS at once
        current: tuple[int, int] | None = None
        top, sides = -math.inf, 0  # of the current (group, shard)

        def close() -> Iterator[pa.RecordBatch]:
            assert current is not None
            if current == SIDE_SHARD:
                yield fill(schema, 1, {"g": [current[0]], "pid": [current[1]], "part": [CLOCK],
                                        "ts": [top if top > -math.inf else None],
                                        "seq": [sides]})
                return
            if feeder is None:
                return
            engine = feeder.engine
            for m in feeder.end(max(released, top), finish=False):
                yield _matches(m)
            errors = error_rows(engine.errors)
            if errors or feeder.failed is not None:
                n = len(errors)
                names = ["kind", *REJECTED_SCHEMA.names]
                texts = [json.dumps(dict(zip(names, ["error", *r], strict=True)))
                         for r in errors]
                yield fill(schema, n, {"g": longs(current[0], n), "pid": longs(current[1], n),
                                       "part": longs(SIDE, n), "engine": texts})
                yield fill(schema, 1, {"g": [current[0]], "pid": [current[1]],
                                        "part": [CLOCK], "seq": [n],
                                        "engine": [None if feeder.failed is None
                                                   else str(feeder.failed)]})
                if feeder.failed is not None:
                    return  # (the query stops: no state for a batch never committed)
            if has_state(engine):
                yield fill(schema, 1, {"g": [current[0]], "pid": [current[1]],
                                        "part": [ENGINE],
                                        "engine": [state_text(engine)]})

        def _matches(m: pa.RecordBatch) -> pa.RecordBatch:
            """Match rows (MATCH_SCHEMA) as rows of the shard output."""
            return fill(schema, m.num_rows, {f"m_{n}": m.column(n) for n in MATCH_COLS})

        for batch in batches:
            if batch.num_rows == 0:
                continue
            g = batch.column("g").to_numpy()
            pid = batch.column("pid").to_numpy()
            change = np.flatnonzero((g[1:] != g[:-1]) | (pid[1:] != pid[:-1])) + 1
            bounds = [0, *change.tolist(), batch.num_rows]
            for a, b in itertools.pairwise(bounds):
                key = (int(g[a]), int(pid[a]))
                if key != current:
                    if current is not None:
                        yield from close()
                    feeder, current, top, sides = None, key, -math.inf, 0
                seg = batch.slice(a, b - a)
                # part is sorted within the (group, shard): summary < engine < event < side
                parts = seg.column("part").to_numpy()
                at = np.searchsorted(parts, [ENGINE, EVENT, SIDE]).tolist()
                if at[0]:
                    m = pc.max(seg.slice(0, at[0]).column("ts")).as_py()
                    top = top if m is None else max(top, m)
                if key == SIDE_SHARD:
                    if at[2] < seg.num_rows:
                        n = seg.num_rows - at[2]
                        sides += n
                        yield fill(schema, n, {"g": longs(key[0], n), "pid": longs(key[1], n),
                                               "part": longs(SIDE, n),
                                               "engine": seg.column("engine").slice(at[2])})
                    continue
                if at[0] == at[2]:  # summary rows only
                    continue
                if feeder is None:
                    feeder = Feeder(Engine(subs[key[0]], actions=actions, strict_actions=False,
                                           **(options or {})), arities, arity)
                for text in seg.slice(at[0], at[1] - at[0]).column("engine").to_pylist():
                    restore_text(feeder.engine, text)
                events = seg.slice(at[1], at[2] - at[1])
                ts = events.column("ts")
                until = max(watermark, top)
                released_rows = events.filter(pc.less_equal(ts, until))
                held = events.filter(pc.greater(ts, until))
                for m in feeder.add(released_rows):
                    yield _matches(m)
                if held.num_rows:
                    cols = {n: held.column(n) for n in columns}
                    cols.update(g=longs(key[0], held.num_rows),
                                pid=longs(key[1], held.num_rows),
                                part=longs(EVENT, held.num_rows))
                    yield fill(schema, held.num_rows, cols)
        if current is not None:
            yield from close()

    return run


def _late_batch(events: pa.RecordBatch, arities: dict[str, int], arity: int, released: float,
                watermark: float, shown: Callable[[str], str]) -> pa.RecordBatch | None:
    """Late events (parsed rows: the layout and ``at``, ts below the last released timestamp
    ``released``) as side-output rows (:data:`SIDE_SCHEMA`) — the file (``shown``), the line
    or row and the reason as in-process (:func:`cepflow.inputs.late_reason`); None for no
    rows."""
    decoded = decode(events, arities, arity)
    if not decoded:
        return None
    files = events.column("file").to_pylist()
    return pa.RecordBatch.from_pydict({
        "kind": ["late"] * len(decoded),
        "source": [shown(f) for f in files],
        "location": [f"{location_unit(f)} {at}"
                     for f, at in zip(files, events.column("at").to_pylist(), strict=True)],
        "reason": [late_reason(e.ts, released, watermark) for e in decoded],
        "field": ["ts"] * len(decoded),
        "record": [record_text(e) for e in decoded]}, schema=SIDE_SCHEMA)


def _late_rows(arities: dict[str, int], arity: int, released: float, watermark: float,
               shown: Callable[[str], str]
               ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """Late events as side-output rows (:func:`_late_batch`), a mapInArrow function."""

    def late(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            rows = _late_batch(batch, arities, arity, released, watermark, shown)
            if rows is not None:
                yield rows

    return late


def _lines(encode: Callable[[pa.RecordBatch], pa.Array]
           ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """Rows as their JSON lines (``encode``: :func:`~cepflow.outputs.records.match_lines` or
    ``rejected_lines``), a mapInArrow function to a ``value`` text column."""

    def lines(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            if batch.num_rows:
                yield pa.RecordBatch.from_arrays([encode(batch)], names=["value"])

    return lines


def _routed(parse: Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]],
            groups: list[Group], shards: int, arities: dict[str, int], arity: int,
            columns: list[str], released: float, watermark: float, shown: Callable[[str], str]
            ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The mapInArrow function of the one-job micro-batch over file rows: ``parse`` them and
    route each row once — an on-time event to every group that reads its type (``pid`` null
    for a keyed group: Spark hashes ``k`` as before; else 0), a late event (ts below
    ``released``) or a malformed record to :data:`SIDE_SHARD` as a side row — then one summary
    row with the task's largest event timestamp per (group, shard) and for the side shard."""
    schema = _routed_schema(arity, columns)
    names = SIDE_SCHEMA.names
    by_group = group_selector([g.types for g in groups])
    targets = [SIDE_SHARD, *((gi, p) for gi, g in enumerate(groups)
                             for p in (range(shards) if g.partitioned else [0]))]

    def side_rows(rows: pa.RecordBatch) -> pa.RecordBatch:
        n = rows.num_rows
        texts = [json.dumps(dict(zip(names, r, strict=True)))
                 for r in zip(*(rows.column(c).to_pylist() for c in names), strict=True)]
        return fill(schema, n, {"g": longs(SIDE_SHARD[0], n), "pid": longs(SIDE_SHARD[1], n),
                                "part": longs(SIDE, n), "engine": texts})

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        top: float | None = None
        for batch in parse(batches):
            if batch.num_rows == 0:
                continue
            is_event = pc.equal(batch.column("kind"), "event")
            bad = batch.filter(pc.invert(is_event))
            if bad.num_rows:
                yield side_rows(pa.RecordBatch.from_arrays(
                    [constant("malformed", bad.num_rows),
                     *[bad.column(c) for c in REJECTED_SCHEMA.names]], schema=SIDE_SCHEMA))
            events = batch if not bad.num_rows else batch.filter(is_event)
            if not events.num_rows:
                continue
            ts = events.column("ts")
            m = pc.max(ts).as_py()
            top = m if top is None else max(top, m)
            if released > -math.inf:
                is_late = pc.less(ts, released)
                late = _late_batch(events.filter(is_late), arities, arity, released,
                                   watermark, shown)
                if late is not None:
                    yield side_rows(late)
                    events = events.filter(pc.invert(is_late))
            for gi, rows in by_group(events):
                n = rows.num_rows
                cols: dict[str, Any] = {c: rows.column(c) for c in columns}
                cols.update(g=longs(gi, n), part=longs(EVENT, n), k=rows.column(f"k{gi}"),
                            pid=None if groups[gi].partitioned else longs(0, n))
                yield fill(schema, n, cols)
        n = len(targets)
        yield fill(schema, n, {"g": [t[0] for t in targets], "pid": [t[1] for t in targets],
                               "part": longs(SUMMARY, n), "ts": [top] * n})

    return run


class _MicroBatch:
    """The foreachBatch function: one micro-batch = one batch job over events + saved state."""

    def __init__(self, program: Program, groups: list[Group], arity: int, sink: Path,
                 state_dir: Path, lateness: float, actions: dict[str, Any],
                 on_batch: Callable[[int], None] | None,
                 reader_options: dict[str, Any] | None = None,
                 shown: Callable[[str], str] = str,
                 options: dict[str, Any] | None = None) -> None:
        self.program, self.groups, self.arity = program, groups, arity
        self.subs = [subprogram(program, g) for g in groups]
        self.arities = {t: len(s.params) for t, s in program.schemas.items()}
        self.sink, self.state_dir, self.lateness = sink, state_dir, lateness
        self.actions = actions_for(program, actions)
        self.on_batch = on_batch
        #: the readers' options; how a file is named in the side output
        self.reader_options, self.shown = reader_options or {}, shown
        #: the engines' options (on_error, max_partial_matches)
        self.options = dict(options or {})
        #: the layout's event columns that may travel (all but ``key``), in layout order
        self.columns = [f.name for f in event_fields(arity) if f.name != "key"]
        #: those the events the groups read can fill: ids, integer time, their slots
        self.fillable = fillable_columns(program, groups, arity)

    # ---- state folders -------------------------------------------------------------------
    def _previous(self, batch_id: int) -> tuple[int | None, dict[str, Any]]:
        """The newest complete state before ``batch_id`` and its meta data."""
        best: int | None = None
        if self.state_dir.exists():
            for p in self.state_dir.glob("meta-*.json"):
                n = int(p.stem.split("-")[1])
                if n < batch_id and (best is None or n > best):
                    best = n
        if best is None:
            return None, {}
        return best, json.loads((self.state_dir / f"meta-{best:09d}.json").read_text())

    def _commit(self, batch_id: int, prev: int | None, meta: dict[str, Any]) -> None:
        tmp = self.state_dir / f".meta-{batch_id:09d}.json.tmp"
        tmp.write_text(json.dumps(meta))
        tmp.replace(self.state_dir / f"meta-{batch_id:09d}.json")
        keep = {batch_id, prev, meta.get("state")}
        for p in list(self.state_dir.iterdir()):
            name = p.name
            n = (int(name.split("=")[1]) if name.startswith("batch=") else
                 int(p.stem.split("-")[1]) if name.startswith("meta-") else None)
            if n is not None and n not in keep and n < batch_id:
                if p.is_dir():
                    shutil.rmtree(p, ignore_errors=True)
                else:
                    p.unlink(missing_ok=True)

    def _read_state(self, spark: SparkSession, meta: dict[str, Any]
                    ) -> tuple[DataFrame | None, list[str]]:
        """The saved state rows of ``meta``'s batch as rows of the current layout (version 1
        converted) and the event columns beyond :data:`ALWAYS` its held-back events use."""
        n = meta.get("state")
        version = meta.get("version", STATE_VERSION) if meta else STATE_VERSION
        if version not in (1, STATE_VERSION):
            raise ValueError(f"{self.state_dir}: stream state version {version!r} is newer than "
                             f"this cepflow reads (1 to {STATE_VERSION}); use the cepflow that "
                             "wrote the checkpoint, or a new checkpoint")
        if n is None:
            return None, []
        path = str(self.state_dir / f"batch={n:09d}")
        if version == 1:  # every layout column, part as text
            wide = [pa.field("g", pa.int64()), pa.field("pid", pa.int64()),
                    pa.field("part", pa.string()), pa.field("engine", pa.string()),
                    *_layout_fields(self.arity, self.columns)]
            rows = spark.read.schema(spark_ddl(pa.schema(wide))).parquet(path)
            code = F.when(F.col("part") == "engine", F.lit(ENGINE)).otherwise(F.lit(EVENT))
            return (rows.withColumn("part", code.cast("long")),
                    [c for c in self.columns if c not in ALWAYS])
        held = [c for c in self.columns if c in meta.get("held", [])]
        ddl = spark_ddl(pa.schema(_shard_fields(self.arity, [*ALWAYS, *held])))
        return spark.read.schema(ddl).parquet(path), held

    def _committed(self, batch_id: int) -> int | None:
        """The newest micro-batch before ``batch_id`` that Spark's commit log
        (``CHECKPOINT/commits``) marks committed, None for none."""
        commits = self.state_dir.parent / "commits"
        done = [int(p.name) for p in commits.iterdir()
                if p.name.isdigit() and int(p.name) < batch_id] if commits.is_dir() else []
        return max(done) if done else None

    def _check_in_step(self, batch_id: int, prev: int | None, meta: dict[str, Any]) -> None:
        """The state to restore must be that of the micro-batch Spark committed last: each
        batch's state is written before Spark commits it, so a newest state older than Spark's
        commit log means state files were lost (going on would drop the partial matches and
        held-back events of the batches since, and emit matches again), a newer one that
        Spark's log was (it would run batches the state already holds). Either stops the query
        with what is missing and how to recover; so do a state of other patterns and a
        missing state folder."""
        committed = self._committed(batch_id)
        where = self.state_dir
        recover = (f"to recover, put back the files of {where} from a copy of the checkpoint, "
                   "or start over with a new checkpoint folder (and an empty sink: every file "
                   "of the source is then read again)")
        if committed != prev:
            if committed is None:
                raise StreamStateError(
                    f"micro-batch {batch_id}: {where} holds the state of micro-batch {prev}, but "
                    f"Spark's commit log ({where.parent / 'commits'}) has no committed "
                    f"micro-batch: the checkpoint's logs were removed or replaced; {recover}")
            newest = "none" if prev is None else f"micro-batch {prev}'s"
            raise StreamStateError(
                f"micro-batch {batch_id}: Spark committed micro-batch {committed}, but the newest "
                f"complete cepflow state in {where} is {newest} — meta-{committed:09d}.json "
                f"or batch={committed:09d} of micro-batch {committed} is missing; going on "
                "would lose the partial matches and held-back events since then and emit "
                f"matches again; {recover}")
        if prev is None:
            return
        if meta.get("state") != prev or not (where / f"batch={prev:09d}").is_dir():
            raise StreamStateError(
                f"micro-batch {batch_id}: the state files of micro-batch {prev} "
                f"({where / f'batch={prev:09d}'}) are missing or do not belong to its meta "
                f"file; {recover}")
        if meta.get("program") not in (None, self.program.fingerprint):
            raise StreamStateError(
                f"micro-batch {batch_id}: the checkpoint {where.parent} was written for other "
                "patterns (its state cannot go on with these); use a new checkpoint folder "
                "for the new patterns")

    # ---- one micro-batch -----------------------------------------------------------------
    def __call__(self, files: DataFrame, batch_id: int) -> None:
        """Micro-batch ``batch_id`` over its ``files`` (the file source's rows)."""
        spark = files.sparkSession
        self.state_dir.mkdir(parents=True, exist_ok=True)
        prev, meta = self._previous(batch_id)
        self._check_in_step(batch_id, prev, meta)
        shards = int(meta.get("shards") or spark.conf.get("spark.sql.shuffle.partitions") or 2)
        clock = _Clock(meta.get("max_ts"), meta.get("released"))
        state, held_before = self._read_state(spark, meta)
        if self.lateness == 0 and (state is None or meta.get("lateness") == 0):
            # nothing is held back without lateness (watermark = the largest timestamp)
            clock, held = self._one_job(files, batch_id, state, held_before, shards, clock)
        else:
            clock, held = self._summarised(files, batch_id, state, held_before, shards, clock)
        self._commit(batch_id, prev, {
            "format": "cepflow.stream-state", "version": STATE_VERSION, "shards": shards,
            "max_ts": clock.max_ts, "released": clock.released, "state": batch_id,
            "held": held, "program": self.program.fingerprint, "lateness": self.lateness})

    def _one_job(self, files: DataFrame, batch_id: int, state: DataFrame | None,
                 held_before: list[str], shards: int, clock: _Clock) -> tuple[_Clock, list[str]]:
        """Lateness 0: the files parsed and routed in the detection job (module docstring,
        "One job"); its clock row gives the batch's largest timestamp. The new clocks and the
        columns of held events (none)."""
        released = -math.inf if clock.released is None else clock.released
        watermark = clock.watermark(0)
        columns = [c for c in self.columns
                   if c in ALWAYS or c in self.fillable or c in held_before]
        parse = file_parser(self.program, self.groups, self.arity, self.reader_options,
                            streaming=True, shown=self.shown)
        routed = files.mapInArrow(
            _routed(parse, self.groups, shards, self.arities, self.arity, columns, released,
                    watermark, self.shown), spark_ddl(_routed_schema(self.arity, columns)))
        pid = F.coalesce(F.col("pid"), F.pmod(F.xxhash64(F.col("k")), F.lit(shards)))
        rows = routed.select("g", pid.alias("pid"), "part", "engine", *columns)
        result = self._detect(files.sparkSession, rows, state, shards, watermark, released,
                              columns)
        try:
            # the one job over the files: it fills the cache the writes below read
            clocks = result.where(F.col("part") == CLOCK).select("ts", "seq",
                                                                 "engine").collect()
            _stop_on_failure(clocks, batch_id)
            tops = [r["ts"] for r in clocks if r["ts"] is not None]
            top = max(tops) if tops else None
            side = _side_rows(result) if any(r["seq"] for r in clocks) else None
            self._write(result, columns, batch_id, side)
        finally:
            result.unpersist()
        return _Clock(clock.seen(top).max_ts, clock.released if top is None
                      else max(released, top)), []

    def _summarised(self, files: DataFrame, batch_id: int, state: DataFrame | None,
                    held_before: list[str], shards: int, clock: _Clock
                    ) -> tuple[_Clock, list[str]]:
        """With lateness (now or in the previous batch): the parsed batch cached, a first job
        for its largest timestamp, used columns and side rows, one for the released time, then
        detection. The new clocks and the columns the held-back events use."""
        spark = files.sparkSession
        watermark_before = clock.watermark(self.lateness)
        released_before = -math.inf if clock.released is None else clock.released
        batch = files.mapInArrow(
            file_parser(self.program, self.groups, self.arity, self.reader_options,
                        streaming=True, shown=self.shown),
            spark_ddl(_prepared_schema(self.arity, self.groups))).persist()
        try:
            events = batch.where(F.col("kind") == "event")
            on_time = events.where(F.col("ts") >= F.lit(released_before))
            late = events.where(F.col("ts") < F.lit(released_before))
            top, used, rejects = self._summary(batch, released_before)
            clock = clock.seen(top)
            watermark = clock.watermark(self.lateness)
            # what travels to the engines: the columns this batch's events or the held ones use
            columns = [c for c in self.columns if c in ALWAYS or c in used or c in held_before]
            released, held = self._released(on_time, state, watermark, released_before,
                                            columns, held_before)
            result = self._detect(spark, self._group_rows(on_time, shards, columns), state,
                                  shards, watermark, released, columns)
            try:
                # (computes the persisted result the writes below read)
                clocks = result.where(F.col("part") == CLOCK).select("seq", "engine").collect()
                _stop_on_failure(clocks, batch_id)
                side = _side_rows(result) if any(r["seq"] for r in clocks) else None
                if rejects:
                    malformed = batch.where(F.col("kind") == "rejected").select(
                        F.lit("malformed").alias("kind"), *REJECTED_SCHEMA.names)
                    rows = malformed.unionByName(late.mapInArrow(
                        _late_rows(self.arities, self.arity, released_before, watermark_before,
                                   self.shown),
                        spark_ddl(SIDE_SCHEMA)))
                    side = rows if side is None else rows.unionByName(side)
                self._write(result, columns, batch_id, side)
            finally:
                result.unpersist()
        finally:
            batch.unpersist()
        return _Clock(clock.max_ts, None if released == -math.inf else released), held

    def _write(self, result: DataFrame, columns: list[str], batch_id: int,
               side: DataFrame | None) -> None:
        """Matches, side output (``side``; None: counted empty, no Spark job) and the new state
        of batch ``batch_id``, each folder overwritten, from the persisted ``result``."""
        name = f"batch={batch_id:09d}"
        result.where(F.col("m_pattern").isNotNull()).select(
            *[F.col(f"m_{c}").alias(c) for c in MATCH_COLS]
        ).mapInArrow(_lines(match_lines), "value string").write.mode("overwrite").text(
            str(self.sink / "matches" / name))
        if self.on_batch is not None:
            self.on_batch(batch_id)  # (tests: fail between the writes)
        if side is not None:
            side.mapInArrow(_lines(rejected_lines), "value string").write.mode(
                "overwrite").text(str(self.sink / "rejected" / name))
        else:
            _empty_output(self.sink / "rejected" / name)
        new_state = result.where(F.col("part").isin(ENGINE, EVENT)).select(
            *[f.name for f in _shard_fields(self.arity, columns)])
        new_state.write.mode("overwrite").parquet(str(self.state_dir / name))

    def _summary(self, batch: DataFrame, released_before: float
                 ) -> tuple[float | None, set[str], int]:
        """One job over the micro-batch: its largest event timestamp, the event columns its
        events use (late ones included: a plain count per column is cheaper than a
        conditional one, measured) and the number of rows for the side output (malformed +
        late)."""
        kind, ts = F.col("kind"), F.col("ts")
        late = (kind == "event") & (ts < F.lit(released_before))
        counted = [c for c in self.columns if c not in ALWAYS]
        row = batch.agg(
            F.max(F.when(kind == "event", ts)).alias("m"),
            F.count(F.when((kind == "rejected") | late, F.lit(1))).alias("rejects"),
            *[F.count(c).alias(f"n_{c}") for c in counted],
        ).collect()[0]
        return row["m"], {c for c in counted if row[f"n_{c}"]}, row["rejects"]

    def _released(self, on_time: DataFrame, state: DataFrame | None, watermark: float,
                  before: float, columns: list[str], held_before: list[str]
                  ) -> tuple[float, list[str]]:
        """The largest timestamp released after this batch — max(before, ts <= watermark) —
        and the event columns beyond :data:`ALWAYS` that the events held back after it use
        (one job)."""
        if watermark == -math.inf:
            return before, held_before
        ts = F.col("ts")
        rows = on_time.select(*columns)
        if state is not None:
            rows = rows.unionByName(
                state.where(F.col("part") == EVENT).select(*_columns_of(state, self.arity,
                                                                        columns)))
        counted = [c for c in columns if c not in ALWAYS]
        row = rows.agg(F.max(F.when(ts <= watermark, ts)).alias("m"),
                       *[F.count(F.when(ts > watermark, F.col(c))).alias(f"n_{c}")
                         for c in counted]).collect()[0]
        m = row["m"]
        return (before if m is None else max(before, m)), [c for c in counted if row[f"n_{c}"]]

    def _group_rows(self, events: DataFrame, shards: int, columns: list[str]
                    ) -> DataFrame | None:
        """Shard rows of ``events`` for every group that reads them (one select per group)."""
        parts: list[DataFrame] = []
        for gi, group in enumerate(self.groups):
            ev = group_rows(events, group.types)
            pid = (F.pmod(F.xxhash64(F.col(f"k{gi}")), F.lit(shards)) if group.partitioned
                   else F.lit(0).cast("long"))
            parts.append(ev.select(F.lit(gi).cast("long").alias("g"), pid.alias("pid"),
                                   F.lit(EVENT).cast("long").alias("part"),
                                   F.lit(None).cast("string").alias("engine"), *columns))
        return _union(parts)

    def _detect(self, spark: SparkSession, rows: DataFrame | None, state: DataFrame | None,
                shards: int, watermark: float, released: float, columns: list[str]
                ) -> DataFrame:
        """Shard ``rows`` + saved state → one engine per (group, shard) → persisted.
        Only the event ``columns`` travel (the shuffle and Arrow cost grows with each)."""
        out = _out_schema(self.arity, columns)
        if state is not None:
            rows = _union([*([rows] if rows is not None else []),
                           state.select("g", "pid", "part", "engine",
                                        *_columns_of(state, self.arity, columns))])
        if rows is None:
            return spark.createDataFrame([], spark_ddl(out)).persist()
        order = ["g", "pid", "part", "ts", "file", "seq"]  # (file and seq: in ALWAYS)
        # shard p of every group (and the side rows, shard 0) to partition p: hashing
        # (g, pid) itself can put two shards in one partition and leave another idle
        rows = rows.repartition(shards, routed_to(F.col("pid"), route_values(spark, shards))
                                ).sortWithinPartitions(*order)
        runner = _shard_runner(self.subs, self.actions, self.arities, self.arity, columns,
                               watermark, released, self.options)
        return rows.mapInArrow(runner, spark_ddl(out)).persist()


def _side_rows(result: DataFrame) -> DataFrame:
    """The side rows of a detection result (:data:`SIDE_SCHEMA` records as JSON in
    ``engine``: malformed and late records of the one-job parse, error records of the
    engines) as side-output rows."""
    record = F.from_json(F.col("engine"), spark_ddl(SIDE_SCHEMA))
    return result.where(F.col("part") == SIDE).select(record.alias("r")).select(
        *[F.col(f"r.{c}").alias(c) for c in SIDE_SCHEMA.names])


def _stop_on_failure(clocks: list[Any], batch_id: int) -> None:
    """An engine stopped the run (its clock row says why: an evaluation error under
    ``on_error="fail"``, more partial matches than ``max_partial_matches``): stop the query
    before anything of the batch is written or committed."""
    stopped = [r["engine"] for r in clocks if r["engine"]]
    if stopped:
        raise EngineStopped(f"micro-batch {batch_id} stopped: {stopped[0]}; nothing of this "
                            "batch was written or committed — fix the patterns or the input, "
                            "or restart with other options (on_error=skip, a higher "
                            "max_partial_matches), and the batch runs again")


class EngineStopped(RuntimeError):
    """The streaming query stopped because an engine did (an evaluation error under
    ``on_error="fail"``, more partial matches than ``max_partial_matches``)."""


class StreamStateError(RuntimeError):
    """The saved stream state does not belong to the micro-batch Spark committed last (or to
    these patterns): the query stops rather than go on from the wrong state."""


def _union(parts: list[DataFrame]) -> DataFrame | None:
    """The rows of ``parts`` (by column name); None for no parts."""
    if not parts:
        return None
    rows = parts[0]
    for p in parts[1:]:
        rows = rows.unionByName(p)
    return rows


def _empty_output(folder: Path) -> None:
    """What Spark's ``write.mode("overwrite")`` of no rows leaves: ``folder`` with only a
    ``_SUCCESS`` marker (a failed attempt's files removed first)."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    (folder / "_SUCCESS").touch()


def _columns_of(rows: DataFrame, arity: int, columns: list[str]) -> list[Any]:
    """The event ``columns`` of ``rows``, null where ``rows`` has no such column."""
    have = set(rows.columns)
    return [F.col(f.name) if f.name in have else F.lit(None).cast(spark_type(f.type)).alias(f.name)
            for f in _layout_fields(arity, columns)]


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
    reader_options: Mapping[str, Any] | None = None,
    on_error: str = "skip",
    max_partial_matches: int | None = None,
) -> StreamingQuery:
    """Start the streaming detection of ``program`` from ``source`` into ``sink``
    (``reader_options`` as for :func:`cepflow.inputs.read_events`). ``on_error``: an
    evaluation error goes to ``rejected/`` (skip) or stops the query before its micro-batch is
    committed (fail); an engine (a shard) holding more than ``max_partial_matches`` partial
    matches stops it too (docs/spark.md)."""
    if not lateness_ms >= 0:
        raise ValueError(f"lateness must be >= 0, not {lateness_ms!r}")
    options = dict(reader_options or {})
    check_options(options)
    groups = plan(program)
    arity = arity_of(program.schemas)
    reader = spark.readStream.format("binaryFile").schema(
        "path string, modificationTime timestamp, length long, content binary")
    if files_per_trigger:
        reader = reader.option("maxFilesPerTrigger", files_per_trigger)
    # each micro-batch parses its files itself (in its detection job when it can)
    files = file_rows(reader.load(str(source)), source)
    runner = _MicroBatch(program, groups, arity, Path(sink), Path(checkpoint) / STATE_DIR,
                         float(lateness_ms), dict(actions or {}), on_batch, options,
                         shown_names(source),
                         {"on_error": on_error, "max_partial_matches": max_partial_matches})
    writer = files.writeStream.foreachBatch(runner).option("checkpointLocation",
                                                            str(checkpoint))
    if available_now:
        writer = writer.trigger(availableNow=True)
    elif processing_time:
        writer = writer.trigger(processingTime=processing_time)
    return writer.start()


def read_sink(spark: SparkSession, sink: str | os.PathLike[str]) -> tuple[DataFrame, DataFrame]:
    """The matches and the side output written by :func:`stream_query` (complete batches)."""
    base = Path(sink)
    m = spark.read.schema(spark_ddl(MATCH_SCHEMA)).json(str(base / "matches"))
    r = spark.read.schema(spark_ddl(SIDE_SCHEMA)).json(str(base / "rejected"))
    return m, r
