"""Events as Arrow/Spark columns and back, without losing a value's type.

The layout (``s{i}``/``i{i}``/``f{i}``/``b{i}`` slots per parameter position, ``ts``/``tsi``,
``id_s``/``id_i``, ``seq``, ``file``, ``key``) is :mod:`cepflow.inputs.columnar`'s, whose fast
path reads files straight into it, with events to columns (:func:`encode`) and back
(:func:`decode`); the engine's view of a batch (:class:`ArrowRows`) and complex events to rows
column-wise (:func:`encode_match_table`) are :mod:`cepflow.runtime.arrow_rows`', shared with the
in-process file job. Here, what Spark adds: complex events to rows (:func:`encode_matches`),
partition keys (:func:`key_json`, :func:`key_column`) and the routing of rows to groups.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterator, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from cepflow.inputs.columnar import (
    SLOTS,
    column,
    constant,
    decode,
    encode,
    event_fields,
    event_schema,
)
from cepflow.outputs.encoding import json_texts
from cepflow.outputs.records import MATCH_SCHEMA
from cepflow.outputs.records import match_batch as encode_matches
from cepflow.runtime.arrow_rows import ArrowRows, encode_match_table

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
