"""Check graph queries against a metamodel and compile them to :mod:`cepflow.queries.ir`.

Name resolution (classes, features, patterns, functions), arity and type checks; every error
is a located diagnostic and all of them are reported together as a QueryError.

Normalisation of a body:

* ``X == Y`` unifies the two variables (one variable from then on). ``X == 3`` binds X to 3
  if nothing else binds it, else it is a filter, as are ``X != Y`` and ``X != 3``.
* ``_`` and names starting with ``_`` are anonymous: each occurrence is a fresh variable. In a
  ``neg find``, an anonymous position — or a variable used nowhere else — is existential.
* Parameter types and ``C.f(X, Y)`` add the type constraint ``C(X)``; a type constraint that
  another atom already implies (a reference's source or target class, a called pattern's
  parameter type) is dropped by the incremental engine's planner, not here.
* Every variable of a ``neg find``, ``check`` or comparison must be bound by a positive
  constraint (type, path or find): negation and conditions filter, they never enumerate.
* A history function call (``movingAverage(RHy)``) becomes an atom over the history relation
  of the attribute that binds ``RHy`` (see :mod:`cepflow.queries.functions`).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cepflow.compiler.evaluator import ExpressionError, compile_expr, names_in
from cepflow.language import ast as E
from cepflow.language.diagnostics import Diagnostic
from cepflow.language.printer import format_expr
from cepflow.language.source import read_source
from cepflow.models.metamodel import (
    PRIMITIVE_TYPES,
    Metamodel,
    Reference,
    did_you_mean,
    primitive_type,
)
from cepflow.queries import query_ast as Q
from cepflow.queries.functions import FunctionRegistry
from cepflow.queries.ir import (
    Arg,
    AttrRel,
    Check,
    Compare,
    CompiledBody,
    ConstArg,
    ConstRel,
    Filter,
    HistoryRel,
    MatchRel,
    NegAtom,
    Query,
    QuerySet,
    RefRel,
    RelAtom,
    TypeRel,
)
from cepflow.queries.query_parser import QueryError, parse_queries

Loc = tuple[int, int] | None


def compile_queries(source: str | Q.QueryFile, metamodel: Metamodel, *,
                    functions: FunctionRegistry | None = None,
                    name: str = "<string>") -> QuerySet:
    """Parse (if given text) and compile a query file against ``metamodel``.

    Raise QueryError listing every located error.
    """
    qfile = parse_queries(source, name) if isinstance(source, str) else source
    return _Compiler(qfile, metamodel, functions or FunctionRegistry()).run()


def load_queries(path: str | Path, metamodel: Metamodel, *,
                 functions: FunctionRegistry | None = None) -> QuerySet:
    """Read and compile a query file (UTF-8); diagnostics name the file as given."""
    text = read_source(path, QueryError)
    return compile_queries(text, metamodel, functions=functions, name=str(path))


class _SlotView:
    """What a compiled condition reads its "event fields" from: the join plans' slot array."""

    __slots__ = ("params",)

    def __init__(self) -> None:
        self.params: list[Any] = []


# ---------------------------------------------------------------- whole file


class _Compiler:
    def __init__(self, qfile: Q.QueryFile, mm: Metamodel, functions: FunctionRegistry) -> None:
        self.file = qfile
        self.mm = mm
        self.functions = functions
        self.errors: list[Diagnostic] = []
        self.decls: dict[str, Q.PatternDecl] = {}
        self.compiled: dict[str, Query] = {}

    def error(self, loc: Loc, message: str) -> None:
        line, col = loc or (1, 1)
        self.errors.append(Diagnostic(self.file.source, line, col, message))

    def run(self) -> QuerySet:
        for decl in self.file.patterns:
            if decl.name in self.decls:
                self.error(decl.loc, f"pattern '{decl.name}' is declared twice")
            else:
                self.decls[decl.name] = decl
        for decl in self._dependency_order():
            query = _BodyCompiler.pattern(self, decl)
            if query is not None:
                self.compiled[decl.name] = query
        if self.errors:
            raise QueryError(self.errors)
        declared = {n: self.compiled[n] for n in self.decls}
        return QuerySet(self.mm, declared, self.functions, tuple(self.compiled), self.file.source)

    def _dependency_order(self) -> list[Q.PatternDecl]:
        """Callees before callers; unknown patterns and recursion are errors."""
        order: list[Q.PatternDecl] = []
        state: dict[str, int] = {}

        def visit(decl: Q.PatternDecl) -> None:
            state[decl.name] = 1
            for body in decl.bodies:
                for c in body.constraints:
                    if not isinstance(c, Q.FindConstraint):
                        continue
                    callee = self.decls.get(c.pattern)
                    if callee is None:
                        self.error(c.loc, f"unknown pattern '{c.pattern}'"
                                          f"{did_you_mean(c.pattern, self.decls)}")
                    elif state.get(c.pattern) == 1:
                        self.error(c.loc, f"recursive pattern call: '{c.pattern}' calls "
                                          f"'{decl.name}' (recursion is not supported)")
                    elif c.pattern not in state:
                        visit(callee)
            state[decl.name] = 2
            order.append(decl)

        for decl in self.decls.values():
            if decl.name not in state:
                visit(decl)
        return order

    def param_types(self, name: str) -> tuple[str | None, ...] | None:
        """The parameter types of a pattern (declared where compilation failed)."""
        if name in self.compiled:
            return self.compiled[name].param_types
        decl = self.decls.get(name)
        if decl is None:
            return None
        return tuple(_declared_type(p.type) for p in decl.params)


