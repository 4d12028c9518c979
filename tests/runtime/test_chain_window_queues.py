"""Windowed chains (``(A(x, _) -> B(x, _))[10 s]``, shape ``within``) whose types are each at one
stage, without NOTs: the chain kernel steps them column-wise (kernels.crossing.cross_chain with no
pair tests, each stage's queue by kernels.crossing._first_in_first_out) instead of the loop
(kernels.queues.step_chain). The queue step against the loop on random rows (keys, ties, float
time, partial matches from before the batch, windows expiring and trapping, an end past the last
row), and the chain kernel against the token path (test_chain_alternatives.check: batches cut
anywhere, Arrow, save/restore, time passing) with a spy that the queue step decided."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_chain_alternatives import FILTERS, check, compile_, specs
from test_chain_cross import Counted, assignments, same_result

from cepflow.events.event import Event
from cepflow.runtime.engine import Engine
from cepflow.runtime.kernels import crossing
from cepflow.runtime.kernels.crossing import cross_chain
from cepflow.runtime.kernels.queues import step_chain


class Queued(Counted):
    """Counts kernels.crossing._first_in_first_out's results while in use: the stages it
    decided and those it gave back (None) to the deferred-acceptance rounds."""

    def __init__(self) -> None:
        super().__init__(crossing, "_first_in_first_out")


def _loop_and_queues(case: tuple) -> tuple[Any, Any]:
    k, stage, key, ts, occupants, window, end = case[:7]
    loop = step_chain(k, [[s] for s in stage], key, ts, occupants, window, end)
    mine = cross_chain(k, np.array(stage, dtype=np.int64), np.array(key, dtype=np.int64),
                       np.array(ts), occupants, window, end, [None] * k, None)
    return loop, mine


#: one key, three starts then three rows: a queue served oldest first (rows 3, 4, 5 take the
#: starts 0, 1, 2; start 2's deadline 1 + 2 is not before row 5's time 3)
QUEUE = (2, [0, 0, 0, 1, 1, 1], [0, 0, 0, 0, 0, 0], [0, 1, 1, 2, 2, 3], [], 2, 3)
#: the head expires (0 + 1 < 2) and the row takes the next one; a deadline at the row's time
#: (1 + 1 == 2) does not expire it
EXPIRED = (2, [0, 0, 1, 1], [0, 0, 0, 0], [0, 1, 2, 2], [], 1, 2)
#: float time: a start at 0.1, its row at 0.1 + 0.2 is past the span of 0.2 (trapped: the
#: row is taken and starts nothing) while its deadline is not before the row
TRAPPED = (2, [0, 1, 1], [0, 0, 0], [0.1, 0.30000000000000004, 0.30000000000000004], [], 0.2,
           0.30000000000000004)
#: partial matches from before the batch at stages 1 and 2 of one key (oldest first), a
#: batch start behind them, the batch's end past its last row (their timers dropped)
OCCUPIED = (3, [2, 1, 0, 1, 2], [0, 0, 0, 0, 0], [3, 3, 4, 5, 6], [(2, 0, 0), (1, 0, 1)], 5,
            9)


@settings(max_examples=300, deadline=None)
@given(assignments())
@example((*QUEUE, [False, False], 0, 1.0))
@example((*EXPIRED, [False, False], 0, 1.0))
@example((*TRAPPED, [False, False], 0, 1.0))
@example((*OCCUPIED, [False] * 3, 0, 1.0))
def test_queue_step_equals_the_loop(case: tuple) -> None:
    """kernels.crossing.cross_chain without pair tests against kernels.queues.step_chain
    without ``cross``: the same result (predecessors, completions, partial matches left by
    age, starts, timers in the order set), every stage decided by the queue step (the
    deferred-acceptance rounds never run) unless the occupants' starts are out of order or a
    younger one is ahead of an older one (:func:`overtaken`)."""
    starts = [o[2] for o in case[4]]
    with Queued() as queued:
        loop, mine = _loop_and_queues(case)
    if mine is None:
        assert case[5] is not None and starts != sorted(starts)
        return
    assert queued.declined == 0 or overtaken(case[4])
    same_result(mine, loop)


def overtaken(occupants: list[tuple[int, int, Any]]) -> bool:
    """Whether a partial match from before the batch waits at a later stage than an older
    one of its key (a hand-written state: the loop's queues keep the age order, so the
    older one, arriving later, goes before it — not a queue in arrival order: the rounds)."""
    return any(a[1] == b[1] and a[0] < b[0]
               for i, a in enumerate(occupants) for b in occupants[i + 1:])


def test_pinned_queues() -> None:
    """The pinned cases' results, derived by hand (QUEUE, EXPIRED, TRAPPED, OCCUPIED)."""
    _, q = _loop_and_queues(QUEUE)
    assert q[0][:6].tolist() == [-1, -1, -1, 0, 1, 2] and q[1] == [3, 4, 5]
    _, e = _loop_and_queues(EXPIRED)
    assert e[0][:4].tolist() == [-1, -1, 1, -1] and e[1] == [2]  # (row 3: nothing waits)
    _, t = _loop_and_queues(TRAPPED)
    assert t[0][:3].tolist() == [-1, -1, -1] and t[1] == [] and t[2] == {}
    _, o = _loop_and_queues(OCCUPIED)
    # occupant 5 (at stage 2) completes with row 0; occupant 6 (stage 1) moves at row 1 and
    # completes at row 4; start 2 moves at row 3 and waits at stage 2; timers: start 2's
    # alone — occupant 6's (set at row 1) has its deadline 1 + 5 before the batch's end 9,
    # the occupant at stage 2 set none (its step completed it)
    assert o[0][:5].tolist() == [5, 6, -1, 2, 1] and o[1] == [0, 4]
    assert o[2] == {2: [3]} and o[4] == [(2, 4)]


