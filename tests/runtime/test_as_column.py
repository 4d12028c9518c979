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
