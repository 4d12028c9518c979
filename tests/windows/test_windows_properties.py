"""Properties over random streams: incremental aggregates equal a naive recomputation.

The oracle below knows nothing of the runtime's deques, running sums or group states: at every
moment Esper's rules (docs/windows.md) say a row is due, it recomputes every aggregate from the
list of events the window holds then. Streams have equal timestamps, nulls, several groups and
gaps longer than the windows; every window kind is tried, grouped and ungrouped, one row per
group and one row per event. Also checked: the window never holds more than it defines.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from windows_helpers import schema, statement

from cepflow.events.event import Event
from cepflow.windows import WindowRunner, WindowSpec

SCHEMAS = {"R": schema("R", "k", "v", "w")}
AGGS = ["count(*)", "count(v)", "sum(v)", "avg(v)", "min(v)", "max(v)"]
NAIVE: dict[str, Callable[[list[Any]], Any]] = {
    "count(*)": len,
    "count(v)": lambda vs: sum(v is not None for v in vs),
    "sum(v)": lambda vs: sum(v for v in vs if v is not None) if any(
        v is not None for v in vs) else None,
    "avg(v)": lambda vs: (sum(v for v in vs if v is not None)
                          / sum(v is not None for v in vs)) if any(
        v is not None for v in vs) else None,
    "min(v)": lambda vs: min((v for v in vs if v is not None), default=None),
    "max(v)": lambda vs: max((v for v in vs if v is not None), default=None),
}

Ev = tuple[float, Any, Any, Any]  # ts, k, v, w


class Oracle:
    """Esper's output rules evaluated naively from the window contents."""

    def __init__(self, window: WindowSpec, aggs: list[str], grouped: bool, per_event: bool
                 ) -> None:
        self.window, self.aggs, self.grouped, self.per_event = window, aggs, grouped, per_event

    def key(self, e: Ev) -> Any:
        return e[1] if self.grouped else ()

    def values(self, members: list[Ev]) -> list[Any]:
        return [NAIVE[a]([m[2] for m in members]) for a in self.aggs]

    def row(self, now: float, rep: Ev, members: list[Ev]) -> tuple[Any, ...]:
        head = (rep[1],) if self.grouped else ()
        if self.per_event:
            head = (*head, rep[3])
        return (now, *head, *self.values(members))

    def update(self, now: float, new: list[Ev], old: list[Ev], window: list[Ev]
               ) -> list[tuple[Any, ...]]:
        """Rows of one update; ``window`` = the events whose aggregates count after it."""
        def members(k: Any) -> list[Ev]:
            return [x for x in window if self.key(x) == k]
        if self.per_event:
            return [self.row(now, e, members(self.key(e))) for e in new]
        reps: dict[Any, Ev] = {}
        for e in [*new, *old]:
            reps.setdefault(self.key(e), e)
        return [self.row(now, rep, members(k)) for k, rep in reps.items()]

    def run(self, evs: list[Ev], end: float) -> list[tuple[Any, ...]]:
        w = self.window
        kind = w.kind
        out: list[tuple[Any, ...]] = []
        if kind == "time":
            held: list[Ev] = []
            for e in [*evs, None]:
                t = end if e is None else e[0]
                for instant in sorted({x[0] + w.size for x in held if x[0] + w.size <= t}):
                    old = [x for x in held if x[0] + w.size == instant]
                    held = [x for x in held if x[0] + w.size != instant]
                    out += self.update(instant, [], old, held)
                if e is not None:
                    held.append(e)
                    out += self.update(e[0], [e], [], held)
        elif kind == "length":
            n = int(w.size)
            held = []
            for e in evs:
                held.append(e)
                mine = [x for x in held if self.key(x) == self.key(e)] if w.per_group else held
                old = [mine[0]] if len(mine) > n else []
                held = [x for x in held if x is not old[0]] if old else held
                out += self.update(e[0], [e], old, held)
        elif kind == "length_batch":
            n = int(w.size)
            prev: dict[Any, list[Ev]] = {}
            cur: dict[Any, list[Ev]] = {}
            for e in evs:
                part = self.key(e) if w.per_group else ()
                cur.setdefault(part, []).append(e)
                if len(cur[part]) == n:
                    batch = cur.pop(part)
                    out += self.update(e[0], batch, prev.get(part, []), batch)
                    prev[part] = batch
        else:  # time_batch: batch [b - size, b) closes at b = r + k * size
            if evs:
                r = evs[0][0] if w.reference_point is None else w.reference_point
                k = math.floor((evs[0][0] - r) / w.size) + 1
                while r + k * w.size <= end:
                    b = r + k * w.size
                    cur_b = [x for x in evs if b - w.size <= x[0] < b]
                    prev_b = [x for x in evs if b - 2 * w.size <= x[0] < b - w.size]
                    if cur_b or prev_b:
                        out += self.update(b, cur_b, prev_b, cur_b)
                    k += 1
        return out