@st.composite
def windowed(draw: st.DrawFn) -> str:
    """A windowed chain of 1-4 stages of alternatives, each type at one stage (filters on
    the events' own fields, one stage binding ``v``), keyed or not."""
    n = draw(st.sampled_from([1, 2, 2, 3, 3, 4]))
    key = draw(st.sampled_from(["s", "s", "_"]))
    own_v = draw(st.sampled_from([None, *range(n)]))
    pool = list("ABCD")
    stages = []
    for m in range(n):
        if not pool:
            break
        width = draw(st.integers(1, min(2, len(pool) - (n - m - 1)) if len(pool) > n - m
                                 else 1))
        types = pool[:width]
        pool = pool[width:]
        alts = []
        for t in types:
            f = draw(st.sampled_from(FILTERS))
            if t == "D":
                atom = f"D(_, {key})"
                f = f.replace("v", "k") if f else f
            else:
                atom = f"{t}({key}, v)" if own_v == m else f"{t}({key}, _)"
            alts.append(atom + (f" where {f}" if f else ""))
        stages.append(alts[0] if len(alts) == 1 else "(" + " OR ".join(alts) + ")")
    window = draw(st.sampled_from([0, 2, 5, 0.2, 10]))
    return f"({' -> '.join(stages)})[{window} ms]"


def queued_route(bodies: list[str], fast: Engine, batch: Engine, cols: Engine) -> None:
    """Every pattern is the chain kernel's."""
    assert batch._chains is not None and cols.columnar, bodies


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(windowed(), min_size=1, max_size=2), specs,
       st.lists(st.integers(0, 30), min_size=1, max_size=5), st.integers(0, 4),
       st.integers(0, 6))
@example(["(A(s, _) -> B(s, _))[10 ms]"],
         [("A", 1, 0, 0), ("A", 1, 0, 1), ("B", 1, 0, 0), ("A", 1, 0, 9), ("B", 1, 0, 1),
          ("B", 1, 0, 5), ("B", 1, 0, 0)], [3], 0, 3)
def test_windowed_chains_queue_like_the_token_path(bodies: list[str], spec: list,
                                                   cuts: list[int], restore_at: int,
                                                   gap: int) -> None:
    """Windowed chains, each type at one stage: the chain kernel's queue step gives what the
    token path gives (test_chain_alternatives.check), and it decided every stage it was
    asked to (the rows' times do not go back, the queues keep their age order)."""
    with Queued() as queued:
        check(bodies, spec, cuts, restore_at, gap, queued_route)
    assert queued.declined == 0


def test_within_is_column_wise(monkeypatch: Any) -> None:
    """``within`` of benchmarks/pattern_shapes.py in one batch: the queue step decides it,
    the loop (kernels.queues.step_chain) never runs, the oldest A of a key takes each B."""
    from cepflow.runtime.kernels import chain

    def loop(*args: Any) -> Any:
        raise AssertionError("step_chain")

    monkeypatch.setattr(chain, "step_chain", loop)
    prog = compile_(["(A(s, _) -> B(s, _))[10 ms]"])
    stream = [("A", 1, 0), ("A", 1, 3), ("A", 2, 4), ("B", 1, 5), ("B", 1, 12), ("B", 1, 12),
              ("B", 2, 15)]
    with Queued() as queued:
        out = Engine(prog).process_batch([Event(t, (k, 0), ts, id=f"{t.lower()}{i}")
                                          for i, (t, k, ts) in enumerate(stream)])
    assert queued.decided == 1 and queued.declined == 0
    # b3 takes a0 (the oldest of key 1), b4 a1 (its deadline 3 + 10 not before 12); b5
    # finds none waiting; b6 (15) is past a2's deadline (4 + 10 < 15)
    assert [m.event_refs for m in out] == [["a0", "b3"], ["a1", "b4"]]
