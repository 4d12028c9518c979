"""A matcher's token buckets stay in id (age) order when a token reaches a state after a
younger one (runtime.matcher._insert: the younger ones taken off the end and put back after
it) — the order a sort of the whole bucket gives, which the token path reads (the oldest
instance first, Esper's instances in age order)."""

from hypothesis import given, settings
from hypothesis import strategies as st

from cepflow.events.event import Event
from cepflow.language.epl import parse_epl
from cepflow.loader import load_module
from cepflow.runtime.engine import Engine
from cepflow.runtime.matcher import _insert
from cepflow.runtime.tokens import Token


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 60), unique=True, min_size=1, max_size=30))
def test_insert_keeps_id_order(ids) -> None:
    """Tokens inserted in any order (each into a bucket in id order) give the sorted bucket,
    each object kept under its id."""
    bucket: dict[int, Token] = {}
    toks = {i: Token(i, None, 0.0, []) for i in ids}
    for i in ids:
        _insert(bucket, toks[i])
        assert list(bucket) == sorted(bucket)
    assert list(bucket) == sorted(ids)
    assert all(bucket[i] is toks[i] for i in ids)


def test_pinned_interval_after_b() -> None:
    """Hand-derived: ``every a=A -> b=B(b.k = a.k) -> timer:interval(10 msec)``. A(k=1)@0
    and A(k=2)@1 wait for a B of their key; B(k=2)@2 moves the younger one on (its timer at
    12), B(k=1)@3 the older one (timer at 13): the older instance reaches the state after the
    younger, and the bucket there is the older first; the matches come at 12 and 13."""
    prog = load_module(parse_epl(
        "create schema A(k int, v int);\ncreate schema B(k int, v int);\n@Name('P')\n"
        "select a.k as k, b.v as v from pattern [every a=A -> b=B(b.k = a.k) -> "
        "timer:interval(10 msec)];"))
    evs = [Event("A", (1, 0), 0, id="a1"), Event("A", (2, 0), 1, id="a2"),
           Event("B", (2, 7), 2, id="b2"), Event("B", (1, 8), 3, id="b1")]
    for eng in (Engine(prog), Engine(prog, fast_path=False)):
        assert [m for e in evs for m in eng.process(e)] == []
        m = eng.matchers[0]
        waiting = [t.id for bm in m.buckets.values() for b in bm.values() for t in b.values()]
        assert waiting == sorted(waiting) and len(waiting) == 2
        out = eng.advance_to(20)
        assert [(x.ts, x.params, tuple(x.event_refs)) for x in out] == [
            (12, (2, 7), ("a2", "b2")), (13, (1, 8), ("a1", "b1"))]
