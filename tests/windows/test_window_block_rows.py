"""Window blocks of the program split (runtime/kernels/window_block.py) as session 43 made
them: an aggregated time batch's rows placed column-wise (a row per group at each posted
boundary, a row of the empty values at the next posted boundary for a group gone), rows made
by one event whose parts are made when read (``_Arrived``). Hand-derived cases from Esper's
time batch semantics (processor.PerGroupRows), each against the per-event engine too, and
spies that the block is taken."""

import copy
import itertools
import pickle

import pytest

from cepflow.events.event import ComplexEvent, Event
from cepflow.language.epl import parse_epl
from cepflow.loader import load_module
from cepflow.runtime.engine import Engine
from cepflow.runtime.kernels import window_block
from cepflow.runtime.kernels.window_block import _Arrived, arrived_kind

SCHEMA = "create schema T(k string, v integer);\n"
GROUPED = (SCHEMA + "@Name('M')\ninsert into M\nselect t.k as k, count(*) as c, avg(t.v) as a\n"
           "from T.win:time_batch(10 msec) as t\ngroup by t.k;\n")
UNGROUPED = (SCHEMA + "@Name('M')\ninsert into M\nselect count(*) as c, sum(t.v) as s\n"
             "from T.win:time_batch(10 msec) as t;\n")
COUNTER = (SCHEMA + "@Name('C')\ninsert into C\nselect count(t.v) as n\n"
           "from T(t.v >= 2).win:time(5 msec) as t;\n")


def stream(spec: list[tuple[str, int, int]]) -> list[Event]:
    out = []
    for i, (k, v, ts) in enumerate(spec):
        e = Event("T", (k, v), ts, id=f"e{i}")
        e.seq = i
        out.append(e)
    return out


def rows(found: list[ComplexEvent]) -> list[tuple]:
    return [(m.type, m.ts, m.params, m.match_id, tuple(p.id for p in m.parts)) for m in found]


def run_both(text: str, spec: list, cuts: tuple[int, ...] = ()) -> list[tuple]:
    """The split's rows (batches cut at ``cuts``, finished) == the per-event engine's."""
    prog = load_module(parse_epl(text))
    split, ref = Engine(prog), Engine(prog)
    out: list[ComplexEvent] = []
    bounds = [0, *cuts, len(spec)]
    evs = stream(spec)
    for lo, hi in itertools.pairwise(bounds):
        if hi > lo:
            out += split.process_batch(evs[lo:hi])
    out += split.finish(close_windows=True)
    want: list[ComplexEvent] = []
    for e in stream(spec):
        want += ref.process(e)
    want += ref.finish(close_windows=True)
    assert rows(out) == rows(want)
    return rows(out)


@pytest.fixture
def planned(monkeypatch):
    """The window blocks the split made (a spy on plan_window)."""
    made: list = []
    real = window_block.plan_window

    def spy(*a, **kw):
        b = real(*a, **kw)
        made.append(b)
        return b

    monkeypatch.setattr(window_block, "plan_window", spy)
    import cepflow.runtime.kernels.split as split

    monkeypatch.setattr(split, "plan_window", spy)
    return made


def test_grouped_batch_rows_and_empty_rows_at_the_next_posted_boundary(planned) -> None:
    """x@1 y@2 x@5 | (boundary 11: x c2 a1.5, y c1 a2.0) | y@14 | (21: y c1 a7; x gone:
    x c0 a null) | nothing | (31: y gone: y c0 null) | (41: nothing posted) | x@45 z@46 |
    (51 at the end, then 61 empty): the empty rows come at the next posted boundary, after
    its items, in the order of the batch they were last in."""
    spec = [("x", 1, 1), ("y", 2, 2), ("x", 2, 5), ("y", 7, 14), ("x", 3, 45), ("z", 4, 46)]
    got = run_both(GROUPED, spec)
    assert [(t, p) for _ty, t, p, _id, _parts in got] == [
        (11, ("x", 2, 1.5)), (11, ("y", 1, 2.0)),
        (21, ("y", 1, 7.0)), (21, ("x", 0, None)),
        (31, ("y", 0, None)),
        (51, ("x", 1, 3.0)), (51, ("z", 1, 4.0)),
        (61, ("x", 0, None)), (61, ("z", 0, None))]  # (finish: the empty batch after)
    assert any(b is not None for b in planned)


def test_ungrouped_batches_cut_anywhere(planned) -> None:
    spec = [("a", v, ts) for v, ts in [(1, 0), (2, 3), (3, 9), (4, 10), (5, 31), (6, 32),
                                        (7, 33), (8, 70)]]
    whole = run_both(UNGROUPED, spec)
    for cut in range(1, len(spec)):
        assert run_both(UNGROUPED, spec, (cut,)) == whole
    assert [(t, p) for _ty, t, p, *_ in whole][:4] == [(10, (3, 6)), (20, (1, 4)),
                                                        (30, (0, None)), (40, (3, 18))]
    assert any(b is not None for b in planned)


def test_sliding_rows_keep_their_event_as_parts(planned) -> None:
    """Counter's shape: a row per arrival (count after it, its event as parts) and per
    expiry instant (no parts)."""
    spec = [("a", 3, 0), ("a", 1, 1), ("a", 2, 2), ("a", 5, 6), ("a", 2, 20)]
    got = run_both(COUNTER, spec)
    assert [(t, p, parts) for _ty, t, p, _id, parts in got] == [
        (0, (1,), ("e0",)), (2, (2,), ("e2",)), (5, (1,), ()), (6, (2,), ("e3",)),
        (7, (1,), ()), (11, (0,), ()), (20, (1,), ("e4",)), (25, (0,), ())]
    assert any(b is not None for b in planned)


def test_arrived_rows_are_plain_complex_events() -> None:
    e = Event("T", ("x", 1), 5, id="e")
    kind = arrived_kind("C", ("n",))
    row = kind((3,), 5, e)
    assert isinstance(row, _Arrived) and row.parts == (e,) and row.parts[0] is e
    assert row.bindings == {"n": 3} and row.match_id == -1 and row.seq == -1
    plain = ComplexEvent("C", (3,), 5, {"n": 3}, (e,))
    for other in (pickle.loads(pickle.dumps(kind((3,), 5, e))), copy.deepcopy(row),
                  copy.copy(kind((3,), 5, e))):
        assert (other.type, other.params, other.ts, other.bindings,
                [p.id for p in other.parts]) == (plain.type, plain.params, plain.ts,
                                                 plain.bindings, ["e"])
    row.parts = (e, e)  # (settable, as any complex event's)
    assert row.parts == (e, e)
