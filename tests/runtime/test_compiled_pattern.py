"""A compiled pattern (runtime.compiled) is the run-independent part of a pattern: read-only,
unchanged by running it, and the same whichever engine built it; the run state is the
matcher's."""

import pytest

from cepflow.events.event import Event
from cepflow.language.epl import parse_epl
from cepflow.loader import load, load_module
from cepflow.runtime.compiled import CompiledPattern
from cepflow.runtime.engine import Engine

SOURCES = {
    "chain": ("atomicEvent a(k: Int)\natomicEvent b(k: Int)\natomicEvent c(k: Int)\n"
              "complexEvent P(k: Int) { as (a(k) -> b(k) -> c(k)) [10] }\n"),
    "esper pair": ("create schema a(k int); create schema b(k int);\n"
                   "insert into P select x.k as k from pattern "
                   "[every x=a -> y=b(k = x.k) where timer:within(10 msec)];"),
}


def _facts(p: CompiledPattern) -> dict:
    return {name: repr(getattr(p, name)) for name in CompiledPattern.__slots__
            if name not in ("_sealed",)}


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_running_leaves_the_compiled_pattern_unchanged(name: str) -> None:
    program = (load_module(parse_epl(SOURCES[name])) if "esper" in name
               else load(SOURCES[name]))
    engine = Engine(program)
    pattern = engine.matchers[0].pattern
    before = _facts(pattern)
    assert (pattern.chain if name == "chain" else pattern.pair) is not None
    for i in range(40):
        engine.process(Event("abc"[i % 3] if name == "chain" else "ab"[i % 2], (i % 4,), i))
    assert engine.partial_matches(), "the run keeps partial matches (in the matcher)"
    assert _facts(pattern) == before
    assert _facts(CompiledPattern(program.automata[0])) == before


def test_a_compiled_pattern_is_read_only() -> None:
    pattern = CompiledPattern(load(SOURCES["chain"]).automata[0])
    with pytest.raises(AttributeError, match="read-only"):
        pattern.fast = {}  # type: ignore[misc]
