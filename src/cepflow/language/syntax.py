"""Located syntax errors for cepflow's Lark grammars (patterns, EPL, metamodels, graph queries).

Turns a Lark exception into a :class:`~cepflow.language.diagnostics.Diagnostic` at the
offending line and column, saying what was found and what the grammar expected there — every
terminal shown as a user writes it (``'and'``, ``number``, ``comparison operator``), never by
its name in the grammar (``_AND``, ``MULOP``). :class:`StatementRecovery` lets a grammar of
statements (EPL) report one error per statement instead of stopping at the first.
"""

from __future__ import annotations

import bisect
import functools
import json
import re
from collections.abc import Callable, Collection, Iterable, Mapping
from pathlib import Path
from typing import Any

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken
from lark.lexer import PatternStr
from lark.parsers.lalr_analysis import Shift

from cepflow.language.diagnostics import Diagnostic, sort_diagnostics
from cepflow.language.limits import MAX_ERRORS, LimitError, number_value
from cepflow.language.parser_cache import lalr_parser

#: how messages show the terminals several grammars share
_COMMON_NAMES = {
    "ID": "identifier",
    "NAME": "name",
    "NUMBER": "number",
    "SIGNED_NUMBER": "number",
    "INT": "whole number",
    "STRING": "string",
    "$END": "end of input",
}
#: a terminal that is one word (a keyword, ``/and\b/i``): shown as the word
_WORD = re.compile(r"([A-Za-z][A-Za-z_-]*)(?:\\b)?")


def terminal_names(parser: Lark, names: Mapping[str, str] | None = None) -> dict[str, str]:
    """How messages show each terminal of ``parser``: a literal or keyword by its text in
    quotes (``'->'``, ``'and'``), a class of tokens by ``names`` or a common name."""
    shown = dict(_COMMON_NAMES)
    for t in parser.terminals:
        if isinstance(t.pattern, PatternStr):
            shown[t.name] = f"'{t.pattern.value}'"
        elif (m := _WORD.fullmatch(t.pattern.value)) is not None:
            shown[t.name] = f"'{m.group(1)}'"
    shown.update(names or {})
    return shown


def show_terminal(name: str, shown: Mapping[str, str]) -> str:
    """One terminal as a message shows it (``shown`` from :func:`terminal_names`)."""
    return shown.get(name) or name.strip("_").lower().replace("_", " ")


def expected_text(terminals: Iterable[str], shown: Mapping[str, str]) -> str:
    """The terminals a parser could take, as a sorted list for "expected …"."""
    texts = {show_terminal(t, shown) for t in terminals}
    return ", ".join(sorted(texts, key=lambda s: (s == "end of input", s.lower()))) or "nothing"