def close(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if isinstance(x, float) or isinstance(y, float):
            if x is None or y is None or not math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-6):
                return False
        elif x != y:
            return False
    return True


values = st.one_of(st.none(), st.integers(-20, 20),
                   st.floats(-100, 100, allow_nan=False).map(lambda f: round(f, 2)))
streams = st.lists(st.tuples(st.sampled_from([0, 0, 1, 2, 3, 7, 25]), st.sampled_from("abc"),
                             values, st.integers(0, 9)), max_size=40)
windows = st.one_of(
    st.builds(WindowSpec.time, st.sampled_from([1, 5, 10, 12.5])),
    st.builds(WindowSpec.length, st.integers(1, 5)),
    st.builds(WindowSpec.length, st.integers(1, 4), st.just(True)),
    st.builds(WindowSpec.time_batch, st.sampled_from([5, 10]),
              st.one_of(st.none(), st.sampled_from([-3, 0, 4, 100]))),
    st.builds(WindowSpec.length_batch, st.integers(1, 5)),
    st.builds(WindowSpec.length_batch, st.integers(1, 4), st.just(True)),
)


@settings(max_examples=90, deadline=None)
@given(streams, windows, st.lists(st.sampled_from(AGGS), min_size=1, max_size=4, unique=True),
       st.booleans(), st.booleans(), st.integers(0, 30))
def test_incremental_output_equals_naive_recomputation(
        gaps: list, window: WindowSpec, aggs: list[str], grouped: bool, per_event: bool,
        tail: int) -> None:
    grouped = grouped or window.per_group
    evs: list[Ev] = []
    t = 0.0
    for gap, k, v, w in gaps:
        t += gap
        evs.append((t, k, v, w))
    end = t + tail
    select = [*(["k"] if grouped else []), *(["w"] if per_event else []), *aggs]
    stmt = statement(select, window, group_by=["k"] if grouped else [])
    runner = WindowRunner(stmt, SCHEMAS)
    got: list[tuple[Any, ...]] = []
    for i, (ts, k, v, w) in enumerate(evs):
        got += [(e.ts, *e.params) for e in runner.process(Event("R", (k, v, w), ts))]
        check_bounds(runner, window, ts, evs[:i + 1], grouped)
    got += [(e.ts, *e.params) for e in runner.advance_to(end)]
    expected = Oracle(window, aggs, grouped, per_event).run(evs, end)
    assert len(got) == len(expected), (got, expected)
    for g, x in zip(got, expected, strict=True):
        assert close(g, x), (g, x)


def check_bounds(runner: WindowRunner, window: WindowSpec, now: float, seen: list[Ev],
                 grouped: bool) -> None:
    """Memory follows the window: it holds exactly the events its definition names, and
    aggregate state exists only for the groups of those events."""
    def keys(es: list[Ev]) -> set[Any]:
        return {e[1] if grouped else () for e in es}

    n = int(window.size)
    by_key: dict[Any, list[Ev]] = {}
    for e in seen:
        by_key.setdefault(e[1], []).append(e)
    if window.kind == "time":
        held = [e for e in seen if now - window.size < e[0] <= now]
    elif window.kind == "length" and not window.per_group:
        held = seen[-n:]
    elif window.kind == "length":
        held = [e for es in by_key.values() for e in es[-n:]]
    elif window.kind == "length_batch" and not window.per_group:
        held = seen[len(seen) - len(seen) % n:]
    elif window.kind == "length_batch":
        held = [e for es in by_key.values() for e in es[len(es) - len(es) % n:]]
    else:  # time batch: at most what arrived since the last boundary
        assert runner.window_size <= len(seen)
        assert runner.group_count <= runner.window_size
        return
    assert runner.window_size == len(held)
    assert runner.group_count == len(keys(held))


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 30), st.sampled_from([10, 100]), st.integers(0, 2**16))
def test_time_window_memory_follows_the_window_not_the_stream(rate: int, size: int,
                                                              seed: int) -> None:
    # a long stream: the window holds what arrived in the last `size` time units, and only
    # groups with events in the window keep state
    import random
    rng = random.Random(seed)
    stmt = statement(["k", "count(*)", "max(v)"], WindowSpec.time(size), group_by=["k"])
    runner = WindowRunner(stmt, SCHEMAS)
    recent: list[tuple[float, Any]] = []
    t = 0.0
    for _ in range(400):
        t += rng.random() * 10 / rate
        k = rng.randrange(50)
        runner.process(Event("R", (k, rng.random(), 0), t))
        recent = [(ts, kk) for ts, kk in [*recent, (t, k)] if ts > t - size]
        assert runner.window_size == len(recent)
        assert runner.group_count == len({kk for _, kk in recent})
