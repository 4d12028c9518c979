"""ArrowRows.lookup: the events of an Arrow batch of the event layout, made row by row for a
few rows (ArrowRows._event) or decoded as a batch, equal the reader's events (decode) — values
of every kind spread over several slot columns, times whole or not, ids named, numbered or
none, types with fewer parameters than the layout — before and after a restore's shift."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cepflow.events.event import Event
from cepflow.inputs.columnar import decode, encode
from cepflow.runtime.arrow_rows import ArrowRows

VALUES = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([0.5, -1.25]),
                   st.sampled_from(["x", "é", ""]))
ARITIES = {"A": 3, "B": 1, "C": 0}


@st.composite
def batches(draw: st.DrawFn) -> list[Event]:
    out = []
    for i, t in enumerate(draw(st.lists(st.sampled_from(sorted(ARITIES)), min_size=1,
                                        max_size=12))):
        params = tuple(draw(VALUES) for _ in range(ARITIES[t]))
        ts = draw(st.sampled_from([i, i + 0.5]))
        ident = draw(st.sampled_from([None, f"e{i}", 100 + i]))
        out.append(Event(t, params, ts, id=ident, seq=i))
    return out


def form(e: Event) -> tuple:
    return (e.type, tuple((type(v), v) for v in e.params), type(e.ts), e.ts, e.id, e.seq)


@settings(max_examples=150, deadline=None)
@given(batches(), st.lists(st.integers(0, 11), max_size=8), st.booleans())
def test_lookup_equals_decode(evs, asks, shifted) -> None:
    batch = encode(evs, 3, [None] * len(evs), [None] * len(evs))
    rows = ArrowRows(batch, ARITIES, 3)
    if shifted:  # (a restore: the reader's numbers shifted by the saved counter)
        class Counters:
            input, renumber, shift = 50, True, None

            def continued(self, seq: int) -> int:
                self.shift = self.input
                return seq + self.input

        class Host:
            counters = Counters()

        class Eng:
            host = Host()

        rows.number(Eng())
        for e in evs:
            e.seq += 50
    want = [form(e) for e in decode(rows.batch, ARITIES, 3)]
    assert want == [form(e) for e in evs]
    for r in asks:  # (a few rows: value by value)
        if r < len(evs):
            assert form(rows.lookup(np.array([r]))[r]) == want[r]
    made = rows.lookup(np.arange(len(evs)))  # (the rest: decoded as a batch when more than a few)
    assert [form(made[r]) for r in range(len(evs))] == want


INTS = st.one_of(st.integers(-(2**63), 2**63 - 1), st.integers(-3, 3))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(INTS, INTS, st.none(), st.sampled_from([0.5, "x", True])),
                min_size=1, max_size=12),
       st.lists(st.integers(0, 11), max_size=12, unique=True))
def test_column_equals_the_coded_column(values, asked) -> None:
    """ArrowRows.column (an integer slot alone, without nulls: read directly) gives the column
    Rows.column makes of the coded values — the same values, the same dtype — whatever the
    parameter holds."""
    from cepflow.runtime.rows import Rows

    evs = [Event("B", (v,), i, seq=i) for i, v in enumerate(values)]
    rows = ArrowRows(encode(evs, 3, [None] * len(evs), [None] * len(evs)), ARITIES, 3)
    for pick in (np.arange(len(evs)), np.array(sorted(r for r in asked if r < len(evs)),
                                                dtype=np.int64)):
        got, want = rows.column(0, pick), Rows.column(rows, 0, pick)
        assert got.dtype == want.dtype
        assert [(type(v), v) for v in got.tolist()] == [(type(v), v) for v in want.tolist()]


@settings(max_examples=150, deadline=None)
@given(batches(), st.lists(st.integers(0, 11), max_size=36))
def test_refs_name_each_row_by_its_id_else_its_number(evs, asked) -> None:
    """ArrowRows.refs: the text naming each asked row's event — its id, else its number —,
    for few rows and for as many as half the batch or more (then the numbers are made texts
    before they are gathered), rows repeated and in any order."""
    import pyarrow as pa

    rows = ArrowRows(encode(evs, 3, [None] * len(evs), [None] * len(evs)), ARITIES, 3)
    pick = [r for r in asked if r < len(evs)]
    got = rows.refs(pa.array(pick, pa.int64())).to_pylist()
    assert got == [str(evs[r].id if evs[r].id is not None else evs[r].seq) for r in pick]
