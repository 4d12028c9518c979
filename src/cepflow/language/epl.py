"""Reading Esper EPL: the statement forms of seeds 003 and 004 become cepflow's AST.

Supported (docs/esper.md): ``create schema Name(field type, ...)``; ``@Name('...')``;
``insert into X [select expr as name, ... | select *] from pattern [ ... ]`` with filters
``a = Type(condition)``, ``->``, ``and``, ``or``, ``every``, ``every-distinct(keys)``,
``[n]`` repetition and the guards ``where timer:within(duration)``, ``where
timer:withinmax(duration, n)`` and ``while (condition)``. Each statement becomes the
declaration a cepflow pattern would give (context ``esper``), so both syntaxes run on the same
automata.

Data-window statements (docs/windows.md, "In the languages") — ``[insert into X] select …
from Type(filter)[.win:…|#…][ as a] [group by …] [having …]`` and the seeds' form ``from
pattern [every a = Type(filter)].win:…`` — become :class:`~cepflow.language.ast.WindowDecl`,
the node the cepflow syntax ``complexEvent X { from … window … select … }`` gives. Views:
``win:time``/``#time``, ``win:time_batch``, ``win:length``, ``win:length_batch`` and
``std:groupwin(<group by>)``/``#groupwin`` before a length window. **Decision:** a time
window's size without a unit is in seconds, as in Esper. Without ``insert into`` the output
type is the ``@Name``. Anything else — other views, ``where`` after a window, a window over
any other pattern, ``select *`` over a window, a stream without a window — is reported with
file, line, column and the construct, never misread.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from lark import Lark, Token, Transformer_NonRecursive, Tree, v_args
from lark.exceptions import UnexpectedInput, VisitError

from cepflow.compiler.esper import EsperError, guard_windows, statement_start
from cepflow.compiler.every_equivalents import every_equivalents
from cepflow.compiler.normalize import fol_items
from cepflow.language import ast
from cepflow.language.diagnostics import Diagnostic, PatternSyntaxError, sort_diagnostics
from cepflow.language.limits import (
    LimitError,
    number_value,
    size_error,
    too_deep,
    whole_number,
)
from cepflow.language.parser import decode_string, to_milliseconds
from cepflow.language.parser_cache import lalr_parser
from cepflow.language.syntax import StatementRecovery, capped, describe, terminal_names
from cepflow.language.tags import index_name
from cepflow.language.walk import atoms, names, rewrite, strip_alias, walk
from cepflow.schedule import Schedule, ScheduleError

_TYPES = {"string": "String", "int": "Integer", "integer": "Integer", "long": "Long",
          "double": "Double", "float": "Double", "boolean": "Boolean", "bool": "Boolean"}
#: how messages show the terminals syntax.terminal_names cannot name itself
_NAMES = {"CMP": "comparison operator", "ADD": "'+', '-'", "MULOP": "'/', '%'",
          "RANGE_SEP": "':', '..'", "UNIT": "time unit", "MAX_ARROW": "'-[n]>'",
          "CRON_OP": "'last', 'weekday', 'lastweekday'"}
#: terminals only a statement begins with: error recovery resumes at them
_STARTERS = ("_CREATE", "_INSERT", "AT")
#: what skipping the rest of a bad statement steps over whole (strings, comments) and where it
#: stops: after a ``;``, or at a line that begins a statement (``@``, ``create``, ``insert``)
_SKIP = re.compile(r"""'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"|//[^\n]*|/\*[\s\S]*?(?:\*/|\Z)"""
                   r"|(?P<end>;)|^(?P<line>[ \t]*)(?=@|(?i:create|insert)\b)", re.M)


def _partnered(operands: list[Any]) -> None:
    """Esper's ``not`` turns true as soon as it starts: outside ``and`` (``A -> not C -> B``)
    it would be ignored — reported rather than read as VEPL's NOT in a gap."""
    for o in operands:
        if isinstance(o, ast.Not):
            raise _Unsupported(o.loc, "'not' needs a partner: A -> (B and not C), or "
                               "A -> (timer:interval(10 sec) and not C)")


_TWICE = ("'X or not Y' is supported at the end of a whole pattern after an event (A -> (X or "
          "not Y), every a=A -> (X or not Y)), not {} (Esper's or with a not is true as it "
          "starts and again when X comes)")


def _or_operands(p: ast.Pattern) -> list[ast.Pattern]:
    """The operands of a nest of ``or`` (the reader's, left-deep)."""
    return [*_or_operands(p.left), *_or_operands(p.right)] if isinstance(p, ast.Or) else [p]


def _one_event(p: Any) -> bool:
    """An atom or an or of atoms: one event."""
    return all(isinstance(o, ast.Atom) for o in _or_operands(p))


def _counted_side(p: Any) -> bool:
    """A right-hand side whose one run the matcher counts while it waits: one event, alone,
    under a guard (``b=B where timer:within(Δ)``) or beside nots (``b=B and not C``)."""
    if isinstance(p, ast.Window):
        return p.kind == "within" and _one_event(p.pattern)
    if isinstance(p, ast.And):
        ops = [o for o in _and_operands(p)]
        pos = [o for o in ops if not isinstance(o, ast.Not)]
        return len(pos) == 1 and _one_event(pos[0]) and all(
            _one_event(o.pattern) for o in ops if isinstance(o, ast.Not))
    return _one_event(p)


def _and_operands(p: Any) -> list[Any]:
    return [*_and_operands(p.left), *_and_operands(p.right)] if isinstance(p, ast.And) else [p]