class LarkErrors(Exception):
    """One located syntax error (raised by :func:`parse_located`)."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        self.diagnostic = diagnostic
        super().__init__(str(diagnostic))


def parse_located(parser: Lark, text: str, source: str, names: Mapping[str, str]) -> Tree:
    """Parse ``text``; on a syntax error raise LarkErrors with a located, readable message.

    ``names`` maps terminal names to how the message shows them (``CMP`` -> ``comparison``),
    for those :func:`terminal_names` cannot name itself.
    """
    try:
        return parser.parse(text)
    except UnexpectedInput as exc:
        raise LarkErrors(describe(exc, text, source, terminal_names(parser, names))) from None


@functools.cache
def lark_parser(grammar_path: Path, **options: Any) -> Lark:
    """The LALR parser (with positions) for the grammar file at ``grammar_path``, built once per
    path and options; ``options`` go to :class:`lark.Lark` (e.g. ``maybe_placeholders``)."""
    grammar = grammar_path.read_text(encoding="utf-8")
    return lalr_parser(grammar, grammar_path.stem, propagate_positions=True, **options)


def node_loc(node: Tree | Token) -> tuple[int, int]:
    """The (1-based) line and column where a parse-tree node or token starts."""
    if isinstance(node, Token):
        return node.line or 1, node.column or 1
    return node.meta.line, node.meta.column


def describe(exc: UnexpectedInput, text: str, source: str, names: Mapping[str, str]) -> Diagnostic:
    """The diagnostic for a Lark parse exception (``names``: how to show each terminal, from
    :func:`terminal_names`)."""
    if isinstance(exc, UnexpectedToken | UnexpectedEOF):
        token: Token | None = getattr(exc, "token", None)
        shown = expected_text(_expected(exc), names)
        if token is None or token.type == "$END":
            line, col = _end(text)
            return Diagnostic(source, line, col, f"unexpected end of input, expected {shown}")
        if comment_start(text, token) is not None:
            return Diagnostic(source, token.line or 1, (token.column or 1) - (
                token.start_pos - comment_start(text, token)), "unterminated comment")
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


def comment_start(text: str, token: Token) -> int | None:
    """Where the unterminated ``/*`` comment ``token`` was lexed from begins, or None: a
    terminated comment is never a token, so a ``/`` at ``/*``, or a ``*`` right after one
    taken as division, is what the lexer made of a comment without its ``*/``."""
    pos = token.start_pos or 0
    if text.startswith("/*", pos):
        return pos
    if token.value == "*" and pos > 0 and text.startswith("/*", pos - 1):
        return pos - 1
    return None


def literal(node: Tree, source: str) -> Any:
    """The value of a ``true`` / ``false`` / ``string`` / number literal node (JSON spelling);
    a number beyond the limits of docs/language.md raises LarkErrors located at it."""
    if node.data == "true":
        return True
    if node.data == "false":
        return False
    text = str(node.children[0])
    try:
        return json.loads(text) if node.data == "string" else number_value(text)
    except (LimitError, json.JSONDecodeError) as e:
        line, col = node_loc(node)
        message = str(e) if isinstance(e, LimitError) else f"invalid string {text}: {e.msg}"
        raise LarkErrors(Diagnostic(source, line, col, message)) from None


def check_depth(tree: Tree, source: str, limit: int, what: str) -> None:
    """Raise LarkErrors at the first node of ``tree`` nested more than ``limit`` levels deep
    (measured without recursion), before code that walks the tree recursively meets it."""
    stack: list[tuple[Any, int]] = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if not isinstance(node, Tree):
            continue
        if depth > limit:
            line, col = node_loc(node)
            raise LarkErrors(Diagnostic(source, line, col, f"{what} nested more than {limit} "
                                        "levels deep (each operator of a chain counts one "
                                        "level; see Limits in docs/language.md)"))
        stack.extend((c, depth + 1) for c in node.children)


# ---------------------------------------------------------------- error recovery

_SHIFTING: dict[tuple[int, frozenset[str], bool], frozenset[Any]] = {}


def shifting_states(states: Mapping[Any, Mapping[str, Any]], terminals: frozenset[str],
                    ending: bool = False) -> frozenset[Any]:
    """The LALR states that shift every one of ``terminals`` (and, if ``ending``, can also
    take the end of the input): between statements, when those are the words a statement
    starts with."""
    key = (id(states), terminals, ending)
    if key not in _SHIFTING:
        _SHIFTING[key] = frozenset(
            state for state, actions in states.items()
            if all(actions.get(t, (None,))[0] is Shift for t in terminals)
            and (not ending or "$END" in actions))
    return _SHIFTING[key]


def cut_to(parser_state: Any, top: frozenset[Any]) -> bool:
    """Drop what the parser holds of the statement under way: pop its stacks back to the
    nearest state in ``top``. False if there is none."""
    stack = parser_state.state_stack
    for depth in range(len(stack) - 1, -1, -1):
        if stack[depth] in top:
            del stack[depth + 1 :]
            del parser_state.value_stack[depth:]
            return True
    return False


class StatementRecovery:
    """Lark ``on_error`` handler for a grammar of statements: record the error, drop the
    statement under way and go on reading at the next statement.

    ``starters`` are terminals only a statement can begin with; the parser's stacks are cut
    back to the last state between statements (one that shifts every starter and can end the
    input), and reading resumes at the error token if it is a starter, else where
    ``resume(text, pos)`` says (after the next ``;``, at the next line that begins a statement
    …). At most MAX_ERRORS errors are reported.
    """

    def __init__(self, text: str, source: str, shown: Mapping[str, str],
                 starters: Collection[str], resume: Callable[[str, int], int]) -> None:
        self.text = text
        self.source = source
        self.shown = shown
        self.starters = frozenset(starters)
        self.resume = resume
        self.errors: list[Diagnostic] = []
        self._lines: list[int] | None = None

    def __call__(self, exc: UnexpectedInput) -> bool:
        self.errors.append(describe(exc, self.text, self.source, self.shown))
        if len(self.errors) >= MAX_ERRORS:
            self.errors.append(too_many_errors(self.errors[-1]))
            return False
        ip = exc.interactive_parser
        state = ip.parser_state
        if not cut_to(state, shifting_states(state.parse_conf.states, self.starters, True)):
            return False
        token = getattr(exc, "token", None)
        if isinstance(exc, UnexpectedToken) and token is not None and token.type == "$END":
            return True  # the statement under way is dropped; the input ends here
        if isinstance(exc, UnexpectedCharacters):
            target = self.resume(self.text, exc.pos_in_stream + 1)
        elif token is not None and token.type in self.starters:
            target = token.start_pos or 0  # a new statement begins at the error
        else:
            target = self.resume(self.text, token.end_pos if token is not None else len(self.text))
        self._move(ip.lexer_thread.state.line_ctr, min(target, len(self.text)))
        return True

    def _move(self, counter: Any, pos: int) -> None:
        """Set Lark's line counter to ``pos`` (its line and column too)."""
        if self._lines is None:
            self._lines = [m.start() for m in re.finditer("\n", self.text)]
        newlines = bisect.bisect_left(self._lines, pos)
        start = self._lines[newlines - 1] + 1 if newlines else 0
        counter.char_pos = pos
        counter.line = newlines + 1
        counter.line_start_pos = start
        counter.column = pos - start + 1


_STOPPED = f"stopped after {MAX_ERRORS} errors: "


def too_many_errors(last: Diagnostic) -> Diagnostic:
    """The note that ends the list once MAX_ERRORS errors were reported (just after the last
    one, so that it sorts after it)."""
    return Diagnostic(last.file, last.line, last.col + 1, _STOPPED + "the rest of the file is "
                      "not read (see Limits in docs/language.md)")


def capped(errors: Iterable[Diagnostic]) -> list[Diagnostic]:
    """``errors`` in file order, the first MAX_ERRORS of them and the note that there were
    more (the parser stops at that many; converting the tree may find more)."""
    note = None
    found = []
    for d in errors:
        if d.message.startswith(_STOPPED):
            note = d
        else:
            found.append(d)
    found = sort_diagnostics(found)
    if len(found) > MAX_ERRORS or note is not None:
        found = found[:MAX_ERRORS]
        found.append(too_many_errors(found[-1]) if found else note)
    return found


def _expected(exc: UnexpectedInput) -> set[str]:
    ip = getattr(exc, "interactive_parser", None)
    if ip is not None:
        return {t for t in ip.accepts() if t != "$END"} or set(getattr(exc, "expected", ()))
    return set(getattr(exc, "expected", ()) or ())


def _end(text: str) -> tuple[int, int]:
    lines = text.split("\n")
    return len(lines), len(lines[-1]) + 1
