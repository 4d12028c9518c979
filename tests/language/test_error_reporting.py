"""Error reports users can act on (issue 16 item 9): every error of an EPL file is reported,
one per statement, as FILE:LINE:COL; grammar token names (``_and``, ``mulop``) never appear —
each terminal of every grammar is shown as a user writes it."""

from __future__ import annotations

import re

import pytest
from lark import Lark

from cepflow.language.diagnostics import DiagnosticError, PatternSyntaxError
from cepflow.language.epl import _NAMES as EPL_NAMES
from cepflow.language.epl import _parser as epl_parser
from cepflow.language.epl import parse_epl
from cepflow.language.parser import _keyword_table, _lark, parse
from cepflow.language.syntax import lark_parser, terminal_names
from cepflow.models import mmparser
from cepflow.models.mmparser import parse_metamodel
from cepflow.queries import query_parser as qparser
from cepflow.queries.query_parser import parse_queries


def epl_errors(text: str) -> list[str]:
    with pytest.raises(PatternSyntaxError) as info:
        parse_epl(text, "f.epl")
    return [str(d) for d in info.value.diagnostics]


# ---------------------------------------------------------------- EPL: every error


def test_every_statement_with_an_error_is_reported() -> None:
    assert epl_errors(
        "create schema A(x int);\n"
        "insert into C select * from pattern [A(x >)];\n"
        "insert into D select * from pattern [A -> ];\n"
        "create schema (x int);\n"
        "insert into E select a.x as x from pattern [a = A];\n"
        "insert into F select * frm pattern [A];\n"
    ) == [
        "f.epl:2:43: error: unexpected ')', expected '(', '-', 'false', 'null', 'true', name, "
        "number, string",
        "f.epl:3:43: error: unexpected ']', expected '(', '[', 'every', 'every-distinct', "
        "'not', name",
        "f.epl:4:15: error: unexpected '(', expected name",
        "f.epl:6:24: error: unexpected 'frm', expected ',', 'from'",
    ]


def test_statements_without_semicolons_recover_at_the_next_statement_line() -> None:
    assert epl_errors(
        "create schema A(x int)\n"
        "insert into C select * from pattern [A(x >)]\n"
        "insert into D\n"
        "  select * from pattern [A -> ]\n"
        "create schema B(y int)\n"
        "@Name('E') select a.x as x from pattern [a = A -> B(y > 3 + )]\n"
    ) == [
        "f.epl:2:43: error: unexpected ')', expected '(', '-', 'false', 'null', 'true', name, "
        "number, string",
        "f.epl:4:31: error: unexpected ']', expected '(', '[', 'every', 'every-distinct', "
        "'not', name",
        "f.epl:6:61: error: unexpected ')', expected '(', '-', 'false', 'null', 'true', name, "
        "number, string",
    ]


def test_strings_and_comments_do_not_end_a_skipped_statement() -> None:
    assert [e.split(": error: ")[0] for e in epl_errors(
        "create schema A(x int);\n"
        "insert into C select * from pattern [A(x = 'a;b' >)]; insert into D select 'x;' as s "
        "from pattern [A];\n"
        "insert into E select * from pattern [A(x > ]; // ; a comment\n"
        "insert into F select * from pattern [A(x > )] /* ; */ ; insert into G select * from "
        "pattern [A -> -> A];\n"
    )] == ["f.epl:2:50", "f.epl:3:44", "f.epl:4:44", "f.epl:4:99"]


def test_unsupported_constructs_of_every_statement_are_reported() -> None:
    assert epl_errors(
        "create schema A(x int);\n"
        "insert into C select * from pattern [[0] A];\n"
        "insert into D select * from pattern [A where timer:foo(3 sec)];\n"
        "insert into E select * from pattern [A(x > 1)] where x > 2;\n"
        "@Name('ok') select a.x as x from pattern [a = A];\n"
        "select a.x as x from pattern [a = A];\n"
    ) == [
        "f.epl:2:38: error: [0] repeats nothing; write at least [1]",
        "f.epl:3:46: error: guard 'timer:foo' is not supported (timer:within, timer:withinmax "
        "and while (…) are)",
        "f.epl:4:48: error: 'where' after the stream is not supported; filter the stream "
        "instead: Type(condition)",
        "f.epl:6:1: error: a select statement without 'insert into' needs @Name('…') to name "
        "its output events",
    ]