def _unlimited(c: list[Any]) -> tuple[list[Any], list[tuple[int, int, ast.Loc]]]:
    """The operands of a followed-by whose arrows may be Esper's ``-[n]>``, and the limits
    that act: ``(arrow, n, place)``. Esper's EvalFollowedByWithMaxStateNodeManaged counts,
    per arrow, the right-hand sides under way and starts no new one while ``n`` are: a limit
    only acts when the operands before the arrow can be true more than once within one
    followed-by (an ``every``, an ``or`` with a ``not`` inside them). Where they cannot, at
    most one right-hand side is ever under way and ``-[n]>`` (``n`` ≥ 1) is ``->``."""
    ops = [x for x in c if not isinstance(x, Token)]
    acting: list[tuple[int, int, ast.Loc]] = []
    for k, x in enumerate(c):
        if not isinstance(x, Token):
            continue
        loc = _loc(x)
        text = str(x)[2:-2].strip()
        n = _limited(loc, lambda text=text: whole_number(text, "a followed-by maximum")
                     if re.fullmatch(r"\d+(\.\d+)?", text) else None)
        if n is None:
            raise _Unsupported(loc, f"the maximum of a followed-by -[{text}]> must be a whole "
                               "number (Esper also takes a constant expression or a variable)")
        if n == 0:
            raise _Unsupported(loc, "-[0]> starts no right-hand side, so nothing gets past it; "
                               "write -[n]> with n of 1 or more")
        before = [o for o in c[:k] if not isinstance(o, Token)]
        if any(isinstance(m, ast.Every) or (isinstance(m, ast.Or) and any(
                isinstance(o, ast.Not) for o in _or_operands(m)))
               for o in before for m in walk(o)):
            acting.append((len(before) - 1, n, loc))
    return ops, acting


def _counted(ops: list[Any], acting: list[tuple[int, int, ast.Loc]]) -> tuple[ast.Limit, ...]:
    """The limits that act, where cepflow counts them: the followed-by ``every a=A -[n]> …``
    (one event under the every; each operand before a limited arrow one event, the one after
    it one event alone, under a guard or beside nots, and of other event types, so that no
    event both starts and ends a right-hand side); else reported."""
    def refuse(loc: ast.Loc, why: str) -> _Unsupported:
        return _Unsupported(loc, f"-[n]> after an operand that can be true more than once "
                            f"(every …) is supported as every a=A -[n]> B … with {why}")

    head = ops[0]
    if not (isinstance(head, ast.Every) and not head.distinct and head.expiry is None
            and _one_event(head.pattern)):
        raise refuse(acting[0][2], "one event under the every at the start")
    if any(isinstance(o, ast.Not) for o in ops):
        raise refuse(acting[0][2], "no bare not among the operands")
    out = []
    for k, n, loc in acting:
        left = head.pattern if k == 0 else ops[k]
        if isinstance(left, ast.And) and _counted_side(left):  # (b=B and not C): B ends it
            left = next(o for o in _and_operands(left) if not isinstance(o, ast.Not))
        if not _one_event(left):
            raise refuse(loc, "one event before each limited arrow (alone or with and not)")
        right = ops[k + 1]
        if not _counted_side(right):
            raise refuse(loc, "one event after it (alone, under a guard or with and not)")
        if {a.name for a in atoms(left)} & {a.name for a in atoms(right)}:
            raise refuse(loc, "other event types after the arrow than before it")
        out.append(ast.Limit(n, tuple(a.loc for a in atoms(left))))
    return tuple(out)


def _count(t: Token) -> int:
    """A repeat bound: a whole number (a located error otherwise)."""
    text = str(t)
    value = _limited(_loc(t), lambda: whole_number(text, "a repeat bound"))
    if value is None:
        raise _Unsupported(_loc(t), f"a repeat bound must be a whole number, not {text}")
    return value


def _limited(loc: ast.Loc, convert: Callable[[], Any]) -> Any:
    """``convert()`` of a literal; a limit it passes is a located error."""
    try:
        return convert()
    except LimitError as e:
        raise _Unsupported(loc, str(e)) from None


@functools.cache
def _parser() -> Lark:
    grammar = (Path(__file__).with_name("epl.lark")).read_text(encoding="utf-8")
    return lalr_parser(grammar, "epl", propagate_positions=True, maybe_placeholders=False)


