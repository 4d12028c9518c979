"""Parser tests: VEPL listings (modern and old forms), cepflow extensions, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from cepflow.language.ast import (
    And,
    Atom,
    AtomicEventDecl,
    Binary,
    Call,
    ComplexEventDecl,
    Const,
    Fol,
    Module,
    Mult,
    Name,
    Not,
    Or,
    Param,
    PatternRef,
    QueryEventDecl,
    RuleDecl,
    Trait,
    Unary,
    Window,
    is_wildcard,
)
from cepflow.language.diagnostics import Diagnostic, PatternSyntaxError
from cepflow.language.parser import parse, parse_expr, parse_file, parse_pattern, parse_warnings

DATA = Path(__file__).parent / "data"


def A(name: str, *args: str, where=None) -> Atom:
    """Atom shorthand: A("x") is ``x``; A("x", "a") is ``x(a)``."""
    return Atom(name, tuple(args) if args else None, where)


def errors_of(text: str, source: str = "f.vepl") -> list[tuple[int, int, str]]:
    with pytest.raises(PatternSyntaxError) as info:
        parse(text, source)
    return [(d.line, d.col, d.message) for d in info.value.diagnostics]


# ---------------------------------------------------------------- VEPL listings


def test_modern_examples_parse_to_expected_ast() -> None:
    module = parse_file(DATA / "modern_examples.vepl")
    assert module.package == "vepl"
    assert module.source == str(DATA / "modern_examples.vepl")
    side, first, third, higher, not_ab, add, in_a, jump, toleration, rule = module.decls
    assert side == Trait("Side", (Param("right", "Boolean"),))
    assert first == AtomicEventDecl("FIRST", (), ("Side",))
    assert third == AtomicEventDecl("THIRD", (Param("foo", "Integer"),), ("Side",))
    assert higher == ComplexEventDecl(
        "HIGHER_ORDER_TEST",
        (Param("side", "Boolean"), Param("bar", "Integer")),
        Fol(A("FIRST", "side"), A("TRICKY_TEST", "side", "bar")),
    )
    assert not_ab.body == Window(Not(A("A_and_B")), 10.0)
    assert add == QueryEventDecl(
        "addContainer",
        (Param("contained", "EObject"), Param("container", "EObject")),
        "hasContainer",
        ("contained", "container"),
        "found",
    )
    assert in_a == QueryEventDecl("inA", (), "jumpA", None, "found")
    assert jump.body == Window(Fol(A("land"), Fol(A("inA"), Fol(A("outA"), A("inA")))), 2000.0)
    assert toleration.body == Mult(A("invalidModel", "src"), 3)
    assert rule.name == "contRule"
    assert rule.on == (PatternRef("addContainer"),)
    assert rule.action is None
    assert rule.opaque_action == (
        '{ System.out.println("x") ; val b = ruleInstance.atom.parameterTable }'
    )


def test_models2014_listings_map_old_forms_onto_the_same_nodes() -> None:
    module = parse_file(DATA / "models2014_listings.vepl")
    assert module.package is None
    fs_found, fs_lost, fe_found, fe_lost, gesture, invalid, rule, fe, fsfe = module.decls
    body = Param("B", "Body")
    anon = ("B", "_RH", "_RE", "_RS", "_H")
    assert fs_found == QueryEventDecl("ForwardStartFound", (body,), "ForwardStart", anon, "found")
    assert fs_lost == QueryEventDecl("ForwardStartLost", (body,), "ForwardStart", anon, "lost")
    assert fe_found == QueryEventDecl("ForwardEndFound", (body,), "ForwardEnd", anon, "found")
    assert fe_lost.change == "lost"
    assert all(is_wildcard(a) for a in fs_found.query_args[1:])
    assert gesture == ComplexEventDecl(
        "ForwardGesture",
        (body,),
        Fol(
            A("ForwardStartFound", "B"),
            Fol(
                A("ForwardStartLost", "B"), Fol(A("ForwardEndFound", "B"), A("ForwardEndLost", "B"))
            ),
        ),
    )
    assert invalid == AtomicEventDecl("invalidModel", (Param("sourceElement", "Object"),))
    assert rule.name == "transactionRule"
    assert rule.on == (PatternRef("ForwardGesture", ("B",)),)  # typed call: only the name kept
    assert rule.action is None
    block = rule.opaque_action
    assert block.startswith("{") and block.endswith("}")
    assert '" {done}"' in block and "/* a { brace } in a comment */" in block
    assert "// may be null" in block
    assert fe == QueryEventDecl("FEFound", (body,), "FE", anon, "found")
    assert fsfe == RuleDecl(
        "FSFE_Rule", (PatternRef("FS_FE"),), action="org.example.handlers.ObservationStatHandler"
    )


def test_jnect_style_old_rule_with_action_handler() -> None:
    module = parse_file(DATA / "jnect_style.vepl")
    assert module.imports == ("org.jnect.bodymodel.*", "bodymodel.gestures.*")
    *queries, wave, rule = module.decls
    assert [q.change for q in queries] == ["found", "lost", "found"]
    assert wave.body == Fol(A("RaiseFound", "B"), Fol(A("RaiseLost", "B"), A("LowerFound", "B")))
    assert rule == RuleDecl(
        "Wave_Rule",
        (PatternRef("Wave"),),
        action="org.example.cep.jnect.handlers.WaveStatHandler",
    )


def test_quickfix_style_old_atomic_complex_and_rule_blocks() -> None:
    module = parse_file(DATA / "quickfix_style.vepl")
    invalid, valid, toleration, observed, limit = module.decls
    assert isinstance(invalid, AtomicEventDecl) and isinstance(valid, AtomicEventDecl)
    assert toleration == ComplexEventDecl(
        "tolerationRange", (Param("src", "Object"),), Mult(A("invalidModel", "src"), 3)
    )
    assert observed.on == (PatternRef("invalidModel"),)
    assert "'invalidModel' event observed" in observed.opaque_action
    assert limit.opaque_action.count("\n") == 3


def test_parametercheck_style_traits_and_higher_order() -> None:
    module = parse_file(DATA / "parametercheck_style.vepl")
    names = [d.name for d in module.decls]
    assert names[:3] == ["Side", "FIRST", "SECOND"]
    tricky = module.by_name()["TRICKY_TEST"]
    assert tricky.body == Fol(A("SECOND", "s"), A("THIRD", "foo", "s"))
    rule = module.by_name()["sideTestRule"]
    assert "forEach[System.out.println('\\t' + symbolicName" in rule.opaque_action


def test_notusage_style_and_and_windowed_not() -> None:
    module = parse_file(DATA / "notusage_style.vepl")
    decls = module.by_name()
    assert decls["A_and_B"].body == And(A("A"), A("B"))
    assert decls["notA_and_B"].body == Window(Not(A("A_and_B")), 10.0)
    assert [r.name for r in module.rules] == ["rule1", "rule2"]


def test_tbcep_style_windows_and_query_events() -> None:
    module = parse_file(DATA / "tbcep_style.vepl")
    assert module.imports == ("model.*", "com.example.tbcep.queries.*", "com.example.tbcep.*")
    decls = module.by_name()
    assert decls["outA"].change == "lost"
    assert decls["squat"].body == Window(Fol(A("outA"), Fol(A("inB"), A("inC"))), 300.0)
    assert decls["takeOff"].body.duration == 500.0
    assert len(module.rules) == 4


def test_queryevent_style() -> None:
    module = parse_file(DATA / "queryevent_style.vepl")
    add, add2, rule1, rule2 = module.decls
    assert add.query_args == ("contained", "container")
    assert add2.body == Fol(
        A("addContainer", "contained", "container1"), A("addContainer", "contained", "container2")
    )
    assert rule2.on == (PatternRef("addContainer2", ("c", "c1", "c2")),)
    assert "QueryEventTest.firings++" in rule1.opaque_action


def test_compiler_testdata_style_uses_condition_words_as_names() -> None:
    module = parse_file(DATA / "compiler_testdata_style.vepl")
    decls = module.by_name()
    assert decls["or"].body == Or(A("a"), A("b"))
    assert decls["and"].body == And(A("a"), A("b"))
    assert decls["nestedOr"].body == Or(A("or"), A("c"))
    assert decls["multiplicityOnComplex"].body == Mult(Fol(A("a"), A("b")), 2)
    assert decls["inf"].body == Fol(Mult(Fol(A("a"), A("b")), "*"), A("c"))
    assert decls["atLeast"].body == Fol(Mult(A("a"), "+"), A("b"))
    assert decls["timewinFollows"].body == Window(Fol(Fol(A("a"), A("b")), A("c")), 1000.0)
    assert decls["notFollows"].body == Fol(A("a"), Fol(Not(A("b")), A("c")))
    assert decls["notAndTimewin"].body == Window(Not(And(A("a"), A("b"))), 1000.0)
    teq = decls["teq1"].body
    assert teq == Fol(A("a"), Fol(Mult(Or(Or(A("a"), A("b")), A("c")), "*"), A("c")))


def test_cepflow_extensions_file() -> None:
    module = parse_file(DATA / "cepflow_extensions.vepl")
    assert module.context == "chronicle"
    decls = module.by_name()
    speeding = decls["Speeding"].body
    assert speeding == Fol(
        A("Motorbike", "m", "_", "_", where=Binary(">", Name("speed"), Const(0))),
        Window(A("Camera", "m", "_"), 500.0),
    )
    named = decls["Named"]
    assert (named.context, named.partition_by) == ("strict", ("m",))
    assert named.body.right == Window(A("Camera", "m", "_"), 3000.0)
    parked = decls["Parked"]
    assert parked.body == Window(A("Camera", "m", "_"), 120_000.0, "holds_for")
    assert (parked.context, parked.partition_by) == ("strict", ("m",))
    windows = decls["Windows"].body
    assert windows.duration == 2 * 86_400_000
    durations = []
    node = windows.pattern
    while isinstance(node, Fol):
        durations.append((node.left.duration, node.left.kind))
        node = node.right
    durations.append((node.duration, node.kind))
    assert durations == [
        (500.0, "within"),
        (1500.0, "within"),
        (120_000.0, "within"),
        (3_600_000.0, "within"),
        (86_400_000.0, "within"),
        (500.0, "within"),
        (250.0, "holds_for"),
    ]
    alarm, log = module.rules
    assert alarm == RuleDecl(
        "alarmOnSpeeding",
        (PatternRef("Speeding", ("m",)), PatternRef("Named")),
        action="traffic.actions.raise_alarm",
        priority=-5,
    )
    assert (log.priority, log.action) == (2, "log_parked")


def test_filters_in_extensions_file() -> None:
    body = parse_file(DATA / "cepflow_extensions.vepl").by_name()["Filters"].body
    assert isinstance(body, Fol)
    first = body.left.where
    assert first == Binary(
        "and",
        Unary(
            "not",
            Binary(
                "or", Binary("<=", Name("s"), Const(10)), Binary("!=", Name("n"), Const("it's"))
            ),
        ),
        Binary("<", Unary("-", Name("s")), Binary("%", Const(-1.5), Const(2))),
    )
    second = body.right.where
    assert second == Binary(
        "or",
        Binary(
            "and",
            Binary(">=", Name("lane"), Binary("+", Binary("*", Name("l"), Const(2)), Const(1))),
            Binary(
                "==",
                Binary("/", Call("abs", (Binary("-", Name("l"), Const(3)),)), Const(2)),
                Const(1),
            ),
        ),
        Binary("==", Name("m", ("kind",)), Const(None)),
    )


# ---------------------------------------------------------------- associativity and precedence


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a -> b -> c", Fol(A("a"), Fol(A("b"), A("c")))),
        ("a OR b OR c", Or(Or(A("a"), A("b")), A("c"))),
        ("a AND b AND c", And(And(A("a"), A("b")), A("c"))),
        ("(a -> b) -> c", Fol(Fol(A("a"), A("b")), A("c"))),
        ("a OR (b OR c)", Or(A("a"), Or(A("b"), A("c")))),
        ("(a OR b) -> c", Fol(Or(A("a"), A("b")), A("c"))),
        ("a -> (b AND c)", Fol(A("a"), And(A("b"), A("c")))),
        ("NOT A{2}[10]", Not(Window(Mult(A("A"), 2), 10.0))),
        ("NOT A -> B", Fol(Not(A("A")), A("B"))),
        ("A{*}[5 s]", Window(Mult(A("A"), "*"), 5000.0)),
        ("(a -> b){+}", Mult(Fol(A("a"), A("b")), "+")),
        ("(NOT a)[1 s]", Window(Not(A("a")), 1000.0)),
        ("((a))", A("a")),
        ("a -> NOT b -> c", Fol(A("a"), Fol(Not(A("b")), A("c")))),
    ],
)
def test_pattern_associativity(text: str, expected: object) -> None:
    assert parse_pattern(text) == expected


def test_atom_arguments_none_empty_and_wildcards() -> None:
    assert parse_pattern("A").args is None
    assert parse_pattern("A()").args == ()
    atom = parse_pattern("A(_, _X, y)")
    assert atom.args == ("_", "_X", "y")
    assert [is_wildcard(a) for a in atom.args] == [True, True, False]


@pytest.mark.parametrize(
    ("text", "first", "second", "col"),
    [
        ("a -> b OR c", "->", "OR", 8),
        ("a OR b -> c", "OR", "->", 8),
        ("a AND b OR c -> d", "AND", "OR", 9),
        ("(a -> b) OR c -> d", "OR", "->", 15),
    ],
)
def test_mixed_operators_are_located_errors(text: str, first: str, second: str, col: int) -> None:
    with pytest.raises(PatternSyntaxError) as info:
        parse_pattern(text)
    (diag,) = info.value.diagnostics
    assert (diag.line, diag.col) == (1, col)
    assert diag.message == f"mixed operators '{first}' and '{second}' need parentheses"


def test_mixed_operators_inside_a_module_keep_other_errors() -> None:
    text = "complexEvent X() {\n\tas a -> b OR c\n}\ncomplexEvent Y() { as a -> }\n"
    assert errors_of(text) == [
        (2, 12, "mixed operators '->' and 'OR' need parentheses"),
        (4, 28, "unexpected '}', expected '(', 'every', 'every-distinct', 'NOT', "
                "'timer:interval', identifier"),
    ]


# ---------------------------------------------------------------- windows


@pytest.mark.parametrize(
    ("suffix", "duration", "kind"),
    [
        ("[500]", 500.0, "within"),
        ("[500 ms]", 500.0, "within"),
        ("[5 milliseconds]", 5.0, "within"),
        ("[3 millis]", 3.0, "within"),
        ("[3 s]", 3000.0, "within"),
        ("[1 sec]", 1000.0, "within"),
        ("[2 seconds]", 2000.0, "within"),
        ("[2 min]", 120_000.0, "within"),
        ("[1 minute]", 60_000.0, "within"),
        ("[1 h]", 3_600_000.0, "within"),
        ("[2 hours]", 7_200_000.0, "within"),
        ("[1 d]", 86_400_000.0, "within"),
        ("[2 days]", 172_800_000.0, "within"),
        ("[1.5 s]", 1500.0, "within"),
        ("[0.3 s]", 300.0, "within"),
        ("[0.1 min]", 6000.0, "within"),
        (" within 3 s", 3000.0, "within"),
        (" within 500", 500.0, "within"),
        (" holds-for 2 s", 2000.0, "holds_for"),
        (" holds_for 2 s", 2000.0, "holds_for"),
        (" holds-for 0.5", 0.5, "holds_for"),
    ],
)
def test_windows_and_units(suffix: str, duration: float, kind: str) -> None:
    node = parse_pattern("(a -> b)" + suffix)
    assert node == Window(Fol(A("a"), A("b")), duration, kind)
    assert isinstance(node.duration, float)


def test_window_and_multiplicity_on_a_filtered_atom() -> None:
    node = parse_pattern("A(x) where x > 1 {2} within 3 s -> B")
    cond = Binary(">", Name("x"), Const(1))
    assert node == Fol(Window(Mult(A("A", "x", where=cond), 2), 3000.0), A("B"))


# ---------------------------------------------------------------- filter conditions


def test_where_filter_on_atoms() -> None:
    assert parse_pattern("Motorbike(m) where speed > 0") == A(
        "Motorbike", "m", where=Binary(">", Name("speed"), Const(0))
    )
    node = parse_pattern('A(x) where (speed > 0 and name == "x") -> B(x)')
    cond = Binary(
        "and", Binary(">", Name("speed"), Const(0)), Binary("==", Name("name"), Const("x"))
    )
    assert node == Fol(A("A", "x", where=cond), A("B", "x"))


def test_arrow_ends_a_condition() -> None:
    node = parse_pattern("A where x > -1 -> B where y->C")
    assert node == Fol(
        A("A", where=Binary(">", Name("x"), Const(-1))),
        Fol(A("B", where=Name("y")), A("C")),
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a or b and c", Binary("or", Name("a"), Binary("and", Name("b"), Name("c")))),
        ("a || b && c", Binary("or", Name("a"), Binary("and", Name("b"), Name("c")))),
        ("not a == b", Unary("not", Binary("==", Name("a"), Name("b")))),
        ("!a", Unary("not", Name("a"))),
        ("1 + 2 * 3", Binary("+", Const(1), Binary("*", Const(2), Const(3)))),
        ("(1 + 2) * 3", Binary("*", Binary("+", Const(1), Const(2)), Const(3))),
        ("a - b - c", Binary("-", Binary("-", Name("a"), Name("b")), Name("c"))),
        ("-1", Const(-1)),
        ("-(1)", Unary("-", Const(1))),
        ("- x", Unary("-", Name("x"))),
        ("--1", Unary("-", Const(-1))),
        ("2.5e3", Const(2500.0)),
        ("7 % 2 != 1", Binary("!=", Binary("%", Const(7), Const(2)), Const(1))),
        ("a.speed.max", Name("a", ("speed", "max"))),
        ("f(x, 1)", Call("f", (Name("x"), Const(1)))),
        ("math.abs()", Call("math.abs", ())),
        (
            "true and false or null",
            Binary("or", Binary("and", Const(True), Const(False)), Const(None)),
        ),
        ("^not == ^true", Binary("==", Name("not"), Name("true"))),
    ],
)
def test_condition_expressions(text: str, expected: object) -> None:
    assert parse_expr(text) == expected


def test_string_literals_and_escapes() -> None:
    assert parse_expr(r"'it\'s'") == Const("it's")
    assert parse_expr(r'"a\"b\\c\n\t\u0041"') == Const('a"b\\c\n\tA')
    assert parse_expr("\"single 'quotes' inside\"") == Const("single 'quotes' inside")
    value = parse_expr("1.0").value
    assert isinstance(value, float) and isinstance(parse_expr("1").value, int)


def test_comparisons_do_not_chain() -> None:
    with pytest.raises(PatternSyntaxError) as info:
        parse_expr("a < b < c")
    (diag,) = info.value.diagnostics
    assert (diag.line, diag.col) == (1, 7)
    assert diag.message.startswith("unexpected '<'")


# ---------------------------------------------------------------- declarations and lexing


def test_locations_are_filled_in() -> None:
    module = parse(
        "package p\n\natomicEvent A(x : Integer)\n"
        "complexEvent C(x : Integer) {\n  as A(x) -> NOT A(x)[5]\n}\n"
    )
    atomic, complex_ = module.decls
    assert atomic.loc == (3, 13)
    assert atomic.params[0].loc == (3, 15)
    assert complex_.loc == (4, 14)
    fol = complex_.body
    assert fol.loc == (5, 11)  # the operator
    assert fol.left.loc == (5, 6)
    assert fol.right.loc == (5, 14)  # NOT
    assert fol.right.pattern.loc == (5, 22)  # the window bracket


def test_comments_anywhere() -> None:
    text = """// header
