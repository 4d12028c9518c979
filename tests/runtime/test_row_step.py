"""The row step (Matcher._row_step: a keyed chain's partial matches kept as rows,
runtime.tokens.KeyedRows, while events arrive one at a time) against the token path it replaces
(``fast_path=False``: the general token path, every event through ``Matcher.process``): random
programs of keyed chains — of two to four stages, types repeating, beside chains the row step
does not take (a window, a filter, one stage) and a chain over another pattern's matches —
random streams (keys that compare equal across types, NaN), with at random points a batch (the
chain kernel's rows taken over), a read of the tokens (rows made tokens, then taken back), a
save and restore, a count and time passing. Matches, ids, order, statistics, partial matches
and the saved state equal the reference's at every point."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_pending_rows import Feed

from cepflow.compiler.program import compile_module
from cepflow.events.event import Event
from cepflow.language.parser import parse
from cepflow.runtime.engine import Engine
from cepflow.runtime.state import has_state, restore_state, save_state
from cepflow.runtime.tokens import KeyedRows
from support import tokens_form

DECLS = "".join(f"atomicEvent {t}(k: Int, v: Int)\n" for t in "ABC")
#: chains the row step takes (the first of them is P0, which the last body of OTHERS reads)
ROWED = ("A(s, _) -> B(s, _)", "A(s, _) -> B(s, _) -> C(s, _)", "A(s, _) -> A(s, _) -> B(s, _)",
         "B(s, _) -> A(s, _) -> B(s, _) -> C(s, _)", "A(s, _) -> B(s, _) -> A(s, _)",
         "A(s, _) -> A(s, _) -> A(s, _)")
#: patterns it does not take (a window, a filter, one stage) and a chain over P0's matches
#: (rowed, and stepped from the cascade: Matcher.process)
OTHERS = ("(A(s, _) -> B(s, _))[4 ms]", "A(s, _) -> B(s, _) where v > 1", "C(s, _)",
          "P0(s) -> C(s, _)")
NAN = math.nan
#: (type, key, v, dt): few keys, 1 and 1.0 equal, a NaN key, ties in ts
specs = st.lists(st.tuples(st.sampled_from("ABC"), st.sampled_from([0, 1, 1.0, 2, 3, NAN]),
                           st.integers(0, 3), st.sampled_from([0, 0, 1, 2])), max_size=120)
ops = st.lists(st.one_of(st.tuples(st.sampled_from(["events", "batch"]), st.integers(0, 30)),
                         st.tuples(st.sampled_from(["tokens", "save", "count"]), st.just(0)),
                         st.tuples(st.just("advance"), st.integers(0, 6))), max_size=8)


def compile_(bodies: list[str]) -> Any:
    src = DECLS + "".join(f"complexEvent P{i}(s: Int) {{ as {b} }}\n"
                          for i, b in enumerate(bodies))
    return compile_module(parse(src))


def found(matches: Any) -> list:
    return [(m.type, m.ts, m.match_id, tuple(m.event_refs), repr(m.params)) for m in matches]


def saved(eng: Engine) -> str:
    """The saved state, a chain kernel's rows written as the tokens they stand for."""
    return json.dumps(tokens_form(save_state(eng)), sort_keys=True)


def partial(eng: Engine) -> tuple[list, list]:
    """The partial matches as tokens (a reader: it makes the rows tokens) and their buckets
    (per state and key their token ids in order; a bucket's key is any of the equal values
    its tokens hold — 1 or 1.0 — so keys compare by value, a NaN as itself)."""
    def key(k: Any) -> Any:
        return k if k == k else "nan"

    return ([[(t.id, t.created, [(th.state, repr(th.bindings), [e.ref for e in th.events])
                                 for th in t.threads]) for t in m.all_tokens()]
             for m in eng.matchers],
            [sorted(((s, key(k), list(b)) for s, bm in m.buckets.items() for k, b in bm.items()),
                    key=repr) for m in eng.matchers])


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(ROWED), min_size=1, max_size=3),
       st.lists(st.sampled_from(OTHERS), max_size=2), specs, ops)
def test_row_step_equals_the_token_path(rowed: list[str], others: list[str], spec: list,
                                        plan: list) -> None:
    prog = compile_([*rowed, *others])
    assert Engine(prog).matchers[0].pattern.row_plan is not None
    against_the_token_path(prog, spec, plan)


def against_the_token_path(prog: Any, spec: list, plan: list) -> None:
    """``prog``'s engine against the general token path (``fast_path=False``) over the
    events of ``spec``, the operations of ``plan`` at random points (a run of events, a
    batch, a read of the tokens, a save and restore, a count, time passing): matches, ids,
    order, statistics, partial matches and saved state equal at every point."""
    rows, ref = Engine(prog), Engine(prog, fast_path=False)
    assert all(m.pattern.row_plan is None and m.pattern.pair is None for m in ref.matchers)
    feed = Feed(spec)
    for op, n in [*plan, ("events", len(spec))]:
        if op in ("events", "batch"):
            mine, theirs = feed.take(n)
            expected = found(x for e in theirs for x in ref.process(e))
            got = found(rows.process_batch(mine) if op == "batch"
                        else (x for e in mine for x in rows.process(e)))
            assert got == expected
        elif op == "tokens":
            assert partial(rows) == partial(ref)
        elif op == "save":
            assert saved(rows) == saved(ref)
            state = json.loads(json.dumps(save_state(rows)))
            rows = restore_state(Engine(prog), state)
            ref = restore_state(Engine(prog, fast_path=False), state)
        elif op == "count":
            assert rows.partial_matches() == ref.partial_matches()
            assert has_state(rows) == has_state(ref)
        else:
            feed.ts += n
            assert found(rows.advance_to(feed.ts)) == found(ref.advance_to(feed.ts))
    assert rows.partial_matches() == ref.partial_matches()
    assert saved(rows) == saved(ref)
    assert rows.stats == ref.stats
    assert found(rows.finish(True)) == found(ref.finish(True))
    assert partial(rows) == partial(ref)


def test_a_token_that_is_no_row_keeps_the_token_path() -> None:
    """A restored token the row step cannot hold as a row (a hand-written state: a binding
    besides the key) makes the pattern step tokens from then on (Matcher.rowless), with the
    token path's result: the extra binding reaches the match."""
    prog = compile_(["A(s, _) -> B(s, _) -> C(s, _)"])
    eng = Engine(prog)
    for i, k in enumerate((1, 2)):
        eng.process(Event("A", (k, 0), i, f"a{i}"))
    state = json.loads(json.dumps(save_state(eng)))
    state["patterns"]["P0"][0]["threads"][0]["bindings"]["x"] = 5
    rows, ref = restore_state(Engine(prog), state), restore_state(Engine(prog, fast_path=False),
                                                                   state)
    stream = [("B", 1), ("A", 3), ("C", 1), ("B", 2), ("C", 2)]
    for i, (t, k) in enumerate(stream):
        got, expected = (eng_.process(Event(t, (k, 0), 10 + i, f"e{i}")) for eng_ in (rows, ref))
        assert found(got) == found(expected)
        assert [m.bindings for m in got] == [m.bindings for m in expected]
    assert rows.matchers[0].rowless and type(rows.matchers[0].pending) is not KeyedRows
    assert saved(rows) == saved(ref)
