"""EPL pattern forms Esper accepts that cepflow used to refuse (issue 15, item 4), each with the
answer derived by hand from the Esper reference: the other branch's tags of an ``or`` are null;
``timer:within`` on a sub-expression in the middle of a sequence starts when that
sub-expression starts; ``every-distinct`` around a sequence restarts like ``every (…)`` and
drops a result whose keys were seen (EvalEveryDistinctStateNode)."""

from __future__ import annotations

import re

import pytest

from cepflow.events.event import Event
from cepflow.language.diagnostics import PatternSyntaxError
from cepflow.language.epl import parse_epl
from cepflow.loader import load_module
from cepflow.runtime.engine import Engine

SCHEMA = "".join(f"create schema {t}(k int);\n" for t in "ABCXYZ")


def epl(statement: str):
    return load_module(parse_epl(SCHEMA + statement))


def run(program, spec: str) -> list[tuple]:
    """``"A1@0 B1@1500"``: type, key, @ms; ids are the tokens without the time."""
    eng = Engine(program)
    evs = []
    for tok in spec.split():
        head, ts = tok.split("@")
        evs.append(Event(head[0], (int(head[1:]),), int(ts), id=head))
    out = [m for e in evs for m in eng.process(e)] + eng.finish(close_windows=True)
    return [(m.event_refs, m.params) for m in out]


def test_tags_of_the_other_branch_of_an_or_are_null() -> None:
    p = epl("insert into P select a.k as ak, c.k as ck from pattern [every (a=A or c=C)]")
    assert run(p, "A1@0 C2@1") == [(["A1"], (1, None)), (["C2"], (None, 2))]
    # without a select list every tag's fields, null where its branch did not match
    q = epl("insert into P from pattern [every (a=A or c=C)]")
    assert run(q, "C2@0") == [(["C2"], (None, 2))]
    # a later condition on a null tag is not satisfied (Esper: null = 1 is not true)
    r = epl("insert into P from pattern [every (a=A or c=C) -> x=X(x.k = a.k)]")
    assert run(r, "A1@0 X1@1 C1@2 X1@3") == [(["A1", "X1"], (1, None, 1))]


def test_within_on_a_sub_expression_in_the_middle_of_a_sequence() -> None:
    """The guard starts when its sub-expression starts, i.e. at X; Z is not limited."""
    p = epl("insert into P select x.k as k from pattern [every x=X -> "
            "(y=Y(y.k = x.k) where timer:within(2 sec)) -> z=Z(z.k = x.k)]")
    assert run(p, "X1@0 Y1@1500 Z1@9000") == [(["X1", "Y1", "Z1"], (1,))]
    assert run(p, "X1@0 Y1@2000 Z1@3000") == []  # (the guard quit at 2 s, before Y1)
    assert run(p, "X1@0 X2@1000 Y2@2500 Z2@2600 Y1@2600") == [(["X2", "Y2", "Z2"], (2,))]


def test_every_distinct_around_a_sequence() -> None:
    p = epl("insert into P select a.k as k from pattern [every-distinct(a.k) (a=A -> b=B)]")
    # one instance at a time (restart); the second A1 -> B completes with a seen key: dropped
    assert run(p, "A1@0 A2@1 B1@2 A1@3 B2@4 A2@5 B3@6") == [(["A1", "B1"], (1,)),
                                                          (["A2", "B3"], (2,))]
    # with an expiry the key is new again once it has passed (at exactly the expiry too)
    q = epl("insert into P select a.k as k from pattern "
            "[every-distinct(a.k, 10 sec) (a=A -> b=B)]")
    assert run(q, "A1@0 B1@1000 A1@2000 B1@3000 A1@4000 B1@11000") == [
        (["A1", "B1"], (1,)), (["A1", "B1"], (1,))]


def test_a_bare_not_in_a_sequence_is_true_at_once() -> None:
    """Esper: "pattern expressions prefixed with not are automatically permanently true upon
    start" (EvalNotStateNode.start reports true at once), so in ``A -> not C -> B`` the B
    starts right after the A and a C in between changes nothing: it is ``A -> B``. The reader
    says so with a warning (VEPL's ``A -> NOT C -> B`` forbids the C)."""
    from cepflow.language.parser import parse_warnings
    from cepflow.loader import diagnose

    text = SCHEMA + "insert into P select a.k as k from pattern [every a=A -> not C -> b=B]"
    module = parse_epl(text, "t.epl")
    warnings = [str(w) for w in parse_warnings(module)]
    assert len(warnings) == 1 and warnings[0].startswith("t.epl:7:58: warning:")
    assert "true at once" in warnings[0]
    assert any("true at once" in str(d) for d in diagnose(module)[0])
    p = load_module(module)
    assert run(p, "A1@0 C1@1 B1@2") == [(["A1", "B1"], (1,))]
    assert run(epl("insert into P from pattern [a=A -> not C]"), "A1@0 C1@1") == [
        (["A1"], (1,))]


def test_a_tag_inside_not_never_binds() -> None:
    """``not c=C(c.k = a.k)`` forbids what ``not C(k = a.k)`` forbids: the tag binds nothing
    (Esper leaves it null), its own fields read bare; another key's C does not end the gap."""
    p = epl("insert into P from pattern [every a=A -> (b=B(b.k = a.k) and not c=C(c.k = a.k))]")
    assert run(p, "A1@0 C2@1 B1@2") == [(["A1", "B1"], (1, 1, None))]
    assert run(p, "A1@0 C1@1 B1@2") == []
    assert run(p, "A1@0 A2@1 C1@1 B1@2 B2@3") == [(["A2", "B2"], (2, 2, None))]


def test_a_tag_inside_not_reads_as_null_in_the_select_list() -> None:
    """Esper declares the tag of a ``not`` and never sets it: ``select *`` carries its fields
    as null (after the bound tags'), a select item reading it is null, a filter that reads it
    is reported with its place (cepflow would compare with null where Esper's filter is never
    true), and a field the tag's type lacks is reported as for any tag."""
    p = epl("insert into P select a.k as a, c.k as c, coalesce(c.k, a.k) as first "
            "from pattern [every a=A -> (b=B and not c=C)]")
    assert run(p, "A1@0 B1@1 A2@2 C2@3 B2@4") == [(["A1", "B1"], (1, None, 1))]
    star = epl("insert into P from pattern [every a=A -> (b=B and not c=C)]")
    assert star.schemas["P"].param_names == ("a.k", "b.k", "c.k")
    for bad, where in (("[every a=A -> (b=B and not c=C) -> d=X(k = c.k)]", "inside 'not'"),
                       ("select c.q as q from pattern [every a=A -> (b=B and not c=C)]",
                        "'c.q'")):
        stmt = ("insert into P " + bad if bad.startswith("select")
                else "insert into P from pattern " + bad)
        with pytest.raises(PatternSyntaxError, match=r":\d+:\d+: error: .*" + re.escape(where)):
            epl(stmt)
