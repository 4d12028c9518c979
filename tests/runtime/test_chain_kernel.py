"""The columnar batch path equals feeding events one by one: same matches (events, bindings,
ids), same rule firings, same saved state — across several batches and with partial matches
carried from one batch to the next."""

import itertools
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from cepflow.events.event import Event
from cepflow.language import ast as A
from cepflow.runtime.engine import Engine
from cepflow.runtime.state import save_state
from support import at, program, run, tokens_form

TYPES = ("a", "b", "c", "d")


@st.composite
def chains(draw: st.DrawFn) -> A.Pattern:
    types = draw(st.permutations(TYPES))[: draw(st.integers(1, 4))]
    out: A.Pattern = at(types[-1], "k")
    for t in reversed(types[:-1]):
        out = A.Fol(at(t, "k"), out)
    return out


streams = st.lists(st.tuples(st.sampled_from(TYPES), st.integers(0, 3), st.integers(0, 2)),
                   max_size=80)


def as_rows(found) -> list:
    return [(m.type, m.ts, tuple(m.event_refs), m.params, m.match_id, m.bindings)
            for m in found]


def make(spec) -> list[Event]:
    ts, out = 0, []
    for i, (t, k, dt) in enumerate(spec):
        ts += dt
        out.append(Event(t, (k,), ts, id=i))
    return out


@settings(max_examples=120, deadline=None)
@given(chains(), chains(), streams, st.lists(st.integers(0, 80), max_size=3), st.booleans())
def test_batch_equals_event_by_event(p1: A.Pattern, p2: A.Pattern, spec, cuts,
                                     acting: bool) -> None:
    """(The rule has a registered action, or none: its firings are then only counted,
    kernels.frame.fire_or_count.)"""
    extra = (A.ComplexEventDecl("Q", (A.Param("k"),), p2),)
    prog = program(p1, params=("k",), types=TYPES, arity=1, extra=extra)
    fired: dict[str, list] = {"one": [], "many": []}
    rule = A.RuleDecl("r", (A.PatternRef("P"), A.PatternRef("a")), "rec" if acting else None)
    prog.rules.append(rule)

    def engine(tag: str) -> Engine:
        return Engine(prog, actions={"rec": lambda act: fired[tag].append(
            (act.event.type, act.bindings))})

    one, many = engine("one"), engine("many")
    assert many._chains is not None
    events_one, events_many = make(spec), make(spec)
    ref = as_rows([m for e in events_one for m in one.process(e)])
    got = []
    bounds = sorted({0, len(spec), *(min(c, len(spec)) for c in cuts)})
    for lo, hi in itertools.pairwise(bounds):
        got += as_rows(many.process_batch(events_many[lo:hi]))
    assert got == ref
    assert fired["many"] == fired["one"]
    assert json.dumps(tokens_form(save_state(many)), sort_keys=True) == json.dumps(
        save_state(one), sort_keys=True)
    assert many.stats == one.stats


def test_not_a_chain_falls_back_to_events() -> None:
    # (a window over the whole sequence is a chain now: tests/runtime/test_chain_kernel_filters.py;
    # a NOT of the key or of any key too: test_chain_nots.py — one after an iteration is not)
    prog = program(A.Fol(A.Mult(at("a", "k"), "+"), A.Fol(A.Not(at("c", None)), at("b", "k"))),
                   params=("k",), arity=1)
    eng = Engine(prog)
    assert eng._chains is None
    out = eng.process_batch([Event("a", (1,), 0), Event("b", (1,), 3)])
    assert [m.event_refs for m in out] == [[0, 1]]


keyed = st.lists(st.tuples(st.sampled_from(TYPES), st.sampled_from([0, 1, "1", "a", 2.5, True]),
                           st.integers(0, 2), st.sampled_from([None, "x", 7])), max_size=60)


@settings(max_examples=80, deadline=None)
@given(chains(), chains(), keyed, st.lists(st.integers(0, 60), max_size=3))
def test_columns_equal_event_by_event(p1: A.Pattern, p2: A.Pattern, spec, cuts) -> None:
    """The column entry point (Arrow batches of the Spark layout): same complex events, match
    ids, rows written, statistics and saved state as the per-event engine."""
    from cepflow.spark.columns import ArrowRows, encode, encode_match_table, encode_matches

    extra = (A.ComplexEventDecl("Q", (A.Param("k"),), p2),)
    prog = program(p1, params=("k",), types=TYPES, arity=1, extra=extra)
    prog.rules.append(A.RuleDecl("r", (A.PatternRef("P"), A.PatternRef("a")), "unregistered"))
    one = Engine(prog, strict_actions=False)
    many = Engine(prog, strict_actions=False)
    assert many.columnar

    def events() -> list[Event]:
        ts, out = 0, []
        for i, (t, k, dt, ident) in enumerate(spec):
            ts += dt
            out.append(Event(t, (k,), ts, id=None if ident is None else f"{ident}{i}", seq=i))
        return out

    ref = [m for e in events() for m in one.process(e)]
    arities = {t: 1 for t in TYPES}
    got, rows_out = [], []
    bounds = sorted({0, len(spec), *(min(c, len(spec)) for c in cuts)})
    evs = events()
    for lo, hi in itertools.pairwise(bounds):
        chunk = evs[lo:hi]
        rows = ArrowRows(encode(chunk, 1, [None] * len(chunk), [None] * len(chunk)), arities, 1)
        table = many.process_columns(rows)
        got += table.complex_events()
        if table.count:
            rows_out += encode_match_table(table, rows).to_pylist()
    assert as_rows(got) == as_rows(ref)
    assert [m.bindings for m in got] == [m.bindings for m in ref]
    assert [[type(v) for v in m.params] for m in got] == [[type(v) for v in m.params] for m in ref]
    assert rows_out == (encode_matches(ref).to_pylist() if ref else [])
    assert many.stats == one.stats
    assert json.dumps(tokens_form(save_state(many)), sort_keys=True) == json.dumps(
        save_state(one), sort_keys=True)


def test_a_chain_longer_than_the_kernel_takes_runs_event_by_event() -> None:
    """A keyed sequence of more than 62 stages does not fit the kernel's int64 stage masks
    (it overflowed): Engine.run declines it and gives the per-event answer."""
    body = A.Mult(A.Atom("a", ("k",)), 64)
    prog = program(body, params=("k",), types=("a",), arity=1)
    events = [Event("a", (1,), i, id=i) for i in range(2 * 64 + 3)]
    eng = Engine(prog)
    got = [m.event_refs for m in eng.run(events)]
    ref = [m.event_refs for m in run(prog, events)]
    assert got == ref and len(got) == 2
