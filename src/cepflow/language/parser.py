"""Parse cepflow pattern files (VEPL syntax plus cepflow extensions) into ``ast`` nodes.

The grammar lives in ``grammar.lark`` and is run by Lark's LALR(1) parser with the contextual
lexer. This module maps the parse tree onto :mod:`cepflow.language.ast` and reports errors as
located :class:`~cepflow.language.diagnostics.Diagnostic` objects.

Operator precedence and associativity
-------------------------------------
* Unary operators bind tighter than binary ones. ``NOT`` applies to the following primary
  including its multiplicity and window: ``NOT A{2}[10]`` is ``Not(Window(Mult(A, 2), 10))``.
  On one primary the multiplicity is applied before the window.
* A chain with one binary operator kind is associated as in 000 Def. 10: ``->`` to the right
  (``a -> b -> c`` is ``Fol(a, Fol(b, c))``), ``OR`` and ``AND`` to the left
  (``a OR b OR c`` is ``Or(Or(a, b), c)``).
* A chain mixing binary operators without parentheses (``a -> b OR c``) is an error located at
  the first operator that differs ("mixed operators '->' and 'OR' need parentheses"); it is
  never associated silently.
* Filter conditions use the usual order: ``or`` < ``and`` < ``not`` < comparisons (which do
  not chain) < ``+ -`` < ``* / %`` < unary minus. A minus written directly before a number
  literal is folded into the constant (``-1`` is ``Const(-1)``, ``-(1)`` stays ``Unary``).

Error recovery
--------------
All syntax errors of a file are reported at once: after an error the parser stack is cut
back to the enclosing top-level position and tokens are skipped until the next declaration
keyword (``atomicEvent``, ``complexEvent``, ``rule`` ...), where parsing resumes. Complete
declarations are still converted, so semantic errors found while building the AST (mixed
operators, duplicate options) are reported together with the syntax errors.

Warnings found while parsing (ignored ``check`` blocks of atomic events) are appended to the
``warnings`` list given to :func:`parse` and are also kept with the module, where
:func:`parse_warnings` finds them (the checker does not repeat them).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from lark import Lark, Token, Transformer_NonRecursive, Tree, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken
from lark.lexer import PatternStr

from cepflow.language.ast import (
    DATA_WINDOW_KINDS,
    And,
    Atom,
    AtomicEventDecl,
    Binary,
    Call,
    ComplexEventDecl,
    Const,
    DataWindow,
    Decl,
    Every,
    Expr,
    Fol,
    Interval,
    Loc,
    Module,
    Mult,
    Name,
    Not,
    Or,
    Param,
    Pattern,
    PatternRef,
    QueryEventDecl,
    RuleDecl,
    Trait,
    Unary,
    Until,
    Window,
    WindowDecl,
)
from cepflow.language.diagnostics import Diagnostic, PatternSyntaxError, sort_diagnostics
from cepflow.language.limits import (
    MAX_ERRORS,
    MAX_INT,
    LimitError,
    duration_ms,
    nesting_errors,
    number_value,
    size_error,
    too_deep,
    whole_number,
)
from cepflow.language.parser_cache import lalr_parser
from cepflow.language.source import read_source
from cepflow.language.syntax import (
    capped,
    comment_start,
    cut_to,
    expected_text,
    shifting_states,
    show_terminal,
    terminal_names,
    too_many_errors,
)
from cepflow.language.tags import index_name

__all__ = [
    "DECL_KEYWORDS",
    "RESERVED_WORDS",
    "TIME_UNITS",
    "keywords",
    "parse",
    "parse_expr",
    "parse_file",
    "parse_pattern",
    "parse_warnings",
]

T = TypeVar("T")

GRAMMAR_PATH = Path(__file__).with_name("grammar.lark")

#: Reserved words that start a declaration (grammar terminal -> text); error recovery resumes
#: at the next one.
_DECL_TERMINALS = {
    "_TRAIT": "trait",
    "_ATOMIC_EVENT": "atomicEvent",
    "_OLD_ATOMIC_EVENT": "AtomicEvent",
    "_QUERY_EVENT": "queryEvent",
    "_IQ_PATTERN_EVENT": "IQPatternEvent",
    "_QUERY_RESULT_CHANGE_EVENT": "QueryResultChangeEvent",
    "_COMPLEX_EVENT": "complexEvent",
    "_OLD_COMPLEX_EVENT": "ComplexEvent",
    "_RULE": "rule",
    "_OLD_RULE": "Rule",
}
DECL_KEYWORDS = frozenset(_DECL_TERMINALS.values())

#: Words that are never names unless escaped with ``^`` (the lexer matches them everywhere).
RESERVED_WORDS = DECL_KEYWORDS | {"OR", "AND", "NOT"}

#: Older spellings hidden from "expected ..." lists when the modern keyword is listed too.
_LEGACY = {
    "'AtomicEvent'": "'atomicEvent'",
    "'ComplexEvent'": "'complexEvent'",
    "'IQPatternEvent'": "'queryEvent'",
    "'QueryResultChangeEvent'": "'queryEvent'",
    "'Rule'": "'rule'",
    "'uses'": "'import'",
    "'uses-patterns'": "'import'",
    "'import-queries'": "'import'",
    "'actionHandler'": "'action'",
}

#: Milliseconds per time unit accepted after a window length (``[3 s]``, ``within 2 min``).
TIME_UNITS: dict[str, int] = {
    **dict.fromkeys(("ms", "millis", "millisecond", "milliseconds"), 1),
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), 1000),
    **dict.fromkeys(("min", "minute", "minutes"), 60_000),
    **dict.fromkeys(("h", "hour", "hours"), 3_600_000),
    **dict.fromkeys(("d", "day", "days"), 86_400_000),
}

_ID_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

#: how messages show the terminals syntax.terminal_names cannot name itself
_TERMINAL_NAMES = {
    "OPAQUE": "'{ ... }' block",
    "UNIT": "time unit",
    "HOLDS_FOR": "'holds-for'",
    "INDEXED": "indexed tag (a[0].field)",
}

_BLOCK_ERROR = (
    "cannot read this block: unbalanced braces, an unterminated string or comment, "
    "or nesting deeper than 10 levels"
)
#: lexical errors after which the rest of the file cannot be read sensibly (recovery stops)
_SWALLOWING = frozenset({_BLOCK_ERROR, "unterminated comment"})


class _IdentifiersEverywhere:
    """Lark post-lexer that lets the contextual lexer match some terminals in every state.

    * identifiers: a keyword is then only read as a whole word (``traitX`` is one identifier,
      never ``trait`` followed by ``X``);
    * declaration keywords and ``OR``/``AND``/``NOT``: reserved words as in VEPL, so a missing
      ``)`` before ``rule`` is reported at ``rule`` and recovery can resume there;
    * ``->``: never split into ``-`` and ``>`` after a condition.

    Where the grammar cannot take such a token the parser reports it as unexpected.
    """

    always_accept = ("ID", "ARROW", "OR", "AND", "_NOT", *_DECL_TERMINALS)

    def process(self, stream: Iterator[Token]) -> Iterator[Token]:
        """Pass tokens through unchanged."""
        return stream


@functools.cache
def _lark() -> Lark:
    """The compiled LALR parser (built once per process, on first use)."""
    return lalr_parser(
        GRAMMAR_PATH.read_text(encoding="utf-8"),
        "vepl",
        lexer="contextual",
        start=["module", "pattern_only", "expr_only"],
        propagate_positions=True,
        maybe_placeholders=False,
        postlex=_IdentifiersEverywhere(),
    )


@functools.cache
def _keyword_table() -> tuple[frozenset[str], frozenset[str], dict[str, str]]:
    """(word keywords, terminal names of declaration keywords, terminal -> display text)."""
    words: set[str] = set()
    display = terminal_names(_lark(), _TERMINAL_NAMES)
    for term in _lark().terminals:
        if isinstance(term.pattern, PatternStr) and _ID_RE.fullmatch(term.pattern.value):
            words.add(term.pattern.value)
    words.update(("holds_for", *TIME_UNITS))
    return frozenset(words), frozenset(_DECL_TERMINALS), display


def keywords() -> frozenset[str]:
    """Every word the grammar uses as a keyword somewhere (reserved or contextual)."""
    return _keyword_table()[0]


# ---------------------------------------------------------------- public API


def parse(
    text: str, source: str = "<string>", *, warnings: list[Diagnostic] | None = None
) -> Module:
    """Parse a whole pattern file; raise PatternSyntaxError listing every syntax error found."""
    builder = _ToAst(source)
    tree, errors = _run(text, source, "module")
    module = builder.transform(tree) if tree is not None else None
    errors.extend(builder.errors)
    if module is not None:
        errors.extend(nesting_errors(module.decls, source))
    if errors or module is None:
        raise PatternSyntaxError(capped(errors))
    module = Module(
        decls=module.decls,
        package=module.package,
        imports=module.imports,
        context=module.context,
        source=source,
    )
    found = tuple(sort_diagnostics(builder.warnings))
    object.__setattr__(module, "_parse_warnings", found)
    if warnings is not None:
        warnings.extend(found)
    return module


def parse_file(path: str | Path, *, warnings: list[Diagnostic] | None = None) -> Module:
    """Read and parse a pattern file (UTF-8, see language/source.py); diagnostics name the
    file as given."""
    return parse(read_source(path), str(path), warnings=warnings)


def parse_pattern(text: str, source: str = "<string>") -> Pattern:
    """Parse a bare pattern expression such as ``A(x) -> B(x)[5 s]``."""
    return _parse_fragment(text, source, "pattern_only")


def parse_expr(text: str, source: str = "<string>") -> Expr:
    """Parse a bare filter condition such as ``speed > 0 and name == "x"``."""
    return _parse_fragment(text, source, "expr_only")


def parse_warnings(module: Module) -> tuple[Diagnostic, ...]:
    """Warnings the parser recorded for ``module`` (empty for modules built in Python)."""
    return getattr(module, "_parse_warnings", ())


def _parse_fragment(text: str, source: str, start: str) -> Any:
    builder = _ToAst(source)
    tree, errors = _run(text, source, start)
    result = builder.transform(tree) if tree is not None else None
    errors.extend(builder.errors)
    if result is not None:
        deep = too_deep([result]) if start == "pattern_only" else too_deep([], [result])
        if deep is not None:
            line, col = deep[0] or (1, 1)
            errors.append(Diagnostic(source, line, col, deep[1]))
    if errors or result is None:
        raise PatternSyntaxError(capped(errors))
    return result


# ---------------------------------------------------------------- parsing with recovery


def _run(text: str, source: str, start: str) -> tuple[Tree | None, list[Diagnostic]]:
    """Parse ``text`` from ``start``; return the tree (None if unusable) and syntax errors."""
    too_large = size_error(len(text), source)
    if too_large is not None:
        return None, [too_large]
    recovery = _Recovery(text, source, recover=start == "module")
    try:
        tree = _lark().parse(text, start=start, on_error=recovery)
    except UnexpectedInput as exc:
        if not recovery.errors:  # raised before on_error could record it
            recovery.errors.append(recovery.describe(exc))
        return None, recovery.errors
    return tree, recovery.errors


class _Recovery:
    """Lark ``on_error`` handler: record the error, then skip to the next declaration."""

    def __init__(self, text: str, source: str, recover: bool) -> None:
        self.text = text
        self.source = source
        self.recover = recover
        self.errors: list[Diagnostic] = []
        self._skip_depth: int | None = None
        self._skip_top: Any = None

    def __call__(self, exc: UnexpectedInput) -> bool:
        state = exc.interactive_parser.parser_state
        if self._skipping(state):
            swallowing = self._swallowing(exc)
            if swallowing is None:
                return True
            self.errors.append(swallowing)
            return False
        self.errors.append(self.describe(exc))
        if len(self.errors) >= MAX_ERRORS:
            self.errors.append(too_many_errors(self.errors[-1]))
            return False
        if not self.recover or self.errors[-1].message in _SWALLOWING:
            return False  # (an unterminated comment or block leaves nothing to read after it)
        _, decl_terms, _ = _keyword_table()
        if not cut_to(state, shifting_states(state.parse_conf.states, decl_terms)):
            return False
        token = getattr(exc, "token", None)
        if (
            isinstance(exc, UnexpectedToken)
            and token is not None
            and token.type in decl_terms
            and self._starts_line(token)
        ):
            state.feed_token(token)  # a declaration keyword: resume right here
            return True
        self._skip_depth = len(state.state_stack)
        self._skip_top = state.value_stack[-1] if state.value_stack else None
        return True

    def _swallowing(self, exc: UnexpectedInput) -> Diagnostic | None:
        """While skipping: the error for an unterminated comment or block the skipped text
        runs into (the token is then what the lexer made of its first character). Reading
        stops there: the lexer would scan the rest of the file again at each later one."""
        token = getattr(exc, "token", None)
        if not isinstance(exc, UnexpectedToken) or token is None or token.type == "$END":
            return None
        start = comment_start(self.text, token)
        if start is not None:
            return self._diag(token.line, token.column - (token.start_pos - start),
                              "unterminated comment")
        if token.type == "LBRACE":  # (a block that can be read is one OPAQUE token)
            return self._diag(token.line, token.column, _BLOCK_ERROR)
        return None

    def _starts_line(self, token: Token) -> bool:
        """True if only whitespace precedes ``token`` on its line."""
        start = token.start_pos or 0
        line_start = self.text.rfind("\n", 0, start) + 1
        return not self.text[line_start:start].strip()

    def _skipping(self, state: Any) -> bool:
        """True while no token has been accepted since the stack was cut back."""
        if self._skip_depth is None:
            return False
        top = state.value_stack[-1] if state.value_stack else None
        if len(state.state_stack) == self._skip_depth and top is self._skip_top:
            return True
        self._skip_depth = None
        return False

    def describe(self, exc: UnexpectedInput) -> Diagnostic:
        """Turn a Lark exception into a located, readable diagnostic."""
        if isinstance(exc, UnexpectedToken):
            token = exc.token
            expected = self._expected(exc)
            shown = self._show(expected)
            if token.type == "$END":
                line, col = self._end_position(token)
                return self._diag(line, col, f"unexpected end of input, expected {shown}")
            if token.type == "LBRACE" and "OPAQUE" in expected:
                return self._diag(token.line, token.column, _BLOCK_ERROR)
            start = comment_start(self.text, token)
            if start is not None:
                return self._diag(token.line, token.column - (token.start_pos - start),
                                  "unterminated comment")
            what = self._describe_token(token)
            _, decl_terms, _ = _keyword_table()
            reserved = token.type in decl_terms or token.type in ("OR", "AND", "_NOT")
            if reserved and "ID" in expected and not self._starts_line(token):
                what += f" (a reserved word; write ^{token.value} to use it as a name)"
            return self._diag(token.line, token.column, f"unexpected {what}, expected {shown}")
        if isinstance(exc, UnexpectedCharacters):
            char = self.text[exc.pos_in_stream] if exc.pos_in_stream < len(self.text) else ""
            if char in "\"'":
                message = "unterminated string"
            elif self.text.startswith("/*", exc.pos_in_stream):
                message = "unterminated comment"
            elif char == "{":
                message = _BLOCK_ERROR
            else:
                message = f"unexpected character {char!r}"
            return self._diag(exc.line, exc.column, message)
        line = getattr(exc, "line", 1) or 1
        col = getattr(exc, "column", 1) or 1
        return self._diag(line, col, str(exc).splitlines()[0])

    @staticmethod
    def _expected(exc: UnexpectedToken) -> set[str]:
        """Terminals the parser can really take here (LALR tables over-approximate)."""
        ip = getattr(exc, "interactive_parser", None)
        if ip is not None:
            return set(ip.accepts())
        return set(exc.expected or ())

    @staticmethod
    def _show(expected: set[str]) -> str:
        _, _, display = _keyword_table()
        shown = {show_terminal(t, display) for t in expected}
        return expected_text((t for t in expected
                              if _LEGACY.get(show_terminal(t, display)) not in shown), display)

    def _describe_token(self, token: Token) -> str:
        if token.type == "ID":
            return f"identifier '{token.value}'"
        if token.type == "NUMBER":
            return f"number {token.value}"
        if token.type == "STRING":
            return f"string {token.value}"
        if token.type == "OPAQUE":
            return "'{ ... }' block"
        return f"'{token.value}'"

    def _end_position(self, token: Token) -> tuple[int, int]:
        end_line = getattr(token, "end_line", None)
        end_col = getattr(token, "end_column", None)
        if end_line is not None and end_col is not None and token.end_pos:
            return end_line, end_col
        lines = self.text.split("\n")
        return len(lines), len(lines[-1]) + 1

    def _diag(self, line: int, col: int, message: str) -> Diagnostic:
        return Diagnostic(self.source, int(line), int(col), message)


# ---------------------------------------------------------------- tree -> AST


class _RangeMult(Mult):
    """``P{m..n}`` while parsing: only the left operand of UNTIL may be one (its ``count`` is
    the ``(low, high)`` pair); anywhere else it is reported."""


@dataclass(frozen=True)
class _Part:
    """A tagged fragment passed from a sub-rule to its parent (never left in the AST)."""

    tag: str
    value: Any
    loc: Loc = None
    extra: Any = None


def _loc(token: Token | Any) -> Loc:
    return (token.line, token.column)


def _meta_loc(meta: Any) -> Loc:
    return (meta.line, meta.column) if not getattr(meta, "empty", True) else None


def _ident(token: Token | str) -> str:
    """An identifier without its ``^`` keyword escape."""
    text = str(token)
    return text[1:] if text.startswith("^") else text


def to_milliseconds(number: str, unit: str | None) -> float:
    """Convert a written window length (``1.5`` and ``s``) to milliseconds without drift;
    raise LimitError beyond MAX_DURATION_MS."""
    return duration_ms(number, TIME_UNITS[unit] if unit else 1)


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "b": "\b", "f": "\f"}


def decode_string(literal: str) -> str:
    """Value of a quoted string literal: ``\\n \\t \\r \\0 \\b \\f \\uXXXX``; ``\\x`` is ``x``."""
    body = literal[1:-1]
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch != "\\" or i + 1 >= len(body):
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", body[i + 2 : i + 6]):
            out.append(chr(int(body[i + 2 : i + 6], 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)


class _ToAst(Transformer_NonRecursive):
    """Build ``ast`` nodes from the Lark tree, collecting semantic syntax errors on the way."""

    def __init__(self, source: str) -> None:
        super().__init__()
        self.source = source
        self.errors: list[Diagnostic] = []
        self.warnings: list[Diagnostic] = []
        # number literals written directly (not parenthesized), by identity, kept alive
        self._literals: dict[int, Const] = {}

    def _error(self, loc: Loc, message: str, severity: str = "error") -> None:
        line, col = loc or (1, 1)
        diag = Diagnostic(self.source, line, col, message, severity)  # type: ignore[arg-type]
        (self.errors if severity == "error" else self.warnings).append(diag)

    def _checked(self, token: Token, convert: Callable[[], T], default: T) -> T:
        """``convert()``, or ``default`` with a located error if a literal passes a limit."""
        try:
            return convert()
        except LimitError as e:
            self._error(_loc(token), str(e))
            return default

    def _duration(self, number: Token, unit: Token | None = None) -> float:
        """A written duration in milliseconds (a located error beyond the limit)."""
        return self._checked(number, lambda: to_milliseconds(
            str(number), None if unit is None else str(unit)), 1.0)

    # ------------------------------------------------------------ names and header

    def qname(self, children: list[Token]) -> str:
        return "".join(_ident(t) if t.type == "ID" else str(t) for t in children)

    qname_wild = qname

    def ctx_name(self, children: list[Token]) -> str:
        return str(children[0])

    def package_decl(self, children: list[Any]) -> _Part:
        return _Part("package", children[-1])

    def import_decl(self, children: list[Any]) -> _Part:
        return _Part("import", children[-1])

    def module_context(self, children: list[Any]) -> _Part:
        return _Part("context", children[-1])

    def module(self, children: list[Any]) -> Module:
        package: str | None = None
        imports: list[str] = []
        context: Any = None
        decls: list[Decl] = []
        for child in children:
            if isinstance(child, _Part):
                if child.tag == "package":
                    package = child.value
                elif child.tag == "import":
                    imports.append(child.value)
                else:
                    context = child.value
            else:
                decls.append(child)
        return Module(tuple(decls), package, tuple(imports), context)

    def pattern_only(self, children: list[Any]) -> Pattern:
        return children[0]

    def expr_only(self, children: list[Any]) -> Expr:
        return children[0]

    # ------------------------------------------------------------ parameters

    def type_ref(self, children: list[Any]) -> str:
        parts: list[str] = []
        for child in children:
            parts.append(", " if isinstance(child, Token) and child.value == "," else str(child))
        return "".join(parts)

    def param(self, children: list[Any]) -> Param:
        name, type_ = children
        return Param(_ident(name), type_, loc=_loc(name))

    def params(self, children: list[Param]) -> _Part:
        return _Part("params", tuple(children))

    def trait_param(self, children: list[Any]) -> Param:
        return children[0]

    def call_args(self, children: list[Token]) -> _Part:
        return _Part("args", tuple(_ident(t) for t in children))

    def ref_arg(self, children: list[Any]) -> str:
        return _ident(children[0])

    def ref_args(self, children: list[str]) -> _Part:
        return _Part("args", tuple(children))

    def pattern_ref(self, children: list[Any]) -> PatternRef:
        name = children[0]
        args = children[1].value if len(children) > 1 else None
        return PatternRef(_ident(name), args, loc=_loc(name))

    # ------------------------------------------------------------ declarations

    def trait_decl(self, children: list[Any]) -> Trait:
        name, *params = children
        return Trait(_ident(name), tuple(params), loc=_loc(name))

    def with_traits(self, children: list[Token]) -> _Part:
        return _Part("traits", tuple(_ident(t) for t in children))

    def check_block(self, children: list[Token]) -> _Part:
        loc = _loc(children[0]) if children else None
        return _Part("check", bool(children), loc)

    def atomic_decl(self, children: list[Any]) -> AtomicEventDecl:
        name = children[0]
        params: tuple[Param, ...] = ()
        traits: tuple[str, ...] = ()
        for part in children[1:]:
            if part.tag == "params":
                params = part.value
            elif part.tag == "traits":
                traits = part.value
            elif part.tag == "check" and part.value:
                self._error(
                    part.loc,
                    f"check block of atomic event '{_ident(name)}' is ignored "
                    "(Xbase code is not executed); filter with `where` in patterns instead",
                    "warning",
                )
        return AtomicEventDecl(_ident(name), params, traits, loc=_loc(name))

    def change(self, children: list[Token]) -> _Part:
        return _Part("change", str(children[0]))

    def old_change(self, children: list[Token]) -> _Part:
        return _Part("change", "found" if str(children[0]) == "NEW_MATCH_FOUND" else "lost")

    def query_decl(self, children: list[Any]) -> QueryEventDecl:
        name = children[0]
        params: tuple[Param, ...] = ()
        query = ""
        args = None
        change = "found"
        for part in children[1:]:
            if isinstance(part, str):
                query = part
            elif part.tag == "params":
                params = part.value
            elif part.tag == "args":
                args = part.value
            elif part.tag == "change":
                change = part.value
        return QueryEventDecl(_ident(name), params, query, args, change, loc=_loc(name))

    old_query_decl = query_decl

    @v_args(meta=True)
    def ce_context(self, meta: Any, children: list[Any]) -> _Part:
        return _Part("context", children[0], _meta_loc(meta))

    def ce_partition(self, children: list[Token]) -> _Part:
        return _Part("partition", tuple(_ident(t) for t in children), _loc(children[0]))

    def select_item(self, children: list[Any]) -> tuple[str, Expr]:
        return (_ident(children[1]), children[0])

    @v_args(meta=True)
    def ce_select(self, meta: Any, children: list[Any]) -> _Part:
        return _Part("select", tuple(children), _meta_loc(meta))

    def complex_decl(self, children: list[Any]) -> ComplexEventDecl:
        name = children[0]
        params: tuple[Param, ...] = ()
        body: Pattern | None = None
        context = None
        partition: tuple[str, ...] = ()
        select = None
        priority = 0
        seen: set[str] = set()
        for part in children[1:]:
            if not isinstance(part, _Part):
                body = part
            elif part.tag == "params":
                params = part.value
            else:
                if part.tag in seen:
                    what = {"context": "context", "select": "select",
                            "priority": "priority"}.get(part.tag, "partition by")
                    self._error(
                        part.loc or _loc(name),
                        f"'{what}' given twice for complex event '{_ident(name)}'",
                    )
                seen.add(part.tag)
                if part.tag == "context":
                    context = part.value
                elif part.tag == "select":
                    select = part.value
                elif part.tag == "priority":
                    priority = part.value
                else:
                    partition = part.value
        assert body is not None
        return ComplexEventDecl(_ident(name), params, body, context, partition, select,
                                loc=_loc(name), priority=priority)

    old_complex_decl = complex_decl

    # ------------------------------------------------------------ data-window statements

    def win_alias(self, children: list[Token]) -> _Part:
        return _Part("alias", _ident(children[0]))

    def win_source(self, children: list[Any]) -> tuple[Atom, tuple[str, ...]]:
        """A statement's input: an atom, and the further types of a union (``A | B``)."""
        types = [c for c in children if isinstance(c, Token)]
        parts = {p.tag: p.value for p in children if isinstance(p, _Part)}
        first = types[0]
        atom = Atom(_ident(first), parts.get("args"), parts.get("where"), parts.get("alias"),
                    loc=_loc(first))
        return atom, tuple(_ident(t) for t in types[1:])

    def window_decl(self, children: list[Any]) -> WindowDecl:
        name = children[0]
        parts: dict[str, Any] = {}
        for part in children[1:]:
            if isinstance(part, tuple) and part and isinstance(part[0], Atom):
                parts["source"], parts["more"] = part
            elif part.tag == "params":
                self._error(_loc(name), f"'{_ident(name)}' is a window statement: its "
                            "parameters are its select items, not declared")
            else:
                parts[part.tag] = part.value
        return WindowDecl(_ident(name), parts["source"], parts["window"], parts["select"],
                          parts.get("group_by", ()), parts.get("having"), loc=_loc(name),
                          priority=parts.get("priority", 0),
                          more_inputs=parts.get("more", ()))

    def data_window(self, children: list[Token]) -> _Part:
        kind, number = children[0], children[1]
        unit = next((t for t in children[2:] if t.type == "UNIT"), None)
        per_group = any(t.type == "PER" for t in children)
        text = _ident(kind)
        if text not in DATA_WINDOW_KINDS:
            self._error(_loc(kind), f"unknown data window '{text}' (one of "
                        f"{', '.join(DATA_WINDOW_KINDS)})")
            text = "time"
        if text.startswith("time"):
            size: float = self._duration(number, unit)
        else:
            if unit is not None:
                self._error(_loc(unit), f"a {text} window counts events: no time unit")
            count = self._checked(number, lambda: whole_number(str(number), f"a {text} "
                                  "window's length"), 1)
            if count is None or count <= 0:
                self._error(_loc(number), f"a {text} window needs a positive whole number "
                            f"of events, not {number}")
            size = count or 1
        return _Part("window", DataWindow(text, size, per_group, loc=_loc(kind)))  # type: ignore[arg-type]

    def win_item(self, children: list[Any]) -> tuple[str | None, Expr]:
        return (_ident(children[1]) if len(children) > 1 else None, children[0])

    def win_select(self, children: list[Any]) -> _Part:
        return _Part("select", tuple(children))

    def win_group(self, children: list[Any]) -> _Part:
        return _Part("group_by", tuple(children))

    def win_having(self, children: list[Any]) -> _Part:
        return _Part("having", children[0])

    @v_args(meta=True)
    def rule_priority(self, meta: Any, children: list[Token]) -> _Part:
        number = children[-1]
        negative = len(children) > 1
        value = self._checked(number, lambda: whole_number(str(number), "priority"), 0)
        if value is None:
            self._error(_loc(number), f"priority must be an integer, not {number}")
            value = 0
        return _Part("priority", -value if negative else value, _meta_loc(meta))

    win_priority = rule_priority  # a statement's `priority n`, as a rule's

    @v_args(meta=True)
    def rule_action(self, meta: Any, children: list[Any]) -> _Part:
        return _Part("action", children[-1], _meta_loc(meta))

    @v_args(meta=True)
    def rule_block(self, meta: Any, children: list[Token]) -> _Part:
        return _Part("block", str(children[-1]), _meta_loc(meta))

    def rule_decl(self, children: list[Any]) -> RuleDecl:
        name = children[0]
        refs = [c for c in children[1:] if isinstance(c, PatternRef)]
        items: dict[str, _Part] = {}
        for part in children[1:]:
            if not isinstance(part, _Part):
                continue
            key = "action" if part.tag in ("action", "block") else part.tag
            if key in items:
                tags = {items[key].tag, part.tag}
                if tags == {"action", "block"}:
                    message = "must not have both `action name` and an action block"
                else:
                    message = f"has more than one {'priority' if key == 'priority' else 'action'}"
                self._error(part.loc, f"rule '{_ident(name)}' {message}")
                continue
            items[key] = part
        action = items.get("action")
        priority = items["priority"].value if "priority" in items else 0
        return RuleDecl(
            _ident(name),
            tuple(refs),
            action=action.value if action is not None and action.tag == "action" else None,
            priority=priority,
            opaque_action=action.value if action is not None and action.tag == "block" else None,
            loc=_loc(name),
        )

    old_rule_decl = rule_decl

    # ------------------------------------------------------------ patterns

    def binop(self, children: list[Token]) -> Token:
        return children[0]

    def pattern(self, children: list[Any]) -> Pattern:
        operands = children[0::2]
        ops: list[Token] = children[1::2]
        for operand in operands:
            self._no_range(operand)
        if not ops:
            return operands[0]
        kind = str(ops[0])
        for op in ops[1:]:
            if str(op) != kind:
                self._error(_loc(op), f"mixed operators '{kind}' and '{op}' need parentheses")
                break
        if kind == "->":
            result = operands[-1]
            for i in range(len(ops) - 1, -1, -1):
                result = Fol(operands[i], result, loc=_loc(ops[i]))
            return result
        node = Or if kind == "OR" else And
        result = operands[0]
        for op, right in zip(ops, operands[1:], strict=True):
            result = node(result, right, loc=_loc(op))
        return result

    @v_args(meta=True)
    def not_primary(self, meta: Any, children: list[Any]) -> Not:
        self._no_range(children[0])
        return Not(children[0], loc=_meta_loc(meta))

    @v_args(meta=True)
    def until_primary(self, meta: Any, children: list[Any]) -> Until:
        left, _, until = children
        low = high = None
        if isinstance(left, Mult) and not isinstance(left, _RangeMult) and left.count != "*":
            low = 1 if left.count == "+" else left.count
            high = None if left.count == "+" else left.count
            left = left.pattern
        elif isinstance(left, Mult):
            if isinstance(left, _RangeMult):
                low, high = left.count  # type: ignore[misc]
            left = left.pattern
        self._no_range(until)
        return Until(left, until, low, high, loc=_meta_loc(meta))

    @v_args(meta=True)
    def interval_primary(self, meta: Any, children: list[Token]) -> Interval:
        numbers = [t for t in children if t.type in ("NUMBER", "UNIT")]
        return Interval(self._duration(*numbers), loc=_meta_loc(meta))

    def _no_range(self, p: Any) -> None:
        """A repeat range ``{m..n}`` means something only before UNTIL."""
        inner = p.pattern if isinstance(p, Window) else p
        if isinstance(inner, _RangeMult):
            self._error(inner.loc, "a repeat range {m..n} needs UNTIL after it "
                        "(A{2..4} UNTIL B); write {n} for exactly n")

    @v_args(meta=True)
    def every_primary(self, meta: Any, children: list[Any]) -> Every:
        keys = tuple(c for c in children[1:-1] if not isinstance(c, Token))
        expiry = None
        number = next((c for c in children[1:-1] if isinstance(c, Token)
                       and c.type == "NUMBER"), None)
        if number is not None:
            unit = next((c for c in children if isinstance(c, Token) and c.type == "UNIT"),
                        None)
            expiry = self._duration(number, unit)
        self._no_range(children[-1])
        return Every(children[-1], keys, expiry, loc=_meta_loc(meta))

    def normal_primary(self, children: list[Any]) -> Pattern:
        result = children[0]
        for part in children[1:]:
            if part.tag == "mult" and isinstance(part.value, tuple):
                result = _RangeMult(result, part.value, loc=part.loc)  # type: ignore[arg-type]
            elif part.tag == "mult":
                result = Mult(result, part.value, loc=part.loc)
            else:
                result = Window(result, part.value, part.extra, loc=part.loc)
        return result

    def atom(self, children: list[Any]) -> Atom:
        alias = None
        if len(children) > 1 and isinstance(children[1], Token):
            alias = _ident(children[0])
            children = children[1:]
        name = children[0]
        args = None
        where = None
        for part in children[1:]:
            if part.tag == "args":
                args = part.value
            else:
                where = part.value
        return Atom(_ident(name), args, where, alias, loc=_loc(name))

    def where_clause(self, children: list[Any]) -> _Part:
        return _Part("where", children[0])

    def mult(self, children: list[Token]) -> _Part:
        if any(t.type == "DOTDOT" for t in children):
            sep = next(i for i, t in enumerate(children) if t.type == "DOTDOT")
            low = self._whole(children[sep - 1]) if children[sep - 1].type == "NUMBER" else None
            high = (self._whole(children[sep + 1]) if children[sep + 1].type == "NUMBER"
                    else None)
            if low is None and high is None:
                self._error(_loc(children[sep]), "a repeat range needs a low or a high bound")
            elif low is not None and high is not None and high < low:
                self._error(_loc(children[sep]), f"repeat range {{{low}..{high}}}: the high "
                            "bound is below the low bound")
            return _Part("mult", (low, high), _loc(children[0]))
        brace, count, _ = children
        value: Any = str(count)
        if count.type == "NUMBER":
            value = self._checked(count, lambda: whole_number(str(count), "multiplicity"), 1)
            if value is None:
                self._error(_loc(count), f"multiplicity must be a whole number, not {count}")
                value = 1
        return _Part("mult", value, _loc(brace))

    def _whole(self, t: Token) -> int:
        value = self._checked(t, lambda: whole_number(str(t), "a repeat bound"), MAX_INT)
        if value is None:
            self._error(_loc(t), f"a repeat bound must be a whole number, not {t}")
            return 0
        return value

    def _window(self, meta: Any, children: list[Token], kind: str) -> _Part:
        numbers = [t for t in children if t.type in ("NUMBER", "UNIT")]
        return _Part("window", self._duration(*numbers), _meta_loc(meta), kind)

    @v_args(meta=True)
    def bracket_window(self, meta: Any, children: list[Token]) -> _Part:
        return self._window(meta, children, "within")

    @v_args(meta=True)
    def within_window(self, meta: Any, children: list[Token]) -> _Part:
        return self._window(meta, children, "within")

    @v_args(meta=True)
    def holds_window(self, meta: Any, children: list[Token]) -> _Part:
        return self._window(meta, children, "holds_for")

    # ------------------------------------------------------------ conditions

    def or_kw(self, children: list[Token]) -> Token:
        return children[0]

    and_kw = not_kw = cmp_op = add_op = mul_op = or_kw

    def binary(self, children: list[Any]) -> Binary:
        left, op, right = children
        name = {"||": "or", "&&": "and"}.get(str(op), str(op))
        return Binary(name, left, right, loc=_loc(op))

    def unary(self, children: list[Any]) -> Expr:
        op, operand = children
        if str(op) == "-":
            if self._literals.get(id(operand)) is operand:
                return Const(-operand.value, loc=_loc(op))
            return Unary("-", operand, loc=_loc(op))
        return Unary("not", operand, loc=_loc(op))

    def number(self, children: list[Token]) -> Const:
        text = str(children[0])
        const = Const(self._checked(children[0], lambda: number_value(text), 0),
                      loc=_loc(children[0]))
        self._literals[id(const)] = const
        return const

    def string(self, children: list[Token]) -> Const:
        return Const(decode_string(str(children[0])), loc=_loc(children[0]))

    @v_args(meta=True)
    def true(self, meta: Any, children: list[Any]) -> Const:
        return Const(True, loc=_meta_loc(meta))

    @v_args(meta=True)
    def false(self, meta: Any, children: list[Any]) -> Const:
        return Const(False, loc=_meta_loc(meta))

    @v_args(meta=True)
    def null(self, meta: Any, children: list[Any]) -> Const:
        return Const(None, loc=_meta_loc(meta))

    def dotted(self, children: list[Any]) -> list[Token]:
        parts: list[Token] = []
        for child in children:
            if isinstance(child, list):
                parts.extend(child)
            elif child.type == "ID":
                parts.append(child)
        return parts

    def name(self, children: list[Any]) -> Name:
        parts = children[0]
        return Name(_ident(parts[0]), tuple(_ident(p) for p in parts[1:]), loc=_loc(parts[0]))

    def indexed_name(self, children: list[Token]) -> Name:
        """``a[0].id``: Esper's indexed tag (cepflow.language.tags)."""
        tok = children[0]
        head, *path = str(tok).split(".")
        tag, k = head[:-1].split("[")
        index = self._checked(tok, lambda: whole_number(k, "an index"), 0) or 0
        return Name(index_name(_ident(tag), index), tuple(_ident(p) for p in path),
                    loc=_loc(tok))

    def call(self, children: list[Any]) -> Expr:
        parts, *args = children
        func = ".".join(_ident(p) for p in parts)
        if func == "current_timestamp" and not args:  # Esper's: the match's / row's time
            return Name("@ts", loc=_loc(parts[0]))
        return Call(func, tuple(args), loc=_loc(parts[0]))

    def paren(self, children: list[Any]) -> Expr:
        inner = children[0]
        self._literals.pop(id(inner), None)
        return inner