package /* inline */ p // trailing
/* block
   comment */ atomicEvent A /* between */ ( x /* in params */ : Integer )
complexEvent C(x : Integer) { as A(x) // after pattern
  -> /* in chain */ A(x) }
"""
    module = parse(text)
    assert module.decls[1].body == Fol(A("A", "x"), A("A", "x"))


def test_imports_uses_and_header_forms() -> None:
    text = (
        "package a.b\nimport x.y.*\nimport-queries q.r.*\nuses old.evm.*\nuses-patterns old.pat.*\n"
        "context immediate\natomicEvent A\n"
    )
    module = parse(text)
    assert module.imports == ("x.y.*", "q.r.*", "old.evm.*", "old.pat.*")
    assert module.context == "immediate"
    assert parse("").decls == () and parse("") == Module(())


def test_types_generics_arrays_and_trait_defaults() -> None:
    module = parse(
        "trait T { a : Boolean = true, b : Integer = 1 + 2, c : java.util.Date }\n"
        "atomicEvent E(xs : java.util.List<String>, m : Map<String, List<Integer>>, arr : String[])"
    )
    trait, event = module.decls
    assert trait == Trait(
        "T", (Param("a", "Boolean"), Param("b", "Integer"), Param("c", "java.util.Date"))
    )
    assert [p.type for p in event.params] == [
        "java.util.List<String>",
        "Map<String, List<Integer>>",
        "String[]",
    ]


def test_keywords_are_words_and_can_be_escaped() -> None:
    module = parse("atomicEvent traitor\natomicEvent ^rule(^context : ^Rule)\natomicEvent context")
    assert [d.name for d in module.decls] == ["traitor", "rule", "context"]
    assert module.decls[1].params == (Param("context", "Rule"),)


def test_rule_forms() -> None:
    module = parse(
        "rule a on P(x), Q priority 5 action some.registered_name\n"
        "rule b on P [priority -3] action act\n"
        "rule c on P action act priority 1\n"
        "rule d on init() { foo() }\n"
        "rule e on P\n"
        "Rule f { events: P, Q(y) priority 2 action { bar() } }\n"
    )
    a, b, c, d, e, f = module.rules
    assert a == RuleDecl("a", (PatternRef("P", ("x",)), PatternRef("Q")), "some.registered_name", 5)
    assert (b.priority, b.action) == (-3, "act")
    assert (c.priority, c.action) == (1, "act")
    assert d.on == (PatternRef("init", ()),) and d.opaque_action == "{ foo() }"
    assert (e.action, e.opaque_action) == (None, None)
    assert f == RuleDecl(
        "f", (PatternRef("P"), PatternRef("Q", ("y",))), priority=2, opaque_action="{ bar() }"
    )


def test_check_blocks_are_ignored_with_a_warning() -> None:
    warnings: list[Diagnostic] = []
    text = 'atomicEvent A(x : Integer) {\n\tcheck { x > 0 && "}" != "{" }\n}\natomicEvent B {}\n'
    module = parse(text, "w.vepl", warnings=warnings)
    assert module.decls[0] == AtomicEventDecl("A", (Param("x", "Integer"),))
    assert module.decls[1] == AtomicEventDecl("B")
    (warning,) = warnings
    assert str(warning).startswith(
        "w.vepl:2:2: warning: check block of atomic event 'A' is ignored"
    )
    assert parse_warnings(module) == (warning,)


def test_parse_file_sets_source(tmp_path: Path) -> None:
    path = tmp_path / "m.vepl"
    path.write_text("atomicEvent A(\n", encoding="utf-8")
    with pytest.raises(PatternSyntaxError) as info:
        parse_file(path)
    assert (
        str(info.value) == f"{path}:1:15: error: unexpected end of input, expected ')', identifier"
    )


# ---------------------------------------------------------------- syntax errors


@pytest.mark.parametrize(
    ("text", "line", "col", "message"),
    [
        (
            "complexEvent X() { as A -> -> B }",
            1,
            28,
            "unexpected '->', expected '(', 'every', 'every-distinct', 'NOT', "
            "'timer:interval', identifier",
        ),
        (
            "complexEvent X() {\n  as A ->",
            2,
            10,
            "unexpected end of input, expected '(', 'every', 'every-distinct', 'NOT', "
            "'timer:interval', identifier",
        ),
        ('complexEvent X() { as A where name == "abc }', 1, 39, "unterminated string"),
        ("atomicEvent A @", 1, 15, "unexpected character '@'"),
        ('rule R on A {\n  foo("}")\n  {\n}', 1, 13, "cannot read this block"),
        (
            "rule R on A action a.b { foo }",
            1,
            24,
            "must not have both `action name` and an action block",
        ),
        (
            "complexEvent X() { as A context strict context chronicle }",
            1,
            40,
            "'context' given twice",
        ),
        ("complexEvent X() { as A{1.5} }", 1, 25, "multiplicity must be a whole number, not 1.5"),
        ("rule R on A priority 1.5 action x", 1, 22, "priority must be an integer, not 1.5"),
        ("atomicEvent rule", 1, 13, "unexpected 'rule' (a reserved word; write ^rule to use it as"),
        (
            "traitFoo { x : Integer }",
            1,
            1,
            "unexpected identifier 'traitFoo', expected 'atomicEvent',",
        ),
        (
            "complexEvent X() { as A where x > 0 or -> B }",
            1,
            40,
            "unexpected '->', expected '!', '('",
        ),
        ("complexEvent X() { as A [3 weeks] }", 1, 28, "unexpected identifier 'weeks'"),
        ("queryEvent Q() as q maybe", 1, 21, "unexpected identifier 'maybe'"),
        ("complexEvent X() { as A /* never closed }", 1, 25, "unterminated comment"),
    ],
)
def test_error_positions(text: str, line: int, col: int, message: str) -> None:
    ((got_line, got_col, got_message),) = errors_of(text)
    assert (got_line, got_col) == (line, col)
    assert message in got_message


def test_multiple_errors_in_one_file_are_all_reported() -> None:
    text = """package p

