"""The column path for keyed sequences with per-stage filters, a type at several stages and a
window ``[Δ]`` (runtime.kernels.queues.step_chain, the filtered queue kernel) equals the
per-event engine: same complex events (ids, order, events, parameters), statistics, saved
state, and the same later behaviour (advance_to, finish, restored state, more events one by one)."""

import itertools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepflow.compiler.program import compile_module
from cepflow.events.event import Event
from cepflow.language.parser import parse
from cepflow.runtime.engine import Engine
from cepflow.runtime.state import StateError, restore_state, save_state
from support import tokens_form

DECLS = "atomicEvent A(k: Int, v: Int)\natomicEvent B(k: Int, v: Int)\n"
FILTERS = ("", "v > 1", "v < 2", "v == 0 or v == 3", "not (v == 2)", "v >= 1 and v != 3",
           "v * 2 > 3", "v == null")  # (the last one: not column-wise, the closure per row)


@st.composite
def chains(draw: st.DrawFn) -> str:
    stages = draw(st.lists(st.tuples(st.sampled_from("AB"), st.sampled_from(FILTERS)),
                           min_size=1, max_size=3))
    body = " -> ".join(f"{t}(s, _)" + (f" where {f}" if f else "") for t, f in stages)
    window = draw(st.sampled_from([None, 0, 1, 2, 3, 5]))
    return body if window is None else f"({body})[{window} ms]"


def compile_(p1: str, p2: str):
    src = (DECLS + f"complexEvent P(s: Int) {{ as {p1} }}\n"
           f"complexEvent Q(s: Int) {{ as {p2} }}\n")
    return compile_module(parse(src))


#: (type, key, v, dt): keys repeat, ties in ts (dt = 0), NaN keys now and then
streams = st.lists(st.tuples(st.sampled_from("AB"), st.sampled_from([0, 1, 2, float("nan")]),
                             st.sampled_from([0, 1, 2, 3, None]), st.sampled_from([0, 0, 1, 2, 4])),
                   max_size=70)


def make(spec, t0: int = 0, seq: bool = False) -> list[Event]:
    ts, out = t0, []
    for i, (t, k, v, dt) in enumerate(spec):
        ts += dt
        out.append(Event(t, (k, v), ts, id=i, seq=i if seq else -1))
    return out


def rows(found) -> list:
    return [(m.type, m.ts, tuple(m.event_refs), repr(m.params), m.match_id, repr(m.bindings))
            for m in found]


def snapshot(eng: Engine) -> list:
    """The partial matches (also with NaN keys, which save_state refuses) and counters."""
    s = eng.stats
    c = eng.host.counters
    return [eng.time, c.token, c.match, c.input, s.events,
            s.complex_events, sorted(s.by_pattern.items()), s.rule_firings,
            [(m.name, [(t.id, t.created, [(th.state, repr(th.bindings), th.zstart,
                                           [e.id for e in th.events]) for th in t.threads])
                       for t in m.all_tokens()]) for m in eng.matchers]]


def saved(eng: Engine) -> dict | None:
    try:
        return tokens_form(save_state(eng))
    except StateError:  # (a NaN key)
        return None


def same_state(a: Engine, b: Engine) -> None:
    assert snapshot(a) == snapshot(b)
    assert json.dumps(saved(a), sort_keys=True) == json.dumps(saved(b), sort_keys=True)


@settings(max_examples=250, deadline=None)
@given(chains(), chains(), streams, st.lists(st.integers(0, 70), max_size=4), streams,
       st.integers(0, 6))
def test_batch_equals_event_by_event(p1: str, p2: str, spec, cuts, tail, gap) -> None:
    check_batches(p1, p2, spec, cuts, tail, gap)


