"""The Esper pair kernel's lazy complex events read like the ones Matcher._complete builds,
and pickle and copy as plain complex events."""

from __future__ import annotations

import copy
import pickle

from hypothesis import given
from hypothesis import strategies as st

from cepflow.events.event import ComplexEvent, Event
from cepflow.runtime.kernels.pair import _PairMatch, _PairShape, fill_params

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
    # (and the select list's literals after the row: air quality's ``'CO' as pollutant``)
    consts = tuple(data.draw(st.lists(values, max_size=2)))
    row += consts
    pick = data.draw(st.lists(st.integers(0, len(row) - 1), max_size=4))
    names = [f"p{j}" for j in range(len(pick))]
    lazy = _PairShape("P", names, pick, consts).kind(parts, 7)
    assert isinstance(lazy, _PairMatch)
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


@given(st.lists(values, max_size=4), st.lists(values, max_size=2), st.data())
def test_one_event_matches_equal_eager_ones(ap: list, consts: list,
                                            data: st.DataObject) -> None:
    """A single stage's match (``every a = A(f)``) with literals reads, compares, pickles and
    copies as the complex event the token path builds; and its parameters made column by
    column (fill_params, for a time batch reading them all) are those its lazy read gives."""
    a = Event("A", tuple(ap), 4, seq=9)
    row = [*ap, 4, None, *consts]
    pick = data.draw(st.lists(st.integers(0, len(row) - 1), max_size=5))
    names = [f"p{j}" for j in range(len(pick))]
    shape = _PairShape("P", names, pick, tuple(consts), len(ap))
    lazy, filled = shape.kind((a,), 5), shape.kind((a,), 6)
    params = tuple(row[i] for i in pick)
    assert lazy.params == params  # (read lazily first: fill_params leaves it as it is)
    fill_params([filled, lazy, eager_like := ComplexEvent("Q", (), 4, {}, [a])])
    assert eager_like.params == ()
    eager = ComplexEvent("P", params, 4, dict(zip(names, params, strict=True)), [a], 5)
    assert lazy.parts == (a,) and lazy.ts == 4 and lazy.event_refs == [9]
    assert lazy.params == params and filled.params == params and lazy == eager
    assert [type(v) for v in filled.params] == [type(v) for v in params]
    assert lazy.bindings == eager.bindings and hash(lazy) == hash(eager)
    for twin in (pickle.loads(pickle.dumps(lazy)), copy.copy(filled)):
        assert type(twin) is ComplexEvent and twin.parts == (a,)
        assert twin.params == params


def test_shapes_differing_in_a_literals_type_make_other_kinds() -> None:
    """A kind is shared by the shapes of equal name, names, picks and literals — the literals
    by type too: ``1 as grade`` and ``true as grade`` are equal dictionary keys, but the
    matches' parameters differ (found by test_select_constants: a kind reused across them)."""
    a = Event("A", (5,), 1.0)
    made = [_PairShape("G", ["k", "grade"], [0, 3], (c,), 1).kind((a,), 1)
            for c in (1, True, 1.0, 1)]
    assert [repr(m.params) for m in made] == ["(5, 1)", "(5, True)", "(5, 1.0)", "(5, 1)"]
    assert type(made[0]) is type(made[3]) and len({type(m) for m in made}) == 3
