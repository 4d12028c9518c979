"""Checker tests: every diagnostic kind, with its line and column."""

from __future__ import annotations

from pathlib import Path

from cepflow.events.event import EventType, ParamSpec
from cepflow.language.ast import Atom, ComplexEventDecl, Fol, Module, Not, Param, RuleDecl
from cepflow.language.checker import OPAQUE_ACTION_WARNING, check, errors_only
from cepflow.language.parser import parse, parse_file, parse_warnings

DATA = Path(__file__).parent / "data"

HEADER = """package t
trait Side { right : Boolean }
atomicEvent A(x : Integer, speed : Integer) with Side
atomicEvent B(x : Integer)
atomicEvent S(name : String, ratio : Double)
queryEvent Q(o : Object) as q.found(o) found
"""
HEADER_LINES = HEADER.count("\n")


def run(body: str, **kwargs: object) -> list[str]:
    """Diagnostics of HEADER + body as 'LINE:COL: severity: message', lines counted in body."""
    module = parse(HEADER + body, "t.vepl")
    out = []
    for d in check(module, **kwargs):
        assert d.file == "t.vepl"
        out.append(f"{d.line - HEADER_LINES}:{d.col}: {d.severity}: {d.message}")
    return out


def test_header_alone_is_clean() -> None:
    assert run("") == []


def test_clean_module_has_no_diagnostics() -> None:
    body = (
        "complexEvent C(x : Integer) { as A(x, _, _) where speed > 10 -> B(x) within 5 s }\n"
        "rule r on C(x) priority 2 action alerts.notify\n"
    )
    assert run(body) == []


def test_duplicate_declarations() -> None:
    body = (
        "atomicEvent B(y : Integer)\ntrait A { z : Integer }\n"
        "rule r on B action x\nrule r on B action y\n"
    )
    assert run(body) == [
        "1:13: error: duplicate declaration 'B' (first declared at line 4)",
        "2:7: error: duplicate declaration 'A' (first declared at line 3)",
        "4:6: error: duplicate declaration 'r' (first declared at line 9)",
    ]


def test_rules_and_patterns_have_separate_namespaces() -> None:
    assert run("rule B on B action act\n") == []


def test_undeclared_references() -> None:
    body = (
        "complexEvent C(x : Integer) { as A(x, _, _) -> Bq(x) }\n"
        "rule r on Nope action act\n"
        "atomicEvent E with Sdie\n"
        "atomicEvent F with B\n"
        "complexEvent D() { as Side }\n"
    )
    assert run(body) == [
        "1:48: error: undeclared event pattern 'Bq'; did you mean 'B'?",
        "2:11: error: undeclared event pattern 'Nope'",
        "3:13: error: undeclared trait 'Sdie'; did you mean 'Side'?",
        "4:13: error: 'B' is an event pattern, not a trait",
        "5:23: error: 'Side' is a trait, not an event pattern",
    ]


def test_arity_counts_trait_parameters_after_own_parameters() -> None:
    body = (
        "complexEvent C(x : Integer) { as A(x, _) -> A(x, _, _) -> Q(x, x) -> B() }\n"
        "rule r on C(x, y) action act\n"
        "rule s on C action act\n"
    )
    assert run(body) == [
        "1:34: error: 'A' takes 3 parameters (x, speed, right), but 2 are given",
        "1:59: error: 'Q' takes 1 parameter (o), but 2 are given",
        "1:70: error: 'B' takes 1 parameter (x), but 0 are given",
        "2:11: error: 'C' takes 1 parameter (x), but 2 are given",
    ]


def test_formal_parameters_must_be_bound() -> None:
    body = (
        "complexEvent C(x : Integer, y : Integer, z : Integer) {\n"
        "\tas (A(x, _, _) OR B(y)) -> A(x, _, _) -> NOT B(z)\n"
        "}\n"
        "complexEvent D(x : Integer) { as B(x){*} -> B(_) }\n"
    )
    assert run(body) == [
        "1:29: warning: parameter 'y' of 'C' is bound only in some OR branches "
        "(or optional repetitions) of its body",
        "1:42: error: parameter 'z' of 'C' is never bound by its body",
        "4:16: warning: parameter 'x' of 'D' is bound only in some OR branches "
        "(or optional repetitions) of its body",
    ]


def test_unknown_filter_names_list_the_available_fields() -> None:
    body = "complexEvent C(x : Integer) { as B(x) -> A(x, v, _) where spd > v and x > 0 }\n"
    assert run(body) == [
        "1:59: error: unknown name 'spd' in filter on 'A'; available: right, speed, v, x",
    ]


def test_filter_type_errors() -> None:
    body = (
        'complexEvent C() { as A where speed == "fast" }\n'
        'complexEvent D() { as S where name - 1 > 0 or ratio < "x" }\n'
        "complexEvent E() { as A where speed > 1 and 5 }\n"
        "complexEvent F() { as A where speed + 1 }\n"
        'complexEvent G() { as S where name + "!" == "a!" and not ratio }\n'
    )
    assert run(body) == [
        "1:37: error: cannot compare Integer field 'speed' with a string",
        "2:36: error: arithmetic '-' on String field 'name'",
        "2:53: error: cannot compare Double field 'ratio' with a string",
        "3:45: error: 'and' needs a boolean operand, not a number",
        "4:31: error: filter on 'A' must be a condition, not a number",
        "5:58: error: 'not' needs a boolean operand, not Double field 'ratio'",
    ]