def _declared_type(t: str | None) -> str | None:
    return None if t is None else (primitive_type(t) or t)


# ---------------------------------------------------------------- one body


@dataclass
class _VarInfo:
    """What the constraints of a body say about one variable."""

    classes: list[tuple[str, Loc]] = field(default_factory=list)
    values: list[tuple[str, Loc]] = field(default_factory=list)
    negative: list[tuple[str, Loc]] = field(default_factory=list)  # types a neg find expects
    positive: bool = False
    uses: int = 0


class _BodyCompiler:
    """Compiles one body of one pattern."""

    def __init__(self, c: _Compiler, decl: Q.PatternDecl, body: Q.Body) -> None:
        self.c = c
        self.mm = c.mm
        self.decl = decl
        self.body = body
        self.alias: dict[str, str] = {}
        self.fresh = itertools.count()
        self.vars: dict[str, _VarInfo] = {}
        self.atoms: list[RelAtom] = []
        self.negs: list[NegAtom] = []
        self.filters: list[Filter] = []
        self.ok = True

    def error(self, loc: Loc, message: str) -> None:
        self.ok = False
        self.c.error(loc, message)

    # ------------------------------------------------------------ pattern level

    @staticmethod
    def pattern(c: _Compiler, decl: Q.PatternDecl) -> Query | None:
        ok = True
        seen: set[str] = set()
        for p in decl.params:
            if p.name in seen:
                c.error(p.loc, f"parameter '{p.name}' is declared twice")
                ok = False
            seen.add(p.name)
            if p.name.startswith("_"):
                c.error(p.loc, f"parameter '{p.name}' cannot be anonymous")
                ok = False
            if p.type is not None and primitive_type(p.type) is None and p.type not in c.mm:
                c.error(p.loc, f"unknown type '{p.type}' of parameter {p.name}"
                               f"{did_you_mean(p.type, [*c.mm.classes, *PRIMITIVE_TYPES])}")
                ok = False
        if not decl.bodies:
            c.error(decl.loc, f"pattern '{decl.name}' has no body")
            return None
        if not ok:
            return None
        compilers = [_BodyCompiler(c, decl, b) for b in decl.bodies]
        bodies = [bc.compile() for bc in compilers]
        if not all(bc.ok for bc in compilers):
            return None
        types = tuple(
            _declared_type(p.type) or _common([bc.inferred(p.name) for bc in compilers])
            for p in decl.params)
        return Query(decl.name, tuple(p.name for p in decl.params), types,
                     tuple(b for b in bodies if b is not None), decl.private, decl.loc)

    # ------------------------------------------------------------ body level

    def compile(self) -> CompiledBody | None:
        self._unify()
        params = tuple(self._var(p.name) for p in self.decl.params)
        for p in self.decl.params:
            self._note_use(self._var(p.name))
        for con in self.body.constraints:
            for v in _term_vars(con):
                self._note_use(self._var(v.name))
        for p in self.decl.params:
            self._param_type(p)
        for con in self.body.constraints:
            self._constraint(con)
        self._constant_bindings()
        for con in self.body.constraints:
            if isinstance(con, Q.FindConstraint) and con.negative:
                self._neg_find(con)
        for con in self.body.constraints:
            if isinstance(con, Q.CheckConstraint):
                self._check(con)
        self._check_types()
        self._check_bound(params)
        if not self.ok:
            return None
        return CompiledBody(params, self._drop_history_sources(params), tuple(self.negs),
                            tuple(self.filters))

    def _drop_history_sources(self, params: tuple[str, ...]) -> tuple[RelAtom, ...]:
        """The body's atoms without the attribute atoms whose value only feeds history
        functions: ``RightHand.x(RH, HX)`` used only as ``movingAverage(HX, 3)`` is implied by
        the history atom (every instance has an accumulator of the attribute), so a ``set`` of
        x updates one relation of this body instead of two."""
        atoms = tuple(dict.fromkeys(self.atoms))
        used = set(params)
        for item in (*self.negs, *self.filters):
            used.update(item.variables)
        histories = {(a.args[0], a.rel.owner, a.rel.feature) for a in atoms
                     if isinstance(a.rel, HistoryRel)}
        occurrences = Counter(v for a in atoms for v in a.variables)
        return tuple(a for a in atoms if not (
            isinstance(a.rel, AttrRel) and isinstance(a.args[1], str)
            and a.args[1] not in used and occurrences[a.args[1]] == 1
            and (a.args[0], a.rel.owner, a.rel.feature) in histories))

    def inferred(self, param: str) -> str | None:
        """The most specific type this body gives a parameter (None if unclear)."""
        info = self.vars.get(self._var(param))
        if info is None:
            return None
        if info.classes:
            names = {c for c, _ in info.classes}
            best = [n for n in names if all(self.mm[n].is_a(o) for o in names)]
            return best[0] if best else None
        if info.values:
            return _value_type([t for t, _ in info.values])
        return None

    def _unify(self) -> None:
        """``X == Y`` between two named variables: one variable (union-find)."""
        parent: dict[str, str] = {}

        def find(v: str) -> str:
            while parent.get(v, v) != v:
                v = parent[v]
            return v

        params = {p.name for p in self.decl.params}
        for con in self.body.constraints:
            if isinstance(con, Q.CompareConstraint) and con.op == "==" and all(
                    isinstance(t, Q.Var) and not t.anonymous for t in (con.left, con.right)):
                a, b = find(con.left.name), find(con.right.name)  # type: ignore[union-attr]
                if a != b:
                    # keep a parameter's name as the representative (readable messages)
                    if b in params and a not in params:
                        a, b = b, a
                    parent[b] = a
        self.alias = {v: find(v) for v in parent}

    def _var(self, name: str) -> str:
        return self.alias.get(name, name)

    def _note_use(self, name: str) -> None:
        self.vars.setdefault(name, _VarInfo()).uses += 1

    def _arg(self, term: Q.Term) -> Arg:
        """A positive-constraint argument: a variable (fresh if anonymous) or a constant."""
        if isinstance(term, Q.Literal_):
            return ConstArg(term.value)
        if term.anonymous:
            name = f"{term.name}#{next(self.fresh)}"
            self.vars[name] = _VarInfo(uses=1)
            return name
        return self._var(term.name)

    def _bind(self, arg: Arg, cls: str | None, value_type: str | None, loc: Loc) -> None:
        if isinstance(arg, str):
            info = self.vars.setdefault(arg, _VarInfo())
            info.positive = True
            if cls is not None:
                info.classes.append((cls, loc))
            if value_type is not None:
                info.values.append((value_type, loc))

    def _add_atom(self, rel: Any, args: tuple[Arg, ...], columns: tuple[str | None, ...],
                  value_types: tuple[str | None, ...], loc: Loc) -> None:
        for arg, cls, vt in zip(args, columns, value_types, strict=True):
            self._bind(arg, cls, vt, loc)
        self.atoms.append(RelAtom(rel, args, columns, loc))

    def _type_atom(self, cls: str, arg: Arg, loc: Loc) -> None:
        self._add_atom(TypeRel(cls), (arg,), (cls,), (None,), loc)

    def _param_type(self, p: Q.QueryParam) -> None:
        if p.type is None:
            return
        var = self._var(p.name)
        prim = primitive_type(p.type)
        if prim is None:
            self._type_atom(p.type, var, p.loc)
        else:
            self.vars.setdefault(var, _VarInfo()).values.append((prim, p.loc))

    # ------------------------------------------------------------ constraints

    def _constraint(self, con: Q.Constraint) -> None:
        if isinstance(con, Q.TypeConstraint):
            if self._class(con.cls, con.loc) and self._object_arg(con.arg, con.loc):
                self._type_atom(con.cls, self._arg(con.arg), con.loc)
        elif isinstance(con, Q.PathConstraint):
            self._path(con)
        elif isinstance(con, Q.FindConstraint) and not con.negative:
            self._find(con)
        elif isinstance(con, Q.CompareConstraint):
            self._compare(con)

    def _class(self, name: str, loc: Loc) -> bool:
        if name in self.mm:
            return True
        hint = " (a primitive type; type a parameter with it instead)" if primitive_type(
            name) else did_you_mean(name, self.mm.classes)
        self.error(loc, f"unknown class '{name}'{hint}")
        return False

    def _object_arg(self, term: Q.Term, loc: Loc) -> bool:
        if isinstance(term, Q.Literal_):
            self.error(term.loc or loc, f"a constant ({term.value!r}) cannot stand for an "
                                        f"object; use a variable")
            return False
        return True

    def _path(self, con: Q.PathConstraint) -> None:
        if not self._class(con.cls, con.loc):
            return
        cls = self.mm[con.cls]
        feature = cls.feature(con.feature)
        if feature is None:
            self.error(con.feature_loc or con.loc,
                       f"class {con.cls} has no feature '{con.feature}'"
                       f"{did_you_mean(con.feature, cls.feature_names)}")
            return
        if not self._object_arg(con.source, con.loc):
            return
        src = self._arg(con.source)
        self._type_atom(con.cls, src, con.loc)
        if isinstance(feature, Reference):
            if self._object_arg(con.target, con.loc):
                self._add_atom(RefRel(feature.owner, feature.name), (src, self._arg(con.target)),
                               (feature.owner, feature.target), (None, None), con.loc)
            return
        target = con.target
        if isinstance(target, Q.Literal_) and not self._literal_ok(target, feature.type,
                                                                   f"{con.cls}.{con.feature}"):
            return
        arg = self._arg(target)
        if isinstance(arg, ConstArg) and feature.type == "float":
            arg = ConstArg(float(arg.value))
        # keyed by the constraint's class, not the declaring one: RightHand.x holds only the
        # right hands, so setting x of another PositionedElement does not reach these plans
        self._add_atom(AttrRel(cls.name, feature.name), (src, arg), (cls.name, None),
                       (None, feature.type), con.loc)

    def _literal_ok(self, lit: Q.Literal_, type_name: str, what: str) -> bool:
        if _value_type([type_name, _literal_type(lit.value)]) is None:
            self.error(lit.loc, f"{what} is of type {type_name}, the constant {lit.value!r} "
                                f"is a {_literal_type(lit.value)}")
            return False
        return True

    def _callee(self, con: Q.FindConstraint) -> tuple[str | None, ...] | None:
        types = self.c.param_types(con.pattern)
        if types is None:
            self.ok = False  # reported by the dependency order
            return None
        if len(types) != len(con.args):
            self.error(con.loc, f"pattern '{con.pattern}' takes {len(types)} parameter(s), "
                                f"{len(con.args)} given")
            return None
        return types

    def _find(self, con: Q.FindConstraint) -> None:
        types = self._callee(con)
        if types is None:
            return
        args: list[Arg] = []
        for term, t in zip(con.args, types, strict=True):
            if isinstance(term, Q.Literal_):
                if t in self.mm and not self._object_arg(term, con.loc):
                    return
                if t is not None and t not in self.mm and not self._literal_ok(
                        term, t, f"parameter of '{con.pattern}'"):
                    return
            args.append(self._arg(term))
        columns = tuple(t if t in self.mm else None for t in types)
        values = tuple(None if t in self.mm else t for t in types)
        self._add_atom(MatchRel(con.pattern), tuple(args), columns, values, con.loc)

    def _neg_find(self, con: Q.FindConstraint) -> None:
        types = self._callee(con)
        if types is None:
            return
        positions: list[int] = []
        args: list[Arg] = []
        for i, (term, t) in enumerate(zip(con.args, types, strict=True)):
            if isinstance(term, Q.Literal_):
                if t in self.mm:
                    self._object_arg(term, con.loc)
                    return
                positions.append(i)
                args.append(ConstArg(term.value))
                continue
            var = self._var(term.name)
            if term.anonymous or (self.vars[var].uses == 1 and not self.vars[var].positive):
                continue  # existential
            self._require_bound(var, term.loc or con.loc, "a 'neg find'")
            if t is not None:
                self.vars[var].negative.append((t, term.loc or con.loc))
            positions.append(i)
            args.append(var)
        self.negs.append(NegAtom(con.pattern, tuple(positions), tuple(args), con.loc))

    def _compare(self, con: Q.CompareConstraint) -> None:
        sides = []
        for term in (con.left, con.right):
            if isinstance(term, Q.Var) and term.anonymous:
                self.error(term.loc or con.loc, f"anonymous variable '{term.name}' cannot be "
                                                f"compared")
                return
            sides.append(self._arg(term))
        left, right = sides
        if isinstance(left, ConstArg) and isinstance(right, ConstArg):
            self.error(con.loc, "comparison of two constants")
            return
        if con.op == "==" and isinstance(left, str) and isinstance(right, str):
            return  # unified
        self.filters.append(Compare(con.op, left, right, con.loc))

    def _constant_bindings(self) -> None:
        """``X == c`` binds X when no positive constraint does (a one-value relation)."""
        for f in list(self.filters):
            if not isinstance(f, Compare) or f.op != "==":
                continue
            var, const = (f.left, f.right) if isinstance(f.left, str) else (f.right, f.left)
            assert isinstance(var, str) and isinstance(const, ConstArg)
            if not self.vars[var].positive:
                self.filters.remove(f)
                self._add_atom(ConstRel(const.value), (var,), (None,),
                               (_literal_type(const.value),), f.loc)

    def _require_bound(self, var: str, loc: Loc, where: str) -> None:
        info = self.vars.get(var)
        if info is None or not info.positive:
            self.error(loc, f"variable '{var}' in {where} must be bound by a positive "
                            f"constraint (a type, path or find constraint)")

    # ------------------------------------------------------------ checks

    def _check(self, con: Q.CheckConstraint) -> None:
        for n in sorted(names_in(con.expr)):
            loc = _name_loc(con.expr, n) or con.loc
            if n.startswith("_"):
                self.error(loc, f"anonymous variable '{n}' cannot be used in a check")
                return
            if self._var(n) not in self.vars:
                named = [v for v in self.vars if "#" not in v]
                self.error(loc, f"unknown variable '{n}' in check{did_you_mean(n, named)}")
                return
            self._require_bound(self._var(n), loc, "a check")
        expr = self._rewrite(con.expr)
        if expr is None:
            return
        names = sorted(names_in(expr))
        try:
            fn = compile_expr(expr, {}, self.c.functions.plain, frozenset(self.vars))
        except ExpressionError as e:
            self.error(e.loc or con.loc, str(e))
            return

        def evaluate(bindings: dict[str, Any], _fn: Any = fn) -> Any:
            return _fn(None, bindings)

        functions = self.c.functions.plain

        def at_slots(slots: dict[str, int], _expr: E.Expr = expr,
                     _names: list[str] = names) -> Any:
            # the same evaluator, the variables read as "fields" of the slot array
            at = compile_expr(_expr, {n: slots[n] for n in _names}, functions)
            view = _SlotView()
            empty: dict[str, Any] = {}

            def on_slots(env: list[Any]) -> Any:
                view.params = env
                return at(view, empty)

            return on_slots

        self.filters.append(Check(evaluate, tuple(names), format_expr(con.expr), con.loc,
                                  at_slots, expr))

    def _rewrite(self, expr: E.Expr) -> E.Expr | None:
        """Names of unified variables -> their representative; history function calls ->
        variables bound by history atoms. None after an error."""
        if isinstance(expr, E.Name):
            return E.Name(self._var(expr.name), expr.path, expr.loc)
        if isinstance(expr, E.Call) and expr.func in self.c.functions.history:
            return self._history_call(expr)
        if isinstance(expr, E.Call):
            args = [self._rewrite(a) for a in expr.args]
            if any(a is None for a in args):
                return None
            return E.Call(expr.func, tuple(a for a in args if a is not None), expr.loc)
        if isinstance(expr, E.Unary):
            inner = self._rewrite(expr.operand)
            return None if inner is None else E.Unary(expr.op, inner, expr.loc)
        if isinstance(expr, E.Binary):
            left, right = self._rewrite(expr.left), self._rewrite(expr.right)
            if left is None or right is None:
                return None
            return E.Binary(expr.op, left, right, expr.loc)
        return expr

    def _history_call(self, call: E.Call) -> E.Name | None:
        what = f"the first argument of history function {call.func}"
        first = call.args[0] if call.args else None
        if not isinstance(first, E.Name) or first.path:
            self.error(call.loc, f"{what} must be a variable bound by an attribute constraint")
            return None
        var = self._var(first.name)
        source = next((a for a in self.atoms if isinstance(a.rel, AttrRel) and a.args[1] == var
                       and isinstance(a.args[0], str)), None)
        if source is None:
            self.error(first.loc or call.loc, f"{what} must be a variable bound by an attribute "
                                              f"constraint such as Class.attr(obj, {first.name})")
            return None
        consts = []
        for a in call.args[1:]:
            if not isinstance(a, E.Const):
                self.error(a.loc or call.loc, f"the other arguments of history function "
                                              f"{call.func} must be constants")
                return None
            consts.append(a.value)
        rel = HistoryRel(call.func, tuple(consts), source.rel.owner, source.rel.feature)  # type: ignore[union-attr]
        try:
            self.c.functions.history[call.func](*consts)
        except (TypeError, ValueError) as e:
            self.error(call.loc, f"{call.func}{tuple(consts)!r}: {e}")
            return None
        obj = source.args[0]
        existing = next((a for a in self.atoms if a.rel == rel and a.args[0] == obj), None)
        if existing is not None:
            return E.Name(existing.args[1], loc=call.loc)  # type: ignore[arg-type]
        name = f"{call.func}#{next(self.fresh)}"
        self.vars[name] = _VarInfo()
        self._add_atom(rel, (obj, name), (rel.owner, None), (None, None), call.loc)
        return E.Name(name, loc=call.loc)

    # ------------------------------------------------------------ final checks

    def _check_types(self) -> None:
        for name, info in self.vars.items():
            shown = name.split("#")[0]
            classes = info.classes + [(t, loc) for t, loc in info.negative if t in self.mm]
            values = info.values + [(t, loc) for t, loc in info.negative if t not in self.mm]
            if classes and values:
                cls, _ = classes[0]
                vt, loc = values[0]
                self.error(loc, f"variable '{shown}' is used both as an object ({cls}) and as "
                                f"a value ({vt})")
                continue
            for (a, _), (b, loc) in itertools.combinations(classes, 2):
                if not self.mm.have_common_subtype(a, b):
                    self.error(loc, f"variable '{shown}' cannot be both a {a} and a {b} "
                                    f"(no class is both)")
                    break
            if values and _value_type([t for t, _ in values]) is None:
                types = ", ".join(dict.fromkeys(t for t, _ in values))
                self.error(values[-1][1], f"variable '{shown}' has incompatible value "
                                          f"types: {types}")

    def _check_bound(self, params: tuple[str, ...]) -> None:
        for p, var in zip(self.decl.params, params, strict=True):
            if not self.vars[var].positive:
                self.error(p.loc, f"parameter '{p.name}' of pattern '{self.decl.name}' is not "
                                  f"bound by a positive constraint (give it a class type or use "
                                  f"it in a path or find constraint)")
        for f in self.filters:
            if isinstance(f, Compare):
                for v in f.variables:
                    self._require_bound(v, f.loc, "a comparison")


