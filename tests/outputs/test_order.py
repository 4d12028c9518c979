"""``in_order`` puts the blocks of a batch's match columns in detection order by slices when the
order is a few runs of consecutive rows: it must give what joining the blocks and taking the
rows in rank order gives, for any ranks — one block in order, blocks interleaved (a few
matches from before the batch among the others), any permutation — and any column type."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import example, given, settings
from hypothesis import strategies as st

from cepflow.outputs import order
from cepflow.outputs.order import in_order


@st.composite
def blocks(draw: st.DrawFn) -> tuple[list[int], np.ndarray]:
    """Block sizes and the ranks of their rows: mostly a long block in order with a few rows
    of other blocks put between its rows, sometimes any permutation."""
    sizes = draw(st.lists(st.integers(0, 30), min_size=1, max_size=4))
    n = sum(sizes)
    if draw(st.booleans()):
        ranks = np.array(draw(st.permutations(range(n))), dtype=np.int64)
    else:  # each block's rows ascending, the blocks interleaved
        slots = draw(st.permutations([b for b, s in enumerate(sizes) for _ in range(s)]))
        ranks = np.empty(n, np.int64)
        start = np.cumsum([0, *sizes])
        seen = [0] * len(sizes)
        for r, b in enumerate(slots):
            ranks[start[b] + seen[b]] = r
            seen[b] += 1
    return sizes, ranks


@settings(deadline=None, max_examples=300)
@given(blocks(), st.sampled_from([1, 3, 256]))
@example(([3], np.array([0, 1, 2])), 256)  # one block in order: the arrays as they are
@example(([2, 2], np.array([2, 3, 0, 1])), 256)  # two runs, the second first
@example(([3, 1], np.array([0, 2, 3, 1])), 256)  # a match from before among the others
def test_in_order_is_the_joined_columns_taken_by_rank(blocks, runs) -> None:
    sizes, ranks = blocks
    at = np.cumsum([0, *sizes])
    n = int(at[-1])
    texts = pa.array([[f"{i}", "x" * (i % 3)] if i % 4 else [] for i in range(n)],
                     pa.list_(pa.string()))
    numbers = pa.array(np.arange(n) * 10)
    columns = [[c.slice(int(at[b]), sizes[b]) for b in range(len(sizes))]
               for c in (texts, numbers)]
    want = [c.take(pa.array(np.argsort(ranks, kind="stable"))) for c in (texts, numbers)]
    old = order.RUNS
    order.RUNS = runs  # (by slices, or by a take past that many runs)
    try:
        got = in_order(columns, ranks)
    finally:
        order.RUNS = old
    for g, w in zip(got, want, strict=True):
        g.validate(full=True)
        assert g.to_pylist() == w.to_pylist()