def _resume(text: str, pos: int) -> int:
    """Where reading goes on after an error in a statement (before ``pos`` nothing is read):
    after its ``;``, or at the next line that begins a statement; else the end of the text."""
    for m in _SKIP.finditer(text, pos):
        if m.group("end") is not None or m.group("line") is not None:
            return m.end()
    return len(text)


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
class _ToAst(Transformer_NonRecursive):
    """One statement's parse tree to its declaration, walked without recursion (any nesting
    depth reaches the limit check of :func:`_bounded`, never Python's stack limit)."""

    def __init__(self, source: str = "<string>") -> None:
        super().__init__()
        self.source = source
        #: warnings found while building (a bare ``not`` in a followed-by)
        self.warnings: list[Diagnostic] = []
        #: the statement's @Name (a stream several statements insert into: see _streams)
        self.at_name: str | None = None
        #: followed-bys a ``not`` was left out of (by id), with that not's place: Esper's
        #: followed-by is still running when it reports, so inside ``or`` they are refused
        self._open_nots: dict[int, ast.Loc | None] = {}
        #: ``X or not Y`` (and the followed-by it ends), by id, with the not's place: true
        #: when it starts and again when X comes (:meth:`or_p`); taken at the end of a whole
        #: pattern only
        self._twice: dict[int, ast.Loc | None] = {}
        #: followed-bys with an acting -[n]> (by id): taken as the whole pattern only
        self._limits: dict[int, tuple[ast.Limit, ...]] = {}

    # ---- expressions -------------------------------------------------------------------
    def number(self, meta: Any, c: list[Any]) -> ast.Const:
        text = str(c[0])
        if len(c) > 1:  # a time period: one or more "number unit" parts (2 days 2 minutes)
            def total() -> float:
                return sum(to_milliseconds(str(n), "ms" if str(u).lower() == "msec"
                                           else str(u).lower())
                           for n, u in zip(c[0::2], c[1::2], strict=True))
            return _Duration(_limited(_loc(meta), total), loc=_loc(meta))
        return ast.Const(_limited(_loc(meta), lambda: number_value(text)), loc=_loc(meta))

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

    def indexed(self, meta: Any, c: list[Token]) -> ast.Name:
        """Esper's indexed tag ``a[0].id``: the k-th event a repetition collected."""
        k = str(c[1])
        index = _limited(_loc(c[1]), lambda: whole_number(k, "an index"))
        if index is None:
            raise _Unsupported(_loc(c[1]), f"an index must be a whole number, not {k}")
        return ast.Name(index_name(str(c[0]), index), tuple(str(t) for t in c[2:]),
                        loc=_loc(meta))

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
        conds = [x for x in c if not isinstance(x, Token)]
        cond = None  # Esper's filter lists (T(a = 1, b > 2)) are conjunctions
        for x in conds:
            cond = x if cond is None else ast.Binary("and", cond, x, loc=x.loc)
        alias = str(names[0]) if len(names) == 2 else None
        typ = names[-1]
        return ast.Atom(str(typ), None, cond, alias, loc=_loc(typ))

    def followed_by(self, meta: Any, c: list[Any]) -> ast.Pattern:
        if len(c) == 1:  # a parenthesised operand: ``B and (not C)`` is ``B and not C``
            return c[0]
        c, acting = _unlimited(c)
        for o in c[:-1]:
            if id(o) in self._twice:
                raise _Unsupported(self._twice[id(o)] or o.loc or (1, 1), _TWICE.format(
                    "before more of a followed-by (it would start what follows twice)"))
        # ((every a=A -[n]> B) -> C: the inner followed-by's limit counts the same right
        # sides as in every a=A -[n]> B -> C, the form the EPL printer writes back)
        self._closed(c[1:] if not acting else c, "a followed-by", limits_only=True)
        limits = _counted(c, acting) if acting else self._limits.get(id(c[0]), ())
        nots = [o.loc for o in c if isinstance(o, ast.Not)]
        nots += [self._open_nots[id(o)] for o in c if id(o) in self._open_nots]
        c = self._true_at_once(c)
        out = c[-1]
        for left in reversed(c[:-1]):
            out = ast.Fol(left, out, loc=_loc(meta))
        if nots:
            self._open_nots[id(out)] = nots[0]
        if id(c[-1]) in self._twice and len(c) > 1:
            self._twice[id(out)] = self._twice[id(c[-1])]
        if limits:
            self._limits[id(out)] = limits
        return out

    def _true_at_once(self, items: list[Any]) -> list[Any]:
        """Esper's ``not C`` is true as soon as it starts and never looked at again: in a
        followed-by (``A -> not C -> B``) it lets the next operand start at once, so it is
        left out — with a warning, as VEPL's ``A -> NOT C -> B`` means something else. A
        followed-by of nothing but ``not`` still needs a partner."""
        kept = [o for o in items if not isinstance(o, ast.Not)]
        if not kept:
            _partnered(items)
        for o in items:
            if isinstance(o, ast.Not):
                line, col = o.loc or (1, 1)
                self.warnings.append(Diagnostic(
                    self.source, line, col, "Esper's 'not' here is true at once and never "
                    "looked at again, so it forbids nothing (A -> not C -> B matches as "
                    "A -> B); to forbid C between A and B write A -> (B and not C)",
                    "warning"))
        return kept

    def or_p(self, meta: Any, c: list[Any]) -> ast.Pattern:
        """Esper's ``or``. With ``not`` operands (``d=D or not d=D``): EvalNotStateNode is
        true as it starts and does not quit, so EvalOrStateNode reports at once (the other
        operands' tags null) and goes on; when another operand is true it reports again and
        ends (the not only decides when the or turns false, which a single event never does).
        Marked for the enclosing nodes (:attr:`_twice`)."""
        nots = [o for o in c if isinstance(o, ast.Not)]
        if len(c) > 1:  # (one operand: the rule is only on the way to a followed-by)
            if len(nots) == len(c):
                _partnered(c)
            self._closed(c, "'or'")
        out = c[0]
        for right in c[1:]:
            out = ast.Or(out, right, loc=_loc(meta))
        if nots and len(c) > 1:
            self._twice[id(out)] = nots[0].loc
        return out

    def _closed(self, operands: list[Any], where: str, limits_only: bool = False) -> None:
        """A followed-by a ``not`` was left out of (``A -> not B``) reports its match while
        that not is still watching: Esper's EvalFollowedByStateNode reports "quitted" only
        when none of its parts is left, and turns false when the not's event comes. At the top
        of a pattern (or inside another followed-by or a guard) that changes nothing; as the
        operand of ``or`` (EvalOrStateNode goes on after a match that did not quit: ``(A -> B)
        or (A -> not B)`` answers A1 with b null, then A1 B1), ``and`` (EvalAndStateNode
        turns false when the not's event comes first: ``(A -> not B) and C`` never matches on
        A B C), ``every`` (EvalEveryStateNode starts the operand again both when it matches
        and when it later turns false) or a repetition it would answer otherwise than the
        operand alone: reported. So is ``X or not Y`` there (:meth:`or_p`), and an acting
        ``-[n]>`` (counted for the whole pattern's followed-by only)."""
        for o in operands:
            if id(o) in self._limits:
                raise _Unsupported(o.loc or (1, 1), f"-[n]> after every is supported in the "
                                   f"whole pattern's followed-by, not inside {where}")
            if limits_only:
                continue
            if id(o) in self._twice:
                raise _Unsupported(self._twice[id(o)] or o.loc or (1, 1),
                                   _TWICE.format(f"inside {where}"))
            if id(o) in self._open_nots:
                raise _Unsupported(self._open_nots[id(o)] or o.loc or (1, 1),
                                   f"'not' in a followed-by inside {where} is not supported "
                                   "(Esper keeps that followed-by running after it matches, "
                                   "while its not watches); write A -> (B and not C), or the "
                                   "followed-by at the top of the pattern")

    def and_p(self, meta: Any, c: list[Any]) -> ast.Pattern:
        if len(c) > 1:
            self._closed(c, "'and'")
        out = c[0]
        for right in c[1:]:
            out = ast.And(out, right, loc=_loc(meta))
        return out

    def every(self, meta: Any, c: list[Any]) -> ast.Every:
        if isinstance(c[0], ast.Or) and id(c[0]) in self._twice:
            return self._never(c[0], _loc(meta))
        self._closed(c, "'every'")
        return ast.Every(c[0], loc=_loc(meta))

    def _never(self, p: ast.Or, loc: ast.Loc) -> ast.Every:
        """``every (X or not Y)``: EvalEveryStateNode starts its operand under a stand-in
        parent and quits it when it is true already as it starts — as this or is (its not) —
        so the every never has a live operand: it is never true, never false. Read as
        ``every X`` whose events all fail (the same tags; a warning says so)."""
        line, col = loc or (1, 1)
        self.warnings.append(Diagnostic(
            self.source, line, col, "Esper's every (… or not …) never matches: the or is true "
            "as it starts, and every quits an operand that is true at its start", "warning"))
        false = ast.Const(False, loc=loc)
        out: ast.Pattern | None = None
        for o in _or_operands(p):
            if isinstance(o, ast.Not):
                continue
            for a in atoms(o):
                dead = replace(a, where=false)
                out = dead if out is None else ast.Or(out, dead, loc=p.loc)
        assert out is not None
        return ast.Every(out, loc=loc)

    def every_repeat(self, meta: Any, c: list[Any]) -> ast.Every:
        """``every [n] P`` (Esper's grammar lets every take a repeat count)."""
        return ast.Every(self.repeat(meta, c), loc=_loc(meta))

    def every_distinct(self, meta: Any, c: list[Any]) -> ast.Every:
        self._closed(c[-1:], "'every-distinct'")
        keys = list(c[:-1])
        expiry = None
        if keys and isinstance(keys[-1], _Duration):
            expiry = float(keys.pop().value)
        if not keys:
            raise _Unsupported(_loc(meta), "every-distinct needs one or more key expressions "
                               "(every-distinct(a.k[, expiry]) …)")
        return ast.Every(c[-1], tuple(keys), expiry, loc=_loc(meta))

    def every_distinct_repeat(self, meta: Any, c: list[Any]) -> ast.Every:
        """``every-distinct(k) [n] P`` (the repeat count, as after every)."""
        return self.every_distinct(meta, [*c[:-2], self.repeat(meta, c[-2:])])

    def not_p(self, meta: Any, c: list[Any]) -> ast.Pattern:
        self._closed(c, "'not'")
        return ast.Not(c[0], loc=_loc(meta))

    def range_exact(self, meta: Any, c: list[Token]) -> tuple:
        n = _count(c[0])
        return ("range", n, n, _loc(meta))

    def range_bounds(self, meta: Any, c: list[Token]) -> tuple:
        sep = next(i for i, t in enumerate(c) if t.type == "RANGE_SEP")
        low = _count(c[0]) if sep > 0 else None
        high = _count(c[sep + 1]) if sep + 1 < len(c) else None
        if low is None and high is None:
            raise _Unsupported(_loc(meta), "a repeat range needs a low or a high bound")
        if low is not None and high is not None and high < low:
            raise _Unsupported(_loc(meta), f"repeat range [{low}:{high}]: the high bound is "
                               "below the low bound")
        return ("range", low, high, _loc(meta))

    def repeat(self, meta: Any, c: list[Any]) -> ast.Mult:
        _, low, high, loc = c[0]
        if low != high:
            raise _Unsupported(loc, "a repeat range [m:n] needs 'until' (… until pattern); "
                               "[n] alone repeats exactly n times")
        if low < 1:
            raise _Unsupported(loc, "[0] repeats nothing; write at least [1]")
        self._closed(c[1:], "a repetition")
        return ast.Mult(c[1], low, loc=_loc(meta))

    def until(self, meta: Any, c: list[Any]) -> ast.Until:
        low = high = None
        if len(c) == 3:
            _, low, high, _ = c[0]
        self._closed(c[-2:], "'until'")
        return ast.Until(c[-2], c[-1], low, high, loc=_loc(meta))

    def observer(self, meta: Any, c: list[Any]) -> ast.Interval | ast.At:
        ns, fn, *args = c
        kind = f"{ns}:{fn}".lower()
        if kind == "timer:at":
            return _timer_at(args, _loc(meta))
        if kind != "timer:interval":
            raise _Unsupported(_loc(ns), f"observer '{ns}:{fn}' is not supported (only "
                               "timer:interval and timer:at)")
        if len(args) != 1 or isinstance(args[0], _Cron):
            raise _Unsupported(_loc(meta), "timer:interval takes one duration such as 10 "
                               "seconds")
        arg = args[0]
        ms = _milliseconds(arg)
        if ms is None:
            raise _Unsupported(_loc(meta), "timer:interval needs a duration such as 10 seconds")
        return ast.Interval(ms, loc=_loc(meta))

    # -- timer:at's crontab parameters (cepflow.schedule): read as _Cron items
    def cron_any(self, meta: Any, c: list[Any]) -> _Cron:
        return _Cron(("any",), _loc(meta))

    def cron_every(self, meta: Any, c: list[Any]) -> _Cron:
        _, op, n = c
        if str(op) != "/":
            raise _Unsupported(_loc(op), "a crontab frequency is written */n (*/5)")
        return _Cron(("every", _cron_number(n, _loc(meta))), _loc(meta))

    def cron_range(self, meta: Any, c: list[Any]) -> _Cron:
        low, _, high = c
        return _Cron(("range", _cron_number(low, _loc(meta)), _cron_number(high, _loc(meta))),
                     _loc(meta))

    def cron_op(self, meta: Any, c: list[Any]) -> _Cron:
        raise _Unsupported(_loc(meta), _CRON_OPS)

    def cron_list(self, meta: Any, c: list[Any]) -> _Cron:
        return _Cron(tuple(_cron_item(x) for x in c), _loc(meta), listed=True)

    def guard(self, meta: Any, c: list[Any]) -> ast.Window:
        inner, ns, fn, arg, *more = c
        kind = f"{ns}:{fn}".lower()
        if kind not in ("timer:within", "timer:withinmax"):
            raise _Unsupported(_loc(ns), f"guard '{ns}:{fn}' is not supported (timer:within, "
                               "timer:withinmax and while (…) are)")
        if len(more) != (kind == "timer:withinmax"):
            raise _Unsupported(_loc(meta), "timer:within takes a duration, timer:withinmax a "
                               "duration and a count (timer:withinmax(10 sec, 3))")
        ms = _milliseconds(arg)
        if ms is None:
            raise _Unsupported(_loc(meta), f"{kind} needs a duration such as 3 seconds")
        inner, most = _guard_count(inner, more[0], _loc(meta)) if more else (inner, None)
        _partnered([inner])  # ((not C) where …: true as it starts, as not C alone)
        self._once_reported(inner)
        self._closed([inner], "a guard", limits_only=True)
        out = ast.Window(inner, ms, "within", loc=_loc(meta), guard=True, most=most)
        if id(inner) in self._open_nots:  # (a guard passes its operand's reports on as they are)
            self._open_nots[id(out)] = self._open_nots[id(inner)]
        return out

    def _once_reported(self, inner: Any) -> None:
        """A guard around ``X or not Y`` (reported: see _TWICE)."""
        if id(inner) in self._twice:
            raise _Unsupported(self._twice[id(inner)] or inner.loc or (1, 1),
                               _TWICE.format("under a guard"))

    def guard_while(self, meta: Any, c: list[Any]) -> ast.Pattern:
        """Esper's ``P while (cond)`` (ExpressionGuard): each result of ``P`` is passed on
        while ``cond`` holds over it; the first one for which it does not ends ``P`` for
        good. With ``P`` ending in one event ``x=X(f)``, the results are that event's, so
        this is ``x=X(f and cond) and not X(f and not cond)`` in its place (the event that
        decides either passes or ends the operand, nothing waits past it); ``every x=X(f)``
        likewise ends at the first ``X(f)`` failing ``cond``."""
        inner, cond = c
        loc = _loc(meta)
        self._once_reported(inner)
        self._closed([inner], "a while guard")
        for n in names(cond):
            if not n.path and not n.name.startswith("@"):
                raise _Unsupported(n.loc or loc, f"while (…) reads tagged events: write "
                                   f"tag.{n.name}, not {n.name}")
        if isinstance(cond, ast.Const) and not isinstance(cond.value, bool):
            raise _Unsupported(cond.loc or loc, "while (…) needs a true or false condition")
        items = fol_items(inner) if isinstance(inner, ast.Fol) else [inner]
        last = items[-1]
        every = isinstance(last, ast.Every) and not last.distinct
        atom = last.pattern if every else last
        if not isinstance(atom, ast.Atom) or atom.args is not None or any(
                isinstance(n, ast.Every) for i in items[:-1] for n in walk(i)):
            raise _Unsupported(loc, "while (…) is supported around one event, every on one "
                               "event, or a followed-by ending in one of them without every "
                               "before it (x=X while (…), (every x=X) while (…), a=A -> x=X "
                               "while (…))")
        f = atom.where
        keep = cond if f is None else ast.Binary("and", f, cond, loc=loc)
        stop = ast.Unary("not", cond, loc=loc)
        stop = stop if f is None else ast.Binary("and", f, stop, loc=loc)
        passed: ast.Pattern = replace(atom, where=keep)
        guarded = ast.And(ast.Every(passed, loc=last.loc) if every else passed,
                          ast.Not(ast.Atom(atom.name, None, strip_alias(stop, atom.alias),
                                           None, atom.loc), loc=loc), loc=loc)
        out = guarded
        for left in reversed(items[:-1]):
            out = ast.Fol(left, out, loc=inner.loc)
        return out

    # ---- statements --------------------------------------------------------------------
    def view(self, meta: Any, c: list[Any]) -> _View:
        names = [str(x) for x in c if isinstance(x, Token)]
        args = [x for x in c if not isinstance(x, Token)]
        return _View(names, args, _loc(meta))

    def pattern_source(self, meta: Any, c: list[Any]) -> _Source:
        _partnered(c[:1])
        if isinstance(c[0], ast.Or) and id(c[0]) in self._twice:
            raise _Unsupported(self._twice[id(c[0])] or c[0].loc or (1, 1), _TWICE.format(
                "at the start of a pattern (it is true at the statement's start)"))
        out = _Source(c[0], [v for v in c[1:] if isinstance(v, _View)], _loc(meta))
        out.limits = self._limits.get(id(c[0]), ())
        return out

    def stream_source(self, meta: Any, c: list[Any]) -> _Source:
        typ = c[0]
        cond = next((x for x in c[1:] if not isinstance(x, Token | _View)), None)
        alias = next((str(x) for x in c[1:] if isinstance(x, Token)), None)
        atom = ast.Atom(str(typ), None, cond, alias, loc=_loc(typ))
        return _Source(atom, [v for v in c if isinstance(v, _View)], _loc(meta), stream=True)

    def where_after(self, meta: Any, c: list[Any]) -> Any:
        raise _Unsupported(_loc(meta), "'where' after the stream is not supported; filter "
                           "the stream instead: Type(condition)")

    def group_by(self, meta: Any, c: list[Any]) -> tuple:
        return ("group_by", tuple(c), _loc(meta))

    def having(self, meta: Any, c: list[Any]) -> tuple:
        return ("having", c[0], _loc(meta))

    def select_item(self, meta: Any, c: list[Any]) -> tuple[str | None, ast.Expr, ast.Loc]:
        return (str(c[1]) if len(c) > 1 else None, c[0], _loc(meta))

    def select_star(self, meta: Any, c: list[Any]) -> None:
        return None

    def select_clause(self, meta: Any, c: list[Any]) -> tuple:
        return ("select", None if any(x is None for x in c) else tuple(c), _loc(meta))

    def insert_stmt(self, meta: Any, c: list[Any]) -> ast.Decl:
        return _statement(str(c[0]), _loc(c[0]), _bounded(c[1:]))

    def select_stmt(self, meta: Any, c: list[Any]) -> _Unnamed:
        return _Unnamed(c, _loc(meta))

    def column(self, meta: Any, c: list[Token]) -> ast.Param:
        typ = str(c[1])
        return ast.Param(str(c[0]), _TYPES.get(typ.lower(), typ), loc=_loc(c[0]))

    def create_schema(self, meta: Any, c: list[Any]) -> ast.AtomicEventDecl:
        return ast.AtomicEventDecl(str(c[0]), tuple(c[1:]), loc=_loc(c[0]))

    def annotation(self, meta: Any, c: list[Any]) -> tuple[str, Any, ast.Loc]:
        value = c[-1]
        if value.type == "STRING":
            return (str(c[0]), decode_string(str(value)), _loc(value))
        text = "".join(str(t) for t in c[1:])
        return (str(c[0]), _limited(_loc(value), lambda: number_value(text)), _loc(value))

    def statement(self, meta: Any, c: list[Any]) -> ast.Decl:
        last = c[-1]
        notes = c[:-1]
        if isinstance(last, _Unnamed):
            name = next((v for k, v, _ in notes if k.lower() == "name"), None)
            if name is None or not isinstance(name, str):
                raise _Unsupported(last.loc, "a select statement without 'insert into' needs "
                                   "@Name('…') to name its output events")
            last = _statement(name, last.loc, _bounded(last.parts))
        for key, value, loc in notes:
            if key.lower() == "name" and isinstance(value, str):
                self.at_name = value
            if key.lower() == "priority":  # Esper's @Priority(n): docs/esper.md
                if isinstance(value, bool) or not isinstance(value, int) \
                        or not isinstance(last, ast.ComplexEventDecl | ast.WindowDecl):
                    raise _Unsupported(loc, "@Priority takes a whole number, on an insert "
                                       "or select statement")
                last = replace(last, priority=value)
        return last


