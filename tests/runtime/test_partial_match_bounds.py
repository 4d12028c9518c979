"""Partial matches are bounded or announced (docs/semantics.md, "Resources: partial
matches"): the patterns whose partial matches can grow with the stream are named, with why,
and ``max_partial_matches`` stops the run at the very event that passes it — the same event
on every path (per event, the chain and Esper pair kernels, ``Engine.run``, the column entry
point), with the matches found before it delivered."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepflow.compiler.growth import growth, warnings
from cepflow.compiler.program import compile_module
from cepflow.events.event import Event
from cepflow.language.epl import parse_epl
from cepflow.language.parser import parse
from cepflow.loader import load_module
from cepflow.runtime.engine import Engine, EngineError, PartialMatchLimit
from cepflow.runtime.kernels import Declined
from cepflow.runtime.rows import EventRows
from cepflow.runtime.state import restore_state, save_state
from support import keyed_chains

DECLS = "atomicEvent A(k: Integer, v: Integer)\natomicEvent B(k: Integer, v: Integer)\n"


def grows(body: str, extra: str = "") -> str | None:
    prog = compile_module(parse(DECLS + f"complexEvent P(k: Integer) {{ as {body} {extra}}}\n"))
    return growth(prog.automata[0])


@pytest.mark.parametrize("body, extra, why", [
    # chronicle: keyed or not, each unanswered start is held until it completes
    ("A(k, _) -> B(k, _)", "", "under chronicle"),
    ("A(_, _) -> B(k, _)", "", "under chronicle"),
    ("A(k, _){3}", "", "under chronicle"),
    ("A(k, _) -> B(k, _)", "context unrestricted", "under unrestricted"),
    # a window around every resting state bounds them (a trailing NOT completes at its end)
    ("(A(k, _) -> B(k, _))[10 s]", "", None),
    ("(A(k, _) -> NOT B(k, _))[10 s]", "", None),
    ("A(k, _) -> (B(k, _) -> A(k, _))[5]", "", "waiting after A(k, _)"),
    # a NOT gap is not a bound: the event that ends it may never come
    ("A(k, _) -> NOT B(k, _) -> A(k, _)", "", "under chronicle"),
    # immediate and strict dispose on noise (strict: one at a time) ...
    ("A(k, _) -> B(k, _)", "context immediate", None),
    ("A(k, _) -> B(k, _)", "context strict", None),
    # ... per partition value when partitioned: they grow with the number of values
    ("A(k, _) -> B(k, _)", "context immediate partition by k", "partitioned by k"),
    ("A(k, _) -> B(k, _)", "context strict partition by k", "partitioned by k"),
    # esper: every at the start spawns, every inside forks; else one instance at a time
    ("every a = A -> b = B where b.k == a.k", "", "every at its start spawns"),
    ("every (a = A -> b = B where b.k == a.k)", "", None),
    ("a = A -> b = B where b.k == a.k", "context esper", None),
    ("a = A -> every b = B where b.k == a.k -> c = A where c.k == a.k", "context esper",
     "every inside it forks"),
    ("every a = A", "", None),  # (completes at once: nothing rests)
    # the next event of the type that makes them decides: moves every one on or ends it
    ("every a = A where a.v > 4 -> (b = A where b.v > 4 AND NOT A where v <= 4)", "", None),
    ("every a = A where a.v > 4 -> (b = A where b.v > 4 AND NOT A where v < 3)", "",
     "every at its start spawns"),  # (v = 3 or 4 neither moves nor ends it)
    ("every a = A -> (b = B AND NOT A)", "", None),  # (the next A ends it)
    ("every a = A -> (b = B AND NOT B where v < 0)", "", "every at its start spawns"),
    # (ended only by a B, which may never come)
    ("every a = A -> (b = A where b.k == a.k AND NOT A where k != a.k)", "",
     "every at its start spawns"),  # (a step that unifies: other keys pass it by)
])
def test_which_patterns_grow(body: str, extra: str, why: str | None) -> None:
    got = grows(body, extra)
    if why is None:
        assert got is None
    else:
        assert got is not None and why in got, got


def test_warnings_are_located() -> None:
    text = DECLS + ("complexEvent P(k: Integer) { as A(k, _) -> B(k, _) }\n"
                    "complexEvent Q(k: Integer) { as (A(k, _) -> B(k, _))[5] }\n")
    module = parse(text, "p.vepl")
    (w,) = warnings(compile_module(module).automata, module)
    assert str(w).startswith("p.vepl:3:14: warning: pattern P: its partial matches can grow "
                             "with the stream, as no window bounds them (under chronicle")
    assert "--max-partial-matches" in str(w)


def test_limit_is_checked() -> None:
    prog = compile_module(parse(DECLS + "complexEvent P(k: Integer) { as A(k, _) -> B(k, _) }"))
    for bad in (0, -1, 1.5, "3"):
        with pytest.raises(EngineError, match="positive integer"):
            Engine(prog, max_partial_matches=bad)


def test_a_million_starts_stop_at_the_limit() -> None:
    """(Before: every A held a partial match and nothing said so.)"""
    prog = compile_module(parse(DECLS + "complexEvent P(k: Integer) { as A(k, _) -> B(k, _) }"))
    eng = Engine(prog, max_partial_matches=1000)
    evs = (Event("A", (i, 0), i) for i in range(1_000_000))
    with pytest.raises(PartialMatchLimit, match=r"1,001 partial matches held at event 1000 at "
                                                r"1000, more than max_partial_matches 1,000 "
                                                r"\(P 1,001\)") as err:
        list(eng.run(evs, batch_size=4096))
    assert err.value.held == {"P": 1001} and eng.stats.events == 1001


def test_a_restored_excess_stops_at_the_next_event_whatever_its_type() -> None:
    """A state restored with more partial matches than the limit stops the run at the next
    event, also one no pattern reads (the per-event route counts after every event)."""
    prog = compile_module(parse(DECLS + "atomicEvent C(k: Integer)\n"
                                "complexEvent P(k: Integer) { as A(k, _) -> B(k, _) }"))
    eng = Engine(prog)
    for i in range(5):
        eng.process(Event("A", (i, 0), i))
    limited = restore_state(Engine(prog, max_partial_matches=3), save_state(eng))
    with pytest.raises(PartialMatchLimit, match="5 partial matches held at event"):
        limited.process(Event("C", (0,), 10))


# ---------------------------------------------------------------- the paths agree

FILTERS = ("", "v > 1", "v < 2")


def chains():
    return keyed_chains(FILTERS, [None, 2, 5])


streams = st.lists(st.tuples(st.sampled_from("AB"), st.integers(0, 3), st.integers(0, 3),
                             st.sampled_from([0, 1, 2])), max_size=60)


def make(spec) -> list[Event]:
    ts, out = 0, []
    for i, (t, k, v, dt) in enumerate(spec):
        ts += dt
        out.append(Event(t, (k, v), ts, id=f"e{i}", seq=i))
    return out


def outcome(feed) -> tuple[list, object]:
    """The matches delivered and where the run stopped (events seen, partial matches held)."""
    found: list = []
    try:
        feed(found)
    except PartialMatchLimit as err:
        found += err.complex_events
        return [(m.type, tuple(m.event_refs), m.match_id) for m in found], (
            "stopped", str(err), err.held)
    return [(m.type, tuple(m.event_refs), m.match_id) for m in found], None


def check_paths(prog, spec, cuts, limit: int) -> None:
    def per_event(found):
        eng = Engine(prog, max_partial_matches=limit)
        for e in make(spec):
            found += eng.process(e)

    def batches(found):
        eng = Engine(prog, max_partial_matches=limit)
        evs = make(spec)
        for lo, hi in itertools.pairwise(sorted({0, len(evs), *(min(c, len(evs))
                                                                  for c in cuts)})):
            found += eng.process_batch(evs[lo:hi])

    def run(found):
        eng = Engine(prog, max_partial_matches=limit)
        for m in eng.run(make(spec), batch_size=5):
            found.append(m)

    ref = outcome(per_event)
    assert outcome(batches) == ref
    assert outcome(run) == ref
    general = outcome(lambda found: [found.extend(Engine(
        prog, max_partial_matches=limit, fast_path=False).process_batch(make(spec)))])
    assert general == ref


@settings(max_examples=150, deadline=None)
@given(chains(), chains(), streams, st.lists(st.integers(0, 60), max_size=3),
       st.integers(1, 8))
def test_chain_paths_stop_at_the_same_event(p1: str, p2: str, spec, cuts, limit: int) -> None:
    prog = compile_module(parse(DECLS + f"complexEvent P(s: Int) {{ as {p1} }}\n"
                                f"complexEvent Q(s: Int) {{ as {p2} }}\n"))
    check_paths(prog, spec, cuts, limit)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(["", " where timer:within(3 msec)"]), streams,
       st.lists(st.integers(0, 60), max_size=3), st.integers(1, 8))
def test_esper_pair_paths_stop_at_the_same_event(within: str, spec, cuts, limit: int) -> None:
    text = ("create schema A(k integer, v integer);\ncreate schema B(k integer, v integer);\n"
            f"insert into P from pattern [every a = A(v > 0) -> b = B(a.k = b.k){within}];\n")
    prog = load_module(parse_epl(text))
    assert Engine(prog)._pairs is not None
    check_paths(prog, spec, cuts, limit)


@settings(max_examples=80, deadline=None)
@given(chains(), streams, st.integers(1, 8))
def test_column_entry_point_gives_back_a_batch_that_could_pass(p: str, spec, limit: int
                                                                ) -> None:
    prog = compile_module(parse(DECLS + f"complexEvent P(s: Int) {{ as {p} }}\n"))
    eng = Engine(prog, max_partial_matches=limit)
    evs = make(spec)
    starts = sum(eng._starts.get(e.type, 0) for e in evs)
    try:
        table = eng.process_columns(EventRows(evs))
    except Declined:
        assert starts > limit and eng.stats.events == 0
        return
    assert starts <= limit
    assert sum(eng.partial_matches().values()) <= limit
    assert table.count == len(table.complex_events())
