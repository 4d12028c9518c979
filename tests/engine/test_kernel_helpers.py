"""The column kernel's bindings helper: the same dicts as ``dict(zip(names, row))``."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cepflow.runtime.batch import _dicts


@given(st.integers(0, 5), st.integers(0, 6))
def test_dicts_equal_dict_of_zip(arity: int, n: int) -> None:
    names = [f"v{j}" for j in range(arity)]
    cols = [[(i, j) for i in range(n)] for j in range(arity)]
    rows = list(zip(*cols, strict=True)) if cols else [()] * n
    got = _dicts(names, cols, n)
    assert got == [dict(zip(names, r, strict=True)) for r in rows]
    assert len({id(d) for d in got}) == n  # fresh dicts, one per row
