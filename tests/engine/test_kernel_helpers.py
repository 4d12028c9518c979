"""The column kernels' bulk helpers: the same objects as the one-at-a-time constructors."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cepflow.events.model import ComplexEvent, Event
from cepflow.runtime.batch import _dicts


@given(st.integers(0, 5), st.integers(0, 6))
def test_dicts_equal_dict_of_zip(arity: int, n: int) -> None:
    names = [f"v{j}" for j in range(arity)]
    cols = [[(i, j) for i in range(n)] for j in range(arity)]
    rows = list(zip(*cols, strict=True)) if cols else [()] * n
    got = _dicts(names, cols, n)
    assert got == [dict(zip(names, r, strict=True)) for r in rows]
    assert len({id(d) for d in got}) == n  # fresh dicts, one per row


def test_many_equals_constructor() -> None:
    a, b = Event("A", (1,), 1.0, "a", 0), Event("B", (1,), 2.0, None, 1)
    made = ComplexEvent.many("P", [(1,), (2,)], [2.0, 3.0], [{"x": 1}, {"x": 2}],
                             [(a, b), (b,)], [7, 8])
    one = [ComplexEvent("P", (1,), 2.0, {"x": 1}, [a, b], 7),
           ComplexEvent("P", (2,), 3.0, {"x": 2}, [b], 8)]
    assert made == one
    for m, o in zip(made, one, strict=True):
        assert (m.params, m.id, m.seq, m.match_id, m.parts, m.event_refs) == (
            o.params, o.id, o.seq, o.match_id, o.parts, o.event_refs)
    with pytest.raises(ValueError):
        ComplexEvent.many("P", [(1,)], [1.0, 2.0], [{}], [()], [1])
