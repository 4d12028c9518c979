"""The in-place fast path for plain keyed sequences agrees with the general token path."""

from hypothesis import given, settings
from hypothesis import strategies as st

from cepflow.events.event import Event
from cepflow.language import ast as A
from cepflow.runtime.engine import Engine
from support import program

TYPES = ("a", "b", "c", "d")


@st.composite
def keyed_sequences(draw: st.DrawFn) -> A.Pattern:
    n = draw(st.integers(2, 5))
    items = [A.Atom(draw(st.sampled_from(TYPES)), ("k",)) for _ in range(n)]
    out: A.Pattern = items[-1]
    for it in reversed(items[:-1]):
        out = A.Fol(it, out)
    return out


events = st.lists(st.tuples(st.sampled_from(TYPES), st.integers(0, 3)), max_size=60)


def outputs(prog, evs, fast: bool):
    eng = Engine(prog, fast_path=fast)
    out = []
    for i, (t, k) in enumerate(evs):
        out += [(m.type, m.ts, tuple(m.event_refs), m.params)
                for m in eng.process(Event(t, (k,), i))]
    return out, eng.partial_matches()


@settings(max_examples=150, deadline=None)
@given(keyed_sequences(), events)
def test_fast_path_equals_general_path(body: A.Pattern, evs: list) -> None:
    prog = program(body, params=("k",), types=TYPES, arity=1)
    assert prog.automata and Engine(prog).matchers[0].pattern.fast, "fast path should apply"
    assert outputs(prog, evs, True) == outputs(prog, evs, False)
