"""Patterns that are over (runtime/kernels/over.py): Esper's patterns of one life — without
``every`` at their top (start policy "once"), or under a guard at their top (Zone.whole) —
skipped by the per-event route once they ended. Against the per-event engine (Engine.process,
which never skips): random statements of the Esper generator
(tests/esper/test_esper_random_patterns.py) alone and beside others, over streams long enough
for them to end, through ``Engine.run`` in batches cut anywhere with time passing and a
save/restore between them, the route asking after every event (``EVERY`` 1) — the same
complex events, ids, statistics and saved state; ``cepflow run``'s replay from Parquet; and
spies that an ended pattern is no longer stepped and one under way is."""

from __future__ import annotations

import json
import random
from contextlib import contextmanager
from typing import Any
from unittest import mock

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import example, given, note, settings
from hypothesis import strategies as st
from tests.esper.esper_tree import tags, text
from tests.esper.test_esper_random_patterns import SCHEMAS, generate

import cepflow
import cepflow.runtime.engine as engine_module
from cepflow.events.event import Event
from cepflow.language.diagnostics import PatternSyntaxError
from cepflow.language.epl import parse_epl
from cepflow.replay import replay
from cepflow.runtime.kernels import over as over_module
from cepflow.runtime.kernels.over import ending, over
from cepflow.runtime.matcher import Matcher
from cepflow.runtime.state import restore_state, save_state


def statement(p: Any, name: str) -> str:
    select = ", ".join(f"{t}.v as {t}" for t in tags(p)) or "*"
    return f"@Name('{name}') select {select} from pattern [{text(p)}];\n"


def load(statements: list[str]) -> Any:
    return cepflow.load_module(parse_epl(SCHEMAS + "".join(statements), "o.epl"))


def drawn(seed: int, depth: int, ends: bool) -> Any:
    """A pattern of the random generator from ``seed`` with tags; with ``ends`` one of the
    forms that may end for good (no every at its top, or a guard there); None if none."""
    r = random.Random(seed)
    for _ in range(20):
        p = generate(r, depth, "ABCD", [0], [])
        if not tags(p):
            continue
        try:
            prog = load([statement(p, "P")])
        except PatternSyntaxError:
            continue
        if not ends or ending(cepflow.Engine(prog, start=0)):
            return p
    return None


def long_stream(r: random.Random, n: int) -> list[Event]:
    out, t = [], 0
    for i in range(n):
        t += r.choice([0, 100, 300, 600])
        out.append(Event(r.choice("ABCD"), (r.randint(0, 2), i), t))
    return out


def rows(found: list[Any]) -> list[tuple]:
    return [(ce.type, ce.ts, ce.params, ce.match_id) for ce in found]


@contextmanager
def asking_every_event():
    """The per-event route asks after every event whether a pattern ended."""
    with mock.patch.object(engine_module, "EVERY", 1):
        yield


def check_run(prog: Any, events: list[Event], cuts: list[int], restore_at: int,
              passing: int) -> None:
    """``Engine.run`` over ``events`` cut at ``cuts`` (time passing ``passing`` ms past the
    last row after each batch when it is before the next row), a save/restore (JSON) before
    the batch ``restore_at``, the end of input — against per event."""
    one = cepflow.Engine(prog, start=0)
    ref = [ce for e in events for ce in one.process(e)]
    end = (events[-1].ts if events else 0) + 5000
    ref += one.advance_to(end)
    many = cepflow.Engine(prog, start=0)
    bounds = sorted({0, len(events), *(c % (len(events) + 1) for c in cuts)})
    got: list[Any] = []
    with asking_every_event():
        for b in range(len(bounds) - 1):
            if b == restore_at:
                state = json.loads(json.dumps(save_state(many)))
                many = restore_state(cepflow.Engine(prog, start=0), state)
            batch = events[bounds[b]:bounds[b + 1]]
            got += many.run(batch)
            nxt = bounds[b + 1]
            if batch and passing and nxt < len(events) and (
                    batch[-1].ts + passing < events[nxt].ts):
                got += many.advance_to(batch[-1].ts + passing)
        got += many.advance_to(end)
    assert rows(got) == rows(ref)
    if restore_at >= len(bounds) - 1:  # (a restored engine counts from its restore)
        assert many.stats == one.stats
    assert save_state(many) == save_state(one)
    assert many.partial_matches() == one.partial_matches()