def test_bodies_that_match_the_empty_sequence() -> None:
    body = (
        "complexEvent C() { as A{*} }\n"
        "complexEvent D() { as A{*} OR B }\n"
        "complexEvent E() { as (A{*} -> B{*})[5 s] }\n"
        "complexEvent F() { as A{*} -> B }\n"
    )
    assert run(body) == [
        "1:23: error: body of 'C' can match the empty sequence (it would fire without any event)",
        "2:23: error: body of 'D' can match the empty sequence (it would fire without any event)",
        "3:24: error: body of 'E' can match the empty sequence (it would fire without any event)",
    ]


def test_zero_multiplicity() -> None:
    assert run("complexEvent C() { as B -> A{0} }\n") == [
        "1:29: error: multiplicity {0} matches nothing; use NOT for absence",
    ]


def test_cyclic_references_between_complex_events() -> None:
    body = (
        "complexEvent C() { as A -> D }\n"
        "complexEvent D() { as B -> E }\n"
        "complexEvent E() { as C OR B }\n"
        "complexEvent F() { as B -> F }\n"
        "complexEvent G() { as C -> B }\n"
    )
    assert run(body) == [
        "1:28: error: cyclic reference between complex events: C -> D -> E -> C",
        "4:28: error: cyclic reference between complex events: F -> F",
    ]


def test_rule_actions() -> None:
    body = "rule r on B\nrule s on B { println() }\nrule t on B action act\n"
    assert run(body) == [
        "1:6: warning: rule 'r' has no action",
        f"2:6: warning: {OPAQUE_ACTION_WARNING}",
    ]


def test_rule_with_both_actions_built_in_python() -> None:
    module = Module((RuleDecl("r", (), action="a", opaque_action="{ }", loc=(1, 6)),))
    assert [str(d) for d in check(module)] == [
        "<string>:1:6: error: rule 'r' has both `action` and an action block",
        f"<string>:1:6: warning: {OPAQUE_ACTION_WARNING}",
    ]


def test_not_position() -> None:
    body = (
        "complexEvent C() { as NOT A }\n"
        "complexEvent D() { as NOT A -> B }\n"
        "complexEvent E() { as (NOT A OR B) -> B }\n"
        "complexEvent F() { as B -> NOT A -> B }\n"
        "complexEvent G() { as (NOT A)[10] }\n"
        "complexEvent H() { as (NOT A -> B)[1 s] }\n"
        "complexEvent I() { as NOT (A[10]) }\n"
    )
    assert run(body) == [
        "1:23: error: NOT needs a preceding event or a window",
        "2:23: error: NOT needs a preceding event or a window",
        "3:24: error: NOT needs a preceding event or a window",
        "7:23: error: NOT needs a preceding event or a window",
    ]


def test_partition_keys_must_be_parameters() -> None:
    body = "complexEvent C(x : Integer) { as B(x) partition by x, y }\n"
    assert run(body) == ["1:14: error: partition key 'y' is not a parameter of 'C'"]


def test_duplicate_parameters() -> None:
    assert run("atomicEvent E(a : Integer, a : String)\n") == [
        "1:28: error: duplicate parameter 'a' in 'E'"
    ]


def test_check_block_warnings_come_from_the_parser_only() -> None:
    module = parse(HEADER + "atomicEvent E(n : Integer) {\n\tcheck { n > 0 }\n}\n", "t.vepl")
    assert check(module) == []
    (warning,) = parse_warnings(module)
    assert str(warning) == (
        f"t.vepl:{HEADER_LINES + 2}:2: warning: check block of atomic event 'E' is ignored "
        "(Xbase code is not executed); filter with `where` in patterns instead"
    )


def test_diagnostics_are_sorted_by_position() -> None:
    body = "rule r on Z\ncomplexEvent C() { as Y -> NOT X }\natomicEvent B\n"
    positions = [tuple(map(int, d.split(":")[:2])) for d in run(body)]
    assert positions == sorted(positions)
    assert len(positions) == 5


def test_known_events_from_outside_the_module() -> None:
    known = {
        "Reading": EventType(
            "Reading", (ParamSpec("sensor", "str", "String"), ParamSpec("value", "float", "Double"))
        ),
        "Tick": ["n"],
        "Pair": [("a", "Integer"), Param("b", "String")],
        "Opaque": 2,
    }
    body = (
        'complexEvent C(s : String) { as Reading(s, _) where value > "hot" -> Tick(_) '
        "-> Pair(_, _) -> Opaque(s) -> Opaque(_, s) where anything }\n"
    )
    assert run(body, known_events=known) == [
        "1:59: error: cannot compare Double field 'value' with a string",
        "1:95: error: 'Opaque' takes 2 parameters, but 1 is given",
    ]


def test_python_built_modules_without_locations() -> None:
    body = Fol(Not(Atom("A")), Atom("B"))
    module = Module(
        (ComplexEventDecl("C", (Param("x"),), body),),
    )
    diags = check(module, known_events={"A": [], "B": []})
    assert [(d.line, d.col) for d in diags] == [(0, 0), (0, 0)]
    assert {d.message for d in diags} == {
        "parameter 'x' of 'C' is never bound by its body",
        "NOT needs a preceding event or a window",
    }


def test_data_files_check_without_errors() -> None:
    for name in (
        "cepflow_extensions.vepl",
        "compiler_testdata_style.vepl",
        "jnect_style.vepl",
        "notusage_style.vepl",
        "parametercheck_style.vepl",
        "queryevent_style.vepl",
        "quickfix_style.vepl",
        "tbcep_style.vepl",
    ):
        module = parse_file(DATA / name)
        assert errors_only(check(module)) == [], name
