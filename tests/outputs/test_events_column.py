"""The ``events`` column the match writer makes (``match_batch``: one flat column with
offsets, integer ids cast by Arrow) equals each match's ``event_refs`` as ``str`` gives them —
whatever ids the input events carry (none: their stream positions; integers of any size,
negative, text, floats, booleans) and however deep the matches nest."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from cepflow.events.event import ComplexEvent, Event
from cepflow.outputs.records import match_batch

IDS = (st.none() | st.integers(-3, 10**6) | st.integers() | st.text(max_size=3)
       | st.floats(allow_nan=False) | st.booleans())


@st.composite
def events(draw: st.DrawFn) -> Event:
    """An input event with an id or with its stream position only, or a match of such."""
    if draw(st.integers(0, 4)) == 0:
        parts = draw(st.lists(events(), max_size=3))
        return ComplexEvent("Q", (), 0, {}, parts)
    return Event("A", (), 0, id=draw(IDS), seq=draw(st.integers(0, 10**9)))


@settings(deadline=None, max_examples=300)
@given(st.lists(st.lists(events(), max_size=4), max_size=8))
@example([[Event("A", (), 0, seq=3), Event("A", (), 0, id=2**70)]])  # (beyond 64 bits)
@example([[Event("A", (), 0, seq=1)], [], [Event("A", (), 0, id=-4)]])  # (no event)
@example([])
def test_events_column_is_each_matchs_refs_as_text(parts: list[list[Event]]) -> None:
    ms = [ComplexEvent("P", (), i, {}, p) for i, p in enumerate(parts)]
    assert match_batch(ms).column("events").to_pylist() == [
        [str(r) for r in m.event_refs] for m in ms]