class _View:
    """One view of a stream: ``.win:time(10 sec)`` (names ``[win, time]``) or ``#time(…)``."""

    def __init__(self, names: list[str], args: list[Any], loc: ast.Loc) -> None:
        self.names, self.args, self.loc = names, args, loc

    @property
    def text(self) -> str:
        return ":".join(self.names) if len(self.names) > 1 else "#" + self.names[0]

    @property
    def kind(self) -> str | None:
        """``time`` … ``length_batch``, ``groupwin``, or None for any other view."""
        name = self.names[-1].lower()
        ns = self.names[0].lower() if len(self.names) > 1 else None
        if name in ast.DATA_WINDOW_KINDS and ns in (None, "win"):
            return name
        if name == "groupwin" and ns in (None, "std"):
            return name
        return None


class _Source:
    """What follows ``from``: a pattern or a stream (an atom), and its views."""

    def __init__(self, body: Any, views: list[_View], loc: ast.Loc, stream: bool = False
                 ) -> None:
        self.body, self.views, self.loc, self.stream = body, views, loc, stream
        #: the acting -[n]> of the whole pattern's followed-by
        self.limits: tuple[ast.Limit, ...] = ()


class _Unnamed:
    """A ``select … from …`` statement waiting for its @Name annotation."""

    def __init__(self, parts: list[Any], loc: ast.Loc) -> None:
        self.parts, self.loc = parts, loc