def check_batches(p1: str, p2: str, spec, cuts, tail, gap) -> None:
    """Batches cut at ``cuts`` (a part in three event by event) equal the per-event engine;
    then time passes and ``tail`` comes one by one, also into a restored copy."""
    prog = compile_(p1, p2)
    one, many = Engine(prog), Engine(prog)
    assert many._chains is not None
    evs_one, evs_many = make(spec), make(spec)
    ref = rows(m for e in evs_one for m in one.process(e))
    got = []
    bounds = sorted({0, len(spec), *(min(c, len(spec)) for c in cuts)})
    for part, (lo, hi) in enumerate(itertools.pairwise(bounds)):
        if part % 3 == 2:  # now and then a part event by event: the kernel takes its state
            got += rows(m for e in evs_many[lo:hi] for m in many.process(e))
        else:
            got += rows(many.process_batch(evs_many[lo:hi]))
    assert got == ref
    same_state(one, many)
    # later: time passes, then more events one by one, into a restored copy as well
    end = (evs_one[-1].ts if evs_one else 0) + gap
    state = saved(many)
    engines = [one, many] + ([restore_state(Engine(prog), state)] if state else [])
    for eng in engines:
        eng.advance_to(end)
    later = [rows(m for e in make(tail, end) for m in eng.process(e)) for eng in engines]
    assert all(x == later[0] for x in later)
    last = [rows(eng.finish(True)) for eng in engines]
    assert all(x == last[0] for x in last)
    same_state(one, many)


@st.composite
def repeats(draw: st.DrawFn) -> str:
    """One type at every stage, ``A(s, _){k}`` or spelled out, mostly without a filter or
    window (kernels.queues.repeat_chain; with one, the loop)."""
    k = draw(st.integers(1, 4))
    t = draw(st.sampled_from("AB"))
    body = draw(st.sampled_from([f"{t}(s, _){{{k}}}", " -> ".join([f"{t}(s, _)"] * k)]))
    extra = draw(st.sampled_from(["", "", "", "filter", "window"]))
    if extra == "filter":
        body = " -> ".join([f"{t}(s, _) where v > 0", *[f"{t}(s, _)"] * (k - 1)])
    return f"({body})[3 ms]" if extra == "window" else body


@settings(max_examples=200, deadline=None)
@given(repeats(), repeats(), streams, st.lists(st.integers(0, 70), max_size=4), streams,
       st.integers(0, 6))
def test_one_type_at_every_stage(p1: str, p2: str, spec, cuts, tail, gap) -> None:
    """``T{k}`` (cps's ``invalidModel(src){3}``): each key's rows fall into runs of ``k``
    after what its partial match holds — with partial matches from one-by-one parts, NaN keys
    (the loop then) and a restore."""
    check_batches(p1, p2, spec, cuts, tail, gap)


#: (NaN keys are drawn by ``streams``; here the columns' own types are the point)
arrow_streams = st.lists(st.tuples(st.sampled_from("AB"), st.sampled_from([0, 1, 2]),
                                   st.sampled_from([0, 1, 2, 3, None]),
                                   st.sampled_from([0, 0, 1, 2, 4])), max_size=70)


@settings(max_examples=120, deadline=None)
@given(chains(), chains(), arrow_streams, st.lists(st.integers(0, 70), max_size=3))
def test_columns_equal_event_by_event(p1: str, p2: str, spec, cuts) -> None:
    """The Spark entry point (Arrow batches, events made only for matched/waiting rows)."""
    from cepflow.spark.columns import ArrowRows, encode, encode_match_table, encode_matches

    prog = compile_(p1, p2)
    one, many = Engine(prog), Engine(prog)
    assert many.columnar
    ref = [m for e in make(spec, seq=True) for m in one.process(e)]
    got, out_rows = [], []
    evs = make(spec, seq=True)
    bounds = sorted({0, len(spec), *(min(c, len(spec)) for c in cuts)})
    for lo, hi in itertools.pairwise(bounds):
        chunk = evs[lo:hi]
        src = ArrowRows(encode(chunk, 2, [None] * len(chunk), [None] * len(chunk)),
                        {"A": 2, "B": 2}, 2)
        table = many.process_columns(src)
        got += table.complex_events()
        if table.count:
            out_rows += encode_match_table(table, src).to_pylist()
    assert rows(got) == rows(ref)
    assert out_rows == (encode_matches(ref).to_pylist() if ref else [])
    same_state(one, many)


