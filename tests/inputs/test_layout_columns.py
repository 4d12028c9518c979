"""Two helpers of the column layout the file job reads through: ``constant`` (a batch's file
name, a block's pattern) is ``n`` copies of its text whatever the text, and ``one_array`` hands
a column of one chunk on without a copy and joins several."""

from __future__ import annotations

import pyarrow as pa
import pytest

from cepflow.inputs.columnar import constant, one_array


@pytest.mark.parametrize("value", ["x", "/tmp/some folder/events.parquet", "ü€\"\\", "", None])
@pytest.mark.parametrize("n", [0, 1, 7])
def test_constant_is_n_copies(value: str | None, n: int) -> None:
    col = constant(value, n)
    col.validate(full=True)
    assert col.type == pa.string()
    assert col.to_pylist() == [value] * n


def test_one_array_keeps_a_single_chunk_and_joins_several() -> None:
    one = pa.chunked_array([pa.array([1, 2, 3])])
    assert one_array(one).buffers()[1].address == one.chunk(0).buffers()[1].address
    two = pa.chunked_array([pa.array(["a"]), pa.array(["b", "c"])])
    assert one_array(two).to_pylist() == ["a", "b", "c"]
    assert one_array(pa.chunked_array([], pa.int64())).to_pylist() == []