@settings(max_examples=250, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 3), st.lists(st.integers(0, 60), max_size=3),
       st.integers(0, 4), st.sampled_from([0, 0, 50, 700]), st.integers(0, 2), st.booleans())
@example(5, 1, [], 0, 0, 0, False)
def test_ended_patterns_answer_as_per_event(seed: int, depth: int, cuts: list[int],
                                            restore_at: int, passing: int, beside: int,
                                            kernel: bool) -> None:
    """One or two drawn patterns that may end (``beside``: up to two more of any form, which
    keep their per-event steps; ``kernel``: a pair kernel, the program split), over streams
    of up to 60 events: ``Engine.run`` skipping what ended gives the per-event engine's
    answer."""
    r = random.Random(seed)
    ps = [p for k in range(1 + (seed % 2)) if (p := drawn(r.getrandbits(32), depth, True))]
    ps += [p for _ in range(beside) if (p := drawn(r.getrandbits(32), depth, False))]
    if not ps:
        return
    stmts = [statement(p, f"P{i}") for i, p in enumerate(ps)]
    if kernel:  # (a pair kernel beside: the program splits, the ended patterns' rows stepped)
        stmts.append("@Name('K') select x.v as x, y.v as y from pattern [every x=A -> "
                     "y=B(y.k = x.k) where timer:within(1 sec)];\n")
    note("".join(stmts))
    try:
        prog = load(stmts)
    except PatternSyntaxError:
        return
    for _ in range(3):
        check_run(prog, long_stream(r, r.randint(0, 60)), cuts, restore_at, passing)


# ---- spies ------------------------------------------------------------------------------

