"""Events as Arrow/Spark columns and back, without losing a value's type.

The layout (``s{i}``/``i{i}``/``f{i}``/``b{i}`` slots per parameter position, ``ts``/``tsi``,
``id_s``/``id_i``, ``seq``, ``file``, ``key``) is :mod:`cepflow.inputs.columnar`'s, whose fast
path reads files straight into it. Here: events to columns (:func:`encode`) and back
(:func:`decode`), the engine's view of a batch (:class:`ArrowRows`, which makes Python events
only for the rows that end up in complex events or partial matches), complex events to rows
(:func:`encode_matches`, or column-wise from a :class:`~cepflow.runtime.rows.MatchTable` with
:func:`encode_match_table`) and partition keys (:func:`key_json`, :func:`key_column`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from cepflow.events.event import Event
from cepflow.inputs.columnar import (
    SLOTS,
    column,
    constant,
    decode,
    event_fields,
    event_schema,
)
from cepflow.outputs.encoding import dumps, json_texts
from cepflow.outputs.records import MATCH_SCHEMA, match_ts_column
from cepflow.outputs.records import match_batch as encode_matches
from cepflow.runtime.rows import MatchTable, ObjectMatches, Rows

__all__ = [
    "MATCH_SCHEMA",
    "SLOTS",
    "ArrowRows",
    "decode",
    "encode",
    "encode_match_table",
    "encode_matches",
    "event_fields",
    "event_schema",
    "key_column",
    "key_json",
    "partition_hash",
    "route_values",
    "routed_to",
    "spark_ddl",
    "spark_type",
]


def spark_type(t: pa.DataType) -> str:
    """The Spark SQL type of a layout column's Arrow type."""
    if pa.types.is_list(t):
        return "array<string>"
    return {pa.string(): "string", pa.int64(): "long", pa.float64(): "double",
            pa.bool_(): "boolean"}[t]


def spark_ddl(schema: pa.Schema) -> str:
    return ", ".join(f"`{f.name}` {spark_type(f.type)}" for f in schema)


def _slot(v: Any) -> int:
    if v is None:
        return -1
    if isinstance(v, bool):
        return 3
    if isinstance(v, int):
        return 1
    if isinstance(v, float):
        return 2
    return 0


def encode(events: Iterable[Event], arity: int, keys: Iterable[str | None],
           files: Iterable[str | None]) -> pa.RecordBatch:
    """A record batch of ``events`` (parameters beyond ``arity`` are not kept)."""
    evs = list(events)
    cols: dict[str, list[Any]] = {f.name: [] for f in event_fields(arity)}
    for e, key, file in zip(evs, keys, files, strict=True):
        cols["type"].append(e.type)
        cols["ts"].append(float(e.ts))
        cols["tsi"].append(e.ts if isinstance(e.ts, int) and not isinstance(e.ts, bool)
                           else None)
        ident = e.id
        cols["id_s"].append(ident if isinstance(ident, str) else None)
        cols["id_i"].append(ident if isinstance(ident, int) and not isinstance(ident, bool)
                            else None)
        cols["seq"].append(e.seq)
        cols["file"].append(file)
        cols["key"].append(key)
        n = len(e.params)
        for i in range(arity):
            v = e.params[i] if i < n else None
            k = _slot(v)
            for j, (p, _) in enumerate(SLOTS):
                cols[f"{p}{i}"].append(v if j == k else None)
    return pa.RecordBatch.from_pydict(cols, schema=event_schema(arity))


class ArrowRows(Rows):
    """A record batch of the layout as the engine's column source (time-ordered rows)."""

    def __init__(self, batch: pa.RecordBatch, arities: Mapping[str, int], arity: int) -> None:
        self.batch, self.arities, self.arity = batch, arities, arity
        self.n = batch.num_rows
        self.ts = column(batch, "ts").to_numpy()
        enc = pc.dictionary_encode(column(batch, "type"))
        self.type_names = enc.dictionary.to_pylist()
        self.codes = enc.indices.to_numpy().astype(np.int64)
        self._made: dict[int, Event] = {}

    def last_ts(self) -> Any:
        tsi = column(self.batch, "tsi")[self.n - 1].as_py()
        return tsi if tsi is not None else float(self.ts[-1])

    def values(self, param: int, rows: np.ndarray) -> tuple[np.ndarray, list[Any]]:
        codes = np.full(len(rows), -1, dtype=np.int64)
        uniques: list[Any] = []
        take = pa.array(rows)
        for p, _ in SLOTS:
            col = column(self.batch, f"{p}{param}")
            if col.null_count == len(col):
                continue
            enc = pc.dictionary_encode(col.take(take))
            idx = enc.indices.fill_null(-1).to_numpy()
            found = idx >= 0
            codes[found] = idx[found] + len(uniques)
            uniques.extend(enc.dictionary.to_pylist())
        if bool((codes < 0).any()):
            codes[codes < 0] = len(uniques)
            uniques.append(None)
        return codes, uniques

    def lookup(self, rows: np.ndarray) -> Mapping[int, Event]:
        made = self._made
        new = [r for r in np.unique(rows).tolist() if r not in made]
        if new:
            evs = decode(self.batch.take(pa.array(new)), self.arities, self.arity)
            made.update(zip(new, evs, strict=True))
        return made

    def number(self, engine: Any) -> None:
        counters = engine.host.counters
        if self.n and counters.renumber:  # (after a restore: the saved numbering goes on)
            seq = column(self.batch, "seq")
            first = seq[0].as_py()
            shift = 0 if first is None or first < 0 else counters.continued(first) - first
            if shift:
                self.batch = self.batch.set_column(self.batch.schema.get_field_index("seq"),
                                                   "seq", pc.add(seq, shift))
        if self.n:
            top = int(pc.max(column(self.batch, "seq")).as_py())
            if top >= counters.input:
                counters.input = top + 1

    def refs(self) -> pa.Array:
        """The text that names each row's event in outputs: its id, else its number."""
        b = self.batch
        return pc.coalesce(column(b, "id_s"), column(b, "id_i").cast(pa.string()),
                           column(b, "seq").cast(pa.string()))


