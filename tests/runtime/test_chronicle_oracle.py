"""Chronicle gives each event to the *oldest* partial match that can take it (000 §4.4), also
when a younger partial match reached the same state first. The indexed engine is compared with
a naive scan of every partial match in age order."""

import types

from hypothesis import HealthCheck, assume, example, given, settings
from test_algebra_properties import patterns, streams

from cepflow.compiler.automata import CompileError
from cepflow.events.event import Event
from cepflow.language import ast as A
from cepflow.runtime.engine import Engine
from support import a, b, c, d, program, refs, run, seq, stream

TYPES = ("a", "b", "c")


def test_older_partial_match_wins_even_if_it_arrived_later() -> None:
    x = A.Atom("x")
    body = seq(A.Or(seq(a, x), c), b, d)
    prog = program(body, types=("a", "b", "c", "d", "x"))
    # T1 starts with a, T2 with c; T2 reaches "after b" first, T1 later; d goes to T1
    assert refs(run(prog, stream("a c b x b d"))) == [["a1", "x1", "b2", "d1"]]


def naive_find(self, e: Event):
    """Every partial match in age order, the first that can take e wins."""
    for tok in self.all_tokens():
        plan = self._plan(tok, e)
        if plan is not None:
            return [(tok, plan)]
    return []


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(patterns, streams(max_size=9))
# (the keyed fast step moved the token after the second b in place, kept in x's bucket, while
# it then waits on y: the last a never found it — found by a helper's full run, stop 32)
@example(A.Mult(A.Fol(A.Atom("b", ("x",)), A.Atom("a", ("y",))), 2),
         [Event(t, (v,), 0, id=f"{t}#{i}") for i, (t, v)
          in enumerate([("b", 1), ("a", 2), ("a", 1), ("a", 1), ("b", 1), ("a", 2)])])
def test_indexed_chronicle_equals_naive_scan(p: A.Pattern, events: list[Event]) -> None:
    try:
        prog = program(p, types=TYPES, arity=1)
    except CompileError:
        assume(False)
    fast = Engine(prog)
    slow = Engine(prog, fast_path=False)
    for m in slow.matchers:
        m._find = types.MethodType(naive_find, m)
    got = [(x.event_refs, x.bindings) for e in events for x in fast.process(e)]
    ref = [(x.event_refs, x.bindings)
           for e in [Event(e.type, e.params, e.ts, e.id) for e in events]
           for x in slow.process(e)]
    assert got == ref
