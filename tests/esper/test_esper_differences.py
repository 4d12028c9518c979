"""Pins of the remaining differences from Esper (docs/conformance.md) that no other test holds."""

from cepflow.events.event import Event
from cepflow.language.epl import parse_epl
from cepflow.loader import load_module
from cepflow.runtime.engine import Engine


def test_null_equals_null() -> None:
    """Decision (docs/esper.md): ``=`` compares null as a value — Esper's ``=`` with a null
    operand is null, so Esper reports nothing here; cepflow unifies the two nulls."""
    p = load_module(parse_epl("create schema A(k string); create schema B(k string);\n"
                              "insert into P from pattern [every a=A -> b=B(b.k = a.k)]"))
    eng = Engine(p)
    out = [m for e in [Event("A", (None,), 0, id="a"), Event("B", (None,), 1, id="b")]
           for m in eng.process(e)]
    assert [m.event_refs for m in out] == [["a", "b"]]
    q = load_module(parse_epl("create schema A(k string);\n"
                              "insert into P from pattern [every a=A(a.k = null)]"))
    assert [m.event_refs for m in Engine(q).process(Event("A", (None,), 0, id="a"))] == [["a"]]
