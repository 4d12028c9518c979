"""Reading Esper EPL: the statement forms of seeds 003 and 004 become cepflow's AST.

Supported (docs/esper.md): ``create schema Name(field type, ...)``; ``@Name('...')``;
``insert into X [select expr as name, ... | select *] from pattern [ ... ]`` with filters
``a = Type(condition)``, ``->``, ``and``, ``or``, ``every``, ``every-distinct(keys)``,
``[n]`` repetition and the guard ``where timer:within(duration)``. Each statement becomes the
declaration a cepflow pattern would give (context ``esper``), so both syntaxes run on the same
automata. Anything else — data windows (``.win:…``/``#…``), ``group by``, ``not`` in patterns,
other guards — is reported with file, line, column and the construct, never misread.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from lark import Lark, Token, Transformer, v_args

from cepflow.compiler.esper import guard_windows
from cepflow.language import ast
from cepflow.language.diagnostics import Diagnostic, PatternSyntaxError
from cepflow.language.parser import decode_string, to_milliseconds
from cepflow.language.syntax import LarkErrors, parse_located

_TYPES = {"string": "String", "int": "Integer", "integer": "Integer", "long": "Long",
          "double": "Double", "float": "Double", "boolean": "Boolean", "bool": "Boolean"}
_NAMES = {"NAME": "name", "NUMBER": "number", "STRING": "string", "CMP": "comparison",
          "UNIT": "time unit", "_TRUE": "true", "_FALSE": "false", "_NULL": "null",
          "_NOT": "not", "_EVERY": "every", "_EVERY_DISTINCT": "every-distinct"}


@functools.cache
def _parser() -> Lark:
    grammar = (Path(__file__).with_name("epl.lark")).read_text(encoding="utf-8")
    return Lark(grammar, parser="lalr", propagate_positions=True, maybe_placeholders=False)


class _Duration(ast.Const):
    """A number with a time unit (kept in milliseconds)."""


def _loc(x: Any) -> ast.Loc:
    if isinstance(x, Token):
        return (x.line, x.column)
    meta = getattr(x, "meta", x)
    if getattr(meta, "empty", True):
        return None
    return (meta.line, meta.column)


class _Unsupported(Exception):
    def __init__(self, loc: ast.Loc, message: str) -> None:
        super().__init__(message)
        self.loc = loc


@v_args(meta=True)
class _ToAst(Transformer):
    def __init__(self) -> None:
        super().__init__()
        self.problems: list[tuple[ast.Loc, str]] = []

    # ---- expressions -------------------------------------------------------------------
    def number(self, meta: Any, c: list[Any]) -> ast.Const:
        text = str(c[0])
        if len(c) > 1:
            unit = str(c[1]).lower()
            return _Duration(to_milliseconds(text, "ms" if unit == "msec" else unit),
                             loc=_loc(meta))
        return ast.Const(float(text) if "." in text else int(text), loc=_loc(meta))

    def duration_unit(self, meta: Any, c: list[Token]) -> Token:
        return c[0]

    def string(self, meta: Any, c: list[Token]) -> ast.Const:
        return ast.Const(decode_string(str(c[0])), loc=_loc(meta))

    def true(self, meta: Any, c: list[Any]) -> ast.Const:
        return ast.Const(True, loc=_loc(meta))

    def false(self, meta: Any, c: list[Any]) -> ast.Const:
        return ast.Const(False, loc=_loc(meta))

    def null(self, meta: Any, c: list[Any]) -> ast.Const:
        return ast.Const(None, loc=_loc(meta))

    def name(self, meta: Any, c: list[Token]) -> ast.Name:
        return ast.Name(str(c[0]), tuple(str(t) for t in c[1:]), loc=_loc(meta))

    def call(self, meta: Any, c: list[Any]) -> ast.Expr:
        func = str(c[0])
        if func.lower() == "current_timestamp" and len(c) == 1:
            return ast.Name("@ts", loc=_loc(meta))
        args = tuple(ast.Const("*") if isinstance(a, Token) else a for a in c[1:])
        return ast.Call(func, args, loc=_loc(meta))

    def _binary(self, op: str, meta: Any, c: list[Any]) -> ast.Binary:
        return ast.Binary(op, c[0], c[-1], loc=_loc(meta))

    def bin_or(self, meta: Any, c: list[Any]) -> ast.Binary:
        return self._binary("or", meta, c)

    def bin_and(self, meta: Any, c: list[Any]) -> ast.Binary:
        return self._binary("and", meta, c)

    def compare(self, meta: Any, c: list[Any]) -> ast.Binary:
        op = {"=": "==", "<>": "!="}.get(str(c[1]), str(c[1]))
        return self._binary(op, meta, c)

    def arith(self, meta: Any, c: list[Any]) -> ast.Binary:
        return self._binary(str(c[1]), meta, c)

    def neg(self, meta: Any, c: list[Any]) -> ast.Unary:
        return ast.Unary("not", c[0], loc=_loc(meta))

    def minus(self, meta: Any, c: list[Any]) -> ast.Unary:
        return ast.Unary("-", c[0], loc=_loc(meta))

    # ---- patterns ----------------------------------------------------------------------
    def filter(self, meta: Any, c: list[Any]) -> ast.Atom:
        names = [x for x in c if isinstance(x, Token)]
        cond = next((x for x in c if not isinstance(x, Token)), None)
        alias = str(names[0]) if len(names) == 2 else None
        typ = names[-1]
        return ast.Atom(str(typ), None, cond, alias, loc=_loc(typ))

    def followed_by(self, meta: Any, c: list[Any]) -> ast.Pattern:
        out = c[-1]
        for left in reversed(c[:-1]):
            out = ast.Fol(left, out, loc=_loc(meta))
        return out

    def or_p(self, meta: Any, c: list[Any]) -> ast.Pattern:
        out = c[0]
        for right in c[1:]:
            out = ast.Or(out, right, loc=_loc(meta))
        return out

    def and_p(self, meta: Any, c: list[Any]) -> ast.Pattern:
        out = c[0]
        for right in c[1:]:
            out = ast.And(out, right, loc=_loc(meta))
        return out

    def every(self, meta: Any, c: list[Any]) -> ast.Every:
        return ast.Every(c[0], loc=_loc(meta))

    def every_distinct(self, meta: Any, c: list[Any]) -> ast.Every:
        keys = list(c[:-1])
        expiry = None
        if keys and isinstance(keys[-1], _Duration):
            expiry = float(keys.pop().value)
        return ast.Every(c[-1], tuple(keys), expiry, loc=_loc(meta))

    def not_p(self, meta: Any, c: list[Any]) -> ast.Pattern:
        raise _Unsupported(_loc(meta), "'not' inside a pattern is not supported yet")

    def repeat(self, meta: Any, c: list[Any]) -> ast.Mult:
        return ast.Mult(c[1], int(float(str(c[0]))), loc=_loc(meta))

    def guard(self, meta: Any, c: list[Any]) -> ast.Window:
        inner, ns, fn, arg = c
        if f"{ns}:{fn}".lower() != "timer:within":
            raise _Unsupported(_loc(ns), f"guard '{ns}:{fn}' is not supported (only "
                               "timer:within)")
        if not isinstance(arg, _Duration):
            raise _Unsupported(_loc(meta), "timer:within needs a duration such as 3 seconds")
        return ast.Window(inner, float(arg.value), "within", loc=_loc(meta))

    # ---- statements --------------------------------------------------------------------
    def view(self, meta: Any, c: list[Any]) -> Any:
        names = [str(x) for x in c if isinstance(x, Token)]
        raise _Unsupported(_loc(meta), f"data window '{':'.join(names)}' is not supported yet "
                           "(sliding/batch windows and aggregates are being added)")

    def pattern_source(self, meta: Any, c: list[Any]) -> ast.Pattern:
        return c[0]

    def stream_source(self, meta: Any, c: list[Any]) -> Any:
        raise _Unsupported(_loc(meta), "selecting from a stream (not a pattern) is not "
                           "supported yet")

    def group_by(self, meta: Any, c: list[Any]) -> Any:
        raise _Unsupported(_loc(meta), "'group by' is not supported yet")

    def select_item(self, meta: Any, c: list[Any]) -> tuple[str, ast.Expr]:
        return (str(c[1]), c[0])

    def select_star(self, meta: Any, c: list[Any]) -> None:
        return None

    def select_clause(self, meta: Any, c: list[Any]) -> tuple:
        return ("select", None if any(x is None for x in c) else tuple(c))

    def insert_stmt(self, meta: Any, c: list[Any]) -> ast.ComplexEventDecl:
        name = c[0]
        select = next((x[1] for x in c if isinstance(x, tuple) and x[:1] == ("select",)),
                      None)
        body = guard_windows(c[-1])
        params = tuple(ast.Param(n) for n, _ in select or ())
        return ast.ComplexEventDecl(str(name), params, body, "esper", (), select,
                                    loc=_loc(name))

    def column(self, meta: Any, c: list[Token]) -> ast.Param:
        typ = str(c[1])
        return ast.Param(str(c[0]), _TYPES.get(typ.lower(), typ), loc=_loc(c[0]))

    def create_schema(self, meta: Any, c: list[Any]) -> ast.AtomicEventDecl:
        return ast.AtomicEventDecl(str(c[0]), tuple(c[1:]), loc=_loc(c[0]))

    def annotation(self, meta: Any, c: list[Any]) -> None:
        return None

    def statement(self, meta: Any, c: list[Any]) -> ast.Decl:
        return c[-1]

    def start(self, meta: Any, c: list[Any]) -> list[ast.Decl]:
        return list(c)


def parse_epl(text: str, source: str = "<string>") -> ast.Module:
    """Parse EPL text into a cepflow module; raise PatternSyntaxError with located messages."""
    try:
        tree = parse_located(_parser(), text, source, _NAMES)
    except LarkErrors as e:
        raise PatternSyntaxError([e.diagnostic]) from None
    try:
        decls = _ToAst().transform(tree)
    except Exception as e:  # lark wraps transformer errors in VisitError
        inner = getattr(e, "orig_exc", e)
        if isinstance(inner, _Unsupported):
            line, col = inner.loc or (1, 1)
            raise PatternSyntaxError([Diagnostic(source, line, col, str(inner))]) from None
        raise
    return ast.Module(tuple(decls), source=source)


def parse_epl_file(path: str | Path) -> ast.Module:
    """Parse an ``.epl`` file."""
    p = Path(path)
    return parse_epl(p.read_text(encoding="utf-8"), str(p))
