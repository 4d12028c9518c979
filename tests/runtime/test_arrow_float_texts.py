"""The column-wise JSON text of floats (runtime.arrow_rows.float_texts): what the match writer
writes for a float (``repr``: the shortest digits that read back as it) for every finite
double — random bit patterns, rounded decimals, whole values, the range edges where repr
changes notation — and None (the caller's texts) for nulls and non-finite values."""

import math

import numpy as np
import pyarrow as pa
from hypothesis import example, given, settings
from hypothesis import strategies as st

from cepflow.outputs.records import value_texts
from cepflow.runtime.arrow_rows import _value_column_texts, float_texts

EDGES = [0.0, -0.0, 1e-4, -1e-4, 9.999999999999999e-05, 1e16, 9999999999999998.0, 1e15,
         123456789012345.6, 1e-5, 5e-324, 1.7976931348623157e308, 2.5, 100.0, 0.1, 1e21,
         1e22, 1.0, -1.0, 0.30000000000000004]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), max_size=50))
@example(EDGES)
def test_float_texts_are_repr(values) -> None:
    got = float_texts(pa.array(values, pa.float64()))
    assert got is not None and got.to_pylist() == list(map(float.__repr__, values))
    assert _value_column_texts(values).to_pylist() == value_texts(values).to_pylist()


def test_float_texts_of_random_bit_patterns_and_decimals() -> None:
    rng = np.random.default_rng(21)
    bits = rng.integers(0, 2**63, 200_000, dtype=np.uint64).view(np.float64)
    decimals = [round(x, k) for x, k in zip(
        (rng.random(100_000) * 10.0 ** rng.integers(-6, 18, 100_000)).tolist(),
        rng.integers(0, 10, 100_000).tolist(), strict=True)]
    wholes = rng.integers(-10**17, 10**17, 100_000).astype(np.float64)
    for v in (bits[np.isfinite(bits)], np.array(decimals), wholes, -np.array(decimals)):
        got = float_texts(pa.array(v))
        assert got is not None and got.to_pylist() == list(map(float.__repr__, v.tolist()))


@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), max_size=5),
       st.sampled_from([math.nan, math.inf, -math.inf, None]))
def test_nulls_and_non_finite_values_are_left_to_the_caller(values, odd) -> None:
    arr = pa.array([*values, odd], pa.float64())
    assert float_texts(arr) is None
    # (the caller's texts: NaN, Infinity, null as the writer writes them)
    assert _value_column_texts([*values, odd]).to_pylist() == value_texts(
        [*values, odd]).to_pylist()
