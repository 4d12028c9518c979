"""movingAverage column-wise (:class:`MovingAverages`, the bulk path's form) gives the very
floats of the per-object accumulator (:class:`MovingAverage`): bit for bit, -0.0, infinities
and NaN included, through starts, single observations, blocks, deletions (rows reused) and
taking over accumulators midway."""

from __future__ import annotations

import math

from hypothesis import example, given, settings
from hypothesis import strategies as st

from cepflow.queries import MovingAverage
from cepflow.queries.functions import MovingAverages

FLOAT = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from(
    [0.0, -0.0, 0.1, 0.2, 0.3, 1e308, -1e308, 5e-324, 1.0, 3.0])
OBJ = st.integers(0, 7)  # 6 and 7 start later
OP = st.one_of(
    st.tuples(st.just("add"), OBJ, FLOAT),
    st.tuples(st.just("block"), st.sampled_from([(0, 1, 2), (0, 1, 2, 3, 4, 5), (4, 1)]),
              st.lists(FLOAT, min_size=6, max_size=6)),  # (the same objects again)
    st.tuples(st.just("drop"), OBJ),
    st.tuples(st.just("start"), OBJ, FLOAT),
)


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a.hex() == b.hex()


@settings(max_examples=300, deadline=None)
@example(2, [1.0] * 6, [("block", (0, 1, 2), [2.0] * 6), ("drop", 0), ("start", 6, 5.0),
                       ("start", 0, 7.0), ("block", (0, 1, 2), [3.0] * 6)], 30)  # rows moved
@given(st.integers(1, 4), st.lists(FLOAT, min_size=6, max_size=6), st.lists(OP, max_size=30),
       st.integers(0, 30))
def test_columns_give_the_accumulators_floats(window, firsts, ops, takeover):
    accs: dict[int, MovingAverage] = {}
    for obj, value in enumerate(firsts):
        accs[obj] = MovingAverage(window)
        accs[obj].add(value)
    columns = MovingAverages(window)
    columns.load(accs)
    for k, op in enumerate(ops):
        if k == takeover:  # the accumulators as they are now, taken over again
            columns = MovingAverages(window)
            columns.load(accs)
        if op[0] == "add":
            moved = columns.add(op[1], op[2])
            if op[1] not in accs:
                assert moved is None
                continue
            old = accs[op[1]].value()
            accs[op[1]].add(op[2])
            assert moved is not None and same(moved[0], old)
            assert same(moved[1], accs[op[1]].value())
        elif op[0] == "block":
            rows = [(obj, v) for obj, v in zip(op[1], op[2], strict=False) if obj in accs]
            olds, news = columns.observe([o for o, _ in rows], [v for _, v in rows])
            for (obj, value), old, new in zip(rows, olds.tolist(), news.tolist(), strict=True):
                assert same(old, accs[obj].value())
                accs[obj].add(value)
                assert same(new, accs[obj].value())
        elif op[0] == "drop" and op[1] in accs:
            assert same(columns.drop(op[1]), accs.pop(op[1]).value())
        elif op[0] == "start" and op[1] not in accs:
            accs[op[1]] = MovingAverage(window)
            accs[op[1]].add(op[2])
            assert same(columns.start(op[1], op[2]), accs[op[1]].value())
        for obj, acc in accs.items():
            assert same(columns.value(obj), acc.value())