def encode_match_table(table: MatchTable, rows: ArrowRows) -> pa.RecordBatch:
    """:func:`encode_matches` (:func:`cepflow.outputs.records.match_batch`) of a
    :class:`~cepflow.runtime.rows.MatchTable`, column-wise: ids taken from the batch's
    columns, the parameters' JSON made once per key value."""
    refs = rows.refs()
    ts = column(rows.batch, "ts")
    cols: dict[str, list[pa.Array]] = {f.name: [] for f in MATCH_SCHEMA}
    ranks = []
    for b in table.blocks:
        if isinstance(b, ObjectMatches):  # (made as objects by the kernel: as match_batch)
            made = encode_matches(b.events)
            for f in MATCH_SCHEMA:
                cols[f.name].append(made.column(f.name))
            ranks.append(b.rank)
            continue
        m, k = len(b.at), b.rows.shape[0]
        flat = b.rows.T.ravel()
        ids = refs.take(pa.array(np.where(flat >= 0, flat, 0)))
        if b.old:  # events from before the batch: the first stages of those matches
            earlier = [str(e.ref) for r in sorted(b.old) for e in b.old[r]]
            ids = pc.replace_with_mask(ids, pa.array(flat < 0), pa.array(earlier, pa.string()))
        offsets = pa.array(np.arange(0, m * k + 1, k, dtype=np.int32))
        cols["events"].append(pa.ListArray.from_arrays(offsets, ids))
        cols["pattern"].append(constant(b.pattern, m))
        cols["ts"].append(match_ts_column(ts.take(pa.array(b.at))))
        keys, which = np.unique(b.value, return_inverse=True)
        if b.var.startswith("_"):  # internal names are not shown
            texts = constant("{}", len(keys))
        else:
            values = [table.values[v] for v in keys.tolist()]
            texts = pc.binary_join_element_wise("{" + dumps(b.var) + ":",
                                                _value_texts(values), "}", "")
        cols["params"].append(texts.take(pa.array(which.ravel())))
        ranks.append(b.rank)
    if not ranks:
        return pa.RecordBatch.from_pylist([], schema=MATCH_SCHEMA)
    order = pa.array(np.argsort(np.concatenate(ranks), kind="stable"))
    return pa.RecordBatch.from_arrays(
        [pa.concat_arrays(cols[f.name]).take(order) for f in MATCH_SCHEMA], schema=MATCH_SCHEMA)


