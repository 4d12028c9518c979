"""Hostile inputs end in a located diagnostic, quickly and in bounded memory (issue 16 item 6).

Each case once crashed (UnicodeDecodeError, RecursionError, OverflowError, ValueError,
VisitError), hung (a regular expression backtracking for minutes) or allocated without bound
(a repetition unrolled into 100,000 automaton states). The limits are in docs/language.md.
"""

from __future__ import annotations

import codecs
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cepflow.cli.main import app
from cepflow.language import ast as A
from cepflow.language.checker import check
from cepflow.language.diagnostics import DiagnosticError, PatternSyntaxError
from cepflow.language.epl import parse_epl
from cepflow.language.limits import (
    MAX_ERRORS,
    MAX_INT,
    MAX_NESTING,
    MAX_SOURCE_SIZE,
    MAX_UNROLLED,
    unrolled_size,
)
from cepflow.language.parser import parse, parse_expr, parse_file, parse_pattern
from cepflow.loader import diagnose, parse_path
from cepflow.models.jsonio import read_metamodel
from cepflow.models.metamodel import MetamodelError
from cepflow.models.mmparser import parse_metamodel
from cepflow.queries.query_parser import QueryError, parse_queries

HEAD = "atomicEvent A(x : Integer)\natomicEvent B(x : Integer)\n"
SCHEMA = "create schema A(x int);\ncreate schema B(x int);\n"


