"""Printer tests: canonical output, and parse(format(x)) == x on files and random ASTs."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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
)
from cepflow.language.limits import MAX_INT
from cepflow.language.parser import keywords, parse, parse_expr, parse_file, parse_pattern
from cepflow.language.printer import format_duration, format_expr, format_module, format_pattern

DATA = Path(__file__).parent / "data"
FILES = sorted(DATA.glob("*.vepl"))

a, b, c = Atom("a"), Atom("b"), Atom("c")


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_round_trip_of_data_files(path: Path) -> None:
    module = parse_file(path)
    text = format_module(module)
    again = parse(text, module.source)
    assert again == module
    assert format_module(again) == text  # printing is a fixed point


def test_data_files_are_all_used() -> None:
    assert len(FILES) >= 10


@pytest.mark.parametrize(
    ("node", "text"),
    [
        (Fol(a, Fol(b, c)), "a -> b -> c"),
        (Fol(Fol(a, b), c), "(a -> b) -> c"),
        (Or(Or(a, b), c), "a OR b OR c"),
        (Or(a, Or(b, c)), "a OR (b OR c)"),
        (And(Or(a, b), c), "(a OR b) AND c"),
        (Fol(a, And(b, c)), "a -> (b AND c)"),
        (Not(Not(a)), "NOT (NOT a)"),
        (Not(Window(Mult(a, 2), 10.0)), "NOT a{2}[10 ms]"),
        (Window(Window(a, 10.0), 20.0), "(a[10 ms])[20 ms]"),
        (Mult(Window(a, 10.0), 2), "(a[10 ms]){2}"),
        (Mult(Mult(a, 2), "*"), "(a{2}){*}"),
        (Window(Not(a), 1000.0), "(NOT a)[1 s]"),
        (Mult(Fol(a, b), "+"), "(a -> b){+}"),
        (Window(a, 2000.0, "holds_for"), "a holds-for 2 s"),
        (Fol(Not(a), b), "NOT a -> b"),
        (Atom("A", ()), "A()"),
        (Atom("A", ("_", "x")), "A(_, x)"),
        (Atom("rule", ("NOT",)), "^rule(^NOT)"),
        (Atom("or", ("context",)), "or(context)"),
        (
            Atom("A", ("x",), Binary("and", Name("x"), Name("y"))),
            "A(x) where (x and y)",
        ),
        (Mult(Atom("A", None, Binary(">", Name("x"), Const(1))), 2), "A where x > 1 {2}"),
        (Window(Atom("A", None, Name("ok")), 5.0), "A where ok [5 ms]"),
    ],
)
def test_format_pattern(node: object, text: str) -> None:
    assert format_pattern(node) == text
    assert parse_pattern(text) == node


@pytest.mark.parametrize(
    ("ms", "text"),
    [
        (500.0, "500 ms"),
        (1500.0, "1500 ms"),
        (3000.0, "3 s"),
        (120_000.0, "2 min"),
        (3_600_000.0, "1 h"),
        (172_800_000.0, "2 d"),
        (0.5, "0.5 ms"),
        (0.0, "0 ms"),
        (1e20, "100000000000000000 s"),
        (1e-7, "0.0000001 ms"),
    ],
)
def test_format_duration_is_exact(ms: float, text: str) -> None:
    assert format_duration(ms) == text
    assert parse_pattern(f"a[{text}]").duration == ms


@pytest.mark.parametrize(
    ("node", "text"),
    [
        (Unary("-", Const(1)), "-(1)"),
        (Const(-1), "-1"),
        (Unary("-", Unary("-", Name("x"))), "--x"),
        (Binary("-", Name("a"), Const(-1)), "a - -1"),
        (Binary("-", Name("a"), Binary("-", Name("b"), Name("c"))), "a - (b - c)"),
        (Binary("<", Binary("<", Name("a"), Name("b")), Name("c")), "(a < b) < c"),
        (Binary("==", Unary("not", Name("a")), Name("b")), "(not a) == b"),
        (Unary("not", Binary("==", Name("a"), Name("b"))), "not a == b"),
        (Binary("and", Binary("or", Name("a"), Name("b")), Name("c")), "(a or b) and c"),
        (Const('say "hi"\n\\'), '"say \\"hi\\"\\n\\\\"'),
        (Const("\x00\x7f"), '"\\u0000\\u007f"'),
        (Const(None), "null"),
        (Const(True), "true"),
        (Const(2.5), "2.5"),
        (Const(1e16), "1e+16"),
        (Call("math.abs", (Name("x", ("y",)),)), "math.abs(x.y)"),
        (Name("true"), "^true"),
    ],
)
def test_format_expr(node: object, text: str) -> None:
    assert format_expr(node) == text
    assert parse_expr(text) == node


def test_unprintable_values_are_rejected() -> None:
    with pytest.raises(ValueError):
        format_expr(Const(float("nan")))
    with pytest.raises(ValueError):
        format_pattern(Window(a, -1.0))
    with pytest.raises(ValueError):
        format_pattern(Atom("not a name"))
    with pytest.raises(ValueError):
        format_pattern(Mult(a, -2))


def test_format_module_layout() -> None:
    module = Module(
        (
            AtomicEventDecl("A", (Param("x", "Integer"),)),
            ComplexEventDecl(
                "C",
                (Param("x", "Integer"),),
                Fol(Atom("A", ("x",)), Atom("A", ("x",))),
                "strict",
                ("x",),
            ),
            RuleDecl("r", (PatternRef("C", ("x",)),), "act", priority=3),
        ),
        package="p",
        imports=("q.*",),
        context="chronicle",
    )
    assert format_module(module) == (
        "package p\n\nimport q.*\n\ncontext chronicle\n\n"
        "atomicEvent A(x : Integer)\n\n"
        "complexEvent C(x : Integer) {\n\tas A(x) -> A(x)\n"
        "\tcontext strict\n\tpartition by x\n}\n\n"
        "rule r on C(x) priority 3 action act\n"
    )


# ---------------------------------------------------------------- random ASTs

_WORDS = sorted(keywords() | {"s", "ms", "min", "h", "d", "days", "holds_for", "_", "_x"})
identifiers = st.one_of(
    st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,6}", fullmatch=True),
    st.sampled_from(_WORDS),
)
names = identifiers.filter(lambda n: n not in ("_", "_x"))
args = st.one_of(identifiers, st.sampled_from(["_", "_X", "_RH"]))
qnames = st.lists(names, min_size=1, max_size=3).map(".".join)
types = st.one_of(
    qnames,
    st.sampled_from(["java.util.List<String>", "String[]", "Map<String, List<Integer>>"]),
)

constants = st.one_of(
    st.none(),
    st.booleans(),
    # integer literals are 64-bit (docs/language.md, Limits)
    st.integers(min_value=-MAX_INT, max_value=MAX_INT),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(st.characters(exclude_categories=("Cs",)), max_size=8),
).map(Const)

expr_leaves = st.one_of(
    constants,
    st.builds(Name, names, st.lists(names, max_size=2).map(tuple)),
)
_BINARY_OPS = ["or", "and", "==", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/", "%"]
exprs = st.recursive(
    expr_leaves,
    lambda inner: st.one_of(
        st.builds(Unary, st.sampled_from(["not", "-"]), inner),
        st.builds(Binary, st.sampled_from(_BINARY_OPS), inner, inner),
        st.builds(Call, qnames, st.lists(inner, max_size=3).map(tuple)),
    ),
    max_leaves=8,
)

durations = st.one_of(
    st.floats(min_value=0, max_value=1e13, allow_nan=False, allow_infinity=False),
    st.integers(min_value=0, max_value=10**9).map(float),
    st.sampled_from([1000.0, 60_000.0, 3_600_000.0, 86_400_000.0, 1500.0, 0.25]),
)
atoms = st.builds(
    Atom,
    names,
    st.one_of(st.none(), st.lists(args, max_size=3).map(tuple)),
    st.one_of(st.none(), st.none(), exprs),
)
patterns = st.recursive(
    atoms,
    lambda inner: st.one_of(
        st.builds(Fol, inner, inner),
        st.builds(Or, inner, inner),
        st.builds(And, inner, inner),
        st.builds(Mult, inner, st.one_of(st.integers(0, 12), st.sampled_from(["*", "+"]))),
        st.builds(Not, inner),
        st.builds(Window, inner, durations, st.sampled_from(["within", "holds_for"])),
    ),
    max_leaves=10,
)

params = st.lists(st.builds(Param, names, types), max_size=3).map(tuple)
refs = st.builds(PatternRef, names, st.one_of(st.none(), st.lists(args, max_size=3).map(tuple)))
blocks = st.sampled_from(
    [
        "{}",
        '{ println("}") }',
        "{ a { b { c } } /* } */ // }\n}",
        "{\n\tval x = '{'\n\tx.forEach[println(it)]\n}",
    ]
)
contexts = st.sampled_from([None, "chronicle", "immediate", "strict"])


@st.composite
def rules(draw: st.DrawFn) -> RuleDecl:
    kind = draw(st.sampled_from(["none", "action", "block"]))
    return RuleDecl(
        draw(names),
        tuple(draw(st.lists(refs, min_size=1, max_size=3))),
        action=draw(qnames) if kind == "action" else None,
        priority=draw(st.integers(-100, 100)),
        opaque_action=draw(blocks) if kind == "block" else None,
    )


decls = st.one_of(
    st.builds(Trait, names, params),
    st.builds(AtomicEventDecl, names, params, st.lists(names, max_size=2).map(tuple)),
    st.builds(
        QueryEventDecl,
        names,
        params,
        qnames,
        st.one_of(st.none(), st.lists(args, max_size=3).map(tuple)),
        st.sampled_from(["found", "lost"]),
    ),
    st.builds(
        ComplexEventDecl,
        names,
        params,
        patterns,
        contexts,
        st.lists(names, max_size=2).map(tuple),
    ),
    rules(),
)
imports = st.builds(lambda q, star: q + (".*" if star else ""), qnames, st.booleans())
modules = st.builds(
    Module,
    st.lists(decls, max_size=5).map(tuple),
    st.one_of(st.none(), qnames),
    st.lists(imports, max_size=2).map(tuple),
    contexts,
)

_FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_FAST
@given(exprs)
def test_random_expressions_round_trip(expr: object) -> None:
    assert parse_expr(format_expr(expr)) == expr


@_FAST
@given(patterns)
def test_random_patterns_round_trip(pattern: object) -> None:
    assert parse_pattern(format_pattern(pattern)) == pattern


@_FAST
@given(modules)
def test_random_modules_round_trip(module: Module) -> None:
    text = format_module(module)
    assert parse(text, module.source) == module
