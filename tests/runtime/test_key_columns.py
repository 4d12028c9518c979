"""How the pair kernel reads a key column of an event list's batch (kernels.pair.keyed_codes):
a key of texts or nulls — known from its first row, since rows.as_column makes such a column
objects whatever follows — is coded from the values themselves, without also being read into
a numpy column; any other first value reads the column and decides by its dtype as before.
Which way a key goes changes no match (tests/esper/test_esper_kernel.py's mixed keys, against
the per-event engine); here: the decision equals the column's dtype, and the text keys of a
batch are not read as a column at all."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from cepflow.events.event import Event
from cepflow.language.epl import parse_epl
from cepflow.loader import load_module
from cepflow.runtime.engine import Engine
from cepflow.runtime.kernels.pair import _object_keys
from cepflow.runtime.rows import EventRows, TypeColumns

#: values a key column holds: ints (beyond int64 too), floats, NaN, booleans, texts, null
KEY_VALUES = st.one_of(st.integers(-3, 3), st.just(10**20), st.floats(allow_nan=True),
                       st.booleans(), st.sampled_from(["1", "a", ""]), st.none())


@settings(max_examples=300, deadline=None)
@given(st.lists(KEY_VALUES, min_size=1, max_size=20), st.lists(st.booleans(), max_size=20))
def test_object_keys_as_the_column_dtype(values: list, other: list) -> None:
    """``_object_keys`` says a column is objects iff TypeColumns.column gives dtype ``O``
    (rows of another type between them)."""
    events = []
    for i, v in enumerate(values):
        if i < len(other) and other[i]:
            events.append(Event("B", (0,), float(i)))
        events.append(Event("A", (v,), float(i)))
    src = EventRows(events)
    expect = TypeColumns(src, {}).column("A", 0).dtype.kind == "O"
    assert _object_keys(TypeColumns(src, {}), "A", 0) == expect


PROGRAM = ("create schema P(ts integer, id string, d integer);\n"
           "@Name('D')\ninsert into D\nselect a1.id as pid, (a2.ts - a1.ts) as delay\n"
           "from pattern [(every a1 = P(a1.d > 2)) -> a2 = P(a2.id = a1.id and a2.d > 2 "
           "and (a2.ts - a1.ts) <= 5)];\n")


def test_text_keys_are_not_read_as_a_column(monkeypatch) -> None:
    """Contractions' Duration shape: the patients' ids are coded from the values
    (TypeColumns.objects), never read by TypeColumns.column; the matches equal the per-event
    engine's."""
    prog = load_module(parse_epl(PROGRAM, "test"))
    evs = [Event("P", (i // 5, f"p{i % 5}", (i * 7) % 6), float(i)) for i in range(600)]
    one = Engine(prog)
    ref = [(m.type, m.params, m.ts) for e in [Event(e.type, e.params, e.ts) for e in evs]
           for m in one.process(e)]
    read: list[tuple[str, int]] = []
    column = TypeColumns.column

    def spy(self: TypeColumns, t: str, k: int):  # type: ignore[no-untyped-def]
        read.append((t, k))
        return column(self, t, k)

    monkeypatch.setattr(TypeColumns, "column", spy)
    got = [(m.type, m.params, m.ts) for m in Engine(prog).run(evs)]
    assert got == ref and len(got) > 50
    assert ("P", 1) not in read and ("P", 2) in read  # (the filter's column is read)