def test_a_bad_statement_does_not_pass_its_annotations_on() -> None:
    """The annotations of a statement with an error go with it: the next one has none."""
    assert epl_errors(
        "create schema A(x int);\n"
        "@Name('A1')\n"
        "select garbage garbage from pattern [A];\n"
        "select a.x as x from pattern [a = A];\n"
    )[1] == ("f.epl:4:1: error: a select statement without 'insert into' needs @Name('…') to "
             "name its output events")


def test_errors_at_the_end_and_bad_characters() -> None:
    assert epl_errors("create schema A(x int);\ninsert into C select * from pattern [A(x > 1)\n"
                      ) == ["f.epl:3:1: error: unexpected end of input, expected '->', '-[n]>', "
                            "']', 'and', 'or', 'until', 'where', 'while'"]
    assert epl_errors("create schema A(x int);\n"
                      "insert into C select * from pattern [A(x > $)];\n"
                      "insert into D select * from pattern [A(x ? 2)];\n") == [
        "f.epl:2:44: error: unexpected character '$'",
        "f.epl:3:42: error: unexpected character '?'",
    ]


def test_a_correct_file_still_reads_the_same() -> None:
    module = parse_epl("create schema A(x int)\n"
                       "insert into C select a.x as x from pattern [every a = A(x > 1)];\n"
                       "@Name('D') select b.x as y from pattern [b = A]\n")
    assert [d.name for d in module.decls] == ["A", "C", "D"]


# ---------------------------------------------------------------- names users write


def _grammars() -> list[tuple[str, Lark, dict[str, str]]]:
    mm = lark_parser(mmparser._GRAMMAR, maybe_placeholders=False)
    q = lark_parser(qparser._GRAMMAR, maybe_placeholders=True)
    return [("vepl", _lark(), _keyword_table()[2]),
            ("epl", epl_parser(), terminal_names(epl_parser(), EPL_NAMES)),
            ("metamodel", mm, terminal_names(mm, mmparser._NAMES)),
            ("query", q, terminal_names(q, qparser._NAMES))]


@pytest.mark.parametrize("grammar", _grammars(), ids=lambda g: g[0])
def test_every_terminal_has_a_name_users_write(grammar: tuple[str, Lark, dict[str, str]]
                                               ) -> None:
    _, parser, shown = grammar
    for t in parser.terminals:
        if t.name in parser.lexer_conf.ignore:  # (a loaded parser has no ignore_tokens)
            continue
        assert t.name in shown, t.name
        text = shown[t.name]
        assert text.startswith("'") or re.fullmatch(r"[a-z][a-z ]*[a-z]( \(.*\))?", text), text


INTERNAL = re.compile(r"\b_?[A-Z][A-Z_]{2,}\b|\b_[a-z]+|\bmulop\b|__anon|\bcmp\b|range_sep")


@pytest.mark.parametrize(("read", "text"), [
    (parse_epl, "create schema A(x int);\ninsert into C select * from pattern [A(x * )];"),
    (parse_epl, "create schema A(x int);\ninsert into C select * from pattern [A(x and)];"),
    (parse_epl, "create schema A(x int);\ninsert into C select * from pattern [A(x 2)];"),
    (parse_epl, "create schema A(x int);\ninsert into C select * from pattern [[2 A];"),
    (parse_epl, "create schema A(x int);\ninsert into C select * from pattern [A] group x;"),
    (parse_epl, "create schema A(x int);\ninsert into C select * from pattern [A -> B(x > 10 min"),
    (parse, "atomicEvent A(x : Integer)\ncomplexEvent C(x : Integer) { as A(x) where x * > 1 }"),
    (parse, "atomicEvent A(x : Integer)\ncomplexEvent C(x : Integer) { as A(x) where x > 1 and }"),
    (parse, "atomicEvent A(x : Integer)\ncomplexEvent C(x : Integer) { as A(x) [3 5] }"),
    (parse, "atomicEvent A(x : Integer)\nrule R on A action { x"),
    (parse_queries, "pattern p(x) { check(x * > 1); }"),
    (parse_queries, "pattern p(x) { check(x 1); }"),
    (parse_metamodel, "metamodel m class C { ref r: C[1 2] }"),
    (parse_metamodel, "metamodel m class C { attr a: int = }"),
])
def test_messages_never_show_grammar_names(read, text: str) -> None:
    with pytest.raises(DiagnosticError) as info:
        read(text)
    for d in info.value.diagnostics:
        assert not INTERNAL.search(d.message), d.message
