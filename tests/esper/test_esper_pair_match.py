"""The Esper pair kernel's lazy complex events read like the ones Matcher._complete builds,
and pickle and copy as plain complex events."""

from __future__ import annotations

import copy
import pickle

from hypothesis import given
from hypothesis import strategies as st

from cepflow.events.event import ComplexEvent, Event
from cepflow.runtime.kernels.pair import _PairMatch, _PairShape

values = st.one_of(st.integers(), st.text(max_size=3), st.none(), st.booleans())


@given(st.lists(values, max_size=4), st.lists(values, max_size=4),
       st.lists(st.lists(values, max_size=3), max_size=2), st.data())
def test_lazy_fields_equal_eager_ones(ap: list, bp: list, more: list[list],
                                      data: st.DataObject) -> None:
    """A pair's (two events) or a chain's (three or four)."""
    a = Event("A", tuple(ap), 1.0, seq=3)
    b = Event("B", tuple(bp), 2.5, id="b1")
    rest = [Event("C", tuple(cp), 2.5 + j, id=f"c{j}") for j, cp in enumerate(more)]
    parts = (a, b, *rest)
    ts = parts[-1].ts
    row = [*ap, *bp, *(x for cp in more for x in cp), ts, None]
    pick = data.draw(st.lists(st.integers(0, len(row) - 1), max_size=4))
    names = [f"p{j}" for j in range(len(pick))]
    lazy = _PairMatch(parts, _PairShape("P", names, pick), 7)
    params = tuple(row[i] for i in pick)
    eager = ComplexEvent("P", params, ts, dict(zip(names, params, strict=True)), list(parts), 7)
    assert (lazy.type, lazy.ts, lazy.match_id, lazy.id, lazy.seq) == ("P", ts, 7, None, -1)
    assert lazy.params == eager.params and lazy.bindings == eager.bindings
    assert lazy.parts == parts and lazy.event_refs == [3, "b1", *(e.id for e in rest)]
    assert lazy == eager and hash(lazy) == hash(eager)
    assert lazy.bindings is lazy.bindings  # made once
    lazy.seq = 11
    for twin in (pickle.loads(pickle.dumps(lazy)), copy.copy(lazy)):
        assert type(twin) is ComplexEvent and twin == eager
        assert (twin.seq, twin.match_id, twin.params) == (11, 7, params)
