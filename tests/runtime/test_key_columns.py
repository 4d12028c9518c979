"""How the pair kernel reads a key column of an event list's batch (kernels.pair.keyed_codes):
a key of texts or nulls — known from its first row, since rows.as_column makes such a column
objects whatever follows — is coded from the values themselves, without also being read into
a numpy column; any other first value reads the column and decides by its dtype as before.
Which way a key goes changes no match (tests/esper/test_esper_kernel.py's mixed keys, against
the per-event engine); here: the decision equals the column's dtype, and the text keys of a
batch are not read as a column at all."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st
from tests.esper.test_esper_kernel import rows, state

from cepflow.events.event import Event
from cepflow.language.epl import parse_epl
from cepflow.loader import load, load_module
from cepflow.runtime.engine import Engine
from cepflow.runtime.kernels.pair import _joined, _object_keys
from cepflow.runtime.rows import EventRows, TypeColumns, as_column
from cepflow.runtime.state import restore_state, save_state

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


EX = Path(__file__).resolve().parents[2] / "examples"


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(30, 60), st.integers(0, 2)),
                min_size=20, max_size=300),
       st.integers(3, 40), st.integers(3, 40), st.integers(0, 300))
def test_contractions_batches_equal_event_by_event(spec, size1, size2, cut) -> None:
    """The contractions example (Duration: ``every a -> b`` with a guard on both events and no
    window, so instances stay open batch after batch — those completing in a later batch take
    their first event and its fields from before it, kernels.pair._with_held; Counter: the
    sliding window) under ``Engine.run`` in batches of any size, with a save/restore between
    two runs, equals the per-event engine: matches (parameters, parts, ids), statistics, open
    instances, saved state, end of input; and no batch goes event by event."""
    prog = load(EX / "contractions" / "contractions.epl")

    def stream() -> list[Event]:
        out, minute = [], 0
        for i, (patient, duration, gap) in enumerate(spec):
            minute += gap
            out.append(Event("Patient", (minute, f"P{patient}", duration), minute * 60_000.0,
                             seq=i))
        return out

    one = Engine(prog, strict_actions=False)
    ref = rows([m for e in stream() for m in one.process(e)])

    def no_step(*_: object) -> None:
        raise AssertionError("a batch went event by event")

    evs = stream()
    cut = min(cut, len(evs))
    many = Engine(prog, strict_actions=False)
    many._one_by_one = no_step  # type: ignore[method-assign]
    got = rows(list(many.run(evs[:cut], batch_size=size1)))
    again = restore_state(Engine(prog, strict_actions=False),
                          json.loads(json.dumps(save_state(many))))
    again.host.stats, many = many.stats, again
    many._one_by_one = no_step  # type: ignore[method-assign]
    got += rows(list(many.run(evs[cut:], batch_size=size2)))
    assert got == ref
    assert many.stats == one.stats
    assert state(many) == state(one)
    assert rows(many.finish(close_windows=True)) == rows(one.finish(close_windows=True))


#: values an instance's variable holds (ints past int64 too, booleans, nulls, texts)
HELD = st.one_of(st.integers(-3, 3), st.sampled_from([2**63, -2**63 - 1, 2**62]),
                 st.floats(allow_nan=False, width=32), st.booleans(), st.none(),
                 st.sampled_from(["a", ""]))


@settings(max_examples=400, deadline=None)
@given(st.lists(HELD, max_size=6), st.lists(HELD, min_size=1, max_size=6))
@example([1], [2**63])  # (int64 then uint64: the list is uint64, numpy's join float64)
@example([2**63], [1, 2])
def test_held_values_joined_as_the_list(held: list, values: list) -> None:
    """``_joined`` (a guard's instance column: held instances, then the batch's new ones)
    equals what it replaces — the batch's column itself when nothing is held, else
    ``as_column`` of the joined list: dtype, and each value (1 told from 1.0 and True)."""
    new = as_column(values)
    want = as_column(held + new.tolist()) if held else new
    got = _joined(held, new)
    assert got.dtype == want.dtype
    assert [(type(v), v) for v in got.tolist()] == [(type(v), v) for v in want.tolist()]
