"""The Parquet reader reads text columns of few distinct values as dictionaries and casts them
back (inputs/parquet.py, _text_columns): its batches must be Arrow's plain reading's, value for
value, type for type, and the columns of mostly distinct texts must be read plain."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepflow.inputs.parquet import _text_columns, parquet_batches


def _plain(path: Path, batch_size: int) -> list[pa.RecordBatch]:
    return list(pq.ParquetFile(path).iter_batches(batch_size=batch_size))


def _ours(path: Path, batch_size: int) -> list[pa.RecordBatch]:
    return [b for _, b in parquet_batches(path, lambda *a: None, batch_size)]


def _same(path: Path, batch_size: int = 1000) -> None:
    ours, plain = _ours(path, batch_size), _plain(path, batch_size)
    assert len(ours) == len(plain)
    for a, b in zip(ours, plain, strict=True):
        assert a.schema.equals(b.schema, check_metadata=True)
        assert a.equals(b)


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


@settings(max_examples=40, deadline=None)
@given(st.lists(st.one_of(st.none(), st.sampled_from(["A", "B", "", "ü", "A B"]),
                          st.text(max_size=6)), min_size=1, max_size=300),
       st.integers(1, 64), st.integers(1, 100))
def test_batches_equal_the_plain_reading(tmp_path_factory: pytest.TempPathFactory,
                                         texts: list[str | None], batch_size: int,
                                         group: int) -> None:
    path = tmp_path_factory.mktemp("p") / "t.parquet"
    pq.write_table(pa.table({"type": pa.array(texts, pa.string()),
                             "ts": np.arange(len(texts))}), path, row_group_size=group)
    _same(path, batch_size)


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
