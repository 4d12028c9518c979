"""``rows.as_column``, how the kernels read a parameter of Python events as one column: numbers
and booleans as numpy infers them, anything else — texts, None, big integers, mixed values,
values numpy cannot stack (a list beside a text) — as the Python objects themselves."""

import numpy as np
from hypothesis import example, given
from hypothesis import strategies as st

from cepflow.runtime.rows import as_column

VALUES = st.one_of(st.integers(-5, 5), st.floats(allow_nan=False), st.booleans(), st.none(),
                   st.text(max_size=3), st.just(10**20), st.lists(st.integers(), max_size=2))


def numeric(values: list) -> np.ndarray | None:
    """What numpy infers, when it is a column of numbers or booleans."""
    try:
        c = np.array(values)
    except (ValueError, TypeError):  # (values it cannot stack)
        return None
    return c if c.ndim == 1 and c.dtype.kind in "biuf" else None


@given(st.lists(VALUES, max_size=8))
# (booleans only: read by numpy.fromiter once their types are seen; beside a number they are
# numbers, as numpy infers them)
@example([True, False, True])
@example([True, 1, False])
@example([False, 0.5])
def test_numbers_as_numpy_infers_them_anything_else_as_objects(values) -> None:
    c = as_column(values)
    assert c.ndim == 1 and len(c) == len(values)
    expected = numeric(values)
    if expected is not None:
        assert c.dtype == expected.dtype and (c == expected).all()
    else:
        assert c.dtype == object
        assert all(a is b for a, b in zip(c, values, strict=True))


class _Float(float):
    """A float subclass (numpy's float64 scalars are one too)."""


#: values a column of Python events may hold beside its numbers: subclasses of float and int,
#: numpy's scalars, integers beyond int64, texts that read as numbers
ODD = st.one_of(st.builds(_Float, st.floats()), st.builds(np.float64, st.floats()),
                st.builds(np.int64, st.integers(-5, 5)), st.just(np.bool_(True)),
                st.just(2**63), st.just(-(2**63) - 1), st.just(2**63 - 1), st.just("1.5"),
                st.just("1"), st.floats())


@given(st.lists(st.one_of(VALUES, ODD), max_size=8), st.integers(0, 2))
@example([1.5, "2"], 0)  # (a text that reads as a number: still the object itself)
@example([1, 2.5], 0)  # (an int first, a float after: numpy's float64, not int64)
@example([2.5, 1], 0)
@example([True, 1], 0)
@example([1, True], 0)
@example([2**63], 0)
@example([1, 2**63], 0)
@example([True, np.bool_(False)], 0)
@example([_Float(1.5), 2.0], 0)
def test_a_column_read_from_tuples_is_as_column_of_its_values(values, k) -> None:
    """``read_column`` (one pass for floats or ints like the first value; booleans by
    ``as_column``) gives exactly what ``as_column`` makes of the same values: dtype, values,
    or the objects."""
    from cepflow.runtime.rows import read_column

    tuples = [(None,) * k + (v, "x") for v in values]
    got, want = read_column(tuples, k), as_column(list(values))
    assert got.dtype == want.dtype and len(got) == len(want)
    if want.dtype == object:
        assert all(a is b for a, b in zip(got, want, strict=True))
    else:
        assert np.array_equal(got, want, equal_nan=want.dtype.kind == "f")
