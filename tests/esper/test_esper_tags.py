"""Tags inside a repetition (``[n] a=A``, ``a=A until b=B``) as Esper's arrays — ``a[0].id``,
``a[1].id`` — against the Esper reference ("Repeat", "Repeat-Until", "Tags and the Repeat
Operator", "Note on Indexed Tags", "Guard Time Interval Expressions"), in both syntaxes, with
their check-time diagnostics and saved state."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepflow.events.event import Event
from cepflow.language.checker import check
from cepflow.language.diagnostics import PatternSyntaxError
from cepflow.language.epl import parse_epl
from cepflow.language.parser import parse
from cepflow.language.printer import format_module
from cepflow.loader import load, load_module
from cepflow.runtime.engine import Engine
from cepflow.runtime.state import restore_state, save_state

EPL_SCHEMA = ("create schema A(id int, v int);\ncreate schema B(id int, beta int);\n"
              "create schema C(id int);\n")
CEP_SCHEMA = ("atomicEvent A(id: Integer, v: Integer)\natomicEvent B(id: Integer, beta: Integer)"
              "\natomicEvent C(id: Integer)\n")


def epl(statement: str):
    return load_module(parse_epl(EPL_SCHEMA + statement))


def cep(body: str, select: str = ""):
    sel = f" select {select}" if select else ""
    return load(CEP_SCHEMA + f"complexEvent P {{ as {body} context esper{sel} }}\n")


def ev(text: str) -> list[Event]:
    """``"A1/10 B9/2"``: type, id / second field; one event a second."""
    out = []
    for i, tok in enumerate(text.split()):
        ident, _, second = tok[1:].partition("/")
        params = (int(ident),) if tok[0] == "C" else (int(ident), int(second or 0))
        out.append(Event(tok[0], params, (i + 1) * 1000.0, None, i))
    return out


def rows(program, text: str) -> list[tuple]:
    engine = Engine(program)
    out = [m for e in ev(text) for m in engine.process(e)] + engine.finish(close_windows=True)
    return [m.params for m in out]


SEQ = "A1/10 A2/20 B9/2 A3/30 A4/40 B9/4"


def test_every_repeat_returns_pairs_as_indexed_tags() -> None:
    """'select a, a[0], a[0].id, a[1], a[1].id from pattern [every [2] a=A]' returns pairs of
    A events (Tags and the Repeat Operator); cepflow selects fields, a[k].<field>."""
    p = epl("insert into P select a[0].id as x, a[1].id as y from pattern [every [2] a=A]")
    assert rows(p, SEQ) == [(1, 2), (3, 4)]
    q = cep("every a = A{2}", "a[0].id as x, a[1].id as y")
    assert rows(q, SEQ) == [(1, 2), (3, 4)]


def test_a_later_filter_reads_the_collected_events() -> None:
    """'[2] A -> B(beta in (a[0].id, a[1].id))': a B whose beta is one of the two A ids."""
    p = epl("insert into P select a[0].v as f, a[1].v as s, b.beta as x from pattern "
            "[every ([2] a=A -> b=B(beta = a[0].id or beta = a[1].id))]")
    assert rows(p, "A1/10 A2/20 B9/7 B9/2 A3/30 A4/40 B9/3") == [(10, 20, 2), (30, 40, 3)]


def test_inside_the_repetition_the_tag_is_the_current_event() -> None:
    """'every [2] (a=A() -> b=B(id=a.id))' is valid: each B matches the A of its own
    repetition."""
    p = epl("insert into P select a[0].id as a0, b[0].beta as b0, a[1].id as a1, b[1].beta "
            "as b1 from pattern [every [2] (a=A -> b=B(id = a.id))]")
    assert rows(p, "A1 B2/5 B1/6 A7 B1/8 B7/9") == [(1, 6, 7, 9)]
    q = cep("every (a = A -> b = B where id == a.id){2}",
            "a[0].id as a0, b[0].beta as b0, a[1].id as a1, b[1].beta as b1")
    assert rows(q, "A1 B2/5 B1/6 A7 B1/8 B7/9") == [(1, 6, 7, 9)]


def test_repeat_until_collects_until_the_end_and_an_index_past_it_is_null() -> None:
    """'a=A until b=B': every A until the B; a[k] beyond the events collected is null."""
    p = epl("insert into P select a[0].id as x, a[1].id as y, a[2].id as z, b.beta as e "
            "from pattern [every (a=A until b=B)]")
    assert rows(p, SEQ) == [(1, 2, None, 2), (3, 4, None, 4)]


def test_a_high_bound_keeps_only_the_first_events() -> None:
    """'[1:3] a=A until B': only the first 3 A events are returned (Bounded Range)."""
    p = epl("insert into P select a[0].id as x, a[2].id as y, a[3].id as z "
            "from pattern [every ([1:3] a=A until B)]")
    assert rows(p, "A1 A2 A3 A4 A5 B0 A6 B1") == [(1, 3, None), (6, None, None)]


def test_alternatives_fill_their_own_arrays() -> None:
    """'[:3] (a=A or b=B) until c=C': 'a' and 'b' hold the first 3 (combined) matches."""
    p = epl("insert into P select a[0].id as a0, a[1].id as a1, b[0].id as b0, b[1].id as b1, "
            "c.id as c from pattern [[:3] (a=A or b=B) until c=C]")
    assert rows(p, "A1 B2 A3 A4 C5") == [(1, 3, 2, None, 5)]


def test_without_a_select_list_every_collected_field_is_a_column() -> None:
    p = epl("insert into P from pattern [every [2] a=A]")
    assert rows(p, SEQ) == [(1, 10, 2, 20), (3, 30, 4, 40)]
    assert [x.name for x in p.schemas["P"].params] == [
        "a[0].id", "a[0].v", "a[1].id", "a[1].v"]



def test_a_tag_of_any_length_is_carried_as_far_as_it_took() -> None:
    """'a=A until b=B' under select *: Esper's 'a' is an array of any length. The type P has
    the fixed fields (b's); each match's bindings — what the writers write — carry a[0].id …
    for as many A as it took, after them (docs/esper.md, "Tags of any length")."""
    p = epl("insert into P from pattern [every (a=A until b=B)]")
    assert [x.name for x in p.schemas["P"].params] == ["b.id", "b.beta"]
    engine = Engine(p)
    got = [m for e in ev("A1/10 A2/20 A3/30 B4/40 B5/50 A6/60 B7/70") for m in engine.process(e)]
    assert [m.params for m in got] == [(4, 40), (5, 50), (7, 70)]
    assert [m.bindings for m in got] == [
        {"b.id": 4, "b.beta": 40, "a[0].id": 1, "a[0].v": 10, "a[1].id": 2, "a[1].v": 20,
         "a[2].id": 3, "a[2].v": 30},
        {"b.id": 5, "b.beta": 50},
        {"b.id": 7, "b.beta": 70, "a[0].id": 6, "a[0].v": 60}]
    assert list(got[0].to_dict()["params"]) == [  # (in the order the events came)
        "b.id", "b.beta", "a[0].id", "a[0].v", "a[1].id", "a[1].v", "a[2].id", "a[2].v"]


def test_tags_survive_save_and_restore_mid_repetition() -> None:
    p = epl("insert into P select a[0].id as x, a[1].id as y, a[2].id as z from pattern "
            "[every ([3] a=A until B)]")
    events = ev("A1 A2 A3 A4 A5 B0 A6 A7 A8")
    whole = Engine(p)
    expected = [m.params for e in events for m in whole.process(e)]
    for cut in range(len(events) + 1):
        first = Engine(p)
        got = [m.params for e in events[:cut] for m in first.process(e)]
        second = restore_state(Engine(p), json.loads(json.dumps(save_state(first))))
        got += [m.params for e in events[cut:] for m in second.process(e)]
        assert got == expected == [(1, 2, 3), (6, 7, 8)]


# ---- check-time diagnostics -----------------------------------------------------------------

@pytest.mark.parametrize(("pattern", "select", "col", "message"), [
    ("every [2] (a=A -> b=B(id = a[0].id))", "", 56, "inside the repetition that collects"),
    ("[2] a=A -> B(id = a.id)", "", 47, "index it: a[0].id … a[1].id"),
    ("a=A -> B(id = a[0].id)", "", 43, "'a' is not a tag inside a repetition"),
    ("[2] a=A", "a[0] as x", 22, "is a whole event"),
    ("[2] a=A", "a[0].nope as x", 22, "unknown field 'nope' in 'a[0].nope'"),
    ("[2] a=A", "a[1].id + 'x' as x", 22, "arithmetic '+'"),
    ("[2] a=A -> B(beta = a[0].v and a[1].id = 'x')", "", 60, "cannot compare"),
])
def test_misused_tags_are_located_errors(pattern, select, col, message) -> None:
    sel = f"select {select} " if select else ""
    module = parse_epl(EPL_SCHEMA + f"insert into P {sel}from pattern [{pattern}]", "x.epl")
    found = [d for d in check(module) if message in d.message]
    assert found, check(module)
    assert (found[0].severity, found[0].line, found[0].col) == ("error", 4, col)


def test_an_index_past_the_most_collected_is_a_warning() -> None:
    module = parse_epl(EPL_SCHEMA + "insert into P select a[2].id as x from pattern [[2] a=A]")
    (d,) = check(module)
    assert d.severity == "warning" and "always null" in d.message and "a[0] … a[1]" in d.message
    assert rows(load_module(module), "A1 A2") == [(None,)]


def test_misuse_is_reported_by_the_compiler_too() -> None:
    from cepflow.compiler.automata import CompileError
    from cepflow.compiler.program import compile_module

    module = parse_epl(EPL_SCHEMA + "insert into P from pattern [[2] a=A -> B(id = a.id)]")
    with pytest.raises(CompileError, match="index it"):
        compile_module(module)


def test_the_index_must_be_a_whole_number() -> None:
    with pytest.raises(PatternSyntaxError, match="whole number"):
        parse_epl(EPL_SCHEMA + "insert into P select a[1.5].id as x from pattern [[2] a=A]")


def test_indexed_tags_round_trip_in_cepflow_syntax() -> None:
    text = CEP_SCHEMA + (
        "complexEvent P { as a = A{2} -> B where beta == a[1].id context esper "
        "select a[0].id as x }\n"
        "complexEvent Q { as (A where id > v [10]) }\n")  # a name before a window stays one
    module = parse(text)
    assert parse(format_module(module)) == module
    assert module.decls[-1].body.duration == 10


# ---- both syntaxes ----------------------------------------------------------------------------

TAGGED = [  # (EPL statement body, cepflow body, select)
    ("every [2] a=A", "every a = A{2}", "a[0].id as x, a[1].v as y"),
    ("every (a=A until b=B)", "every (a = A{*} UNTIL b = B)",
     "a[0].id as x, a[1].id as y, b.id as z"),
    ("every ([1:2] a=A until b=B)", "every (a = A{1..2} UNTIL b = B)",
     "a[0].id as x, a[1].id as y"),
    ("every ([2] a=A -> b=B(id = a[1].id))", "every (a = A{2} -> b = B where id == a[1].id)",
     "a[0].id as x, b.beta as y"),
    ("every [2] (a=A -> b=B(id = a.id))", "every (a = A -> b = B where id == a.id){2}",
     "a[1].id as x, b[0].beta as y"),
    ("every a=C -> [:2] (b=A or c=B) until C", "every a = C -> (b = A OR c = B){..2} UNTIL C",
     "b[0].id as x, c[0].id as y, b[1].v as z"),
]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(TAGGED), st.lists(st.sampled_from(
    ["A1/1", "A2/2", "B1/3", "B2/4", "C1", "C2"]), max_size=12))
def test_epl_and_cepflow_syntax_agree(texts, seq) -> None:
    e_body, c_body, select = texts
    e_prog = epl(f"insert into P select {select} from pattern [{e_body}]")
    c_prog = cep(c_body, select)
    assert rows(e_prog, " ".join(seq)) == rows(c_prog, " ".join(seq))
