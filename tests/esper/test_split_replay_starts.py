"""The program split's record of the instances a batch opens (kernels.split._Replay): in the
engine's order — by row, phase (the input step, then the cascade), the place of the match
whose cascade opens it, the pattern's place — and, for those a kernel pattern's match opens
(patterns over the kernels' output, kernels.cascade.plan_higher), that match, listed by the
instance's place only (``start_obj``: motorbike opens 340,000 instances at input rows and 60
in cascades). Checked against that order written here as a Python sort; the split's property
tests (test_split_higher) check the ids and matches it gives against the per-event engine."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cepflow.runtime.kernels.split import _Replay


@st.composite
def plan_starts(draw: st.DrawFn) -> list[tuple[list[int], list[int], list[int], int, bool]]:
    """Per plan: its instances' rows (ascending), phases and places of the opening match
    (those of a plan over the kernels' output: the cascade's, else 0), its place in engine
    order, and whether matches open its instances."""
    plans = []
    for _ in range(draw(st.integers(1, 5))):
        rows = sorted(draw(st.lists(st.integers(0, 12), max_size=12)))
        higher = draw(st.booleans())
        phase = [draw(st.integers(0, 1)) if higher else 0 for _ in rows]
        cp = [draw(st.integers(0, 3)) if higher else 0 for _ in rows]
        plans.append((rows, phase, cp, draw(st.integers(0, 6)), higher))
    return plans


@settings(max_examples=200, deadline=None)
@given(plan_starts())
def test_instances_in_engine_order_with_their_opening_matches(spec) -> None:
    objs = [[object() for _ in rows] if higher else None for rows, _, _, _, higher in spec]
    plans = [(np.array(rows, np.int64), np.zeros(0, np.int64), [], lambda ids: None)
             for rows, *_ in spec]
    keys = [(np.array(phase, np.int64), np.array(cp, np.int64), slot, o)
            for (_rows, phase, cp, slot, _h), o in zip(spec, objs, strict=True)]
    replay = _Replay(plans, [False] * len(plans), None, None, keys)
    # (the engine's order: a stable sort of the plans' instances, plan after plan)
    entries = [(row, ph, c, slot, k, i) for k, (rows, phase, cp, slot, _h) in enumerate(spec)
               for i, (row, ph, c) in enumerate(zip(rows, phase, cp, strict=True))]
    entries.sort(key=lambda e: e[:4])
    assert replay.n_starts == len(entries)
    assert replay.start_rows.tolist() == [e[0] for e in entries]
    assert replay.start_who.tolist() == [e[4] for e in entries]
    expected = [None if objs[k] is None else objs[k][i] for *_, k, i in entries]
    assert all(replay.start_obj.get(j) is o for j, o in enumerate(expected))
    assert len(replay.start_obj) == sum(o is not None for o in expected)


def test_pinned_cascade_openings() -> None:
    """Pattern 0 opens instances at rows 0, 2, 5 (input step); pattern 1 (over 0's output)
    at row 2 in the cascade of its matches m0 (place 1) and m1 (place 0), and at row 5 in the
    input step: row 0 → p0; row 2 → p0 (input step), p1 by m1, p1 by m0; row 5 → p1 (input
    step, slot 0 before p0's slot 1), p0."""
    m0, m1 = object(), object()
    plans = [(np.array(rows, np.int64), np.zeros(0, np.int64), [], lambda ids: None)
             for rows in ([0, 2, 5], [2, 2, 5])]
    keys = [(0, 0, 1, None),
            (np.array([1, 1, 0], np.int64), np.array([1, 0, 0], np.int64), 0, [m0, m1, None])]
    replay = _Replay(plans, [False, False], None, None, keys)
    assert replay.start_rows.tolist() == [0, 2, 2, 2, 5, 5]
    assert replay.start_who.tolist() == [0, 0, 1, 1, 1, 0]
    assert [replay.start_obj.get(j) for j in range(6)] == [None, None, m1, m0, None, None]
