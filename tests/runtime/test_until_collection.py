"""A repeated tag's collection is one run's shared structure, not copied per step
(runtime.collected): ``Trail`` (an append-only list and a length per run) holds a thread's
events and each collected tag's events, ``Collected`` is bindings whose tags are trails and
whose face is the plain dict the copying step made (runtime.binding.collect).

Checked here: the trails against Python lists under random extension trees (contents, equality,
matcher._age's order of events); ``Collected`` against the copying step under random steps and
forks (names, values, order, equality, copies); the engine against the copying engine (the
same engine with binding.collect and list copies in the token path's step) on random until
and repetition patterns and streams — the same matches (ids, bindings in order, times, events)
and the same saved state, text for text, per event, through ``Engine.run`` cut anywhere and
with a JSON save/restore between; pinned: one instance of ``a=A until d=D`` extends one list
in place (no copy: the cost is linear), a state saved with plain dicts goes on, the saved
bindings' order."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cepflow
from cepflow.automaton.automaton import Collect
from cepflow.events.event import Event
from cepflow.language.epl import parse_epl
from cepflow.runtime import binding
from cepflow.runtime import matcher as matcher_mod
from cepflow.runtime.binding import bind, collect, collect_run
from cepflow.runtime.collected import Collected, Trail, compare, equal, shared
from cepflow.runtime.matcher import _age, _dedupe, _event_key, _Events, _oldest
from cepflow.runtime.state import restore_state, save_state
from cepflow.runtime.tokens import Thread


@pytest.fixture(autouse=True, scope="module")
def share_at_once() -> Any:
    """Every collection shared from its first event (binding.SHARE_FROM 0; the default keeps
    the first ones plain: test_short_collections_stay_plain)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(binding, "SHARE_FROM", 0)
        yield


# -- trails ------------------------------------------------------------------------------------

#: a tree of runs: each step extends run ``i`` (an index into the runs so far) by ``x``
steps_st = st.lists(st.tuples(st.integers(0, 30), st.integers(0, 3)), max_size=40)


def grow(steps: list[tuple[int, int]]) -> tuple[list[Trail], list[list[int]]]:
    """The trails and the lists of a tree of runs (run 0 empty)."""
    trails, lists = [Trail.of([])], [[]]
    for i, x in steps:
        i %= len(trails)
        trails.append(trails[i].plus(x))
        lists.append([*lists[i], x])
    return trails, lists


@settings(max_examples=60, deadline=None)
@given(steps_st)
def test_trails_read_as_their_lists(steps: list[tuple[int, int]]) -> None:
    """Every run reads its own elements whatever the others appended after it: iteration,
    length, indices (negative too), slices, equality with lists and trails, copies."""
    trails, lists = grow(steps)
    for t, want in zip(trails, lists, strict=True):
        assert list(t) == want and len(t) == len(want) and t == want
        assert [t[i] for i in range(-len(want), len(want))] == want + want if want else True
        assert [t[i] for i in range(len(want))] == want
        assert t[1:-1] == want[1:-1] and t[::2] == want[::2]
        with pytest.raises(IndexError):
            t[len(want)]
        assert json.loads(json.dumps(list(t))) == want
    for a, la in zip(trails, lists, strict=True):
        for b, lb in zip(trails, lists, strict=True):
            assert (a == b) is (la == lb) and equal(a, b) is (la == lb)
            p = shared(a, b)
            assert la[:p] == lb[:p] and p <= min(len(la), len(lb))


