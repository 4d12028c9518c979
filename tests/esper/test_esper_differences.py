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


def test_an_and_operand_reads_another_operands_tag() -> None:
    """Open difference (docs/conformance.md, session 43): Esper starts the operands of ``and``
    from its begin state, so ``b``'s filter reads ``a`` as null and ``every (a=A and b=B(b.k =
    a.k))`` never matches (tests/esper/esper_tree.py says so); cepflow unifies the two keys."""
    from tests.esper.esper_tree import evaluate

    p = load_module(parse_epl("create schema A(k int, v int); create schema B(k int, v int);\n"
                              "insert into P from pattern [every (a=A and b=B(b.k = a.k))]"))
    evs = [Event("A", (1, 0), 0, id="a"), Event("B", (1, 1), 1, id="b")]
    eng = Engine(p)
    assert [m.event_refs for e in evs for m in eng.process(e)] == [["a", "b"]]
    tree = ("every", ("and", [("atom", "o1", "A", ""), ("atom", "o2", "B", "k = o1.k")]))
    assert evaluate(tree, evs, 10) == []
