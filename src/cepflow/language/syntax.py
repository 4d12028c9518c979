"""Located syntax errors for cepflow's smaller Lark grammars (metamodels, graph queries, EPL).

Turns a Lark exception into a :class:`~cepflow.language.diagnostics.Diagnostic` at the
offending line and column, saying what was found and what the grammar expected there.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken
from lark.lexer import PatternStr

from cepflow.language.diagnostics import Diagnostic


class LarkErrors(Exception):
    """One located syntax error (raised by :func:`parse_located`)."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        self.diagnostic = diagnostic
        super().__init__(str(diagnostic))


def parse_located(parser: Lark, text: str, source: str, names: Mapping[str, str]) -> Tree:
    """Parse ``text``; on a syntax error raise LarkErrors with a located, readable message.

    ``names`` maps terminal names to how the message shows them (``ID`` -> ``name``).
    """
    try:
        return parser.parse(text)
    except UnexpectedInput as exc:
        shown = {t.name: f"'{t.pattern.value}'" for t in parser.terminals
                 if isinstance(t.pattern, PatternStr)}
        raise LarkErrors(describe(exc, text, source, {**shown, **names})) from None


@functools.cache
def lark_parser(grammar_path: Path, **options: Any) -> Lark:
    """The LALR parser (with positions) for the grammar file at ``grammar_path``, built once per
    path and options; ``options`` go to :class:`lark.Lark` (e.g. ``maybe_placeholders``)."""
    grammar = grammar_path.read_text(encoding="utf-8")
    return Lark(grammar, parser="lalr", propagate_positions=True, **options)


def node_loc(node: Tree | Token) -> tuple[int, int]:
    """The (1-based) line and column where a parse-tree node or token starts."""
    if isinstance(node, Token):
        return node.line or 1, node.column or 1
    return node.meta.line, node.meta.column


def describe(exc: UnexpectedInput, text: str, source: str, names: Mapping[str, str]) -> Diagnostic:
    """The diagnostic for a Lark parse exception (``names``: how to show each terminal)."""
    if isinstance(exc, UnexpectedToken | UnexpectedEOF):
        token: Token | None = getattr(exc, "token", None)
        expected = _expected(exc)
        shown = ", ".join(sorted({_show(t, names) for t in expected})) or "nothing"
        if token is None or token.type == "$END":
            line, col = _end(text)
            return Diagnostic(source, line, col, f"unexpected end of input, expected {shown}")
        found = f"'{token.value}'"
        return Diagnostic(source, token.line or 1, token.column or 1,
                          f"unexpected {found}, expected {shown}")
    if isinstance(exc, UnexpectedCharacters):
        pos = exc.pos_in_stream
        char = text[pos] if pos < len(text) else ""
        if char in "\"'":
            message = "unterminated string"
        elif text.startswith("/*", pos):
            message = "unterminated comment"
        else:
            message = f"unexpected character {char!r}"
        return Diagnostic(source, exc.line, exc.column, message)
    return Diagnostic(source, getattr(exc, "line", 1) or 1, getattr(exc, "column", 1) or 1,
                      str(exc).splitlines()[0])


def literal(node: Tree) -> Any:
    """The value of a ``true`` / ``false`` / ``string`` / number literal node (JSON spelling)."""
    if node.data == "true":
        return True
    if node.data == "false":
        return False
    text = str(node.children[0])
    if node.data == "string":
        return json.loads(text)
    return float(text) if any(c in text for c in ".eE") else int(text)


def _expected(exc: UnexpectedInput) -> set[str]:
    ip = getattr(exc, "interactive_parser", None)
    if ip is not None:
        return {t for t in ip.accepts() if t != "$END"} or set(getattr(exc, "expected", ()))
    return set(getattr(exc, "expected", ()) or ())


def _show(terminal: str, names: Mapping[str, str]) -> str:
    if terminal in names:
        return names[terminal]
    return terminal.lower()


def _end(text: str) -> tuple[int, int]:
    lines = text.split("\n")
    return len(lines), len(lines[-1]) + 1