def _term_vars(con: Q.Constraint) -> list[Q.Var]:
    """The named variables a constraint mentions (for usage counts)."""
    if isinstance(con, Q.TypeConstraint):
        terms: Iterable[Q.Term] = (con.arg,)
    elif isinstance(con, Q.PathConstraint):
        terms = (con.source, con.target)
    elif isinstance(con, Q.FindConstraint):
        terms = con.args
    elif isinstance(con, Q.CompareConstraint):
        terms = (con.left, con.right)
    else:
        return []  # a check only reads variables other constraints introduce
    return [t for t in terms if isinstance(t, Q.Var) and not t.anonymous]


def _name_loc(expr: E.Expr, name: str) -> Loc:
    if isinstance(expr, E.Name):
        return expr.loc if expr.name == name else None
    children: tuple[E.Expr, ...] = ()
    if isinstance(expr, E.Unary):
        children = (expr.operand,)
    elif isinstance(expr, E.Binary):
        children = (expr.left, expr.right)
    elif isinstance(expr, E.Call):
        children = expr.args
    for ch in children:
        loc = _name_loc(ch, name)
        if loc is not None:
            return loc
    return None


def _literal_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    return "str"


def _value_type(types: list[str]) -> str | None:
    """The common type of values of these types (int and float mix to float), or None."""
    kinds = set(types)
    if len(kinds) == 1:
        return kinds.pop()
    if kinds <= {"int", "float"}:
        return "float"
    return None


def _common(types: list[str | None]) -> str | None:
    """The type all bodies agree on, else None."""
    first = types[0] if types else None
    return first if all(t == first for t in types) else None

