"""Out-of-order policy: reorder within the allowed lateness, report the rest, merge sources."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepflow.events.event import Event, SideChannel
from cepflow.inputs import LateEventError, merge, reorder


def events_at(*stamps: float) -> list[Event]:
    return [Event("E", (), ts, id=i) for i, ts in enumerate(stamps)]


class Source:
    """An event source that counts how many events have been pulled from it."""

    def __init__(self, events: list[Event]) -> None:
        self.events = events
        self.pulled = 0

    def __iter__(self) -> Iterator[Event]:
        for e in self.events:
            self.pulled += 1
            yield e


@settings(max_examples=200)
@given(
    stamps=st.lists(st.integers(0, 60), max_size=40),
    lateness=st.integers(0, 25),
)
def test_reorder_property(stamps: list[int], lateness: int) -> None:
    events = events_at(*stamps)
    source = Source(events)
    side = SideChannel()
    out: list[Event] = []
    pulled_at_release: list[int] = []
    for e in reorder(source, lateness, side):
        out.append(e)
        pulled_at_release.append(source.pulled)
    late = [r.record for r in side.late]

    # Sorted by ts, ties in arrival order.
    assert [(e.ts, e.id) for e in out] == sorted((e.ts, e.id) for e in out)
    # Nothing lost, nothing duplicated: output and late reports partition the input.
    assert sorted(e.id for e in out + late) == list(range(len(events)))
    # Late only when the lateness bound was exceeded.
    for e in late:
        newest_before = max(x.ts for x in events[: e.id])
        assert newest_before - e.ts > lateness
    # Released exactly when the watermark reaches its ts (or at the end), never earlier.
    running_max = [max(x.ts for x in events[: i + 1]) for i in range(len(events))]
    for e, pulled in zip(out, pulled_at_release, strict=True):
        trigger = next(
            (i for i in range(e.id, len(events)) if running_max[i] - lateness >= e.ts), None
        )
        assert pulled == (len(events) if trigger is None else trigger + 1)
    assert all("late by" in r.reason and r.field == "ts" for r in side.late)


@given(stamps=st.lists(st.integers(0, 10**6), max_size=40), lateness=st.integers(0, 100))
def test_reorder_keeps_sorted_input_unchanged(stamps: list[int], lateness: int) -> None:
    events = events_at(*sorted(stamps))
    side = SideChannel()
    assert list(reorder(events, lateness, side)) == events
    assert side.late == []


def test_reorder_repairs_within_lateness() -> None:
    side = SideChannel()
    out = list(reorder(events_at(10, 5, 20, 12, 30), 10, side))
    assert [e.ts for e in out] == [5, 10, 12, 20, 30]
    assert side.late == []


def test_reorder_reports_late_with_watermark() -> None:
    side = SideChannel()
    out = list(reorder(events_at(10, 30, 15, 5), 10, side, source="s1"))
    assert [e.ts for e in out] == [10, 15, 30]
    (late,) = side.late
    assert late.record.ts == 5
    assert (late.source, late.location) == ("s1", "position 3 (id 3)")
    assert late.reason == "late by 10 ms: events up to 15 were already released (watermark 20)"


def test_reorder_zero_lateness_requires_order() -> None:
    source = Source(events_at(1, 2, 2, 1, 3))
    side = SideChannel()
    it = reorder(source, 0, side)
    assert next(it).ts == 1 and source.pulled == 1  # released immediately
    assert [e.ts for e in it] == [2, 2, 3]
    assert [r.record.ts for r in side.late] == [1]


def test_reorder_without_side_channel_raises() -> None:
    with pytest.raises(LateEventError, match="late by 2 ms"):
        list(reorder(events_at(5, 3), 0))


def test_reorder_releases_everything_at_end() -> None:
    assert [e.ts for e in reorder(events_at(3, 1, 2), 1000)] == [1, 2, 3]


@pytest.mark.parametrize("bad", [-1, float("nan")])
def test_reorder_rejects_bad_lateness(bad: float) -> None:
    with pytest.raises(ValueError):
        list(reorder([], bad))


@given(st.lists(st.lists(st.integers(0, 20), max_size=10), max_size=5))
def test_merge_property(streams: list[list[int]]) -> None:
    sources = [
        [Event("E", (), ts, id=(i, j)) for j, ts in enumerate(sorted(s))]
        for i, s in enumerate(streams)
    ]
    out = list(merge(*sources))
    assert [(e.ts, e.id) for e in out] == sorted((e.ts, e.id) for s in sources for e in s)


def test_merge_rejects_unordered_stream() -> None:
    with pytest.raises(ValueError, match="stream 1 is not ordered"):
        list(merge(events_at(1, 2), events_at(3, 1)))