def _bounded(parts: list[Any]) -> list[Any]:
    """A statement's parts, once their nesting is checked against limits.MAX_NESTING (before
    the lowering walks them recursively)."""
    patterns: list[ast.Pattern] = []
    exprs: list[ast.Expr] = []
    for x in parts:
        if isinstance(x, _Source):
            patterns.append(x.body)
            exprs.extend(a for v in x.views for a in v.args)
        elif isinstance(x, tuple) and x[0] == "select":
            exprs.extend(e for _, e, _ in x[1] or ())
        elif isinstance(x, tuple) and x[0] == "group_by":
            exprs.extend(x[1])
        elif isinstance(x, tuple) and x[0] == "having":
            exprs.append(x[1])
    found = too_deep(patterns, exprs)
    if found is not None:
        raise _Unsupported(*found)
    return parts


def _clause(parts: list[Any], tag: str) -> tuple | None:
    return next((x for x in parts if isinstance(x, tuple) and x[:1] == (tag,)), None)


def _statement(name: str, loc: ast.Loc, parts: list[Any]) -> ast.Decl:
    """``insert into name select … from source …`` as a pattern or a window declaration."""
    select = _clause(parts, "select")
    source = next(x for x in parts if isinstance(x, _Source))
    group, having = _clause(parts, "group_by"), _clause(parts, "having")
    if source.limits and source.views:
        raise _Unsupported(source.loc, "-[n]> after every is supported in a pattern "
                           "statement, not under a data window")
    if source.stream or source.views:
        return _window_decl(name, loc, select, source, group, having)
    if group is not None or having is not None:
        clause = group if group is not None else having
        assert clause is not None
        raise _Unsupported(clause[2], f"'{'group by' if clause is group else 'having'}' needs "
                           "a data window after the pattern (pattern […].win:time(…))")
    items = None if select is None else select[1]
    for n, _, item_loc in items or ():
        if n is None:
            raise _Unsupported(item_loc, "a select item of a pattern statement needs a name: "
                               "expr as name")
    pairs = None if items is None else tuple((n, e) for n, e, _ in items)
    try:
        body = guard_windows(statement_start(every_equivalents(source.body)))
    except EsperError as e:  # (a form whose start cepflow cannot place: reported here)
        raise _Unsupported(e.loc or loc, str(e)) from None
    params = tuple(ast.Param(n) for n, _ in pairs or ())
    return ast.ComplexEventDecl(name, params, body, "esper", (), pairs, loc=loc,
                                limits=source.limits)