def _steps(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Matcher.process calls per pattern name from now on (every step of these forms)."""
    calls: dict[str, int] = {}
    original = Matcher.process

    def counted(self: Matcher, e: Event, emit: Any) -> None:
        calls[self.name] = calls.get(self.name, 0) + 1
        original(self, e, emit)

    monkeypatch.setattr(Matcher, "process", counted)
    return calls


def _stream(n: int) -> list[Event]:
    return [Event("ABC"[i % 3], (i % 3, i), 10 * i) for i in range(n)]


@pytest.mark.parametrize(("pattern", "ended"), [
    ("a=A -> b=B", True),  # (one match at B@10, then over)
    ("a=A or b=B", True),
    ("a=A and b=B", True),
    ("[2] A until b=B", True),
    ("a=A where timer:within(5 msec)", True),
    ("(every (a=A -> b=B)) where timer:within(100 msec)", True),  # (its guard quits it)
    ("(every (a=A or b=B)) where timer:within(100 msec)", True),
    ("a=A -> every b=B", False),  # (the every under way: never over)
    ("every (a=A or b=B) where timer:within(500 msec)", None),  # (restarted: never ends)
])
def test_an_ended_pattern_is_not_stepped(monkeypatch: pytest.MonkeyPatch, pattern: str,
                                         ended: bool | None) -> None:
    """Over 10,000 events the per-event route steps an ended pattern only until the route
    next asks (the batch's first 1,024 events at most), then never; a pattern that can go on
    is stepped throughout (``ended`` None: one that cannot end, False: one that may but does
    not). The answer is the per-event engine's."""
    prog = load([f"@Name('P') select * from pattern [{pattern}];\n"])
    evs = _stream(10_000)
    one = cepflow.Engine(prog, start=0)
    ref = rows([ce for e in evs for ce in one.process(e)])
    calls = _steps(monkeypatch)  # (before the engine: its routes hold the steps)
    engine = cepflow.Engine(prog, start=0)
    assert engine._ending == ([] if ended is None else engine.matchers)
    got = rows(list(engine.run(evs)))
    assert got == ref
    assert save_state(engine) == save_state(one)
    stepped = calls.get("P", 0)
    if ended:
        assert over(engine.matchers[0]) and not engine._ending
        assert 0 < stepped <= over_module.EVERY
    else:
        assert stepped > 5000


def test_a_file_run_skips_what_ended(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """``cepflow run``'s replay from Parquet (Engine.run over the file's events): the same
    lines as per event, and the ended pattern's steps stop."""
    prog = load(["@Name('P') select a.v as a, b.v as b from pattern [a=A -> b=B(k = a.k)];\n",
                 "@Name('Q') select * from pattern [(every (x=C -> y=A)) where "
                 "timer:within(2 sec)];\n"])
    n = 20_000
    table = pa.table({"type": ["ABC"[i % 3] for i in range(n)], "ts": [10 * i for i in range(n)],
                      "k": [i // 3 % 3 for i in range(n)], "v": list(range(n))})
    pq.write_table(table, tmp_path / "in.parquet")
    calls = _steps(monkeypatch)
    replay([tmp_path / "in.parquet"], prog, tmp_path / "out.jsonl")
    assert calls["P"] <= over_module.EVERY and calls["Q"] <= 2 * over_module.EVERY
    evs = [Event(t, (k, v), ts) for t, ts, k, v in zip(*table.to_pydict().values(), strict=True)]
    one = cepflow.Engine(prog)
    ref = [ce for e in evs for ce in one.process(e)] + one.finish()
    lines = (tmp_path / "out.jsonl").read_text().splitlines()
    assert [(j["pattern"], j["ts"], list(j["params"].values()))
            for j in map(json.loads, lines)] == [(ce.type, ce.ts, list(ce.params)) for ce in ref]
    assert len(ref) > 50


def test_an_ended_pattern_beside_a_kernel_is_not_stepped(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    """Beside a pair kernel (the program split, Engine.process_batch) the ended pattern's rows
    are stepped through a no-op from the next batch on: its steps stop after the batch it
    ended in; the answer and state are the per-event engine's."""
    prog = load(["@Name('P') select a.v as a, b.v as b from pattern [a=A -> b=B(b.k = a.k)];\n",
                 "@Name('K') select x.v as x, y.v as y from pattern [every x=A -> "
                 "y=B(y.k = x.k) where timer:within(1 sec)];\n"])
    evs = [Event("ABC"[i % 3], (i // 3 % 3, i), 10 * i) for i in range(6000)]
    one = cepflow.Engine(prog, start=0)
    ref = rows([ce for e in evs for ce in one.process(e)])
    calls = _steps(monkeypatch)
    engine = cepflow.Engine(prog, start=0)
    assert engine._split is not None and [m.name for m in engine._ending] == ["P"]
    got = rows(list(engine.run(evs, batch_size=500)))
    assert got == ref and len(got) > 1000
    assert save_state(engine) == save_state(one)
    assert 0 < calls["P"] <= 500 and not engine._ending


def test_an_ended_pattern_beside_a_kernel_over_arrow_batches(monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    """The same through Engine.process_columns over Arrow batches of 500 rows (the file job's
    column route): the same complex events, rows written and state; the steps stop."""
    from tests.esper.test_esper_kernel import fed_columns

    from cepflow.spark.columns import encode_matches

    prog = load(["@Name('P') select a.v as a, b.v as b from pattern [a=A -> b=B(b.k = a.k)];\n",
                 "@Name('K') select x.v as x, y.v as y from pattern [every x=A -> "
                 "y=B(y.k = x.k) where timer:within(1 sec)];\n"])

    def evs() -> list[Event]:
        out = [Event("ABC"[i % 3], (i // 3 % 3, i), 10 * i) for i in range(6000)]
        for i, e in enumerate(out):
            e.seq = i
        return out

    one = cepflow.Engine(prog, start=0)
    ref = [ce for e in evs() for ce in one.process(e)]
    calls = _steps(monkeypatch)
    engine = cepflow.Engine(prog, start=0)
    assert engine.columnar
    got, written = [], []
    batch = evs()
    for lo in range(0, len(batch), 500):
        found, out = fed_columns(engine, batch[lo:lo + 500], {"A": 2, "B": 2, "C": 2, "D": 2})
        got += found
        written += out
    assert rows(got) == rows(ref) and len(got) > 1000
    assert written == encode_matches(ref).to_pylist()
    assert save_state(engine) == save_state(one)
    assert 0 < calls["P"] <= 500 and not engine._ending
