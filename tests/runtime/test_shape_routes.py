"""Every shape of benchmarks/pattern_shapes.py gives the same answer on every route: the
general token path one event at a time (``fast_path=False``, the reference), ``Engine.process``
with its fast steps, ``Engine.run`` and ``process_batch`` over batches cut at odd places with a
save and restore between two of them, and ``replay()`` from Parquet column-wise with its
threads against the record-by-record route — the matches (type, time, values, events, ids),
the partial matches left and the saved state. Kernels and fast paths added for a shape are
checked here against the reference on the benchmark's own stream."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from test_chain_kernel_filters import same_state, saved

from cepflow.events.event import Event
from cepflow.replay import replay
from cepflow.runtime.engine import Engine
from cepflow.runtime.state import restore_state, save_state
from support import load_script

ROOT = Path(__file__).resolve().parents[2]


PS = load_script(ROOT / "benchmarks" / "pattern_shapes.py", "pattern_shapes")
#: besides the benchmark's shapes, corners a fast path must not get wrong
EXTRA = {
    "or_recurring": ("vepl", "complexEvent P(x: Integer) { as A(x, _) -> (B(x, _) OR C(x, _)) "
                             "-> B(x, _) }"),
    "or_same_type": ("vepl", "complexEvent P(x: Integer) { as A(x, _) -> (B(x, v) where v > 4 "
                             "OR B(x, v) where v < 2) }"),
    "or_bindings": ("vepl", "complexEvent P(x: Integer, y: Integer) { as A(x, _) -> "
                            "(B(x, y) OR C(x, y)) -> C(x, y) }"),
    "or_first": ("vepl", "complexEvent P(x: Integer) { as (A(x, _) OR C(x, _)) -> B(x, _) }"),
    "or_window": ("vepl", "complexEvent P(x: Integer) { as (A(x, _) -> (B(x, _) OR C(x, _)))"
                          "[300 ms] }"),
    "not_filter": ("vepl", "complexEvent P(x: Integer) { as A(x, _) -> NOT C(x, _) where v > 5 "
                           "-> B(x, _) }"),
    "not_recurring": ("vepl", "complexEvent P(x: Integer) { as A(x, _) -> NOT A(x, _) -> "
                              "(B(x, _) OR C(x, _)) }"),
    "not_window": ("vepl", "complexEvent P(x: Integer) { as (A(x, _) -> NOT C(x, _) where v < 3 "
                           "-> B(x, _) -> NOT (A(x, _) OR C(x, _)) -> B(x, _))[300 ms] }"),
    # NOTs of any key: in the numpy queues (two gaps, a stage's type), in a window (step_chain)
    "not_any_gaps": ("vepl", "complexEvent P(x: Integer) { as A(x, _) -> NOT C(_, _) where "
                             "v > 7 -> B(x, _) -> NOT A(_, _) where v > 8 -> C(x, _) }"),
    "not_any_window": ("vepl", "complexEvent P(x: Integer) { as (A(x, _) -> NOT C(_, _) where "
                               "v > 6 -> B(x, _))[300 ms] }"),
    "and_three": ("vepl", "complexEvent P(x: Integer) { as A(x, _) -> (B(x, _) AND C(x, _) "
                          "AND A(x, _)) }"),
    "and_window": ("vepl", "complexEvent P(x: Integer) { as (A(x, _) AND B(x, _) where v > 4)"
                           "[300 ms] }"),
    "or_sequences": ("vepl", "complexEvent P(x: Integer) { as (A(x, _) -> NOT C(x, _) -> "
                             "B(x, _)) OR (B(x, _) -> C(x, _)) }"),
    "filter_later": ("vepl", "complexEvent P(x: Integer) { as A(x, u) where u > 5 -> "
                             "B(x, w) where w < u }"),
    "immediate_three": ("vepl", "complexEvent P(x: Integer) { as A(x, _) -> B(x, v) where "
                                "v > 2 -> A(x, _) context immediate }"),
    "strict_partitioned": ("vepl", "complexEvent P(x: Integer) { as A(x, _) -> C(x, _) -> "
                                   "B(x, _) context strict partition by x }"),
    "immediate_window": ("vepl", "complexEvent P(x: Integer) { as (A(x, _) -> B(x, _))[50 ms] "
                                 "context immediate partition by x }"),
    "immediate_or": ("vepl", "complexEvent P(x: Integer) { as A(x, _) -> (B(x, _) OR C(x, _)) "
                             "-> A(x, _) context immediate partition by x }"),
    "strict_or_window": ("vepl", "complexEvent P(x: Integer) { as (A(x, _) -> (B(x, _) OR "
                                 "C(x, _) where v > 3))[200 ms] context strict partition by x }"),
    "unrestricted_recur": ("vepl", "complexEvent P(x: Integer) { as (A(x, _) -> A(x, _) where "
                                   "v > 3 -> B(x, _))[200 ms] context unrestricted }"),
    "unrestricted_last": ("vepl", "complexEvent P(x: Integer) { as A(x, _) -> C(x, _) -> "
                                  "(B(x, _))[1 s] context unrestricted }"),
    "esper_or_filters": ("epl", "select a.k as k, b.v as bv, c.v as cv from pattern [every a=A "
                                "-> (b=B(b.k = a.k, b.v > 3) or c=C(c.k = a.k)) "
                                "where timer:within(200 msec)];"),
    "win_read": ("epl", "insert into Cnt select count(*) as n from A(v > 5)#time(200 msec);\n"
                        "@Name('Q') select c.n as n from pattern [every c=Cnt(n > 3)];"),
    "esper_or_same": ("epl", "select a.k as k, b.v as bv, c.v as cv from pattern [every a=A "
                             "-> (b=B(b.k = a.k, b.v > 5) or c=B(c.k = a.k, c.v < 3))];"),
    # length windows and having (kernels/window_block.py): a row for the group a push-out
    # leaves, a row per event, min/max per lane, a grouped length batch's count-0 rows
    "win_length_groups": ("epl", "select k, count(*) as n, avg(v) as m from A#length(20) "
                                 "group by k having count(*) >= 1;"),
    "win_length_event": ("epl", "select v, sum(v) as s, min(v) as lo from B(v > 2)#length(7) "
                                "having sum(v) > 30;"),
    "win_groupwin_minmax": ("epl", "select k, min(v) as lo, max(v) as hi, count(*) as n "
                                   "from C#groupwin(k)#length(3) group by k;"),
    "win_length_batch_group": ("epl", "select k, sum(v) as s from A#length_batch(40) "
                                      "group by k having sum(v) < 20;"),
    "win_groupwin_batch": ("epl", "select k, v, sum(v) as s, count(*) as n from "
                                  "B#groupwin(k)#length_batch(7) group by k;"),
    "win_read_length": ("epl", "insert into Cnt select k, sum(v) as s from A#length(10) "
                               "group by k;\n"
                               "@Name('Q') select c.s as s from pattern [every c=Cnt(s > 30)];"),
    # (one event both operands; no window; a key on neither)
    "esper_and_same_bare": ("epl", "select a.v as av, b.v as bv from pattern [every (a=A(a.v > "
                                   "2) and b=A(b.v < 6))];"),
    "esper_and_same_key": ("epl", "select a.k as k, a.v as av, b.v as bv from pattern [every "
                                  "(a=A(a.v < 4) and b=A(b.k = a.k, b.v > 1)) "
                                  "where timer:within(300 msec)];"),
    "esper_or_mixed_guard": ("epl", "select a.k as k, b.v as bv, c.k as ck from pattern [every "
                                    "a=A -> (b=B(b.k = a.k, b.v > a.v) or c=B(c.v > 8) or "
                                    "d=C(d.k = a.k, d.v = 0)) where timer:within(200 msec)];"),
    "esper_chain_guard_mid": ("epl", "select a.k as k, c.v as cv from pattern [every a=A -> "
                                     "(b=B(b.k = a.k) where timer:within(100 msec)) -> "
                                     "c=C(c.k = a.k)];"),
    # patterns over a kernel pattern's output (kernels.cascade.plan_higher): its type twice,
    # after an input stage, alternatives at the end, beside the benchmark's ho_* shapes
    "ho_twice": ("epl", "insert into P select a.k as k, a.v as v from pattern [every a=A -> "
                        "b=B(b.k = a.k) where timer:within(300 msec)];\n@Name('Q') select p.k "
                        "as k from pattern [every p=P(v > 3) -> (q=P(q.k = p.k) -> "
                        "c=C(c.k = p.k)) where timer:within(500 msec)];"),
    "ho_after_input": ("epl", "insert into P select a.k as k, a.v as v from pattern [every "
                              "a=A -> b=B(b.k = a.k) where timer:within(300 msec)];\n"
                              "@Name('Q') select c.v as v from pattern [every c=C(v > 6) -> "
                              "(p=P(p.k = c.k) -> d=A(d.k = c.k)) where timer:within(400 msec)];"),
    "ho_alts": ("epl", "insert into P select a.k as k, a.v as v from pattern [every a=A -> "
                       "b=B(b.k = a.k) where timer:within(300 msec)];\n@Name('Q') select p.k "
                       "as k from pattern [every p=P -> (c=C(c.k = p.k, c.v > 5) or "
                       "d=A(d.k = p.k)) where timer:within(200 msec)];"),
}
PS.SHAPES.update(EXTRA)
N = 3_000
CUTS = (1, 2, 7, 500, 1, 1_000, 13)  # batch sizes, cycled; a save and restore after the third


def _matches(found: list[Any]) -> list[tuple[Any, ...]]:
    return [(m.type, m.ts, m.params, m.to_dict()["events"], m.id) for m in found]


def _events() -> list[Event]:
    return PS.events_of(PS.stream(N))


def _reference(shape: str, evs: list[Event]) -> tuple[list, Engine]:
    engine = Engine(PS.program_of(shape), fast_path=False)
    out = []
    for e in evs:
        out += engine.process(e)
    return _matches(out), engine


@pytest.fixture(scope="module")
def events() -> list[Event]:
    return _events()


@pytest.mark.parametrize("shape", list(PS.SHAPES))
def test_every_engine_route_gives_the_reference_answer(shape: str, events: list[Event]) -> None:
    want, reference = _reference(shape, events)
    assert want, f"{shape}: the stream should make matches"
    program = PS.program_of(shape)

    fast = Engine(program)
    got = []
    for e in events:
        got += fast.process(e)
    assert _matches(got) == want, "Engine.process"
    same_state(reference, fast)

    engine, got, at, i = Engine(program), [], 0, 0
    while at < len(events):
        size = CUTS[i % len(CUTS)]
        chunk = events[at:at + size]
        got += engine.process_batch(chunk) if i % 2 else list(engine.run(chunk, batch_size=size))
        at += size
        i += 1
        if i == 3:
            kept = json.loads(json.dumps(save_state(engine)))
            engine = restore_state(Engine(program), kept)
    assert _matches(got) == want, "Engine.run / process_batch in cut batches, restored"
    # (a restored engine's statistics count from the restore: the state and counters compare)
    ids = ("token", "match", "input")
    assert [getattr(engine.host.counters, c) for c in ids] == [
        getattr(reference.host.counters, c) for c in ids]
    assert json.dumps(saved(engine), sort_keys=True) == json.dumps(saved(reference),
                                                                   sort_keys=True)


@pytest.mark.parametrize("shape", list(PS.SHAPES))
def test_the_file_routes_agree(shape: str, tmp_path: Path) -> None:
    source = tmp_path / "events.parquet"
    pq.write_table(PS.stream(N), source)
    program = PS.program_of(shape)
    outs = []
    for columns, threads in ((False, False), (True, True)):
        out = tmp_path / f"out-{columns}.jsonl"
        run = replay([source], program, out, columns=columns, threads=threads)
        outs.append((run.complex_events, out.read_bytes()))
    assert outs[0][0] > 0 and outs[1] == outs[0]
