"""The chain kernel leaves the partial matches it carries between batches as rows
(Matcher.pending, runtime.tokens.PendingRows), not tokens: the next batch reads them directly,
and every other reader (a per-event step, a timer, count, all_tokens, save_state, finish) sees
exactly the tokens the per-event engine holds. Batches mixed at random points with single
events, reads, save/restore and advance_to, over many keys, equal the per-event engine. A saved
state keeps the rows as rows (``"rows"``, version 3) and restores them as rows; the per-event
engine's state (tokens only) is read as the version 2 state it also is."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepflow.compiler.program import compile_module
from cepflow.events.event import Event
from cepflow.language.parser import parse
from cepflow.runtime.engine import Engine
from cepflow.runtime.state import (
    StateError,
    has_state,
    restore_state,
    restore_text,
    save_state,
    state_text,
)
from cepflow.runtime.tokens import KeyedRows, PendingRows
from support import tokens_form

DECLS = "".join(f"atomicEvent {t}(k: Int, v: Int)\n" for t in "ABC")
#: queued kernel (distinct types), filtered, repeated types, windows (step_chain)
BODIES = ("A(s, _) -> B(s, _) -> C(s, _)", "A(s, _) -> B(s, _) where v > 1",
          "A(s, _) -> A(s, _) -> B(s, _)", "(A(s, _) -> B(s, _) -> C(s, _))[4 ms]",
          "(A(s, _) where v != 2 -> A(s, _) -> B(s, _))[6 ms]", "A(s, _)")

#: (type, key, v, dt): many keys, ties in ts
specs = st.lists(st.tuples(st.sampled_from("ABC"), st.integers(0, 40), st.integers(0, 3),
                           st.sampled_from([0, 0, 1, 2])), max_size=160)
#: what happens next: a batch of n events, n events one by one, a read of count() /
#: all_tokens(), save and restore, time passing by dt
ops = st.lists(st.one_of(st.tuples(st.just("batch"), st.integers(0, 60)),
                         st.tuples(st.just("events"), st.integers(1, 5)),
                         st.tuples(st.sampled_from(["count", "tokens", "save"]), st.just(0)),
                         st.tuples(st.just("advance"), st.integers(0, 8))), max_size=10)


def compile_(bodies: list[str]):
    src = DECLS + "".join(f"complexEvent P{i}(s: Int) {{ as {b} }}\n"
                          for i, b in enumerate(bodies))
    return compile_module(parse(src))


def rows(found) -> list:
    return [(m.type, m.ts, tuple(m.event_refs), m.params, m.match_id) for m in found]


def partial(eng: Engine) -> list:
    """The partial matches as tokens (materializes the rows) and the counters."""
    def events(th) -> list:
        return [(e.type, e.params, e.ts, e.id, e.seq) for e in th.events]

    return [eng.time, eng.host.counters.token, eng.host.counters.match, eng.host.counters.input,
            [(m.name, [(t.id, t.created, [(th.state, th.bindings, th.zstart, th.last.id,
                                           events(th)) for th in t.threads])
                       for t in m.all_tokens()]) for m in eng.matchers]]


def buckets(eng: Engine) -> list:
    """The matchers' token index: per state and key its tokens in their order (the fast path
    takes a bucket's first). The order of the keys within a state is the dict's insertion
    history, which rows cannot and need not keep: steps look a bucket up by key, and a chain
    (chronicle) takes the oldest token across buckets by id (Matcher._find), so it is sorted
    out here."""
    return [[(s, k, list(b)) for s, bm in sorted(m.buckets.items())
             for k, b in sorted(bm.items(), key=lambda kv: repr(kv[0]))]
            for m in eng.matchers]


def saved_and_restored(prog, one: Engine, many: Engine) -> tuple[Engine, Engine]:
    """Both engines saved and restored: ``many`` from its own state (its chains' kernel rows
    as rows), ``one`` from its state labelled version 2 (it has no rows: the per-event path
    saves the rows of its row step as the tokens they stand for, Matcher.row_tokens). The saved
    states differ only there; restored, both hold the same tokens."""
    held = {m.name: len(m.pending) for m in many.matchers if type(m.pending) is PendingRows}
    mine, theirs = save_state(many), save_state(one)
    assert "rows" not in theirs and tokens_form(mine) == theirs
    assert {n: len(r["ids"]) for n, r in mine.get("rows", {}).items()} == held
    theirs["version"] = 2
    many = restore_state(Engine(prog), json.loads(json.dumps(mine)))
    one = restore_state(Engine(prog), json.loads(json.dumps(theirs)))
    assert {m.name: len(m.pending) for m in many.matchers if m.pending is not None} == held
    assert partial(restore_state(Engine(prog), json.loads(json.dumps(mine)))) == partial(one)
    return one, many


class Feed:
    """Makes the same events twice (engines number them in place)."""

    def __init__(self, spec: list) -> None:
        self.spec, self.i, self.ts = spec, 0, 0

    def take(self, n: int) -> tuple[list[Event], list[Event]]:
        out: tuple[list[Event], list[Event]] = ([], [])
        for t, k, v, dt in self.spec[self.i:self.i + n]:
            self.ts += dt
            for evs in out:
                evs.append(Event(t, (k, v), self.ts, id=self.i))
            self.i += 1
        return out


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(BODIES), min_size=1, max_size=3), specs, ops)
def test_rows_behave_as_tokens(bodies: list[str], spec: list, plan: list) -> None:
    prog = compile_(bodies)
    one, many = Engine(prog), Engine(prog)
    assert many._chains is not None
    feed = Feed(spec)
    for op, n in [*plan, ("batch", len(spec))]:
        if op in ("batch", "events"):
            a, b = feed.take(n)
            ref = rows(x for e in a for x in one.process(e))
            got = (rows(many.process_batch(b)) if op == "batch" else
                   rows(x for e in b for x in many.process(e)))
            assert got == ref
        elif op == "count":  # (reads the rows without making tokens)
            assert many.partial_matches() == one.partial_matches()
            assert has_state(many) == has_state(one)
        elif op == "tokens":
            assert partial(many) == partial(one)
            assert buckets(many) == buckets(one)
        elif op == "save":
            one, many = saved_and_restored(prog, one, many)
        else:
            feed.ts += n
            assert rows(many.advance_to(feed.ts)) == rows(one.advance_to(feed.ts))
    assert many.partial_matches() == one.partial_matches()
    assert rows(many.finish(True)) == rows(one.finish(True))
    assert partial(many) == partial(one)
    assert buckets(many) == buckets(one)


def test_rows_carried_between_batches() -> None:
    """After a batch the chain's partial matches are rows (no tokens, no index entries); the
    next batch takes them as they are; a per-event step takes them into its own rows
    (KeyedRows), which a reader sees as the per-event tokens."""
    prog = compile_(["A(s, _) -> B(s, _) -> C(s, _)"])
    one, many = Engine(prog), Engine(prog)
    feed = Feed([("A", k, 0, 1) for k in range(50)] + [("B", k, 0, 1) for k in range(0, 50, 2)]
                + [("C", k, 0, 1) for k in range(0, 50, 4)] + [("A", 7, 0, 1)])
    for n in (55, 30):
        a, b = feed.take(n)
        assert rows(many.process_batch(b)) == rows(x for e in a for x in one.process(e))
        m = many.matchers[0]
        assert m.pending is not None and not m.tokens and not m.buckets
        assert m.count() == one.matchers[0].count() == len(m.pending)
    a, b = feed.take(1)
    assert rows(many.process(b[0])) == rows(one.process(a[0]))
    assert type(many.matchers[0].pending) is KeyedRows and not many.matchers[0].tokens
    assert partial(many) == partial(one)
    assert buckets(many) == buckets(one)


def test_rows_saved_and_restored_as_rows() -> None:
    """A windowed chain's rows are saved as ``"rows"`` and restored as rows — no tokens, one
    window timer per partial match — and the restored engine continues like the uninterrupted
    one (batches, timers firing, a per-event step)."""
    prog = compile_(["(A(s, _) -> B(s, _) -> C(s, _))[10 ms]"])
    one, many = Engine(prog), Engine(prog)
    feed = Feed([("A", k, 0, 1 if k == 0 else 0) for k in range(8)]
                + [("B", k, 0, 1) for k in range(0, 8, 2)]
                + [("A", 3, 0, 1), ("C", 0, 0, 1), ("B", 3, 0, 1), ("C", 2, 0, 1)])
    a, b = feed.take(12)
    assert rows(many.process_batch(b)) == rows(x for e in a for x in one.process(e))
    state = json.loads(state_text(many))
    assert state["version"] == 3 and state["patterns"] == {"P0": []}
    saved = state["rows"]["P0"]
    assert saved["ids"] == many.matchers[0].pending.ids
    assert saved["events"][2] == [["A", [2, 0], 1, 2, 2], ["B", [2, 0], 3, 9, 9]]
    many = restore_text(Engine(prog), json.dumps(state))
    m = many.matchers[0]
    assert not m.tokens and m.pending is not None and len(m.pending) == len(saved["ids"])
    assert sorted((d, t, s) for d, _, _, _, t, _, s in many.host.timers.entries()) == sorted(
        (evs[0][2] + 10, tid, evs[0][2]) for tid, evs in zip(saved["ids"], saved["events"],
                                                           strict=True))
    a, b = feed.take(4)
    found = rows(many.process_batch(b))
    assert found == rows(x for e in a for x in one.process(e))
    assert [(f[1], f[2]) for f in found] == [(7, (0, 8, 13)), (9, (2, 9, 15))]
    assert rows(many.advance_to(12)) == rows(one.advance_to(12))
    assert partial(many) == partial(one) and partial(one)[-1] == [("P0", [(9, 6, [
        (1, {"s": 3}, {0: 6}, 12, [("A", (3, 0), 6, 12, 12)])])])]  # the others expired


def test_damaged_rows_are_state_errors() -> None:
    prog = compile_(["A(s, _) -> B(s, _)"])
    eng = Engine(prog)
    eng.process_batch([Event("A", (k, 0), k) for k in range(3)])
    state = save_state(eng)
    assert len(state["rows"]["P0"]["ids"]) == 3
    short = {**state["rows"]["P0"], "keys": [0]}
    with pytest.raises(StateError, match=r"rows\.P0: ids, states, keys and events of different"):
        restore_state(Engine(prog), {**state, "rows": {"P0": short}})
    with pytest.raises(StateError, match=r"patterns\.Q: not a pattern of the program"):
        restore_state(Engine(prog), {**state, "rows": {"Q": state["rows"]["P0"]}})
    with pytest.raises(StateError, match="version"):
        restore_state(Engine(prog), {**state, "version": 4})
