"""The Parquet reader reads text columns of few distinct values as dictionaries and casts them
back (inputs/parquet.py, _text_columns) — the event type's kept coded, for the column reader
to take its rows per type from the codes (inputs/columnar.py, _rows_by_code): its batches must
be Arrow's plain reading's, value for value, type for type (the type column's once cast), the
columns of mostly distinct texts read plain, and the layout made of them the plain batches'."""

from __future__ import annotations

from pathlib import Path
from unittest import mock

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepflow.events.event import EventType, ParamSpec
from cepflow.inputs import parquet
from cepflow.inputs.columnar import parquet_columns_of
from cepflow.inputs.parquet import _text_columns, parquet_batches

SCHEMAS = {t: EventType(t, (ParamSpec("k", "string"),)) for t in ("A", "B", "")}


def _plain(path: Path, batch_size: int) -> list[pa.RecordBatch]:
    return list(pq.ParquetFile(path).iter_batches(batch_size=batch_size))


def _ours(path: Path, batch_size: int) -> list[pa.RecordBatch]:
    return [b for _, b in parquet_batches(path, lambda *a: None, batch_size)]


def _uncoded(batch: pa.RecordBatch, plain: pa.Schema) -> pa.RecordBatch:
    """The batch with its type column (kept coded by the reader) cast to its text type (that
    of the ``plain`` reading)."""
    i = batch.schema.get_field_index("type")
    if (i < 0 or pa.types.is_dictionary(plain.field(i).type)
            or not pa.types.is_dictionary(batch.schema.field(i).type)):
        return batch
    field = batch.schema.field(i)
    return batch.set_column(i, field.with_type(field.type.value_type),
                            batch.column(i).cast(field.type.value_type))


def _same(path: Path, batch_size: int = 1000, schemas: dict | None = None) -> None:
    ours, plain = _ours(path, batch_size), _plain(path, batch_size)
    assert len(ours) == len(plain)
    for a, b in zip(ours, plain, strict=True):
        assert _uncoded(a, b.schema).schema.equals(b.schema, check_metadata=True)
        assert _uncoded(a, b.schema).equals(b)
        assert a.to_pylist() == b.to_pylist()  # (the record reader's records)
        if schemas is not None:  # (the column reader's layout)
            want = parquet_columns_of(pa.Table.from_batches([b]), schemas, 1, "f")
            got = parquet_columns_of(pa.Table.from_batches([a]), schemas, 1, "f")
            assert (got is None) == (want is None)
            if got is not None:
                assert got.equals(want)


def test_low_cardinality_texts_are_read_as_dictionaries(tmp_path: Path) -> None:
    n = 5000
    table = pa.table({
        "type": pa.array(np.array(["A", "B", "Cé"])[np.arange(n) % 3]),
        "ts": np.arange(n),
        "who": pa.array([None if i % 7 == 0 else f"k{i % 13}" for i in range(n)]),
        "big": pa.array([f"b{i % 4}" for i in range(n)], pa.large_string()),
        "id": pa.array([f"event-{i:08d}" for i in range(n)]),
    })
    path = tmp_path / "e.parquet"
    pq.write_table(table, path, row_group_size=1500)
    chosen = _text_columns(pq.ParquetFile(path))
    assert set(chosen) == {"type", "who", "big"}  # (not the distinct ids)
    assert chosen["big"] == pa.large_string()
    _same(path)
    _same(path, batch_size=777)
    schemas = {t: EventType(t, (ParamSpec("who", "string"),)) for t in ("A", "B", "Cé")}
    for size in (1000, 1499, 5000):
        _same(path, size, schemas)