@settings(max_examples=60, deadline=None)
@given(steps_st)
def test_runs_compare_in_ages_order(steps: list[tuple[int, int]]) -> None:
    """compare() is matcher._age's order of events (first difference, the older first; a run
    before a shorter one it extends) on runs sharing their elements and on plain lists."""
    evs = [Event("A", (), 1000 * (x // 2), seq=x) for x in range(4)]
    trails, lists = grow(steps)
    memo: dict[int, Any] = {}
    runs = [_events_of(t, evs, memo) for t in trails]
    for i, a in enumerate(runs):
        for j, b in enumerate(runs):
            ea = [evs[x] for x in lists[i]]
            eb = [evs[x] for x in lists[j]]
            ka = _age(Thread(0, {}, ea, None, None))
            kb = _age(Thread(0, {}, eb, None, None))
            want = (ka > kb) - (ka < kb)
            assert compare(a, b, _event_key) == want
            assert compare(ea, b, _event_key) == want == compare(ea, eb, _event_key)
            assert (_Events(a) < _Events(b)) is (want < 0)
            assert (_Events(a) == _Events(eb)) is (want == 0)


def _events_of(t: Trail, evs: list[Event], memo: dict[int, Any]) -> Trail:
    """A trail of events with ``t``'s sharing (``memo``: the lists and runs made so far, by
    the id of the ones they stand for): the same tree of lists, events for numbers."""

    def walk(x: Trail) -> Trail:
        got = memo.get(id(x))
        if got is None:
            items = memo.setdefault(id(x._items), [evs[v] for v in x._items])
            got = memo[id(x)] = Trail(items, x._n, None if x._base is None else walk(x._base),
                                      x._off)
        return got

    return walk(t)


# -- Collected against the copying step ---------------------------------------------------------

TAGS = {"a": Collect("a", ("k", "v"), ("_a.k", "_a.v"), "_a[]"),
        "b": Collect("b", ("k",), ("_b.k",), "_b[]")}


class _Pos:
    """An occurrence that binds ``binds`` (what bind() reads of a Position)."""

    def __init__(self, binds: tuple[tuple[int, str], ...]) -> None:
        self.binds = binds


op_st = st.one_of(
    st.tuples(st.just("collect"), st.sampled_from("ab"), st.integers(0, 2), st.integers(0, 2)),
    st.tuples(st.just("bind"), st.sampled_from(["x", "y", "_a.k", "a[0].k"]), st.integers(0, 2),
              st.integers(0, 1)),
)
start_st = st.sampled_from([{}, {"x": 1}, {"s": 0, "_a.k": 5, "a[0].k": 5, "a[0].v": 1,
                                            "_a.v": 1, "_a[]": 1}])


def step(op: tuple, b: dict[str, Any], shared_step: bool) -> dict[str, Any] | None:
    kind, name, x, y = op
    if kind == "collect":
        return (collect_run if shared_step else collect)(TAGS[name], (x, y), b)
    return bind(_Pos(((0, name),)), (x,), b)


@settings(max_examples=80, deadline=None)
@given(start_st, st.lists(st.tuples(st.integers(0, 20), op_st), max_size=25))
def test_collected_is_the_plain_dict(start: dict[str, Any], ops: list[tuple[int, tuple]]
                                     ) -> None:
    """A tree of steps (collect a tag, bind a variable) from one start: each Collected reads
    as the copying step's dict — names in order, values, get / [] / in / len, equality both
    ways, dict() and {**…} copies — and stays so after its forks stepped on; the json encoder
    refuses it (it would read a dict subclass's empty storage)."""
    plains: list[dict[str, Any]] = [dict(start)]
    mine: list[dict[str, Any]] = [dict(start)]
    for i, op in ops:
        i %= len(plains)
        p, m = step(op, plains[i], False), step(op, mine[i], True)
        assert (p is None) is (m is None)
        if p is not None:
            plains.append(p)
            mine.append(m)
    names = ["x", "y", "s", "zz", "a[0].k", "a[1].v", "a[2].k", "a[0].zz", "b[0].k",
             "b[1].k", "_a[]", "_b[]", "_a.k", "a[x].k", "a"]
    for p, m in zip(plains, mine, strict=True):
        assert list(m.items()) == list(p.items()) and list(m) == list(p)
        assert list(m.keys()) == list(p.keys()) and list(m.values()) == list(p.values())
        assert m == p and p == m and (m != p) is False and len(m) == len(p)
        assert list(dict(m).items()) == list(p.items()) and list({**m}.items()) == list(p.items())
        assert json.dumps(dict(m)) == json.dumps(p) and repr(m) == repr(p)
        if m.__class__ is Collected:  # (no dict storage that C code could read as empty)
            with pytest.raises(TypeError):
                json.dumps(m)
        for n in names:
            assert m.get(n, "-") == p.get(n, "-") and (n in m) is (n in p)
            assert m[n] == p[n] if n in p else n not in m
    for p1, m1 in zip(plains, mine, strict=True):
        for p2, m2 in zip(plains, mine, strict=True):
            assert (m1 == m2) is (p1 == p2)


@settings(max_examples=60, deadline=None)
@given(start_st, st.lists(st.tuples(st.integers(0, 20), op_st), max_size=12),
       st.lists(st.tuples(st.integers(0, 12), st.integers(1, 2), st.integers(0, 30),
                          st.sampled_from([None, {1: 0.0}])), min_size=1, max_size=8),
       st.booleans())
def test_dedupe_and_oldest_keep_the_copying_steps_threads(
        start: dict[str, Any], ops: list[tuple[int, tuple]],
        picks: list[tuple[int, int, int, Any]], timed: bool) -> None:
    """Matcher._dedupe and _oldest over threads some of whose bindings and events are shared
    (Collected, Trail) keep the very threads they keep of the same threads plain: random
    bindings from a tree of steps, events from a tree of runs, states and zones."""
    plains: list[dict[str, Any]] = [dict(start)]
    mine: list[dict[str, Any]] = [dict(start)]
    for i, op in ops:
        i %= len(plains)
        p, m = step(op, plains[i], False), step(op, mine[i], True)
        if p is not None:
            plains.append(p)
            mine.append(m)
    evs = [Event("A", (), 1000 * (x // 2), seq=x) for x in range(4)]
    trails, lists = grow([(i, x) for i, x in zip(range(31), [0, 1, 2, 3, 1, 0, 2] * 5,
                                                             strict=False)])
    memo: dict[int, Any] = {}
    runs = [_events_of(t, evs, memo) for t in trails]
    ref = [Thread(s, plains[b % len(plains)], [evs[x] for x in lists[r % len(lists)]], z, None)
           for b, s, r, z in picks]
    new = [Thread(s, mine[b % len(mine)], runs[r % len(runs)], z, None) for b, s, r, z in picks]
    for th, nt in zip(ref, new, strict=True):
        th.last = nt.last = th.events[-1] if th.events else None
    loose = ("a[", "_a.", "_a[", "b[", "_b.", "_b[")

    def kept(f: Any, threads: list[Thread]) -> list[int]:
        ids = {id(th): i for i, th in enumerate(threads)}
        return [ids[id(th)] for th in f(threads)]

    # their definitions over the plain threads: _dedupe keeps, of the threads of one state,
    # bindings and zones, the least by _age; _oldest those of the oldest events among the
    # threads of one state, zones, last time (when timed) and bindings but the loose ones
    def same(th: Thread) -> tuple:
        return th.state, sorted(th.bindings.items()), sorted((th.zstart or {}).items())

    want = [i for i, th in enumerate(ref) if all(
        _age(th) < _age(o) or (_age(th) == _age(o) and i <= j)
        for j, o in enumerate(ref) if same(o) == same(th))]
    assert kept(_dedupe, new) == kept(_dedupe, ref) == want

    def alike(th: Thread) -> tuple:
        return (th.state, sorted((n, v) for n, v in th.bindings.items()
                                 if not n.startswith(loose)),
                sorted((th.zstart or {}).items()), th.last_ts if timed else None)

    want = [i for i, th in enumerate(ref)
            if all(_age(th)[0] <= _age(o)[0] for o in ref if alike(o) == alike(th))]
    assert kept(lambda ts: _oldest(ts, loose, timed), new) == kept(
        lambda ts: _oldest(ts, loose, timed), ref) == want


def test_dedupe_keeps_runs_of_other_values_pinned() -> None:
    """Two runs at one state whose collections differ only in a value (A(0, 0) or A(1, 1)
    collected), as many names each: two threads of different futures, both kept; a third
    equal to the first (its own lists) is one with it, the older kept."""
    evs = [Event("A", (x, x), 1000 * (x + 1), seq=x) for x in range(2)]
    one, other = (collect_run(TAGS["a"], e.params, {"x": 1}) for e in evs)
    again = collect_run(TAGS["a"], (0, 0), {"x": 1})
    ths = [Thread(1, one, Trail.of([evs[1]]), None, evs[1]),
           Thread(1, other, Trail.of([evs[1]]), None, evs[1]),
           Thread(1, again, Trail.of([evs[0]]), None, evs[0])]
    assert len(one) == len(other) == len(again) and one != other and one == again
    assert _dedupe(ths) == ths[1:]


def test_oldest_keeps_a_run_per_plain_binding_pinned() -> None:
    """_oldest over runs that collected ``a`` (loose) and bound ``x`` (not): the runs with
    ``x`` 1 are one Esper instance (the oldest events stay), the run with ``x`` 2 another."""
    evs = [Event("A", (x, x), 1000 * (x + 1), seq=x) for x in range(3)]
    runs = [(1, evs[0]), (1, evs[1]), (2, evs[2])]
    ths = [Thread(1, collect_run(TAGS["a"], e.params, {"x": x}), Trail.of([e]), None, e)
           for x, e in runs]
    loose = ("a[", "_a.", "_a[")
    assert _oldest(ths, loose, False) == [ths[0], ths[2]]
    assert _oldest(ths[1:], loose, False) == ths[1:]


def test_collected_is_never_changed_in_place() -> None:
    b = collect_run(TAGS["b"], (1,), {})
    assert b.__class__ is Collected
    with pytest.raises(TypeError):
        b["x"] = 1  # type: ignore[index]
    assert not any(hasattr(b, f) for f in ("update", "pop", "setdefault", "clear", "popitem"))
    assert dict(b) == {"_b.k": 1, "b[0].k": 1, "_b[]": 1}


# -- the engine against the copying engine ------------------------------------------------------

SCHEMAS = "".join(f"create schema {t}(k int, v int);\n" for t in "ABCD")
BODIES = [
    "a=A until d=D",
    "([2] a=A) until d=D",
    "every (a=A until d=D)",
    "b=B -> (a=A until d=D) -> c=C(c.k = a[0].k)",
    "b=B -> (([2] a=A) until d=D) -> c=C(c.k = a[1].k)",
    "[2:] a=A until d=D",
    "every b=B -> ([1:3] a=A(a.k = b.k) until d=D(d.k = b.k))",
    "[3] a=A",
    "every b=B -> [2] (a=A -> c=C)",
    "(a=A until e=B) until d=D",
    "every ((a=A or c=C) until d=D)",
]


def program(body: str) -> Any:
    return cepflow.load_module(parse_epl(SCHEMAS + f"@Name('P') select * from pattern [{body}];"))


def stream(items: list[tuple[str, int]]) -> list[Event]:
    return [Event(t, (k, i), 1000 * (i + 1)) for i, (t, k) in enumerate(items)]


events_st = st.lists(st.tuples(st.sampled_from("AAABCD"), st.integers(0, 2)), max_size=24
                     ).map(stream)


def facts(ces: list[Any]) -> list[tuple]:
    """Everything a match says: id, type, time, parameters, bindings in order, its events."""
    return [(ce.match_id, ce.type, ce.ts, ce.params, list(ce.bindings.items()),
             [(e.type, e.ts, e.params) for e in ce.leaves()]) for ce in ces]


def saved(engine: cepflow.Engine) -> str:
    return json.dumps(save_state(engine))


def copying(monkeypatch: pytest.MonkeyPatch) -> None:
    """The token path's step as it was: collect() copies the bindings, a list the events."""
    monkeypatch.setattr(matcher_mod, "collect_run", collect)
    monkeypatch.setattr(matcher_mod, "extend", lambda evs, e: [*evs, e])


@settings(max_examples=60, deadline=None)
@given(events_st, st.sampled_from(BODIES), st.sampled_from(["event", "run", "restore"]),
       st.integers(0, 24), st.sampled_from([0, 0, 2]))
def test_the_engine_answers_as_the_copying_one(events: list[Event], body: str, how: str,
                                               cut: int, share: int) -> None:
    """Per event, through Engine.run in two batches cut at ``cut``, with a JSON save/restore at
    the cut: the matches and the saved states (at the cut and at the end) are the copying
    engine's, to the text — collections shared from their first event or their ``share``-th
    (plain before)."""
    prog = program(body)
    with pytest.MonkeyPatch.context() as share_mp:
        share_mp.setattr(binding, "SHARE_FROM", share)
        _against_copying(prog, events, how, cut, body)


def _against_copying(prog: Any, events: list[Event], how: str, cut: int, body: str
                     ) -> None:
    """test_the_engine_answers_as_the_copying_one's comparison."""
    with pytest.MonkeyPatch.context() as mp:
        copying(mp)
        ref = cepflow.Engine(prog, start=0)
        want = [ce for e in events[:cut] for ce in ref.process(e)]
        want_cut = saved(ref)
        want += [ce for e in events[cut:] for ce in ref.process(e)]
        want_end = saved(ref)
    engine = cepflow.Engine(prog, start=0)
    if how == "event":
        got = [ce for e in events[:cut] for ce in engine.process(e)]
    else:
        got = list(engine.run(events[:cut]))
    got_cut = saved(engine)
    if how == "restore":
        engine = restore_state(cepflow.Engine(prog, start=0), json.loads(got_cut))
    if how == "run":
        got += engine.run(events[cut:])
    else:
        got += [ce for e in events[cut:] for ce in engine.process(e)]
    assert (got_cut, saved(engine)) == (want_cut, want_end), body
    assert facts(got) == facts(want), body


# -- pinned -------------------------------------------------------------------------------------

def test_one_instance_extends_one_list() -> None:
    """``a=A until d=D`` over A(k0) … A(k9): after each A the instance's one thread holds its
    events and ``a``'s collection in the very lists of the step before, one longer (appended
    in place: a step costs O(1), the instance O(k)); D completes it with a[0] … a[9]."""
    engine = cepflow.Engine(program("a=A until d=D"), start=0)
    lists = None
    for i in range(10):
        engine.process(Event("A", (i, i), 1000 * (i + 1)))
        (tok,) = engine.matchers[0].all_tokens()
        (th,) = tok.threads
        now = (th.events._items, th.bindings._tags["a"][1]._items, th.bindings._order._items)
        assert [len(x) for x in now] == [i + 1, i + 1, 5 + 2 * i]
        assert lists is None or all(x is y for x, y in zip(now, lists, strict=True))
        lists = now
    (ce,) = engine.process(Event("D", (0, 10), 11000))
    assert [ce.bindings[f"a[{i}].k"] for i in range(10)] == list(range(10))
    assert len(ce.parts) == 11


def test_short_collections_stay_plain() -> None:
    """With the default binding.SHARE_FROM (16), ``a=A until d=D`` collects its first 16 A's
    in plain dicts and lists, then shares: after 16 A's the thread is plain, after 17 shared;
    the match over 20 A's and the saved states on the way are the copying engine's."""
    prog = program("a=A until d=D")
    evs = stream([("A", i % 3) for i in range(20)] + [("D", 0)])
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(binding, "SHARE_FROM", 16)
        engine = cepflow.Engine(prog, start=0)
        got, states, kinds = [], [], []
        for e in evs:
            got += engine.process(e)
            states.append(saved(engine))
            kinds.append([(th.bindings.__class__.__name__, th.events.__class__.__name__)
                          for t in engine.matchers[0].all_tokens() for th in t.threads])
        copying(mp)
        ref = cepflow.Engine(prog, start=0)
        want = [ce for e in evs for ce in ref.process(e)]
    assert kinds[15] == [("dict", "list")] and kinds[16] == [("Collected", "Trail")]
    assert facts(got) == facts(want) and len(got) == 1
    ref = cepflow.Engine(prog, start=0)
    with pytest.MonkeyPatch.context() as mp:
        copying(mp)
        for e, state in zip(evs, states, strict=True):
            ref.process(e)
            assert saved(ref) == state


def test_a_group_until_keeps_two_lists() -> None:
    """``([2] a=A) until d=D``: of its runs, the one of every A extends one list; the run one
    A behind (a group under way) starts a piece of its own after the shared part — no run
    copies the collection. D after five A's completes the two groups (a[0] … a[3])."""
    engine = cepflow.Engine(program("([2] a=A) until d=D"), start=0)
    for i in range(5):
        engine.process(Event("A", (i, i), 1000 * (i + 1)))
    (tok,) = engine.matchers[0].all_tokens()
    pieces = [th.events.segments() for th in tok.threads if isinstance(th.events, Trail)]
    assert max(len(p[-1][0]) for p in pieces) == 6  # (the clock's event and five A's)
    assert all(len(items) <= 6 and (len(p) == 1 or count == 1)
               for p in pieces for items, _, count in p[-1:])
    (ce,) = engine.process(Event("D", (0, 6), 7000))
    assert [ce.bindings.get(f"a[{i}].k") for i in range(5)] == [0, 1, 2, 3, None]


def test_a_plain_state_goes_on_and_saves_in_order() -> None:
    """A state whose bindings are plain (saved by stop 38's release, or before any step) goes
    on shared after its next A; saved again, its bindings read in the copying step's order:
    the current event's fields, then a[0] with the count after it, then a[1] …"""
    prog = program("b=B -> (a=A until d=D) -> c=C(c.k = a[1].k)")
    engine = cepflow.Engine(prog, start=0)
    for e in stream([("B", 0), ("A", 1), ("A", 2)]):
        engine.process(e)
    state = json.loads(saved(engine))
    ((th,),) = [t["threads"] for t in state["patterns"]["P"]]
    assert list(th["bindings"]) == ["b.k", "b.v", "_a.k", "a[0].k", "_a.v", "a[0].v", "_a[]",
                                    "a[1].k", "a[1].v"]
    engine = restore_state(cepflow.Engine(prog, start=0), state)
    (tok,) = engine.matchers[0].all_tokens()
    assert tok.threads[0].bindings.__class__ is dict
    got = [ce for e in stream([("B", 0), ("A", 1), ("A", 2), ("A", 0), ("D", 0), ("C", 1),
                               ("C", 2)])[3:] for ce in engine.process(e)]
    assert [(ce.ts, ce.bindings["a[2].v"], ce.bindings["c.v"]) for ce in got] == [(7000, 3, 6)]
