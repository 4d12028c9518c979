"""The restart kernel's walk step by step (kernels/restart.py ``_short_chain``: when the A rows
outnumber the B rows ``_SHORT_CHAIN`` times, as motorbike's DriverLeftSeat — 200,000 seats
taken, 60 left — the chain of instances is walked match by match instead of computing every
A row's successor): the same instances, matches and waiting instance as the column walk and
as Esper's definition written here (one instance at a time: it opens at the first A, takes the
first later B of its key, and the next one opens at the first A after that B); and the whole
split with the step-by-step walk forced on against the per-event engine."""

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from tests.esper import test_restart_kernel as kernel_tests
from tests.esper.test_esper_kernel import KEYS, stream
from tests.esper.test_split import check_split, keyed_others, program, restarts

from cepflow.runtime.kernels import restart


def oracle(a_rows: list[int], a_code: list[int], b_rows: list[int], b_code: list[int],
           old_code: int | None) -> tuple[list[int], list[int], list[int], int]:
    """Esper's ``every (a -> b)`` over the rows, one instance at a time, read off the
    definition: (the rows that open instances, per match its A row — -1 for the instance from
    before the batch — and its B row, the A row of the instance left waiting or -1)."""
    bs = sorted(zip(b_rows, b_code, strict=True))
    starts: list[int] = []
    a_of: list[int] = []
    b_of: list[int] = []
    pos = 0  # (the first row a new instance may open at)
    if old_code is not None:
        took = next((r for r, c in bs if c == old_code), None)
        if took is None:
            return [], [], [], -1
        a_of.append(-1)
        b_of.append(took)
        pos = took + 1
    while True:
        a = next((i for i, r in enumerate(a_rows) if r >= pos), None)
        if a is None:
            return starts, a_of, b_of, -1
        starts.append(a_rows[a])
        took = next((r for r, c in bs if c == a_code[a] and r > a_rows[a]), None)
        if took is None:
            return starts, a_of, b_of, a_rows[a]
        a_of.append(a_rows[a])
        b_of.append(took)
        pos = took + 1


@st.composite
def walks(draw: st.DrawFn) -> tuple[list[int], list[int], list[int], list[int], int | None]:
    """A batch of ``n`` rows: the A rows (ascending) with key codes, the B rows (ascending,
    perhaps rows that are A rows too: one type at both stages) with codes, the instance from
    before (its code or None); few keys, so that instances meet Bs of their key."""
    n = draw(st.integers(0, 60))
    keys = st.integers(0, draw(st.integers(0, 3)))
    a_rows = sorted(draw(st.sets(st.integers(0, max(n - 1, 0)), max_size=n)) if n else [])
    b_rows = sorted(draw(st.sets(st.integers(0, max(n - 1, 0)), max_size=6)) if n else [])
    a_code = [draw(keys) for _ in a_rows]
    b_code = [draw(keys) for _ in b_rows]
    old = draw(st.one_of(st.none(), keys))
    return a_rows, a_code, b_rows, b_code, old


def walked(spec: tuple[list[int], list[int], list[int], list[int], int | None], short: int
           ) -> tuple[list[int], list[int], list[int], int]:
    """``restart._walk`` over ``spec`` with ``_SHORT_CHAIN`` set to ``short`` (1: step by step
    whenever the B rows are fewer than the A rows; a huge one: never), as the plan calls it."""
    a_rows, a_code, b_rows, b_code, old = spec
    span = max([*a_rows, *b_rows], default=0) + 3
    bc = np.array(b_code, np.int64)
    br = np.array(b_rows, np.int64)
    order = np.argsort(bc, kind="stable")
    keys = (bc * span + br)[order]
    before = restart._SHORT_CHAIN
    restart._SHORT_CHAIN = short
    try:
        starts, a_of, b_of, waiting = restart._walk(
            np.array(a_rows, np.int64), np.array(a_code, np.int64), keys, br[order],
            bc[order], old, span)
    finally:
        restart._SHORT_CHAIN = before
    return starts.tolist(), a_of.tolist(), b_of.tolist(), waiting


@settings(max_examples=300, deadline=None)
@given(walks())
@example(([0, 1, 2, 3, 4, 5, 6, 7], [0, 1, 0, 1, 0, 1, 0, 1], [3, 6], [1, 0], None))
@example(([2, 5, 9], [0, 0, 0], [1, 5, 7], [0, 0, 0], 0))
@example(([1, 2], [0, 0], [], [], None))
@example(([1, 2], [0, 0], [0], [0], 1))
def test_step_by_step_walk_is_the_column_walk_and_esper(spec) -> None:
    expected = oracle(*spec)
    assert walked(spec, 1) == expected
    assert walked(spec, 10 ** 9) == expected


def test_motorbike_like_walk_pinned() -> None:
    """Seats taken on bikes 0 and 1 at every row, left on bike 1 at row 3 and bike 0 at row 6
    (those rows are no A rows): the instance of row 0 (bike 0) waits to row 6; the next opens
    at row 7 (bike 1) and waits for ever — two steps, whichever walk."""
    spec = ([0, 1, 2, 4, 5, 7, 8], [0, 1, 0, 0, 1, 1, 0], [3, 6], [1, 0], None)
    assert walked(spec, 1) == walked(spec, 10 ** 9) == ([0, 7], [0], [6], 7)


@settings(max_examples=60, deadline=None)
@given(st.lists(restarts(), min_size=1, max_size=2), keyed_others(),
       stream(KEYS[:7] + KEYS[8:9]), st.lists(st.integers(0, 70), max_size=4),
       st.integers(0, 70), st.integers(-1, 2))
def test_restart_kernel_stepping_equals_event_by_event(kernel_stmts, others, spec, cuts,
                                                       restore_at, ruled) -> None:
    """test_restart_kernel_equals_event_by_event with every walk of fewer B rows than A rows
    stepped (``_SHORT_CHAIN`` 1): matches, ids, statistics, open instances and saved state as
    per event, batches cut anywhere, a save/restore between."""
    before = restart._SHORT_CHAIN
    restart._SHORT_CHAIN = 1
    try:
        check_split(program(kernel_stmts, others, ruled), spec, cuts, restore_at)
    finally:
        restart._SHORT_CHAIN = before


@pytest.mark.parametrize("short", [1, 10 ** 9])
def test_examples_every_either_walk(short: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pinned example of test_restart_kernel (``every (a = A -> b = A)`` over nine rows of
    one key, cut at 4, restored at 6) through either walk."""
    monkeypatch.setattr(restart, "_SHORT_CHAIN", short)
    kernel_tests.test_restart_kernel_equals_event_by_event.hypothesis.inner_test(
        ["@Name('R')\ninsert into R\nfrom pattern [every (a = A -> b = A)];\n"], [],
        [("A", 0, 0, 0.0, 1)] * 9, [4], 6, -1)