def test_files_without_text_or_rows_and_stored_dictionaries(tmp_path: Path) -> None:
    numbers = tmp_path / "n.parquet"
    pq.write_table(pa.table({"type": pa.array([1, 2]), "ts": [1, 2]}), numbers)
    assert _text_columns(pq.ParquetFile(numbers)) == {}
    _same(numbers)
    empty = tmp_path / "empty.parquet"
    pq.write_table(pa.table({"type": pa.array([], pa.string()), "ts": pa.array([], pa.int64())}),
                   empty)
    _same(empty)
    # a column stored as an Arrow dictionary stays one (the file's own schema says so)
    stored = tmp_path / "d.parquet"
    pq.write_table(pa.table({"type": pa.array(["A", "B", "A"]).dictionary_encode(),
                             "ts": [1, 2, 3]}), stored)
    assert _text_columns(pq.ParquetFile(stored)) == {}
    _same(stored)


def test_types_of_other_rows_in_the_dictionary(tmp_path: Path) -> None:
    """A batch whose type dictionary holds a type none of its rows has (an undeclared one of
    a later row of its row group; the same text twice, from two row groups): the layout is
    made, as from the plain reading."""
    path = tmp_path / "t.parquet"
    writer = pq.ParquetWriter(path, pa.schema([("type", pa.string()), ("ts", pa.int64())]))
    for texts in (["A"] * 1000, ["B"] * 300 + ["A"] * 200 + ["X"] * 500):
        writer.write_table(pa.table({"type": pa.array(texts), "ts": np.arange(len(texts))}))
    writer.close()
    batches = _ours(path, 1500)
    assert batches[0].column(0).dictionary.to_pylist() == ["A", "B", "X"]
    schemas = {t: EventType(t, ()) for t in ("A", "B")}
    _same(path, 1500, schemas)
    assert parquet_columns_of(pa.Table.from_batches(batches[:1]), schemas, 1, "f") is not None


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(["A", "B", ""]), st.sampled_from(["A", "B", ""]),
                          st.none(), st.sampled_from(["ü", "A B"]), st.text(max_size=6)),
                min_size=1, max_size=300),
       st.integers(1, 64), st.integers(1, 100), st.booleans())
def test_batches_equal_the_plain_reading(tmp_path_factory: pytest.TempPathFactory,
                                         texts: list[str | None], batch_size: int,
                                         group: int, known: bool) -> None:
    """Random type columns (types with and without a schema, none, a type only in other row
    groups' dictionaries), row groups and batches cut anywhere: the same batches, records and
    layout."""
    if known:  # (every row a declared type: the layout is made)
        texts = [t if t in SCHEMAS else "A" for t in texts]
    path = tmp_path_factory.mktemp("p") / "t.parquet"
    pq.write_table(pa.table({"type": pa.array(texts, pa.string()),
                             "ts": np.arange(len(texts)),
                             "k": [f"k{i % 3}" for i in range(len(texts))]}),
                   path, row_group_size=group)
    # (files this small spend more bytes per value on the dictionary than _CODE_BYTES: every
    # text column read coded here, whatever its size)
    with mock.patch.object(parquet, "_CODE_BYTES", 10**9):
        assert set(_text_columns(pq.ParquetFile(path))) == {"type", "k"}
        _same(path, batch_size, SCHEMAS)


def test_the_columnar_run_reads_the_same_events(tmp_path: Path) -> None:
    from cepflow.inputs import read_events

    schema = tmp_path / "s.epl"
    schema.write_text("create schema A(k string);\ncreate schema B(k string);\n")
    from cepflow.loader import load

    program = load(schema)
    n = 3000
    path = tmp_path / "e.parquet"
    pq.write_table(pa.table({"type": pa.array(np.array(["A", "B"])[np.arange(n) % 2]),
                             "ts": np.arange(n), "k": [f"x{i % 5}" for i in range(n)]}), path)
    events = list(read_events(path, program.schemas))
    assert [(e.type, e.ts, e.params) for e in events[:3]] == [
        ("A", 0, ("x0",)), ("B", 1, ("x1",)), ("A", 2, ("x2",))]
    assert len(events) == n