def _window_expr(e: ast.Expr) -> ast.Expr:
    """EPL's ``count(*)`` as the cepflow syntax reads it: ``count()``."""

    def fn(n: ast.Expr) -> ast.Expr | None:
        if isinstance(n, ast.Call) and n.func.lower() == "count" and n.args == (ast.Const("*"),):
            return ast.Call(n.func, (), n.loc)
        return None

    return rewrite(e, fn)


def _window_source(source: _Source) -> ast.Atom:
    """The input stream of a window statement: a stream, or ``pattern [every a = T(…)]``."""
    if source.stream:
        atom = source.body
        assert isinstance(atom, ast.Atom)
        if not source.views:
            raise _Unsupported(source.loc, f"selecting from the stream '{atom.name}' without "
                               "a data window is not supported; add one (.win:time(…), "
                               ".win:length(…), …) or use from pattern [every …]")
        return atom
    body = source.body
    if (isinstance(body, ast.Every) and not body.distinct and body.expiry is None
            and isinstance(body.pattern, ast.Atom)):
        return body.pattern
    raise _Unsupported(source.loc, "a data window over a pattern is supported for "
                       "pattern [every a = Type(filter)] only (its events are then the "
                       "stream's events)")


def _guard_count(inner: ast.Pattern, count: Any, loc: ast.Loc
                 ) -> tuple[ast.Pattern, int | None]:
    """The operand and count of ``timer:withinmax(Δ, n)`` (TimerWithinOrMaxCountGuard: it
    passes the first ``n`` results of its operand within Δ and ends the operand at the next
    one); the count None where it is ``timer:within(Δ)``: around an operand that reports at
    most once (no ``every`` inside) and ``n >= 1``. Counted (ast.Window.most): ``every`` on
    one event (its results come from the one run waiting there, which carries the count), and
    one event with ``n = 0`` (its one result ends it: nothing passes), each also at the end
    of a followed-by of events (one run takes them, then waits at the ``every``) and after the
    zero interval ``timer:interval(0) -> …``. With ``n = 0`` every on one event is that one
    event: the guard ends at the first result either way, having passed nothing (its every's
    next instance quits with it). The rest is reported."""
    n = count.value if isinstance(count, ast.Const) else None
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise _Unsupported(getattr(count, "loc", None) or loc, "timer:withinmax needs a whole "
                           "count (0 or more)")
    every = any(isinstance(p, ast.Every) for p in walk(inner))
    if not every and n >= 1:
        return inner, None
    items = fol_items(inner) if isinstance(inner, ast.Fol) else [inner]
    zero = len(items) > 1 and isinstance(items[0], ast.Interval) and items[0].duration == 0
    # (the zero interval fires at once: the operand's results are P's — the statement's
    # start as the EPL printer writes it, statement_start)
    before, op = items[int(zero):-1], items[-1]
    one = op.pattern if isinstance(op, ast.Every) and not op.distinct \
        and op.expiry is None else op if n == 0 else None
    if isinstance(one, ast.Atom) and all(isinstance(i, ast.Atom) for i in before):
        if n == 0 and one is not op:  # (every on one event: that event, see above)
            out: ast.Pattern = one
            for it in reversed(items[:-1]):
                out = ast.Fol(it, out, inner.loc)
            return out, 0
        return inner, n
    if every:
        raise _Unsupported(loc, "timer:withinmax around a pattern with every inside is "
                           "supported around every on one event, also at the end of a "
                           "followed-by of events ((every b=B) where timer:withinmax(Δ, n), "
                           "(a=A -> every b=B) where …); here its results would be counted "
                           "across several instances")
    raise _Unsupported(loc, "timer:withinmax with a count of 0 is supported around one event, "
                       "every on one event or a followed-by of events ending in one (b=B where "
                       "timer:withinmax(Δ, 0)): nothing passes it")