OVERHEAT = """atomicEvent Reading(sensor: String, temp: Double)
complexEvent Overheat(s: String) {
  as (Reading(s, _) where temp > 90 -> Reading(s, _) where temp > 95)[10 s]
}"""


def r(sensor: str, temp: float, ts: int, ident: str) -> Event:
    return Event("Reading", (sensor, temp), ts, id=ident)


@pytest.mark.parametrize("batched", [False, True])
def test_overheat_by_hand(batched: bool) -> None:
    """Chronicle (000 §4.4): an event goes to the oldest partial match of its key that can
    take it and starts one only if none did; the window (000 §5) is inclusive at Δ, and a
    partial match whose deadline passed before an event is gone by then."""
    eng = Engine(compile_module(parse(OVERHEAT)))
    evs = [r("x", 91, 0, "a"),       # starts #1 (x)
           r("x", 96, 0, "b"),       # completes #1 at the same instant (a, b)
           r("x", 97, 1_000, "c"),   # nothing waits: passes the first filter, starts #2
           r("x", 92, 2_000, "d"),   # not > 95: starts #3 (younger)
           r("x", 99, 11_000, "e"),  # #2 (c @ 1 s) is exactly 10 s old: completes (c, e)
           r("y", 93, 11_500, "f"),  # starts #4 (y)
           r("x", 98, 12_001, "g"),  # #3 (d @ 2 s) expired at 12 s: g starts #5
           r("x", 50, 20_000, "h"),  # passes neither filter
           r("y", 96, 21_500, "i"),  # #4 (f @ 11.5 s) is exactly 10 s old: (f, i)
           r("x", 96, 22_002, "j")]  # #5 (g @ 12.001 s) expired: j starts #6
    found = eng.process_batch(evs) if batched else [m for e in evs for m in eng.process(e)]
    assert [(m.event_refs, m.params, m.match_id) for m in found] == [
        (["a", "b"], ("x",), 1), (["c", "e"], ("x",), 2), (["f", "i"], ("y",), 3)]
    assert eng.host.counters.token == 6
    assert [(t["id"], [e["id"] for e in t["threads"][0]["events"]])
            for t in tokens_form(save_state(eng))["patterns"]["Overheat"]] == [(6, ["j"])]


def test_repeated_type_three_stages_by_hand() -> None:
    """``A -> A -> A`` per key: each event advances the oldest partial match (whatever its
    stage) or else starts one, so the stream a1 a2 a3 a4 a5 a6 gives (a1 a2 a4), then a3
    waits after one event and a5, a6 … : the same in both paths."""
    src = DECLS + "complexEvent P(s: Int) { as A(s, _) -> A(s, _) -> A(s, _) }"
    prog = compile_module(parse(src))
    evs = [Event("A", (1, 0), i, id=f"a{i + 1}") for i in range(6)]
    one, many = Engine(prog), Engine(prog)
    ref = [m for e in evs for m in one.process(e)]
    got = many.process_batch([Event("A", (1, 0), i, id=f"a{i + 1}") for i in range(6)])
    assert [m.event_refs for m in got] == [m.event_refs for m in ref] == [
        ["a1", "a2", "a3"], ["a4", "a5", "a6"]]
    same_state(one, many)


def test_not_eligible_forms_fall_back() -> None:
    """A filter reading a bound variable at a type that is at two stages (one type per
    stage is taken: test_chain_cross.py), NOTs of one type of the key and of any key at one
    gap (either alone is taken: test_chain_nots.py), two windows: the per-event path."""
    for body in ("A(s, x) -> A(s, _) where v > x",
                 "A(s, _) -> NOT (B(_, _) OR B(s, _)) -> A(s, _)",
                 "(A(s, _) -> B(s, _))[5 ms] -> (A(s, _) -> B(s, _))[5 ms]"):
        prog = compile_module(parse(DECLS + f"complexEvent P(s: Int) {{ as {body} }}"))
        assert Engine(prog)._chains is None, body