class _TooSlow(BaseException):
    pass


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Fail (instead of hanging the suite) if the block runs longer than ``seconds``."""

    def alarm(signum: int, frame: object) -> None:
        raise _TooSlow(f"took more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def vepl(body: str, context: str | None = None) -> str:
    tail = f" context {context}" if context else ""
    return HEAD + "complexEvent C(x : Integer) { as " + body + tail + " }\n"


def epl(pattern: str) -> str:
    return SCHEMA + "insert into C select * from pattern [" + pattern + "];\n"


def diagnostics(text: str, source: str = "f.vepl") -> list[tuple[int, int, str]]:
    """The errors ``cepflow check`` reports for ``text`` (parse, check and compile), within 5 s
    (each input here takes milliseconds; before the fixes some took minutes)."""
    with deadline(5):
        try:
            module = parse_epl(text, source) if source.endswith(".epl") else parse(text, source)
        except PatternSyntaxError as e:
            return [(d.line, d.col, d.message) for d in e.diagnostics]
        found, _ = diagnose(module)
    return [(d.line, d.col, d.message) for d in found if d.is_error]


# ---------------------------------------------------------------- bytes that are not UTF-8


@pytest.mark.parametrize("suffix", [".vepl", ".epl"])
def test_invalid_utf8_is_a_located_error(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"bad{suffix}"
    path.write_bytes(b"// first line\n// caf\xe9 au lait\n")
    with pytest.raises(PatternSyntaxError) as info:
        parse_path(path)
    assert str(info.value) == (f"{path}:2:7: error: invalid UTF-8 byte (0xE9): the file must be "
                               "UTF-8 text")
    with pytest.raises(PatternSyntaxError):
        parse_file(path)


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-16-le", "utf-16-be",
                                      "utf-32"])
def test_byte_order_marks_are_read(tmp_path: Path, encoding: str) -> None:
    text = HEAD + "complexEvent C(x : Integer) { as A(x) -> B(x) where x != 'é' }\n"
    data = text.encode(encoding)
    if encoding in ("utf-16-le", "utf-16-be"):
        data = (codecs.BOM_UTF16_LE if encoding.endswith("le") else codecs.BOM_UTF16_BE) + data
    path = tmp_path / "p.vepl"
    path.write_bytes(data)
    assert parse_path(path) == parse(text, str(path))


def test_utf16_without_byte_order_mark_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "p.vepl"
    path.write_bytes(HEAD.encode("utf-16-le"))
    with pytest.raises(PatternSyntaxError, match=r"p.vepl:1:2: error: NUL character: not a "
                       r"text file \(or UTF-16 without a byte order mark\)"):
        parse_path(path)


def test_broken_utf16_is_a_located_error(tmp_path: Path) -> None:
    path = tmp_path / "p.vepl"
    path.write_bytes(codecs.BOM_UTF16_LE + "a\nbc".encode("utf-16-le") + b"\x00\xd8x")
    with pytest.raises(PatternSyntaxError, match=r"p.vepl:2:3: error: invalid UTF-16 data"):
        parse_path(path)


def test_query_and_metamodel_files_report_bad_bytes(tmp_path: Path) -> None:
    from cepflow.queries.compiler import load_queries

    mm = tmp_path / "m.mm"
    mm.write_bytes(b"metamodel m\nclass \xff {}\n")
    with pytest.raises(MetamodelError, match=r"m.mm:2:7: error: invalid UTF-8 byte"):
        read_metamodel(mm)
    vql = tmp_path / "q.vql"
    vql.write_bytes(b"pattern p(x) { \xc3( }\n")
    with pytest.raises(QueryError, match=r"q.vql:1:16: error: invalid UTF-8 byte"):
        load_queries(vql, parse_metamodel("metamodel m class C {}"))


def test_cli_check_prints_one_line_for_bad_bytes(tmp_path: Path) -> None:
    path = tmp_path / "bad.vepl"
    path.write_bytes(b"atomicEvent A\n\xff\xfe\xfd\n")
    res = CliRunner().invoke(app, ["check", str(path)])
    assert res.exit_code == 1
    assert res.output.strip() == (f"{path}:2:1: error: invalid UTF-8 byte (0xFF): the file "
                                  "must be UTF-8 text")
    assert res.exception is None or isinstance(res.exception, SystemExit)


# ---------------------------------------------------------------- deep nesting


CHAIN = " -> ".join(["A(x)"] * 1000)


@pytest.mark.parametrize(("text", "message"), [
    (vepl(CHAIN), "pattern nested more than 100 levels deep"),
    (vepl(" OR ".join(["A(x)"] * 300)), "pattern nested more than 100 levels deep"),
    (vepl("A(x) where " + " + ".join(["x"] * 500) + " > 1"),
     "condition nested more than 100 levels deep"),
    (vepl("A(x) where " + "-" * 5000 + "x > 1"), "condition nested more than 100 levels deep"),
    (vepl("A(x) where " + "f(" * 300 + "x" + ")" * 300 + " > 1"),
     "condition nested more than 100 levels deep"),
    (vepl("(" * 300 + "A(x)[1 s]" + ")[1 s]" * 300), "pattern nested more than 100 levels deep"),
    (epl(" -> ".join(["A"] * 1000)), "pattern nested more than 100 levels deep"),
    (epl("A(" + " + ".join(["x"] * 1000) + " > 1)"), "condition nested more than 100 levels"),
    (epl("every " * 3000 + "A"), "pattern nested more than 100 levels deep"),
])
def test_deep_nesting_is_a_located_error(text: str, message: str) -> None:
    source = "f.epl" if "create schema" in text else "f.vepl"
    errors = diagnostics(text, source)
    assert len(errors) == 1, errors
    line, col, found = errors[0]
    assert line == 3 and col > 1 and message in found, errors[0]
    assert "see Limits in docs/language.md" in found


@pytest.mark.parametrize("depth", [300, 5000])
def test_parentheses_alone_nest_nothing(depth: int) -> None:
    """Only operators count: thousands of parentheses around a pattern or a condition are
    read (they once overflowed the stack of the tree transformer)."""
    body = "(" * depth + "A(x) where " + "(" * depth + "x > 1" + ")" * depth + ")" * depth
    assert diagnostics(vepl(body)) == []
    assert diagnostics(epl("(" * depth + "A(" + "(" * depth + "x > 1" + ")" * depth + ")"
                           + ")" * depth), "f.epl") == []


def test_nesting_up_to_the_limit_compiles() -> None:
    """Depth counts the nodes on the longest path: a chain of 100 operands is 100 deep, a
    comparison over a sum of 99 terms too."""
    assert diagnostics(vepl(" -> ".join(["A(x)"] * MAX_NESTING))) == []
    assert diagnostics(vepl(" -> ".join(["A(x)"] * (MAX_NESTING + 1)))) == [  # the 101st A
        (3, 834, "in 'C': pattern nested more than 100 levels deep (each operator of a chain "
         "counts one level; split it into complex events; see Limits in docs/language.md)")]
    terms = MAX_NESTING - 1
    assert diagnostics(vepl("A(x) where " + " + ".join(["x"] * terms) + " > 1")) == []
    assert diagnostics(vepl("A(x) where " + " + ".join(["x"] * (terms + 1)) + " > 1")) == [
        (3, 49, "in 'C': condition nested more than 100 levels deep (each operator of a chain "
         "counts one level; see Limits in docs/language.md)")]


def test_fragments_and_queries_are_bounded_too() -> None:
    with deadline(5):
        with pytest.raises(PatternSyntaxError, match="nested more than 100"):
            parse_pattern(" -> ".join(["A"] * 2000))
        with pytest.raises(PatternSyntaxError, match="nested more than 100"):
            parse_expr("not " * 2000 + "x")
        query = "pattern p(x) {{ check({}); }}"
        for cond in ("!" * 3000 + "x", " + ".join(["x"] * 3000) + " > 1",
                     "-(" * 3000 + "x" + ")" * 3000 + " < 0", "f(" * 3000 + "x" + ")" * 3000):
            with pytest.raises(QueryError, match=r"<string>:1:\d+: error: condition nested "
                               "more than 100 levels deep"):
                parse_queries(query.format(cond))


def test_checker_refuses_a_deep_module_built_in_python() -> None:
    body: A.Pattern = A.Atom("A")
    for _ in range(3000):
        body = A.Fol(A.Atom("A"), body)
    module = A.Module((A.AtomicEventDecl("A"), A.ComplexEventDecl("C", (), body)))
    found = check(module)
    assert [d.message for d in found] == [
        "in 'C': pattern nested more than 100 levels deep (each operator of a chain counts one "
        "level; split it into complex events; see Limits in docs/language.md)"]


# ---------------------------------------------------------------- numbers


@pytest.mark.parametrize(("text", "where", "message"), [
    (vepl("A(x){99999999999999999999}"), (3, 39), "multiplicity 99999999999999999999 is too "
     f"large (at most {MAX_INT}"),
    (vepl("A(x){1e999999999}"), (3, 39), "multiplicity 1e999999999 is too large"),
    (vepl("A(x) where x > 1e999"), (3, 49), "number 1e999 is too large for a 64-bit "
     "floating-point number"),
    (vepl("A(x) where x > " + "9" * 5000), (3, 49), "integer 999999999999…9999 (5000 "
     "characters) is too large"),
    (vepl("A(x) where x > 9223372036854775808"), (3, 49), "integer 9223372036854775808 is too "
     "large"),
    (vepl("A(x) -> B(x) [1e999 s]"), (3, 48), "duration 1e999 is too long"),
    (vepl("A(x) -> B(x) within " + "9" * 400 + " min"), (3, 54), "duration 999999999999"),
    (vepl("every-distinct(x; 1e999 s) A(x)"), (3, 52), "duration 1e999 is too long"),
    (vepl("A(x) -> timer:interval(1e999 s)"), (3, 57), "duration 1e999 is too long"),
    (HEAD + "rule R on A priority 99999999999999999999 action a\n", (3, 22),
     "priority 99999999999999999999 is too large"),
    (HEAD + "complexEvent W { from A window length(99999999999999999999) select x }\n",
     (3, 39), "a length window's length 99999999999999999999 is too large"),
    (vepl("A{2..99999999999999999999} UNTIL B"), (3, 39), "a repeat bound 99999999999999999999 "
     "is too large"),
    (epl("[99999999999999999999] A"), (3, 39), "a repeat bound 99999999999999999999 is too "
     "large"),
    (epl("A(x > 1" + "0" * 400 + ".5)"), (3, 44), "number 100000000000…00.5 (403 characters) "
     "is too large for a 64-bit floating-point number"),
    (epl("A(x > " + "9" * 5000 + ")"), (3, 44), "integer 999999999999…9999 (5000 characters) "
     "is too large"),
    (epl("A where timer:within(1" + "0" * 400 + " sec)"), (3, 59), "duration 100000000000…"
     "0000 (401 characters) is too long"),
    (epl("a = A -> [2] b = B(b.x > a[99999999999999999999].x)"), (3, 65), "an index "
     "99999999999999999999 is too large"),
])
def test_numbers_beyond_the_limits_are_located_errors(
        text: str, where: tuple[int, int], message: str) -> None:
    source = "f.epl" if "create schema" in text else "f.vepl"
    errors = diagnostics(text, source)
    assert len(errors) == 1, errors
    assert errors[0][:2] == where and message in errors[0][2], errors[0]


def test_literals_at_the_limits_are_read() -> None:
    assert diagnostics(vepl(f"A(x) where x > {MAX_INT} and x > -{MAX_INT} and x < 1.7e308 "
                            "and x > 1e-999")) == []
    assert parse_expr(f"-{MAX_INT}") == A.Const(-MAX_INT)
    assert parse_pattern("A[1e20 ms]").duration == 1e20


def test_query_and_metamodel_numbers_beyond_the_limits() -> None:
    with pytest.raises(MetamodelError, match=r"<string>:1:37: error: integer 99999999999999999999"
                       " is too large"):
        parse_metamodel("metamodel m class C { attr n: int = 99999999999999999999 }")
    with pytest.raises(MetamodelError, match=r"<string>:1:32: error: a multiplicity bound "
                       "99999999999999999999 is too large"):
        parse_metamodel("metamodel m class C { ref r: C[99999999999999999999] }")
    with pytest.raises(QueryError, match=r"<string>:1:22: error: number 1e999 is too large"):
        parse_queries("pattern p(x) { check(1e999 > 1); }")
    with pytest.raises(QueryError,
                       match=r'<string>:1:23: error: invalid string "\\q": Invalid \\escape'):
        parse_queries('pattern p(x) { C.n(x, "\\q"); }')


def test_repeating_a_string_is_the_type_error_it_is() -> None:
    """``str(s) * 200000000`` passed ``check`` and allocated 2 GB per event: the checker now
    knows what the built-in string functions return, and arithmetic on a string is an error."""
    module = parse("atomicEvent A(s : String, x : Integer)\n"
                   "complexEvent C { as A where len(str(s) * 200000000) > 0 }\n"
                   "complexEvent D { as A where len(upper(s)) > 2 and str(x) + \"a\" == \"3a\" }\n"
                   "complexEvent E { as A where len(lower(s)) == \"3\" }\n")
    assert [(d.line, d.col, d.message) for d in check(module)] == [
        (2, 40, "arithmetic '*' on a string"),
        (4, 43, "cannot compare a number with a string"),
    ]


# ---------------------------------------------------------------- action blocks


@pytest.mark.parametrize("lines", [24, 2000])
def test_unterminated_action_block_fails_fast(lines: int) -> None:
    """The block's regular expression once backtracked exponentially in the number of comment
    lines after an unterminated ``action {`` (16 lines: 33 s, 24: over two minutes)."""
    text = HEAD + "rule R on A action {\n" + "  // comment line\n" * lines
    assert diagnostics(text) == [(3, 20, "cannot read this block: unbalanced braces, an "
                                  "unterminated string or comment, or nesting deeper than 10 "
                                  "levels")]


def test_unterminated_blocks_of_every_kind_fail_fast() -> None:
    body = "{ x } // c { \n \"s}\\\"\" /* c } */ 'q' / y\n" * 2000
    for tail in (body, "\"" + body, "/*" + body, "{ " * 9 + body):
        assert diagnostics(HEAD + "rule R on A action {\n" + tail)
    closed = HEAD + "rule R on A action {\n" + body + "}\n"
    assert parse(closed).rules[0].opaque_action == "{\n" + body + "}"


@pytest.mark.parametrize(("tail", "col", "message"), [
    ("/* x" * 64000, 24, "unterminated comment"),
    ("{ /*" * 64000, 24, "cannot read this block"),
    ("{ x } {" * 30000, 30, "cannot read this block"),  # (the first block is read)
    ('"x /*\n' * 64000, 27, "unterminated comment"),
])
def test_skipping_after_an_error_stops_at_an_unterminated_comment_or_block(
        tail: str, col: int, message: str) -> None:
    """After an error the parser skips to the next declaration; each unterminated ``/*`` or
    ``{`` it met made the lexer scan the rest of the file again (32 KB: 4.5 s, growing with
    the square of the size). Reading now stops at the first."""
    errors = diagnostics(HEAD + "complexEvent C { as -> " + tail)
    assert errors[0][2].startswith("unexpected '->'")
    assert errors[-1][:2] == (3, col) and errors[-1][2].startswith(message), errors


@pytest.mark.parametrize(("text", "where"), [
    (HEAD + "complexEvent C { as A where x > 1 /* x", (3, 35)),
    (SCHEMA + "insert into C select * from pattern [A(x > 1 /* x", (3, 46)),
])
def test_a_comment_without_its_end_is_called_so(text: str, where: tuple[int, int]) -> None:
    source = "f.epl" if "create schema" in text else "f.vepl"
    assert diagnostics(text * 1000, source)[0] == (*where, "unterminated comment")


# ---------------------------------------------------------------- unrolled repetitions


def test_huge_repetition_is_refused_by_the_checker_before_compiling() -> None:
    assert diagnostics(vepl("A(x){100000}")) == [
        (3, 38, f"'C' unrolls to more than {MAX_UNROLLED} automaton steps (P{{n}} repeats P n "
         "times, P{m..n} UNTIL Q and Esper's [m:n] P until Q up to n + 1 times, P AND Q "
         "compiles both orders; see Limits in docs/language.md)")]


@pytest.mark.parametrize(("body", "col"), [
    ("(A(x){30}){40}", 44),               # nested repetitions multiply
    ("A(x){600} -> B(x){600}", 44),       # the sequence passes the limit
    (" AND ".join(["A(x)", "B(x)"] * 5), 111),  # each AND doubles
    ("A{..1000} UNTIL B", 34),
])
def test_unrolled_size_limit(body: str, col: int) -> None:
    errors = diagnostics(vepl(body, "esper" if "UNTIL" in body else None))
    assert [(line, c) for line, c, m in errors if "unrolls to more than" in m] == [(3, col)]


def test_unrolling_within_the_limit_compiles() -> None:
    assert diagnostics(vepl(f"A(x){{{MAX_UNROLLED}}}")) == []
    assert diagnostics(epl(f"every [{MAX_UNROLLED}] A"), "f.epl") == []
    assert diagnostics(epl(f"every [{MAX_UNROLLED + 1}] A"), "f.epl")[0][2].startswith(
        "'C' unrolls to more than")


@pytest.mark.parametrize("body", [
    "A(x){7}", "(A(x) -> B(x)){3} -> A(x)", "A(x) AND B(x) AND A(x)", "(A(x) AND B(x)){2}",
    "B(x) -> A(x){2..4} UNTIL B(x)", "B(x) -> A(x){3..} UNTIL B(x)", "A(x){..5} UNTIL B(x)",
    "(A(x) OR B(x)){4}[1 s]",
])
def test_unrolled_size_bounds_the_compiled_automaton(body: str) -> None:
    found, program = diagnose(parse(vepl(body, "esper" if "UNTIL" in body else None)))
    assert program is not None, found
    positions = sum(len(a.positions) for a in program.automata)
    estimate, _ = unrolled_size(parse_pattern(body))
    assert positions <= estimate <= 2 * positions + 2


# ---------------------------------------------------------------- size


def test_files_and_texts_above_the_size_limit_are_refused(tmp_path: Path) -> None:
    big = tmp_path / "big.vepl"
    big.write_bytes(b"// " + b"x" * MAX_SOURCE_SIZE + b"\natomicEvent A\n")
    with deadline(5), pytest.raises(PatternSyntaxError) as info:
        parse_path(big)
    assert str(info.value) == (f"{big}:1:1: error: more than {MAX_SOURCE_SIZE} bytes (1 MiB): "
                               "too large to read as one file (see Limits in docs/language.md)")
    text = "atomicEvent A\n" + " " * MAX_SOURCE_SIZE
    for read in (parse, parse_epl, parse_pattern):
        with deadline(5), pytest.raises(PatternSyntaxError, match="more than 1048576 characters"):
            read(text)
    at_limit = "atomicEvent A\n" + "//" + "x" * (MAX_SOURCE_SIZE - 17) + "\n"
    assert len(at_limit) == MAX_SOURCE_SIZE
    assert parse(at_limit).decls == (A.AtomicEventDecl("A"),)


def test_a_device_is_never_read_past_the_limit() -> None:
    with deadline(5), pytest.raises(PatternSyntaxError, match="more than 1048576 bytes"):
        parse_path("/dev/zero")


# ---------------------------------------------------------------- many errors


def test_error_count_is_capped() -> None:
    text = "atomicEvent A\n" + "complexEvent C { as A -> -> A }\n" * 300
    with deadline(10), pytest.raises(PatternSyntaxError) as info:
        parse(text, "f.vepl")
    found = info.value.diagnostics
    assert len(found) == MAX_ERRORS + 1
    assert found[-1].message == (f"stopped after {MAX_ERRORS} errors: the rest of the file is "
                                 "not read (see Limits in docs/language.md)")
    text = SCHEMA + "insert into C select * from pattern [A -> -> B];\n" * 300
    with deadline(10), pytest.raises(PatternSyntaxError) as info:
        parse_epl(text, "f.epl")
    assert len(info.value.diagnostics) == MAX_ERRORS + 1


def test_errors_found_while_building_the_tree_are_capped_too() -> None:
    text = HEAD + "complexEvent C(x : Integer) { as " + "(A(x) -> B(x) OR " * 300 + "A(x)" \
        + ")" * 300 + " }\n"
    with deadline(10), pytest.raises(PatternSyntaxError) as info:
        parse(text, "f.vepl")
    found = info.value.diagnostics
    assert len(found) == MAX_ERRORS + 1
    assert sum("mixed operators '->' and 'OR'" in d.message for d in found) == MAX_ERRORS - 1
    assert sum("nested more than 100 levels" in d.message for d in found) == 1
    assert found[-1].message.startswith(f"stopped after {MAX_ERRORS} errors")


def test_pattern_text_too_long_for_a_path_is_read_as_text() -> None:
    import cepflow

    with pytest.raises(PatternSyntaxError, match="<string>:1:1: error: unexpected identifier"):
        cepflow.load("A" * 5000)  # (was: OSError, file name too long)


def test_every_limit_error_is_a_diagnostic_error() -> None:
    """What callers catch: every error above is a DiagnosticError (a PatternSyntaxError for
    pattern files), never a bare ValueError."""
    assert issubclass(PatternSyntaxError, DiagnosticError)
    assert issubclass(QueryError, DiagnosticError) and issubclass(MetamodelError, DiagnosticError)