_CRON_OPS = ("timer:at's special days (last, weekday, lastweekday) are not supported; write the "
             "days as numbers, ranges 1:5, frequencies */5 or lists [1, 15]")


class _Cron:
    """A crontab parameter of timer:at other than a plain number: its item (a list: its
    items) as cepflow.schedule takes them."""

    def __init__(self, items: Any, loc: ast.Loc, listed: bool = False) -> None:
        self.items = items if listed else (items,)
        self.loc = loc


def _cron_number(arg: Any, loc: ast.Loc) -> int:
    """A whole number in a crontab parameter (constant expressions and variables, which
    Esper also takes, are reported)."""
    if (isinstance(arg, ast.Const) and not isinstance(arg, _Duration)
            and isinstance(arg.value, int) and not isinstance(arg.value, bool)):
        return arg.value
    if isinstance(arg, ast.Name) and not arg.path and arg.name.lower() in (
            "last", "weekday", "lastweekday"):
        raise _Unsupported(getattr(arg, "loc", None) or loc, _CRON_OPS)
    raise _Unsupported(getattr(arg, "loc", None) or loc, "timer:at takes whole numbers, *, "
                       "ranges 1:5, frequencies */5 and lists [1, 15] (expressions, "
                       "variables and durations are not read)")


def _cron_item(arg: Any) -> tuple:
    """One item of a crontab list (a nested list is reported)."""
    if isinstance(arg, _Cron):
        if len(arg.items) != 1:
            raise _Unsupported(arg.loc, "a crontab list holds numbers, *, ranges and "
                               "frequencies, not another list")
        return arg.items[0]
    return ("value", _cron_number(arg, None))


def _timer_at(args: list[Any], loc: ast.Loc) -> ast.At:
    """``timer:at(minutes, hours, days of month, months, days of week [, seconds])``."""
    if len(args) > 6:
        raise _Unsupported(loc, "timer:at is supported with 5 or 6 parameters (minutes, hours, "
                           "days of month, months, days of week [, seconds]); a time zone and "
                           "milliseconds are not (cepflow's clock is UTC)")
    params = tuple(a.items if isinstance(a, _Cron) else (("value", _cron_number(a, loc)),)
                   for a in args)
    try:
        return ast.At(Schedule(params), loc=loc)
    except ScheduleError as e:
        raise _Unsupported(loc, str(e)) from None


def _milliseconds(arg: Any) -> float | None:
    """A time period in milliseconds: a number with a unit, or a bare number of seconds (as
    Esper reads ``timer:interval(2.5)``, ``win:time(30)``); None for anything else."""
    if isinstance(arg, _Duration):
        return float(arg.value)
    if isinstance(arg, ast.Const) and isinstance(arg.value, int | float) \
            and not isinstance(arg.value, bool):
        return float(arg.value) * 1000.0
    return None


def _duration(arg: Any, view: _View) -> float:
    ms = _milliseconds(arg)
    if ms is None:
        raise _Unsupported(getattr(arg, "loc", None) or view.loc,
                           f"{view.text} needs a duration such as 10 seconds")
    return ms