def key_json(value: Any) -> str:
    """The partition key of a value: its JSON text (1 and "1" stay different keys)."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def key_column(batch: pa.RecordBatch, key: Mapping[str, int] | None) -> pa.Array:
    """Per row the partition key of its event (:func:`key_json` of the parameter ``key`` names
    for its type; null for other types, or for all rows without a key): column-wise, with one
    ``key_json`` per distinct value."""
    n = batch.num_rows
    if not key or n == 0:
        return pa.nulls(n, pa.string())
    types = column(batch, "type")
    out: pa.Array = pa.nulls(n, pa.string())
    by_param: dict[int, list[str]] = {}
    for t, i in key.items():
        by_param.setdefault(i, []).append(t)
    for i, ts in sorted(by_param.items()):
        texts = _key_texts(batch, i)
        mask = pc.is_in(types, value_set=pa.array(sorted(ts), pa.string()))
        out = pc.if_else(mask, texts, out)
    return out


def partition_hash(key: Mapping[str, int] | None, columns: Collection[str],
                   types: Collection[str] | None = None) -> Column:
    """The JVM-side counterpart of :func:`key_column` for partitioning: per row a hash of its
    key parameter's slot columns (``xxhash64`` skips the null slots), null for other types.
    Equal keys (equal :func:`key_json` texts: the same value in the same slot) hash equally,
    so rows can be partitioned by key without a key column made in Python and shipped
    (docs/spark.md, "Partition keys"). ``types``: the event types the rows can have, if known;
    when all of them hold the key at one position, the hash needs no test of the type (a
    string comparison per row)."""
    out = F.lit(None).cast("long")
    if not key:
        return out

    def value(i: int) -> Column:
        slots = [F.col(f"{p}{i}") for p, _ in SLOTS if f"{p}{i}" in columns]
        return F.xxhash64(*slots) if slots else F.lit(0).cast("long")

    positions = {key.get(t) for t in types} if types is not None else set()
    if len(positions) == 1 and None not in positions:
        return value(positions.pop())
    by_param: dict[int, list[str]] = {}
    for t, i in key.items():
        by_param.setdefault(i, []).append(t)
    for i, ts in sorted(by_param.items()):
        out = F.when(F.col("type").isin(sorted(ts)), value(i)).otherwise(out)
    return out


#: route values per partition count (Spark's hash partitioning is fixed: Murmur3, seed 42)
_ROUTES: dict[int, list[int]] = {}


def route_values(spark: SparkSession, n: int) -> list[int]:
    """Per partition ``p`` a long whose hash partitioning into ``n`` partitions
    (``pmod(hash(v), n)``, what ``repartition(n, col)`` computes) is ``p``: rows given that
    value land in partition ``p`` — rows can be sent to a partition chosen in code, and ``n``
    shards fill ``n`` partitions (hashing the shard numbers themselves can put two shards in
    one partition and leave another empty). One tiny query per partition count."""
    if n not in _ROUTES:
        rows = spark.range(0, 64 * n).select(
            "id", F.pmod(F.hash("id"), F.lit(n)).alias("p")).collect()
        first: dict[int, int] = {}
        for r in rows:
            first.setdefault(r["p"], r["id"])
        if len(first) < n:
            raise RuntimeError(f"no route value found for every one of {n} partitions")
        _ROUTES[n] = [first[p] for p in range(n)]
    return _ROUTES[n]


def routed_to(target: Column, routes: list[int]) -> Column:
    """The value to hash-partition by (``repartition(len(routes), …)``) so that a row lands in
    partition ``target`` (0-based; null: the partition of a null value)."""
    return F.element_at(F.array(*[F.lit(v).cast("long") for v in routes]),
                        target.cast("int") + 1)


def _key_texts(batch: pa.RecordBatch, i: int) -> pa.Array:
    """:func:`key_json` of parameter position ``i`` of every row ("null" where it is None)."""
    n = batch.num_rows
    if f"s{i}" not in batch.schema.names:
        return constant("null", n)
    out: pa.Array | None = None
    for p, _ in SLOTS:
        col = column(batch, f"{p}{i}")
        if col.null_count == n:
            continue
        enc = pc.dictionary_encode(col)
        part = json_texts(enc.dictionary, ascii_only=True).take(enc.indices)
        out = part if out is None else pc.coalesce(out, part)
    return pc.fill_null(out, "null") if out is not None else constant("null", n)


def _value_texts(values: list[Any]) -> pa.Array:
    """:func:`json_texts` (``ensure_ascii=False``, as the match writer) of Python values."""
    try:
        arr = pa.array(values)
    except (pa.ArrowException, TypeError, OverflowError):
        arr = None
    if arr is None or not (pa.types.is_string(arr.type) or pa.types.is_integer(arr.type)
                           or pa.types.is_boolean(arr.type)):
        return pa.array([dumps(v) for v in values], pa.string())
    return json_texts(arr, ascii_only=False)


def group_rows(events: DataFrame, types: Collection[str] | None) -> DataFrame:
    """The rows of ``events`` a pattern group reads (:func:`group_selector` for a DataFrame)."""
    return events if types is None else events.where(F.col("type").isin(sorted(types)))


def group_selector(types: list[Collection[str] | None]
                   ) -> Callable[[pa.RecordBatch], Iterator[tuple[int, pa.RecordBatch]]]:
    """How both Spark jobs route events to pattern groups (batch replay and each streaming
    micro-batch): per group number, the rows of an event batch whose type the group reads
    (``types[g]``: its event types, None for a group that reads every event), groups with no
    such row left out. An event goes to every group that reads it."""
    reads = [None if t is None else pa.array(sorted(t), pa.string()) for t in types]

    def select(batch: pa.RecordBatch) -> Iterator[tuple[int, pa.RecordBatch]]:
        for gi, names in enumerate(reads):
            rows = batch if names is None else batch.filter(
                pc.is_in(batch.column("type"), value_set=names))
            if rows.num_rows:
                yield gi, rows

    return select