@st.composite
def dense_chains(draw: st.DrawFn) -> str:
    """One type at every stage (2 or 3 stages): partial matches of one key wait at several
    stages at once, and the oldest of them must take the event."""
    fs = draw(st.lists(st.sampled_from(FILTERS[:6]), min_size=2, max_size=3))
    body = " -> ".join("A(s, _)" + (f" where {f}" if f else "") for f in fs)
    window = draw(st.sampled_from([None, 1, 3, 6, 0.2]))
    return body if window is None else f"({body})[{window} ms]"


dense = st.lists(st.tuples(st.just("A"), st.sampled_from([0, 0, 1]), st.integers(0, 3),
                           st.sampled_from([0, 1, 2, 0.1])), max_size=60)


@settings(max_examples=250, deadline=None)
@given(dense_chains(), dense, st.lists(st.integers(0, 60), max_size=3))
def test_dense_repeated_type(p: str, spec, cuts) -> None:
    prog = compile_(p, "B(s, _)")
    one, many = Engine(prog), Engine(prog)
    assert many._chains is not None
    ref = rows(m for e in make(spec) for m in one.process(e))
    evs, got = make(spec), []
    bounds = sorted({0, len(spec), *(min(c, len(spec)) for c in cuts)})
    for lo, hi in itertools.pairwise(bounds):
        got += rows(many.process_batch(evs[lo:hi]))
    assert got == ref
    same_state(one, many)
    assert rows(one.finish(True)) == rows(many.finish(True))
    same_state(one, many)


@pytest.mark.parametrize("batched", [False, True])
def test_oldest_at_any_stage_by_hand(batched: bool) -> None:
    """``A where v > 1 -> A where v < 2 -> A``: #1 (v=3) waits at stage 1, #2 (v=3) joins it;
    v=0 moves #1 to stage 2; the next v=0 could move #2 or complete #1: the older, #1."""
    prog = compile_(("A(s, _) where v > 1 -> A(s, _) where v < 2 -> A(s, _)"), "B(s, _)")
    evs = [Event("A", (0, v), i, id=f"a{i}") for i, v in enumerate([3, 3, 0, 0, 0, 0])]
    eng = Engine(prog)
    found = eng.process_batch(evs) if batched else [m for e in evs for m in eng.process(e)]
    assert [m.event_refs for m in found] == [["a0", "a2", "a3"], ["a1", "a4", "a5"]]


@pytest.mark.parametrize("batched", [False, True])
def test_window_exceeded_at_the_event_traps(batched: bool) -> None:
    """Float time: the deadline 0.1 + 0.2 is not before the event at 0.1 + 0.2, so no timer
    fired, but the span (0.1 + 0.2) - 0.1 exceeds 0.2: the event traps the partial match
    (Matcher._zones) and, having gone to it, starts none; the next one does."""
    prog = compile_("(A(s, _) -> A(s, _))[0.2 ms]", "B(s, _)")
    evs = [Event("A", (0, 0), t, id=f"a{i}") for i, t in enumerate([0.1, 0.1 + 0.2, 0.35])]
    eng = Engine(prog)
    found = eng.process_batch(evs) if batched else [m for e in evs for m in eng.process(e)]
    assert found == []
    assert eng.host.counters.token == 2
    assert [t.id for t in eng.matchers[0].all_tokens()] == [2]


def test_timer_at_the_batch_end_stays() -> None:
    """A partial match from an earlier batch whose deadline is the last timestamp of the
    next batch keeps its timer: it expires before a later event, which then starts anew."""
    prog = compile_("(A(s, _) -> A(s, _))[5 ms]", "B(s, _)")
    for batched in (False, True):
        eng = Engine(prog)
        parts = [[Event("A", (0, 0), 0, id="a0")], [Event("B", (1, 0), 5, id="b1")]]
        for part in parts:
            if batched:
                eng.process_batch(part)
            else:
                for e in part:
                    eng.process(e)
        assert eng.process(Event("A", (0, 0), 6, id="a2")) == []
        # (b1 completed Q with token 2; a2 starts token 3 instead of trapping token 1)
        assert [t.id for t in eng.matchers[0].all_tokens()] == [3], batched