atomicEvent A(x : Integer)
complexEvent X(x : Integer) {
\tas A(x) -> -> A(x)
}
atomicEvent B(
rule R on A {
\tprintln("still parsed")
}
complexEvent Y() { as A -> B OR A }
atomicEvent C @ garbage { }
trait T { x : Integer }
queryEvent Q() as q founds
atomicEvent D
"""
    errors = errors_of(text)
    assert [(line, col) for line, col, _ in errors] == [
        (5, 13),
        (8, 1),
        (11, 30),
        (12, 15),
        (14, 21),
    ]
    assert errors[1][2] == "unexpected 'rule', expected ')', identifier"
    assert errors[2][2] == "mixed operators '->' and 'OR' need parentheses"
    assert errors[4][2].startswith("unexpected identifier 'founds', expected '(', '.',")
    with pytest.raises(PatternSyntaxError) as info:
        parse(text, "many.vepl")
    lines = str(info.value).splitlines()
    assert len(lines) == 5 and all(line.startswith("many.vepl:") for line in lines)
    assert lines[0] == ("many.vepl:5:13: error: unexpected '->', expected '(', 'every', "
                        "'every-distinct', 'NOT', 'timer:interval', identifier")


def test_recovery_does_not_resync_inside_words_or_strings() -> None:
    text = (
        'atomicEvent A(\ncomplexEvent X() { as A where s == "rule r on" -> ruleB }\natomicEvent (\n'
    )
    errors = errors_of(text)
    assert [(line, col) for line, col, _ in errors] == [(2, 1), (3, 13)]


def test_bare_pattern_and_expression_errors() -> None:
    with pytest.raises(PatternSyntaxError) as info:
        parse_pattern("A ->\n  OR B", "expr.txt")
    assert (
        str(info.value) == "expr.txt:2:3: error: unexpected 'OR', expected '(', 'every', "
        "'every-distinct', 'NOT', 'timer:interval', identifier"
    )
    with pytest.raises(PatternSyntaxError):
        parse_expr("a and")


def test_no_parser_state_lexes_a_block_where_a_brace_is_expected() -> None:
    """`{` may start a multiplicity or an Xbase block, never both in one parser state."""
    from cepflow.language.parser import _lark

    lark = _lark()
    lark.parse("", start="module")  # make sure the parser is built
    table = lark.parser.parser.parser.parse_table
    both = [s for s, actions in table.states.items() if {"LBRACE", "OPAQUE"} <= actions.keys()]
    assert both == []