def _window_of(source: _Source, group_by: tuple[ast.Expr, ...]) -> ast.DataWindow:
    views = list(source.views)
    for v in views:
        if v.kind is None:
            raise _Unsupported(v.loc, f"view '{v.text}' is not supported (supported: "
                               "win:time, win:time_batch, win:length, win:length_batch, "
                               "std:groupwin before a length window)")
    per_group = False
    if views and views[0].kind == "groupwin":
        g = views.pop(0)
        if not views or views[0].kind not in ("length", "length_batch"):
            raise _Unsupported(g.loc, f"{g.text} is supported before win:length or "
                               "win:length_batch only (use group by with one window)")
        if tuple(_window_expr(a) for a in g.args) != group_by:
            raise _Unsupported(g.loc, f"{g.text} must name the group by expressions")
        per_group = True
    if len(views) != 1:
        where = views[1].loc if len(views) > 1 else source.loc
        raise _Unsupported(where, "a statement takes exactly one data window")
    v = views[0]
    kind = v.kind
    assert kind is not None
    if kind in ("time", "time_batch"):
        if len(v.args) != 1:
            what = ("a reference point for time_batch is not supported"
                    if kind == "time_batch" and len(v.args) > 1 else
                    f"{v.text} takes one duration")
            raise _Unsupported(v.loc, what)
        return ast.DataWindow(kind, _duration(v.args[0], v), per_group, loc=v.loc)
    arg = v.args[0] if len(v.args) == 1 else None
    if not (isinstance(arg, ast.Const) and not isinstance(arg, _Duration)
            and isinstance(arg.value, int) and not isinstance(arg.value, bool)
            and arg.value > 0):
        raise _Unsupported(v.loc, f"{v.text} takes one positive whole number of events")
    return ast.DataWindow(kind, arg.value, per_group, loc=v.loc)  # type: ignore[arg-type]


def _window_decl(name: str, loc: ast.Loc, select: tuple | None, source: _Source,
                 group: tuple | None, having: tuple | None) -> ast.WindowDecl:
    atom = _window_source(source)
    if select is None:
        raise _Unsupported(source.loc, "a window statement needs a select list")
    if select[1] is None:
        raise _Unsupported(select[2], "select * over a data window is not supported; list "
                           "the columns")
    items = tuple((n, _window_expr(e)) for n, e, _ in select[1])
    group_by = tuple(_window_expr(g) for g in group[1]) if group is not None else ()
    window = _window_of(source, group_by)
    cond = _window_expr(atom.where) if atom.where is not None else None
    src = ast.Atom(atom.name, None, cond, atom.alias, loc=atom.loc)
    return ast.WindowDecl(name, src, window, items, group_by,
                          _window_expr(having[1]) if having is not None else None, loc=loc)


def _streams(decls: list[ast.Decl], at_names: list[str | None], source: str,
             errors: list[Diagnostic]) -> list[ast.Decl]:
    """Several pattern statements inserting into one stream (Esper's ``insert into S`` from
    each): cepflow gives every pattern its own event type, so each becomes the pattern its
    ``@Name`` names, and a window statement reading ``S`` reads the union of their types
    (``WindowDecl.more_inputs``, ``stream`` S). Any other reader of ``S`` is reported."""
    by_name: dict[str, list[int]] = {}
    for i, d in enumerate(decls):
        if isinstance(d, ast.ComplexEventDecl):
            by_name.setdefault(d.name, []).append(i)
    streams: dict[str, list[str]] = {}
    for stream, idxs in by_name.items():
        if len(idxs) < 2 or any(at_names[i] is None for i in idxs):
            continue  # one statement, or unnamed ones: the checker reports duplicates
        members = [at_names[i] for i in idxs]
        if len(set(members)) != len(members):
            continue
        streams[stream] = members  # type: ignore[assignment]
        for i, member in zip(idxs, members, strict=True):
            decls[i] = replace(decls[i], name=member)
    if not streams:
        return decls
    out: list[ast.Decl] = []
    for d in decls:
        if isinstance(d, ast.WindowDecl) and d.source.name in streams:
            first, *more = streams[d.source.name]
            d = replace(d, source=replace(d.source, name=first), more_inputs=tuple(more),
                        stream=d.source.name)
        elif isinstance(d, ast.ComplexEventDecl):
            for a in atoms(d.body):
                if a.name in streams:
                    line, col = a.loc or d.loc or (1, 1)
                    errors.append(Diagnostic(source, line, col, (
                        f"'{a.name}' is a stream several statements insert into "
                        f"({', '.join(streams[a.name])}); in cepflow only a window statement "
                        "can read it (each statement is its own event type)")))
        out.append(d)
    return out


def parse_epl(text: str, source: str = "<string>") -> ast.Module:
    """Parse EPL text into a cepflow module; raise PatternSyntaxError with every located error:
    one per statement (a statement with an error is skipped, the next one is read)."""
    too_large = size_error(len(text), source)
    if too_large is not None:
        raise PatternSyntaxError([too_large])
    parser = _parser()
    shown = terminal_names(parser, _NAMES)
    recovery = StatementRecovery(text, source, shown, _STARTERS, _resume)
    tree: Tree | None
    try:
        tree = parser.parse(text, on_error=recovery)
    except UnexpectedInput as e:  # recovery gave up (too many errors)
        if not recovery.errors:
            recovery.errors.append(describe(e, text, source, shown))
        tree = None
    errors = list(recovery.errors)
    decls: list[ast.Decl] = []
    at_names: list[str | None] = []
    warnings: list[Diagnostic] = []
    for statement in tree.children if tree is not None else ():
        builder = _ToAst(source)
        try:
            decls.append(builder.transform(statement))
            at_names.append(builder.at_name)
        except VisitError as e:
            if not isinstance(e.orig_exc, _Unsupported):
                raise
            line, col = e.orig_exc.loc or (1, 1)
            errors.append(Diagnostic(source, line, col, str(e.orig_exc)))
        warnings.extend(builder.warnings)
    decls = _streams(decls, at_names, source, errors)
    if errors:
        raise PatternSyntaxError(capped(errors))
    module = ast.Module(tuple(decls), source=source)
    object.__setattr__(module, "_parse_warnings", tuple(sort_diagnostics(warnings)))
    return module

